/*
 * cmd_update.c — `colloc update JOB --mem SIZE --priority P` (POST
 * /v1/jobs/ID/update, docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"
#include "colloc/units.h"

static const char update_usage[] =
	"usage: colloc update JOB [--mem SIZE] [--priority P] [--json]\n"
	"\n"
	"Change what a queued job asks for; a job that has started is an error\n"
	"(requeue it first). Prints the job's new need and priority.\n"
	"\n"
	"  --mem SIZE       its GPU memory need per GPU, e.g. 6GiB (source\n"
	"                   becomes request); refused when no GPU could hold it\n"
	"  --priority P     -1000..1000, higher starts first\n"
	"  --json           print the job as collocd's JSON object\n" CLI_SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

static int print_updated(const cJSON *job, void *ctx)
{
	char id[24], mem[32], pr[24];

	(void)ctx;
	printf("updated job %s: need %s per GPU, priority %s\n",
	       cli_fmt_u64(job, "id", id, sizeof(id)),
	       cli_fmt_size(job, "mem_need_bytes", mem, sizeof(mem)),
	       cli_fmt_int(job, "priority", pr, sizeof(pr)));
	return CLI_OK;
}

int cmd_update(int argc, char **argv)
{
	static const struct option opts[] = {
		{"mem", required_argument, NULL, 'm'},
		{"priority", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_jobs_call call = {"POST", NULL,	    NULL, "update",
				     false,  print_updated, NULL};
	const char *socket = NULL;
	uint64_t mem = 0, id = 0;
	long long prio = 0;
	bool have_prio = false, ok;
	char path[64], *body;
	cJSON *req;
	char *end;
	int ch, rc;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'm':
			if (colloc_parse_size(optarg, &mem) || mem == 0) {
				cli_error(
					"--mem: '%s' is not a positive size (e.g. 6GiB)",
					optarg);
				return CLI_USAGE;
			}
			break;
		case 'r':
			errno = 0;
			prio = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || prio < -1000 ||
			    prio > 1000) {
				cli_error("--priority wants an integer -1000..1000, not "
					  "'%s'",
					  optarg);
				return CLI_USAGE;
			}
			have_prio = true;
			break;
		case 'j':
			call.json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(update_usage, stdout);
			return CLI_OK;
		default:
			cli_bad_option("update", argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("update: JOB is missing (see `colloc update --help`)");
		return CLI_USAGE;
	}
	if (optind + 1 < argc) {
		cli_error("update: one JOB only, got extra argument '%s'",
			  argv[optind + 1]);
		return CLI_USAGE;
	}
	if ((rc = cli_parse_job_id(argv[optind], &id)))
		return rc;
	if (!mem && !have_prio) {
		cli_error("update: nothing to change: give --mem SIZE or --priority P");
		return CLI_USAGE;
	}
	req = cJSON_CreateObject();
	ok = req != NULL;
	if (ok && mem)
		ok = cJSON_AddItemToObject(req, "mem_bytes", cli_json_u64(mem));
	if (ok && have_prio)
		ok = cJSON_AddItemToObject(req, "priority", cli_json_i64(prio));
	body = ok ? cJSON_PrintUnformatted(req) : NULL;
	cJSON_Delete(req);
	if (!body) {
		cli_error("update: out of memory");
		return CLI_ERROR;
	}
	snprintf(path, sizeof(path), "/v1/jobs/%llu/update", (unsigned long long)id);
	call.path = path;
	call.body = body;
	rc = cli_jobs_call(socket, &call);
	free(body);
	return rc;
}
