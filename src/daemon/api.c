/*
 * api.c — collocd's HTTP/JSON API (docs/api.md): routing, request
 * validation and JSON for jobs and GPUs. See api.h.
 *
 * Every request that fails validation is answered before the daemon is
 * touched, so a malformed request changes nothing.
 */
#include "daemon/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/sched.h"
#include "colloc/units.h"

#define API_MAX_ARGS 4096
#define API_MAX_ENV 4096
#define API_MAX_PRIORITY 1000
#define API_MAX_MEM_BYTES (1ull << 50) /* 1 PiB: no GPU comes close */
#define API_MAX_STATES 8

void cd_api_response_fini(struct cd_api_response *r)
{
	if (!r)
		return;
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static void set_json(struct cd_api_response *r, int status, cJSON *obj)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	cJSON_Delete(obj);
	free(r->body);
	r->content_type = "application/json";
	if (!text) {
		static const char oom[] =
			"{\"error\":{\"status\":500,\"code\":\"internal\","
			"\"message\":\"out of memory\"}}";

		r->status = 500;
		r->body = malloc(sizeof(oom));
		r->body_len = r->body ? sizeof(oom) - 1 : 0;
		if (r->body)
			memcpy(r->body, oom, sizeof(oom));
		return;
	}
	r->status = status;
	r->body = text;
	r->body_len = strlen(text);
}

static const char *status_code_name(int status)
{
	switch (status) {
	case 400:
		return "bad_request";
	case 403:
		return "forbidden";
	case 404:
		return "not_found";
	case 405:
		return "method_not_allowed";
	case 409:
		return "conflict";
	case 413:
		return "too_large";
	case 429:
		return "too_many_jobs";
	case 503:
		return "unavailable";
	default:
		return "internal";
	}
}

static void set_error(struct cd_api_response *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct cd_api_response *r, int status, const char *fmt, ...)
{
	char msg[COLLOC_DIAG_MAX + 128];
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err) {
		cJSON_AddNumberToObject(err, "status", status);
		cJSON_AddStringToObject(err, "code", status_code_name(status));
		cJSON_AddStringToObject(err, "message", msg);
	}
	set_json(r, status, root);
}

/* The HTTP status for a daemon operation's error code. */
static int status_of(int rc)
{
	switch (rc) {
	case COLLOC_ENOTFOUND:
		return 404;
	case COLLOC_EUSAGE:
	case COLLOC_EFORMAT:
		return 400;
	case COLLOC_ELIMIT:
		return 413;
	case CD_EQUOTA:
		return 429;
	default:
		return 500;
	}
}

/* --- request bodies ------------------------------------------------------ */

void cd_submit_fini(struct cd_submit *s)
{
	if (!s)
		return;
	free(s->argv_json);
	free(s->env_json);
	memset(s, 0, sizeof(*s));
}

/* Copy the string member `key` of obj into buf; absent is fine (buf keeps
 * its value), anything else but a string that fits is an error. */
static int get_string(const cJSON *obj, const char *key, char *buf, size_t len,
		      bool required, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t n;

	if (!v) {
		if (required)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field '%s' is required", key);
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field '%s': expected a string", key);
	n = strlen(v->valuestring);
	if (n >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "field '%s': longer than %zu bytes", key, len - 1);
	memcpy(buf, v->valuestring, n + 1);
	return 0;
}

/* An integer member in [lo, hi]; absent leaves *out. */
static int get_int(const cJSON *obj, const char *key, double lo, double hi, double *out,
		   struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v)
		return 0;
	/* Range first: casting a double outside int64_t's range is undefined
	 * (the fuzzer found 6.7e59). */
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    v->valuedouble != floor(v->valuedouble))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field '%s': expected an integer %.0f..%.0f", key,
				       lo, hi);
	*out = v->valuedouble;
	return 0;
}

/*
 * Validate the string array `key` (each entry non-empty when nonempty,
 * containing '=' when env) and store it re-serialised into *out.
 */
static int get_string_array(const cJSON *obj, const char *key, int max, bool env,
			    char **out, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	const cJSON *e;
	int n = 0;

	if (!v)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "field '%s' is required",
				       key);
	if (!cJSON_IsArray(v))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field '%s': expected an array of strings", key);
	cJSON_ArrayForEach(e, v)
	{
		if (!cJSON_IsString(e) || !e->valuestring)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field '%s': entry %d is not a string",
					       key, n);
		if (env && (e->valuestring[0] == '=' || !strchr(e->valuestring, '=')))
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field '%s': entry %d is not NAME=VALUE",
					       key, n);
		if (++n > max)
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "field '%s': more than %d entries", key,
					       max);
	}
	if (!env && (n == 0 || v->child->valuestring[0] == '\0'))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field '%s': needs a non-empty command", key);
	*out = cJSON_PrintUnformatted(v);
	if (!*out)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	return 0;
}

bool cd_api_utf8_ok(const char *s, size_t n, size_t *bad)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned c = u[i];
		size_t len;
		uint32_t cp, min;

		if (c == 0)
			goto fail;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			len = 2, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			len = 3, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			len = 4, cp = c & 0x07, min = 0x10000;
		else
			goto fail;
		if (n - i < len)
			goto fail;
		for (size_t k = 1; k < len; k++) {
			if ((u[i + k] & 0xc0) != 0x80)
				goto fail;
			cp = (cp << 6) | (u[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto fail;
		i += len;
	}
	return true;
fail:
	if (bad)
		*bad = i;
	return false;
}

/* The n hex digits at s as a number, or -1 (a non-digit, NUL included). */
static long hex_digits(const char *s, size_t n)
{
	long v = 0;

	for (size_t k = 0; k < n; k++) {
		char h = s[k];

		v <<= 4;
		if (h >= '0' && h <= '9')
			v |= h - '0';
		else if (h >= 'a' && h <= 'f')
			v |= h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			v |= h - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* The 4 hex digits at s[i..i+3] (i + 4 <= n) as a number, or -1. */
static long hex4(const char *s, size_t n, size_t i)
{
	return i + 4 > n ? -1 : hex_digits(s + i, 4);
}

/*
 * A \u escape in the raw JSON that decodes to NUL or to half a surrogate
 * pair: cJSON would cut the string there, or write what is not UTF-8.
 * Returns the offset of its backslash, or (size_t)-1 when there is none.
 * (Escapes cJSON rejects anyway are left to it.)
 */
static size_t bad_escape(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		long v, w;

		if (s[i] != '\\')
			continue;
		if (s[i + 1] != 'u') {
			i++; /* an escaped character, perhaps a backslash */
			continue;
		}
		v = hex4(s, n, i + 2);
		if (v < 0)
			continue;
		if (v == 0 || (v >= 0xdc00 && v <= 0xdfff))
			return i;
		if (v >= 0xd800 && v <= 0xdbff) { /* a low half must follow */
			w = i + 7 < n && s[i + 6] == '\\' && s[i + 7] == 'u'
				    ? hex4(s, n, i + 8)
				    : -1;
			if (w < 0xdc00 || w > 0xdfff)
				return i;
			i += 6;
		}
		i += 5;
	}
	return (size_t)-1;
}

static const char *const submit_fields[] = {
	"argv",		"env",	      "cwd",  "name",	    "gpus",  "priority",
	"mem_bytes",	"mem_source", "util", "util_graph", "model", "exclusive",
	"time_limit_s", "after",      "hold", "array",	    NULL,
};

/* A fraction member of obj, required. */
static int get_fraction(const cJSON *obj, const char *what, const char *key, double *out,
			struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field '%s.%s': expected a number 0..1", what,
				       key);
	*out = v->valuedouble;
	return 0;
}

/*
 * obj, the body (what NULL) or its object member `what`, must be an object
 * whose members are all named in known (NULL-terminated), each once: JSON
 * allows a name twice, and which one wins is the parser's choice, so a
 * request that says two things is refused.
 */
static int check_object(const cJSON *obj, const char *what, const char *const *known,
			struct colloc_diag *diag)
{
	const char *pre = what ? what : "", *dot = what ? "." : "";
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		return what ? colloc_diag_set(diag, COLLOC_EUSAGE,
					      "field '%s': expected an object", what)
			    : colloc_diag_set(diag, COLLOC_EFORMAT,
					      "body must be a JSON object");
	cJSON_ArrayForEach(it, obj)
	{
		bool ok = false;

		for (size_t k = 0; it->string && known[k]; k++)
			ok = ok || strcmp(it->string, known[k]) == 0;
		if (!ok)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "unknown field '%s%s%s'", pre, dot,
					       it->string ? it->string : "");
		for (const cJSON *o = it->next; o; o = o->next)
			if (o->string && strcmp(o->string, it->string) == 0)
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "field '%s%s%s' given twice", pre,
						       dot, it->string);
	}
	return 0;
}

/*
 * "util_graph": {"gpu_util": F, "sm_activity": F, "platform": "NAME"}, the
 * CLI's prediction from the model's graph: both scales, the daemon picks
 * the one it measures. Absent leaves req's "none" values.
 */
static int get_util_graph(const cJSON *root, struct cd_submit *req,
			  struct colloc_diag *diag)
{
	static const char *const known[] = {"gpu_util", "sm_activity", "platform", NULL};
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "util_graph");
	const cJSON *it;
	int rc;

	if (!g)
		return 0;
	if ((rc = check_object(g, "util_graph", known, diag)) ||
	    (rc = get_fraction(g, "util_graph", "gpu_util", &req->graph_gpu_util,
			       diag)) ||
	    (rc = get_fraction(g, "util_graph", "sm_activity", &req->graph_sm_activity,
			       diag)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(g, "platform");
	if (it) {
		size_t n;

		if (!cJSON_IsString(it) || !it->valuestring)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field 'util_graph.platform': expected a "
					       "string");
		n = strlen(it->valuestring);
		if (n >= sizeof(req->graph_platform))
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "field 'util_graph.platform': longer than "
					       "%zu bytes",
					       sizeof(req->graph_platform) - 1);
		/* It is shown in the job's utilization source and its events. */
		for (size_t k = 0; k < n; k++)
			if ((unsigned char)it->valuestring[k] < 0x20 ||
			    it->valuestring[k] == 0x7f)
				return colloc_diag_set(
					diag, COLLOC_EUSAGE,
					"field 'util_graph.platform': control character");
		memcpy(req->graph_platform, it->valuestring, n + 1);
	}
	return 0;
}

/* "after": ["ID[:ok|any]", ...], at most CD_DEPS_MAX, each id once. */
static int get_after(const cJSON *root, struct cd_submit *req, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "after"), *e;

	if (!v)
		return 0;
	if (!cJSON_IsArray(v))
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"field 'after': expected an array of \"ID[:ok|any]\"");
	cJSON_ArrayForEach(e, v)
	{
		struct cd_dep *dp;

		if (req->n_deps == CD_DEPS_MAX)
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "field 'after': more than %d dependencies",
					       CD_DEPS_MAX);
		dp = &req->deps[req->n_deps];
		if (!cJSON_IsString(e) || !e->valuestring ||
		    colloc_dep_parse(e->valuestring, &dp->id, &dp->kind) != 0)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field 'after': entry %d is not \"ID\", "
					       "\"ID:ok\" or \"ID:any\"",
					       req->n_deps);
		for (int k = 0; k < req->n_deps; k++)
			if (req->deps[k].id == dp->id)
				return colloc_diag_set(
					diag, COLLOC_EUSAGE,
					"field 'after': job %llu given twice",
					(unsigned long long)dp->id);
		dp->met = false;
		req->n_deps++;
	}
	return 0;
}

/* "array": {"first": A, "last": B, "max_running": N}; max_running
 * optional. */
static int get_array(const cJSON *root, struct cd_submit *req, struct colloc_diag *diag)
{
	static const char *const known[] = {"first", "last", "max_running", NULL};
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "array");
	double first = -1, last = -1, max = 0;
	int rc;

	if (!v)
		return 0;
	if ((rc = check_object(v, "array", known, diag)) ||
	    (rc = get_int(v, "first", 0, 1e6, &first, diag)) ||
	    (rc = get_int(v, "last", 0, 1e6, &last, diag)) ||
	    (rc = get_int(v, "max_running", 1, CD_ARRAY_MAX, &max, diag)))
		return rc;
	if (first < 0 || last < 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field 'array': 'first' and 'last' are required");
	if (last < first || last - first >= CD_ARRAY_MAX)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "field 'array': first..last must be 1..%d indices "
				       "in order",
				       CD_ARRAY_MAX);
	req->array = true;
	req->array_first = (int)first;
	req->array_last = (int)last;
	req->array_max_running = (int)max;
	return 0;
}

/* The job features of issue 16 in a submit body. */
static int get_job_features(const cJSON *root, struct cd_submit *req,
			    struct colloc_diag *diag)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, "time_limit_s");
	int rc;

	if (it) {
		double max_s = (double)CD_TIME_LIMIT_MAX_MS / 1000.0;

		if (!cJSON_IsNumber(it) ||
		    !(it->valuedouble >= 0.001 && it->valuedouble <= max_s))
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field 'time_limit_s': expected seconds "
					       "0.001..%.0f",
					       max_s);
		req->time_limit_ms = (int64_t)llround(it->valuedouble * 1000.0);
	}
	it = cJSON_GetObjectItemCaseSensitive(root, "hold");
	if (it) {
		if (!cJSON_IsBool(it))
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "field 'hold': expected true or false");
		req->hold = cJSON_IsTrue(it);
	}
	if ((rc = get_after(root, req, diag)) || (rc = get_array(root, req, diag)))
		return rc;
	return 0;
}

int cd_api_parse_submit(const char *body, size_t len, struct cd_submit *req,
			struct colloc_diag *diag)
{
	cJSON *root;
	const cJSON *it;
	double num;
	int rc;

	memset(req, 0, sizeof(*req));
	req->n_gpus = 1;
	req->util = -1;
	req->graph_gpu_util = -1;
	req->graph_sm_activity = -1;
	snprintf(req->mem_source, sizeof(req->mem_source), "request");
	if (!body || len == 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "empty body: expected a JSON object");
	if (len > CD_API_BODY_MAX)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "body over %u bytes",
				       CD_API_BODY_MAX);
	{
		size_t bad = 0;

		if (!cd_api_utf8_ok(body, len, &bad))
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "body is not UTF-8 (byte %zu)", bad);
		if ((bad = bad_escape(body, len)) != (size_t)-1)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "byte %zu: a \\u escape of NUL or of half "
					       "a surrogate pair",
					       bad);
	}
	{
		const char *end = NULL;

		root = cJSON_ParseWithLengthOpts(body, len, &end, false);
		if (!root)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "body is not valid JSON");
		while (end && end < body + len &&
		       (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
			end++;
		if (end && end < body + len && *end != '\0') {
			rc = colloc_diag_set(diag, COLLOC_EFORMAT,
					     "bytes after the JSON object (at byte %zu)",
					     (size_t)(end - body));
			goto out;
		}
	}
	if ((rc = check_object(root, NULL, submit_fields, diag)))
		goto out;
	if ((rc = get_string_array(root, "argv", API_MAX_ARGS, false, &req->argv_json,
				   diag)) ||
	    (rc = get_string_array(root, "env", API_MAX_ENV, true, &req->env_json,
				   diag)) ||
	    (rc = get_string(root, "cwd", req->cwd, sizeof(req->cwd), true, diag)) ||
	    (rc = get_string(root, "name", req->name, sizeof(req->name), false, diag)) ||
	    (rc = get_string(root, "model", req->model, sizeof(req->model), false,
			     diag)) ||
	    (rc = get_string(root, "mem_source", req->mem_source, sizeof(req->mem_source),
			     false, diag)))
		goto out;
	if (req->cwd[0] != '/') {
		rc = colloc_diag_set(diag, COLLOC_EUSAGE,
				     "field 'cwd': expected an absolute path");
		goto out;
	}
	if (strcmp(req->mem_source, "request") != 0 &&
	    strcmp(req->mem_source, "estimate") != 0) {
		rc = colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"field 'mem_source': expected \"request\" or \"estimate\"");
		goto out;
	}
	num = 1;
	if ((rc = get_int(root, "gpus", 1, COLLOC_SCHED_MAX_GPUS, &num, diag)))
		goto out;
	req->n_gpus = (int)num;
	num = 0;
	if ((rc = get_int(root, "priority", -API_MAX_PRIORITY, API_MAX_PRIORITY, &num,
			  diag)))
		goto out;
	req->priority = (int)num;
	num = 0;
	if ((rc = get_int(root, "mem_bytes", 1, (double)API_MAX_MEM_BYTES, &num, diag)))
		goto out;
	req->mem_bytes = (uint64_t)num;
	it = cJSON_GetObjectItemCaseSensitive(root, "util");
	if (it) {
		if (!cJSON_IsNumber(it) ||
		    !(it->valuedouble >= 0 && it->valuedouble <= 1)) {
			rc = colloc_diag_set(diag, COLLOC_EUSAGE,
					     "field 'util': expected a number 0..1");
			goto out;
		}
		req->util = it->valuedouble;
	}
	if ((rc = get_util_graph(root, req, diag)))
		goto out;
	it = cJSON_GetObjectItemCaseSensitive(root, "exclusive");
	if (it) {
		if (!cJSON_IsBool(it)) {
			rc = colloc_diag_set(diag, COLLOC_EUSAGE,
					     "field 'exclusive': expected true or false");
			goto out;
		}
		req->exclusive = cJSON_IsTrue(it);
	}
	if ((rc = get_job_features(root, req, diag)))
		goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc)
		cd_submit_fini(req);
	return rc;
}

/* --- JSON of records ----------------------------------------------------- */

static void add_time(cJSON *obj, const char *key, int64_t ms)
{
	if (ms > 0)
		cJSON_AddNumberToObject(obj, key, (double)ms / 1000.0);
	else
		cJSON_AddNullToObject(obj, key);
}

cJSON *cd_api_job_json(struct cd_daemon *d, const struct cd_job *job, int detail)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *gpus;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "id", (double)job->id);
	cJSON_AddStringToObject(o, "name", job->name);
	cJSON_AddStringToObject(o, "user", job->user);
	cJSON_AddNumberToObject(o, "uid", job->uid);
	cJSON_AddStringToObject(o, "state", cd_job_state_name(job->state));
	if (job->exit_code >= 0)
		cJSON_AddNumberToObject(o, "exit_code", job->exit_code);
	else
		cJSON_AddNullToObject(o, "exit_code");
	if (job->term_signal > 0)
		cJSON_AddNumberToObject(o, "signal", job->term_signal);
	else
		cJSON_AddNullToObject(o, "signal");
	cJSON_AddStringToObject(o, "reason", job->reason);
	gpus = cJSON_AddArrayToObject(o, "gpus");
	for (int k = 0; gpus && k < job->n_assigned && k < COLLOC_SCHED_MAX_GPUS; k++)
		cJSON_AddItemToArray(gpus, cJSON_CreateString(job->gpus[k]));
	cJSON_AddNumberToObject(o, "n_gpus", job->n_gpus);
	cJSON_AddNumberToObject(o, "attempts", job->attempts);
	cJSON_AddNumberToObject(o, "mem_need_bytes", (double)job->mem_need_bytes);
	cJSON_AddStringToObject(o, "mem_source", job->mem_source);
	cJSON_AddNumberToObject(o, "util_pred", job->util_pred);
	cJSON_AddStringToObject(o, "util_source", job->util_source);
	if (job->graph_gpu_util >= 0 && job->graph_sm_activity >= 0) {
		cJSON *g = cJSON_AddObjectToObject(o, "util_graph");

		if (g) {
			cJSON_AddNumberToObject(g, "gpu_util", job->graph_gpu_util);
			cJSON_AddNumberToObject(g, "sm_activity", job->graph_sm_activity);
			cJSON_AddStringToObject(g, "platform", job->graph_platform);
		}
	} else {
		cJSON_AddNullToObject(o, "util_graph");
	}
	cJSON_AddNumberToObject(o, "priority", job->priority);
	cJSON_AddBoolToObject(o, "exclusive", job->exclusive);
	cJSON_AddNumberToObject(o, "peak_bytes", (double)job->peak_bytes);
	cJSON_AddNumberToObject(o, "util_mean", job->util_mean);
	cJSON_AddStringToObject(o, "model", job->model);
	add_time(o, "submit_time", job->submit_ms);
	add_time(o, "start_time", job->start_ms);
	add_time(o, "end_time", job->end_ms);
	if (job->time_limit_ms > 0)
		cJSON_AddNumberToObject(o, "time_limit_s",
					(double)job->time_limit_ms / 1000.0);
	else
		cJSON_AddNullToObject(o, "time_limit_s");
	cJSON_AddBoolToObject(o, "held", job->held);
	{
		cJSON *after = cJSON_AddArrayToObject(o, "after");

		for (int k = 0; after && k < job->n_deps && k < CD_DEPS_MAX; k++) {
			cJSON *x = cJSON_CreateObject();

			cJSON_AddNumberToObject(x, "job", (double)job->deps[k].id);
			cJSON_AddStringToObject(x, "type",
						colloc_dep_kind_name(job->deps[k].kind));
			cJSON_AddBoolToObject(x, "met", job->deps[k].met);
			cJSON_AddItemToArray(after, x);
		}
	}
	if (job->array_id) {
		cJSON_AddNumberToObject(o, "array_id", (double)job->array_id);
		cJSON_AddNumberToObject(o, "array_index", job->array_index);
		if (job->array_max_running > 0)
			cJSON_AddNumberToObject(o, "array_max_running",
						job->array_max_running);
		else
			cJSON_AddNullToObject(o, "array_max_running");
	} else {
		cJSON_AddNullToObject(o, "array_id");
		cJSON_AddNullToObject(o, "array_index");
		cJSON_AddNullToObject(o, "array_max_running");
	}
	if (detail) {
		cJSON *argv = job->argv_json ? cJSON_Parse(job->argv_json) : NULL;
		cJSON *env = job->env_json ? cJSON_Parse(job->env_json) : NULL;
		cJSON *names = cJSON_AddArrayToObject(o, "env_names");
		cJSON *events = cJSON_AddArrayToObject(o, "events");
		const cJSON *e;
		struct cd_event *ev = NULL;
		size_t n_ev = 0;

		cJSON_AddItemToObject(o, "argv", argv ? argv : cJSON_CreateArray());
		cJSON_AddStringToObject(o, "cwd", job->cwd);
		cJSON_ArrayForEach(e, env)
		{
			const char *eq =
				cJSON_IsString(e) ? strchr(e->valuestring, '=') : NULL;
			char name[256];

			if (!eq || !names)
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - e->valuestring),
				 e->valuestring);
			cJSON_AddItemToArray(names, cJSON_CreateString(name));
		}
		cJSON_Delete(env);
		if (d && events &&
		    cd_store_event_list(cd_daemon_store(d), job->id, &ev, &n_ev, NULL) ==
			    0) {
			for (size_t k = 0; k < n_ev; k++) {
				cJSON *x = cJSON_CreateObject();

				cJSON_AddNumberToObject(x, "time",
							(double)ev[k].ts_ms / 1000.0);
				cJSON_AddStringToObject(x, "kind", ev[k].kind);
				cJSON_AddStringToObject(x, "message", ev[k].message);
				cJSON_AddItemToArray(events, x);
			}
			free(ev);
		}
	}
	return o;
}

/* --- routing --------------------------------------------------------------- */

/* A job id: decimal digits only, 1..2^63-1. */
static bool parse_id(const char *s, size_t len, uint64_t *id)
{
	uint64_t v = 0;

	if (len == 0 || len > 19 || s[0] == '0')
		return false;
	for (size_t k = 0; k < len; k++) {
		if (s[k] < '0' || s[k] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[k] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return false;
	*id = v;
	return true;
}

struct query {
	bool all;
	unsigned state_mask; /* 0 = all states */
	uint64_t offset;
	uint64_t max;
	char user[CD_USER_MAX]; /* "" = any */
	char name[CD_NAME_MAX]; /* "" = any; a shell pattern */
	int64_t since_ms; /* 0 = any; wall clock */
	bool scope_store; /* scope=store (GET /v1/stats); else scope=start */
};

/* The two hex digits at s as a number, or -1 (s is NUL-terminated: a NUL
 * is a non-digit, so the second is not read past it). */
static long hex2(const char *s)
{
	return hex_digits(s, s[0] ? 2 : 1);
}

/* The value v of query key as text (percent-decoded) into out; UTF-8
 * without control characters, at most len - 1 bytes. */
static int query_text(const char *key, const char *v, char *out, size_t len,
		      struct colloc_diag *diag)
{
	size_t n = 0, bad = 0;

	for (const char *p = v; *p; p++) {
		int c = (unsigned char)*p;

		if (c == '%') {
			long h = hex2(p + 1);

			if (h < 0)
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "query '%s': bad %%-escape", key);
			c = (int)h;
			p += 2;
		}
		if (c < 0x20 || c == 0x7f)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "query '%s': control character", key);
		if (n + 1 >= len)
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "query '%s': longer than %zu bytes", key,
					       len - 1);
		out[n++] = (char)c;
	}
	out[n] = '\0';
	if (!cd_api_utf8_ok(out, n, &bad))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "query '%s': not UTF-8", key);
	return 0;
}

/* Parse "k=v&k=v"; unknown keys are errors so that typos are not ignored. */
static int parse_query(const char *q, struct query *out, struct colloc_diag *diag)
{
	char buf[1024];
	char *save = NULL;

	memset(out, 0, sizeof(*out));
	out->max = CD_API_BODY_MAX;
	if (!q || !*q)
		return 0;
	if (strlen(q) >= sizeof(buf))
		return colloc_diag_set(diag, COLLOC_ELIMIT, "query string too long");
	snprintf(buf, sizeof(buf), "%s", q);
	for (char *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";

		if (eq)
			*eq = '\0';
		if (strcmp(kv, "all") == 0) {
			bool yes = *v == '\0' || strcmp(v, "1") == 0 ||
				   strcmp(v, "true") == 0;
			bool no = strcmp(v, "0") == 0 || strcmp(v, "false") == 0;

			if (!yes && !no)
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "query 'all': expected 1 or 0");
			out->all = yes;
		} else if (strcmp(kv, "state") == 0) {
			char sbuf[256];
			char *s2 = NULL;

			snprintf(sbuf, sizeof(sbuf), "%s", v);
			for (char *s = strtok_r(sbuf, ",", &s2); s;
			     s = strtok_r(NULL, ",", &s2)) {
				int st = cd_job_state_parse(s);

				if (st < 0)
					return colloc_diag_set(
						diag, COLLOC_EUSAGE,
						"query 'state': unknown state '%s'", s);
				out->state_mask |= 1u << st;
			}
		} else if (strcmp(kv, "user") == 0 || strcmp(kv, "name") == 0) {
			bool user = kv[0] == 'u';
			int rc = query_text(kv, v, user ? out->user : out->name,
					    user ? sizeof(out->user) : sizeof(out->name),
					    diag);

			if (rc)
				return rc;
		} else if (strcmp(kv, "since") == 0) {
			char *end = NULL;
			double t = strtod(v, &end);

			if (!*v || !end || *end || !(t > 0 && t < 1e11))
				return colloc_diag_set(
					diag, COLLOC_EUSAGE,
					"query 'since': expected Unix seconds");
			out->since_ms = (int64_t)llround(t * 1000.0);
		} else if (strcmp(kv, "scope") == 0) {
			if (strcmp(v, "start") != 0 && strcmp(v, "store") != 0)
				return colloc_diag_set(
					diag, COLLOC_EUSAGE,
					"query 'scope': expected start or store");
			out->scope_store = strcmp(v, "store") == 0;
		} else if (strcmp(kv, "offset") == 0 || strcmp(kv, "max") == 0) {
			uint64_t n;

			if (colloc_parse_u64(v, UINT64_MAX, &n))
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "query '%s': expected a number",
						       kv);
			if (kv[0] == 'o')
				out->offset = n;
			else
				out->max = n < CD_API_BODY_MAX ? n : CD_API_BODY_MAX;
		} else {
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "unknown query parameter '%s'", kv);
		}
	}
	return 0;
}

static void handle_status(struct cd_daemon *d, const struct cd_peer *peer,
			  struct cd_api_response *r)
{
	cJSON *o = cJSON_CreateObject();
	size_t queued = 0, running = 0;

	cd_daemon_counts(d, &queued, &running);
	cJSON_AddStringToObject(o, "version", COLLOC_VERSION);
	cJSON_AddStringToObject(o, "backend", cd_daemon_backend(d));
	cJSON_AddStringToObject(o, "policy",
				colloc_policy_name(cd_daemon_config(d)->sched.policy));
	cJSON_AddNumberToObject(o, "gpus", cd_daemon_gpu_count(d));
	cJSON_AddNumberToObject(o, "queued", (double)queued);
	cJSON_AddNumberToObject(o, "running", (double)running);
	cJSON_AddNumberToObject(o, "uptime_s", cd_daemon_uptime_s(d));
	cJSON_AddNumberToObject(o, "uid", peer->uid);
	cJSON_AddBoolToObject(o, "admin", cd_daemon_is_admin(d, peer));
	set_json(r, 200, o);
}

/* The utilization figures are null where the scope has none (store). */
static void add_util(cJSON *o, const char *key, const struct cd_stats *st, double v)
{
	if (st->util_known)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void handle_stats(struct cd_daemon *d, const struct query *q,
			 struct cd_api_response *r)
{
	struct colloc_diag diag = {{0}};
	struct cd_stats st;
	cJSON *o;

	if (cd_daemon_stats(d, q->scope_store ? CD_STATS_STORE : CD_STATS_START, &st,
			    &diag)) {
		set_error(r, 500, "%s", diag.msg);
		return;
	}
	o = cJSON_CreateObject();
	/* Every figure covers the one scope named here (docs/api.md). */
	cJSON_AddStringToObject(o, "scope",
				st.scope == CD_STATS_STORE ? "store" : "start");
	cJSON_AddNumberToObject(o, "started_at", (double)st.started_ms / 1000.0);
	cJSON_AddStringToObject(o, "policy",
				colloc_policy_name(cd_daemon_config(d)->sched.policy));
	cJSON_AddNumberToObject(o, "gpus", cd_daemon_gpu_count(d));
	cJSON_AddNumberToObject(o, "jobs", (double)st.jobs);
	cJSON_AddNumberToObject(o, "queued", (double)st.queued);
	cJSON_AddNumberToObject(o, "running", (double)st.running);
	cJSON_AddNumberToObject(o, "done", (double)st.done);
	cJSON_AddNumberToObject(o, "failed", (double)st.failed);
	cJSON_AddNumberToObject(o, "cancelled", (double)st.cancelled);
	cJSON_AddNumberToObject(o, "makespan_s", st.makespan_s);
	cJSON_AddNumberToObject(o, "mean_wait_s", st.mean_wait_s);
	cJSON_AddNumberToObject(o, "mean_jct_s", st.mean_jct_s);
	add_util(o, "busy_s", &st, st.busy_s);
	add_util(o, "gpu_util", &st, st.gpu_util_mean);
	add_util(o, "mem_util", &st, st.mem_util_mean);
	cJSON_AddNumberToObject(o, "shared_jobs", (double)st.shared_jobs);
	cJSON_AddNumberToObject(o, "oom_requeued", (double)st.oom_requeued);
	cJSON_AddNumberToObject(o, "oom_recovered", (double)st.oom_recovered);
	cJSON_AddNumberToObject(o, "jobs_lost", (double)st.lost);
	set_json(r, 200, o);
}

/* 1..64 of [A-Za-z0-9._:-] (docs/api.md). */
static bool idem_key_ok(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n >= CD_IDEM_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '.' || k[i] == '_' ||
		      k[i] == ':' || k[i] == '-'))
			return false;
	return true;
}

static void handle_submit(struct cd_daemon *d, const struct cd_peer *peer,
			  const char *idem_key, const char *body, size_t len,
			  struct cd_api_response *r)
{
	struct colloc_diag diag = {{0}};
	struct cd_submit req;
	struct cd_job job;
	cJSON *o;
	int rc, n_array;

	if (idem_key && !idem_key_ok(idem_key)) {
		set_error(r, 400,
			  "header Idempotency-Key: expected 1..%d characters of "
			  "A-Z a-z 0-9 . _ : -",
			  CD_IDEM_MAX - 1);
		return;
	}
	if ((rc = cd_api_parse_submit(body, len, &req, &diag))) {
		set_error(r, status_of(rc), "%s", diag.msg);
		return;
	}
	if (idem_key)
		snprintf(req.idem_key, sizeof(req.idem_key), "%s", idem_key);
	if (!d) {
		set_error(r, 503, "no daemon");
		cd_submit_fini(&req);
		return;
	}
	cd_job_init(&job);
	rc = cd_daemon_submit(d, peer, &req, &job, &diag);
	n_array = req.array ? req.array_last - req.array_first + 1 : 0;
	cd_submit_fini(&req);
	if (rc < 0) {
		set_error(r, status_of(rc), "%s", diag.msg);
		return;
	}
	o = cd_api_job_json(d, &job, 0);
	/* An array's elements have consecutive ids from its first (one
	 * transaction made them). */
	if (o && n_array > 0 && job.array_id) {
		cJSON *ids = cJSON_AddArrayToObject(o, "array_jobs");

		for (int k = 0; ids && k < n_array; k++)
			cJSON_AddItemToArray(
				ids,
				cJSON_CreateNumber((double)(job.array_id + (uint64_t)k)));
	}
	/* 200: the job this key already made (a retry), not a new one */
	set_json(r, rc == CD_SUBMIT_REPLAYED ? 200 : 201, o);
	cd_job_fini(&job);
}

static void handle_list(struct cd_daemon *d, const struct cd_peer *peer,
			const struct query *q, struct cd_api_response *r)
{
	struct colloc_diag diag = {{0}};
	struct cd_job *jobs = NULL;
	struct cd_job_filter f;
	size_t n = 0;
	cJSON *o, *arr;
	bool admin;
	int rc;

	if (q->all && !cd_daemon_is_admin(d, peer)) {
		set_error(r, 403,
			  "only administrators may list all jobs (root or group '%s')",
			  cd_daemon_config(d)->admin_group[0]
				  ? cd_daemon_config(d)->admin_group
				  : "(none configured)");
		return;
	}
	admin = cd_daemon_is_admin(d, peer);
	if (q->user[0] && !admin) {
		const struct passwd *pw = getpwuid(peer->uid);

		if (!pw || strcmp(pw->pw_name, q->user) != 0) {
			set_error(r, 403,
				  "only administrators may list other users' jobs");
			return;
		}
	}
	memset(&f, 0, sizeof(f));
	f.state_mask = q->state_mask ? q->state_mask : ~0u;
	/* Naming a user is asking across users: an admin's right. */
	f.uid = q->all || (q->user[0] && admin) ? -1 : (int64_t)peer->uid;
	f.user = q->user[0] ? q->user : NULL;
	f.name_glob = q->name[0] ? q->name : NULL;
	f.active_since_ms = q->since_ms;
	rc = cd_store_job_find(cd_daemon_store(d), &f, &jobs, &n, &diag);
	if (rc) {
		set_error(r, 500, "%s", diag.msg);
		return;
	}
	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "jobs");
	for (size_t k = 0; k < n; k++) {
		if (arr)
			cJSON_AddItemToArray(arr, cd_api_job_json(d, &jobs[k], 0));
		cd_job_fini(&jobs[k]);
	}
	free(jobs);
	set_json(r, 200, o);
}

/* What POST /v1/jobs/ID/ACTION does. */
enum job_action { ACT_GET, ACT_CANCEL, ACT_HOLD, ACT_RELEASE, ACT_REQUEUE, ACT_UPDATE };

static const struct {
	const char *path; /* after /v1/jobs/ID */
	bool post;
} job_actions[] = {
	[ACT_GET] = {"", false},
	[ACT_CANCEL] = {"/cancel", true},
	[ACT_HOLD] = {"/hold", true},
	[ACT_RELEASE] = {"/release", true},
	[ACT_REQUEUE] = {"/requeue", true},
	[ACT_UPDATE] = {"/update", true},
};

/* POST /v1/jobs/ID/update: {"mem_bytes": N, "priority": P}, at least one. */
static const char *const update_fields[] = {"mem_bytes", "priority", NULL};

static int parse_update(const char *body, size_t len, struct cd_update *u,
			struct colloc_diag *diag)
{
	cJSON *root;
	double num;
	int rc = 0;
	size_t bad = 0;

	memset(u, 0, sizeof(*u));
	if (!body || len == 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "empty body: expected {\"mem_bytes\": N, "
				       "\"priority\": P}");
	if (!cd_api_utf8_ok(body, len, &bad))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "body is not UTF-8 (byte %zu)", bad);
	root = cJSON_ParseWithLength(body, len);
	if ((rc = check_object(root, NULL, update_fields, diag)))
		goto out;
	num = 0;
	if ((rc = get_int(root, "mem_bytes", 1, (double)API_MAX_MEM_BYTES, &num, diag)))
		goto out;
	u->mem_bytes = (uint64_t)num;
	u->have_priority = cJSON_GetObjectItemCaseSensitive(root, "priority") != NULL;
	num = 0;
	if ((rc = get_int(root, "priority", -API_MAX_PRIORITY, API_MAX_PRIORITY, &num,
			  diag)))
		goto out;
	u->priority = (int)num;
	if (!u->mem_bytes && !u->have_priority)
		rc = colloc_diag_set(diag, COLLOC_EUSAGE,
				     "nothing to update: give 'mem_bytes' or 'priority'");
out:
	cJSON_Delete(root);
	return rc;
}

static void handle_job(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		       enum job_action act, const char *body, size_t len,
		       struct cd_api_response *r)
{
	struct colloc_diag diag = {{0}};
	struct cd_update u;
	struct cd_job job;
	int rc;

	cd_job_init(&job);
	switch (act) {
	case ACT_CANCEL:
		rc = cd_daemon_cancel(d, peer, id, &job, &diag);
		/* "has already ended" */
		if (rc == COLLOC_EUSAGE)
			rc = CD_ECONFLICT;
		break;
	case ACT_HOLD:
	case ACT_RELEASE:
		rc = cd_daemon_hold(d, peer, id, act == ACT_HOLD, &job, &diag);
		break;
	case ACT_REQUEUE:
		rc = cd_daemon_requeue(d, peer, id, &job, &diag);
		break;
	case ACT_UPDATE:
		rc = parse_update(body, len, &u, &diag);
		if (rc == 0)
			rc = cd_daemon_update(d, peer, id, &u, &job, &diag);
		break;
	default:
		rc = cd_daemon_get(d, peer, id, &job, &diag);
		break;
	}
	if (rc == CD_ECONFLICT)
		set_error(r, 409, "%s", diag.msg);
	else if (rc)
		set_error(r, status_of(rc), "%s", diag.msg);
	else
		set_json(r, 200, cd_api_job_json(d, &job, act == ACT_GET));
	cd_job_fini(&job);
}

static void handle_log(struct cd_daemon *d, const struct cd_peer *peer, uint64_t id,
		       const struct query *q, struct cd_api_response *r)
{
	struct colloc_diag diag = {{0}};
	struct cd_job job;
	char path[CD_PATH_MAX + 64];
	struct stat sb;
	int fd, rc;

	cd_job_init(&job);
	rc = cd_daemon_get(d, peer, id, &job, &diag);
	if (!rc)
		rc = cd_daemon_log_path(d, id, path, sizeof(path), &diag);
	if (rc) {
		set_error(r, status_of(rc), "%s", diag.msg);
		cd_job_fini(&job);
		return;
	}
	r->status = 200;
	r->content_type = "application/octet-stream";
	r->job_state = cd_job_state_name(job.state);
	r->log_offset = q->offset;
	cd_job_fini(&job);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		r->body = NULL;
		r->body_len = 0;
		return; /* not started yet: an empty log */
	}
	r->log_size = (uint64_t)sb.st_size;
	if (q->offset < r->log_size) {
		uint64_t want = r->log_size - q->offset;
		size_t got = 0;

		if (want > q->max)
			want = q->max;
		r->body = malloc(want ? (size_t)want : 1);
		if (!r->body) {
			close(fd);
			set_error(r, 500, "out of memory");
			return;
		}
		while (got < want) {
			ssize_t k = pread(fd, r->body + got, (size_t)want - got,
					  (off_t)(q->offset + got));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		r->body_len = got;
		r->log_offset = q->offset + got;
	}
	close(fd);
}

/* A DCGM ratio, or null when the backend cannot measure it (never 0). */
static void add_ratio(cJSON *o, const char *key, double v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* GPU g's processes of no job: their count and memory for everyone (they
 * are part of what the GPU has in use); their pids for admins only. */
static void add_unowned(struct cd_daemon *d, unsigned g, bool admin, cJSON *x)
{
	struct colloc_gpu_process ps[CD_UNOWNED_MAX];
	size_t n = 0;
	uint64_t bytes = 0;
	cJSON *u = cJSON_AddObjectToObject(x, "unowned");
	cJSON *arr;

	if (!u || cd_daemon_gpu_unowned(d, g, ps, &n, &bytes))
		return;
	cJSON_AddNumberToObject(u, "processes", (double)n);
	cJSON_AddNumberToObject(u, "mem_used_bytes", (double)bytes);
	if (!admin)
		return;
	arr = cJSON_AddArrayToObject(u, "list");
	for (size_t k = 0; arr && k < n && k < CD_UNOWNED_MAX; k++) {
		cJSON *p = cJSON_CreateObject();

		cJSON_AddNumberToObject(p, "pid", (double)ps[k].pid);
		cJSON_AddNumberToObject(p, "mem_used_bytes", (double)ps[k].used_bytes);
		cJSON_AddItemToArray(arr, p);
	}
}

static void handle_gpus(struct cd_daemon *d, const struct cd_peer *peer,
			struct cd_api_response *r)
{
	bool admin = cd_daemon_is_admin(d, peer);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr;

	cJSON_AddStringToObject(o, "backend", cd_daemon_backend(d));
	arr = cJSON_AddArrayToObject(o, "gpus");
	for (unsigned g = 0; arr && g < cd_daemon_gpu_count(d); g++) {
		struct colloc_gpu_info info;
		uint64_t reserved = 0, ids[256];
		size_t n_ids = 0;
		cJSON *x, *jobs;

		if (cd_daemon_gpu(d, g, &info, &reserved, ids, 256, &n_ids, NULL))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "index", g);
		cJSON_AddStringToObject(x, "uuid", info.uuid);
		cJSON_AddStringToObject(x, "name", info.name);
		cJSON_AddNumberToObject(x, "mem_total_bytes",
					(double)info.mem_total_bytes);
		cJSON_AddNumberToObject(x, "mem_used_bytes", (double)info.mem_used_bytes);
		cJSON_AddNumberToObject(x, "mem_free_bytes", (double)info.mem_free_bytes);
		cJSON_AddNumberToObject(x, "mem_reserved_bytes", (double)reserved);
		if (info.util_pct >= 0)
			cJSON_AddNumberToObject(x, "util_pct", info.util_pct);
		else
			cJSON_AddNullToObject(x, "util_pct");
		if (info.power_mw >= 0)
			cJSON_AddNumberToObject(x, "power_mw", (double)info.power_mw);
		else
			cJSON_AddNullToObject(x, "power_mw");
		add_ratio(x, "sm_active", info.sm_active);
		add_ratio(x, "sm_occupancy", info.sm_occupancy);
		add_ratio(x, "dram_active", info.dram_active);
		add_ratio(x, "tensor_active", info.tensor_active);
		add_ratio(x, "gr_engine_active", info.gr_engine_active);
		if (info.mig_mode >= 0)
			cJSON_AddBoolToObject(x, "mig", info.mig_mode == 1);
		else
			cJSON_AddNullToObject(x, "mig");
		if (info.mig_mode == 1) {
			cJSON *migs = cJSON_AddArrayToObject(x, "mig_instances");

			for (size_t k = 0; migs && k < cd_daemon_slot_count(d); k++) {
				struct cd_slot_info sl;
				cJSON *m;

				if (cd_daemon_slot(d, k, &sl) || sl.gpu != g ||
				    !sl.isolated)
					continue;
				m = cJSON_CreateObject();
				cJSON_AddStringToObject(m, "uuid", sl.uuid);
				cJSON_AddNumberToObject(m, "mem_total_bytes",
							(double)sl.mem_total_bytes);
				cJSON_AddNumberToObject(m, "mem_used_bytes",
							(double)sl.mem_used_bytes);
				cJSON_AddItemToArray(migs, m);
			}
		}
		jobs = cJSON_AddArrayToObject(x, "jobs");
		for (size_t k = 0; jobs && k < n_ids && k < 256; k++) {
			struct cd_job job;

			cd_job_init(&job);
			if (admin || (cd_store_job_get(cd_daemon_store(d), ids[k], &job,
						       NULL) == 0 &&
				      job.uid == peer->uid))
				cJSON_AddItemToArray(jobs,
						     cJSON_CreateNumber((double)ids[k]));
			cd_job_fini(&job);
		}
		add_unowned(d, g, admin, x);
		cJSON_AddItemToArray(arr, x);
	}
	set_json(r, 200, o);
}

static void handle_history(struct cd_daemon *d, unsigned index, const struct query *q,
			   struct cd_api_response *r)
{
	struct cd_gpu_sample *hs = malloc(CD_HISTORY_MAX * sizeof(*hs));
	size_t n = 0, cap = q->max < CD_HISTORY_MAX ? (size_t)q->max : CD_HISTORY_MAX;
	cJSON *o, *arr;

	if (!hs) {
		set_error(r, 500, "out of memory");
		return;
	}
	if (cd_daemon_gpu_history(d, index, hs, cap, &n)) {
		free(hs);
		set_error(r, 404, "no GPU %u (this server has %u)", index,
			  cd_daemon_gpu_count(d));
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "gpu", index);
	cJSON_AddNumberToObject(o, "interval_s",
				(double)cd_daemon_config(d)->sample_ms / 1000.0);
	arr = cJSON_AddArrayToObject(o, "samples");
	for (size_t k = 0; arr && k < n; k++) {
		cJSON *x = cJSON_CreateObject();

		cJSON_AddNumberToObject(x, "time", (double)hs[k].ts_ms / 1000.0);
		cJSON_AddBoolToObject(x, "up", hs[k].up);
		cJSON_AddNumberToObject(x, "mem_used_bytes",
					(double)hs[k].mem_used_bytes);
		if (hs[k].util_pct >= 0)
			cJSON_AddNumberToObject(x, "util_pct", hs[k].util_pct);
		else
			cJSON_AddNullToObject(x, "util_pct");
		add_ratio(x, "sm_active", hs[k].sm_active);
		if (hs[k].power_mw >= 0)
			cJSON_AddNumberToObject(x, "power_mw", (double)hs[k].power_mw);
		else
			cJSON_AddNullToObject(x, "power_mw");
		cJSON_AddItemToArray(arr, x);
	}
	free(hs);
	set_json(r, 200, o);
}

void cd_api_handle(struct cd_daemon *d, const struct cd_peer *peer, const char *method,
		   const char *url, const char *query, const struct cd_api_headers *hdr,
		   const char *body, size_t len, struct cd_api_response *resp)
{
	struct colloc_diag diag = {{0}};
	bool get, post;
	struct query q;
	const char *rest;
	uint64_t id = 0;
	size_t id_len;

	memset(resp, 0, sizeof(*resp));
	if (!method || !url) {
		set_error(resp, 400, "no method or path");
		return;
	}
	if (hdr && hdr->problem) {
		set_error(resp, 400, "%s", hdr->problem);
		return;
	}
	get = strcmp(method, "GET") == 0;
	post = strcmp(method, "POST") == 0;
	if (len > CD_API_BODY_MAX) {
		set_error(resp, 413, "body over %u bytes", CD_API_BODY_MAX);
		return;
	}
	if (parse_query(query, &q, &diag)) {
		set_error(resp, 400, "%s", diag.msg);
		return;
	}
	if (d && !cd_daemon_may_use(d, peer)) {
		set_error(resp, 403, "this collocd serves only uid %u; you are uid %u",
			  (unsigned)geteuid(), peer->uid);
		return;
	}
	if (strcmp(url, "/v1/status") == 0) {
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_status(d, peer, resp);
		return;
	}
	if (strcmp(url, "/v1/stats") == 0) {
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_stats(d, &q, resp);
		return;
	}
	if (strcmp(url, "/v1/gpus") == 0) {
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_gpus(d, peer, resp);
		return;
	}
	if (strcmp(url, "/v1/jobs") == 0) {
		if (post) {
			handle_submit(d, peer, hdr ? hdr->idempotency_key : NULL, body,
				      len, resp);
			return;
		}
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_list(d, peer, &q, resp);
		return;
	}
	if (strncmp(url, "/v1/gpus/", 9) == 0) {
		size_t glen = strcspn(url + 9, "/");

		/* GPU indices are small: reuse the id parser, 0 allowed. */
		if (strcmp(url + 9 + glen, "/history") != 0 ||
		    !(parse_id(url + 9, glen, &id) || (glen == 1 && url[9] == '0')))
			goto not_found;
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_history(d, id > UINT32_MAX ? UINT32_MAX : (unsigned)id, &q, resp);
		return;
	}
	if (strncmp(url, "/v1/jobs/", 9) != 0)
		goto not_found;
	rest = url + 9;
	id_len = strcspn(rest, "/");
	if (!parse_id(rest, id_len, &id)) {
		set_error(resp, 404, "no job '%.*s': job ids are positive integers",
			  (int)(id_len < 64 ? id_len : 64), rest);
		return;
	}
	rest += id_len;
	for (size_t k = 0; k < sizeof(job_actions) / sizeof(job_actions[0]); k++) {
		if (strcmp(rest, job_actions[k].path) != 0)
			continue;
		if (job_actions[k].post ? !post : !get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_job(d, peer, id, (enum job_action)k, body, len, resp);
		return;
	}
	if (strcmp(rest, "/log") == 0) {
		if (!get)
			goto not_allowed;
		if (!d)
			goto unavailable;
		handle_log(d, peer, id, &q, resp);
	} else {
		goto not_found;
	}
	return;
not_found:
	set_error(resp, 404, "no endpoint %s %.200s (see docs/api.md)", method, url);
	return;
not_allowed:
	set_error(resp, 405, "%s is not allowed on %.200s", method, url);
	return;
unavailable:
	set_error(resp, 503, "no daemon");
}
