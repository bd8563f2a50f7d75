/*
 * colloc/platform.h — fixed memory costs of a GPU software platform.
 *
 * The caching allocator is only part of what a training process holds on a
 * GPU: the CUDA context (with lazily loaded kernels) and library workspaces
 * sit beside it. A platform profile records them for one GPU model and one
 * CUDA / cuDNN / PyTorch combination, with where each number came from.
 * Profiles are small JSON files in data/platforms/ (see data/platforms/README.md);
 * users can add their own or calibrate them against measurements.
 */
#ifndef COLLOC_PLATFORM_H
#define COLLOC_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

struct colloc_platform {
	char name[64]; /* file stem: "rtx3060-cu124-torch26" */
	char gpu[96]; /* "NVIDIA GeForce RTX 3060" */
	uint64_t gpu_memory_bytes; /* total as NVML reports it */
	char cuda[32], cudnn[32], torch[32];
	/* Device memory of the CUDA context, loaded kernels and library
	 * handles, outside the caching allocator. */
	uint64_t context_bytes;
	/* The CUDA context itself on a fresh process, which a measurement
	 * that subtracts its first NVML sample does not see; peak device =
	 * reserved + context_bytes + cuda_context_bytes. */
	uint64_t cuda_context_bytes;
	/* What cuDNN's handle and its lazily loaded kernels add outside the
	 * caching allocator once a graph runs a convolution (0: not known);
	 * added to peak device for graphs with Conv / ConvTranspose. */
	uint64_t cudnn_context_bytes;
	/* cuBLAS workspace, allocated through the caching allocator at the
	 * first matmul and kept (PyTorch >= 1.11; size by GPU arch). */
	uint64_t cublas_workspace_bytes;
	/* Upper bound on cuDNN convolution workspaces allocated through the
	 * caching allocator around each convolution (benchmark off). */
	uint64_t cudnn_workspace_bytes;
	char source[1024]; /* where the numbers come from */

	/* Compute facts for the step-time and utilization predictor
	 * (colloc/perf.h). 0 = unknown (the predictor then refuses to
	 * predict for this profile, or uses the generic default profile).
	 * Peaks are dense (no sparsity) at the boost clock, per the vendor's
	 * data sheet named in perf_source. */
	double fp32_tflops; /* FFMA peak: what fp32 with TF32 off runs at */
	double tf32_tflops; /* tensor-core TF32; 0 = no TF32 (pre-Ampere) */
	double fp16_tflops; /* tensor-core fp16 with fp32 accumulate */
	double bf16_tflops; /* tensor-core bf16; 0 = no bf16 (pre-Ampere) */
	double mem_bandwidth_gbs; /* DRAM bandwidth, 1e9 bytes/s */
	double pcie_gbs; /* host-to-device copy rate actually reached */
	int sm_count;
	double boost_clock_mhz;
	char perf_source[512];

	/* Per-op-class kernel efficiency, calibrated on measured kernels
	 * (tools/fit_perf.py on NeuSight's per-kernel latencies). A kernel of
	 * the class takes fixed_us + max(flops / (eta_compute x peak),
	 * bytes / (eta_memory x bandwidth)). eta 0 = not calibrated (the
	 * built-in class defaults of perf.c apply). */
	struct colloc_platform_eff {
		double eta_compute; /* fraction of the precision's peak */
		double eta_memory; /* fraction of mem_bandwidth_gbs */
		double fixed_us; /* per-kernel latency beyond the roofline */
	} eff[5]; /* indexed by enum colloc_perf_class (colloc/perf.h) */
	char eff_source[256];
};

/* The file a profile name (data/platforms/NAME.json) or path stands for. */
void colloc_platform_path(const char *name_or_path, char *path, size_t len);

/*
 * Calibration of a profile's context_bytes from n measured runs: measured[k]
 * is a run's peak device memory (NVML, full process on a fresh GPU or
 * whatever the user's measurement sees), reserved[k] the estimate's
 * peak_reserved_bytes for the same run under the profile. context_bytes is
 * the median of measured - reserved (0 if negative), the one offset that
 * leaves half the runs above and half below; the quantiles say how well one
 * offset explains them. Returns 0, COLLOC_EUSAGE for n <= 0, -ENOMEM.
 */
struct colloc_context_fit {
	int runs, negative; /* runs; runs whose measured < reserved */
	uint64_t context_bytes;
	int64_t p10_bytes, p50_bytes, p90_bytes, max_bytes; /* of measured - reserved */
};
int colloc_platform_fit_context(const uint64_t *measured, const uint64_t *reserved, int n,
				struct colloc_context_fit *out);

/* The built-in profile used when none is given (documented defaults). */
void colloc_platform_default(struct colloc_platform *p);

/*
 * Load a profile by name (data/platforms/NAME.json) or path. Unknown keys
 * are errors, so a typo does not silently fall back to a default.
 */
int colloc_platform_load(const char *name_or_path, struct colloc_platform *out,
			 struct colloc_diag *diag);

/*
 * Parse the JSON profile text[0..len) over the values already in *out
 * (start from colloc_platform_default()). Unknown keys and wrong types are
 * COLLOC_EFORMAT naming the key; more than 64 KiB is COLLOC_ELIMIT.
 */
int colloc_platform_parse(const char *text, size_t len, struct colloc_platform *out,
			  struct colloc_diag *diag);

/* List profile names in data/platforms/, like colloc_zoo_list(). */
int colloc_platform_list(char **names, int cap);

#endif
