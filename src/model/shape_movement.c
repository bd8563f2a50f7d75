/*
 * shape_movement.c — shape rules (and, for small integer tensors, contents) of the
 * data movement: reshapes, transposes, concatenation, splits, slices,
 * gathers, expand, tile, pad, as the ONNX operator specification defines them for opsets
 * 11-18. The op table (ops.c) maps op names to these rules; helpers are in shape_util.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/shape_util.h"

int colloc__shape_reshape(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	const struct colloc_value *s;
	int64_t shape[COLLOC_MAX_RANK];
	bool allowzero = colloc_node_attr_int(n, "allowzero", 0) != 0;
	int infer_at = -1, rc;
	uint64_t total, known = 1;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_ints(c, n, 1, "shape", &s)))
		return rc;
	if (s->n > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "target shape has %zu dims", s->n);
	total = numel(x->rank, x->shape);
	for (size_t k = 0; k < s->n; k++) {
		int64_t d = colloc__value_get_i(s, k);

		if (d == 0 && !allowzero) {
			if ((int)k >= x->rank)
				return fail(c, COLLOC_ESHAPE,
					    "target dim %zu is 0 (copy) but the input "
					    "has rank %d",
					    k, x->rank);
			d = x->shape[k];
		}
		if (d == -1) {
			if (infer_at >= 0)
				return fail(c, COLLOC_ESHAPE,
					    "target shape has more than one -1");
			infer_at = (int)k;
			shape[k] = 1;
			continue;
		}
		if (d < 0)
			return fail(c, COLLOC_ESHAPE, "target dim %zu is %lld", k,
				    (long long)d);
		shape[k] = d;
		if (d && known > UINT64_MAX / (uint64_t)d)
			return fail(c, COLLOC_EOVERFLOW, "target shape overflows");
		known *= (uint64_t)d;
	}
	if (infer_at >= 0) {
		if (known == 0 || total % known)
			return fail(c, COLLOC_ESHAPE,
				    "cannot reshape %llu elements with -1 into a "
				    "multiple of %llu",
				    (unsigned long long)total, (unsigned long long)known);
		shape[infer_at] = (int64_t)(total / known);
	} else if (known != total) {
		return fail(c, COLLOC_ESHAPE, "cannot reshape %llu elements into %llu",
			    (unsigned long long)total, (unsigned long long)known);
	}
	rc = set_out(c, n, 0, x->dtype, (int)s->n, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value)
		y->value = x->value; /* same elements, same order */
	return rc;
}

int colloc__shape_flatten(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t shape[2] = {1, 1};
	int axis, rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	{
		int64_t a = colloc_node_attr_int(n, "axis", 1);

		if (a < -x->rank || a > x->rank)
			return fail(c, COLLOC_ESHAPE, "axis %lld out of range",
				    (long long)a);
		axis = (int)(a < 0 ? a + x->rank : a);
	}
	shape[0] = (int64_t)numel(axis, x->shape);
	shape[1] = (int64_t)numel(x->rank - axis, x->shape + axis);
	rc = set_out(c, n, 0, x->dtype, 2, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value)
		y->value = x->value;
	return rc;
}

int colloc__shape_squeeze(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t axes[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	bool drop[COLLOC_MAX_RANK] = {false}, present;
	int count, rank = 0, rc;

	if ((rc = need_in(c, n, 0, &x)) ||
	    (rc = ints_from(c, n, 1, "axes", axes, COLLOC_MAX_RANK, &count, &present)))
		return rc;
	if (!present) {
		for (int d = 0; d < x->rank; d++)
			drop[d] = x->shape[d] == 1;
	}
	for (int k = 0; k < count; k++) {
		int a;

		if ((rc = norm_axis(c, axes[k], x->rank, &a)))
			return rc;
		if (x->shape[a] != 1)
			return fail(c, COLLOC_ESHAPE,
				    "cannot squeeze dim %d of size %lld", a,
				    (long long)x->shape[a]);
		drop[a] = true;
	}
	for (int d = 0; d < x->rank; d++)
		if (!drop[d])
			shape[rank++] = x->shape[d];
	rc = set_out(c, n, 0, x->dtype, rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value)
		y->value = x->value;
	return rc;
}

int colloc__shape_unsqueeze(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t axes[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	bool ins[COLLOC_MAX_RANK] = {false}, present;
	int count, rank, rc, src = 0;

	if ((rc = need_in(c, n, 0, &x)) ||
	    (rc = ints_from(c, n, 1, "axes", axes, COLLOC_MAX_RANK, &count, &present)))
		return rc;
	if (!present)
		return fail(c, COLLOC_EFORMAT, "Unsqueeze needs axes");
	rank = x->rank + count;
	if (rank > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "output rank %d", rank);
	for (int k = 0; k < count; k++) {
		int a;

		if ((rc = norm_axis(c, axes[k], rank, &a)))
			return rc;
		if (ins[a])
			return fail(c, COLLOC_ESHAPE, "axis %d given twice", a);
		ins[a] = true;
	}
	for (int d = 0; d < rank; d++)
		shape[d] = ins[d] ? 1 : x->shape[src++];
	rc = set_out(c, n, 0, x->dtype, rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value)
		y->value = x->value;
	return rc;
}

int colloc__shape_transpose(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t perm[COLLOC_MAX_RANK] = {0}, shape[COLLOC_MAX_RANK] = {0};
	bool used[COLLOC_MAX_RANK] = {false};
	int count, rc;

	if ((rc = need_in(c, n, 0, &x)) ||
	    (rc = attr_ints(c, n, "perm", perm, COLLOC_MAX_RANK, &count)))
		return rc;
	if (count < 0) {
		count = x->rank;
		for (int d = 0; d < count; d++)
			perm[d] = count - 1 - d;
	}
	if (count != x->rank)
		return fail(c, COLLOC_ESHAPE, "perm has %d entries for rank %d", count,
			    x->rank);
	for (int d = 0; d < count; d++) {
		if (perm[d] < 0 || perm[d] >= count || used[perm[d]])
			return fail(c, COLLOC_ESHAPE, "perm is not a permutation");
		used[perm[d]] = true;
		shape[d] = x->shape[perm[d]];
	}
	rc = set_out(c, n, 0, x->dtype, count, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && small(y)) {
		struct colloc_value *v = new_value(c, y);
		int64_t idx[COLLOC_MAX_RANK] = {0};

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			size_t rem = e, off = 0, stride = 1;

			for (int d = count - 1; d >= 0; d--) {
				/* shape[d] > 0: an empty output has no elements */
				size_t dim = shape[d] > 0 ? (size_t)shape[d] : 1;

				idx[d] = (int64_t)(rem % dim);
				rem /= dim;
			}
			/* offset in x: x dim perm[d] has index idx[d] */
			for (int xd = count - 1; xd >= 0; xd--) {
				int d = 0;

				while (perm[d] != xd)
					d++;
				off += (size_t)idx[d] * stride;
				stride *= (size_t)x->shape[xd];
			}
			value_put(v, e, colloc__value_get_f(x->value, off),
				  colloc__value_get_i(x->value, off));
		}
	}
	return rc;
}

int colloc__shape_concat(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *first, *y;
	int64_t shape[COLLOC_MAX_RANK];
	int axis, rc, n_in = 0;
	bool all_known = true;

	if ((rc = need_in(c, n, 0, &first)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", 0), first->rank, &axis)))
		return rc;
	memcpy(shape, first->shape, sizeof(shape));
	shape[axis] = 0;
	for (int k = 0; k < n->n_inputs; k++) {
		struct colloc_tensor *t = in_t(c, n, k);

		if (!t)
			continue;
		if (t->rank != first->rank)
			return fail(c, COLLOC_ESHAPE, "input %d has rank %d, expected %d",
				    k, t->rank, first->rank);
		for (int d = 0; d < t->rank; d++)
			if (d != axis && t->shape[d] != first->shape[d])
				return fail(c, COLLOC_ESHAPE,
					    "input %d dim %d is %lld, expected %lld", k,
					    d, (long long)t->shape[d],
					    (long long)first->shape[d]);
		shape[axis] = sat_add(shape[axis], t->shape[axis]);
		if (!t->value)
			all_known = false;
		n_in++;
	}
	rc = set_out(c, n, 0, first->dtype, first->rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && all_known && small(y)) {
		struct colloc_value *v = new_value(c, y);
		size_t outer = (size_t)numel(axis, shape), e = 0;

		if (!v)
			return -ENOMEM;
		for (size_t o = 0; o < outer; o++)
			for (int k = 0; k < n->n_inputs; k++) {
				struct colloc_tensor *t = in_t(c, n, k);
				size_t inner;

				if (!t)
					continue;
				inner = (size_t)numel(t->rank - axis, t->shape + axis);
				for (size_t i = 0; i < inner; i++, e++) {
					size_t off = o * inner + i;

					value_put(v, e,
						  colloc__value_get_f(t->value, off),
						  colloc__value_get_i(t->value, off));
				}
			}
	}
	(void)n_in;
	return rc;
}

int colloc__shape_split(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t split[64], shape[COLLOC_MAX_RANK];
	int axis, count, rc;
	bool present;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", 0), x->rank, &axis)))
		return rc;
	if (n->n_outputs > 64)
		return fail(c, COLLOC_ELIMIT, "more than 64 outputs");
	if ((rc = ints_from(c, n, 1, "split", split, 64, &count, &present)))
		return rc;
	if (!present) {
		/* Equal parts; the last one smaller when it does not divide
		 * (opset 18 num_outputs semantics, a superset of older ones). */
		int64_t parts = n->n_outputs ? n->n_outputs : 1;
		int64_t each = x->shape[axis] / parts + (x->shape[axis] % parts != 0);

		count = (int)parts;
		for (int k = 0; k < count; k++) {
			int64_t left = x->shape[axis] - sat_mul(each, k);

			split[k] = left < each ? (left > 0 ? left : 0) : each;
		}
	} else {
		int64_t sum = 0;

		for (int k = 0; k < count; k++)
			sum = sat_add(sum, split[k]);
		if (sum != x->shape[axis])
			return fail(c, COLLOC_ESHAPE,
				    "split sizes add up to %lld, dim is %lld",
				    (long long)sum, (long long)x->shape[axis]);
	}
	if (count != n->n_outputs)
		return fail(c, COLLOC_ESHAPE, "%d split sizes for %d outputs", count,
			    n->n_outputs);
	memcpy(shape, x->shape, sizeof(shape));
	for (int k = 0; k < count; k++) {
		if (split[k] < 0)
			return fail(c, COLLOC_ESHAPE, "negative split size");
		shape[axis] = split[k];
		if ((rc = set_out(c, n, k, x->dtype, x->rank, shape)))
			return rc;
	}
	return 0;
}

/* Clamp a Slice bound the way the ONNX spec does. */
static int64_t slice_clamp(int64_t v, int64_t dim, int64_t step, bool is_start)
{
	if (v < 0)
		v = sat_add(v, dim);
	if (step > 0) {
		if (v < 0)
			v = 0;
		if (v > dim)
			v = dim;
	} else {
		if (v < -1)
			v = -1;
		if (v > dim - 1)
			v = dim - 1;
		if (is_start && v < 0)
			v = -1;
	}
	return v;
}

int colloc__shape_slice(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t starts[COLLOC_MAX_RANK], ends[COLLOC_MAX_RANK];
	int64_t axes[COLLOC_MAX_RANK], steps[COLLOC_MAX_RANK];
	int64_t shape[COLLOC_MAX_RANK], first[COLLOC_MAX_RANK] = {0};
	int64_t stepd[COLLOC_MAX_RANK] = {0};
	int ns, ne, na, nst, rc;
	bool p1, p2, p3, p4;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if ((rc = ints_from(c, n, 1, "starts", starts, COLLOC_MAX_RANK, &ns, &p1)) ||
	    (rc = ints_from(c, n, 2, "ends", ends, COLLOC_MAX_RANK, &ne, &p2)) ||
	    (rc = ints_from(c, n, 3, "axes", axes, COLLOC_MAX_RANK, &na, &p3)) ||
	    (rc = ints_from(c, n, 4, "steps", steps, COLLOC_MAX_RANK, &nst, &p4)))
		return rc;
	if (!p1 || !p2 || ns != ne)
		return fail(c, COLLOC_EFORMAT, "starts and ends must have equal length");
	if (!p3)
		for (int k = 0; k < ns; k++)
			axes[k] = k;
	else if (na != ns)
		return fail(c, COLLOC_EFORMAT, "axes has %d entries, starts %d", na, ns);
	if (!p4)
		for (int k = 0; k < ns; k++)
			steps[k] = 1;
	else if (nst != ns)
		return fail(c, COLLOC_EFORMAT, "steps has %d entries, starts %d", nst,
			    ns);
	memcpy(shape, x->shape, sizeof(shape));
	for (int d = 0; d < x->rank; d++)
		first[d] = 0, stepd[d] = 1;
	for (int k = 0; k < ns; k++) {
		int a;
		int64_t s, e, dist, len;
		uint64_t mag;

		if ((rc = norm_axis(c, axes[k], x->rank, &a)))
			return rc;
		if (steps[k] == 0)
			return fail(c, COLLOC_ESHAPE, "slice step is 0");
		s = slice_clamp(starts[k], x->shape[a], steps[k], true);
		e = slice_clamp(ends[k], x->shape[a], steps[k], false);
		/* ceil(distance / |step|) for any step, INT64_MIN included */
		mag = steps[k] > 0 ? (uint64_t)steps[k] : 0 - (uint64_t)steps[k];
		dist = steps[k] > 0 ? e - s : s - e;
		len = dist > 0 ? (int64_t)(((uint64_t)dist - 1) / mag) + 1 : 0;
		shape[a] = len;
		first[a] = s;
		stepd[a] = steps[k];
	}
	rc = set_out(c, n, 0, x->dtype, x->rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && small(y)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			size_t rem = e, off = 0, stride = 1;

			for (int d = x->rank - 1; d >= 0; d--) {
				size_t dim = shape[d] > 0 ? (size_t)shape[d] : 1;
				int64_t i = (int64_t)(rem % dim);

				rem /= dim;
				off += (size_t)(first[d] + i * stepd[d]) * stride;
				stride *= (size_t)x->shape[d];
			}
			value_put(v, e, colloc__value_get_f(x->value, off),
				  colloc__value_get_i(x->value, off));
		}
	}
	return rc;
}

int colloc__shape_gather(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *idx, *y;
	int64_t shape[COLLOC_MAX_RANK];
	int axis, rank, rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &idx)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", 0), x->rank, &axis)))
		return rc;
	rank = x->rank - 1 + idx->rank;
	if (rank > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "output rank %d", rank);
	for (int d = 0; d < axis; d++)
		shape[d] = x->shape[d];
	for (int d = 0; d < idx->rank; d++)
		shape[axis + d] = idx->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		shape[idx->rank + d - 1] = x->shape[d];
	rc = set_out(c, n, 0, x->dtype, rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && idx->value && small(y)) {
		struct colloc_value *v = new_value(c, y);
		size_t inner = (size_t)numel(x->rank - axis - 1, x->shape + axis + 1);
		size_t ni = idx->value->n, dim = (size_t)x->shape[axis];

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			size_t in = e % inner;
			size_t j = (e / inner) % (ni ? ni : 1);
			size_t o = e / inner / (ni ? ni : 1);
			int64_t i = colloc__value_get_i(idx->value, j);
			size_t off;

			if (i < 0)
				i += (int64_t)dim;
			if (i < 0 || (size_t)i >= dim)
				return fail(
					c, COLLOC_ESHAPE, "index %lld out of range",
					(long long)colloc__value_get_i(idx->value, j));
			off = (o * dim + (size_t)i) * inner + in;
			value_put(v, e, colloc__value_get_f(x->value, off),
				  colloc__value_get_i(x->value, off));
		}
	}
	return rc;
}

int colloc__shape_gather_elements(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *idx;
	int rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &idx)))
		return rc;
	return set_out(c, n, 0, x->dtype, idx->rank, idx->shape);
}

int colloc__shape_expand(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	const struct colloc_value *s;
	int64_t want[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	int rank, rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_ints(c, n, 1, "shape", &s)))
		return rc;
	if (s->n > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "shape has %zu dims", s->n);
	for (size_t k = 0; k < s->n; k++)
		want[k] = colloc__value_get_i(s, k);
	if ((rc = broadcast(c, x->rank, x->shape, (int)s->n, want, &rank, shape)))
		return rc;
	rc = set_out(c, n, 0, x->dtype, rank, shape);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && small(y)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			size_t o = bcast_offset(e, rank, shape, x->rank, x->shape);

			value_put(v, e, colloc__value_get_f(x->value, o),
				  colloc__value_get_i(x->value, o));
		}
	}
	return rc;
}

int colloc__shape_tile(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	const struct colloc_value *r;
	int64_t shape[COLLOC_MAX_RANK];
	int rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_ints(c, n, 1, "repeats", &r)))
		return rc;
	if (r->n != (size_t)x->rank)
		return fail(c, COLLOC_ESHAPE, "repeats has %zu entries for rank %d", r->n,
			    x->rank);
	for (int d = 0; d < x->rank; d++) {
		int64_t k = colloc__value_get_i(r, (size_t)d);

		if (k < 0)
			return fail(c, COLLOC_ESHAPE, "negative repeat");
		shape[d] = sat_mul(x->shape[d], k);
	}
	return set_out(c, n, 0, x->dtype, x->rank, shape);
}

int colloc__shape_pad(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t pads[2 * COLLOC_MAX_RANK] = {0}, axes[COLLOC_MAX_RANK],
			 shape[COLLOC_MAX_RANK];
	int count, na, rc;
	bool present, pa;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if ((rc = ints_from(c, n, 1, "pads", pads, 2 * COLLOC_MAX_RANK, &count,
			    &present)))
		return rc;
	if ((rc = ints_from(c, n, 3, "axes", axes, COLLOC_MAX_RANK, &na, &pa)))
		return rc;
	if (!present)
		return fail(c, COLLOC_EFORMAT, "Pad needs pads");
	if (!pa) {
		na = x->rank;
		for (int d = 0; d < na; d++)
			axes[d] = d;
	}
	if (count != 2 * na)
		return fail(c, COLLOC_ESHAPE, "pads has %d entries for %d axes", count,
			    na);
	memcpy(shape, x->shape, sizeof(shape));
	for (int k = 0; k < na; k++) {
		int a;

		if ((rc = norm_axis(c, axes[k], x->rank, &a)))
			return rc;
		shape[a] = sat_add(shape[a], sat_add(pads[k], pads[k + na]));
	}
	return set_out(c, n, 0, x->dtype, x->rank, shape);
}
