/*
 * finish.c — the end of a run: a supervisor's status read back into the
 * job's outcome (done, failed, cancelled, re-queued after an OOM), reaping,
 * and recovery after a restart (daemon_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/units.h"
#include "daemon/daemon_int.h"
#include "daemon/launcher.h"
#include "daemon/oom.h"

#define OOM_SCAN_BYTES (256u << 10) /* tail of a log searched for markers */
/* Samples a run needs before its mean activity counts as history for the
 * next run of the same job: fewer saw its start-up, not its training. */
#define UTIL_HISTORY_MIN_SAMPLES 3

/* Needs are asked for in whole 256 MiB, as after an OOM (oom.h). */
#define NEED_ROUND ((uint64_t)256 << 20)

/*
 * A job stopped for using more than its need on a GPU it shared: queued
 * again with what it was measured to use (its peak, rounded up to 256 MiB,
 * at most the largest GPU), ahead of new work like an OOM retry. A job
 * that does it twice gets GPUs of its own: its need is not to be trusted.
 */
static void requeue_overuse(struct cd_daemon *d, struct cd_job *job, const char *how)
{
	uint64_t need = job->peak_bytes > job->mem_need_bytes ? job->peak_bytes
							      : job->mem_need_bytes;
	uint64_t largest = cd__largest_gpu(d);
	char was[32], now[32];
	bool again = strcmp(job->mem_source, "overuse") == 0;

	need = (need + NEED_ROUND - 1) / NEED_ROUND * NEED_ROUND;
	if (largest && need > largest)
		need = largest;
	colloc_format_bytes(job->mem_need_bytes, was, sizeof(was));
	colloc_format_bytes(need, now, sizeof(now));
	cd__requeue_reset(job);
	job->state = CD_JOB_QUEUED;
	job->mem_need_bytes = need;
	snprintf(job->mem_source, sizeof(job->mem_source), "overuse");
	job->exclusive = job->exclusive || again;
	snprintf(job->reason, sizeof(job->reason),
		 "used more than its need of %s on a shared GPU; queued again with %s%s",
		 was, now, job->exclusive ? " on GPUs of its own" : "");
	cd__event(d, job->id, "requeue", "stopped (%s); %s", how, job->reason);
}

/*
 * The job's cgroup, when it has one: what is still in it (a process that
 * left the job's session with setsid) is killed, and the cgroup removed —
 * later (cd__cgroup_sweep) when its processes are still exiting.
 */
static void kill_cgroup(struct cd_daemon *d, uint64_t id)
{
	bool removed = true;
	int n = cd_cgroup_kill(&d->cg, id, &removed);

	if (n > 0)
		cd__event(d, id, "leftovers", "killed %d process(es) left in its cgroup",
			  n);
	if (!removed && d->n_cg_pending < CD_CGROUP_PENDING)
		d->cg_pending[d->n_cg_pending++] = id;
}

void cd__cgroup_sweep(struct cd_daemon *d)
{
	for (size_t k = 0; k < d->n_cg_pending;) {
		bool removed = true;

		(void)cd_cgroup_kill(&d->cg, d->cg_pending[k], &removed);
		if (removed)
			d->cg_pending[k] = d->cg_pending[--d->n_cg_pending];
		else
			k++;
	}
}

/*
 * A job collocd stopped has ended (st): cancelled, failed past its time
 * limit, or queued again, as job->stop_cause says.
 */
static void stopped(struct cd_daemon *d, struct cd_job *job, const struct cd_status *st)
{
	char how[32], lim[24];

	snprintf(how, sizeof(how), "%s %d",
		 st->kind == CD_STATUS_EXITED ? "exit" : "signal", st->code);
	switch (job->stop_cause) {
	case CD_STOP_TIME_LIMIT:
		colloc_duration_format(job->time_limit_ms, lim, sizeof(lim));
		job->state = CD_JOB_FAILED;
		snprintf(job->reason, sizeof(job->reason),
			 "exceeded its time limit of %s", lim);
		cd__event(d, job->id, "failed", "%s (stopped: %s)", job->reason, how);
		break;
	case CD_STOP_OVERUSE:
		requeue_overuse(d, job, how);
		break;
	case CD_STOP_REQUEUE:
		cd__requeue_reset(job);
		job->state = CD_JOB_QUEUED;
		snprintf(job->reason, sizeof(job->reason),
			 "requeued while running (stopped: %s)", how);
		cd__event(d, job->id, "requeue", "stopped (%s); queued again", how);
		break;
	default:
		job->state = CD_JOB_CANCELLED;
		snprintf(job->reason, sizeof(job->reason), "cancelled while running");
		cd__event(d, job->id, "cancelled", "stopped (%s)", how);
		break;
	}
}

/*
 * The supervisor of running job *in has ended: read its status, decide the
 * outcome (done, failed, cancelled, or OOM re-queue), commit, and only then
 * remove the status file. in is copied first (it may point into d->act).
 */
void cd__finish(struct cd_daemon *d, const struct cd_job *in)
{
	struct cd_job rec, *job = &rec;
	struct colloc_diag diag = {{0}};
	char spath[CD_PATH_MAX + 64], lpath[CD_PATH_MAX + 64];
	struct run_stat *r = cd__run_find(d, in->id);
	struct cd_status st;
	const char *marker = NULL;
	bool has_util;
	int rc;

	cd_job_init(&rec);
	if (cd_job_copy(&rec, in)) {
		cd__logf(d, "job %llu: out of memory finishing it",
			 (unsigned long long)in->id);
		return;
	}
	cd__status_path(d, job->id, spath, sizeof(spath));
	rc = cd_status_read(spath, &st, &diag);
	if (r) {
		if (r->peak_bytes > job->peak_bytes)
			job->peak_bytes = r->peak_bytes;
		if (r->util_n)
			job->util_mean = r->util_sum / (double)r->util_n;
		job->util_samples = r->util_n;
	}
	job->sup_pid = 0;
	job->sup_start = 0;
	job->job_pgid = 0;
	job->end_ms = d->now.wall_ms;
	if (rc && in->sup_pid > 0) {
		/* Its leftovers would keep GPU memory under no job. */
		int n = cd_session_kill(in->sup_pid);

		if (n > 0)
			cd__event(
				d, job->id, "leftovers",
				"killed %d process(es) left in its supervisor's session",
				n);
	}
	kill_cgroup(d, job->id);
	if (rc && d->state_broken) {
		/* Not lost: its record went with the state dir. */
		job->state = CD_JOB_FAILED;
		snprintf(job->reason, sizeof(job->reason),
			 "its exit status is unknown: it was to be recorded in the state "
			 "dir, and %s",
			 d->state_why);
		cd__event(d, job->id, "status-gone", "%s", job->reason);
		goto commit;
	}
	if (rc) {
		job->state = CD_JOB_FAILED;
		snprintf(job->reason, sizeof(job->reason),
			 "its supervisor ended without recording the job's exit (%s); "
			 "the job "
			 "was killed or the machine restarted",
			 rc == -ENOENT ? "no status file" : diag.msg);
		cd__event(d, job->id, "lost", "%s", job->reason);
		goto commit;
	}
	if (st.end_ms > 0)
		job->end_ms = st.end_ms;
	if (st.kind == CD_STATUS_SETUP_FAILED) {
		job->state = CD_JOB_FAILED;
		job->exit_code = -1;
		snprintf(job->reason, sizeof(job->reason), "%s", st.message);
		cd__event(d, job->id, "setup-failed", "%s", st.message);
		goto commit;
	}
	job->exit_code = st.kind == CD_STATUS_EXITED ? st.code : -1;
	job->term_signal = st.kind == CD_STATUS_SIGNALED ? st.code : 0;
	if (job->cancel_requested) {
		stopped(d, job, &st);
		goto commit;
	}
	if (st.kind == CD_STATUS_EXITED && st.code == 0) {
		char pk[32];

		job->state = CD_JOB_DONE;
		job->reason[0] = '\0';
		cd__event(d, job->id, "done", "exit 0, peak %s",
			  colloc_format_bytes(job->peak_bytes, pk, sizeof(pk)));
		goto commit;
	}
	/* A log cut back (log_max) lost this attempt's start offset: all of
	 * it is this attempt's. */
	if (r && r->log_capped)
		st.stdout_offset = 0;
	if (cd_daemon_log_path(d, job->id, lpath, sizeof(lpath), NULL) == 0)
		(void)cd_oom_scan_file(lpath, st.stdout_offset, OOM_SCAN_BYTES, &marker,
				       NULL);
	if (marker) {
		struct cd_oom_decision dec;
		uint64_t tried = 0, cap = 0;
		bool hopeless = false;

		(void)cd_oom_scan_capacity(lpath, st.stdout_offset, OOM_SCAN_BYTES,
					   cd__largest_gpu(d), &hopeless, &tried, &cap,
					   NULL);
		cd_oom_decide(&d->cfg.oom, job->attempts, job->mem_need_bytes,
			      job->peak_bytes, cd__largest_gpu(d), job->exclusive, &dec);
		if (hopeless) {
			char t[32], c[32];

			/* More memory per GPU does not exist: a retry would die
			 * the same way (issue 16). */
			dec.action = CD_OOM_GIVE_UP;
			snprintf(dec.reason, sizeof(dec.reason),
				 "out of memory on attempt %d: it tried to allocate %s "
				 "at once, more than the GPU's total capacity of %s: "
				 "giving up",
				 job->attempts, colloc_format_bytes(tried, t, sizeof(t)),
				 colloc_format_bytes(cap, c, sizeof(c)));
		}
		if (dec.action != CD_OOM_GIVE_UP) {
			job->state = CD_JOB_QUEUED;
			job->mem_need_bytes = dec.mem_need_bytes;
			snprintf(job->mem_source, sizeof(job->mem_source), "oom-retry");
			job->exclusive =
				job->exclusive || dec.action == CD_OOM_RETRY_EXCLUSIVE;
			snprintf(job->reason, sizeof(job->reason), "%s", dec.reason);
			job->end_ms = 0;
			cd__event(d, job->id, "oom", "%s; re-queued%s", dec.reason,
				  job->exclusive ? " for a GPU of its own" : "");
		} else {
			/* dec.reason says "giving up" itself. */
			job->state = CD_JOB_FAILED;
			snprintf(job->reason, sizeof(job->reason), "%s", dec.reason);
			cd__event(d, job->id, "oom", "%s", job->reason);
		}
		goto commit;
	}
	job->state = CD_JOB_FAILED;
	if (st.kind == CD_STATUS_SIGNALED)
		snprintf(job->reason, sizeof(job->reason), "killed by signal %d",
			 st.code);
	else
		snprintf(job->reason, sizeof(job->reason), "exit status %d", st.code);
	cd__event(d, job->id, "failed", "%s", job->reason);
commit:
	/* A run that measured anything teaches the next one: its peak, or
	 * only its activity (a job whose processes the backend cannot see
	 * still has its GPU's activity sampled). */
	has_util = job->util_samples >= UTIL_HISTORY_MIN_SAMPLES;
	if ((job->peak_bytes > 0 || has_util) && job->state != CD_JOB_CANCELLED &&
	    cd_store_peak_record(d->store, job->key, job->id, job->peak_bytes,
				 has_util ? job->util_mean : -1.0, d->now.wall_ms, &diag))
		cd__logf(d, "job %llu: cannot record its peak: %s",
			 (unsigned long long)job->id, diag.msg);
	if (cd__journal(d, job, NULL) == 0) {
		char claim[CD_PATH_MAX + 80];

		unlink(spath);
		/* what a killed supervisor or a revoked launch left */
		snprintf(claim, sizeof(claim), "%s.sup", spath);
		unlink(claim);
		snprintf(claim, sizeof(claim), "%s.launch", spath);
		unlink(claim);
	}
	cd__run_remove(d, job->id);
	cd_job_fini(&rec);
	d->dirty = true;
	d->last_sample_ms = INT64_MIN; /* its memory is gone: look again */
}

/* The ids of the running jobs (caller frees; NULL when none or out of
 * memory): finishing one changes d->act under an iterator. */
static uint64_t *running_ids(const struct cd_daemon *d, size_t *n)
{
	uint64_t *ids = malloc((d->n_act ? d->n_act : 1) * sizeof(*ids));

	*n = 0;
	if (!ids)
		return NULL;
	for (size_t k = 0; k < d->n_act; k++)
		if (d->act[k].job.state == CD_JOB_RUNNING)
			ids[(*n)++] = d->act[k].job.id;
	return ids;
}

void cd_daemon_reap(struct cd_daemon *d, int64_t pid)
{
	for (size_t k = 0; k < d->n_act; k++)
		if (d->act[k].job.state == CD_JOB_RUNNING &&
		    d->act[k].job.sup_pid == pid) {
			cd__finish(d, &d->act[k].job);
			return;
		}
}

/* Finish every running job whose supervisor is gone (children not yet
 * reaped and supervisors adopted after a restart alike). */
void cd__check_supervisors(struct cd_daemon *d)
{
	size_t n = 0;
	uint64_t *ids = running_ids(d, &n);

	for (size_t k = 0; k < n; k++) {
		const struct cd_active *a = cd__active(d, ids[k]);

		if (a && a->job.sup_pid > 0 &&
		    !cd_supervisor_alive(a->job.sup_pid, a->job.sup_start))
			cd__finish(d, &a->job);
	}
	free(ids);
}

/* Track adopted job j's run; its time limit counts from its launch, which
 * the wall clock dates once (the monotonic clock of the collocd that
 * launched it is gone). */
static void adopt_run(struct cd_daemon *d, const struct cd_job *j)
{
	struct run_stat *r = cd__run_add(d, j);
	int64_t ran = d->now.wall_ms - j->start_ms;

	if (r)
		r->limit_start_mono_ms = d->now.mono_ms - (ran > 0 ? ran : 0);
}

/*
 * A job the store says runs, whose supervisor collocd never recorded (it
 * stopped between committing the launch and the supervisor's pid) and which
 * has no status: the launch claim says whether a supervisor runs it
 * (launcher.h). Revoked or never forked: queued again, and no copy can
 * start. Claimed: adopted when that supervisor lives, else finished.
 */
static void reconcile(struct cd_daemon *d, struct cd_job *j, const char *spath)
{
	struct colloc_diag diag = {{0}};
	int64_t pid = 0;
	uint64_t start = 0;
	int c = cd_launch_reconcile(spath, &pid, &start, &diag);

	if (c == CD_LAUNCH_CLAIMED) {
		j->sup_pid = pid;
		j->sup_start = start;
		if (!cd_supervisor_alive(pid, start)) {
			cd__finish(d, j);
			return;
		}
		if (cd__journal(d, j, NULL) == 0) {
			adopt_run(d, j);
			cd__event(d, j->id, "adopt",
				  "its supervisor %lld had claimed the launch before "
				  "collocd "
				  "stopped; still running",
				  (long long)pid);
		}
		return;
	}
	if (c < 0) {
		/* Whether it started cannot be told: never start a second copy. */
		cd__logf(d, "job %llu: %s", (unsigned long long)j->id, diag.msg);
		cd__finish(d, j);
		return;
	}
	j->state = CD_JOB_QUEUED;
	j->attempts = j->attempts > 0 ? j->attempts - 1 : 0;
	snprintf(j->reason, sizeof(j->reason),
		 "collocd stopped while launching it, before any supervisor ran it; "
		 "queued again");
	if (cd__journal(d, j, NULL) == 0)
		cd__event(d, j->id, "requeue", "%s", j->reason);
}

/* After a restart: adopt, finish or re-queue every job the store says runs. */
void cd__recover(struct cd_daemon *d)
{
	size_t n = 0;
	uint64_t *ids = running_ids(d, &n);

	for (size_t k = 0; k < n; k++) {
		const struct cd_active *a = cd__active(d, ids[k]);
		struct cd_job rec, *j = &rec;
		char spath[CD_PATH_MAX + 64];
		struct stat sb;

		cd_job_init(&rec);
		if (!a || cd_job_copy(&rec, &a->job))
			continue;
		cd__status_path(d, j->id, spath, sizeof(spath));
		if (j->sup_pid == 0 && stat(spath, &sb) != 0) {
			reconcile(d, j, spath);
		} else if (j->sup_pid > 0 &&
			   cd_supervisor_alive(j->sup_pid, j->sup_start)) {
			adopt_run(d, j);
			cd__event(d, j->id, "adopt",
				  "still running under supervisor %lld",
				  (long long)j->sup_pid);
		} else {
			cd__finish(d, j);
		}
		cd_job_fini(&rec);
	}
	free(ids);
}
