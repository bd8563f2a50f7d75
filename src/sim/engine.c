/*
 * engine.c — the discrete-event simulator behind `colloc sim` (see
 * colloc/sim.h and docs/simulator.md).
 *
 * Events: arrivals, ramp-ups (a job reaches its peak memory: the moment a
 * simulated OOM can happen) and completions. Collocated jobs progress at a
 * rate below 1; whenever a GPU's set of jobs changes, the remaining work of
 * its jobs is brought up to date and their completion events are re-issued
 * (in place: a job has one completion event in the heap, at its hpos, so the
 * heap holds at most one per running job and one ramp per start; an event
 * left by a job that stopped is recognised by its version). After every batch of
 * events at one instant, one scheduling pass of the scheduler core runs --
 * unless its outcome is known: nothing has changed since a pass that started
 * nothing (see may_start in struct sim); it is counted all the same.
 *
 * Scale: the work per event is proportional to what changed (the GPUs of
 * the jobs that started, stopped or changed speed), never to the cluster or
 * the number of jobs; see struct sim. So is the scheduler core's work per
 * pass, through a scheduler context (colloc_sched_ctx), plus its queue's
 * (docs/simulator.md, Performance).
 *
 * Clusters: NODESxGPUSxTYPE, or a node list (colloc_sim_cluster_nodes)
 * whose GPUs each have their model's memory and power and whose jobs run
 * only on the GPU types their trace allows (a type mask the scheduler core
 * enforces); estimates and activities are on one reference type either way.
 *
 * Not here: trace parsing (trace*.c), placement rules (sched.c), the
 * memory estimates and activity predictions (estimate/: this file only
 * asks them, once per job kind and batch), the interference model
 * (interference.c).
 */
#include "colloc/sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "colloc/cost.h"
#include "colloc/estimate.h"
#include "colloc/interference.h"
#include "colloc/model.h"
#include "colloc/perf.h"
#include "colloc/sim_fill.h"
#include "colloc/units.h"

#define MAX_PER_GPU 32
#define GiB ((uint64_t)1 << 30)

/* --- cluster ------------------------------------------------------------ */

/* The GPU types a cluster spec may name. Memory as NVML reports it;
 * power: idle and board limit (vendor data sheets: A100 SXM4 400 W, H100
 * SXM5 700 W, H200 SXM 700 W, V100 SXM2 300 W, P100 PCIe 250 W, K80 300 W
 * per board of two GPUs, T4 70 W, L4 72 W, A10 150 W, RTX 3060 170 W,
 * RTX 3090 350 W, RTX 4090 450 W; idle draw as commonly measured, ~10-15%
 * of max). platform: the profile in data/platforms/ whose GPU this is, for
 * the memory estimates and the predicted activities (compute facts). */
static const struct {
	const char *name;
	uint64_t mem;
	double idle_w, max_w;
	const char *platform;
} gpu_types[] = {
	{"A100-40GB", 42505273344ull, 55, 400, "a100-40gb-cu124-torch26"},
	{"A100-80GB", 85899345920ull, 60, 400, "a100-80gb-sxm-cu124-torch26"},
	{"H100-80GB", 85520809984ull, 90, 700, "h100-80gb-cu124-torch26"},
	{"H200-141GB", 150754820096ull, 100, 700, "h200-141gb-cu124-torch26"},
	{"V100-32GB", 34089730048ull, 40, 300, "v100-32gb-cu124-torch26"},
	{"V100-16GB", 17179869184ull, 40, 300, "v100-16gb-cu124-torch26"},
	{"P100-16GB", 17179869184ull, 30, 250, "p100-16gb-cu124-torch26"},
	{"K80", 11996758016ull, 25, 150, "k80-cu114-torch112"},
	{"T4", 16106127360ull, 10, 70, "t4-16gb-cu124-torch26"},
	{"L4", 24152899584ull, 12, 72, "l4-24gb-cu124-torch26"},
	{"A10", 24146608128ull, 20, 150, "a10-24gb-cu124-torch26"},
	{"RTX3060", 12622168064ull, 15, 170, "rtx3060-cu124-torch26"},
	{"RTX3090", 25769803776ull, 30, 350, "rtx3090-cu124-torch26"},
	{"RTX4090", 25757220864ull, 30, 450, "rtx4090-cu124-torch26"},
};
#define N_GPU_TYPES (sizeof(gpu_types) / sizeof(gpu_types[0]))

int colloc_sim_cluster_parse(const char *spec, struct colloc_sim_cluster *out,
			     struct colloc_diag *diag)
{
	char type[64], known[256];
	const char *whole = spec;
	size_t off = 0;
	long nodes, gpus;
	char *end;

	memset(out, 0, sizeof(*out));
	nodes = strtol(spec, &end, 10);
	if (end == spec || *end != 'x' || nodes < 1 || nodes > 100000)
		goto bad;
	spec = end + 1;
	gpus = strtol(spec, &end, 10);
	if (end == spec || *end != 'x' || gpus < 1 || gpus > COLLOC_SCHED_MAX_GPUS)
		goto bad;
	snprintf(type, sizeof(type), "%s", end + 1);
	out->n_nodes = (int)nodes;
	out->gpus_per_node = (int)gpus;
	for (size_t k = 0; k < N_GPU_TYPES; k++)
		if (strcasecmp(type, gpu_types[k].name) == 0) {
			snprintf(out->gpu_type, sizeof(out->gpu_type), "%s",
				 gpu_types[k].name);
			out->gpu_mem_bytes = gpu_types[k].mem;
			out->idle_power_w = gpu_types[k].idle_w;
			out->max_power_w = gpu_types[k].max_w;
			out->platform = gpu_types[k].platform;
			return 0;
		}
	if (colloc_parse_size(type, &out->gpu_mem_bytes) == 0 &&
	    out->gpu_mem_bytes >= GiB) {
		snprintf(out->gpu_type, sizeof(out->gpu_type), "%s GPU", type);
		out->idle_power_w = 50;
		out->max_power_w = 300;
		out->platform = NULL; /* built-in default profile */
		return 0;
	}
bad:
	known[0] = '\0';
	for (size_t k = 0; k < N_GPU_TYPES && off < sizeof(known); k++) {
		int w = snprintf(known + off, sizeof(known) - off, "%s%s", k ? ", " : "",
				 gpu_types[k].name);

		off += w > 0 ? (size_t)w : 0;
	}
	return colloc_diag_set(
		diag, COLLOC_EUSAGE,
		"cluster '%s': expected NODESxGPUSxTYPE, e.g. 16x8xA100-40GB, "
		"or NODESxGPUSxSIZE for a generic GPU of that memory, e.g. "
		"2x4x40GiB (types: %s; at most %d GPUs per node)",
		whole, known, COLLOC_SCHED_MAX_GPUS);
}

/* The models of Alibaba's openb node lists that are types above: P100 is
 * the PCIe 16 GB board, V100M16 and V100M32 the SXM2 16 and 32 GB ones
 * (as the FGD paper's simulator names them, hkust-adsl/kubernetes-
 * scheduler-simulator, pkg/type/open-gpu-share/utils/const.go). */
static const struct {
	const char *model, *type;
} node_models[] = {
	{"T4", "T4"},
	{"P100", "P100-16GB"},
	{"V100M16", "V100-16GB"},
	{"V100M32", "V100-32GB"},
	{"A10", "A10"},
};

/* The models Alibaba does not disclose ("G1, G2, G3 are undisclosed
 * internal GPU codes", the trace's README): generic GPUs (the built-in
 * default profile, the power figures of a generic GPU) of the memory the
 * FGD paper's simulator gives them, which are its placeholders and not
 * measured capacities (same file, MapGpuTypeMemoryMiB: G2 20971520000
 * bytes, G3 31457280000; its G1, 1000 MiB in the code and 10000 MiB in
 * the comment beside it, is in no node list and left out). */
static const struct {
	const char *model;
	uint64_t mem;
} undisclosed[] = {
	{"G2", 20971520000ull},
	{"G3", 31457280000ull},
};

/* GPU type of node-list model name into *t; false if unknown. */
static bool node_type(const char *model, struct colloc_sim_gpu_type *t)
{
	const char *sim = NULL;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", model);
	for (size_t k = 0; k < sizeof(node_models) / sizeof(node_models[0]); k++)
		if (strcmp(model, node_models[k].model) == 0)
			sim = node_models[k].type;
	for (size_t k = 0; k < N_GPU_TYPES; k++)
		if (strcasecmp(sim ? sim : model, gpu_types[k].name) == 0) {
			snprintf(t->sim_type, sizeof(t->sim_type), "%s",
				 gpu_types[k].name);
			t->mem_bytes = gpu_types[k].mem;
			t->idle_power_w = gpu_types[k].idle_w;
			t->max_power_w = gpu_types[k].max_w;
			t->platform = gpu_types[k].platform;
			return true;
		}
	for (size_t k = 0; k < sizeof(undisclosed) / sizeof(undisclosed[0]); k++)
		if (strcmp(model, undisclosed[k].model) == 0) {
			/* as a NODESxGPUSxSIZE cluster's generic GPU */
			t->mem_bytes = undisclosed[k].mem;
			t->idle_power_w = 50;
			t->max_power_w = 300;
			t->platform = NULL;
			return true;
		}
	return false;
}

static int unknown_model(const struct colloc_sim_node *nd, struct colloc_diag *diag)
{
	char known[512];
	size_t off = 0;

	known[0] = '\0';
	for (size_t k = 0; k < sizeof(node_models) / sizeof(node_models[0]); k++) {
		int w = snprintf(known + off, sizeof(known) - off, "%s, ",
				 node_models[k].model);

		off += w > 0 && (size_t)w < sizeof(known) - off ? (size_t)w : 0;
	}
	for (size_t k = 0; k < sizeof(undisclosed) / sizeof(undisclosed[0]); k++) {
		int w = snprintf(known + off, sizeof(known) - off, "%s, ",
				 undisclosed[k].model);

		off += w > 0 && (size_t)w < sizeof(known) - off ? (size_t)w : 0;
	}
	for (size_t k = 0; k < N_GPU_TYPES; k++) {
		int w = snprintf(known + off, sizeof(known) - off, "%s%s",
				 gpu_types[k].name, k + 1 < N_GPU_TYPES ? ", " : "");

		off += w > 0 && (size_t)w < sizeof(known) - off ? (size_t)w : 0;
	}
	return colloc_diag_set(diag, COLLOC_EUSAGE,
			       "node '%s': GPU model '%s' is not a type the simulator "
			       "knows (models: %s)",
			       nd->name, nd->gpu_type, known);
}

int colloc_sim_cluster_nodes(const struct colloc_sim_nodes *nodes,
			     struct colloc_sim_cluster *out, struct colloc_diag *diag)
{
	int ref = 0;

	memset(out, 0, sizeof(*out));
	if (!nodes || nodes->n_gpus == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "the node list has no GPUs");
	for (size_t n = 0; n < nodes->n; n++) {
		const struct colloc_sim_node *nd = &nodes->node[n];
		struct colloc_sim_gpu_type *t = NULL;

		if (nd->n_gpus == 0)
			continue;
		if (nd->n_gpus > COLLOC_SCHED_MAX_GPUS)
			return colloc_diag_set(
				diag, COLLOC_EUSAGE, "node '%s' has %d GPUs (at most %d)",
				nd->name, nd->n_gpus, COLLOC_SCHED_MAX_GPUS);
		for (int k = 0; k < out->n_types && !t; k++)
			if (strcmp(out->types[k].name, nd->gpu_type) == 0)
				t = &out->types[k];
		if (!t) {
			if (out->n_types == COLLOC_SIM_MAX_TYPES)
				return colloc_diag_set(diag, COLLOC_ELIMIT,
						       "more than %d GPU types in the "
						       "node list",
						       COLLOC_SIM_MAX_TYPES);
			t = &out->types[out->n_types];
			if (!node_type(nd->gpu_type, t))
				return unknown_model(nd, diag);
			out->n_types++;
		}
		t->n_gpus += nd->n_gpus;
		if (nd->n_gpus > t->max_node_gpus)
			t->max_node_gpus = nd->n_gpus;
		if (nd->n_gpus > out->gpus_per_node)
			out->gpus_per_node = nd->n_gpus;
		if (t->mem_bytes > out->gpu_mem_bytes)
			out->gpu_mem_bytes = t->mem_bytes;
		out->n_nodes++;
	}
	for (int k = 1; k < out->n_types; k++)
		if (out->types[k].n_gpus > out->types[ref].n_gpus)
			ref = k;
	snprintf(out->gpu_type, sizeof(out->gpu_type), "%s", out->types[ref].name);
	out->idle_power_w = out->types[ref].idle_power_w;
	out->max_power_w = out->types[ref].max_power_w;
	out->platform = out->types[ref].platform;
	out->nodes = nodes;
	return 0;
}

void colloc_sim_opts_init(struct colloc_sim_opts *o)
{
	memset(o, 0, sizeof(*o));
	colloc_sched_config_init(&o->sched);
	/* The baseline a scheduling paper compares against (issue 13). */
	o->sched.backfill_rule = COLLOC_BACKFILL_EASY;
	o->seed = 1;
	o->est_error = 0.05;
	o->max_attempts = 3;
	o->ramp_ms = (int64_t)60 * 1000;
	o->window = 256;
	o->series_points = 200;
}

void colloc_sim_result_fini(struct colloc_sim_result *r)
{
	free(r->series_t_s);
	free(r->series_util);
	free(r->jct_s);
	r->series_t_s = r->series_util = r->jct_s = NULL;
	colloc_sim_result_drop_job_records(r);
}

void colloc_sim_result_drop_job_records(struct colloc_sim_result *r)
{
	free(r->job_records);
	r->job_records = NULL;
	r->n_job_records = 0;
}

const char *colloc_sim_outcome_name(int outcome)
{
	static const char *const names[] = {"done", "failed", "lost"};

	return outcome >= 0 && outcome <= COLLOC_SIM_LOST ? names[outcome] : "unknown";
}

/* --- random numbers (deterministic across platforms) ---------------------- */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(uint64_t *s)
{
	double u = rng_unit(s), v = rng_unit(s);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* --- job identity ------------------------------------------------------- */

/* Models the simulator knows. zoo: its graph, from which the memory
 * estimate and the activity (the predictor's SM activity on the cluster's
 * GPU) are computed. zoo NULL: no graph; fixed memory and an ASSUMED
 * activity (busy fraction alone), not a prediction: the RL jobs drive
 * small networks from a CPU-bound environment (0.15), recommendation
 * (embedding lookups, small MLPs) 0.3, CycleGAN (two conv generators and
 * discriminators) 0.6 -- docs/simulator.md. */
static const struct kind {
	const char *name; /* trace name (lower case) */
	const char *zoo;
	int64_t batch; /* default batch */
	int64_t seq; /* transformers: sequence length bound */
	double assumed_activity; /* zoo NULL only */
	uint64_t fixed_mem; /* no graph: memory in bytes */
	int loss;
} kinds[] = {
	{"resnet18", "resnet18", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"resnet50", "resnet50", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"vgg16", "vgg16", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"vgg19", "vgg16", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"mobilenet_v2", "mobilenet_v2", 128, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"shufflenet_v2_x1_0", "shufflenet_v2_x1_0", 128, 0, 0, 0,
	 COLLOC_LOSS_CROSS_ENTROPY},
	{"densenet121", "densenet121", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"efficientnet_b0", "efficientnet_b0", 64, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"vit_b_16", "vit_b_16", 32, 0, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"bert", "bert_base", 32, 128, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"gpt2", "gpt2", 8, 128, 0, 0, COLLOC_LOSS_CAUSAL_LM},
	{"transformer", "t5_small", 32, 64, 0, 0, COLLOC_LOSS_CROSS_ENTROPY},
	{"lm", "distilgpt2", 16, 64, 0, 0, COLLOC_LOSS_CAUSAL_LM},
	{"dqn", NULL, 0, 0, 0.15, GiB + GiB / 2, 0},
	{"a2c", NULL, 0, 0, 0.15, GiB + GiB / 2, 0},
	{"a3c", NULL, 0, 0, 0.15, GiB + GiB / 2, 0},
	{"recommendation", NULL, 0, 0, 0.3, 3 * GiB, 0},
	{"cyclegan", NULL, 0, 0, 0.6, 5 * GiB, 0},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))
_Static_assert(N_KINDS <= 256, "struct job keeps its kind in a byte");
/* The mix drawn for traces without model names: the CNNs and transformers
 * above with their default batch sizes, uniformly. */
#define N_MIX 12

/* Trace model name to a kind: exact or a word inside ("ResNet-18 (batch
 * size 64)" -> resnet18). -1 when unknown. */
static int kind_of(const char *model)
{
	char low[COLLOC_TRACE_MODEL_MAX];
	size_t n = 0;

	for (const char *p = model; *p && n + 1 < sizeof(low); p++)
		if (*p != '-' && *p != ' ')
			low[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	low[n] = '\0';
	for (size_t k = 0; k < N_KINDS; k++)
		if (strcmp(low, kinds[k].name) == 0)
			return (int)k;
	for (size_t k = 0; k < N_KINDS; k++) {
		char kn[32];
		size_t m = 0;

		for (const char *p = kinds[k].name; *p && m + 1 < sizeof(kn); p++)
			if (*p != '_')
				kn[m++] = *p;
		kn[m] = '\0';
		if (strlen(kn) > 2 && strncmp(low, kn, strlen(kn)) == 0)
			return (int)k;
	}
	return -1;
}

/* One (kind, batch) estimate and prediction, computed once per run (a run
 * has one GPU type, so this is per (kind, batch, GPU type)). */
struct est_cache {
	int kind;
	int64_t batch;
	uint64_t need;
	double act;
	int gtype; /* Gavel type in the run's interference model, or -1 */
};

/* --- runtime state -------------------------------------------------------- */

#define SPEC_NONE UINT16_MAX
/* Values per node of the sum tree (struct sim's tsum). */
#define TS ((size_t)4)

/* What a run reads of one GPU type of its cluster (a homogeneous
 * cluster's one type is type 0). */
struct sim_type {
	uint64_t mem; /* every GPU of the type has this much */
	double idle_w, max_w;
	int worker; /* its Gavel worker type for interference */
	int max_node; /* the most GPUs of one node of the type */
};

enum { J_PENDING = 0, J_QUEUED, J_RUNNING, J_DONE, J_FAILED };

/* One job. Kept small: a run holds a million of them. While it runs, its
 * GPUs are in its entry of the running list (struct sim's rs), the list the
 * scheduler core reads. */
struct job {
	int64_t submit_ms;
	uint64_t need, true_mem;
	double act;
	struct colloc_interference_job ij; /* its identity for interference */
	double work_ms; /* alone-time left */
	double full_ms; /* alone-time of the whole job */
	double rate; /* progress per ms now */
	int64_t last_ms; /* when work_ms was last brought up to date */
	int64_t start_ms, first_start_ms, end_ms;
	int64_t end_est_ms; /* its completion event at the current rate */
	int prio, attempts;
	int run_pos; /* its entry in rs while it runs */
	uint16_t milli; /* declared share of each GPU, 1..1000 */
	/* The GPU types it may use: struct sim's masks[spec], or SPEC_NONE:
	 * none of the cluster's (it can never start). */
	uint16_t spec;
	unsigned version; /* of its completion event */
	/* Where its completion event is in the heap, plus 1; 0: none (the
	 * heap holds at most one event per job and start: far below 2^32). */
	unsigned hpos;
	unsigned char state, n_gpus;
	unsigned char kind; /* kinds[] */
	bool exclusive, at_peak, shared, crashed;
};

struct gpu {
	int jobs[MAX_PER_GPU];
	int n;
	bool dirty; /* its summaries are out of date (in sim's dirty list) */
	/* The speeds of its jobs (gpu_speeds), valid while its set of jobs
	 * is the same: a multi-GPU job's rate reads every one of its GPUs,
	 * and recomputing them all for every job of every GPU that changed
	 * was quadratic in the jobs per GPU. */
	bool sp_ok;
	double sp[MAX_PER_GPU];
};

struct event {
	int64_t t;
	int type; /* 0 ramp, 1 finish (same instant: ramps first) */
	int job;
	unsigned version;
};

/*
 * Per-pass work is proportional to what changed, not to the cluster:
 *  - the scheduler's view of every GPU (gs) and the running list (rs) are
 *    kept from pass to pass; a GPU whose jobs, rates or memory changed is
 *    marked dirty and recomputed from its jobs (in their order, so every
 *    sum rounds as a from-scratch rebuild does) before the next pass, and
 *    handed, with its jobs' summary, to the scheduler core's context (sc),
 *    which keeps its own working view and search tree between passes;
 *  - cluster totals for the metrics (activity, memory) are sums over a
 *    tree of per-GPU values, updated along one path per dirty GPU;
 *  - a pass that provably starts nothing is not run (see may_start).
 */
struct sim {
	const struct colloc_sim_cluster *c;
	const struct colloc_sim_opts *o;
	struct job *jobs;
	size_t n_jobs;
	struct gpu *gpus;
	int n_gpus;
	struct colloc_sched_gpu *gs; /* the scheduler's view of each GPU */
	struct colloc_sched_ctx *sc; /* the scheduler core's, told of each
				      * dirty GPU as it is flushed */
	struct colloc_sched_running *rs; /* running jobs, in start order as
					  * maintained by swap-removal */
	size_t n_run, cap_run;
	/* Per entry of rs, COLLOC_SCHED_MAX_GPUS apart: the job's speed on
	 * each of its GPUs as that GPU's speeds say (gpu_speeds), HUGE_VAL on
	 * a GPU it has alone, so that a job's pace reads its own entry rather
	 * than every one of its GPUs. */
	double *rsp;
	int *dirty; /* GPUs with dirty set */
	int n_dirty;
	/* Sum tree over GPUs: node k holds, for the GPUs below it, the sums
	 * of activity clamped to 1 (tsum[TS k]), unclamped (tsum[TS k + 1]),
	 * memory in use (tsum[TS k + 2]; on a heterogeneous cluster, as a
	 * fraction of each GPU's) and, heterogeneous only, power above idle
	 * (tsum[TS k + 3]); leaf of GPU g is node leaves + g. */
	double *tsum;
	int leaves;
	struct event *heap;
	size_t n_heap, cap_heap;
	/* Queued job indices in queue order: qbuf[qh .. qh + n_queue), with
	 * room on both sides so that an insertion or removal moves the
	 * shorter side (arrivals go to the back, starts leave the front). */
	int *qbuf;
	size_t qh, qcap, n_queue;
	struct colloc_sched_job *qs; /* the window handed to the core */
	struct colloc_sched_decision *ds;
	size_t n_window; /* size of qs and ds */
	/* False only when the last pass started nothing and since then no
	 * capacity was freed and the window did not change: a pass now would
	 * start nothing either (whether a job fits only grows with free
	 * memory, fewer jobs and less predicted activity on a GPU, and a
	 * starving job only stops the pass earlier). */
	bool may_start;
	int64_t *hist_t; /* cluster activity after each instant where it changed */
	double *hist_u;
	size_t n_hist, cap_hist;
	struct est_cache cache[128];
	int n_cache;
	struct colloc_platform plat;
	const struct colloc_interference *im;
	/* GPU types: gs[g].type is GPU g's. hetero: the cluster's node list
	 * (colloc_sim_cluster_nodes), where GPUs differ. */
	struct sim_type ty[COLLOC_SIM_MAX_TYPES];
	int n_ty;
	bool hetero;
	double idle_w; /* all GPUs' idle power */
	/* The distinct sets of GPU types the jobs may use (a job's spec);
	 * masks[0] is 0, any GPU. */
	uint64_t *masks;
	size_t n_masks, cap_masks;
	/* The scheduler's configuration as this run uses it (sim_config). */
	struct colloc_sched_config cfg;
	struct colloc_sched_class classes[COLLOC_SCHED_MAX_CLASSES];
	uint64_t rng;
	int rr;
	int n_busy; /* GPUs running at least one job */
	/* accounting */
	int64_t acc_ms;
	double util_area, mem_area, energy, alloc_area;
	size_t oom, passes;
};

static bool ev_less(const struct event *a, const struct event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->type != b->type)
		return a->type < b->type;
	return a->job < b->job;
}

/* Event e into heap slot i (a completion event's job learns where). */
static void heap_put(struct sim *s, size_t i, struct event e)
{
	s->heap[i] = e;
	if (e.type == 1)
		s->jobs[e.job].hpos = (unsigned)(i + 1);
}

/* Event e into the hole at slot i, moving up past later parents. */
static void sift_up(struct sim *s, size_t i, struct event e)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_less(&e, &s->heap[p]))
			break;
		heap_put(s, i, s->heap[p]);
		i = p;
	}
	heap_put(s, i, e);
}

/* Event e into the hole at slot i, moving down past earlier children. */
static void sift_down(struct sim *s, size_t i, struct event e)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct event *best = &e;

		if (l < s->n_heap && ev_less(&s->heap[l], best))
			m = l, best = &s->heap[l];
		if (r < s->n_heap && ev_less(&s->heap[r], best))
			m = r;
		if (m == i)
			break;
		heap_put(s, i, s->heap[m]);
		i = m;
	}
	heap_put(s, i, e);
}

static int heap_push(struct sim *s, struct event e)
{
	if (s->n_heap == s->cap_heap) {
		size_t cap = s->cap_heap ? s->cap_heap * 2 : 1024;
		struct event *h = realloc(s->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		s->heap = h;
		s->cap_heap = cap;
	}
	sift_up(s, s->n_heap++, e);
	return 0;
}

/* Job j's completion event, now at time t: its event in the heap moves
 * (the one it had is out of date, whether it still runs or ran before). */
static int heap_finish(struct sim *s, int j, int64_t t)
{
	struct job *jb = &s->jobs[j];
	struct event e = {t, 1, j, jb->version};
	size_t i;

	if (jb->hpos == 0)
		return heap_push(s, e);
	i = jb->hpos - 1;
	if (ev_less(&e, &s->heap[i]))
		sift_up(s, i, e);
	else
		sift_down(s, i, e);
	return 0;
}

static struct event heap_pop(struct sim *s)
{
	struct event top = s->heap[0], last = s->heap[--s->n_heap];

	if (top.type == 1)
		s->jobs[top.job].hpos = 0;
	if (s->n_heap)
		sift_down(s, 0, last);
	return top;
}

/* The GPUs of running job j. */
static const int *gpus_of(const struct sim *s, int j)
{
	return s->rs[s->jobs[j].run_pos].gpus;
}

static void mark_gpu(struct sim *s, int g)
{
	if (!s->gpus[g].dirty) {
		s->gpus[g].dirty = true;
		s->dirty[s->n_dirty++] = g;
	}
}

/* Job j's rate or memory changed: so did every one of its GPUs' sums. */
static void mark_job(struct sim *s, int j)
{
	const int *g = gpus_of(s, j);

	for (int i = 0; i < s->jobs[j].n_gpus; i++)
		mark_gpu(s, g[i]);
}

/* Tell the scheduler context GPU g's row and the summary of its jobs,
 * taken in running-list order as colloc_sched_decide takes them from it. */
static void sched_load(struct sim *s, int g)
{
	const struct gpu *gp = &s->gpus[g];
	struct colloc_sched_load l;
	int by_pos[MAX_PER_GPU] = {0}, n = gp->n;

	memset(&l, 0, sizeof(l));
	for (int k = 0; k < n; k++) {
		int pos = s->jobs[gp->jobs[k]].run_pos, i = k;

		while (i > 0 && by_pos[i - 1] > pos) {
			by_pos[i] = by_pos[i - 1];
			i--;
		}
		by_pos[i] = pos;
	}
	for (int k = 0; k < n; k++)
		colloc_sched_load_add(&l, &s->rs[by_pos[k]]);
	/* Cannot fail: g exists and its node never changes. */
	(void)colloc_sched_ctx_set_gpu(s->sc, g, &s->gs[g], &l, NULL);
}

/* Bring the dirty GPUs' view and the sum tree up to date. Each GPU's sums
 * are taken over its jobs in order, exactly as a rebuild of every GPU
 * computes them. */
static void flush(struct sim *s)
{
	for (int d = 0; d < s->n_dirty; d++) {
		int g = s->dirty[d];
		const struct gpu *gp = &s->gpus[g];
		struct colloc_sched_gpu *v = &s->gs[g];
		double u = 0, m = 0, *t;
		uint64_t used = 0;
		int64_t busy = 0;

		for (int k = 0; k < gp->n; k++) {
			const struct job *jb = &s->jobs[gp->jobs[k]];
			uint64_t b = jb->at_peak ? jb->true_mem : jb->true_mem / 10;

			if (jb->end_est_ms > busy)
				busy = jb->end_est_ms;
			used += b;
			u += jb->act * jb->rate;
			m += (double)b;
		}
		v->mem_used_bytes = used;
		v->util = u > 1 ? 1 : u;
		/* EASY backfill reads when the GPU empties at today's rates. */
		v->busy_until_ms = busy;
		s->gpus[g].dirty = false;
		sched_load(s, g);
		t = &s->tsum[TS * ((size_t)s->leaves + (size_t)g)];
		t[0] = v->util;
		t[1] = u;
		t[2] = m;
		t[3] = 0;
		if (s->hetero) {
			const struct sim_type *ty = &s->ty[v->type];

			t[2] = m / (double)ty->mem;
			t[3] = (ty->max_w - ty->idle_w) * v->util;
		}
		for (size_t k = ((size_t)s->leaves + (size_t)g) / 2; k >= 1; k /= 2) {
			double *p = &s->tsum[TS * k], *l = &s->tsum[2 * TS * k],
			       *r = &s->tsum[2 * TS * k + TS];

			for (size_t i = 0; i < TS; i++)
				p[i] = l[i] + r[i];
		}
	}
	s->n_dirty = 0;
}

/* Relative speed of each job on GPU g, in g's job order, if g alone set
 * the pace: the interference model fitted on Gavel's measured pairs
 * (colloc/interference.h, docs/interference.md), capped so that the jobs
 * together use at most the whole GPU (sum of activity x speed <= 1). */
static void gpu_speeds(struct sim *s, int g, double *sp)
{
	struct gpu *gp = &s->gpus[g];
	struct colloc_interference_job ij[MAX_PER_GPU];
	double busy[MAX_PER_GPU];

	if (!gp->sp_ok) {
		for (int k = 0; k < gp->n; k++) {
			const struct job *jb = &s->jobs[gp->jobs[k]];

			ij[k] = jb->ij;
			busy[k] = jb->act;
		}
		colloc_interference_gpu_speeds(s->im, s->ty[s->gs[g].type].worker, ij,
					       busy, gp->n, gp->sp);
		gp->sp_ok = true;
		/* and into each job's entry, under g */
		for (int k = 0; k < gp->n; k++) {
			size_t pos = (size_t)s->jobs[gp->jobs[k]].run_pos;
			const struct colloc_sched_running *r = &s->rs[pos];

			for (int i = 0; i < r->n_gpus; i++)
				if (r->gpus[i] == g)
					s->rsp[pos * COLLOC_SCHED_MAX_GPUS + (size_t)i] =
						gp->n <= 1 ? HUGE_VAL : gp->sp[k];
		}
	}
	if (sp)
		memcpy(sp, gp->sp, sizeof(double) * (size_t)gp->n);
}

/* Job j's speed: the slowest of its GPUs sets the pace (a GPU it has
 * alone does not). here: the speeds of GPU g's jobs (gpu_speeds), k: j's
 * place on g. The speeds of every GPU of j are up to date (the changes of
 * an event bring them up to date before any job is retimed). */
static double speed_of(const struct sim *s, int j, int g, const double *here, int k)
{
	size_t pos = (size_t)s->jobs[j].run_pos;
	const struct colloc_sched_running *r = &s->rs[pos];
	const double *sp = &s->rsp[pos * COLLOC_SCHED_MAX_GPUS];
	double worst = here[k];

	for (int i = 0; i < r->n_gpus; i++)
		if (r->gpus[i] != g && sp[i] < worst)
			worst = sp[i];
	return worst;
}

/* Bring every job on GPU g up to date and re-issue its completion. */
static int retime_gpu(struct sim *s, int g, int64_t now)
{
	double here[MAX_PER_GPU];

	gpu_speeds(s, g, here);
	for (int k = 0; k < s->gpus[g].n; k++) {
		int j = s->gpus[g].jobs[k];
		struct job *jb = &s->jobs[j];
		double left, rate;

		jb->work_ms -= (double)(now - jb->last_ms) * jb->rate;
		if (jb->work_ms < 0)
			jb->work_ms = 0;
		jb->last_ms = now;
		rate = speed_of(s, j, g, here, k);
		/* A rate that stays (a pace another GPU sets) leaves the sums
		 * of j's other GPUs as they were. */
		if (rate != jb->rate)
			mark_job(s, j);
		else
			mark_gpu(s, g);
		jb->rate = rate;
		left = jb->work_ms / jb->rate;
		jb->version++;
		jb->end_est_ms = now + (int64_t)ceil(left);
		if (heap_finish(s, j, jb->end_est_ms))
			return -ENOMEM;
	}
	return 0;
}

/* The n GPUs an event changed: their speeds first (a job's pace reads
 * those of all of its GPUs, speed_of), then every job on them. */
static int retime_gpus(struct sim *s, const int *gpus, int n, int64_t now)
{
	int rc;

	for (int i = 0; i < n; i++)
		gpu_speeds(s, gpus[i], NULL);
	for (int i = 0; i < n; i++)
		if ((rc = retime_gpu(s, gpus[i], now)))
			return rc;
	return 0;
}

/* The utilization time series: one point per instant whose value differs
 * from the last one kept (the step function is the same). */
static int record(struct sim *s, int64_t now)
{
	double u;

	flush(s);
	u = s->n_gpus ? s->tsum[TS + 1] / s->n_gpus : 0;
	if (u > 1)
		u = 1;
	if (s->n_hist > 0 && s->hist_u[s->n_hist - 1] == u)
		return 0;
	if (s->n_hist == s->cap_hist) {
		size_t cap = s->cap_hist ? s->cap_hist * 2 : 4096;
		int64_t *t = realloc(s->hist_t, cap * sizeof(*t));
		double *v;

		if (!t)
			return -ENOMEM;
		s->hist_t = t;
		v = realloc(s->hist_u, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->hist_u = v;
		s->cap_hist = cap;
	}
	s->hist_t[s->n_hist] = now;
	s->hist_u[s->n_hist] = u;
	s->n_hist++;
	return 0;
}

/* Integrate activity, memory and power since the last instant; the sums
 * over GPUs are the tree's, current as of the end of that instant. */
static void account(struct sim *s, int64_t now)
{
	double dt = (double)(now - s->acc_ms), a = s->tsum[TS], m = s->tsum[TS + 2];

	if (dt <= 0)
		return;
	s->util_area += a * dt;
	s->alloc_area += (double)s->n_busy * dt;
	if (s->hetero) {
		/* each GPU's memory and power its type's */
		s->mem_area += m * dt;
		s->energy += (s->idle_w + s->tsum[TS + 3]) * dt / 1000.0;
	} else {
		s->mem_area += m / (double)s->c->gpu_mem_bytes * dt;
		s->energy += (s->c->idle_power_w * s->n_gpus +
			      (s->c->max_power_w - s->c->idle_power_w) * a) *
			     dt / 1000.0;
	}
	s->acc_ms = now;
}

static void gpu_remove(struct sim *s, int g, int j)
{
	struct gpu *gp = &s->gpus[g];

	for (int k = 0; k < gp->n; k++)
		if (gp->jobs[k] == j) {
			gp->jobs[k] = gp->jobs[--gp->n];
			gp->sp_ok = false;
			if (gp->n == 0)
				s->n_busy--;
			mark_gpu(s, g);
			return;
		}
}

/* Whether job a comes before job b in queue order (as the scheduler core
 * orders: priority, then submit time, then index). */
static bool queued_before(const struct sim *s, int a, int b)
{
	const struct job *x = &s->jobs[a], *y = &s->jobs[b];

	if (x->prio != y->prio)
		return x->prio > y->prio;
	if (x->submit_ms != y->submit_ms)
		return x->submit_ms < y->submit_ms;
	return a < b;
}

/* The queue is kept sorted, so a pass takes its first `window` jobs
 * without sorting thousands of waiting jobs every time. */
static void enqueue(struct sim *s, int j)
{
	size_t n = s->n_queue, lo = 0, hi = n;
	int *q;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (queued_before(s, s->qbuf[s->qh + mid], j))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Move the shorter side; when that side has no room left, centre
	 * the queue first (qcap > 2 x the most jobs ever queued). */
	if ((lo <= n - lo && s->qh == 0) || (lo > n - lo && s->qh + n == s->qcap)) {
		size_t h = (s->qcap - n) / 2;

		memmove(s->qbuf + h, s->qbuf + s->qh, n * sizeof(int));
		s->qh = h;
	}
	q = s->qbuf + s->qh;
	if (lo <= n - lo) {
		memmove(q - 1, q, lo * sizeof(int));
		s->qh--;
		q--;
	} else {
		memmove(q + lo + 1, q + lo, (n - lo) * sizeof(int));
	}
	q[lo] = j;
	s->n_queue++;
	s->jobs[j].state = J_QUEUED;
	if (s->o->window <= 0 || lo < (size_t)s->o->window)
		s->may_start = true; /* the window changed */
}

/* Whether a job of n GPUs that may use the types of spec fits, with need
 * and headroom bytes free on each, on some node of the cluster that runs
 * nothing. */
static bool fits_cluster(const struct sim *s, uint16_t spec, int n, uint64_t need,
			 uint64_t headroom)
{
	uint64_t m;

	if (spec == SPEC_NONE || need > UINT64_MAX - headroom)
		return false;
	m = s->masks[spec];
	for (int t = 0; t < s->n_ty; t++)
		if ((m == 0 || (m >> t & 1u)) && s->ty[t].max_node >= n &&
		    s->ty[t].mem >= need + headroom)
			return true;
	return false;
}

static int stop_job(struct sim *s, int j, int64_t now)
{
	struct job *jb = &s->jobs[j];
	int gpus[COLLOC_SCHED_MAX_GPUS];
	size_t pos = (size_t)jb->run_pos;

	memcpy(gpus, gpus_of(s, j), sizeof(int) * (size_t)jb->n_gpus);
	for (int i = 0; i < jb->n_gpus; i++)
		gpu_remove(s, gpus[i], j);
	/* Swap-removal: the running list keeps the order a rebuild from a
	 * list maintained the same way would have. */
	if (pos != --s->n_run) {
		s->rs[pos] = s->rs[s->n_run];
		memcpy(&s->rsp[pos * COLLOC_SCHED_MAX_GPUS],
		       &s->rsp[s->n_run * COLLOC_SCHED_MAX_GPUS],
		       sizeof(double) * COLLOC_SCHED_MAX_GPUS);
		s->jobs[s->rs[pos].job_id].run_pos = (int)pos;
		/* Its GPUs' predicted activity now adds in another order. */
		mark_job(s, (int)s->rs[pos].job_id);
	}
	jb->run_pos = -1;
	jb->version++; /* cancels its completion event */
	s->may_start = true; /* capacity freed */
	return retime_gpus(s, gpus, jb->n_gpus, now);
}

static int on_ramp(struct sim *s, int j, int64_t now)
{
	struct job *jb = &s->jobs[j];
	const int *gpus = gpus_of(s, j);
	bool oom = false;

	/* The job now holds its true peak: does every GPU still fit? The job
	 * allocating last is the one that fails, as in PyTorch. */
	for (int i = 0; i < jb->n_gpus; i++) {
		const struct gpu *g = &s->gpus[gpus[i]];
		uint64_t used = 0;

		for (int k = 0; k < g->n; k++) {
			const struct job *o = &s->jobs[g->jobs[k]];

			used += g->jobs[k] == j || o->at_peak ? o->true_mem
							      : o->true_mem / 10;
		}
		if (used > s->gs[gpus[i]].mem_total_bytes)
			oom = true;
	}
	if (!oom) {
		struct colloc_sched_running *r = &s->rs[jb->run_pos];

		r->mem_used_bytes = jb->true_mem;
		/* The rule collocd applies, with the ramp as its reserve time. */
		r->at_peak = colloc_sched_reserved_bytes(jb->need, r->mem_used_bytes,
							 jb->start_ms, now,
							 s->o->ramp_ms) == 0;
		jb->at_peak = true;
		mark_job(s, j);
		/* The scheduler held max(need, true / 10) for it until now. */
		if (jb->true_mem < jb->need)
			s->may_start = true;
		return 0;
	}
	s->oom++;
	jb->crashed = true;
	jb->attempts++;
	{
		int rc = stop_job(s, j, now);

		if (rc)
			return rc;
	}
	/* Recovery: the measured peak is its true memory; ask for more than
	 * both it and the old need, ahead of new work, alone after too many
	 * attempts; fail when no GPU is large enough. */
	jb->need =
		(uint64_t)((double)(jb->true_mem > jb->need ? jb->true_mem : jb->need) *
			   1.05);
	jb->prio += 1000;
	jb->work_ms = jb->full_ms; /* no checkpoint: it starts over */
	if (jb->attempts >= s->o->max_attempts)
		jb->exclusive = true;
	if (!fits_cluster(s, jb->spec, jb->n_gpus, jb->need, s->cfg.headroom_bytes) ||
	    jb->attempts > s->o->max_attempts + 1) {
		jb->state = J_FAILED;
		jb->end_ms = now;
		return 0;
	}
	enqueue(s, j);
	return 0;
}

static int on_finish(struct sim *s, int j, int64_t now)
{
	struct job *jb = &s->jobs[j];
	int rc = stop_job(s, j, now);

	jb->state = J_DONE;
	jb->end_ms = now;
	return rc;
}

/* Job j starts now on the GPUs of decision d. */
static int start_job(struct sim *s, int j, const struct colloc_sched_decision *d,
		     int64_t now)
{
	struct job *jb = &s->jobs[j];
	struct colloc_sched_running *r;
	int rc;

	if (s->n_run == s->cap_run) {
		size_t cap = s->cap_run ? s->cap_run * 2 : 1024;
		struct colloc_sched_running *n = realloc(s->rs, cap * sizeof(*n));
		double *sp;

		if (!n)
			return -ENOMEM;
		s->rs = n;
		sp = realloc(s->rsp, cap * COLLOC_SCHED_MAX_GPUS * sizeof(*sp));
		if (!sp)
			return -ENOMEM;
		s->rsp = sp;
		s->cap_run = cap;
	}
	jb->run_pos = (int)s->n_run;
	r = &s->rs[s->n_run++];
	memset(r, 0, sizeof(*r));
	r->job_id = (uint64_t)j;
	r->n_gpus = jb->n_gpus;
	memcpy(r->gpus, d->gpus, sizeof(int) * (size_t)jb->n_gpus);
	r->mem_need_bytes = jb->need;
	r->mem_used_bytes = jb->true_mem / 10;
	r->at_peak = false;
	r->util_pred = jb->act;
	r->exclusive = jb->exclusive;
	r->gpu_milli = jb->milli;
	jb->state = J_RUNNING;
	jb->at_peak = false;
	jb->start_ms = now;
	if (jb->first_start_ms < 0)
		jb->first_start_ms = now;
	jb->last_ms = now;
	jb->rate = 1;
	for (int i = 0; i < jb->n_gpus; i++) {
		struct gpu *g = &s->gpus[r->gpus[i]];

		if (g->n == MAX_PER_GPU)
			return COLLOC_ELIMIT;
		g->jobs[g->n++] = j;
		g->sp_ok = false;
		if (g->n == 1)
			s->n_busy++;
		mark_gpu(s, r->gpus[i]);
		if (g->n > 1)
			for (int q = 0; q < g->n; q++)
				s->jobs[g->jobs[q]].shared = true;
	}
	if ((rc = heap_push(s, (struct event){now + s->o->ramp_ms, 0, j, 0})))
		return rc;
	if ((rc = retime_gpus(s, s->rs[jb->run_pos].gpus, jb->n_gpus, now)))
		return rc;
	if (s->o->on_start)
		s->o->on_start(s->o->on_start_arg, now, (size_t)j,
			       s->rs[jb->run_pos].gpus, jb->n_gpus);
	return 0;
}

static int schedule(struct sim *s, int64_t now)
{
	struct colloc_diag diag = {{0}};
	size_t n_q = s->n_queue, n_dec = 0, gone;
	int rc, rr;

	if (n_q == 0)
		return 0;
	if (!s->may_start) {
		/* Provably the outcome of the last pass again: nothing. */
		s->passes++;
		return 0;
	}
	/* The scheduler looks at the first `window` jobs in queue order. */
	if (n_q > s->n_window)
		n_q = s->n_window;
	flush(s);
	for (size_t k = 0; k < n_q; k++) {
		int j = s->qbuf[s->qh + k];
		const struct job *jb = &s->jobs[j];

		s->qs[k] = (struct colloc_sched_job){
			.id = (uint64_t)j,
			.n_gpus = jb->n_gpus,
			.mem_need_bytes = jb->need,
			.util_pred = jb->act,
			.priority = jb->prio,
			.submit_ms = jb->submit_ms,
			.exclusive = jb->exclusive,
			/* Its alone time, as a user's walltime would say. */
			.walltime_ms = (int64_t)ceil(jb->work_ms),
			.gpu_milli = jb->milli,
			.type_mask = s->masks[jb->spec],
		};
	}
	rc = colloc_sched_ctx_decide(s->sc, now, s->rr, s->qs, n_q, s->ds, n_q, &n_dec,
				     &rr, &diag);
	if (rc)
		return rc;
	s->rr = rr;
	s->passes++;
	/* A pass that started something may have left room for jobs that
	 * were behind the window; one that started nothing is final until
	 * something changes. */
	s->may_start = n_dec > 0;
	for (size_t k = 0; k < n_dec; k++)
		if ((rc = start_job(s, (int)s->ds[k].job_id, &s->ds[k], now)))
			return rc;
	/* The jobs started were in the window: close the gaps they left
	 * there, keeping the order, by moving the window's rest back. */
	gone = n_q;
	for (size_t k = n_q; k-- > 0;) {
		int j = s->qbuf[s->qh + k];

		if (s->jobs[j].state == J_QUEUED)
			s->qbuf[s->qh + --gone] = j;
	}
	s->qh += gone;
	s->n_queue -= gone;
	return 0;
}

/* The memory estimate and the activity of kind at batch on platform plat:
 * the graph is loaded and inferred once for both. The predictor runs with
 * the estimator's defaults (fp32, Adam, the kind's loss) and its own
 * default host costs, no data-loader time (docs/perf-model.md). */
static int profile_kind(const struct colloc_platform *plat, int kind, int64_t batch,
			struct colloc_sim_kind *out, struct colloc_diag *diag)
{
	const struct kind *k = &kinds[kind];
	struct colloc_model *m = NULL;
	struct colloc_estimate_opts eo;
	struct colloc_estimate e;
	struct colloc_perf_opts po;
	struct colloc_perf pf;
	/* A transformer's sequence bound applies to every sequence dim its
	 * graph has (T5: encoder and decoder alike). */
	struct colloc_model_dims md = {batch, k->seq, NULL, 0, false};
	int rc;

	memset(out, 0, sizeof(*out));
	out->kind = k->name;
	out->zoo = k->zoo;
	out->batch = batch;
	out->seq = k->seq;
	if (!k->zoo) {
		out->mem_bytes = k->fixed_mem;
		out->activity = k->assumed_activity;
		out->interference_activity =
			out->activity * COLLOC_SIM_INTERFERENCE_SCALE;
		return 0;
	}
	if ((rc = colloc_model_open(k->zoo, NULL, &m, diag)))
		return rc;
	colloc_estimate_opts_init(&eo);
	eo.loss = k->loss;
	eo.platform = plat;
	rc = colloc_estimate_model(m, &md, &eo, &e, diag);
	if (!rc) {
		colloc_perf_opts_init(&po);
		po.precision = eo.precision;
		po.optimizer = eo.optimizer;
		po.loss = eo.loss;
		po.batch = batch;
		po.platform = plat;
		/* The predictor reads the per-op costs (perf.h says it does
		 * not need them; today it refuses a graph without). */
		colloc_graph_cost(m->graph, NULL);
		rc = colloc_perf_predict(m->graph, &po, &pf, diag);
	}
	colloc_model_destroy(m);
	if (rc)
		return colloc_diag_prefix(diag, rc, "estimating %s at batch %lld on %s",
					  k->zoo, (long long)batch, plat->name);
	out->mem_bytes = e.peak_device_bytes;
	out->activity = pf.sm_activity;
	out->predicted = true;
	out->gpu_util = pf.gpu_util;
	out->step_ms = pf.step_ms;
	out->interference_activity = out->activity * COLLOC_SIM_INTERFERENCE_SCALE;
	return 0;
}

/* profile_kind() through the run's cache. */
static int estimate_kind(struct sim *s, int kind, int64_t batch, uint64_t *need,
			 double *act, int *gtype, struct colloc_diag *diag)
{
	struct colloc_sim_kind info;
	const char *gname;
	int rc;

	for (int c = 0; c < s->n_cache; c++)
		if (s->cache[c].kind == kind && s->cache[c].batch == batch) {
			*need = s->cache[c].need;
			*act = s->cache[c].act;
			*gtype = s->cache[c].gtype;
			return 0;
		}
	if ((rc = profile_kind(&s->plat, kind, batch, &info, diag)))
		return rc;
	*need = info.mem_bytes;
	*act = info.activity;
	/* Gavel measured this kind at (nearly) this batch: its pairs apply. */
	gname = colloc_interference_gavel_type(kinds[kind].name, batch);
	*gtype = gname ? colloc_interference_type(s->im, gname) : -1;
	/* Only where the model has no derived activity for the type (a
	 * loaded, unfitted model has none; the builtin one has no pairs):
	 * the formula must read the job's own activity, one scale. */
	for (int t = 0; t < s->n_ty && *gtype >= 0; t++)
		if (colloc_interference_activity(s->im, s->ty[t].worker, *gtype) >= 0)
			*gtype = -1;
	if (s->n_cache < (int)(sizeof(s->cache) / sizeof(s->cache[0])))
		s->cache[s->n_cache++] =
			(struct est_cache){kind, batch, *need, *act, *gtype};
	return 0;
}

static int load_platform(const struct colloc_sim_cluster *c, struct colloc_platform *p,
			 struct colloc_diag *diag)
{
	if (!c->platform) {
		colloc_platform_default(p);
		return 0;
	}
	return colloc_platform_load(c->platform, p, diag);
}

/* The batch a job of kind runs at: the trace's where the kind has a graph
 * (graph-less kinds have a fixed memory whatever the batch). */
static int64_t batch_of(int kind, int64_t trace_batch)
{
	return trace_batch > 0 && kinds[kind].zoo ? trace_batch : kinds[kind].batch;
}

const char *colloc_sim_kind_name(int i)
{
	return i >= 0 && (size_t)i < N_KINDS ? kinds[i].name : NULL;
}

int colloc_sim_kind_info(const char *model, int64_t batch,
			 const struct colloc_sim_cluster *c, struct colloc_sim_kind *out,
			 struct colloc_diag *diag)
{
	struct colloc_platform plat;
	int kind = model ? kind_of(model) : -1, rc;

	if (kind < 0) {
		char known[512];
		size_t off = 0;

		known[0] = '\0';
		for (size_t k = 0; k < N_KINDS && off < sizeof(known); k++) {
			int w = snprintf(known + off, sizeof(known) - off, "%s%s",
					 k ? ", " : "", kinds[k].name);

			off += w > 0 ? (size_t)w : 0;
		}
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "model '%s' is not a job kind of the simulator "
				       "(kinds: %s)",
				       model ? model : "(null)", known);
	}
	if ((rc = load_platform(c, &plat, diag)))
		return rc;
	return profile_kind(&plat, kind, batch_of(kind, batch), out, diag);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)ceil(q * (double)n) - (q > 0 ? 1 : 0);
	return sorted[i < n ? i : n - 1];
}

static bool by_request(int policy)
{
	return policy == COLLOC_POLICY_REQUEST || policy == COLLOC_POLICY_FGD;
}

/*
 * The scheduler's configuration for this run: the caller's, except that
 * the policies that trust requests keep no headroom (a declaration is
 * taken as it is, as Kubernetes and Slurm take it), and fgd expects the
 * trace's own mix of requests (FGD's target workload: the classes of
 * (GPUs, share) of every job of the trace, by count; the first
 * COLLOC_SCHED_MAX_CLASSES distinct ones).
 */
static void sim_config(struct sim *s)
{
	s->cfg = s->o->sched;
	s->cfg.classes = NULL;
	s->cfg.n_classes = 0;
	if (by_request(s->cfg.policy))
		s->cfg.headroom_bytes = 0;
}

/* fgd's expected workload, once the jobs have their requests. */
static void sim_classes(struct sim *s)
{
	int n = 0;

	if (s->cfg.policy != COLLOC_POLICY_FGD)
		return;
	for (size_t j = 0; j < s->n_jobs; j++) {
		int g = s->jobs[j].n_gpus, m = s->jobs[j].milli, k = 0;

		while (k < n &&
		       (s->classes[k].n_gpus != g || s->classes[k].gpu_milli != m))
			k++;
		if (k == n) {
			if (n == COLLOC_SCHED_MAX_CLASSES)
				continue;
			s->classes[n++] = (struct colloc_sched_class){g, m, 0};
		}
		s->classes[k].count++;
	}
	s->cfg.classes = s->classes;
	s->cfg.n_classes = n;
}

/* Gavel measured K80, P100 and V100; newer GPUs use the V100 pairs (the
 * closest architecture measured; docs/simulator.md). Today it changes
 * little: the model's parameters are the same on every worker, and only
 * measured pairs (--gavel) differ by worker. */
static int worker_of(const char *type)
{
	return colloc_interference_worker(strncasecmp(type, "K80", 3) == 0    ? "k80"
					  : strncasecmp(type, "P100", 4) == 0 ? "p100"
									      : "v100");
}

/* The run's GPU types (s->ty) and its number of GPUs. */
static void sim_types(struct sim *s)
{
	const struct colloc_sim_cluster *c = s->c;

	s->hetero = c->nodes != NULL && c->n_types > 0;
	if (!s->hetero) {
		s->n_ty = 1;
		s->ty[0] = (struct sim_type){c->gpu_mem_bytes, c->idle_power_w,
					     c->max_power_w, worker_of(c->gpu_type),
					     c->gpus_per_node};
		s->n_gpus = c->n_nodes * c->gpus_per_node;
		return;
	}
	s->n_ty = c->n_types < COLLOC_SIM_MAX_TYPES ? c->n_types : COLLOC_SIM_MAX_TYPES;
	for (int t = 0; t < s->n_ty; t++) {
		const struct colloc_sim_gpu_type *ct = &c->types[t];

		s->ty[t] = (struct sim_type){
			ct->mem_bytes, ct->idle_power_w, ct->max_power_w,
			worker_of(ct->sim_type[0] ? ct->sim_type : ct->name),
			ct->max_node_gpus};
	}
	s->n_gpus = c->nodes->n_gpus < (size_t)INT32_MAX ? (int)c->nodes->n_gpus : 0;
}

/* The scheduler's row of every GPU: node by node, the node list's nodes
 * with GPUs in its order, each GPU of its node's type. */
static int sim_gpus(struct sim *s, struct colloc_diag *diag)
{
	const struct colloc_sim_cluster *c = s->c;
	int g = 0, nk = 0;

	if (!s->hetero) {
		for (g = 0; g < s->n_gpus; g++) {
			s->gs[g].node = g / c->gpus_per_node;
			s->gs[g].mem_total_bytes = c->gpu_mem_bytes;
			s->gs[g].usable = true;
		}
		return 0;
	}
	for (size_t n = 0; n < c->nodes->n; n++) {
		const struct colloc_sim_node *nd = &c->nodes->node[n];
		int t = 0;

		if (nd->n_gpus == 0)
			continue;
		while (t < s->n_ty && strcmp(c->types[t].name, nd->gpu_type) != 0)
			t++;
		if (t == s->n_ty || g + nd->n_gpus > s->n_gpus ||
		    nd->n_gpus > s->ty[t].max_node)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "node '%s' does not match the cluster's "
					       "GPU types (colloc_sim_cluster_nodes)",
					       nd->name);
		for (int i = 0; i < nd->n_gpus; i++, g++) {
			s->gs[g].node = nk;
			s->gs[g].mem_total_bytes = s->ty[t].mem;
			s->gs[g].usable = true;
			s->gs[g].type = t;
			s->idle_w += s->ty[t].idle_w;
		}
		nk++;
	}
	if (g != s->n_gpus)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "the node list has %d GPUs, its count says %d", g,
				       s->n_gpus);
	return 0;
}

/*
 * The GPU types trace job tj may use, as an index into s->masks, into
 * *spec: 0 (any GPU) on a homogeneous cluster, without a gpu_spec, or
 * where it names every type of the cluster; SPEC_NONE where it names
 * none of them (the fill mode's rule, as FGD's simulator: it never runs).
 * Returns 0, -ENOMEM, or COLLOC_ELIMIT past SPEC_NONE - 1 distinct sets.
 */
static int spec_of(struct sim *s, const struct colloc_trace_job *tj, uint16_t *spec)
{
	uint64_t m = 0, all = s->n_ty >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << s->n_ty) - 1;

	*spec = 0;
	if (!s->hetero || !tj->gpu_spec[0])
		return 0;
	for (const char *p = tj->gpu_spec; *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		for (int t = 0; t < s->n_ty; t++)
			if (strlen(s->c->types[t].name) == len &&
			    memcmp(s->c->types[t].name, p, len) == 0)
				m |= (uint64_t)1 << t;
		p += len + (bar ? 1 : 0);
	}
	if (m == 0 || m == all) {
		*spec = m == 0 ? SPEC_NONE : 0;
		return 0;
	}
	for (size_t k = 0; k < s->n_masks; k++)
		if (s->masks[k] == m) {
			*spec = (uint16_t)k;
			return 0;
		}
	if (s->n_masks >= SPEC_NONE)
		return COLLOC_ELIMIT;
	if (s->n_masks == s->cap_masks) {
		size_t cap = s->cap_masks * 2;
		uint64_t *nm = realloc(s->masks, cap * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		s->masks = nm;
		s->cap_masks = cap;
	}
	s->masks[s->n_masks] = m;
	*spec = (uint16_t)s->n_masks++;
	return 0;
}

/* The most GPUs of one node a job of spec may use, and the least memory of
 * a GPU it may use (what a declared share is of: every GPU it may be given
 * has at least that much). */
static void spec_limits(const struct sim *s, uint16_t spec, int *max_node,
			uint64_t *min_mem)
{
	uint64_t m = spec == SPEC_NONE ? 0 : s->masks[spec];

	*max_node = 0;
	*min_mem = UINT64_MAX;
	for (int t = 0; t < s->n_ty; t++)
		if (m == 0 || (m >> t & 1u)) {
			if (s->ty[t].max_node > *max_node)
				*max_node = s->ty[t].max_node;
			if (s->ty[t].mem < *min_mem)
				*min_mem = s->ty[t].mem;
		}
}

/*
 * Offered load of trace on n_gpus GPUs with its arrival times scaled by
 * scale: its GPU time (GPUs x alone run time, a job wider than a node
 * counted as it runs, on one node for proportionally longer, which is the
 * same GPU time) over the cluster's GPU time from the first arrival to the
 * last. 0 when every job arrives at once.
 */
static double offered_load(const struct colloc_trace *t, int n_gpus, double scale)
{
	double work = 0, span;

	if (t->n_jobs < 2 || n_gpus < 1)
		return 0;
	for (size_t j = 0; j < t->n_jobs; j++)
		work += (double)t->jobs[j].duration_ms * (double)t->jobs[j].n_gpus;
	span = (double)(llround((double)t->jobs[t->n_jobs - 1].submit_ms * scale) -
			llround((double)t->jobs[0].submit_ms * scale));
	return span > 0 ? work / (span * n_gpus) : 0;
}

/* One record per job of the run that just ended (colloc_sim_opts). */
static int job_records(const struct sim *s, const struct colloc_trace *trace,
		       struct colloc_sim_result *out)
{
	out->job_records = calloc(s->n_jobs + 1, sizeof(*out->job_records));
	if (!out->job_records)
		return -ENOMEM;
	for (size_t j = 0; j < s->n_jobs; j++) {
		const struct job *jb = &s->jobs[j];
		struct colloc_sim_job_record *r = &out->job_records[j];

		r->id = trace->jobs[j].id;
		r->kind = kinds[jb->kind].name;
		r->n_gpus = jb->n_gpus;
		r->gpu_milli = jb->milli;
		r->outcome = jb->state == J_DONE     ? COLLOC_SIM_DONE
			     : jb->state == J_FAILED ? COLLOC_SIM_FAILED
						     : COLLOC_SIM_LOST;
		r->shared = jb->shared;
		r->crashed = jb->crashed;
		r->submit_s = (double)jb->submit_ms / 1000.0;
		r->start_s = jb->first_start_ms >= 0 ? (double)jb->first_start_ms / 1000.0
						     : -1;
		r->end_s = jb->state == J_DONE ? (double)jb->end_ms / 1000.0 : -1;
		r->alone_s = jb->full_ms / 1000.0;
		r->need_bytes = jb->need;
		r->true_bytes = jb->true_mem;
	}
	out->n_job_records = s->n_jobs;
	return 0;
}

int colloc_sim_run(const struct colloc_trace *trace, const struct colloc_sim_cluster *c,
		   const struct colloc_sim_opts *o, struct colloc_sim_result *out,
		   struct colloc_diag *diag)
{
	struct sim s;
	struct timespec t0, t1;
	size_t next_arrival = 0, done = 0;
	double *waits = NULL, time_scale = 1.0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	out->policy = o->sched.policy;
	s.c = c;
	s.o = o;
	s.rng = o->seed;
	s.n_jobs = trace->n_jobs;
	s.im = o->interference ? o->interference : colloc_interference_builtin();
	sim_types(&s);
	if (s.n_gpus < 1)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "the cluster has no GPUs");
	if ((rc = load_platform(c, &s.plat, diag)))
		return rc;
	for (s.leaves = 1; s.leaves < s.n_gpus; s.leaves *= 2)
		;
	s.n_window = o->window > 0 && (size_t)o->window < s.n_jobs ? (size_t)o->window
								   : s.n_jobs;
	s.qcap = 2 * (s.n_jobs + 1);
	s.qh = s.n_jobs + 1;
	s.may_start = true;
	s.jobs = calloc(s.n_jobs + 1, sizeof(*s.jobs));
	s.gpus = calloc((size_t)s.n_gpus, sizeof(*s.gpus));
	s.gs = calloc((size_t)s.n_gpus, sizeof(*s.gs));
	s.dirty = calloc((size_t)s.n_gpus, sizeof(*s.dirty));
	s.tsum = calloc((size_t)s.leaves * 2 * TS, sizeof(*s.tsum));
	s.cap_masks = 16;
	s.n_masks = 1; /* masks[0]: any GPU */
	s.masks = calloc(s.cap_masks, sizeof(*s.masks));
	s.qbuf = calloc(s.qcap, sizeof(*s.qbuf));
	s.qs = calloc(s.n_window + 1, sizeof(*s.qs));
	s.ds = calloc(s.n_window + 1, sizeof(*s.ds));
	out->jct_s = calloc(s.n_jobs + 1, sizeof(double));
	waits = calloc(s.n_jobs + 1, sizeof(double));
	out->series_t_s = calloc((size_t)o->series_points + 1, sizeof(double));
	out->series_util = calloc((size_t)o->series_points + 1, sizeof(double));
	if (!s.jobs || !s.gpus || !s.gs || !s.dirty || !s.tsum || !s.qbuf || !s.qs ||
	    !s.ds || !out->jct_s || !waits || !out->series_t_s || !out->series_util ||
	    !s.masks) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = sim_gpus(&s, diag)))
		goto out;
	sim_config(&s);
	out->offered_load = offered_load(trace, s.n_gpus, 1.0);
	if (o->load > 0 && out->offered_load > 0) {
		/* Arrivals stretched or compressed so that the offered load is
		 * o->load: the trace's GPU time over the cluster's GPU time
		 * between the first and the last arrival. */
		time_scale = out->offered_load / o->load;
		out->offered_load = offered_load(trace, s.n_gpus, time_scale);
	}
	/* Identities, estimates and true memory, drawn in trace order so the
	 * same seed gives the same cluster whatever the policy. */
	for (size_t j = 0; j < s.n_jobs; j++) {
		struct job *jb = &s.jobs[j];
		const struct colloc_trace_job *tj = &trace->jobs[j];
		int kind = tj->model[0] ? kind_of(tj->model) : -1;
		int64_t batch;
		uint64_t est, min_mem;
		double e;
		int gtype, max_node;

		if (tj->n_gpus < 1 || tj->duration_ms <= 0) {
			rc = colloc_diag_set(diag, COLLOC_EUSAGE,
					     "job %llu has %s: a trace read with "
					     "keep_all_pods is for the fill mode only",
					     (unsigned long long)tj->id,
					     tj->n_gpus < 1 ? "no GPUs" : "no run time");
			goto out;
		}
		if ((rc = spec_of(&s, tj, &jb->spec))) {
			(void)colloc_diag_set(diag, rc,
					      rc == -ENOMEM
						      ? "out of memory"
						      : "more than %d distinct sets of "
							"GPU types in the trace",
					      SPEC_NONE - 1);
			goto out;
		}
		spec_limits(&s, jb->spec, &max_node, &min_mem);
		jb->submit_ms = (int64_t)llround((double)tj->submit_ms * time_scale);
		if (kind < 0)
			kind = (int)(rng_next(&s.rng) % N_MIX);
		jb->kind = (unsigned char)kind;
		batch = batch_of(kind, tj->batch);
		if ((rc = estimate_kind(&s, kind, batch, &est, &jb->act, &gtype, diag)))
			goto out;
		e = rng_normal(&s.rng) * o->est_error;
		if (e < -0.5)
			e = -0.5;
		jb->true_mem = (uint64_t)((double)est * (1.0 + e));
		jb->need = est;
		jb->milli = (uint16_t)(tj->gpu_milli > 0 && tj->gpu_milli < 1000 &&
						       tj->n_gpus == 1
					       ? tj->gpu_milli
					       : 1000);
		/* The policies that trust requests see the declared memory:
		 * the trace's, else the declared share of the GPU's (of the
		 * smallest it may be given, on a heterogeneous cluster). */
		if (by_request(s.cfg.policy))
			jb->need = tj->mem_bytes > 0 ? tj->mem_bytes
						     : min_mem / 1000 * jb->milli;
		/* Interference identity: the same activity the scheduler
		 * sees, on the model's scale (sim.h); the Gavel type only
		 * selects measured pairs (estimate_kind). */
		jb->ij.type = gtype;
		jb->ij.activity = jb->act * COLLOC_SIM_INTERFERENCE_SCALE;
		/* A job wider than a node (of the types it may use) runs on one
		 * node for proportionally longer (same GPU time). */
		if (max_node < 1)
			max_node = c->gpus_per_node;
		jb->n_gpus =
			(unsigned char)(tj->n_gpus > max_node ? max_node : tj->n_gpus);
		jb->work_ms = (double)tj->duration_ms * tj->n_gpus / jb->n_gpus;
		jb->full_ms = jb->work_ms;
		jb->prio = tj->priority;
		jb->first_start_ms = -1;
		jb->run_pos = -1;
		jb->rate = 1;
	}
	sim_classes(&s);
	/* Through a local: the analyzer loses s's other pointers when the
	 * address of one of its members escapes. */
	{
		struct colloc_sched_ctx *sc = NULL;

		rc = colloc_sched_ctx_create(&s.cfg, s.gs, s.n_gpus, &sc, diag);
		s.sc = sc;
		if (rc)
			goto out;
	}

	while (done < s.n_jobs) {
		int64_t now;

		if (next_arrival >= s.n_jobs && s.n_heap == 0) {
			/* Nothing can happen any more: jobs left queued can
			 * never start (too big for any GPU). */
			for (size_t k = 0; k < s.n_queue; k++) {
				s.jobs[s.qbuf[s.qh + k]].state = J_FAILED;
				done++;
			}
			s.n_queue = 0;
			break;
		}
		now = next_arrival < s.n_jobs ? s.jobs[next_arrival].submit_ms
					      : INT64_MAX;
		if (s.n_heap && s.heap[0].t < now)
			now = s.heap[0].t;
		account(&s, now);
		while (next_arrival < s.n_jobs && s.jobs[next_arrival].submit_ms == now) {
			struct job *jb = &s.jobs[next_arrival];

			if (!fits_cluster(&s, jb->spec, jb->n_gpus, jb->need,
					  s.cfg.headroom_bytes)) {
				/* larger than any GPU (it may use) */
				jb->state = J_FAILED;
				done++;
			} else {
				enqueue(&s, (int)next_arrival);
			}
			next_arrival++;
		}
		while (s.n_heap && s.heap[0].t == now) {
			struct event e = heap_pop(&s);
			struct job *jb = &s.jobs[e.job];

			if (jb->state != J_RUNNING)
				continue;
			if (e.type == 0 && !jb->at_peak &&
			    jb->start_ms + o->ramp_ms == now) {
				rc = on_ramp(&s, e.job, now);
				if (jb->state == J_FAILED)
					done++;
			} else if (e.type == 1 && e.version == jb->version) {
				rc = on_finish(&s, e.job, now);
				done++;
			}
			if (rc)
				goto out;
		}
		if ((rc = schedule(&s, now)) || (rc = record(&s, now)))
			goto out;
	}

	/* Metrics. */
	{
		int64_t first = s.n_jobs ? s.jobs[0].submit_ms : 0, last = first;
		size_t n = 0, nw = 0, na = 0;
		double sum = 0, sumw = 0, sum_all = 0, work = 0;
		double *all = calloc(s.n_jobs + 1, sizeof(double));

		if (!all) {
			rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
			goto out;
		}
		for (size_t j = 0; j < s.n_jobs; j++)
			if (s.jobs[j].state == J_DONE && s.jobs[j].end_ms > last)
				last = s.jobs[j].end_ms;
		for (size_t j = 0; j < s.n_jobs; j++) {
			const struct job *jb = &s.jobs[j];

			if (jb->state == J_DONE) {
				if (jb->end_ms > last)
					last = jb->end_ms;
				out->jct_s[n] =
					(double)(jb->end_ms - jb->submit_ms) / 1000.0;
				sum += out->jct_s[n++];
				waits[nw] = (double)(jb->first_start_ms - jb->submit_ms) /
					    1000.0;
				sumw += waits[nw++];
				work += s.jobs[j].full_ms * s.jobs[j].n_gpus;
				all[na] = out->jct_s[n - 1];
				sum_all += all[na++];
				out->finished++;
				if (jb->crashed)
					out->recoveries++;
			} else if (jb->state == J_FAILED) {
				/* Counted as if it ended with the run. */
				all[na] = (double)(last > jb->submit_ms
							   ? last - jb->submit_ms
							   : 0) /
					  1000.0;
				sum_all += all[na++];
				out->failed++;
			} else {
				out->jobs_lost++;
			}
			if (jb->shared)
				out->shared_jobs++;
		}
		qsort(out->jct_s, n, sizeof(double), cmp_double);
		qsort(waits, nw, sizeof(double), cmp_double);
		qsort(all, na, sizeof(double), cmp_double);
		out->mean_jct_all_s = na ? sum_all / (double)na : 0;
		out->median_jct_all_s = pct(all, na, 0.5);
		out->p99_jct_all_s = pct(all, na, 0.99);
		free(all);
		if (o->job_records && (rc = job_records(&s, trace, out))) {
			(void)colloc_diag_set(diag, rc, "out of memory");
			goto out;
		}
		out->oom_per_1k_jobs =
			s.n_jobs ? (double)s.oom * 1000.0 / (double)s.n_jobs : 0;
		out->jobs = s.n_jobs;
		out->makespan_s = (double)(last - first) / 1000.0;
		out->mean_jct_s = n ? sum / (double)n : 0;
		out->median_jct_s = pct(out->jct_s, n, 0.5);
		out->p99_jct_s = pct(out->jct_s, n, 0.99);
		out->mean_wait_s = nw ? sumw / (double)nw : 0;
		out->median_wait_s = pct(waits, nw, 0.5);
		out->p99_wait_s = pct(waits, nw, 0.99);
		if (last > first && s.n_gpus) {
			out->gpu_util = s.util_area / ((double)(last - first) * s.n_gpus);
			out->mem_util = s.mem_area / ((double)(last - first) * s.n_gpus);
			out->alloc_frac =
				s.alloc_area / ((double)(last - first) * s.n_gpus);
			out->useful_work = work / ((double)(last - first) * s.n_gpus);
		}
		out->energy_j = s.energy;
		/* Utilization over time: the step function sampled evenly. */
		if (o->series_points > 0 && s.n_hist > 0) {
			size_t h = 0;

			for (int k = 0; k <= o->series_points; k++) {
				double t = (double)first / 1000.0 +
					   out->makespan_s * k / o->series_points;

				while (h + 1 < s.n_hist &&
				       (double)s.hist_t[h + 1] / 1000.0 <= t)
					h++;
				out->series_t_s[k] = t - (double)first / 1000.0;
				out->series_util[k] = s.hist_u[h];
			}
			out->n_series = (size_t)o->series_points + 1;
		}
		out->oom_crashes = s.oom;
		out->passes = s.passes;
	}
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out->sim_wall_s = (double)(t1.tv_sec - t0.tv_sec) +
			  (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	free(s.jobs);
	free(s.gpus);
	free(s.heap);
	colloc_sched_ctx_destroy(s.sc);
	free(s.gs);
	free(s.rs);
	free(s.rsp);
	free(s.dirty);
	free(s.tsum);
	free(s.qbuf);
	free(s.qs);
	free(s.ds);
	free(s.hist_t);
	free(s.hist_u);
	free(s.masks);
	free(waits);
	if (rc)
		colloc_sim_result_fini(out);
	return rc;
}
