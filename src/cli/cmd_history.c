/*
 * cmd_history.c — `colloc history`: finished jobs with what they measured,
 * as Slurm's sacct shows them (GET /v1/jobs?state=done,failed,cancelled,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"

static const char history_usage[] =
	"usage: colloc history [--all] [--user USER] [--name PATTERN] [--since TIME]\n"
	"                      [--state STATE[,STATE...]] [--json]\n"
	"\n"
	"List your finished jobs, oldest first, with what collocd measured while\n"
	"they ran (as Slurm's sacct does), one line each:\n"
	"  ID        the job id\n"
	"  NAME      --name, else the command's base name\n"
	"  USER      who submitted it\n"
	"  STATE     done, failed or cancelled\n"
	"  EXIT      exit N, signal N, or - (it never started)\n"
	"  START     when its last attempt started\n"
	"  ELAPSED   how long its last attempt ran\n"
	"  NEED      its GPU memory need per GPU (what the scheduler gated on)\n"
	"  PEAK      the largest GPU memory measured on one of its GPUs\n"
	"  UTIL      its GPUs' mean activity while it ran\n"
	"  ATTEMPTS  launches (out-of-memory retries launch again)\n"
	"Jobs are kept for collocd's retention (by default, forever).\n"
	"\n"
	"  --all            everyone's jobs (administrators only)\n"
	"  --user USER      only USER's jobs (another user's: administrators only)\n"
	"  --name PATTERN   only jobs whose name matches the shell pattern\n"
	"  --since TIME     only jobs that ended at or after TIME: 2h (ago),\n"
	"                   2026-12-01, '2026-12-01 14:30', @SECONDS\n"
	"  --state LIST     instead of done,failed,cancelled (CD, F, CA work too)\n"
	"  --json           print collocd's {\"jobs\": [...]} as is\n" CLI_SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

static int print_history(const cJSON *root, void *ctx)
{
	const cJSON *jobs = cli_jarray(root, "jobs"), *job;

	(void)ctx;
	printf("%6s %-16s %-10s %-9s %-9s %-19s %11s %10s %10s %5s %8s\n", "ID", "NAME",
	       "USER", "STATE", "EXIT", "START", "ELAPSED", "NEED", "PEAK", "UTIL",
	       "ATTEMPTS");
	cJSON_ArrayForEach(job, jobs)
	{
		char id[24], name[64], user[64], st[16], out[32], start[32], el[32],
			need[32], peak[32], util[16], att[24];
		double t0 = NAN, t1 = NAN;
		bool started;

		if (!cJSON_IsObject(job))
			continue;
		started = cli_jnum(job, "start_time", &t0);
		if (!cli_jnum(job, "end_time", &t1))
			t1 = NAN;
		printf("%6s %-16s %-10s %-9s %-9s %-19s %11s %10s %10s %5s %8s\n",
		       cli_fmt_u64(job, "id", id, sizeof(id)),
		       cli_clean(cli_jstr(job, "name"), name, sizeof(name), 16),
		       cli_clean(cli_jstr(job, "user"), user, sizeof(user), 10),
		       cli_clean(cli_jstr(job, "state"), st, sizeof(st), 9),
		       cli_fmt_outcome(job, out, sizeof(out)),
		       cli_fmt_time(job, "start_time", start, sizeof(start)),
		       cli_fmt_elapsed(t1 - t0, el, sizeof(el)),
		       cli_fmt_size(job, "mem_need_bytes", need, sizeof(need)),
		       started ? cli_fmt_size(job, "peak_bytes", peak, sizeof(peak))
			       : "-",
		       started ? cli_fmt_frac(job, "util_mean", util, sizeof(util)) : "-",
		       cli_fmt_u64(job, "attempts", att, sizeof(att)));
	}
	return CLI_OK;
}

int cmd_history(int argc, char **argv)
{
	return cli_job_list(argc, argv, "history", history_usage, "done,failed,cancelled",
			    print_history);
}
