/*
 * test_train_rules.c — the training rules of the op table and the fused
 * patterns, each on a hand-built graph whose saved-for-backward bytes are
 * worked out by hand from PyTorch's derivative formulas
 * (tools/autograd/derivatives.yaml):
 *   - a decomposed fused op (hardswish before opset 14, mish) saves what
 *     the fused op saves: the same bytes as the single ONNX op;
 *   - mul saves an operand when the OTHER operand requires grad, whatever
 *     the file holds (a trainable weight with inline values is still a
 *     variable; a tensor computed from a non-grad input is not);
 *   - mean.dim keeps its input for backward in torch 1.x, not in 2.x;
 *   - LSTM/GRU: shapes and FLOPs, and a training estimate that refuses;
 *   - GridSample saves input and grid; InstanceNormalization is a
 *     batch_norm over N x C channels;
 *   - `colloc ops` documentation covers every op and pattern.
 * Every graph: x[8,64] -> Gemm(W) -> h -> (the op under test) -> y, MSE
 * loss (which saves nothing that saved_activation_bytes counts), so the
 * bytes saved are the op's own: one [8,64] float tensor is 2048 bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "colloc/cost.h"
#include "colloc/estimate.h"
#include "colloc/onnx.h"
#include "colloc/ops.h"
#include "colloc/platform.h"
#include "colloc/shape.h"
#include "onnx_builder.h"

#define ACT 2048 /* one [8, 64] float32 tensor */

/* Pack m (destroying it), load and infer the graph under bo. */
static struct colloc_graph *load_inferred(struct ob_model *m,
					  const struct colloc_bind_opts *bo)
{
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	if (colloc_onnx_load_buffer(buf, len, NULL, &g, &diag))
		fail_msg("load: %s", diag.msg);
	free(buf);
	if (colloc_graph_infer(g, bo, &diag))
		fail_msg("infer: %s", diag.msg);
	return g;
}

/* Adds the nodes from h to y. */
typedef void (*body_fn)(struct ob_model *m, Onnx__GraphProto *gp);

static uint64_t saved_bytes(int64_t opset, body_fn body, const char *torch)
{
	struct ob_model *m = ob_model_create(opset);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g;
	struct colloc_bind_opts bo = {8, NULL, 0};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_platform plat;
	Onnx__TensorProto *t;
	Onnx__NodeProto *nd;

	ob_input(m, gp, "x", 1, "batch,64");
	ob_input(m, gp, "pos", 1, "batch,64");
	t = ob_tensor(m, "fc.weight", 1, "64,64");
	ob_tensor_external(m, t, "weights");
	ob_init(m, gp, t);
	nd = ob_node(m, gp, "Gemm", "fc", "x,fc.weight", "h");
	ob_attr_int(m, nd, "transB", 1);
	body(m, gp);
	ob_output(m, gp, "y", 1, "batch,64");
	g = load_inferred(m, &bo);
	colloc_platform_default(&plat);
	snprintf(plat.torch, sizeof(plat.torch), "%s", torch);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_MSE;
	o.optimizer = COLLOC_OPT_SGD;
	o.platform = &plat;
	if (colloc_estimate_run(g, &o, &e, &diag))
		fail_msg("estimate: %s", diag.msg);
	colloc_graph_destroy(g);
	return e.saved_activation_bytes;
}

static void b_hardswish_op(struct ob_model *m, Onnx__GraphProto *gp)
{
	ob_node(m, gp, "HardSwish", NULL, "h", "y");
}

static void b_hardswish_13(struct ob_model *m, Onnx__GraphProto *gp)
{
	Onnx__NodeProto *hs = ob_node(m, gp, "HardSigmoid", NULL, "h", "g");

	ob_attr_float(m, hs, "alpha", 1.0f / 6);
	ob_attr_float(m, hs, "beta", 0.5f);
	ob_node(m, gp, "Mul", NULL, "h,g", "y");
}

/* x * hardsigmoid(x) with torch's default HardSigmoid (alpha 0.2) is not
 * F.hardswish: two ops, saving h (both) and g (for h's grad). */
static void b_gate_other(struct ob_model *m, Onnx__GraphProto *gp)
{
	Onnx__NodeProto *hs = ob_node(m, gp, "HardSigmoid", NULL, "h", "g");

	ob_attr_float(m, hs, "alpha", 0.2f);
	ob_node(m, gp, "Mul", NULL, "h,g", "y");
}

static void b_mish_op(struct ob_model *m, Onnx__GraphProto *gp)
{
	ob_node(m, gp, "Mish", NULL, "h", "y");
}

static void b_mish_parts(struct ob_model *m, Onnx__GraphProto *gp)
{
	ob_node(m, gp, "Softplus", NULL, "h", "sp");
	ob_node(m, gp, "Tanh", NULL, "sp", "th");
	ob_node(m, gp, "Mul", NULL, "h,th", "y");
}

static void test_fused_patterns(void **state)
{
	(void)state;
	assert_int_equal(saved_bytes(14, b_hardswish_op, "2.6"), ACT);
	assert_int_equal(saved_bytes(13, b_hardswish_13, "2.6"), ACT);
	assert_int_equal(saved_bytes(13, b_gate_other, "2.6"), 2 * ACT);
	assert_int_equal(saved_bytes(18, b_mish_op, "2.6"), ACT);
	assert_int_equal(saved_bytes(14, b_mish_parts, "2.6"), ACT);
}

/* Layer scale (ConvNeXt): y = gamma * h, gamma trainable. h is saved for
 * gamma's gradient, whether or not the file holds gamma's values. */
static void b_scale_external(struct ob_model *m, Onnx__GraphProto *gp)
{
	Onnx__TensorProto *t = ob_tensor(m, "gamma", 1, "64");

	ob_tensor_external(m, t, "weights");
	ob_init(m, gp, t);
	ob_node(m, gp, "Mul", NULL, "gamma,h", "y");
}

static void b_scale_inline(struct ob_model *m, Onnx__GraphProto *gp)
{
	float v[64];

	for (int k = 0; k < 64; k++)
		v[k] = 1e-6f;
	ob_init_f32(m, gp, "gamma", "64", 64, v);
	ob_node(m, gp, "Mul", NULL, "gamma,h", "y");
}

/* Rotary-style h * cos(pos), pos an input: cos(pos) needs no grad, so mul
 * keeps cos(pos) (for h's gradient) and not h; cos records nothing. */
static void b_rotary(struct ob_model *m, Onnx__GraphProto *gp)
{
	ob_node(m, gp, "Cos", NULL, "pos", "c");
	ob_node(m, gp, "Mul", NULL, "h,c", "y");
}

/* Both operands need grad: h * h saves h once (one storage). */
static void b_square(struct ob_model *m, Onnx__GraphProto *gp)
{
	ob_node(m, gp, "Mul", NULL, "h,h", "y");
}

static void test_mul_by_requires_grad(void **state)
{
	(void)state;
	assert_int_equal(saved_bytes(14, b_scale_external, "2.6"), ACT);
	assert_int_equal(saved_bytes(14, b_scale_inline, "2.6"), ACT);
	assert_int_equal(saved_bytes(14, b_rotary, "2.6"), ACT);
	assert_int_equal(saved_bytes(14, b_square, "2.6"), ACT);
}

/* h - mean(h, -1): torch 1.13's mean.dim keeps h; 2.x keeps its numel. */
static void b_mean(struct ob_model *m, Onnx__GraphProto *gp)
{
	static const int64_t axes[] = {-1};
	Onnx__NodeProto *rm = ob_node(m, gp, "ReduceMean", NULL, "h", "mu");

	ob_attr_ints(m, rm, "axes", 1, axes);
	ob_node(m, gp, "Sub", NULL, "h,mu", "y");
}

static void test_version_rules(void **state)
{
	(void)state;
	assert_int_equal(saved_bytes(14, b_mean, "1.13.0"), ACT);
	assert_int_equal(saved_bytes(14, b_mean, "2.6"), 0);
}

/* LSTM and GRU: shapes and FLOPs by the ONNX spec, and an estimate that
 * refuses with the reason instead of guessing cuDNN's reserve space. */
static void test_rnn(void **state)
{
	static const char *const ops[] = {"LSTM", "GRU"};

	(void)state;
	for (int k = 0; k < 2; k++) {
		int gates = k == 0 ? 4 : 3;
		struct ob_model *m = ob_model_create(14);
		Onnx__GraphProto *gp = ob_model_graph(m);
		struct colloc_diag diag = {{0}};
		struct colloc_graph *g;
		/* time-major X: the batch is dim 1, bound by name */
		struct colloc_binding bb = {"batch", 4};
		struct colloc_bind_opts bo = {0, &bb, 1};
		struct colloc_estimate_opts o;
		struct colloc_estimate e;
		Onnx__TensorProto *t;
		Onnx__NodeProto *nd;
		char dims[32];
		const struct colloc_tensor *y;

		ob_input(m, gp, "x", 1, "16,batch,32");
		snprintf(dims, sizeof(dims), "2,%d,32", gates * 64);
		t = ob_tensor(m, "w", 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		snprintf(dims, sizeof(dims), "2,%d,64", gates * 64);
		t = ob_tensor(m, "r", 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		nd = ob_node(m, gp, ops[k], NULL, "x,w,r", "y,yh");
		ob_attr_int(m, nd, "hidden_size", 64);
		ob_attr_string(m, nd, "direction", "bidirectional");
		ob_output(m, gp, "y", 1, "16,2,batch,64");
		g = load_inferred(m, &bo);
		colloc_graph_cost(g, NULL);
		y = &g->tensors[g->nodes[0].outputs[0]];
		assert_int_equal(y->rank, 4);
		assert_int_equal(y->shape[0], 16);
		assert_int_equal(y->shape[1], 2);
		assert_int_equal(y->shape[2], 4);
		assert_int_equal(y->shape[3], 64);
		assert_int_equal(g->tensors[g->nodes[0].outputs[1]].shape[0], 2);
		/* 2 x (seq x batch) x (dirs x gates x hidden) x (input + hidden) */
		assert_int_equal(g->nodes[0].flops,
				 2ull * 16 * 4 * (2ull * gates * 64) * (32 + 64));
		colloc_estimate_opts_init(&o);
		assert_int_equal(colloc_estimate_run(g, &o, &e, &diag),
				 COLLOC_EUNSUPPORTED);
		assert_non_null(strstr(diag.msg, "does not model the training memory"));
		colloc_graph_destroy(g);
	}
}

/* An eval export that merged two BatchNorms' equal weights into one
 * initializer is refused (PyTorch never ties BatchNorm parameters); the
 * same graph with a weight per BatchNorm is estimated. */
static int merged_bn_rc(bool merged)
{
	struct ob_model *m = ob_model_create(14);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g;
	struct colloc_bind_opts bo = {2, NULL, 0};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	static const float one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0};
	int rc;

	ob_input(m, gp, "x", 1, "batch,4,8,8");
	ob_init_f32(m, gp, "bn1.weight", "4", 4, one);
	ob_init_f32(m, gp, "bn1.bias", "4", 4, zero);
	ob_init_f32(m, gp, "bn2.weight", "4", 4, one);
	ob_init_f32(m, gp, "bn2.bias", "4", 4, zero);
	ob_init_f32(m, gp, "bn1.running_mean", "4", 4, zero);
	ob_init_f32(m, gp, "bn1.running_var", "4", 4, one);
	ob_node(m, gp, "BatchNormalization", NULL,
		"x,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var", "h");
	ob_node(m, gp, "BatchNormalization", NULL,
		merged ? "h,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var"
		       : "h,bn2.weight,bn2.bias,bn1.running_mean,bn1.running_var",
		"y");
	ob_output(m, gp, "y", 1, "batch,4,8,8");
	g = load_inferred(m, &bo);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_MSE;
	rc = colloc_estimate_run(g, &o, &e, &diag);
	if (merged)
		assert_non_null(strstr(diag.msg, "merged equal-valued initializers"));
	colloc_graph_destroy(g);
	return rc;
}

static void test_merged_batchnorm(void **state)
{
	(void)state;
	assert_int_equal(merged_bn_rc(false), 0);
	assert_int_equal(merged_bn_rc(true), COLLOC_EUNSUPPORTED);
}

/*
 * x [2, 4, 8, 8] (an input) -> Conv(w, 1x1) -> h -> (the op under test)
 * -> y; the graph input x is never counted, so the bytes are the op's.
 * grid_gen: grid [2, 6, 5, 2] = Tanh(g_in), a fresh tensor that needs no
 * gradient. norm: an InstanceNormalization with a trainable scale
 * (affine=True) or exporter constants (affine=False).
 */
enum conv_body { BODY_GRID_SAMPLE, BODY_INSTANCE_NORM, BODY_INSTANCE_NORM_AFFINE };

static uint64_t conv_saved(enum conv_body body, const char *mode)
{
	struct ob_model *m = ob_model_create(16);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g;
	struct colloc_bind_opts bo = {2, NULL, 0};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	static const float one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0};
	Onnx__TensorProto *t;
	Onnx__NodeProto *nd;

	ob_input(m, gp, "x", 1, "batch,4,8,8");
	t = ob_tensor(m, "conv.weight", 1, "4,4,1,1");
	ob_tensor_external(m, t, "weights");
	ob_init(m, gp, t);
	ob_node(m, gp, "Conv", NULL, "x,conv.weight", "h");
	if (body == BODY_GRID_SAMPLE) {
		ob_input(m, gp, "g_in", 1, "batch,6,5,2");
		ob_node(m, gp, "Tanh", NULL, "g_in", "grid");
		nd = ob_node(m, gp, "GridSample", NULL, "h,grid", "y");
		ob_attr_string(m, nd, "mode", mode);
		ob_attr_int(m, nd, "align_corners", 1);
		ob_output(m, gp, "y", 1, "batch,4,6,5");
	} else {
		ob_init_f32(m, gp,
			    body == BODY_INSTANCE_NORM_AFFINE ? "in.weight" : "onnx::s",
			    "4", 4, one);
		ob_init_f32(m, gp,
			    body == BODY_INSTANCE_NORM_AFFINE ? "in.bias" : "onnx::b",
			    "4", 4, zero);
		ob_node(m, gp, "InstanceNormalization", NULL,
			body == BODY_INSTANCE_NORM_AFFINE ? "h,in.weight,in.bias"
							  : "h,onnx::s,onnx::b",
			"y");
		ob_output(m, gp, "y", 1, "batch,4,8,8");
	}
	g = load_inferred(m, &bo);
	if (body == BODY_GRID_SAMPLE) {
		const struct colloc_tensor *y = &g->tensors[g->nodes[2].outputs[0]];

		assert_int_equal(y->rank, 4);
		assert_int_equal(y->shape[1], 4);
		assert_int_equal(y->shape[2], 6);
		assert_int_equal(y->shape[3], 5);
	}
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_MSE;
	o.optimizer = COLLOC_OPT_SGD;
	if (colloc_estimate_run(g, &o, &e, &diag))
		fail_msg("estimate: %s", diag.msg);
	colloc_graph_destroy(g);
	return e.saved_activation_bytes;
}

/* grid_sampler_2d saves input and grid (one formula for both), also when
 * the grid needs no gradient: h is 2 x 4 x 8 x 8 floats (2048 bytes), the
 * grid 2 x 6 x 5 x 2 (480), whatever the mode. instance_norm is
 * batch_norm on [1, 8, 8, 8]: h, and save_mean and save_invstd of
 * N x C = 8 floats (32 bytes each), plus the weight repeated N times when
 * it is a parameter (affine=True). */
static void test_grid_sample_instance_norm(void **state)
{
	(void)state;
	assert_int_equal(conv_saved(BODY_GRID_SAMPLE, "bilinear"), 2048 + 480);
	assert_int_equal(conv_saved(BODY_GRID_SAMPLE, "nearest"), 2048 + 480);
	assert_int_equal(conv_saved(BODY_INSTANCE_NORM, NULL), 2048 + 2 * 32);
	assert_int_equal(conv_saved(BODY_INSTANCE_NORM_AFFINE, NULL), 2048 + 3 * 32);
}

static void test_docs(void **state)
{
	struct colloc_op_doc d;
	struct colloc_pattern_doc p;
	const char *prev = "";

	(void)state;
	assert_true(colloc_op_count() > 90);
	for (int i = 0; i < colloc_op_count(); i++) {
		assert_int_equal(colloc_op_doc(i, &d), 0);
		assert_true(strcmp(prev, d.name) < 0); /* sorted, no duplicates */
		assert_true(d.family[0] && d.training[0] && d.flops[0] && d.autocast[0]);
		prev = d.name;
	}
	assert_int_not_equal(colloc_op_doc(colloc_op_count(), &d), 0);
	assert_int_not_equal(colloc_op_doc(-1, &d), 0);
	assert_true(colloc_pattern_count() >= 5);
	for (int i = 0; i < colloc_pattern_count(); i++) {
		assert_int_equal(colloc_pattern_doc(i, &p), 0);
		assert_true(p.name[0] && p.anchor[0] && p.exported_as[0] && p.saves[0]);
	}
	assert_int_not_equal(colloc_pattern_doc(colloc_pattern_count(), &p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_patterns),
		cmocka_unit_test(test_mul_by_requires_grad),
		cmocka_unit_test(test_version_rules),
		cmocka_unit_test(test_rnn),
		cmocka_unit_test(test_merged_batchnorm),
		cmocka_unit_test(test_grid_sample_instance_norm),
		cmocka_unit_test(test_docs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
