/*
 * value.c — small constant tensors used by shape arithmetic.
 */
#include "model/graph_int.h"

#include <math.h>

struct colloc_value *colloc__value_new(struct colloc__arena *a, size_t n, bool is_float)
{
	struct colloc_value *v = colloc__arena_alloc(a, sizeof(*v));

	if (!v)
		return NULL;
	v->n = n;
	if (is_float)
		v->f = colloc__arena_calloc(a, n ? n : 1, sizeof(double));
	else
		v->i = colloc__arena_calloc(a, n ? n : 1, sizeof(int64_t));
	if (!v->f && !v->i)
		return NULL;
	return v;
}

double colloc__value_get_f(const struct colloc_value *v, size_t k)
{
	return v->f ? v->f[k] : (double)v->i[k];
}

int64_t colloc__f64_to_i64(double d)
{
	if (isnan(d))
		return 0;
	/* 2^63 is exactly representable; anything at or past it saturates. */
	if (d >= 9223372036854775808.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

int64_t colloc__value_get_i(const struct colloc_value *v, size_t k)
{
	return v->i ? v->i[k] : colloc__f64_to_i64(v->f[k]);
}
