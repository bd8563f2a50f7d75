/*
 * jobs.c — the job vocabulary's tables (see colloc/jobs.h): one row per
 * state or source, read by every lookup, so that a name is written once.
 */
#include "colloc/jobs.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	const char *code; /* squeue's short form */
	const char *aliases[3]; /* other spellings people type */
	bool final;
} states[COLLOC_JOB_STATE_COUNT] = {
	[COLLOC_JOB_QUEUED] = {"queued", "PD", {"pending", NULL, NULL}, false},
	[COLLOC_JOB_RUNNING] = {"running", "R", {NULL, NULL, NULL}, false},
	[COLLOC_JOB_DONE] = {"done", "CD", {"completed", NULL, NULL}, true},
	[COLLOC_JOB_FAILED] = {"failed", "F", {NULL, NULL, NULL}, true},
	[COLLOC_JOB_CANCELLED] = {"cancelled", "CA", {"canceled", NULL, NULL}, true},
};

static const struct {
	const char *name;
	bool from_client;
} mem_sources[COLLOC_MEM_SOURCE_COUNT] = {
	[COLLOC_MEM_REQUEST] = {"request", true},
	[COLLOC_MEM_ESTIMATE] = {"estimate", true},
	[COLLOC_MEM_HISTORY] = {"history", false},
	[COLLOC_MEM_DEFAULT] = {"default", false},
	[COLLOC_MEM_OOM_RETRY] = {"oom-retry", false},
	[COLLOC_MEM_OVERUSE] = {"overuse", false},
};

static const char *const util_sources[COLLOC_UTIL_SOURCE_COUNT] = {
	[COLLOC_UTIL_REQUEST] = "request", [COLLOC_UTIL_HISTORY] = "history",
	[COLLOC_UTIL_GRAPH] = "graph",	   [COLLOC_UTIL_DEFAULT] = "default",
	[COLLOC_UTIL_UNKNOWN] = "unknown",
};

/* Out-of-range values get a fixed string rather than NULL: callers put the
 * result straight into messages and JSON. */
const char *colloc_job_state_name(int state)
{
	if (state < 0 || state >= COLLOC_JOB_STATE_COUNT)
		return "unknown";
	return states[state].name;
}

int colloc_job_state_parse(const char *name)
{
	for (int k = 0; name && k < COLLOC_JOB_STATE_COUNT; k++)
		if (strcmp(name, states[k].name) == 0)
			return k;
	return -1;
}

int colloc_job_state_from_user(const char *text)
{
	if (!text)
		return -1;
	for (int k = 0; k < COLLOC_JOB_STATE_COUNT; k++) {
		if (strcasecmp(text, states[k].name) == 0 ||
		    strcasecmp(text, states[k].code) == 0)
			return k;
		for (size_t a = 0;
		     a < sizeof(states[k].aliases) / sizeof(states[k].aliases[0]); a++)
			if (states[k].aliases[a] &&
			    strcasecmp(text, states[k].aliases[a]) == 0)
				return k;
	}
	return -1;
}

const char *colloc_job_state_code(int state)
{
	if (state < 0 || state >= COLLOC_JOB_STATE_COUNT)
		return "?";
	return states[state].code;
}

bool colloc_job_state_final(int state)
{
	return state >= 0 && state < COLLOC_JOB_STATE_COUNT && states[state].final;
}

const char *colloc_mem_source_name(int source)
{
	if (source < 0 || source >= COLLOC_MEM_SOURCE_COUNT)
		return "unknown";
	return mem_sources[source].name;
}

int colloc_mem_source_parse(const char *name)
{
	for (int k = 0; name && k < COLLOC_MEM_SOURCE_COUNT; k++)
		if (strcmp(name, mem_sources[k].name) == 0)
			return k;
	return -1;
}

bool colloc_mem_source_from_client(int source)
{
	return source >= 0 && source < COLLOC_MEM_SOURCE_COUNT &&
	       mem_sources[source].from_client;
}

const char *colloc_util_source_name(int source)
{
	if (source < 0 || source >= COLLOC_UTIL_SOURCE_COUNT)
		return "unknown";
	return util_sources[source];
}

int colloc_util_source_parse(const char *text)
{
	size_t g;

	if (!text)
		return -1;
	for (int k = 0; k < COLLOC_UTIL_SOURCE_COUNT; k++)
		if (strcmp(text, util_sources[k]) == 0)
			return k;
	/* "graph (PLATFORM)": the platform is a profile name, never empty. */
	g = strlen(util_sources[COLLOC_UTIL_GRAPH]);
	if (strncmp(text, util_sources[COLLOC_UTIL_GRAPH], g) == 0 && text[g] == ' ' &&
	    text[g + 1] == '(' && text[g + 2] != ')' && text[g + 2] != '\0' &&
	    text[strlen(text) - 1] == ')')
		return COLLOC_UTIL_GRAPH;
	return -1;
}

int colloc_util_source_format(int source, const char *platform, char *buf, size_t len)
{
	int n;

	if (!buf || len == 0)
		return -1;
	buf[0] = '\0';
	if (source < 0 || source >= COLLOC_UTIL_SOURCE_COUNT)
		return -1;
	if (source == COLLOC_UTIL_GRAPH && platform && *platform)
		n = snprintf(buf, len, "%s (%s)", util_sources[source], platform);
	else
		n = snprintf(buf, len, "%s", util_sources[source]);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static const char *const dep_kinds[COLLOC_DEP_KIND_COUNT] = {
	[COLLOC_DEP_OK] = "ok",
	[COLLOC_DEP_ANY] = "any",
};

const char *colloc_dep_kind_name(int kind)
{
	if (kind < 0 || kind >= COLLOC_DEP_KIND_COUNT)
		return "unknown";
	return dep_kinds[kind];
}

/* Decimal digits s[0..n) as 1..2^53 (ids travel as JSON numbers). */
static int dep_id(const char *s, size_t n, uint64_t *id)
{
	uint64_t v = 0;

	if (n == 0 || n > 16 || s[0] == '0')
		return -1;
	for (size_t k = 0; k < n; k++) {
		if (s[k] < '0' || s[k] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[k] - '0');
	}
	if (v > ((uint64_t)1 << 53))
		return -1;
	*id = v;
	return 0;
}

int colloc_dep_parse(const char *text, uint64_t *id, int *kind)
{
	const char *colon;

	if (!text)
		return -1;
	/* Slurm's spelling, "afterok:ID", for people who type it from habit. */
	for (int k = 0; k < COLLOC_DEP_KIND_COUNT; k++) {
		char word[16];

		snprintf(word, sizeof(word), "after%s:", dep_kinds[k]);
		if (strncmp(text, word, strlen(word)) == 0) {
			*kind = k;
			return dep_id(text + strlen(word), strlen(text + strlen(word)),
				      id);
		}
	}
	colon = strchr(text, ':');
	if (!colon) {
		*kind = COLLOC_DEP_OK;
		return dep_id(text, strlen(text), id);
	}
	for (int k = 0; k < COLLOC_DEP_KIND_COUNT; k++)
		if (strcmp(colon + 1, dep_kinds[k]) == 0) {
			*kind = k;
			return dep_id(text, (size_t)(colon - text), id);
		}
	return -1;
}

static const struct {
	const char *unit;
	int64_t ms;
} duration_units[] = {
	{"d", 86400000}, {"h", 3600000}, {"min", 60000},
	{"m", 60000},	 {"s", 1000},	 {"ms", 1},
};
#define N_DURATION_UNITS (sizeof(duration_units) / sizeof(duration_units[0]))

int colloc_duration_parse(const char *text, int64_t *ms)
{
	const char *p = text;
	int64_t total = 0;

	if (!text || !*text)
		return -1;
	while (*p) {
		int64_t v = 0, unit = 0;
		size_t best = 0;

		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (v > COLLOC_DURATION_MAX_MS)
				return -1;
			v = v * 10 + (*p - '0');
		}
		/* The longest unit that matches: "min" before "m", "ms"
		 * before "m". */
		for (size_t k = 0; k < N_DURATION_UNITS; k++) {
			size_t n = strlen(duration_units[k].unit);

			if (n > best && strncmp(p, duration_units[k].unit, n) == 0) {
				best = n;
				unit = duration_units[k].ms;
			}
		}
		if (!best || v > COLLOC_DURATION_MAX_MS / unit)
			return -1;
		p += best;
		total += v * unit;
		if (total > COLLOC_DURATION_MAX_MS)
			return -1;
	}
	if (total <= 0)
		return -1;
	*ms = total;
	return 0;
}

int colloc_duration_format(int64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} out_units[] = {
		{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
	size_t pos = 0;

	if (!buf || len == 0)
		return -1;
	buf[0] = '\0';
	if (ms <= 0) {
		snprintf(buf, len, "0s");
		return len > 2 ? 0 : -1;
	}
	for (size_t k = 0; k < sizeof(out_units) / sizeof(out_units[0]) && ms > 0; k++) {
		int64_t q = ms / out_units[k].ms;
		int n;

		if (q == 0)
			continue;
		ms -= q * out_units[k].ms;
		n = snprintf(buf + pos, len - pos, "%lld%s", (long long)q,
			     out_units[k].unit);
		if (n < 0 || (size_t)n >= len - pos)
			return -1;
		pos += (size_t)n;
	}
	return 0;
}
