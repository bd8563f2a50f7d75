/*
 * colloc/gpu.h — the GPUs of this machine, behind one interface.
 *
 * collocd's monitor and `colloc gpus` see GPUs through a backend: a table of
 * function pointers (struct colloc_gpu_backend_ops) chosen by name from a
 * static list compiled into libcolloc. Only the simulated backend "sim"
 * exists today (colloc/simgpu.h); "nvml" and "dcgm", loaded with dlopen at
 * run time, come later and slot into the same list. This module is not a
 * scheduler and never decides anything: it opens a backend and reports what
 * the backend sees.
 *
 * Ownership: colloc_gpu_open() returns a handle the caller owns and frees
 * with colloc_gpu_close(). Every query fills caller-owned structs; nothing
 * returned points into the handle except colloc_gpu_backend_name(). A
 * handle is not thread-safe: use it from one thread at a time.
 *
 * Errors are negative codes (colloc/error.h) with the detail in a
 * caller-owned struct colloc_diag; the library never prints.
 */
#ifndef COLLOC_GPU_H
#define COLLOC_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

/* Buffer sizes of NVML's v2 strings, so that a real backend never truncates. */
#define COLLOC_GPU_UUID_MAX 96
#define COLLOC_GPU_NAME_MAX 96
#define COLLOC_GPU_BUS_ID_MAX 32

/* One GPU as its backend sees it now. A figure the backend cannot measure
 * is -1 (util_pct, power_mw, energy_mj). */
struct colloc_gpu_info {
	/* "GPU-8-4-4-4-12 hex" from NVML, "SIM-..." from the simulated
	 * backend: what CUDA_VISIBLE_DEVICES takes (never an index). */
	char uuid[COLLOC_GPU_UUID_MAX];
	char name[COLLOC_GPU_NAME_MAX];
	char pci_bus_id[COLLOC_GPU_BUS_ID_MAX]; /* "00000000:01:00.0" */
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes;
	uint64_t mem_free_bytes;
	int util_pct; /* 0..100, or -1 */
	int64_t power_mw; /* or -1 */
	int64_t energy_mj; /* since some backend-defined origin, or -1 */
};

/* A process holding memory on a GPU. */
struct colloc_gpu_process {
	int64_t pid; /* in the backend's pid namespace */
	uint64_t used_bytes;
};

/*
 * A backend. All functions but close return 0 or a negative code and write
 * the reason into diag. `backend` is the opaque pointer open() produced.
 */
struct colloc_gpu_backend_ops {
	const char *name; /* what comes before ':' in a spec: "sim" */
	/* args: what follows "name:" in the spec ("" when there is none). */
	int (*open)(const char *args, void **backend, struct colloc_diag *diag);
	void (*close)(void *backend);
	int (*count)(void *backend, unsigned *n, struct colloc_diag *diag);
	int (*info)(void *backend, unsigned index, struct colloc_gpu_info *out,
		    struct colloc_diag *diag);
	/* Fill procs[0 .. min(cap, total)) and set *n to the total. */
	int (*processes)(void *backend, unsigned index, struct colloc_gpu_process *procs,
			 size_t cap, size_t *n, struct colloc_diag *diag);
	/* Optional (NULL when none): one "NAME=VALUE" that a job launched on
	 * this backend's GPUs needs in its environment, or "" for none. */
	int (*job_env)(void *backend, char *buf, size_t len, struct colloc_diag *diag);
};

/* An open backend. */
struct colloc_gpu;

/*
 * The backends compiled in, in lookup order; *n receives their number.
 * Never NULL.
 */
const struct colloc_gpu_backend_ops *const *colloc_gpu_backends(size_t *n);

/* The backend called name, or NULL. */
const struct colloc_gpu_backend_ops *colloc_gpu_backend_find(const char *name);

/*
 * Open the backend a spec names: "NAME" or "NAME:ARGS", e.g.
 * "sim:4x40GiB" or "sim:2x1GiB,path=/tmp/gpus.state" (see colloc/simgpu.h
 * for the sim backend's arguments). On success *out is a new handle.
 * Returns 0, COLLOC_ENOTFOUND for an unknown backend, COLLOC_EUSAGE for bad
 * arguments, or what the backend's open returns; *out is untouched then.
 */
int colloc_gpu_open(const char *spec, struct colloc_gpu **out, struct colloc_diag *diag);

/* Close gpu; NULL is a no-op. */
void colloc_gpu_close(struct colloc_gpu *gpu);

/* The name of gpu's backend ("sim"); valid while gpu is open. */
const char *colloc_gpu_backend_name(const struct colloc_gpu *gpu);

/* Number of GPUs the backend sees. */
int colloc_gpu_count(struct colloc_gpu *gpu, unsigned *n, struct colloc_diag *diag);

/* State of GPU index (0 .. count-1); COLLOC_EUSAGE for a bad index. */
int colloc_gpu_info(struct colloc_gpu *gpu, unsigned index, struct colloc_gpu_info *out,
		    struct colloc_diag *diag);

/*
 * Processes holding memory on GPU index: fills procs[0 .. min(cap, *n))
 * and sets *n to how many there are (so cap == 0 asks for the number).
 */
int colloc_gpu_processes(struct colloc_gpu *gpu, unsigned index,
			 struct colloc_gpu_process *procs, size_t cap, size_t *n,
			 struct colloc_diag *diag);

/*
 * The environment entry ("NAME=VALUE") a job started on these GPUs needs
 * besides CUDA_VISIBLE_DEVICES, written into buf; buf becomes "" when the
 * backend needs none (real GPUs). The sim backend gives
 * "COLLOC_SIM_STATE=PATH" so that the job finds the daemon's simulated GPUs.
 * Returns 0, or COLLOC_ELIMIT when buf is too small.
 */
int colloc_gpu_job_env(struct colloc_gpu *gpu, char *buf, size_t len,
		       struct colloc_diag *diag);

#endif
