/*
 * job.c — the job record's small helpers: state names, init/fini and the
 * history key. See job.h. Storage is store.c's business, not this file's.
 */
#include "daemon/job.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[CD_JOB_STATE_COUNT_] = {
	[CD_JOB_QUEUED] = "queued",	  [CD_JOB_RUNNING] = "running",
	[CD_JOB_DONE] = "done",		  [CD_JOB_FAILED] = "failed",
	[CD_JOB_CANCELLED] = "cancelled",
};

/* Out-of-range states get a fixed string rather than NULL: callers put the
 * result straight into messages and JSON. */
const char *cd_job_state_name(int state)
{
	if (state < 0 || state >= CD_JOB_STATE_COUNT_)
		return "unknown";
	return state_names[state];
}

int cd_job_state_parse(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < CD_JOB_STATE_COUNT_; i++)
		if (strcmp(name, state_names[i]) == 0)
			return i;
	return -1;
}

bool cd_job_state_final(int state)
{
	return state == CD_JOB_DONE || state == CD_JOB_FAILED ||
	       state == CD_JOB_CANCELLED;
}

void cd_job_init(struct cd_job *job)
{
	memset(job, 0, sizeof(*job));
	job->state = CD_JOB_QUEUED;
	job->exit_code = -1;
	job->graph_gpu_util = -1;
	job->graph_sm_activity = -1;
}

void cd_job_fini(struct cd_job *job)
{
	if (!job)
		return;
	free(job->argv_json);
	free(job->env_json);
	cd_job_init(job);
}

int cd_job_copy(struct cd_job *dst, const struct cd_job *src)
{
	char *argv = src->argv_json ? strdup(src->argv_json) : NULL;
	char *env = src->env_json ? strdup(src->env_json) : NULL;

	if ((src->argv_json && !argv) || (src->env_json && !env)) {
		free(argv);
		free(env);
		return -1;
	}
	if (dst != src) {
		free(dst->argv_json);
		free(dst->env_json);
		*dst = *src;
	} else {
		free(dst->argv_json);
		free(dst->env_json);
	}
	dst->argv_json = argv;
	dst->env_json = env;
	return 0;
}

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

/* Hash s and its terminating NUL, so that ("ab", "c") and ("a", "bc")
 * differ. */
static uint64_t fnv1a_str(uint64_t h, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	do {
		h ^= *p;
		h *= FNV64_PRIME;
	} while (*p++ != '\0');
	return h;
}

void cd_job_history_key(const char *argv_json, const char *cwd, const char *model,
			char key[CD_KEY_MAX])
{
	uint64_t h = FNV64_OFFSET;

	h = fnv1a_str(h, argv_json);
	h = fnv1a_str(h, cwd);
	h = fnv1a_str(h, model);
	snprintf(key, CD_KEY_MAX, "%016" PRIx64, h);
}
