/*
 * test_shape.c — shape inference (shape.c, shape_*.c) and costs (cost.c)
 * on small graphs built in memory, against shapes and FLOP counts worked
 * out by hand (the arithmetic is in the comments).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/cost.h"
#include "colloc/graph.h"
#include "colloc/onnx.h"
#include "colloc/shape.h"
#include "onnx_builder.h"

#define DT_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DT_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define DT_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

#define assert_contains(hay, needle)                                              \
	do {                                                                      \
		if (!strstr((hay), (needle))) {                                   \
			print_error("\"%s\"\n  does not contain \"%s\"\n", (hay), \
				    (needle));                                    \
			fail();                                                   \
		}                                                                 \
	} while (0)

/* Pack and load m (destroying it); the model must be valid. */
static struct colloc_graph *load(struct ob_model *m)
{
	struct colloc_graph *g = NULL;
	struct colloc_diag diag = {""};
	uint8_t *buf;
	size_t len;
	int rc;

	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	rc = colloc_onnx_load_buffer(buf, len, NULL, &g, &diag);
	free(buf);
	if (rc) {
		print_error("load failed (%d): %s\n", rc, diag.msg);
		fail();
	}
	return g;
}

/* Infer with a batch size and name=value pairs; returns the code. */
static int infer(struct colloc_graph *g, int64_t batch, size_t n_dims,
		 const struct colloc_binding *dims, struct colloc_diag *diag)
{
	struct colloc_bind_opts o = {batch, dims, n_dims};

	colloc_diag_clear(diag);
	return colloc_graph_infer(g, &o, diag);
}

static void infer_ok(struct colloc_graph *g, int64_t batch)
{
	struct colloc_diag diag;
	int rc = infer(g, batch, 0, NULL, &diag);

	if (rc) {
		print_error("inference failed (%d): %s\n", rc, diag.msg);
		fail();
	}
}

/* Load, infer, and hand back the graph. */
static struct colloc_graph *load_infer(struct ob_model *m, int64_t batch)
{
	struct colloc_graph *g = load(m);

	infer_ok(g, batch);
	return g;
}

static const struct colloc_tensor *T(const struct colloc_graph *g, const char *name)
{
	int k = colloc_graph_find_tensor(g, name);

	if (k < 0) {
		print_error("no tensor '%s'\n", name);
		fail();
	}
	return &g->tensors[k];
}

#define expect_shape(g, name, ...) \
	expect_shape_((g), (name), OB_INTS(__VA_ARGS__), __FILE__, __LINE__)

static void expect_shape_(const struct colloc_graph *g, const char *name, size_t rank,
			  const int64_t *dims, const char *file, int line)
{
	const struct colloc_tensor *t = T(g, name);
	bool same = t->rank == (int)rank;

	for (size_t d = 0; same && d < rank; d++)
		same = t->shape[d] == dims[d];
	if (!same) {
		char got[160] = "", want[160] = "";
		size_t n = 0;

		for (int d = 0; d < t->rank && n < sizeof(got); d++)
			n += (size_t)snprintf(got + n, sizeof(got) - n, "%lld ",
					      (long long)t->shape[d]);
		n = 0;
		for (size_t d = 0; d < rank && n < sizeof(want); d++)
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%lld ",
					      (long long)dims[d]);
		print_error("%s:%d: '%s' has rank %d [%s], expected rank %zu [%s]\n",
			    file, line, name, t->rank, got, rank, want);
		fail();
	}
}

static void expect_scalar(const struct colloc_graph *g, const char *name)
{
	assert_int_equal(T(g, name)->rank, 0);
}

#define expect_ivalue(g, name, ...) \
	expect_ivalue_((g), (name), OB_INTS(__VA_ARGS__), __FILE__, __LINE__)

static void expect_ivalue_(const struct colloc_graph *g, const char *name, size_t n,
			   const int64_t *v, const char *file, int line)
{
	const struct colloc_tensor *t = T(g, name);

	if (!t->value || !t->value->i || t->value->n != n) {
		print_error("%s:%d: '%s' has no folded int value of %zu elements\n", file,
			    line, name, n);
		fail();
	}
	for (size_t k = 0; k < n; k++)
		if (t->value->i[k] != v[k]) {
			print_error("%s:%d: '%s'[%zu] is %lld, expected %lld\n", file,
				    line, name, k, (long long)t->value->i[k],
				    (long long)v[k]);
			fail();
		}
}

/* --- convolution and pooling ----------------------------------------------- */

static void test_conv(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;

	(void)state;
	/* ResNet stem: (224 + 3 + 3 - 7) / 2 + 1 = 112 */
	ob_input(m, gp, "x", DT_FLOAT, "N,3,224,224");
	ob_init_f32(m, gp, "w", "64,3,7,7", 0, NULL);
	ob_init_f32(m, gp, "b", "64", 0, NULL);
	n = ob_node(m, gp, "Conv", "stem", "x,w,b", "y");
	ob_attr_ints(m, n, "pads", OB_INTS(3, 3, 3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(7, 7));

	/* groups 2, dilation 2 (extent 5), pads 1, stride 2:
	 * (32 + 2 - 5) / 2 + 1 = 15 */
	ob_input(m, gp, "x2", DT_FLOAT, "N,8,32,32");
	ob_init_f32(m, gp, "w2", "16,4,3,3", 0, NULL);
	n = ob_node(m, gp, "Conv", "grouped", "x2,w2", "y2");
	ob_attr_int(m, n, "group", 2);
	ob_attr_ints(m, n, "dilations", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));

	/* asymmetric pads [h0 w1 | h2 w0], strides (1, 3):
	 * h (10 + 0 + 2 - 3) / 1 + 1 = 10, w (7 + 1 + 0 - 2) / 3 + 1 = 3 */
	ob_input(m, gp, "x3", DT_FLOAT, "N,1,10,7");
	ob_init_f32(m, gp, "w3", "2,1,3,2", 0, NULL);
	n = ob_node(m, gp, "Conv", "asym", "x3,w3", "y3");
	ob_attr_ints(m, n, "pads", OB_INTS(0, 1, 2, 0));
	ob_attr_ints(m, n, "strides", OB_INTS(1, 3));

	/* SAME_UPPER, stride 2: ceil(15 / 2) = 8 */
	ob_input(m, gp, "x4", DT_FLOAT, "N,3,15,15");
	ob_init_f32(m, gp, "w4", "5,3,3,3", 0, NULL);
	n = ob_node(m, gp, "Conv", "same", "x4,w4", "y4");
	ob_attr_string(m, n, "auto_pad", "SAME_UPPER");
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));

	/* 1-D depthwise: group 6, (20 - 5) / 1 + 1 = 16 */
	ob_input(m, gp, "x5", DT_FLOAT, "N,6,20");
	ob_init_f32(m, gp, "w5", "6,1,5", 0, NULL);
	n = ob_node(m, gp, "Conv", "dw", "x5,w5", "y5");
	ob_attr_int(m, n, "group", 6);

	g = load_infer(m, 2);
	expect_shape(g, "y", 2, 64, 112, 112);
	expect_shape(g, "y2", 2, 16, 15, 15);
	expect_shape(g, "y3", 2, 2, 10, 3);
	expect_shape(g, "y4", 2, 5, 8, 8);
	expect_shape(g, "y5", 2, 6, 16);
	assert_int_equal(T(g, "y")->dtype, COLLOC_DT_FLOAT);
	colloc_graph_destroy(g);
}

static void test_conv_transpose(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;

	(void)state;
	/* 2 * (7 - 1) + 1 + (3 - 1) * 1 + 1 - (1 + 1) = 14;
	 * channels w[1] * group = 4 */
	ob_input(m, gp, "x", DT_FLOAT, "N,8,7,7");
	ob_init_f32(m, gp, "w", "8,4,3,3", 0, NULL);
	n = ob_node(m, gp, "ConvTranspose", "up", "x,w", "y");
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_ints(m, n, "output_padding", OB_INTS(1, 1));
	g = load_infer(m, 1);
	expect_shape(g, "y", 1, 4, 14, 14);
	colloc_graph_destroy(g);
}

static void test_pooling(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;

	(void)state;
	/* (112 + 2 - 3) / 2 + 1 = 56 */
	ob_input(m, gp, "x", DT_FLOAT, "N,64,112,112");
	n = ob_node(m, gp, "MaxPool", "pool", "x", "y,idx");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));

	/* ceil_mode, k3 s2 on 6: ceil(3 / 2) + 1 = 3 (floor would give 2);
	 * the last window starts at 4 < 6, so it stays */
	ob_input(m, gp, "a", DT_FLOAT, "N,1,6,6");
	n = ob_node(m, gp, "MaxPool", "ceil", "a", "ya");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_int(m, n, "ceil_mode", 1);
	n = ob_node(m, gp, "MaxPool", "floor", "a", "fa");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));

	/* ceil_mode, k2 s2 p1 on 5: ceil((5 + 2 - 2) / 2) + 1 = 4, but
	 * window 3 would start at 6 >= 5 + 1, inside the right padding
	 * only, so PyTorch and ONNX drop it: 3 */
	ob_input(m, gp, "b", DT_FLOAT, "N,1,5,5");
	n = ob_node(m, gp, "MaxPool", "lastwin", "b", "yb");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(2, 2));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_int(m, n, "ceil_mode", 1);

	/* AveragePool k2 s2 on 7, ceil: ceil(5 / 2) + 1 = 4 */
	ob_input(m, gp, "c", DT_FLOAT, "N,2,7,7");
	n = ob_node(m, gp, "AveragePool", "avg", "c", "yc");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(2, 2));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_int(m, n, "ceil_mode", 1);

	ob_node(m, gp, "GlobalAveragePool", "gap", "c", "yg");

	g = load_infer(m, 4);
	expect_shape(g, "y", 4, 64, 56, 56);
	expect_shape(g, "idx", 4, 64, 56, 56);
	assert_int_equal(T(g, "idx")->dtype, COLLOC_DT_INT64);
	expect_shape(g, "ya", 4, 1, 3, 3);
	expect_shape(g, "fa", 4, 1, 2, 2);
	expect_shape(g, "yb", 4, 1, 3, 3);
	expect_shape(g, "yc", 4, 2, 4, 4);
	expect_shape(g, "yg", 4, 2, 1, 1);
	colloc_graph_destroy(g);
}

/* --- matrix products -------------------------------------------------------- */

static void test_gemm(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "a", DT_FLOAT, "N,512");
	ob_init_f32(m, gp, "fc.weight", "1000,512", 0, NULL);
	ob_init_f32(m, gp, "fc.bias", "1000", 0, NULL);
	n = ob_node(m, gp, "Gemm", "fc", "a,fc.weight,fc.bias", "y");
	ob_attr_int(m, n, "transB", 1);
	g = load_infer(m, 3);
	expect_shape(g, "y", 3, 1000);
	colloc_graph_destroy(g);

	/* transA: [512, N]^T x [512, 10]; N is not leading, so bind it by name */
	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "at", DT_FLOAT, "512,N");
	ob_init_f32(m, gp, "w2", "512,10", 0, NULL);
	n = ob_node(m, gp, "Gemm", "ta", "at,w2", "y2");
	ob_attr_int(m, n, "transA", 1);
	g = load(m);
	{
		const struct colloc_binding b[] = {{"N", 7}};

		assert_int_equal(infer(g, 0, 1, b, &diag), 0);
	}
	expect_shape(g, "y2", 7, 10);
	colloc_graph_destroy(g);

	/* inner dimensions differ: 512 vs 256 */
	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "a", DT_FLOAT, "N,512");
	ob_init_f32(m, gp, "w", "256,10", 0, NULL);
	ob_node(m, gp, "Gemm", "bad", "a,w", "y");
	g = load(m);
	assert_int_equal(infer(g, 1, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg,
			"node 0 (bad, Gemm): inner dimensions differ: 512 vs 256");
	colloc_graph_destroy(g);
}

static void test_matmul(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;

	(void)state;
	ob_input(m, gp, "a", DT_FLOAT, "2,1,3,4");
	ob_input(m, gp, "b", DT_FLOAT, "5,4,6");
	ob_input(m, gp, "v", DT_FLOAT, "4");
	ob_input(m, gp, "m", DT_FLOAT, "4,6");
	ob_input(m, gp, "k", DT_FLOAT, "3,4");
	ob_input(m, gp, "bv", DT_FLOAT, "2,3,4");
	ob_node(m, gp, "MatMul", NULL, "a,b", "batched"); /* [2,1]x[5] -> [2,5] */
	ob_node(m, gp, "MatMul", NULL, "v,m", "vm"); /* [4]x[4,6] -> [6] */
	ob_node(m, gp, "MatMul", NULL, "k,v", "mv"); /* [3,4]x[4] -> [3] */
	ob_node(m, gp, "MatMul", NULL, "v,v", "dot"); /* scalar */
	ob_node(m, gp, "MatMul", NULL, "bv,v", "bmv"); /* [2,3] */
	ob_node(m, gp, "MatMul", NULL, "v,b", "vb"); /* [5,6] */
	g = load_infer(m, 0);
	expect_shape(g, "batched", 2, 5, 3, 6);
	expect_shape(g, "vm", 6);
	expect_shape(g, "mv", 3);
	expect_scalar(g, "dot");
	expect_shape(g, "bmv", 2, 3);
	expect_shape(g, "vb", 5, 6);
	colloc_graph_destroy(g);
}

/* Einsum as torchvision's MaxViT and attention code write it: explicit and
 * implicit outputs, an ellipsis, and a mismatch that must be refused. */
static void test_einsum(void **state)
{
	struct ob_model *m = ob_model_create(14);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	Onnx__NodeProto *n;

	(void)state;
	ob_input(m, gp, "q", DT_FLOAT, "2,3,5,8");
	ob_input(m, gp, "k", DT_FLOAT, "2,3,7,8");
	ob_input(m, gp, "a", DT_FLOAT, "4,6");
	ob_input(m, gp, "b", DT_FLOAT, "6,9");
	n = ob_node(m, gp, "Einsum", NULL, "q,k", "scores");
	ob_attr_string(m, n, "equation", "bhqd,bhkd->bhqk");
	n = ob_node(m, gp, "Einsum", NULL, "a,b", "implicit");
	ob_attr_string(m, n, "equation", "ij,jk");
	n = ob_node(m, gp, "Einsum", NULL, "q,k", "ell");
	ob_attr_string(m, n, "equation", "...qd,...kd->...qk");
	g = load_infer(m, 0);
	expect_shape(g, "scores", 2, 3, 5, 7);
	expect_shape(g, "implicit", 4, 9);
	expect_shape(g, "ell", 2, 3, 5, 7);
	colloc_graph_cost(g, NULL);
	/* 2 x b*h*q*k*d = 2 x 2*3*5*7*8 */
	assert_int_equal(g->nodes[T(g, "scores")->producer].flops, 2 * 2 * 3 * 5 * 7 * 8);
	assert_int_equal(g->nodes[T(g, "implicit")->producer].flops, 2 * 4 * 6 * 9);
	colloc_graph_destroy(g);

	m = ob_model_create(14);
	gp = ob_model_graph(m);
	ob_input(m, gp, "a", DT_FLOAT, "4,6");
	ob_input(m, gp, "b", DT_FLOAT, "5,9");
	n = ob_node(m, gp, "Einsum", "bad", "a,b", "y");
	ob_attr_string(m, n, "equation", "ij,jk->ik");
	g = load(m);
	{
		struct colloc_diag diag = {""};

		assert_int_equal(infer(g, 0, 0, NULL, &diag), COLLOC_ESHAPE);
		assert_contains(diag.msg, "node 0 (bad, Einsum): Einsum label 'j' is 6");
	}
	colloc_graph_destroy(g);
}

/* --- shape arithmetic and movement ------------------------------------------ */

/* x[N,3,4,5] -> Shape -> Gather(0) -> Unsqueeze(0) -> Concat(., [-1])
 * -> Reshape(x, .): torch's x.view(x.size(0), -1). */
static struct ob_model *reshape_chain(void)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;

	ob_input(m, gp, "x", DT_FLOAT, "N,3,4,5");
	ob_init_i64(m, gp, "zero", "", OB_INTS(0));
	ob_init_i64(m, gp, "axes0", "1", OB_INTS(0));
	ob_init_i64(m, gp, "minus1", "1", OB_INTS(-1));
	ob_init_i64(m, gp, "keep2", "3", OB_INTS(0, 0, -1));
	ob_node(m, gp, "Shape", "shape", "x", "s");
	n = ob_node(m, gp, "Gather", "gather", "s,zero", "n");
	ob_attr_int(m, n, "axis", 0);
	ob_node(m, gp, "Unsqueeze", "unsq", "n,axes0", "n1");
	n = ob_node(m, gp, "Concat", "cat", "n1,minus1", "target");
	ob_attr_int(m, n, "axis", 0);
	ob_node(m, gp, "Reshape", "view", "x,target", "y");
	ob_node(m, gp, "Reshape", "view0", "x,keep2", "y0");
	ob_output(m, gp, "y", DT_FLOAT, NULL);
	return m;
}

static void test_reshape_folding(void **state)
{
	struct colloc_graph *g = load_infer(reshape_chain(), 6);

	(void)state;
	expect_shape(g, "s", 4);
	expect_ivalue(g, "s", 6, 3, 4, 5);
	expect_scalar(g, "n");
	expect_ivalue(g, "n", 6);
	expect_shape(g, "n1", 1);
	expect_ivalue(g, "target", 6, -1);
	expect_shape(g, "y", 6, 60);
	expect_shape(g, "y0", 6, 3, 20);
	assert_null(T(g, "y")->value);

	/* a second run forgets the first one's folded values */
	infer_ok(g, 2);
	expect_ivalue(g, "s", 2, 3, 4, 5);
	expect_ivalue(g, "target", 2, -1);
	expect_shape(g, "y", 2, 60);
	expect_shape(g, "y0", 2, 3, 20);
	colloc_graph_destroy(g);
}

static void test_reshape_errors(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	/* the target shape is a graph input: data, not shape arithmetic */
	ob_input(m, gp, "x", DT_FLOAT, "N,6");
	ob_input(m, gp, "tgt", DT_INT64, "2");
	ob_node(m, gp, "Reshape", "reshape", "x,tgt", "y");
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_EUNSUPPORTED);
	assert_contains(diag.msg, "node 0 (reshape, Reshape)");
	assert_contains(diag.msg, "shape (input 1 'tgt') is computed from data");
	colloc_graph_destroy(g);

	/* 12 elements into [5, -1] */
	m = ob_model_create(13);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "N,6");
	ob_init_i64(m, gp, "tgt", "2", OB_INTS(5, -1));
	ob_node(m, gp, "Reshape", "reshape", "x,tgt", "y");
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg, "cannot reshape 12 elements with -1");
	colloc_graph_destroy(g);
}

static void test_slice(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "2,10,8");
	ob_init_i64(m, gp, "m3", "1", OB_INTS(-3));
	ob_init_i64(m, gp, "m2", "1", OB_INTS(-2));
	ob_init_i64(m, gp, "m1", "1", OB_INTS(-1));
	ob_init_i64(m, gp, "z", "1", OB_INTS(0));
	ob_init_i64(m, gp, "one", "1", OB_INTS(1));
	ob_init_i64(m, gp, "two", "1", OB_INTS(2));
	ob_init_i64(m, gp, "eight", "1", OB_INTS(8));
	ob_init_i64(m, gp, "max", "1", OB_INTS(INT64_MAX));
	ob_init_i64(m, gp, "min", "1", OB_INTS(INT64_MIN));
	ob_init_i64(m, gp, "st2", "2", OB_INTS(2, 1));
	ob_init_i64(m, gp, "en2", "2", OB_INTS(100, 7));
	ob_init_i64(m, gp, "ax2", "2", OB_INTS(1, 2));
	ob_init_i64(m, gp, "sp2", "2", OB_INTS(3, 2));
	/* x[:, -3:] -> 3 */
	ob_node(m, gp, "Slice", NULL, "x,m3,max,one", "a");
	/* x[:, :, 0:8:2] -> 4 */
	ob_node(m, gp, "Slice", NULL, "x,z,eight,m1,two", "b");
	/* x[:, ::-1] -> 10 */
	ob_node(m, gp, "Slice", NULL, "x,m1,min,one,m1", "c");
	/* x[:, 1:-1] -> 8 */
	ob_node(m, gp, "Slice", NULL, "x,one,m1,one", "d");
	/* x[:, 2:100:3, 1:7:2] -> indices 2,5,8 and 1,3,5 */
	ob_node(m, gp, "Slice", NULL, "x,st2,en2,ax2,sp2", "e");
	/* no axes: the first ones; x[-2:] -> 2 */
	ob_node(m, gp, "Slice", NULL, "x,m2,max", "f");
	/* folded: shape[-2:] = [10, 8], shape[::-1] = [8, 10, 2] */
	ob_node(m, gp, "Shape", NULL, "x", "s");
	ob_node(m, gp, "Slice", NULL, "s,m2,max", "s_tail");
	ob_node(m, gp, "Slice", NULL, "s,m1,min,z,m1", "s_rev");
	/* empty: x[:, 9:1] */
	ob_init_i64(m, gp, "nine", "1", OB_INTS(9));
	ob_node(m, gp, "Slice", NULL, "x,nine,one,one", "empty");
	g = load_infer(m, 0);
	expect_shape(g, "a", 2, 3, 8);
	expect_shape(g, "b", 2, 10, 4);
	expect_shape(g, "c", 2, 10, 8);
	expect_shape(g, "d", 2, 8, 8);
	expect_shape(g, "e", 2, 3, 3);
	expect_shape(g, "f", 2, 10, 8);
	expect_ivalue(g, "s_tail", 10, 8);
	expect_ivalue(g, "s_rev", 8, 10, 2);
	expect_shape(g, "empty", 2, 0, 8);
	colloc_graph_destroy(g);
}

static void test_squeeze_unsqueeze(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "1,3,1,5");
	ob_init_i64(m, gp, "ax02", "2", OB_INTS(0, 2));
	ob_init_i64(m, gp, "axm2", "1", OB_INTS(-2));
	ob_init_i64(m, gp, "ax0m1", "2", OB_INTS(0, -1));
	ob_node(m, gp, "Squeeze", NULL, "x,ax02", "a");
	ob_node(m, gp, "Squeeze", NULL, "x", "b");
	ob_node(m, gp, "Squeeze", NULL, "x,axm2", "c");
	/* output rank 4: -1 is the last new position */
	ob_node(m, gp, "Unsqueeze", NULL, "a,ax0m1", "d");
	g = load_infer(m, 0);
	expect_shape(g, "a", 3, 5);
	expect_shape(g, "b", 3, 5);
	expect_shape(g, "c", 1, 3, 5);
	expect_shape(g, "d", 1, 3, 5, 1);
	colloc_graph_destroy(g);

	/* opset 11: axes as an attribute */
	m = ob_model_create(11);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "3,5");
	ob_attr_ints(m, ob_node(m, gp, "Unsqueeze", NULL, "x", "u"), "axes", OB_INTS(1));
	g = load_infer(m, 0);
	expect_shape(g, "u", 3, 1, 5);
	colloc_graph_destroy(g);

	/* squeezing a dim that is not 1 */
	m = ob_model_create(13);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1,3");
	ob_init_i64(m, gp, "ax", "1", OB_INTS(1));
	ob_node(m, gp, "Squeeze", "sq", "x,ax", "y");
	g = load(m);
	assert_int_equal(infer(g, 0, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg, "node 0 (sq, Squeeze): cannot squeeze dim 1 of size 3");
	colloc_graph_destroy(g);
}

static void test_split(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "2,10");
	ob_init_i64(m, gp, "sizes", "2", OB_INTS(3, 7));
	n = ob_node(m, gp, "Split", NULL, "x,sizes", "a,b");
	ob_attr_int(m, n, "axis", 1);
	n = ob_node(m, gp, "Split", NULL, "x", "c,d");
	ob_attr_int(m, n, "axis", -1);
	/* 10 into 3: ceil(10/3) = 4, 4, 2 (opset 18 num_outputs rule) */
	n = ob_node(m, gp, "Split", NULL, "x", "e,f,h");
	ob_attr_int(m, n, "axis", 1);
	g = load_infer(m, 0);
	expect_shape(g, "a", 2, 3);
	expect_shape(g, "b", 2, 7);
	expect_shape(g, "c", 2, 5);
	expect_shape(g, "d", 2, 5);
	expect_shape(g, "e", 2, 4);
	expect_shape(g, "f", 2, 4);
	expect_shape(g, "h", 2, 2);
	colloc_graph_destroy(g);

	m = ob_model_create(13);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "2,10");
	ob_init_i64(m, gp, "sizes", "2", OB_INTS(3, 6));
	n = ob_node(m, gp, "Split", "split", "x,sizes", "a,b");
	ob_attr_int(m, n, "axis", 1);
	g = load(m);
	assert_int_equal(infer(g, 0, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg, "split sizes add up to 9, dim is 10");
	colloc_graph_destroy(g);
}

static void test_transpose_flatten_expand(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;
	struct colloc_graph *g;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "2,3,4");
	ob_node(m, gp, "Transpose", NULL, "x", "t_default");
	ob_attr_ints(m, ob_node(m, gp, "Transpose", NULL, "x", "t_perm"), "perm",
		     OB_INTS(0, 2, 1));
	/* folded: [[1,2,3],[4,5,6]]^T = [[1,4],[2,5],[3,6]] */
	n = ob_node(m, gp, "Constant", NULL, "", "k");
	t = ob_tensor(m, NULL, DT_INT64, "2,3");
	ob_tensor_i64(m, t, OB_INTS(1, 2, 3, 4, 5, 6));
	ob_attr_tensor(m, n, "value", t);
	ob_node(m, gp, "Transpose", NULL, "k", "kt");

	ob_input(m, gp, "f", DT_FLOAT, "2,3,4,5");
	ob_node(m, gp, "Flatten", NULL, "f", "f1");
	ob_attr_int(m, ob_node(m, gp, "Flatten", NULL, "f", "f0"), "axis", 0);
	ob_attr_int(m, ob_node(m, gp, "Flatten", NULL, "f", "fm1"), "axis", -1);
	ob_attr_int(m, ob_node(m, gp, "Flatten", NULL, "f", "f4"), "axis", 4);

	ob_input(m, gp, "e", DT_FLOAT, "3,1");
	ob_init_i64(m, gp, "eshape", "3", OB_INTS(2, 1, 4));
	ob_node(m, gp, "Expand", NULL, "e,eshape", "ex");
	g = load_infer(m, 0);
	expect_shape(g, "t_default", 4, 3, 2);
	expect_shape(g, "t_perm", 2, 4, 3);
	expect_shape(g, "kt", 3, 2);
	expect_ivalue(g, "kt", 1, 4, 2, 5, 3, 6);
	expect_shape(g, "f1", 2, 60);
	expect_shape(g, "f0", 1, 120);
	expect_shape(g, "fm1", 24, 5);
	expect_shape(g, "f4", 120, 1);
	expect_shape(g, "ex", 2, 3, 4);
	colloc_graph_destroy(g);
}

static void test_concat_range_where(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__TensorProto *t;
	struct colloc_graph *g;

	(void)state;
	ob_input(m, gp, "a", DT_FLOAT, "2,3");
	ob_input(m, gp, "b", DT_FLOAT, "2,5");
	ob_attr_int(m, ob_node(m, gp, "Concat", NULL, "a,b", "ab"), "axis", 1);
	ob_attr_int(m, ob_node(m, gp, "Concat", NULL, "a,a", "aa"), "axis", -2);

	ob_init_i64(m, gp, "c1", "2", OB_INTS(1, 2));
	ob_init_i64(m, gp, "c2", "1", OB_INTS(3));
	ob_attr_int(m, ob_node(m, gp, "Concat", NULL, "c1,c2,c1", "c"), "axis", 0);

	ob_init_i64(m, gp, "r0", "", OB_INTS(0));
	ob_init_i64(m, gp, "r10", "", OB_INTS(10));
	ob_init_i64(m, gp, "r3", "", OB_INTS(3));
	ob_init_i64(m, gp, "rm4", "", OB_INTS(-4));
	/* ceil(10 / 3) = 4: 0 3 6 9 */
	ob_node(m, gp, "Range", NULL, "r0,r10,r3", "range");
	/* ceil(-10 / -4) = 3: 10 6 2 */
	ob_node(m, gp, "Range", NULL, "r10,r0,rm4", "down");
	/* float: ceil(1.5 / 0.5) = 3 */
	t = ob_tensor(m, "f05", DT_FLOAT, "");
	ob_tensor_f32(m, t, OB_FLOATS(0.5f));
	ob_init(m, gp, t);
	t = ob_tensor(m, "f2", DT_FLOAT, "");
	ob_tensor_f32(m, t, OB_FLOATS(2.0f));
	ob_init(m, gp, t);
	ob_node(m, gp, "Range", NULL, "f05,f2,f05", "frange");

	ob_input(m, gp, "cond", DT_BOOL, "2,1");
	ob_input(m, gp, "wa", DT_FLOAT, "1,3");
	ob_input(m, gp, "wb", DT_FLOAT, "");
	ob_node(m, gp, "Where", NULL, "cond,wa,wb", "w");
	g = load_infer(m, 0);
	expect_shape(g, "ab", 2, 8);
	expect_shape(g, "aa", 4, 3);
	expect_ivalue(g, "c", 1, 2, 3, 1, 2);
	expect_shape(g, "range", 4);
	expect_ivalue(g, "range", 0, 3, 6, 9);
	expect_ivalue(g, "down", 10, 6, 2);
	expect_shape(g, "frange", 3);
	assert_non_null(T(g, "frange")->value);
	assert_true(T(g, "frange")->value->f[2] == 1.5);
	assert_int_equal(T(g, "frange")->dtype, COLLOC_DT_FLOAT);
	expect_shape(g, "w", 2, 3);
	assert_int_equal(T(g, "w")->dtype, COLLOC_DT_FLOAT);
	colloc_graph_destroy(g);
}

static void test_reduce_and_pad(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "2,3,4");
	n = ob_node(m, gp, "ReduceMean", NULL, "x", "keep");
	ob_attr_ints(m, n, "axes", OB_INTS(1));
	n = ob_node(m, gp, "ReduceMean", NULL, "x", "drop");
	ob_attr_ints(m, n, "axes", OB_INTS(1));
	ob_attr_int(m, n, "keepdims", 0);
	n = ob_node(m, gp, "ReduceMean", NULL, "x", "all");
	ob_attr_int(m, n, "keepdims", 0);
	n = ob_node(m, gp, "ReduceMean", NULL, "x", "two");
	ob_attr_ints(m, n, "axes", OB_INTS(-1, 0));
	ob_attr_int(m, n, "keepdims", 0);
	ob_node(m, gp, "ReduceMean", NULL, "x", "allkeep");

	/* opset 13 Pad: pads as an input, [begins..., ends...] */
	ob_input(m, gp, "p", DT_FLOAT, "1,3,4,4");
	ob_init_i64(m, gp, "pads", "8", OB_INTS(0, 0, 1, 2, 0, 0, 3, 4));
	ob_node(m, gp, "Pad", NULL, "p,pads", "padded");
	g = load_infer(m, 0);
	expect_shape(g, "keep", 2, 1, 4);
	expect_shape(g, "drop", 2, 4);
	expect_scalar(g, "all");
	expect_shape(g, "two", 3);
	expect_shape(g, "allkeep", 1, 1, 1);
	expect_shape(g, "padded", 1, 3, 8, 10);
	colloc_graph_destroy(g);

	/* opset 18: ReduceMean axes and Pad axes are inputs */
	m = ob_model_create(18);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "2,3,4");
	ob_init_i64(m, gp, "ax", "1", OB_INTS(1));
	n = ob_node(m, gp, "ReduceMean", NULL, "x,ax", "drop");
	ob_attr_int(m, n, "keepdims", 0);
	ob_input(m, gp, "p", DT_FLOAT, "1,3,4,4");
	ob_init_i64(m, gp, "pads", "4", OB_INTS(1, 2, 3, 4));
	ob_init_i64(m, gp, "pax", "2", OB_INTS(2, -1));
	ob_node(m, gp, "Pad", NULL, "p,pads,,pax", "padded");
	g = load_infer(m, 0);
	expect_shape(g, "drop", 2, 4);
	expect_shape(g, "padded", 1, 3, 8, 10);
	colloc_graph_destroy(g);
}

/* Values at the edges of int64 and float: each case once overflowed or
 * converted NaN to an integer (undefined behaviour, caught by UBSan); now
 * they saturate or fail cleanly. */
static void test_extreme_values(void **state)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;
	struct colloc_graph *g;
	struct colloc_diag diag;
	struct colloc_cost_totals tot;

	(void)state;
	/* steps of INT64_MIN / INT64_MAX take one element */
	ob_input(m, gp, "x", DT_FLOAT, "1,10");
	ob_init_i64(m, gp, "ax", "1", OB_INTS(1));
	ob_init_i64(m, gp, "s0", "1", OB_INTS(0));
	ob_init_i64(m, gp, "s9", "1", OB_INTS(9));
	ob_init_i64(m, gp, "s10", "1", OB_INTS(10));
	ob_init_i64(m, gp, "mn", "1", OB_INTS(INT64_MIN));
	ob_init_i64(m, gp, "mx", "1", OB_INTS(INT64_MAX));
	ob_node(m, gp, "Slice", NULL, "x,s9,s0,ax,mn", "sl_min");
	ob_node(m, gp, "Slice", NULL, "x,s0,s10,ax,mx", "sl_max");
	/* Split of INT64_MAX in two: 2^62 and 2^62 - 1 */
	ob_input(m, gp, "h", DT_FLOAT, "1,9223372036854775807");
	ob_attr_int(m, ob_node(m, gp, "Split", NULL, "h", "h0,h1"), "axis", 1);
	/* ConvTranspose 2^31-1 * (2^40 - 1) saturates */
	ob_input(m, gp, "c", DT_FLOAT, "1,1,1099511627776");
	ob_init_f32(m, gp, "w", "1,1,1", 0, NULL);
	n = ob_node(m, gp, "ConvTranspose", NULL, "c,w", "ct");
	ob_attr_ints(m, n, "strides", OB_INTS(2147483647));
	ob_input(m, gp, "c2", DT_FLOAT, "1,1,4");
	n = ob_node(m, gp, "ConvTranspose", NULL, "c2,w", "ct2");
	ob_attr_ints(m, n, "output_padding", OB_INTS(INT64_MAX));
	/* integer folding: 10^30 saturates, sqrt(-4) is 0 */
	ob_init_i64(m, gp, "ten", "1", OB_INTS(10));
	ob_init_i64(m, gp, "thirty", "1", OB_INTS(30));
	ob_init_i64(m, gp, "minus4", "1", OB_INTS(-4));
	ob_node(m, gp, "Pow", NULL, "ten,thirty", "pow");
	ob_node(m, gp, "Sqrt", NULL, "minus4", "sqrt");
	/* Range ending at INT64_MAX */
	ob_init_i64(m, gp, "rs", "", OB_INTS(INT64_MAX - 5000));
	ob_init_i64(m, gp, "rl", "", OB_INTS(INT64_MAX));
	ob_init_i64(m, gp, "rd", "", OB_INTS(5100));
	ob_node(m, gp, "Range", NULL, "rs,rl,rd", "range");
	/* float_data in an int64 tensor: saturated, NaN to 0 */
	t = ob_tensor(m, "fi", DT_INT64, "3");
	ob_tensor_f32(m, t, OB_FLOATS(1e30f, -1e30f, NAN));
	ob_init(m, gp, t);
	g = load_infer(m, 0);
	expect_shape(g, "sl_min", 1, 1);
	expect_shape(g, "sl_max", 1, 1);
	expect_shape(g, "h0", 1, INT64_C(4611686018427387904));
	expect_shape(g, "h1", 1, INT64_C(4611686018427387903));
	expect_shape(g, "ct", 1, 1, INT64_MAX);
	expect_shape(g, "ct2", 1, 1, INT64_MAX);
	expect_ivalue(g, "pow", INT64_MAX);
	expect_ivalue(g, "sqrt", 0);
	expect_ivalue(g, "fi", INT64_MAX, INT64_MIN, 0);
	assert_non_null(T(g, "range")->value);
	assert_int_equal(T(g, "range")->value->i[0], INT64_MAX - 5000);
	for (size_t k = 1; k < T(g, "range")->value->n; k++)
		assert_int_equal(T(g, "range")->value->i[k], INT64_MAX);
	/* costs saturate instead of wrapping */
	colloc_graph_cost(g, &tot);
	assert_int_equal(tot.bytes_written, UINT64_MAX);
	colloc_graph_destroy(g);

	/* a Resize scale that gives no size is an error, not a conversion */
	m = ob_model_create(13);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1,3,4,4");
	ob_init_f32(m, gp, "scales", "4", OB_FLOATS(1.0f, 1.0f, 1e30f, 2.0f));
	ob_node(m, gp, "Resize", "up", "x,,scales", "y");
	g = load(m);
	assert_int_equal(infer(g, 0, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg, "node 0 (up, Resize): Resize scale");
	colloc_graph_destroy(g);
}

/* --- binding and errors ------------------------------------------------------ */

static struct ob_model *bert_like(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);

	ob_input(m, gp, "ids", DT_INT64, "N,seq");
	ob_input(m, gp, "mask", DT_INT64, "N,seq");
	ob_node(m, gp, "Add", "add", "ids,mask", "y");
	return m;
}

static void test_unbound_dim(void **state)
{
	struct colloc_graph *g = load(bert_like());
	struct colloc_diag diag;
	const struct colloc_binding seq[] = {{"seq", 7}};
	const struct colloc_binding both[] = {{"seq", 5}, {"N", 3}};
	const char *syms[4];

	(void)state;
	assert_int_equal(colloc_graph_symbols(g, syms, 4), 2);
	assert_string_equal(syms[0], "N");
	assert_string_equal(syms[1], "seq");
	assert_int_equal(colloc_graph_symbols(g, syms, 1), 2);

	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_EUNBOUND);
	assert_contains(diag.msg, "input 'ids' dim 1 ('seq') is unbound");
	assert_contains(diag.msg, "--dim seq=N");

	assert_int_equal(infer(g, 0, 1, seq, &diag), COLLOC_EUNBOUND);
	assert_contains(diag.msg, "input 'ids' dim 0 ('N') is unbound");
	assert_contains(diag.msg, "--batch N");

	assert_int_equal(infer(g, 2, 1, seq, &diag), 0);
	expect_shape(g, "y", 2, 7);
	/* a named binding wins over --batch */
	assert_int_equal(infer(g, 9, 2, both, &diag), 0);
	expect_shape(g, "y", 3, 5);
	colloc_graph_destroy(g);
}

static void test_unknown_binding(void **state)
{
	struct colloc_graph *g = load(bert_like());
	struct colloc_diag diag;
	const struct colloc_binding typo[] = {{"seq", 4}, {"sequence", 5}};
	const struct colloc_binding neg[] = {{"seq", -1}};

	(void)state;
	assert_int_equal(infer(g, 2, 2, typo, &diag), COLLOC_EUSAGE);
	assert_contains(diag.msg, "no dimension named 'sequence'");
	assert_contains(diag.msg, "N, seq");
	assert_int_equal(infer(g, 2, 1, neg, &diag), COLLOC_EUSAGE);
	colloc_graph_destroy(g);

	/* --batch on a model whose batch is fixed */
	{
		struct ob_model *m = ob_model_create(17);
		Onnx__GraphProto *gp = ob_model_graph(m);

		ob_input(m, gp, "x", DT_FLOAT, "1,3");
		ob_node(m, gp, "Relu", NULL, "x", "y");
		g = load(m);
		assert_int_equal(infer(g, 4, 0, NULL, &diag), COLLOC_EUSAGE);
		assert_contains(diag.msg, "fixed batch of 1");
		assert_contains(diag.msg, "dynamic_axes");
		assert_int_equal(colloc_graph_fixed_batch(g), 1);
		assert_int_equal(infer(g, 0, 0, NULL, &diag), 0);
		expect_shape(g, "y", 1, 3);
		/* the batch it was exported at is accepted */
		assert_int_equal(infer(g, 1, 0, NULL, &diag), 0);
		expect_shape(g, "y", 1, 3);
		colloc_graph_destroy(g);
	}
}

static void test_unknown_op(void **state)
{
	static char custom_domain[] = "com.example";
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,4");
	ob_node(m, gp, "Relu", "act", "x", "a");
	ob_node(m, gp, "FancyOp", "fancy", "a", "b");
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_EUNSUPPORTED);
	assert_contains(diag.msg,
			"node 1 (fancy, FancyOp): colloc does not know op 'FancyOp'");
	/* shapes up to the failing node are still there */
	expect_shape(g, "a", 2, 4);
	colloc_graph_destroy(g);

	/* a known op type in another domain is not the ONNX op */
	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "N,4");
	n = ob_node(m, gp, "Relu", "custom", "x", "a");
	n->domain = custom_domain;
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_EUNSUPPORTED);
	assert_contains(diag.msg, "op 'com.example.Relu'");
	colloc_graph_destroy(g);
}

static void test_conv_channel_mismatch(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,4,8,8");
	ob_init_f32(m, gp, "w", "8,3,3,3", 0, NULL);
	ob_node(m, gp, "Conv", "conv1", "x,w", "y");
	g = load(m);
	assert_int_equal(infer(g, 1, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg, "node 0 (conv1, Conv): input has 4 channels but "
				  "weight expects 3 x 1 groups");
	colloc_graph_destroy(g);
}

static void test_reinfer_batch(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_cost_totals c1, c8;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,3,8,8");
	ob_init_f32(m, gp, "w", "4,3,3,3", 0, NULL);
	ob_node(m, gp, "Conv", "conv", "x,w", "y");
	ob_node(m, gp, "Relu", "relu", "y", "z");
	g = load(m);
	infer_ok(g, 1);
	expect_shape(g, "z", 1, 4, 6, 6);
	colloc_graph_cost(g, &c1);
	infer_ok(g, 8);
	expect_shape(g, "x", 8, 3, 8, 8);
	expect_shape(g, "z", 8, 4, 6, 6);
	colloc_graph_cost(g, &c8);
	assert_int_equal(c8.flops, 8 * c1.flops);
	colloc_graph_destroy(g);
}

/* --- costs (docs/flops.md) ---------------------------------------------------- */

static const struct colloc_node *node_named(const struct colloc_graph *g,
					    const char *name)
{
	for (int k = 0; k < g->n_nodes; k++)
		if (strcmp(g->nodes[k].name, name) == 0)
			return &g->nodes[k];
	print_error("no node '%s'\n", name);
	fail();
	/* not reached: fail() jumps out; a dummy keeps -Wnull-dereference
	 * quiet in optimised builds */
	{
		static const struct colloc_node none;

		return &none;
	}
}

static void test_cost_conv_gemm_matmul(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;
	struct colloc_cost_totals tot;
	const struct colloc_node *c;

	(void)state;
	/* y [1,4,8,8] = 256 elements, each 3*3*3 = 27 multiply-adds:
	 * 2 * 256 * 27 = 13824, + 256 for the bias */
	ob_input(m, gp, "x", DT_FLOAT, "N,3,8,8");
	ob_init_f32(m, gp, "conv.weight", "4,3,3,3", 0, NULL);
	ob_init_f32(m, gp, "conv.bias", "4", 0, NULL);
	n = ob_node(m, gp, "Conv", "conv", "x,conv.weight,conv.bias", "y");
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	/* grouped, no bias: y [1,8,8,8] = 512, Cin/groups = 2, k 3x3:
	 * 2 * 512 * 18 = 18432 */
	ob_input(m, gp, "xg", DT_FLOAT, "N,8,8,8");
	ob_init_f32(m, gp, "gw", "8,2,3,3", 0, NULL);
	n = ob_node(m, gp, "Conv", "gconv", "xg,gw", "yg");
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_int(m, n, "group", 4);
	/* Gemm [1,8] x [16,8]^T + C: 2 * 16 * 8 + 16 = 272 */
	ob_input(m, gp, "a", DT_FLOAT, "N,8");
	ob_init_f32(m, gp, "fc.weight", "16,8", 0, NULL);
	ob_init_f32(m, gp, "fc.bias", "16", 0, NULL);
	n = ob_node(m, gp, "Gemm", "fc", "a,fc.weight,fc.bias", "f");
	ob_attr_int(m, n, "transB", 1);
	/* MatMul [1,3,4] x [4,5]: 2 * 15 * 4 = 120 */
	ob_input(m, gp, "p", DT_FLOAT, "N,3,4");
	ob_init_f32(m, gp, "proj", "4,5", 0, NULL);
	ob_node(m, gp, "MatMul", "mm", "p,proj", "q");
	g = load_infer(m, 1);
	colloc_graph_cost(g, &tot);

	c = node_named(g, "conv");
	assert_int_equal(c->flops, 14080);
	/* x 768 B + weight 432 B + bias 16 B; y 1024 B */
	assert_int_equal(c->bytes_read, 768 + 432 + 16);
	assert_int_equal(c->bytes_written, 1024);
	assert_int_equal(c->output_bytes, 1024);
	assert_int_equal(c->params, 108 + 4);
	assert_int_equal(node_named(g, "gconv")->flops, 18432);
	assert_int_equal(node_named(g, "fc")->flops, 272);
	assert_int_equal(node_named(g, "fc")->params, 128 + 16);
	assert_int_equal(node_named(g, "mm")->flops, 120);
	assert_int_equal(tot.flops, 14080 + 18432 + 272 + 120);

	/* batch 2 doubles everything but the weights read */
	infer_ok(g, 2);
	colloc_graph_cost(g, NULL);
	assert_int_equal(node_named(g, "conv")->flops, 2 * 14080);
	assert_int_equal(node_named(g, "fc")->flops, 2 * 272);
	assert_int_equal(node_named(g, "mm")->flops, 2 * 120);
	assert_int_equal(node_named(g, "conv")->bytes_read, 2 * 768 + 432 + 16);
	colloc_graph_destroy(g);
}

static void test_cost_elementwise_norm_pool(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g;
	struct colloc_cost_totals tot;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,4,8,8"); /* 256 elements */
	ob_init_f32(m, gp, "bn.weight", "4", 0, NULL);
	ob_init_f32(m, gp, "bn.bias", "4", 0, NULL);
	ob_init_f32(m, gp, "bn.running_mean", "4", 0, NULL);
	ob_init_f32(m, gp, "bn.running_var", "4", 0, NULL);
	ob_init_f32(m, gp, "one", "4,1,1", 0, NULL);
	/* 2 per element: 512 */
	ob_node(m, gp, "BatchNormalization", "bn",
		"x,bn.weight,bn.bias,bn.running_mean,bn.running_var", "b");
	/* 1 per output element: 256 */
	ob_node(m, gp, "Relu", "relu", "b", "r");
	ob_node(m, gp, "Add", "add", "r,one", "s");
	/* out [1,4,4,4] = 64, kernel 9: 576 */
	n = ob_node(m, gp, "MaxPool", "pool", "s", "p");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	/* input elements: 64 */
	ob_node(m, gp, "GlobalAveragePool", "gap", "p", "gp");
	/* 3 per element of [1,4]: 12 */
	ob_node(m, gp, "Flatten", "flat", "gp", "fl");
	ob_node(m, gp, "Softmax", "sm", "fl", "out");
	g = load_infer(m, 1);
	colloc_graph_cost(g, &tot);
	assert_int_equal(node_named(g, "bn")->flops, 512);
	assert_int_equal(node_named(g, "bn")->params, 8); /* weight + bias */
	assert_int_equal(node_named(g, "relu")->flops, 256);
	assert_int_equal(node_named(g, "relu")->bytes_read, 1024);
	assert_int_equal(node_named(g, "relu")->bytes_written, 1024);
	assert_int_equal(node_named(g, "add")->flops, 256);
	assert_int_equal(node_named(g, "pool")->flops, 576);
	assert_int_equal(node_named(g, "gap")->flops, 64);
	assert_int_equal(node_named(g, "flat")->flops, 0);
	assert_int_equal(node_named(g, "sm")->flops, 12);
	assert_int_equal(tot.flops, 512 + 256 + 256 + 576 + 64 + 12);
	colloc_graph_destroy(g);
}

/* GridSample: Y [N, C, grid's spatial dims] for 4-D (opset 16) and 5-D
 * (opset 20) inputs; FLOPs 2 x taps per output element (bilinear 4 taps,
 * bicubic 16, trilinear 8, nearest none). */
static void test_grid_sample(void **state)
{
	static const char *const modes[] = {"bilinear", "bicubic", "nearest"};
	static const uint64_t per_elem[] = {8, 32, 0};
	struct colloc_diag diag;
	struct ob_model *m;
	Onnx__GraphProto *gp;
	Onnx__NodeProto *n;
	struct colloc_graph *g;

	(void)state;
	for (int k = 0; k < 3; k++) {
		m = ob_model_create(16);
		gp = ob_model_graph(m);
		ob_input(m, gp, "x", DT_FLOAT, "N,3,16,16");
		ob_input(m, gp, "grid", DT_FLOAT, "N,5,7,2");
		n = ob_node(m, gp, "GridSample", "gs", "x,grid", "y");
		ob_attr_string(m, n, "mode", modes[k]);
		g = load_infer(m, 2);
		expect_shape(g, "y", 2, 3, 5, 7);
		colloc_graph_cost(g, NULL);
		/* 2 x 3 x 5 x 7 = 210 output elements */
		assert_int_equal(node_named(g, "gs")->flops, 210 * per_elem[k]);
		colloc_graph_destroy(g);
	}
	/* 5-D, opset 20's default mode "linear": trilinear, 8 taps */
	m = ob_model_create(20);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "N,2,4,8,8");
	ob_input(m, gp, "grid", DT_FLOAT, "N,3,5,6,3");
	ob_node(m, gp, "GridSample", "gs", "x,grid", "y");
	g = load_infer(m, 1);
	expect_shape(g, "y", 1, 2, 3, 5, 6);
	colloc_graph_cost(g, NULL);
	assert_int_equal(node_named(g, "gs")->flops, 2 * 180 * 8);
	colloc_graph_destroy(g);
	/* a grid whose last dim is not the input's spatial rank */
	m = ob_model_create(16);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "N,3,16,16");
	ob_input(m, gp, "grid", DT_FLOAT, "N,5,7,3");
	ob_node(m, gp, "GridSample", "gs", "x,grid", "y");
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_ESHAPE);
	assert_contains(diag.msg,
			"node 0 (gs, GridSample): grid 'grid' must be [2, ..., 2]");
	colloc_graph_destroy(g);
	/* 1-D sampling: no PyTorch kernel */
	m = ob_model_create(20);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "N,3,16");
	ob_input(m, gp, "grid", DT_FLOAT, "N,5,1");
	ob_node(m, gp, "GridSample", "gs", "x,grid", "y");
	g = load(m);
	assert_int_equal(infer(g, 2, 0, NULL, &diag), COLLOC_EUNSUPPORTED);
	assert_contains(diag.msg, "GridSample of a rank-3 input");
	colloc_graph_destroy(g);
}

/* A weight read by two nodes counts once, at its first reader. */
static void test_cost_tied_params(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_param_totals pt;
	uint64_t sum = 0;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,4");
	ob_init_f32(m, gp, "w", "4,4", 0, NULL);
	ob_init_f32(m, gp, "onnx::Add_1", "4", 0, NULL);
	ob_node(m, gp, "MatMul", "first", "x,w", "a");
	ob_node(m, gp, "MatMul", "second", "a,w", "b");
	ob_node(m, gp, "Add", "add", "b,onnx::Add_1", "c");
	g = load_infer(m, 2);
	colloc_graph_cost(g, NULL);
	assert_int_equal(node_named(g, "first")->params, 16);
	assert_int_equal(node_named(g, "second")->params, 0);
	assert_int_equal(node_named(g, "add")->params, 0); /* a constant */
	assert_int_equal(node_named(g, "second")->bytes_read, 32 + 64);
	for (int k = 0; k < g->n_nodes; k++)
		sum += g->nodes[k].params;
	colloc_graph_param_totals(g, &pt);
	assert_int_equal(sum, pt.trainable);
	colloc_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_conv_transpose),
		cmocka_unit_test(test_pooling),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_einsum),
		cmocka_unit_test(test_reshape_folding),
		cmocka_unit_test(test_reshape_errors),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_squeeze_unsqueeze),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_transpose_flatten_expand),
		cmocka_unit_test(test_concat_range_where),
		cmocka_unit_test(test_reduce_and_pad),
		cmocka_unit_test(test_extreme_values),
		cmocka_unit_test(test_unbound_dim),
		cmocka_unit_test(test_unknown_binding),
		cmocka_unit_test(test_unknown_op),
		cmocka_unit_test(test_conv_channel_mismatch),
		cmocka_unit_test(test_reinfer_batch),
		cmocka_unit_test(test_cost_conv_gemm_matmul),
		cmocka_unit_test(test_cost_elementwise_norm_pool),
		cmocka_unit_test(test_cost_tied_params),
		cmocka_unit_test(test_grid_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
