/*
 * fill.c — the fill mode of `colloc sim` (colloc/sim_fill.h): pods arrive
 * one by one, never leave, and are placed at once or fail, as in the
 * simulator released with the FGD paper (Weng et al., ATC '23,
 * hkust-adsl/kubernetes-scheduler-simulator). Its rules, as read from that
 * simulator and re-implemented here (docs/simulator.md, Fill mode):
 *
 *  - the workload is every pod of the trace, CPU-only ones included,
 *    sorted by name and shuffled with the seed; its GPU request (GPUs x
 *    share) is then topped up to tune x the cluster's GPUs by appending
 *    pods drawn uniformly from the trace (the loop stops at the first
 *    draw whose per-GPU share would pass the target), or cut down to it by
 *    removing pods at random;
 *  - a node fits a pod when its free CPU and memory cover the pod's, its
 *    GPU type is one the pod allows, and its GPUs can hold the pod: a
 *    share pod needs one GPU with that much free, a k-GPU pod k GPUs with
 *    its share free (whole GPUs in the trace);
 *  - Random takes a node uniformly among those that fit, BestFit the one
 *    whose score int((1 - (cpu_free - cpu) / 128 cores x 0.5 - (gpu_free -
 *    gpu) / 8 GPUs x 0.5) x 100) is highest (gpu: summed over the node's
 *    GPUs, thousandths), the first by name among equals;
 *  - on the node, a share pod takes a GPU drawn among those that fit
 *    (Random) or the one with the least free that fits (BestFit, the
 *    first among equals); a whole-GPU pod the first idle GPUs;
 *  - after each pod the allocated GPU share and the arrived request are
 *    recorded, and level k % of the curve is the mean allocation over the
 *    pods whose arrived request rounds to k % of the cluster (or to k - 1
 *    .. k + 1 where none does).
 *
 * colloc's own policies run in the scheduler core (colloc/sched.h) through
 * a context: before each GPU pod, the GPUs of nodes whose CPU, memory or
 * GPU type does not fit it are marked unusable, and the core places the
 * pod on the rest. The trace states no GPU memory and no model, so every
 * GPU counts as 1000 units of memory and a pod's memory, estimate and
 * predicted activity are its declared share (docs/simulator.md). CPU-only
 * pods, which the core does not place, go to the node that fits with the
 * least free GPU share, then the least free CPU, then the first.
 *
 * Not here: reading traces or node lists (trace*.c, nodes.c), printing.
 */
#include "colloc/sim_fill.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colloc/sched.h"

/* FGD's BestFit normalises free CPU and GPU by the largest node of its
 * cluster: 128 cores and 8 GPUs (upstream MaxSpecCpu, MaxSpecGpu). */
#define BESTFIT_CPU_MILLI 128000.0
#define BESTFIT_GPU_MILLI 8000.0
/* A pod without a CPU request counts as 100 millicores when scored, as
 * Kubernetes scores it (GetNonzeroRequests). */
#define NONZERO_CPU_MILLI 100
/* Distinct GPU types a node list may have (a pod's allowed types are a
 * bit mask of them). */
#define MAX_TYPES 64
/* In the core's view, every GPU has this much "memory": a pod's declared
 * share in thousandths is its memory. */
#define UNIT_BYTES ((uint64_t)1 << 20)

static const char *const rule_names[] = {"core", "random", "bestfit"};

int colloc_sim_fill_parse(const char *name, int *rule, int *policy)
{
	if (!name)
		return -1;
	*policy = -1;
	if (strcmp(name, "random") == 0) {
		*rule = COLLOC_FILL_RANDOM;
		return 0;
	}
	if (strcmp(name, "bestfit") == 0) {
		*rule = COLLOC_FILL_BESTFIT;
		return 0;
	}
	*policy = colloc_policy_parse(name);
	if (*policy < 0)
		return -1;
	*rule = COLLOC_FILL_CORE;
	return 0;
}

const char *colloc_sim_fill_name(int rule, int policy)
{
	if (rule == COLLOC_FILL_CORE)
		return colloc_policy_name(policy);
	if (rule > 0 && rule < (int)(sizeof(rule_names) / sizeof(rule_names[0])))
		return rule_names[rule];
	return "unknown";
}

void colloc_sim_fill_opts_init(struct colloc_sim_fill_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rule = COLLOC_FILL_CORE;
	o->policy = COLLOC_POLICY_FGD;
	o->seed = 1;
	o->tune_ratio = 1.3;
	o->shuffle = true;
}

/* --- random numbers: splitmix64, as the engine's ------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0 (the modulo bias is below 2^-40 here). */
static size_t rng_below(uint64_t *s, size_t n)
{
	return n ? (size_t)(rng_next(s) % (uint64_t)n) : 0;
}

/* --- state --------------------------------------------------------------- */

struct fnode {
	int64_t cpu_left;
	uint64_t mem_left;
	int first_gpu, n_gpus;
	int type; /* index into the run's types, -1 CPU-only */
	bool usable; /* as the core was last told */
};

struct pod {
	int n_gpus;
	int milli; /* per GPU, 1..1000; 0 CPU-only */
	int64_t cpu;
	uint64_t mem;
	uint64_t types; /* allowed node types, bit per type */
};

struct fill {
	const struct colloc_sim_nodes *nl;
	const struct colloc_sim_fill_opts *o;
	struct fnode *nodes;
	int *left; /* free share of each GPU, thousandths */
	int n_gpus;
	char types[MAX_TYPES][COLLOC_SIM_GPU_TYPE_MAX];
	int n_types;
	uint64_t rng;
	int *cand; /* scratch: feasible nodes */
	/* the core */
	struct colloc_sched_ctx *sc;
	struct colloc_sched_gpu *rows;
	struct colloc_sched_load *loads;
	int rr;
	uint64_t alloc, held;
};

static int type_of(const struct fill *f, const char *name, size_t len)
{
	for (int t = 0; t < f->n_types; t++)
		if (strlen(f->types[t]) == len && memcmp(f->types[t], name, len) == 0)
			return t;
	return -1;
}

/* The node types a gpu_spec allows: all for "", else those named (a spec
 * naming only types no node has allows none, as upstream). */
static uint64_t allowed(const struct fill *f, const char *spec)
{
	uint64_t m = 0;

	if (!spec[0])
		return ~(uint64_t)0;
	for (const char *p = spec; *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		int t = type_of(f, p, len);

		if (t >= 0)
			m |= (uint64_t)1 << t;
		p += len + (bar ? 1 : 0);
	}
	return m;
}

static void pod_of(const struct fill *f, const struct colloc_trace_job *tj, struct pod *p)
{
	p->n_gpus = tj->n_gpus;
	p->milli = tj->n_gpus == 0 ? 0 : tj->gpu_milli > 0 ? tj->gpu_milli : 1000;
	if (p->milli > 1000)
		p->milli = 1000;
	p->cpu = tj->cpu_milli;
	p->mem = tj->host_mem_bytes;
	p->types = allowed(f, tj->gpu_spec);
}

/* CPU, memory and GPU type: what the node must have besides GPU room. */
static bool host_fits(const struct fill *f, int n, const struct pod *p)
{
	const struct fnode *nd = &f->nodes[n];

	if (nd->cpu_left < p->cpu || nd->mem_left < p->mem)
		return false;
	if (p->n_gpus == 0)
		return true;
	return nd->type >= 0 && (p->types >> nd->type & 1u);
}

/* Can the node's GPUs hold the pod (upstream AllocateGpuId): a share pod
 * one GPU with room, a k-GPU pod k slots taken greedily in GPU order. */
static bool gpus_fit(const struct fill *f, int n, const struct pod *p)
{
	const struct fnode *nd = &f->nodes[n];
	int need = p->n_gpus;

	for (int i = 0; i < nd->n_gpus && need > 0; i++) {
		int room = f->left[nd->first_gpu + i];

		while (room >= p->milli && need > 0) {
			room -= p->milli;
			need--;
		}
	}
	return need == 0;
}

static uint64_t node_free_milli(const struct fill *f, int n)
{
	uint64_t s = 0;

	for (int i = 0; i < f->nodes[n].n_gpus; i++)
		s += (uint64_t)f->left[f->nodes[n].first_gpu + i];
	return s;
}

/* --- FGD's baselines ------------------------------------------------------ */

static int64_t bestfit_score(const struct fill *f, int n, const struct pod *p)
{
	int64_t cpu = p->cpu > 0 ? p->cpu : NONZERO_CPU_MILLI;
	double score = 0;

	/* In upstream's order, so that it rounds alike. */
	score += (double)(f->nodes[n].cpu_left - cpu) / BESTFIT_CPU_MILLI * 0.5;
	score += ((double)node_free_milli(f, n) - (double)p->n_gpus * p->milli) /
		 BESTFIT_GPU_MILLI * 0.5;
	return (int64_t)((1.0 - score) * 100.0);
}

/* The pod's GPUs on node n into gpus[]: share pods by the rule, whole
 * GPUs the first idle ones. */
static void pick_gpus(struct fill *f, int n, const struct pod *p, int *gpus)
{
	const struct fnode *nd = &f->nodes[n];
	int k = 0, seen = 0;

	if (p->milli >= 1000) {
		for (int i = 0; i < nd->n_gpus && k < p->n_gpus; i++)
			if (f->left[nd->first_gpu + i] == 1000)
				gpus[k++] = nd->first_gpu + i;
		return;
	}
	gpus[0] = -1;
	for (int i = 0; i < nd->n_gpus; i++) {
		int g = nd->first_gpu + i;

		if (f->left[g] < p->milli)
			continue;
		if (f->o->rule == COLLOC_FILL_RANDOM) {
			/* reservoir: each fitting GPU with probability 1/seen */
			if (rng_below(&f->rng, (size_t)++seen) == 0)
				gpus[0] = g;
		} else if (gpus[0] < 0 || f->left[g] < f->left[gpus[0]]) {
			gpus[0] = g;
		}
	}
}

/* A node for pod p by Random or BestFit, or -1. */
static int baseline_node(struct fill *f, const struct pod *p)
{
	int n_cand = 0, best = -1;
	int64_t best_score = 0;

	for (size_t n = 0; n < f->nl->n; n++) {
		if (!host_fits(f, (int)n, p) ||
		    (p->n_gpus > 0 && !gpus_fit(f, (int)n, p)))
			continue;
		f->cand[n_cand++] = (int)n;
	}
	if (n_cand == 0)
		return -1;
	if (n_cand == 1)
		return f->cand[0]; /* upstream does not score a single node */
	if (f->o->rule == COLLOC_FILL_RANDOM)
		return f->cand[rng_below(&f->rng, (size_t)n_cand)];
	/* Upstream normalises the scores to 0..100 before taking the highest,
	 * which keeps the highest the highest; the lowest name wins ties. */
	for (int i = 0; i < n_cand; i++) {
		int n = f->cand[i];
		int64_t s = bestfit_score(f, n, p);

		if (best < 0 || s > best_score ||
		    (s == best_score &&
		     strcmp(f->nl->node[n].name, f->nl->node[best].name) < 0)) {
			best = n;
			best_score = s;
		}
	}
	return best;
}

/* --- colloc's core -------------------------------------------------------- */

/* Tell the core that GPU g changed. */
static void core_set(struct fill *f, int g)
{
	/* Cannot fail: g exists and its node is the one it was made with. */
	(void)colloc_sched_ctx_set_gpu(f->sc, g, &f->rows[g], &f->loads[g], NULL);
}

/* Mark unusable the GPUs of every node whose host resources or type do
 * not fit p (only where that changed since the last pod). */
static void core_mask(struct fill *f, const struct pod *p)
{
	for (size_t n = 0; n < f->nl->n; n++) {
		struct fnode *nd = &f->nodes[n];
		bool ok = host_fits(f, (int)n, p);

		if (nd->n_gpus == 0 || ok == nd->usable)
			continue;
		nd->usable = ok;
		for (int i = 0; i < nd->n_gpus; i++) {
			f->rows[nd->first_gpu + i].usable = ok;
			core_set(f, nd->first_gpu + i);
		}
	}
}

/* Pod j's GPUs by the core's policy into gpus[]; false if it cannot
 * start. */
static int core_place(struct fill *f, size_t j, const struct pod *p, int *gpus,
		      bool *placed, struct colloc_diag *diag)
{
	struct colloc_sched_job q;
	struct colloc_sched_decision d;
	size_t n_dec = 0;
	int rr = f->rr, rc;

	*placed = false;
	core_mask(f, p);
	memset(&q, 0, sizeof(q));
	q.id = (uint64_t)j;
	q.n_gpus = p->n_gpus;
	q.mem_need_bytes = (uint64_t)p->milli * UNIT_BYTES;
	q.util_pred = p->milli / 1000.0;
	q.gpu_milli = p->milli;
	rc = colloc_sched_ctx_decide(f->sc, 0, f->rr, &q, 1, &d, 1, &n_dec, &rr, diag);
	if (rc)
		return rc;
	f->rr = rr;
	if (n_dec == 0)
		return 0;
	memcpy(gpus, d.gpus, sizeof(int) * (size_t)p->n_gpus);
	*placed = true;
	return 0;
}

/* A CPU-only pod under a core policy: the node that fits with the least
 * free GPU share, then the least free CPU, then the first. */
static int cpu_pod_node(const struct fill *f, const struct pod *p)
{
	int best = -1;
	uint64_t best_gpu = 0;

	for (size_t n = 0; n < f->nl->n; n++) {
		uint64_t g;

		if (!host_fits(f, (int)n, p))
			continue;
		g = node_free_milli(f, (int)n);
		if (best < 0 || g < best_gpu ||
		    (g == best_gpu && f->nodes[n].cpu_left < f->nodes[best].cpu_left)) {
			best = (int)n;
			best_gpu = g;
		}
	}
	return best;
}

/* --- the run --------------------------------------------------------------- */

/* Pod j (index into the trace) takes node n and, for a GPU pod, gpus[]. */
static void commit(struct fill *f, size_t j, const struct pod *p, int n, const int *gpus)
{
	struct fnode *nd = &f->nodes[n];
	bool excl =
		f->o->rule == COLLOC_FILL_CORE && f->o->policy == COLLOC_POLICY_EXCLUSIVE;

	nd->cpu_left -= p->cpu;
	nd->mem_left -= p->mem;
	for (int k = 0; k < p->n_gpus; k++) {
		int g = gpus[k];

		f->left[g] -= p->milli;
		f->alloc += (uint64_t)p->milli;
		f->held += excl ? 1000 : (uint64_t)p->milli;
		if (f->sc) {
			struct colloc_sched_running r;

			memset(&r, 0, sizeof(r));
			r.job_id = (uint64_t)j;
			r.n_gpus = p->n_gpus;
			memcpy(r.gpus, gpus, sizeof(int) * (size_t)p->n_gpus);
			r.mem_need_bytes = r.mem_used_bytes =
				(uint64_t)p->milli * UNIT_BYTES;
			r.at_peak = true;
			r.util_pred = p->milli / 1000.0;
			r.gpu_milli = p->milli;
			colloc_sched_load_add(&f->loads[g], &r);
			f->rows[g].mem_used_bytes += r.mem_need_bytes;
			core_set(f, g);
		}
	}
	/* The core reads host resources only through usability, which the
	 * next pod's mask (core_mask) recomputes for this node. */
}

static int cmp_id(const void *a, const void *b, const struct colloc_trace *t)
{
	uint64_t x = t->jobs[*(const size_t *)a].id, y = t->jobs[*(const size_t *)b].id;

	return x < y ? -1 : x > y;
}

/* Trace indices sorted by pod id (= by name for "openb-pod-NNNN"), stably
 * (a bottom-up merge sort; qsort is not stable). */
static int by_id(const struct colloc_trace *t, size_t *idx)
{
	size_t n = t->n_jobs, *tmp = malloc((n + 1) * sizeof(*tmp)), *src = idx,
	       *dst = tmp;

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t w = 1; w < n; w *= 2) {
		size_t *swap;

		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n,
			       hi = mid + w < n ? mid + w : n;
			size_t i = lo, k = lo, m = mid;

			while (i < mid && m < hi)
				dst[k++] = cmp_id(&src[m], &src[i], t) < 0 ? src[m++]
									   : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (m < hi)
				dst[k++] = src[m++];
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != idx)
		memcpy(idx, src, n * sizeof(*idx));
	free(tmp);
	return 0;
}

static uint64_t total_milli(const struct colloc_trace_job *tj)
{
	if (tj->n_gpus <= 0)
		return 0;
	return (uint64_t)tj->n_gpus *
	       (uint64_t)(tj->n_gpus == 1 && tj->gpu_milli > 0 && tj->gpu_milli < 1000
				  ? tj->gpu_milli
				  : 1000);
}

/*
 * The arriving pods (trace indices) into *out, *n_out: shuffled and tuned
 * as upstream (see the top of the file).
 */
static int workload(struct fill *f, const struct colloc_trace *t, uint64_t cap_milli,
		    size_t **out, size_t *n_out)
{
	size_t n = t->n_jobs, len = n, cap = 2 * n + 16;
	size_t *sorted = malloc((n + 1) * sizeof(*sorted)), *w = malloc(cap * sizeof(*w));
	double target = f->o->tune_ratio * (double)cap_milli;
	uint64_t total = 0;
	int rc;

	if (!sorted || !w || by_id(t, sorted) != 0) {
		free(sorted);
		free(w);
		return -ENOMEM;
	}
	memcpy(w, sorted, n * sizeof(*w));
	if (f->o->shuffle)
		for (size_t i = n; i > 1; i--) {
			size_t k = rng_below(&f->rng, i), x = w[i - 1];

			w[i - 1] = w[k];
			w[k] = x;
		}
	for (size_t i = 0; i < n; i++)
		total += total_milli(&t->jobs[w[i]]);
	if (f->o->tune_ratio > 0) {
		while ((double)total > target && len > 0) {
			size_t k = rng_below(&f->rng, len);

			total -= total_milli(&t->jobs[w[k]]);
			memmove(w + k, w + k + 1, (len - k - 1) * sizeof(*w));
			len--;
		}
		while (n > 0 && (double)total < target) {
			size_t k = sorted[rng_below(&f->rng, n)];
			const struct colloc_trace_job *tj = &t->jobs[k];
			uint64_t per_gpu =
				tj->n_gpus > 0 ? total_milli(tj) / (uint64_t)tj->n_gpus
					       : 0;

			/* Upstream stops at the first pod whose share (per GPU)
			 * would pass the target, and adds its whole request
			 * otherwise. */
			if ((double)(total + per_gpu) > target)
				break;
			if (len == cap) {
				size_t *nw;

				if (cap > SIZE_MAX / 2 / sizeof(*w)) {
					rc = -ENOMEM;
					goto fail;
				}
				nw = realloc(w, 2 * cap * sizeof(*w));
				if (!nw) {
					rc = -ENOMEM;
					goto fail;
				}
				w = nw;
				cap *= 2;
			}
			w[len++] = k;
			total += total_milli(tj);
		}
	}
	free(sorted);
	*out = w;
	*n_out = len;
	return 0;
fail:
	free(sorted);
	free(w);
	return rc;
}

static int setup(struct fill *f, struct colloc_diag *diag)
{
	const struct colloc_sim_nodes *nl = f->nl;
	int g = 0;

	f->nodes = calloc(nl->n + 1, sizeof(*f->nodes));
	f->cand = calloc(nl->n + 1, sizeof(*f->cand));
	f->left = calloc(nl->n_gpus + 1, sizeof(*f->left));
	if (!f->nodes || !f->cand || !f->left)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	for (size_t n = 0; n < nl->n; n++) {
		const struct colloc_sim_node *nd = &nl->node[n];
		struct fnode *fn = &f->nodes[n];

		fn->cpu_left = nd->cpu_milli;
		fn->mem_left = nd->mem_bytes;
		fn->first_gpu = g;
		fn->n_gpus = nd->n_gpus;
		fn->usable = true;
		fn->type = -1;
		if (nd->n_gpus > 0) {
			fn->type = type_of(f, nd->gpu_type, strlen(nd->gpu_type));
			if (fn->type < 0) {
				if (f->n_types == MAX_TYPES)
					return colloc_diag_set(
						diag, COLLOC_ELIMIT,
						"more than %d GPU types in "
						"the node list",
						MAX_TYPES);
				fn->type = f->n_types;
				memcpy(f->types[f->n_types++], nd->gpu_type,
				       sizeof(nd->gpu_type));
			}
		}
		for (int i = 0; i < nd->n_gpus; i++)
			f->left[g++] = 1000;
	}
	f->n_gpus = g;
	if (f->o->rule != COLLOC_FILL_CORE)
		return 0;
	f->rows = calloc((size_t)g + 1, sizeof(*f->rows));
	f->loads = calloc((size_t)g + 1, sizeof(*f->loads));
	if (!f->rows || !f->loads)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	for (size_t n = 0; n < nl->n; n++)
		for (int i = 0; i < f->nodes[n].n_gpus; i++) {
			struct colloc_sched_gpu *r = &f->rows[f->nodes[n].first_gpu + i];

			r->node = (int)n;
			r->mem_total_bytes = 1000 * UNIT_BYTES;
			r->usable = true;
		}
	return 0;
}

/* fgd's expected workload: the (GPUs, share) classes of the GPU pods by
 * count, as the event engine gives it (the first COLLOC_SCHED_MAX_CLASSES
 * distinct ones). */
static int classes_of(const struct colloc_trace *t, struct colloc_sched_class *cl)
{
	int n = 0;

	for (size_t j = 0; j < t->n_jobs; j++) {
		int g = t->jobs[j].n_gpus, m, k = 0;

		if (g < 1)
			continue;
		m = (int)(total_milli(&t->jobs[j]) / (uint64_t)g);
		while (k < n && (cl[k].n_gpus != g || cl[k].gpu_milli != m))
			k++;
		if (k == n) {
			if (n == COLLOC_SCHED_MAX_CLASSES)
				continue;
			cl[n++] = (struct colloc_sched_class){g, m, 0};
		}
		cl[k].count++;
	}
	return n;
}

static int make_core(struct fill *f, const struct colloc_trace *t,
		     struct colloc_diag *diag)
{
	struct colloc_sched_config cfg;
	struct colloc_sched_class cl[COLLOC_SCHED_MAX_CLASSES];

	colloc_sched_config_init(&cfg);
	cfg.policy = f->o->policy;
	/* Declarations are taken as they are: no headroom, and a GPU's
	 * declared shares sum to at most one GPU. */
	cfg.headroom_bytes = 0;
	cfg.util_bound = 1.0;
	if (cfg.policy == COLLOC_POLICY_FGD) {
		cfg.n_classes = classes_of(t, cl);
		cfg.classes = cl;
	}
	return colloc_sched_ctx_create(&cfg, f->rows, f->n_gpus, &f->sc, diag);
}

/* Python's round(x, 0) and round(x, 2), which upstream's analysis uses:
 * halves to even. */
static double round_even(double x, double scale)
{
	return nearbyint(x * scale) / scale;
}

static void curve(const uint64_t *arr, const uint64_t *alloc, size_t n, uint64_t cap,
		  struct colloc_sim_fill_result *out)
{
	double *sum = calloc(COLLOC_SIM_FILL_LEVELS, sizeof(double));
	size_t *cnt = calloc(COLLOC_SIM_FILL_LEVELS, sizeof(size_t));

	out->n_levels = 0;
	for (int k = 0; k < COLLOC_SIM_FILL_LEVELS; k++)
		out->alloc_pct[k] = NAN;
	if (!sum || !cnt || cap == 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		double a = round_even((double)arr[i] * 100.0 / (double)cap, 1);
		double v = round_even((double)alloc[i] * 100.0 / (double)cap, 100);

		if (a >= 0 && a < COLLOC_SIM_FILL_LEVELS) {
			sum[(int)a] += v;
			cnt[(int)a]++;
		}
	}
	for (int k = 0; k < COLLOC_SIM_FILL_LEVELS; k++) {
		double s = sum[k];
		size_t c = cnt[k];

		if (c == 0) /* upstream: the neighbouring levels */
			for (int d = -1; d <= 1; d += 2)
				if (k + d >= 0 && k + d < COLLOC_SIM_FILL_LEVELS) {
					s += sum[k + d];
					c += cnt[k + d];
				}
		if (c == 0)
			continue;
		out->alloc_pct[k] = s / (double)c;
		out->n_levels = k + 1;
	}
done:
	free(sum);
	free(cnt);
}

int colloc_sim_fill(const struct colloc_trace *trace,
		    const struct colloc_sim_nodes *nodes,
		    const struct colloc_sim_fill_opts *o,
		    struct colloc_sim_fill_result *out, struct colloc_diag *diag)
{
	struct fill f;
	struct timespec t0, t1;
	size_t *w = NULL, n_w = 0;
	uint64_t *arr = NULL, *alloc = NULL, arrived = 0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(out, 0, sizeof(*out));
	memset(&f, 0, sizeof(f));
	out->rule = o->rule;
	out->policy = o->policy;
	if (!nodes || nodes->n_gpus == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "fill: the node list has no GPUs");
	if (!(o->tune_ratio >= 0 && o->tune_ratio <= 3))
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"fill: the target request must be 0 to 3 times the "
			"cluster's GPUs");
	if (o->rule == COLLOC_FILL_CORE &&
	    (o->policy < 0 || o->policy >= COLLOC_POLICY_COUNT_))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "fill: unknown policy %d",
				       o->policy);
	f.nl = nodes;
	f.o = o;
	f.rng = o->seed;
	if ((rc = setup(&f, diag)))
		goto out;
	if (o->rule == COLLOC_FILL_CORE && (rc = make_core(&f, trace, diag)))
		goto out;
	out->cluster_milli = (uint64_t)f.n_gpus * 1000;
	if ((rc = workload(&f, trace, out->cluster_milli, &w, &n_w))) {
		(void)colloc_diag_set(diag, rc, "out of memory");
		goto out;
	}
	arr = malloc((n_w + 1) * sizeof(*arr));
	alloc = malloc((n_w + 1) * sizeof(*alloc));
	if (!arr || !alloc) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n_w; i++) {
		const struct colloc_trace_job *tj = &trace->jobs[w[i]];
		int gpus[COLLOC_SIM_NODE_GPUS_MAX], node = -1;
		struct pod p;

		pod_of(&f, tj, &p);
		arrived += total_milli(tj);
		if (p.n_gpus > COLLOC_SIM_NODE_GPUS_MAX) {
			node = -1; /* wider than any node: fails */
		} else if (o->rule != COLLOC_FILL_CORE) {
			node = baseline_node(&f, &p);
			if (node >= 0 && p.n_gpus > 0)
				pick_gpus(&f, node, &p, gpus);
		} else if (p.n_gpus == 0) {
			node = cpu_pod_node(&f, &p);
		} else {
			bool placed;

			if ((rc = core_place(&f, w[i], &p, gpus, &placed, diag)))
				goto out;
			if (placed)
				node = f.rows[gpus[0]].node;
		}
		if (p.n_gpus > 0)
			out->gpu_pods++;
		if (node >= 0) {
			commit(&f, w[i], &p, node, gpus);
			out->placed++;
		} else if (p.n_gpus > 0) {
			out->failed_gpu_pods++;
		}
		arr[i] = arrived;
		alloc[i] = f.alloc;
	}
	out->pods = n_w;
	out->arrived_milli = arrived;
	out->alloc_milli = f.alloc;
	out->held_milli = f.held;
	{
		uint64_t frag = 0;

		for (int g = 0; g < f.n_gpus; g++)
			if (f.left[g] > 0 && f.left[g] < 1000)
				frag += (uint64_t)f.left[g];
		out->frag_pct = 100.0 * (double)frag / (double)out->cluster_milli;
	}
	curve(arr, alloc, n_w, out->cluster_milli, out);
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out->wall_s = (double)(t1.tv_sec - t0.tv_sec) +
		      (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	colloc_sched_ctx_destroy(f.sc);
	free(f.nodes);
	free(f.cand);
	free(f.left);
	free(f.rows);
	free(f.loads);
	free(w);
	free(arr);
	free(alloc);
	return rc;
}
