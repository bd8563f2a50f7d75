/*
 * ops.c — the op table: one row per ONNX op colloc supports, read by shape
 * inference, the FLOP counter, the training rules, the event replay and the
 * step-time predictor (see ops.h for what each column means).
 *
 * Adding an op is adding a row here (kept sorted by name: lookups are a
 * binary search) and, when its shape rule is new, a function in the
 * shape_*.c file of its family. docs/ops.md is generated from this table
 * (`colloc ops --markdown`); a test fails when the two disagree.
 */
#include "model/ops.h"

#include "colloc/error.h"
#include "colloc/ops.h"

#include <stdlib.h>
#include <string.h>

#include "model/graph_int.h"

/* Sorted by name (strcmp order): colloc__op_find() bisects. */
static const struct colloc__op table[] = {
	{"Abs", "elementwise", colloc__shape_unary, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Add", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ADD, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"And", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ArgMax", "reduction", colloc__shape_argmax, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ArgMin", "reduction", colloc__shape_argmax, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Attention", "attention", colloc__shape_attention, COLLOC__COST_ATTENTION, 0,
	 COLLOC__TR_ATTENTION, COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"AveragePool", "pooling", colloc__shape_pool, COLLOC__COST_POOL, 0,
	 COLLOC__TR_POOL_AVG, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"BatchNormalization", "normalization", colloc__shape_batchnorm,
	 COLLOC__COST_PER_OUTPUT, 2, COLLOC__TR_BATCHNORM, COLLOC__VIEW_NONE,
	 COLLOC__AMP_FOLLOW, false},
	{"Cast", "elementwise", colloc__shape_cast, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"CastLike", "elementwise", colloc__shape_cast, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Ceil", "elementwise", colloc__shape_unary, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Celu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Clip", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Concat", "data movement", colloc__shape_concat, COLLOC__COST_NONE, 0,
	 COLLOC__TR_CONCAT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Constant", "shape arithmetic", colloc__shape_constant, COLLOC__COST_NONE, 0,
	 COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ConstantOfShape", "shape arithmetic", colloc__shape_constant_of_shape,
	 COLLOC__COST_NONE, 0, COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW,
	 false},
	{"Conv", "convolution", colloc__shape_conv, COLLOC__COST_CONV, 0, COLLOC__TR_CONV,
	 COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"ConvTranspose", "convolution", colloc__shape_conv, COLLOC__COST_CONV_TRANSPOSE,
	 0, COLLOC__TR_CONV, COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"Cos", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"CumSum", "data movement", colloc__shape_same, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Div", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_DIV, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Dropout", "elementwise", colloc__shape_dropout, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_DROPOUT, COLLOC__VIEW_SELECT, COLLOC__AMP_FOLLOW, false},
	{"Einsum", "matrix product", colloc__shape_einsum, COLLOC__COST_EINSUM, 0,
	 COLLOC__TR_EINSUM, COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"Elu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Equal", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Erf", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Exp", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_RESULT, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"Expand", "data movement", colloc__shape_expand, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_EXPAND, COLLOC__AMP_FOLLOW, false},
	{"Flatten", "data movement", colloc__shape_flatten, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_RESHAPE, COLLOC__AMP_FOLLOW, true},
	{"Floor", "elementwise", colloc__shape_unary, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"GRU", "recurrent", colloc__shape_rnn, COLLOC__COST_RNN, 3, COLLOC__TR_REFUSE,
	 COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"Gather", "data movement", colloc__shape_gather, COLLOC__COST_NONE, 0,
	 COLLOC__TR_GATHER, COLLOC__VIEW_SELECT, COLLOC__AMP_FOLLOW, false},
	{"GatherElements", "data movement", colloc__shape_gather_elements,
	 COLLOC__COST_NONE, 0, COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW,
	 false},
	{"Gelu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Gemm", "matrix product", colloc__shape_gemm, COLLOC__COST_GEMM, 0,
	 COLLOC__TR_GEMM, COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"GlobalAveragePool", "pooling", colloc__shape_global_pool,
	 COLLOC__COST_PER_INPUT, 0, COLLOC__TR_POOL_AVG, COLLOC__VIEW_NONE,
	 COLLOC__AMP_FOLLOW, false},
	{"GlobalMaxPool", "pooling", colloc__shape_global_pool, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_REDUCE_EXTREMUM, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Greater", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"GreaterOrEqual", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"GridSample", "resampling", colloc__shape_grid_sample, COLLOC__COST_GRID_SAMPLE,
	 0, COLLOC__TR_GRID_SAMPLE, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"HardSigmoid", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"HardSwish", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Identity", "elementwise", colloc__shape_unary, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_SELECT, COLLOC__AMP_FOLLOW, true},
	{"InstanceNormalization", "normalization", colloc__shape_same,
	 COLLOC__COST_PER_OUTPUT, 2, COLLOC__TR_INSTANCENORM, COLLOC__VIEW_NONE,
	 COLLOC__AMP_FOLLOW, false},
	{"IsInf", "elementwise", colloc__shape_not, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"IsNaN", "elementwise", colloc__shape_not, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"LSTM", "recurrent", colloc__shape_rnn, COLLOC__COST_RNN, 4, COLLOC__TR_REFUSE,
	 COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"LayerNormalization", "normalization", colloc__shape_layernorm,
	 COLLOC__COST_PER_OUTPUT, 5, COLLOC__TR_LAYERNORM, COLLOC__VIEW_NONE,
	 COLLOC__AMP_FP32, false},
	{"LeakyRelu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPLACE, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Less", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"LessOrEqual", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Log", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"LogSoftmax", "softmax", colloc__shape_softmax, COLLOC__COST_PER_OUTPUT, 3,
	 COLLOC__TR_SOFTMAX, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"MatMul", "matrix product", colloc__shape_matmul, COLLOC__COST_MATMUL, 0,
	 COLLOC__TR_MATMUL, COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"Max", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"MaxPool", "pooling", colloc__shape_pool, COLLOC__COST_POOL, 0,
	 COLLOC__TR_POOL_MAX, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Mean", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Min", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Mish", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Mod", "elementwise", colloc__shape_arith, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Mul", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_MUL, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Neg", "elementwise", colloc__shape_unary, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ADD, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"NonZero", "shape arithmetic", colloc__shape_nonzero, COLLOC__COST_NONE, 0,
	 COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Not", "elementwise", colloc__shape_not, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Or", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"PRelu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Pad", "data movement", colloc__shape_pad, COLLOC__COST_NONE, 0, COLLOC__TR_PAD,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Pow", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_POW, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"RNN", "recurrent", colloc__shape_rnn, COLLOC__COST_RNN, 1, COLLOC__TR_REFUSE,
	 COLLOC__VIEW_NONE, COLLOC__AMP_LOW, false},
	{"Range", "shape arithmetic", colloc__shape_range, COLLOC__COST_NONE, 0,
	 COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Reciprocal", "elementwise", colloc__shape_unary, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_RESULT, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"ReduceL2", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ReduceMax", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_REDUCE_EXTREMUM, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ReduceMean", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_REDUCE_MEAN, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ReduceMin", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_REDUCE_EXTREMUM, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ReduceProd", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ReduceSum", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_REDUCE_SUM, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"ReduceSumSquare", "reduction", colloc__shape_reduce, COLLOC__COST_PER_INPUT, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Relu", "elementwise", colloc__shape_unary, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPLACE, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Reshape", "data movement", colloc__shape_reshape, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_RESHAPE, COLLOC__AMP_FOLLOW, true},
	{"Resize", "resampling", colloc__shape_resize, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Round", "elementwise", colloc__shape_unary, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ScatterElements", "data movement", colloc__shape_same, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"ScatterND", "data movement", colloc__shape_same, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Selu", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Shape", "shape arithmetic", colloc__shape_shape, COLLOC__COST_NONE, 0,
	 COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Sigmoid", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_RESULT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Sign", "elementwise", colloc__shape_same, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Sin", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Size", "shape arithmetic", colloc__shape_size, COLLOC__COST_NONE, 0,
	 COLLOC__TR_HOST, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Slice", "data movement", colloc__shape_slice, COLLOC__COST_NONE, 0,
	 COLLOC__TR_SLICE, COLLOC__VIEW_SLICE, COLLOC__AMP_FOLLOW, false},
	{"Softmax", "softmax", colloc__shape_softmax, COLLOC__COST_PER_OUTPUT, 3,
	 COLLOC__TR_SOFTMAX, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"Softplus", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_INPUT, COLLOC__VIEW_NONE, COLLOC__AMP_FP32, false},
	{"Split", "data movement", colloc__shape_split, COLLOC__COST_NONE, 0,
	 COLLOC__TR_SPLIT, COLLOC__VIEW_SPLIT, COLLOC__AMP_FOLLOW, false},
	{"Sqrt", "elementwise", colloc__shape_unary, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_RESULT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Squeeze", "data movement", colloc__shape_squeeze, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_RESHAPE, COLLOC__AMP_FOLLOW, true},
	{"Sub", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ADD, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Sum", "elementwise", colloc__shape_arith, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ADD, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Tanh", "elementwise", colloc__shape_same, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_ACT_RESULT, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Tile", "data movement", colloc__shape_tile, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"TopK", "reduction", colloc__shape_topk, COLLOC__COST_NONE, 0, COLLOC__TR_COPY,
	 COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Transpose", "data movement", colloc__shape_transpose, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_TRANSPOSE, COLLOC__AMP_FOLLOW, true},
	{"Trilu", "data movement", colloc__shape_same, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Unsqueeze", "data movement", colloc__shape_unsqueeze, COLLOC__COST_NONE, 0,
	 COLLOC__TR_VIEW, COLLOC__VIEW_RESHAPE, COLLOC__AMP_FOLLOW, true},
	{"Where", "elementwise", colloc__shape_where, COLLOC__COST_PER_OUTPUT, 1,
	 COLLOC__TR_WHERE, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
	{"Xor", "elementwise", colloc__shape_compare, COLLOC__COST_NONE, 0,
	 COLLOC__TR_COPY, COLLOC__VIEW_NONE, COLLOC__AMP_FOLLOW, false},
};

#define N_OPS ((int)(sizeof(table) / sizeof(table[0])))

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct colloc__op *)elem)->name);
}

const struct colloc__op *colloc__op_find(const char *op_type)
{
	if (!op_type)
		return NULL;
	return bsearch(op_type, table, (size_t)N_OPS, sizeof(table[0]), cmp_name);
}

const struct colloc__op *colloc__node_op(const struct colloc_node *n)
{
	if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
		return NULL;
	return colloc__op_find(n->op_type);
}

const struct colloc__op *colloc__ops(int *count)
{
	*count = N_OPS;
	return table;
}

const char *colloc__train_rule_doc(int rule)
{
	switch (rule) {
	case COLLOC__TR_COPY:
		return "new tensor; saves nothing of size";
	case COLLOC__TR_HOST:
		return "shape arithmetic: computed by colloc, no GPU tensor";
	case COLLOC__TR_PAD:
		return "new tensor; folded into a following AveragePool";
	case COLLOC__TR_CONV:
		return "saves its input (weight is a parameter)";
	case COLLOC__TR_GEMM:
		return "addmm: saves its input";
	case COLLOC__TR_MATMUL:
		return "linear: saves the activation; bmm: both";
	case COLLOC__TR_EINSUM:
		return "two operands: a bmm, saves both";
	case COLLOC__TR_BATCHNORM:
		return "saves its input and per-channel save_mean, save_invstd";
	case COLLOC__TR_INSTANCENORM:
		return "batch_norm of the [1, N x C, ...] view: saves its input, "
		       "save_mean and save_invstd per sample and channel, and "
		       "the weight repeated N times when it trains";
	case COLLOC__TR_LAYERNORM:
		return "saves its input and per-row mean, rstd (float32)";
	case COLLOC__TR_ACT_INPLACE:
		return "saves its result; runs in place when the input dies here";
	case COLLOC__TR_ACT_RESULT:
		return "saves its result";
	case COLLOC__TR_SOFTMAX:
		return "saves its result (softmax_backward_data reads the output)";
	case COLLOC__TR_ACT_INPUT:
		return "saves its input";
	case COLLOC__TR_POW:
		return "saves its input, and the exponent when it is a tensor";
	case COLLOC__TR_POOL_MAX:
		return "saves its input and int64 indices";
	case COLLOC__TR_POOL_AVG:
		return "saves its input (an exported Pad folded in)";
	case COLLOC__TR_REDUCE_EXTREMUM:
		return "saves its input and its result";
	case COLLOC__TR_REDUCE_MEAN:
		return "torch < 2.0: saves its input (mean.dim keeps self); torch >= "
		       "2.0: saves nothing";
	case COLLOC__TR_REDUCE_SUM:
		return "saves nothing";
	case COLLOC__TR_DROPOUT:
		return "training: a 1-byte mask (CUDA native_dropout); otherwise a view";
	case COLLOC__TR_ADD:
		return "saves nothing (the gradient passes through)";
	case COLLOC__TR_MUL:
		return "saves each operand that the other operand's gradient needs";
	case COLLOC__TR_DIV:
		return "saves the divisor when the dividend needs a gradient; both when "
		       "the divisor does";
	case COLLOC__TR_GATHER:
		return "from a parameter: embedding, saves the indices; scalar index: a "
		       "view; otherwise index_select, saves the indices";
	case COLLOC__TR_CONCAT:
		return "new tensor; backward slices the gradient";
	case COLLOC__TR_SPLIT:
		return "views forward, one gradient buffer backward";
	case COLLOC__TR_SLICE:
		return "a view forward, a zero-filled gradient backward";
	case COLLOC__TR_VIEW:
		return "a view (reshape copies when the strides do not allow)";
	case COLLOC__TR_WHERE:
		return "saves the condition";
	case COLLOC__TR_GRID_SAMPLE:
		return "grid_sampler_2d / 3d: saves the input and the grid, both "
		       "even when only one needs a gradient (one formula for both)";
	case COLLOC__TR_ATTENTION:
		return "SDPA / flash-attention: saves q, k, v, the output and a float32 "
		       "log-sum-exp per row and head, never the probabilities";
	case COLLOC__TR_REFUSE:
		return "not modelled: `colloc estimate` refuses (cuDNN's RNN reserve "
		       "space is unmeasured)";
	default:
		return "";
	}
}

static const char *cost_doc(int cost, int per)
{
	static const char *const per_out[] = {"0",
					      "1 per output element",
					      "2 per output element",
					      "3 per output element",
					      "4 per output element",
					      "5 per output element"};

	switch (cost) {
	case COLLOC__COST_CONV:
		return "2 x output x (Cin/groups x kernel), + bias";
	case COLLOC__COST_CONV_TRANSPOSE:
		return "2 x input x (Cout/groups x kernel), + bias";
	case COLLOC__COST_MATMUL:
		return "2 x M x N x K per batch";
	case COLLOC__COST_GEMM:
		return "2 x M x N x K, + bias";
	case COLLOC__COST_EINSUM:
		return "2 x product of all label sizes";
	case COLLOC__COST_PER_OUTPUT:
		return per >= 0 && per <= 5 ? per_out[per] : "per output element";
	case COLLOC__COST_POOL:
		return "output x kernel elements";
	case COLLOC__COST_PER_INPUT:
		return "1 per input element";
	case COLLOC__COST_RNN:
		return "2 x seq x dirs x batch x (input + hidden) x gates x hidden";
	case COLLOC__COST_ATTENTION:
		return "2 x B x H x T x S x (Dqk + Dv), in the step time only";
	case COLLOC__COST_GRID_SAMPLE:
		return "2 x taps per output element: 4 bilinear, 8 trilinear, 16 "
		       "bicubic, 0 nearest";
	default:
		return "0 (data movement)";
	}
}

int colloc_op_count(void)
{
	return N_OPS;
}

int colloc_op_doc(int i, struct colloc_op_doc *out)
{
	if (i < 0 || i >= N_OPS || !out)
		return COLLOC_EUSAGE;
	out->name = table[i].name;
	out->family = table[i].family;
	out->flops = cost_doc(table[i].cost, table[i].flops_per_elem);
	out->training = colloc__train_rule_doc(table[i].train);
	out->autocast =
		table[i].amp == COLLOC__AMP_LOW	   ? "low precision"
		: table[i].amp != COLLOC__AMP_FP32 ? "follows inputs"
		/* ATen's half_to_float (colloc__amp_op) */
		: table[i].train == COLLOC__TR_SOFTMAX
			? "float32 (an fp16 input read as it is, a bf16 one converted)"
			: "float32";
	return 0;
}
