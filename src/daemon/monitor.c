/*
 * monitor.c — what collocd's core sees: GPU samples and their history, the
 * slots jobs are placed on, each running job's memory and activity, the
 * start-up reservations, and the server's statistics (daemon_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/units.h"
#include "daemon/daemon_int.h"
#include "daemon/launcher.h"

struct run_stat *cd__run_find(struct cd_daemon *d, uint64_t id)
{
	for (size_t k = 0; k < d->n_runs; k++)
		if (d->runs[k].id == id)
			return &d->runs[k];
	return NULL;
}

int cd__slot_index(const struct cd_daemon *d, const char *uuid)
{
	for (size_t k = 0; k < d->n_slots; k++)
		if (strcmp(d->slots[k].uuid, uuid) == 0)
			return (int)k;
	return -1;
}

static int add_slot(struct cd_daemon *d, const char *uuid, unsigned gpu, bool isolated,
		    uint64_t total, uint64_t free_bytes)
{
	struct slot *sl;

	if (d->n_slots == d->cap_slots) {
		size_t cap = d->cap_slots ? d->cap_slots * 2 : 8;
		struct slot *ns = realloc(d->slots, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		d->slots = ns;
		d->cap_slots = cap;
	}
	sl = &d->slots[d->n_slots++];
	snprintf(sl->uuid, sizeof(sl->uuid), "%s", uuid);
	sl->gpu = gpu;
	sl->isolated = isolated;
	sl->total_bytes = total;
	sl->used_bytes = free_bytes <= total ? total - free_bytes : total;
	return 0;
}

/* Rebuild the slots from the GPUs' last sample and point the running jobs
 * at them again (a MIG layout may change between samples). */
static void rebuild_slots(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};

	d->n_slots = 0;
	for (unsigned g = 0; g < d->n_gpus; g++) {
		const struct colloc_gpu_info *in = &d->info[g];
		size_t n = 0;

		if (in->mig_mode == 1 && d->gpu_ok[g] &&
		    colloc_gpu_mig_instances(d->gpu, g, d->migs, MAX_MIG, &n, &diag) ==
			    0) {
			for (size_t k = 0; k < n && k < MAX_MIG; k++)
				(void)add_slot(d, d->migs[k].uuid, g, true,
					       d->migs[k].mem_total_bytes,
					       d->migs[k].mem_free_bytes);
			continue;
		}
		(void)add_slot(d, in->uuid, g, false, in->mem_total_bytes,
			       in->mem_free_bytes);
	}
	for (size_t k = 0; k < d->n_runs; k++)
		for (int i = 0; i < d->runs[k].n_gpus; i++)
			d->runs[k].gpus[i] = cd__slot_index(d, d->runs[k].uuid[i]);
}

struct run_stat *cd__run_add(struct cd_daemon *d, const struct cd_job *job)
{
	struct run_stat *r = cd__run_find(d, job->id);

	if (!r) {
		if (d->n_runs == d->cap_runs) {
			size_t cap = d->cap_runs ? d->cap_runs * 2 : 16;
			struct run_stat *nr = realloc(d->runs, cap * sizeof(*nr));

			if (!nr)
				return NULL;
			d->runs = nr;
			d->cap_runs = cap;
		}
		r = &d->runs[d->n_runs++];
	}
	memset(r, 0, sizeof(*r));
	r->id = job->id;
	r->sup_pid = job->sup_pid;
	r->n_gpus = job->n_assigned;
	for (int k = 0; k < r->n_gpus; k++) {
		snprintf(r->uuid[k], sizeof(r->uuid[k]), "%s", job->gpus[k]);
		r->gpus[k] = cd__slot_index(d, job->gpus[k]);
	}
	r->peak_bytes = job->peak_bytes;
	r->need_bytes = job->mem_need_bytes;
	r->start_mono_ms = d->now.mono_ms;
	return r;
}

void cd__run_remove(struct cd_daemon *d, uint64_t id)
{
	struct run_stat *r = cd__run_find(d, id);

	if (r)
		*r = d->runs[--d->n_runs];
}

/* --- reservations ------------------------------------------------------ */

bool cd__at_peak(const struct cd_daemon *d, uint64_t need_bytes, int64_t start_mono_ms,
		 uint64_t used)
{
	/* The scheduler core owns the rule (colloc/sched.h). */
	return colloc_sched_reserved_bytes(need_bytes, used, start_mono_ms,
					   d->now.mono_ms, d->cfg.reserve_ms) == 0;
}

/* Per GPU: what running jobs that have not reached their need yet still
 * hold back (the scheduler's start-up reservation). */

int cd_daemon_gpu(struct cd_daemon *d, unsigned index, struct colloc_gpu_info *info,
		  uint64_t *reserved_bytes, uint64_t *jobs, size_t cap, size_t *n_jobs,
		  struct colloc_diag *diag)
{
	if (index >= d->n_gpus)
		return colloc_diag_set(diag, COLLOC_ENOTFOUND, "no GPU %u", index);
	*info = d->info[index];
	*reserved_bytes = 0;
	*n_jobs = 0;
	for (size_t k = 0; k < d->n_runs; k++) {
		const struct run_stat *r = &d->runs[k];

		for (int i = 0; i < r->n_gpus; i++) {
			if (r->gpus[i] < 0 || d->slots[r->gpus[i]].gpu != index)
				continue;
			if (*n_jobs < cap)
				jobs[*n_jobs] = r->id;
			++*n_jobs;
			if (!cd__at_peak(d, r->need_bytes, r->start_mono_ms,
					 r->used_bytes[i]))
				*reserved_bytes += r->need_bytes - r->used_bytes[i];
		}
	}
	return 0;
}

uint64_t cd__largest_gpu(const struct cd_daemon *d)
{
	uint64_t m = 0;

	for (size_t k = 0; k < d->n_slots; k++)
		if (d->slots[k].total_bytes > m)
			m = d->slots[k].total_bytes;
	return m;
}

/*
 * How busy GPU g is, 0..1, for the scheduler and the jobs' mean activity:
 * DCGM's SM activity when the backend has it (the fraction of SMs with work,
 * which NVML's "utilization" overstates: one busy block reads as 100%),
 * else NVML's utilization, else 0. *src says which.
 */
double cd__gpu_activity(const struct colloc_gpu_info *in, const char **src)
{
	if (in->sm_active >= 0) {
		*src = "SM activity (DCGM)";
		return in->sm_active;
	}
	if (in->util_pct >= 0) {
		*src = "GPU utilization (no DCGM SM activity)";
		return in->util_pct / 100.0;
	}
	*src = "nothing (no activity measure; counted as idle)";
	return 0;
}

/* Whether the scheduler measures activity as DCGM's SM activity (some
 * usable GPU has it) rather than NVML's utilization: which of a graph
 * prediction's two figures compares with what it sees. */
bool cd__activity_is_sm(const struct cd_daemon *d)
{
	for (size_t k = 0; k < d->n_slots; k++) {
		const struct colloc_gpu_info *in = &d->info[d->slots[k].gpu];

		if (d->gpu_ok[d->slots[k].gpu] && in->sm_active >= 0)
			return true;
	}
	return false;
}

/* Process *p on GPU g belongs to no running job: count it, and log it
 * the first time it is seen (while it stays, it is not logged again). */
static void note_unowned(struct cd_daemon *d, unsigned g,
			 const struct colloc_gpu_process *p)
{
	struct cd_unowned *u = &d->unowned[g];
	char b[32];
	bool seen = false;

	if (u->n < CD_UNOWNED_MAX)
		u->procs[u->n] = *p;
	u->n++;
	u->bytes += p->used_bytes;
	for (size_t k = 0; k < u->n_logged && k < CD_UNOWNED_MAX; k++)
		seen = seen || u->logged[k] == p->pid;
	if (seen)
		return;
	cd__logf(d,
		 "GPU %u: process %lld holds %s and belongs to no job collocd runs "
		 "(a job's leftover, or started outside collocd); its memory is "
		 "counted as used",
		 g, (long long)p->pid, colloc_format_bytes(p->used_bytes, b, sizeof(b)));
	/* The last CD_UNOWNED_MAX logged, oldest overwritten. */
	u->logged[u->n_logged++ % CD_UNOWNED_MAX] = p->pid;
}

int cd_daemon_gpu_unowned(const struct cd_daemon *d, unsigned index,
			  struct colloc_gpu_process *procs, size_t *n, uint64_t *bytes)
{
	const struct cd_unowned *u;

	*n = 0;
	*bytes = 0;
	if (index >= d->n_gpus)
		return COLLOC_ENOTFOUND;
	u = &d->unowned[index];
	*n = u->n;
	*bytes = u->bytes;
	memcpy(procs, u->procs,
	       (u->n < CD_UNOWNED_MAX ? u->n : CD_UNOWNED_MAX) * sizeof(*procs));
	return 0;
}

void cd__sample(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	int64_t now = d->now.mono_ms;
	double dt = d->prev_sample_ms > 0 ? (double)(now - d->prev_sample_ms) : 0;
	double gpu_util = 0, mem = 0;

	for (size_t k = 0; k < d->n_runs; k++)
		memset(d->runs[k].used_bytes, 0, sizeof(d->runs[k].used_bytes));
	for (unsigned g = 0; g < d->n_gpus; g++) {
		bool was_ok = d->gpu_ok[g];
		struct colloc_gpu_info now_info;

		/* A GPU that does not answer keeps its last good figures (its
		 * size still says which jobs it could take when it is back). */
		if (colloc_gpu_info(d->gpu, g, &now_info, &diag) != 0) {
			d->gpu_ok[g] = false;
			if (was_ok)
				cd__logf(d,
					 "GPU %u: cannot read it, not scheduling on it: "
					 "%s",
					 g, diag.msg);
			continue;
		}
		d->info[g] = now_info;
		d->gpu_ok[g] = true;
		if (!was_ok)
			cd__logf(d, "GPU %u (%s) is back", g, d->info[g].uuid);
	}
	rebuild_slots(d);
	for (unsigned g = 0; g < d->n_gpus; g++) {
		struct cd_gpu_sample *h =
			&d->hist[(size_t)g * CD_HISTORY_MAX + d->hist_next];

		h->ts_ms = d->now.wall_ms;
		h->mem_used_bytes = d->info[g].mem_used_bytes;
		h->util_pct = d->info[g].util_pct;
		h->sm_active = d->info[g].sm_active;
		h->power_mw = d->info[g].power_mw;
		h->up = d->gpu_ok[g];
	}
	d->hist_next = (d->hist_next + 1) % CD_HISTORY_MAX;
	if (d->hist_len < CD_HISTORY_MAX)
		d->hist_len++;
	/* NVML reports host pids on the physical GPU (MIG instances
	 * included); a job's processes share its supervisor's session. */
	for (unsigned g = 0; g < d->n_gpus; g++) {
		size_t n = 0;

		if (!d->gpu_ok[g] ||
		    colloc_gpu_processes(d->gpu, g, d->procs, MAX_PROCS, &n, &diag) != 0)
			continue;
		if (n > MAX_PROCS)
			n = MAX_PROCS;
		d->unowned[g].n = 0;
		d->unowned[g].bytes = 0;
		for (size_t p = 0; p < n; p++) {
			int64_t sid = cd_process_session(d->procs[p].pid);
			bool owned = false;

			for (size_t k = 0; sid > 0 && k < d->n_runs; k++) {
				struct run_stat *r = &d->runs[k];

				if (r->sup_pid != sid)
					continue;
				owned = true;
				for (int i = 0; i < r->n_gpus; i++)
					if (r->gpus[i] >= 0 &&
					    d->slots[r->gpus[i]].gpu == g)
						r->used_bytes[i] +=
							d->procs[p].used_bytes;
			}
			if (!owned)
				note_unowned(d, g, &d->procs[p]);
		}
	}
	/* The state since the previous sample is taken to be what this one
	 * sees (sample-and-hold), counted only while some job runs. */
	for (unsigned g = 0; g < d->n_gpus; g++) {
		if (d->info[g].util_pct > 0)
			gpu_util += d->info[g].util_pct / 100.0;
		if (d->info[g].mem_total_bytes)
			mem += (double)d->info[g].mem_used_bytes /
			       (double)d->info[g].mem_total_bytes;
	}
	if (d->n_runs > 0 && d->n_gpus > 0) {
		d->busy_ms += dt;
		d->util_ms += dt * gpu_util / d->n_gpus;
		d->mem_ms += dt * mem / d->n_gpus;
	}
	d->prev_sample_ms = now;
	for (size_t k = 0; k < d->n_runs; k++) {
		struct run_stat *r = &d->runs[k];
		uint64_t top = 0;
		double util = 0;
		int n_util = 0;

		for (int i = 0; i < r->n_gpus; i++) {
			if (r->used_bytes[i] > top)
				top = r->used_bytes[i];
			if (r->gpus[i] >= 0) {
				const char *src;

				util += cd__gpu_activity(
					&d->info[d->slots[r->gpus[i]].gpu], &src);
				n_util++;
			}
		}
		if (n_util) {
			r->util_sum += util / n_util;
			r->util_n++;
		}
		if (top > r->peak_bytes) {
			const struct cd_active *a = cd__active(d, r->id);
			struct cd_job job;

			r->peak_bytes = top;
			cd_job_init(&job);
			if (a && a->job.state == CD_JOB_RUNNING &&
			    cd_job_copy(&job, &a->job) == 0) {
				job.peak_bytes = top;
				(void)cd__journal(d, &job, NULL);
			}
			cd_job_fini(&job);
		}
	}
}

/* --- statistics ------------------------------------------------------------ */

/* One job's (last) run on one GPU, for counting jobs that shared one. */
struct run_span {
	const char *uuid;
	int64_t start, end;
	size_t job; /* index into the job array */
};

static int cmp_span(const void *a, const void *b)
{
	const struct run_span *x = a, *y = b;
	int c = strcmp(x->uuid, y->uuid);

	if (c)
		return c;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * How many jobs' last runs overlapped in time with another job's on one of
 * their GPUs, in O(n log n): with a GPU's runs sorted by start, a run
 * overlaps an earlier one exactly when the largest end before it is past
 * its start, and a later one exactly when the next run starts before it
 * ends. Returns 0, or -ENOMEM.
 */
static int count_shared(const struct cd_job *jobs, size_t n, int64_t now, uint64_t *out)
{
	struct run_span *sp;
	bool *shared;
	size_t m = 0;

	*out = 0;
	sp = calloc(n * COLLOC_SCHED_MAX_GPUS + 1, sizeof(*sp));
	shared = calloc(n + 1, sizeof(*shared));
	if (!sp || !shared) {
		free(sp);
		free(shared);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		for (int i = 0; jobs[k].start_ms && i < jobs[k].n_assigned; i++) {
			sp[m].uuid = jobs[k].gpus[i];
			sp[m].start = jobs[k].start_ms;
			sp[m].end = jobs[k].end_ms ? jobs[k].end_ms : now;
			sp[m++].job = k;
		}
	qsort(sp, m, sizeof(*sp), cmp_span);
	for (size_t a = 0, b; a < m; a = b) {
		int64_t max_end = INT64_MIN;

		for (b = a; b < m && strcmp(sp[b].uuid, sp[a].uuid) == 0; b++)
			;
		for (size_t k = a; k < b; k++) {
			if (max_end > sp[k].start ||
			    (k + 1 < b && sp[k + 1].start < sp[k].end &&
			     sp[k + 1].end > sp[k].start))
				shared[sp[k].job] = true;
			if (sp[k].end > max_end)
				max_end = sp[k].end;
		}
	}
	for (size_t k = 0; k < n; k++)
		*out += shared[k];
	free(sp);
	free(shared);
	return 0;
}

int cd_daemon_stats(struct cd_daemon *d, enum cd_stats_scope scope, struct cd_stats *out,
		    struct colloc_diag *diag)
{
	struct cd_job_filter f = {.state_mask = ~0u, .uid = -1};
	struct cd_job *jobs = NULL;
	size_t n = 0, n_started = 0, n_ended = 0;
	int64_t now = d->now.wall_ms, first = INT64_MAX, last = 0;
	double wait = 0, jct = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->scope = scope;
	out->started_ms = d->created_wall_ms;
	/* A job that ended before this collocd started is history of another
	 * process: the default scope leaves it out, so that every figure
	 * covers the same time as the utilization this process measured. A
	 * job carried over (queued, running, or found lost at start-up: its
	 * end is recorded at the start) counts with its whole life. */
	if (scope == CD_STATS_START)
		f.active_since_ms = d->created_wall_ms > 0 ? d->created_wall_ms : 1;
	if ((rc = cd_store_job_find(d->store, &f, &jobs, &n, diag)))
		return rc;
	for (size_t k = 0; k < n; k++) {
		const struct cd_job *j = &jobs[k];

		out->jobs++;
		out->queued += j->state == CD_JOB_QUEUED;
		out->running += j->state == CD_JOB_RUNNING;
		out->done += j->state == CD_JOB_DONE;
		out->failed += j->state == CD_JOB_FAILED;
		out->cancelled += j->state == CD_JOB_CANCELLED;
		if (j->submit_ms < first)
			first = j->submit_ms;
		/* A job that has not ended keeps the makespan open until now. */
		if ((j->end_ms ? j->end_ms : now) > last)
			last = j->end_ms ? j->end_ms : now;
		if (j->start_ms) {
			wait += (double)(j->start_ms - j->submit_ms);
			n_started++;
		}
		if (j->end_ms && j->state != CD_JOB_QUEUED) {
			jct += (double)(j->end_ms - j->submit_ms);
			n_ended++;
		}
		if (strcmp(j->mem_source, "oom-retry") == 0) {
			out->oom_requeued++;
			out->oom_recovered += j->state == CD_JOB_DONE;
		}
	}
	if (count_shared(jobs, n, now, &out->shared_jobs) != 0)
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	if (n)
		out->makespan_s = (double)(last - first) / 1000.0;
	out->mean_wait_s = n_started ? wait / (double)n_started / 1000.0 : 0;
	out->mean_jct_s = n_ended ? jct / (double)n_ended / 1000.0 : 0;
	/* Samples live in memory only: a store-wide figure would be made up. */
	out->util_known = scope == CD_STATS_START;
	if (out->util_known) {
		out->busy_s = d->busy_ms / 1000.0;
		out->gpu_util_mean = d->busy_ms > 0 ? d->util_ms / d->busy_ms : 0;
		out->mem_util_mean = d->busy_ms > 0 ? d->mem_ms / d->busy_ms : 0;
	}
	if (rc)
		return rc;
	return cd_store_event_count_since(d->store, "lost",
					  scope == CD_STATS_START ? d->created_wall_ms
								  : INT64_MIN,
					  &out->lost, diag);
}
