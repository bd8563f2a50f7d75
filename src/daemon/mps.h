/*
 * mps.h — CUDA MPS for collocd's `sharing = mps` mode: one MPS control
 * daemon per GPU, each with its own pipe and log directories, and the
 * environment that puts a job under it with limits of its own.
 *
 * Under MPS, the kernels of the jobs on a GPU run concurrently instead of
 * time-sliced, and each job (MPS client) can be held to a share of the SMs
 * (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and to a pinned device-memory limit
 * (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): a job that outgrows its estimate then
 * fails alone with an out-of-memory error instead of taking its neighbours
 * down. Both variables are read by the CUDA driver when the client starts
 * (NVIDIA's "Multi-Process Service" guide, sections "Environment Variables"
 * and "Per-Client Device Memory Limit").
 *
 * Not here: choosing a job's GPU (sched), starting the job
 * (launcher). The control program is run as a child process and waited for;
 * nothing here touches the GPU itself.
 *
 * Ownership: everything is caller-owned; nothing is retained.
 */
#ifndef COLLOC_DAEMON_MPS_H
#define COLLOC_DAEMON_MPS_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

#define CD_MPS_ENV_MAX 3 /* variables a job gets */
#define CD_MPS_ENV_LEN 4200 /* one "NAME=VALUE", a pipe path included */

/* Where GPU uuid's MPS daemon keeps its pipes and logs under base
 * ("BASE/UUID/pipe", "BASE/UUID/log"). Returns 0 or COLLOC_ELIMIT. */
int cd_mps_dirs(const char *base, const char *uuid, char *pipe_dir, char *log_dir,
		size_t len, struct colloc_diag *diag);

/*
 * Start the MPS control daemon for GPU uuid: create the two directories,
 * then run `CONTROL -d` with CUDA_VISIBLE_DEVICES=uuid,
 * CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY set, and wait for it
 * (at most timeout_ms; -d daemonises and returns at once). A control daemon
 * already running on that pipe directory is left as it is (0). Returns 0,
 * or a negative code with CONTROL's exit status or the exec error in diag.
 */
int cd_mps_start(const char *control, const char *base, const char *uuid,
		 int64_t timeout_ms, struct colloc_diag *diag);

/* Stop it: write "quit" to `CONTROL` on its pipe directory and wait. */
int cd_mps_stop(const char *control, const char *base, const char *uuid,
		int64_t timeout_ms, struct colloc_diag *diag);

/*
 * The environment a single-GPU job needs to run as a client of GPU uuid's
 * MPS daemon, written into env[0..*n):
 *   CUDA_MPS_PIPE_DIRECTORY=BASE/UUID/pipe
 *   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=P  P = thread_pct when > 0, else the
 *       job's predicted activity as a percentage, rounded up, clamped to
 *       10..100 (a share of SMs in line with what it was packed for)
 *   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=NM  N = (need + headroom) in MiB,
 *       rounded up; device 0 is the job's only visible device
 * Returns 0 or COLLOC_ELIMIT.
 */
int cd_mps_job_env(const char *base, const char *uuid, double util_pred, int thread_pct,
		   uint64_t need_bytes, uint64_t headroom_bytes,
		   char env[][CD_MPS_ENV_LEN], size_t *n, struct colloc_diag *diag);

#endif
