/*
 * colloc/sched.h — the placement core: which queued jobs start now, and on
 * which GPUs.
 *
 * One pure function, colloc_sched_decide(), of (configuration, cluster
 * state, queue, now). It reads no clock, touches no GPU, socket or file:
 * the daemon feeds it live GPU state and the simulator feeds it simulated
 * state, and the same code decides in both.
 *
 * Rules, in order of application:
 *  - queue order: priority (higher first), then submit time, then id;
 *  - a GPU is a candidate if usable, not held by an exclusive job, and,
 *    for exclusive jobs and the `exclusive` policy, running nothing;
 *  - memory gate: need + headroom <= total - used, where used is what the
 *    GPU reports plus, for every job that started but has not reached its
 *    peak yet, the part of its need it has not allocated so far (this
 *    avoids the start-up race where several jobs see the same "free" GPU);
 *    placements made earlier in the same pass count the same way;
 *  - `estimate-aware` also requires the GPU's predicted activity (the sum
 *    of its jobs' predictions) plus the job's to stay <= util_bound; with
 *    util_soft (the default) a job of known walltime for which no such
 *    GPU fits may go beyond it while sharing costs the GPU's jobs and it
 *    less than its wait for empty GPUs (see colloc_sched_config.util_soft);
 *  - `request` and `fgd` also require the declared shares (gpu_milli) on
 *    the GPU plus the job's to stay <= 1000;
 *  - GPU types: a job with a type_mask may use only GPUs whose type is in
 *    it (bit t for type t, 0 <= t < 64; a GPU of another type, or of a
 *    type outside 0..63, is no candidate for it), under every policy; a
 *    job with type_mask 0 may use any GPU. A constrained job waits while
 *    only GPUs of other types have room, and its EASY reservation is on
 *    GPUs of its types;
 *  - a multi-GPU job gets all its GPUs on one node;
 *  - isolated GPUs (MIG instances) take one single-GPU job each, and are
 *    preferred, smallest memory first, whatever the policy;
 *  - backfill: a job that cannot start does not block later ones. What
 *    keeps a large job from starving is the backfill rule:
 *    COLLOC_BACKFILL_STARVE (collocd's default): once it has waited
 *    starve_ms or more, nothing behind it starts until it does;
 *    COLLOC_BACKFILL_EASY (EASY backfilling, Lifka 1995; Mu'alem and
 *    Feitelson 2001): the first job in queue order that cannot start gets
 *    a reservation -- the GPUs that its callers' estimates say empty
 *    first, and the time they do (the shadow time) -- and a later job may
 *    use those GPUs only if its walltime says it ends by then, so
 *    backfilling never delays the head. Unknown times count as never.
 *  - start-up reservation: colloc_sched_reserved_bytes() is the one rule
 *    of how much of its need a started job still holds back.
 *
 * Ownership: inputs are read-only; decisions are written to a caller-owned
 * array. The function allocates scratch memory and frees it before return.
 * A caller that runs many passes over one cluster can keep a scheduler
 * context instead (colloc_sched_ctx_*, below): the same decisions, at a
 * cost per pass that follows the queue and what changed, not the cluster.
 * There is one entry point underneath: colloc_sched_decide() is a context
 * made for one pass (its working view is built by the same code).
 */
#ifndef COLLOC_SCHED_H
#define COLLOC_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

#define COLLOC_SCHED_MAX_GPUS 16 /* GPUs one job may ask for */

enum colloc_policy {
	COLLOC_POLICY_EXCLUSIVE = 0, /* one job per GPU */
	COLLOC_POLICY_ROUND_ROBIN, /* next GPU in turn that fits */
	COLLOC_POLICY_MOST_FREE_MEMORY,
	COLLOC_POLICY_LEAST_UTILIZED,
	COLLOC_POLICY_ESTIMATE_AWARE, /* fits with headroom and predicted
				       * combined activity under a bound */
	/* Trust the jobs' declarations, as Kubernetes GPU sharing and Slurm
	 * shards do: a GPU takes jobs while their declared shares (gpu_milli)
	 * sum to at most 1000 and their memory (mem_need_bytes, the declared
	 * memory) fits; the tightest share fit first (bin packing). */
	COLLOC_POLICY_REQUEST,
	/* The same gates; the GPU whose node's expected fragmentation grows
	 * least (FGD, Weng et al., ATC '23; see colloc_sched_config.classes). */
	COLLOC_POLICY_FGD,
	COLLOC_POLICY_COUNT_
};

/* "exclusive", "round-robin", ...; colloc_policy_parse returns -1 for an
 * unknown name. */
const char *colloc_policy_name(int policy);
int colloc_policy_parse(const char *name);

struct colloc_sched_gpu {
	int node; /* a multi-GPU job's GPUs share a node */
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes; /* measured now, all processes */
	double util; /* measured activity, 0..1 */
	bool usable; /* false: lost, draining */
	/* A MIG GPU instance (or anything else that isolates its one job):
	 * takes one single-GPU job at a time, and a job goes to the smallest
	 * isolated GPU whose memory fits before any shared one. */
	bool isolated;
	/* When its running jobs are expected to have ended (EASY backfill);
	 * 0: unknown (never, for the reservation), or running nothing. */
	int64_t busy_until_ms;
	/* Its GPU type, a small id the caller chooses (0..63), read only
	 * against a job's type_mask: "V100M16" as 2, say. 0 by default. */
	int type;
};

struct colloc_sched_running {
	uint64_t job_id;
	int n_gpus;
	int gpus[COLLOC_SCHED_MAX_GPUS];
	uint64_t mem_need_bytes; /* per GPU */
	uint64_t mem_used_bytes; /* per GPU, measured; 0 if not yet seen */
	/* Usage visible: no reservation. Callers set it with
	 * colloc_sched_reserved_bytes() == 0. */
	bool at_peak;
	double util_pred; /* predicted activity, 0..1 */
	bool exclusive; /* holds its GPUs alone */
	int gpu_milli; /* declared share of each GPU, 1..1000; 0: all of it */
};

struct colloc_sched_job {
	uint64_t id;
	int n_gpus;
	uint64_t mem_need_bytes; /* per GPU */
	double util_pred;
	int priority;
	int64_t submit_ms;
	bool exclusive; /* needs GPUs of its own (e.g. after OOM retries) */
	int64_t walltime_ms; /* expected run time; 0: unknown (EASY backfill) */
	/* Declared share of each of its GPUs in thousandths, 1..1000 (a
	 * Kubernetes GPU-sharing request, Slurm shards); 0: a whole GPU. Read
	 * by `request` and `fgd` only. */
	int gpu_milli;
	/* The GPU types it may run on: bit t set for colloc_sched_gpu.type t
	 * (a Kubernetes node selector on the GPU model, Alibaba's gpu_spec
	 * "V100M16|V100M32"); 0: any GPU. */
	uint64_t type_mask;
};

/*
 * One class of request in the workload that `fgd` expects (FGD's target
 * workload): n_gpus GPUs of gpu_milli each (0: whole GPUs), weighted by
 * count (how many jobs of the workload ask for it).
 */
struct colloc_sched_class {
	int n_gpus;
	int gpu_milli;
	uint32_t count;
};

#define COLLOC_SCHED_MAX_CLASSES 64

/* What keeps a job that cannot start from starving (see the rules above). */
enum colloc_backfill_rule {
	COLLOC_BACKFILL_STARVE = 0, /* hold the line after starve_ms */
	COLLOC_BACKFILL_EASY, /* reservation for the queue head */
};

struct colloc_sched_config {
	int policy; /* enum colloc_policy */
	uint64_t headroom_bytes; /* kept free on every GPU */
	double util_bound; /* estimate-aware: max predicted activity */
	bool backfill;
	int backfill_rule; /* enum colloc_backfill_rule */
	int64_t starve_ms; /* COLLOC_BACKFILL_STARVE, see above */
	/* `fgd`: the expected workload, classes[0..n_classes) (at most
	 * COLLOC_SCHED_MAX_CLASSES are read; copied by a context); none: the
	 * classes of the pass's own queue, one count per job. Not owned. */
	const struct colloc_sched_class *classes;
	int n_classes;
	/* estimate-aware: the bound yields to a long wait (the default). A
	 * GPU whose combined predicted activity stays within util_bound always
	 * scores better than one beyond it (the score orders by that sum); one
	 * beyond is taken only when no GPU within the bound fits the job, and
	 * only as far beyond as sharing costs less than waiting: on GPU g up to
	 * 1 + W / ((n_g + 1) min(T, max(R_g, W))), T its walltime, W the wait
	 * for GPUs that run nothing, R_g until g's n_g jobs end (sharing at
	 * combined activity A runs them all about A times slower).
	 * A job of unknown walltime (0) keeps util_bound as a gate; memory and
	 * headroom always gate. false: the bound gates every job, and a job
	 * beyond it waits. */
	bool util_soft;
	/* estimate-aware with util_soft, on by default (docs/simulator.md,
	 * "Counting the queue in front"): a one-GPU job's W is at least the
	 * GPU-time (GPUs x walltime) of the jobs before it in the queue that
	 * this pass cannot start either, over the cluster's GPUs -- the wait
	 * first come, first served would give it (a job on several GPUs keeps
	 * its own W); and a job whose combined predicted
	 * activity would pass util_bound on a GPU reserved for the queue's
	 * head (EASY) keeps off it even if it ends in time, since it would
	 * slow the jobs whose ends the reservation was computed from. */
	bool queue_wait;
};

/* Defaults: estimate-aware, 512 MiB headroom, bound 1.0 (soft: util_soft,
 * counting the queue in front: queue_wait),
 * backfill on with the starvation rule, 30 minutes before a waiting job
 * stops backfilling. */
void colloc_sched_config_init(struct colloc_sched_config *cfg);

/*
 * The start-up reservation rule, for collocd and the simulator alike: a
 * job that started at start_ms and needs need_bytes per GPU, of which
 * used_bytes are allocated (measured), still holds back need - used bytes
 * until it has allocated its need or reserve_ms have passed (now_ms -
 * start_ms >= reserve_ms; both on one monotonic clock). Returns those
 * bytes; 0 means the job is at its peak (colloc_sched_running.at_peak).
 */
uint64_t colloc_sched_reserved_bytes(uint64_t need_bytes, uint64_t used_bytes,
				     int64_t start_ms, int64_t now_ms,
				     int64_t reserve_ms);

/* "starve", "easy"; colloc_backfill_parse returns -1 for another name. */
const char *colloc_backfill_name(int rule);
int colloc_backfill_parse(const char *name);

struct colloc_sched_state {
	const struct colloc_sched_gpu *gpus;
	int n_gpus;
	const struct colloc_sched_running *running;
	size_t n_running;
	int64_t now_ms;
	int rr_cursor; /* round-robin: the GPU to try first */
};

struct colloc_sched_decision {
	uint64_t job_id;
	int n_gpus;
	int gpus[COLLOC_SCHED_MAX_GPUS];
};

/*
 * Decide which of queue[0..n_queue) start now. Writes up to cap decisions
 * (in the order they were made) and their count to *n_out, and the
 * round-robin cursor for the next pass to *rr_cursor_out (may be NULL).
 * Returns 0, or a negative code for invalid input (a job asking for 0 or
 * more than COLLOC_SCHED_MAX_GPUS GPUs, a running job on a GPU that does
 * not exist, ...) with a message naming it; nothing is decided then.
 */
int colloc_sched_decide(const struct colloc_sched_config *cfg,
			const struct colloc_sched_state *st,
			const struct colloc_sched_job *queue, size_t n_queue,
			struct colloc_sched_decision *out, size_t cap, size_t *n_out,
			int *rr_cursor_out, struct colloc_diag *diag);

/*
 * A scheduler context: the same decisions as colloc_sched_decide(), for a
 * caller that runs many passes over one cluster (the simulator, one pass
 * per event) and knows what changed between them. It keeps the grouping
 * of GPUs by node, the working view of every GPU and the search tree from
 * pass to pass, and updates them only for the GPUs the caller sets and
 * those the last pass placed jobs on; a pass then costs about what its
 * queue and those changes cost, not what the cluster does.
 *
 * The caller describes each GPU by its colloc_sched_gpu row and a summary
 * of its running jobs (struct colloc_sched_load, built with
 * colloc_sched_load_add() over them in running-list order). With, for
 * every GPU, the row and the summary of the running jobs on it of a
 * colloc_sched_state, colloc_sched_ctx_decide() decides exactly what
 * colloc_sched_decide() does on that state. Running jobs' GPU indices are
 * not checked (the caller sums them). A context is not thread-safe; it
 * owns its memory and none of the caller's.
 */
struct colloc_sched_ctx;

/* What the running jobs on one GPU add to its row. Zero it, then add each
 * job with colloc_sched_load_add(), in the order of the running list (the
 * predictions' sum rounds in that order). */
struct colloc_sched_load {
	uint64_t reserved_bytes; /* not yet allocated by jobs short of peak */
	double util_pred; /* their predictions' sum */
	int n_jobs;
	bool exclusive; /* one of them holds the GPU alone */
	bool unusual; /* a prediction too large or not a number */
	int milli; /* their declared shares' sum (0 read as 1000 each) */
};

void colloc_sched_load_add(struct colloc_sched_load *load,
			   const struct colloc_sched_running *r);

/*
 * Create a context for the cluster gpus[0..n_gpus) (copied), running
 * nothing, with configuration *cfg (copied). Returns 0 and the context in
 * *out, or a negative code (COLLOC_EUSAGE for an invalid GPU list,
 * -ENOMEM) with a message; *out is NULL then.
 */
int colloc_sched_ctx_create(const struct colloc_sched_config *cfg,
			    const struct colloc_sched_gpu *gpus, int n_gpus,
			    struct colloc_sched_ctx **out, struct colloc_diag *diag);

/* Free a context; NULL is a no-op. */
void colloc_sched_ctx_destroy(struct colloc_sched_ctx *ctx);

/*
 * GPU g's row and running jobs are now *gpu and *load (both copied; load
 * NULL: running nothing). Returns 0, or COLLOC_EUSAGE (nothing changed)
 * for a GPU that does not exist or a row whose node differs from the one
 * the context was created with.
 */
int colloc_sched_ctx_set_gpu(struct colloc_sched_ctx *ctx, int g,
			     const struct colloc_sched_gpu *gpu,
			     const struct colloc_sched_load *load,
			     struct colloc_diag *diag);

/*
 * colloc_sched_decide() on the context's cluster at now_ms with round-robin
 * cursor rr_cursor: same queue, output, cursor and errors (of the queue).
 * Placements made here are not kept: the caller starts the jobs and sets
 * their GPUs before the next pass.
 */
int colloc_sched_ctx_decide(struct colloc_sched_ctx *ctx, int64_t now_ms, int rr_cursor,
			    const struct colloc_sched_job *queue, size_t n_queue,
			    struct colloc_sched_decision *out, size_t cap, size_t *n_out,
			    int *rr_cursor_out, struct colloc_diag *diag);

#endif
