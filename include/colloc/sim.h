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
 * so OOM crashes, possible. Its activity, the one number the scheduler's
 * utilization gate, the utilization metric and the interference model all
 * read, is the SM activity colloc's predictor (colloc/perf.h) gives for the
 * model's graph on the cluster's GPU; kinds without a graph have an assumed
 * one (colloc_sim_kind_info() says which). See docs/simulator.md for every
 * rule.
 *
 * Ownership: colloc_sim_run() reads the trace and fills a caller-owned
 * result; the time series inside it are malloc'd and released by
 * colloc_sim_result_fini().
 */
#ifndef COLLOC_SIM_H
#define COLLOC_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/sched.h"
#include "colloc/trace.h"

struct colloc_sim_nodes; /* colloc/sim_fill.h */

/* GPU types one cluster may have: a job's allowed types are a bit mask
 * (colloc_sched_job.type_mask). */
#define COLLOC_SIM_MAX_TYPES 64

/* One GPU type of a heterogeneous cluster, as the simulator takes it. */
struct colloc_sim_gpu_type {
	char name[32]; /* as the node list names it: "V100M16", "G2" */
	/* The simulator's type it is ("V100-16GB", docs/simulator.md), or
	 * "" for a GPU known only by its memory (a generic GPU). */
	char sim_type[32];
	uint64_t mem_bytes;
	double idle_power_w, max_power_w;
	const char *platform; /* as colloc_sim_cluster.platform */
	int n_gpus; /* GPUs of this type in the cluster */
	int max_node_gpus; /* the most of them on one node */
};

struct colloc_sim_cluster {
	int n_nodes;
	int gpus_per_node;
	char gpu_type[32]; /* "A100-40GB" */
	uint64_t gpu_mem_bytes;
	double idle_power_w; /* power model: idle + (max - idle) x activity */
	double max_power_w;
	/* Platform profile (data/platforms/NAME.json) of this GPU type, for
	 * both the memory estimate and the activity; NULL for a generic GPU
	 * of a given size: the built-in default profile (A100-like). */
	const char *platform;
	/*
	 * A heterogeneous cluster (colloc_sim_cluster_nodes): the node list
	 * (not owned; it must outlive the runs) and its GPU types; every GPU
	 * has its type's memory and power, and a job that states GPU types
	 * (colloc_trace_job.gpu_spec) runs only on those. Its GPUs are
	 * numbered node by node in the list's order, nodes without GPUs
	 * skipped, and node k of the scheduler is the k-th node with GPUs.
	 * The fields above then describe the reference type (the one with
	 * the most GPUs), whose platform profile gives every job's memory
	 * estimate and activity, except n_nodes (the nodes with GPUs),
	 * gpus_per_node (the largest node) and gpu_mem_bytes (the largest
	 * GPU). n_types 0, nodes NULL: n_nodes x gpus_per_node GPUs of the
	 * type above, and gpu_spec is not read.
	 */
	const struct colloc_sim_nodes *nodes;
	int n_types;
	struct colloc_sim_gpu_type types[COLLOC_SIM_MAX_TYPES];
};

/*
 * Parse "NODESxGPUSxTYPE" (e.g. "16x8xA100-40GB") or "NODESxGPUSxSIZE"
 * ("2x4x40GiB", a generic GPU of that memory). Known types, their memory,
 * power figures and platform profiles are listed in docs/simulator.md; an
 * unknown type is COLLOC_EUSAGE with a message naming the known ones.
 * Returns 0 or COLLOC_EUSAGE.
 */
int colloc_sim_cluster_parse(const char *spec, struct colloc_sim_cluster *out,
			     struct colloc_diag *diag);

/*
 * A heterogeneous cluster of the GPU nodes of nodes (`--cluster
 * alibaba:PATH`), which *out points to (not copied). Each node's model
 * names its GPU type: one of the simulator's types ("A100-40GB"), or a
 * model of Alibaba's openb node lists (T4, P100, V100M16, V100M32, A10:
 * the simulator's T4, P100-16GB, V100-16GB, V100-32GB and A10; G2 and G3,
 * whose models Alibaba does not disclose: generic GPUs of the memory the
 * FGD paper's simulator gives them; docs/simulator.md). Returns 0, or
 * COLLOC_EUSAGE (no GPUs, an unknown model: the message lists the known
 * ones) or COLLOC_ELIMIT (more than COLLOC_SIM_MAX_TYPES types).
 */
int colloc_sim_cluster_nodes(const struct colloc_sim_nodes *nodes,
			     struct colloc_sim_cluster *out, struct colloc_diag *diag);

struct colloc_sim_opts {
	struct colloc_sched_config sched; /* policy, headroom, backfill ... */
	uint64_t seed;
	double est_error; /* sigma of the true/estimate ratio (default 0.05) */
	int max_attempts; /* OOM retries before running alone (default 3) */
	int64_t ramp_ms; /* a job reaches its peak this long after start */
	int window; /* queued jobs the scheduler looks at per pass */
	int series_points; /* samples of the utilization time series */
	/* Interference: a model with Gavel's measured pairs
	 * (colloc_interference_load_gavel), used where both jobs of a pair are
	 * Gavel types; NULL: colloc_interference_builtin() (no pairs). Not
	 * owned. Either way the formula reads the jobs' own activity. */
	const struct colloc_interference *interference;
	/* Offered load to replay the trace at: arrival times are scaled so
	 * that the trace's GPU time (GPUs x alone run time) over the
	 * cluster's GPU time between the first and the last arrival is this;
	 * 0: the trace's own times. */
	double load;
	/* Keep one record per job in the result (job_records): what a
	 * per-job log (colloc sim --job-log) is written from. */
	bool job_records;
	/* Called, where set, as each job starts, at now_ms on the run's clock
	 * (the trace's times, scaled by load): job is its index in the trace,
	 * gpus[0..n_gpus) the cluster's GPUs it runs on (numbered as
	 * colloc_sim_cluster says). For tests and logs; arg is passed on. */
	void (*on_start)(void *arg, int64_t now_ms, size_t job, const int *gpus,
			 int n_gpus);
	void *on_start_arg;
};

void colloc_sim_opts_init(struct colloc_sim_opts *o);

/*
 * What the simulator takes one job kind to be on a cluster's GPU type:
 * exactly the numbers colloc_sim_run() gives every job of that kind and
 * batch (the same code computes both).
 */
struct colloc_sim_kind {
	const char *kind; /* the simulator's kind ("resnet50"), static */
	const char *zoo; /* its zoo graph ("bert_base"), NULL: none */
	int64_t batch; /* as used: the trace's where the kind has a graph */
	int64_t seq; /* sequence length bound, 0 for non-transformers */
	uint64_t mem_bytes; /* the estimate the scheduler sees (peak device) */
	/* Busy fraction alone, 0..1: the predictor's sm_activity (DCGM
	 * 1002) where predicted, else the kind's assumed value. */
	double activity;
	bool predicted; /* false: assumed (a kind without a graph) */
	double gpu_util; /* predicted utilization.gpu; 0 when assumed */
	double step_ms; /* predicted step time; 0 when assumed */
	/* What the interference model's formula reads: activity x
	 * COLLOC_SIM_INTERFERENCE_SCALE (docs/simulator.md). */
	double interference_activity;
};

/*
 * The interference model's parameters were fitted on an activity scale of
 * its own (derived from Gavel's pairs, docs/interference.md); the
 * simulator hands its formula SM activity times this factor, fitted by
 * tools/fit_interference on the training half of Gavel's measured pairs of
 * the job types with graphs, with their predicted SM activities (held out:
 * MAPE 24.0%; docs/simulator.md). The ceiling
 * (colloc_interference_gpu_speeds) uses the SM activity itself.
 */
#define COLLOC_SIM_INTERFERENCE_SCALE 0.320

/*
 * Fill *out for trace model name model (a kind name, "ResNet-50", "bert",
 * ...; matched as colloc_sim_run matches trace names) at batch (<= 0: the
 * kind's default) on cluster c's GPU type. Loads the platform profile and
 * the zoo graph and runs the estimator and the predictor. Returns 0, or
 * COLLOC_ENOTFOUND for an unknown model name (the message lists the kinds),
 * or the estimator's / predictor's error with a message.
 */
int colloc_sim_kind_info(const char *model, int64_t batch,
			 const struct colloc_sim_cluster *c, struct colloc_sim_kind *out,
			 struct colloc_diag *diag);

/* Name of the simulator's job kind i (0, 1, ...; "resnet18"), or NULL past
 * the last one. Static strings. */
const char *colloc_sim_kind_name(int i);

/* How a job's run ended (struct colloc_sim_job_record). */
enum colloc_sim_outcome {
	COLLOC_SIM_DONE = 0, /* finished */
	COLLOC_SIM_FAILED, /* could never fit any GPU */
	COLLOC_SIM_LOST, /* neither: a simulator bug (tests check for none) */
};
const char *colloc_sim_outcome_name(int outcome);

/* One job of a run, as it went (colloc_sim_opts.job_records). Times are
 * seconds on the run's clock (the trace's, scaled by the load). */
struct colloc_sim_job_record {
	uint64_t id; /* the trace's */
	const char *kind; /* the job kind it ran as ("resnet50"), static */
	int n_gpus; /* as run (a job wider than a node runs narrower) */
	int gpu_milli; /* declared share of its GPU, 1000: a whole one */
	int outcome; /* enum colloc_sim_outcome */
	bool shared; /* it ever shared a GPU */
	bool crashed; /* it crashed out of memory at least once */
	double submit_s;
	double start_s; /* its first start; -1: never started */
	double end_s; /* -1: did not finish */
	double alone_s; /* its run time alone on its GPUs */
	uint64_t need_bytes; /* the memory the scheduler saw (at the end) */
	uint64_t true_bytes; /* the peak it really reached */
};

struct colloc_sim_result {
	int policy;
	size_t jobs, finished, failed; /* failed: could never fit, with reason */
	double makespan_s;
	double mean_jct_s, median_jct_s, p99_jct_s;
	double mean_wait_s, median_wait_s, p99_wait_s;
	double gpu_util; /* time-weighted mean over all GPUs of the summed
			  * activity x speed of its jobs, 0..1 */
	double mem_util; /* time-weighted mean memory in use / capacity */
	double energy_j;
	/* Metrics that do not restate the makespan (issue 13): */
	double alloc_frac; /* time-weighted share of GPUs running >= 1 job */
	/* Useful work per GPU-second: alone-equivalent GPU-seconds of the
	 * finished jobs / GPU-seconds of the cluster over the makespan. */
	double useful_work;
	/* JCT with failed jobs counted, as if they ended with the run (the
	 * mean_jct_s above is over finished jobs only). */
	double mean_jct_all_s, median_jct_all_s, p99_jct_all_s;
	double oom_per_1k_jobs; /* OOM crashes per 1,000 jobs */
	size_t shared_jobs; /* jobs that ever shared a GPU */
	size_t oom_crashes;
	size_t recoveries; /* jobs that crashed and later finished */
	size_t jobs_lost; /* neither finished nor failed: must be 0 */
	size_t passes; /* scheduling passes: one per instant with jobs queued,
			* also where the outcome (nothing starts) was
			* known without running the scheduler core */
	double sim_wall_s;
	/* The offered load replayed (colloc_sim_opts.load; the trace's own
	 * when that is 0); 0 when all jobs arrive at once. */
	double offered_load;
	/* utilization over time: t_s[k], util[k] for k < n_series */
	size_t n_series;
	double *series_t_s;
	double *series_util;
	/* job completion times, sorted, for the CDF */
	double *jct_s;
	/* With colloc_sim_opts.job_records: one per job, in trace order. */
	struct colloc_sim_job_record *job_records;
	size_t n_job_records;
};

void colloc_sim_result_fini(struct colloc_sim_result *r);
/* Free r's job records (once written, say) and keep the rest of r. */
void colloc_sim_result_drop_job_records(struct colloc_sim_result *r);

/*
 * Simulate trace on cluster c with opts. Returns 0, or a negative code
 * (e.g. the estimator cannot load a model graph) with a message.
 */
int colloc_sim_run(const struct colloc_trace *trace, const struct colloc_sim_cluster *c,
		   const struct colloc_sim_opts *opts, struct colloc_sim_result *out,
		   struct colloc_diag *diag);

#endif
