/*
 * graph.c — IR helpers: dtypes, lookups, sizes, destruction.
 *
 * Building a graph is the loader's job (onnx_load.c); shapes are
 * shape.c's; this file holds what every reader of the IR needs.
 */
#include "model/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	size_t size;
} dtypes[COLLOC_DT_COUNT_] = {
	[COLLOC_DT_UNDEFINED] = {"undefined", 0},
	[COLLOC_DT_FLOAT] = {"float32", 4},
	[COLLOC_DT_UINT8] = {"uint8", 1},
	[COLLOC_DT_INT8] = {"int8", 1},
	[COLLOC_DT_UINT16] = {"uint16", 2},
	[COLLOC_DT_INT16] = {"int16", 2},
	[COLLOC_DT_INT32] = {"int32", 4},
	[COLLOC_DT_INT64] = {"int64", 8},
	[COLLOC_DT_STRING] = {"string", 0},
	[COLLOC_DT_BOOL] = {"bool", 1},
	[COLLOC_DT_FLOAT16] = {"float16", 2},
	[COLLOC_DT_DOUBLE] = {"float64", 8},
	[COLLOC_DT_UINT32] = {"uint32", 4},
	[COLLOC_DT_UINT64] = {"uint64", 8},
	[COLLOC_DT_COMPLEX64] = {"complex64", 8},
	[COLLOC_DT_COMPLEX128] = {"complex128", 16},
	[COLLOC_DT_BFLOAT16] = {"bfloat16", 2},
};

const char *colloc_dtype_name(int dtype)
{
	if (dtype < 0 || dtype >= COLLOC_DT_COUNT_)
		return "undefined";
	return dtypes[dtype].name;
}

size_t colloc_dtype_size(int dtype)
{
	if (dtype < 0 || dtype >= COLLOC_DT_COUNT_)
		return 0;
	return dtypes[dtype].size;
}

bool colloc_dtype_is_float(int dtype)
{
	return dtype == COLLOC_DT_FLOAT || dtype == COLLOC_DT_FLOAT16 ||
	       dtype == COLLOC_DT_DOUBLE || dtype == COLLOC_DT_BFLOAT16;
}

uint64_t colloc__hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return h;
}

int colloc_graph_find_tensor(const struct colloc_graph *g, const char *name)
{
	const struct colloc__graph_priv *p = colloc__priv(g);
	size_t h;

	if (!p || !p->slots || !name)
		return -1;
	h = (size_t)colloc__hash_str(name) & (p->n_slots - 1);
	while (p->slots[h] >= 0) {
		if (strcmp(g->tensors[p->slots[h]].name, name) == 0)
			return p->slots[h];
		h = (h + 1) & (p->n_slots - 1);
	}
	return -1;
}

void colloc_graph_destroy(struct colloc_graph *g)
{
	struct colloc__graph_priv *p;

	if (!g)
		return;
	p = colloc__priv(g);
	if (!p->root)
		return; /* subgraphs live in their root's arena */
	colloc__arena_fini(&p->scratch);
	/* g and p themselves live in the arena: finish it last, by copy. */
	{
		struct colloc__arena arena = p->arena;

		colloc__arena_fini(&arena);
	}
}

const struct colloc_attr *colloc_node_attr(const struct colloc_node *n, const char *name)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

int64_t colloc_node_attr_int(const struct colloc_node *n, const char *name, int64_t def)
{
	const struct colloc_attr *a = colloc_node_attr(n, name);

	return a && a->type == COLLOC_ATTR_INT ? a->i : def;
}

double colloc_node_attr_float(const struct colloc_node *n, const char *name, double def)
{
	const struct colloc_attr *a = colloc_node_attr(n, name);

	return a && a->type == COLLOC_ATTR_FLOAT ? a->f : def;
}

static uint64_t numel_of(int rank, const int64_t *dims)
{
	uint64_t n = 1;

	if (rank < 0)
		return 0;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return 0;
		if (dims[i] != 0 && n > UINT64_MAX / (uint64_t)dims[i])
			return 0;
		n *= (uint64_t)dims[i];
	}
	return n;
}

uint64_t colloc_tensor_numel(const struct colloc_tensor *t)
{
	return numel_of(t->rank, t->shape);
}

uint64_t colloc_tensor_bytes(const struct colloc_tensor *t)
{
	uint64_t n = colloc_tensor_numel(t);
	uint64_t sz = colloc_dtype_size(t->dtype);

	if (sz && n > UINT64_MAX / sz)
		return UINT64_MAX;
	return n * sz;
}

uint64_t colloc_tensor_decl_numel(const struct colloc_tensor *t)
{
	int64_t dims[COLLOC_MAX_RANK];

	if (t->decl_rank < 0)
		return 0;
	for (int i = 0; i < t->decl_rank; i++)
		dims[i] = t->decl[i].value;
	return numel_of(t->decl_rank, dims);
}

void colloc_graph_param_totals(const struct colloc_graph *g,
			       struct colloc_param_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < g->n_tensors; i++) {
		const struct colloc_tensor *t = &g->tensors[i];
		uint64_t n = colloc_tensor_decl_numel(t);
		uint64_t b = n * colloc_dtype_size(t->dtype);

		switch (t->param_class) {
		case COLLOC_PARAM_TRAINABLE:
			out->trainable += n;
			out->trainable_bytes += b;
			out->trainable_tensors++;
			break;
		case COLLOC_PARAM_BUFFER:
			if (t->frozen) {
				out->frozen += n;
				out->frozen_bytes += b;
				break;
			}
			out->buffers += n;
			out->buffer_bytes += b;
			break;
		case COLLOC_PARAM_CONSTANT:
			out->constants += n;
			break;
		case COLLOC_PARAM_NONE:
			break;
		}
	}
	/* torch.onnx.export drops num_batches_tracked (an int64 scalar per
	 * _BatchNorm module) because no output depends on it. */
	out->buffers += (uint64_t)g->n_batchnorm;
	out->buffer_bytes += 8u * (uint64_t)g->n_batchnorm;
}

const char *colloc_node_describe(const struct colloc_graph *g, int node, char *buf,
				 size_t len)
{
	const struct colloc_node *n = &g->nodes[node];

	if (n->name && n->name[0])
		snprintf(buf, len, "node %d (%s, %s)", node, n->name, n->op_type);
	else
		snprintf(buf, len, "node %d (%s)", node, n->op_type);
	return buf;
}
