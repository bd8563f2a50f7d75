/*
 * oom.h — recognising a job that died of GPU out-of-memory, and what to ask
 * for on its next attempt. Pure functions: no I/O except cd_oom_scan_file().
 *
 * A death counts as OOM only when the job exited non-zero (or was killed by
 * a signal) AND its output contains one of the markers frameworks print:
 *   PyTorch:    "CUDA out of memory", "OutOfMemoryError"
 *   cuBLAS:     "CUBLAS_STATUS_ALLOC_FAILED"
 *   CUDA:       "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation"
 *   TensorFlow: "RESOURCE_EXHAUSTED"
 * A clean exit that printed a marker (a caught OOM) is not an OOM death.
 */
#ifndef COLLOC_DAEMON_OOM_H
#define COLLOC_DAEMON_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

/* The marker found in buf[0..len) (a static string), or NULL. Markers are
 * matched case-sensitively, anywhere, including across lines' ends; buf need
 * not be NUL-terminated and is never read past len, so a marker cut off by
 * the end of buf is not found. When several occur, the first in the list
 * above wins. */
const char *cd_oom_marker(const char *buf, size_t len);

/*
 * Scan the bytes of the file at path from offset on (at most the last
 * max_bytes of that range) for a marker. Sets *marker to the static marker
 * string or NULL. Returns 0, or -errno when the file cannot be read (a
 * missing file is 0 with *marker NULL: the job printed nothing; so is an
 * offset at or past the end). A marker that straddles the start of the
 * scanned range is not found. Memory used does not grow with max_bytes.
 */
int cd_oom_scan_file(const char *path, uint64_t offset, size_t max_bytes,
		     const char **marker, struct colloc_diag *diag);

/*
 * Whether PyTorch's out-of-memory message in buf[0..len) says that one
 * allocation asked for more than the whole GPU: "Tried to allocate 20.00
 * GiB" with "GPU 0 has a total capacity of 7.79 GiB" (PyTorch >= 2.1) or
 * "(GPU 0; 15.78 GiB total capacity; ...)" (older). When the message names
 * no capacity, gpu_total_bytes (the largest GPU here; 0: unknown) stands in.
 * The last "Tried to allocate" in buf counts. *tried_bytes and
 * *capacity_bytes get the figures (0 when absent). Such a job cannot fit
 * on any retry: more memory per GPU does not exist.
 */
bool cd_oom_exceeds_capacity(const char *buf, size_t len, uint64_t gpu_total_bytes,
			     uint64_t *tried_bytes, uint64_t *capacity_bytes);

/*
 * cd_oom_exceeds_capacity() over the last max_bytes (at most 64 KiB) of the
 * file at path from offset on. Sets *exceeds; returns 0, or -errno when the
 * file cannot be read (a missing file is 0, *exceeds false).
 */
int cd_oom_scan_capacity(const char *path, uint64_t offset, size_t max_bytes,
			 uint64_t gpu_total_bytes, bool *exceeds, uint64_t *tried_bytes,
			 uint64_t *capacity_bytes, struct colloc_diag *diag);

struct cd_oom_policy {
	double growth; /* new need >= old need * growth (default 1.5) */
	double peak_margin; /* and >= measured peak * peak_margin (1.2) */
	int exclusive_after; /* from this attempt on, a GPU of its own (2) */
	int max_attempts; /* attempts in all before failing for good (4) */
};

void cd_oom_policy_init(struct cd_oom_policy *p);

enum cd_oom_action {
	CD_OOM_RETRY = 0, /* re-queue ahead of new work with the new need */
	CD_OOM_RETRY_EXCLUSIVE, /* the same, on GPUs of its own */
	CD_OOM_GIVE_UP, /* fail with the reason */
};

struct cd_oom_decision {
	int action; /* enum cd_oom_action */
	uint64_t mem_need_bytes; /* the next attempt's need */
	char reason[256]; /* human: why, with old and new need */
};

/*
 * What to do after attempt number `attempts` (1 for the first run) died of
 * OOM, with old_need and the run's measured per-GPU peak (0 when none was
 * seen), on GPUs of gpu_total_bytes (the largest GPU that could take it).
 * The new need is max(old*growth, peak*peak_margin), rounded up to 256 MiB,
 * capped at gpu_total_bytes; when old_need already was gpu_total_bytes and
 * the job was alone, or attempts >= max_attempts, the answer is GIVE_UP.
 *
 * Exactly: GIVE_UP (mem_need_bytes = old_need) when attempts >=
 * max_attempts, or when was_exclusive and old_need >= gpu_total_bytes.
 * Otherwise the new need is at least old_need and 256 MiB, saturating
 * instead of overflowing, and the answer is RETRY_EXCLUSIVE when the next
 * attempt's number (attempts + 1) >= exclusive_after, when was_exclusive
 * (never downgraded), or when the cap left the need no larger than
 * old_need; else RETRY. gpu_total_bytes 0 means unknown: no cap. attempts
 * below 1 count as 1. reason reads "out of memory on attempt 1: need
 * 4.00 GiB -> 6.00 GiB" and does not name the marker (the caller has it).
 */
void cd_oom_decide(const struct cd_oom_policy *p, int attempts, uint64_t old_need,
		   uint64_t peak_bytes, uint64_t gpu_total_bytes, bool was_exclusive,
		   struct cd_oom_decision *out);

#endif
