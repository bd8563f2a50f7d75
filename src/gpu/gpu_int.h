/*
 * gpu_int.h — shared by the GPU backends and their dispatcher (src/gpu/),
 * never installed: each backend's ops table, listed by gpu.c, and what the
 * tests of the NVML backend reach besides the public interface.
 */
#ifndef COLLOC_GPU_INT_H
#define COLLOC_GPU_INT_H

#include <stddef.h>

#include "colloc/gpu.h"

/* Simulated GPUs in a shared state file (sim.c). */
extern const struct colloc_gpu_backend_ops colloc__gpu_sim_ops;

/* NVIDIA GPUs through libnvidia-ml.so.1, loaded with dlopen (nvml.c). */
extern const struct colloc_gpu_backend_ops colloc__gpu_nvml_ops;

/* Every NVML symbol name the nvml backend may resolve, versioned names and
 * their fallbacks alike; *n receives their number. For the tests, which
 * check that each one was called against the fake library. */
const char *const *colloc__nvml_symbol_names(size_t *n);

#endif
