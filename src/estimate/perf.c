/*
 * perf.c — the step-time, utilization and SM-activity predictor
 * (colloc/perf.h).
 *
 * It walks the estimator's PyTorch-level ops (train_ops.c), turns each into
 * the kernels eager PyTorch launches for it forward and backward, adds the
 * loss and the optimizer's foreach passes, times every kernel with the
 * calibrated roofline of its class, and replays the step as the host issues
 * it: one stream, the host paying a dispatch cost per op, the GPU starting a
 * kernel when both are ready. docs/perf-model.md states each rule.
 *
 * Not here: memory (timeline.c), calibration (tools/fit_perf.c), I/O.
 */
#include "colloc/perf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/estimate.h"
#include "estimate/estimate_int.h"
#include "estimate/perf_int.h"
#include "model/ops.h"

static const char *const class_names[COLLOC_PERF_CLASS_COUNT_] = {"gemm", "bmm", "elem",
								  "softmax", "norm"};

const char *colloc_perf_class_name(int cls)
{
	return cls >= 0 && cls < COLLOC_PERF_CLASS_COUNT_ ? class_names[cls] : "unknown";
}

/*
 * GEMM shape constants, fitted once over all GPUs by `build/fit_perf
 * --data ../shared/data --search-shape` (least squares on log time; grid
 * intensity_sat {16..64} x k_half {0..96}) on NeuSight's linear and bmm kernels
 * (8,255 + 13,461 kernels on V100, P100, P4, T4, A100-40/80, H100, L4);
 * the per-GPU eta and fixed latency are in each platform profile.
 */
const struct colloc__gemm_shape colloc__gemm_shape_fitted = {
	.intensity_sat = 64,
	.k_half = 48,
};

/*
 * Built-in class efficiencies for profiles without a calibration: the
 * median over the 8 calibrated GPUs of `build/fit_perf --json` (7 for the
 * memory-bound classes: NeuSight measured none on H100).
 */
static const struct colloc_platform_eff default_eff[COLLOC_PERF_CLASS_COUNT_] = {
	[COLLOC_PERF_GEMM] = {0.72, 0.79, 2.5}, [COLLOC_PERF_BMM] = {0.74, 0.79, 5},
	[COLLOC_PERF_ELEM] = {1.0, 0.78, 5},	[COLLOC_PERF_SOFTMAX] = {1.0, 0.64, 0},
	[COLLOC_PERF_NORM] = {1.0, 0.60, 5},
};

/* Relative speed of tensor-core GEMMs against the FFMA-calibrated eta:
 * cuBLAS's large fp16/bf16/TF32 GEMMs reach about 80% of the dense
 * tensor peak on A100 (NVIDIA Deep Learning Performance Guide, "Matrix
 * Multiplication Background", fig. 4), where FFMA sgemm reaches ~93%
 * (NeuSight's A100 kernels). Unvalidated: no tensor-core kernel was
 * measured for this project yet. */
#define TENSOR_CORE_REL 0.86

/* Python-level work per parameter tensor in a foreach optimizer step
 * (state steps, bias-correction lists; torch/optim/adam.py). */
#define HOST_OPT_TENSOR_US 1.5
/* multi_tensor_apply: tensors and 64 Ki-element chunks per launch
 * (aten/src/ATen/native/cuda/MultiTensorApply.cuh depth_to_max_tensors,
 * depth_to_max_blocks). */
#define MTA_TENSORS 110
#define MTA_CHUNKS 320
#define MTA_CHUNK 65536.0
/* The host's cost of a further kernel one op launches (the op's own
 * dispatch is paid once, with its first). */
#define LAUNCH_ONLY_S 1e-6

void colloc_perf_opts_init(struct colloc_perf_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->precision = COLLOC_PREC_FP32;
	o->optimizer = COLLOC_OPT_ADAM;
	o->loss = COLLOC_LOSS_CROSS_ENTROPY;
	o->batch = 1;
	o->host_op_us = -1;
	o->host_bwd_op_us = -1;
	o->dataloader_ms = 0;
	o->input_on_host = true;
}

struct colloc_platform_eff colloc__eff_default(int cls)
{
	return default_eff[cls >= 0 && cls < COLLOC_PERF_CLASS_COUNT_ ? cls
								      : COLLOC_PERF_ELEM];
}

/* A profile's class entry is complete once parsed (platform.c starts it
 * from the default and overrides the keys the file gives). */
struct colloc_platform_eff colloc__eff(const struct colloc_platform *p, int cls)
{
	if (p->eff[cls].eta_compute > 0 && p->eff[cls].eta_memory > 0)
		return p->eff[cls];
	return default_eff[cls];
}

double colloc__peak_flops(const struct colloc_platform *p, int cls, int prec, bool conv)
{
	double fp32 = p->fp32_tflops * 1e12, tc = 0;

	if (cls != COLLOC_PERF_GEMM && cls != COLLOC_PERF_BMM)
		return fp32;
	switch (prec) {
	case COLLOC_PREC_AMP_FP16:
		tc = p->fp16_tflops;
		break;
	case COLLOC_PREC_AMP_BF16:
		tc = p->bf16_tflops;
		break;
	case COLLOC_PREC_TF32:
		tc = p->tf32_tflops;
		break;
	default:
		/* PyTorch >= 1.12 keeps matmuls in full fp32 by default but
		 * lets cuDNN use TF32 for convolutions
		 * (torch.backends.cudnn.allow_tf32 = True). */
		tc = conv ? p->tf32_tflops : 0;
		break;
	}
	return tc > 0 ? tc * 1e12 * TENSOR_CORE_REL : fp32;
}

/* Thread blocks of tile (mt x nt) over m x n, times b. */
static double tiles(double m, double n, double b, double mt, double nt)
{
	return ceil(m / mt) * ceil(n / nt) * b;
}

double colloc__gemm_shape_eff(double m, double n, double k, double b, int sm_count,
			      const struct colloc__gemm_shape *c, double *blocks)
{
	/* cuBLAS picks among tile shapes the one that best fills the SMs; a
	 * smaller tile reuses each loaded element less (intensity mt*nt /
	 * (mt + nt)), and runs slower per FLOP below intensity_sat. When
	 * even the smallest tile leaves SMs idle and K is long, it splits K. */
	static const double shapes[][2] = {
		{128, 128}, {128, 64}, {64, 64}, {64, 32}, {32, 32}};
	double best = 0, best_blocks = 1, s = sm_count > 0 ? sm_count : 1;

	if (m < 1)
		m = 1;
	if (n < 1)
		n = 1;
	if (k < 1)
		k = 1;
	if (b < 1)
		b = 1;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		double mt = shapes[i][0], nt = shapes[i][1];
		double inten = mt * nt / (mt + nt);
		double rel = inten >= c->intensity_sat ? 1.0 : inten / c->intensity_sat;

		for (int ls = 0; ls <= 4; ls++) {
			double split = (double)(1 << ls);
			double t = tiles(m, n, b, mt, nt) * split;
			double kk = k / split;
			double waves, eff;

			if (split > 1 && (kk < 128 || t > 4 * s))
				break;
			waves = ceil(t / s);
			eff = t / (waves * s) * rel * kk / (kk + c->k_half);
			/* split-K writes split partial m x n results and sums
			 * them: 8 * split bytes per output element against 2k
			 * FLOPs, at a GPU's ~13 FLOP per byte of bandwidth */
			if (split > 1)
				eff /= 1.0 + 4.0 * 13.0 * split / k;
			if (eff > best) {
				best = eff;
				best_blocks = t;
			}
		}
	}
	if (blocks)
		*blocks = best_blocks;
	return best;
}

/* One kernel's time and what bounds it. */
struct ktime {
	double s; /* total */
	double fixed_s, compute_s, memory_s;
	double sm_frac; /* fraction of SMs with a resident block */
};

static struct ktime kernel(const struct colloc_platform *p, int cls, int prec, bool conv,
			   double flops, double bytes, double gemm_eff, double blocks)
{
	struct colloc_platform_eff e = colloc__eff(p, cls);
	double peak = colloc__peak_flops(p, cls, prec, conv);
	double bw = p->mem_bandwidth_gbs * 1e9 * e.eta_memory;
	double tc, tm;
	struct ktime k;

	if (gemm_eff <= 0)
		gemm_eff = 1;
	tc = flops / (peak * e.eta_compute * gemm_eff);
	tm = bw > 0 ? bytes / bw : 0;
	k.fixed_s = e.fixed_us * 1e-6;
	k.compute_s = tc >= tm ? tc : 0;
	k.memory_s = tc >= tm ? 0 : tm;
	k.s = k.fixed_s + k.compute_s + k.memory_s;
	k.sm_frac = p->sm_count > 0 ? blocks / p->sm_count : 1;
	/* GEMM tiles hold one block per SM (their shared memory and
	 * registers), so the last wave leaves SMs idle: the same wave
	 * quantization as the time rule. Elementwise and row kernels keep
	 * many small blocks resident per SM and have no such tail. */
	if ((cls == COLLOC_PERF_GEMM || cls == COLLOC_PERF_BMM) && p->sm_count > 0 &&
	    blocks > 0)
		k.sm_frac = blocks / (ceil(blocks / p->sm_count) * p->sm_count);
	if (k.sm_frac > 1)
		k.sm_frac = 1;
	if (k.sm_frac < 0)
		k.sm_frac = 0;
	return k;
}

double colloc__kernel_time_s(const struct colloc_platform *p, int cls, int prec,
			     bool conv, double flops, double bytes, double gemm_eff)
{
	return kernel(p, cls, prec, conv, flops, bytes, gemm_eff, 1).s;
}

double colloc_perf_kernel_s(const struct colloc_platform *p, int cls, int prec,
			    double flops, double bytes)
{
	if (cls < 0 || cls >= COLLOC_PERF_CLASS_COUNT_ || p->fp32_tflops <= 0 ||
	    p->mem_bandwidth_gbs <= 0)
		return -1;
	return kernel(p, cls, prec, false, flops, bytes, 1, 1).s;
}

int colloc_perf_check_platform(const struct colloc_platform *p, struct colloc_diag *diag)
{
	const struct {
		const char *name;
		double v, lo, hi;
	} f[] = {
		{"fp32_tflops", p->fp32_tflops, 0.01, 1e4},
		{"tf32_tflops", p->tf32_tflops, 0, 1e4},
		{"fp16_tflops", p->fp16_tflops, 0, 1e4},
		{"bf16_tflops", p->bf16_tflops, 0, 1e4},
		{"mem_bandwidth_gbs", p->mem_bandwidth_gbs, 1, 1e5},
		{"pcie_gbs", p->pcie_gbs, 0, 1e4},
		{"sm_count", (double)p->sm_count, 1, 1024},
		{"boost_clock_mhz", p->boost_clock_mhz, 0, 1e5},
	};

	for (int c = 0; c < COLLOC_PERF_CLASS_COUNT_; c++) {
		const struct colloc_platform_eff *e = &p->eff[c];

		if (e->eta_compute < 0 || e->eta_compute > 1 || e->eta_memory < 0 ||
		    e->eta_memory > 1 || e->fixed_us < 0 || e->fixed_us >= 1000)
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"eff.%s: eta must be in (0, 1] and fixed_us "
				"in [0, 1000)",
				class_names[c]);
	}
	if (p->fp32_tflops == 0)
		return 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi))
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "'%s' is %g, outside %g..%g", f[i].name,
					       f[i].v, f[i].lo, f[i].hi);
	return 0;
}

/* --- the step --------------------------------------------------------- */

struct step {
	const struct colloc_graph *g;
	const struct colloc_perf_opts *o;
	const struct colloc_platform *p;
	struct colloc_perf *out;
	double host_s, gpu_end_s; /* replay clocks */
	double busy_s, sm_s;
	double host_op_s, host_bwd_s;
	double *node_s; /* GPU time per graph node */
	int *node_cls; /* class of each node's first kernel, -1 if none */
	double act_scale; /* bytes per element relative to fp32 */
	struct colloc_param_totals params; /* the graph's, once per prediction */
};

static void issue_at(struct step *st, int node, int phase, int cls, int prec, bool conv,
		     double flops, double bytes, double gemm_eff, double blocks,
		     double host_s)
{
	struct ktime k = kernel(st->p, cls, prec, conv, flops, bytes, gemm_eff, blocks);
	double start;

	st->host_s += host_s;
	start = st->host_s > st->gpu_end_s ? st->host_s : st->gpu_end_s;
	st->gpu_end_s = start + k.s;
	st->busy_s += k.s;
	st->sm_s += k.s * k.sm_frac;
	st->out->phase_ms[phase] += k.s * 1e3;
	st->out->fixed_ms += k.fixed_s * 1e3;
	st->out->compute_bound_ms += k.compute_s * 1e3;
	st->out->memory_bound_ms += k.memory_s * 1e3;
	st->out->kernels++;
	if (node >= 0) {
		st->node_s[node] += k.s;
		if (st->node_cls[node] < 0)
			st->node_cls[node] = cls;
	}
}

static void issue(struct step *st, int node, int phase, int cls, bool conv, double flops,
		  double bytes, double gemm_eff, double blocks, double host_s)
{
	issue_at(st, node, phase, cls, st->o->precision, conv, flops, bytes, gemm_eff,
		 blocks, host_s);
}

/* An elementwise-like kernel over `elems` output elements moving `bytes`. */
static void issue_elem(struct step *st, int node, int phase, int cls, double elems,
		       double bytes, double rows, double host_s)
{
	/* PyTorch's vectorized elementwise kernels: 128 threads x 4
	 * elements per block; row kernels (softmax, layer norm) one block
	 * per row. */
	double blocks = cls == COLLOC_PERF_ELEM ? ceil(elems / 512) : rows;

	issue(st, node, phase, cls, false, elems, bytes, 1, blocks > 0 ? blocks : 1,
	      host_s);
}

static double numel(const struct colloc_graph *g, int t)
{
	return t >= 0 ? (double)colloc_tensor_numel(&g->tensors[t]) : 0;
}

static double tbytes(const struct step *st, int t)
{
	const struct colloc_tensor *x;

	if (t < 0)
		return 0;
	x = &st->g->tensors[t];
	/* Parameters stay fp32 under autocast; activations mostly run in
	 * the half type. */
	if (x->param_class == COLLOC_PARAM_TRAINABLE)
		return (double)colloc_tensor_bytes(x);
	return (double)colloc_tensor_bytes(x) * st->act_scale;
}

static double last_dim(const struct colloc_graph *g, int t)
{
	const struct colloc_tensor *x = t >= 0 ? &g->tensors[t] : NULL;

	return x && x->rank > 0 ? (double)x->shape[x->rank - 1] : 1;
}

/*
 * The rate a matrix product runs at. Under fp32 or TF32 options the graph
 * may still hold half-precision operands: a model loaded with
 * torch_dtype=torch.bfloat16 (or float16) and trained without autocast
 * (`--precision bf16|fp16`). cuBLAS runs such a GEMM on the tensor cores
 * at the half rate, as autocast's would be; the operands' own dtype says
 * so (an fp32 LoRA adapter beside a bf16 base stays at the fp32 rate).
 */
static int gemm_prec(const struct step *st, const struct colloc__top *tp)
{
	int prec = st->o->precision, dt[2] = {0, 0};

	if (prec != COLLOC_PREC_FP32 && prec != COLLOC_PREC_TF32)
		return prec;
	for (int k = 0; k < 2; k++) {
		if (tp->in[k] < 0)
			return prec;
		dt[k] = st->g->tensors[tp->in[k]].dtype;
	}
	if (dt[0] == COLLOC_DT_BFLOAT16 && dt[1] == COLLOC_DT_BFLOAT16)
		return COLLOC_PREC_AMP_BF16;
	if (dt[0] == COLLOC_DT_FLOAT16 && dt[1] == COLLOC_DT_FLOAT16)
		return COLLOC_PREC_AMP_FP16;
	return prec;
}

/* A GEMM-like op: forward, and backward data / weight gradients. */
static void gemm_op(struct step *st, const struct colloc__top *tp, bool *req,
		    bool bwd_pass)
{
	const struct colloc_graph *g = st->g;
	const struct colloc_node *n = &g->nodes[tp->node];
	bool conv = tp->kind == OPK_CONV;
	int cls = tp->kind == OPK_MATMUL ? COLLOC_PERF_BMM : COLLOC_PERF_GEMM;
	double flops = (double)n->flops, out_el = numel(g, tp->out);
	double m, nn, k, b = 1, eff, blocks;
	double bytes =
		tbytes(st, tp->in[0]) + tbytes(st, tp->in[1]) + tbytes(st, tp->out);
	int phase = bwd_pass ? COLLOC_PERF_BACKWARD : COLLOC_PERF_FORWARD;
	int prec = gemm_prec(st, tp);

	if (conv) {
		const struct colloc_tensor *y = &g->tensors[tp->out];

		nn = y->rank >= 2 ? (double)y->shape[1] : 1;
		m = nn > 0 ? out_el / nn : out_el;
	} else {
		nn = last_dim(g, tp->out);
		m = nn > 0 ? out_el / nn : out_el;
		if (tp->kind == OPK_MATMUL) {
			const struct colloc_tensor *y = &g->tensors[tp->out];

			m = y->rank >= 2 ? (double)y->shape[y->rank - 2] : 1;
			b = m * nn > 0 ? out_el / (m * nn) : 1;
		}
	}
	k = out_el > 0 ? flops / (2 * out_el) : 1;
	if (!bwd_pass) {
		eff = colloc__gemm_shape_eff(m, nn, k, b, st->p->sm_count,
					     &colloc__gemm_shape_fitted, &blocks);
		issue_at(st, tp->node, phase, cls, prec, conv, flops, bytes, eff, blocks,
			 st->host_op_s);
		return;
	}
	/* Data gradient (m x k from m x n times n x k), when the input
	 * needs one; weight gradient (k x n over m), when a parameter or a
	 * second activation needs one. */
	if (tp->in[0] >= 0 && req[tp->in[0]]) {
		eff = colloc__gemm_shape_eff(m, k, nn, b, st->p->sm_count,
					     &colloc__gemm_shape_fitted, &blocks);
		issue_at(st, tp->node, phase, cls, prec, conv, flops, bytes, eff, blocks,
			 st->host_bwd_s);
	}
	if (tp->in[1] >= 0 && req[tp->in[1]]) {
		eff = colloc__gemm_shape_eff(k, nn, m, b, st->p->sm_count,
					     &colloc__gemm_shape_fitted, &blocks);
		issue_at(st, tp->node, phase, cls, prec, conv, flops, bytes, eff, blocks,
			 st->host_bwd_s);
	}
	/* Bias gradient: a reduction of the output gradient (MatMul + Add
	 * fused into addmm, or Gemm / Conv with a third input). */
	if (tp->kind != OPK_MATMUL &&
	    (tp->out != n->outputs[0] || (n->n_inputs >= 3 && n->inputs[2] >= 0)))
		issue_elem(st, tp->node, phase, COLLOC_PERF_SOFTMAX, nn,
			   tbytes(st, tp->out), nn, st->host_bwd_s);
}

/* Query rows per thread block of the fused attention kernels (flash-attn 2
 * and PyTorch's flash kernel tile the queries by 128 in forward). */
#define ATTN_BLOCK_M 128.0

/*
 * Fused attention (SDPA's flash or memory-efficient kernel, flash-attn 2):
 * the two matrix products of softmax(QK^T)V in one kernel that never
 * writes the [T, S] matrix, so it moves q, k, v and the output only. A
 * causal kernel skips the key blocks above the diagonal. Backward
 * recomputes QK^T and runs four more products (dV, dP, dQ, dK: 2.5 times
 * the forward's FLOPs), after a row-wise pass over dO and O
 * (softmax_d = rowsum(dO * O)), and writes dq, dk, dv.
 */
static void attention_op(struct step *st, const struct colloc__top *tp, bool *req,
			 bool bwd_pass)
{
	const struct colloc_graph *g = st->g;
	const struct colloc_node *n = &g->nodes[tp->node];
	const struct colloc_tensor *q, *k, *v;
	double b, t, s, dqk, dv, flops, eff, blocks, frac = 1, io;
	int phase = bwd_pass ? COLLOC_PERF_BACKWARD : COLLOC_PERF_FORWARD;
	int prec = gemm_prec(st, tp);

	if (tp->in[0] < 0 || tp->in[1] < 0 || tp->in[2] < 0 || tp->out < 0)
		return;
	q = &g->tensors[tp->in[0]];
	k = &g->tensors[tp->in[1]];
	v = &g->tensors[tp->in[2]];
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		return;
	b = (double)q->shape[0] * (double)q->shape[1];
	t = (double)q->shape[2];
	s = (double)k->shape[2];
	dqk = (double)q->shape[3];
	dv = (double)v->shape[3];
	flops = 2 * b * t * s * (dqk + dv);
	if (colloc_node_attr_int(n, "is_causal", 0) && t > 0) {
		/* key blocks at or below the diagonal of each query block */
		double nb = ceil(t / ATTN_BLOCK_M);

		frac = (nb + 1) / (2 * nb);
	}
	io = tbytes(st, tp->in[0]) + tbytes(st, tp->in[1]) + tbytes(st, tp->in[2]) +
	     tbytes(st, tp->out);
	eff = colloc__gemm_shape_eff(t, s, dqk, b, st->p->sm_count,
				     &colloc__gemm_shape_fitted, &blocks);
	if (!bwd_pass) {
		issue_at(st, tp->node, phase, COLLOC_PERF_BMM, prec, false, flops * frac,
			 io, eff, blocks, st->host_op_s);
		return;
	}
	if (!req[tp->in[0]] && !req[tp->in[1]] && !req[tp->in[2]])
		return;
	issue_elem(st, tp->node, phase, COLLOC_PERF_SOFTMAX, numel(g, tp->out),
		   2 * tbytes(st, tp->out), b * t, st->host_bwd_s);
	issue_at(st, tp->node, phase, COLLOC_PERF_BMM, prec, false, 2.5 * flops * frac,
		 2 * io, eff, blocks, 0);
}

/*
 * Training batch norm reads the input twice (statistics, then
 * normalisation); backward reads grad and input twice more. cuDNN does
 * it in one kernel each way; PyTorch keeps bfloat16 inputs or weights
 * away from cuDNN (_select_batch_norm_backend in ATen's
 * Normalization.cpp), and its own CUDA kernels make the statistics (or,
 * backward, the reductions) and the elementwise pass two. nn.BatchNorm's
 * forward also counts the batch, num_batches_tracked.add_(1), an op and a
 * kernel of its own, where it keeps running statistics (buffers, inputs 3
 * and 4).
 */
static void batch_norm(struct step *st, const struct colloc__top *tp, bool bwd_pass)
{
	const struct colloc_graph *g = st->g;
	const struct colloc_node *n = &g->nodes[tp->node];
	double out_el = numel(g, tp->out), ob = tbytes(st, tp->out);
	double ib = tbytes(st, tp->in[0]);
	int ph = bwd_pass ? COLLOC_PERF_BACKWARD : COLLOC_PERF_FORWARD;
	double h = bwd_pass ? st->host_bwd_s : st->host_op_s;
	double bytes = bwd_pass ? 3 * ib + ob : 2 * ib + ob;
	int w = tp->in[1];
	bool bf16 = st->o->precision == COLLOC_PREC_AMP_BF16 ||
		    (w >= 0 && g->tensors[w].dtype == COLLOC_DT_BFLOAT16) ||
		    (tp->in[0] >= 0 && g->tensors[tp->in[0]].dtype == COLLOC_DT_BFLOAT16);

	if (bf16) {
		double first = bwd_pass ? 2 * ib : ib;

		issue_elem(st, tp->node, ph, COLLOC_PERF_NORM, out_el, first,
			   out_el / 512, h);
		issue_elem(st, tp->node, ph, COLLOC_PERF_NORM, out_el, bytes - first, 0,
			   LAUNCH_ONLY_S);
	} else {
		issue_elem(st, tp->node, ph, COLLOC_PERF_NORM, out_el, bytes,
			   out_el / 512, h);
	}
	if (!bwd_pass && n->n_inputs >= 5 && n->inputs[3] >= 0 &&
	    g->tensors[n->inputs[3]].param_class == COLLOC_PARAM_BUFFER)
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, 1, 16, 0, st->host_op_s);
}

/* Forward (bwd_pass false) or backward kernels of one op. */
static void op_kernels(struct step *st, const struct colloc__top *tp, bool *req,
		       bool bwd_pass)
{
	const struct colloc_graph *g = st->g;
	double out_el = numel(g, tp->out), ob = tbytes(st, tp->out);
	double ib = tbytes(st, tp->in[0]), rows = out_el / last_dim(g, tp->out);
	int ph = bwd_pass ? COLLOC_PERF_BACKWARD : COLLOC_PERF_FORWARD;
	double h = bwd_pass ? st->host_bwd_s : st->host_op_s;

	switch (tp->kind) {
	case OPK_CONV:
	case OPK_LINEAR:
	case OPK_MATMUL:
		gemm_op(st, tp, req, bwd_pass);
		return;
	case OPK_ATTENTION:
		attention_op(st, tp, req, bwd_pass);
		return;
	case OPK_BATCHNORM:
		batch_norm(st, tp, bwd_pass);
		return;
	case OPK_LAYERNORM:
		issue_elem(st, tp->node, ph, COLLOC_PERF_NORM, out_el,
			   bwd_pass ? 2 * ib + ob : ib + ob, rows, h);
		if (bwd_pass) /* gamma / beta gradients */
			issue_elem(st, tp->node, ph, COLLOC_PERF_NORM, out_el, 2 * ib,
				   last_dim(g, tp->out), h);
		return;
	case OPK_SOFTMAX:
		issue_elem(st, tp->node, ph, COLLOC_PERF_SOFTMAX, out_el,
			   bwd_pass ? 3 * ob : ib + ob, rows, h);
		return;
	case OPK_POOL_MAX:
	case OPK_POOL_AVG:
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM,
			   bwd_pass ? numel(g, tp->in[0]) : out_el,
			   bwd_pass ? 2 * ib + ob : ib + ob, 0, h);
		return;
	case OPK_ADD:
		if (!bwd_pass) {
			issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el,
				   ib + tbytes(st, tp->in[1]) + ob, 0, h);
			return;
		}
		/* grad passes through; a broadcast operand needs a sum */
		for (int i = 0; i < 2; i++)
			if (tp->in[i] >= 0 && req[tp->in[i]] &&
			    numel(g, tp->in[i]) < out_el)
				issue_elem(st, tp->node, ph, COLLOC_PERF_SOFTMAX, out_el,
					   ob, numel(g, tp->in[i]), h);
		return;
	case OPK_MUL:
	case OPK_DIV:
		if (!bwd_pass) {
			issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el,
				   ib + tbytes(st, tp->in[1]) + ob, 0, h);
			return;
		}
		for (int i = 0; i < 2; i++)
			if (tp->in[i] >= 0 && req[tp->in[i]])
				issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el,
					   3 * ob, 0, h);
		return;
	case OPK_EMBEDDING:
		if (!bwd_pass) {
			issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el, 2 * ob, 0,
				   h);
			return;
		}
		/* embedding_dense_backward: zero the weight gradient, then
		 * sort indices and accumulate rows */
		for (int i = 0; i < 2; i++) {
			int w = tp->in[i];

			if (w >= 0 && g->tensors[w].param_class == COLLOC_PARAM_TRAINABLE)
				issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM,
					   numel(g, w), tbytes(st, w), 0, h);
		}
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el, 2 * ob, 0, h);
		return;
	case OPK_SPLIT:
	case OPK_SLICE:
		/* views forward; backward builds the input's gradient */
		if (bwd_pass && tp->in[0] >= 0 && req[tp->in[0]])
			issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM,
				   numel(g, tp->in[0]), ib + ob, 0, h);
		return;
	case OPK_VIEW:
		/* Expand's gradient is a sum over the broadcast dims */
		if (!bwd_pass)
			st->host_s += st->host_op_s / 2;
		else if (!tp->grad_view && tp->in[0] >= 0 && req[tp->in[0]])
			issue_elem(st, tp->node, ph, COLLOC_PERF_SOFTMAX, out_el, ob,
				   numel(g, tp->in[0]), h);
		return;
	case OPK_CONCAT:
		/* backward hands out views of the gradient */
		if (!bwd_pass)
			issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el, 2 * ob, 0,
				   h);
		return;
	case OPK_REDUCE:
	case OPK_COPY:
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el, ib + ob, 0, h);
		return;
	case OPK_DROPOUT:
		/* forward writes the output and a byte mask */
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el,
			   bwd_pass ? 2 * ob + out_el : ib + ob + out_el, 0, h);
		return;
	default: /* activations, GELU, SiLU, other elementwise math */
		issue_elem(st, tp->node, ph, COLLOC_PERF_ELEM, out_el,
			   bwd_pass ? 3 * ob : ib + ob, 0, h);
		return;
	}
}

/* A loop optimizer (optim.c): per parameter, its kernels one by one, each
 * paying the host's dispatch cost, after the Python work of the
 * parameter. */
static void optimizer_loop(struct step *st)
{
	const struct colloc_graph *g = st->g;

	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc__optkern kv[COLLOC__OPT_MAX_KERNELS];
		int n;

		if (g->tensors[i].param_class != COLLOC_PARAM_TRAINABLE)
			continue;
		n = colloc__optim_kernels(st->o->optimizer, &g->tensors[i], kv);
		st->host_s += HOST_OPT_TENSOR_US * 1e-6;
		for (int k = 0; k < n; k++)
			issue_elem(st, -1, COLLOC_PERF_OPTIMIZER, COLLOC_PERF_ELEM,
				   kv[k].elems, kv[k].bytes, 0, st->host_op_s);
	}
}

/* One torch._foreach_* pass over every trainable parameter (or its
 * gradient), bytes_per_elem moved per element: multi_tensor_apply's
 * launches, the op's dispatch paid with the first. */
static void foreach_pass(struct step *st, double bytes_per_elem)
{
	double elems = (double)st->params.trainable, launches;

	if (elems <= 0)
		return;
	launches = ceil((double)st->params.trainable_tensors / MTA_TENSORS);
	if (launches < ceil(elems / (MTA_CHUNK * MTA_CHUNKS)))
		launches = ceil(elems / (MTA_CHUNK * MTA_CHUNKS));
	if (launches < 1)
		launches = 1;
	for (int l = 0; l < (int)launches; l++)
		issue_elem(st, -1, COLLOC_PERF_OPTIMIZER, COLLOC_PERF_ELEM,
			   elems / launches, bytes_per_elem * elems / launches, 0,
			   l == 0 ? st->host_op_s : LAUNCH_ONLY_S);
}

static void optimizer(struct step *st)
{
	const struct colloc__optim *opt = colloc__optim_get(st->o->optimizer);

	if (st->params.trainable == 0)
		return;
	if (opt->step == STEP_LOOP) {
		optimizer_loop(st);
		return;
	}
	st->host_s += (double)st->params.trainable_tensors * HOST_OPT_TENSOR_US * 1e-6;
	for (int i = 0; i < opt->n_passes; i++)
		foreach_pass(st, 4.0 * (opt->passes[i][0] + opt->passes[i][1]));
}

/*
 * torch.amp.GradScaler, which PyTorch's recipe for fp16 autocast uses (bf16
 * needs none), read in torch/amp/grad_scaler.py: scale() multiplies the
 * loss by the scale (one kernel); step() first unscales -- the scale's
 * reciprocal through float64 (three kernels), found_inf filled (one), both
 * copied for the device (two), and one foreach pass over the gradients,
 * _amp_foreach_non_finite_check_and_unscale_ -- then reads found_inf with
 * .item(), so the host waits for the GPU before it launches the optimizer;
 * update() is one kernel.
 */
enum scaler_stage { SCALE_LOSS, SCALE_UNSCALE, SCALE_UPDATE };

static void grad_scaler(struct step *st, enum scaler_stage stage)
{
	if (st->o->precision != COLLOC_PREC_AMP_FP16)
		return;
	if (stage != SCALE_UNSCALE) {
		issue_elem(st, -1,
			   stage == SCALE_LOSS ? COLLOC_PERF_FORWARD
					       : COLLOC_PERF_OPTIMIZER,
			   COLLOC_PERF_ELEM, 1, 12, 0, st->host_op_s);
		return;
	}
	for (int k = 0; k < 6; k++)
		issue_elem(st, -1, COLLOC_PERF_OPTIMIZER, COLLOC_PERF_ELEM, 1, 16, 0,
			   st->host_op_s);
	foreach_pass(st, 8.0); /* each gradient read and written */
	/* found_inf.item() */
	if (st->gpu_end_s > st->host_s)
		st->host_s = st->gpu_end_s;
	st->host_s += st->host_op_s;
}

/* The loss on the graph's first output, forward or backward. */
static void loss(struct step *st, bool bwd_pass)
{
	int y = st->g->n_outputs > 0 ? st->g->outputs[0] : -1;
	int ph = bwd_pass ? COLLOC_PERF_BACKWARD : COLLOC_PERF_FORWARD;
	double h = bwd_pass ? st->host_bwd_s : st->host_op_s;
	double el, b, narrow, rows;
	bool upcast, copies;

	if (y < 0 || st->o->loss == COLLOC_LOSS_NONE)
		return;
	el = numel(st->g, y);
	/* the logits as the model makes them (half under autocast) */
	narrow = tbytes(st, y);
	rows = el / last_dim(st->g, y);
	/* in float32 (upcast), through a copy of its own or not
	 * (colloc__loss_precision, as the memory timeline counts it) */
	colloc__loss_precision(
		st->o->loss, st->o->precision, el > 0 ? (int)(narrow / el) : 0,
		colloc_dtype_is_float(st->g->tensors[y].dtype), &upcast, &copies);
	b = upcast ? 4 * el : narrow;
	/* loss.backward() starts from ones_like(loss), a kernel of its own
	 * (its host cost is the call's) */
	if (bwd_pass)
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, 1, 4, 0, 0);
	if (st->o->loss == COLLOC_LOSS_MSE) {
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, el, bwd_pass ? 3 * b : 2 * b, 0,
			   h);
		return;
	}
	if (colloc_loss_shifts(st->o->loss) && !bwd_pass) /* logits[:, :-1] copy */
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, el, 2 * narrow, 0, h);
	/* the float32 copy of the logits; backward, the gradient back */
	if (copies && !bwd_pass)
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, el, narrow + b, 0, h);
	/* log_softmax + nll_loss; backward: nll_loss's gradient (zero-filled, then one
	 * kernel scatters -1/N into it: ATen's nll_loss_backward_out_cuda_template), then
	 * log_softmax backward */
	if (bwd_pass) {
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, el, b, 0, h);
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, rows, rows * 12, 0,
			   LAUNCH_ONLY_S);
		issue_elem(st, -1, ph, COLLOC_PERF_SOFTMAX, el, 3 * b, rows, h);
		if (copies)
			issue_elem(st, -1, ph, COLLOC_PERF_ELEM, el, narrow + b, 0, h);
	} else {
		issue_elem(st, -1, ph, COLLOC_PERF_SOFTMAX, el, 2 * b, rows, h);
		issue_elem(st, -1, ph, COLLOC_PERF_ELEM, rows, rows * 8, 0, h);
	}
}

/* torch.autocast's casts (colloc__amp_op, the rule the memory timeline
 * follows): each one is a conversion kernel in the forward pass and, for a
 * tensor that needs a gradient, another in the backward (to_copy's
 * backward converts the gradient back). */
struct amp_walk {
	uint8_t *esz; /* tensor -> element size at run time */
	int *present; /* tensor -> >= 0 where it has storage on the device */
	int *psrc; /* tensor -> the parameter it reads, or -1 */
	bool *cached; /* parameter -> its half copy made this forward pass */
	uint8_t (*cast)[3]; /* top -> its inputs' casts, for the backward */
};

static void amp_forward(struct step *st, struct amp_walk *aw,
			const struct colloc__top *tops, int k)
{
	const struct colloc_graph *g = st->g;
	const struct colloc__top *tp = &tops[k];
	const struct colloc_node *n = &g->nodes[tp->node];
	uint8_t *c = aw->cast[k];

	colloc__amp_op(g, tp, st->o->precision == COLLOC_PREC_AMP_FP16, aw->psrc,
		       aw->present, aw->esz, c);
	for (int i = 0; i < 3; i++) {
		int in = colloc__amp_input(tp, i), p;
		double el;

		if (!c[i])
			continue;
		if (c[i] == COLLOC__AMP_WCACHE) {
			p = aw->psrc[in];
			if (aw->cached[p]) {
				c[i] = 0; /* the cache's copy: no kernel, no backward */
				continue;
			}
			aw->cached[p] = true;
			el = (double)colloc_tensor_numel(&g->tensors[p]);
			issue_elem(st, tp->node, COLLOC_PERF_FORWARD, COLLOC_PERF_ELEM,
				   el, el * (colloc_dtype_size(g->tensors[p].dtype) + 2),
				   0, st->host_op_s);
			continue;
		}
		el = (double)colloc_tensor_numel(&g->tensors[in]);
		issue_elem(st, tp->node, COLLOC_PERF_FORWARD, COLLOC_PERF_ELEM, el,
			   el * (aw->esz[in] + c[i]), 0, st->host_op_s);
	}
	/* what the op makes exists on the device, unless it is a view of
	 * what does not (a split's outputs are all views) */
	for (int o = 0; o < n->n_outputs; o++) {
		int y = tp->kind == OPK_SPLIT ? n->outputs[o] : o == 0 ? tp->out : -1;

		if (y >= 0)
			aw->present[y] = tp->fwd != FWD_VIEW ? 0
					 : tp->in[0] >= 0    ? aw->present[tp->in[0]]
							     : -1;
	}
}

static void amp_backward(struct step *st, const struct amp_walk *aw,
			 const struct colloc__top *tops, int k, const bool *req)
{
	const struct colloc_graph *g = st->g;
	const struct colloc__top *tp = &tops[k];

	for (int i = 0; i < 3; i++) {
		int in = colloc__amp_input(tp, i), src;
		double el, from, to;

		if (!aw->cast[k][i])
			continue;
		/* the gradient goes back from the copy's type to the source's */
		if (aw->cast[k][i] == COLLOC__AMP_WCACHE) {
			src = aw->psrc[in];
			from = 2;
			to = colloc_dtype_size(g->tensors[src].dtype);
		} else {
			src = in;
			from = aw->cast[k][i];
			to = aw->esz[src];
		}
		if (!req[src])
			continue;
		el = (double)colloc_tensor_numel(&g->tensors[src]);
		issue_elem(st, tp->node, COLLOC_PERF_BACKWARD, COLLOC_PERF_ELEM, el,
			   el * (from + to), 0, st->host_bwd_s);
	}
}

static void amp_walk_free(struct amp_walk *aw)
{
	free(aw->esz);
	free(aw->present);
	free(aw->psrc);
	free(aw->cached);
	free(aw->cast);
	memset(aw, 0, sizeof(*aw));
}

/* The walk's state before the forward pass: the graph's dtypes; storage
 * for parameters, buffers and the inputs (timeline.c's model.to(cuda) and
 * x.to(cuda)). */
static int amp_walk_new(const struct colloc_graph *g, int n_tops, struct amp_walk *aw,
			struct colloc_diag *diag)
{
	size_t nt = (size_t)g->n_tensors + 1;

	aw->esz = malloc(nt);
	aw->present = malloc(nt * sizeof(*aw->present));
	aw->psrc = malloc(nt * sizeof(*aw->psrc));
	aw->cached = calloc(nt, sizeof(*aw->cached));
	aw->cast = calloc((size_t)n_tops + 1, sizeof(*aw->cast));
	if (!aw->esz || !aw->present || !aw->psrc || !aw->cached || !aw->cast) {
		amp_walk_free(aw);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < g->n_tensors; i++) {
		const struct colloc_tensor *x = &g->tensors[i];

		aw->esz[i] = (uint8_t)colloc_dtype_size(x->dtype);
		aw->psrc[i] = colloc__param_source(g, i);
		aw->present[i] = x->param_class == COLLOC_PARAM_TRAINABLE ||
						 x->param_class == COLLOC_PARAM_BUFFER
					 ? 0
					 : -1;
	}
	for (int i = 0; i < g->n_inputs; i++)
		aw->present[g->inputs[i]] = 0;
	return 0;
}

/* Which tensors need a gradient: trainable parameters and everything
 * computed from one. */
static void top_ops(struct step *st, struct colloc_perf *out)
{
	double total = st->busy_s > 0 ? st->busy_s : 1;

	out->n_top = 0;
	for (int k = 0; k < st->g->n_nodes; k++) {
		int pos = out->n_top;

		if (st->node_s[k] <= 0)
			continue;
		while (pos > 0 && out->top[pos - 1].gpu_ms < st->node_s[k] * 1e3)
			pos--;
		if (pos >= COLLOC_PERF_TOP_MAX)
			continue;
		if (out->n_top < COLLOC_PERF_TOP_MAX)
			out->n_top++;
		memmove(&out->top[pos + 1], &out->top[pos],
			(size_t)(out->n_top - 1 - pos) * sizeof(out->top[0]));
		out->top[pos].node = k;
		colloc_node_describe(st->g, k, out->top[pos].what,
				     sizeof(out->top[pos].what));
		out->top[pos].gpu_ms = st->node_s[k] * 1e3;
		out->top[pos].share = st->node_s[k] / total;
	}
}

/* Error bands that cover 80% of the benchmark's runs (build/tests/bench_perf,
 * docs/perf-model.md): step time on NeuSight's transformer rows (9 of 11
 * measured within [-15%, +20%] of the prediction; CNN errors are larger),
 * utilization and SM activity on GPUMemNet's MLP runs (80th percentile of
 * |error|: 10 and 9 points). */
#define STEP_BAND_LO 0.15
#define STEP_BAND_HI 0.20
#define UTIL_BAND 0.10
#define SM_BAND 0.09

static double clamp01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

int colloc_perf_predict(const struct colloc_graph *g, const struct colloc_perf_opts *o,
			struct colloc_perf *out, struct colloc_diag *diag)
{
	struct colloc_platform def;
	struct colloc__top *tops = NULL;
	struct amp_walk aw = {0};
	bool *req = NULL;
	struct step st;
	double in_bytes = 0, batch;
	int n, rc = 0;

	memset(out, 0, sizeof(*out));
	colloc_platform_default(&def);
	memset(&st, 0, sizeof(st));
	st.g = g;
	st.o = o;
	st.p = o->platform ? o->platform : &def;
	st.out = out;
	if (st.p->fp32_tflops <= 0 || st.p->mem_bandwidth_gbs <= 0 || st.p->sm_count <= 0)
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"platform '%s' has no compute facts (fp32_tflops, "
			"mem_bandwidth_gbs, sm_count); add them "
			"(data/platforms/README.md) or choose another profile",
			st.p->name);
	if (o->precision < 0 || o->precision >= COLLOC_PREC_COUNT_ || o->optimizer < 0 ||
	    o->optimizer >= COLLOC_OPT_COUNT_ || o->loss < 0 ||
	    o->loss >= COLLOC_LOSS_COUNT_)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "invalid predictor options");
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role != COLLOC_TENSOR_INITIALIZER &&
		    g->tensors[t].rank < 0 && g->tensors[t].consumers > 0)
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"graph is not inferred (tensor '%s' has no "
				"shape)",
				g->tensors[t].name);
	if ((rc = colloc_graph_check_params(g, diag)))
		return rc;
	/* An uncosted graph has matmuls of 0 FLOPs: refuse rather than
	 * predict a step of nothing. */
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *nd = &g->nodes[k];
		int y = nd->n_outputs > 0 ? nd->outputs[0] : -1;

		const struct colloc__op *op = colloc__node_op(nd);

		if (op &&
		    (op->cost == COLLOC__COST_MATMUL || op->cost == COLLOC__COST_GEMM ||
		     op->cost == COLLOC__COST_CONV) &&
		    nd->flops == 0 && y >= 0 && colloc_tensor_numel(&g->tensors[y]) > 0)
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"graph has no costs: call colloc_graph_cost() "
				"first");
	}
	st.act_scale = o->precision == COLLOC_PREC_AMP_FP16 ||
				       o->precision == COLLOC_PREC_AMP_BF16
			       ? 0.5
			       : 1.0;
	colloc_graph_param_totals(g, &st.params);
	st.host_op_s =
		(o->host_op_us >= 0 ? o->host_op_us : COLLOC_PERF_HOST_OP_US_DEFAULT) *
		1e-6;
	st.host_bwd_s = (o->host_bwd_op_us >= 0 ? o->host_bwd_op_us
						: COLLOC_PERF_HOST_BWD_OP_US_DEFAULT) *
			1e-6;
	tops = calloc((size_t)g->n_nodes + 1, sizeof(*tops));
	req = calloc((size_t)g->n_tensors + 1, sizeof(*req));
	st.node_s = calloc((size_t)g->n_nodes + 1, sizeof(*st.node_s));
	st.node_cls = malloc(((size_t)g->n_nodes + 1) * sizeof(*st.node_cls));
	if (!tops || !req || !st.node_s || !st.node_cls) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k <= g->n_nodes; k++)
		st.node_cls[k] = -1;
	n = colloc__train_ops(g, o->precision, st.p, tops, diag);
	if (n < 0) {
		rc = n;
		goto out;
	}
	colloc__requires_grad(g, req);

	/* Input: the data loader's wait, then a pageable host-to-device copy
	 * that the host waits for. */
	st.host_s = o->dataloader_ms > 0 ? o->dataloader_ms * 1e-3 : 0;
	for (int i = 0; i < g->n_inputs; i++)
		in_bytes += (double)colloc_tensor_bytes(&g->tensors[g->inputs[i]]);
	if (o->input_on_host && st.p->pcie_gbs > 0) {
		out->copy_ms = in_bytes / (st.p->pcie_gbs * 1e9) * 1e3;
		st.host_s += out->copy_ms * 1e-3 + st.host_op_s;
		st.gpu_end_s = st.host_s;
	}

	if (st.act_scale < 1 && (rc = amp_walk_new(g, n, &aw, diag)))
		goto out;
	/* views cost the host a dispatch and launch nothing */
	for (int k = 0; k < n; k++) {
		if (aw.esz && tops[k].fwd != FWD_SKIP)
			amp_forward(&st, &aw, tops, k);
		if (tops[k].fwd == FWD_VIEW)
			st.host_s += st.host_op_s / 2;
		else if (tops[k].fwd != FWD_SKIP)
			op_kernels(&st, &tops[k], req, false);
	}
	loss(&st, false);
	grad_scaler(&st, SCALE_LOSS);
	/* backward: the autograd engine walks the ops in reverse */
	st.host_s += st.host_op_s; /* loss.backward() call */
	loss(&st, true);
	for (int k = n - 1; k >= 0; k--) {
		const struct colloc__top *tp = &tops[k];

		if (tp->fwd == FWD_SKIP || tp->out < 0 || !req[tp->out])
			continue;
		op_kernels(&st, tp, req, true);
		if (aw.esz)
			amp_backward(&st, &aw, tops, k, req);
		/* gradients arriving from several consumers are summed */
		if (g->tensors[tp->out].consumers > 1 && tp->kind != OPK_VIEW)
			for (int c = 1; c < g->tensors[tp->out].consumers; c++)
				issue_elem(&st, tp->node, COLLOC_PERF_BACKWARD,
					   COLLOC_PERF_ELEM, numel(g, tp->out),
					   3 * tbytes(&st, tp->out), 0, st.host_bwd_s);
	}
	grad_scaler(&st, SCALE_UNSCALE);
	optimizer(&st);
	grad_scaler(&st, SCALE_UPDATE);

	/* loss.item() (or the next step's dependence on the update) waits
	 * for the GPU at the end of the step. */
	out->step_ms = (st.host_s > st.gpu_end_s ? st.host_s : st.gpu_end_s) * 1e3;
	out->kernel_ms = st.busy_s * 1e3;
	out->host_ms = st.host_s * 1e3;
	out->idle_ms = out->step_ms - out->kernel_ms;
	if (out->idle_ms < 0)
		out->idle_ms = 0;
	out->host_bound = out->idle_ms > 0.5 * out->step_ms;
	out->gpu_util = out->step_ms > 0 ? clamp01(out->kernel_ms / out->step_ms) : 0;
	out->sm_activity = out->step_ms > 0 ? clamp01(st.sm_s * 1e3 / out->step_ms) : 0;
	out->step_lo_ms = out->step_ms * (1 - STEP_BAND_LO);
	out->step_hi_ms = out->step_ms * (1 + STEP_BAND_HI);
	out->gpu_util_lo = clamp01(out->gpu_util - UTIL_BAND);
	out->gpu_util_hi = clamp01(out->gpu_util + UTIL_BAND);
	out->sm_activity_lo = clamp01(out->sm_activity - SM_BAND);
	out->sm_activity_hi = clamp01(out->sm_activity + SM_BAND);
	batch = o->batch > 0 ? (double)o->batch : 1;
	out->throughput_samples_per_s =
		out->step_ms > 0 ? batch / (out->step_ms * 1e-3) : 0;
	top_ops(&st, out);
	for (int i = 0; i < out->n_top; i++)
		out->top[i].cls = st.node_cls[out->top[i].node];
out:
	amp_walk_free(&aw);
	free(tops);
	free(req);
	free(st.node_s);
	free(st.node_cls);
	return rc;
}
