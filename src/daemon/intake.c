/*
 * intake.c — what users ask of collocd's core: who may use it, submit,
 * cancel and get (daemon_int.h).
 */
#define _GNU_SOURCE /* getgrouplist */
#include <cjson/cJSON.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/units.h"
#include "daemon/daemon_int.h"
#include "daemon/fault.h"
#include "daemon/launcher.h"

bool cd_daemon_may_use(const struct cd_daemon *d, const struct cd_peer *peer)
{
	return d->euid == 0 || peer->uid == (uint32_t)d->euid;
}

bool cd_daemon_is_admin(struct cd_daemon *d, const struct cd_peer *peer)
{
	const struct group *gr;
	const struct passwd *pw;
	gid_t groups[256];
	int n = 256;

	if (peer->uid == 0)
		return true;
	if (!d->cfg.admin_group[0] || !(gr = getgrnam(d->cfg.admin_group)))
		return false;
	if (peer->gid == gr->gr_gid)
		return true;
	pw = getpwuid(peer->uid);
	if (!pw || getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		return false;
	for (int k = 0; k < n; k++)
		if (groups[k] == gr->gr_gid)
			return true;
	return false;
}

bool cd__may_see(struct cd_daemon *d, const struct cd_peer *peer,
		 const struct cd_job *job)
{
	return job->uid == peer->uid || cd_daemon_is_admin(d, peer);
}

/* --- what users ask for --------------------------------------------------------- */

int cd_daemon_get(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		  struct cd_job *job, struct colloc_diag *diag)
{
	int rc = cd_store_job_get(d->store, id, job, diag);

	if (rc == COLLOC_ENOTFOUND || (rc == 0 && !cd__may_see(d, peer, job))) {
		cd_job_fini(job);
		return colloc_diag_set(diag, COLLOC_ENOTFOUND, "no job %llu",
				       (unsigned long long)id);
	}
	return rc;
}

int cd_daemon_cancel(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		     struct cd_job *job, struct colloc_diag *diag)
{
	int rc = cd_daemon_get(d, peer, id, job, diag);

	if (rc)
		return rc;
	if (cd_job_state_final(job->state))
		return colloc_diag_set(
			diag, COLLOC_EUSAGE, "job %llu has already ended (%s)",
			(unsigned long long)id, cd_job_state_name(job->state));
	if (job->state == CD_JOB_QUEUED) {
		job->state = CD_JOB_CANCELLED;
		job->end_ms = d->now.wall_ms;
		snprintf(job->reason, sizeof(job->reason), "cancelled before it started");
		if ((rc = cd__journal(d, job, diag)))
			return rc;
		cd__event(d, id, "cancelled", "cancelled by uid %u while queued",
			  peer->uid);
		return 0;
	}
	if (job->cancel_requested && job->stop_cause == CD_STOP_CANCEL)
		return 0;
	/* A cancel wins over a time limit or requeue already under way: the
	 * user wants it gone. */
	job->cancel_requested = true;
	job->stop_cause = CD_STOP_CANCEL;
	if ((rc = cd__journal(d, job, diag)))
		return rc;
	cd__event(d, id, "cancel", "cancel requested by uid %u; stopping it", peer->uid);
	if (job->sup_pid > 0 &&
	    cd_supervisor_cancel(job->sup_pid, job->sup_start, NULL) != 0)
		cd__check_supervisors(d);
	return 0;
}

static void base_name(const char *argv_json, char *out, size_t len)
{
	cJSON *a = cJSON_Parse(argv_json);
	const cJSON *first = a ? cJSON_GetArrayItem(a, 0) : NULL;
	const char *s = first && cJSON_IsString(first) && first->valuestring
				? first->valuestring
				: "job";
	const char *slash = strrchr(s, '/');

	snprintf(out, len, "%s", slash && slash[1] ? slash + 1 : s);
	cJSON_Delete(a);
}

/*
 * The job's predicted activity and where it came from: what the user said;
 * else what earlier runs of the same job measured (on the scheduler's own
 * scale, by the monitor); else the graph prediction on that scale; else
 * default_util. The graph figures are kept whichever wins.
 */
static void choose_util(const struct cd_daemon *d, const struct cd_submit *req,
			double hist_util, struct cd_job *job)
{
	bool graph = req->graph_gpu_util >= 0 && req->graph_sm_activity >= 0;

	job->graph_gpu_util = graph ? req->graph_gpu_util : -1;
	job->graph_sm_activity = graph ? req->graph_sm_activity : -1;
	snprintf(job->graph_platform, sizeof(job->graph_platform), "%s",
		 graph ? req->graph_platform : "");
	if (req->util >= 0) {
		job->util_pred = req->util;
		snprintf(job->util_source, sizeof(job->util_source), "request");
	} else if (hist_util >= 0) {
		job->util_pred = hist_util;
		snprintf(job->util_source, sizeof(job->util_source), "history");
	} else if (graph) {
		job->util_pred = cd__activity_is_sm(d) ? req->graph_sm_activity
						       : req->graph_gpu_util;
		if (req->graph_platform[0])
			snprintf(job->util_source, sizeof(job->util_source), "graph (%s)",
				 req->graph_platform);
		else
			snprintf(job->util_source, sizeof(job->util_source), "graph");
	} else {
		job->util_pred = d->cfg.default_util;
		snprintf(job->util_source, sizeof(job->util_source), "default");
	}
}

/* COLLOC_EUSAGE with why when no GPU of d could ever hold need (from
 * source) next to the headroom; 0 when one could. */
static int need_fits(const struct cd_daemon *d, uint64_t need, const char *source,
		     struct colloc_diag *diag)
{
	uint64_t largest = cd__largest_gpu(d);
	char a[32], b[32], h[32];

	if (need <= largest && largest - need >= d->cfg.sched.headroom_bytes)
		return 0;
	return colloc_diag_set(
		diag, COLLOC_EUSAGE,
		"the job needs %s per GPU (%s) plus %s headroom; the "
		"largest GPU here has %s, so it could never start",
		colloc_format_bytes(need, a, sizeof(a)), source,
		colloc_format_bytes(d->cfg.sched.headroom_bytes, h, sizeof(h)),
		colloc_format_bytes(largest, b, sizeof(b)));
}

/* Every dependency names a job peer may see (it may have ended: whether
 * it can still be satisfied is the scheduler's to tell, with a reason). */
static int check_deps(struct cd_daemon *d, const struct cd_peer *peer,
		      const struct cd_submit *req, struct colloc_diag *diag)
{
	for (int k = 0; k < req->n_deps; k++) {
		struct cd_job dep;
		int rc = cd_daemon_get(d, peer, req->deps[k].id, &dep, NULL);

		cd_job_fini(&dep);
		if (rc == COLLOC_ENOTFOUND)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field 'after': no job %llu",
					       (unsigned long long)req->deps[k].id);
		if (rc)
			return colloc_diag_set(diag, rc,
					       "field 'after': cannot read job %llu",
					       (unsigned long long)req->deps[k].id);
	}
	return 0;
}

/*
 * Insert the elements of array req after the first (job, already
 * inserted, becomes element array_first) in the open transaction, with
 * their submit events. ids[] gets every element's id.
 */
static int insert_array(struct cd_daemon *d, const struct cd_submit *req,
			struct cd_job *job, uint64_t *ids, struct colloc_diag *diag)
{
	struct cd_job rec;
	int n = req->array_last - req->array_first + 1, rc;

	job->array_id = job->id;
	if ((rc = cd_store_job_update(d->store, job, diag)))
		return rc;
	ids[0] = job->id;
	cd_job_init(&rec);
	if (cd_job_copy(&rec, job))
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	rec.idem_key[0] = '\0'; /* the first element answers a retry */
	for (int k = 1; k < n; k++) {
		rec.array_index = req->array_first + k;
		if ((rc = cd_store_job_insert(d->store, &rec, diag)))
			break;
		ids[k] = rec.id;
	}
	cd_job_fini(&rec);
	/* The first element's event, with the job's needs, follows the
	 * commit (cd_daemon_submit). */
	for (int k = 1; rc == 0 && k < n; k++) {
		char msg[96];

		snprintf(msg, sizeof(msg), "element %d of array %llu (as job %llu)",
			 req->array_first + k, (unsigned long long)job->id,
			 (unsigned long long)job->id);
		rc = cd_store_event_add(d->store, ids[k], d->now.wall_ms, "submit", msg,
					diag);
	}
	return rc;
}

/* Commit job (and, for an array, its other elements) and take them into
 * memory. */
static int commit_new(struct cd_daemon *d, const struct cd_submit *req,
		      struct cd_job *job, struct colloc_diag *diag)
{
	int n = req->array ? req->array_last - req->array_first + 1 : 1, rc;
	uint64_t *ids;

	if (!req->array) {
		if ((rc = cd_store_job_insert(d->store, job, diag)))
			return rc;
		cd_fault_point("submit-after-commit");
		if (cd__active_add(d, job, d->now.mono_ms))
			cd__logf(d,
				 "job %llu: out of memory queueing it; it runs after a "
				 "restart",
				 (unsigned long long)job->id);
		return 0;
	}
	ids = calloc((size_t)n, sizeof(*ids));
	if (!ids)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	job->array_index = req->array_first;
	if ((rc = cd_store_begin(d->store, diag)) == 0) {
		rc = cd_store_job_insert(d->store, job, diag);
		if (rc == 0)
			rc = insert_array(d, req, job, ids, diag);
		if (rc == 0)
			rc = cd_store_commit(d->store, diag);
		if (rc)
			cd_store_rollback(d->store);
	}
	/* The elements differ from the first in id and index, and only the
	 * first holds the idempotency key (the store's copy of the others has
	 * none: a journal write of theirs must not claim the first's key). */
	for (int k = 0; rc == 0 && k < n; k++) {
		job->id = ids[k];
		job->array_index = req->array_first + k;
		if (k == 1)
			job->idem_key[0] = '\0';
		if (cd__active_add(d, job, d->now.mono_ms))
			cd__logf(d,
				 "job %llu: out of memory queueing it; it runs after a "
				 "restart",
				 (unsigned long long)job->id);
	}
	if (rc == 0) {
		job->id = ids[0];
		job->array_index = req->array_first;
		snprintf(job->idem_key, sizeof(job->idem_key), "%s", req->idem_key);
	}
	if (rc == 0)
		cd__logf(d, "jobs %llu..%llu: submitted as array %d-%d",
			 (unsigned long long)ids[0], (unsigned long long)ids[n - 1],
			 req->array_first, req->array_last);
	free(ids);
	return rc;
}

/* CD_EQUOTA when req would take peer's queued jobs past user_max_queued
 * (root's included: the cap guards the daemon, not a privilege). */
static int check_quota(const struct cd_daemon *d, const struct cd_peer *peer,
		       const struct cd_submit *req, struct colloc_diag *diag)
{
	uint64_t mine = 0,
		 adds = req->array ? (uint64_t)(req->array_last - req->array_first + 1)
				   : 1;

	if (d->cfg.user_max_queued == 0)
		return 0;
	for (size_t k = 0; k < d->n_act; k++)
		mine += d->act[k].job.state == CD_JOB_QUEUED &&
			d->act[k].job.uid == peer->uid;
	if (mine + adds <= d->cfg.user_max_queued)
		return 0;
	return colloc_diag_set(diag, CD_EQUOTA,
			       "uid %u has %llu job(s) queued; %llu more would pass "
			       "user_max_queued = %llu (collocd.conf); wait for some to "
			       "start or cancel some",
			       peer->uid, (unsigned long long)mine,
			       (unsigned long long)adds,
			       (unsigned long long)d->cfg.user_max_queued);
}

int cd_daemon_submit(struct cd_daemon *d, const struct cd_peer *peer,
		     const struct cd_submit *req, struct cd_job *job,
		     struct colloc_diag *diag)
{
	const struct passwd *pw = getpwuid(peer->uid);
	uint64_t hist_peak = 0;
	double hist_util = -1;
	char a[32], lim[32];
	int rc;

	if (!pw && d->euid == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "uid %u has no user name: a job cannot run as it",
				       peer->uid);
	if (req->idem_key[0]) {
		rc = cd_store_job_by_idem(d->store, peer->uid, req->idem_key, job, diag);
		if (rc == 0)
			return CD_SUBMIT_REPLAYED;
		if (rc != COLLOC_ENOTFOUND)
			return rc;
	}
	if ((unsigned)req->n_gpus > d->n_gpus)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "the job asks for %d GPUs; this server has %u",
				       req->n_gpus, d->n_gpus);
	if (req->array && (req->array_first < 0 || req->array_last < req->array_first ||
			   req->array_last - req->array_first >= CD_ARRAY_MAX))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field 'array': at most %d jobs, first <= last",
				       CD_ARRAY_MAX);
	if ((rc = check_deps(d, peer, req, diag)) ||
	    (rc = check_quota(d, peer, req, diag)))
		return rc;
	cd_job_init(job);
	job->uid = peer->uid;
	job->gid = peer->gid;
	if (pw)
		snprintf(job->user, sizeof(job->user), "%s", pw->pw_name);
	else
		snprintf(job->user, sizeof(job->user), "%u", peer->uid);
	job->state = CD_JOB_QUEUED;
	job->n_gpus = req->n_gpus;
	job->priority = req->priority;
	job->exclusive = req->exclusive;
	snprintf(job->model, sizeof(job->model), "%s", req->model);
	snprintf(job->cwd, sizeof(job->cwd), "%s", req->cwd);
	job->argv_json = strdup(req->argv_json);
	job->env_json = strdup(req->env_json);
	if (!job->argv_json || !job->env_json) {
		cd_job_fini(job);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	if (req->name[0])
		snprintf(job->name, sizeof(job->name), "%s", req->name);
	else
		base_name(req->argv_json, job->name, sizeof(job->name));
	cd_job_history_key(job->argv_json, job->cwd, job->model, job->key);
	snprintf(job->idem_key, sizeof(job->idem_key), "%s", req->idem_key);
	if (cd_store_peak_lookup(d->store, job->key, &hist_peak, &hist_util, NULL) != 0) {
		hist_peak = 0;
		hist_util = -1;
	}
	if (req->mem_bytes) {
		job->mem_need_bytes = req->mem_bytes;
		snprintf(job->mem_source, sizeof(job->mem_source), "%s", req->mem_source);
	} else if (hist_peak) {
		job->mem_need_bytes = hist_peak;
		snprintf(job->mem_source, sizeof(job->mem_source), "history");
	} else {
		job->mem_need_bytes = d->cfg.default_mem_bytes;
		snprintf(job->mem_source, sizeof(job->mem_source), "default");
	}
	if ((rc = need_fits(d, job->mem_need_bytes, job->mem_source, diag))) {
		cd_job_fini(job);
		return rc;
	}
	choose_util(d, req, hist_util, job);
	job->submit_ms = d->now.wall_ms;
	job->time_limit_ms = req->time_limit_ms;
	job->held = req->hold;
	job->n_deps = req->n_deps;
	memcpy(job->deps, req->deps, sizeof(job->deps));
	if (req->array)
		job->array_max_running = req->array_max_running;
	if ((rc = commit_new(d, req, job, diag))) {
		cd_job_fini(job);
		return rc;
	}
	lim[0] = '\0';
	if (job->time_limit_ms > 0) {
		char t[24];

		colloc_duration_format(job->time_limit_ms, t, sizeof(t));
		snprintf(lim, sizeof(lim), ", time limit %s", t);
	}
	cd__event(d, job->id, "submit",
		  "by %s (uid %u): %s, %d GPU(s), need %s (%s), util %.0f%% (%s)%s%s%s",
		  job->user, job->uid, job->name, job->n_gpus,
		  colloc_format_bytes(job->mem_need_bytes, a, sizeof(a)), job->mem_source,
		  job->util_pred * 100.0, job->util_source, lim,
		  job->n_deps ? ", with dependencies" : "", job->held ? ", held" : "");
	d->dirty = true;
	return 0;
}

/* --- changing a job ------------------------------------------------------------- */

int cd_daemon_hold(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		   bool hold, struct cd_job *job, struct colloc_diag *diag)
{
	int rc = cd_daemon_get(d, peer, id, job, diag);

	if (rc)
		return rc;
	if (job->state != CD_JOB_QUEUED)
		return colloc_diag_set(
			diag, CD_ECONFLICT, "job %llu is %s: only queued jobs can be %s",
			(unsigned long long)id, cd_job_state_name(job->state),
			hold ? "held" : "released");
	if (!hold && !job->held)
		return colloc_diag_set(diag, CD_ECONFLICT, "job %llu is not held",
				       (unsigned long long)id);
	if (hold == job->held)
		return 0;
	job->held = hold;
	if ((rc = cd__journal(d, job, diag)))
		return rc;
	cd__event(d, id, hold ? "hold" : "release", "%s by uid %u",
		  hold ? "held" : "released", peer->uid);
	d->dirty = true;
	return 0;
}

int cd_daemon_requeue(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		      struct cd_job *job, struct colloc_diag *diag)
{
	int rc = cd_daemon_get(d, peer, id, job, diag);
	int64_t age;

	if (rc)
		return rc;
	if (job->state == CD_JOB_QUEUED)
		return colloc_diag_set(diag, CD_ECONFLICT, "job %llu is queued already",
				       (unsigned long long)id);
	if (job->state == CD_JOB_RUNNING) {
		if (job->cancel_requested)
			return colloc_diag_set(diag, CD_ECONFLICT,
					       "job %llu is being stopped already",
					       (unsigned long long)id);
		job->cancel_requested = true;
		job->stop_cause = CD_STOP_REQUEUE;
		if ((rc = cd__journal(d, job, diag)))
			return rc;
		cd__event(d, id, "requeue",
			  "requeue requested by uid %u; stopping it to queue it again",
			  peer->uid);
		if (job->sup_pid > 0 &&
		    cd_supervisor_cancel(job->sup_pid, job->sup_start, NULL) != 0)
			cd__check_supervisors(d);
		return 0;
	}
	cd__requeue_reset(job);
	snprintf(job->reason, sizeof(job->reason), "requeued by uid %u (it had ended %s)",
		 peer->uid, cd_job_state_name(job->state));
	job->state = CD_JOB_QUEUED;
	if ((rc = cd__journal(d, job, diag)))
		return rc;
	/* Its place in the queue is its submit time's, as after a restart. */
	age = d->now.wall_ms - job->submit_ms;
	(void)cd__active_add(d, job, d->now.mono_ms - (age > 0 ? age : 0));
	cd__event(d, id, "requeue", "%s", job->reason);
	d->dirty = true;
	return 0;
}

void cd__requeue_reset(struct cd_job *job)
{
	job->exit_code = -1;
	job->term_signal = 0;
	job->end_ms = 0;
	job->sup_pid = 0;
	job->sup_start = 0;
	job->job_pgid = 0;
	job->cancel_requested = false;
	job->stop_cause = CD_STOP_CANCEL;
}

int cd_daemon_update(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		     const struct cd_update *u, struct cd_job *job,
		     struct colloc_diag *diag)
{
	char what[96] = "", a[32];
	int rc = cd_daemon_get(d, peer, id, job, diag);

	if (rc)
		return rc;
	if (job->state != CD_JOB_QUEUED)
		return colloc_diag_set(diag, CD_ECONFLICT,
				       "job %llu is %s: only queued jobs can be updated",
				       (unsigned long long)id,
				       cd_job_state_name(job->state));
	if (u->mem_bytes && (rc = need_fits(d, u->mem_bytes, "request", diag)))
		return rc;
	if (u->mem_bytes) {
		job->mem_need_bytes = u->mem_bytes;
		snprintf(job->mem_source, sizeof(job->mem_source), "request");
		snprintf(what, sizeof(what), "need %s",
			 colloc_format_bytes(u->mem_bytes, a, sizeof(a)));
	}
	if (u->have_priority) {
		size_t n = strlen(what);

		job->priority = u->priority;
		snprintf(what + n, sizeof(what) - n, "%spriority %d", n ? ", " : "",
			 u->priority);
	}
	if (!what[0])
		return 0;
	if ((rc = cd__journal(d, job, diag)))
		return rc;
	cd__event(d, id, "update", "%s by uid %u", what, peer->uid);
	d->dirty = true;
	return 0;
}
