/*
 * shape_data.c — shape rules (and, for small integer tensors, contents) of the
 * constants and shapes: Constant, Shape, Size, ConstantOfShape, Range —
 * the nodes whose contents shape inference computes, as the ONNX operator specification
 * defines them for opsets 11-18. The op table (ops.c) maps op names to these rules;
 * helpers are in shape_util.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/shape_util.h"

int colloc__shape_constant(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *y = out_t(c, n, 0);
	const struct colloc_attr *a;
	struct colloc_value *v;
	int64_t one = 1;

	if (!y)
		return 0;
	if ((a = colloc_node_attr(n, "value")) && a->type == COLLOC_ATTR_TENSOR) {
		int rc = set_out(c, n, 0, a->t_dtype, a->t_rank, a->t_dims);

		if (rc)
			return rc;
		y->value = a->t_value;
		if (y->value && y->value->n != numel(y->rank, y->shape))
			y->value = NULL;
		return 0;
	}
	if ((a = colloc_node_attr(n, "value_float")) && a->type == COLLOC_ATTR_FLOAT) {
		set_out(c, n, 0, COLLOC_DT_FLOAT, 0, NULL);
		if (!(v = new_value(c, y)))
			return -ENOMEM;
		v->f[0] = a->f;
		return 0;
	}
	if ((a = colloc_node_attr(n, "value_int")) && a->type == COLLOC_ATTR_INT) {
		set_out(c, n, 0, COLLOC_DT_INT64, 0, NULL);
		if (!(v = new_value(c, y)))
			return -ENOMEM;
		v->i[0] = a->i;
		return 0;
	}
	if ((a = colloc_node_attr(n, "value_ints")) && a->type == COLLOC_ATTR_INTS) {
		int64_t len = (int64_t)a->n;

		set_out(c, n, 0, COLLOC_DT_INT64, 1, &len);
		if (a->n <= COLLOC__FOLD_MAX) {
			if (!(v = new_value(c, y)))
				return -ENOMEM;
			memcpy(v->i, a->ints, a->n * sizeof(int64_t));
		}
		return 0;
	}
	if ((a = colloc_node_attr(n, "value_floats")) && a->type == COLLOC_ATTR_FLOATS) {
		int64_t len = (int64_t)a->n;

		set_out(c, n, 0, COLLOC_DT_FLOAT, 1, &len);
		if (a->n <= COLLOC__FOLD_MAX) {
			if (!(v = new_value(c, y)))
				return -ENOMEM;
			memcpy(v->f, a->floats, a->n * sizeof(double));
		}
		return 0;
	}
	(void)one;
	return fail(c, COLLOC_EUNSUPPORTED,
		    "Constant without a value, value_int(s) or value_float(s) attribute");
}

int colloc__shape_shape(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t start = colloc_node_attr_int(n, "start", 0);
	int64_t end, len;
	int rc = need_in(c, n, 0, &x);
	struct colloc_value *v;

	if (rc)
		return rc;
	/* opset 15 start/end: clamped, negative counts from the back. */
	end = colloc_node_attr_int(n, "end", x->rank);
	if (start < 0)
		start += x->rank;
	if (end < 0)
		end += x->rank;
	start = start < 0 ? 0 : start > x->rank ? x->rank : start;
	end = end < 0 ? 0 : end > x->rank ? x->rank : end;
	len = end > start ? end - start : 0;
	rc = set_out(c, n, 0, COLLOC_DT_INT64, 1, &len);
	if (rc || !(y = out_t(c, n, 0)))
		return rc;
	if (!(v = new_value(c, y)))
		return -ENOMEM;
	for (int64_t k = 0; k < len; k++)
		v->i[k] = x->shape[start + k];
	return 0;
}

int colloc__shape_size(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	struct colloc_value *v;
	int rc = need_in(c, n, 0, &x);

	if (!rc)
		rc = set_out(c, n, 0, COLLOC_DT_INT64, 0, NULL);
	if (rc || !(y = out_t(c, n, 0)))
		return rc;
	if (!(v = new_value(c, y)))
		return -ENOMEM;
	v->i[0] = (int64_t)numel(x->rank, x->shape);
	return 0;
}

int colloc__shape_constant_of_shape(struct colloc__infer *c, const struct colloc_node *n)
{
	const struct colloc_value *s;
	const struct colloc_attr *a = colloc_node_attr(n, "value");
	int64_t shape[COLLOC_MAX_RANK];
	int dtype = COLLOC_DT_FLOAT, rc;
	struct colloc_tensor *y;

	if ((rc = need_ints(c, n, 0, "shape", &s)))
		return rc;
	if (s->n > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "shape has %zu dims", s->n);
	for (size_t k = 0; k < s->n; k++)
		shape[k] = colloc__value_get_i(s, k);
	if (a && a->type == COLLOC_ATTR_TENSOR)
		dtype = a->t_dtype;
	rc = set_out(c, n, 0, dtype, (int)s->n, shape);
	y = out_t(c, n, 0);
	if (!rc && y && small(y)) {
		struct colloc_value *v = new_value(c, y);
		double f = 0;
		int64_t i = 0;

		if (!v)
			return -ENOMEM;
		if (a && a->type == COLLOC_ATTR_TENSOR && a->t_value && a->t_value->n) {
			f = colloc__value_get_f(a->t_value, 0);
			i = colloc__value_get_i(a->t_value, 0);
		}
		for (size_t k = 0; k < v->n; k++)
			value_put(v, k, f, i);
	}
	return rc;
}

int colloc__shape_range(struct colloc__infer *c, const struct colloc_node *n)
{
	const struct colloc_value *s, *l, *d;
	struct colloc_tensor *start, *y;
	double fs, fl, fd, cnt;
	int64_t len;
	int rc;

	if ((rc = need_ints(c, n, 0, "start", &s)) ||
	    (rc = need_ints(c, n, 1, "limit", &l)) ||
	    (rc = need_ints(c, n, 2, "delta", &d)))
		return rc;
	if (!s->n || !l->n || !d->n)
		return fail(c, COLLOC_EFORMAT, "Range inputs must be scalars");
	start = in_t(c, n, 0);
	fs = colloc__value_get_f(s, 0);
	fl = colloc__value_get_f(l, 0);
	fd = colloc__value_get_f(d, 0);
	if (fd == 0)
		return fail(c, COLLOC_EFORMAT, "Range delta is 0");
	cnt = ceil((fl - fs) / fd);
	if (!(cnt >= 0))
		cnt = 0;
	if (cnt > 1e15)
		return fail(c, COLLOC_ELIMIT, "Range of %.0f elements", cnt);
	len = (int64_t)cnt;
	rc = set_out(c, n, 0, start->dtype, 1, &len);
	y = out_t(c, n, 0);
	if (!rc && y && small(y)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (int64_t k = 0; k < len; k++)
			value_put(v, (size_t)k, fs + (double)k * fd,
				  sat_add(colloc__value_get_i(s, 0),
					  sat_mul(k, colloc__value_get_i(d, 0))));
	}
	return rc;
}
