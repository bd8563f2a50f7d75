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
