/*
 * sched.c — colloc_sched_decide(): the placement core (see colloc/sched.h
 * for the rules). No I/O, no clock, no global state.
 *
 * Every decision is the one a scan of every GPU (every node, for a
 * multi-GPU job) for every queued job makes; place_plain() is that scan.
 * What makes a long pass fast:
 *  - a list of failures: a job that asks for at least as much as one that
 *    could not start cannot start either, and need not be looked at;
 *  - a segment tree over buckets of GPUs whose nodes summarise their GPUs
 *    (struct summ), updated on each placement, so that a search skips
 *    every set of GPUs whose best possible score cannot beat the best
 *    found so far (branch and bound; ties go to the lower index, as in the
 *    scan);
 *  - the same summaries per node, which bound a multi-GPU job's total on
 *    that node.
 *  - where every node is one bucket (the usual layout), the same tree is a
 *    tree over nodes: a multi-GPU job's search descends only into nodes
 *    that have enough GPUs its gates let in (struct summ's gate[]);
 *  - for request and fgd, the free declared share bounds the sets too,
 *    and fgd's fragmentation deltas have bounds where its expected
 *    workload is fixed (fgd_bounded());
 *  - a context's index of when GPUs empty (struct aidx), which names the
 *    node of the queue head's EASY reservation without a scan of every
 *    GPU.
 * None of these know GPU types: a job with a type constraint (type_mask)
 * is placed, and its reservation found, by the plain scan, whose
 * candidate() reads the type; the list of failures compares the types
 * jobs may use (types_within()).
 * A pass builds the tree only after a few plain scans, on clusters large
 * enough, and for inputs without non-finite numbers (see struct pass).
 * A context (struct colloc_sched_ctx, at the end) keeps the working view,
 * the node grouping and the tree between passes, and puts back only the
 * GPUs its caller set and those its last pass placed jobs on; its passes
 * read the tree from their first search, which decides nothing: a search
 * by the tree finds what the scan finds.
 * tests/unit/test_sched.c holds decisions recorded from the plain scan on
 * random inputs (tests/sched/random_golden.txt) and checks them all.
 */
#include "colloc/sched.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[COLLOC_POLICY_COUNT_] = {"exclusive",
							       "round-robin",
							       "most-free-memory",
							       "least-utilized",
							       "estimate-aware",
							       "request",
							       "fgd"};

const char *colloc_policy_name(int policy)
{
	if (policy < 0 || policy >= COLLOC_POLICY_COUNT_)
		return "unknown";
	return policy_names[policy];
}

int colloc_policy_parse(const char *name)
{
	for (int k = 0; name && k < COLLOC_POLICY_COUNT_; k++)
		if (strcmp(name, policy_names[k]) == 0)
			return k;
	return -1;
}

void colloc_sched_config_init(struct colloc_sched_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->policy = COLLOC_POLICY_ESTIMATE_AWARE;
	cfg->headroom_bytes = (uint64_t)512 << 20;
	cfg->util_bound = 1.0;
	cfg->backfill = true;
	cfg->backfill_rule = COLLOC_BACKFILL_STARVE;
	cfg->starve_ms = (int64_t)30 * 60 * 1000;
	cfg->util_soft = true;
	cfg->queue_wait = true;
}

uint64_t colloc_sched_reserved_bytes(uint64_t need_bytes, uint64_t used_bytes,
				     int64_t start_ms, int64_t now_ms, int64_t reserve_ms)
{
	/* Until its usage is visible a starting job's need is not in what
	 * the GPU reports: without holding it back, several jobs would see
	 * the same "free" GPU. Written as now - start >= reserve with the
	 * subtraction guarded, so that no clock value overflows. */
	bool lapsed =
		start_ms <= now_ms && (start_ms < 0 ? now_ms >= start_ms + reserve_ms
						    : now_ms - start_ms >= reserve_ms);

	if (used_bytes >= need_bytes || lapsed)
		return 0;
	return need_bytes - used_bytes;
}

static const char *const backfill_names[] = {"starve", "easy"};

const char *colloc_backfill_name(int rule)
{
	if (rule < 0 || rule > COLLOC_BACKFILL_EASY)
		return "unknown";
	return backfill_names[rule];
}

int colloc_backfill_parse(const char *name)
{
	for (int k = 0; name && k <= COLLOC_BACKFILL_EASY; k++)
		if (strcmp(name, backfill_names[k]) == 0)
			return k;
	return -1;
}

/* Working view of one GPU during a pass. */
struct wgpu {
	uint64_t total; /* memory (copied here: the hot loop reads one array) */
	uint64_t committed; /* measured use + reservations + this pass */
	double util; /* measured activity + this pass's predictions */
	double pred; /* sum of its jobs' predicted activity */
	int jobs; /* running + placed this pass */
	/* When its jobs are expected to have ended: INT64_MIN running
	 * nothing, INT64_MAX unknown or never (unusable). EASY backfill. */
	int64_t avail;
	bool closed; /* unusable or held by an exclusive job */
	bool isolated; /* a MIG instance: one job, best fit (sched.h) */
	int milli; /* declared shares of its jobs (request, fgd) */
	int type; /* its GPU type, against a job's type_mask */
};

/* GPUs per leaf of the search tree: a leaf is scanned GPU by GPU. */
#define BUCKET 8
/* Free-memory levels a summary keeps minima for (see struct summ), chosen
 * from a sample of at most LEVEL_SAMPLE queued jobs. */
#define MAX_LEVELS 8
#define LEVEL_SAMPLE 256
_Static_assert(MAX_LEVELS >= 3, "levels: 0, the least need, the largest");
/* Searches a pass makes by looking at every GPU before it builds the tree;
 * and the fewest GPUs for which the tree is worth it at all. */
#define PLAIN_SCANS 8
#define TREE_MIN_GPUS 64

/*
 * What a search needs to know of a set of GPUs to skip it without looking
 * at each: per class of open GPU (0: running nothing, 1: busy; closed GPUs
 * are in neither), the extremes of the quantities that the rules and the
 * scores read. Every score is non-decreasing in each of them, rounding
 * included, so a score computed from the extremes bounds the score of every
 * GPU of the set.
 *
 * The GPU with the lowest key (predicted activity for estimate-aware,
 * activity for least-utilized) is often one too full for the job, and then
 * a minimum over all GPUs bounds poorly. So the minima are kept per level
 * of free memory too: lv[l] is over the GPUs with at least level[l] bytes
 * free, and a job that needs T bytes reads the highest level <= T. The
 * counts bound a multi-GPU job's total score per node.
 */
/* Classes of busy GPUs by their number of jobs (struct summ's gc_key). */
#define GATE_CLASSES 3

struct summ {
	uint64_t max_free[2];
	int max_share[2]; /* the most declared share free (request, fgd) */
	bool has[2];
	struct {
		uint64_t min_free[2];
		double min_key[2];
		int count[2];
		/* The most GPUs at this level on one node below (class 0, and
		 * classes 0 and 1): read only where every node is a bucket. */
		int node_max0, node_max01;
	} lv[MAX_LEVELS];
	/* Where every node is a bucket: gate[k] is the least, over the nodes
	 * below, of the (k+1)-th smallest gate key of a node's open GPUs
	 * (gate_key()), so that a job wanting k+1 GPUs of one node that no
	 * such key lets in cannot start below. */
	double gate[COLLOC_SCHED_MAX_GPUS];
	/* The same for the score key of least-utilized (a GPU's activity)
	 * and most-free-memory (minus its free memory): kmin[k] is at most
	 * the (k+1)-th smallest key of every node below, so the totals of
	 * a multi-GPU job on any node below are bounded by these. */
	double kmin[COLLOC_SCHED_MAX_GPUS];
	/* And kfree[k] is at least the (k+1)-th largest free memory of the
	 * open GPUs of every node below that a multi-GPU job may use (not
	 * isolated), so that a node search stops where no node has room for
	 * the job on n GPUs, however many GPUs a level of memory counts. */
	uint64_t kfree[COLLOC_SCHED_MAX_GPUS];
	/* For estimate-aware's soft bound, per class of open busy GPUs below
	 * (1, 2, 3 or more jobs): the earliest expected end, so that the bound
	 * on any of them is at most that of a GPU of the class ending then
	 * (sub_bound(), gate_count()). Where every node is a bucket, also the
	 * most empty open GPUs of a node below and per class the least over
	 * the nodes below of a node's (k+1)-th smallest predicted activity. */
	bool gc_has[GATE_CLASSES];
	int64_t gc_avail[GATE_CLASSES];
	int gc_empty;
	double gc_key[GATE_CLASSES][COLLOC_SCHED_MAX_GPUS];
	/* fgd, where its bounds hold (fgd_bounded()): the largest expected
	 * fragmentation of a node below, and whether every node below is
	 * empty and of BUCKET GPUs. */
	double max_frag;
	bool all_empty;
};

/*
 * The least that the queued jobs from one position on ask for, in each
 * quantity a failure is compared on (dominated()): once one failure is
 * at most all of them, every job left fails as well, and a pass stops
 * there (run_queue). Kept where every job has the same activity bounds
 * (all but estimate-aware's soft bound) and the pass is not plain.
 */
struct rest {
	uint64_t need, types; /* the least need; the union of type masks */
	double util;
	int64_t wall; /* the least known walltime, INT64_MAX none */
	int n_gpus, share;
	bool excl; /* every job exclusive */
	bool untyped; /* some job of any type (mask 0) */
};

/* One per pass, on the stack: its fields stay grouped by what they are
 * for rather than packed by size. */
/*
 * estimate-aware's bound for one job (job_bound()): on GPU g it is
 * max(util_bound, 1 + w / ((n_g + 1) min(t, max(R_g, w)))), R_g the time
 * until g's n_g jobs end, when soft; lo and hi bound it over the GPUs (the
 * searches prune with hi, candidate() checks g's own). Not soft: lo = hi
 * on every GPU.
 */
struct jbound {
	double lo, hi;
	double w, t; /* the wait for empty GPUs and the walltime, ms (soft) */
	bool soft;
};

struct pass { // NOLINT(clang-analyzer-optin.performance.Padding)
	const struct colloc_sched_config *cfg;
	int n; /* GPUs */
	struct wgpu *w;
	int cursor; /* round-robin: the GPU to try first */
	int *by_node; /* GPU indices grouped by node, in order of nodes' first GPU */
	int *node_start; /* node k's GPUs: by_node[node_start[k] .. node_start[k+1]) */
	int *node_of; /* GPU -> its node's rank */
	int n_nodes;
	/* A segment tree over buckets of BUCKET GPUs: tree[1] covers all,
	 * tree[k]'s halves are tree[2k] and tree[2k+1], bucket b is leaf
	 * tree[leaves + b]. A placement changes only its buckets' paths to the
	 * root, and a search descends only into halves that may hold a GPU
	 * better than the best found so far. */
	struct summ *tree;
	int leaves; /* a power of two >= the number of buckets */
	/* The same per node, for multi-GPU jobs; a node whose GPUs are
	 * exactly a bucket's (the usual layout) reads the bucket's leaf. */
	struct summ *node_own;
	int *node_bucket; /* that bucket, or -1 */
	bool nodes_are_buckets; /* node k is bucket k, for every node */
	double *node_lb; /* scratch: bounds of the nodes in node_ok */
	int *node_ok; /* scratch: nodes that may hold a multi-GPU job */
	uint64_t level[MAX_LEVELS]; /* ascending, level[0] = 0 */
	int n_levels;
	/* Searches look at every GPU, as the rules are written, until the
	 * tree pays: building it costs about as much as a few such scans, many
	 * passes (the simulator's, one per event) need only a few, and on a
	 * small cluster a scan is as fast as the tree. And for good when the
	 * bounds cannot be trusted: they hold for finite numbers, not for an
	 * input with NaN, an infinity or an absurd magnitude (where sums could
	 * overflow). */
	bool built, plain;
	int scans; /* searches made without the tree */
	/* Jobs that failed to place: any job that asks for at least as much of
	 * everything fails too, without a search (what keeps a pass over a
	 * long queue fast once the cluster is full). A placement only takes
	 * from GPUs (less free memory, more jobs and predicted activity), so a
	 * failure stays one for the rest of the pass -- unless the job placed
	 * predicts negative (or NaN) activity, which clears the list, as does
	 * every placement in a plain pass (see refused_as_before). */
	/* What the queue from each position on asks for at least (struct
	 * rest, run_queue), or NULL; filled at the pass's first failure, for
	 * the positions after it (rest_filled). */
	struct rest *rest;
	bool rest_filled;
	struct failpt {
		uint64_t need;
		double util;
		int n_gpus;
		int milli; /* its share, where the policy reads shares */
		bool excl;
		bool late; /* could not use the head's reserved GPUs */
		struct jbound b; /* its activity bounds (p->cur) */
		uint64_t types; /* its type_mask */
	} fails[16];
	/* estimate-aware: the bounds on combined predicted activity for the
	 * job being placed (job_bound()); cur_bound is cur.hi. */
	struct jbound cur;
	double cur_bound;
	int n_fails;
	/* The last job place() refused was dominated(): a failure already
	 * covers it, and remembering it too would only crowd fails[]. */
	bool dominated;
	/* job_bound()'s earliest time that GPUs run nothing, by the shape
	 * that decides it; valid until the next commit (which only moves
	 * GPUs' ends later), so that queued jobs of one shape find it once. */
	struct wmemo {
		uint64_t need, types;
		int n_gpus;
		int64_t best;
	} wm[8]; /* when full, later shapes go unmemoized */
	int n_wm;
	/* GPU-ms (GPUs x walltime) of the jobs this pass could not start so
	 * far, walltimes known: the work the queue in front of a job asks of
	 * the cluster before first-come-first-served would reach it
	 * (job_bound()). */
	double ahead_ms;
	int resv_n; /* reserved GPUs, at resv_g[] */
	/* EASY backfill: the queue head's reservation, once it failed. A job
	 * that does not end by the shadow time may not use a reserved GPU. */
	int64_t now;
	int64_t shadow;
	bool *resv; /* per GPU; set only at resv_g[0..resv_n) */
	/* A context keeps the last reservation (struct colloc_sched_ctx):
	 * reused while its head is the same job, every reserved GPU still
	 * empties by the shadow time and no other GPU as early (memo_check),
	 * so that it is what a fresh computation gives. */
	struct resv_memo {
		uint64_t id, need, types;
		int64_t shadow;
		int g[COLLOC_SCHED_MAX_GPUS];
		int n;
		int n_gpus;
		bool valid;
	} * memo;
	/* A context's pass (struct colloc_sched_ctx): the GPUs whose working
	 * view differs from what the caller last set, to put back before the
	 * next pass. NULL in colloc_sched_decide's own pass. */
	int *touched;
	bool *is_touched;
	int resv_g[COLLOC_SCHED_MAX_GPUS];
	/* A context's index of when GPUs empty, for the reservation (struct
	 * aidx); NULL: reserve_head scans every node. */
	struct aidx *ai;
	int n_touched;
	bool resv_on;
	bool resv_tried; /* this pass */
	/* fgd: the expected workload's fragmentation weights for this pass
	 * (fgd_tables). A GPU with f thousandths free is a fragment for every
	 * fractional class asking more than f: frac_w[f] = f x their count.
	 * whole_more[e]: the count of whole-GPU classes asking more than e
	 * GPUs (for which a node with e empty GPUs is all fragment);
	 * whole_n: all whole-GPU classes' count. */
	int64_t frac_w[1001];
	int64_t whole_more[COLLOC_SCHED_MAX_GPUS + 1];
	int64_t whole_n;
	/* A context's copy of cfg->classes (the caller's need not outlive
	 * the call that made the context). */
	struct colloc_sched_class classes[COLLOC_SCHED_MAX_CLASSES];
	int n_classes;
};

/* A declared share as the policies that read it take it. */
static int share_of(int milli)
{
	return milli <= 0 || milli > 1000 ? 1000 : milli;
}

/* The policies that trust declared shares. */
static bool by_request(const struct colloc_sched_config *cfg)
{
	return cfg->policy == COLLOC_POLICY_REQUEST || cfg->policy == COLLOC_POLICY_FGD;
}

/* estimate-aware's gate on predicted activity. */
static bool ea_gated(const struct colloc_sched_config *cfg)
{
	return cfg->policy == COLLOC_POLICY_ESTIMATE_AWARE;
}

/* Whether the summaries keep what the soft bound reads (struct summ's
 * gc_*): only estimate-aware with util_soft pays for them. */
static bool soft_kept(const struct pass *p)
{
	return p->cfg->util_soft && ea_gated(p->cfg);
}

/* Whether job j may run on a GPU of type t (sched.h, GPU types). */
static bool type_ok(const struct colloc_sched_job *j, int t)
{
	return j->type_mask == 0 || (t >= 0 && t < 64 && (j->type_mask >> t & 1u));
}

/* Whether every GPU a job of type_mask inner may use, one of type_mask
 * outer may use too (0: any GPU): a failure of the outer one then covers
 * the inner one. */
static bool types_within(uint64_t inner, uint64_t outer)
{
	return outer == 0 || (inner != 0 && (inner & ~outer) == 0);
}

/* Whether job j must keep off the reserved GPUs: it is not known to end
 * by the shadow time. */
static bool late(const struct pass *p, const struct colloc_sched_job *j)
{
	if (!p->resv_on)
		return false;
	return j->walltime_ms <= 0 || p->shadow == INT64_MAX ||
	       p->now > p->shadow - j->walltime_ms;
}

/* Whether bounds a are at least b on every GPU: max(u, 1 + w / ((n + 1)
 * min(t, max(R, w)))) grows with w and shrinks with t, whatever n and R. */
static bool bound_covers(const struct jbound *a, const struct jbound *b)
{
	return b->hi <= a->lo ||
	       (a->soft && b->soft && b->w <= a->w && b->t >= a->t && b->hi <= a->hi);
}

/* Job j as a point of the failure memo: what it asks for of each quantity
 * that decides whether it can start. Shares bound only the policies that
 * read them, and activity only estimate-aware's gate: elsewhere every job's
 * counts as the least, so that failures keep dominating. */
static struct failpt point_of(const struct pass *p, const struct colloc_sched_job *j)
{
	return (struct failpt){j->mem_need_bytes,
			       ea_gated(p->cfg) ? j->util_pred : -HUGE_VAL,
			       j->n_gpus,
			       by_request(p->cfg) ? share_of(j->gpu_milli) : 0,
			       j->exclusive,
			       late(p, j),
			       p->cur,
			       j->type_mask};
}

/* Whether a job that asks for x fails where one that asked for f did: it
 * asks for at least as much of everything. */
static bool covers(const struct failpt *f, const struct failpt *x)
{
	return f->need <= x->need && f->util <= x->util && f->n_gpus <= x->n_gpus &&
	       (!f->excl || x->excl) && (!f->late || x->late) && f->milli <= x->milli &&
	       bound_covers(&f->b, &x->b) && types_within(x->types, f->types);
}

static bool dominated(struct pass *p, const struct colloc_sched_job *j)
{
	struct failpt x = point_of(p, j);

	for (int k = 0; k < p->n_fails; k++) {
		const struct failpt *f = &p->fails[k];

		if (covers(f, &x)) {
			/* to the front: a queue's failures repeat (the set
			 * and so the decisions stay as they are) */
			if (k > 0) {
				struct failpt t = p->fails[0];

				p->fails[0] = *f;
				p->fails[k] = t;
			}
			return true;
		}
	}
	return false;
}

/* Whether every job that rest r covers fails as dominated() decides: one
 * failure covers the least of each of their quantities (late() grows with
 * the walltime, so the least known one decides; a job of any type is
 * covered only by a failure of any type). Every job's activity bounds are
 * the pass's current ones (struct rest). */
static bool rest_fails(const struct pass *p, const struct rest *r)
{
	struct failpt x = {r->need,
			   r->util,
			   r->n_gpus,
			   r->share,
			   r->excl,
			   p->resv_on &&
				   (r->wall == INT64_MAX || p->shadow == INT64_MAX ||
				    p->now > p->shadow - r->wall),
			   p->cur,
			   r->untyped ? 0 : r->types};

	for (int k = 0; k < p->n_fails; k++)
		if (covers(&p->fails[k], &x))
			return true;
	return false;
}

static bool no_room(const struct pass *p, const struct colloc_sched_job *j);

static void remember_fail(struct pass *p, const struct colloc_sched_job *j)
{
	struct failpt nf = point_of(p, j);
	int w = 0;

	if (p->cfg->queue_wait && nf.b.soft && no_room(p, j))
		nf.b = (struct jbound){HUGE_VAL, HUGE_VAL, 0, 0, false}; /* open */

	/* Keep the frontier minimal: drop points the new one dominates. */
	for (int k = 0; k < p->n_fails; k++) {
		const struct failpt *f = &p->fails[k];

		if (!covers(&nf, f)) {
			if (w != k)
				p->fails[w] = *f;
			w++;
		}
	}
	p->n_fails = w;
	if (p->n_fails < (int)(sizeof(p->fails) / sizeof(p->fails[0])))
		p->fails[p->n_fails++] = nf;
	else
		p->fails[p->n_fails - 1] = nf; /* newest replaces the last */
}

static uint64_t free_of(const struct pass *p, int g)
{
	const struct wgpu *w = &p->w[g];

	return w->committed >= w->total ? 0 : w->total - w->committed;
}

static bool sat_fits(uint64_t need, uint64_t headroom, uint64_t free_bytes)
{
	return need <= free_bytes && headroom <= free_bytes - need;
}

/* The current job's activity bound on a GPU whose jobs are expected to end
 * at avail, n_jobs of them (struct jbound); it only falls as either grows. */
static double soft_bound(const struct pass *p, int64_t avail, int n_jobs)
{
	const struct jbound *b = &p->cur;
	double r, d, v;

	if (!b->soft)
		return b->hi;
	r = avail == INT64_MAX ? HUGE_VAL : (double)(avail > p->now ? avail - p->now : 0);
	d = r > b->w ? r : b->w;
	d = d < b->t ? d : b->t;
	/* j and each of g's jobs lose (A - 1) x d */
	v = 1.0 + b->w / (d * (1.0 + (double)n_jobs));
	if (v < b->lo)
		v = b->lo; /* rounding: never below the least */
	return v > b->hi ? b->hi : v;
}

/* The current job's activity bound on GPU g. */
static double gpu_bound(const struct pass *p, int g)
{
	return soft_bound(p, p->w[g].avail, p->w[g].jobs);
}

/* At least the current job's bound on every busy GPU of summary s: where
 * the soft bound is exact on each GPU, the searches prune with this rather
 * than with cur.hi (which holds for a GPU whose jobs end now), so that a
 * set of GPUs whose jobs all end long after the wait is skipped whole. */
static double sub_bound(const struct pass *p, const struct summ *s)
{
	double v = -HUGE_VAL;

	if (!p->cur.soft)
		return p->cur_bound;
	for (int c = 0; c < GATE_CLASSES; c++)
		if (s->gc_has[c]) {
			double b = soft_bound(p, s->gc_avail[c], c + 1);

			v = b > v ? b : v;
		}
	return v == -HUGE_VAL ? p->cur_bound : v;
}

/* Can job j use GPU g at all? */
static bool candidate(const struct pass *p, const struct colloc_sched_job *j, int g)
{
	const struct wgpu *w = &p->w[g];

	if (w->closed || !type_ok(j, w->type))
		return false;
	/* CUDA shows a process one MIG instance at most. */
	if (w->isolated && (w->jobs > 0 || j->n_gpus > 1))
		return false;
	if ((j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE) && w->jobs > 0)
		return false;
	if (!sat_fits(j->mem_need_bytes, p->cfg->headroom_bytes, free_of(p, g)))
		return false;
	if (ea_gated(p->cfg) && w->jobs > 0 &&
	    w->pred + j->util_pred > gpu_bound(p, g) + 1e-9)
		return false;
	if (by_request(p->cfg) && w->milli + share_of(j->gpu_milli) > 1000)
		return false;
	/* Backfilling never delays the head (EASY): a job that does not
	 * end by the shadow time keeps off its GPUs, and with queue_wait so
	 * does one that would slow the jobs there (combined predicted
	 * activity past util_bound), whose ends the shadow time was computed
	 * from. */
	if (p->resv_on && p->resv[g] &&
	    (late(p, j) || (p->cfg->queue_wait && ea_gated(p->cfg) && w->jobs > 0 &&
			    w->pred + j->util_pred > p->cfg->util_bound + 1e-9)))
		return false;
	return true;
}

/* What candidate() reads of GPU g besides memory and the reservation,
 * as one number that a job's gate compares (gate_shut()): the predicted
 * activity of a busy GPU (estimate-aware), the declared shares on it
 * (request, fgd); -1 for an empty GPU or another policy, HUGE_VAL closed
 * or isolated. */
static double gate_key(const struct pass *p, int g)
{
	const struct wgpu *w = &p->w[g];

	if (w->closed || w->isolated)
		return HUGE_VAL;
	if (w->jobs == 0)
		return -1;
	if (ea_gated(p->cfg))
		return w->pred;
	if (by_request(p->cfg))
		return (double)w->milli;
	return -1;
}

/* Whether a GPU with gate key v (or any with a key >= v) refuses j. */
static bool gate_shut(const struct pass *p, const struct colloc_sched_job *j, double v,
		      double bound)
{
	if (v == HUGE_VAL)
		return true;
	if (v < 0)
		return false;
	if (j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE)
		return true; /* busy */
	if (ea_gated(p->cfg))
		return v + j->util_pred > bound + 1e-9;
	if (by_request(p->cfg))
		return v + share_of(j->gpu_milli) > 1000;
	return false;
}

/* The two scores that mix quantities, shared by score() and the bounds so
 * that both round alike. */
static double ea_score(double pred, double util_pred, uint64_t free_bytes)
{
	return (pred + util_pred) * 1e15 + (double)free_bytes;
}

static double lu_score(double util, int g)
{
	return util * 1e6 + (double)g * 1e-3;
}

/* The share of GPU g that is free for fragmentation: none on a closed
 * GPU, and free_g replaced by f_new for GPU g_new (-1: none). */
static int frag_free(const struct pass *p, int g, int g_new, int f_new)
{
	int f;

	if (g == g_new)
		return f_new;
	if (p->w[g].closed)
		return 0;
	f = 1000 - p->w[g].milli;
	return f < 0 ? 0 : f;
}

/*
 * FGD's expected fragmentation of node nk (Weng et al., ATC '23, sec. 4):
 * the sum over the workload's classes, each weighted by its count, of the
 * free GPU share on the node that a job of that class could not use. For a
 * fractional class asking d: every GPU with less than d free. For a class
 * asking k whole GPUs: every partly used GPU, or all of the node's free
 * share when fewer than k of its GPUs are empty. With GPU g_new's free
 * share taken as f_new (-1: the node as it is).
 */
static int64_t node_frag(const struct pass *p, int nk, int g_new, int f_new)
{
	int64_t sum = 0, part = 0, frac = 0;
	int empty = 0;

	for (int i = p->node_start[nk]; i < p->node_start[nk + 1]; i++) {
		int f = frag_free(p, p->by_node[i], g_new, f_new);

		sum += f;
		frac += p->frac_w[f];
		if (f == 1000)
			empty++;
		else
			part += f;
	}
	if (empty > COLLOC_SCHED_MAX_GPUS)
		empty = COLLOC_SCHED_MAX_GPUS;
	return frac + p->whole_more[empty] * sum +
	       (p->whole_n - p->whole_more[empty]) * part;
}

/* fgd: how much node g's expected fragmentation grows if j takes GPU g.
 * A multi-GPU job sums this over the GPUs it takes, each as if taken
 * alone (an approximation of the node's joint growth). */
static double fgd_score(const struct pass *p, const struct colloc_sched_job *j, int g)
{
	int nk = p->node_of[g], f = frag_free(p, g, -1, 0) - share_of(j->gpu_milli);
	int64_t d = node_frag(p, nk, g, f < 0 ? 0 : f) - node_frag(p, nk, -1, 0);

	/* Among equals, the first GPU (the fraction stays below 1). */
	return (double)d + (double)g / ((double)p->n + 1.0);
}

/* Lower is better. */
static double score(const struct pass *p, const struct colloc_sched_job *j, int g)
{
	int n = p->n;

	/* The smallest instance that fits, before any shared GPU: instances
	 * exist to take the small jobs (below every other policy's score). */
	if (p->w[g].isolated)
		return (double)p->w[g].total - 1e19;
	switch (p->cfg->policy) {
	case COLLOC_POLICY_ROUND_ROBIN:
		return (double)((g - p->cursor % n + n) % n);
	case COLLOC_POLICY_MOST_FREE_MEMORY:
		return -(double)free_of(p, g);
	case COLLOC_POLICY_LEAST_UTILIZED:
		return lu_score(p->w[g].util, g);
	case COLLOC_POLICY_ESTIMATE_AWARE:
		/* Lowest combined predicted activity; among equals the
		 * tightest memory fit, which keeps big holes for big jobs. */
		return ea_score(p->w[g].pred, j->util_pred, free_of(p, g));
	case COLLOC_POLICY_REQUEST:
		/* Bin packing by declared share: the least share left over,
		 * then the first GPU. */
		return (double)(1000 - p->w[g].milli - share_of(j->gpu_milli)) +
		       (double)g / ((double)n + 1.0);
	case COLLOC_POLICY_FGD:
		return fgd_score(p, j, g);
	default: /* exclusive: first free GPU */
		return (double)g;
	}
}

/*
 * Whether fgd's scores have bounds in the tree: nodes are buckets (a
 * leaf's summary is one node's) and the expected workload is the fixed
 * one of the context (the tables do not change between passes). Then a
 * GPU's score is at least minus its node's expected fragmentation (which
 * cannot go below 0), and on a node that is empty and of BUCKET GPUs it is
 * one number for every such node (fgd_empty_delta).
 */
static bool fgd_bounded(const struct pass *p)
{
	return p->cfg->policy == COLLOC_POLICY_FGD && p->nodes_are_buckets &&
	       p->n_classes > 0;
}

/* node_frag() of a node of n GPUs with free shares f[]. */
static int64_t frag_of(const struct pass *p, const int *f, int n)
{
	int64_t sum = 0, part = 0, frac = 0;
	int empty = 0;

	for (int i = 0; i < n; i++) {
		sum += f[i];
		frac += p->frac_w[f[i]];
		if (f[i] == 1000)
			empty++;
		else
			part += f[i];
	}
	if (empty > COLLOC_SCHED_MAX_GPUS)
		empty = COLLOC_SCHED_MAX_GPUS;
	return frac + p->whole_more[empty] * sum +
	       (p->whole_n - p->whole_more[empty]) * part;
}

/* fgd_score()'s fragmentation delta for j on any GPU of an empty node of
 * BUCKET GPUs. */
static int64_t fgd_empty_delta(const struct pass *p, const struct colloc_sched_job *j)
{
	int before[BUCKET], after[BUCKET];

	for (int i = 0; i < BUCKET; i++)
		before[i] = after[i] = 1000;
	after[0] = 1000 - share_of(j->gpu_milli);
	return frag_of(p, after, BUCKET) - frag_of(p, before, BUCKET);
}

/* The policies whose multi-GPU search reads struct summ's kmin[]. */
static bool score_keyed(const struct pass *p)
{
	return p->cfg->policy == COLLOC_POLICY_LEAST_UTILIZED ||
	       p->cfg->policy == COLLOC_POLICY_MOST_FREE_MEMORY;
}

/* GPU g's part of score() without the GPU index: its activity, or minus
 * its free memory; HUGE_VAL where it can be no candidate. */
static double score_key(const struct pass *p, int g)
{
	const struct wgpu *w = &p->w[g];

	if (w->closed || w->isolated)
		return HUGE_VAL;
	return p->cfg->policy == COLLOC_POLICY_LEAST_UTILIZED ? w->util
							      : -(double)free_of(p, g);
}

static void summ_clear(const struct pass *p, struct summ *s)
{
	for (int c = 0; c < 2; c++) {
		s->max_free[c] = 0;
		s->max_share[c] = -1;
		s->has[c] = false;
		for (int l = 0; l < p->n_levels; l++) {
			s->lv[l].min_free[c] = UINT64_MAX;
			s->lv[l].min_key[c] = HUGE_VAL;
			s->lv[l].count[c] = 0;
		}
	}
	for (int l = 0; l < p->n_levels; l++)
		s->lv[l].node_max0 = s->lv[l].node_max01 = 0;
	for (int k = 0; k < COLLOC_SCHED_MAX_GPUS; k++) {
		s->gate[k] = s->kmin[k] = HUGE_VAL;
		s->kfree[k] = 0;
	}
	for (int c = 0; c < GATE_CLASSES && soft_kept(p); c++) {
		s->gc_empty = 0;
		s->gc_has[c] = false;
		s->gc_avail[c] = INT64_MAX;
		for (int k = 0; k < COLLOC_SCHED_MAX_GPUS; k++)
			s->gc_key[c][k] = HUGE_VAL;
	}
	s->max_frag = -HUGE_VAL;
	s->all_empty = true;
}

static void summ_add_gpu(const struct pass *p, struct summ *s, int g)
{
	const struct wgpu *w = &p->w[g];
	int c = w->jobs > 0;
	uint64_t f = free_of(p, g);
	double key = p->cfg->policy == COLLOC_POLICY_LEAST_UTILIZED ? w->util : w->pred;

	if (w->closed)
		return;
	s->has[c] = true;
	if (c == 1 && soft_kept(p)) {
		int k = (w->jobs < GATE_CLASSES ? w->jobs : GATE_CLASSES) - 1;

		s->gc_has[k] = true;
		if (w->avail < s->gc_avail[k])
			s->gc_avail[k] = w->avail;
	}
	if (f > s->max_free[c])
		s->max_free[c] = f;
	if (1000 - w->milli > s->max_share[c])
		s->max_share[c] = 1000 - w->milli;
	for (int l = 0; l < p->n_levels && f >= p->level[l]; l++) {
		if (f < s->lv[l].min_free[c])
			s->lv[l].min_free[c] = f;
		if (key < s->lv[l].min_key[c])
			s->lv[l].min_key[c] = key;
		s->lv[l].count[c]++;
	}
}

static void summ_merge(const struct pass *p, struct summ *s, const struct summ *a,
		       const struct summ *b)
{
	for (int c = 0; c < 2; c++) {
		s->has[c] = a->has[c] || b->has[c];
		s->max_free[c] =
			a->max_free[c] > b->max_free[c] ? a->max_free[c] : b->max_free[c];
		s->max_share[c] = a->max_share[c] > b->max_share[c] ? a->max_share[c]
								    : b->max_share[c];
		for (int l = 0; l < p->n_levels; l++) {
			s->lv[l].min_free[c] = a->lv[l].min_free[c] < b->lv[l].min_free[c]
						       ? a->lv[l].min_free[c]
						       : b->lv[l].min_free[c];
			s->lv[l].min_key[c] = a->lv[l].min_key[c] < b->lv[l].min_key[c]
						      ? a->lv[l].min_key[c]
						      : b->lv[l].min_key[c];
			s->lv[l].count[c] = a->lv[l].count[c] + b->lv[l].count[c];
		}
	}
	for (int l = 0; l < p->n_levels; l++) {
		s->lv[l].node_max0 = a->lv[l].node_max0 > b->lv[l].node_max0
					     ? a->lv[l].node_max0
					     : b->lv[l].node_max0;
		s->lv[l].node_max01 = a->lv[l].node_max01 > b->lv[l].node_max01
					      ? a->lv[l].node_max01
					      : b->lv[l].node_max01;
	}
	for (int k = 0; k < COLLOC_SCHED_MAX_GPUS; k++) {
		s->gate[k] = a->gate[k] < b->gate[k] ? a->gate[k] : b->gate[k];
		s->kmin[k] = a->kmin[k] < b->kmin[k] ? a->kmin[k] : b->kmin[k];
		s->kfree[k] = a->kfree[k] > b->kfree[k] ? a->kfree[k] : b->kfree[k];
	}
	for (int c = 0; c < GATE_CLASSES && soft_kept(p); c++) {
		s->gc_empty = a->gc_empty > b->gc_empty ? a->gc_empty : b->gc_empty;
		s->gc_has[c] = a->gc_has[c] || b->gc_has[c];
		s->gc_avail[c] =
			a->gc_avail[c] < b->gc_avail[c] ? a->gc_avail[c] : b->gc_avail[c];
		for (int k = 0; k < COLLOC_SCHED_MAX_GPUS; k++)
			s->gc_key[c][k] = a->gc_key[c][k] < b->gc_key[c][k]
						  ? a->gc_key[c][k]
						  : b->gc_key[c][k];
	}
	s->max_frag = a->max_frag > b->max_frag ? a->max_frag : b->max_frag;
	s->all_empty = a->all_empty && b->all_empty;
}

static const struct summ *node_summ(const struct pass *p, int nk)
{
	return p->node_bucket[nk] >= 0 ? &p->tree[p->leaves + p->node_bucket[nk]]
				       : &p->node_own[nk];
}

static void node_refresh(struct pass *p, int nk)
{
	struct summ *s = &p->node_own[nk];

	if (p->node_bucket[nk] >= 0)
		return;
	summ_clear(p, s);
	for (int i = p->node_start[nk]; i < p->node_start[nk + 1]; i++)
		summ_add_gpu(p, s, p->by_node[i]);
}

static void tree_leaf(struct pass *p, int b)
{
	struct summ *s = &p->tree[p->leaves + b];

	summ_clear(p, s);
	for (int g = b * BUCKET; g < (b + 1) * BUCKET && g < p->n; g++)
		summ_add_gpu(p, s, g);
	for (int l = 0; l < p->n_levels; l++) {
		s->lv[l].node_max0 = s->lv[l].count[0];
		s->lv[l].node_max01 = s->lv[l].count[0] + s->lv[l].count[1];
	}
	if (fgd_bounded(p) && b < p->n_nodes) {
		/* bucket b is node b */
		s->max_frag = (double)node_frag(p, b, -1, 0);
		s->all_empty = p->node_start[b + 1] - p->node_start[b] == BUCKET;
		for (int g = b * BUCKET; g < (b + 1) * BUCKET && g < p->n; g++)
			s->all_empty &= !p->w[g].closed && p->w[g].jobs == 0 &&
					p->w[g].milli == 0;
	} else if (b * BUCKET < p->n) {
		s->max_frag = HUGE_VAL; /* no bound */
		s->all_empty = false;
	}
	/* the bucket's score keys, ascending (summ_clear left HUGE_VAL) */
	for (int g = b * BUCKET, n = 0;
	     g < (b + 1) * BUCKET && g < p->n && score_keyed(p); g++) {
		double v = score_key(p, g);
		int k = n < COLLOC_SCHED_MAX_GPUS ? n++ : n - 1;

		if (v >= s->kmin[k])
			continue;
		while (k > 0 && s->kmin[k - 1] > v) {
			s->kmin[k] = s->kmin[k - 1];
			k--;
		}
		s->kmin[k] = v;
	}
	/* the bucket's free memory, descending (summ_clear left 0) */
	for (int g = b * BUCKET, n = 0; g < (b + 1) * BUCKET && g < p->n; g++) {
		uint64_t f = p->w[g].closed || p->w[g].isolated ? 0 : free_of(p, g);
		int k = n < COLLOC_SCHED_MAX_GPUS ? n++ : n - 1;

		if (f <= s->kfree[k])
			continue;
		while (k > 0 && s->kfree[k - 1] < f) {
			s->kfree[k] = s->kfree[k - 1];
			k--;
		}
		s->kfree[k] = f;
	}
	/* the bucket's keys, ascending (summ_clear left HUGE_VAL) */
	for (int g = b * BUCKET, n = 0; g < (b + 1) * BUCKET && g < p->n; g++) {
		double v = gate_key(p, g);
		int k = n < COLLOC_SCHED_MAX_GPUS ? n++ : n - 1;

		if (v >= s->gate[k])
			continue;
		while (k > 0 && s->gate[k - 1] > v) {
			s->gate[k] = s->gate[k - 1];
			k--;
		}
		s->gate[k] = v;
	}
	/* the bucket's keys by class (gate_count()) */
	for (int g = b * BUCKET; g < (b + 1) * BUCKET && g < p->n && soft_kept(p); g++) {
		const struct wgpu *w = &p->w[g];
		double v = gate_key(p, g);
		int c, k;

		if (v == HUGE_VAL)
			continue;
		if (w->jobs == 0) {
			s->gc_empty++;
			continue;
		}
		/* a busy GPU's key is its jobs' predicted activity, which odd
		 * input may make negative: in its class all the same */
		c = (w->jobs < GATE_CLASSES ? w->jobs : GATE_CLASSES) - 1;
		for (k = 0; k < COLLOC_SCHED_MAX_GPUS && s->gc_key[c][k] <= v; k++)
			;
		if (k == COLLOC_SCHED_MAX_GPUS)
			continue;
		memmove(&s->gc_key[c][k + 1], &s->gc_key[c][k],
			sizeof(double) * (size_t)(COLLOC_SCHED_MAX_GPUS - 1 - k));
		s->gc_key[c][k] = v;
	}
}

/* Of the busy GPUs below s (gc_key), how many let j in under the soft
 * bound, counted up to most. */
static int busy_admitted(const struct pass *p, const struct summ *s,
			 const struct colloc_sched_job *j, int most)
{
	int have = 0;

	for (int c = 0; c < GATE_CLASSES && have < most; c++) {
		double lim;

		if (s->gc_key[c][0] == HUGE_VAL)
			continue;
		lim = soft_bound(p, s->gc_avail[c], c + 1) + 1e-9;
		for (int k = 0; k < COLLOC_SCHED_MAX_GPUS && have < most &&
				s->gc_key[c][k] + j->util_pred <= lim;
		     k++)
			have++;
	}
	return have;
}

/*
 * Under estimate-aware's soft bound, whether the nodes below summary s
 * may hold n GPUs that let the current job in: at most gc_empty empty
 * ones, and of the busy GPUs of class c (c + 1 jobs, or more for the last)
 * those whose activity plus the job's is within the bound of a GPU of that
 * class ending at gc_avail[c] (the bound falls as the end and the jobs
 * grow). Tighter than the gate alone, which holds every busy GPU to the
 * bound of the most permissive one.
 */
static bool gate_count(const struct pass *p, const struct summ *s,
		       const struct colloc_sched_job *j, int n)
{
	return s->gc_empty >= n ||
	       s->gc_empty + busy_admitted(p, s, j, n - s->gc_empty) >= n;
}

/* Bucket b changed: its leaf, its ancestors. */
static void tree_update(struct pass *p, int b)
{
	tree_leaf(p, b);
	for (size_t k = ((size_t)p->leaves + (size_t)b) / 2; k >= 1; k /= 2)
		summ_merge(p, &p->tree[k], &p->tree[2 * k], &p->tree[2 * k + 1]);
}

/* One job as a search sees it. */
struct want {
	const struct colloc_sched_job *j;
	uint64_t min_free; /* need + headroom */
	int lv; /* the highest level <= min_free */
	bool cls[2]; /* may use GPUs of class 0 (empty), 1 (busy) */
	int64_t fgd_empty; /* fgd_empty_delta(), where fgd_bounded() */
};

/*
 * Whether GPUs of class c in a set (summary s, indices within [lo, hi]) may
 * hold a candidate for q, and if so a lower bound on those candidates'
 * scores in *lb. Never says no where there is a candidate.
 */
static bool class_bound(const struct pass *p, const struct want *q, const struct summ *s,
			int c, int lo, int hi, double *lb)
{
	const struct colloc_sched_config *cfg = p->cfg;
	uint64_t min_free = s->lv[q->lv].min_free[c];
	double min_key = s->lv[q->lv].min_key[c];

	if (!q->cls[c] || !s->has[c] || s->max_free[c] < q->min_free)
		return false;
	if (by_request(cfg) && s->max_share[c] < share_of(q->j->gpu_milli))
		return false;
	if (c == 1 && ea_gated(cfg) && min_key + q->j->util_pred > sub_bound(p, s) + 1e-9)
		return false;
	/* Under the soft bound, also per class of busy GPUs: the class's least
	 * activity against its most permissive bound (that of its earliest
	 * end). The two tests are apart, so each is a necessary condition. */
	if (c == 1 && ea_gated(cfg) && p->cur.soft && p->nodes_are_buckets &&
	    busy_admitted(p, s, q->j, 1) == 0)
		return false;
	switch (cfg->policy) {
	case COLLOC_POLICY_ROUND_ROBIN: {
		int n = p->n;

		*lb = lo >= p->cursor  ? (double)(lo - p->cursor)
		      : hi < p->cursor ? (double)(lo - p->cursor + n)
				       : 0;
		break;
	}
	case COLLOC_POLICY_MOST_FREE_MEMORY:
		*lb = -(double)s->max_free[c];
		break;
	case COLLOC_POLICY_LEAST_UTILIZED:
		*lb = lu_score(min_key, lo);
		break;
	case COLLOC_POLICY_ESTIMATE_AWARE:
		*lb = ea_score(min_key, q->j->util_pred,
			       min_free > q->min_free ? min_free : q->min_free);
		break;
	case COLLOC_POLICY_REQUEST:
		/* The share left over is never negative on a candidate. */
		*lb = (double)lo / ((double)p->n + 1.0);
		break;
	case COLLOC_POLICY_FGD:
		/* Without fgd_bounded(), every set with a candidate is looked
		 * at (the bounds still skip the sets without room). */
		if (!fgd_bounded(p))
			*lb = -HUGE_VAL;
		else if (c == 0 && s->all_empty)
			*lb = (double)q->fgd_empty + (double)lo / ((double)p->n + 1.0);
		else
			*lb = -s->max_frag + (double)lo / ((double)p->n + 1.0);
		break;
	default:
		*lb = (double)lo;
		break;
	}
	return true;
}

/* The same over both classes. */
static bool bound(const struct pass *p, const struct want *q, const struct summ *s,
		  int lo, int hi, double *lb)
{
	double b[2] = {0, 0};
	bool ok0 = class_bound(p, q, s, 0, lo, hi, &b[0]),
	     ok1 = class_bound(p, q, s, 1, lo, hi, &b[1]);

	if (ok0 && ok1)
		*lb = b[1] < b[0] ? b[1] : b[0];
	else if (ok0 || ok1)
		*lb = ok0 ? b[0] : b[1];
	return ok0 || ok1;
}

/*
 * Whether node nk may hold n candidates for q, and if so a lower bound on
 * their total score in *lb: the candidates are among the GPUs counted at
 * q's level, each scores at least its class's bound, and the total adds the
 * n lowest scores in ascending order -- so the n lowest class bounds, added
 * in the same order, bound it (rounding is monotone).
 */
static bool node_bound(const struct pass *p, const struct want *q, int nk, double *lb)
{
	const struct summ *s = node_summ(p, nk);
	int lo = p->by_node[p->node_start[nk]],
	    hi = p->by_node[p->node_start[nk + 1] - 1];
	int n = q->j->n_gpus, cnt[2] = {0, 0}, first;
	double b[2] = {0, 0};

	if (s->lv[q->lv].count[0] + (q->cls[1] ? s->lv[q->lv].count[1] : 0) < n)
		return false;
	for (int c = 0; c < 2; c++)
		if (class_bound(p, q, s, c, lo, hi, &b[c]))
			cnt[c] = s->lv[q->lv].count[c];
	if (cnt[0] + cnt[1] < n)
		return false;
	first = cnt[0] == 0 || (cnt[1] > 0 && b[1] < b[0]);
	*lb = 0;
	for (int k = 0; k < n; k++)
		*lb += k < cnt[first] ? b[first] : b[!first];
	return true;
}

struct best {
	double score;
	int g;
	bool found;
};

/* Could a set with bound lb whose first GPU is lo improve on b? Ties go
 * to the lower GPU index, as in a scan in index order. */
static bool may_improve(const struct best *b, double lb, int lo)
{
	return !b->found || lb < b->score || (lb == b->score && lo < b->g);
}

/* Best candidate for q under tree node k (buckets lo .. lo + width - 1,
 * bound lb), into b. */
static void search(const struct pass *p, const struct want *q, size_t k, int lo,
		   int width, double lb, struct best *b)
{
	int half = width / 2, n = p->n;
	double lbs[2] = {0, 0};
	bool ok[2];

	if (!may_improve(b, lb, lo * BUCKET))
		return;
	if (width == 1) {
		int end = (lo + 1) * BUCKET < n ? (lo + 1) * BUCKET : n;

		for (int g = lo * BUCKET; g < end; g++) {
			double s;

			if (!candidate(p, q->j, g))
				continue;
			s = score(p, q->j, g);
			if (may_improve(b, s, g)) {
				b->score = s;
				b->g = g;
				b->found = true;
			}
		}
		return;
	}
	for (int c = 0; c < 2; c++) {
		int clo = (lo + c * half) * BUCKET, chi = clo + half * BUCKET - 1;

		ok[c] = clo < n && bound(p, q, &p->tree[2 * k + (size_t)c], clo,
					 chi < n ? chi : n - 1, &lbs[c]);
	}
	/* The more promising half first: its best prunes more of the other. */
	if (ok[0] && ok[1] && lbs[1] < lbs[0]) {
		search(p, q, 2 * k + 1, lo + half, half, lbs[1], b);
		search(p, q, 2 * k, lo, half, lbs[0], b);
		return;
	}
	if (ok[0])
		search(p, q, 2 * k, lo, half, lbs[0], b);
	if (ok[1])
		search(p, q, 2 * k + 1, lo + half, half, lbs[1], b);
}

/* Node nk's best n candidates for j into pick[], their total score into
 * *total; false if it has fewer than n. */
static bool node_best(const struct pass *p, const struct colloc_sched_job *j, int nk,
		      int *pick, double *total)
{
	double sc[COLLOC_SCHED_MAX_GPUS];
	int n = 0;

	for (int i = p->node_start[nk]; i < p->node_start[nk + 1]; i++) {
		int g = p->by_node[i], k;
		double s;

		if (!candidate(p, j, g))
			continue;
		s = score(p, j, g);
		/* insertion into the n best so far */
		if (n > 0 && n == j->n_gpus && s >= sc[n - 1])
			continue;
		k = n < j->n_gpus ? n++ : n - 1;
		while (k > 0 && sc[k - 1] > s) {
			sc[k] = sc[k - 1];
			pick[k] = pick[k - 1];
			k--;
		}
		sc[k] = s;
		pick[k] = g;
	}
	if (n < j->n_gpus)
		return false;
	*total = 0;
	for (int k = 0; k < n; k++)
		*total += sc[k];
	return true;
}

/*
 * The quick refusals of the first, scan-only version of place(). With a
 * NaN predicted activity on a busy GPU they refuse some jobs that the
 * rules would start (the smallest prediction passes over NaN). Kept for
 * plain passes, with the list of failures cleared after each placement as
 * it was then, so that no decision changes; for inputs without NaN they
 * refuse only what the rules do, and a pass with the tree does without.
 */
static bool refused_as_before(const struct pass *p, const struct colloc_sched_job *j)
{
	uint64_t max_free_empty = 0;
	double min_pred_busy = 1e300;

	for (int g = 0; g < p->n; g++) {
		const struct wgpu *w = &p->w[g];
		uint64_t f;

		if (w->closed)
			continue;
		f = free_of(p, g);
		if (w->jobs == 0 && f > max_free_empty)
			max_free_empty = f;
		if (w->jobs > 0 && w->pred < min_pred_busy)
			min_pred_busy = w->pred;
	}
	if (sat_fits(j->mem_need_bytes, p->cfg->headroom_bytes, max_free_empty))
		return false;
	return j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE ||
	       (ea_gated(p->cfg) && min_pred_busy + j->util_pred > p->cur_bound + 1e-9);
}

/* place() by looking at every GPU, every node, as the rules are written. */
static bool place_plain(const struct pass *p, const struct colloc_sched_job *j, int *out)
{
	double best_total = 0;
	bool found = false;

	if (j->n_gpus == 1) {
		double best = 0;

		for (int g = 0; g < p->n; g++) {
			double s;

			if (!candidate(p, j, g))
				continue;
			s = score(p, j, g);
			if (!found || s < best) {
				best = s;
				out[0] = g;
				found = true;
			}
		}
		return found;
	}
	for (int nk = 0; nk < p->n_nodes; nk++) {
		int pick[COLLOC_SCHED_MAX_GPUS];
		double total;

		if (p->node_start[nk + 1] - p->node_start[nk] < j->n_gpus ||
		    !node_best(p, j, nk, pick, &total))
			continue;
		if (!found || total < best_total) {
			best_total = total;
			memcpy(out, pick, sizeof(int) * (size_t)j->n_gpus);
			found = true;
		}
	}
	return found;
}

/* The best node for a multi-GPU job, where every node is a bucket: the
 * tree over buckets is a tree over nodes. A subtree is looked at only if
 * one of its nodes has n GPUs at q's level and n times its least class
 * bound could beat the best total so far (ties: the lower node). */
struct node_pick {
	double total;
	int node;
	bool found;
	int gpus[COLLOC_SCHED_MAX_GPUS];
};

static void search_nodes(const struct pass *p, const struct want *q, size_t k, int lo,
			 int width, struct node_pick *b)
{
	const struct summ *s = &p->tree[k];
	int n = q->j->n_gpus, half = width / 2;
	int have = q->cls[1] ? s->lv[q->lv].node_max01 : s->lv[q->lv].node_max0;
	double lb = 0, bc[2] = {0, 0}, m;
	bool ok0, ok1;

	if (lo >= p->n_nodes || have < n || s->kfree[n - 1] < q->min_free ||
	    gate_shut(p, q->j, s->gate[n - 1], sub_bound(p, s)) ||
	    (p->cur.soft && ea_gated(p->cfg) && !gate_count(p, s, q->j, n)))
		return;
	ok0 = class_bound(p, q, s, 0, lo * BUCKET, (lo + width) * BUCKET - 1, &bc[0]);
	ok1 = class_bound(p, q, s, 1, lo * BUCKET, (lo + width) * BUCKET - 1, &bc[1]);
	if (!ok0 && !ok1)
		return;
	m = ok0 && ok1 ? (bc[1] < bc[0] ? bc[1] : bc[0]) : ok0 ? bc[0] : bc[1];
	/* a node's total adds n scores of at least m, in order */
	for (int i = 0; i < n; i++)
		lb += m;
	if (score_keyed(p)) {
		/* and its i-th smallest score is at least the term of kmin[i] */
		double lk = 0;

		if (s->kmin[n - 1] == HUGE_VAL)
			return;
		for (int i = 0; i < n; i++)
			lk += p->cfg->policy == COLLOC_POLICY_LEAST_UTILIZED
				      ? lu_score(s->kmin[i], lo * BUCKET)
				      : s->kmin[i];
		if (lk > lb)
			lb = lk;
	}
	if (b->found && !(lb < b->total || (lb == b->total && lo < b->node)))
		return;
	if (width == 1) {
		int pick[COLLOC_SCHED_MAX_GPUS];
		double total;

		if (p->node_start[lo + 1] - p->node_start[lo] < n ||
		    !node_best(p, q->j, lo, pick, &total))
			return;
		if (!b->found || total < b->total ||
		    (total == b->total && lo < b->node)) {
			b->total = total;
			b->node = lo;
			b->found = true;
			memcpy(b->gpus, pick, sizeof(int) * (size_t)n);
		}
		return;
	}
	search_nodes(p, q, 2 * k, lo, half, b);
	search_nodes(p, q, 2 * k + 1, lo + half, half, b);
}

/*
 * estimate-aware's bounds for job j (util_soft): beyond util_bound, a GPU
 * whose combined predicted activity A (with j) exceeds 1 runs its jobs
 * about A times slower (they share what the GPU can do) for as long as j
 * shares it: at most j's walltime T, and, on GPU g, about until g's n_g
 * jobs end (R_g; when they end later than W, W at most matters): j and
 * each of them lose (A - 1) x that. Waiting W for GPUs that run nothing
 * costs j W. So j may go to g where (n_g + 1) (A - 1) min(T, max(R_g, W))
 * < W (the sum of the completion times grows less by sharing than by
 * waiting): the bound on g is max(util_bound, 1 + W / ((n_g + 1) min(T,
 * max(R_g, W)))), at most 1 + W / (2 min(T, W)).
 * W is when the GPUs j would fit empty are expected to run nothing (as for
 * a reservation). A job of unknown walltime could lose without limit by
 * sharing: its bound is util_bound, as if gated. Unknown ends make W
 * unbounded: a job whose walltime is known then shares as soon as memory
 * fits.
 */
static bool aidx_query(struct pass *p, const struct colloc_sched_job *j,
		       uint64_t min_free, int *node);
static int node_earliest(const struct pass *p, const struct colloc_sched_job *j, int nk,
			 uint64_t min_free, int want, int64_t *t, int *g_of);

static uint64_t earliest_key(const struct pass *p, uint64_t min_free);

/* The memo of earliest empty times (struct wmemo): whether it holds j's. */
static bool earliest_memo(const struct pass *p, const struct colloc_sched_job *j,
			  uint64_t min_free, int64_t *best)
{
	min_free = earliest_key(p, min_free);
	for (int k = 0; k < p->n_wm; k++)
		if (p->wm[k].need == min_free && p->wm[k].types == j->type_mask &&
		    p->wm[k].n_gpus == j->n_gpus) {
			*best = p->wm[k].best;
			return true;
		}
	return false;
}

static void earliest_note(struct pass *p, const struct colloc_sched_job *j,
			  uint64_t min_free, int64_t best)
{
	struct wmemo *m;

	if (p->n_wm == (int)(sizeof(p->wm) / sizeof(p->wm[0])))
		return;
	m = &p->wm[p->n_wm++];
	m->need = earliest_key(p, min_free);
	m->types = j->type_mask;
	m->n_gpus = j->n_gpus;
	m->best = best;
}

static struct jbound job_bound(struct pass *p, const struct colloc_sched_job *j)
{
	const struct colloc_sched_config *cfg = p->cfg;
	int64_t t[COLLOC_SCHED_MAX_GPUS], best = INT64_MAX;
	int g_of[COLLOC_SCHED_MAX_GPUS], nk, n = j->n_gpus;
	uint64_t min_free;
	struct jbound r = {cfg->util_bound, cfg->util_bound, 0, 0, false};
	double w, tw, lo, hi;

	if (!cfg->util_soft || cfg->policy != COLLOC_POLICY_ESTIMATE_AWARE ||
	    j->walltime_ms <= 0)
		return r;
	if (n < 1 || n > COLLOC_SCHED_MAX_GPUS ||
	    j->mem_need_bytes > UINT64_MAX - cfg->headroom_bytes) {
		r.lo = r.hi = HUGE_VAL;
		return r;
	}
	min_free = j->mem_need_bytes + cfg->headroom_bytes;
	if (!earliest_memo(p, j, min_free, &best)) {
		if (aidx_query(p, j, min_free, &nk)) {
			if (nk >= 0 && node_earliest(p, j, nk, min_free, n, t, g_of) == n)
				best = t[n - 1];
		} else {
			for (nk = 0; nk < p->n_nodes; nk++)
				if (p->node_start[nk + 1] - p->node_start[nk] >= n &&
				    node_earliest(p, j, nk, min_free, n, t, g_of) == n &&
				    t[n - 1] < best)
					best = t[n - 1];
		}
		earliest_note(p, j, min_free, best);
	}
	if (best == INT64_MAX) {
		r.lo = r.hi = HUGE_VAL;
		return r;
	}
	w = (double)(best > p->now ? best - p->now : 0);
	/* queue_wait: first come, first served, a one-GPU job waits at least
	 * until the cluster has done the work of the jobs before it that
	 * cannot start either. Not a wider job: sharing k GPUs to skip that
	 * wait slows k GPUs' jobs and takes room on the nodes that the wide
	 * jobs in front wait to find empty (docs/simulator.md, "Counting the
	 * queue in front"). */
	if (cfg->queue_wait && n == 1 && p->ahead_ms / (double)p->n > w)
		w = p->ahead_ms / (double)p->n;
	if (w <= 0)
		return r; /* GPUs run nothing now: no reason to share past it */
	tw = (double)j->walltime_ms;
	lo = 1.0;
	hi = 1.0 + w / (2.0 * (tw < w ? tw : w));
	r.lo = lo > cfg->util_bound ? lo : cfg->util_bound;
	r.hi = hi > cfg->util_bound ? hi : cfg->util_bound;
	r.w = w;
	r.t = tw;
	r.soft = true;
	return r;
}

/* Choose job j's GPUs into out[]; false if it cannot start now. */
static bool place(struct pass *p, const struct colloc_sched_job *j, int *out)
{
	struct want q = {j, 0, 0, {true, true}, 0};
	double best_total = 0, lb = 0;
	int n_ok = 0, first = 0, best_node = 0;
	bool found = false;

	p->dominated = false;
	p->cur = job_bound(p, j);
	p->cur_bound = p->cur.hi;
	/* Overflow: no GPU has that much memory. */
	if (j->mem_need_bytes > UINT64_MAX - p->cfg->headroom_bytes)
		return false;
	q.min_free = j->mem_need_bytes + p->cfg->headroom_bytes;
	while (q.lv + 1 < p->n_levels && p->level[q.lv + 1] <= q.min_free)
		q.lv++;
	q.cls[1] = !(j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE);
	if (p->built && fgd_bounded(p))
		q.fgd_empty = fgd_empty_delta(p, j);
	if (dominated(p, j)) {
		p->dominated = true;
		return false;
	}
	/* The tree's bounds know no GPU types: a constrained job scans. */
	if (!p->built || j->type_mask != 0) {
		p->scans++;
		if (p->plain && refused_as_before(p, j))
			return false;
		return place_plain(p, j, out);
	}
	if (!bound(p, &q, &p->tree[1], 0, p->n - 1, &lb))
		return false;
	if (j->n_gpus == 1) {
		struct best b = {0, 0, false};

		search(p, &q, 1, 0, p->leaves, lb, &b);
		out[0] = b.g;
		return b.found;
	}
	if (p->nodes_are_buckets) {
		struct node_pick b = {0, 0, false, {0}};

		search_nodes(p, &q, 1, 0, p->leaves, &b);
		if (b.found)
			memcpy(out, b.gpus, sizeof(int) * (size_t)j->n_gpus);
		return b.found;
	}
	/* Several GPUs: the best n candidates of each node, the lowest total
	 * wins, the first node among equals. Bound every node, then look at
	 * the most promising one first: its total lets most others go by their
	 * bound alone. */
	for (int nk = 0; nk < p->n_nodes; nk++) {
		if (p->node_start[nk + 1] - p->node_start[nk] < j->n_gpus ||
		    !node_bound(p, &q, nk, &p->node_lb[n_ok]))
			continue;
		if (n_ok == 0 || p->node_lb[n_ok] < p->node_lb[first])
			first = n_ok;
		p->node_ok[n_ok++] = nk;
	}
	for (int i = -1; i < n_ok; i++) {
		int k = i < 0 ? first : i, nk, pick[COLLOC_SCHED_MAX_GPUS];
		double total;

		if (n_ok == 0 || (k == first && i >= 0))
			continue;
		nk = p->node_ok[k];
		if (found && !(p->node_lb[k] < best_total ||
			       (p->node_lb[k] == best_total && nk < best_node)))
			continue;
		if (!node_best(p, j, nk, pick, &total))
			continue;
		if (!found || total < best_total ||
		    (total == best_total && nk < best_node)) {
			best_total = total;
			best_node = nk;
			memcpy(out, pick, sizeof(int) * (size_t)j->n_gpus);
			found = true;
		}
	}
	return found;
}

/*
 * Whether job j, which place() just refused, would be refused with no
 * bound on combined activity too, because no GPU has room for it: where
 * the tree is built, its root says so of every GPU at once (the most free
 * memory of an open GPU; for n GPUs, at least the n-th most of any node's
 * open GPUs). Such a failure, remembered with an open bound, covers every
 * later job that asks at least as much whatever that job's bound
 * (bound_covers()) -- which matters where the soft bound grows with the
 * queue in front (queue_wait, job_bound()), so that a failure kept with
 * its own bound would cover almost no later job and each of them would
 * search (without queue_wait, a failure's bound covers later jobs of its
 * shape as it is).
 */
static bool no_room(const struct pass *p, const struct colloc_sched_job *j)
{
	const struct summ *r = &p->tree[1];
	uint64_t min_free;
	int n = j->n_gpus;

	if (!p->built || p->plain || n < 1 || n > COLLOC_SCHED_MAX_GPUS ||
	    j->mem_need_bytes > UINT64_MAX - p->cfg->headroom_bytes)
		return false;
	min_free = j->mem_need_bytes + p->cfg->headroom_bytes;
	if (n > 1)
		return r->kfree[n - 1] < min_free;
	return (!r->has[0] || r->max_free[0] < min_free) &&
	       (!r->has[1] || r->max_free[1] < min_free);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Group GPUs by node (stable, nodes in order of their first GPU). */
static int group_nodes(struct pass *p, const struct colloc_sched_gpu *gpus)
{
	int n = p->n, *first_of;

	/* One more: a context may have no GPUs, and malloc(0) may fail. */
	p->by_node = malloc(sizeof(int) * ((size_t)n + 1));
	p->node_start = malloc(sizeof(int) * ((size_t)n + 1));
	first_of = p->node_of = malloc(sizeof(int) * ((size_t)n + 1)); /* GPU -> rank */
	if (!p->by_node || !p->node_start || !first_of)
		return -ENOMEM;
	/* Rank nodes by first appearance with a small open-addressing map
	 * from node id to rank, sized to a power of two >= 2n. */
	{
		size_t cap = 16;
		int *keys, *ranks, *counts;

		while (cap < 2 * (size_t)n)
			cap *= 2;
		keys = malloc(sizeof(int) * cap);
		ranks = malloc(sizeof(int) * cap);
		counts = calloc((size_t)n + 1, sizeof(int));
		if (!keys || !ranks || !counts) {
			free(keys);
			free(ranks);
			free(counts);
			return -ENOMEM;
		}
		for (size_t k = 0; k < cap; k++)
			keys[k] = -1, ranks[k] = -1;
		p->n_nodes = 0;
		for (int g = 0; g < n; g++) {
			unsigned node = (unsigned)gpus[g].node;
			size_t h = (size_t)((uint64_t)node * 2654435761u) & (cap - 1);

			while (ranks[h] >= 0 && keys[h] != gpus[g].node)
				h = (h + 1) & (cap - 1);
			if (ranks[h] < 0) {
				keys[h] = gpus[g].node;
				ranks[h] = p->n_nodes++;
			}
			first_of[g] = ranks[h];
			counts[ranks[h]]++;
		}
		p->node_start[0] = 0;
		for (int k = 0; k < p->n_nodes; k++)
			p->node_start[k + 1] = p->node_start[k] + counts[k];
		memset(counts, 0, sizeof(int) * ((size_t)n + 1));
		for (int g = 0; g < n; g++)
			p->by_node[p->node_start[first_of[g]] + counts[first_of[g]]++] =
				g;
		free(keys);
		free(ranks);
		free(counts);
	}
	return 0;
}

/* GPU g's working view is to be put back before a context's next pass. */
static void mark_touched(struct pass *p, int g)
{
	if (!p->is_touched[g]) {
		p->is_touched[g] = true;
		p->touched[p->n_touched++] = g;
	}
}

static void aidx_note(struct pass *p, int g);

static void commit(struct pass *p, const struct colloc_sched_job *j, const int *gpus)
{
	int64_t end = j->walltime_ms > 0 && p->now <= INT64_MAX - j->walltime_ms
			      ? p->now + j->walltime_ms
			      : INT64_MAX;

	for (int k = 0; k < j->n_gpus; k++) {
		struct wgpu *w = &p->w[gpus[k]];

		if (p->touched)
			mark_touched(p, gpus[k]);
		w->committed += j->mem_need_bytes;
		w->util += j->util_pred;
		w->pred += j->util_pred;
		w->jobs++;
		w->milli += share_of(j->gpu_milli);
		if (j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE)
			w->closed = true;
		if (w->avail < end)
			w->avail = end;
		aidx_note(p, gpus[k]);
	}
	for (int k = 0; k < j->n_gpus && p->built; k++) {
		int b = gpus[k] / BUCKET, seen = 0;

		for (int i = 0; i < k; i++)
			seen |= gpus[i] / BUCKET == b;
		if (!seen)
			tree_update(p, b);
	}
	/* A job's GPUs share one node. */
	if (p->built)
		node_refresh(p, p->node_of[gpus[0]]);
	if (p->plain || !(j->util_pred >= 0))
		p->n_fails = 0;
	p->n_wm = 0; /* ends moved */
}

/* Whether x is a number the bounds can work with: finite, and small enough
 * that any sum of them that fits in memory, times 1e15, stays far from
 * overflow. */
static bool sane(double x)
{
	return x >= -1e6 && x <= 1e6;
}

/* Sort key of a queued job; carrying the keys avoids a global for qsort. */
struct qkey {
	int priority;
	int64_t submit_ms;
	uint64_t id;
	size_t idx;
};

static int cmp_queue(const void *a, const void *b)
{
	const struct qkey *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->submit_ms != y->submit_ms)
		return x->submit_ms < y->submit_ms ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Free-memory levels for the summaries from t[0..n) (sorted here), the
 * needs plus headroom of a sample of queued jobs: quantiles, so that most
 * searches read minima over nearly only the GPUs with room enough. Only the
 * policies whose scores read a key use them. They affect speed, never
 * decisions. */
static void levels_from(struct pass *p, uint64_t *t, size_t n)
{
	p->level[0] = 0;
	p->n_levels = 1;
	if (p->cfg->policy != COLLOC_POLICY_ESTIMATE_AWARE &&
	    p->cfg->policy != COLLOC_POLICY_LEAST_UTILIZED)
		return;
	qsort(t, n, sizeof(*t), cmp_u64);
	/* From the least need (below it a GPU is of no use to any job) to the
	 * largest. */
	for (int l = 1; l < MAX_LEVELS && n > 0; l++) {
		uint64_t v = t[(size_t)(l - 1) * (n - 1) / (MAX_LEVELS - 2)];

		if (v > p->level[p->n_levels - 1])
			p->level[p->n_levels++] = v;
	}
}

/* Levels for the jobs rest[0..n_rest) still to decide. */
static void choose_levels(struct pass *p, const struct colloc_sched_job *queue,
			  const struct qkey *rest, size_t n_rest)
{
	uint64_t t[LEVEL_SAMPLE];
	size_t n = 0;

	/* A sample, evenly spaced, is enough for quantiles. */
	for (size_t k = 0; k < n_rest; k += n_rest / LEVEL_SAMPLE + 1) {
		const struct colloc_sched_job *j = &queue[rest[k].idx];

		if (j->mem_need_bytes <= UINT64_MAX - p->cfg->headroom_bytes)
			t[n++] = j->mem_need_bytes + p->cfg->headroom_bytes;
	}
	levels_from(p, t, n);
}

/* The search tree's and node summaries' memory; false if out of memory. */
static bool alloc_index(struct pass *p)
{
	size_t n_nodes = (size_t)p->n_nodes;

	for (p->leaves = 1; (size_t)p->leaves * BUCKET < (size_t)p->n; p->leaves *= 2)
		;
	p->tree = malloc(2 * (size_t)p->leaves * sizeof(*p->tree));
	p->node_own = malloc(n_nodes * sizeof(*p->node_own));
	p->node_bucket = malloc(n_nodes * sizeof(*p->node_bucket));
	p->node_lb = malloc(n_nodes * sizeof(*p->node_lb));
	p->node_ok = malloc(n_nodes * sizeof(*p->node_ok));
	return p->tree && p->node_own && p->node_bucket && p->node_lb && p->node_ok;
}

/* Summarise every GPU into the tree and the nodes, at p's levels. */
static void fill_index(struct pass *p)
{
	p->nodes_are_buckets = true;
	for (int k = 0; k < p->n_nodes; k++) {
		int first = p->by_node[p->node_start[k]],
		    size = p->node_start[k + 1] - p->node_start[k];

		/* A node's GPUs are in ascending order: first and last tell
		 * whether they are one bucket. */
		p->node_bucket[k] = -1;
		if (first % BUCKET == 0 &&
		    size == (p->n - first < BUCKET ? p->n - first : BUCKET) &&
		    p->by_node[p->node_start[k + 1] - 1] == first + size - 1)
			p->node_bucket[k] = first / BUCKET;
		if (p->node_bucket[k] != k)
			p->nodes_are_buckets = false;
	}
	for (int b = 0; b < p->leaves; b++)
		tree_leaf(p, b);
	for (size_t k = (size_t)p->leaves - 1; k >= 1; k--)
		summ_merge(p, &p->tree[k], &p->tree[2 * k], &p->tree[2 * k + 1]);
	for (int k = 0; k < p->n_nodes; k++)
		node_refresh(p, k);
}

/* Build the search tree and the node summaries for the jobs rest[0..n_rest)
 * still to decide. On failure (out of memory) the pass carries on without
 * them: the same decisions, more slowly. */
static void build_index(struct pass *p, const struct colloc_sched_job *queue,
			const struct qkey *rest, size_t n_rest)
{
	if (!alloc_index(p)) {
		p->plain = true;
		return;
	}
	choose_levels(p, queue, rest, n_rest);
	fill_index(p);
	p->built = true;
}

static int validate_queue(const struct colloc_sched_job *queue, size_t n_queue,
			  struct colloc_diag *diag)
{
	for (size_t k = 0; k < n_queue; k++) {
		if (queue[k].n_gpus < 1 || queue[k].n_gpus > COLLOC_SCHED_MAX_GPUS)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "job %llu asks for %d GPUs (1..%d)",
					       (unsigned long long)queue[k].id,
					       queue[k].n_gpus, COLLOC_SCHED_MAX_GPUS);
		if (queue[k].gpu_milli < 0 || queue[k].gpu_milli > 1000)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "job %llu declares %d thousandths of a "
					       "GPU (0..1000)",
					       (unsigned long long)queue[k].id,
					       queue[k].gpu_milli);
	}
	return 0;
}

/* One class's weight into the tables (see struct pass). */
static void fgd_add(struct pass *p, int64_t *hist, int n_gpus, int milli, int64_t count)
{
	int d = share_of(milli);

	if (d < 1000) {
		hist[d] += count;
		return;
	}
	p->whole_n += count;
	for (int e = 0; e < n_gpus && e <= COLLOC_SCHED_MAX_GPUS; e++)
		p->whole_more[e] += count;
}

/* fgd's tables for this pass, from the context's classes or, without
 * any, from the queue's jobs. */
static void fgd_tables(struct pass *p, const struct colloc_sched_job *queue,
		       size_t n_queue)
{
	int64_t hist[1001] = {0}, above = 0;

	p->whole_n = 0;
	memset(p->whole_more, 0, sizeof(p->whole_more));
	if (p->n_classes > 0)
		for (int c = 0; c < p->n_classes; c++)
			fgd_add(p, hist, p->classes[c].n_gpus, p->classes[c].gpu_milli,
				p->classes[c].count);
	else
		for (size_t k = 0; k < n_queue; k++)
			fgd_add(p, hist, queue[k].n_gpus, queue[k].gpu_milli, 1);
	/* frac_w[f] = f x the count of fractional classes asking more. */
	for (int f = 1000; f >= 0; f--) {
		p->frac_w[f] = (int64_t)f * above;
		above += hist[f];
	}
}

static int validate(const struct colloc_sched_state *st,
		    const struct colloc_sched_job *queue, size_t n_queue,
		    struct colloc_diag *diag)
{
	if (st->n_gpus < 0 || (st->n_gpus > 0 && !st->gpus))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "invalid GPU list");
	for (size_t k = 0; k < st->n_running; k++) {
		const struct colloc_sched_running *r = &st->running[k];

		if (r->n_gpus < 1 || r->n_gpus > COLLOC_SCHED_MAX_GPUS)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "running job %llu has %d GPUs",
					       (unsigned long long)r->job_id, r->n_gpus);
		for (int i = 0; i < r->n_gpus; i++)
			if (r->gpus[i] < 0 || r->gpus[i] >= st->n_gpus)
				return colloc_diag_set(
					diag, COLLOC_EUSAGE,
					"running job %llu is on GPU %d, which does "
					"not exist",
					(unsigned long long)r->job_id, r->gpus[i]);
	}
	return validate_queue(queue, n_queue, diag);
}

/* When GPU g is expected to run nothing, from now on. */
static int64_t avail_at(const struct pass *p, int g)
{
	return p->w[g].avail > p->now ? p->w[g].avail : p->now;
}

/* Whether job j fits GPU g once g runs nothing. */
static bool fits_empty(const struct pass *p, const struct colloc_sched_job *j, int g,
		       uint64_t min_free)
{
	const struct wgpu *w = &p->w[g];

	if (w->avail == INT64_MAX && w->closed)
		return false; /* unusable, or held by a job of unknown end */
	if (!type_ok(j, w->type))
		return false;
	if (w->isolated && j->n_gpus > 1)
		return false;
	return w->total >= min_free;
}

/*
 * EASY backfill: the reservation of head j, which cannot start now: the
 * GPUs expected to run nothing first among those it would fit when empty
 * (n_gpus of them on one node), and the time the last of them does (the
 * shadow time; INT64_MAX when some end is unknown). The estimate is
 * conservative for sharing policies (the head may fit beside a job
 * before its GPU empties). False when no GPU could ever take j.
 */
/*
 * The reservation index (a context's, built at its first reservation):
 * for every node, the k-th earliest time one of its GPUs is expected to
 * run nothing (k = 1 .. K), and a segment tree over nodes of the least
 * of each with the first node that has it. It names the node that
 * reserve_head()'s scan of every node chooses: the first node whose
 * want-th earliest time is at most now (every time up to now counts as
 * now), else the first with the least. It answers only where the scan's
 * filter (fits_empty) lets every GPU pass that is not closed with an
 * unknown end: no isolated GPU, every GPU large enough, and no open GPU
 * with an unknown end; elsewhere the scan runs. Nodes are brought up to
 * date lazily, when a query comes, from the GPUs noted since.
 */
struct aidx {
	int k; /* times kept per node */
	int leaves; /* a power of two >= the number of nodes */
	int64_t *key; /* per GPU: when it empties; INT64_MAX: not a candidate */
	bool *unknown; /* per GPU: open, busy, with an unknown end */
	bool *iso; /* per GPU: isolated */
	int n_unknown, n_iso;
	uint64_t min_total; /* a lower bound on every GPU's memory */
	int64_t *kth; /* tree node x k: least k-th time below it */
	int *arg; /* tree node x k: the first node that has it */
	bool *dirty_node;
	int *dirty;
	int n_dirty;
};

#define AIDX_ABSENT INT64_MAX

/*
 * The memo's key for min_free: the earliest time depends on it only through
 * which GPUs are large enough (fits_empty), so every min_free within the
 * least GPU's memory (the reservation index keeps a lower bound on it)
 * finds the same time, and shares one key, 0.
 */
static uint64_t earliest_key(const struct pass *p, uint64_t min_free)
{
	return p->ai && min_free <= p->ai->min_total ? 0 : min_free;
}

static void aidx_destroy(struct aidx *a)
{
	if (!a)
		return;
	free(a->key);
	free(a->unknown);
	free(a->iso);
	free(a->kth);
	free(a->arg);
	free(a->dirty_node);
	free(a->dirty);
	free(a);
}

/* GPU g's working view changed: its key, and its node to refresh. */
static void aidx_note(struct pass *p, int g)
{
	struct aidx *a = p->ai;
	const struct wgpu *w = &p->w[g];
	bool unknown, iso = w->isolated;
	int nk;

	if (!a)
		return;
	unknown = w->avail == INT64_MAX && !w->closed;
	a->key[g] = w->avail == INT64_MAX ? AIDX_ABSENT : w->avail;
	a->n_unknown += (int)unknown - (int)a->unknown[g];
	a->unknown[g] = unknown;
	a->n_iso += (int)iso - (int)a->iso[g];
	a->iso[g] = iso;
	if (w->total < a->min_total)
		a->min_total = w->total;
	nk = p->node_of[g];
	if (!a->dirty_node[nk]) {
		a->dirty_node[nk] = true;
		a->dirty[a->n_dirty++] = nk;
	}
}

static void aidx_pull(struct aidx *a, size_t t)
{
	size_t l = 2 * t, r = l + 1;

	for (int k = 0; k < a->k; k++) {
		/* the left child on ties: the first node */
		bool left = a->kth[l * (size_t)a->k + (size_t)k] <=
			    a->kth[r * (size_t)a->k + (size_t)k];
		size_t from = (left ? l : r) * (size_t)a->k + (size_t)k;

		a->kth[t * (size_t)a->k + (size_t)k] = a->kth[from];
		a->arg[t * (size_t)a->k + (size_t)k] = a->arg[from];
	}
}

/* Node nk's leaf from its GPUs' keys, and the path above it. */
static void aidx_node(struct pass *p, int nk)
{
	struct aidx *a = p->ai;
	size_t leaf = (size_t)a->leaves + (size_t)nk;
	int64_t *t = &a->kth[leaf * (size_t)a->k];
	int n = 0;

	for (int k = 0; k < a->k; k++) {
		t[k] = AIDX_ABSENT;
		a->arg[leaf * (size_t)a->k + (size_t)k] = nk;
	}
	for (int i = p->node_start[nk]; i < p->node_start[nk + 1]; i++) {
		int64_t v = a->key[p->by_node[i]];
		int k;

		if (v == AIDX_ABSENT || (n == a->k && v >= t[n - 1]))
			continue;
		k = n < a->k ? n++ : n - 1;
		while (k > 0 && t[k - 1] > v) {
			t[k] = t[k - 1];
			k--;
		}
		t[k] = v;
	}
	for (size_t u = leaf / 2; u >= 1; u /= 2)
		aidx_pull(a, u);
}

/* Build the index over p's working view; false if out of memory. */
static bool aidx_build(struct pass *p)
{
	struct aidx *a = calloc(1, sizeof(*a));
	size_t n = (size_t)p->n + 1, cells;
	int most = 1;

	if (!a)
		return false;
	for (int nk = 0; nk < p->n_nodes; nk++)
		if (p->node_start[nk + 1] - p->node_start[nk] > most)
			most = p->node_start[nk + 1] - p->node_start[nk];
	a->k = most < COLLOC_SCHED_MAX_GPUS ? most : COLLOC_SCHED_MAX_GPUS;
	for (a->leaves = 1; a->leaves < p->n_nodes; a->leaves *= 2)
		;
	cells = 2 * (size_t)a->leaves * (size_t)a->k;
	a->key = malloc(n * sizeof(*a->key));
	a->unknown = calloc(n, sizeof(*a->unknown));
	a->iso = calloc(n, sizeof(*a->iso));
	a->kth = malloc(cells * sizeof(*a->kth));
	a->arg = calloc(cells, sizeof(*a->arg));
	a->dirty_node = calloc((size_t)p->n_nodes + 1, sizeof(*a->dirty_node));
	a->dirty = malloc(((size_t)p->n_nodes + 1) * sizeof(*a->dirty));
	if (!a->key || !a->unknown || !a->iso || !a->kth || !a->arg || !a->dirty_node ||
	    !a->dirty) {
		aidx_destroy(a);
		return false;
	}
	for (size_t c = 0; c < cells; c++)
		a->kth[c] = AIDX_ABSENT;
	a->min_total = UINT64_MAX;
	p->ai = a;
	for (int g = 0; g < p->n; g++)
		aidx_note(p, g);
	for (int d = 0; d < a->n_dirty; d++) {
		a->dirty_node[a->dirty[d]] = false;
		aidx_node(p, a->dirty[d]);
	}
	a->n_dirty = 0;
	return true;
}

/*
 * The node reserve_head()'s scan chooses for j into *node (-1: none), when
 * the index can answer (returns true); false: scan.
 */
static bool aidx_query(struct pass *p, const struct colloc_sched_job *j,
		       uint64_t min_free, int *node)
{
	struct aidx *a;
	size_t t = 1, k = (size_t)j->n_gpus - 1, K;

	/* One pass alone: building costs what a scan does. The index knows
	 * no GPU types. */
	if (!p->memo || j->type_mask != 0)
		return false;
	if (!p->ai && !aidx_build(p))
		return false;
	a = p->ai;
	if (a->n_unknown > 0 || a->n_iso > 0 || min_free > a->min_total ||
	    j->n_gpus > a->k)
		return false;
	for (int d = 0; d < a->n_dirty; d++) {
		a->dirty_node[a->dirty[d]] = false;
		aidx_node(p, a->dirty[d]);
	}
	a->n_dirty = 0;
	K = (size_t)a->k;
	if (a->kth[K + k] == AIDX_ABSENT) {
		*node = -1;
		return true;
	}
	if (a->kth[K + k] <= p->now) {
		/* the first node whose want-th time is now or earlier */
		while (t < (size_t)a->leaves)
			t = a->kth[2 * t * K + k] <= p->now ? 2 * t : 2 * t + 1;
		*node = (int)(t - (size_t)a->leaves);
		return true;
	}
	*node = a->arg[K + k];
	return true;
}

/* Node nk's want GPUs that j would fit when empty and that are expected to
 * run nothing first (ties: the earlier GPU), into g_of[] and their times
 * into t[], ascending; returns how many it has, at most want. */
static int node_earliest(const struct pass *p, const struct colloc_sched_job *j, int nk,
			 uint64_t min_free, int want, int64_t *t, int *g_of)
{
	int n = 0;

	for (int i = p->node_start[nk]; i < p->node_start[nk + 1]; i++) {
		int g = p->by_node[i], k;
		int64_t a;

		if (!fits_empty(p, j, g, min_free))
			continue;
		a = avail_at(p, g);
		if (n == want && a >= t[n - 1])
			continue;
		/* insertion into the want earliest so far */
		k = n < want ? n++ : n - 1;
		while (k > 0 && t[k - 1] > a) {
			t[k] = t[k - 1];
			g_of[k] = g_of[k - 1];
			k--;
		}
		t[k] = a;
		g_of[k] = g;
	}
	return n;
}

static bool aidx_query(struct pass *p, const struct colloc_sched_job *j,
		       uint64_t min_free, int *node);

static bool reserve_head(struct pass *p, const struct colloc_sched_job *j)
{
	uint64_t min_free;
	int64_t best = INT64_MAX;
	bool found = false;
	int want = j->n_gpus, nk;

	if (j->n_gpus < 1 || j->n_gpus > COLLOC_SCHED_MAX_GPUS ||
	    j->mem_need_bytes > UINT64_MAX - p->cfg->headroom_bytes)
		return false;
	min_free = j->mem_need_bytes + p->cfg->headroom_bytes;
	if (aidx_query(p, j, min_free, &nk)) {
		/* The index names the node a scan of every node would choose
		 * (or none); the GPUs on it are chosen as the scan does. */
		int64_t t[COLLOC_SCHED_MAX_GPUS];

		if (nk < 0 ||
		    node_earliest(p, j, nk, min_free, want, t, p->resv_g) < want)
			return false;
		best = t[want - 1];
		p->resv_n = want;
		found = true;
	}
	for (nk = 0; !found && nk < p->n_nodes; nk++) {
		int64_t t[COLLOC_SCHED_MAX_GPUS];
		int g_of[COLLOC_SCHED_MAX_GPUS];

		if (p->node_start[nk + 1] - p->node_start[nk] < want ||
		    node_earliest(p, j, nk, min_free, want, t, g_of) < want)
			continue;
		if (p->resv_n > 0 && t[want - 1] >= best)
			continue;
		best = t[want - 1];
		memcpy(p->resv_g, g_of, sizeof(int) * (size_t)want);
		p->resv_n = want;
	}
	if (p->resv_n == 0)
		return false;
	p->shadow = best;
	p->resv_on = true;
	for (int k = 0; k < p->resv_n; k++)
		p->resv[p->resv_g[k]] = true;
	return true;
}

/* reserve_head() through the context's memo, when there is one. */
static void head_reservation(struct pass *p, const struct colloc_sched_job *j)
{
	struct resv_memo *m = p->memo;

	if (m && m->valid && m->id == j->id && m->need == j->mem_need_bytes &&
	    m->n_gpus == j->n_gpus && m->types == j->type_mask && m->shadow > p->now) {
		bool ok = true;

		for (int k = 0; k < m->n && ok; k++)
			ok = fits_empty(p, j, m->g[k], 0) &&
			     avail_at(p, m->g[k]) <= m->shadow;
		if (ok) {
			p->shadow = m->shadow;
			p->resv_n = m->n;
			memcpy(p->resv_g, m->g, sizeof(int) * (size_t)m->n);
			p->resv_on = true;
			for (int k = 0; k < m->n; k++)
				p->resv[m->g[k]] = true;
			return;
		}
	}
	if (!reserve_head(p, j)) {
		if (m)
			m->valid = false;
		return;
	}
	if (m) {
		m->valid = true;
		m->id = j->id;
		m->need = j->mem_need_bytes;
		m->n_gpus = j->n_gpus;
		m->types = j->type_mask;
		m->shadow = p->shadow;
		m->n = p->resv_n;
		memcpy(m->g, p->resv_g, sizeof(int) * (size_t)p->resv_n);
	}
}

static void unreserve(struct pass *p)
{
	for (int k = 0; k < p->resv_n && p->resv_on; k++)
		p->resv[p->resv_g[k]] = false;
	p->resv_on = false;
	p->resv_n = 0;
}

/*
 * Decide the queued jobs in order[0..n_queue) (queue order) on p's working
 * view: writes up to cap decisions to out and returns their count. With
 * lazy_index, a pass that may use the search tree builds it after
 * PLAIN_SCANS searches; without, p->built says whether it is there.
 */
/* rest[k] for the queue from position k of order on, and rest[n]: none. */
static void rest_fill(struct rest *rest, const struct colloc_sched_job *queue,
		      const struct qkey *order, size_t n)
{
	rest[n] = (struct rest){UINT64_MAX, 0,	     HUGE_VAL, INT64_MAX,
				INT_MAX,    INT_MAX, true,     false};
	for (size_t k = n; k-- > 0;) {
		const struct colloc_sched_job *j = &queue[order[k].idx];
		struct rest r = rest[k + 1];

		if (j->mem_need_bytes < r.need)
			r.need = j->mem_need_bytes;
		if (j->util_pred < r.util)
			r.util = j->util_pred;
		if (j->walltime_ms > 0 && j->walltime_ms < r.wall)
			r.wall = j->walltime_ms;
		if (j->n_gpus < r.n_gpus)
			r.n_gpus = j->n_gpus;
		if (share_of(j->gpu_milli) < r.share)
			r.share = share_of(j->gpu_milli);
		r.excl = r.excl && j->exclusive;
		r.untyped = r.untyped || j->type_mask == 0;
		r.types |= j->type_mask;
		rest[k] = r;
	}
}

static size_t run_queue(struct pass *p, int64_t now_ms,
			const struct colloc_sched_job *queue, const struct qkey *order,
			size_t n_queue, struct colloc_sched_decision *out, size_t cap,
			bool lazy_index)
{
	int gpus[COLLOC_SCHED_MAX_GPUS] = {0};
	size_t n_dec = 0;

	for (size_t k = 0; k < n_queue && n_dec < cap; k++) {
		const struct colloc_sched_job *j = &queue[order[k].idx];

		if (lazy_index && !p->built && !p->plain && p->scans >= PLAIN_SCANS &&
		    p->n >= TREE_MIN_GPUS)
			build_index(p, queue, order + k, n_queue - k);
		if (place(p, j, gpus)) {
			struct colloc_sched_decision *d = &out[n_dec++];

			commit(p, j, gpus);
			d->job_id = j->id;
			d->n_gpus = j->n_gpus;
			memcpy(d->gpus, gpus, sizeof(int) * (size_t)j->n_gpus);
			p->cursor = (gpus[j->n_gpus - 1] + 1) % p->n;
			continue;
		}
		if (!p->dominated)
			remember_fail(p, j);
		if (p->cfg->queue_wait && j->walltime_ms > 0)
			p->ahead_ms += (double)j->n_gpus * (double)j->walltime_ms;
		if (!p->cfg->backfill)
			break;
		/* Cannot start: later jobs may (backfill). EASY: the first
		 * such job gets its reservation, and later jobs keep out of
		 * it unless they end in time (candidate()). */
		if (p->cfg->backfill_rule == COLLOC_BACKFILL_EASY) {
			if (!p->resv_on && !p->resv_tried) {
				p->resv_tried = true;
				head_reservation(p, j);
			}
		} else if (now_ms - j->submit_ms >= p->cfg->starve_ms) {
			/* The starvation rule: this one has waited long
			 * enough to hold the line. */
			break;
		}
		/* Everything behind it fails too: nothing more starts. */
		if (p->rest && !p->rest_filled) {
			rest_fill(p->rest + k + 1, queue, order + k + 1, n_queue - k - 1);
			p->rest_filled = true;
		}
		if (p->rest && rest_fails(p, &p->rest[k + 1]))
			break;
	}
	return n_dec;
}

/*
 * The context: a pass whose working view, node grouping and search tree
 * outlive it. w[g] is what the caller last set for GPU g (row and load)
 * except for the GPUs in p.touched, set since or placed on by the last
 * pass, which the next pass recomputes first. The tree, once built,
 * summarises w as it is outside the touched GPUs.
 */
struct colloc_sched_ctx {
	struct colloc_sched_config cfg;
	struct pass p;
	struct colloc_sched_gpu *gpus; /* rows as last set */
	struct colloc_sched_load *load; /* loads as last set */
	bool *odd; /* GPU g keeps passes plain (see struct pass) */
	int n_odd;
	bool indexed; /* the tree is allocated and summarises w */
	bool no_index; /* out of memory for it once: scan */
	unsigned *stamp; /* bucket -> the pass that last refreshed it */
	unsigned pass_no;
	/* Needs (plus headroom) of recent queued jobs, a ring, from which the
	 * tree's levels are chosen again every RELEVEL_PASSES tree passes. */
	uint64_t sample[LEVEL_SAMPLE];
	size_t n_sample, next_sample;
	unsigned since_levels;
	struct qkey *order;
	size_t cap_order;
	struct rest *rest; /* cap_order + 1 */
	struct resv_memo memo;
};

/* Tree passes between two choices of levels; the tree is summarised again
 * (a cost of a few scans) only when the levels change, which quantiles of
 * a sample of a steady mix of jobs do at almost every choice: at 256 the
 * summaries took 5% of a simulation with a queue, for no better pruning. */
#define RELEVEL_PASSES 2048
/* Queued jobs per pass whose needs go into the ring. */
#define SAMPLE_PER_PASS 16

void colloc_sched_load_add(struct colloc_sched_load *load,
			   const struct colloc_sched_running *r)
{
	/* As colloc_sched_decide builds its working view. */
	if (!r->at_peak && r->mem_need_bytes > r->mem_used_bytes)
		load->reserved_bytes += r->mem_need_bytes - r->mem_used_bytes;
	load->util_pred += r->util_pred;
	load->n_jobs++;
	load->milli += share_of(r->gpu_milli);
	if (r->exclusive)
		load->exclusive = true;
	if (!sane(r->util_pred))
		load->unusual = true;
}

/* w[g] from the row and load last set, as colloc_sched_decide computes it. */
static void derive(struct colloc_sched_ctx *ctx, int g)
{
	const struct colloc_sched_gpu *row = &ctx->gpus[g];
	const struct colloc_sched_load *l = &ctx->load[g];
	struct wgpu *w = &ctx->p.w[g];

	w->total = row->mem_total_bytes;
	w->committed = row->mem_used_bytes + l->reserved_bytes;
	w->util = row->util;
	w->pred = l->util_pred;
	w->jobs = l->n_jobs;
	w->milli = l->milli;
	w->closed = !row->usable || l->exclusive;
	w->isolated = row->isolated;
	w->type = row->type;
	w->avail = !row->usable		    ? INT64_MAX
		   : l->n_jobs == 0	    ? INT64_MIN
		   : row->busy_until_ms > 0 ? row->busy_until_ms
					    : INT64_MAX;
	if (w->pred > w->util)
		w->util = w->pred;
	aidx_note(&ctx->p, g);
}

void colloc_sched_ctx_destroy(struct colloc_sched_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->order);
	free(ctx->rest);
	free(ctx->p.resv);
	aidx_destroy(ctx->p.ai);
	free(ctx->stamp);
	free(ctx->p.is_touched);
	free(ctx->p.touched);
	free(ctx->p.node_ok);
	free(ctx->p.node_lb);
	free(ctx->p.node_bucket);
	free(ctx->p.node_own);
	free(ctx->p.node_of);
	free(ctx->p.node_start);
	free(ctx->p.by_node);
	free(ctx->p.tree);
	free(ctx->p.w);
	free(ctx->odd);
	free(ctx->load);
	free(ctx->gpus);
	free(ctx);
}

int colloc_sched_ctx_create(const struct colloc_sched_config *cfg,
			    const struct colloc_sched_gpu *gpus, int n_gpus,
			    struct colloc_sched_ctx **out, struct colloc_diag *diag)
{
	struct colloc_sched_ctx *ctx;
	size_t n = n_gpus > 0 ? (size_t)n_gpus : 0;

	*out = NULL;
	if (n_gpus < 0 || (n_gpus > 0 && !gpus))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "invalid GPU list");
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	ctx->cfg = *cfg;
	ctx->p.cfg = &ctx->cfg;
	for (int c = 0;
	     cfg->classes && c < cfg->n_classes && c < COLLOC_SCHED_MAX_CLASSES; c++)
		ctx->p.classes[ctx->p.n_classes++] = cfg->classes[c];
	ctx->cfg.classes = NULL;
	ctx->cfg.n_classes = 0;
	ctx->p.n = n_gpus;
	/* One more of each: no zero-size allocations. */
	ctx->gpus = malloc((n + 1) * sizeof(*ctx->gpus));
	ctx->load = calloc(n + 1, sizeof(*ctx->load));
	ctx->odd = calloc(n + 1, sizeof(*ctx->odd));
	ctx->p.w = calloc(n + 1, sizeof(*ctx->p.w));
	ctx->p.touched = malloc((n + 1) * sizeof(*ctx->p.touched));
	ctx->p.is_touched = calloc(n + 1, sizeof(*ctx->p.is_touched));
	ctx->stamp = calloc(n / BUCKET + 2, sizeof(*ctx->stamp));
	ctx->p.resv = calloc(n + 1, sizeof(*ctx->p.resv));
	if (!ctx->gpus || !ctx->load || !ctx->odd || !ctx->p.w || !ctx->p.touched ||
	    !ctx->p.is_touched || !ctx->stamp || !ctx->p.resv ||
	    group_nodes(&ctx->p, gpus)) {
		colloc_sched_ctx_destroy(ctx);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	if (n > 0)
		memcpy(ctx->gpus, gpus, n * sizeof(*gpus));
	for (int g = 0; g < n_gpus; g++) {
		derive(ctx, g);
		/* The search tree's bounds know nothing of instances. */
		ctx->odd[g] = !sane(gpus[g].util) || gpus[g].isolated;
		ctx->n_odd += ctx->odd[g];
	}
	*out = ctx;
	return 0;
}

int colloc_sched_ctx_set_gpu(struct colloc_sched_ctx *ctx, int g,
			     const struct colloc_sched_gpu *gpu,
			     const struct colloc_sched_load *load,
			     struct colloc_diag *diag)
{
	static const struct colloc_sched_load none;
	bool odd;

	if (g < 0 || g >= ctx->p.n)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "GPU %d does not exist", g);
	if (gpu->node != ctx->gpus[g].node)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "GPU %d moved from node %d to %d", g,
				       ctx->gpus[g].node, gpu->node);
	if (!load)
		load = &none;
	odd = !sane(gpu->util) || gpu->isolated || load->unusual;
	ctx->n_odd += (int)odd - (int)ctx->odd[g];
	ctx->odd[g] = odd;
	ctx->gpus[g] = *gpu;
	ctx->load[g] = *load;
	mark_touched(&ctx->p, g);
	return 0;
}

/* GPU g's expected end is now avail: the memo of the head's reservation
 * is what a fresh computation gives only while every reserved GPU still
 * empties by the shadow time and no other GPU is expected to empty as
 * early (which could make it a better choice). */
static void memo_check(struct resv_memo *m, int g, int64_t avail)
{
	bool reserved = false;

	for (int k = 0; k < m->n; k++)
		reserved |= m->g[k] == g;
	if (reserved ? avail > m->shadow : avail <= m->shadow)
		m->valid = false;
}

/* Put the touched GPUs' working view back to what was set, and their
 * summaries with it. */
static void restore(struct colloc_sched_ctx *ctx)
{
	struct pass *p = &ctx->p;

	ctx->pass_no++;
	for (int k = 0; k < p->n_touched; k++) {
		int g = p->touched[k];

		p->is_touched[g] = false;
		derive(ctx, g);
		if (ctx->memo.valid)
			memo_check(&ctx->memo, g, p->w[g].avail);
	}
	for (int k = 0; k < p->n_touched && ctx->indexed; k++) {
		int g = p->touched[k], b = g / BUCKET;

		/* Each bucket once, with all its GPUs put back. */
		if (ctx->stamp[b] != ctx->pass_no) {
			ctx->stamp[b] = ctx->pass_no;
			tree_update(p, b);
		}
		node_refresh(p, p->node_of[g]);
	}
	p->n_touched = 0;
}

/* Keep the ring of needs; choose the tree's levels again when due. Returns
 * whether the tree can be used. */
static bool ready_index(struct colloc_sched_ctx *ctx,
			const struct colloc_sched_job *queue, size_t n_queue)
{
	struct pass *p = &ctx->p;
	uint64_t t[LEVEL_SAMPLE], old[MAX_LEVELS];
	int n_old = p->n_levels;

	for (size_t k = 0; k < n_queue; k += n_queue / SAMPLE_PER_PASS + 1) {
		const struct colloc_sched_job *j = &queue[k];

		if (j->mem_need_bytes > UINT64_MAX - ctx->cfg.headroom_bytes)
			continue;
		ctx->sample[ctx->next_sample] =
			j->mem_need_bytes + ctx->cfg.headroom_bytes;
		ctx->next_sample = (ctx->next_sample + 1) % LEVEL_SAMPLE;
		if (ctx->n_sample < LEVEL_SAMPLE)
			ctx->n_sample++;
	}
	if (ctx->no_index)
		return false;
	if (!ctx->indexed) {
		if (!alloc_index(p)) {
			ctx->no_index = true;
			return false;
		}
		memcpy(t, ctx->sample, ctx->n_sample * sizeof(*t));
		levels_from(p, t, ctx->n_sample);
		fill_index(p);
		ctx->indexed = true;
		ctx->since_levels = 0;
		return true;
	}
	if (++ctx->since_levels < RELEVEL_PASSES)
		return true;
	ctx->since_levels = 0;
	memcpy(old, p->level, sizeof(old));
	memcpy(t, ctx->sample, ctx->n_sample * sizeof(*t));
	levels_from(p, t, ctx->n_sample);
	if (p->n_levels != n_old ||
	    memcmp(old, p->level, (size_t)n_old * sizeof(*old)) != 0)
		fill_index(p);
	return true;
}

/*
 * The one pass both entry points run. one_shot: a context made for this
 * pass alone (colloc_sched_decide), which builds the search tree only
 * once a few scans have shown the pass needs it; else the tree the
 * context keeps is used from the first search. Either way the decisions
 * are the same (the tree's bounds are exact where they are used).
 */
static int decide_core(struct colloc_sched_ctx *ctx, int64_t now_ms, int rr_cursor,
		       const struct colloc_sched_job *queue, size_t n_queue,
		       struct colloc_sched_decision *out, size_t cap, size_t *n_out,
		       int *rr_cursor_out, bool one_shot, struct colloc_diag *diag)
{
	struct pass *p = &ctx->p;
	bool plain;
	int rc;

	*n_out = 0;
	if (rr_cursor_out)
		*rr_cursor_out = rr_cursor;
	if ((rc = validate_queue(queue, n_queue, diag)))
		return rc;
	if (p->n == 0 || n_queue == 0)
		return 0;
	if (n_queue > ctx->cap_order) {
		struct qkey *o = realloc(ctx->order, n_queue * sizeof(*o));
		struct rest *r;

		if (!o)
			return colloc_diag_set(diag, -ENOMEM, "out of memory");
		ctx->order = o;
		r = realloc(ctx->rest, (n_queue + 1) * sizeof(*r));
		if (!r)
			return colloc_diag_set(diag, -ENOMEM, "out of memory");
		ctx->rest = r;
		ctx->cap_order = n_queue;
	}
	restore(ctx);
	plain = ctx->n_odd > 0;
	if (ctx->cfg.policy == COLLOC_POLICY_FGD)
		fgd_tables(p, queue, n_queue);
	for (size_t k = 0; k < n_queue; k++) {
		if (!sane(queue[k].util_pred))
			plain = true;
		ctx->order[k].priority = queue[k].priority;
		ctx->order[k].submit_ms = queue[k].submit_ms;
		ctx->order[k].id = queue[k].id;
		ctx->order[k].idx = k;
	}
	/* Callers that keep their queue in order (the simulator) need no
	 * sort; a stable check is cheaper than qsort's. */
	for (size_t k = 1; k < n_queue; k++)
		if (cmp_queue(&ctx->order[k - 1], &ctx->order[k]) > 0) {
			qsort(ctx->order, n_queue, sizeof(*ctx->order), cmp_queue);
			break;
		}
	p->plain = plain;
	/* The rest of the queue bounds failures only where every job's
	 * activity bounds are the same and no input is odd (NaN). */
	p->rest =
		!plain && !(ea_gated(&ctx->cfg) && ctx->cfg.util_soft) ? ctx->rest : NULL;
	p->rest_filled = false;
	p->n_fails = 0;
	p->n_wm = 0;
	p->ahead_ms = 0;
	p->scans = 0;
	p->cursor = rr_cursor < 0 ? 0 : rr_cursor % p->n;
	p->now = now_ms;
	p->resv_tried = false;
	p->memo = one_shot ? NULL : &ctx->memo;
	p->built = !one_shot && !plain && p->n >= TREE_MIN_GPUS &&
		   ready_index(ctx, queue, n_queue);
	*n_out = run_queue(p, now_ms, queue, ctx->order, n_queue, out, cap, one_shot);
	unreserve(p);
	if (rr_cursor_out)
		*rr_cursor_out = p->cursor;
	return 0;
}

int colloc_sched_ctx_decide(struct colloc_sched_ctx *ctx, int64_t now_ms, int rr_cursor,
			    const struct colloc_sched_job *queue, size_t n_queue,
			    struct colloc_sched_decision *out, size_t cap, size_t *n_out,
			    int *rr_cursor_out, struct colloc_diag *diag)
{
	return decide_core(ctx, now_ms, rr_cursor, queue, n_queue, out, cap, n_out,
			   rr_cursor_out, false, diag);
}

int colloc_sched_decide(const struct colloc_sched_config *cfg,
			const struct colloc_sched_state *st,
			const struct colloc_sched_job *queue, size_t n_queue,
			struct colloc_sched_decision *out, size_t cap, size_t *n_out,
			int *rr_cursor_out, struct colloc_diag *diag)
{
	struct colloc_sched_ctx *ctx = NULL;
	int rc;

	*n_out = 0;
	if (rr_cursor_out)
		*rr_cursor_out = st->rr_cursor;
	if ((rc = validate(st, queue, n_queue, diag)))
		return rc;
	if (st->n_gpus == 0 || n_queue == 0)
		return 0;
	if ((rc = colloc_sched_ctx_create(cfg, st->gpus, st->n_gpus, &ctx, diag)))
		return rc;
	/* The running jobs' loads, in running-list order, then each GPU's
	 * working view from its row and load: what a caller of the context
	 * hands it, through the same code. */
	for (size_t k = 0; k < st->n_running; k++)
		for (int i = 0; i < st->running[k].n_gpus; i++)
			colloc_sched_load_add(&ctx->load[st->running[k].gpus[i]],
					      &st->running[k]);
	for (int g = 0; g < st->n_gpus; g++) {
		bool odd = ctx->odd[g] || ctx->load[g].unusual;

		ctx->n_odd += (int)odd - (int)ctx->odd[g];
		ctx->odd[g] = odd;
		derive(ctx, g);
	}
	rc = decide_core(ctx, st->now_ms, st->rr_cursor, queue, n_queue, out, cap, n_out,
			 rr_cursor_out, true, diag);
	colloc_sched_ctx_destroy(ctx);
	return rc;
}
