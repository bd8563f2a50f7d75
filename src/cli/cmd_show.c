/*
 * cmd_show.c — `colloc show JOB`: everything collocd knows about one job
 * (GET /v1/jobs/ID, docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"
#include "colloc/jobs.h"

static const char show_usage[] =
	"usage: colloc show JOB [--json]\n"
	"\n"
	"Everything collocd knows about job JOB: state and how it ended, what it\n"
	"asked for and where the memory figure came from (request, estimate,\n"
	"history, default, oom-retry, overuse) and the utilization figure (request,\n"
	"history, graph (PLATFORM), default), the graph's utilization prediction,\n"
	"the GPUs it ran on, measured peak memory and utilization, its command,\n"
	"directory, environment variable names and its events (start, OOM\n"
	"retries, end, ...).\n"
	"\n"
	"  --json           print collocd's job object as is\n" CLI_SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

/* Print a string as a shell word: bare when safe, else single-quoted. */
static void put_word(const char *s)
{
	bool plain = *s != '\0';

	for (const char *p = s; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789-_./=:,+@%",
			       *p) != NULL;
	if (plain) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch == '\'')
			fputs("'\\''", stdout);
		else
			putchar(ch < 0x20 || ch == 0x7f ? '?' : ch);
	}
	putchar('\'');
}

/* Strings of an array, separated by spaces, as shell words or as names. */
static void put_list(const cJSON *arr, bool words)
{
	const cJSON *v;
	bool first = true;
	char buf[256];

	if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr)) {
		fputs("-", stdout);
		return;
	}
	cJSON_ArrayForEach(v, arr)
	{
		if (!first)
			putchar(' ');
		first = false;
		if (!cJSON_IsString(v))
			fputs("?", stdout);
		else if (words)
			put_word(v->valuestring);
		else
			fputs(cli_clean(v->valuestring, buf, sizeof(buf), 200), stdout);
	}
}

/* The job features of `submit --time/--after/--hold/--array`. */
static void show_features(const cJSON *job)
{
	const cJSON *after = cli_jarray(job, "after"), *dep;
	double limit;
	long long idx, max;
	char b1[48];
	uint64_t array_id;
	bool first = true;

	if (cli_jnum(job, "time_limit_s", &limit) && limit > 0 &&
	    colloc_duration_format((int64_t)(limit * 1000.0 + 0.5), b1, sizeof(b1)) == 0)
		printf("time limit:  %s\n", b1);
	else
		printf("time limit:  -\n");
	printf("held:        %s\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "held")) ? "yes"
									   : "no");
	fputs("after:       ", stdout);
	cJSON_ArrayForEach(dep, after)
	{
		uint64_t id;
		const char *type = cli_jstr(dep, "type");

		if (!cli_ju64(dep, "job", &id))
			continue;
		printf("%s%llu:%s%s", first ? "" : ", ", (unsigned long long)id,
		       type ? type : "?",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dep, "met"))
			       ? " (met)"
			       : "");
		first = false;
	}
	puts(first ? "-" : "");
	if (cli_ju64(job, "array_id", &array_id) && cli_jint(job, "array_index", &idx)) {
		printf("array:       index %lld of array %llu", idx,
		       (unsigned long long)array_id);
		if (cli_jint(job, "array_max_running", &max))
			printf(", at most %lld running", max);
		putchar('\n');
	}
}

static int show_human(const cJSON *job, void *ctx)
{
	char b1[64], b2[64], text[600];
	const cJSON *ev, *events = cli_jarray(job, "events");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(job, "env");
	const char *state = cli_jstr(job, "state");
	double t0, t1;

	(void)ctx;
	printf("id:          %s\n", cli_fmt_u64(job, "id", b1, sizeof(b1)));
	printf("name:        %s\n",
	       cli_clean(cli_jstr(job, "name"), text, sizeof(text), 200));
	printf("user:        %s (uid %s)\n",
	       cli_clean(cli_jstr(job, "user"), b2, sizeof(b2), 60),
	       cli_fmt_u64(job, "uid", b1, sizeof(b1)));
	printf("state:       %s\n", cli_clean(state, b1, sizeof(b1), 20));
	if (cli_state_final(state))
		printf("ended with:  %s\n", cli_fmt_outcome(job, b1, sizeof(b1)));
	printf("reason:      %s\n",
	       cli_clean(cli_jstr(job, "reason"), text, sizeof(text), 500));
	printf("gpus:        %s", cli_fmt_u64(job, "n_gpus", b1, sizeof(b1)));
	if (cli_jarray(job, "gpus") && cJSON_GetArraySize(cli_jarray(job, "gpus")) > 0) {
		fputs(" on ", stdout);
		put_list(cli_jarray(job, "gpus"), false);
	}
	putchar('\n');
	printf("attempts:    %s\n", cli_fmt_u64(job, "attempts", b1, sizeof(b1)));
	printf("memory need: %s per GPU (%s)\n",
	       cli_fmt_size(job, "mem_need_bytes", b1, sizeof(b1)),
	       cli_clean(cli_jstr(job, "mem_source"), b2, sizeof(b2), 20));
	printf("model:       %s\n",
	       cli_clean(cli_jstr(job, "model"), text, sizeof(text), 511));
	printf("util pred:   %s (%s)\n", cli_fmt_frac(job, "util_pred", b1, sizeof(b1)),
	       cli_clean(cli_jstr(job, "util_source"), text, sizeof(text), 100));
	{
		const cJSON *ug = cJSON_GetObjectItemCaseSensitive(job, "util_graph");

		if (cJSON_IsObject(ug))
			printf("util graph:  %s gpu util, %s sm activity (%s)\n",
			       cli_fmt_frac(ug, "gpu_util", b1, sizeof(b1)),
			       cli_fmt_frac(ug, "sm_activity", b2, sizeof(b2)),
			       cli_clean(cli_jstr(ug, "platform"), text, sizeof(text),
					 100));
	}
	printf("priority:    %s\n", cli_fmt_int(job, "priority", b1, sizeof(b1)));
	show_features(job);
	printf("exclusive:   %s\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "exclusive")) ? "yes"
										: "no");
	printf("peak memory: %s\n", cli_fmt_size(job, "peak_bytes", b1, sizeof(b1)));
	printf("util mean:   %s\n", cli_fmt_frac(job, "util_mean", b1, sizeof(b1)));
	printf("submitted:   %s\n", cli_fmt_time(job, "submit_time", b1, sizeof(b1)));
	printf("started:     %s\n", cli_fmt_time(job, "start_time", b1, sizeof(b1)));
	printf("ended:       %s\n", cli_fmt_time(job, "end_time", b1, sizeof(b1)));
	if (cli_jnum(job, "start_time", &t0)) {
		if (!cli_jnum(job, "end_time", &t1))
			t1 = cli_now_s();
		printf("runtime:     %s\n", cli_fmt_elapsed(t1 - t0, b2, sizeof(b2)));
	}
	printf("cwd:         %s\n",
	       cli_clean(cli_jstr(job, "cwd"), text, sizeof(text), 500));
	printf("command:     ");
	put_list(cJSON_GetObjectItemCaseSensitive(job, "argv"), true);
	putchar('\n');
	/* The API names the variables without their values (docs/api.md). */
	printf("environment: ");
	put_list(cJSON_IsArray(env) ? env
				    : cJSON_GetObjectItemCaseSensitive(job, "env_names"),
		 false);
	putchar('\n');
	printf("events:\n");
	cJSON_ArrayForEach(ev, events)
	{
		double t;
		char ms[8] = "";

		if (cli_jnum(ev, "time", &t) && t >= 0)
			snprintf(ms, sizeof(ms), ".%03d",
				 (int)((t - floor(t)) * 1000.0) % 1000);
		const char *when = cli_fmt_time(ev, "time", b1, sizeof(b1));

		printf("  %s%s  %-10s %s\n", when, when == b1 ? ms : "",
		       cli_clean(cli_jstr(ev, "kind"), b2, sizeof(b2), 20),
		       cli_clean(cli_jstr(ev, "message"), text, sizeof(text), 500));
	}
	return CLI_OK;
}

int cmd_show(int argc, char **argv)
{
	struct cli_job_args a;
	struct cli_jobs_call call = {"GET", NULL, NULL, "show", false, show_human, NULL};
	char path[64];
	int rc = cli_parse_job_args(argc, argv, "show", show_usage, "j", 1, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	snprintf(path, sizeof(path), "/v1/jobs/%llu", (unsigned long long)a.ids[0]);
	free(a.ids);
	call.path = path;
	call.json = a.json;
	return cli_jobs_call(a.socket, &call);
}
