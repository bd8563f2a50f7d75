/*
 * shape_nn.c — shape rules (and, for small integer tensors, contents) of the
 * neural-network ops: convolutions, pooling, normalizations, Gemm and
 * MatMul, softmax, Resize, GridSample, Einsum, NonZero, as the ONNX operator
 * specification defines them for opsets 11-20. The op table (ops.c) maps op
 * names to these rules; helpers are in shape_util.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ops.h"
#include "model/shape_util.h"

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

int colloc__shape_conv(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_pool(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_global_pool(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_batchnorm(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_layernorm(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_gemm(struct colloc__infer *c, const struct colloc_node *n)
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

/*
 * LSTM, GRU and RNN (ONNX opset 7-14): X [seq, batch, input] (layout 0) or
 * [batch, seq, input] (layout 1, opset 14), W [dirs, gates x hidden,
 * input]. Outputs Y [seq, dirs, batch, hidden] (layout 1: [batch, seq,
 * dirs, hidden]), Y_h and (LSTM) Y_c [dirs, batch, hidden] (layout 1:
 * [batch, dirs, hidden]).
 */
int colloc__shape_rnn(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *w;
	int64_t hidden = colloc_node_attr_int(n, "hidden_size", 0);
	int64_t layout = colloc_node_attr_int(n, "layout", 0), seq, batch, dirs;
	int64_t y[4], yh[3];
	const struct colloc_attr *dir = colloc_node_attr(n, "direction");
	int rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &w)))
		return rc;
	if (x->rank != 3 || w->rank != 3)
		return fail(c, COLLOC_ESHAPE, "X and W have ranks %d and %d, expected 3",
			    x->rank, w->rank);
	if (hidden <= 0)
		return fail(c, COLLOC_EFORMAT, "hidden_size %lld is not positive",
			    (long long)hidden);
	dirs = dir && dir->type == COLLOC_ATTR_STRING &&
			       strcmp(dir->s, "bidirectional") == 0
		       ? 2
		       : 1;
	if (w->shape[0] != dirs)
		return fail(c, COLLOC_ESHAPE,
			    "W has %lld directions, direction says %lld",
			    (long long)w->shape[0], (long long)dirs);
	seq = layout ? x->shape[1] : x->shape[0];
	batch = layout ? x->shape[0] : x->shape[1];
	if (layout) {
		y[0] = batch, y[1] = seq, y[2] = dirs, y[3] = hidden;
		yh[0] = batch, yh[1] = dirs, yh[2] = hidden;
	} else {
		y[0] = seq, y[1] = dirs, y[2] = batch, y[3] = hidden;
		yh[0] = dirs, yh[1] = batch, yh[2] = hidden;
	}
	if ((rc = set_out(c, n, 0, x->dtype, 4, y)) ||
	    (rc = set_out(c, n, 1, x->dtype, 3, yh)))
		return rc;
	return set_out(c, n, 2, x->dtype, 3, yh);
}

int colloc__shape_matmul(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_attention(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *q, *k, *v;
	int64_t shape[4];
	int rc;

	if ((rc = need_in(c, n, 0, &q)) || (rc = need_in(c, n, 1, &k)) ||
	    (rc = need_in(c, n, 2, &v)))
		return rc;
	if (n->n_inputs > 3 || n->n_outputs > 1)
		return fail(c, COLLOC_EUNSUPPORTED,
			    "Attention with a mask, a KV cache or extra outputs");
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		return fail(c, COLLOC_EUNSUPPORTED,
			    "Attention with 3-D operands (4-D [batch, heads, seq, "
			    "head_dim] only)");
	if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] ||
	    k->shape[1] != v->shape[1] || k->shape[2] != v->shape[2] ||
	    k->shape[3] != q->shape[3])
		return fail(c, COLLOC_ESHAPE,
			    "Attention operands disagree: q [%lld, %lld, %lld, %lld], "
			    "k [%lld, %lld, %lld, %lld], v [%lld, %lld, %lld, %lld]",
			    (long long)q->shape[0], (long long)q->shape[1],
			    (long long)q->shape[2], (long long)q->shape[3],
			    (long long)k->shape[0], (long long)k->shape[1],
			    (long long)k->shape[2], (long long)k->shape[3],
			    (long long)v->shape[0], (long long)v->shape[1],
			    (long long)v->shape[2], (long long)v->shape[3]);
	if (k->shape[1] <= 0 || q->shape[1] % k->shape[1])
		return fail(c, COLLOC_ESHAPE,
			    "Attention: %lld query heads are not a multiple of %lld "
			    "key/value heads",
			    (long long)q->shape[1], (long long)k->shape[1]);
	shape[0] = q->shape[0];
	shape[1] = q->shape[1];
	shape[2] = q->shape[2];
	shape[3] = v->shape[3];
	return set_out(c, n, 0, q->dtype, 4, shape);
}

int colloc__shape_softmax(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_resize(struct colloc__infer *c, const struct colloc_node *n)
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
 * GridSample (opset 16: 4-D; opset 20: N-D): X [N, C, D1 .. Dr] sampled at
 * grid [N, D1_out .. Dr_out, r] gives Y [N, C, D1_out .. Dr_out] in X's
 * dtype. PyTorch's grid_sample has 2-D and 3-D kernels only, so r is 2 or
 * 3; the mode and padding attributes do not change the shape.
 */
int colloc__shape_grid_sample(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x, *grid;
	int64_t shape[COLLOC_MAX_RANK];
	int r, rc;

	if ((rc = need_in(c, n, 0, &x)) || (rc = need_in(c, n, 1, &grid)))
		return rc;
	r = x->rank - 2;
	if (r != 2 && r != 3)
		return fail(c, COLLOC_EUNSUPPORTED,
			    "GridSample of a rank-%d input (4-D or 5-D only)", x->rank);
	if (grid->rank != x->rank || grid->shape[grid->rank - 1] != r ||
	    grid->shape[0] != x->shape[0])
		return fail(c, COLLOC_ESHAPE,
			    "grid '%s' must be [%lld, ..., %d] of rank %d", grid->name,
			    (long long)x->shape[0], r, x->rank);
	shape[0] = x->shape[0];
	shape[1] = x->shape[1];
	for (int d = 0; d < r; d++)
		shape[2 + d] = grid->shape[1 + d];
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

int colloc__shape_einsum(struct colloc__infer *c, const struct colloc_node *n)
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

int colloc__shape_einsum_unsupported(struct colloc__infer *c, const struct colloc_node *n)
{
	(void)n;
	return fail(c, COLLOC_EUNSUPPORTED,
		    "data-dependent output shape; colloc cannot infer it");
}

int colloc__shape_nonzero(struct colloc__infer *c, const struct colloc_node *n)
{
	struct colloc_tensor *x;
	int64_t shape[2];
	int rc;

	if ((rc = need_in(c, n, 0, &x)))
		return rc;
	if (!x->value)
		return colloc__shape_einsum_unsupported(c, n);
	shape[0] = x->rank;
	shape[1] = 0;
	for (size_t k = 0; k < x->value->n; k++)
		shape[1] += colloc__value_get_f(x->value, k) != 0;
	return set_out(c, n, 0, COLLOC_DT_INT64, 2, shape);
}
