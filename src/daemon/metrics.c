/*
 * metrics.c — collocd's state as Prometheus text (see metrics.h and
 * docs/metrics.md).
 *
 * The exposition format wants each family whole — HELP, TYPE, then every
 * sample — before the next one starts, so the per-GPU and per-job figures
 * are gathered first and walked once per family. A family none of whose
 * samples exists (a backend that cannot measure power) is left out whole.
 *
 * Not here: HTTP (server.c), and anything that changes the daemon.
 */
#include "daemon/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/sched.h"
#include "daemon/job.h"
#include "daemon/store.h"

/* A growing text buffer. The first failure sticks (err) and every later
 * write is a no-op, so the renderer checks once at the end. */
struct out {
	char *p;
	size_t len, cap;
	int err; /* 0, -ENOMEM, -EINVAL or COLLOC_ELIMIT */
};

/* Room for more bytes and a NUL, within CD_METRICS_MAX_BYTES. */
static bool grow(struct out *o, size_t more)
{
	size_t need, cap;
	char *np;

	if (o->err)
		return false;
	/* len + 1 <= cap <= CD_METRICS_MAX_BYTES holds once p exists. */
	if (more > CD_METRICS_MAX_BYTES - o->len - 1) {
		o->err = COLLOC_ELIMIT;
		return false;
	}
	need = o->len + more + 1;
	if (need <= o->cap)
		return true;
	cap = o->cap ? o->cap : 16384;
	while (cap < need)
		cap = cap > CD_METRICS_MAX_BYTES / 2 ? CD_METRICS_MAX_BYTES : cap * 2;
	np = realloc(o->p, cap);
	if (!np) {
		o->err = -ENOMEM;
		return false;
	}
	o->p = np;
	o->cap = cap;
	return true;
}

static void put_bytes(struct out *o, const char *s, size_t n)
{
	if (!grow(o, n))
		return;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void put(struct out *o, const char *s)
{
	put_bytes(o, s, strlen(s));
}

static void putf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (!o->err)
			o->err = -EINVAL;
		return;
	}
	if (!grow(o, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(o->p + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when s does not
 * start one: overlong forms, surrogates and code points past U+10FFFF are
 * invalid (RFC 3629). s is NUL-terminated, and NUL is never a continuation
 * byte, so nothing is read past the end. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return n;
}

/* A label value: backslash, double quote and line feed escaped as the
 * format asks; a byte that is not valid UTF-8 (a job name is whatever the
 * user sent) becomes U+FFFD, which Prometheus would otherwise refuse. */
static void put_label_value(struct out *o, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (u[i]) {
		size_t n = utf8_len(u + i);

		if (u[i] == '\\')
			put(o, "\\\\");
		else if (u[i] == '"')
			put(o, "\\\"");
		else if (u[i] == '\n')
			put(o, "\\n");
		else if (n == 0)
			put(o, "\xef\xbf\xbd");
		else
			put_bytes(o, s + i, n);
		i += n ? n : 1;
	}
}

struct label {
	const char *key;
	const char *value;
};

/* name{k="v",...} value */
static void put_sample(struct out *o, const char *name, const struct label *labels,
		       size_t n_labels, const char *value)
{
	put(o, name);
	for (size_t k = 0; k < n_labels; k++) {
		putf(o, "%s%s=\"", k ? "," : "{", labels[k].key);
		put_label_value(o, labels[k].value);
		put(o, "\"");
	}
	putf(o, "%s %s\n", n_labels ? "}" : "", value);
}

static void put_family(struct out *o, const char *name, const char *type,
		       const char *help)
{
	putf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

#define VALUE_MAX 40

static void fmt_u64(char *v, uint64_t x)
{
	snprintf(v, VALUE_MAX, "%llu", (unsigned long long)x);
}

/* The shortest %g that reads back as exactly d (d is finite). */
static void fmt_double(char *v, double d)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(v, VALUE_MAX, "%.*g", prec, d);
		if (strtod(v, NULL) == d)
			return;
	}
}

/* --- daemon-wide ---------------------------------------------------------- */

static void put_one(struct out *o, const char *name, const char *type, const char *help,
		    const char *value)
{
	put_family(o, name, type, help);
	put_sample(o, name, NULL, 0, value);
}

static void put_daemon(struct out *o, struct cd_daemon *d,
		       const uint64_t by_state[CD_JOB_STATE_COUNT_],
		       uint64_t oom_requeued, uint64_t last_id, uint64_t lost)
{
	const struct cd_config *cfg = cd_daemon_config(d);
	struct cd_sched_counters sc;
	struct label build[3] = {
		{"version", COLLOC_VERSION},
		{"backend", cd_daemon_backend(d)},
		{"policy", colloc_policy_name(cfg->sched.policy)},
	};
	char v[VALUE_MAX];

	cd_daemon_sched_counters(d, &sc);

	put_one(o, "colloc_up", "gauge",
		"Whether collocd answered this scrape (always 1).", "1");
	put_family(o, "colloc_build_info", "gauge",
		   "collocd's version, GPU backend and placement policy (value 1).");
	put_sample(o, "colloc_build_info", build, 3, "1");
	fmt_double(v, cd_daemon_uptime_s(d));
	put_one(o, "colloc_uptime_seconds", "gauge", "Seconds since collocd started.", v);
	fmt_u64(v, cd_daemon_gpu_count(d));
	put_one(o, "colloc_gpus", "gauge", "GPUs collocd manages.", v);

	put_family(o, "colloc_jobs", "gauge", "Jobs in the database, by state.");
	for (int s = 0; s < CD_JOB_STATE_COUNT_; s++) {
		struct label l = {"state", cd_job_state_name(s)};

		fmt_u64(v, by_state[s]);
		put_sample(o, "colloc_jobs", &l, 1, v);
	}
	fmt_u64(v, last_id);
	put_one(o, "colloc_jobs_submitted_total", "counter",
		"Jobs ever submitted (the highest job id; ids are never reused).", v);
	fmt_u64(v, oom_requeued);
	put_one(o, "colloc_oom_requeued_jobs_total", "counter",
		"Jobs re-queued at least once after dying of GPU out-of-memory.", v);
	fmt_u64(v, lost);
	put_one(o, "colloc_jobs_lost_total", "counter",
		"Jobs whose supervisor ended without recording the job's exit.", v);
	fmt_u64(v, sc.passes);
	put_one(o, "colloc_scheduler_passes_total", "counter",
		"Scheduling passes since collocd started.", v);
	fmt_double(v, sc.total_s);
	put_one(o, "colloc_scheduler_pass_seconds_total", "counter",
		"Time spent in scheduling passes since collocd started.", v);
	fmt_double(v, sc.last_s);
	put_one(o, "colloc_scheduler_last_pass_seconds", "gauge",
		"Duration of the latest scheduling pass.", v);
}

/* --- per GPU ------------------------------------------------------------------ */

struct gpu_row {
	struct colloc_gpu_info info;
	bool up;
	uint64_t reserved_bytes;
	size_t n_jobs;
	size_t n_unowned; /* processes of no job (cd_daemon_gpu_unowned) */
	uint64_t unowned_bytes;
	char index[16];
};

enum gpu_field {
	GF_UP,
	GF_MEM_TOTAL,
	GF_MEM_USED,
	GF_MEM_RESERVED,
	GF_UTIL,
	GF_POWER,
	GF_ENERGY,
	GF_JOBS,
	GF_UNOWNED,
	GF_UNOWNED_BYTES,
	GF_DRIVER_RESERVED,
	GF_MIG_MODE,
	GF_GR_ENGINE_ACTIVE,
	GF_SM_ACTIVE,
	GF_SM_OCCUPANCY,
	GF_TENSOR_ACTIVE,
	GF_DRAM_ACTIVE,
};

static const struct {
	const char *name;
	const char *type;
	const char *help;
	int field; /* enum gpu_field */
} gpu_families[] = {
	{"colloc_gpu_up", "gauge",
	 "Whether the last sample of the GPU succeeded (1) or not (0).", GF_UP},
	{"colloc_gpu_memory_total_bytes", "gauge", "The GPU's memory.", GF_MEM_TOTAL},
	{"colloc_gpu_memory_used_bytes", "gauge", "GPU memory in use at the last sample.",
	 GF_MEM_USED},
	{"colloc_gpu_memory_reserved_bytes", "gauge",
	 "GPU memory the scheduler holds back for running jobs still ramping up to their "
	 "need.",
	 GF_MEM_RESERVED},
	{"colloc_gpu_utilization_ratio", "gauge",
	 "GPU activity at the last sample, 0 to 1 (absent when the backend cannot tell).",
	 GF_UTIL},
	{"colloc_gpu_power_watts", "gauge",
	 "Board power at the last sample (absent when the backend cannot tell).",
	 GF_POWER},
	{"colloc_gpu_energy_joules_total", "counter",
	 "Energy used since a backend-defined origin (absent when the backend cannot "
	 "tell).",
	 GF_ENERGY},
	{"colloc_gpu_jobs", "gauge", "Running jobs placed on the GPU.", GF_JOBS},
	{"colloc_gpu_unowned_processes", "gauge",
	 "Processes on the GPU that belong to no job collocd runs (a job's leftovers, or "
	 "work started outside collocd).",
	 GF_UNOWNED},
	{"colloc_gpu_unowned_memory_bytes", "gauge",
	 "GPU memory those processes hold (part of the used memory placement counts).",
	 GF_UNOWNED_BYTES},
	{"colloc_gpu_memory_driver_reserved_bytes", "gauge",
	 "GPU memory the driver and firmware set aside, in neither used nor free.",
	 GF_DRIVER_RESERVED},
	{"colloc_gpu_mig_mode", "gauge", "Whether MIG is on (1) or off (0).",
	 GF_MIG_MODE},
	{"colloc_gpu_graphics_engine_active_ratio", "gauge",
	 "DCGM: fraction of time the graphics or compute engine was active.",
	 GF_GR_ENGINE_ACTIVE},
	{"colloc_gpu_sm_active_ratio", "gauge",
	 "DCGM: fraction of time at least one warp was resident, averaged over the SMs.",
	 GF_SM_ACTIVE},
	{"colloc_gpu_sm_occupancy_ratio", "gauge",
	 "DCGM: resident warps over the most the SMs can hold, averaged over time.",
	 GF_SM_OCCUPANCY},
	{"colloc_gpu_tensor_active_ratio", "gauge",
	 "DCGM: fraction of cycles the tensor pipes were active.", GF_TENSOR_ACTIVE},
	{"colloc_gpu_dram_active_ratio", "gauge",
	 "DCGM: fraction of cycles the device memory interface was busy.",
	 GF_DRAM_ACTIVE},
};

/* A DCGM ratio into v; false when absent (COLLOC_GPU_METRIC_ABSENT, or
 * anything else outside 0..1 that a backend might pass on). */
static bool ratio_value(double r, char *v)
{
	if (!(r >= 0.0 && r <= 1.0))
		return false;
	fmt_double(v, r);
	return true;
}

/* The value of field for g into v; false when there is none to report (a
 * figure the backend cannot measure, or one of a GPU whose last sample
 * failed, which would be stale). */
static bool gpu_value(const struct gpu_row *g, int field, char *v)
{
	const struct colloc_gpu_info *i = &g->info;

	switch (field) {
	case GF_UP:
		fmt_u64(v, g->up ? 1 : 0);
		return true;
	case GF_MEM_RESERVED:
		fmt_u64(v, g->reserved_bytes);
		return true;
	case GF_JOBS:
		fmt_u64(v, g->n_jobs);
		return true;
	case GF_UNOWNED:
		fmt_u64(v, g->n_unowned);
		return true;
	case GF_UNOWNED_BYTES:
		fmt_u64(v, g->unowned_bytes);
		return true;
	default:
		break;
	}
	if (!g->up)
		return false;
	switch (field) {
	case GF_MEM_TOTAL:
		fmt_u64(v, i->mem_total_bytes);
		return true;
	case GF_MEM_USED:
		fmt_u64(v, i->mem_used_bytes);
		return true;
	case GF_UTIL:
		if (i->util_pct < 0)
			return false;
		fmt_double(v, i->util_pct / 100.0);
		return true;
	case GF_POWER:
		if (i->power_mw < 0)
			return false;
		fmt_double(v, (double)i->power_mw / 1000.0);
		return true;
	case GF_ENERGY:
		if (i->energy_mj < 0)
			return false;
		fmt_double(v, (double)i->energy_mj / 1000.0);
		return true;
	case GF_DRIVER_RESERVED:
		if (i->mem_reserved_bytes < 0)
			return false;
		fmt_u64(v, (uint64_t)i->mem_reserved_bytes);
		return true;
	case GF_MIG_MODE:
		if (i->mig_mode < 0)
			return false;
		fmt_u64(v, i->mig_mode ? 1 : 0);
		return true;
	case GF_GR_ENGINE_ACTIVE:
		return ratio_value(i->gr_engine_active, v);
	case GF_SM_ACTIVE:
		return ratio_value(i->sm_active, v);
	case GF_SM_OCCUPANCY:
		return ratio_value(i->sm_occupancy, v);
	case GF_TENSOR_ACTIVE:
		return ratio_value(i->tensor_active, v);
	case GF_DRAM_ACTIVE:
		return ratio_value(i->dram_active, v);
	default:
		return false;
	}
}

static void put_gpus(struct out *o, const struct gpu_row *gs, unsigned n)
{
	char v[VALUE_MAX];

	if (n == 0)
		return;
	put_family(o, "colloc_gpu_info", "gauge",
		   "A GPU's index, UUID, model name and PCI bus id (value 1).");
	for (unsigned g = 0; g < n; g++) {
		struct label l[4] = {
			{"gpu", gs[g].index},
			{"uuid", gs[g].info.uuid},
			{"name", gs[g].info.name},
			{"pci_bus_id", gs[g].info.pci_bus_id},
		};

		put_sample(o, "colloc_gpu_info", l, 4, "1");
	}
	for (size_t f = 0; f < sizeof(gpu_families) / sizeof(gpu_families[0]); f++) {
		bool any = false;

		for (unsigned g = 0; g < n; g++) {
			struct label l[2] = {{"gpu", gs[g].index},
					     {"uuid", gs[g].info.uuid}};

			if (!gpu_value(&gs[g], gpu_families[f].field, v))
				continue;
			if (!any)
				put_family(o, gpu_families[f].name, gpu_families[f].type,
					   gpu_families[f].help);
			any = true;
			put_sample(o, gpu_families[f].name, l, 2, v);
		}
	}
}

/* --- per running job ------------------------------------------------------- */

struct job_row {
	const struct cd_job *job;
	char id[24];
	int n_gpus; /* from the daemon's last sample; 0 when it has none */
	int gpus[COLLOC_SCHED_MAX_GPUS];
	uint64_t used_bytes[COLLOC_SCHED_MAX_GPUS];
};

static void put_jobs(struct out *o, const struct job_row *rs, size_t n,
		     const struct gpu_row *gs, unsigned n_gpus)
{
	static const struct {
		const char *name;
		const char *type;
		const char *help;
	} fam[] = {
		{"colloc_job_memory_need_bytes", "gauge",
		 "A running job's memory need per GPU, what the scheduler places it by."},
		{"colloc_job_memory_peak_bytes", "gauge",
		 "The largest GPU memory a running job has held on one GPU so far."},
		{"colloc_job_attempts", "gauge",
		 "Launches of a running job so far (more than 1 after OOM retries)."},
		{"colloc_job_start_time_seconds", "gauge",
		 "When a running job's current attempt started, in seconds since the "
		 "Unix epoch."},
	};
	char v[VALUE_MAX];
	bool any = false;

	if (n == 0)
		return;
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		put_family(o, fam[f].name, fam[f].type, fam[f].help);
		for (size_t k = 0; k < n; k++) {
			const struct cd_job *j = rs[k].job;
			struct label l[3] = {
				{"job", rs[k].id}, {"user", j->user}, {"name", j->name}};

			if (f == 0)
				fmt_u64(v, j->mem_need_bytes);
			else if (f == 1)
				fmt_u64(v, j->peak_bytes);
			else if (f == 2)
				fmt_u64(v, j->attempts > 0 ? (uint64_t)j->attempts : 0);
			else
				fmt_double(v, (double)j->start_ms / 1000.0);
			put_sample(o, fam[f].name, l, 3, v);
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct cd_job *j = rs[k].job;

		for (int i = 0; i < rs[k].n_gpus; i++) {
			int g = rs[k].gpus[i];
			struct label l[4] = {{"job", rs[k].id},
					     {"user", j->user},
					     {"name", j->name},
					     {"gpu", ""}};

			if (g < 0 || (unsigned)g >= n_gpus || !gs[g].up)
				continue;
			l[3].value = gs[g].index;
			if (!any)
				put_family(o, "colloc_job_memory_used_bytes", "gauge",
					   "GPU memory a running job's processes held on "
					   "one of its GPUs at the last sample.");
			any = true;
			fmt_u64(v, rs[k].used_bytes[i]);
			put_sample(o, "colloc_job_memory_used_bytes", l, 4, v);
		}
	}
}

/* --- all of it ------------------------------------------------------------- */

int cd_metrics_render(struct cd_daemon *d, char **text, size_t *len,
		      struct colloc_diag *diag)
{
	struct cd_store *store = cd_daemon_store(d);
	unsigned n_gpus = cd_daemon_gpu_count(d);
	struct out o = {NULL, 0, 0, 0};
	struct gpu_row *gs = NULL;
	struct job_row *rs = NULL;
	struct cd_job *jobs = NULL;
	size_t n_jobs = 0, n_rs = 0;
	uint64_t last_id = 0, lost = 0, oom_requeued = 0;
	uint64_t by_state[CD_JOB_STATE_COUNT_];
	int rc;

	*text = NULL;
	*len = 0;
	gs = calloc(n_gpus ? n_gpus : 1, sizeof(*gs));
	if (!gs)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	for (unsigned g = 0; g < n_gpus; g++) {
		if ((rc = cd_daemon_gpu(d, g, &gs[g].info, &gs[g].reserved_bytes, NULL, 0,
					&gs[g].n_jobs, diag)))
			goto out;
		gs[g].up = cd_daemon_gpu_up(d, g);
		{
			struct colloc_gpu_process ps[CD_UNOWNED_MAX];

			(void)cd_daemon_gpu_unowned(d, g, ps, &gs[g].n_unowned,
						    &gs[g].unowned_bytes);
		}
		snprintf(gs[g].index, sizeof(gs[g].index), "%u", g);
	}
	/* Counts by one query; records only of the running jobs, so a scrape
	 * costs the same with a long history. The same rule as `colloc
	 * stats`: a job whose need an OOM death raised keeps that source. */
	if ((rc = cd_store_job_counts(store, by_state, &oom_requeued, diag)) ||
	    (rc = cd_store_job_list(store, 1u << CD_JOB_RUNNING, -1, 0, &jobs, &n_jobs,
				    diag)) ||
	    (rc = cd_store_last_id(store, &last_id, diag)) ||
	    (rc = cd_store_event_count(store, "lost", &lost, diag)))
		goto out;
	rs = calloc(n_jobs ? n_jobs : 1, sizeof(*rs));
	if (!rs) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < n_jobs; k++) {
		struct job_row *r;
		int ng;

		if (jobs[k].state != CD_JOB_RUNNING)
			continue;
		r = &rs[n_rs++];
		r->job = &jobs[k];
		snprintf(r->id, sizeof(r->id), "%llu", (unsigned long long)jobs[k].id);
		ng = cd_daemon_job_usage(d, jobs[k].id, r->gpus, r->used_bytes,
					 COLLOC_SCHED_MAX_GPUS);
		r->n_gpus = ng < 0			 ? 0
			    : ng > COLLOC_SCHED_MAX_GPUS ? COLLOC_SCHED_MAX_GPUS
							 : ng;
	}

	put_daemon(&o, d, by_state, oom_requeued, last_id, lost);
	put_gpus(&o, gs, n_gpus);
	put_jobs(&o, rs, n_rs, gs, n_gpus);
	if (o.err) {
		rc = o.err == COLLOC_ELIMIT
			     ? colloc_diag_set(diag, o.err,
					       "metrics over the %zu MiB limit",
					       CD_METRICS_MAX_BYTES >> 20)
			     : colloc_diag_set(diag, o.err, "cannot render metrics: %s",
					       colloc_strerror(o.err));
		goto out;
	}
	*text = o.p;
	*len = o.len;
	o.p = NULL;
	rc = 0;
out:
	free(o.p);
	for (size_t k = 0; k < n_jobs; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	free(rs);
	free(gs);
	return rc;
}
