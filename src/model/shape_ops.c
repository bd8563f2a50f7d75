/*
 * shape_ops.c — output shapes (and, for small integer tensors, contents) of
 * every ONNX op colloc knows, as the ONNX operator specification defines
 * them for opsets 11-18.
 *
 * Rules read input shapes from the graph and write output shapes back.
 * Where an output's shape depends on another tensor's contents (Reshape's
 * target, Slice's starts, Expand's shape ...), that tensor must have been
 * folded: Shape, Constant, Gather, Concat, arithmetic etc. compute contents
 * for tensors of at most COLLOC__FOLD_MAX elements, which is how the shape
 * arithmetic torch.onnx.export writes is evaluated.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/shape_int.h"

/* --- helpers -------------------------------------------------------------- */

static struct colloc_tensor *in_t(struct colloc__infer *c, const struct colloc_node *n,
				  int k)
{
	if (k >= n->n_inputs || n->inputs[k] < 0)
		return NULL;
	return &c->g->tensors[n->inputs[k]];
}

static struct colloc_tensor *out_t(struct colloc__infer *c, const struct colloc_node *n,
				   int k)
{
	if (k >= n->n_outputs || n->outputs[k] < 0)
		return NULL;
	return &c->g->tensors[n->outputs[k]];
}

/* Set the node's error message and yield rc (the driver adds the node). */
#define fail(c, rc, ...) colloc_diag_set((c)->diag, (rc), __VA_ARGS__)

static int need_in(struct colloc__infer *c, const struct colloc_node *n, int k,
		   struct colloc_tensor **t)
{
	*t = in_t(c, n, k);
	if (!*t)
		return fail(c, COLLOC_EFORMAT, "input %d is required", k);
	return 0;
}

static int set_out(struct colloc__infer *c, const struct colloc_node *n, int k, int dtype,
		   int rank, const int64_t *shape)
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

static int same_as(struct colloc__infer *c, const struct colloc_node *n, int k,
		   const struct colloc_tensor *src, int dtype)
{
	return set_out(c, n, k, dtype, src->rank, src->shape);
}

/* Normalise a possibly negative axis against rank. */
static int norm_axis(struct colloc__infer *c, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank)
		return fail(c, COLLOC_ESHAPE, "axis %lld is out of range for rank %d",
			    (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

static uint64_t numel(int rank, const int64_t *shape)
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
static int need_ints(struct colloc__infer *c, const struct colloc_node *n, int k,
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
static int ints_from(struct colloc__infer *c, const struct colloc_node *n, int input,
		     const char *attr, int64_t *out, int max, int *count, bool *present)
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
static int attr_ints(struct colloc__infer *c, const struct colloc_node *n,
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
static int broadcast(struct colloc__infer *c, int ra, const int64_t *a, int rb,
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
static size_t bcast_offset(size_t flat, int ro, const int64_t *so, int r,
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

static struct colloc_value *new_value(struct colloc__infer *c, struct colloc_tensor *t)
{
	uint64_t n = numel(t->rank, t->shape);
	struct colloc_value *v;

	if (n > COLLOC__FOLD_MAX)
		return NULL;
	v = colloc__value_new(c->scratch, (size_t)n, colloc_dtype_is_float(t->dtype));
	t->value = v;
	return v;
}

static bool small(const struct colloc_tensor *t)
{
	return t && t->rank >= 0 && numel(t->rank, t->shape) <= COLLOC__FOLD_MAX;
}

static void value_put(struct colloc_value *v, size_t k, double f, int64_t i)
{
	if (v->f)
		v->f[k] = f;
	else
		v->i[k] = i;
}

/* --- elementwise ---------------------------------------------------------- */

static int r_unary(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int rc = need_in(c, n, 0, &x);
	const char *op = n->op_type;

	if (rc)
		return rc;
	rc = same_as(c, n, 0, x, x->dtype);
	if (rc)
		return rc;
	y = out_t(c, n, 0);
	if (y && x->value && small(x)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < v->n; k++) {
			double f = colloc__value_get_f(x->value, k);
			int64_t i = colloc__value_get_i(x->value, k);

			if (strcmp(op, "Neg") == 0)
				f = -f, i = i == INT64_MIN ? INT64_MAX : -i;
			else if (strcmp(op, "Abs") == 0)
				f = fabs(f),
				i = i < 0 ? (i == INT64_MIN ? INT64_MAX : -i) : i;
			else if (strcmp(op, "Sqrt") == 0)
				f = sqrt(f), i = i > 0 ? (int64_t)sqrt((double)i) : 0;
			else if (strcmp(op, "Floor") == 0)
				f = floor(f);
			else if (strcmp(op, "Ceil") == 0)
				f = ceil(f);
			else if (strcmp(op, "Round") == 0)
				f = nearbyint(f);
			else if (strcmp(op, "Reciprocal") == 0)
				f = 1.0 / f;
			else if (strcmp(op, "Relu") == 0)
				f = f > 0 ? f : 0, i = i > 0 ? i : 0;
			else if (strcmp(op, "Identity") != 0) {
				y->value = NULL; /* not worth folding */
				break;
			}
			value_put(v, k, f, i);
		}
	}
	return 0;
}

static int r_not(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int rc = need_in(c, n, 0, &x);

	if (rc)
		return rc;
	rc = same_as(c, n, 0, x, COLLOC_DT_BOOL);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && small(x)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < v->n; k++)
			v->i[k] = !colloc__value_get_i(x->value, k);
	}
	return rc;
}

enum bin_kind { BIN_ARITH, BIN_COMPARE, BIN_LOGIC };

static int64_t idiv(int64_t a, int64_t b)
{
	if (b == 0)
		return 0;
	if (a == INT64_MIN && b == -1)
		return INT64_MAX;
	return a / b;
}

static int64_t imod(int64_t a, int64_t b, bool fmod_sign)
{
	int64_t m;

	if (b == 0 || (a == INT64_MIN && b == -1))
		return 0;
	m = a % b;
	/* ONNX Mod with fmod=0 takes the divisor's sign, like Python. */
	if (!fmod_sign && m != 0 && ((m < 0) != (b < 0)))
		m += b;
	return m;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return a > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return a >= 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

static void fold_binary(const char *op, double fa, double fb, int64_t ia, int64_t ib,
			bool fmod_sign, double *f, int64_t *i)
{
	*f = 0;
	*i = 0;
	if (strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0)
		*f = fa + fb, *i = sat_add(ia, ib);
	else if (strcmp(op, "Sub") == 0)
		*f = fa - fb, *i = sat_sub(ia, ib);
	else if (strcmp(op, "Mul") == 0)
		*f = fa * fb, *i = sat_mul(ia, ib);
	else if (strcmp(op, "Div") == 0)
		*f = fa / fb, *i = idiv(ia, ib);
	else if (strcmp(op, "Mod") == 0)
		*f = fb != 0 ? fmod(fa, fb) : 0, *i = imod(ia, ib, fmod_sign);
	else if (strcmp(op, "Pow") == 0)
		*f = pow(fa, fb), *i = colloc__f64_to_i64(pow((double)ia, (double)ib));
	else if (strcmp(op, "Max") == 0)
		*f = fa > fb ? fa : fb, *i = ia > ib ? ia : ib;
	else if (strcmp(op, "Min") == 0)
		*f = fa < fb ? fa : fb, *i = ia < ib ? ia : ib;
	else if (strcmp(op, "Equal") == 0)
		*i = fa == fb;
	else if (strcmp(op, "Less") == 0)
		*i = fa < fb;
	else if (strcmp(op, "LessOrEqual") == 0)
		*i = fa <= fb;
	else if (strcmp(op, "Greater") == 0)
		*i = fa > fb;
	else if (strcmp(op, "GreaterOrEqual") == 0)
		*i = fa >= fb;
	else if (strcmp(op, "And") == 0)
		*i = ia && ib;
	else if (strcmp(op, "Or") == 0)
		*i = ia || ib;
	else if (strcmp(op, "Xor") == 0)
		*i = !ia != !ib;
	if (!isfinite(*f) && strcmp(op, "Div") != 0 && strcmp(op, "Pow") != 0)
		*f = 0;
}

/* Binary and variadic broadcasting ops; folds small known inputs. */
static int r_nary(struct colloc__infer *c, const struct colloc_node *n,
		  enum bin_kind kind)
{
	struct colloc_tensor *first, *y;
	int64_t shape[COLLOC_MAX_RANK];
	int rank, rc, dtype;
	bool all_known = true;

	rc = need_in(c, n, 0, &first);
	if (rc)
		return rc;
	rank = first->rank;
	memcpy(shape, first->shape, sizeof(shape));
	for (int k = 1; k < n->n_inputs; k++) {
		struct colloc_tensor *t = in_t(c, n, k);

		if (!t)
			return fail(c, COLLOC_EFORMAT, "input %d is required", k);
		rc = broadcast(c, rank, shape, t->rank, t->shape, &rank, shape);
		if (rc)
			return rc;
	}
	dtype = kind == BIN_ARITH ? first->dtype : COLLOC_DT_BOOL;
	rc = set_out(c, n, 0, dtype, rank, shape);
	if (rc)
		return rc;
	y = out_t(c, n, 0);
	for (int k = 0; k < n->n_inputs; k++) {
		const struct colloc_tensor *t = in_t(c, n, k);

		if (!t || !t->value)
			all_known = false;
	}
	if (y && all_known && small(y) && n->n_inputs >= 1) {
		struct colloc_value *v = new_value(c, y);
		bool fmod_sign = colloc_node_attr_int(n, "fmod", 0) != 0;

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			const struct colloc_tensor *a = first;
			size_t oa = bcast_offset(e, rank, shape, a->rank, a->shape);
			double f = colloc__value_get_f(a->value, oa);
			int64_t i = colloc__value_get_i(a->value, oa);

			for (int k = 1; k < n->n_inputs; k++) {
				const struct colloc_tensor *b = in_t(c, n, k);
				size_t ob;

				/* checked above; tells -Wnull-dereference */
				if (!b)
					continue;
				ob = bcast_offset(e, rank, shape, b->rank, b->shape);
				fold_binary(n->op_type, f,
					    colloc__value_get_f(b->value, ob), i,
					    colloc__value_get_i(b->value, ob), fmod_sign,
					    &f, &i);
			}
			if (kind != BIN_ARITH)
				v->i[e] = i;
			else
				value_put(v, e, f, i);
		}
	}
	return 0;
}

static int r_arith(struct colloc__infer *c, const struct colloc_node *n)
{
	return r_nary(c, n, BIN_ARITH);
}

static int r_compare(struct colloc__infer *c, const struct colloc_node *n)
{
	return r_nary(c, n, BIN_COMPARE);
}

static int r_where(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *cond, *a, *b, *y;
	int64_t shape[COLLOC_MAX_RANK];
	int rank, rc;

	if ((rc = need_in(c, n, 0, &cond)) || (rc = need_in(c, n, 1, &a)) ||
	    (rc = need_in(c, n, 2, &b)))
		return rc;
	rc = broadcast(c, cond->rank, cond->shape, a->rank, a->shape, &rank, shape);
	if (!rc)
		rc = broadcast(c, rank, shape, b->rank, b->shape, &rank, shape);
	if (!rc)
		rc = set_out(c, n, 0, a->dtype, rank, shape);
	if (rc)
		return rc;
	y = out_t(c, n, 0);
	if (y && cond->value && a->value && b->value && small(y)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t e = 0; e < v->n; e++) {
			size_t oc = bcast_offset(e, rank, shape, cond->rank, cond->shape);
			const struct colloc_tensor *s =
				colloc__value_get_i(cond->value, oc) ? a : b;
			size_t os = bcast_offset(e, rank, shape, s->rank, s->shape);

			value_put(v, e, colloc__value_get_f(s->value, os),
				  colloc__value_get_i(s->value, os));
		}
	}
	return 0;
}

static int r_cast(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *y;
	int64_t to;
	int rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (strcmp(n->op_type, "CastLike") == 0) {
		struct colloc_tensor *like;

		if ((rc = need_in(c, n, 1, &like)))
			return rc;
		to = like->dtype;
	} else {
		to = colloc_node_attr_int(n, "to", -1);
	}
	if (to <= 0 || to >= COLLOC_DT_COUNT_)
		return fail(c, COLLOC_EFORMAT, "invalid target type %lld", (long long)to);
	rc = same_as(c, n, 0, x, (int)to);
	y = out_t(c, n, 0);
	if (!rc && y && x->value && small(x)) {
		struct colloc_value *v = new_value(c, y);

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < v->n; k++) {
			int64_t i = colloc__value_get_i(x->value, k);

			if (to == COLLOC_DT_BOOL)
				i = colloc__value_get_f(x->value, k) != 0;
			value_put(v, k, colloc__value_get_f(x->value, k), i);
		}
	}
	return rc;
}

/* Ops whose first output has the first input's shape and dtype, and whose
 * other outputs (if any) are not produced by training graphs. */
static int r_same(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int rc = need_in(c, n, 0, &x);

	if (rc)
		return rc;
	return same_as(c, n, 0, x, x->dtype);
}

static int r_dropout(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int rc = need_in(c, n, 0, &x);

	if (!rc)
		rc = same_as(c, n, 0, x, x->dtype);
	if (!rc)
		rc = same_as(c, n, 1, x, COLLOC_DT_BOOL);
	return rc;
}

/* --- constants and shapes ------------------------------------------------- */

static int r_constant(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_shape(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_size(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_constant_of_shape(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_range(struct colloc__infer *c, const struct colloc_node *n)
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

/* --- movement ------------------------------------------------------------- */

static int r_reshape(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_flatten(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_squeeze(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_unsqueeze(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_transpose(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_concat(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_split(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_slice(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_gather(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_gather_elements(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *idx;
	int rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &idx)))
		return rc;
	return set_out(c, n, 0, x->dtype, idx->rank, idx->shape);
}

static int r_expand(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_tile(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_pad(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t pads[2 * COLLOC_MAX_RANK], axes[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
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

/* --- reductions ----------------------------------------------------------- */

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

static int r_reduce(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_argmax(struct colloc__infer *c, const struct colloc_node *n)
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

static int r_topk(struct colloc__infer *c, const struct colloc_node *n)
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

/* --- neural-network ops --------------------------------------------------- */

/* Spatial output sizes shared by Conv, pooling and ConvTranspose. */
static int spatial(struct colloc__infer *c, const struct colloc_node *n,
		   const struct colloc_tensor *x, const int64_t *kernel, int ns,
		   bool transpose, int64_t *out)
{
	int64_t strides[COLLOC_MAX_RANK], pads[2 * COLLOC_MAX_RANK], dil[COLLOC_MAX_RANK],
		outpad[COLLOC_MAX_RANK], oshape[COLLOC_MAX_RANK];
	int nstr, npad, ndil, nop, nos, rc;
	const struct colloc_attr *ap = colloc_node_attr(n, "auto_pad");
	const char *auto_pad = ap && ap->type == COLLOC_ATTR_STRING ? ap->s : "NOTSET";
	bool ceil_mode = colloc_node_attr_int(n, "ceil_mode", 0) != 0;

	if ((rc = attr_ints(c, n, "strides", strides, COLLOC_MAX_RANK, &nstr)) ||
	    (rc = attr_ints(c, n, "pads", pads, 2 * COLLOC_MAX_RANK, &npad)) ||
	    (rc = attr_ints(c, n, "dilations", dil, COLLOC_MAX_RANK, &ndil)) ||
	    (rc = attr_ints(c, n, "output_padding", outpad, COLLOC_MAX_RANK, &nop)) ||
	    (rc = attr_ints(c, n, "output_shape", oshape, COLLOC_MAX_RANK, &nos)))
		return rc;
	if ((nstr >= 0 && nstr != ns) || (npad >= 0 && npad != 2 * ns) ||
	    (ndil >= 0 && ndil != ns) || (nop >= 0 && nop != ns))
		return fail(c, COLLOC_ESHAPE,
			    "strides/pads/dilations do not match %d spatial dims", ns);
	for (int d = 0; d < ns; d++) {
		int64_t in = x->shape[2 + d];
		int64_t s = nstr >= 0 ? strides[d] : 1;
		int64_t dl = ndil >= 0 ? dil[d] : 1;
		int64_t pb = npad >= 0 ? pads[d] : 0, pe = npad >= 0 ? pads[d + ns] : 0;
		int64_t ek, o;

		if (s <= 0 || dl <= 0 || kernel[d] <= 0 || pb < 0 || pe < 0)
			return fail(c, COLLOC_ESHAPE,
				    "kernel, strides, dilations must be positive and "
				    "pads non-negative");
		if (kernel[d] > INT32_MAX || dl > INT32_MAX || s > INT32_MAX ||
		    pb > INT32_MAX || pe > INT32_MAX || in > (INT64_C(1) << 40))
			return fail(c, COLLOC_ELIMIT, "convolution parameters too large");
		ek = (kernel[d] - 1) * dl + 1;
		if (transpose) {
			if (nos >= 0 && nos == ns) {
				out[d] = oshape[d];
				continue;
			}
			/* saturating: a huge result is rejected downstream,
			 * an overflow would be undefined */
			o = sat_add(sat_add(sat_mul(s, in - 1), nop >= 0 ? outpad[d] : 0),
				    ek);
			if (strcmp(auto_pad, "NOTSET") == 0)
				o = sat_sub(o, pb + pe);
			else if (strcmp(auto_pad, "VALID") != 0)
				o = sat_mul(in, s);
			out[d] = o;
			continue;
		}
		if (strcmp(auto_pad, "SAME_UPPER") == 0 ||
		    strcmp(auto_pad, "SAME_LOWER") == 0) {
			out[d] = (in + s - 1) / s;
			continue;
		}
		if (strcmp(auto_pad, "VALID") == 0)
			pb = pe = 0;
		else if (strcmp(auto_pad, "NOTSET") != 0)
			return fail(c, COLLOC_EFORMAT, "unknown auto_pad '%s'", auto_pad);
		o = in + pb + pe - ek;
		if (o < 0)
			return fail(c, COLLOC_ESHAPE,
				    "spatial dim %d: input %lld with padding is smaller "
				    "than the kernel extent %lld",
				    d, (long long)in, (long long)ek);
		if (ceil_mode) {
			o = (o + s - 1) / s + 1;
			/* The last window must start inside the input or the
			 * left padding (ONNX and PyTorch agree). */
			if ((o - 1) * s >= in + pb)
				o--;
		} else {
			o = o / s + 1;
		}
		out[d] = o;
	}
	return 0;
}

static int r_conv(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *w, *b;
	int64_t kernel[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	int64_t group = colloc_node_attr_int(n, "group", 1);
	bool transpose = strcmp(n->op_type, "ConvTranspose") == 0;
	int nk, ns, rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &w)))
		return rc;
	if (x->rank < 3 || w->rank != x->rank)
		return fail(c, COLLOC_ESHAPE,
			    "input has rank %d and weight rank %d; expected equal "
			    "ranks of at least 3",
			    x->rank, w->rank);
	ns = x->rank - 2;
	if (group <= 0)
		return fail(c, COLLOC_ESHAPE, "group must be positive");
	if ((rc = attr_ints(c, n, "kernel_shape", kernel, COLLOC_MAX_RANK, &nk)))
		return rc;
	if (nk < 0)
		for (int d = 0; d < ns; d++)
			kernel[d] = w->shape[2 + d];
	else if (nk != ns)
		return fail(c, COLLOC_ESHAPE, "kernel_shape has %d dims, expected %d", nk,
			    ns);
	if (!transpose && x->shape[1] != w->shape[1] * group)
		return fail(c, COLLOC_ESHAPE,
			    "input has %lld channels but weight expects %lld x %lld "
			    "groups",
			    (long long)x->shape[1], (long long)w->shape[1],
			    (long long)group);
	if (transpose && x->shape[1] != w->shape[0])
		return fail(c, COLLOC_ESHAPE, "input has %lld channels, weight %lld",
			    (long long)x->shape[1], (long long)w->shape[0]);
	b = in_t(c, n, 2);
	shape[0] = x->shape[0];
	shape[1] = transpose ? sat_mul(w->shape[1], group) : w->shape[0];
	if (b && (b->rank != 1 || b->shape[0] != shape[1]))
		return fail(c, COLLOC_ESHAPE, "bias does not match %lld output channels",
			    (long long)shape[1]);
	if ((rc = spatial(c, n, x, kernel, ns, transpose, shape + 2)))
		return rc;
	return set_out(c, n, 0, x->dtype, x->rank, shape);
}

static int r_pool(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t kernel[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	int nk, rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (x->rank < 3)
		return fail(c, COLLOC_ESHAPE, "input has rank %d, expected >= 3",
			    x->rank);
	if ((rc = attr_ints(c, n, "kernel_shape", kernel, COLLOC_MAX_RANK, &nk)))
		return rc;
	if (nk != x->rank - 2)
		return fail(c, COLLOC_ESHAPE, "kernel_shape has %d dims, expected %d", nk,
			    x->rank - 2);
	shape[0] = x->shape[0];
	shape[1] = x->shape[1];
	if ((rc = spatial(c, n, x, kernel, nk, false, shape + 2)))
		return rc;
	if ((rc = set_out(c, n, 0, x->dtype, x->rank, shape)))
		return rc;
	return set_out(c, n, 1, COLLOC_DT_INT64, x->rank, shape);
}

static int r_global_pool(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t shape[COLLOC_MAX_RANK];
	int rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (x->rank < 2)
		return fail(c, COLLOC_ESHAPE, "input has rank %d, expected >= 2",
			    x->rank);
	for (int d = 0; d < x->rank; d++)
		shape[d] = d < 2 ? x->shape[d] : 1;
	return set_out(c, n, 0, x->dtype, x->rank, shape);
}

static int r_batchnorm(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *scale;
	int64_t ch;
	int rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &scale)))
		return rc;
	if (x->rank < 2)
		return fail(c, COLLOC_ESHAPE, "input has rank %d, expected >= 2",
			    x->rank);
	ch = x->shape[1];
	for (int k = 1; k < 5 && k < n->n_inputs; k++) {
		struct colloc_tensor *t = in_t(c, n, k);

		if (t && (t->rank != 1 || t->shape[0] != ch))
			return fail(c, COLLOC_ESHAPE,
				    "input %d ('%s') must have shape [%lld]", k, t->name,
				    (long long)ch);
	}
	if ((rc = same_as(c, n, 0, x, x->dtype)))
		return rc;
	/* Outputs 1-2 (training): running mean and var, or (opset < 14)
	 * mean, var, saved mean, saved var: all [C]. */
	for (int k = 1; k < n->n_outputs; k++)
		if ((rc = set_out(c, n, k, scale->dtype, 1, &ch)))
			return rc;
	return 0;
}

static int r_layernorm(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t shape[COLLOC_MAX_RANK];
	int axis, rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if ((rc = norm_axis(c, colloc_node_attr_int(n, "axis", -1), x->rank, &axis)))
		return rc;
	if ((rc = same_as(c, n, 0, x, x->dtype)))
		return rc;
	for (int d = 0; d < x->rank; d++)
		shape[d] = d < axis ? x->shape[d] : 1;
	for (int k = 1; k < 3; k++)
		if ((rc = set_out(c, n, k, COLLOC_DT_FLOAT, x->rank, shape)))
			return rc;
	return 0;
}

static int r_gemm(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *a, *b;
	int64_t shape[2];
	bool ta = colloc_node_attr_int(n, "transA", 0) != 0;
	bool tb = colloc_node_attr_int(n, "transB", 0) != 0;
	int64_t k1, k2;
	int rc;

	if ((rc = need_in(c, n, 0, &a)) || (rc = need_in(c, n, 1, &b)))
		return rc;
	if (a->rank != 2 || b->rank != 2)
		return fail(c, COLLOC_ESHAPE, "inputs have ranks %d and %d, expected 2",
			    a->rank, b->rank);
	shape[0] = ta ? a->shape[1] : a->shape[0];
	k1 = ta ? a->shape[0] : a->shape[1];
	k2 = tb ? b->shape[1] : b->shape[0];
	shape[1] = tb ? b->shape[0] : b->shape[1];
	if (k1 != k2)
		return fail(c, COLLOC_ESHAPE, "inner dimensions differ: %lld vs %lld",
			    (long long)k1, (long long)k2);
	return set_out(c, n, 0, a->dtype, 2, shape);
}

static int r_matmul(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *a, *b;
	int64_t sa[COLLOC_MAX_RANK], sb[COLLOC_MAX_RANK], shape[COLLOC_MAX_RANK];
	int ra, rb, rank, rc;

	if ((rc = need_in(c, n, 0, &a)) || (rc = need_in(c, n, 1, &b)))
		return rc;
	if (a->rank < 1 || b->rank < 1)
		return fail(c, COLLOC_ESHAPE, "MatMul of a scalar");
	/* numpy.matmul: promote 1-D operands, broadcast batch dims. */
	ra = a->rank, rb = b->rank;
	memcpy(sa, a->shape, sizeof(sa));
	memcpy(sb, b->shape, sizeof(sb));
	if (ra == 1)
		sa[1] = sa[0], sa[0] = 1, ra = 2;
	if (rb == 1)
		sb[1] = 1, rb = 2;
	if (sa[ra - 1] != sb[rb - 2])
		return fail(c, COLLOC_ESHAPE, "inner dimensions differ: %lld vs %lld",
			    (long long)sa[ra - 1], (long long)sb[rb - 2]);
	if ((rc = broadcast(c, ra - 2, sa, rb - 2, sb, &rank, shape)))
		return rc;
	if (a->rank > 1)
		shape[rank++] = sa[ra - 2];
	if (b->rank > 1)
		shape[rank++] = sb[rb - 1];
	return set_out(c, n, 0, a->dtype, rank, shape);
}

static int r_softmax(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int axis, rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (x->rank > 0 &&
	    (rc = norm_axis(c, colloc_node_attr_int(n, "axis", -1), x->rank, &axis)))
		return rc;
	return same_as(c, n, 0, x, x->dtype);
}

static int r_resize(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *sizes = in_t(c, n, 3), *scales = in_t(c, n, 2);
	int64_t shape[COLLOC_MAX_RANK];
	int rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (sizes && sizes->rank == 1 && sizes->shape[0] > 0) {
		if (!sizes->value || sizes->value->n != (size_t)x->rank)
			return fail(c, COLLOC_EUNSUPPORTED, "Resize sizes unknown");
		for (int d = 0; d < x->rank; d++)
			shape[d] = colloc__value_get_i(sizes->value, (size_t)d);
	} else if (scales && scales->value && scales->value->n == (size_t)x->rank) {
		for (int d = 0; d < x->rank; d++) {
			double sc = colloc__value_get_f(scales->value, (size_t)d);
			double dim = floor((double)x->shape[d] * sc);

			/* NaN, negative or huge scales: no size, and no
			 * undefined conversion either */
			if (!(dim >= 0 && dim < 9.2e18))
				return fail(c, COLLOC_ESHAPE,
					    "Resize scale %g turns dim %d into %g", sc, d,
					    dim);
			shape[d] = (int64_t)dim;
		}
	} else {
		return fail(c, COLLOC_EUNSUPPORTED, "Resize scales unknown");
	}
	return set_out(c, n, 0, x->dtype, x->rank, shape);
}

/*
 * Einsum: "ab,bc->ac", implicit outputs ("ab,bc" -> letters seen once, in
 * alphabetical order) and "..." for broadcast leading dims. Labels must
 * agree in size across operands (or be 1, which broadcasts).
 */
#define EINSUM_MAX_IN 8

int colloc__einsum_parse(const char *eq, int n_in, const int *ranks,
			 int (*labels)[COLLOC_MAX_RANK], int *out_labels, int *out_rank,
			 int *ell_rank)
{
	int k = 0, pos = 0, len = (int)strlen(eq);
	int counts[128] = {0};
	const char *arrow = strstr(eq, "->");

	*ell_rank = 0;
	/* Each input term. Ellipsis is stored as label 1 + its index. */
	for (int i = 0; i < n_in; i++) {
		int r = 0, dots = 0;

		while (pos < len && eq[pos] == ' ')
			pos++;
		while (pos < len && eq[pos] != ',' && eq[pos] != '-') {
			char ch = eq[pos];

			if (ch == '.') {
				if (pos + 2 >= len || eq[pos + 1] != '.' ||
				    eq[pos + 2] != '.' || dots)
					return -1;
				dots = 1;
				pos += 3;
				labels[i][r++] = -1; /* marker, expanded below */
				continue;
			}
			if (ch == ' ') {
				pos++;
				continue;
			}
			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) ||
			    r >= COLLOC_MAX_RANK)
				return -1;
			labels[i][r++] = (unsigned char)ch;
			counts[(unsigned char)ch]++;
			pos++;
		}
		/* Expand the ellipsis marker to the leftover dims. */
		{
			int explicit_dims = r - dots, e = ranks[i] - explicit_dims,
			    tmp[COLLOC_MAX_RANK];
			int w = 0;

			if (e < 0 || (!dots && e != 0) || ranks[i] > COLLOC_MAX_RANK)
				return -1;
			if (dots && e > *ell_rank)
				*ell_rank = e;
			for (int j = 0; j < r; j++) {
				if (labels[i][j] == -1)
					for (int q = 0; q < e; q++)
						tmp[w++] = 1 + (COLLOC_MAX_RANK - e +
								q); /* right-aligned */
				else
					tmp[w++] = labels[i][j];
			}
			memcpy(labels[i], tmp, sizeof(int) * (size_t)w);
		}
		if (i + 1 < n_in) {
			if (pos >= len || eq[pos] != ',')
				return -1;
			pos++;
		}
	}
	k = 0;
	if (arrow) {
		pos = (int)(arrow - eq) + 2;
		while (pos < len) {
			char ch = eq[pos];

			if (ch == ' ') {
				pos++;
				continue;
			}
			if (ch == '.') {
				if (pos + 2 >= len || eq[pos + 1] != '.' ||
				    eq[pos + 2] != '.')
					return -1;
				for (int q = 0; q < *ell_rank && k < COLLOC_MAX_RANK; q++)
					out_labels[k++] =
						1 + (COLLOC_MAX_RANK - *ell_rank + q);
				pos += 3;
				continue;
			}
			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) ||
			    k >= COLLOC_MAX_RANK || !counts[(unsigned char)ch])
				return -1;
			out_labels[k++] = (unsigned char)ch;
			pos++;
		}
	} else {
		for (int q = 0; q < *ell_rank; q++)
			out_labels[k++] = 1 + (COLLOC_MAX_RANK - *ell_rank + q);
		for (int ch = 'A'; ch <= 'z' && k < COLLOC_MAX_RANK; ch++)
			if (counts[ch] == 1)
				out_labels[k++] = ch;
	}
	*out_rank = k;
	return 0;
}

static int r_einsum(struct colloc__infer *c, const struct colloc_node *n)
{
	const struct colloc_attr *a = colloc_node_attr(n, "equation");
	int labels[EINSUM_MAX_IN][COLLOC_MAX_RANK], ranks[EINSUM_MAX_IN];
	int out_labels[COLLOC_MAX_RANK], out_rank, ell_rank;
	int64_t size[128 + COLLOC_MAX_RANK + 2], shape[COLLOC_MAX_RANK];
	struct colloc_tensor *x;

	if (!a || a->type != COLLOC_ATTR_STRING)
		return fail(c, COLLOC_EFORMAT, "Einsum without an equation");
	if (n->n_inputs < 1 || n->n_inputs > EINSUM_MAX_IN)
		return fail(c, COLLOC_EUNSUPPORTED, "Einsum with %d operands",
			    n->n_inputs);
	for (int i = 0; i < n->n_inputs; i++) {
		int rc = need_in(c, n, i, &x);

		if (rc)
			return rc;
		ranks[i] = x->rank;
	}
	if (colloc__einsum_parse(a->s, n->n_inputs, ranks, labels, out_labels, &out_rank,
				 &ell_rank))
		return fail(c, COLLOC_EFORMAT, "cannot parse Einsum equation '%.60s'",
			    a->s);
	for (size_t k = 0; k < sizeof(size) / sizeof(size[0]); k++)
		size[k] = 1;
	for (int i = 0; i < n->n_inputs; i++) {
		x = in_t(c, n, i);
		if (!x)
			return fail(c, COLLOC_EFORMAT, "input %d is required", i);
		for (int d = 0; d < x->rank; d++) {
			int l = labels[i][d];
			int64_t v = x->shape[d];

			if (size[l] != 1 && v != 1 && size[l] != v)
				return fail(c, COLLOC_ESHAPE,
					    "Einsum label '%c' is %lld in one operand "
					    "and %lld in "
					    "another",
					    l > 32 ? l : '.', (long long)size[l],
					    (long long)v);
			if (v != 1)
				size[l] = v;
		}
	}
	for (int d = 0; d < out_rank; d++)
		shape[d] = size[out_labels[d]];
	x = in_t(c, n, 0);
	return set_out(c, n, 0, x ? x->dtype : COLLOC_DT_FLOAT, out_rank, shape);
}

static int r_einsum_unsupported(struct colloc__infer *c, const struct colloc_node *n)
{
	(void)n;
	return fail(c, COLLOC_EUNSUPPORTED,
		    "data-dependent output shape; colloc cannot infer it");
}

static int r_nonzero(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t shape[2];
	int rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (!x->value)
		return r_einsum_unsupported(c, n);
	shape[0] = x->rank;
	shape[1] = 0;
	for (size_t k = 0; k < x->value->n; k++)
		shape[1] += colloc__value_get_f(x->value, k) != 0;
	return set_out(c, n, 0, COLLOC_DT_INT64, 2, shape);
}

/* --- table ---------------------------------------------------------------- */

struct rule {
	const char *op;
	colloc__shape_fn fn;
};

static const struct rule rules[] = {
	{"Abs", r_unary},
	{"Add", r_arith},
	{"And", r_compare},
	{"ArgMax", r_argmax},
	{"ArgMin", r_argmax},
	{"AveragePool", r_pool},
	{"BatchNormalization", r_batchnorm},
	{"Cast", r_cast},
	{"CastLike", r_cast},
	{"Ceil", r_unary},
	{"Celu", r_same},
	{"Clip", r_same},
	{"Concat", r_concat},
	{"Constant", r_constant},
	{"ConstantOfShape", r_constant_of_shape},
	{"Conv", r_conv},
	{"ConvTranspose", r_conv},
	{"Cos", r_same},
	{"CumSum", r_same},
	{"Div", r_arith},
	{"Dropout", r_dropout},
	{"Einsum", r_einsum},
	{"Elu", r_same},
	{"Equal", r_compare},
	{"Erf", r_same},
	{"Exp", r_same},
	{"Expand", r_expand},
	{"Flatten", r_flatten},
	{"Floor", r_unary},
	{"Gather", r_gather},
	{"GatherElements", r_gather_elements},
	{"Gelu", r_same},
	{"Gemm", r_gemm},
	{"GlobalAveragePool", r_global_pool},
	{"GlobalMaxPool", r_global_pool},
	{"Greater", r_compare},
	{"GreaterOrEqual", r_compare},
	{"HardSigmoid", r_same},
	{"HardSwish", r_same},
	{"Identity", r_unary},
	{"InstanceNormalization", r_same},
	{"IsInf", r_not},
	{"IsNaN", r_not},
	{"LayerNormalization", r_layernorm},
	{"LeakyRelu", r_same},
	{"Less", r_compare},
	{"LessOrEqual", r_compare},
	{"Log", r_same},
	{"LogSoftmax", r_softmax},
	{"MatMul", r_matmul},
	{"Max", r_arith},
	{"MaxPool", r_pool},
	{"Mean", r_arith},
	{"Min", r_arith},
	{"Mish", r_same},
	{"Mod", r_arith},
	{"Mul", r_arith},
	{"Neg", r_unary},
	{"NonZero", r_nonzero},
	{"Not", r_not},
	{"Or", r_compare},
	{"PRelu", r_same},
	{"Pad", r_pad},
	{"Pow", r_arith},
	{"Range", r_range},
	{"Reciprocal", r_unary},
	{"ReduceL2", r_reduce},
	{"ReduceMax", r_reduce},
	{"ReduceMean", r_reduce},
	{"ReduceMin", r_reduce},
	{"ReduceProd", r_reduce},
	{"ReduceSum", r_reduce},
	{"ReduceSumSquare", r_reduce},
	{"Relu", r_unary},
	{"Reshape", r_reshape},
	{"Resize", r_resize},
	{"Round", r_unary},
	{"ScatterElements", r_same},
	{"ScatterND", r_same},
	{"Selu", r_same},
	{"Shape", r_shape},
	{"Sigmoid", r_same},
	{"Sign", r_same},
	{"Sin", r_same},
	{"Size", r_size},
	{"Slice", r_slice},
	{"Softmax", r_softmax},
	{"Softplus", r_same},
	{"Split", r_split},
	{"Sqrt", r_unary},
	{"Squeeze", r_squeeze},
	{"Sub", r_arith},
	{"Sum", r_arith},
	{"Tanh", r_same},
	{"Tile", r_tile},
	{"TopK", r_topk},
	{"Transpose", r_transpose},
	{"Trilu", r_same},
	{"Unsqueeze", r_unsqueeze},
	{"Where", r_where},
	{"Xor", r_compare},
};

static int cmp_rule(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

colloc__shape_fn colloc__shape_rule(const char *op_type)
{
	const void *hit = bsearch(op_type, rules, sizeof(rules) / sizeof(rules[0]),
				  sizeof(rules[0]), cmp_rule);

	return hit ? ((const struct rule *)hit)->fn : NULL;
}
