/*
 * train_ops.c — what each graph node does to memory when PyTorch trains
 * the model it came from: whether its output is new, a view or in place,
 * what autograd saves for backward, and which decomposed ONNX patterns were
 * one PyTorch op (and so save less than their parts would).
 *
 * The rules mirror tools/autograd/derivatives.yaml of PyTorch 1.13-2.6
 * (which tensors each backward formula reads) and the torch.onnx exporter's
 * decompositions (opset 11-17). docs/estimator.md lists them in prose; the
 * CPU reference (tools/reference_memory.py, tests) checks the totals.
 *
 * Not here: the event replay (timeline.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "colloc/ops.h"
#include "model/ops.h"

static bool op_is(const struct colloc_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0;
}

static const struct colloc_tensor *tens(const struct colloc_graph *g, int t)
{
	return t >= 0 ? &g->tensors[t] : NULL;
}

static int in_of(const struct colloc_node *n, int k)
{
	return k < n->n_inputs ? n->inputs[k] : -1;
}

static int out_of(const struct colloc_node *n, int k)
{
	return k < n->n_outputs ? n->outputs[k] : -1;
}

/* The op's autocast class (colloc__amp_op). */
static int amp_class(const struct colloc__top *tp)
{
	/* scaled_dot_product_attention is on autocast's lower-precision
	 * list with the matrix products */
	if (tp->kind == OPK_CONV || tp->kind == OPK_LINEAR || tp->kind == OPK_MATMUL ||
	    tp->kind == OPK_ATTENTION)
		return COLLOC__AMP_LOW;
	if (tp->kind == OPK_SOFTMAX || tp->kind == OPK_LAYERNORM)
		return COLLOC__AMP_FP32;
	if (tp->op && tp->op->amp == COLLOC__AMP_FP32)
		return COLLOC__AMP_FP32;
	return COLLOC__AMP_FOLLOW;
}

void colloc__loss_precision(int loss, int precision, int logits_esz, bool is_float,
			    bool *upcast, bool *copies)
{
	bool amp = precision == COLLOC_PREC_AMP_FP16 || precision == COLLOC_PREC_AMP_BF16;

	*upcast = (amp || loss == COLLOC_LOSS_CAUSAL_LM) && is_float && logits_esz > 0 &&
		  logits_esz < 4;
	*copies = *upcast &&
		  (loss == COLLOC_LOSS_CAUSAL_LM || precision != COLLOC_PREC_AMP_FP16);
}

int colloc__amp_input(const struct colloc__top *tp, int k)
{
	return k == 2 && tp->in[2] < 0 ? tp->bias : tp->in[k];
}

void colloc__amp_op(const struct colloc_graph *g, const struct colloc__top *tp, bool fp16,
		    const int *psrc, const int *present, uint8_t *esz, uint8_t cast[3])
{
	const struct colloc_node *n = &g->nodes[tp->node];
	int cls = amp_class(tp);
	uint8_t out_esz = 0;

	cast[0] = cast[1] = cast[2] = 0;
	if (cls != COLLOC__AMP_FOLLOW) {
		uint8_t want = cls == COLLOC__AMP_LOW ? 2 : 4;

		for (int k = 0; k < 3; k++) {
			int in = colloc__amp_input(tp, k);

			if (in < 0)
				continue;
			if (psrc[in] >= 0) {
				if (cls == COLLOC__AMP_LOW)
					cast[k] = COLLOC__AMP_WCACHE;
				continue;
			}
			/* fp16 softmax: half_to_float, no copy */
			if (present[in] >= 0 &&
			    colloc_dtype_is_float(g->tensors[in].dtype) &&
			    esz[in] != want &&
			    !(fp16 && tp->kind == OPK_SOFTMAX && esz[in] == 2))
				cast[k] = want;
		}
		out_esz = want;
	} else {
		/* Type promotion over tensor operands; parameters count
		 * (T5's weight * x is float32), except a norm's own. */
		int n_in = tp->kind == OPK_CONCAT ? n->n_inputs : tp->n_in;

		for (int k = 0; k < n_in; k++) {
			int in = tp->kind == OPK_CONCAT ? n->inputs[k] : tp->in[k];

			if (in < 0 || present[in] < 0 ||
			    !colloc_dtype_is_float(g->tensors[in].dtype))
				continue;
			if (esz[in] > out_esz)
				out_esz = esz[in];
		}
		if (tp->kind != OPK_BATCHNORM)
			for (int i = 0; i < n->n_inputs; i++) {
				int in = n->inputs[i];

				if (in >= 0 && psrc[in] >= 0 && out_esz < 4)
					out_esz = 4;
			}
	}
	if (!out_esz)
		return;
	if (tp->kind == OPK_SPLIT) {
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0)
				esz[n->outputs[o]] = out_esz;
	} else if (tp->out >= 0 && colloc_dtype_is_float(g->tensors[tp->out].dtype)) {
		esz[tp->out] = out_esz;
	}
}

int colloc__param_source(const struct colloc_graph *g, int t)
{
	/* Linear weights reach MatMul through Transpose (and, under AMP
	 * exports, Cast) nodes applied to the parameter. */
	for (int depth = 0; depth < 4 && t >= 0; depth++) {
		const struct colloc_tensor *x = &g->tensors[t];
		const struct colloc_node *p;

		if (x->param_class == COLLOC_PARAM_TRAINABLE)
			return t;
		if (x->producer < 0)
			return -1;
		p = &g->nodes[x->producer];
		if (!(op_is(p, "Transpose") || op_is(p, "Cast") || op_is(p, "Identity")))
			return -1;
		t = in_of(p, 0);
	}
	return -1;
}

/* Is t a frozen parameter (colloc/graph.h: tensor.frozen), directly or
 * through the Transpose / Cast / Identity an exporter puts before a
 * weight's reader? */
static bool frozen_source(const struct colloc_graph *g, int t)
{
	for (int depth = 0; depth < 4 && t >= 0; depth++) {
		const struct colloc_tensor *x = &g->tensors[t];
		const struct colloc_node *p;

		if (x->frozen)
			return true;
		if (x->producer < 0)
			return false;
		p = &g->nodes[x->producer];
		if (!(op_is(p, "Transpose") || op_is(p, "Cast") || op_is(p, "Identity")))
			return false;
		t = in_of(p, 0);
	}
	return false;
}

/* A tensor holding a known constant (Constant nodes, folded shape math,
 * non-trainable initializers): PyTorch sees a Python scalar or a buffer. */
static bool is_const(const struct colloc_graph *g, int t)
{
	const struct colloc_tensor *x = tens(g, t);

	if (!x)
		return true;
	/* A trainable weight is a variable even when the file holds its
	 * value (small ones always do). */
	if (x->param_class == COLLOC_PARAM_TRAINABLE)
		return false;
	if (x->value)
		return true;
	if (x->role == COLLOC_TENSOR_INITIALIZER)
		return true;
	if (x->producer >= 0 && op_is(&g->nodes[x->producer], "Constant"))
		return true;
	return false;
}

void colloc__requires_grad(const struct colloc_graph *g, bool *req)
{
	for (int t = 0; t < g->n_tensors; t++)
		req[t] = g->tensors[t].param_class == COLLOC_PARAM_TRAINABLE;
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		bool any = false;

		for (int i = 0; i < n->n_inputs; i++)
			if (n->inputs[i] >= 0 && req[n->inputs[i]])
				any = true;
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0 &&
			    colloc_dtype_is_float(g->tensors[n->outputs[o]].dtype))
				req[n->outputs[o]] = any;
	}
}

/* Single consumer check: the node after n that reads t, if it is the only
 * reader and t is not a graph output. */
static int sole_consumer(const struct colloc_graph *g, int t, int after)
{
	int found = -1;

	if (t < 0 || g->tensors[t].consumers != 1)
		return -1;
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return -1;
	for (int k = after + 1; k < g->n_nodes && found < 0; k++)
		for (int i = 0; i < g->nodes[k].n_inputs; i++)
			if (g->nodes[k].inputs[i] == t)
				found = k;
	return found;
}

static bool const_scalar(const struct colloc_graph *g, int t, double want)
{
	const struct colloc_tensor *x = tens(g, t);

	if (!x || !x->value || x->value->n != 1)
		return false;
	if (isnan(want))
		return true;
	return fabs((x->value->f ? x->value->f[0] : (double)x->value->i[0]) - want) <
	       1e-3 * fabs(want) + 1e-6;
}

/* The other input of a binary node n, given one of them. */
static int other_in(const struct colloc_node *n, int t)
{
	if (n->n_inputs != 2)
		return -1;
	return n->inputs[0] == t ? n->inputs[1] : n->inputs[1] == t ? n->inputs[0] : -1;
}

/* The top of a fused op that reads x alone and saves it (gelu, silu,
 * hardswish, mish): node k stands for the whole pattern. */
static void fused_unary(struct colloc__top *tops, int k, int kind, int x, int out)
{
	tops[k].kind = kind;
	tops[k].fwd = FWD_NEW;
	tops[k].in[0] = x;
	tops[k].in[1] = -1;
	tops[k].n_in = 1;
	tops[k].out = out;
	tops[k].save = SAVE_IN0;
}

/*
 * erf-GELU as torch.onnx exports F.gelu (approximate='none'):
 *   d = Div(x, 1.414) | Mul(x, 0.707);  e = Erf(d);  a = Add(e, 1)
 *   y = Mul(Mul(x, a), 0.5)  or  Mul(Mul(x, 0.5), a)
 * Marks the parts skipped and the last Mul as one GELU reading x.
 */
static int match_gelu(const struct colloc_graph *g, int erf, bool *absorbed,
		      struct colloc__top *tops)
{
	const struct colloc_node *e = &g->nodes[erf], *d, *a, *m1, *m2;
	int dn, an, m1n, m2n, x, other;

	if (e->n_inputs < 1 || e->inputs[0] < 0)
		return -1;
	dn = g->tensors[e->inputs[0]].producer;
	if (dn < 0)
		return -1;
	d = &g->nodes[dn];
	if (!(op_is(d, "Div") && const_scalar(g, in_of(d, 1), sqrt(2.0))) &&
	    !(op_is(d, "Mul") && const_scalar(g, in_of(d, 1), sqrt(0.5))))
		return -1;
	x = in_of(d, 0);
	an = sole_consumer(g, out_of(e, 0), erf);
	if (an < 0 || !op_is(&g->nodes[an], "Add"))
		return -1;
	a = &g->nodes[an];
	if (!const_scalar(g, other_in(a, out_of(e, 0)), 1.0))
		return -1;
	m1n = sole_consumer(g, out_of(a, 0), an);
	if (m1n < 0 || !op_is(&g->nodes[m1n], "Mul"))
		return -1;
	m1 = &g->nodes[m1n];
	other = other_in(m1, out_of(a, 0));
	if (other == x) {
		/* y = Mul(Mul(x, a), 0.5) */
		m2n = sole_consumer(g, out_of(m1, 0), m1n);
		if (m2n < 0 || !op_is(&g->nodes[m2n], "Mul"))
			return -1;
		m2 = &g->nodes[m2n];
		if (!const_scalar(g, other_in(m2, out_of(m1, 0)), 0.5))
			return -1;
	} else {
		/* y = Mul(a, Mul(x, 0.5)): the half-x Mul ran earlier. */
		int hn = other >= 0 ? g->tensors[other].producer : -1;

		if (hn < 0 || !op_is(&g->nodes[hn], "Mul") ||
		    other_in(&g->nodes[hn], x) < 0 ||
		    !const_scalar(g, other_in(&g->nodes[hn], x), 0.5) ||
		    g->tensors[other].consumers != 1)
			return -1;
		absorbed[hn] = true;
		m2n = m1n;
		m2 = m1;
	}
	absorbed[dn] = absorbed[erf] = absorbed[an] = absorbed[m1n] = true;
	absorbed[m2n] = false;
	fused_unary(tops, m2n, OPK_GELU, x, out_of(m2, 0));
	return m2n;
}

/*
 * LayerNorm as exported before opset 17:
 *   mu = ReduceMean(x); d = Sub(x, mu); v = ReduceMean(Pow(d, 2));
 *   y = Div(d, Sqrt(Add(v, eps)))  [then Mul(gamma), Add(beta)]
 * Matched from the Div; PyTorch's native_layer_norm saves x, mean, rstd.
 */
static int match_layernorm(const struct colloc_graph *g, int div, bool *absorbed,
			   struct colloc__top *tops)
{
	const struct colloc_node *dv = &g->nodes[div];
	int subn, sqn, addn, rm2n, pown, rm1n, x, last = div, out, n_rows;
	int parts[8], np = 0;
	const struct colloc_tensor *xt;

	if (dv->n_inputs != 2 || dv->inputs[0] < 0 || dv->inputs[1] < 0)
		return -1;
	subn = g->tensors[dv->inputs[0]].producer;
	sqn = g->tensors[dv->inputs[1]].producer;
	if (subn < 0 || sqn < 0 || !op_is(&g->nodes[subn], "Sub") ||
	    !op_is(&g->nodes[sqn], "Sqrt"))
		return -1;
	addn = g->tensors[in_of(&g->nodes[sqn], 0)].producer;
	if (addn < 0 || !op_is(&g->nodes[addn], "Add"))
		return -1;
	rm2n = g->tensors[in_of(&g->nodes[addn], 0)].producer;
	if (rm2n < 0 || !op_is(&g->nodes[rm2n], "ReduceMean"))
		return -1;
	pown = g->tensors[in_of(&g->nodes[rm2n], 0)].producer;
	if (pown < 0 || !op_is(&g->nodes[pown], "Pow") ||
	    in_of(&g->nodes[pown], 0) != dv->inputs[0])
		return -1;
	x = in_of(&g->nodes[subn], 0);
	rm1n = g->tensors[in_of(&g->nodes[subn], 1)].producer;
	if (rm1n < 0 || !op_is(&g->nodes[rm1n], "ReduceMean") ||
	    in_of(&g->nodes[rm1n], 0) != x)
		return -1;
	parts[np++] = rm1n, parts[np++] = subn, parts[np++] = pown;
	parts[np++] = rm2n, parts[np++] = addn, parts[np++] = sqn;
	out = out_of(dv, 0);
	/* Affine part: Mul by a parameter, Add of a parameter. */
	{
		int mn = sole_consumer(g, out, div);

		if (mn >= 0 && op_is(&g->nodes[mn], "Mul") &&
		    colloc__param_source(g, other_in(&g->nodes[mn], out)) >= 0) {
			int an;

			parts[np++] = last;
			last = mn;
			out = out_of(&g->nodes[mn], 0);
			an = sole_consumer(g, out, mn);
			if (an >= 0 && op_is(&g->nodes[an], "Add") &&
			    colloc__param_source(g, other_in(&g->nodes[an], out)) >= 0) {
				parts[np++] = last;
				last = an;
				out = out_of(&g->nodes[an], 0);
			}
		}
	}
	for (int k = 0; k < np; k++)
		absorbed[parts[k]] = true;
	xt = tens(g, x);
	n_rows = 1;
	for (int d = 0; xt && d + 1 < xt->rank; d++)
		n_rows *= (int)(xt->shape[d] > 0 ? xt->shape[d] : 1);
	tops[last].kind = OPK_LAYERNORM;
	tops[last].fwd = FWD_NEW;
	tops[last].in[0] = x;
	tops[last].n_in = 1;
	tops[last].out = out;
	tops[last].save = SAVE_IN0;
	/* mean and rstd, float32, one per row */
	tops[last].extra_saved[0] = (uint64_t)n_rows * 4;
	tops[last].extra_saved[1] = (uint64_t)n_rows * 4;
	tops[last].n_extra = 2;
	return last;
}

static uint64_t numel_of(const struct colloc_graph *g, int t)
{
	const struct colloc_tensor *x = tens(g, t);

	return x ? colloc_tensor_numel(x) : 0;
}

/* "1.13" -> 1, "2.6" -> 2; unreadable -> 2 (the default platform's). */
static int torch_major(const char *version)
{
	char *end;
	long v = strtol(version, &end, 10);

	return end == version || v < 0 || v > 99 ? 2 : (int)v;
}

/* What the classification needs besides the graph. */
struct tr_ctx {
	const bool *req; /* requires_grad per tensor */
	int torch_major; /* of the platform: some rules changed in 2.0 */
	bool amp; /* autocast: matrix products and attention in half */
};

static bool req_of(const bool *req, int t)
{
	return t >= 0 && req[t];
}

/* The training rule of node n (COPY for nodes without a row). */
static int train_rule(const struct colloc_node *n)
{
	const struct colloc__op *op = colloc__node_op(n);

	return op ? op->train : COLLOC__TR_COPY;
}

/* Classify one node that no pattern absorbed, by its op table row. */
static void classify(const struct colloc_graph *g, const struct tr_ctx *cx, int k,
		     struct colloc__top *tp)
{
	const bool *req = cx->req;
	const struct colloc_node *n = &g->nodes[k];
	const struct colloc__op *op = colloc__node_op(n);
	const struct colloc_tensor *y = tens(g, out_of(n, 0));
	int a = in_of(n, 0), b = in_of(n, 1);

	tp->in[0] = a;
	tp->in[1] = b;
	tp->in[2] = in_of(n, 2);
	tp->bias = -1;
	tp->n_in = n->n_inputs < 3 ? n->n_inputs : 3;
	tp->out = out_of(n, 0);
	tp->fwd = FWD_NEW;
	tp->kind = OPK_COPY;
	tp->op = op;

	/* Shape arithmetic and masks: integer or bool results, or values the
	 * exporter computed from constants. PyTorch does these on the host or
	 * on tiny tensors. */
	if (!op || !y || !colloc_dtype_is_float(y->dtype) || y->value ||
	    op->train == COLLOC__TR_HOST) {
		tp->fwd = FWD_SKIP;
		tp->kind = OPK_OTHER;
		return;
	}
	switch (op->train) {
	case COLLOC__TR_CONV:
		tp->kind = OPK_CONV;
		tp->save = SAVE_IN0;
		break;
	case COLLOC__TR_GEMM:
		tp->kind = OPK_LINEAR;
		/* a frozen weight needs no gradient, so mm keeps no input */
		tp->save = frozen_source(g, b) ? 0 : SAVE_IN0;
		tp->matmul = true;
		break;
	case COLLOC__TR_MATMUL: {
		bool pa = colloc__param_source(g, a) >= 0,
		     pb = colloc__param_source(g, b) >= 0;

		tp->matmul = true;
		if (frozen_source(g, a) || frozen_source(g, b)) {
			/* mm(x, W^T) with W frozen (requires_grad=False):
			 * x's gradient reads W (a parameter, held anyway) and
			 * nothing asks for W's, so x is not saved
			 * (derivatives.yaml: mm saves self only for mat2's
			 * gradient). */
			tp->kind = OPK_LINEAR;
			tp->save = 0;
		} else if (pa || pb) {
			tp->kind = OPK_LINEAR;
			tp->save = pb ? SAVE_IN0 : SAVE_IN1;
		} else {
			tp->kind = OPK_MATMUL;
			tp->save = SAVE_IN0 | SAVE_IN1;
			/* bmm saves each operand only for the OTHER one's
			 * gradient (derivatives.yaml): under LoRA, keys that
			 * need no gradient keep the queries unsaved */
			if (!req_of(req, a) || !req_of(req, b))
				tp->save = (req_of(req, b) ? SAVE_IN0 : 0) |
					   (req_of(req, a) ? SAVE_IN1 : 0);
		}
		break;
	}
	case COLLOC__TR_EINSUM:
		/* einsum permutes and reshapes its operands into a bmm, which
		 * saves both (as MatMul). */
		if (n->n_inputs == 2) {
			tp->kind = OPK_MATMUL;
			tp->save = SAVE_IN0 | SAVE_IN1;
			tp->matmul = true;
		}
		break;
	case COLLOC__TR_BATCHNORM: {
		uint64_t c = numel_of(g, in_of(n, 1));
		const struct colloc_tensor *s = tens(g, in_of(n, 1));
		size_t sz = s ? colloc_dtype_size(s->dtype) : 4;

		tp->kind = OPK_BATCHNORM;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		/* save_mean and save_invstd, one per channel */
		tp->extra_saved[0] = c * sz;
		tp->extra_saved[1] = c * sz;
		tp->n_extra = 2;
		break;
	}
	case COLLOC__TR_INSTANCENORM: {
		/* at::instance_norm runs batch_norm on
		 * input.contiguous().view(1, N x C, ...) with the weight and
		 * bias repeated N times: the view shares the input's storage,
		 * save_mean and save_invstd have N x C entries, and the
		 * repeated weight (a new tensor, not the parameter) is saved
		 * for the input's gradient. torch.onnx exports the
		 * affine=False form with constant ones and zeros, which
		 * PyTorch never had. */
		const struct colloc_tensor *x = tens(g, a), *s = tens(g, b);
		uint64_t nc = x && x->rank >= 2
				      ? (uint64_t)x->shape[0] * (uint64_t)x->shape[1]
				      : 0;
		size_t sz = s ? colloc_dtype_size(s->dtype) : 4;

		tp->kind = OPK_BATCHNORM;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		tp->extra_saved[0] = nc * sz;
		tp->extra_saved[1] = nc * sz;
		tp->n_extra = 2;
		if (colloc__param_source(g, b) >= 0)
			tp->extra_saved[tp->n_extra++] = nc * sz;
		break;
	}
	case COLLOC__TR_LAYERNORM: {
		uint64_t rows = numel_of(g, a);
		const struct colloc_tensor *x = tens(g, a);
		int axis = (int)colloc_node_attr_int(n, "axis", -1);

		if (x && x->rank > 0) {
			if (axis < 0)
				axis += x->rank;
			rows = 1;
			for (int d = 0; d < axis && d < x->rank; d++)
				rows *= (uint64_t)x->shape[d];
		}
		tp->kind = OPK_LAYERNORM;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		tp->extra_saved[0] = rows * 4;
		tp->extra_saved[1] = rows * 4;
		tp->n_extra = 2;
		break;
	}
	case COLLOC__TR_ACT_INPLACE:
		/* ReLU(inplace=True) is how torchvision writes these; the
		 * in-place and out-of-place versions both leave one storage
		 * saved (the result, or the input nobody else keeps).
		 * Clip (ReLU6, hardtanh) is not here: hardtanh_'s backward
		 * reads the original input, so autograd keeps a copy of it,
		 * which costs what the out-of-place form does. */
		tp->kind = OPK_ACT_RESULT;
		tp->fwd = FWD_INPLACE;
		tp->save = SAVE_OUT0;
		tp->n_in = 1;
		break;
	case COLLOC__TR_ACT_RESULT:
	case COLLOC__TR_SOFTMAX:
		tp->kind = op->train == COLLOC__TR_SOFTMAX ? OPK_SOFTMAX : OPK_ACT_RESULT;
		tp->save = SAVE_OUT0;
		tp->n_in = 1;
		break;
	case COLLOC__TR_ACT_INPUT:
		tp->kind = OPK_ACT_INPUT;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		break;
	case COLLOC__TR_POW:
		/* pow.Tensor_Scalar's backward reads self; pow.Tensor_Tensor's
		 * also the exponent (for self's grad) and self (for its own). */
		tp->kind = OPK_ACT_INPUT;
		tp->save = SAVE_IN0 | (!is_const(g, b) && req_of(req, a) ? SAVE_IN1 : 0);
		break;
	case COLLOC__TR_POOL_MAX:
		tp->kind = OPK_POOL_MAX;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		/* indices, int64, one per output element */
		tp->extra_saved[0] = numel_of(g, out_of(n, 0)) * 8;
		tp->n_extra = 1;
		break;
	case COLLOC__TR_POOL_AVG:
		tp->kind = OPK_POOL_AVG;
		tp->save = SAVE_IN0;
		tp->n_in = 1;
		/* avg_pool2d(padding=p) is exported as Pad + AveragePool; in
		 * PyTorch it is one op that saves the unpadded input. */
		if (a >= 0 && g->tensors[a].producer >= 0 &&
		    train_rule(&g->nodes[g->tensors[a].producer]) == COLLOC__TR_PAD &&
		    g->tensors[a].consumers == 1)
			tp->in[0] = in_of(&g->nodes[g->tensors[a].producer], 0);
		break;
	case COLLOC__TR_REDUCE_EXTREMUM:
		tp->kind = OPK_REDUCE;
		tp->save = SAVE_IN0 | SAVE_OUT0;
		tp->n_in = 1;
		break;
	case COLLOC__TR_REDUCE_MEAN:
		/* mean.dim's backward formula takes self.numel(): torch 1.x
		 * keeps the whole input for it (measured on the CPU reference,
		 * T5's RMS norm); torch 2.x saves self.sym_numel(), an integer
		 * (tools/autograd/derivatives.yaml). */
		tp->kind = OPK_REDUCE;
		tp->save = cx->torch_major < 2 ? SAVE_IN0 : 0;
		tp->n_in = 1;
		break;
	case COLLOC__TR_REDUCE_SUM:
		tp->kind = OPK_REDUCE;
		tp->n_in = 1;
		break;
	case COLLOC__TR_DROPOUT: {
		const struct colloc_tensor *tm = tens(g, in_of(n, 2));
		const struct colloc_tensor *ratio = tens(g, in_of(n, 1));
		bool training = tm && tm->value && tm->value->n == 1 &&
				(tm->value->i ? tm->value->i[0] : tm->value->f[0]) != 0;
		double p = ratio && ratio->value && ratio->value->n == 1
				   ? (ratio->value->f ? ratio->value->f[0] : 0)
				   : 0.5;

		tp->n_in = 1;
		if (!training || p <= 0) {
			tp->kind = OPK_VIEW;
			tp->fwd = FWD_VIEW;
			tp->grad_view = true;
		} else {
			/* native_dropout: a new output and a bool mask, which is
			 * all the backward reads. */
			tp->kind = OPK_DROPOUT;
			tp->extra_saved[0] = numel_of(g, a);
			tp->n_extra = 1;
		}
		break;
	}
	case COLLOC__TR_ADD:
		tp->kind = OPK_ADD;
		break;
	case COLLOC__TR_MUL:
		tp->kind = OPK_MUL;
		/* mul.Tensor: self's grad is grad * other, other's is
		 * grad * self, so each operand is saved when the OTHER one
		 * requires grad (derivatives.yaml). Constants are Python
		 * scalars or buffers and cost nothing. */
		tp->save = (!is_const(g, a) && req_of(req, b) ? SAVE_IN0 : 0) |
			   (!is_const(g, b) && req_of(req, a) ? SAVE_IN1 : 0);
		break;
	case COLLOC__TR_DIV:
		tp->kind = OPK_DIV;
		/* div.Tensor: self's grad is grad / other (other saved);
		 * other's reads self and other. */
		if (!is_const(g, b) && (req_of(req, a) || req_of(req, b)))
			tp->save |= SAVE_IN1;
		if (!is_const(g, a) && req_of(req, b))
			tp->save |= SAVE_IN0;
		break;
	case COLLOC__TR_GATHER: {
		const struct colloc_tensor *idx = tens(g, b);

		if (colloc__param_source(g, a) >= 0) {
			tp->kind = OPK_EMBEDDING; /* saves the (int) indices */
			tp->save = SAVE_IN1;
		} else if (idx && idx->rank == 0) {
			tp->kind = OPK_VIEW; /* select() */
			tp->fwd = FWD_VIEW;
		} else {
			tp->kind = OPK_COPY; /* index_select saves the indices */
			tp->save = SAVE_IN1;
		}
		break;
	}
	case COLLOC__TR_CONCAT:
		tp->kind = OPK_CONCAT;
		tp->n_in = 0; /* handled by the timeline from the node */
		break;
	case COLLOC__TR_SPLIT:
	case COLLOC__TR_SLICE:
	case COLLOC__TR_VIEW:
		tp->kind = op->train == COLLOC__TR_SPLIT   ? OPK_SPLIT
			   : op->train == COLLOC__TR_SLICE ? OPK_SLICE
							   : OPK_VIEW;
		tp->fwd = FWD_VIEW;
		tp->grad_view = op->grad_view;
		tp->n_in = 1;
		break;
	case COLLOC__TR_WHERE:
		tp->kind = OPK_COPY;
		tp->save = SAVE_IN0; /* the condition */
		break;
	case COLLOC__TR_GRID_SAMPLE:
		/* derivatives.yaml: grid_sampler_2d (3d) has one formula for
		 * "input, grid" (grid_sampler_2d_backward reads both), so the
		 * generated code saves both whenever the op records a grad,
		 * even if only one of them requires it; cudnn_grid_sampler
		 * (CUDA, bilinear, zeros, align_corners) reads both too. */
		tp->kind = OPK_COPY;
		tp->save = SAVE_IN0 | SAVE_IN1;
		tp->n_in = 2;
		break;
	case COLLOC__TR_ATTENTION: {
		/* derivatives.yaml: _scaled_dot_product_flash_attention and
		 * _scaled_dot_product_efficient_attention (and flash-attn's
		 * own autograd function) read query, key, value, output and
		 * logsumexp in backward; dropout is replayed from the philox
		 * seed, so no mask. logsumexp is float32 [B, Hq, T]; the
		 * memory-efficient kernel, the one SDPA picks for float32
		 * operands (flash takes fp16/bf16 only), pads T to a multiple
		 * of kAlignLSE = 32. */
		const struct colloc_tensor *q = tens(g, a);
		uint64_t rows = 0;

		if (q && q->rank == 4) {
			uint64_t t_len = (uint64_t)q->shape[2];

			if (q->dtype == COLLOC_DT_FLOAT && !cx->amp)
				t_len = (t_len + 31) / 32 * 32;
			rows = (uint64_t)q->shape[0] * (uint64_t)q->shape[1] * t_len;
		}
		tp->kind = OPK_ATTENTION;
		tp->save = SAVE_IN0 | SAVE_IN1 | SAVE_IN2 | SAVE_OUT0;
		tp->n_in = 3;
		tp->extra_saved[0] = rows * 4;
		tp->n_extra = 1;
		break;
	}
	default:
		/* Cast, Pad, Tile, Resize, Trilu, CumSum ...: a new tensor,
		 * nothing of size saved. */
		tp->kind = OPK_COPY;
		break;
	}
}

/*
 * x * gate(x), which torch.onnx writes for fused activations: SiLU as
 * Mul(x, Sigmoid(x)), hardswish before opset 14 as
 * Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5)), mish as
 * Mul(x, Tanh(Softplus(x))). The fused op saves x alone. Matched from the
 * Mul; the gate's nodes must feed nothing else.
 */
/* A gate of x * gate(x): the op computing it from x (through inner, when
 * not NULL: mish's Tanh(Softplus(x))), and the op the product is. */
struct gate {
	const char *op, *inner;
	bool hardswish_consts; /* HardSigmoid(alpha=1/6, beta=0.5) */
	int kind;
};

static int match_gated(const struct colloc_graph *g, int mul, bool *absorbed,
		       struct colloc__top *tops, const struct gate *gt)
{
	const struct colloc_node *n = &g->nodes[mul];

	if (n->n_inputs != 2)
		return -1;
	for (int s = 0; s < 2; s++) {
		int st = n->inputs[s], xt = n->inputs[1 - s];
		int gn = st >= 0 ? g->tensors[st].producer : -1, inner = -1, from;
		const struct colloc_node *gd;

		if (gn < 0 || xt < 0 || g->tensors[st].consumers != 1)
			continue;
		gd = &g->nodes[gn];
		if (!op_is(gd, gt->op))
			continue;
		if (gt->hardswish_consts &&
		    (fabs(colloc_node_attr_float(gd, "alpha", 0.2) - 1.0 / 6) > 1e-4 ||
		     fabs(colloc_node_attr_float(gd, "beta", 0.5) - 0.5) > 1e-4))
			continue;
		from = in_of(gd, 0);
		if (gt->inner) {
			inner = from >= 0 ? g->tensors[from].producer : -1;
			if (inner < 0 || !op_is(&g->nodes[inner], gt->inner) ||
			    g->tensors[from].consumers != 1)
				continue;
			from = in_of(&g->nodes[inner], 0);
		}
		if (from != xt)
			continue;
		absorbed[gn] = true;
		if (inner >= 0)
			absorbed[inner] = true;
		fused_unary(tops, mul, gt->kind, xt, out_of(n, 0));
		return mul;
	}
	return -1;
}

static int match_silu(const struct colloc_graph *g, int k, bool *absorbed,
		      struct colloc__top *tops)
{
	static const struct gate silu = {"Sigmoid", NULL, false, OPK_SILU};

	return match_gated(g, k, absorbed, tops, &silu);
}

static int match_hardswish(const struct colloc_graph *g, int k, bool *absorbed,
			   struct colloc__top *tops)
{
	static const struct gate hs = {"HardSigmoid", NULL, true, OPK_ACT_INPUT};

	return match_gated(g, k, absorbed, tops, &hs);
}

static int match_mish(const struct colloc_graph *g, int k, bool *absorbed,
		      struct colloc__top *tops)
{
	static const struct gate mish = {"Tanh", "Softplus", false, OPK_ACT_INPUT};

	return match_gated(g, k, absorbed, tops, &mish);
}

/* The fused-op patterns, tried in this order at every node whose op is
 * the anchor (docs/ops.md lists them from here). */
static const struct pattern {
	const char *name; /* the PyTorch op */
	const char *anchor; /* op type the matcher starts from */
	const char *exported_as;
	const char *saves;
	/* Returns the node whose top it filled, or -1. */
	int (*match)(const struct colloc_graph *g, int k, bool *absorbed,
		     struct colloc__top *tops);
} patterns[] = {
	{"F.gelu (erf)", "Erf",
	 "Div(x, 1.414) or Mul(x, 0.707), Erf, Add(1), Mul(x), Mul(0.5)",
	 "x (gelu_backward)", match_gelu},
	{"nn.LayerNorm (opset < 17)", "Div",
	 "ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt, Div [, Mul(weight), "
	 "Add(bias)]",
	 "x and per-row mean and rstd (native_layer_norm)", match_layernorm},
	{"F.silu", "Mul", "Mul(x, Sigmoid(x))", "x (silu_backward)", match_silu},
	{"F.hardswish (opset < 14)", "Mul", "Mul(x, HardSigmoid(x, 1/6, 0.5))",
	 "x (hardswish_backward)", match_hardswish},
	{"F.mish", "Mul", "Mul(x, Tanh(Softplus(x)))", "x (mish_backward)", match_mish},
};

#define N_PATTERNS ((int)(sizeof(patterns) / sizeof(patterns[0])))

int colloc_pattern_count(void)
{
	return N_PATTERNS;
}

int colloc_pattern_doc(int i, struct colloc_pattern_doc *out)
{
	if (i < 0 || i >= N_PATTERNS || !out)
		return COLLOC_EUSAGE;
	out->name = patterns[i].name;
	out->anchor = patterns[i].anchor;
	out->exported_as = patterns[i].exported_as;
	out->saves = patterns[i].saves;
	return 0;
}

/* No grad_fn, nothing saved: an op none of whose operands requires grad
 * (masks, position tables and other buffer arithmetic). */
static bool records_grad(const struct colloc_graph *g, const bool *req,
			 const struct colloc__top *tp)
{
	const struct colloc_node *n = &g->nodes[tp->node];

	for (int k = 0; k < tp->n_in; k++)
		if (req_of(req, tp->in[k]))
			return true;
	for (int i = 0; i < n->n_inputs; i++)
		if (req_of(req, n->inputs[i]))
			return true;
	return false;
}

int colloc__train_ops(const struct colloc_graph *g, int precision,
		      const struct colloc_platform *plat, struct colloc__top *tops,
		      struct colloc_diag *diag)
{
	bool *absorbed, *matched, *req;
	struct tr_ctx cx;
	int rc = g->n_nodes;

	absorbed = calloc((size_t)g->n_nodes + 1, sizeof(*absorbed));
	matched = calloc((size_t)g->n_nodes + 1, sizeof(*matched));
	req = calloc((size_t)g->n_tensors + 1, sizeof(*req));
	if (!absorbed || !matched || !req) {
		rc = -12;
		goto out;
	}
	colloc__requires_grad(g, req);
	cx.req = req;
	cx.torch_major = plat && plat->torch[0] ? torch_major(plat->torch) : 2;
	cx.amp = precision == COLLOC_PREC_AMP_FP16 || precision == COLLOC_PREC_AMP_BF16;
	memset(tops, 0, (size_t)g->n_nodes * sizeof(*tops));
	for (int k = 0; k < g->n_nodes; k++) {
		tops[k].node = k;
		tops[k].out = -1;
		tops[k].in[0] = tops[k].in[1] = tops[k].in[2] = -1;
		tops[k].bias = -1;
	}
	/* Patterns first: they decide which nodes are parts of another. */
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];

		if (absorbed[k] || matched[k] || n->domain[0])
			continue;
		for (int p = 0; p < N_PATTERNS; p++) {
			int last;

			if (!op_is(n, patterns[p].anchor))
				continue;
			if ((last = patterns[p].match(g, k, absorbed, tops)) >= 0) {
				matched[last] = true;
				tops[last].op = colloc__node_op(&g->nodes[last]);
				break;
			}
		}
	}
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];

		if (absorbed[k]) {
			tops[k].fwd = FWD_SKIP;
			tops[k].kind = OPK_OTHER;
			continue;
		}
		if (!matched[k])
			classify(g, &cx, k, &tops[k]);
		if (tops[k].op && tops[k].op->train == COLLOC__TR_REFUSE &&
		    tops[k].fwd != FWD_SKIP) {
			char where[160];

			colloc_node_describe(g, k, where, sizeof(where));
			rc = colloc_diag_set(
				diag, COLLOC_EUNSUPPORTED,
				"%s: colloc does not model the training memory of %s "
				"yet (cuDNN's RNN reserve space is unmeasured); `colloc "
				"inspect` reads the graph",
				where, tops[k].op->name);
			goto out;
		}
		if (tops[k].kind == OPK_POOL_AVG && tops[k].in[0] != n->inputs[0]) {
			int pn = g->tensors[n->inputs[0]].producer;

			tops[pn].fwd = FWD_SKIP;
			tops[pn].kind = OPK_OTHER;
		}
		/* nn.Linear: MatMul with a parameter, then Add of a parameter
		 * bias, is one addmm. */
		if (tops[k].kind == OPK_LINEAR && op_is(n, "MatMul")) {
			int an = sole_consumer(g, tops[k].out, k);

			if (an >= 0 && op_is(&g->nodes[an], "Add") &&
			    colloc__param_source(
				    g, other_in(&g->nodes[an], tops[k].out)) >= 0) {
				absorbed[an] = true;
				tops[an].fwd = FWD_SKIP;
				tops[an].kind = OPK_OTHER;
				tops[k].out = out_of(&g->nodes[an], 0);
				tops[k].bias = other_in(&g->nodes[an], out_of(n, 0));
			}
		}
	}
	for (int k = 0; k < g->n_nodes; k++)
		if (tops[k].fwd != FWD_SKIP && !records_grad(g, req, &tops[k])) {
			tops[k].save = 0;
			tops[k].n_extra = 0;
		}
out:
	free(absorbed);
	free(matched);
	free(req);
	return rc;
}
