/*
 * cmd_queue.c — `colloc queue`: the jobs, one line each (GET /v1/jobs,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"
#include "colloc/jobs.h"

static const char queue_usage[] =
	"usage: colloc queue [--all] [--state STATE[,STATE...]] [--user USER]\n"
	"                    [--name PATTERN] [--since TIME] [--json]\n"
	"\n"
	"List your jobs, oldest first, one line each:\n"
	"  ID        the job id (for show, logs, wait, cancel)\n"
	"  NAME      --name, else the command's base name\n"
	"  USER      who submitted it\n"
	"  STATE     queued, running, done, failed or cancelled\n"
	"  GPUS      how many GPUs it asks for\n"
	"  MEM       its GPU memory need per GPU\n"
	"  ATTEMPTS  launches so far (an out-of-memory retry launches again)\n"
	"  TIME      queued: waiting since submit; running: since start;\n"
	"            ended: how long it ran\n"
	"  REASON    why it failed, was re-queued or cancelled; for a queued job\n"
	"            held, or the jobs it waits for (--after)\n"
	"\n"
	"Finished jobs are listed until collocd's retention deletes them (by\n"
	"default it keeps every job).\n"
	"\n"
	"  --all            everyone's jobs (administrators only)\n"
	"  --state LIST     only jobs in these states, e.g. queued,running; squeue's\n"
	"                   PD, R, CD, F, CA (and pending, completed) work too\n"
	"  --user USER      only USER's jobs (another user's: administrators only)\n"
	"  --name PATTERN   only jobs whose name matches the shell pattern, e.g.\n"
	"                   'train*' (case-sensitive)\n"
	"  --since TIME     only jobs that had not ended before TIME: 2h (ago),\n"
	"                   2026-12-01, '2026-12-01 14:30', @SECONDS\n"
	"  --json           print collocd's {\"jobs\": [...]} as is\n" CLI_SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

/* What REASON says: for a queued job that may not start, why ("held",
 * "after 3:ok, 5:any"), else collocd's reason. */
static const char *queued_why(const cJSON *job, int state, char *buf, size_t len)
{
	const cJSON *after = cli_jarray(job, "after"), *dep;
	const cJSON *held = cJSON_GetObjectItemCaseSensitive(job, "held");
	size_t pos = 0;

	if (state != COLLOC_JOB_QUEUED)
		return cli_jstr(job, "reason");
	if (cJSON_IsTrue(held))
		return "held";
	cJSON_ArrayForEach(dep, after)
	{
		uint64_t id;
		const char *type = cli_jstr(dep, "type");
		int n;

		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dep, "met")) ||
		    !cli_ju64(dep, "job", &id))
			continue;
		n = snprintf(buf + pos, len - pos, "%s%llu:%s", pos ? ", " : "after ",
			     (unsigned long long)id, type ? type : "?");
		if (n < 0 || (size_t)n >= len - pos)
			break;
		pos += (size_t)n;
	}
	return pos ? buf : cli_jstr(job, "reason");
}

/* One line per job of collocd's {"jobs": [...]}. */
static int print_table(const cJSON *root, void *ctx)
{
	const cJSON *jobs = cli_jarray(root, "jobs"), *job;
	const char *why;
	double now = cli_now_s();

	(void)ctx;
	printf("%6s %-16s %-10s %-9s %4s %10s %8s %11s  %s\n", "ID", "NAME", "USER",
	       "STATE", "GPUS", "MEM", "ATTEMPTS", "TIME", "REASON");
	cJSON_ArrayForEach(job, jobs)
	{
		char id[24], name[64], user[64], st[16], gp[24], mem[32], att[24], el[32],
			reason[64], waiting[96];
		const char *state = cli_jstr(job, "state");
		int state_id = colloc_job_state_parse(state);
		double t0 = NAN, t1 = now;

		if (!cJSON_IsObject(job))
			continue;
		if (state_id == COLLOC_JOB_QUEUED) {
			cli_jnum(job, "submit_time", &t0);
		} else if (state_id == COLLOC_JOB_RUNNING) {
			cli_jnum(job, "start_time", &t0);
		} else if (!cli_jnum(job, "start_time", &t0) ||
			   !cli_jnum(job, "end_time", &t1)) {
			t0 = NAN;
		}
		why = queued_why(job, state_id, waiting, sizeof(waiting));
		printf("%6s %-16s %-10s %-9s %4s %10s %8s %11s  %s\n",
		       cli_fmt_u64(job, "id", id, sizeof(id)),
		       cli_clean(cli_jstr(job, "name"), name, sizeof(name), 16),
		       cli_clean(cli_jstr(job, "user"), user, sizeof(user), 10),
		       cli_clean(state, st, sizeof(st), 9),
		       cli_fmt_u64(job, "n_gpus", gp, sizeof(gp)),
		       cli_fmt_size(job, "mem_need_bytes", mem, sizeof(mem)),
		       cli_fmt_u64(job, "attempts", att, sizeof(att)),
		       cli_fmt_elapsed(t1 - t0, el, sizeof(el)),
		       why && *why ? cli_clean(why, reason, sizeof(reason), 48) : "");
	}
	return CLI_OK;
}

int cmd_queue(int argc, char **argv)
{
	return cli_job_list(argc, argv, "queue", queue_usage, NULL, print_table);
}
