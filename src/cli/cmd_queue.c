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
	"usage: colloc queue [--all] [--state STATE[,STATE...]] [--json]\n"
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
	"  REASON    why it failed, was re-queued or cancelled\n"
	"\n"
	"  --all            everyone's jobs (administrators only)\n"
	"  --state LIST     only jobs in these states, e.g. queued,running; squeue's\n"
	"                   PD, R, CD, F, CA (and pending, completed) work too\n"
	"  --json           print collocd's {\"jobs\": [...]} as is\n" CLI_SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

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
			reason[64];
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
		why = cli_jstr(job, "reason");
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

/*
 * The --state list with each state as collocd names it, so that people may
 * write them as squeue does (PD, R, CD, F, CA, pending, ...). A word that
 * names no state is passed on as it is: collocd's refusal names it. Returns
 * 0, or -1 when the list does not fit in buf.
 */
static int canonical_states(const char *states, char *buf, size_t len)
{
	size_t pos = 0;
	const char *p = states;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char word[64];
		const char *out;
		int st, w;

		if (n >= sizeof(word))
			return -1;
		memcpy(word, p, n);
		word[n] = '\0';
		st = colloc_job_state_from_user(word);
		out = st >= 0 ? colloc_job_state_name(st) : word;
		w = snprintf(buf + pos, len - pos, "%s%s", out, comma ? "," : "");
		if (w < 0 || (size_t)w >= len - pos)
			return -1;
		pos += (size_t)w;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

int cmd_queue(int argc, char **argv)
{
	static const struct option opts[] = {
		{"all", no_argument, NULL, 'a'},
		{"state", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket = NULL, *states = NULL;
	bool all = false, json = false;
	char path[512], list[384], esc[384];
	struct cli_jobs_call call = {"GET", NULL,	 NULL, "queue",
				     false, print_table, NULL};
	int ch;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			all = true;
			break;
		case 's':
			states = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(queue_usage, stdout);
			return CLI_OK;
		default:
			cli_bad_option("queue", argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("queue: unexpected argument '%s' (see `colloc queue --help`)",
			  argv[optind]);
		return CLI_USAGE;
	}
	if (states && (!*states || canonical_states(states, list, sizeof(list)) ||
		       cli_url_escape(list, esc, sizeof(esc)))) {
		cli_error("--state wants a list such as queued,running, not '%s'",
			  states);
		return CLI_USAGE;
	}
	snprintf(path, sizeof(path), "/v1/jobs%s%s%s%s", all || states ? "?" : "",
		 all ? "all=1" : "", all && states ? "&" : "", states ? "state=" : "");
	if (states && (strlen(path) + strlen(esc) >= sizeof(path)))
		return CLI_USAGE; /* cannot happen: esc is smaller than path's room */
	if (states)
		memcpy(path + strlen(path), esc, strlen(esc) + 1);
	call.path = path;
	call.json = json;
	return cli_jobs_call(socket, &call);
}
