/*
 * ops.h — colloc's one table of ONNX op knowledge (internal to libcolloc).
 *
 * Every op colloc supports has one row in ops.c: its shape rule, how its
 * forward FLOPs are counted, how PyTorch trains the op it came from (what
 * autograd saves, whether the output is a view, in place or a copy), how
 * autocast treats it, and its family for docs/ops.md. Shape inference
 * (shape.c), the FLOP counter (cost.c), the training rules (train_ops.c),
 * the event replay (timeline.c) and the step-time predictor (perf.c) all
 * read this table; none of them compares op names.
 *
 * Decomposed subgraphs that were one PyTorch op (GELU, LayerNorm, SiLU,
 * hardswish ...) are not rows: they are patterns, listed in
 * colloc__patterns[] (patterns.c) with their matchers.
 *
 * The table is static and sorted by name; pointers into it are valid for
 * the life of the program.
 */
#ifndef COLLOC_MODEL_OPS_H
#define COLLOC_MODEL_OPS_H

#include <stdbool.h>

#include "model/shape_int.h"

/* How forward FLOPs are counted (docs/flops.md). */
enum colloc__cost_rule {
	COLLOC__COST_NONE = 0, /* data movement, shape arithmetic: 0 */
	COLLOC__COST_CONV, /* 2 x output x (Cin/groups x kernel) (+ bias) */
	COLLOC__COST_CONV_TRANSPOSE, /* 2 x input x (Cout/groups x kernel) */
	COLLOC__COST_MATMUL, /* 2 x M x N x K per batch */
	COLLOC__COST_GEMM, /* 2 x M x N x K (+ bias) */
	COLLOC__COST_EINSUM, /* 2 x product of all label sizes */
	COLLOC__COST_PER_OUTPUT, /* flops_per_elem x output elements */
	COLLOC__COST_POOL, /* output elements x kernel elements */
	COLLOC__COST_PER_INPUT, /* reductions: one per input element */
	COLLOC__COST_RNN, /* per step and direction: 2 x batch x (input +
			   * hidden) x gates x hidden */
	COLLOC__COST_ATTENTION, /* fused attention: 2 x B x H x T x S x
				 * (Dqk + Dv), counted by the step-time
				 * predictor from q, k, v (perf.c) */
	COLLOC__COST_GRID_SAMPLE, /* 2 x taps per output element: 2^r taps
				   * (bi/trilinear), 4^r (bicubic), 0
				   * (nearest) for r spatial dims */
};

/* What the PyTorch op behind a node does in training (train_ops.c turns
 * this into saved tensors, given the node's operands). */
enum colloc__train_rule {
	COLLOC__TR_COPY = 0, /* a new tensor; nothing of size saved */
	COLLOC__TR_HOST, /* shape arithmetic: no tensor op in PyTorch */
	COLLOC__TR_PAD, /* a copy; avg_pool2d's padding when AveragePool follows */
	COLLOC__TR_CONV, /* saves the input (weight is a parameter) */
	COLLOC__TR_GEMM, /* addmm: saves the input */
	COLLOC__TR_MATMUL, /* linear if an operand is a parameter, else bmm */
	COLLOC__TR_EINSUM, /* a bmm of both operands */
	COLLOC__TR_BATCHNORM, /* input + per-channel mean and invstd */
	COLLOC__TR_INSTANCENORM, /* batch_norm of [1, N x C, ...]: input +
				  * mean and invstd per sample and channel */
	COLLOC__TR_LAYERNORM, /* input + per-row mean and rstd */
	COLLOC__TR_ACT_INPLACE, /* relu_: saves its result, may run in place */
	COLLOC__TR_ACT_RESULT, /* backward reads the result */
	COLLOC__TR_SOFTMAX, /* backward reads the result */
	COLLOC__TR_ACT_INPUT, /* backward reads the input */
	COLLOC__TR_POW, /* input, and the exponent when it is a tensor */
	COLLOC__TR_POOL_MAX, /* input + int64 indices */
	COLLOC__TR_POOL_AVG, /* input (padding folded in) */
	COLLOC__TR_REDUCE_EXTREMUM, /* input and result */
	COLLOC__TR_REDUCE_MEAN, /* version-dependent, see train_ops.c */
	COLLOC__TR_REDUCE_SUM, /* nothing */
	COLLOC__TR_DROPOUT, /* a bool mask, or a view when not training */
	COLLOC__TR_ADD, /* nothing */
	COLLOC__TR_MUL, /* each operand the other's gradient needs */
	COLLOC__TR_DIV, /* divisor; dividend too when the divisor needs grad */
	COLLOC__TR_GATHER, /* embedding, select() view, or index_select */
	COLLOC__TR_CONCAT,
	COLLOC__TR_SPLIT, /* views forward, a new buffer backward */
	COLLOC__TR_SLICE,
	COLLOC__TR_VIEW, /* reshape family, transpose, expand */
	COLLOC__TR_WHERE, /* saves the condition */
	COLLOC__TR_GRID_SAMPLE, /* grid_sampler_2d/3d: saves input and grid */
	COLLOC__TR_ATTENTION, /* fused SDPA / flash: q, k, v, output and a
			       * float32 log-sum-exp per row and head */
	COLLOC__TR_REFUSE, /* training memory not modelled: estimate refuses */
	COLLOC__TR_COUNT_
};

/* How a view's strides follow from its input's (timeline.c). */
enum colloc__view_rule {
	COLLOC__VIEW_NONE = 0,
	COLLOC__VIEW_RESHAPE, /* a view when the strides allow, else a copy */
	COLLOC__VIEW_TRANSPOSE, /* strides permuted by perm */
	COLLOC__VIEW_EXPAND, /* broadcast dims get stride 0 */
	COLLOC__VIEW_SELECT, /* same strides, Gather's axis dropped */
	COLLOC__VIEW_SPLIT, /* every output shares the input's strides */
	COLLOC__VIEW_SLICE, /* the input's strides */
};

/* torch.autocast's treatment (CUDA, PyTorch 2.x). */
enum colloc__amp_rule {
	COLLOC__AMP_FOLLOW = 0, /* widest precision of its tensor inputs */
	COLLOC__AMP_LOW, /* runs in the autocast dtype */
	COLLOC__AMP_FP32, /* runs in float32 */
};

struct colloc__op {
	const char *name; /* ONNX op_type, default domain */
	const char *family; /* for docs: "elementwise", "convolution" ... */
	colloc__shape_fn shape;
	unsigned char cost; /* enum colloc__cost_rule */
	unsigned char flops_per_elem; /* for COST_PER_OUTPUT */
	unsigned char train; /* enum colloc__train_rule */
	unsigned char view; /* enum colloc__view_rule */
	unsigned char amp; /* enum colloc__amp_rule */
	/* Backward hands grad_output through as a view (reshapes, identity:
	 * no gradient buffer of their own). */
	bool grad_view;
};

/*
 * ONNX Attention (opset 23) with 4-D operands, as colloc's Hugging Face
 * builder writes scaled_dot_product_attention and flash-attention:
 * Q [B, Hq, T, Dqk], K [B, Hkv, S, Dqk], V [B, Hkv, S, Dv] with Hq a
 * multiple of Hkv (grouped-query attention) -> Y [B, Hq, T, Dv] in Q's
 * dtype. Optional inputs (mask, past key/value) and the outputs past Y
 * are refused: nothing here writes them. (shape_nn.c)
 */
int colloc__shape_attention(struct colloc__infer *c, const struct colloc_node *n);

/* The row of op_type in the default domain, or NULL if colloc has none. */
const struct colloc__op *colloc__op_find(const char *op_type);

/* The row of a node (NULL for other domains or unknown ops). */
const struct colloc__op *colloc__node_op(const struct colloc_node *n);

/* All rows, sorted by name; *count gets their number. */
const struct colloc__op *colloc__ops(int *count);

/* One line on what a training rule saves, for docs/ops.md. */
const char *colloc__train_rule_doc(int rule);

#endif
