/*
 * graph_int.h — internals of struct colloc_graph shared by the loader,
 * shape inference and costing. Not part of the public API.
 */
#ifndef COLLOC_GRAPH_INT_H
#define COLLOC_GRAPH_INT_H

#include "colloc/graph.h"
#include "common/arena.h"

struct colloc__graph_priv {
	struct colloc__arena arena; /* everything loaded from the file */
	struct colloc__arena scratch; /* values folded by inference */
	int *slots; /* name hash: tensor index or -1 */
	size_t n_slots; /* power of two */
	bool root; /* owns the arenas (not a subgraph) */
};

static inline struct colloc__graph_priv *colloc__priv(const struct colloc_graph *g)
{
	return (struct colloc__graph_priv *)g->priv_;
}

/* The graph of an ONNX model message built in memory (the hf: builder),
 * exactly as colloc_onnx_load_buffer() would load the message packed: the
 * same conversion and limits, without the wire format in between. mp is
 * only read; limits NULL = the defaults. */
struct Onnx__ModelProto;
struct colloc_onnx_limits;
struct colloc_diag;
int colloc__onnx_load_model(const struct Onnx__ModelProto *mp,
			    const struct colloc_onnx_limits *limits,
			    struct colloc_graph **out, struct colloc_diag *diag);

/* Classify initializers into parameters, buffers and constants. */
void colloc__graph_classify_params(struct colloc_graph *g);

/* FNV-1a, used for the name hash. */
uint64_t colloc__hash_str(const char *s);

/* A value of n elements in arena a, integer (i) or floating (f). */
struct colloc_value *colloc__value_new(struct colloc__arena *a, size_t n, bool is_float);

/* Element k of v as a double / as an int64 (converting as C casts do,
 * saturating for out-of-range floats). */
double colloc__value_get_f(const struct colloc_value *v, size_t k);
int64_t colloc__value_get_i(const struct colloc_value *v, size_t k);

/* (int64_t)d without C's undefined cases: NaN gives 0, values out of
 * range saturate. */
int64_t colloc__f64_to_i64(double d);

#endif
