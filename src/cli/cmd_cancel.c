/*
 * cmd_cancel.c — `colloc cancel JOB...` (POST /v1/jobs/ID/cancel,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jobs_common.h"

static const char cancel_usage[] =
	"usage: colloc cancel JOB...\n"
	"\n"
	"Cancel jobs. A queued job is cancelled at once. A running job's process\n"
	"group gets SIGTERM, then SIGKILL after collocd's kill_grace; it shows as\n"
	"cancelled once it has ended (`colloc wait JOB` waits for that).\n"
	"Prints \"cancelled job ID\" for each; a job that has already ended, or\n"
	"that is not yours, is an error.\n"
	"\n" CLI_SOCKET_HELP "  -h, --help       this help\n"
	"\n"
	"exit status: 0 all were cancelled, 1 collocd refused at least one (its\n"
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n";

int cmd_cancel(int argc, char **argv)
{
	struct cli_job_args a;
	struct cli_client c;
	struct cli_response r;
	int rc = cli_parse_job_args(argc, argv, "cancel", cancel_usage, "", 4096, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_client_open(&c, a.socket))) {
		free(a.ids);
		return rc;
	}
	cli_response_init(&r);
	for (int k = 0; k < a.n_ids; k++) {
		char path[64], what[48];
		int one;

		snprintf(path, sizeof(path), "/v1/jobs/%llu/cancel",
			 (unsigned long long)a.ids[k]);
		snprintf(what, sizeof(what), "job %llu", (unsigned long long)a.ids[k]);
		one = cli_client_call(&c, "POST", path, NULL, &r, NULL);
		if (one == CLI_OK) {
			printf("cancelled job %llu\n", (unsigned long long)a.ids[k]);
			fflush(stdout);
		} else if (one == CLI_UNREACHABLE) {
			rc = one;
			break;
		} else {
			rc = CLI_ERROR;
		}
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	free(a.ids);
	return rc;
}
