/*
 * make_corpus.c — write the seed corpus of fuzz_onnx into a directory.
 *
 * Seeds are small models made with onnx_builder that between them reach
 * every part of the loader and most shape rules (valid ones, so that the
 * fuzzer starts from inputs that get past decoding), plus hand-made broken
 * bytes (truncation, wrong wire types, nesting bombs). The build makes this
 * program but never runs it; regenerate with
 *
 *   build/tests/make_corpus tests/fuzz/corpus/onnx
 *
 * Each seed stays under 8 KiB. Files written by libFuzzer into the same
 * directory are left alone.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_builder.h"

#define DT_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DT_UINT8 ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
#define DT_INT8 ONNX__TENSOR_PROTO__DATA_TYPE__INT8
#define DT_INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32
#define DT_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define DT_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define DT_FLOAT16 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
#define DT_DOUBLE ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE
#define DT_UINT64 ONNX__TENSOR_PROTO__DATA_TYPE__UINT64
#define DT_BFLOAT16 ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16

#define SEED_MAX_BYTES 8192

static const char *out_dir;
static int failures;

static void write_seed(const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	if (len > SEED_MAX_BYTES) {
		fprintf(stderr, "%s: %zu bytes, more than %d\n", name, len,
			SEED_MAX_BYTES);
		failures++;
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", out_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		failures++;
		return;
	}
	printf("%-32s %6zu bytes\n", name, len);
}

/* Pack m, write it, and optionally a truncated copy; destroys m. */
static void emit(const char *name, struct ob_model *m, size_t truncate_to)
{
	uint8_t *buf;
	size_t len;

	if (ob_model_pack(m, &buf, &len) != 0) {
		fprintf(stderr, "%s: packing failed\n", name);
		failures++;
		ob_model_destroy(m);
		return;
	}
	ob_model_destroy(m);
	write_seed(name, buf, truncate_to && truncate_to < len ? truncate_to : len);
	free(buf);
}

/* --- valid models ------------------------------------------------------------ */

static struct ob_model *mlp(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__NodeProto *n;

	ob_model_producer(m, "pytorch", "2.1.0");
	ob_input(m, g, "x", DT_FLOAT, "N,16");
	ob_init_f32(m, g, "fc1.weight", "32,16", 0, NULL);
	ob_init_f32(m, g, "fc1.bias", "32", 0, NULL);
	ob_init_f32(m, g, "fc2.weight", "10,32", 0, NULL);
	ob_init_f32(m, g, "fc2.bias", "10", OB_FLOATS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
	n = ob_node(m, g, "Gemm", "/fc1/Gemm", "x,fc1.weight,fc1.bias", "h");
	ob_attr_int(m, n, "transB", 1);
	ob_attr_float(m, n, "alpha", 1.0f);
	ob_node(m, g, "Relu", "/act/Relu", "h", "a");
	n = ob_node(m, g, "Gemm", "/fc2/Gemm", "a,fc2.weight,fc2.bias", "logits");
	ob_attr_int(m, n, "transB", 1);
	n = ob_node(m, g, "Softmax", "/Softmax", "logits", "probs");
	ob_attr_int(m, n, "axis", -1);
	ob_output(m, g, "probs", DT_FLOAT, "N,10");
	return m;
}

static struct ob_model *cnn(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__TensorProto *t;
	Onnx__NodeProto *n;

	ob_model_producer(m, "pytorch", "2.1.0");
	ob_input(m, g, "input", DT_FLOAT, "batch,3,32,32");
	t = ob_tensor(m, "conv1.weight", DT_FLOAT, "8,3,3,3");
	ob_tensor_external(m, t, "cnn.onnx.data");
	ob_init(m, g, t);
	ob_init_f32(m, g, "bn1.weight", "8", 0, NULL);
	ob_init_f32(m, g, "bn1.bias", "8", 0, NULL);
	ob_init_f32(m, g, "bn1.running_mean", "8", 0, NULL);
	ob_init_f32(m, g, "bn1.running_var", "8", 0, NULL);
	ob_init_f32(m, g, "conv2.weight", "8,1,3,3", 0, NULL);
	ob_init_f32(m, g, "fc.weight", "10,8", 0, NULL);
	ob_init_f32(m, g, "fc.bias", "10", 0, NULL);
	n = ob_node(m, g, "Conv", "/conv1/Conv", "input,conv1.weight", "c1");
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "dilations", OB_INTS(1, 1));
	ob_attr_int(m, n, "group", 1);
	n = ob_node(m, g, "BatchNormalization", "/bn1/BN",
		    "c1,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var", "b1");
	ob_attr_float(m, n, "epsilon", 1e-5f);
	ob_node(m, g, "Relu", "/relu/Relu", "b1", "r1");
	n = ob_node(m, g, "MaxPool", "/pool/MaxPool", "r1", "p1");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(3, 3));
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	ob_attr_int(m, n, "ceil_mode", 1);
	n = ob_node(m, g, "Conv", "/conv2/Conv", "p1,conv2.weight", "c2");
	ob_attr_int(m, n, "group", 8);
	ob_attr_string(m, n, "auto_pad", "SAME_UPPER");
	n = ob_node(m, g, "AveragePool", "/avg", "c2", "a2");
	ob_attr_ints(m, n, "kernel_shape", OB_INTS(2, 2));
	ob_node(m, g, "GlobalAveragePool", "/gap", "a2", "gp");
	ob_node(m, g, "Flatten", "/flatten", "gp", "f");
	n = ob_node(m, g, "Gemm", "/fc/Gemm", "f,fc.weight,fc.bias", "out");
	ob_attr_int(m, n, "transB", 1);
	ob_value_info(m, g, "c1", DT_FLOAT, "batch,8,16,16");
	ob_output(m, g, "out", DT_FLOAT, "batch,10");
	return m;
}

static struct ob_model *reshape_chain(void)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__NodeProto *n;

	ob_input(m, g, "x", DT_FLOAT, "N,3,4,5");
	ob_init_i64(m, g, "zero", "", OB_INTS(0));
	ob_init_i64(m, g, "axes0", "1", OB_INTS(0));
	ob_init_i64(m, g, "minus1", "1", OB_INTS(-1));
	ob_node(m, g, "Shape", "shape", "x", "s");
	n = ob_node(m, g, "Gather", "gather", "s,zero", "n");
	ob_attr_int(m, n, "axis", 0);
	ob_node(m, g, "Unsqueeze", "unsq", "n,axes0", "n1");
	n = ob_node(m, g, "Concat", "cat", "n1,minus1", "target");
	ob_attr_int(m, n, "axis", 0);
	ob_node(m, g, "Reshape", "view", "x,target", "y");
	ob_node(m, g, "Size", "size", "x", "sz");
	ob_output(m, g, "y", DT_FLOAT, NULL);
	return m;
}

/* A transformer block the way torch.onnx.export writes one, opset 13. */
static struct ob_model *transformer(void)
{
	struct ob_model *m = ob_model_create(13);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;

	ob_input(m, g, "ids", DT_INT64, "batch,seq");
	ob_input(m, g, "mask", DT_INT64, "batch,seq");
	ob_init_f32(m, g, "emb.weight", "100,16", 0, NULL);
	ob_init_f32(m, g, "pos", "64,16", 0, NULL);
	ob_init_f32(m, g, "ln.weight", "16", 0, NULL);
	ob_init_f32(m, g, "ln.bias", "16", 0, NULL);
	ob_init_f32(m, g, "qkv.weight", "16,48", 0, NULL);
	ob_init_f32(m, g, "proj.weight", "16,16", 0, NULL);
	ob_init_i64(m, g, "onnx::Slice_0", "1", OB_INTS(0));
	ob_init_i64(m, g, "onnx::Slice_1", "1", OB_INTS(1));
	ob_init_i64(m, g, "onnx::Split_2", "3", OB_INTS(16, 16, 16));
	ob_init_i64(m, g, "onnx::Reshape_3", "4", OB_INTS(0, 0, 2, 8));
	ob_init_i64(m, g, "onnx::Unsqueeze_4", "2", OB_INTS(1, 2));
	ob_init_i64(m, g, "onnx::Reshape_5", "3", OB_INTS(0, 0, 16));
	ob_init_i64(m, g, "onnx::ReduceSum_6", "1", OB_INTS(-1));
	ob_init_i64(m, g, "axis_max", "1", OB_INTS(INT64_MAX));
	t = ob_tensor(m, "scale", DT_FLOAT, "");
	ob_tensor_f32(m, t, OB_FLOATS(0.35355339f));
	ob_init(m, g, t);

	n = ob_node(m, g, "Gather", "/emb/Gather", "emb.weight,ids", "e");
	ob_attr_int(m, n, "axis", 0);
	ob_node(m, g, "Shape", "/Shape", "ids", "ids_shape");
	ob_node(m, g, "Slice", "/Slice", "ids_shape,onnx::Slice_1,axis_max,onnx::Slice_0",
		"seq_len");
	ob_node(m, g, "Slice", "/Slice_1", "pos,onnx::Slice_0,seq_len,onnx::Slice_0",
		"p");
	ob_node(m, g, "Add", "/Add", "e,p", "x");
	n = ob_node(m, g, "LayerNormalization", "/ln/LN", "x,ln.weight,ln.bias", "xn");
	ob_attr_int(m, n, "axis", -1);
	ob_attr_float(m, n, "epsilon", 1e-5f);
	ob_node(m, g, "MatMul", "/qkv/MatMul", "xn,qkv.weight", "qkv");
	n = ob_node(m, g, "Split", "/Split", "qkv,onnx::Split_2", "q,k,v");
	ob_attr_int(m, n, "axis", -1);
	ob_node(m, g, "Reshape", "/Reshape", "q,onnx::Reshape_3", "q4");
	ob_node(m, g, "Reshape", "/Reshape_1", "k,onnx::Reshape_3", "k4");
	ob_node(m, g, "Reshape", "/Reshape_2", "v,onnx::Reshape_3", "v4");
	n = ob_node(m, g, "Transpose", "/Transpose", "q4", "qt");
	ob_attr_ints(m, n, "perm", OB_INTS(0, 2, 1, 3));
	n = ob_node(m, g, "Transpose", "/Transpose_1", "k4", "kt");
	ob_attr_ints(m, n, "perm", OB_INTS(0, 2, 3, 1));
	n = ob_node(m, g, "Transpose", "/Transpose_2", "v4", "vt");
	ob_attr_ints(m, n, "perm", OB_INTS(0, 2, 1, 3));
	ob_node(m, g, "MatMul", "/MatMul", "qt,kt", "scores");
	ob_node(m, g, "Mul", "/Mul", "scores,scale", "scaled");
	ob_node(m, g, "Unsqueeze", "/Unsqueeze", "mask,onnx::Unsqueeze_4", "m4");
	n = ob_node(m, g, "Cast", "/Cast", "m4", "mb");
	ob_attr_int(m, n, "to", DT_BOOL);
	n = ob_node(m, g, "ConstantOfShape", "/ConstantOfShape", "ids_shape", "fill");
	t = ob_tensor(m, NULL, DT_FLOAT, "1");
	ob_tensor_f32(m, t, OB_FLOATS(-10000.0f));
	ob_attr_tensor(m, n, "value", t);
	ob_node(m, g, "Where", "/Where", "mb,scaled,scale", "masked");
	n = ob_node(m, g, "Softmax", "/Softmax", "masked", "attn");
	ob_attr_int(m, n, "axis", -1);
	ob_node(m, g, "MatMul", "/MatMul_1", "attn,vt", "ctx");
	n = ob_node(m, g, "Transpose", "/Transpose_3", "ctx", "ctxt");
	ob_attr_ints(m, n, "perm", OB_INTS(0, 2, 1, 3));
	ob_node(m, g, "Reshape", "/Reshape_3", "ctxt,onnx::Reshape_5", "merged");
	ob_node(m, g, "MatMul", "/proj/MatMul", "merged,proj.weight", "o");
	ob_node(m, g, "Erf", "/Erf", "o", "oe");
	ob_node(m, g, "ReduceSum", "/ReduceSum", "oe,onnx::ReduceSum_6", "rs");
	n = ob_node(m, g, "ReduceMean", "/ReduceMean", "oe", "pooled");
	ob_attr_ints(m, n, "axes", OB_INTS(1));
	ob_attr_int(m, n, "keepdims", 0);
	ob_output(m, g, "pooled", DT_FLOAT, "batch,16");
	ob_output(m, g, "rs", DT_FLOAT, NULL);
	ob_output(m, g, "fill", DT_FLOAT, NULL);
	return m;
}

static struct ob_model *control_flow(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m), *then_g, *else_g, *inner;
	Onnx__NodeProto *n, *nested;

	ob_input(m, g, "cond", DT_BOOL, "");
	ob_input(m, g, "x", DT_FLOAT, "N,4");
	ob_node(m, g, "Relu", "pre", "x", "r");
	n = ob_node(m, g, "If", "if", "cond", "y");
	then_g = ob_graph_new(m, "then");
	nested = ob_node(m, then_g, "If", "inner_if", "cond", "t1");
	inner = ob_graph_new(m, "inner");
	ob_node(m, inner, "Neg", NULL, "r", "t2");
	ob_output(m, inner, "t2", DT_FLOAT, NULL);
	ob_attr_graph(m, nested, "then_branch", inner);
	ob_attr_graph(m, nested, "else_branch", inner);
	ob_output(m, then_g, "t1", DT_FLOAT, NULL);
	else_g = ob_graph_new(m, "else");
	ob_node(m, else_g, "Identity", NULL, "x", "e1");
	ob_output(m, else_g, "e1", DT_FLOAT, NULL);
	ob_attr_graph(m, n, "then_branch", then_g);
	ob_attr_graph(m, n, "else_branch", else_g);
	ob_output(m, g, "y", DT_FLOAT, NULL);
	return m;
}

/* Constants of every kind and the ops that fold them. */
static struct ob_model *constants(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;

	ob_input(m, g, "x", DT_FLOAT, "2,6");
	ob_attr_ints(m, ob_node(m, g, "Constant", NULL, "", "ci"), "value_ints",
		     OB_INTS(3, 4));
	ob_attr_int(m, ob_node(m, g, "Constant", NULL, "", "c1"), "value_int", 2);
	ob_attr_float(m, ob_node(m, g, "Constant", NULL, "", "cf"), "value_float", 1.5f);
	ob_attr_floats(m, ob_node(m, g, "Constant", NULL, "", "cfs"), "value_floats",
		       OB_FLOATS(1.0f, 2.0f));
	n = ob_node(m, g, "Constant", NULL, "", "ct");
	t = ob_tensor(m, NULL, DT_INT64, "2,2");
	ob_tensor_i64(m, t, OB_INTS(1, 0, 0, 5));
	ob_attr_tensor(m, n, "value", t);
	ob_node(m, g, "Mul", NULL, "ci,c1", "prod");
	ob_node(m, g, "Sub", NULL, "prod,c1", "diff");
	ob_node(m, g, "Div", NULL, "diff,c1", "quot");
	ob_attr_int(m, ob_node(m, g, "Mod", NULL, "diff,ci", "rem"), "fmod", 0);
	ob_node(m, g, "Neg", NULL, "quot", "neg");
	ob_node(m, g, "Abs", NULL, "neg", "abs");
	ob_node(m, g, "Max", NULL, "abs,c1", "mx");
	ob_node(m, g, "Equal", NULL, "mx,c1", "eq");
	ob_node(m, g, "Not", NULL, "eq", "ne");
	ob_node(m, g, "NonZero", NULL, "ct", "nz");
	ob_node(m, g, "Tile", NULL, "x,ci", "tiled");
	n = ob_node(m, g, "TopK", NULL, "x,c1", "vals,idx");
	ob_attr_int(m, n, "axis", 1);
	n = ob_node(m, g, "ArgMax", NULL, "x", "am");
	ob_attr_int(m, n, "axis", 1);
	ob_attr_int(m, n, "keepdims", 0);
	ob_node(m, g, "Range", NULL, "c1,cf,c1", "rg");
	ob_node(m, g, "Pow", NULL, "cfs,cf", "pw");
	ob_node(m, g, "Sqrt", NULL, "pw", "sq");
	ob_node(m, g, "Floor", NULL, "sq", "fl");
	ob_attr_int(m, ob_node(m, g, "Cast", NULL, "fl", "fi"), "to", DT_INT64);
	ob_node(m, g, "ConstantOfShape", NULL, "ci", "zeros");
	ob_node(m, g, "Expand", NULL, "c1,ci", "ex");
	ob_attr_int(m, ob_node(m, g, "ReduceProd", NULL, "ci", "numel"), "keepdims", 0);
	ob_output(m, g, "numel", DT_INT64, "");
	return m;
}

/* Every dtype in raw_data and typed fields, and the shapes they feed. */
static struct ob_model *dtypes(void)
{
	static const uint8_t f16[4] = {0x00, 0x3c, 0x00, 0xc0};
	static const uint8_t bf16[4] = {0x80, 0x3f, 0x00, 0x40};
	static const uint8_t i8[3] = {0xff, 0x01, 0x80};
	static const uint8_t u64[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t b[2] = {1, 0};
	static const uint8_t f64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x3f};
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__TensorProto *t;

	ob_input(m, g, "x", DT_FLOAT16, "N,2");
	t = ob_init(m, g, ob_tensor(m, "h", DT_FLOAT16, "2"));
	ob_tensor_raw(m, t, f16, sizeof(f16));
	t = ob_init(m, g, ob_tensor(m, "bf", DT_BFLOAT16, "2"));
	ob_tensor_raw(m, t, bf16, sizeof(bf16));
	t = ob_init(m, g, ob_tensor(m, "i8", DT_INT8, "3"));
	ob_tensor_raw(m, t, i8, sizeof(i8));
	t = ob_init(m, g, ob_tensor(m, "u64", DT_UINT64, "1"));
	ob_tensor_raw(m, t, u64, sizeof(u64));
	t = ob_init(m, g, ob_tensor(m, "mask", DT_BOOL, "2"));
	ob_tensor_raw(m, t, b, sizeof(b));
	t = ob_init(m, g, ob_tensor(m, "d", DT_DOUBLE, "1"));
	ob_tensor_raw(m, t, f64, sizeof(f64));
	t = ob_init(m, g, ob_tensor(m, "i32", DT_INT32, "2"));
	{
		/* static: the model does not own it */
		static int32_t v[2] = {-7, 9};

		t->int32_data = v;
		t->n_int32_data = 2;
	}
	ob_init(m, g, ob_tensor(m, "u8", DT_UINT8, "0"));
	ob_node(m, g, "Add", "add", "x,h", "y");
	ob_node(m, g, "Where", "where", "mask,y,h", "w");
	ob_output(m, g, "w", DT_FLOAT16, NULL);
	return m;
}

/* Opset 18: axes and pads as inputs, Split with num_outputs. */
static struct ob_model *opset18(void)
{
	struct ob_model *m = ob_model_create(18);
	Onnx__GraphProto *g = ob_model_graph(m);
	Onnx__NodeProto *n;

	ob_input(m, g, "x", DT_FLOAT, "N,3,10,10");
	ob_init_i64(m, g, "ax", "2", OB_INTS(2, 3));
	ob_init_i64(m, g, "pads", "4", OB_INTS(1, 1, 2, 2));
	ob_node(m, g, "Pad", "pad", "x,pads,,ax", "p");
	n = ob_node(m, g, "ReduceMean", "rm", "p,ax", "r");
	ob_attr_int(m, n, "keepdims", 1);
	n = ob_node(m, g, "Split", "split", "x", "s0,s1,s2");
	ob_attr_int(m, n, "axis", 2);
	ob_attr_int(m, n, "num_outputs", 3);
	n = ob_node(m, g, "Resize", "up", "x,,scales_c", "u");
	ob_init_f32(m, g, "scales_c", "4", OB_FLOATS(1.0f, 1.0f, 2.0f, 2.0f));
	/* the initializer is declared after its reader on purpose: the
	 * loader reads initializers first */
	ob_attr_string(m, n, "mode", "nearest");
	n = ob_node(m, g, "ConvTranspose", "deconv", "x,wt", "dt");
	ob_init_f32(m, g, "wt", "3,2,4,4", 0, NULL);
	ob_attr_ints(m, n, "strides", OB_INTS(2, 2));
	ob_attr_ints(m, n, "pads", OB_INTS(1, 1, 1, 1));
	return m;
}

/* --- extreme values ----------------------------------------------------------
 * Each of these once made shape inference or the loader run into undefined
 * behaviour (overflow, NaN to integer); kept as regression seeds. */

static Onnx__TensorProto *scalar_f32(struct ob_model *m, Onnx__GraphProto *g,
				     const char *name, float v)
{
	Onnx__TensorProto *t = ob_tensor(m, name, DT_FLOAT, "");

	ob_tensor_f32(m, t, 1, &v);
	return ob_init(m, g, t);
}

static void edge_seeds(void)
{
	struct ob_model *m;
	Onnx__GraphProto *g;
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_init_i64(m, g, "a", "1", OB_INTS(-4));
	ob_node(m, g, "Sqrt", NULL, "a", "y");
	emit("edge_sqrt_negative_int", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_init_i64(m, g, "a", "1", OB_INTS(10));
	ob_init_i64(m, g, "b", "1", OB_INTS(30));
	ob_node(m, g, "Pow", NULL, "a,b", "y");
	emit("edge_pow_overflow", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_init_i64(m, g, "s", "", OB_INTS(INT64_MAX - 5000));
	ob_init_i64(m, g, "l", "", OB_INTS(INT64_MAX));
	ob_init_i64(m, g, "d", "", OB_INTS(5100));
	ob_node(m, g, "Range", NULL, "s,l,d", "y");
	emit("edge_range_int64_max", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	scalar_f32(m, g, "s", 1e30f);
	scalar_f32(m, g, "l", 2e30f);
	scalar_f32(m, g, "d", 1e29f);
	ob_node(m, g, "Range", NULL, "s,l,d", "y");
	emit("edge_range_huge_float", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_input(m, g, "x", DT_FLOAT, "1,1,1099511627776");
	ob_init_f32(m, g, "w", "1,1,1", 0, NULL);
	n = ob_node(m, g, "ConvTranspose", NULL, "x,w", "y");
	ob_attr_ints(m, n, "strides", OB_INTS(2147483647));
	emit("edge_convtranspose_stride", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_input(m, g, "x", DT_FLOAT, "1,1,4");
	ob_init_f32(m, g, "w", "1,1,1", 0, NULL);
	n = ob_node(m, g, "ConvTranspose", NULL, "x,w", "y");
	ob_attr_ints(m, n, "output_padding", OB_INTS(INT64_MAX));
	emit("edge_convtranspose_outpad", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_input(m, g, "x", DT_FLOAT, "1,10");
	ob_init_i64(m, g, "st", "2", OB_INTS(9, 0));
	ob_init_i64(m, g, "en", "2", OB_INTS(0, 10));
	ob_init_i64(m, g, "ax", "1", OB_INTS(1));
	ob_init_i64(m, g, "mn", "1", OB_INTS(INT64_MIN));
	ob_init_i64(m, g, "mx", "1", OB_INTS(INT64_MAX));
	ob_init_i64(m, g, "s9", "1", OB_INTS(9));
	ob_init_i64(m, g, "s0", "1", OB_INTS(0));
	ob_init_i64(m, g, "s10", "1", OB_INTS(10));
	ob_node(m, g, "Slice", NULL, "x,s9,s0,ax,mn", "a");
	ob_node(m, g, "Slice", NULL, "x,s0,s10,ax,mx", "b");
	emit("edge_slice_extreme_steps", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_input(m, g, "x", DT_FLOAT, "1,9223372036854775807");
	n = ob_node(m, g, "Split", NULL, "x", "a,b");
	ob_attr_int(m, n, "axis", 1);
	ob_node(m, g, "Flatten", NULL, "x", "f");
	emit("edge_split_huge_dim", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	t = ob_tensor(m, "w", DT_INT64, "3");
	ob_tensor_f32(m, t, OB_FLOATS(1e30f, -1e30f, NAN));
	ob_init(m, g, t);
	ob_node(m, g, "Reshape", NULL, "w,w", "y");
	emit("edge_float_data_to_int", m, 0);

	m = ob_model_create(13);
	g = ob_model_graph(m);
	ob_input(m, g, "x", DT_FLOAT, "1,3,4,4");
	ob_init_f32(m, g, "scales", "4", OB_FLOATS(1.0f, 1.0f, 1e30f, -2.0f));
	ob_node(m, g, "Resize", NULL, "x,,scales", "y");
	emit("edge_resize_huge_scale", m, 0);
}

/* --- malformed models --------------------------------------------------------- */

static struct ob_model *raw_mismatch(void)
{
	struct ob_model *m = mlp();
	Onnx__TensorProto *t = ob_tensor(m, "bad", DT_FLOAT, "2,3");
	static const uint8_t raw[20] = {0};

	ob_tensor_raw(m, t, raw, sizeof(raw));
	ob_init(m, ob_model_graph(m), t);
	return m;
}

static struct ob_model *rank9(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);

	ob_input(m, g, "x", DT_FLOAT, "1,1,1,1,1,1,1,1,1");
	ob_node(m, g, "Relu", NULL, "x", "y");
	return m;
}

static struct ob_model *bad_refs(void)
{
	struct ob_model *m = ob_model_create(17);
	Onnx__GraphProto *g = ob_model_graph(m);

	ob_input(m, g, "x", DT_FLOAT, "N,4");
	ob_node(m, g, "Relu", "r1", "later", "a");
	ob_node(m, g, "Relu", "r2", "x", "later");
	ob_node(m, g, "Relu", "r3", "x", "a");
	return m;
}

static void nesting_bomb(const char *name, const uint8_t *head, size_t n_head,
			 const uint8_t *cycle, size_t n_cycle, size_t levels)
{
	size_t len;
	uint8_t *buf = ob_nesting_bomb(head, n_head, cycle, n_cycle, levels, &len);

	write_seed(name, buf, len);
	free(buf);
}

static void malformed_bytes(void)
{
	static const uint8_t graph_head[] = {7};
	static const uint8_t graph_cycle[] = {1, 5, 6};
	static const uint8_t type_head[] = {7, 11, 2};
	static const uint8_t type_cycle[] = {4, 1};
	/* ModelProto.graph (7) as a varint, then as fixed64 */
	static const uint8_t wire_varint[] = {0x38, 0x01, 0x08, 0x08};
	static const uint8_t wire_fixed64[] = {0x39, 1, 2, 3, 4, 5, 6, 7, 8};
	/* GraphProto.node (1) as a varint inside a valid graph field */
	static const uint8_t inner_varint[] = {0x3a, 0x02, 0x08, 0x05};
	/* a group start (wire type 3) */
	static const uint8_t group[] = {0x0b, 0x0c};
	/* length runs past the end */
	static const uint8_t overlong[] = {0x3a, 0xff, 0xff, 0xff, 0x7f, 0x00};
	/* an 11-byte varint */
	static const uint8_t longvar[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	uint8_t garbage[256];
	uint64_t s = 0x2545f4914f6cdd1dull;

	nesting_bomb("bomb_graph", graph_head, 1, graph_cycle, 3, 400);
	nesting_bomb("bomb_type", type_head, 3, type_cycle, 2, 400);
	nesting_bomb("near_limit_graph", graph_head, 1, graph_cycle, 3, 64);
	write_seed("wire_varint", wire_varint, sizeof(wire_varint));
	write_seed("wire_fixed64", wire_fixed64, sizeof(wire_fixed64));
	write_seed("wire_inner_varint", inner_varint, sizeof(inner_varint));
	write_seed("wire_group", group, sizeof(group));
	write_seed("wire_overlong", overlong, sizeof(overlong));
	write_seed("wire_longvarint", longvar, sizeof(longvar));
	write_seed("empty", garbage, 0);
	for (size_t k = 0; k < sizeof(garbage); k++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		garbage[k] = (uint8_t)s;
	}
	write_seed("garbage", garbage, sizeof(garbage));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	emit("mlp", mlp(), 0);
	emit("cnn", cnn(), 0);
	emit("reshape_chain", reshape_chain(), 0);
	emit("transformer", transformer(), 0);
	emit("control_flow", control_flow(), 0);
	emit("constants", constants(), 0);
	emit("dtypes", dtypes(), 0);
	emit("opset18", opset18(), 0);
	emit("bad_raw_data", raw_mismatch(), 0);
	emit("bad_rank9", rank9(), 0);
	emit("bad_refs", bad_refs(), 0);
	emit("trunc_cnn", cnn(), 300);
	emit("trunc_transformer", transformer(), 777);
	edge_seeds();
	malformed_bytes();
	return failures ? 1 : 0;
}
