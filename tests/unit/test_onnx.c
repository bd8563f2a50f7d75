/*
 * test_onnx.c — the ONNX loader (onnx_load.c) and parameter classification
 * (params.c), on models built in memory with onnx_builder.
 *
 * Covers what a valid file turns into (roles, inputs, opset, producer,
 * values), each structural check the loader promises with its error code and
 * message, every limit, and hostile bytes: nesting bombs, every truncation
 * of a valid model, random garbage.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colloc/graph.h"
#include "colloc/onnx.h"
#include "onnx_builder.h"

#define DT_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DT_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define DT_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define DT_FLOAT16 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16

#define assert_contains(hay, needle)                                              \
	do {                                                                      \
		if (!strstr((hay), (needle))) {                                   \
			print_error("\"%s\"\n  does not contain \"%s\"\n", (hay), \
				    (needle));                                    \
			fail();                                                   \
		}                                                                 \
	} while (0)

/* Pack m (and destroy it), load with limits; returns the loader's code. */
static int load_with(struct ob_model *m, const struct colloc_onnx_limits *lim,
		     struct colloc_graph **g, struct colloc_diag *diag)
{
	uint8_t *buf;
	size_t len;
	int rc;

	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	colloc_diag_clear(diag);
	rc = colloc_onnx_load_buffer(buf, len, lim, g, diag);
	free(buf);
	if (rc)
		assert_null(*g);
	return rc;
}

static struct colloc_graph *load_ok(struct ob_model *m)
{
	struct colloc_graph *g = NULL;
	struct colloc_diag diag = {""};
	int rc = load_with(m, NULL, &g, &diag);

	if (rc) {
		print_error("load failed (%d): %s\n", rc, diag.msg);
		fail();
	}
	assert_non_null(g);
	return g;
}

static const struct colloc_tensor *tensor(const struct colloc_graph *g, const char *name)
{
	int k = colloc_graph_find_tensor(g, name);

	if (k < 0) {
		print_error("no tensor '%s'\n", name);
		fail();
	}
	return &g->tensors[k];
}

/* x[N,4] -> Gemm(fc.weight[3,4], fc.bias[3], transB) -> Relu -> z */
static struct ob_model *tiny_model(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);
	float w[12];
	Onnx__NodeProto *n;

	for (int k = 0; k < 12; k++)
		w[k] = (float)k;
	ob_model_producer(m, "pytorch", "2.1.0");
	ob_model_opset(m, "com.microsoft", 1);
	ob_input(m, g, "x", DT_FLOAT, "N,4");
	ob_input(m, g, "fc.weight", DT_FLOAT, "3,4"); /* also an initializer */
	ob_init_f32(m, g, "fc.weight", "3,4", 12, w);
	ob_init_f32(m, g, "fc.bias", "3", OB_FLOATS(0.5f, -1.0f, 2.0f));
	n = ob_node(m, g, "Gemm", "fc", "x,fc.weight,fc.bias", "y");
	ob_attr_int(m, n, "transB", 1);
	ob_attr_float(m, n, "alpha", 1.0f);
	ob_node(m, g, "Relu", "act", "y", "z");
	ob_output(m, g, "z", DT_FLOAT, "N,3");
	return m;
}

static void test_valid_tiny_model(void **state)
{
	struct colloc_graph *g = load_ok(tiny_model());
	const struct colloc_tensor *x, *w, *b, *y, *z;
	const struct colloc_node *fc;

	(void)state;
	assert_int_equal(g->opset, 17);
	assert_int_equal(g->ir_version, 8);
	assert_string_equal(g->producer, "pytorch 2.1.0");
	assert_string_equal(g->name, "g");
	assert_int_equal(g->n_tensors, 5);
	assert_int_equal(g->n_nodes, 2);
	assert_int_equal(g->n_batchnorm, 0);

	/* fc.weight is listed as a graph input too, but is not a user input */
	assert_int_equal(g->n_inputs, 1);
	x = &g->tensors[g->inputs[0]];
	assert_string_equal(x->name, "x");
	assert_int_equal(x->role, COLLOC_TENSOR_INPUT);
	assert_int_equal(x->dtype, COLLOC_DT_FLOAT);
	assert_int_equal(x->decl_rank, 2);
	assert_string_equal(x->decl[0].symbol, "N");
	assert_int_equal(x->decl[0].value, -1);
	assert_null(x->decl[1].symbol);
	assert_int_equal(x->decl[1].value, 4);
	assert_int_equal(x->rank, -1);
	assert_int_equal(x->producer, -1);
	assert_int_equal(x->consumers, 1);
	assert_int_equal(x->param_class, COLLOC_PARAM_NONE);

	w = tensor(g, "fc.weight");
	assert_int_equal(w->role, COLLOC_TENSOR_INITIALIZER);
	assert_int_equal(w->param_class, COLLOC_PARAM_TRAINABLE);
	assert_false(w->external);
	assert_int_equal(w->decl_rank, 2);
	assert_int_equal(w->decl[0].value, 3);
	assert_int_equal(w->decl[1].value, 4);
	assert_non_null(w->value);
	assert_int_equal(w->value->n, 12);
	assert_non_null(w->value->f);
	assert_null(w->value->i);
	assert_true(w->value->f[5] == 5.0);
	assert_true(w->value->f[11] == 11.0);

	b = tensor(g, "fc.bias");
	assert_int_equal(b->value->n, 3);
	assert_true(b->value->f[1] == -1.0);

	y = tensor(g, "y");
	z = tensor(g, "z");
	assert_int_equal(y->role, COLLOC_TENSOR_ACTIVATION);
	assert_int_equal(y->producer, 0);
	assert_int_equal(y->consumers, 1);
	assert_int_equal(z->producer, 1);
	assert_int_equal(z->consumers, 0);
	assert_int_equal(z->decl_rank, 2); /* from the graph output */
	assert_int_equal(g->n_outputs, 1);
	assert_ptr_equal(&g->tensors[g->outputs[0]], z);

	fc = &g->nodes[0];
	assert_string_equal(fc->name, "fc");
	assert_string_equal(fc->op_type, "Gemm");
	assert_string_equal(fc->domain, "");
	assert_int_equal(fc->n_inputs, 3);
	assert_ptr_equal(&g->tensors[fc->inputs[1]], w);
	assert_int_equal(fc->n_outputs, 1);
	assert_ptr_equal(&g->tensors[fc->outputs[0]], y);
	assert_int_equal(fc->n_attrs, 2);
	assert_int_equal(colloc_node_attr_int(fc, "transB", 0), 1);
	assert_int_equal(colloc_node_attr_int(fc, "transA", 7), 7);
	assert_true(colloc_node_attr_float(fc, "alpha", 0) == 1.0);
	/* a reader of the wrong type gets the default */
	assert_true(colloc_node_attr_float(fc, "transB", -2.0) == -2.0);
	assert_int_equal(fc->flops, 0);
	assert_int_equal(colloc_graph_find_tensor(g, "nope"), -1);
	colloc_graph_destroy(g);
}

static void test_opset_and_producer_absent(void **state)
{
	struct ob_model *m = ob_model_create(0);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;

	(void)state;
	ob_model_opset(m, "ai.onnx", 11);
	ob_model_opset(m, "ai.onnx.ml", 3);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", NULL, "x", "y");
	ob_output(m, gp, "y", 0, NULL);
	g = load_ok(m);
	assert_int_equal(g->opset, 11);
	assert_string_equal(g->producer, "");
	assert_string_equal(g->nodes[0].name, "");
	colloc_graph_destroy(g);
	colloc_graph_destroy(NULL);
}

static void test_external_and_stripped_initializers(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__TensorProto *t;
	struct colloc_graph *g;
	const struct colloc_tensor *w, *b;
	struct colloc_param_totals tot;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,3,224,224");
	t = ob_tensor(m, "conv1.weight", DT_FLOAT, "64,3,7,7");
	ob_tensor_external(m, t, "model.onnx.data");
	ob_init(m, gp, t);
	ob_init_f32(m, gp, "conv1.bias", "64", 0, NULL); /* stripped */
	ob_node(m, gp, "Conv", "conv1", "x,conv1.weight,conv1.bias", "y");
	ob_output(m, gp, "y", DT_FLOAT, NULL);
	g = load_ok(m);

	w = tensor(g, "conv1.weight");
	assert_true(w->external);
	assert_null(w->value);
	assert_int_equal(w->dtype, COLLOC_DT_FLOAT);
	assert_int_equal(w->decl_rank, 4);
	assert_int_equal(w->decl[0].value, 64);
	assert_int_equal(w->decl[3].value, 7);
	assert_int_equal(colloc_tensor_decl_numel(w), 64 * 3 * 7 * 7);
	b = tensor(g, "conv1.bias");
	assert_false(b->external);
	assert_null(b->value);
	assert_int_equal(b->decl_rank, 1);
	assert_int_equal(b->decl[0].value, 64);

	colloc_graph_param_totals(g, &tot);
	assert_int_equal(tot.trainable, 9408 + 64);
	assert_int_equal(tot.trainable_bytes, 4 * (9408 + 64));
	assert_int_equal(tot.trainable_tensors, 2);
	assert_int_equal(tot.buffers, 0);
	assert_int_equal(tot.constants, 0);
	colloc_graph_destroy(g);
}

static void test_raw_data(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	/* little-endian int64 7 and -1; float16 1.0 and -2.0 */
	static const uint8_t i64[16] = {7,    0,    0,	  0,	0,    0,    0,	  0,
					0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t f16[4] = {0x00, 0x3c, 0x00, 0xc0};
	Onnx__TensorProto *t;
	struct colloc_graph *g;
	const struct colloc_tensor *a, *h;

	(void)state;
	t = ob_tensor(m, "a", DT_INT64, "2");
	ob_tensor_raw(m, t, i64, sizeof(i64));
	ob_init(m, gp, t);
	t = ob_tensor(m, "h", DT_FLOAT16, "2");
	ob_tensor_raw(m, t, f16, sizeof(f16));
	ob_init(m, gp, t);
	ob_node(m, gp, "Add", "add", "h,h", "y");
	ob_output(m, gp, "y", 0, NULL);
	g = load_ok(m);
	a = tensor(g, "a");
	assert_non_null(a->value);
	assert_non_null(a->value->i);
	assert_int_equal(a->value->n, 2);
	assert_int_equal(a->value->i[0], 7);
	assert_int_equal(a->value->i[1], -1);
	assert_int_equal(a->param_class, COLLOC_PARAM_BUFFER);
	h = tensor(g, "h");
	assert_non_null(h->value->f);
	assert_true(h->value->f[0] == 1.0);
	assert_true(h->value->f[1] == -2.0);
	colloc_graph_destroy(g);
}

static void test_raw_data_size_mismatch(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	uint8_t raw[20] = {0};
	Onnx__TensorProto *t;
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	t = ob_tensor(m, "fc.weight", DT_FLOAT, "2,3");
	ob_tensor_raw(m, t, raw, sizeof(raw));
	ob_init(m, gp, t);
	ob_input(m, gp, "x", DT_FLOAT, "1,3");
	ob_node(m, gp, "MatMul", "mm", "x,fc.weight", "y");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "initializer 'fc.weight'");
	assert_contains(diag.msg, "20 bytes");
}

static void test_typed_data_count_mismatch(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_init_i64(m, gp, "shape", "3", OB_INTS(1, 2));
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "initializer 'shape'");
	assert_contains(diag.msg, "holds 2 values, expected 3");
}

/* Two typed fields whose counts add up to the element count: only one of
 * them may carry the data, and neither may be read past its end. */
static void test_typed_data_two_fields(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__TensorProto *t;
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	t = ob_tensor(m, "w", DT_FLOAT, "2");
	ob_tensor_f32(m, t, OB_FLOATS(1.0f));
	ob_tensor_i64(m, t, OB_INTS(2));
	ob_init(m, gp, t);
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "initializer 'w'");
}

static void test_bad_dtype(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_init(m, gp, ob_tensor(m, "w", 0, "2"));
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "initializer 'w': missing or unknown data_type");
}

static void test_undefined_node_input(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", "r1", "x", "a");
	ob_node(m, gp, "Add", "add", "a,nope", "b");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "node 1 (add, Add)");
	assert_contains(diag.msg, "input 1 'nope'");
}

static void test_nodes_out_of_order(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", NULL, "b", "a");
	ob_node(m, gp, "Relu", NULL, "x", "b");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "node 0 (Relu): input 0 'b'");
}

static void test_tensor_produced_twice(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", "r1", "x", "a");
	ob_node(m, gp, "Sigmoid", "s1", "x", "a");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "node 1 (s1, Sigmoid)");
	assert_contains(diag.msg, "output 'a' is already defined by an earlier node");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", "r1", "x", "x");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "output 'x' is already defined as an input");
}

static void test_duplicate_definitions(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_init_i64(m, gp, "k", "1", OB_INTS(1));
	ob_init_i64(m, gp, "k", "1", OB_INTS(2));
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "initializer 'k' is defined twice");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_input(m, gp, "x", DT_FLOAT, "1");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "graph input 'x' is listed twice");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_output(m, gp, "ghost", DT_FLOAT, "1");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_contains(diag.msg, "graph output 'ghost' is never produced");
}

static void test_rank_limit(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "1,1,1,1,1,1,1,1,1");
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "tensor 'x': rank 9 exceeds the maximum of 8");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_init_f32(m, gp, "w", "1,1,1,1,1,1,1,1,2", 0, NULL);
	assert_int_equal(load_with(m, NULL, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "initializer 'w': rank 9");

	/* rank 8 is fine */
	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1,1,1,1,1,1,1,2");
	ob_init_f32(m, gp, "w", "1,1,1,1,1,1,1,2", 0, NULL);
	g = load_ok(m);
	assert_int_equal(tensor(g, "x")->decl_rank, 8);
	assert_int_equal(tensor(g, "w")->decl_rank, 8);
	colloc_graph_destroy(g);
}

static struct ob_model *relu_chain(int n)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	char in[16], out[16];

	ob_input(m, gp, "t0", DT_FLOAT, "1");
	for (int k = 0; k < n; k++) {
		snprintf(in, sizeof(in), "t%d", k);
		snprintf(out, sizeof(out), "t%d", k + 1);
		ob_node(m, gp, "Relu", NULL, in, out);
	}
	return m;
}

static void test_node_limit(void **state)
{
	struct colloc_onnx_limits lim = {0};
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	lim.max_nodes = 4;
	assert_int_equal(load_with(relu_chain(5), &lim, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "graph has 5 nodes, more than the limit of 4");
	assert_int_equal(load_with(relu_chain(4), &lim, &g, &diag), 0);
	assert_int_equal(g->n_nodes, 4);
	colloc_graph_destroy(g);
}

static void test_string_limit(void **state)
{
	struct colloc_onnx_limits lim = {0};
	struct ob_model *m;
	Onnx__GraphProto *gp;
	Onnx__NodeProto *n;
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	lim.max_string_bytes = 16;
	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", "abcdefghijklmnopq", "x", "y"); /* 17 bytes */
	assert_int_equal(load_with(m, &lim, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "node name is longer than 16 bytes");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	ob_node(m, gp, "Relu", "abcdefghijklmnop", "x", "y"); /* 16 bytes */
	assert_int_equal(load_with(m, &lim, &g, &diag), 0);
	assert_string_equal(g->nodes[0].name, "abcdefghijklmnop");
	colloc_graph_destroy(g);

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "x", DT_FLOAT, "1");
	n = ob_node(m, gp, "Relu", "r", "x", "y");
	ob_attr_string(m, n, "mode", "abcdefghijklmnopqrstuvwxyz");
	assert_int_equal(load_with(m, &lim, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "node 0 (r, Relu): attribute 'mode' is longer than 16");

	m = ob_model_create(17);
	gp = ob_model_graph(m);
	ob_input(m, gp, "input_with_a_long_name", DT_FLOAT, "1");
	assert_int_equal(load_with(m, &lim, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "input name is longer than 16 bytes");
}

static void test_attr_elem_limit(void **state)
{
	struct colloc_onnx_limits lim = {0};
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	lim.max_attr_elems = 3;
	ob_input(m, gp, "x", DT_FLOAT, "1,1,4,4");
	n = ob_node(m, gp, "MaxPool", "pool", "x", "y");
	ob_attr_ints(m, n, "pads", OB_INTS(0, 0, 0, 0));
	assert_int_equal(load_with(m, &lim, &g, &diag), COLLOC_ELIMIT);
	assert_contains(diag.msg, "attribute 'pads' has more than 3 elements");
}

/* Main graph: If(cond) whose then_branch nests `levels` graphs deep; the
 * innermost one reads outer_name (declared by the main graph). */
static struct ob_model *nested_ifs(int levels, const char *outer_name)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__NodeProto *n;
	char name[32];

	ob_input(m, gp, "cond", DT_BOOL, "");
	ob_input(m, gp, "x", DT_FLOAT, "2");
	n = ob_node(m, gp, "If", "if_0", "cond", "y");
	ob_output(m, gp, "y", DT_FLOAT, NULL);
	for (int k = 1; k <= levels; k++) {
		Onnx__GraphProto *sub;

		snprintf(name, sizeof(name), "level_%d", k);
		sub = ob_graph_new(m, name);
		ob_attr_graph(m, n, "then_branch", sub);
		snprintf(name, sizeof(name), "o_%d", k);
		if (k < levels) {
			n = ob_node(m, sub, "If", NULL, "cond", name);
		} else {
			ob_node(m, sub, "Identity", NULL, outer_name, name);
		}
		ob_output(m, sub, name, DT_FLOAT, NULL);
	}
	return m;
}

static void test_subgraph_depth_limit(void **state)
{
	struct colloc_onnx_limits lim = {0};
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;
	const struct colloc_attr *a;

	(void)state;
	lim.max_depth = 3;
	assert_int_equal(load_with(nested_ifs(3, "cond"), &lim, &g, &diag), 0);
	a = colloc_node_attr(&g->nodes[0], "then_branch");
	assert_non_null(a);
	assert_int_equal(a->type, COLLOC_ATTR_GRAPH);
	assert_string_equal(a->g->name, "level_1");
	assert_int_equal(a->g->n_nodes, 1);
	assert_string_equal(a->g->nodes[0].op_type, "If");
	/* cond comes from the enclosing scope: an implicit input */
	assert_int_equal(a->g->tensors[a->g->nodes[0].inputs[0]].role,
			 COLLOC_TENSOR_INPUT);
	colloc_graph_destroy(g);

	assert_int_equal(load_with(nested_ifs(4, "cond"), &lim, &g, &diag),
			 COLLOC_ELIMIT);
	assert_contains(diag.msg, "subgraphs nested deeper than 3");
	assert_contains(diag.msg, "node 0 (if_0, If): subgraph 'then_branch'");

	/* defaults: 8 levels */
	assert_int_equal(load_with(nested_ifs(8, "cond"), NULL, &g, &diag), 0);
	colloc_graph_destroy(g);
	assert_int_equal(load_with(nested_ifs(9, "cond"), NULL, &g, &diag),
			 COLLOC_ELIMIT);
	assert_contains(diag.msg, "subgraphs nested deeper than 8");
}

/* A subgraph may read any enclosing scope, not only its parent's. */
static void test_subgraph_reads_outer_scopes(void **state)
{
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;

	(void)state;
	assert_int_equal(load_with(nested_ifs(3, "x"), NULL, &g, &diag), 0);
	colloc_graph_destroy(g);
	assert_int_equal(load_with(nested_ifs(3, "nowhere"), NULL, &g, &diag),
			 COLLOC_EFORMAT);
	assert_contains(diag.msg, "input 0 'nowhere'");
}

static void test_nesting_bombs(void **state)
{
	/* ModelProto.graph > GraphProto.node > NodeProto.attribute >
	 * AttributeProto.g > GraphProto.node ... */
	static const uint8_t graph_head[] = {7};
	static const uint8_t graph_cycle[] = {1, 5, 6};
	/* ModelProto.graph > GraphProto.input > ValueInfoProto.type >
	 * TypeProto.sequence_type > Sequence.elem_type > ... */
	static const uint8_t type_head[] = {7, 11, 2};
	static const uint8_t type_cycle[] = {4, 1};
	/* an unknown field: opaque bytes, never descended into */
	static const uint8_t unknown[] = {15};
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;
	uint8_t *buf;
	size_t len;

	(void)state;
	buf = ob_nesting_bomb(graph_head, 1, graph_cycle, 3, 100000, &len);
	assert_true(len > 300000);
	assert_int_equal(colloc_onnx_load_buffer(buf, len, NULL, &g, &diag),
			 COLLOC_ELIMIT);
	assert_null(g);
	assert_contains(diag.msg, "protobuf messages nested deeper than 64");
	free(buf);

	buf = ob_nesting_bomb(type_head, 3, type_cycle, 2, 100000, &len);
	assert_int_equal(colloc_onnx_load_buffer(buf, len, NULL, &g, &diag),
			 COLLOC_ELIMIT);
	assert_null(g);
	free(buf);

	buf = ob_nesting_bomb(unknown, 0, unknown, 1, 100000, &len);
	assert_int_equal(colloc_onnx_load_buffer(buf, len, NULL, &g, &diag),
			 COLLOC_EFORMAT);
	assert_null(g);
	assert_contains(diag.msg, "ONNX model has no graph");
	free(buf);

	/* just under the limit: decodes, then fails for a reason of its own */
	buf = ob_nesting_bomb(graph_head, 1, graph_cycle, 3, 64, &len);
	assert_int_equal(colloc_onnx_load_buffer(buf, len, NULL, &g, &diag),
			 COLLOC_EFORMAT);
	assert_null(g);
	free(buf);
}

/* A model touching most of the loader: If subgraph, every attribute type,
 * value_info, external data, a Constant with a tensor. */
static struct ob_model *rich_model(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m), *sub;
	Onnx__TensorProto *t;
	Onnx__NodeProto *n;

	ob_model_producer(m, "pytorch", "2.1.0");
	ob_input(m, gp, "x", DT_FLOAT, "N,3,8,8");
	ob_input(m, gp, "cond", DT_BOOL, "");
	t = ob_tensor(m, "conv.weight", DT_FLOAT, "4,3,3,3");
	ob_tensor_external(m, t, "w.bin");
	ob_init(m, gp, t);
	ob_init_i64(m, gp, "shape", "2", OB_INTS(0, -1));
	n = ob_node(m, gp, "Conv", "conv", "x,conv.weight", "c");
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_string(m, n, "auto_pad", "NOTSET");
	ob_attr_floats(m, n, "unused", OB_FLOATS(0.25f, 4.0f));
	ob_value_info(m, gp, "c", DT_FLOAT, "N,4,8,8");
	n = ob_node(m, gp, "Constant", "k", "", "kc");
	t = ob_tensor(m, NULL, DT_INT64, "1");
	ob_tensor_i64(m, t, OB_INTS(3));
	ob_attr_tensor(m, n, "value", t);
	ob_node(m, gp, "Reshape", "flat", "c,shape", "r");
	n = ob_node(m, gp, "If", "branch", "cond", "out");
	sub = ob_graph_new(m, "then");
	ob_node(m, sub, "Identity", NULL, "r", "t_out");
	ob_output(m, sub, "t_out", DT_FLOAT, NULL);
	ob_attr_graph(m, n, "then_branch", sub);
	sub = ob_graph_new(m, "else");
	ob_node(m, sub, "Neg", NULL, "r", "e_out");
	ob_output(m, sub, "e_out", DT_FLOAT, NULL);
	ob_attr_graph(m, n, "else_branch", sub);
	ob_output(m, gp, "out", DT_FLOAT, "N,?");
	ob_output(m, gp, "kc", DT_INT64, "1");
	return m;
}

static void test_rich_model_loads(void **state)
{
	struct colloc_graph *g = load_ok(rich_model());
	const struct colloc_attr *a;

	(void)state;
	assert_int_equal(g->n_nodes, 4);
	assert_int_equal(tensor(g, "c")->decl_rank, 4);
	assert_string_equal(tensor(g, "c")->decl[0].symbol, "N");
	a = colloc_node_attr(&g->nodes[0], "auto_pad");
	assert_int_equal(a->type, COLLOC_ATTR_STRING);
	assert_string_equal(a->s, "NOTSET");
	a = colloc_node_attr(&g->nodes[0], "unused");
	assert_int_equal(a->type, COLLOC_ATTR_FLOATS);
	assert_int_equal(a->n, 2);
	assert_true(a->floats[1] == 4.0);
	a = colloc_node_attr(&g->nodes[1], "value");
	assert_int_equal(a->type, COLLOC_ATTR_TENSOR);
	assert_int_equal(a->t_dtype, COLLOC_DT_INT64);
	assert_int_equal(a->t_rank, 1);
	assert_int_equal(a->t_dims[0], 1);
	assert_int_equal(a->t_value->i[0], 3);
	a = colloc_node_attr(&g->nodes[3], "else_branch");
	assert_int_equal(a->type, COLLOC_ATTR_GRAPH);
	assert_string_equal(a->g->nodes[0].op_type, "Neg");
	assert_int_equal(tensor(g, "out")->decl[1].value, -1);
	assert_null(tensor(g, "out")->decl[1].symbol);
	colloc_graph_destroy(g);
}

/* Every proper prefix of a valid model either loads or fails cleanly; the
 * prefix sits in a buffer of exactly its size so ASan sees any overread. */
static void test_truncated_prefixes(void **state)
{
	struct ob_model *m = rich_model();
	uint8_t *buf;
	size_t len;
	int ok = 0;

	(void)state;
	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	assert_true(len > 300);
	for (size_t k = 0; k <= len; k++) {
		uint8_t *p = malloc(k ? k : 1);
		struct colloc_graph *g = (struct colloc_graph *)1;
		struct colloc_diag diag = {""};
		int rc;

		assert_non_null(p);
		memcpy(p, buf, k);
		rc = colloc_onnx_load_buffer(p, k, NULL, &g, &diag);
		if (rc == 0) {
			assert_non_null(g);
			colloc_graph_destroy(g);
			ok++;
		} else {
			assert_true(rc < 0);
			assert_null(g);
			assert_true(diag.msg[0] != '\0');
		}
		free(p);
	}
	/* at least the whole model */
	assert_true(ok >= 1);
	free(buf);
}

static void test_empty_buffer(void **state)
{
	struct colloc_graph *g = (struct colloc_graph *)1;
	struct colloc_diag diag;
	uint8_t byte = 0;

	(void)state;
	assert_int_equal(colloc_onnx_load_buffer(&byte, 0, NULL, &g, &diag),
			 COLLOC_EFORMAT);
	assert_null(g);
	assert_string_equal(diag.msg, "empty file");
	/* diag may be NULL */
	assert_int_equal(colloc_onnx_load_buffer(&byte, 0, NULL, &g, NULL),
			 COLLOC_EFORMAT);
}

static void test_file_size_limit(void **state)
{
	struct colloc_onnx_limits lim = {0};
	struct ob_model *m = tiny_model();
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	lim.max_file_bytes = len - 1;
	assert_int_equal(colloc_onnx_load_buffer(buf, len, &lim, &g, &diag),
			 COLLOC_ELIMIT);
	assert_contains(diag.msg, "more than the limit of");
	lim.max_file_bytes = len;
	assert_int_equal(colloc_onnx_load_buffer(buf, len, &lim, &g, &diag), 0);
	colloc_graph_destroy(g);
	free(buf);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_random_garbage(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int failed = 0;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		size_t len = 1 + (size_t)(xorshift(&seed) % 300);
		uint8_t *p = malloc(len);
		struct colloc_graph *g = NULL;
		struct colloc_diag diag = {""};
		int rc;

		assert_non_null(p);
		for (size_t k = 0; k < len; k++)
			p[k] = (uint8_t)xorshift(&seed);
		/* a third start like a model with a graph, to get further */
		if (round % 3 == 0 && len > 3) {
			p[0] = 7 << 3 | 2;
			p[1] = (uint8_t)((len - 2) & 0x7f);
		}
		rc = colloc_onnx_load_buffer(p, len, NULL, &g, &diag);
		if (rc == 0) {
			assert_non_null(g);
			colloc_graph_destroy(g);
		} else {
			assert_true(rc < 0);
			assert_null(g);
			failed++;
		}
		free(p);
	}
	assert_true(failed > 2500);
}

/* A Conv whose weight is an exporter-made constant (BatchNorm folded into
 * it by an eval-mode export) is refused with the re-export command; the
 * same graph with the module's own weight name passes. */
static struct colloc_graph *conv_with_weight(const char *wname)
{
	struct ob_model *m = ob_model_create(14);
	Onnx__GraphProto *gp = ob_model_graph(m);
	Onnx__TensorProto *w = ob_tensor(m, wname, 1, "4,3,3,3");
	char ins[96];

	ob_tensor_external(m, w, "weights");
	ob_init(m, gp, w);
	ob_input(m, gp, "x", 1, "batch,3,8,8");
	snprintf(ins, sizeof(ins), "x,%s", wname);
	ob_node(m, gp, "Conv", "/conv1/Conv", ins, "y");
	ob_output(m, gp, "y", 1, "batch,4,6,6");
	return load_ok(m);
}

static void test_folded_params_refused(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g;

	(void)state;
	g = conv_with_weight("onnx::Conv_193");
	assert_int_equal(colloc_graph_check_params(g, &diag), COLLOC_EUNSUPPORTED);
	assert_non_null(strstr(diag.msg, "onnx::Conv_193"));
	assert_non_null(strstr(diag.msg, "do_constant_folding=False"));
	colloc_graph_destroy(g);
	g = conv_with_weight("conv1.weight");
	assert_int_equal(colloc_graph_check_params(g, &diag), 0);
	colloc_graph_destroy(g);
}

/* Files that are not ONNX graphs but often handed in as models are named,
 * with the command that would make one; a near miss is not. */
static void test_foreign_formats(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *says;
	} cases[] = {
		{"PK\3\4\0\0\0\0archive/data.pkl\0\0\0\0", 28, "PyTorch checkpoint"},
		{"PK\3\4\0\0\0\0m/data/0\0\0m/constants.pkl", 33, "TorchScript"},
		{"PK\3\4\0\0\0\0readme.txt", 18, "zip archive"},
		{"\x80\x02}q\0(X\6\0\0\0weight", 18, "pickle"},
		{"\x10\0\0\0\0\0\0\0{\"w\":{\"dtype\":1}}", 24, "safetensors"},
		{"GGUF\3\0\0\0", 8, "GGUF"},
	};
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(colloc_onnx_load_buffer(cases[i].bytes, cases[i].len,
							 NULL, &g, &diag),
				 COLLOC_EFORMAT);
		assert_null(g);
		assert_non_null(strstr(diag.msg, cases[i].says));
		assert_non_null(strstr(diag.msg, "torch.onnx.export"));
	}
	/* a '{' at byte 8 after a huge "header length" is not safetensors */
	assert_int_not_equal(colloc_onnx_load_buffer("\xff\xff\xff\xff\xff\xff\xff\xff{}",
						     10, NULL, &g, &diag),
			     0);
	assert_null(strstr(diag.msg, "safetensors"));
}

static void test_load_file(void **state)
{
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;
	const char *missing = "/nonexistent-colloc-dir/model.onnx";
	char path[] = "/tmp/colloc-test-XXXXXX";
	struct ob_model *m = tiny_model();
	uint8_t *buf;
	size_t len;
	int fd;

	(void)state;
	assert_int_equal(colloc_onnx_load_file(missing, NULL, &g, &diag), -ENOENT);
	assert_null(g);
	assert_contains(diag.msg, missing);

	assert_int_equal(colloc_onnx_load_file("/", NULL, &g, &diag), COLLOC_EUSAGE);
	assert_null(g);
	assert_contains(diag.msg, "/: not a regular file");

	assert_int_equal(ob_model_pack(m, &buf, &len), 0);
	ob_model_destroy(m);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	assert_int_equal(colloc_onnx_load_file(path, NULL, &g, &diag), 0);
	assert_int_equal(g->n_nodes, 2);
	colloc_graph_destroy(g);

	/* errors from the buffer loader carry the path */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\x3a\x05", 2), 2);
	close(fd);
	assert_int_equal(colloc_onnx_load_file(path, NULL, &g, &diag), COLLOC_EFORMAT);
	assert_null(g);
	assert_contains(diag.msg, path);
	assert_contains(diag.msg, "not an ONNX model");
	unlink(path);
	free(buf);
}

/* conv1 -> bn1 -> ..., with one initializer of each class. */
static void test_param_classification(void **state)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_graph *g;
	struct colloc_param_totals tot;

	(void)state;
	ob_input(m, gp, "x", DT_FLOAT, "N,3,8,8");
	ob_init_f32(m, gp, "conv1.weight", "4,3,3,3", 0, NULL);
	ob_init_f32(m, gp, "bn1.weight", "4", 0, NULL);
	ob_init_f32(m, gp, "bn1.bias", "4", 0, NULL);
	ob_init_f32(m, gp, "bn1.running_mean", "4", 0, NULL);
	ob_init_f32(m, gp, "bn1.running_var", "4", 0, NULL);
	ob_init_f32(m, gp, "bn2.weight", "4", 0, NULL);
	ob_init_f32(m, gp, "bn2.bias", "4", 0, NULL);
	ob_init_f32(m, gp, "bn2.running_mean", "4", 0, NULL);
	ob_init_f32(m, gp, "bn2.running_var", "4", 0, NULL);
	ob_init_i64(m, gp, "relative_position_index", "5", OB_INTS(0, 1, 2, 3, 4));
	ob_init_f32(m, gp, "onnx::Mul_12", "1", OB_FLOATS(2.0f));
	ob_init_i64(m, gp, "onnx::Reshape_5", "2", OB_INTS(0, -1));
	ob_init_f32(m, gp, "123", "3", 0, NULL);
	ob_init_f32(m, gp, "/layer/Constant_output_0", "2", 0, NULL);
	ob_init_f32(m, gp, "_scale", "1", 0, NULL);
	ob_node(m, gp, "Conv", "conv1", "x,conv1.weight", "c");
	ob_node(m, gp, "BatchNormalization", "bn1",
		"c,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var", "b1");
	ob_node(m, gp, "BatchNormalization", "bn2",
		"b1,bn2.weight,bn2.bias,bn2.running_mean,bn2.running_var", "b2");
	ob_node(m, gp, "Mul", NULL, "b2,onnx::Mul_12", "y");
	g = load_ok(m);

	assert_int_equal(tensor(g, "conv1.weight")->param_class, COLLOC_PARAM_TRAINABLE);
	assert_int_equal(tensor(g, "bn1.weight")->param_class, COLLOC_PARAM_TRAINABLE);
	assert_int_equal(tensor(g, "bn1.bias")->param_class, COLLOC_PARAM_TRAINABLE);
	assert_int_equal(tensor(g, "bn1.running_mean")->param_class, COLLOC_PARAM_BUFFER);
	assert_int_equal(tensor(g, "bn1.running_var")->param_class, COLLOC_PARAM_BUFFER);
	assert_int_equal(tensor(g, "bn2.running_var")->param_class, COLLOC_PARAM_BUFFER);
	assert_int_equal(tensor(g, "relative_position_index")->param_class,
			 COLLOC_PARAM_BUFFER);
	assert_int_equal(tensor(g, "onnx::Mul_12")->param_class, COLLOC_PARAM_CONSTANT);
	assert_int_equal(tensor(g, "onnx::Reshape_5")->param_class,
			 COLLOC_PARAM_CONSTANT);
	assert_int_equal(tensor(g, "123")->param_class, COLLOC_PARAM_CONSTANT);
	assert_int_equal(tensor(g, "/layer/Constant_output_0")->param_class,
			 COLLOC_PARAM_CONSTANT);
	assert_int_equal(tensor(g, "_scale")->param_class, COLLOC_PARAM_CONSTANT);
	assert_int_equal(tensor(g, "x")->param_class, COLLOC_PARAM_NONE);
	assert_int_equal(tensor(g, "c")->param_class, COLLOC_PARAM_NONE);
	assert_int_equal(g->n_batchnorm, 2);

	colloc_graph_param_totals(g, &tot);
	/* conv 108 + two BN affine pairs 16 */
	assert_int_equal(tot.trainable, 124);
	assert_int_equal(tot.trainable_bytes, 496);
	assert_int_equal(tot.trainable_tensors, 5);
	/* running stats 16 float + index 5 int64 + num_batches_tracked x 2 */
	assert_int_equal(tot.buffers, 16 + 5 + 2);
	assert_int_equal(tot.buffer_bytes, 16 * 4 + 5 * 8 + 2 * 8);
	assert_int_equal(tot.constants, 1 + 2 + 3 + 2 + 1);
	colloc_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_tiny_model),
		cmocka_unit_test(test_opset_and_producer_absent),
		cmocka_unit_test(test_external_and_stripped_initializers),
		cmocka_unit_test(test_raw_data),
		cmocka_unit_test(test_raw_data_size_mismatch),
		cmocka_unit_test(test_typed_data_count_mismatch),
		cmocka_unit_test(test_typed_data_two_fields),
		cmocka_unit_test(test_bad_dtype),
		cmocka_unit_test(test_undefined_node_input),
		cmocka_unit_test(test_nodes_out_of_order),
		cmocka_unit_test(test_tensor_produced_twice),
		cmocka_unit_test(test_duplicate_definitions),
		cmocka_unit_test(test_rank_limit),
		cmocka_unit_test(test_node_limit),
		cmocka_unit_test(test_string_limit),
		cmocka_unit_test(test_attr_elem_limit),
		cmocka_unit_test(test_subgraph_depth_limit),
		cmocka_unit_test(test_subgraph_reads_outer_scopes),
		cmocka_unit_test(test_nesting_bombs),
		cmocka_unit_test(test_rich_model_loads),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_empty_buffer),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_foreign_formats),
		cmocka_unit_test(test_folded_params_refused),
		cmocka_unit_test(test_param_classification),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
