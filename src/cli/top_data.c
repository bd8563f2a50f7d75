/*
 * top_data.c — `colloc top`'s snapshot (see top.h): three GET requests to
 * collocd read leniently into a struct top_snap. Draws nothing.
 */
#include "cli/top.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json_get.h"
#include "colloc/jobs.h"

void cli_top_snap_init(struct top_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->n_gpus = s->queued = s->running = -1;
}

void cli_top_snap_fini(struct top_snap *s)
{
	free(s->gpus);
	free(s->jobs);
	cli_top_snap_init(s);
}

/* --- lenient JSON reading ---------------------------------------------- */

static bool num_u64(double d, uint64_t *out)
{
	if (!(d >= 0) || d >= 18446744073709551616.0 || d != floor(d))
		return false;
	*out = (uint64_t)d;
	return true;
}

/* A number, or NAN when absent, null or of another type. */
static double jnum_or_nan(const cJSON *o, const char *key)
{
	double d;

	return cli_jnum(o, key, &d) ? d : (double)NAN;
}

/*
 * Copy s into dst (cap bytes with the NUL) for a terminal: every byte that
 * is not printable ASCII becomes '?' (a job name is anyone's text, and the
 * frame is one byte per column), and a NULL or empty s becomes "-".
 */
static void copy_text(char *dst, size_t cap, const char *s)
{
	size_t k = 0;

	if (!s || !*s)
		s = "-";
	for (; s[k] && k + 1 < cap; k++) {
		unsigned char ch = (unsigned char)s[k];

		dst[k] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	dst[k] = '\0';
}

static void fill_status(struct top_snap *s, const cJSON *st)
{
	const cJSON *admin = cJSON_GetObjectItemCaseSensitive(st, "admin");

	s->have_status = true;
	copy_text(s->backend, sizeof(s->backend), cli_jstr(st, "backend"));
	copy_text(s->policy, sizeof(s->policy), cli_jstr(st, "policy"));
	if (!cli_jint(st, "gpus", &s->n_gpus) || s->n_gpus < 0)
		s->n_gpus = -1;
	if (!cli_jint(st, "queued", &s->queued) || s->queued < 0)
		s->queued = -1;
	if (!cli_jint(st, "running", &s->running) || s->running < 0)
		s->running = -1;
	s->admin = cJSON_IsTrue(admin);
}

/* Returns false when out of memory. */
static bool fill_gpus(struct top_snap *s, const cJSON *root)
{
	const cJSON *arr = cli_jarray(root, "gpus"), *g;
	size_t n = 0, k = 0;

	cJSON_ArrayForEach(g, arr)
	{
		if (cJSON_IsObject(g))
			n++;
	}
	if (n > TOP_MAX_GPUS) {
		s->gpus_left_out = n - TOP_MAX_GPUS;
		n = TOP_MAX_GPUS;
	}
	if (n == 0)
		return true;
	s->gpus = calloc(n, sizeof(*s->gpus));
	if (!s->gpus)
		return false;
	cJSON_ArrayForEach(g, arr)
	{
		struct top_gpu *d = &s->gpus[k];
		const cJSON *jobs = cli_jarray(g, "jobs"), *j;
		long long idx;
		double mw;

		if (!cJSON_IsObject(g))
			continue;
		if (k == n)
			break;
		if (cli_jint(g, "index", &idx) && idx >= 0 && idx < 1000000)
			snprintf(d->index, sizeof(d->index), "%lld", idx);
		else
			copy_text(d->index, sizeof(d->index), NULL);
		copy_text(d->uuid, sizeof(d->uuid), cli_jstr(g, "uuid"));
		copy_text(d->name, sizeof(d->name), cli_jstr(g, "name"));
		d->has_total = cli_ju64(g, "mem_total_bytes", &d->mem_total_bytes);
		d->has_used = cli_ju64(g, "mem_used_bytes", &d->mem_used_bytes);
		d->has_reserved =
			cli_ju64(g, "mem_reserved_bytes", &d->mem_reserved_bytes);
		d->util_pct = jnum_or_nan(g, "util_pct");
		d->sm_active = jnum_or_nan(g, "sm_active");
		mw = jnum_or_nan(g, "power_mw");
		d->power_w = mw / 1000.0;
		cJSON_ArrayForEach(j, jobs)
		{
			uint64_t id;

			if (d->n_job_ids == TOP_MAX_GPU_JOBS)
				break;
			if (cJSON_IsNumber(j) && num_u64(j->valuedouble, &id) &&
			    id <= TOP_MAX_JOB_ID)
				d->job_ids[d->n_job_ids++] = id;
		}
		k++;
	}
	s->n_gpus_listed = k;
	return true;
}

/* Which of the snapshot's GPUs the job's "gpus" (UUIDs) name. */
static uint64_t job_gpu_mask(const struct top_snap *s, const cJSON *job)
{
	const cJSON *arr = cli_jarray(job, "gpus"), *u;
	uint64_t mask = 0;

	cJSON_ArrayForEach(u, arr)
	{
		char uuid[sizeof(s->gpus[0].uuid)];

		if (!cJSON_IsString(u) || !u->valuestring[0])
			continue;
		/* Compared as stored: cleaned and cut the same way. */
		copy_text(uuid, sizeof(uuid), u->valuestring);
		for (size_t k = 0; k < s->n_gpus_listed; k++)
			if (strcmp(s->gpus[k].uuid, uuid) == 0)
				mask |= (uint64_t)1 << k;
	}
	return mask;
}

/* Returns false when out of memory. */
static bool fill_jobs(struct top_snap *s, const cJSON *root)
{
	const cJSON *arr = cli_jarray(root, "jobs"), *j;
	size_t n = 0, k = 0;

	cJSON_ArrayForEach(j, arr)
	{
		if (cJSON_IsObject(j))
			n++;
	}
	if (n > TOP_MAX_JOBS) {
		s->jobs_left_out = n - TOP_MAX_JOBS;
		n = TOP_MAX_JOBS;
	}
	if (n == 0)
		return true;
	s->jobs = calloc(n, sizeof(*s->jobs));
	if (!s->jobs)
		return false;
	cJSON_ArrayForEach(j, arr)
	{
		struct top_job *d = &s->jobs[k];
		int state = colloc_job_state_parse(cli_jstr(j, "state"));

		if (!cJSON_IsObject(j))
			continue;
		if (k == n)
			break;
		/* The request asked for these two states only; anything else
		 * (a job that ended as the answer was written) is left out. */
		if (state != COLLOC_JOB_RUNNING && state != COLLOC_JOB_QUEUED)
			continue;
		d->running = state == COLLOC_JOB_RUNNING;
		d->has_id = cli_ju64(j, "id", &d->id) && d->id <= TOP_MAX_JOB_ID;
		copy_text(d->name, sizeof(d->name), cli_jstr(j, "name"));
		copy_text(d->user, sizeof(d->user), cli_jstr(j, "user"));
		d->has_need = cli_ju64(j, "mem_need_bytes", &d->mem_need_bytes);
		d->has_peak = cli_ju64(j, "peak_bytes", &d->peak_bytes);
		d->has_n_gpus = cli_ju64(j, "n_gpus", &d->n_gpus);
		d->has_priority = cli_jint(j, "priority", &d->priority);
		d->since = jnum_or_nan(j, d->running ? "start_time" : "submit_time");
		d->gpu_mask = d->running ? job_gpu_mask(s, j) : 0;
		k++;
	}
	s->n_jobs = k;
	return true;
}

/* --- requests ---------------------------------------------------------- */

/* Put into s->err why request rc for path (with answer r) failed. */
static void describe_failure(const struct cli_client *c, int rc,
			     const struct cli_response *r, const char *path,
			     struct top_snap *s)
{
	cJSON *j, *e, *m;
	char msg[200];

	if (rc == CLI_CLIENT_ECONNECT || rc == CLI_CLIENT_ETRANSPORT) {
		s->unreachable = true;
		copy_text(msg, sizeof(msg), c->err);
		snprintf(s->err, sizeof(s->err), "collocd unreachable: %s: %s",
			 c->socket_path, msg);
		return;
	}
	if (rc) {
		copy_text(msg, sizeof(msg), c->err);
		snprintf(s->err, sizeof(s->err), "GET %s: %s", path, msg);
		return;
	}
	j = r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	if (cJSON_IsString(m) && m->valuestring[0]) {
		copy_text(msg, sizeof(msg), m->valuestring);
		snprintf(s->err, sizeof(s->err), "collocd refused GET %s: %s", path, msg);
	} else {
		snprintf(s->err, sizeof(s->err), "collocd answered HTTP %ld to GET %s",
			 r->status, path);
	}
	cJSON_Delete(j);
}

/*
 * GET path and parse the answer into *out (the caller deletes it). Returns
 * CLI_OK, or an exit status with the reason in s->err; with report, the
 * reason is also printed the way every colloc command prints it.
 */
static int top_get(struct cli_client *c, const char *path, bool report,
		   struct top_snap *s, cJSON **out)
{
	struct cli_response r;
	int rc;

	*out = NULL;
	cli_response_init(&r);
	rc = cli_client_request(c, "GET", path, NULL, &r);
	if (rc == 0 && r.status >= 200 && r.status < 300) {
		*out = r.body ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
		rc = CLI_OK;
		if (!*out) {
			snprintf(s->err, sizeof(s->err),
				 "collocd's answer to GET %s is not valid JSON", path);
			if (report)
				cli_error("top: %s", s->err);
			rc = CLI_ERROR;
		}
	} else {
		describe_failure(c, rc, &r, path, s);
		if (report)
			rc = cli_client_result(c, rc, &r, "top");
		else
			rc = s->unreachable ? CLI_UNREACHABLE : CLI_ERROR;
	}
	cli_response_fini(&r);
	return rc;
}

/* See top.h. */
int cli_top_refresh(struct cli_client *c, enum top_show show, bool report,
		    struct top_snap *s)
{
	static const char *const jobs_path[] = {
		"/v1/jobs?state=queued,running",
		"/v1/jobs?state=queued,running&all=1",
	};
	cJSON *root = NULL;
	int rc;

	cli_top_snap_fini(s);
	s->taken = time(NULL);
	rc = top_get(c, "/v1/status", report, s, &root);
	if (rc)
		return rc;
	fill_status(s, root);
	cJSON_Delete(root);
	s->all = show == TOP_SHOW_ALL || (show == TOP_SHOW_AUTO && s->admin);
	rc = top_get(c, "/v1/gpus", report, s, &root);
	if (rc)
		return rc;
	if (!fill_gpus(s, root))
		goto nomem;
	cJSON_Delete(root);
	rc = top_get(c, jobs_path[s->all], report, s, &root);
	if (rc)
		return rc;
	if (!fill_jobs(s, root))
		goto nomem;
	cJSON_Delete(root);
	return CLI_OK;

nomem:
	cJSON_Delete(root);
	snprintf(s->err, sizeof(s->err), "out of memory");
	if (report)
		cli_error("top: out of memory");
	return CLI_ERROR;
}
