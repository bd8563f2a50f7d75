/*
 * colloc/simgpu.h — simulated GPUs shared by many processes through a state
 * file, for tests, demos and CI on machines without NVIDIA hardware.
 *
 * A state file describes N virtual GPUs (memory size each) and, per GPU, the
 * allocations of the processes using it: (pid, bytes, util_pct). collocd
 * sees them through the "sim" GPU backend (colloc/gpu.h); jobs such as
 * colloc-simjob allocate and release memory on them, so the daemon watches
 * the memory and utilization of real processes without a real GPU. This is
 * not a model of a GPU's speed or of CUDA: it is bookkeeping that behaves
 * like NVML's view of memory, utilization and per-process usage.
 *
 * The file is small text with a version header (docs/simjob.md shows it).
 * Every operation takes a whole-file fcntl() write lock (F_SETLKW), reads the
 * file, changes it and writes it back before unlocking, so processes never see
 * half an update. Entries of processes that no longer exist (kill(pid, 0)
 * fails with ESRCH) are dropped whenever the file is read: a job that crashes
 * frees its simulated memory. A zombie still exists, so its memory stays until
 * its parent reaps it, as with a real GPU context. POSIX record locks belong to
 * a process, not a thread: one process must not use a handle (or two handles
 * on one file) from several threads at once.
 *
 * Ownership: colloc_simgpu_create()/_attach() return a handle the caller owns
 * and frees with colloc_simgpu_close(). All out-parameters are caller-owned.
 *
 * A corrupt or foreign file is COLLOC_EFORMAT with "PATH:LINE: ..." in the
 * diagnostic; the library never repairs or deletes it.
 */
#ifndef COLLOC_SIMGPU_H
#define COLLOC_SIMGPU_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/gpu.h"

#define COLLOC_SIMGPU_MAX_GPUS 64
#define COLLOC_SIMGPU_MAX_PROCS 128 /* allocations per GPU */
#define COLLOC_SIMGPU_PATH_MAX 4096

/* The environment variable naming the state file. */
#define COLLOC_SIMGPU_ENV "COLLOC_SIM_STATE"

struct colloc_simgpu;

/*
 * The state file to use when none is given: $COLLOC_SIM_STATE, else
 * $XDG_RUNTIME_DIR/colloc-sim.state, else /tmp/colloc-sim-UID.state.
 * Returns 0, or COLLOC_ELIMIT when it does not fit in len bytes.
 */
int colloc_simgpu_default_path(char *buf, size_t len, struct colloc_diag *diag);

/*
 * Open the state file at path (NULL: the default path), creating it with
 * n_gpus GPUs of mem_bytes each when it does not exist or is empty. An
 * existing file with other GPUs is reshaped (its identity, hence the UUIDs,
 * kept) when no live process holds memory on it, and refused with
 * COLLOC_EUSAGE otherwise. n_gpus is 1..COLLOC_SIMGPU_MAX_GPUS and mem_bytes
 * > 0 (COLLOC_EUSAGE otherwise). Returns 0 and *out, or a negative code:
 * -errno when the file cannot be opened, COLLOC_EFORMAT when it is corrupt.
 */
int colloc_simgpu_create(const char *path, unsigned n_gpus, uint64_t mem_bytes,
			 struct colloc_simgpu **out, struct colloc_diag *diag);

/*
 * Open an existing, initialised state file (NULL: the default path), as a
 * job does. Returns 0 and *out; -ENOENT when there is none (the diagnostic
 * says how to make one), COLLOC_EFORMAT when it is corrupt or empty.
 */
int colloc_simgpu_attach(const char *path, struct colloc_simgpu **out,
			 struct colloc_diag *diag);

/* Close sim (its allocations stay in the file); NULL is a no-op. */
void colloc_simgpu_close(struct colloc_simgpu *sim);

/* The state file's path; valid while sim is open. */
const char *colloc_simgpu_path(const struct colloc_simgpu *sim);

/* Number of simulated GPUs. */
int colloc_simgpu_count(struct colloc_simgpu *sim, unsigned *n, struct colloc_diag *diag);

/*
 * State of GPU index, as NVML would report it: used = sum of the live
 * processes' bytes, util_pct = min(100, sum of their util_pct), power from
 * utilization (60 W idle to 300 W busy) and energy integrated over time.
 * The UUID is "SIM-" and 8-4-4-4-12 hex digits derived from the file's
 * identity (a random id written when it was created) and the index: stable
 * for the life of the file.
 */
int colloc_simgpu_info(struct colloc_simgpu *sim, unsigned index,
		       struct colloc_gpu_info *out, struct colloc_diag *diag);

/* Live processes on GPU index, as colloc_gpu_processes(). */
int colloc_simgpu_processes(struct colloc_simgpu *sim, unsigned index,
			    struct colloc_gpu_process *procs, size_t cap, size_t *n,
			    struct colloc_diag *diag);

/*
 * The index of the GPU that id names: its UUID (case-insensitive) or a
 * decimal index, as CUDA_VISIBLE_DEVICES entries are written. Returns 0, or
 * COLLOC_ENOTFOUND.
 */
int colloc_simgpu_find(struct colloc_simgpu *sim, const char *id, unsigned *index,
		       struct colloc_diag *diag);

/*
 * Allocate bytes more on GPU index for process pid (> 0) and set that
 * process's utilization there to util_pct (0..100). Like cudaMalloc, it
 * fails as a whole: -ENOMEM when the GPU has less than bytes free (nothing
 * changes; the diagnostic gives the free memory), COLLOC_ELIMIT when the GPU
 * already has COLLOC_SIMGPU_MAX_PROCS processes.
 */
int colloc_simgpu_alloc(struct colloc_simgpu *sim, unsigned index, int64_t pid,
			uint64_t bytes, unsigned util_pct, struct colloc_diag *diag);

/* Free everything process pid holds on GPU index (nothing held is fine). */
int colloc_simgpu_release(struct colloc_simgpu *sim, unsigned index, int64_t pid,
			  struct colloc_diag *diag);

/*
 * The "sim" backend's arguments, what follows "sim:" in a GPU spec:
 *   ""                      attach to the state file at the default path
 *   "NxSIZE"                N GPUs of SIZE (colloc_parse_size) each
 *   "NxSIZE,path=FILE"      the same in FILE; path= takes the rest of the
 *   "path=FILE"             spec, commas included
 * Fills *n_gpus and *mem_bytes (both 0 when not given) and path (""
 * when not given). Returns 0 or COLLOC_EUSAGE / COLLOC_ELIMIT.
 */
int colloc_simgpu_parse_args(const char *args, unsigned *n_gpus, uint64_t *mem_bytes,
			     char *path, size_t path_len, struct colloc_diag *diag);

#endif
