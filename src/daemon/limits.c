/*
 * limits.c — what the core enforces from its tick besides scheduling: the
 * time limits of running jobs (`submit --time`) and the retention of
 * finished jobs in the store (`retention` in collocd.conf). See
 * daemon_int.h.
 *
 * Not here: how a job is stopped (the supervisor, launcher.h) or how its
 * end is recorded (finish.c, which reads the stop cause set here).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "daemon/daemon_int.h"
#include "daemon/launcher.h"

/* Between retention sweeps, on the monotonic clock. */
#define RETENTION_SWEEP_MS ((int64_t)86400 * 1000)

/* When running job *j's time limit started counting (monotonic). */
static int64_t limit_start(struct cd_daemon *d, const struct cd_job *j)
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

/* Stop running job *in, past its limit by the monotonic clock. in is
 * copied first (it points into d->act, which the commit updates). Returns
 * whether its supervisor could not be signalled. */
static bool stop_overdue(struct cd_daemon *d, const struct cd_job *in, int64_t ran_ms)
{
	struct cd_job rec;
	char lim[24], ran[24];
	bool gone = false;

	cd_job_init(&rec);
	if (cd_job_copy(&rec, in)) {
		cd__logf(d, "job %llu: out of memory stopping it at its time limit",
			 (unsigned long long)in->id);
		return false;
	}
	rec.cancel_requested = true;
	rec.stop_cause = CD_STOP_TIME_LIMIT;
	if (cd__journal(d, &rec, NULL) == 0) {
		colloc_duration_format(rec.time_limit_ms, lim, sizeof(lim));
		colloc_duration_format(ran_ms, ran, sizeof(ran));
		cd__event(d, rec.id, "time-limit",
			  "ran %s, past its time limit of %s; stopping it", ran, lim);
		gone = rec.sup_pid > 0 &&
		       cd_supervisor_cancel(rec.sup_pid, rec.sup_start, NULL) != 0;
	}
	cd_job_fini(&rec);
	return gone;
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
		ran = d->now.mono_ms - limit_start(d, j);
		if (ran >= j->time_limit_ms && stop_overdue(d, j, ran))
			check = true;
	}
	/* A supervisor that is gone ends its job now, with the stop cause
	 * just committed. */
	if (check)
		cd__check_supervisors(d);
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
	enforce_retention(d);
}
