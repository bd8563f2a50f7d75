/*
 * colloc/sim_fill.h — heterogeneous node lists and the fill mode of
 * `colloc sim` (`--fill`).
 *
 * A node list is a cluster as the Alibaba "openb" trace describes it
 * (cluster-trace-gpu-v2023, openb_node_list_*.csv): nodes of different GPU
 * counts and types, each with its CPU and main memory.
 *
 * The fill mode replays the experiment of Weng et al., "Beware of
 * Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
 * Gradient Descent" (USENIX ATC '23), as its released simulator runs it:
 * the pods of a trace, shuffled with the seed and topped up by sampling
 * the trace until their GPU requests reach a multiple (default 1.3) of the
 * cluster's GPUs, arrive one by one and never leave; each is placed at
 * once or fails for good. After each pod the allocated share of all GPUs
 * is recorded against the GPU request that has arrived so far, both as a
 * percentage of the cluster's GPUs; docs/simulator.md gives every rule.
 * Nothing runs: requests, not run times, are what it reads.
 *
 * Placement is by one of the FGD paper's baselines, which score nodes by
 * their CPU and GPU (colloc's scheduler core knows no CPU):
 *   random   a node drawn uniformly among those that fit, a GPU drawn
 *            among those of the node that fit
 *   bestfit  the node that fits with the least weighted CPU and GPU left
 * or by a policy of colloc's scheduler core (colloc/sched.h), which is
 * handed, for each pod, the GPUs of the nodes whose CPU, memory and GPU
 * type fit it.
 *
 * Ownership: colloc_sim_nodes_read() returns a list the caller frees with
 * colloc_sim_nodes_destroy(). colloc_sim_fill() fills a caller-owned
 * result with no pointers in it.
 */
#ifndef COLLOC_SIM_FILL_H
#define COLLOC_SIM_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/trace.h"

#define COLLOC_SIM_NODE_NAME_MAX 32
#define COLLOC_SIM_GPU_TYPE_MAX 32
/* GPUs on one node of a node list. */
#define COLLOC_SIM_NODE_GPUS_MAX 16
/* Nodes in one list. */
#define COLLOC_SIM_NODES_MAX 1000000

struct colloc_sim_node {
	char name[COLLOC_SIM_NODE_NAME_MAX]; /* "openb-node-0227" */
	int64_t cpu_milli; /* thousandths of a core */
	uint64_t mem_bytes; /* main memory */
	int n_gpus; /* 0: a CPU-only node */
	char gpu_type[COLLOC_SIM_GPU_TYPE_MAX]; /* "T4", "G2"; "" CPU-only */
};

struct colloc_sim_nodes {
	size_t n;
	struct colloc_sim_node *node; /* in file order */
	size_t n_gpus; /* over all nodes */
};

/*
 * Read a node list: CSV with the header sn,cpu_milli,memory_mib,gpu,model
 * (any order; other columns are an error), one node a row. Returns 0 and
 * *out, or a negative code with "PATH:LINE: column 'gpu': ..." in diag:
 * COLLOC_EFORMAT a bad row or header, a list with no nodes; COLLOC_ELIMIT a
 * file over 64 MiB, a line over 4096 bytes, more than
 * COLLOC_SIM_NODES_MAX nodes; -errno the file cannot be read.
 */
int colloc_sim_nodes_read(const char *path, struct colloc_sim_nodes **out,
			  struct colloc_diag *diag);

/* The same from a buffer (tests, fuzzing); name is used in messages. */
int colloc_sim_nodes_parse(const char *name, const char *buf, size_t len,
			   struct colloc_sim_nodes **out, struct colloc_diag *diag);

/* Free a node list; NULL is a no-op. */
void colloc_sim_nodes_destroy(struct colloc_sim_nodes *nodes);

/* How a fill run places pods. */
enum colloc_fill_rule {
	COLLOC_FILL_CORE = 0, /* the scheduler core's colloc_sim_fill_opts.policy */
	COLLOC_FILL_RANDOM, /* FGD's Random baseline */
	COLLOC_FILL_BESTFIT, /* FGD's BestFit baseline */
};

/* "random", "bestfit", or a policy name of colloc_policy_parse(): the rule
 * into *rule and, for the core, the policy into *policy. Returns 0, or -1
 * for an unknown name. */
int colloc_sim_fill_parse(const char *name, int *rule, int *policy);

/* The name of a rule and policy as colloc_sim_fill_parse() reads it. */
const char *colloc_sim_fill_name(int rule, int policy);

struct colloc_sim_fill_opts {
	int rule; /* enum colloc_fill_rule */
	int policy; /* enum colloc_policy, for COLLOC_FILL_CORE */
	uint64_t seed; /* shuffle, sampling and random choices */
	/* GPU request to reach, as a multiple of the cluster's GPUs (the
	 * upstream experiments' "tune", 1.3); pods are sampled from the trace
	 * to reach it, or removed at random above it. */
	double tune_ratio;
	bool shuffle; /* arrival in random order (upstream: yes) */
};

void colloc_sim_fill_opts_init(struct colloc_sim_fill_opts *o);

/* Arrived GPU request levels reported: 0 .. 300 % of the cluster. */
#define COLLOC_SIM_FILL_LEVELS 301

struct colloc_sim_fill_result {
	int rule, policy;
	size_t pods; /* arrived: the trace's after shuffling and tuning */
	size_t gpu_pods; /* of them, asking for at least one GPU */
	size_t placed; /* all pods placed */
	size_t failed_gpu_pods; /* GPU pods that found no place */
	uint64_t cluster_milli; /* the cluster's GPUs x 1000 */
	uint64_t arrived_milli; /* GPU request of all pods arrived */
	uint64_t alloc_milli; /* GPU share allocated at the end */
	uint64_t held_milli; /* GPU share held by placed pods at the end:
			      * whole GPUs for exclusive (by definition),
			      * else alloc_milli */
	/* alloc_pct[k]: GPU share allocated, % of the cluster, when the
	 * arrived GPU request is k % of the cluster (the upstream analysis:
	 * the mean over the pods arriving while the request rounds to k, or
	 * to k - 1 .. k + 1 where none does); NaN past the run. */
	double alloc_pct[COLLOC_SIM_FILL_LEVELS];
	int n_levels; /* levels filled: 0 .. n_levels - 1 */
	double frag_pct; /* idle GPU share on partly used GPUs at the end, %
			  * of the cluster */
	double wall_s;
};

/*
 * Fill nodes with the pods of trace (read with keep_all_pods, so that
 * CPU-only pods take their CPU) under o. Pods that ask for a GPU type no
 * node has, or more GPUs than any node has, simply fail, as upstream.
 * Returns 0, or a negative code with a message (COLLOC_EUSAGE: no GPUs in
 * the list, bad options; -ENOMEM).
 */
int colloc_sim_fill(const struct colloc_trace *trace,
		    const struct colloc_sim_nodes *nodes,
		    const struct colloc_sim_fill_opts *o,
		    struct colloc_sim_fill_result *out, struct colloc_diag *diag);

#endif
