/*
 * cmd_stats.c — `colloc stats`: collocd's counters (GET /v1/stats,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/jobs_common.h"

static const char stats_usage[] =
	"usage: colloc stats [--scope start|store] [--json]\n"
	"\n"
	"What collocd has done: jobs by state, makespan (first submit to last\n"
	"end), mean wait and completion time, time-weighted GPU and memory\n"
	"utilization while jobs ran, jobs that shared a GPU, jobs re-queued after\n"
	"an out-of-memory death (and how many then finished), and jobs lost (their\n"
	"end could not be recorded; should be 0), all of every user's jobs.\n"
	"\n"
	"  --scope start      (default) since this collocd started: the jobs\n"
	"                     submitted since, and those it took over from before\n"
	"                     a restart that had not ended yet (counted with\n"
	"                     their whole life); jobs that ended before it\n"
	"                     started are left out\n"
	"  --scope store      every job in collocd's database, also those that\n"
	"                     ended before a restart (finished jobs stay there for\n"
	"                     collocd's retention; by default, forever). The\n"
	"                     utilization is not kept across restarts: it prints\n"
	"                     as \"-\"\n"
	"  --json             the API's object (GET /v1/stats?scope=..., "
	"docs/api.md)\n" CLI_SOCKET_HELP "  -h, --help         this help\n"
	"\n"
	"The table's last line names the scope.\n"
	"\n" CLI_EXIT_HELP;

/* The rows of the text table: key in GET /v1/stats, label, unit. */
static const struct {
	const char *key, *label, *unit;
} rows[] = {
	{"policy", "policy", ""},
	{"gpus", "GPUs", ""},
	{"jobs", "jobs", ""},
	{"done", "done", ""},
	{"failed", "failed", ""},
	{"cancelled", "cancelled", ""},
	{"queued", "queued", ""},
	{"running", "running", ""},
	{"makespan_s", "makespan", "s"},
	{"mean_wait_s", "mean wait", "s"},
	{"mean_jct_s", "mean completion time", "s"},
	{"gpu_util", "mean GPU utilization", "%"},
	{"mem_util", "mean GPU memory use", "%"},
	{"shared_jobs", "jobs that shared a GPU", ""},
	{"oom_requeued", "OOM deaths re-queued", ""},
	{"oom_recovered", "OOM recoveries (then done)", ""},
	{"jobs_lost", "jobs lost", ""},
};

/* The counters as a table; a missing one prints as "-". */
static int print_table(const cJSON *o, void *ctx)
{
	(void)ctx;
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, rows[k].key);

		printf("%-28s ", rows[k].label);
		if (cJSON_IsString(v))
			printf("%s\n", v->valuestring);
		else if (!cJSON_IsNumber(v))
			printf("-\n");
		else if (strcmp(rows[k].unit, "%") == 0)
			printf("%.1f %%\n", v->valuedouble * 100.0);
		else if (strcmp(rows[k].unit, "s") == 0)
			printf("%.1f s\n", v->valuedouble);
		else
			printf("%.0f\n", v->valuedouble);
	}
	{
		const cJSON *scope = cJSON_GetObjectItemCaseSensitive(o, "scope");
		char since[32];

		cli_fmt_time(o, "started_at", since, sizeof(since));
		if (cJSON_IsString(scope) && strcmp(scope->valuestring, "store") == 0)
			printf("%-28s every job in the database (collocd started %s)\n",
			       "scope", since);
		else
			printf("%-28s since collocd started (%s)\n", "scope", since);
	}
	return CLI_OK;
}

int cmd_stats(int argc, char **argv)
{
	struct cli_jobs_call call = {"GET", "/v1/stats", NULL, "stats",
				     false, print_table, NULL};
	const char *socket = NULL;
	const char *scope = NULL;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--json") == 0) {
			call.json = true;
		} else if (strcmp(argv[k], "--scope") == 0 ||
			   strncmp(argv[k], "--scope=", 8) == 0) {
			if (argv[k][7] == '=')
				scope = argv[k] + 8;
			else if (k + 1 < argc)
				scope = argv[++k];
			else
				scope = "";
			if (strcmp(scope, "start") != 0 && strcmp(scope, "store") != 0) {
				cli_error("stats: --scope: expected start or store, not "
					  "'%s'",
					  scope);
				return CLI_USAGE;
			}
		} else if (strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0) {
			fputs(stats_usage, stdout);
			return CLI_OK;
		} else if (strcmp(argv[k], "--socket") == 0 && k + 1 < argc) {
			socket = argv[++k];
		} else if (strncmp(argv[k], "--socket=", 9) == 0) {
			socket = argv[k] + 9;
		} else {
			cli_bad_option("stats", argv[k]);
			return CLI_USAGE;
		}
	}
	if (scope && strcmp(scope, "store") == 0)
		call.path = "/v1/stats?scope=store";
	return cli_jobs_call(socket, &call);
}
