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

#include "colloc/units.h"
#include "daemon/daemon_int.h"
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
	if (job->cancel_requested)
		return 0;
	job->cancel_requested = true;
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

int cd_daemon_submit(struct cd_daemon *d, const struct cd_peer *peer,
		     const struct cd_submit *req, struct cd_job *job,
		     struct colloc_diag *diag)
{
	const struct passwd *pw = getpwuid(peer->uid);
	uint64_t hist_peak = 0, largest = cd__largest_gpu(d);
	double hist_util = -1;
	char a[32], b[32];
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
	if (job->mem_need_bytes > largest ||
	    largest - job->mem_need_bytes < d->cfg.sched.headroom_bytes) {
		char h[32];

		rc = colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"the job needs %s per GPU (%s) plus %s headroom; the largest "
			"GPU here has %s, so it could never start",
			colloc_format_bytes(job->mem_need_bytes, a, sizeof(a)),
			job->mem_source,
			colloc_format_bytes(d->cfg.sched.headroom_bytes, h, sizeof(h)),
			colloc_format_bytes(largest, b, sizeof(b)));
		cd_job_fini(job);
		return rc;
	}
	choose_util(d, req, hist_util, job);
	job->submit_ms = d->now.wall_ms;
	if ((rc = cd_store_job_insert(d->store, job, diag))) {
		cd_job_fini(job);
		return rc;
	}
	if (cd__active_add(d, job, d->now.mono_ms))
		cd__logf(d,
			 "job %llu: out of memory queueing it; it runs after a restart",
			 (unsigned long long)job->id);
	cd__event(d, job->id, "submit",
		  "by %s (uid %u): %s, %d GPU(s), need %s (%s), util %.0f%% (%s)",
		  job->user, job->uid, job->name, job->n_gpus,
		  colloc_format_bytes(job->mem_need_bytes, a, sizeof(a)), job->mem_source,
		  job->util_pred * 100.0, job->util_source);
	d->dirty = true;
	return 0;
}

/* One job's (last) run on one GPU, for counting jobs that shared one. */
struct run_span {
	const char *uuid;
	int64_t start, end;
	size_t job; /* index into the job array */
};
