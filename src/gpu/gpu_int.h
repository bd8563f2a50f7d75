/*
 * gpu_int.h — shared by the GPU backends and their dispatcher (src/gpu/),
 * never installed: each backend's ops table, listed by gpu.c.
 */
#ifndef COLLOC_GPU_INT_H
#define COLLOC_GPU_INT_H

#include "colloc/gpu.h"

/* Simulated GPUs in a shared state file (sim.c). */
extern const struct colloc_gpu_backend_ops colloc__gpu_sim_ops;

#endif
