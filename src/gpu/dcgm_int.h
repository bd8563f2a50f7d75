/*
 * dcgm_int.h — DCGM's profiling metrics for the nvml backend (dcgm.c),
 * never installed. libdcgm is loaded with dlopen() like libnvidia-ml; when
 * it is missing or refuses, the metrics stay absent and nothing fails.
 *
 * Ownership: colloc__dcgm_open() returns a handle the nvml backend owns and
 * frees with colloc__dcgm_close(). Not thread-safe, like its owner.
 */
#ifndef COLLOC_DCGM_INT_H
#define COLLOC_DCGM_INT_H

#include <stddef.h>

#include "colloc/gpu.h"

struct colloc__dcgm;

/*
 * Load libdcgm (COLLOC_DCGM_LIBRARY, else libdcgm.so.4, libdcgm.so.3,
 * libdcgm.so; "off" disables), connect to the local nv-hostengine or start
 * an embedded one, and watch the five profiling fields on every GPU.
 * Returns the handle, or NULL when DCGM is absent or unusable; either way
 * note (note_len bytes) says what happened, for colloc_gpu_describe().
 */
struct colloc__dcgm *colloc__dcgm_open(char *note, size_t note_len);

/* Stop watching, disconnect, shut DCGM down; NULL is a no-op. */
void colloc__dcgm_close(struct colloc__dcgm *dcgm);

/* Fill out's five DCGM ratios for the GPU with this UUID from DCGM's latest
 * values; each one DCGM cannot give stays COLLOC_GPU_METRIC_ABSENT. dcgm
 * may be NULL (nothing happens). */
void colloc__dcgm_sample(struct colloc__dcgm *dcgm, const char *uuid,
			 struct colloc_gpu_info *out);

/* Every DCGM symbol name dcgm.c may resolve; *n receives their number. */
const char *const *colloc__dcgm_symbol_names(size_t *n);

#endif
