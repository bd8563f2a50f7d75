/*
 * fuzz_simnodes.c — libFuzzer target for node lists (colloc/sim_fill.h,
 * colloc_sim_nodes_parse) and, on a list that parses, a fill run of a
 * fixed two-pod trace on it and the event simulator's cluster of it
 * (colloc_sim_cluster_nodes). The readers' promises on success (at least
 * one node, GPU counts within the limit, a type exactly where there are
 * GPUs, the total matching; every GPU in one of the cluster's types) are
 * asserted here; the sanitizers are the rest of the oracle.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/sim.h"
#include "colloc/sim_fill.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char pods[] =
	"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
	"creation_time,deletion_time,scheduled_time\n"
	"p-0,1000,1024,1,500,,LS,Running,0,10,0\n"
	"p-1,2000,2048,2,1000,T4,LS,Running,1,10,1\n"
	"p-2,500,512,0,0,,BE,Running,2,10,2\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct colloc_sim_nodes *n = NULL;
	struct colloc_diag diag = {{0}};
	size_t gpus = 0;

	if (colloc_sim_nodes_parse("fuzz", (const char *)data, size, &n, &diag))
		return 0;
	if (n->n == 0)
		abort();
	for (size_t i = 0; i < n->n; i++) {
		const struct colloc_sim_node *nd = &n->node[i];

		if (nd->n_gpus < 0 || nd->n_gpus > COLLOC_SIM_NODE_GPUS_MAX ||
		    (nd->n_gpus > 0) != (nd->gpu_type[0] != '\0') || !nd->name[0])
			abort();
		gpus += (size_t)nd->n_gpus;
	}
	if (gpus != n->n_gpus)
		abort();
	{
		/* static: the cluster holds a table of every GPU type */
		static struct colloc_sim_cluster c;
		size_t typed = 0;

		if (colloc_sim_cluster_nodes(n, &c, &diag) == 0) {
			for (int t = 0; t < c.n_types; t++) {
				if (c.types[t].max_node_gpus > c.gpus_per_node ||
				    c.types[t].mem_bytes == 0)
					abort();
				typed += (size_t)c.types[t].n_gpus;
			}
			if (c.n_types < 1 || typed != gpus || c.nodes != n)
				abort();
		} else if (gpus > 0 && !diag.msg[0]) {
			abort();
		}
	}
	if (gpus > 0 && n->n <= 64) {
		struct colloc_trace_opts o;
		struct colloc_trace *t = NULL;

		memset(&o, 0, sizeof(o));
		o.keep_all_pods = true;
		if (colloc_trace_parse("alibaba2023", "pods", pods, sizeof(pods) - 1, &o,
				       &t, &diag) == 0) {
			for (int rule = COLLOC_FILL_RANDOM;
			     rule <= COLLOC_FILL_BESTFIT + 1; rule++) {
				struct colloc_sim_fill_opts fo;
				struct colloc_sim_fill_result r;

				colloc_sim_fill_opts_init(&fo);
				fo.rule = rule > COLLOC_FILL_BESTFIT ? COLLOC_FILL_CORE
								     : rule;
				fo.tune_ratio = 0.5;
				if (colloc_sim_fill(t, n, &fo, &r, &diag) == 0 &&
				    r.alloc_milli > r.cluster_milli)
					abort();
			}
			colloc_trace_destroy(t);
		}
	}
	colloc_sim_nodes_destroy(n);
	return 0;
}
