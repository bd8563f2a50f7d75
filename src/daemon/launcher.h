/*
 * launcher.h — start a job under a supervisor that outlives the daemon, and
 * read back how it ended.
 *
 * cd_launch() forks a supervisor. The supervisor leaves the daemon's session
 * (setsid), closes every descriptor it inherited, and forks the job: in its
 * own process group, as the submitting user (a root daemon sets supplementary
 * groups, group and user; a non-root daemon runs jobs as itself and refuses
 * any other uid), in the submitted working directory, with exactly the
 * submitted environment plus CUDA_VISIBLE_DEVICES=<GPU UUIDs, comma
 * separated>, CUDA_DEVICE_ORDER=PCI_BUS_ID and the backend's extra entry
 * (colloc_gpu_job_env), stdout and stderr appended to the job's two log
 * files (created 0640 and given to the user). The job's command is looked up
 * in the PATH of the submitted environment.
 *
 * The supervisor then waits for the job and writes a status file (written to
 * a temporary name, fsynced and renamed, so a reader sees all or nothing):
 * exit code or signal, or the errno of a failed exec or set-up step with a
 * message ("cannot execute 'trian.py': No such file or directory"). It does
 * not depend on the daemon: if the daemon dies, the job runs on and its end
 * is still recorded. SIGTERM to the supervisor is forwarded to the job's
 * process group; if the group still lives kill_grace_ms later, it gets
 * SIGKILL. After the job ends, anything left in its process group is killed,
 * so no stray process keeps GPU memory.
 *
 * Not here: deciding what to launch (daemon), recognising OOM (oom.h).
 *
 * Ownership: all inputs are caller-owned and only read; nothing is retained
 * after cd_launch() returns. Only cd_launch() forks; it must be called from a
 * single-threaded process.
 */
#ifndef COLLOC_DAEMON_LAUNCHER_H
#define COLLOC_DAEMON_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

#define CD_LAUNCH_MAX_ARGS 4096
#define CD_LAUNCH_MAX_ENV 4096
#define CD_LAUNCH_MAX_EXTRA 8

struct cd_launch_spec {
	uint64_t job_id;
	const char *const *argv; /* NULL-terminated, argv[0] non-empty */
	const char *const *envp; /* NULL-terminated; may be empty */
	const char *cwd; /* absolute */
	uint32_t uid;
	uint32_t gid;
	const char *user; /* for initgroups() when the daemon is root */
	const char *cuda_visible_devices; /* "GPU-...,GPU-..." */
	const char *extra_env; /* "NAME=VALUE" or "" / NULL: the backend's */
	/* More "NAME=VALUE" entries the daemon sets (MPS), NULL-terminated,
	 * at most CD_LAUNCH_MAX_EXTRA; NULL for none. Like extra_env, each
	 * replaces a submitted entry of the same name. */
	const char *const *more_env;
	const char *stdout_path;
	const char *stderr_path;
	const char *status_path; /* written by the supervisor at the end */
	int64_t kill_grace_ms; /* SIGTERM -> SIGKILL delay on cancel, 0..1 day */
	/* in_cgroup: the supervisor moves itself into the cgroup whose
	 * cgroup.procs cgroup_fd is open on (cgroup.h) before it forks the
	 * job; the caller closes cgroup_fd after cd_launch(). */
	bool in_cgroup;
	int cgroup_fd;
};

struct cd_launch_result {
	int64_t sup_pid; /* the supervisor */
	uint64_t sup_start; /* its start time, /proc/PID/stat field 22 */
	int64_t job_pgid; /* the job's process group (= the job's pid) */
	uint64_t stdout_offset; /* log sizes before this attempt wrote */
	uint64_t stderr_offset;
};

/*
 * Fork the supervisor, which forks the job, and wait (at most 5 s) for the
 * supervisor to report the job's pid. Returns 0 and *res once the job
 * process exists — a command that then fails to exec is reported through
 * the status file, not here. Returns a negative code when nothing could be
 * started (fork failure, a log file that cannot be opened, a non-root daemon
 * asked for another uid: COLLOC_EUSAGE); no process is left behind then.
 * A status file already at status_path (an earlier attempt's) is removed
 * before the supervisor starts. The supervisor exits 0 once it has written
 * the status file, non-zero when it could not.
 */
int cd_launch(const struct cd_launch_spec *spec, struct cd_launch_result *res,
	      struct colloc_diag *diag);

/*
 * Exactly-once launches. Before forking, cd_launch() makes an intent file
 * beside the status file (STATUS.launch); the supervisor claims it, before
 * the job exists, by writing "PID START_TICKS" into it and renaming it to
 * STATUS.sup (removed again once the status file is written). A daemon that
 * restarts and finds a job it had marked running without knowing its
 * supervisor calls cd_launch_reconcile(), which first tries to revoke the
 * intent: rename and unlink are atomic, so either the revocation wins and no
 * supervisor will ever run the job (re-queue it), or the claim won and the
 * claim names the supervisor (adopt it, or finish the job if that process
 * is gone).
 */
enum cd_launch_claim {
	CD_LAUNCH_NONE = 0, /* neither intent nor claim: never forked */
	CD_LAUNCH_REVOKED, /* the intent was there and is revoked now */
	CD_LAUNCH_CLAIMED, /* *sup_pid / *sup_start claimed it */
};

/* Reconcile the launch of the job whose status file is status_path; returns
 * an enum cd_launch_claim, or a negative code (an unreadable claim). */
int cd_launch_reconcile(const char *status_path, int64_t *sup_pid, uint64_t *sup_start,
			struct colloc_diag *diag);

enum cd_status_kind {
	CD_STATUS_EXITED = 0, /* code holds the exit status */
	CD_STATUS_SIGNALED, /* code holds the signal number */
	CD_STATUS_SETUP_FAILED, /* code holds the errno; message says what */
};

struct cd_status {
	int kind; /* enum cd_status_kind */
	int code;
	int64_t job_pid;
	int64_t start_ms; /* wall clock when the job was forked */
	int64_t end_ms; /* wall clock when it was reaped */
	uint64_t stdout_offset; /* as in cd_launch_result */
	uint64_t stderr_offset;
	char message[512]; /* set-up failure, else "" */
};

/*
 * Read the status file at path. Returns 0 and *st; -ENOENT when the
 * supervisor has not written it (yet); COLLOC_EFORMAT with "PATH:LINE: ..."
 * when it is not a status file. Bounded: files over 8 KiB are refused.
 */
int cd_status_read(const char *path, struct cd_status *st, struct colloc_diag *diag);

/* Parse a status file's bytes (the part of cd_status_read after reading;
 * exposed for the fuzz target). name is used in messages. */
int cd_status_parse(const char *buf, size_t len, const char *name, struct cd_status *st,
		    struct colloc_diag *diag);

/*
 * Whether the supervisor pid started at start_ticks is still running: its
 * /proc entry exists, is not a zombie, and has that start time (a pid reused
 * by another process is not alive).
 */
bool cd_supervisor_alive(int64_t pid, uint64_t start_ticks);

/* The start time (field 22 of /proc/PID/stat) of pid, or 0 when gone. */
uint64_t cd_process_start_ticks(int64_t pid);

/*
 * Ask the supervisor (pid, start_ticks) to stop its job: SIGTERM, which it
 * forwards (then SIGKILL after the grace period). Returns 0, or -ESRCH when
 * that supervisor no longer runs.
 */
int cd_supervisor_cancel(int64_t pid, uint64_t start_ticks, struct colloc_diag *diag);

/* The session id of pid (getsid), or -1 when it is gone; jobs run in their
 * supervisor's session, so this maps a GPU process to its job. */
int64_t cd_process_session(int64_t pid);

/*
 * SIGKILL every process left in session sid, the session of a supervisor
 * that died without recording its job's end: the job itself dies with its
 * supervisor (PR_SET_PDEATHSIG), what it started in the background does
 * not. Returns how many were killed, or a negated errno. Only for a
 * supervisor's session (sid = its pid); 0 and 1 are refused.
 */
int cd_session_kill(int64_t sid);

#endif
