/*
 * colloc/sim.h — the trace-driven cluster simulator behind `colloc sim`.
 *
 * A discrete-event simulation on a virtual clock: jobs of a trace arrive,
 * the scheduler core (colloc/sched.h, the same code collocd runs) places
 * them, collocated jobs slow each other down, jobs whose true memory
 * exceeds what their GPU has left crash with a simulated out-of-memory
 * error and are recovered (raised need, re-queued ahead of new work, alone
 * on a GPU after repeated failures), and the run ends when every job has
 * finished or failed for good. The same seed gives the same result.
 *
 * Job identity: every job gets a model and batch size (from the trace where
 * it names one, else drawn from a fixed mix with the seed). The memory the
 * scheduler sees is colloc's estimate for that model (colloc/estimate.h, on
 * the cluster's platform); the job's true peak is that estimate times
 * (1 + e), e drawn from N(0, est_error) — what makes wrong estimates, and
 * so OOM crashes, possible. See docs/simulator.md for every rule.
 *
 * Ownership: colloc_sim_run() reads the trace and fills a caller-owned
 * result; the time series inside it are malloc'd and released by
 * colloc_sim_result_fini().
 */
#ifndef COLLOC_SIM_H
#define COLLOC_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/sched.h"
#include "colloc/trace.h"

struct colloc_sim_cluster {
	int n_nodes;
	int gpus_per_node;
	char gpu_type[32]; /* "A100-40GB" */
	uint64_t gpu_mem_bytes;
	double idle_power_w; /* power model: idle + (max - idle) x activity */
	double max_power_w;
	const char *platform; /* estimator profile for this GPU type */
};

/*
 * Parse "NODESxGPUSxTYPE" (e.g. "16x8xA100-40GB") or "NODESxGPUSxSIZE"
 * ("2x4x40GiB", a generic GPU of that memory). Known types and their power
 * figures are listed in docs/simulator.md. Returns 0 or COLLOC_EUSAGE.
 */
int colloc_sim_cluster_parse(const char *spec, struct colloc_sim_cluster *out,
			     struct colloc_diag *diag);

struct colloc_sim_opts {
	struct colloc_sched_config sched; /* policy, headroom, backfill ... */
	uint64_t seed;
	double est_error; /* sigma of the true/estimate ratio (default 0.05) */
	int max_attempts; /* OOM retries before running alone (default 3) */
	int64_t ramp_ms; /* a job reaches its peak this long after start */
	int window; /* queued jobs the scheduler looks at per pass */
	int series_points; /* samples of the utilization time series */
};

void colloc_sim_opts_init(struct colloc_sim_opts *o);

struct colloc_sim_result {
	int policy;
	size_t jobs, finished, failed; /* failed: could never fit, with reason */
	double makespan_s;
	double mean_jct_s, median_jct_s, p99_jct_s;
	double mean_wait_s, median_wait_s, p99_wait_s;
	double gpu_util; /* time-weighted mean activity over all GPUs, 0..1 */
	double mem_util; /* time-weighted mean memory in use / capacity */
	double energy_j;
	size_t shared_jobs; /* jobs that ever shared a GPU */
	size_t oom_crashes;
	size_t recoveries; /* jobs that crashed and later finished */
	size_t jobs_lost; /* neither finished nor failed: must be 0 */
	size_t passes; /* scheduling passes: one per instant with jobs queued,
			* also where the outcome (nothing starts) was
			* known without running the scheduler core */
	double sim_wall_s;
	/* utilization over time: t_s[k], util[k] for k < n_series */
	size_t n_series;
	double *series_t_s;
	double *series_util;
	/* job completion times, sorted, for the CDF */
	double *jct_s;
};

void colloc_sim_result_fini(struct colloc_sim_result *r);

/*
 * Simulate trace on cluster c with opts. Returns 0, or a negative code
 * (e.g. the estimator cannot load a model graph) with a message.
 */
int colloc_sim_run(const struct colloc_trace *trace, const struct colloc_sim_cluster *c,
		   const struct colloc_sim_opts *opts, struct colloc_sim_result *out,
		   struct colloc_diag *diag);

#endif
