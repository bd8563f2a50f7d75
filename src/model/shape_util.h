/*
 * shape_util.h — helpers shared by the shape rules (shape_*.c): operand
 * access, output setting with range checks, axis normalisation, integer
 * lists from inputs or attributes, broadcasting, and the folded contents
 * of small tensors. Internal to libcolloc; small enough to inline.
 */
#ifndef COLLOC_SHAPE_UTIL_H
#define COLLOC_SHAPE_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "model/shape_int.h"

static inline struct colloc_tensor *in_t(struct colloc__infer *c,
					 const struct colloc_node *n, int k)
{
	if (k >= n->n_inputs || n->inputs[k] < 0)
		return NULL;
	return &c->g->tensors[n->inputs[k]];
}

static inline struct colloc_tensor *out_t(struct colloc__infer *c,
					  const struct colloc_node *n, int k)
{
	if (k >= n->n_outputs || n->outputs[k] < 0)
		return NULL;
	return &c->g->tensors[n->outputs[k]];
}

/* Set the node's error message and yield rc (the driver adds the node). */
#define fail(c, rc, ...) colloc_diag_set((c)->diag, (rc), __VA_ARGS__)

static inline int need_in(struct colloc__infer *c, const struct colloc_node *n, int k,
			  struct colloc_tensor **t)
{
	*t = in_t(c, n, k);
	if (!*t)
		return fail(c, COLLOC_EFORMAT, "input %d is required", k);
	return 0;
}

static inline int set_out(struct colloc__infer *c, const struct colloc_node *n, int k,
			  int dtype, int rank, const int64_t *shape)
{
	struct colloc_tensor *t = out_t(c, n, k);

	if (!t)
		return 0;
	if (rank < 0 || rank > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "output %d would have rank %d", k, rank);
	for (int d = 0; d < rank; d++)
		if (shape[d] < 0)
			return fail(c, COLLOC_ESHAPE,
				    "output %d would have a negative dim %d", k, d);
	t->dtype = dtype;
	t->rank = rank;
	if (rank)
		memcpy(t->shape, shape, (size_t)rank * sizeof(int64_t));
	t->value = NULL;
	return 0;
}

static inline int same_as(struct colloc__infer *c, const struct colloc_node *n, int k,
			  const struct colloc_tensor *src, int dtype)
{
	return set_out(c, n, k, dtype, src->rank, src->shape);
}

/* Normalise a possibly negative axis against rank. */
static inline int norm_axis(struct colloc__infer *c, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank)
		return fail(c, COLLOC_ESHAPE, "axis %lld is out of range for rank %d",
			    (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

static inline uint64_t numel(int rank, const int64_t *shape)
{
	uint64_t n = 1;

	for (int d = 0; d < rank; d++) {
		if (shape[d] && n > UINT64_MAX / (uint64_t)shape[d])
			return UINT64_MAX;
		n *= (uint64_t)shape[d];
	}
	return n;
}

/* Contents of input k as integers; fails naming what was needed. */
static inline int need_ints(struct colloc__infer *c, const struct colloc_node *n, int k,
			    const char *what, const struct colloc_value **v)
{
	struct colloc_tensor *t = in_t(c, n, k);

	if (!t)
		return fail(c, COLLOC_EFORMAT, "input %d (%s) is required", k, what);
	if (!t->value)
		return fail(c, COLLOC_EUNSUPPORTED,
			    "%s (input %d '%s') is computed from data, not from "
			    "shapes; colloc cannot infer it",
			    what, k, t->name);
	*v = t->value;
	return 0;
}

/* Integer list from an input (newer opsets) or an attribute (older). */
static inline int ints_from(struct colloc__infer *c, const struct colloc_node *n,
			    int input, const char *attr, int64_t *out, int max,
			    int *count, bool *present)
{
	const struct colloc_attr *a = colloc_node_attr(n, attr);

	*present = false;
	*count = 0;
	if (in_t(c, n, input)) {
		const struct colloc_value *v;
		int rc = need_ints(c, n, input, attr, &v);

		if (rc)
			return rc;
		if (v->n > (size_t)max)
			return fail(c, COLLOC_ELIMIT, "%s has %zu entries", attr, v->n);
		for (size_t k = 0; k < v->n; k++)
			out[k] = colloc__value_get_i(v, k);
		*count = (int)v->n;
		*present = true;
	} else if (a && a->type == COLLOC_ATTR_INTS) {
		if (a->n > (size_t)max)
			return fail(c, COLLOC_ELIMIT, "%s has %zu entries", attr, a->n);
		memcpy(out, a->ints, a->n * sizeof(int64_t));
		*count = (int)a->n;
		*present = true;
	}
	return 0;
}

/* Attribute list of at most max ints; *count = -1 when absent. */
static inline int attr_ints(struct colloc__infer *c, const struct colloc_node *n,
			    const char *name, int64_t *out, int max, int *count)
{
	const struct colloc_attr *a = colloc_node_attr(n, name);

	*count = -1;
	if (!a)
		return 0;
	if (a->type != COLLOC_ATTR_INTS)
		return fail(c, COLLOC_EFORMAT, "attribute '%s' is not a list of ints",
			    name);
	if (a->n > (size_t)max)
		return fail(c, COLLOC_ELIMIT, "attribute '%s' has %zu entries", name,
			    a->n);
	memcpy(out, a->ints, a->n * sizeof(int64_t));
	*count = (int)a->n;
	return 0;
}

/* Numpy broadcasting of a and b into out. */
static inline int broadcast(struct colloc__infer *c, int ra, const int64_t *a, int rb,
			    const int64_t *b, int *ro, int64_t *out)
{
	int64_t tmp[COLLOC_MAX_RANK];
	int r = ra > rb ? ra : rb;

	/* out may alias a or b: build the result aside. */
	if (r > COLLOC_MAX_RANK)
		return fail(c, COLLOC_ELIMIT, "broadcast rank %d", r);
	for (int k = 0; k < r; k++) {
		int64_t da = k < r - ra ? 1 : a[k - (r - ra)];
		int64_t db = k < r - rb ? 1 : b[k - (r - rb)];

		if (da == db || db == 1)
			tmp[k] = da;
		else if (da == 1)
			tmp[k] = db;
		else
			return fail(c, COLLOC_ESHAPE,
				    "shapes do not broadcast: dim %d is %lld vs %lld", k,
				    (long long)da, (long long)db);
	}
	if (r)
		memcpy(out, tmp, (size_t)r * sizeof(*out));
	*ro = r;
	return 0;
}

/* Flat index into a tensor of shape (r, s) broadcast to (ro, so). */
static inline size_t bcast_offset(size_t flat, int ro, const int64_t *so, int r,
				  const int64_t *s)
{
	size_t off = 0, stride = 1;

	for (int k = ro - 1; k >= 0; k--) {
		size_t idx = (size_t)(flat % (size_t)so[k]);
		int kk = k - (ro - r);

		flat /= (size_t)so[k];
		if (kk >= 0) {
			if (s[kk] != 1)
				off += idx * stride;
			stride *= (size_t)s[kk];
		}
	}
	return off;
}

static inline struct colloc_value *new_value(struct colloc__infer *c,
					     struct colloc_tensor *t)
{
	uint64_t n = numel(t->rank, t->shape);
	struct colloc_value *v;

	if (n > COLLOC__FOLD_MAX)
		return NULL;
	v = colloc__value_new(c->scratch, (size_t)n, colloc_dtype_is_float(t->dtype));
	t->value = v;
	return v;
}

static inline bool small(const struct colloc_tensor *t)
{
	return t && t->rank >= 0 && numel(t->rank, t->shape) <= COLLOC__FOLD_MAX;
}

static inline void value_put(struct colloc_value *v, size_t k, double f, int64_t i)
{
	if (v->f)
		v->f[k] = f;
	else
		v->i[k] = i;
}

/* Saturating int64 arithmetic for folded shape math (overflow is not UB). */
static inline int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return a > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return a >= 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

#endif
