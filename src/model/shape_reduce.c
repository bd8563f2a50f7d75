/*
 * shape_reduce.c — shape rules (and, for small integer tensors, contents) of the
 * reductions: ReduceSum/Mean/Max/..., ArgMax/ArgMin, TopK, as the ONNX operator
 * specification defines them for opsets 11-18. The op table (ops.c) maps op names to
 * these rules; helpers are in shape_util.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/shape_util.h"

static int reduce_shape(struct colloc__infer *c, const struct colloc_node *n,
			const struct colloc_tensor *x, int dtype, bool axes_input)
{
	int64_t axes[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	bool red[COLLOC_MAX_RANK] = {false}, present = false;
	bool keep = colloc_node_attr_int(n, "keepdims", 1) != 0;
	int count = 0, rank = 0, rc;

	if (axes_input)
		rc = ints_from(c, n, 1, "axes", axes, COLLOC_MAX_RANK, &count, &present);
	else
		rc = ints_from(c, n, 99, "axes", axes, COLLOC_MAX_RANK, &count, &present);
	if (rc)
		return rc;
	if (!present || count == 0) {
		if (colloc_node_attr_int(n, "noop_with_empty_axes", 0))
			return same_as(c, n, 0, x, dtype);
		for (int d = 0; d < x->rank; d++)
			red[d] = true;
	}
	for (int k = 0; k < count; k++) {
		int a;

		if ((rc = norm_axis(c, axes[k], x->rank, &a)))
			return rc;
		red[a] = true;
	}
	for (int d = 0; d < x->rank; d++) {
		if (!red[d])
			shape[rank++] = x->shape[d];
		else if (keep)
			shape[rank++] = 1;
	}
	return set_out(c, n, 0, dtype, rank, shape);
}

int colloc__shape_reduce(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	/* ReduceSum takes axes as an input from opset 13, the others from 18. */
	bool axes_input = c->g->opset >= 18 ||
			  (strcmp(n->op_type, "ReduceSum") == 0 && c->g->opset >= 13);
	int rc = need_in(c, n, 0, &x);

	if (rc)
		return rc;
	rc = reduce_shape(c, n, x, x->dtype, axes_input);
	y = out_t(c, n, 0);
	/* ReduceProd over a folded shape gives element counts used in
	 * reshapes; fold the whole-tensor case. */
	if (!rc && y && x->value && y->rank >= 0 && numel(y->rank, y->shape) == 1 &&
	    (strcmp(n->op_type, "ReduceProd") == 0 ||
	     strcmp(n->op_type, "ReduceSum") == 0)) {
		struct colloc_value *v = new_value(c, y);
		bool prod = n->op_type[6] == 'P';
		int64_t acc = prod ? 1 : 0;
		double facc = prod ? 1 : 0;

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < x->value->n; k++) {
			int64_t i = colloc__value_get_i(x->value, k);
			double f = colloc__value_get_f(x->value, k);

			acc = prod ? sat_mul(acc, i) : sat_add(acc, i);
			facc = prod ? facc * f : facc + f;
		}
		value_put(v, 0, facc, acc);
	}
	return rc;
}

int colloc__shape_argmax(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t shape[COLLOC_MAX_RANK];
	bool keep = colloc_node_attr_int(n, "keepdims", 1) != 0;
	int axis, rank = 0, rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", 0), x->rank, &axis)))
		return rc;
	for (int d = 0; d < x->rank; d++) {
		if (d != axis)
			shape[rank++] = x->shape[d];
		else if (keep)
			shape[rank++] = 1;
	}
	return set_out(c, n, 0, COLLOC_DT_INT64, rank, shape);
}

int colloc__shape_topk(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	const struct colloc_value *k;
	int64_t shape[COLLOC_MAX_RANK];
	int axis, rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_ints(c, n, 1, "K", &k)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", -1), x->rank, &axis)))
		return rc;
	memcpy(shape, x->shape, sizeof(shape));
	shape[axis] = k->n ? colloc__value_get_i(k, 0) : 0;
	if ((rc = set_out(c, n, 0, x->dtype, x->rank, shape)))
		return rc;
	return set_out(c, n, 1, COLLOC_DT_INT64, x->rank, shape);
}
