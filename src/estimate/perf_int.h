/*
 * perf_int.h — internals of the step-time predictor (perf.c) that the
 * calibration tool (tools/fit_perf.c) and the unit tests reach: the GEMM
 * shape model and the kernel-time rule, with the shape constants passed in
 * so the tool can search them.
 */
#ifndef COLLOC_PERF_INT_H
#define COLLOC_PERF_INT_H

#include "colloc/perf.h"

/* The GEMM shape constants fitted by tools/fit_perf (see perf.c). */
struct colloc__gemm_shape {
	double intensity_sat; /* tile intensity (elements) at full speed */
	double k_half; /* K at which the main loop reaches half speed */
};
extern const struct colloc__gemm_shape colloc__gemm_shape_fitted;

/*
 * Fraction of the GEMM peak a batch of b GEMMs of m x n x k reaches on
 * sm_count SMs before the per-GPU eta: the best cuBLAS-like tile choice
 * (wave quantization x tile efficiency x split-K) times the main-loop
 * efficiency k / (k + k_half). *blocks gets the thread blocks launched.
 */
double colloc__gemm_shape_eff(double m, double n, double k, double b, int sm_count,
			      const struct colloc__gemm_shape *c, double *blocks);

/* Peak FLOP/s of the class at the precision on p (tensor cores where the
 * precision and PyTorch's defaults use them). */
double colloc__peak_flops(const struct colloc_platform *p, int cls, int prec, bool conv);

/* Seconds of one kernel of class cls on p at precision prec: the rule of
 * colloc/perf.h with the GEMM shape efficiency gemm_eff (1 for others). */
double colloc__kernel_time_s(const struct colloc_platform *p, int cls, int prec,
			     bool conv, double flops, double bytes, double gemm_eff);

/* The built-in efficiency of class cls (profiles start from it). */
struct colloc_platform_eff colloc__eff_default(int cls);

/* The efficiency of class cls on p: the profile's calibration, else the
 * built-in default of the class. */
struct colloc_platform_eff colloc__eff(const struct colloc_platform *p, int cls);

#endif
