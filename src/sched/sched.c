/*
 * sched.c — colloc_sched_decide(): the placement core (see colloc/sched.h
 * for the rules). No I/O, no clock, no global state.
 */
#include "colloc/sched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[COLLOC_POLICY_COUNT_] = {
	"exclusive", "round-robin", "most-free-memory", "least-utilized",
	"estimate-aware"};

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
	cfg->starve_ms = (int64_t)30 * 60 * 1000;
}

/* Working view of one GPU during a pass. */
struct wgpu {
	uint64_t total; /* memory (copied here: the hot loop reads one array) */
	uint64_t committed; /* measured use + reservations + this pass */
	double util; /* measured activity + this pass's predictions */
	double pred; /* sum of its jobs' predicted activity */
	int jobs; /* running + placed this pass */
	bool closed; /* unusable or held by an exclusive job */
};

struct pass {
	const struct colloc_sched_config *cfg;
	const struct colloc_sched_state *st;
	struct wgpu *w;
	uint64_t max_free; /* largest free memory of an open GPU */
	uint64_t max_free_empty; /* ... of an open GPU running nothing */
	double min_pred_busy; /* smallest predicted activity of an open busy GPU */
	int cursor; /* round-robin: the GPU to try first */
	int *by_node; /* GPU indices grouped by node, in order of nodes' first GPU */
	int *node_start; /* node k's GPUs: by_node[node_start[k] .. node_start[k+1]) */
	int n_nodes;
	/* Jobs that failed to place since the last placement: any job that
	 * asks for at least as much of everything fails too, without a scan
	 * (what keeps a pass over a long queue fast once the cluster is full). */
	struct failpt {
		uint64_t need;
		double util;
		int n_gpus;
		bool excl;
	} fails[16];
	int n_fails;
};

static bool dominated(const struct pass *p, const struct colloc_sched_job *j)
{
	for (int k = 0; k < p->n_fails; k++) {
		const struct failpt *f = &p->fails[k];

		if (f->need <= j->mem_need_bytes && f->util <= j->util_pred &&
		    f->n_gpus <= j->n_gpus && (!f->excl || j->exclusive))
			return true;
	}
	return false;
}

static void remember_fail(struct pass *p, const struct colloc_sched_job *j)
{
	struct failpt nf = {j->mem_need_bytes, j->util_pred, j->n_gpus, j->exclusive};
	int w = 0;

	/* Keep the frontier minimal: drop points the new one dominates. */
	for (int k = 0; k < p->n_fails; k++) {
		const struct failpt *f = &p->fails[k];

		if (!(nf.need <= f->need && nf.util <= f->util &&
		      nf.n_gpus <= f->n_gpus && (!nf.excl || f->excl)))
			p->fails[w++] = *f;
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

/* Summaries that let most jobs that cannot start be refused without a
 * scan over the GPUs (recomputed after every placement). */
static void refresh_max_free(struct pass *p)
{
	p->max_free = 0;
	p->max_free_empty = 0;
	p->min_pred_busy = 1e300;
	for (int g = 0; g < p->st->n_gpus; g++) {
		const struct wgpu *w = &p->w[g];
		uint64_t f;

		if (w->closed)
			continue;
		f = free_of(p, g);
		if (f > p->max_free)
			p->max_free = f;
		if (w->jobs == 0 && f > p->max_free_empty)
			p->max_free_empty = f;
		if (w->jobs > 0 && w->pred < p->min_pred_busy)
			p->min_pred_busy = w->pred;
	}
}

static bool sat_fits(uint64_t need, uint64_t headroom, uint64_t free_bytes)
{
	return need <= free_bytes && headroom <= free_bytes - need;
}

/* Can job j use GPU g at all? */
static bool candidate(const struct pass *p, const struct colloc_sched_job *j, int g)
{
	const struct wgpu *w = &p->w[g];

	if (w->closed)
		return false;
	if ((j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE) && w->jobs > 0)
		return false;
	if (!sat_fits(j->mem_need_bytes, p->cfg->headroom_bytes, free_of(p, g)))
		return false;
	if (p->cfg->policy == COLLOC_POLICY_ESTIMATE_AWARE && w->jobs > 0 &&
	    w->pred + j->util_pred > p->cfg->util_bound + 1e-9)
		return false;
	return true;
}

/* Lower is better. */
static double score(const struct pass *p, const struct colloc_sched_job *j, int g)
{
	int n = p->st->n_gpus;

	switch (p->cfg->policy) {
	case COLLOC_POLICY_ROUND_ROBIN:
		return (double)((g - p->cursor % n + n) % n);
	case COLLOC_POLICY_MOST_FREE_MEMORY:
		return -(double)free_of(p, g);
	case COLLOC_POLICY_LEAST_UTILIZED:
		return p->w[g].util * 1e6 + (double)g * 1e-3;
	case COLLOC_POLICY_ESTIMATE_AWARE:
		/* Lowest combined predicted activity; among equals the
		 * tightest memory fit, which keeps big holes for big jobs. */
		return (p->w[g].pred + j->util_pred) * 1e15 + (double)free_of(p, g);
	default: /* exclusive: first free GPU */
		return (double)g;
	}
}

/* Choose job j's GPUs into out[]; false if it cannot start now. */
static bool place(struct pass *p, const struct colloc_sched_job *j, int *out)
{
	const struct colloc_sched_state *st = p->st;
	double best_total = 0;
	bool found = false;

	if (!sat_fits(j->mem_need_bytes, p->cfg->headroom_bytes, p->max_free))
		return false;
	if (dominated(p, j))
		return false;
	{
		/* No empty GPU can take it, and on every busy one the job alone
		 * already breaks a rule: no need to look further. */
		bool empty_ok = sat_fits(j->mem_need_bytes, p->cfg->headroom_bytes,
					 p->max_free_empty);

		if (!empty_ok &&
		    (j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE))
			return false;
		if (!empty_ok && p->cfg->policy == COLLOC_POLICY_ESTIMATE_AWARE &&
		    p->min_pred_busy + j->util_pred > p->cfg->util_bound + 1e-9)
			return false;
	}
	if (j->n_gpus == 1) {
		double best = 0;

		for (int g = 0; g < st->n_gpus; g++) {
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
	/* Several GPUs: the best n candidates of each node, best node wins. */
	for (int nk = 0; nk < p->n_nodes; nk++) {
		int pick[COLLOC_SCHED_MAX_GPUS] = {0}, n = 0;
		double sc[COLLOC_SCHED_MAX_GPUS] = {0}, total = 0;

		if (p->node_start[nk + 1] - p->node_start[nk] < j->n_gpus)
			continue;
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
			continue;
		for (int k = 0; k < n; k++)
			total += sc[k];
		if (!found || total < best_total) {
			best_total = total;
			memcpy(out, pick, sizeof(int) * (size_t)n);
			found = true;
		}
	}
	return found;
}

/* Group GPUs by node (stable, nodes in order of their first GPU). */
static int group_nodes(struct pass *p)
{
	const struct colloc_sched_state *st = p->st;
	int n = st->n_gpus, *first_of;

	p->by_node = malloc(sizeof(int) * (size_t)n);
	p->node_start = malloc(sizeof(int) * ((size_t)n + 1));
	first_of = malloc(sizeof(int) * (size_t)n); /* GPU -> rank of its node */
	if (!p->by_node || !p->node_start || !first_of) {
		free(first_of);
		return -ENOMEM;
	}
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
			free(first_of);
			return -ENOMEM;
		}
		for (size_t k = 0; k < cap; k++)
			keys[k] = -1, ranks[k] = -1;
		p->n_nodes = 0;
		for (int g = 0; g < n; g++) {
			unsigned node = (unsigned)st->gpus[g].node;
			size_t h = (size_t)((uint64_t)node * 2654435761u) & (cap - 1);

			while (ranks[h] >= 0 && keys[h] != st->gpus[g].node)
				h = (h + 1) & (cap - 1);
			if (ranks[h] < 0) {
				keys[h] = st->gpus[g].node;
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
	free(first_of);
	return 0;
}

static void commit(struct pass *p, const struct colloc_sched_job *j, const int *gpus)
{
	for (int k = 0; k < j->n_gpus; k++) {
		struct wgpu *w = &p->w[gpus[k]];

		w->committed += j->mem_need_bytes;
		w->util += j->util_pred;
		w->pred += j->util_pred;
		w->jobs++;
		if (j->exclusive || p->cfg->policy == COLLOC_POLICY_EXCLUSIVE)
			w->closed = true;
	}
	refresh_max_free(p);
	p->n_fails = 0;
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
	for (size_t k = 0; k < n_queue; k++)
		if (queue[k].n_gpus < 1 || queue[k].n_gpus > COLLOC_SCHED_MAX_GPUS)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "job %llu asks for %d GPUs (1..%d)",
					       (unsigned long long)queue[k].id,
					       queue[k].n_gpus, COLLOC_SCHED_MAX_GPUS);
	return 0;
}

int colloc_sched_decide(const struct colloc_sched_config *cfg,
			const struct colloc_sched_state *st,
			const struct colloc_sched_job *queue, size_t n_queue,
			struct colloc_sched_decision *out, size_t cap, size_t *n_out,
			int *rr_cursor_out, struct colloc_diag *diag)
{
	struct pass p;
	struct qkey *order = NULL;
	size_t n_dec = 0;
	int rc;

	*n_out = 0;
	if (rr_cursor_out)
		*rr_cursor_out = st->rr_cursor;
	if ((rc = validate(st, queue, n_queue, diag)))
		return rc;
	if (st->n_gpus == 0 || n_queue == 0)
		return 0;
	p.cfg = cfg;
	p.st = st;
	p.cursor = st->rr_cursor < 0 ? 0 : st->rr_cursor % st->n_gpus;
	p.by_node = p.node_start = NULL;
	p.n_fails = 0;
	p.w = calloc((size_t)st->n_gpus, sizeof(*p.w));
	order = malloc(n_queue * sizeof(*order));
	if (!p.w || !order || group_nodes(&p)) {
		free(p.w);
		free(order);
		free(p.by_node);
		free(p.node_start);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	for (int g = 0; g < st->n_gpus; g++) {
		p.w[g].total = st->gpus[g].mem_total_bytes;
		p.w[g].committed = st->gpus[g].mem_used_bytes;
		p.w[g].util = st->gpus[g].util;
		p.w[g].closed = !st->gpus[g].usable;
	}
	for (size_t k = 0; k < st->n_running; k++) {
		const struct colloc_sched_running *r = &st->running[k];

		for (int i = 0; i < r->n_gpus; i++) {
			struct wgpu *w = &p.w[r->gpus[i]];

			/* Reserve what a starting job will still allocate. */
			if (!r->at_peak && r->mem_need_bytes > r->mem_used_bytes)
				w->committed += r->mem_need_bytes - r->mem_used_bytes;
			w->pred += r->util_pred;
			w->jobs++;
			if (r->exclusive)
				w->closed = true;
		}
	}
	/* A job that just started shows no activity yet: count at least
	 * what its GPU's jobs are predicted to do. */
	for (int g = 0; g < st->n_gpus; g++)
		if (p.w[g].pred > p.w[g].util)
			p.w[g].util = p.w[g].pred;
	refresh_max_free(&p);
	for (size_t k = 0; k < n_queue; k++) {
		order[k].priority = queue[k].priority;
		order[k].submit_ms = queue[k].submit_ms;
		order[k].id = queue[k].id;
		order[k].idx = k;
	}
	qsort(order, n_queue, sizeof(*order), cmp_queue);

	for (size_t k = 0; k < n_queue && n_dec < cap; k++) {
		const struct colloc_sched_job *j = &queue[order[k].idx];
		int gpus[COLLOC_SCHED_MAX_GPUS];

		if (place(&p, j, gpus)) {
			struct colloc_sched_decision *d = &out[n_dec++];

			commit(&p, j, gpus);
			d->job_id = j->id;
			d->n_gpus = j->n_gpus;
			memcpy(d->gpus, gpus, sizeof(int) * (size_t)j->n_gpus);
			p.cursor = (gpus[j->n_gpus - 1] + 1) % st->n_gpus;
			continue;
		}
		remember_fail(&p, j);
		/* Cannot start: later jobs may (backfill), unless this one has
		 * waited long enough to hold the line. */
		if (!cfg->backfill || st->now_ms - j->submit_ms >= cfg->starve_ms)
			break;
	}
	free(p.w);
	free(order);
	free(p.by_node);
	free(p.node_start);
	*n_out = n_dec;
	if (rr_cursor_out)
		*rr_cursor_out = p.cursor;
	return 0;
}
