/*
 * colloc/interference.h — how much collocated training jobs slow each other.
 *
 * The simulator asks: job A shares a GPU with jobs B, C, ...; what fraction
 * of its alone-speed does A run at? Two sources answer:
 *
 *  - measured pairs: Gavel's simulation_throughputs.json (OSDI '20), the
 *    throughput of every pair of its 26 single-GPU job types run together on
 *    a V100, P100 or K80, divided by the job's throughput alone;
 *  - a model for everything else (unmeasured pairs, more than two jobs,
 *    jobs that are not Gavel types), from each job's "activity" a in [0, 1]:
 *
 *        speed(A) = 1 / (1 + alpha * a_A^p * sum_{B != A} a_B^q)
 *
 *    with three parameters fitted by least squares on half of the measured
 *    pairs and checked on the other half (docs/interference.md).
 *
 * This module does not decide whether jobs fit in memory together (that is
 * colloc/estimate.h), nor does it model multi-GPU jobs: only Gavel's scale
 * factor 1 entries are read.
 *
 * Ownership: colloc_interference_load_gavel() and _parse_gavel() return a
 * model the caller frees with colloc_interference_destroy().
 * colloc_interference_builtin() returns a static model that must not be
 * destroyed (destroying it is a no-op). A model is immutable after
 * colloc_interference_fit(), so any number of threads may query it; the
 * query functions never allocate.
 */
#ifndef COLLOC_INTERFERENCE_H
#define COLLOC_INTERFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

/* Limits of the loader. Exceeding one fails with COLLOC_ELIMIT. */
#define COLLOC_INTERFERENCE_MAX_BYTES ((size_t)16 << 20) /* JSON text */
#define COLLOC_INTERFERENCE_MAX_ENTRIES 100000 /* leaf entries in all */
#define COLLOC_INTERFERENCE_KEY_MAX 128 /* bytes of one JSON key */
#define COLLOC_INTERFERENCE_MAX_TYPES 64 /* distinct scale-1 job types */
#define COLLOC_INTERFERENCE_NAME_MAX 64 /* bytes of a job type name, with NUL */

/* Worker (GPU) types with measurements, as colloc_interference_worker()
 * numbers them: 0 "v100", 1 "p100", 2 "k80". */
#define COLLOC_INTERFERENCE_N_WORKERS 3

struct colloc_interference; /* opaque */

/* One job on a GPU, resolved once by the caller (not per query). */
struct colloc_interference_job {
	int type; /* colloc_interference_type(), or -1 for a non-Gavel job */
	double activity; /* 0..1: how hard the job keeps the GPU busy; used
			  * when the model has no derived activity for type */
};

/* What colloc_interference_fit() measured on the held-out half. */
struct colloc_interference_report {
	size_t n_pairs; /* measured (worker, A, B) speeds in the model */
	size_t n_infeasible; /* pairs Gavel recorded with throughput 0 */
	size_t n_train, n_test; /* observations in each half */
	double params[3]; /* alpha, p, q */
	double train_rmsre; /* root mean squared relative error */
	double test_mae, test_mape; /* the model */
	double none_mae, none_mape; /* baseline: no interference, speed 1 */
	double fair_mae, fair_mape; /* baseline: fair share, speed 1/n */
};

/*
 * Load Gavel's simulation_throughputs.json from json_path (see
 * colloc_interference_parse_gavel for what is read). The model has measured
 * pairs and no fitted parameters yet (speed() uses the built-in ones until
 * colloc_interference_fit() is called). Returns 0 and *out, or a negative
 * code with diag set: -errno / COLLOC_ENOTFOUND when the file cannot be
 * read, COLLOC_ELIMIT, COLLOC_EFORMAT; *out is untouched on failure.
 */
int colloc_interference_load_gavel(const char *json_path,
				   struct colloc_interference **out,
				   struct colloc_diag *diag);

/*
 * The same from len bytes of JSON text (need not be NUL-terminated).
 * Structure: {worker: {"('Name', scale)": {"null": alone_thr,
 * "('Other', scale)": [thr_this, thr_other], ...}}}. Every entry is checked
 * for shape; only workers v100/p100/k80 and scale 1 with scale-1 partners
 * are kept. Entries with a missing or zero alone throughput are skipped; a
 * colocated throughput of 0 marks the pair infeasible. Speeds are clamped
 * to at most 1.5.
 */
int colloc_interference_parse_gavel(const char *text, size_t len,
				    struct colloc_interference **out,
				    struct colloc_diag *diag);

/* Free a loaded model. NULL and the builtin model are no-ops. */
void colloc_interference_destroy(struct colloc_interference *m);

/*
 * Fit alpha, p, q by least squares on the training half of m's measured
 * pairs (colloc_interference_split() == 0), with activities derived from
 * that half only, and evaluate on the other half; fills *rep (may be NULL).
 * Afterwards the activities are re-derived from all pairs for use by
 * colloc_interference_speed(). Deterministic. Returns 0, or
 * COLLOC_ENOTFOUND with diag set when there are too few pairs to fit; m is
 * unchanged on failure.
 */
int colloc_interference_fit(struct colloc_interference *m,
			    struct colloc_interference_report *rep,
			    struct colloc_diag *diag);

/*
 * The model compiled in, for when no JSON is at hand: parameters and
 * per-type activities fitted with tools/fit_interference on the full Gavel
 * file (numbers in src/sim/interference.c), no measured pairs.
 */
const struct colloc_interference *colloc_interference_builtin(void);

/* Worker index 0..COLLOC_INTERFERENCE_N_WORKERS-1 of "v100", "p100",
 * "k80" (case-insensitive), or -1. */
int colloc_interference_worker(const char *worker);

/* Index of Gavel job type name ("ResNet-50 (batch size 64)") in m, or -1. */
int colloc_interference_type(const struct colloc_interference *m, const char *name);

/* Name of type index t in m, or NULL when out of range. */
const char *colloc_interference_type_name(const struct colloc_interference *m, int t);

/* Derived activity of type t on worker w, or -1 when unknown. */
double colloc_interference_activity(const struct colloc_interference *m, int w, int t);

/* Measured speed of type a when colocated with type b on worker w: > 0
 * measured, 0 not measured (or the builtin model), -1 infeasible. */
double colloc_interference_pair(const struct colloc_interference *m, int w, int a, int b);

/* The parameters speed() uses: alpha, p, q. */
void colloc_interference_params(const struct colloc_interference *m, double params[3]);

/*
 * Relative speed in (0, 1] of job a on worker w (-1: unknown worker) while
 * n_others other jobs share its GPU. With exactly one other job and a
 * measured, feasible pair, the measurement; otherwise the model, where each
 * job's activity is the derived one when its type has one on w, else its
 * own .activity clamped to [0, 1]. Infeasible pairs get the model too
 * (memory is not this module's business). n_others <= 0 gives 1.
 */
double colloc_interference_speed(const struct colloc_interference *m, int w,
				 const struct colloc_interference_job *a,
				 const struct colloc_interference_job *others,
				 int n_others);

/*
 * Relative speeds of all n jobs sharing one GPU on worker w, with the
 * physical ceiling: speeds[i] starts as colloc_interference_speed() of
 * jobs[i] beside the other n - 1, and where the jobs would then keep more
 * than the whole GPU busy, sum_i busy[i] x speeds[i] > 1, every speed is
 * scaled down by the same factor so that the sum is 1. busy[i] is job i's
 * busy fraction when alone (the simulator passes its SM activity; values
 * are clamped to [0, 1]); busy NULL means the jobs' .activity. So k jobs
 * of busy fraction a progress together at most min(k, 1/a) times as fast
 * as one. Two jobs whose pair is measured both ways keep the measured
 * speeds: a measurement is within the ceiling by construction (where the
 * busy fractions say otherwise, they are what is wrong). n <= 0 does
 * nothing; n == 1 gives 1. O(n) pow calls; speeds is
 * caller-owned with room for n values.
 */
void colloc_interference_gpu_speeds(const struct colloc_interference *m, int w,
				    const struct colloc_interference_job *jobs,
				    const double *busy, int n, double *speeds);

/* The model formula alone: 1 / (1 + params[0] * act_a^params[1] *
 * sum_i act_others[i]^params[2]), activities clamped to [0, 1]. */
double colloc_interference_model_speed(const double params[3], double act_a,
				       const double *act_others, int n_others);

/*
 * Which half a measured pair belongs to: 0 training, 1 held out. A hash of
 * the worker and the two names in sorted order, so (A, B) and (B, A) fall
 * in the same half and the split never changes between runs.
 */
int colloc_interference_split(const char *worker, const char *type_a, const char *type_b);

/*
 * The Gavel job type closest to a model name (zoo names "resnet50",
 * "bert_base", trace names "ResNet-18", "dqn"; case, '-', '_' and spaces
 * ignored) at the given batch size (nearest on a log scale; <= 0 picks the
 * middle one). The table is in docs/interference.md. Returns a static
 * string, or NULL when no Gavel type is close (vgg16, shufflenet, ...).
 */
const char *colloc_interference_gavel_type(const char *model, int64_t batch);

#endif
