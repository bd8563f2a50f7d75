/*
 * daemon.h — collocd's core: the jobs it holds, the GPUs it watches, and
 * every change of state between them.
 *
 * The core owns the store, the GPU backend and the supervisors it launched.
 * It is driven from outside by the event loop (server.h): API requests call
 * the cd_daemon_* operations below; the loop calls cd_daemon_reap() when a
 * child exits and cd_daemon_tick() when the sampling interval has passed or
 * something changed. Placement itself is colloc_sched_decide() (sched.h),
 * fed with the GPUs' last sample and the jobs' needs; the core only turns
 * its decisions into launches.
 *
 * Every change is committed to the store before it is acted on or answered,
 * so that a daemon killed at any point restarts into a consistent state:
 * queued jobs stay queued, running jobs keep running under their
 * supervisors and are adopted again, jobs that ended while the daemon was
 * down are finished from their supervisors' status files.
 *
 * Ownership: cd_daemon_create() returns a handle freed by
 * cd_daemon_destroy(); records handed out are caller-owned copies.
 */
#ifndef COLLOC_DAEMON_DAEMON_H
#define COLLOC_DAEMON_DAEMON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/gpu.h"
#include "daemon/config.h"
#include "daemon/job.h"
#include "daemon/store.h"

struct cd_daemon;

/*
 * The core's time, handed in by its caller (the event loop, or a test):
 * mono_ms is CLOCK_MONOTONIC in ms and times every duration (start-up
 * reservations, starvation, sampling); wall_ms is the wall clock in ms
 * since the epoch and is only recorded and shown (submit/start/end times,
 * events). The core reads no clock of its own for its decisions, so a step
 * of the wall clock moves no reservation or timeout.
 */
struct cd_now {
	int64_t mono_ms;
	int64_t wall_ms;
};

/* The clocks as they read now, for callers that have no time of their own. */
struct cd_now cd_now_read(void);

/* Set the core's time for the operations that follow (submit, cancel,
 * reap, tick). Time never goes back: an earlier mono_ms is ignored. */
void cd_daemon_set_now(struct cd_daemon *d, struct cd_now now);

/* Who is calling, from the socket's peer credentials. */
struct cd_peer {
	uint32_t uid;
	uint32_t gid;
	int64_t pid;
};

/* A validated submit request (api.c builds it from JSON). */
struct cd_submit {
	char name[CD_NAME_MAX]; /* "" = base name of argv[0] */
	int n_gpus;
	int priority;
	uint64_t mem_bytes; /* 0 = not given */
	char mem_source[CD_SOURCE_MAX]; /* "request" or "estimate" */
	double util; /* < 0 = not given */
	/* The CLI's graph prediction (util_graph): < 0 = not given. */
	double graph_gpu_util; /* NVML utilization.gpu scale */
	double graph_sm_activity; /* DCGM SM activity scale */
	char graph_platform[CD_PLATFORM_MAX]; /* "" = not named */
	char model[CD_MODEL_MAX];
	char cwd[CD_PATH_MAX];
	char *argv_json; /* owned, normalised JSON array of strings */
	char *env_json; /* owned */
	bool exclusive;
	char idem_key[CD_IDEM_MAX]; /* the client's Idempotency-Key, "" = none */
	int64_t time_limit_ms; /* 0 = none */
	bool hold; /* queued held: not started until released */
	int n_deps;
	struct cd_dep deps[CD_DEPS_MAX]; /* met is false */
	/* An array: one job per index first..last (COLLOC_ARRAY_INDEX), at
	 * most array_max_running of them running at once (0: no limit). */
	bool array;
	int array_first, array_last, array_max_running;
};

void cd_submit_fini(struct cd_submit *s);

/*
 * Open the store and the GPU backend named by cfg at time now (the event
 * loop passes cd_now_read()), create state_dir/logs and
 * state_dir/status, and recover: adopt running jobs whose supervisors live,
 * finish those whose supervisors have ended. log (may be NULL) receives one
 * line per notable event ("job 7 started on GPU 0 (SIM-...)"); the daemon's
 * main prints them to stderr. Returns 0 and *out, or a negative code.
 */
int cd_daemon_create(const struct cd_config *cfg, struct cd_now now,
		     void (*log)(const char *line), struct cd_daemon **out,
		     struct colloc_diag *diag);

void cd_daemon_destroy(struct cd_daemon *d);

const struct cd_config *cd_daemon_config(const struct cd_daemon *d);
const char *cd_daemon_backend(const struct cd_daemon *d);
unsigned cd_daemon_gpu_count(const struct cd_daemon *d);
struct cd_store *cd_daemon_store(struct cd_daemon *d);

/* Whether peer may see and cancel every job: root, or a member of the
 * configured admin group. */
bool cd_daemon_is_admin(struct cd_daemon *d, const struct cd_peer *peer);

/* Whether peer may use this daemon at all: a non-root daemon serves only
 * its own uid. */
bool cd_daemon_may_use(const struct cd_daemon *d, const struct cd_peer *peer);

/*
 * Queue a job for peer. Works out its memory need (request / estimate,
 * then history, then default) and predicted activity (request, then the
 * measured mean of earlier runs, then the graph prediction on the scale
 * the scheduler measures: SM activity where DCGM gives it, else NVML
 * utilization; then default_util), commits it with both sources and
 * writes the new record into *job. An array (req->array) is one job per
 * index, committed together in one transaction with consecutive ids; *job
 * is the first. Dependencies must name jobs peer may see. Returns 0,
 * CD_SUBMIT_REPLAYED (below), or a negative code with the reason (a need
 * that no GPU could ever hold, or an unknown dependency, is COLLOC_EUSAGE).
 */
int cd_daemon_submit(struct cd_daemon *d, const struct cd_peer *peer,
		     const struct cd_submit *req, struct cd_job *job,
		     struct colloc_diag *diag);

/* An operation that the job's state does not allow (releasing a job that
 * is not held, updating a running one): HTTP 409. */
#define CD_ECONFLICT (-EALREADY)

/* A per-user cap (user_max_queued in collocd.conf) would be passed: HTTP
 * 429, with the cap and how to change it. */
#define CD_EQUOTA (-EDQUOT)

/*
 * Hold (hold true) or release job id on behalf of peer: a held queued job
 * is not started until it is released. Only queued jobs can be held;
 * CD_ECONFLICT (with why) otherwise, or when releasing one not held.
 */
int cd_daemon_hold(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		   bool hold, struct cd_job *job, struct colloc_diag *diag);

/*
 * Put job id back in the queue: a finished job at once (attempts, its
 * submit time and priority kept; exit status and end cleared), a running
 * one through its supervisor, as a cancel, and queued again when it has
 * ended. CD_ECONFLICT for a job that is queued already or being stopped.
 */
int cd_daemon_requeue(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		      struct cd_job *job, struct colloc_diag *diag);

/* What `colloc update` changes on a queued job. */
struct cd_update {
	uint64_t mem_bytes; /* 0 = unchanged; else the new need, source request */
	bool have_priority;
	int priority;
};

/*
 * Change a queued job's memory need or priority. COLLOC_EUSAGE for a need
 * no GPU could hold (as at submit), CD_ECONFLICT when it is not queued.
 */
int cd_daemon_update(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		     const struct cd_update *u, struct cd_job *job,
		     struct colloc_diag *diag);

/* cd_daemon_submit()'s answer when req->idem_key names a job peer already
 * submitted: *job is that job, nothing new is queued (a client's retry of a
 * submit whose reply it never got). */
#define CD_SUBMIT_REPLAYED 1

/*
 * Cancel job id on behalf of peer: a queued job at once, a running one
 * through its supervisor. COLLOC_ENOTFOUND when peer may not see it,
 * COLLOC_EUSAGE when it has already ended. *job receives its new record.
 */
int cd_daemon_cancel(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		     struct cd_job *job, struct colloc_diag *diag);

/* Job id as peer may see it (COLLOC_ENOTFOUND otherwise). */
int cd_daemon_get(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		  struct cd_job *job, struct colloc_diag *diag);

/* The path of job id's log file (it may not exist yet). */
int cd_daemon_log_path(struct cd_daemon *d, uint64_t id, char *buf, size_t len,
		       struct colloc_diag *diag);

/* The last sample of GPU index, what the scheduler holds back on it, and
 * the ids of the running jobs on it (up to cap; *n_jobs gets the count). */
int cd_daemon_gpu(struct cd_daemon *d, unsigned index, struct colloc_gpu_info *info,
		  uint64_t *reserved_bytes, uint64_t *jobs, size_t cap, size_t *n_jobs,
		  struct colloc_diag *diag);

/* The processes on GPU index, in its last sample, that belong to no job
 * collocd runs: up to CD_UNOWNED_MAX of them in procs (cap at least that),
 * *n all of them, *bytes their memory summed. COLLOC_ENOTFOUND for a bad
 * index. Their memory is part of the GPU's used memory, which placement
 * already subtracts. */
#define CD_UNOWNED_MAX 16
int cd_daemon_gpu_unowned(const struct cd_daemon *d, unsigned index,
			  struct colloc_gpu_process *procs, size_t *n, uint64_t *bytes);

/* Whether the last sample of GPU index succeeded (false for a bad index):
 * a GPU that cannot be read is not scheduled on, and its other figures are
 * those of the last sample that worked. */
bool cd_daemon_gpu_up(const struct cd_daemon *d, unsigned index);

/*
 * What the last sample saw of running job id: for each of its GPUs (at most
 * cap), the GPU's index (-1 when that GPU is gone) in gpus[] and the memory
 * the job's processes held on it in used_bytes[]. Returns the number of
 * GPUs the job runs on (may exceed cap), or COLLOC_ENOTFOUND when the daemon
 * tracks no run of id (queued, ended, or not yet launched).
 */
int cd_daemon_job_usage(const struct cd_daemon *d, uint64_t id, int *gpus,
			uint64_t *used_bytes, int cap);

/* Scheduling passes since cd_daemon_create(), and the time they took
 * (monotonic clock, wall time of the whole pass: store reads, decision,
 * launches). */
struct cd_sched_counters {
	uint64_t passes;
	double total_s;
	double last_s; /* of the latest pass; 0 before the first */
};

void cd_daemon_sched_counters(const struct cd_daemon *d, struct cd_sched_counters *out);

/* Hand line to the log callback given to cd_daemon_create() (nothing when
 * there is none), so that the event loop logs where the daemon does. */
void cd_daemon_log(const struct cd_daemon *d, const char *line);

/*
 * Which jobs cd_daemon_stats() counts (GET /v1/stats?scope=, docs/api.md).
 * CD_STATS_START: the jobs this collocd has had in hand, those that had not
 * ended when it started (carried over from before a restart: queued, running
 * or found lost) and those submitted since; the utilization is its own
 * measurement over the same time. CD_STATS_STORE: every job the store holds,
 * also those that ended before this collocd started (back to the
 * retention); the utilization, which is not kept across restarts, is absent.
 */
enum cd_stats_scope {
	CD_STATS_START,
	CD_STATS_STORE,
};

/* What the server has done, over one scope (GET /v1/stats). */
struct cd_stats {
	enum cd_stats_scope scope;
	int64_t started_ms; /* wall clock when this collocd started */
	bool util_known; /* false for CD_STATS_STORE: the three below are 0 */
	double busy_s; /* time with at least one job running, sampled */
	double gpu_util_mean; /* time-weighted over busy_s and all GPUs, 0..1 */
	double mem_util_mean; /* the same for used / total memory */
	uint64_t jobs, queued, running, done, failed, cancelled;
	double makespan_s; /* first submit to last end (or now), 0 if no job */
	double mean_wait_s; /* submit to (last) start, over started jobs */
	double mean_jct_s; /* submit to end, over finished jobs */
	uint64_t shared_jobs; /* jobs whose (last) run overlapped another's
			       * on one of its GPUs */
	uint64_t oom_requeued; /* jobs re-queued after an OOM death */
	uint64_t oom_recovered; /* ... of which finished done */
	uint64_t lost; /* jobs whose end could not be recorded (in scope
			* CD_STATS_START: found lost by this collocd) */
};

/*
 * Fill out with what the daemon has done over scope, all jobs of every user,
 * read from the store. Returns 0, or negative with diag set (store failure,
 * -ENOMEM); out is then partly filled.
 */
int cd_daemon_stats(struct cd_daemon *d, enum cd_stats_scope scope, struct cd_stats *out,
		    struct colloc_diag *diag);

/* Seconds since cd_daemon_create(). */
double cd_daemon_uptime_s(const struct cd_daemon *d);

/* One sample of one GPU in the monitor's history. */
struct cd_gpu_sample {
	int64_t ts_ms; /* wall clock */
	uint64_t mem_used_bytes;
	int util_pct; /* -1: absent */
	double sm_active; /* -1: absent */
	int64_t power_mw; /* -1: absent */
	bool up; /* false: the GPU did not answer (figures are the last good) */
};

#define CD_HISTORY_MAX 3600 /* samples kept per GPU: an hour at 1 s */

/*
 * The monitor's history of GPU index, oldest first: copies up to cap of the
 * most recent samples into out and sets *n. COLLOC_ENOTFOUND for a bad
 * index.
 */
int cd_daemon_gpu_history(const struct cd_daemon *d, unsigned index,
			  struct cd_gpu_sample *out, size_t cap, size_t *n);

/* What jobs are placed on: whole GPUs, and the MIG instances of GPUs in
 * MIG mode, as of the last sample. */
struct cd_slot_info {
	char uuid[COLLOC_GPU_UUID_MAX];
	unsigned gpu; /* the physical GPU */
	bool isolated; /* a MIG instance */
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes; /* total - free */
};

size_t cd_daemon_slot_count(const struct cd_daemon *d);
int cd_daemon_slot(const struct cd_daemon *d, size_t k, struct cd_slot_info *out);

/* Counts of queued and running jobs. */
void cd_daemon_counts(struct cd_daemon *d, size_t *queued, size_t *running);

/*
 * A child process exited (the loop calls this after waitpid()). Finishes
 * the job whose supervisor it was, if any.
 */
void cd_daemon_reap(struct cd_daemon *d, int64_t pid);

/*
 * Sample the GPUs if sample_ms has passed since the last sample (or force),
 * check adopted supervisors, and run a scheduling pass when something may
 * have changed, all at the time last set by cd_daemon_set_now(). Returns
 * the number of milliseconds until it wants to be called again.
 */
int64_t cd_daemon_tick(struct cd_daemon *d, bool force_sample);

/*
 * Take the settings of cfg that can change while collocd runs (policy,
 * headroom, util_bound, backfill, starve, sample_interval, admin_group,
 * default_mem, default_util, the OOM policy, kill_grace, reserve) and log, one line each,
 * those that differ but need a restart (gpus, socket, db, state_dir, sharing, mps_*,
 * metrics, allow_sim). The next pass uses the new settings. Returns how many changed
 * settings wait for a restart.
 */
int cd_daemon_reconfigure(struct cd_daemon *d, const struct cd_config *cfg);

/* Ask for a scheduling pass on the next tick (after a submit or an end). */
void cd_daemon_mark_dirty(struct cd_daemon *d);
bool cd_daemon_dirty(const struct cd_daemon *d);

#endif
