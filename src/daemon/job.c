/*
 * job.c — the job record's small helpers: state names (forwarded to the
 * shared table in colloc/jobs.h), init/fini and the history key. See
 * job.h. Storage is store.c's business, not this file's.
 */
#include "daemon/job.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names live in one table shared with the CLI (colloc/jobs.h). */
const char *cd_job_state_name(int state)
{
	return colloc_job_state_name(state);
}

int cd_job_state_parse(const char *name)
{
	return colloc_job_state_parse(name);
}

bool cd_job_state_final(int state)
{
	return colloc_job_state_final(state);
}

void cd_job_init(struct cd_job *job)
{
	memset(job, 0, sizeof(*job));
	job->state = CD_JOB_QUEUED;
	job->exit_code = -1;
	job->graph_gpu_util = -1;
	job->graph_sm_activity = -1;
	job->array_index = -1;
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
