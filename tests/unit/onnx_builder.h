/*
 * onnx_builder.h — build small ONNX models in memory for tests and seeds.
 *
 * Tests describe the model they need in a few calls (inputs, initializers,
 * nodes, attributes) instead of shipping binary fixtures; ob_model_pack()
 * serialises it with the protobuf-c code generated from onnx.proto, so the
 * bytes are exactly what colloc_onnx_load_buffer() reads from a real file.
 *
 * Ownership: a struct ob_model owns every protobuf struct, string and array
 * made through it; ob_model_destroy() frees them all. The functions return
 * the protobuf structs they create so that a test can tweak fields the
 * helpers do not cover (that memory must then stay owned by the model, or be
 * static). ob_model_pack() returns a malloc'd buffer the caller frees.
 *
 * Not for production: allocation failure aborts, and nothing is validated —
 * building malformed models is the point.
 *
 * Dimension lists are strings: "N,3,224,224" gives a symbolic first dim and
 * three concrete ones, "?" a dim with neither value nor name, "" a scalar
 * (rank 0); NULL means "no shape at all".
 */
#ifndef COLLOC_TEST_ONNX_BUILDER_H
#define COLLOC_TEST_ONNX_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

/* Count and pointer of an int64 list literal: ob_attr_ints(m, n, "pads",
 * OB_INTS(1, 1, 1, 1)). */
#define OB_INTS(...)                                                \
	(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
		((const int64_t[]){__VA_ARGS__})
#define OB_FLOATS(...)                                          \
	(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)), \
		((const float[]){__VA_ARGS__})

struct ob_model;

/* A model with ir_version 8, one default-domain opset import of version
 * opset (none when opset <= 0) and an empty main graph called "g". */
struct ob_model *ob_model_create(int64_t opset);
void ob_model_destroy(struct ob_model *m);

Onnx__ModelProto *ob_model_proto(struct ob_model *m);
Onnx__GraphProto *ob_model_graph(struct ob_model *m);
void ob_model_producer(struct ob_model *m, const char *name, const char *version);
/* Add an opset import (domain NULL or "" is the default domain). */
void ob_model_opset(struct ob_model *m, const char *domain, int64_t version);

/* Serialise into a malloc'd buffer (*buf, *len). Returns 0, or -1. */
int ob_model_pack(const struct ob_model *m, uint8_t **buf, size_t *len);

/* A detached graph, for GRAPH attributes (If branches, Loop bodies). */
Onnx__GraphProto *ob_graph_new(struct ob_model *m, const char *name);

/* Graph inputs, outputs and value_info. dtype 0 leaves the type out. */
Onnx__ValueInfoProto *ob_input(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       int dtype, const char *dims);
Onnx__ValueInfoProto *ob_output(struct ob_model *m, Onnx__GraphProto *g, const char *name,
				int dtype, const char *dims);
Onnx__ValueInfoProto *ob_value_info(struct ob_model *m, Onnx__GraphProto *g,
				    const char *name, int dtype, const char *dims);

/* A TensorProto with dims (numbers only) and no data yet. */
Onnx__TensorProto *ob_tensor(struct ob_model *m, const char *name, int dtype,
			     const char *dims);
void ob_tensor_i64(struct ob_model *m, Onnx__TensorProto *t, size_t n, const int64_t *v);
void ob_tensor_f32(struct ob_model *m, Onnx__TensorProto *t, size_t n, const float *v);
void ob_tensor_raw(struct ob_model *m, Onnx__TensorProto *t, const void *data,
		   size_t len);
/* data_location = EXTERNAL with a "location" entry; no data inline. */
void ob_tensor_external(struct ob_model *m, Onnx__TensorProto *t, const char *location);

/* Append t to g's initializers; returns t. */
Onnx__TensorProto *ob_init(struct ob_model *m, Onnx__GraphProto *g, Onnx__TensorProto *t);
/* Shorthands: an initializer with inline int64 / float data (v may be NULL
 * for a float initializer whose weights were stripped). */
Onnx__TensorProto *ob_init_i64(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       const char *dims, size_t n, const int64_t *v);
Onnx__TensorProto *ob_init_f32(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       const char *dims, size_t n, const float *v);

/* A node; inputs and outputs are comma-separated names ("x,,w": the
 * middle input omitted). name may be NULL. */
Onnx__NodeProto *ob_node(struct ob_model *m, Onnx__GraphProto *g, const char *op_type,
			 const char *name, const char *inputs, const char *outputs);

void ob_attr_int(struct ob_model *m, Onnx__NodeProto *n, const char *name, int64_t v);
void ob_attr_ints(struct ob_model *m, Onnx__NodeProto *n, const char *name, size_t count,
		  const int64_t *v);
void ob_attr_float(struct ob_model *m, Onnx__NodeProto *n, const char *name, float v);
void ob_attr_floats(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    size_t count, const float *v);
void ob_attr_string(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    const char *v);
void ob_attr_tensor(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    Onnx__TensorProto *t);
void ob_attr_graph(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		   Onnx__GraphProto *sub);

/*
 * Hand-made protobuf bytes, for the loader's nesting limits: `levels`
 * length-delimited fields, each the only content of the one before. The
 * field number of level k is head[k] for the first n_head levels, then
 * cycles through cycle[]. Returns a malloc'd buffer of *len bytes (abort()s
 * when out of memory).
 */
uint8_t *ob_nesting_bomb(const uint8_t *head, size_t n_head, const uint8_t *cycle,
			 size_t n_cycle, size_t levels, size_t *len);

#endif
