/*
 * shape_int.h — the interface between the shape-inference driver (shape.c)
 * and the per-op rules (shape_*.c, reached through the op table ops.c).
 * Internal to libcolloc.
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

/* The shape rules, one per family file (shape_elementwise.c, shape_data.c,
 * shape_movement.c, shape_reduce.c, shape_nn.c); ops.c maps op names to
 * them. */
int colloc__shape_argmax(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_arith(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_batchnorm(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_cast(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_compare(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_concat(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_constant(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_constant_of_shape(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_conv(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_dropout(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_einsum(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_expand(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_flatten(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_gather(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_gather_elements(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_gemm(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_grid_sample(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_global_pool(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_layernorm(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_matmul(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_nonzero(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_not(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_pad(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_pool(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_range(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_reduce(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_reshape(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_resize(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_same(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_shape(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_size(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_slice(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_softmax(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_split(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_squeeze(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_tile(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_topk(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_transpose(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_unary(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_unsqueeze(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_rnn(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_where(struct colloc__infer *c, const struct colloc_node *n);
int colloc__shape_einsum_unsupported(struct colloc__infer *c,
				     const struct colloc_node *n);

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
