/*
 * shape_int.h — the interface between the shape-inference driver (shape.c)
 * and the per-op rules (shape_ops.c). Internal to libcolloc.
 */
#ifndef COLLOC_SHAPE_INT_H
#define COLLOC_SHAPE_INT_H

#include "colloc/shape.h"
#include "model/graph_int.h"

/* Largest tensor whose contents inference computes (shape arithmetic only
 * ever needs a handful of elements; masks and data are never folded). */
#define COLLOC__FOLD_MAX 4096

struct colloc__infer {
	struct colloc_graph *g;
	struct colloc__arena *scratch;
	struct colloc_diag *diag;
	int node; /* index of the node being inferred */
	char where[256]; /* "node 17 (/x/Conv, Conv)" */
};

/* Infer the outputs of node c->node. Returns 0 or a negative code with a
 * message (without the node prefix, which the driver adds). */
typedef int (*colloc__shape_fn)(struct colloc__infer *c, const struct colloc_node *n);

/* Rule for op_type in the default domain, or NULL if colloc lacks one. */
colloc__shape_fn colloc__shape_rule(const char *op_type);

/*
 * Parse an Einsum equation for n_in operands of the given ranks: labels[i]
 * gets each operand's per-dim label (a letter, or 1 + slot for dims under
 * "..."), out_labels the output's. Returns 0 or -1 for a malformed
 * equation. Shared with cost.c (FLOPs).
 */
int colloc__einsum_parse(const char *eq, int n_in, const int *ranks,
			 int (*labels)[COLLOC_MAX_RANK], int *out_labels, int *out_rank,
			 int *ell_rank);

#endif
