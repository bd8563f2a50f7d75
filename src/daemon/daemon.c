/*
 * daemon.c — collocd's core: its life cycle, accessors, log and event
 * journal, its time, and the in-memory view of the active jobs (daemon.h;
 * how the parts share the work: daemon_int.h). Single-threaded; driven by
 * server.c's loop.
 */
#include "daemon/daemon.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/files.h"
#include "daemon/daemon_int.h"
#include "daemon/mps.h"

void cd__logf(struct cd_daemon *d, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!d->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	d->log(line);
}

void cd__event(struct cd_daemon *d, uint64_t id, const char *kind, const char *fmt, ...)
{
	struct colloc_diag diag = {{0}};
	char msg[CD_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cd_store_event_add(d->store, id, d->now.wall_ms, kind, msg, &diag))
		cd__logf(d, "job %llu: cannot record event: %s", (unsigned long long)id,
			 diag.msg);
	cd__logf(d, "job %llu: %s: %s", (unsigned long long)id, kind, msg);
}

void cd__status_path(const struct cd_daemon *d, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%llu.status", d->status_dir, (unsigned long long)id);
}

int cd_daemon_log_path(struct cd_daemon *d, uint64_t id, char *buf, size_t len,
		       struct colloc_diag *diag)
{
	int n = snprintf(buf, len, "%s/%llu.log", d->logs_dir, (unsigned long long)id);

	if (n < 0 || (size_t)n >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "log path too long");
	return 0;
}

/* --- time ------------------------------------------------------------------ */

struct cd_now cd_now_read(void)
{
	struct cd_now now = {colloc__mono_ms(), colloc__wall_ms()};

	return now;
}

void cd_daemon_set_now(struct cd_daemon *d, struct cd_now now)
{
	if (now.mono_ms >= d->now.mono_ms)
		d->now.mono_ms = now.mono_ms;
	d->now.wall_ms = now.wall_ms;
}

/* --- the active jobs: memory behind the store ---------------------------------- */

static size_t active_pos(const struct cd_daemon *d, uint64_t id)
{
	size_t lo = 0, hi = d->n_act;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->act[mid].job.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct cd_active *cd__active(struct cd_daemon *d, uint64_t id)
{
	size_t k = active_pos(d, id);

	return k < d->n_act && d->act[k].job.id == id ? &d->act[k] : NULL;
}

int cd__active_add(struct cd_daemon *d, const struct cd_job *job, int64_t submit_mono_ms)
{
	size_t k = active_pos(d, job->id);
	struct cd_active *a;

	if (k < d->n_act && d->act[k].job.id == job->id) {
		d->act[k].submit_mono_ms = submit_mono_ms;
		return cd_job_copy(&d->act[k].job, job) ? -ENOMEM : 0;
	}
	if (d->n_act == d->cap_act) {
		size_t cap = d->cap_act ? d->cap_act * 2 : 64;
		struct cd_active *na = realloc(d->act, cap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		d->act = na;
		d->cap_act = cap;
	}
	memmove(&d->act[k + 1], &d->act[k], (d->n_act - k) * sizeof(*a));
	a = &d->act[k];
	cd_job_init(&a->job);
	if (cd_job_copy(&a->job, job)) {
		memmove(&d->act[k], &d->act[k + 1], (d->n_act - k) * sizeof(*a));
		return -ENOMEM;
	}
	a->submit_mono_ms = submit_mono_ms;
	d->n_act++;
	return 0;
}

static void active_remove(struct cd_daemon *d, uint64_t id)
{
	size_t k = active_pos(d, id);

	if (k >= d->n_act || d->act[k].job.id != id)
		return;
	cd_job_fini(&d->act[k].job);
	memmove(&d->act[k], &d->act[k + 1], (d->n_act - k - 1) * sizeof(d->act[0]));
	d->n_act--;
}

int cd__journal(struct cd_daemon *d, const struct cd_job *job, struct colloc_diag *diag)
{
	struct colloc_diag local = {{0}};
	struct cd_active *a;
	int rc = cd_store_job_update(d->store, job, diag ? diag : &local);

	if (rc) {
		cd__logf(d, "job %llu: cannot save: %s", (unsigned long long)job->id,
			 diag ? diag->msg : local.msg);
		return rc;
	}
	if (cd_job_state_final(job->state)) {
		active_remove(d, job->id);
		return 0;
	}
	a = cd__active(d, job->id);
	if (a ? cd_job_copy(&a->job, job) : cd__active_add(d, job, d->now.mono_ms)) {
		/* Memory no longer agrees with the store; the store wins at the
		 * next restart. Said aloud rather than ignored. */
		cd__logf(d, "job %llu: out of memory tracking it",
			 (unsigned long long)job->id);
		return -ENOMEM;
	}
	return 0;
}

/* Load the queued and running jobs from the store. A queued job's age on
 * the monotonic clock is what the wall clock says it is, once, at start. */
static int active_load(struct cd_daemon *d, struct colloc_diag *diag)
{
	struct cd_job *jobs = NULL;
	size_t n = 0;
	int rc = cd_store_job_list(d->store,
				   (1u << CD_JOB_QUEUED) | (1u << CD_JOB_RUNNING), -1, 0,
				   &jobs, &n, diag);

	for (size_t k = 0; rc == 0 && k < n; k++) {
		int64_t age = d->now.wall_ms - jobs[k].submit_ms;

		if (cd__active_add(d, &jobs[k], d->now.mono_ms - (age > 0 ? age : 0)))
			rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < n; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	return rc;
}

const struct cd_config *cd_daemon_config(const struct cd_daemon *d)
{
	return &d->cfg;
}

const char *cd_daemon_backend(const struct cd_daemon *d)
{
	return d->backend;
}

unsigned cd_daemon_gpu_count(const struct cd_daemon *d)
{
	return d->n_gpus;
}

struct cd_store *cd_daemon_store(struct cd_daemon *d)
{
	return d->store;
}

double cd_daemon_uptime_s(const struct cd_daemon *d)
{
	return (double)(d->now.mono_ms - d->created_ms) / 1000.0;
}

bool cd_daemon_gpu_up(const struct cd_daemon *d, unsigned index)
{
	return index < d->n_gpus && d->gpu_ok[index];
}

int cd_daemon_job_usage(const struct cd_daemon *d, uint64_t id, int *gpus,
			uint64_t *used_bytes, int cap)
{
	for (size_t k = 0; k < d->n_runs; k++) {
		const struct run_stat *r = &d->runs[k];

		if (r->id != id)
			continue;
		for (int i = 0; i < r->n_gpus && i < cap; i++) {
			gpus[i] = r->gpus[i] >= 0 ? (int)d->slots[r->gpus[i]].gpu : -1;
			used_bytes[i] = r->used_bytes[i];
		}
		return r->n_gpus;
	}
	return COLLOC_ENOTFOUND;
}

void cd_daemon_sched_counters(const struct cd_daemon *d, struct cd_sched_counters *out)
{
	*out = d->sched;
}

void cd_daemon_log(const struct cd_daemon *d, const char *line)
{
	if (d->log)
		d->log(line);
}

int cd_daemon_gpu_history(const struct cd_daemon *d, unsigned index,
			  struct cd_gpu_sample *out, size_t cap, size_t *n)
{
	size_t take, first;

	if (index >= d->n_gpus)
		return COLLOC_ENOTFOUND;
	take = d->hist_len < cap ? d->hist_len : cap;
	/* The ring's newest is just before hist_next; start take back. */
	first = (d->hist_next + CD_HISTORY_MAX - take) % CD_HISTORY_MAX;
	for (size_t k = 0; k < take; k++)
		out[k] = d->hist[(size_t)index * CD_HISTORY_MAX +
				 (first + k) % CD_HISTORY_MAX];
	*n = take;
	return 0;
}

size_t cd_daemon_slot_count(const struct cd_daemon *d)
{
	return d->n_slots;
}

int cd_daemon_slot(const struct cd_daemon *d, size_t k, struct cd_slot_info *out)
{
	if (k >= d->n_slots)
		return COLLOC_ENOTFOUND;
	snprintf(out->uuid, sizeof(out->uuid), "%s", d->slots[k].uuid);
	out->gpu = d->slots[k].gpu;
	out->isolated = d->slots[k].isolated;
	out->mem_total_bytes = d->slots[k].total_bytes;
	out->mem_used_bytes = d->slots[k].used_bytes;
	return 0;
}

void cd_daemon_mark_dirty(struct cd_daemon *d)
{
	d->dirty = true;
}

bool cd_daemon_dirty(const struct cd_daemon *d)
{
	return d->dirty;
}

void cd_daemon_counts(struct cd_daemon *d, size_t *queued, size_t *running)
{
	*queued = *running = 0;
	for (size_t k = 0; k < d->n_act; k++) {
		*queued += d->act[k].job.state == CD_JOB_QUEUED;
		*running += d->act[k].job.state == CD_JOB_RUNNING;
	}
}

/* Less free than this on the state filesystem: no launch (a job's log and
 * status must have room; its status blocks are reserved at launch). */
#define STATE_MIN_FREE ((uint64_t)1 << 20)

/* Why the state dir cannot take a launch, into why; false when it can. */
static bool state_unusable(const struct cd_daemon *d, char *why, size_t len)
{
	const char *dir = d->cfg.state_dir;
	struct statvfs vs;
	struct stat sb;

	if (stat(dir, &sb) != 0) {
		snprintf(why, len, "state dir '%s' %s", dir,
			 errno == ENOENT ? "vanished (deleted?)" : strerror(errno));
		return true;
	}
	if (sb.st_dev != d->state_dev || sb.st_ino != d->state_ino) {
		snprintf(why, len, "state dir '%s' was replaced by another directory",
			 dir);
		return true;
	}
	if (access(d->logs_dir, W_OK | X_OK) != 0 ||
	    access(d->status_dir, W_OK | X_OK) != 0) {
		snprintf(why, len, "'%s' or '%s' cannot be written: %s", d->logs_dir,
			 d->status_dir, strerror(errno));
		return true;
	}
	if (statvfs(d->status_dir, &vs) == 0 &&
	    (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize < STATE_MIN_FREE) {
		snprintf(why, len, "the filesystem of state dir '%s' is full", dir);
		return true;
	}
	return false;
}

void cd__state_check(struct cd_daemon *d)
{
	char why[sizeof(d->state_why)];
	bool broken = state_unusable(d, why, sizeof(why));

	if (broken && (!d->state_broken || strcmp(why, d->state_why) != 0))
		cd__logf(d,
			 "%s: launching no job until it is usable again (running jobs "
			 "run on; a vanished or replaced state dir needs a restart of "
			 "collocd)",
			 why);
	else if (!broken && d->state_broken)
		cd__logf(d, "state dir '%s' is usable again: launching",
			 d->cfg.state_dir);
	if (broken)
		snprintf(d->state_why, sizeof(d->state_why), "%s", why);
	else
		d->state_why[0] = '\0';
	if (d->state_broken && !broken)
		d->dirty = true;
	d->state_broken = broken;
}

/* Log that key changed in the file but needs a restart; 1 if it did. */
static int needs_restart(struct cd_daemon *d, bool differs, const char *key)
{
	if (differs)
		cd__logf(d, "config: %s changed; it needs a restart of collocd", key);
	return differs;
}

int cd_daemon_reconfigure(struct cd_daemon *d, const struct cd_config *cfg)
{
	struct cd_config *c = &d->cfg;
	int kept = 0;

	/* What the running core holds open or has built on: a restart. */
	kept += needs_restart(d, strcmp(c->gpus, cfg->gpus) != 0, "gpus");
	kept += needs_restart(d, c->allow_sim != cfg->allow_sim, "allow_sim");
	kept += needs_restart(d, strcmp(c->socket_path, cfg->socket_path) != 0, "socket");
	kept += needs_restart(d, strcmp(c->db_path, cfg->db_path) != 0, "db");
	kept += needs_restart(d, strcmp(c->state_dir, cfg->state_dir) != 0, "state_dir");
	kept += needs_restart(d, c->sharing != cfg->sharing, "sharing");
	kept += needs_restart(d, strcmp(c->mps_control, cfg->mps_control) != 0,
			      "mps_control");
	kept += needs_restart(d, c->mps_thread_share != cfg->mps_thread_share,
			      "mps_thread_share");
	kept += needs_restart(d, strcmp(c->metrics, cfg->metrics) != 0, "metrics");
	kept += needs_restart(d, c->job_cgroups != cfg->job_cgroups, "job_cgroups");
	/* The rest is read where it is used: it changes now. */
	c->sched = cfg->sched;
	c->sample_ms = cfg->sample_ms;
	c->default_mem_bytes = cfg->default_mem_bytes;
	c->default_util = cfg->default_util;
	c->oom = cfg->oom;
	c->kill_grace_ms = cfg->kill_grace_ms;
	c->reserve_ms = cfg->reserve_ms;
	c->retention_ms = cfg->retention_ms;
	c->overuse_stop = cfg->overuse_stop;
	c->user_max_queued = cfg->user_max_queued;
	c->log_max_bytes = cfg->log_max_bytes;
	snprintf(c->admin_group, sizeof(c->admin_group), "%s", cfg->admin_group);
	cd__logf(d, "config reloaded: policy %s%s", colloc_policy_name(c->sched.policy),
		 kept ? "; some changes wait for a restart (above)" : "");
	d->dirty = true;
	return kept;
}

/* The database and its directory are collocd's own, like the state dir. */
static int check_db_path(const char *db, uid_t uid, struct colloc_diag *diag)
{
	char dir[CD_PATH_MAX];
	const char *slash = strrchr(db, '/');
	int rc;

	if (slash && slash != db && (size_t)(slash - db) < sizeof(dir)) {
		memcpy(dir, db, (size_t)(slash - db));
		dir[slash - db] = '\0';
		if ((rc = colloc__check_owned(dir, COLLOC_OWNED_DIR, uid, diag)))
			return rc;
	}
	return colloc__check_owned(db, COLLOC_OWNED_FILE, uid, diag);
}

int cd_daemon_create(const struct cd_config *cfg, struct cd_now now,
		     void (*log)(const char *line), struct cd_daemon **out,
		     struct colloc_diag *diag)
{
	struct cd_daemon *d = calloc(1, sizeof(*d));
	const char *spec = cfg->gpus;
	int rc;

	if (!d)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	d->cfg = *cfg;
	d->log = log;
	d->euid = geteuid();
	d->now = now;
	d->created_ms = d->now.mono_ms;
	d->created_wall_ms = d->now.wall_ms;
	d->last_sample_ms = INT64_MIN;
	if ((size_t)snprintf(d->logs_dir, sizeof(d->logs_dir), "%s/logs",
			     cfg->state_dir) >= sizeof(d->logs_dir) ||
	    (size_t)snprintf(d->status_dir, sizeof(d->status_dir), "%s/status",
			     cfg->state_dir) >= sizeof(d->status_dir)) {
		rc = colloc_diag_set(diag, COLLOC_ELIMIT, "state_dir path too long");
		goto fail;
	}
	if ((rc = colloc__mkdir_p(cfg->state_dir, 0755, diag)) ||
	    (rc = colloc__mkdir_p(d->logs_dir, 0755, diag)) ||
	    (rc = colloc__mkdir_p(d->status_dir, 0700, diag)))
		goto fail;
	/* What collocd keeps and hands to jobs must be its own: a state dir
	 * another user made first could hold planted logs (issue 14). */
	if ((rc = colloc__check_owned(cfg->state_dir, COLLOC_OWNED_DIR, d->euid, diag)) ||
	    (rc = colloc__check_owned(d->logs_dir, COLLOC_OWNED_DIR, d->euid, diag)) ||
	    (rc = colloc__check_owned(d->status_dir, COLLOC_OWNED_DIR, d->euid, diag)) ||
	    (rc = check_db_path(cfg->db_path, d->euid, diag)))
		goto fail;
	{
		struct stat sb;

		if (stat(cfg->state_dir, &sb) == 0) {
			d->state_dev = sb.st_dev;
			d->state_ino = sb.st_ino;
		}
	}
	if (cfg->job_cgroups) {
		char why[CD_CGROUP_PATH_MAX + 128];

		cd_cgroup_init(&d->cg, "/proc/self/mountinfo", "/proc/self/cgroup",
			       cfg->state_dir, why, sizeof(why));
		cd__logf(d, "%s%s", why,
			 d->cg.on ? ""
				  : "; jobs run without cgroups (their session is "
				    "what is killed at their end)");
	}
	if (strcmp(spec, "auto") == 0) {
		char note[512] = "";

		/* NVIDIA's GPUs when this machine has them, simulated ones
		 * otherwise, and the log says which and why. */
		rc = colloc_gpu_open_auto("sim:4x40GiB", &d->gpu, note, sizeof(note),
					  diag);
		if (rc) {
			(void)colloc_diag_prefix(diag, rc, "GPUs 'auto'");
			goto fail;
		}
		cd__logf(d, "--gpus auto: %s", note);
	} else if ((rc = colloc_gpu_open(spec, &d->gpu, diag))) {
		(void)colloc_diag_prefix(diag, rc, "GPUs '%s'", spec);
		goto fail;
	}
	snprintf(d->backend, sizeof(d->backend), "%s", colloc_gpu_backend_name(d->gpu));
	if ((rc = colloc_gpu_count(d->gpu, &d->n_gpus, diag)) ||
	    (rc = colloc_gpu_job_env(d->gpu, d->job_env, sizeof(d->job_env), diag)))
		goto fail;
	d->info = calloc(d->n_gpus ? d->n_gpus : 1, sizeof(*d->info));
	d->gpu_ok = calloc(d->n_gpus ? d->n_gpus : 1, sizeof(*d->gpu_ok));
	d->procs = calloc(MAX_PROCS, sizeof(*d->procs));
	d->unowned = calloc(d->n_gpus ? d->n_gpus : 1, sizeof(*d->unowned));
	d->migs = calloc(MAX_MIG, sizeof(*d->migs));
	d->hist = calloc((size_t)(d->n_gpus ? d->n_gpus : 1) * CD_HISTORY_MAX,
			 sizeof(*d->hist));
	if (!d->info || !d->gpu_ok || !d->procs || !d->unowned || !d->migs || !d->hist) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned g = 0; g < d->n_gpus; g++)
		d->gpu_ok[g] = true;
	if ((rc = cd_store_open(cfg->db_path, &d->store, diag)) ||
	    (rc = active_load(d, diag)))
		goto fail;
	if (cfg->sharing == CD_SHARING_MPS) {
		if ((size_t)snprintf(d->mps_dir, sizeof(d->mps_dir), "%s/mps",
				     cfg->state_dir) >= sizeof(d->mps_dir)) {
			rc = colloc_diag_set(diag, COLLOC_ELIMIT,
					     "state_dir path too long");
			goto fail;
		}
		cd__sample(d); /* the UUIDs */
		for (unsigned g = 0; g < d->n_gpus; g++)
			if ((rc = cd_mps_start(cfg->mps_control, d->mps_dir,
					       d->info[g].uuid, 10000, diag))) {
				(void)colloc_diag_prefix(diag, rc,
							 "sharing = mps, GPU %u", g);
				goto fail;
			}
		d->mps_started = true;
		cd__logf(d, "MPS control daemons running for %u GPU(s) under %s",
			 d->n_gpus, d->mps_dir);
	} else if (cfg->sharing == CD_SHARING_MIG) {
		cd__logf(d, "sharing = mig: GPUs in MIG mode are scheduled by instance; "
			    "others are "
			    "time-sliced");
	}
	cd__sample(d);
	cd__recover(d);
	d->dirty = true;
	*out = d;
	return 0;
fail:
	cd_daemon_destroy(d);
	return rc;
}

/* Stop the MPS daemons unless jobs still use them (they outlive collocd,
 * as the jobs do). */
static void mps_stop_all(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};

	if (!d->mps_started)
		return;
	if (d->n_runs > 0) {
		cd__logf(d,
			 "leaving the MPS control daemons running for %zu running job(s)",
			 d->n_runs);
		return;
	}
	for (unsigned g = 0; g < d->n_gpus; g++)
		if (cd_mps_stop(d->cfg.mps_control, d->mps_dir, d->info[g].uuid, 10000,
				&diag))
			cd__logf(d, "GPU %u: %s", g, diag.msg);
}

void cd_daemon_destroy(struct cd_daemon *d)
{
	if (!d)
		return;
	mps_stop_all(d);
	cd_store_close(d->store);
	colloc_gpu_close(d->gpu);
	free(d->info);
	free(d->gpu_ok);
	free(d->procs);
	free(d->unowned);
	free(d->migs);
	free(d->hist);
	free(d->slots);
	free(d->runs);
	for (size_t k = 0; k < d->n_act; k++)
		cd_job_fini(&d->act[k].job);
	free(d->act);
	free(d->pass_gpus);
	free(d->pass_running);
	free(d->pass_queue);
	free(d->pass_dec);
	free(d);
}
