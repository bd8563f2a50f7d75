/*
 * daemon_int.h — what the parts of collocd's core share (daemon.h is their
 * contract with the rest of collocd):
 *
 *   daemon.c    life cycle, accessors, the log and the event journal, the
 *               core's time and its in-memory view of the active jobs
 *   intake.c    submit, cancel, get: what users ask for
 *   monitor.c   GPU samples, the slots jobs are placed on, running-job
 *               statistics, reservations, server statistics
 *   finish.c    a supervisor's end, reaping, recovery after a restart
 *   schedule.c  the scheduling pass (held jobs, unmet dependencies and
 *               full arrays left out) and launches; the tick
 *   limits.c    time limits of running jobs and the retention of
 *               finished ones, both checked from the tick
 *
 * Time. The core never reads a clock for its decisions: the event loop (or
 * a test) hands it one "now" per step with cd_daemon_set_now() — monotonic
 * milliseconds for every duration (start-up reservations, starvation,
 * sampling, busy time), wall-clock milliseconds only for what is shown or
 * stored for people (submit/start/end times, events, history). A step of
 * the wall clock therefore moves no reservation and no timeout.
 *
 * Jobs. Queued and running jobs live in memory (d->act, sorted by id), with
 * the store as their write-through journal: every change is committed to
 * SQLite first and copied into memory only when the commit succeeded
 * (cd__journal), so memory never holds what a restart would not find.
 * Finished jobs leave memory; API reads of single jobs and lists still go
 * to the store, which holds every job.
 */
#ifndef COLLOC_DAEMON_DAEMON_INT_H
#define COLLOC_DAEMON_DAEMON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "colloc/gpu.h"
#include "colloc/sched.h"
#include "daemon/cgroup.h"
#include "daemon/daemon.h"

#define MAX_PROCS 256 /* processes read per GPU per sample */
#define MAX_MIG 16 /* instances read per GPU (A100/H100/H200 have <= 7) */

/* What the monitor knows of a running job between samples. */
struct run_stat {
	uint64_t id;
	int64_t sup_pid;
	int n_gpus;
	int gpus[COLLOC_SCHED_MAX_GPUS]; /* slot indices, -1 when gone */
	char uuid[COLLOC_SCHED_MAX_GPUS][COLLOC_GPU_UUID_MAX]; /* of the slots */
	uint64_t used_bytes[COLLOC_SCHED_MAX_GPUS]; /* last sample */
	uint64_t peak_bytes;
	double util_sum;
	uint64_t util_n;
	uint64_t need_bytes; /* per GPU, fixed while it runs */
	/* Monotonic: when its start-up reservation began (the launch, or
	 * the adoption after a restart: the reservation is held anew rather
	 * than trusted to a clock of the earlier process). */
	int64_t start_mono_ms;
	/* Monotonic: when its time limit started counting, the launch (or,
	 * after a restart, the launch as the wall clock dates it: the
	 * limit is not restarted by an adoption). */
	int64_t limit_start_mono_ms;
	bool log_capped; /* its log was cut back (log_max): read it whole */
};

/*
 * What the scheduler places jobs on: a whole GPU, or one MIG instance of a
 * GPU in MIG mode (CUDA cannot use such a GPU whole). Rebuilt from every
 * sample, in GPU order.
 */
struct slot {
	char uuid[COLLOC_GPU_UUID_MAX]; /* what CUDA_VISIBLE_DEVICES gets */
	unsigned gpu; /* the physical GPU */
	bool isolated; /* a MIG instance */
	uint64_t total_bytes;
	uint64_t used_bytes; /* total - free: driver reservations count */
};

/* A queued or running job as the core holds it. */
struct cd_active {
	struct cd_job job; /* as last committed */
	int64_t submit_mono_ms; /* its submit time on the monotonic clock */
};

/* Jobs' cgroups killed whose removal waits for their processes to exit. */
#define CD_CGROUP_PENDING 64

/* Per GPU: the processes of its last sample that no job collocd runs
 * owns (a job's escaped leftovers, someone's process started outside
 * collocd). Their memory is in the GPU's used memory, so placement counts
 * it already; this is what is reported (API, `colloc gpus`, metrics). */
struct cd_unowned {
	size_t n; /* processes, all of them */
	uint64_t bytes; /* their memory, summed */
	struct colloc_gpu_process procs[CD_UNOWNED_MAX]; /* the first n */
	int64_t logged[CD_UNOWNED_MAX]; /* the last pids logged, a ring */
	size_t n_logged; /* logged in all */
};

struct cd_daemon {
	struct cd_config cfg;
	void (*log)(const char *line);
	struct cd_store *store;
	struct colloc_gpu *gpu;
	char backend[32];
	char job_env[CD_PATH_MAX + 64];
	unsigned n_gpus;
	struct colloc_gpu_info *info; /* last sample, per GPU */
	bool *gpu_ok; /* false: the last query of that GPU failed */
	struct cd_unowned *unowned; /* per GPU, from the last sample */
	struct colloc_gpu_process *procs; /* scratch, MAX_PROCS */
	struct slot *slots; /* what jobs are placed on */
	size_t n_slots, cap_slots;
	struct colloc_gpu_mig_instance *migs; /* scratch, MAX_MIG */
	struct cd_gpu_sample *hist; /* n_gpus rings of CD_HISTORY_MAX */
	size_t hist_next, hist_len; /* shared by all rings: one sample each */
	struct run_stat *runs;
	size_t n_runs, cap_runs;
	struct cd_active *act; /* queued and running jobs, by id */
	size_t n_act, cap_act;
	/* The pass's working arrays, kept between passes (grown, never
	 * shrunk): a pass over a deep queue allocates nothing. */
	struct colloc_sched_gpu *pass_gpus;
	struct colloc_sched_running *pass_running;
	struct colloc_sched_job *pass_queue;
	struct colloc_sched_decision *pass_dec;
	size_t pass_cap_gpus, pass_cap_jobs;
	char logs_dir[CD_PATH_MAX];
	char status_dir[CD_PATH_MAX];
	char mps_dir[CD_PATH_MAX]; /* sharing = mps: STATE/mps */
	bool mps_started;
	const char *activity_src; /* what gpu_activity() used last (static) */
	struct cd_now now; /* handed in by cd_daemon_set_now() */
	int64_t created_ms; /* monotonic */
	int64_t created_wall_ms; /* wall clock, the start of stats' default scope */
	int64_t last_sample_ms; /* monotonic; INT64_MIN: never */
	int rr_cursor;
	bool dirty;
	bool queued_left; /* the last pass left jobs waiting */
	int64_t prev_sample_ms; /* monotonic, of the sample before; 0: none */
	double busy_ms, util_ms, mem_ms; /* time-weighted sums while busy */
	struct cd_sched_counters sched; /* for /metrics */
	uid_t euid;
	/* Monotonic: the last retention sweep (limits.c); pruned_once false
	 * until the first, which the first tick makes. */
	int64_t last_prune_mono_ms;
	bool pruned_once;
	/* The state dir as it was opened, and whether it is still usable
	 * (cd__state_check): while it is not, nothing launches. */
	dev_t state_dev;
	ino_t state_ino;
	bool state_broken;
	char state_why[CD_PATH_MAX + 128];
	struct cd_cgroup cg; /* jobs' cgroups, when on (cgroup.h) */
	uint64_t cg_pending[CD_CGROUP_PENDING]; /* killed, not yet removed */
	size_t n_cg_pending;
};

/* daemon.c */

/* Look at the state dir (every sample): vanished, replaced, not writable
 * or full makes it broken — logged once with the cause, no launches until
 * it is usable again (a vanished or replaced one needs a restart). */
void cd__state_check(struct cd_daemon *d);

/* limits.c: cut back the logs of running jobs past log_max (at a sample:
 * it stats each running job's log). */
void cd__enforce_log_caps(struct cd_daemon *d);

/* finish.c: remove the killed jobs' cgroups that were still busy. */
void cd__cgroup_sweep(struct cd_daemon *d);
void cd__logf(struct cd_daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Store an event; a failure is logged, never fatal (the state change it
 * describes has been committed already). */
void cd__event(struct cd_daemon *d, uint64_t id, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void cd__status_path(const struct cd_daemon *d, uint64_t id, char *buf, size_t len);
/* The active record of job id, or NULL (not queued or running). */
struct cd_active *cd__active(struct cd_daemon *d, uint64_t id);
/* Commit job's new record, then make memory agree: a queued or running job
 * is (re)placed in d->act, a finished one leaves it. A failed commit is
 * logged (and put in diag, which may be NULL) and changes nothing in
 * memory. job must not point into d->act. */
int cd__journal(struct cd_daemon *d, const struct cd_job *job, struct colloc_diag *diag);
/* A job just inserted into the store joins d->act. */
int cd__active_add(struct cd_daemon *d, const struct cd_job *job, int64_t submit_mono_ms);

/* monitor.c */
struct run_stat *cd__run_find(struct cd_daemon *d, uint64_t id);
struct run_stat *cd__run_add(struct cd_daemon *d, const struct cd_job *job);
void cd__run_remove(struct cd_daemon *d, uint64_t id);
int cd__slot_index(const struct cd_daemon *d, const char *uuid);
uint64_t cd__largest_gpu(const struct cd_daemon *d);
/* Whether a running job holds no start-up reservation any more: it uses
 * its need, or reserve_ms have passed (monotonic) since it started. */
bool cd__at_peak(const struct cd_daemon *d, uint64_t need_bytes, int64_t start_mono_ms,
		 uint64_t used);
double cd__gpu_activity(const struct colloc_gpu_info *in, const char **src);
bool cd__activity_is_sm(const struct cd_daemon *d);
void cd__sample(struct cd_daemon *d);

/* finish.c */
void cd__finish(struct cd_daemon *d, const struct cd_job *job);
void cd__check_supervisors(struct cd_daemon *d);
void cd__recover(struct cd_daemon *d);

/* intake.c */
bool cd__may_see(struct cd_daemon *d, const struct cd_peer *peer,
		 const struct cd_job *job);
/* Clear what a run left (exit status, end, supervisor, stop request) from
 * a job going back to the queue. */
void cd__requeue_reset(struct cd_job *job);

/* limits.c */
/* Stop every running job past its time limit (through its supervisor,
 * as a cancel; it ends failed with the reason), and, once at the first
 * call and then daily, delete finished jobs older than cfg.retention_ms
 * with their logs. Called from every tick. */
void cd__enforce_limits(struct cd_daemon *d);
/* When running job j's time limit started counting (monotonic ms): its
 * launch, or for a job collocd took over, dated by the wall clock. */
int64_t cd__limit_start(struct cd_daemon *d, const struct cd_job *j);

/* schedule.c */
void cd__schedule(struct cd_daemon *d);

#endif
