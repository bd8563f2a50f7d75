/*
 * colloc/cost.h — per-node forward costs of an inferred graph.
 *
 * FLOPs follow docs/flops.md (a multiply-add counts 2; elementwise ops 1 per
 * output element; data movement 0). Bytes read are the sizes of all inputs,
 * weights included; bytes written are the sizes of all outputs. Requires
 * colloc_graph_infer() to have succeeded; nodes whose shapes are unknown
 * cost 0.
 */
#ifndef COLLOC_COST_H
#define COLLOC_COST_H

#include <stdint.h>

#include "colloc/graph.h"

struct colloc_cost_totals {
	uint64_t flops;
	uint64_t bytes_read;
	uint64_t bytes_written;
};

/* Fill every node's flops, bytes and params fields and return the totals
 * in *out (may be NULL). Sums saturate at UINT64_MAX. */
void colloc_graph_cost(struct colloc_graph *g, struct colloc_cost_totals *out);

#endif
