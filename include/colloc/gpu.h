/*
 * colloc/gpu.h — the GPUs of this machine, behind one interface.
 *
 * collocd's monitor and `colloc gpus` see GPUs through a backend: a table of
 * function pointers (struct colloc_gpu_backend_ops) chosen by name from a
 * static list compiled into libcolloc: "sim", simulated GPUs in a state
 * file (colloc/simgpu.h), and "nvml", NVIDIA's GPUs through
 * libnvidia-ml.so.1 loaded with dlopen() at run time (and, when present,
 * libdcgm for profiling metrics; docs/gpu-backends.md). libcolloc links no
 * NVIDIA software, so it builds and starts on any machine. "auto" is not a
 * backend but a choice between them: colloc_gpu_open_auto(). This module is
 * not a scheduler and never decides anything: it opens a backend and reports
 * what the backend sees.
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

/* A profiling ratio the backend cannot measure (no DCGM): never 0. */
#define COLLOC_GPU_METRIC_ABSENT (-1.0)

/*
 * One GPU as its backend sees it now. A figure the backend cannot measure
 * is -1 (util_pct, power_mw, energy_mj, mig_mode, mem_reserved_bytes) or
 * COLLOC_GPU_METRIC_ABSENT (the DCGM ratios): absent is never reported as
 * 0. colloc_gpu_info_init() sets every figure absent.
 */
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
	/* 1 MIG on, 0 off (or the GPU cannot do MIG), -1 unknown. With MIG
	 * on, the GPU's memory is split into colloc_gpu_mig_instances(). */
	int mig_mode;
	/* Memory the driver and firmware set aside, in neither used nor free
	 * (NVML's v2 memory query: total = used + free + reserved); -1 when
	 * the backend cannot tell it apart, and then it is counted in used. */
	int64_t mem_reserved_bytes;
	/* DCGM profiling ratios, 0..1, averaged over DCGM's last update
	 * period (about a second), or COLLOC_GPU_METRIC_ABSENT. */
	double gr_engine_active; /* DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001) */
	double sm_active; /* DCGM_FI_PROF_SM_ACTIVE (1002) */
	double sm_occupancy; /* DCGM_FI_PROF_SM_OCCUPANCY (1003) */
	double tensor_active; /* DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (1004) */
	double dram_active; /* DCGM_FI_PROF_DRAM_ACTIVE (1005) */
};

/* One MIG device (a GPU instance with a compute instance) of a GPU in MIG
 * mode. Sizes are what the driver reports for the instance, never derived
 * from the profile name. */
struct colloc_gpu_mig_instance {
	/* "MIG-8-4-4-4-12 hex": what CUDA_VISIBLE_DEVICES takes. */
	char uuid[COLLOC_GPU_UUID_MAX];
	/* The driver's name, e.g. "NVIDIA A100-SXM4-40GB MIG 1g.5gb": for
	 * people only. */
	char name[COLLOC_GPU_NAME_MAX];
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes;
	uint64_t mem_free_bytes;
	unsigned gi_id; /* GPU instance id */
	unsigned ci_id; /* compute instance id within the GPU instance */
	unsigned index; /* the backend's MIG device index under the GPU */
};

/* A process holding memory on a GPU. */
struct colloc_gpu_process {
	int64_t pid; /* in the backend's pid namespace */
	uint64_t used_bytes; /* 0 when the driver cannot say */
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
	/* Optional (NULL: the backend knows no MIG): as processes, for the MIG
	 * devices of GPU index; *n = 0 when MIG is off or unsupported. */
	int (*mig_instances)(void *backend, unsigned index,
			     struct colloc_gpu_mig_instance *out, size_t cap, size_t *n,
			     struct colloc_diag *diag);
	/* Optional: one line for people on what the backend found (library,
	 * driver, optional parts on or off and why), written into buf. */
	void (*describe)(void *backend, char *buf, size_t len);
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
 * for the sim backend's arguments), or "nvml" (no arguments; the
 * environment variables COLLOC_NVML_LIBRARY and COLLOC_DCGM_LIBRARY choose
 * the libraries, docs/gpu-backends.md). "auto" is
 * colloc_gpu_open_auto("sim:4x40GiB", ...) and "auto:SPEC" is
 * colloc_gpu_open_auto(SPEC, ...), the note dropped.
 * On success *out is a new handle. Returns 0, COLLOC_ENOTFOUND for an
 * unknown backend or a missing library, COLLOC_EUSAGE for bad arguments,
 * or what the backend's open returns; *out is untouched then.
 */
int colloc_gpu_open(const char *spec, struct colloc_gpu **out, struct colloc_diag *diag);

/*
 * Open NVIDIA's GPUs through "nvml" when this machine has them, else the
 * backend fallback_spec names (e.g. "sim:4x40GiB"): when libnvidia-ml.so.1
 * is missing, nvmlInit fails or NVML sees no GPU. note (note_len bytes,
 * may be NULL when note_len is 0) receives one line for people saying
 * which was opened and why, e.g. "no NVIDIA driver (libnvidia-ml.so.1:
 * cannot open shared object file: No such file or directory); using
 * simulated GPUs sim:4x40GiB". fallback_spec NULL means no fallback: the
 * nvml failure is returned. fallback_spec must not itself be "auto".
 * Returns 0 and *out as colloc_gpu_open(), or the error of the last
 * backend tried.
 */
int colloc_gpu_open_auto(const char *fallback_spec, struct colloc_gpu **out, char *note,
			 size_t note_len, struct colloc_diag *diag);

/* Close gpu; NULL is a no-op. */
void colloc_gpu_close(struct colloc_gpu *gpu);

/* The name of gpu's backend ("sim"); valid while gpu is open. */
const char *colloc_gpu_backend_name(const struct colloc_gpu *gpu);

/* Number of GPUs the backend sees. */
int colloc_gpu_count(struct colloc_gpu *gpu, unsigned *n, struct colloc_diag *diag);

/* Set every figure of info absent (-1 or COLLOC_GPU_METRIC_ABSENT) and
 * every string and byte count empty: what a backend fills from. */
void colloc_gpu_info_init(struct colloc_gpu_info *info);

/*
 * State of GPU index (0 .. count-1); COLLOC_EUSAGE for a bad index.
 * -ENODEV when the GPU has fallen off the bus (the message names its index
 * and UUID): mark it unusable; the other GPUs keep answering. Other driver
 * failures are -EIO with the driver call and its error in diag.
 */
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
 * MIG devices of GPU index: fills out[0 .. min(cap, *n)) and sets *n to how
 * many there are; *n = 0 when MIG is off, unsupported or unknown to the
 * backend. Errors as colloc_gpu_info().
 */
int colloc_gpu_mig_instances(struct colloc_gpu *gpu, unsigned index,
			     struct colloc_gpu_mig_instance *out, size_t cap, size_t *n,
			     struct colloc_diag *diag);

/* One line for people on what gpu's backend found, e.g. "NVML (driver
 * 550.54.15), 8 GPUs; DCGM profiling metrics: on (libdcgm.so.4, embedded)";
 * "" when the backend has nothing to add. Truncated to len. */
void colloc_gpu_describe(struct colloc_gpu *gpu, char *buf, size_t len);

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
