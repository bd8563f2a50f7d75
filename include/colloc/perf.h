/*
 * colloc/perf.h — step time, GPU utilization and SM activity of a training
 * job, predicted from its graph before it runs.
 *
 * The predictor lists the kernels one training iteration launches, as eager
 * PyTorch launches them: one or more per forward op (the estimator's
 * PyTorch-level ops, so a decomposed GELU is one kernel, not five), the
 * backward kernels each op's derivative runs (matmuls: a data-gradient and
 * a weight-gradient GEMM; elementwise ops: one kernel reading the gradient
 * and what was saved), the loss, and the optimizer's foreach passes. Each
 * kernel takes
 *
 *     fixed_us + max(flops / (eta_compute x peak of the precision),
 *                    bytes / (eta_memory x DRAM bandwidth))
 *
 * with (eta, fixed) per op class and GPU, calibrated on measured kernels
 * (struct colloc_platform.eff). The host issues the kernels one after the
 * other, paying a dispatch cost per op; the GPU runs each when both it and
 * the kernel are ready. Step time is when the last kernel of the iteration
 * ends (plus the data loader's time where it does not overlap), so a job of
 * many small kernels is host-bound and leaves the GPU idle. docs/perf-model.md
 * gives every rule and the measured accuracy.
 *
 * Pure: no I/O, no clock, no allocation beyond what it frees before
 * returning. Reads a graph inferred (colloc_graph_infer() at the batch of
 * interest) and costed (colloc_graph_cost(): the FLOPs are the graph's) and
 * fills a caller-owned struct colloc_perf.
 */
#ifndef COLLOC_PERF_H
#define COLLOC_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/graph.h"
#include "colloc/platform.h"

/* Kernel classes, each with its own calibrated efficiency. The order is
 * that of struct colloc_platform.eff[]. */
enum colloc_perf_class {
	COLLOC_PERF_GEMM = 0, /* nn.Linear, convolutions (implicit GEMM) */
	COLLOC_PERF_BMM, /* matmuls between activations (attention) */
	COLLOC_PERF_ELEM, /* elementwise: activations, adds, dropout, optimizer */
	COLLOC_PERF_SOFTMAX, /* row reductions: softmax, log-softmax, pooling */
	COLLOC_PERF_NORM, /* layer / batch / group norm */
	COLLOC_PERF_CLASS_COUNT_
};
const char *colloc_perf_class_name(int cls); /* "gemm", "bmm", ... */

/* Where a kernel's time went. */
enum colloc_perf_phase {
	COLLOC_PERF_FORWARD = 0,
	COLLOC_PERF_BACKWARD, /* loss backward included */
	COLLOC_PERF_OPTIMIZER,
	COLLOC_PERF_PHASE_COUNT_
};

/* Host costs used when colloc_perf_opts leaves them < 0: measured by
 * tools/measure_host_overhead.py plus the CUDA launch (docs/perf-model.md). */
#define COLLOC_PERF_HOST_OP_US_DEFAULT 14.0
#define COLLOC_PERF_HOST_BWD_OP_US_DEFAULT 9.0

struct colloc_perf_opts {
	int precision; /* enum colloc_precision (colloc/estimate.h) */
	int optimizer; /* enum colloc_optimizer */
	int loss; /* enum colloc_loss: its kernels are added */
	int64_t batch; /* samples per step, for throughput; <= 0 = 1 */
	/* GPU facts; NULL = the built-in default profile (A100-like). A
	 * profile without compute facts (fp32_tflops == 0) is an error. */
	const struct colloc_platform *platform;
	/* Host costs of one step. < 0 = default (docs/perf-model.md). */
	double host_op_us; /* Python + dispatcher + launch per forward op */
	double host_bwd_op_us; /* autograd engine + launch per backward kernel */
	double dataloader_ms; /* main-thread data time per step; 0 = none */
	bool input_on_host; /* batch copied host -> device each step */
};

/* Fill opts with the defaults: fp32, adam, cross-entropy, batch 1,
 * default platform, default host costs, input on the host. */
void colloc_perf_opts_init(struct colloc_perf_opts *opts);

#define COLLOC_PERF_TOP_MAX 8

/* One op of the graph and the GPU time it costs over the step. */
struct colloc_perf_op {
	int node; /* graph node index, -1 for the loss / optimizer */
	char what[96]; /* "node 57 (/layer4/Conv, Conv)" */
	int cls; /* enum colloc_perf_class */
	double gpu_ms; /* forward + backward kernel time */
	double share; /* of the step's kernel time, 0..1 */
};

struct colloc_perf {
	/* One training iteration (forward, backward, optimizer), wall time,
	 * with its error bar: [step_lo_ms, step_hi_ms] held 80% of the
	 * measured transformer runs of the benchmark; CNNs err more
	 * (docs/perf-model.md). */
	double step_ms, step_lo_ms, step_hi_ms;

	/* GPU time by phase and by what bounds it (ms, kernel time only). */
	double phase_ms[COLLOC_PERF_PHASE_COUNT_];
	double compute_bound_ms; /* kernels whose FLOP term dominates */
	double memory_bound_ms; /* kernels whose byte term dominates */
	double fixed_ms; /* per-kernel latency beyond the roofline */
	double kernel_ms; /* sum of all kernel time */
	double copy_ms; /* host-to-device input copy (not a kernel) */
	double host_ms; /* host time to issue the step's work */
	double idle_ms; /* step time the GPU ran no kernel */
	int kernels; /* kernels launched per step */
	bool host_bound; /* the host, not the GPU, sets the step time */

	/* NVML utilization.gpu: fraction of wall time >= 1 kernel runs. */
	double gpu_util, gpu_util_lo, gpu_util_hi;
	/* DCGM 1002 (SM activity): time-averaged fraction of SMs with at
	 * least one resident block. */
	double sm_activity, sm_activity_lo, sm_activity_hi;
	double throughput_samples_per_s;

	/* Ops with the most GPU time, largest first. */
	int n_top;
	struct colloc_perf_op top[COLLOC_PERF_TOP_MAX];
};

/*
 * Predict one training step of inferred graph g under opts. Returns 0, or
 * a negative code with a message (graph not inferred, platform without
 * compute facts, an op the training rules cannot classify).
 */
int colloc_perf_predict(const struct colloc_graph *g, const struct colloc_perf_opts *opts,
			struct colloc_perf *out, struct colloc_diag *diag);

/*
 * One kernel of class cls on platform p, for tools and tests: its time in
 * seconds given its FLOPs and bytes moved, at precision prec. Uses the
 * profile's calibrated efficiency, else the built-in class default. -1
 * for an unknown class or a profile without compute facts.
 */
double colloc_perf_kernel_s(const struct colloc_platform *p, int cls, int prec,
			    double flops, double bytes);

/*
 * Check a profile's compute facts are in physical ranges (0 < eta <= 1,
 * fixed_us < 1000, peaks and bandwidth positive and below 10 PFLOPS /
 * 100 TB/s, sm_count 1..1024). Returns 0 or COLLOC_EFORMAT naming the
 * field. A profile with no compute facts at all passes (fp32_tflops 0).
 */
int colloc_perf_check_platform(const struct colloc_platform *p, struct colloc_diag *diag);

#endif
