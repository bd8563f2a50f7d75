/*
 * cmd_cancel.c — `colloc cancel JOB...` (POST /v1/jobs/ID/cancel,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include "cli/cli.h"
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
	return cli_jobs_post_each(argc, argv, "cancel", cancel_usage, "cancel",
				  "cancelled");
}
