/*
 * test_perf.c — the step-time / utilization predictor (colloc/perf.h) and
 * the compute facts of platform profiles (colloc/platform.h).
 *
 * 1. The kernel roofline on a hand-filled platform, against numbers worked
 *    out by hand: calibrated and default class efficiencies, fp32 / TF32 /
 *    tensor-core peaks.
 * 2. The GEMM shape model (perf_int.h): wave quantization, bounds.
 * 3. Whole-step predictions on zoo graphs and a builder-made MLP: ranges,
 *    internal sums, monotonicity in batch, host costs and the data loader,
 *    AMP against fp32, and errors instead of crashes.
 * 4. Every profile in data/platforms (found through COLLOC_DATA_DIR) loads
 *    with physical compute facts, and the parser rejects bad compute keys
 *    naming them.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "colloc/cost.h"
#include "colloc/estimate.h"
#include "colloc/onnx.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "colloc/shape.h"
#include "colloc/zoo.h"
#include "estimate/perf_int.h"
#include "onnx_builder.h"
#include "test_util.h"

/* perf.c's TENSOR_CORE_REL: the fraction of the dense tensor-core peak
 * that cuBLAS-like GEMMs are taken to reach relative to FFMA. */
#define TC_REL 0.86
#define MAX_PROFILES 64

/* What a test holds, released by teardown() even when an assertion fails
 * (cmocka longjmps out of the test). */
static struct colloc_graph *held_graph;
static char *held_names[MAX_PROFILES];
static char held_dir[64], held_file[128];

static int teardown(void **state)
{
	(void)state;
	colloc_graph_destroy(held_graph);
	held_graph = NULL;
	for (int i = 0; i < MAX_PROFILES; i++) {
		free(held_names[i]);
		held_names[i] = NULL;
	}
	if (held_file[0])
		remove(held_file);
	if (held_dir[0])
		rmdir(held_dir);
	held_file[0] = held_dir[0] = '\0';
	return 0;
}

static void assert_close(double got, double want, double rel, const char *what)
{
	double tol = rel * fabs(want);

	if (!(fabs(got - want) <= tol))
		fail_msg("%s: got %.17g, want %.17g (rel %.3g)", what, got, want,
			 want != 0 ? fabs(got - want) / fabs(want) : fabs(got));
}

/* fp32 10 TFLOPS, TF32 80, fp16/bf16 160, 1000 GB/s, 100 SMs; only gemm
 * calibrated: {0.5, 0.8, 5 us}. */
static void hand_platform(struct colloc_platform *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "hand");
	p->fp32_tflops = 10;
	p->tf32_tflops = 80;
	p->fp16_tflops = 160;
	p->bf16_tflops = 160;
	p->mem_bandwidth_gbs = 1000;
	p->pcie_gbs = 10;
	p->sm_count = 100;
	p->boost_clock_mhz = 1000;
	p->eff[COLLOC_PERF_GEMM].eta_compute = 0.5;
	p->eff[COLLOC_PERF_GEMM].eta_memory = 0.8;
	p->eff[COLLOC_PERF_GEMM].fixed_us = 5;
}

/* --- 1. the kernel roofline --------------------------------------------- */

static void test_kernel_calibrated(void **state)
{
	struct colloc_platform p;
	double t;

	(void)state;
	hand_platform(&p);
	/* compute-bound: 1e12 FLOPs at 0.5 x 10 TFLOPS = 0.2 s; the 1 MB
	 * would take 1.25 us */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, 1e12, 1e6);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 10e12), 1e-12, "gemm compute-bound");
	/* memory-bound: 1 GB at 0.8 x 1000 GB/s = 1.25 ms; 1 kFLOP is nothing */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, 1e3, 1e9);
	assert_close(t, 5e-6 + 1e9 / (0.8 * 1e12), 1e-12, "gemm memory-bound");
	/* nothing to do: the fixed latency alone */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, 0, 0);
	assert_close(t, 5e-6, 1e-12, "gemm empty");
	/* the max, not the sum, of the two terms: both exactly 1 ms */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, 5e9, 8e8);
	assert_close(t, 5e-6 + 1e-3, 1e-12, "gemm balanced");
	/* the GEMM shape efficiency divides the compute term only */
	t = colloc__kernel_time_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, false, 1e12,
				  1e6, 0.25);
	assert_close(t, 5e-6 + 1e12 / (0.25 * 0.5 * 10e12), 1e-12, "gemm shape eff");
	t = colloc__kernel_time_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, false, 1e3, 1e9,
				  0.25);
	assert_close(t, 5e-6 + 1e9 / (0.8 * 1e12), 1e-12, "gemm shape eff, memory");
}

static void test_kernel_default_eff(void **state)
{
	struct colloc_platform p;
	struct colloc_platform_eff e;
	double t;

	(void)state;
	hand_platform(&p);
	/* perf.c default_eff: bmm {0.74, 0.79, 5}, elem {1.0, 0.78, 5},
	 * softmax {1.0, 0.64, 0}, norm {1.0, 0.60, 5}. */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_BMM, COLLOC_PREC_FP32, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.74 * 10e12), 1e-12, "bmm default compute");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_BMM, COLLOC_PREC_FP32, 0, 1e9);
	assert_close(t, 5e-6 + 1e9 / (0.79 * 1e12), 1e-12, "bmm default memory");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_ELEM, COLLOC_PREC_FP32, 1e6, 1e9);
	assert_close(t, 5e-6 + 1e9 / (0.78 * 1e12), 1e-12, "elem default memory");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_ELEM, COLLOC_PREC_FP32, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (1.0 * 10e12), 1e-12, "elem default compute");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_SOFTMAX, COLLOC_PREC_FP32, 1e6, 1e9);
	assert_close(t, 0 + 1e9 / (0.64 * 1e12), 1e-12, "softmax default");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_NORM, COLLOC_PREC_FP32, 1e6, 1e9);
	assert_close(t, 5e-6 + 1e9 / (0.6 * 1e12), 1e-12, "norm default");

	/* the calibrated class is not the default one */
	e = colloc__eff(&p, COLLOC_PERF_GEMM);
	assert_close(e.eta_compute, 0.5, 0, "gemm eta_compute");
	assert_close(e.eta_memory, 0.8, 0, "gemm eta_memory");
	assert_close(e.fixed_us, 5, 0, "gemm fixed_us");
	e = colloc__eff(&p, COLLOC_PERF_GEMM + 1);
	assert_close(e.eta_compute, 0.74, 0, "bmm default eta_compute");
	/* ...and a calibration changes the time of that class */
	p.eff[COLLOC_PERF_ELEM].eta_compute = 1.0;
	p.eff[COLLOC_PERF_ELEM].eta_memory = 0.5;
	p.eff[COLLOC_PERF_ELEM].fixed_us = 2;
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_ELEM, COLLOC_PREC_FP32, 1e6, 1e9);
	assert_close(t, 2e-6 + 1e9 / (0.5 * 1e12), 1e-12, "elem calibrated");
	for (int c = 0; c < COLLOC_PERF_CLASS_COUNT_; c++)
		assert_string_not_equal(colloc_perf_class_name(c), "unknown");
	assert_string_equal(colloc_perf_class_name(COLLOC_PERF_GEMM), "gemm");
	assert_string_equal(colloc_perf_class_name(COLLOC_PERF_CLASS_COUNT_), "unknown");
	assert_string_equal(colloc_perf_class_name(-1), "unknown");
}

static void test_kernel_tensor_cores(void **state)
{
	struct colloc_platform p;
	double t;

	(void)state;
	hand_platform(&p);
	/* autocast fp16 / bf16 and TF32 matmuls run on the tensor peak */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_AMP_FP16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 160e12 * TC_REL), 1e-12, "gemm fp16");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_AMP_BF16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 160e12 * TC_REL), 1e-12, "gemm bf16");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_TF32, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 80e12 * TC_REL), 1e-12, "gemm tf32");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_BMM, COLLOC_PREC_AMP_FP16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.74 * 160e12 * TC_REL), 1e-12, "bmm fp16");
	/* plain fp32 matmuls stay on FFMA (allow_tf32 is off for matmuls) */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 10e12), 1e-12, "gemm fp32");
	/* elementwise work never uses tensor cores */
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_ELEM, COLLOC_PREC_AMP_FP16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / 10e12, 1e-12, "elem fp16");

	/* peaks: fp32 convolutions use TF32 (cudnn.allow_tf32) where the GPU
	 * has it; fp32 matmuls do not */
	assert_close(colloc__peak_flops(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, true),
		     80e12 * TC_REL, 1e-12, "conv fp32 peak");
	assert_close(colloc__peak_flops(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, false),
		     10e12, 1e-12, "matmul fp32 peak");
	assert_close(colloc__peak_flops(&p, COLLOC_PERF_ELEM, COLLOC_PREC_FP32, true),
		     10e12, 1e-12, "elem peak");
	assert_close(colloc__peak_flops(&p, COLLOC_PERF_GEMM, COLLOC_PREC_AMP_FP16, true),
		     160e12 * TC_REL, 1e-12, "conv fp16 peak");
	t = colloc__kernel_time_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, true, 1e12, 0,
				  1);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 80e12 * TC_REL), 1e-12, "conv fp32");

	/* a GPU without TF32 / bf16 / fast fp16 falls back to the fp32 peak */
	p.tf32_tflops = 0;
	p.bf16_tflops = 0;
	p.fp16_tflops = 0;
	assert_close(colloc__peak_flops(&p, COLLOC_PERF_GEMM, COLLOC_PREC_FP32, true),
		     10e12, 1e-12, "conv fp32 peak, no tf32");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_AMP_BF16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 10e12), 1e-12, "gemm bf16 without bf16");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_TF32, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 10e12), 1e-12, "gemm tf32 without tf32");
	t = colloc_perf_kernel_s(&p, COLLOC_PERF_GEMM, COLLOC_PREC_AMP_FP16, 1e12, 0);
	assert_close(t, 5e-6 + 1e12 / (0.5 * 10e12), 1e-12, "gemm fp16 without fp16");
}

/* --- 2. the GEMM shape model --------------------------------------------- */

static void test_gemm_shape(void **state)
{
	const struct colloc__gemm_shape *c = &colloc__gemm_shape_fitted;
	static const double shapes[][4] = {
		{1, 1, 1, 1},	     {1024, 1024, 1024, 1}, {4096, 4096, 1024, 1},
		{64, 64, 64, 1},     {32, 1000, 512, 1},    {128, 128, 16384, 1},
		{3136, 64, 576, 1},  {197, 64, 197, 144},   {8192, 8192, 8192, 1},
		{1e5, 1e5, 1e5, 64}, {7, 3, 100000, 1},	    {0, 0, 0, 0},
	};
	static const int sms[] = {1, 13, 56, 80, 108, 132, 1024};
	double small, big, blocks = 0;

	(void)state;
	/* 1024^2 leaves a partly filled last wave on 108 SMs; 4096^2 runs
	 * tens of nearly full waves */
	small = colloc__gemm_shape_eff(1024, 1024, 1024, 1, 108, c, &blocks);
	assert_true(blocks >= 1);
	big = colloc__gemm_shape_eff(4096, 4096, 1024, 1, 108, c, &blocks);
	assert_true(blocks >= 108);
	if (!(small < big))
		fail_msg("1024^3 eff %g, 4096x4096x1024 eff %g", small, big);
	assert_true(big > 0.9);
	/* a short K runs the main loop below speed */
	assert_true(colloc__gemm_shape_eff(4096, 4096, 16, 1, 108, c, NULL) <
		    colloc__gemm_shape_eff(4096, 4096, 4096, 1, 108, c, NULL));

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		for (size_t s = 0; s < sizeof(sms) / sizeof(sms[0]); s++) {
			double e = colloc__gemm_shape_eff(shapes[i][0], shapes[i][1],
							  shapes[i][2], shapes[i][3],
							  sms[s], c, &blocks);

			if (!(e > 0 && e <= 1) || !(blocks >= 1))
				fail_msg("%gx%gx%g b%g on %d SMs: eff %g, blocks %g",
					 shapes[i][0], shapes[i][1], shapes[i][2],
					 shapes[i][3], sms[s], e, blocks);
		}
	/* by hand, with constants of our own: {intensity_sat 32, k_half 0}
	 * leaves only tile choice, waves and split-K */
	{
		const struct colloc__gemm_shape flat = {32, 0}, half = {32, 24};

		/* one 128x128 tile fills the one SM */
		assert_close(colloc__gemm_shape_eff(128, 128, 1024, 1, 1, &flat, &blocks),
			     1, 1e-12, "128^2 on 1 SM");
		assert_close(blocks, 1, 0, "blocks");
		/* on 4 SMs: four 64x64 tiles (intensity 32, full speed) */
		assert_close(colloc__gemm_shape_eff(128, 128, 1024, 1, 4, &flat, &blocks),
			     1, 1e-12, "128^2 on 4 SMs");
		assert_close(blocks, 4, 0, "blocks");
		/* 64x64 with K 4096 on 4 SMs: one tile, split K in 4, paying
		 * 1 + 4 x 13 x split / k for the partial sums */
		assert_close(colloc__gemm_shape_eff(64, 64, 4096, 1, 4, &flat, &blocks),
			     1 / (1 + 4.0 * 13 * 4 / 4096), 1e-12, "split-K");
		assert_close(blocks, 4, 0, "split-K blocks");
		/* K = k_half runs the main loop at half speed (no split: K
		 * too short) */
		assert_close(colloc__gemm_shape_eff(128, 128, 24, 1, 1, &half, &blocks),
			     0.5, 1e-12, "k_half");
		/* a batch of 8 GEMMs fills 8 SMs with 8 tiles */
		assert_close(colloc__gemm_shape_eff(128, 128, 1024, 8, 8, &flat, &blocks),
			     1, 1e-12, "batched");
		assert_close(blocks, 8, 0, "batched blocks");
	}
	/* no SM count: treated as one SM, still bounded */
	big = colloc__gemm_shape_eff(512, 512, 512, 1, 0, c, &blocks);
	assert_true(big > 0 && big <= 1 && blocks >= 1);
}

/* --- 3. whole steps -------------------------------------------------------- */

static struct colloc_graph *load_zoo(const char *name)
{
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g = NULL;
	char path[4096];

	if (colloc_zoo_resolve(name, path, sizeof(path), &diag))
		fail_msg("%s", diag.msg);
	if (colloc_onnx_load_file(path, NULL, &g, &diag))
		fail_msg("%s: %s", name, diag.msg);
	held_graph = g;
	return g;
}

static void infer_at(struct colloc_graph *g, int64_t batch)
{
	struct colloc_bind_opts bo = {batch, NULL, 0};
	struct colloc_diag diag = {{0}};

	if (colloc_graph_infer(g, &bo, &diag))
		fail_msg("%s: batch %lld: %s", g->name, (long long)batch, diag.msg);
	colloc_graph_cost(g, NULL);
}

/* A 3-layer MLP as torch.onnx writes nn.Linear: Gemm(transB) + Relu. */
static struct colloc_graph *mlp(void)
{
	static const int64_t widths[] = {512, 256, 10};
	struct ob_model *m = ob_model_create(14);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g = NULL;
	char prev[64] = "x", dims[64], name[64], ins[256], out[64];
	int64_t width = 784;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	ob_input(m, gp, "x", 1, "batch,784");
	for (int l = 0; l < 3; l++) {
		Onnx__TensorProto *t;
		Onnx__NodeProto *nd;

		snprintf(name, sizeof(name), "fc%d.weight", l);
		snprintf(dims, sizeof(dims), "%lld,%lld", (long long)widths[l],
			 (long long)width);
		t = ob_tensor(m, name, 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		snprintf(name, sizeof(name), "fc%d.bias", l);
		snprintf(dims, sizeof(dims), "%lld", (long long)widths[l]);
		t = ob_tensor(m, name, 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		snprintf(ins, sizeof(ins), "%s,fc%d.weight,fc%d.bias", prev, l, l);
		snprintf(out, sizeof(out), "h%d", l);
		nd = ob_node(m, gp, "Gemm", "", ins, out);
		ob_attr_int(m, nd, "transB", 1);
		snprintf(prev, sizeof(prev), "%s", out);
		if (l < 2) {
			snprintf(out, sizeof(out), "r%d", l);
			ob_node(m, gp, "Relu", "", prev, out);
			snprintf(prev, sizeof(prev), "%s", out);
		}
		width = widths[l];
	}
	ob_output(m, gp, prev, 1, "batch,10");
	rc = ob_model_pack(m, &buf, &len);
	ob_model_destroy(m);
	assert_int_equal(rc, 0);
	rc = colloc_onnx_load_buffer(buf, len, NULL, &g, &diag);
	free(buf);
	if (rc)
		fail_msg("mlp: %s", diag.msg);
	held_graph = g;
	return g;
}

static void predict(const struct colloc_graph *g, const struct colloc_perf_opts *o,
		    struct colloc_perf *r)
{
	struct colloc_diag diag = {{0}};

	if (colloc_perf_predict(g, o, r, &diag))
		fail_msg("%s: %s", g->name, diag.msg);
}

/* What every prediction must satisfy, whatever the model. */
static void check_invariants(const struct colloc_graph *g,
			     const struct colloc_perf_opts *o,
			     const struct colloc_perf *r)
{
	double phases = 0, batch = o->batch > 0 ? (double)o->batch : 1;

	assert_true(r->kernels > 0);
	assert_true(r->kernel_ms > 0);
	assert_true(r->step_ms > 0);
	assert_true(r->gpu_util >= 0 && r->gpu_util <= 1);
	assert_true(r->sm_activity >= 0 && r->sm_activity <= 1);
	/* SMs are only active while a kernel runs */
	assert_true(r->sm_activity <= r->gpu_util + 1e-12);
	assert_true(r->gpu_util_lo <= r->gpu_util && r->gpu_util <= r->gpu_util_hi);
	assert_true(r->sm_activity_lo <= r->sm_activity &&
		    r->sm_activity <= r->sm_activity_hi);
	assert_true(r->step_lo_ms <= r->step_ms && r->step_ms <= r->step_hi_ms);
	/* one stream: kernels never overlap, so they fit in the step */
	assert_true(r->kernel_ms <= r->step_ms * (1 + 1e-12));
	assert_close(r->gpu_util, r->kernel_ms / r->step_ms, 1e-12, "gpu_util");
	assert_true(r->idle_ms >= 0);
	assert_close(r->idle_ms + r->kernel_ms, r->step_ms, 1e-9, "idle + kernel");
	assert_int_equal(r->host_bound, r->idle_ms > 0.5 * r->step_ms);
	for (int i = 0; i < COLLOC_PERF_PHASE_COUNT_; i++) {
		assert_true(r->phase_ms[i] >= 0);
		phases += r->phase_ms[i];
	}
	assert_true(r->phase_ms[COLLOC_PERF_FORWARD] > 0);
	assert_true(r->phase_ms[COLLOC_PERF_BACKWARD] > 0);
	assert_true(r->phase_ms[COLLOC_PERF_OPTIMIZER] > 0);
	assert_close(phases, r->kernel_ms, 1e-9, "sum of phase_ms");
	assert_true(r->compute_bound_ms >= 0 && r->memory_bound_ms >= 0 &&
		    r->fixed_ms > 0);
	assert_close(r->compute_bound_ms + r->memory_bound_ms + r->fixed_ms, r->kernel_ms,
		     1e-9, "compute + memory + fixed");
	assert_close(r->throughput_samples_per_s, batch / (r->step_ms * 1e-3), 1e-12,
		     "throughput");
	assert_true(r->n_top >= 1 && r->n_top <= COLLOC_PERF_TOP_MAX);
	for (int i = 0; i < r->n_top; i++) {
		const struct colloc_perf_op *op = &r->top[i];

		assert_true(op->node >= 0 && op->node < g->n_nodes);
		assert_true(op->cls >= 0 && op->cls < COLLOC_PERF_CLASS_COUNT_);
		assert_true(op->gpu_ms > 0 && op->gpu_ms <= r->kernel_ms * (1 + 1e-12));
		assert_true(op->share > 0 && op->share <= 1);
		assert_close(op->share, op->gpu_ms / r->kernel_ms, 1e-9, "top share");
		assert_true(op->what[0] != '\0');
		if (i > 0 && !(r->top[i - 1].gpu_ms >= op->gpu_ms))
			fail_msg("%s: top[%d] %g ms before top[%d] %g ms", g->name, i - 1,
				 r->top[i - 1].gpu_ms, i, op->gpu_ms);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(r->top[j].node, op->node);
	}
}

/* Small batch host-bound, big batch slower but at least as busy; host
 * costs and the data loader lower utilization. */
static void check_monotone(struct colloc_graph *g, int64_t small_b, int64_t big_b)
{
	struct colloc_perf_opts o;
	struct colloc_perf small, big, r;

	colloc_perf_opts_init(&o);
	infer_at(g, small_b);
	o.batch = small_b;
	predict(g, &o, &small);
	check_invariants(g, &o, &small);
	/* few blocks per kernel at a small batch: SMs sit idle even while a
	 * kernel runs */
	assert_true(small.sm_activity < small.gpu_util);
	/* the GPU waits for the host a good part of a small step */
	if (!(small.idle_ms > 0.2 * small.step_ms))
		fail_msg("%s at batch %lld: idle %g of %g ms", g->name,
			 (long long)small_b, small.idle_ms, small.step_ms);

	/* a slower host leaves the GPU idle for longer */
	o.host_op_us = 50;
	o.host_bwd_op_us = 30;
	predict(g, &o, &r);
	check_invariants(g, &o, &r);
	assert_true(r.step_ms > small.step_ms);
	assert_true(r.gpu_util < small.gpu_util);
	assert_true(r.host_ms > small.host_ms);
	assert_true(r.host_bound);
	assert_close(r.kernel_ms, small.kernel_ms, 1e-12, "kernel_ms vs host cost");
	/* and a free host makes the step no longer than the GPU's work */
	o.host_op_us = 0;
	o.host_bwd_op_us = 0;
	o.input_on_host = false;
	predict(g, &o, &r);
	check_invariants(g, &o, &r);
	assert_true(r.step_ms < small.step_ms);
	assert_close(r.step_ms, r.kernel_ms, 1e-9, "host-free step");

	/* the data loader's main-thread time adds to the step */
	colloc_perf_opts_init(&o);
	o.batch = small_b;
	o.dataloader_ms = 5;
	predict(g, &o, &r);
	check_invariants(g, &o, &r);
	assert_close(r.step_ms - small.step_ms, 5, 1e-6, "dataloader adds to step");
	assert_true(r.gpu_util < small.gpu_util);
	assert_close(r.kernel_ms, small.kernel_ms, 1e-12, "kernel_ms vs dataloader");

	colloc_perf_opts_init(&o);
	infer_at(g, big_b);
	o.batch = big_b;
	predict(g, &o, &big);
	check_invariants(g, &o, &big);
	if (!(big.step_ms > small.step_ms))
		fail_msg("%s: step %g ms at batch %lld, %g ms at %lld", g->name,
			 big.step_ms, (long long)big_b, small.step_ms,
			 (long long)small_b);
	if (!(big.gpu_util >= small.gpu_util))
		fail_msg("%s: util %g at batch %lld, %g at %lld", g->name, big.gpu_util,
			 (long long)big_b, small.gpu_util, (long long)small_b);
	assert_true(big.kernel_ms > small.kernel_ms);
	assert_true(big.throughput_samples_per_s > small.throughput_samples_per_s);
	assert_true(big.sm_activity >= small.sm_activity);

	/* determinism */
	predict(g, &o, &r);
	assert_memory_equal(&r, &big, sizeof(r));
}

static void test_resnet18(void **state)
{
	struct colloc_graph *g = load_zoo("resnet18");

	(void)state;
	check_monotone(g, 1, 128);
}

static void test_mlp(void **state)
{
	struct colloc_graph *g = mlp();
	struct colloc_perf_opts o;
	struct colloc_perf r;

	(void)state;
	check_monotone(g, 1, 4096);
	/* every one of its 5 ops (3 Gemm, 2 Relu) launches kernels */
	colloc_perf_opts_init(&o);
	o.batch = 4096;
	predict(g, &o, &r);
	assert_int_equal(r.n_top, 5);
}

/* The top ops carry the class of their op: convolutions are GEMMs. */
static void test_top_classes(void **state)
{
	struct colloc_graph *g = load_zoo("resnet18");
	struct colloc_perf_opts o;
	struct colloc_perf r;
	bool conv = false;

	(void)state;
	infer_at(g, 64);
	colloc_perf_opts_init(&o);
	o.batch = 64;
	predict(g, &o, &r);
	check_invariants(g, &o, &r);
	for (int i = 0; i < r.n_top; i++) {
		const char *op = g->nodes[r.top[i].node].op_type;

		if (strcmp(op, "Conv") == 0 || strcmp(op, "Gemm") == 0)
			assert_int_equal(r.top[i].cls, COLLOC_PERF_GEMM);
		if (strcmp(op, "Conv") == 0)
			conv = true;
		else if (strcmp(op, "BatchNormalization") == 0)
			assert_int_equal(r.top[i].cls, COLLOC_PERF_NORM);
	}
	assert_true(conv);
	/* far more than COLLOC_PERF_TOP_MAX ops launch kernels */
	assert_int_equal(r.n_top, COLLOC_PERF_TOP_MAX);
}

static void test_amp_faster(void **state)
{
	struct colloc_graph *g = load_zoo("resnet50");
	struct colloc_diag diag = {{0}};
	struct colloc_platform a100;
	struct colloc_perf_opts o;
	struct colloc_perf fp32, amp, tf32;

	(void)state;
	if (colloc_platform_load("a100-40gb-cu124-torch26", &a100, &diag))
		fail_msg("%s", diag.msg);
	infer_at(g, 64);
	colloc_perf_opts_init(&o);
	o.platform = &a100;
	o.batch = 64;
	predict(g, &o, &fp32);
	check_invariants(g, &o, &fp32);
	o.precision = COLLOC_PREC_AMP_FP16;
	predict(g, &o, &amp);
	check_invariants(g, &o, &amp);
	if (!(amp.step_ms < fp32.step_ms))
		fail_msg("resnet50 b64 on A100: amp-fp16 %g ms, fp32 %g ms", amp.step_ms,
			 fp32.step_ms);
	assert_true(amp.kernel_ms < fp32.kernel_ms);
	/* TF32 matmuls: no slower than fp32 (convolutions use TF32 either way) */
	o.precision = COLLOC_PREC_TF32;
	predict(g, &o, &tf32);
	check_invariants(g, &o, &tf32);
	assert_true(tf32.step_ms <= fp32.step_ms);

	/* without tensor cores AMP still halves the activations' bytes, so
	 * memory-bound kernels are faster and nothing is slower */
	a100.tf32_tflops = a100.fp16_tflops = a100.bf16_tflops = 0;
	o.precision = COLLOC_PREC_FP32;
	predict(g, &o, &fp32);
	o.precision = COLLOC_PREC_AMP_BF16;
	predict(g, &o, &amp);
	check_invariants(g, &o, &amp);
	if (!(amp.kernel_ms < fp32.kernel_ms &&
	      amp.memory_bound_ms < fp32.memory_bound_ms))
		fail_msg("no tensor cores: amp %g ms (memory-bound %g), fp32 %g ms (%g)",
			 amp.kernel_ms, amp.memory_bound_ms, fp32.kernel_ms,
			 fp32.memory_bound_ms);
}

/*
 * Autocast's casts are kernels (colloc__amp_op): on the 3-layer MLP, the
 * forward converts the input and, once each through the weight cache, the
 * three weights and three biases (7); the backward converts the six
 * parameters' gradients back (6; the input needs none). The loss's
 * log_softmax converts the half logits with a copy of its own under bf16
 * (one kernel each way), and under fp16 reads half and writes float32 in
 * one kernel (ATen's half_to_float): none. fp16 brings its GradScaler:
 * the loss scaled (1), the scale's reciprocal, found_inf and their device
 * copies (6), one foreach unscale over the six gradients (1), the update
 * (1).
 */
static void test_amp_casts(void **state)
{
	struct colloc_graph *g = mlp();
	struct colloc_perf_opts o;
	struct colloc_perf fp32, bf16, fp16;

	(void)state;
	infer_at(g, 32);
	colloc_perf_opts_init(&o);
	o.batch = 32;
	predict(g, &o, &fp32);
	o.precision = COLLOC_PREC_AMP_BF16;
	predict(g, &o, &bf16);
	o.precision = COLLOC_PREC_AMP_FP16;
	predict(g, &o, &fp16);
	assert_int_equal(bf16.kernels - fp32.kernels, 7 + 6 + 2);
	assert_int_equal(fp16.kernels - fp32.kernels, 7 + 6 + 9);
}

/*
 * bfloat16 keeps batch norm away from cuDNN (ATen's
 * _select_batch_norm_backend): PyTorch's own kernels make the statistics
 * and the elementwise pass two kernels each way, against cuDNN's one under
 * fp16. With the loss's copy under bf16 (one kernel each way), ResNet-18's
 * 20 batch norms launch 2 x 20 + 2 kernels more under amp-bf16 than under
 * amp-fp16, less fp16's GradScaler (9 kernels at ResNet-18's 11.7 M
 * parameters) -- the H200's profiler counted 32 more (462 against 430).
 */
static void test_bf16_batch_norm(void **state)
{
	struct colloc_graph *g = load_zoo("resnet18");
	struct colloc_perf_opts o;
	struct colloc_perf fp16, bf16;
	int n_bn = 0;

	(void)state;
	infer_at(g, 32);
	for (int k = 0; k < g->n_nodes; k++)
		n_bn += strcmp(g->nodes[k].op_type, "BatchNormalization") == 0;
	assert_int_equal(n_bn, 20);
	colloc_perf_opts_init(&o);
	o.batch = 32;
	o.precision = COLLOC_PREC_AMP_FP16;
	predict(g, &o, &fp16);
	o.precision = COLLOC_PREC_AMP_BF16;
	predict(g, &o, &bf16);
	assert_int_equal(bf16.kernels - fp16.kernels, 2 * n_bn + 2 - 9);
}

static void test_errors(void **state)
{
	struct colloc_graph *g = load_zoo("resnet18");
	struct colloc_diag diag = {{0}};
	struct colloc_platform p;
	struct colloc_perf_opts o;
	struct colloc_perf r;
	int rc;

	(void)state;
	/* loaded, never inferred: shapes unknown */
	colloc_perf_opts_init(&o);
	rc = colloc_perf_predict(g, &o, &r, &diag);
	assert_true(rc < 0);
	assert_true(diag.msg[0] != '\0');

	infer_at(g, 2);
	/* a profile without compute facts */
	colloc_platform_default(&p);
	p.fp32_tflops = 0;
	o.platform = &p;
	diag.msg[0] = '\0';
	rc = colloc_perf_predict(g, &o, &r, &diag);
	assert_int_equal(rc, COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "fp32_tflops"));
	colloc_platform_default(&p);
	p.sm_count = 0;
	diag.msg[0] = '\0';
	assert_true(colloc_perf_predict(g, &o, &r, &diag) < 0);
	assert_true(diag.msg[0] != '\0');

	/* precisions out of range */
	colloc_perf_opts_init(&o);
	o.precision = COLLOC_PREC_COUNT_;
	diag.msg[0] = '\0';
	assert_int_equal(colloc_perf_predict(g, &o, &r, &diag), COLLOC_EUSAGE);
	assert_true(diag.msg[0] != '\0');
	o.precision = -1;
	assert_int_equal(colloc_perf_predict(g, &o, &r, NULL), COLLOC_EUSAGE);
	o.precision = COLLOC_PREC_FP32;
	o.optimizer = COLLOC_OPT_COUNT_;
	assert_int_equal(colloc_perf_predict(g, &o, &r, NULL), COLLOC_EUSAGE);

	/* and the same graph and options, fixed, predict */
	colloc_perf_opts_init(&o);
	o.batch = 2;
	predict(g, &o, &r);
	check_invariants(g, &o, &r);
}

/* --- 4. the profiles -------------------------------------------------- */

static bool file_has_eff(const char *name, const char *cls)
{
	char path[4096], *text;
	cJSON *root;
	bool has;

	snprintf(path, sizeof(path), "%s/platforms/%s.json", colloc_data_dir(), name);
	text = test_slurp(path, 1 << 20);
	assert_non_null(text);
	root = cJSON_Parse(text);
	free(text);
	assert_non_null(root);
	has = cJSON_GetObjectItemCaseSensitive(
		      cJSON_GetObjectItemCaseSensitive(root, "eff"), cls) != NULL;
	cJSON_Delete(root);
	return has;
}

static void test_profiles(void **state)
{
	char **names = held_names;
	int n = colloc_platform_list(names, MAX_PROFILES), with_eff = 0;
	bool a100 = false;

	(void)state;
	assert_true(n > 0 && n <= MAX_PROFILES);
	for (int i = 0; i < n; i++) {
		struct colloc_diag diag = {{0}};
		struct colloc_platform p;
		bool any = false;

		if (colloc_platform_load(names[i], &p, &diag))
			fail_msg("%s: %s", names[i], diag.msg);
		assert_string_equal(p.name, names[i]);
		if (!(p.fp32_tflops > 0 && p.sm_count > 0 && p.mem_bandwidth_gbs > 0 &&
		      p.perf_source[0] != '\0'))
			fail_msg("%s: no compute facts (fp32 %g, %d SMs, %g GB/s)",
				 names[i], p.fp32_tflops, p.sm_count,
				 p.mem_bandwidth_gbs);
		if (colloc_perf_check_platform(&p, &diag))
			fail_msg("%s: %s", names[i], diag.msg);
		for (int c = 0; c < COLLOC_PERF_CLASS_COUNT_; c++) {
			const struct colloc_platform_eff *e = &p.eff[c];

			if (!file_has_eff(names[i], colloc_perf_class_name(c))) {
				assert_true(e->eta_compute == 0 && e->eta_memory == 0);
				continue;
			}
			any = true;
			if (!(e->eta_compute > 0 && e->eta_compute <= 1 &&
			      e->eta_memory > 0 && e->eta_memory <= 1 &&
			      e->fixed_us >= 0 && e->fixed_us < 1000))
				fail_msg("%s: eff.%s = {%g, %g, %g}", names[i],
					 colloc_perf_class_name(c), e->eta_compute,
					 e->eta_memory, e->fixed_us);
		}
		if (any) {
			with_eff++;
			assert_true(p.eff_source[0] != '\0');
		}
		if (strcmp(names[i], "a100-40gb-cu124-torch26") == 0)
			a100 = true;
	}
	assert_true(a100);
	assert_true(with_eff > 0);
}

/* A file describes its own GPU: one that gives no compute facts inherits
 * none from the built-in default, and the predictor refuses it. */
static void test_profile_without_facts(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_platform p;
	struct colloc_perf_opts o;
	struct colloc_perf r;
	struct colloc_graph *g;
	FILE *f;

	(void)state;
	snprintf(held_dir, sizeof(held_dir), "/tmp/colloc-test-perf-XXXXXX");
	assert_non_null(mkdtemp(held_dir));
	snprintf(held_file, sizeof(held_file), "%s/nofacts.json", held_dir);
	f = fopen(held_file, "w");
	assert_non_null(f);
	fputs("{\"gpu\": \"some GPU\", \"context_bytes\": \"300MiB\"}\n", f);
	assert_int_equal(fclose(f), 0);
	if (colloc_platform_load(held_file, &p, &diag))
		fail_msg("%s", diag.msg);
	assert_string_equal(p.name, "nofacts");
	assert_true(p.fp32_tflops == 0 && p.tf32_tflops == 0 && p.fp16_tflops == 0 &&
		    p.bf16_tflops == 0 && p.mem_bandwidth_gbs == 0 && p.pcie_gbs == 0);
	assert_int_equal(p.sm_count, 0);
	assert_string_equal(p.perf_source, "");
	for (int c = 0; c < COLLOC_PERF_CLASS_COUNT_; c++)
		assert_true(p.eff[c].eta_compute == 0 && p.eff[c].eta_memory == 0);
	assert_int_equal(colloc_perf_check_platform(&p, &diag), 0);

	g = mlp();
	infer_at(g, 8);
	colloc_perf_opts_init(&o);
	o.platform = &p;
	diag.msg[0] = '\0';
	assert_int_equal(colloc_perf_predict(g, &o, &r, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "nofacts"));
}

static void expect_reject(const char *text, const char *key, const char *key2)
{
	struct colloc_diag diag = {{0}};
	struct colloc_platform p;
	int rc;

	colloc_platform_default(&p);
	rc = colloc_platform_parse(text, strlen(text), &p, &diag);
	if (rc != COLLOC_EFORMAT)
		fail_msg("%s: rc %d (%s), want COLLOC_EFORMAT", text, rc, diag.msg);
	if (!strstr(diag.msg, key) || (key2 && !strstr(diag.msg, key2)))
		fail_msg("%s: message '%s' does not name '%s'", text, diag.msg, key);
}

static void test_parse_rejects(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_platform p;
	const char *ok = "{\"fp32_tflops\": 30, \"sm_count\": 80, \"mem_bandwidth_gbs\": "
			 "900, \"eff\": {\"bmm\": {\"eta_compute\": 0.6, "
			 "\"eta_memory\": 0.7, \"fixed_us\": 3}}}";

	(void)state;
	expect_reject("{\"eff\": {\"gemmm\": {\"eta_compute\": 0.5}}}", "gemmm", NULL);
	expect_reject("{\"eff\": {\"gemm\": {\"eta_compute\": 0.5, \"eta_mem\": 0.5}}}",
		      "eta_mem", "gemm");
	expect_reject("{\"eff\": {\"gemm\": {\"eta_compute\": 1.5}}}", "eta_compute",
		      "gemm");
	expect_reject("{\"eff\": {\"gemm\": {\"fixed_us\": -1}}}", "fixed_us", "gemm");
	expect_reject("{\"eff\": {\"gemm\": {\"fixed_us\": 1000}}}", "fixed_us", "gemm");
	expect_reject("{\"eff\": {\"norm\": {\"eta_memory\": 0}}}", "eta_memory", "norm");
	expect_reject("{\"eff\": {\"gemm\": 0.5}}", "gemm", NULL);
	expect_reject("{\"eff\": [1]}", "eff", NULL);
	expect_reject("{\"sm_count\": 5000}", "sm_count", NULL);
	expect_reject("{\"sm_count\": -1}", "sm_count", NULL);
	expect_reject("{\"fp32_tflops\": \"19.5\"}", "fp32_tflops", NULL);
	expect_reject("{\"fp32_tflops\": -1}", "fp32_tflops", NULL);
	expect_reject("{\"mem_bandwidth_gbs\": 1e6}", "mem_bandwidth_gbs", NULL);
	expect_reject("{\"perf_source\": 3}", "perf_source", NULL);

	/* the same keys, well formed, parse */
	colloc_platform_default(&p);
	if (colloc_platform_parse(ok, strlen(ok), &p, &diag))
		fail_msg("%s", diag.msg);
	assert_close(p.fp32_tflops, 30, 0, "fp32_tflops");
	assert_int_equal(p.sm_count, 80);
	assert_close(p.mem_bandwidth_gbs, 900, 0, "mem_bandwidth_gbs");
	assert_close(p.eff[COLLOC_PERF_BMM].eta_compute, 0.6, 0, "bmm eta_compute");
	assert_close(p.eff[COLLOC_PERF_BMM].eta_memory, 0.7, 0, "bmm eta_memory");
	assert_close(p.eff[COLLOC_PERF_BMM].fixed_us, 3, 0, "bmm fixed_us");
	assert_true(p.eff[COLLOC_PERF_GEMM].eta_compute == 0);
	assert_int_equal(colloc_perf_check_platform(&p, &diag), 0);

	/* the checker on its own */
	p.eff[COLLOC_PERF_NORM].eta_memory = 1.2;
	assert_int_equal(colloc_perf_check_platform(&p, &diag), COLLOC_EFORMAT);
	assert_non_null(strstr(diag.msg, "norm"));
	p.eff[COLLOC_PERF_NORM].eta_memory = 0;
	p.sm_count = 2000;
	assert_int_equal(colloc_perf_check_platform(&p, &diag), COLLOC_EFORMAT);
	assert_non_null(strstr(diag.msg, "sm_count"));
	/* no compute facts at all pass */
	memset(&p, 0, sizeof(p));
	assert_int_equal(colloc_perf_check_platform(&p, &diag), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_kernel_calibrated, teardown),
		cmocka_unit_test_teardown(test_kernel_default_eff, teardown),
		cmocka_unit_test_teardown(test_kernel_tensor_cores, teardown),
		cmocka_unit_test_teardown(test_gemm_shape, teardown),
		cmocka_unit_test_teardown(test_resnet18, teardown),
		cmocka_unit_test_teardown(test_mlp, teardown),
		cmocka_unit_test_teardown(test_top_classes, teardown),
		cmocka_unit_test_teardown(test_amp_casts, teardown),
		cmocka_unit_test_teardown(test_bf16_batch_norm, teardown),
		cmocka_unit_test_teardown(test_amp_faster, teardown),
		cmocka_unit_test_teardown(test_errors, teardown),
		cmocka_unit_test_teardown(test_profiles, teardown),
		cmocka_unit_test_teardown(test_profile_without_facts, teardown),
		cmocka_unit_test_teardown(test_parse_rejects, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
