/*
 * schedule.c — the scheduling pass (colloc_sched_decide() over the active
 * jobs and the GPUs' last sample), the launches it decides, and the tick
 * that drives sampling and passes (daemon_int.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/sched.h"
#include "colloc/units.h"
#include "daemon/daemon_int.h"
#include "daemon/fault.h"
#include "daemon/launcher.h"
#include "daemon/mps.h"

/* argv/env JSON arrays as NULL-terminated arrays of pointers into the cJSON
 * tree *tree (the caller frees both). */
static const char **string_vector(const char *json, cJSON **tree)
{
	const cJSON *e;
	const char **v;
	int n, k = 0;

	*tree = json ? cJSON_Parse(json) : cJSON_CreateArray();
	if (!*tree || !cJSON_IsArray(*tree))
		return NULL;
	n = cJSON_GetArraySize(*tree);
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return NULL;
	cJSON_ArrayForEach(e, *tree)
	{
		if (!cJSON_IsString(e)) {
			free(v);
			return NULL;
		}
		v[k++] = e->valuestring;
	}
	return v;
}

/* COLLOC_JOB_ID and COLLOC_ARRAY_INDEX next to MPS's variables. */
_Static_assert(CD_MPS_ENV_MAX + 2 <= CD_LAUNCH_MAX_EXTRA,
	       "the launcher takes every variable a job gets");

/* Launch queued job *in as decided. in is copied first (it points into
 * d->act, which the commits below update). */
static void schedule_pass(struct cd_daemon *d);

static void launch(struct cd_daemon *d, const struct cd_job *in,
		   const struct colloc_sched_decision *dec)
{
	struct cd_job rec, *job = &rec;
	struct colloc_diag diag = {{0}};
	char lpath[CD_PATH_MAX + 64], spath[CD_PATH_MAX + 64];
	char visible[COLLOC_SCHED_MAX_GPUS * COLLOC_GPU_UUID_MAX];
	char mps[CD_MPS_ENV_MAX][CD_MPS_ENV_LEN];
	char id_env[48], index_env[48];
	const char *more_env[CD_LAUNCH_MAX_EXTRA + 1] = {NULL};
	size_t n_mps = 0, n_more = 0;
	struct cd_launch_spec spec;
	struct cd_launch_result res;
	struct run_stat *run;
	char need[32];
	cJSON *targ = NULL, *tenv = NULL;
	const char **argv, **envp;
	size_t off = 0;
	int rc;

	cd_job_init(&rec);
	if (cd_job_copy(&rec, in)) {
		cd__logf(d, "job %llu: out of memory launching it",
			 (unsigned long long)in->id);
		return;
	}
	job->state = CD_JOB_RUNNING;
	job->attempts++;
	job->n_assigned = dec->n_gpus;
	visible[0] = '\0';
	for (int k = 0; k < dec->n_gpus; k++) {
		snprintf(job->gpus[k], sizeof(job->gpus[k]), "%s",
			 d->slots[dec->gpus[k]].uuid);
		off += (size_t)snprintf(visible + off, sizeof(visible) - off, "%s%s",
					k ? "," : "", job->gpus[k]);
	}
	job->start_ms = d->now.wall_ms;
	job->end_ms = 0;
	job->exit_code = -1;
	job->term_signal = 0;
	job->sup_pid = 0;
	job->peak_bytes = 0;
	/* Committed before the fork: a daemon killed before the next commit
	 * finds a running job without a supervisor and queues it again. */
	cd__status_path(d, job->id, spath, sizeof(spath));
	unlink(spath);
	if (cd__journal(d, job, NULL)) {
		cd_job_fini(&rec);
		return;
	}
	cd_fault_point("launch-before-fork");
	argv = string_vector(job->argv_json, &targ);
	envp = string_vector(job->env_json, &tenv);
	rc = 0;
	/* An MPS client of its GPU's control daemon, with its own SM share and
	 * memory limit (mps.h); whole GPUs only: a MIG instance isolates its
	 * job already. */
	if (d->cfg.sharing == CD_SHARING_MPS && dec->n_gpus == 1 &&
	    !d->slots[dec->gpus[0]].isolated) {
		rc = cd_mps_job_env(d->mps_dir, d->info[d->slots[dec->gpus[0]].gpu].uuid,
				    job->util_pred,
				    (int)(d->cfg.mps_thread_share * 100.0 + 0.5),
				    job->mem_need_bytes, d->cfg.sched.headroom_bytes, mps,
				    &n_mps, &diag);
		for (size_t k = 0; k < n_mps; k++)
			more_env[n_more++] = mps[k];
	}
	/* Who it is, for its own logs and checkpoints (Slurm's
	 * SLURM_JOB_ID and SLURM_ARRAY_TASK_ID). */
	snprintf(id_env, sizeof(id_env), "COLLOC_JOB_ID=%llu",
		 (unsigned long long)job->id);
	more_env[n_more++] = id_env;
	if (job->array_id) {
		snprintf(index_env, sizeof(index_env), "COLLOC_ARRAY_INDEX=%d",
			 job->array_index);
		more_env[n_more++] = index_env;
	}
	(void)cd_daemon_log_path(d, job->id, lpath, sizeof(lpath), NULL);
	memset(&spec, 0, sizeof(spec));
	spec.job_id = job->id;
	spec.argv = argv;
	spec.envp = envp;
	spec.cwd = job->cwd;
	spec.uid = job->uid;
	spec.gid = job->gid;
	spec.user = job->user;
	spec.cuda_visible_devices = visible;
	spec.extra_env = d->job_env;
	spec.more_env = more_env;
	spec.stdout_path = lpath;
	spec.stderr_path = lpath;
	spec.status_path = spath;
	spec.kill_grace_ms = d->cfg.kill_grace_ms;
	spec.cgroup_fd = -1;
	if (d->cg.on) {
		struct colloc_diag cdiag = {{0}};

		spec.cgroup_fd = cd_cgroup_open(&d->cg, job->id, &cdiag);
		spec.in_cgroup = spec.cgroup_fd >= 0;
		if (!spec.in_cgroup)
			cd__logf(d, "job %llu: runs without a cgroup: %s",
				 (unsigned long long)job->id, cdiag.msg);
	}
	if (!rc && (!argv || !envp))
		rc = colloc_diag_set(&diag, COLLOC_EFORMAT,
				     "stored argv/env are corrupt");
	else if (!rc)
		rc = cd_launch(&spec, &res, &diag);
	if (spec.in_cgroup)
		close(spec.cgroup_fd);
	free(argv);
	free(envp);
	cJSON_Delete(targ);
	cJSON_Delete(tenv);
	if (rc) {
		job->state = CD_JOB_FAILED;
		job->end_ms = d->now.wall_ms;
		snprintf(job->reason, sizeof(job->reason), "cannot launch: %s", diag.msg);
		cd__event(d, job->id, "setup-failed", "%s", job->reason);
		(void)cd__journal(d, job, NULL);
		cd_job_fini(&rec);
		return;
	}
	cd_fault_point("launch-after-fork");
	job->sup_pid = res.sup_pid;
	job->sup_start = res.sup_start;
	job->job_pgid = res.job_pgid;
	(void)cd__journal(d, job, NULL);
	run = cd__run_add(d, job);
	if (run)
		run->limit_start_mono_ms = d->now.mono_ms;
	else
		cd__logf(d, "job %llu: out of memory tracking it",
			 (unsigned long long)job->id);
	cd__event(d, job->id, "start", "attempt %d on %s, need %s (%s), pid %lld",
		  job->attempts, visible,
		  colloc_format_bytes(job->mem_need_bytes, need, sizeof(need)),
		  job->mem_source, (long long)res.job_pgid);
	cd_job_fini(&rec);
}

/* Grow d's pass arrays to n_gpus slots and n_jobs jobs. 0, or -ENOMEM with
 * the old arrays kept. */
static int pass_arrays(struct cd_daemon *d, size_t n_gpus, size_t n_jobs)
{
	if (n_gpus < 1)
		n_gpus = 1;
	if (n_jobs < 1)
		n_jobs = 1;
	if (n_gpus > d->pass_cap_gpus) {
		void *p = realloc(d->pass_gpus, n_gpus * sizeof(*d->pass_gpus));

		if (!p)
			return -ENOMEM;
		d->pass_gpus = p;
		d->pass_cap_gpus = n_gpus;
	}
	if (n_jobs > d->pass_cap_jobs) {
		size_t cap = n_jobs + n_jobs / 2;
		void *r = realloc(d->pass_running, cap * sizeof(*d->pass_running));

		if (r)
			d->pass_running = r;
		r = r ? realloc(d->pass_queue, cap * sizeof(*d->pass_queue)) : NULL;
		if (r)
			d->pass_queue = r;
		r = r ? realloc(d->pass_dec, cap * sizeof(*d->pass_dec)) : NULL;
		if (!r)
			return -ENOMEM;
		d->pass_dec = r;
		d->pass_cap_jobs = cap;
	}
	return 0;
}

/* --- what may start ----------------------------------------------------- */

/* Whether one of job's unmet dependencies has left memory (it ended, or
 * was deleted): only then is the store asked. */
static bool deps_to_resolve(struct cd_daemon *d, const struct cd_job *job)
{
	for (int k = 0; k < job->n_deps; k++)
		if (!job->deps[k].met && !cd__active(d, job->deps[k].id))
			return true;
	return false;
}

/* Whether the dependency dp (not active any more) is met by how its job
 * ended; false with why in why when it never can be. */
static bool dep_met(struct cd_daemon *d, const struct cd_dep *dp, char *why, size_t len)
{
	struct cd_job other;
	char out[48];
	int rc = cd_store_job_get(d->store, dp->id, &other, NULL);

	if (rc == COLLOC_ENOTFOUND) {
		snprintf(why, len, "dependency job %llu no longer exists",
			 (unsigned long long)dp->id);
		return false;
	}
	if (rc) {
		why[0] = '\0'; /* the store failed: try again next pass */
		return false;
	}
	if (other.state == CD_JOB_DONE || dp->kind == COLLOC_DEP_ANY ||
	    !cd_job_state_final(other.state)) {
		bool met = cd_job_state_final(other.state);

		cd_job_fini(&other);
		why[0] = '\0';
		return met;
	}
	if (other.term_signal > 0)
		snprintf(out, sizeof(out), ", signal %d", other.term_signal);
	else if (other.exit_code >= 0)
		snprintf(out, sizeof(out), ", exit %d", other.exit_code);
	else
		out[0] = '\0';
	snprintf(why, len,
		 "dependency job %llu ended %s%s; --after %llu:ok can never be satisfied",
		 (unsigned long long)dp->id, cd_job_state_name(other.state), out,
		 (unsigned long long)dp->id);
	cd_job_fini(&other);
	return false;
}

/* Look at the dependencies of queued job *in that have ended: mark those
 * met, or fail the job when one never can be. Returns whether the job
 * left d->act. in is copied first. */
static bool resolve_deps(struct cd_daemon *d, const struct cd_job *in)
{
	struct cd_job rec;
	char why[CD_REASON_MAX] = "";
	bool changed = false, failed = false;

	cd_job_init(&rec);
	if (cd_job_copy(&rec, in))
		return false;
	for (int k = 0; k < rec.n_deps && !failed; k++) {
		struct cd_dep *dp = &rec.deps[k];

		if (dp->met || cd__active(d, dp->id))
			continue;
		if (dep_met(d, dp, why, sizeof(why)))
			dp->met = changed = true;
		else if (why[0])
			failed = true;
	}
	if (failed) {
		rec.state = CD_JOB_FAILED;
		rec.end_ms = d->now.wall_ms;
		snprintf(rec.reason, sizeof(rec.reason), "%s", why);
	}
	if ((failed || changed) && cd__journal(d, &rec, NULL) == 0 && failed)
		cd__event(d, rec.id, "dependency", "%s", rec.reason);
	else
		failed = false;
	cd_job_fini(&rec);
	return failed;
}

/* Before a pass: settle the dependencies whose jobs have ended. A job that
 * fails here may let its own dependents fail in the same sweep: they come
 * later (higher ids). */
static void settle_deps(struct cd_daemon *d)
{
	for (size_t k = 0; k < d->n_act;) {
		const struct cd_job *j = &d->act[k].job;

		if (j->state == CD_JOB_QUEUED && j->n_deps > 0 && deps_to_resolve(d, j) &&
		    resolve_deps(d, j))
			continue; /* it left d->act: k is the next job now */
		k++;
	}
}

/* Whether queued job j waits for an unmet dependency. */
static bool deps_unmet(const struct cd_job *j)
{
	for (int k = 0; k < j->n_deps; k++)
		if (!j->deps[k].met)
			return true;
	return false;
}

/* Running elements of array id. Its elements have consecutive ids (one
 * transaction made them), so they sit together in d->act from id on. */
static int array_running(const struct cd_daemon *d, size_t from, uint64_t array_id)
{
	int n = 0;

	for (size_t k = from; k < d->n_act && d->act[k].job.id < array_id + CD_ARRAY_MAX;
	     k++)
		n += d->act[k].job.array_id == array_id &&
		     d->act[k].job.state == CD_JOB_RUNNING;
	return n;
}

/* --- the pass ------------------------------------------------------------ */

void cd__schedule(struct cd_daemon *d)
{
	/* A launch needs the state dir (its log, status and claim): look
	 * before each pass, not only at the sample. */
	cd__state_check(d);
	if (d->state_broken)
		return; /* said once by cd__state_check() */
	schedule_pass(d);
}

/* A running job on GPU g ends by end (monotonic ms; -1: unknown): g
 * empties by the latest end of its jobs, or at an unknown time (-1 until
 * the pass turns it into the scheduler's 0) once one of them is unknown. */
static void note_busy(struct colloc_sched_gpu *g, int64_t end)
{
	if (g->busy_until_ms < 0)
		return;
	if (end < 0 || end > g->busy_until_ms)
		g->busy_until_ms = end;
}

static void schedule_pass(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	struct colloc_sched_gpu *gs = NULL;
	struct colloc_sched_running *rs = NULL;
	struct colloc_sched_job *qs = NULL;
	struct colloc_sched_decision *ds = NULL;
	struct colloc_sched_state st;
	size_t n, n_q = 0, n_r = 0, n_dec = 0;
	int64_t now = d->now.mono_ms;
	uint64_t cur_array = 0; /* the array whose elements the loop is in */
	int array_room = 0; /* how many more of it may start */

	settle_deps(d);
	n = d->n_act;
	if (pass_arrays(d, d->n_slots, n)) {
		cd__logf(d, "scheduling skipped: out of memory");
		d->queued_left = true;
		return;
	}
	gs = d->pass_gpus;
	rs = d->pass_running;
	qs = d->pass_queue;
	ds = d->pass_dec;
	memset(gs, 0, (d->n_slots ? d->n_slots : 1) * sizeof(*gs));
	for (size_t k = 0; k < d->n_slots; k++) {
		const struct slot *sl = &d->slots[k];
		const struct colloc_gpu_info *in = &d->info[sl->gpu];
		const char *src;

		gs[k].node = 0;
		gs[k].mem_total_bytes = sl->total_bytes;
		gs[k].mem_used_bytes = sl->used_bytes;
		gs[k].util = cd__gpu_activity(in, &src);
		if (src != d->activity_src) {
			/* Said once, and again whenever it changes. */
			cd__logf(d, "scheduling on %s", src);
			d->activity_src = src;
		}
		gs[k].usable = d->gpu_ok[sl->gpu];
		gs[k].isolated = sl->isolated;
	}
	for (size_t k = 0; k < n; k++) {
		const struct cd_job *j = &d->act[k].job;

		if (j->state == CD_JOB_QUEUED) {
			struct colloc_sched_job *q;

			/* Held jobs and unmet dependencies wait outside the
			 * pass; so do elements of an array at its limit. */
			if (j->held || deps_unmet(j))
				continue;
			if (j->array_id && j->array_max_running > 0) {
				if (j->array_id != cur_array) {
					size_t from = k;

					while (from > 0 &&
					       d->act[from - 1].job.id >= j->array_id)
						from--;
					cur_array = j->array_id;
					array_room = j->array_max_running -
						     array_running(d, from, j->array_id);
				}
				if (array_room-- <= 0)
					continue;
			}
			q = &qs[n_q++];

			memset(q, 0, sizeof(*q));
			q->id = j->id;
			q->n_gpus = j->n_gpus;
			q->mem_need_bytes = j->mem_need_bytes;
			q->util_pred = j->util_pred;
			q->priority = j->priority;
			q->submit_ms = d->act[k].submit_mono_ms; /* monotonic, as now */
			q->exclusive = j->exclusive;
			/* Its time limit bounds how long it runs: what the soft
			 * bound weighs sharing against (0: unknown, gated). */
			q->walltime_ms = j->time_limit_ms;
		} else {
			struct colloc_sched_running *r = &rs[n_r];
			const struct run_stat *s = cd__run_find(d, j->id);
			bool ok = true;
			int64_t end;

			/* It ends by its time limit at the latest; none: when
			 * its GPUs empty is unknown. */
			end = j->time_limit_ms > 0
				      ? cd__limit_start(d, j) + j->time_limit_ms
				      : -1;
			memset(r, 0, sizeof(*r));
			r->job_id = j->id;
			r->n_gpus = j->n_assigned;
			r->mem_need_bytes = j->mem_need_bytes;
			r->util_pred = j->util_pred;
			r->exclusive = j->exclusive;
			r->at_peak = true;
			for (int i = 0; i < j->n_assigned; i++) {
				uint64_t used = s ? s->used_bytes[i] : 0;

				r->gpus[i] = cd__slot_index(d, j->gpus[i]);
				ok = ok && r->gpus[i] >= 0;
				if (used > r->mem_used_bytes)
					r->mem_used_bytes = used;
				if (r->gpus[i] >= 0)
					note_busy(&gs[r->gpus[i]], end);
			}
			r->at_peak = s ? cd__at_peak(d, j->mem_need_bytes,
						     s->start_mono_ms, r->mem_used_bytes)
				       : false; /* untracked: keep its reservation */
			if (ok && r->n_gpus > 0)
				n_r++;
		}
	}
	for (size_t k = 0; k < d->n_slots; k++)
		if (gs[k].busy_until_ms < 0)
			gs[k].busy_until_ms = 0; /* a job without a limit */
	/* Until a pass has started them all, every sample asks for one. */
	d->queued_left = n_q > 0;
	if (n_q == 0)
		goto out;
	st.gpus = gs;
	st.n_gpus = (int)d->n_slots;
	st.running = rs;
	st.n_running = n_r;
	st.now_ms = now;
	st.rr_cursor = d->rr_cursor;
	if (colloc_sched_decide(&d->cfg.sched, &st, qs, n_q, ds, n_q, &n_dec,
				&d->rr_cursor, &diag)) {
		cd__logf(d, "scheduling failed: %s", diag.msg);
		goto out;
	}
	d->queued_left = n_dec < n_q;
	/* d->act changes with every launch: look each decision's job up. */
	for (size_t k = 0; k < n_dec; k++) {
		const struct cd_active *a = cd__active(d, ds[k].job_id);

		if (a && a->job.state == CD_JOB_QUEUED)
			launch(d, &a->job, &ds[k]);
	}
out:
	return;
}

int64_t cd_daemon_tick(struct cd_daemon *d, bool force_sample)
{
	int64_t now_ms = d->now.mono_ms, next;

	cd__enforce_limits(d);
	if (force_sample || d->last_sample_ms == INT64_MIN ||
	    now_ms - d->last_sample_ms >= d->cfg.sample_ms) {
		cd__state_check(d);
		cd__check_supervisors(d);
		cd__cgroup_sweep(d);
		cd__enforce_log_caps(d);
		cd__sample(d);
		d->last_sample_ms = now_ms;
		/* Usage changed and reservations may have lapsed: that can
		 * start a waiting job, and nothing else. */
		d->dirty = d->dirty || d->queued_left;
	}
	if (d->dirty) {
		struct timespec t0, t1;

		d->dirty = false;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cd__schedule(d);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		d->sched.passes++;
		d->sched.last_s = (double)(t1.tv_sec - t0.tv_sec) +
				  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		d->sched.total_s += d->sched.last_s;
	}
	next = d->last_sample_ms == INT64_MIN
		       ? 0
		       : d->last_sample_ms + d->cfg.sample_ms - now_ms;
	return next < 0 ? 0 : next;
}
