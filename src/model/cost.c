/*
 * cost.c — forward FLOPs and bytes moved per node, by the rules in
 * docs/flops.md. The Python reference counter (tools/zoo_reference.py)
 * implements the same table on ATen ops; tests/unit/test_zoo.c checks the
 * two agree.
 */
#include "colloc/cost.h"

#include <stdlib.h>
#include <string.h>

#include "model/graph_int.h"
#include "model/ops.h"
#include "model/shape_int.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static const struct colloc_tensor *tin(const struct colloc_graph *g,
				       const struct colloc_node *n, int k)
{
	if (k >= n->n_inputs || n->inputs[k] < 0)
		return NULL;
	return &g->tensors[n->inputs[k]];
}

static const struct colloc_tensor *tout(const struct colloc_graph *g,
					const struct colloc_node *n, int k)
{
	if (k >= n->n_outputs || n->outputs[k] < 0)
		return NULL;
	return &g->tensors[n->outputs[k]];
}

static uint64_t node_flops(const struct colloc_graph *g, const struct colloc_node *n)
{
	const struct colloc_tensor *x = tin(g, n, 0), *w = tin(g, n, 1),
				   *y = tout(g, n, 0);
	const struct colloc__op *op = colloc__node_op(n);
	uint64_t ny;

	if (!y || y->rank < 0 || !op)
		return 0;
	ny = colloc_tensor_numel(y);
	switch (op->cost) {
	case COLLOC__COST_CONV:
	case COLLOC__COST_CONV_TRANSPOSE: {
		/* Each output element is a dot product of (Cin/groups) x kernel
		 * terms; for ConvTranspose the same count holds per input
		 * element, so use the larger side's reading of the weight. */
		uint64_t per = 1, f;

		if (!w || w->rank < 3)
			return 0;
		for (int d = 1; d < w->rank; d++)
			per = sat_mul(per, (uint64_t)w->shape[d]);
		if (op->cost == COLLOC__COST_CONV) {
			f = sat_mul(sat_mul(2, ny), per);
		} else {
			/* weight [Cin, Cout/g, k...]: each input element
			 * scatters into Cout/g x k outputs. */
			f = sat_mul(sat_mul(2, colloc_tensor_numel(x)), per);
		}
		if (tin(g, n, 2))
			f = sat_add(f, ny);
		return f;
	}
	case COLLOC__COST_MATMUL:
		/* y has the batch dims and M x N; K is a's last dim. */
		if (!x || x->rank < 1)
			return 0;
		return sat_mul(sat_mul(2, ny), (uint64_t)x->shape[x->rank - 1]);
	case COLLOC__COST_GEMM: {
		bool ta = colloc_node_attr_int(n, "transA", 0) != 0;
		uint64_t k, f;

		if (!x || x->rank != 2)
			return 0;
		k = (uint64_t)(ta ? x->shape[0] : x->shape[1]);
		f = sat_mul(sat_mul(2, ny), k);
		if (tin(g, n, 2))
			f = sat_add(f, ny);
		return f;
	}
	case COLLOC__COST_EINSUM: {
		/* A two-operand contraction: a multiply-add for every
		 * combination of all labels' values. */
		const struct colloc_attr *a = colloc_node_attr(n, "equation");
		int labels[2][COLLOC_MAX_RANK], ranks[2], out[COLLOC_MAX_RANK], nout, ell;
		uint64_t f = 2;
		bool seen[128] = {false};

		if (n->n_inputs != 2 || !a || a->type != COLLOC_ATTR_STRING || !x || !w)
			return 0;
		ranks[0] = x->rank;
		ranks[1] = w->rank;
		if (colloc__einsum_parse(a->s, 2, ranks, labels, out, &nout, &ell))
			return 0;
		for (int i = 0; i < 2; i++) {
			const struct colloc_tensor *t = i ? w : x;

			for (int d = 0; d < t->rank; d++)
				if (!seen[labels[i][d]] && t->shape[d] > 1) {
					seen[labels[i][d]] = true;
					f = sat_mul(f, (uint64_t)t->shape[d]);
				}
		}
		return f;
	}
	case COLLOC__COST_PER_OUTPUT:
		return sat_mul(op->flops_per_elem, ny);
	case COLLOC__COST_POOL: {
		const struct colloc_attr *k = colloc_node_attr(n, "kernel_shape");
		uint64_t per = 1;

		if (k && k->type == COLLOC_ATTR_INTS)
			for (size_t d = 0; d < k->n; d++)
				per = sat_mul(per,
					      k->ints[d] > 0 ? (uint64_t)k->ints[d] : 0);
		return sat_mul(ny, per);
	}
	case COLLOC__COST_PER_INPUT:
		return x ? colloc_tensor_numel(x) : 0;
	case COLLOC__COST_RNN: {
		/* Every step and direction multiplies [x_t, h_{t-1}] by the
		 * gates' weights: W is [dirs, gates x hidden, input]. */
		int64_t hidden = colloc_node_attr_int(n, "hidden_size", 0);

		if (!x || x->rank != 3 || !w || w->rank != 3 || hidden <= 0)
			return 0;
		return sat_mul(sat_mul(sat_mul(2, (uint64_t)(x->shape[0] * x->shape[1])),
				       (uint64_t)(w->shape[0] * w->shape[1])),
			       (uint64_t)(x->shape[2] + hidden));
	}
	case COLLOC__COST_GRID_SAMPLE: {
		/* Every output element is a weighted sum of the taps around its
		 * sampling point: 2 per spatial dim for (bi/tri)linear, 4 for
		 * bicubic, one read and no arithmetic for nearest. The
		 * per-point weights are shared by all channels and left out,
		 * as for pooling. */
		const struct colloc_attr *a = colloc_node_attr(n, "mode");
		const char *mode = a && a->type == COLLOC_ATTR_STRING ? a->s : "linear";
		uint64_t taps = 1, per_dim;

		if (strcmp(mode, "nearest") == 0 || y->rank < 3)
			return 0;
		per_dim = strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0 ? 4
										     : 2;
		for (int d = 2; d < y->rank; d++)
			taps *= per_dim;
		return sat_mul(sat_mul(2, ny), taps);
	}
	default:
		return 0;
	}
}

void colloc_graph_cost(struct colloc_graph *g, struct colloc_cost_totals *out)
{
	struct colloc_cost_totals tot = {0, 0, 0};
	bool *seen = NULL;

	/* Attribute each trainable tensor to the first node reading it, so
	 * that per-node params add up to the model's (tied weights once). */
	seen = calloc((size_t)g->n_tensors + 1, sizeof(*seen));
	for (int k = 0; k < g->n_nodes; k++) {
		struct colloc_node *n = &g->nodes[k];

		n->flops = node_flops(g, n);
		n->bytes_read = 0;
		n->bytes_written = 0;
		n->output_bytes = 0;
		n->params = 0;
		for (int i = 0; i < n->n_inputs; i++) {
			const struct colloc_tensor *t = tin(g, n, i);

			if (!t)
				continue;
			n->bytes_read = sat_add(n->bytes_read, colloc_tensor_bytes(t));
			if (t->param_class == COLLOC_PARAM_TRAINABLE && seen &&
			    !seen[n->inputs[i]]) {
				seen[n->inputs[i]] = true;
				n->params += colloc_tensor_decl_numel(t);
			}
		}
		for (int o = 0; o < n->n_outputs; o++) {
			const struct colloc_tensor *t = tout(g, n, o);

			if (t)
				n->output_bytes =
					sat_add(n->output_bytes, colloc_tensor_bytes(t));
		}
		n->bytes_written = n->output_bytes;
		tot.flops = sat_add(tot.flops, n->flops);
		tot.bytes_read = sat_add(tot.bytes_read, n->bytes_read);
		tot.bytes_written = sat_add(tot.bytes_written, n->bytes_written);
	}
	free(seen);
	if (out)
		*out = tot;
}
