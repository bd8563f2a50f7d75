/*
 * sim_int.h — what cmd_sim.c hands cmd_sim_fill.c. Not part of the API.
 */
#ifndef COLLOC_CLI_SIM_INT_H
#define COLLOC_CLI_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "colloc/sim_fill.h"
#include "colloc/trace.h"

/* Seeds one `colloc sim --seeds A-B` may run. */
#define CLI_SIM_MAX_SEEDS 64
/* Placement rules one run may compare. */
#define CLI_SIM_MAX_RULES 16

struct cli_sim_fill_args {
	const struct colloc_trace *trace; /* read with keep_all_pods */
	const struct colloc_sim_nodes *nodes;
	const char *trace_name, *cluster_name; /* for the output */
	int rules[CLI_SIM_MAX_RULES], policies[CLI_SIM_MAX_RULES];
	int n_policies;
	uint64_t seed_lo, seed_hi; /* hi - lo < CLI_SIM_MAX_SEEDS */
	struct colloc_sim_fill_opts opts; /* rule, policy, seed set per run */
	bool json;
};

/* Run and print; returns a CLI_* status. */
int cli_sim_fill(const struct cli_sim_fill_args *a);

#endif
