/*
 * job.h — a job as collocd keeps it: what was submitted, what it needs, where
 * it runs and how it ended. The record the store persists and the API shows.
 *
 * Not a scheduler type: the daemon turns queued and running jobs into
 * struct colloc_sched_job / colloc_sched_running for each pass.
 *
 * Ownership: struct cd_job is caller-owned. Its two heap strings (argv_json,
 * env_json) belong to it and are freed by cd_job_fini(); everything else is
 * inline with a fixed maximum size. cd_job_init() zeroes a record and sets
 * the "none" values (exit_code -1, graph predictions -1, ...).
 */
#ifndef COLLOC_DAEMON_JOB_H
#define COLLOC_DAEMON_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "colloc/gpu.h"
#include "colloc/jobs.h"
#include "colloc/sched.h"

#define CD_NAME_MAX 128
#define CD_USER_MAX 64
#define CD_PATH_MAX 4096
#define CD_REASON_MAX 512
#define CD_KEY_MAX 17 /* 16 hex digits + NUL */
#define CD_SOURCE_MAX 16
#define CD_MODEL_MAX 512
#define CD_PLATFORM_MAX 64 /* a platform profile's name (colloc/platform.h) */
/* "graph (" + a platform name + ")", or "request", "history", "default". */
#define CD_UTIL_SOURCE_MAX (CD_PLATFORM_MAX + 16)
/* A client's idempotency key: 1..64 of [A-Za-z0-9._:-] (docs/api.md). */
#define CD_IDEM_MAX 65

/* Dependencies a job may have (`submit --after`), and the largest array
 * one submit may make (`submit --array`). */
#define CD_DEPS_MAX 16
#define CD_ARRAY_MAX 1000
/* The longest time limit a job may ask for: one year. */
#define CD_TIME_LIMIT_MAX_MS ((int64_t)365 * 86400 * 1000)

/* Why collocd stopped a running job it was asked to stop (the job's
 * supervisor got SIGTERM, then SIGKILL): what its end becomes. The values
 * are stored: append only. */
enum cd_stop_cause {
	CD_STOP_CANCEL = 0, /* cancelled */
	CD_STOP_TIME_LIMIT, /* failed: it exceeded its time limit */
	CD_STOP_REQUEUE, /* queued again */
	CD_STOP_OVERUSE, /* queued again with its measured need: it used more
			  * than its need + headroom on a GPU it shared */
	CD_STOP_CAUSE_COUNT_
};

/* One dependency: job id must end (kind, colloc/jobs.h) first. */
struct cd_dep {
	uint64_t id;
	int kind; /* enum colloc_dep_kind */
	bool met; /* it has: no longer looked at */
};

/* collocd's names for the shared vocabulary (colloc/jobs.h), the one table
 * of states that the CLI reads too. */
enum cd_job_state {
	CD_JOB_QUEUED = COLLOC_JOB_QUEUED,
	CD_JOB_RUNNING = COLLOC_JOB_RUNNING,
	CD_JOB_DONE = COLLOC_JOB_DONE, /* exited 0 */
	CD_JOB_FAILED = COLLOC_JOB_FAILED, /* non-zero exit, signal, exec
					    * failure, OOM given up */
	CD_JOB_CANCELLED = COLLOC_JOB_CANCELLED,
	CD_JOB_STATE_COUNT_ = COLLOC_JOB_STATE_COUNT
};

/* A memory source's name (colloc/jobs.h) fits the record's field. */
_Static_assert(CD_SOURCE_MAX >= COLLOC_MEM_SOURCE_NAME_MAX,
	       "CD_SOURCE_MAX holds every memory source name");

/* colloc_job_state_name() and colloc_job_state_parse() (colloc/jobs.h),
 * under the names collocd's modules use. */
const char *cd_job_state_name(int state);
int cd_job_state_parse(const char *name);

/* True for done, failed and cancelled: colloc_job_state_final(). */
bool cd_job_state_final(int state);

struct cd_job {
	uint64_t id; /* 1, 2, ... assigned by the store; never reused */
	char name[CD_NAME_MAX]; /* user's --name, else argv[0]'s base name */
	uint32_t uid; /* submitting user, from the socket's peer credentials */
	uint32_t gid;
	char user[CD_USER_MAX]; /* user name at submit time */
	int state; /* enum cd_job_state */

	/* What it asks for. */
	int n_gpus; /* 1..COLLOC_SCHED_MAX_GPUS */
	int priority; /* higher first; default 0 */
	uint64_t mem_need_bytes; /* per GPU, what the scheduler gates on */
	char mem_source[CD_SOURCE_MAX]; /* "request", "estimate", "history",
					 * "default", "oom-retry" */
	double util_pred; /* predicted activity 0..1, what the scheduler uses */
	char util_source[CD_UTIL_SOURCE_MAX]; /* where util_pred came from:
					       * "request", "history",
					       * "graph (PLATFORM)", "default";
					       * "unknown" for jobs submitted
					       * before it was recorded */
	/* The graph prediction the CLI sent (colloc/perf.h), on both scales
	 * (NVML utilization.gpu and DCGM SM activity), whether or not it was
	 * chosen; < 0 when none was sent. */
	double graph_gpu_util;
	double graph_sm_activity;
	char graph_platform[CD_PLATFORM_MAX]; /* the profile it is for */
	char model[CD_MODEL_MAX]; /* model arguments as given, "" if none */
	char key[CD_KEY_MAX]; /* history key: same command, cwd, model */
	char idem_key[CD_IDEM_MAX]; /* the client's idempotency key, "" if none */

	/* What it runs: argv and environment as JSON arrays of strings. */
	char cwd[CD_PATH_MAX];
	char *argv_json; /* owned; ["cmd","arg",...] */
	char *env_json; /* owned; ["NAME=VALUE",...] */

	/* Where and how it runs. */
	int attempts; /* launches so far (an OOM retry adds one) */
	bool exclusive; /* must have its GPUs alone (after OOM retries) */
	int n_assigned; /* GPUs it runs on now or ran on last */
	char gpus[COLLOC_SCHED_MAX_GPUS][COLLOC_GPU_UUID_MAX]; /* their UUIDs */
	int64_t sup_pid; /* its supervisor while running, else 0 */
	uint64_t sup_start; /* the supervisor's start time (clock ticks
			     * since boot, /proc/PID/stat field 22): tells
			     * a live supervisor from a reused pid */
	int64_t job_pgid; /* the job's process group while running, else 0 */
	uint64_t peak_bytes; /* largest measured GPU memory, per GPU */
	double util_mean; /* mean measured activity while running, 0..1 */
	uint64_t util_samples; /* samples behind util_mean */
	bool cancel_requested; /* it is being stopped, see stop_cause */
	int stop_cause; /* enum cd_stop_cause, while cancel_requested */

	/* What it waits for, and how long it may run. */
	int64_t time_limit_ms; /* from the launch, monotonic; 0: none */
	bool held; /* `colloc hold`: not started until released */
	int n_deps;
	struct cd_dep deps[CD_DEPS_MAX];
	uint64_t array_id; /* the first job of its array; 0: not in one */
	int array_index; /* its index in the array (COLLOC_ARRAY_INDEX); -1 */
	int array_max_running; /* at most this many of the array run; 0: any */

	/* How it ended. */
	int exit_code; /* -1 while none */
	int term_signal; /* signal that killed it, 0 if none */
	char reason[CD_REASON_MAX]; /* why it failed / was re-queued */

	int64_t submit_ms; /* wall clock, ms since the epoch */
	int64_t start_ms; /* last launch, 0 if never */
	int64_t end_ms; /* 0 until final */
};

/* Zero job and set the "none" values; frees nothing. */
void cd_job_init(struct cd_job *job);

/* Free job's heap strings and cd_job_init() it again. NULL is a no-op. */
void cd_job_fini(struct cd_job *job);

/* Make dst a deep copy of src (dst's own strings are freed first; dst may
 * be src). Returns 0, or -1 out of memory with dst unchanged. */
int cd_job_copy(struct cd_job *dst, const struct cd_job *src);

/*
 * The history key of a job: 16 lowercase hex digits of a 64-bit FNV-1a hash
 * over argv_json, cwd and model (each followed by a NUL byte), so that
 * reruns of the same command in the same directory with the same model
 * arguments share measured peaks. Writes into key (CD_KEY_MAX bytes).
 */
void cd_job_history_key(const char *argv_json, const char *cwd, const char *model,
			char key[CD_KEY_MAX]);

#endif
