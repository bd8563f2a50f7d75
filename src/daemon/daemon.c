/*
 * daemon.c — collocd's core: submit, cancel, launch, finish, sample and
 * schedule (see daemon.h). Single-threaded; driven by server.c's loop.
 */
#define _GNU_SOURCE /* getgrouplist */
#include "daemon/daemon.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "colloc/sched.h"
#include "colloc/units.h"
#include "common/clock.h"
#include "common/files.h"
#include "daemon/launcher.h"
#include "daemon/mps.h"
#include "daemon/oom.h"

#define MAX_PROCS 256 /* processes read per GPU per sample */
#define OOM_SCAN_BYTES (256u << 10) /* tail of a log searched for markers */
/* Samples a run needs before its mean activity counts as history for the
 * next run of the same job: fewer saw its start-up, not its training. */
#define UTIL_HISTORY_MIN_SAMPLES 3

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
	int64_t start_ms; /* wall clock */
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

#define MAX_MIG 16 /* instances read per GPU (A100/H100/H200 have <= 7) */

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
	struct colloc_gpu_process *procs; /* scratch, MAX_PROCS */
	struct slot *slots; /* what jobs are placed on */
	size_t n_slots, cap_slots;
	struct colloc_gpu_mig_instance *migs; /* scratch, MAX_MIG */
	struct cd_gpu_sample *hist; /* n_gpus rings of CD_HISTORY_MAX */
	size_t hist_next, hist_len; /* shared by all rings: one sample each */
	struct run_stat *runs;
	size_t n_runs, cap_runs;
	char logs_dir[CD_PATH_MAX];
	char status_dir[CD_PATH_MAX];
	char mps_dir[CD_PATH_MAX]; /* sharing = mps: STATE/mps */
	bool mps_started;
	const char *activity_src; /* what gpu_activity() used last (static) */
	int64_t created_ms; /* monotonic */
	int64_t last_sample_ms; /* monotonic; INT64_MIN: never */
	int rr_cursor;
	bool dirty;
	bool queued_left; /* the last pass left jobs waiting */
	int64_t prev_sample_ms; /* monotonic, of the sample before */
	double busy_ms, util_ms, mem_ms; /* time-weighted sums while busy */
	struct cd_sched_counters sched; /* for /metrics */
	uid_t euid;
};

static void logf_(struct cd_daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logf_(struct cd_daemon *d, const char *fmt, ...)
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

/* Store an event; a failure is logged, never fatal (the state change it
 * describes has been committed already). */
static void event(struct cd_daemon *d, uint64_t id, const char *kind, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));

static void event(struct cd_daemon *d, uint64_t id, const char *kind, const char *fmt,
		  ...)
{
	struct colloc_diag diag = {{0}};
	char msg[CD_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cd_store_event_add(d->store, id, colloc__wall_ms(), kind, msg, &diag))
		logf_(d, "job %llu: cannot record event: %s", (unsigned long long)id,
		      diag.msg);
	logf_(d, "job %llu: %s: %s", (unsigned long long)id, kind, msg);
}

static void status_path(const struct cd_daemon *d, uint64_t id, char *buf, size_t len)
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

/* --- running-job statistics -------------------------------------------- */

static struct run_stat *run_find(struct cd_daemon *d, uint64_t id)
{
	for (size_t k = 0; k < d->n_runs; k++)
		if (d->runs[k].id == id)
			return &d->runs[k];
	return NULL;
}

static int slot_index(const struct cd_daemon *d, const char *uuid)
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
			d->runs[k].gpus[i] = slot_index(d, d->runs[k].uuid[i]);
}

static struct run_stat *run_add(struct cd_daemon *d, const struct cd_job *job)
{
	struct run_stat *r = run_find(d, job->id);

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
		r->gpus[k] = slot_index(d, job->gpus[k]);
	}
	r->peak_bytes = job->peak_bytes;
	r->need_bytes = job->mem_need_bytes;
	r->start_ms = job->start_ms;
	return r;
}

static void run_remove(struct cd_daemon *d, uint64_t id)
{
	struct run_stat *r = run_find(d, id);

	if (r)
		*r = d->runs[--d->n_runs];
}

/* --- users ---------------------------------------------------------------- */

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

static bool may_see(struct cd_daemon *d, const struct cd_peer *peer,
		    const struct cd_job *job)
{
	return job->uid == peer->uid || cd_daemon_is_admin(d, peer);
}

/* --- accessors ------------------------------------------------------------ */

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
	return (double)(colloc__mono_ms() - d->created_ms) / 1000.0;
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
	uint64_t by[CD_JOB_STATE_COUNT_], oom = 0;

	*queued = *running = 0;
	if (cd_store_job_counts(d->store, by, &oom, NULL))
		return;
	*queued = (size_t)by[CD_JOB_QUEUED];
	*running = (size_t)by[CD_JOB_RUNNING];
}

/* Per GPU: what running jobs that have not reached their need yet still
 * hold back (the scheduler's start-up reservation). */
static bool job_at_peak(const struct cd_daemon *d, uint64_t need_bytes, int64_t start_ms,
			uint64_t used, int64_t now_wall)
{
	return used >= need_bytes || now_wall - start_ms >= d->cfg.reserve_ms;
}

int cd_daemon_gpu(struct cd_daemon *d, unsigned index, struct colloc_gpu_info *info,
		  uint64_t *reserved_bytes, uint64_t *jobs, size_t cap, size_t *n_jobs,
		  struct colloc_diag *diag)
{
	int64_t now = colloc__wall_ms();

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
			if (!job_at_peak(d, r->need_bytes, r->start_ms, r->used_bytes[i],
					 now))
				*reserved_bytes += r->need_bytes - r->used_bytes[i];
		}
	}
	return 0;
}

/* --- finishing a run ------------------------------------------------------- */

static uint64_t largest_gpu(const struct cd_daemon *d)
{
	uint64_t m = 0;

	for (size_t k = 0; k < d->n_slots; k++)
		if (d->slots[k].total_bytes > m)
			m = d->slots[k].total_bytes;
	return m;
}

/* Commit job's new record (and the events already added), logging a store
 * failure: the daemon keeps running, and the next restart re-reads the
 * supervisor's status file, which is only removed after a commit. */
static int save(struct cd_daemon *d, const struct cd_job *job)
{
	struct colloc_diag diag = {{0}};
	int rc = cd_store_job_update(d->store, job, &diag);

	if (rc)
		logf_(d, "job %llu: cannot save: %s", (unsigned long long)job->id,
		      diag.msg);
	return rc;
}

/*
 * The supervisor of running job *job has ended: read its status, decide the
 * outcome (done, failed, cancelled, or OOM re-queue), commit, and only then
 * remove the status file.
 */
static void finish(struct cd_daemon *d, struct cd_job *job)
{
	struct colloc_diag diag = {{0}};
	char spath[CD_PATH_MAX + 64], lpath[CD_PATH_MAX + 64];
	struct run_stat *r = run_find(d, job->id);
	struct cd_status st;
	const char *marker = NULL;
	bool has_util;
	int rc;

	status_path(d, job->id, spath, sizeof(spath));
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
	job->end_ms = colloc__wall_ms();
	if (rc) {
		job->state = CD_JOB_FAILED;
		snprintf(job->reason, sizeof(job->reason),
			 "its supervisor ended without recording the job's exit (%s); "
			 "the job "
			 "was killed or the machine restarted",
			 rc == -ENOENT ? "no status file" : diag.msg);
		event(d, job->id, "lost", "%s", job->reason);
		goto commit;
	}
	if (st.end_ms > 0)
		job->end_ms = st.end_ms;
	if (st.kind == CD_STATUS_SETUP_FAILED) {
		job->state = CD_JOB_FAILED;
		job->exit_code = -1;
		snprintf(job->reason, sizeof(job->reason), "%s", st.message);
		event(d, job->id, "setup-failed", "%s", st.message);
		goto commit;
	}
	job->exit_code = st.kind == CD_STATUS_EXITED ? st.code : -1;
	job->term_signal = st.kind == CD_STATUS_SIGNALED ? st.code : 0;
	if (job->cancel_requested) {
		job->state = CD_JOB_CANCELLED;
		snprintf(job->reason, sizeof(job->reason), "cancelled while running");
		event(d, job->id, "cancelled", "stopped (%s %d)",
		      st.kind == CD_STATUS_EXITED ? "exit" : "signal", st.code);
		goto commit;
	}
	if (st.kind == CD_STATUS_EXITED && st.code == 0) {
		job->state = CD_JOB_DONE;
		job->reason[0] = '\0';
		event(d, job->id, "done", "exit 0, peak %.2f GiB",
		      (double)job->peak_bytes / 1073741824.0);
		goto commit;
	}
	if (cd_daemon_log_path(d, job->id, lpath, sizeof(lpath), NULL) == 0)
		(void)cd_oom_scan_file(lpath, st.stdout_offset, OOM_SCAN_BYTES, &marker,
				       NULL);
	if (marker) {
		struct cd_oom_decision dec;

		cd_oom_decide(&d->cfg.oom, job->attempts, job->mem_need_bytes,
			      job->peak_bytes, largest_gpu(d), job->exclusive, &dec);
		if (dec.action != CD_OOM_GIVE_UP) {
			job->state = CD_JOB_QUEUED;
			job->mem_need_bytes = dec.mem_need_bytes;
			snprintf(job->mem_source, sizeof(job->mem_source), "oom-retry");
			job->exclusive =
				job->exclusive || dec.action == CD_OOM_RETRY_EXCLUSIVE;
			snprintf(job->reason, sizeof(job->reason), "%s", dec.reason);
			job->end_ms = 0;
			event(d, job->id, "oom", "%s; re-queued%s", dec.reason,
			      job->exclusive ? " for a GPU of its own" : "");
		} else {
			job->state = CD_JOB_FAILED;
			snprintf(job->reason, sizeof(job->reason), "%s; giving up",
				 dec.reason);
			event(d, job->id, "oom", "%s", job->reason);
		}
		goto commit;
	}
	job->state = CD_JOB_FAILED;
	if (st.kind == CD_STATUS_SIGNALED)
		snprintf(job->reason, sizeof(job->reason), "killed by signal %d",
			 st.code);
	else
		snprintf(job->reason, sizeof(job->reason), "exit status %d", st.code);
	event(d, job->id, "failed", "%s", job->reason);
commit:
	/* A run that measured anything teaches the next one: its peak, or
	 * only its activity (a job whose processes the backend cannot see
	 * still has its GPU's activity sampled). */
	has_util = job->util_samples >= UTIL_HISTORY_MIN_SAMPLES;
	if ((job->peak_bytes > 0 || has_util) && job->state != CD_JOB_CANCELLED &&
	    cd_store_peak_record(d->store, job->key, job->id, job->peak_bytes,
				 has_util ? job->util_mean : -1.0, colloc__wall_ms(),
				 &diag))
		logf_(d, "job %llu: cannot record its peak: %s",
		      (unsigned long long)job->id, diag.msg);
	if (save(d, job) == 0)
		unlink(spath);
	run_remove(d, job->id);
	d->dirty = true;
	d->last_sample_ms = INT64_MIN; /* its memory is gone: look again */
}

void cd_daemon_reap(struct cd_daemon *d, int64_t pid)
{
	struct cd_job *jobs = NULL;
	size_t n = 0;

	if (cd_store_job_list(d->store, 1u << CD_JOB_RUNNING, -1, 0, &jobs, &n, NULL))
		return;
	for (size_t k = 0; k < n; k++) {
		if (jobs[k].sup_pid == pid)
			finish(d, &jobs[k]);
		cd_job_fini(&jobs[k]);
	}
	free(jobs);
}

/* --- launching ---------------------------------------------------------- */

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

static void launch(struct cd_daemon *d, struct cd_job *job,
		   const struct colloc_sched_decision *dec)
{
	struct colloc_diag diag = {{0}};
	char lpath[CD_PATH_MAX + 64], spath[CD_PATH_MAX + 64];
	char visible[COLLOC_SCHED_MAX_GPUS * COLLOC_GPU_UUID_MAX];
	char mps[CD_MPS_ENV_MAX][CD_MPS_ENV_LEN];
	const char *more_env[CD_MPS_ENV_MAX + 1] = {NULL};
	size_t n_mps = 0;
	struct cd_launch_spec spec;
	struct cd_launch_result res;
	cJSON *targ = NULL, *tenv = NULL;
	const char **argv, **envp;
	size_t off = 0;
	int rc;

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
	job->start_ms = colloc__wall_ms();
	job->end_ms = 0;
	job->exit_code = -1;
	job->term_signal = 0;
	job->sup_pid = 0;
	job->peak_bytes = 0;
	/* Committed before the fork: a daemon killed before the next commit
	 * finds a running job without a supervisor and queues it again. */
	status_path(d, job->id, spath, sizeof(spath));
	unlink(spath);
	if (save(d, job))
		return;
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
			more_env[k] = mps[k];
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
	if (!rc && (!argv || !envp))
		rc = colloc_diag_set(&diag, COLLOC_EFORMAT,
				     "stored argv/env are corrupt");
	else if (!rc)
		rc = cd_launch(&spec, &res, &diag);
	free(argv);
	free(envp);
	cJSON_Delete(targ);
	cJSON_Delete(tenv);
	if (rc) {
		job->state = CD_JOB_FAILED;
		job->end_ms = colloc__wall_ms();
		snprintf(job->reason, sizeof(job->reason), "cannot launch: %s", diag.msg);
		event(d, job->id, "setup-failed", "%s", job->reason);
		(void)save(d, job);
		return;
	}
	job->sup_pid = res.sup_pid;
	job->sup_start = res.sup_start;
	job->job_pgid = res.job_pgid;
	(void)save(d, job);
	if (!run_add(d, job))
		logf_(d, "job %llu: out of memory tracking it",
		      (unsigned long long)job->id);
	event(d, job->id, "start", "attempt %d on %s, need %.2f GiB (%s), pid %lld",
	      job->attempts, visible, (double)job->mem_need_bytes / 1073741824.0,
	      job->mem_source, (long long)res.job_pgid);
}

/* --- sampling --------------------------------------------------------- */

/*
 * How busy GPU g is, 0..1, for the scheduler and the jobs' mean activity:
 * DCGM's SM activity when the backend has it (the fraction of SMs with work,
 * which NVML's "utilization" overstates: one busy block reads as 100%),
 * else NVML's utilization, else 0. *src says which.
 */
static double gpu_activity(const struct colloc_gpu_info *in, const char **src)
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
static bool activity_is_sm(const struct cd_daemon *d)
{
	for (size_t k = 0; k < d->n_slots; k++) {
		const struct colloc_gpu_info *in = &d->info[d->slots[k].gpu];

		if (d->gpu_ok[d->slots[k].gpu] && in->sm_active >= 0)
			return true;
	}
	return false;
}

static void sample(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	int64_t now = colloc__mono_ms();
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
				logf_(d,
				      "GPU %u: cannot read it, not scheduling on it: %s",
				      g, diag.msg);
			continue;
		}
		d->info[g] = now_info;
		d->gpu_ok[g] = true;
		if (!was_ok)
			logf_(d, "GPU %u (%s) is back", g, d->info[g].uuid);
	}
	rebuild_slots(d);
	for (unsigned g = 0; g < d->n_gpus; g++) {
		struct cd_gpu_sample *h =
			&d->hist[(size_t)g * CD_HISTORY_MAX + d->hist_next];

		h->ts_ms = colloc__wall_ms();
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
		for (size_t p = 0; p < n; p++) {
			int64_t sid = cd_process_session(d->procs[p].pid);

			for (size_t k = 0; sid > 0 && k < d->n_runs; k++) {
				struct run_stat *r = &d->runs[k];

				if (r->sup_pid != sid)
					continue;
				for (int i = 0; i < r->n_gpus; i++)
					if (r->gpus[i] >= 0 &&
					    d->slots[r->gpus[i]].gpu == g)
						r->used_bytes[i] +=
							d->procs[p].used_bytes;
			}
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

				util += gpu_activity(&d->info[d->slots[r->gpus[i]].gpu],
						     &src);
				n_util++;
			}
		}
		if (n_util) {
			r->util_sum += util / n_util;
			r->util_n++;
		}
		if (top > r->peak_bytes) {
			struct cd_job job;

			r->peak_bytes = top;
			cd_job_init(&job);
			if (cd_store_job_get(d->store, r->id, &job, NULL) == 0 &&
			    job.state == CD_JOB_RUNNING) {
				job.peak_bytes = top;
				(void)save(d, &job);
			}
			cd_job_fini(&job);
		}
	}
}

/* Finish every running job whose supervisor is gone (children not yet
 * reaped and supervisors adopted after a restart alike). */
static void check_supervisors(struct cd_daemon *d)
{
	struct cd_job *jobs = NULL;
	size_t n = 0;

	if (cd_store_job_list(d->store, 1u << CD_JOB_RUNNING, -1, 0, &jobs, &n, NULL))
		return;
	for (size_t k = 0; k < n; k++) {
		if (jobs[k].sup_pid > 0 &&
		    !cd_supervisor_alive(jobs[k].sup_pid, jobs[k].sup_start))
			finish(d, &jobs[k]);
		cd_job_fini(&jobs[k]);
	}
	free(jobs);
}

/* --- scheduling ----------------------------------------------------------- */

static void schedule(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	struct colloc_sched_gpu *gs = NULL;
	struct colloc_sched_running *rs = NULL;
	struct colloc_sched_job *qs = NULL;
	struct colloc_sched_decision *ds = NULL;
	struct colloc_sched_state st;
	struct cd_job *jobs = NULL;
	size_t n = 0, n_q = 0, n_r = 0, n_dec = 0;
	int64_t now = colloc__wall_ms();

	if (cd_store_job_list(d->store, (1u << CD_JOB_QUEUED) | (1u << CD_JOB_RUNNING),
			      -1, 0, &jobs, &n, &diag)) {
		logf_(d, "scheduling skipped: %s", diag.msg);
		d->queued_left = true; /* try again at the next sample */
		return;
	}
	gs = calloc(d->n_slots ? d->n_slots : 1, sizeof(*gs));
	rs = calloc(n ? n : 1, sizeof(*rs));
	qs = calloc(n ? n : 1, sizeof(*qs));
	ds = calloc(n ? n : 1, sizeof(*ds));
	if (!gs || !rs || !qs || !ds) {
		logf_(d, "scheduling skipped: out of memory");
		d->queued_left = true;
		goto out;
	}
	for (size_t k = 0; k < d->n_slots; k++) {
		const struct slot *sl = &d->slots[k];
		const struct colloc_gpu_info *in = &d->info[sl->gpu];
		const char *src;

		gs[k].node = 0;
		gs[k].mem_total_bytes = sl->total_bytes;
		gs[k].mem_used_bytes = sl->used_bytes;
		gs[k].util = gpu_activity(in, &src);
		if (src != d->activity_src) {
			/* Said once, and again whenever it changes. */
			logf_(d, "scheduling on %s", src);
			d->activity_src = src;
		}
		gs[k].usable = d->gpu_ok[sl->gpu];
		gs[k].isolated = sl->isolated;
	}
	for (size_t k = 0; k < n; k++) {
		const struct cd_job *j = &jobs[k];

		if (j->state == CD_JOB_QUEUED) {
			struct colloc_sched_job *q = &qs[n_q++];

			q->id = j->id;
			q->n_gpus = j->n_gpus;
			q->mem_need_bytes = j->mem_need_bytes;
			q->util_pred = j->util_pred;
			q->priority = j->priority;
			q->submit_ms = j->submit_ms;
			q->exclusive = j->exclusive;
		} else {
			struct colloc_sched_running *r = &rs[n_r];
			const struct run_stat *s = run_find(d, j->id);
			bool ok = true;

			r->job_id = j->id;
			r->n_gpus = j->n_assigned;
			r->mem_need_bytes = j->mem_need_bytes;
			r->util_pred = j->util_pred;
			r->exclusive = j->exclusive;
			r->at_peak = true;
			for (int i = 0; i < j->n_assigned; i++) {
				uint64_t used = s ? s->used_bytes[i] : 0;

				r->gpus[i] = slot_index(d, j->gpus[i]);
				ok = ok && r->gpus[i] >= 0;
				if (used > r->mem_used_bytes)
					r->mem_used_bytes = used;
			}
			r->at_peak = job_at_peak(d, j->mem_need_bytes, j->start_ms,
						 r->mem_used_bytes, now);
			if (ok && r->n_gpus > 0)
				n_r++;
		}
	}
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
		logf_(d, "scheduling failed: %s", diag.msg);
		goto out;
	}
	d->queued_left = n_dec < n_q;
	for (size_t k = 0; k < n_dec; k++)
		for (size_t i = 0; i < n; i++)
			if (jobs[i].id == ds[k].job_id &&
			    jobs[i].state == CD_JOB_QUEUED) {
				launch(d, &jobs[i], &ds[k]);
				break;
			}
out:
	for (size_t k = 0; k < n; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	free(gs);
	free(rs);
	free(qs);
	free(ds);
}

int64_t cd_daemon_tick(struct cd_daemon *d, int64_t now_ms, bool force_sample)
{
	int64_t next;

	if (force_sample || d->last_sample_ms == INT64_MIN ||
	    now_ms - d->last_sample_ms >= d->cfg.sample_ms) {
		check_supervisors(d);
		sample(d);
		d->last_sample_ms = now_ms;
		/* Usage changed and reservations may have lapsed: that can
		 * start a waiting job, and nothing else. */
		d->dirty = d->dirty || d->queued_left;
	}
	if (d->dirty) {
		struct timespec t0, t1;

		d->dirty = false;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		schedule(d);
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

/* --- API operations ------------------------------------------------------ */

int cd_daemon_get(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		  struct cd_job *job, struct colloc_diag *diag)
{
	int rc = cd_store_job_get(d->store, id, job, diag);

	if (rc == COLLOC_ENOTFOUND || (rc == 0 && !may_see(d, peer, job))) {
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
		job->end_ms = colloc__wall_ms();
		snprintf(job->reason, sizeof(job->reason), "cancelled before it started");
		if ((rc = cd_store_job_update(d->store, job, diag)))
			return rc;
		event(d, id, "cancelled", "cancelled by uid %u while queued", peer->uid);
		return 0;
	}
	if (job->cancel_requested)
		return 0;
	job->cancel_requested = true;
	if ((rc = cd_store_job_update(d->store, job, diag)))
		return rc;
	event(d, id, "cancel", "cancel requested by uid %u; stopping it", peer->uid);
	if (job->sup_pid > 0 &&
	    cd_supervisor_cancel(job->sup_pid, job->sup_start, NULL) != 0)
		check_supervisors(d);
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
		job->util_pred =
			activity_is_sm(d) ? req->graph_sm_activity : req->graph_gpu_util;
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
	uint64_t hist_peak = 0, largest = largest_gpu(d);
	double hist_util = -1;
	char a[32], b[32];
	int rc;

	if (!pw && d->euid == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "uid %u has no user name: a job cannot run as it",
				       peer->uid);
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
	job->submit_ms = colloc__wall_ms();
	if ((rc = cd_store_job_insert(d->store, job, diag))) {
		cd_job_fini(job);
		return rc;
	}
	event(d, job->id, "submit",
	      "by %s (uid %u): %s, %d GPU(s), need %s (%s), util %.0f%% (%s)", job->user,
	      job->uid, job->name, job->n_gpus,
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

int cd_daemon_stats(struct cd_daemon *d, struct cd_stats *out, struct colloc_diag *diag)
{
	struct cd_job *jobs = NULL;
	size_t n = 0, n_started = 0, n_ended = 0;
	int64_t now = colloc__wall_ms(), first = INT64_MAX, last = 0;
	double wait = 0, jct = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = cd_store_job_list(d->store, ~0u, -1, 0, &jobs, &n, diag)))
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
	out->busy_s = d->busy_ms / 1000.0;
	out->gpu_util_mean = d->busy_ms > 0 ? d->util_ms / d->busy_ms : 0;
	out->mem_util_mean = d->busy_ms > 0 ? d->mem_ms / d->busy_ms : 0;
	return rc ? rc : cd_store_event_count(d->store, "lost", &out->lost, diag);
}

/* --- life cycle ---------------------------------------------------------------- */

/* After a restart: adopt, finish or re-queue every job the store says runs. */
static void recover(struct cd_daemon *d)
{
	struct cd_job *jobs = NULL;
	size_t n = 0;

	if (cd_store_job_list(d->store, 1u << CD_JOB_RUNNING, -1, 0, &jobs, &n, NULL))
		return;
	for (size_t k = 0; k < n; k++) {
		struct cd_job *j = &jobs[k];
		char spath[CD_PATH_MAX + 64];
		struct stat sb;

		status_path(d, j->id, spath, sizeof(spath));
		if (j->sup_pid == 0 && stat(spath, &sb) != 0) {
			j->state = CD_JOB_QUEUED;
			j->attempts = j->attempts > 0 ? j->attempts - 1 : 0;
			snprintf(j->reason, sizeof(j->reason),
				 "collocd stopped while launching it; queued again");
			if (save(d, j) == 0)
				event(d, j->id, "requeue", "%s", j->reason);
		} else if (j->sup_pid > 0 &&
			   cd_supervisor_alive(j->sup_pid, j->sup_start)) {
			(void)run_add(d, j);
			event(d, j->id, "adopt", "still running under supervisor %lld",
			      (long long)j->sup_pid);
		} else {
			finish(d, j);
		}
		cd_job_fini(j);
	}
	free(jobs);
}

int cd_daemon_create(const struct cd_config *cfg, void (*log)(const char *line),
		     struct cd_daemon **out, struct colloc_diag *diag)
{
	struct cd_daemon *d = calloc(1, sizeof(*d));
	const char *spec = cfg->gpus;
	int rc;

	if (!d)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	d->cfg = *cfg;
	d->log = log;
	d->euid = geteuid();
	d->created_ms = colloc__mono_ms();
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
		logf_(d, "--gpus auto: %s", note);
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
	d->migs = calloc(MAX_MIG, sizeof(*d->migs));
	d->hist = calloc((size_t)(d->n_gpus ? d->n_gpus : 1) * CD_HISTORY_MAX,
			 sizeof(*d->hist));
	if (!d->info || !d->gpu_ok || !d->procs || !d->migs || !d->hist) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned g = 0; g < d->n_gpus; g++)
		d->gpu_ok[g] = true;
	if ((rc = cd_store_open(cfg->db_path, &d->store, diag)))
		goto fail;
	if (cfg->sharing == CD_SHARING_MPS) {
		if ((size_t)snprintf(d->mps_dir, sizeof(d->mps_dir), "%s/mps",
				     cfg->state_dir) >= sizeof(d->mps_dir)) {
			rc = colloc_diag_set(diag, COLLOC_ELIMIT,
					     "state_dir path too long");
			goto fail;
		}
		sample(d); /* the UUIDs */
		for (unsigned g = 0; g < d->n_gpus; g++)
			if ((rc = cd_mps_start(cfg->mps_control, d->mps_dir,
					       d->info[g].uuid, 10000, diag))) {
				(void)colloc_diag_prefix(diag, rc,
							 "sharing = mps, GPU %u", g);
				goto fail;
			}
		d->mps_started = true;
		logf_(d, "MPS control daemons running for %u GPU(s) under %s", d->n_gpus,
		      d->mps_dir);
	} else if (cfg->sharing == CD_SHARING_MIG) {
		logf_(d, "sharing = mig: GPUs in MIG mode are scheduled by instance; "
			 "others are "
			 "time-sliced");
	}
	sample(d);
	recover(d);
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
		logf_(d, "leaving the MPS control daemons running for %zu running job(s)",
		      d->n_runs);
		return;
	}
	for (unsigned g = 0; g < d->n_gpus; g++)
		if (cd_mps_stop(d->cfg.mps_control, d->mps_dir, d->info[g].uuid, 10000,
				&diag))
			logf_(d, "GPU %u: %s", g, diag.msg);
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
	free(d->migs);
	free(d->hist);
	free(d->slots);
	free(d->runs);
	free(d);
}
