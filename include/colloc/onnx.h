/*
 * colloc/onnx.h — load an ONNX model file into a struct colloc_graph.
 *
 * Decoding is done by protobuf-c with code generated at build time from the
 * system's onnx.proto; this module bounds what it accepts, converts the
 * protobuf tree into the IR and throws the tree away. Graph-only files are
 * accepted: initializers whose data is external (and possibly absent) keep
 * their dims and dtype, which is all colloc needs. Weights are never read.
 *
 * The loader checks structure (names resolve, no tensor produced twice, nodes
 * in topological order, ranks and string lengths within limits, subgraph
 * nesting bounded) and reports the first problem with the node's index, name
 * and op type. It does not check op semantics; shape inference does.
 */
#ifndef COLLOC_ONNX_H
#define COLLOC_ONNX_H

#include <stddef.h>

#include "colloc/error.h"
#include "colloc/graph.h"

/* Bounds on what a file may contain. Zero fields take the defaults. */
struct colloc_onnx_limits {
	size_t max_file_bytes; /* default 2 GiB */
	size_t max_nodes; /* default 1,000,000 */
	size_t max_tensors; /* default 4,000,000 */
	size_t max_string_bytes; /* names, op types, attribute strings: 64 KiB */
	size_t max_attr_elems; /* ints / floats / strings per attribute: 1 M */
	size_t max_value_elems; /* inline data kept for shape math: 1 M */
	int max_depth; /* subgraph nesting: 8; protobuf nesting 64 */
};

/*
 * Parse the ONNX model in buf[0..len) into a new graph stored in *out.
 * limits may be NULL. On failure returns a negative code, leaves *out NULL
 * and explains in diag. buf is not retained.
 */
int colloc_onnx_load_buffer(const void *buf, size_t len,
			    const struct colloc_onnx_limits *limits,
			    struct colloc_graph **out, struct colloc_diag *diag);

/* Read and parse the file at path; errors are prefixed with the path. */
int colloc_onnx_load_file(const char *path, const struct colloc_onnx_limits *limits,
			  struct colloc_graph **out, struct colloc_diag *diag);

#endif
