/*
 * limits.c — what the core enforces from its tick besides scheduling: the
 * time limits of running jobs (`submit --time`), the memory a job may use on
 * a GPU it shares (`overuse_stop`), the size of running jobs' logs
 * (`log_max`) and the retention of finished jobs in the store (`retention`
 * in collocd.conf). See daemon_int.h.
 *
 * Not here: how a job is stopped (the supervisor, launcher.h) or how its
 * end is recorded (finish.c, which reads the stop cause set here).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/units.h"
#include "daemon/daemon_int.h"
#include "daemon/launcher.h"

/* Between retention sweeps, on the monotonic clock. */
#define RETENTION_SWEEP_MS ((int64_t)86400 * 1000)

/* When running job *j's time limit started counting (monotonic). */
int64_t cd__limit_start(struct cd_daemon *d, const struct cd_job *j)
{
	const struct run_stat *r = cd__run_find(d, j->id);
	int64_t ran;

	if (r && r->limit_start_mono_ms != 0)
		return r->limit_start_mono_ms;
	/* Untracked (out of memory at launch): dated by the wall clock once
	 * more rather than never limited. */
	ran = d->now.wall_ms - j->start_ms;
	return d->now.mono_ms - (ran > 0 ? ran : 0);
}

/*
 * Stop running job *in for cause (enum cd_stop_cause), committing the cause
 * first so that its end reads it (finish.c), and record event kind with the
 * text why. in is copied first (it points into d->act, which the commit
 * updates). Returns whether its supervisor could not be signalled.
 */
static bool stop_for(struct cd_daemon *d, const struct cd_job *in, int cause,
		     const char *kind, const char *why)
{
	struct cd_job rec;
	bool gone = false;

	cd_job_init(&rec);
	if (cd_job_copy(&rec, in)) {
		cd__logf(d, "job %llu: out of memory stopping it (%s)",
			 (unsigned long long)in->id, kind);
		return false;
	}
	rec.cancel_requested = true;
	rec.stop_cause = cause;
	if (cd__journal(d, &rec, NULL) == 0) {
		cd__event(d, rec.id, kind, "%s", why);
		gone = rec.sup_pid > 0 &&
		       cd_supervisor_cancel(rec.sup_pid, rec.sup_start, NULL) != 0;
	}
	cd_job_fini(&rec);
	return gone;
}

/* Stop running job *in, past its limit by the monotonic clock. */
static bool stop_overdue(struct cd_daemon *d, const struct cd_job *in, int64_t ran_ms)
{
	char lim[24], ran[24], why[128];

	colloc_duration_format(in->time_limit_ms, lim, sizeof(lim));
	colloc_duration_format(ran_ms, ran, sizeof(ran));
	snprintf(why, sizeof(why), "ran %s, past its time limit of %s; stopping it", ran,
		 lim);
	return stop_for(d, in, CD_STOP_TIME_LIMIT, "time-limit", why);
}

static void enforce_time_limits(struct cd_daemon *d)
{
	bool check = false;

	/* A commit of a running job replaces its record in place: d->act
	 * keeps its order and size during this loop. */
	for (size_t k = 0; k < d->n_act; k++) {
		const struct cd_job *j = &d->act[k].job;
		int64_t ran;

		if (j->state != CD_JOB_RUNNING || j->time_limit_ms <= 0 ||
		    j->cancel_requested)
			continue;
		ran = d->now.mono_ms - cd__limit_start(d, j);
		if (ran >= j->time_limit_ms && stop_overdue(d, j, ran))
			check = true;
	}
	/* A supervisor that is gone ends its job now, with the stop cause
	 * just committed. */
	if (check)
		cd__check_supervisors(d);
}

/* Another running job than r on slot s, or 0 when r has s to itself. */
static uint64_t neighbour_on(const struct cd_daemon *d, const struct run_stat *r, int s)
{
	for (size_t k = 0; k < d->n_runs; k++) {
		const struct run_stat *o = &d->runs[k];

		if (o == r)
			continue;
		for (int i = 0; i < o->n_gpus; i++)
			if (o->gpus[i] == s)
				return o->id;
	}
	return 0;
}

/*
 * Under time-slicing nothing fences a job's memory: a job that uses more
 * than its need plus the headroom on a GPU it shares takes what the
 * scheduler promised its neighbours. That job — not the neighbour whose
 * next allocation would fail — is stopped, and queued again with the
 * memory it was measured to use (finish.c). Alone on its GPUs it may use
 * what it likes: nobody was promised the rest. MPS fences each client
 * (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, mps.c) and MIG instances are their
 * own, so neither needs this.
 */
static void enforce_overuse(struct cd_daemon *d)
{
	bool check = false;

	if (!d->cfg.overuse_stop || d->cfg.sharing != CD_SHARING_TIME_SLICING)
		return;
	for (size_t k = 0; k < d->n_runs; k++) {
		const struct run_stat *r = &d->runs[k];
		const struct cd_active *a = cd__active(d, r->id);
		uint64_t limit = r->need_bytes + d->cfg.sched.headroom_bytes;

		if (!a || a->job.state != CD_JOB_RUNNING || a->job.cancel_requested)
			continue;
		for (int i = 0; i < r->n_gpus; i++) {
			int s = r->gpus[i];
			uint64_t other;
			char used[32], need[32], head[32], why[320];

			if (s < 0 || d->slots[s].isolated || r->used_bytes[i] <= limit ||
			    (other = neighbour_on(d, r, s)) == 0)
				continue;
			snprintf(
				why, sizeof(why),
				"uses %s on GPU %u, more than its need of %s + headroom "
				"%s, while sharing it with job %llu: stopping it, so "
				"that "
				"its neighbours keep the memory promised to them, to "
				"queue it again with what it was measured to use",
				colloc_format_bytes(r->used_bytes[i], used, sizeof(used)),
				d->slots[s].gpu,
				colloc_format_bytes(r->need_bytes, need, sizeof(need)),
				colloc_format_bytes(d->cfg.sched.headroom_bytes, head,
						    sizeof(head)),
				(unsigned long long)other);
			if (stop_for(d, &a->job, CD_STOP_OVERUSE, "overuse", why))
				check = true;
			break;
		}
	}
	if (check)
		cd__check_supervisors(d);
}

/*
 * A running job's log that grew past log_max is cut back to a note saying
 * so: the job keeps writing after it (the log is opened O_APPEND), and the
 * state filesystem does not fill up under every other job. A stat per
 * running job: once per sample (cd_daemon_tick), not every tick. The run
 * remembers it, so that the OOM scan of its end reads the log from its
 * start (finish.c).
 */
void cd__enforce_log_caps(struct cd_daemon *d)
{
	if (d->cfg.log_max_bytes == 0)
		return;
	for (size_t k = 0; k < d->n_runs; k++) {
		struct run_stat *r = &d->runs[k];
		char path[CD_PATH_MAX + 64], cap[32], note[160];
		struct stat sb;
		int fd, n;

		if (cd_daemon_log_path(d, r->id, path, sizeof(path), NULL) != 0 ||
		    lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
		    (uint64_t)sb.st_size <= d->cfg.log_max_bytes)
			continue;
		fd = open(path,
			  O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			cd__logf(d, "job %llu: cannot cap its log '%s': %s",
				 (unsigned long long)r->id, path, strerror(errno));
			continue;
		}
		colloc_format_bytes(d->cfg.log_max_bytes, cap, sizeof(cap));
		n = snprintf(note, sizeof(note),
			     "[collocd: this log passed log_max (%s); what the job wrote "
			     "before this line was dropped]\n",
			     cap);
		if (ftruncate(fd, 0) != 0 || write(fd, note, (size_t)n) != n)
			cd__logf(d, "job %llu: cannot cap its log '%s': %s",
				 (unsigned long long)r->id, path, strerror(errno));
		else if (!r->log_capped)
			cd__event(d, r->id, "log-capped",
				  "its log passed %s; cut back (collocd.conf log_max)",
				  cap);
		r->log_capped = true;
		close(fd);
	}
}

static void enforce_retention(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	uint64_t *ids = NULL;
	size_t n = 0;
	char keep[32];

	if (d->cfg.retention_ms <= 0 ||
	    (d->pruned_once &&
	     d->now.mono_ms - d->last_prune_mono_ms < RETENTION_SWEEP_MS))
		return;
	d->pruned_once = true;
	d->last_prune_mono_ms = d->now.mono_ms;
	/* Ages of stored times are wall-clock ages: end_ms is the wall
	 * clock's. */
	if (cd_store_job_prune(d->store, d->now.wall_ms - d->cfg.retention_ms, &ids, &n,
			       &diag)) {
		cd__logf(d, "retention: cannot delete old jobs: %s", diag.msg);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		char path[CD_PATH_MAX + 64];

		if (cd_daemon_log_path(d, ids[k], path, sizeof(path), NULL) == 0)
			(void)unlink(path);
	}
	if (n) {
		colloc_duration_format(d->cfg.retention_ms, keep, sizeof(keep));
		cd__logf(d,
			 "retention: deleted %zu finished job(s) older than %s "
			 "(%llu..%llu)",
			 n, keep, (unsigned long long)ids[0],
			 (unsigned long long)ids[n - 1]);
	}
	free(ids);
}

void cd__enforce_limits(struct cd_daemon *d)
{
	enforce_time_limits(d);
	enforce_overuse(d);
	enforce_retention(d);
}
