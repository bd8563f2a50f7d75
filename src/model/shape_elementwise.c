/*
 * shape_elementwise.c — shape rules (and, for small integer tensors, contents) of the
 * elementwise ops: arithmetic (folded for small integer tensors, which is
 * how torch.onnx's shape arithmetic is evaluated), comparisons, casts and
 * the unary ops whose output has the input's shape, as the ONNX operator specification
 * defines them for opsets 11-18. The op table (ops.c) maps op names to these rules;
 * helpers are in shape_util.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/shape_util.h"

int colloc__shape_unary(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_not(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_arith(struct colloc__infer *c, const struct colloc_node *n)
{
	return r_nary(c, n, BIN_ARITH);
}

int colloc__shape_compare(struct colloc__infer *c, const struct colloc_node *n)
{
	return r_nary(c, n, BIN_COMPARE);
}

int colloc__shape_where(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_cast(struct colloc__infer *c, const struct colloc_node *n)
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
int colloc__shape_same(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int rc = need_in(c, n, 0, &x);

	if (rc)
		return rc;
	return same_as(c, n, 0, x, x->dtype);
}

int colloc__shape_dropout(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int rc = need_in(c, n, 0, &x);

	if (!rc)
		rc = same_as(c, n, 0, x, x->dtype);
	if (!rc)
		rc = same_as(c, n, 1, x, COLLOC_DT_BOOL);
	return rc;
}
