/*
 * cmd_requeue.c — `colloc requeue JOB...` (POST /v1/jobs/ID/requeue,
 * docs/api.md; user guide docs/cli-jobs.md).
 */
#include "cli/cli.h"
#include "cli/jobs_common.h"

static const char requeue_usage[] =
	"usage: colloc requeue JOB...\n"
	"\n"
	"Put jobs back in the queue. A finished job (done, failed or cancelled)\n"
	"is queued again at once, with its command, needs, priority and submit\n"
	"time; its exit status is cleared and its attempts count on. A running\n"
	"job is stopped as by `colloc cancel` (SIGTERM, SIGKILL after collocd's\n"
	"kill_grace) and queued again when it has ended. Prints \"requeued job\n"
	"ID\" for each; a queued job is an error.\n"
	"\n" CLI_SOCKET_HELP "  -h, --help       this help\n"
	"\n"
	"exit status: 0 all were requeued, 1 collocd refused at least one (its\n"
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n";

int cmd_requeue(int argc, char **argv)
{
	return cli_jobs_post_each(argc, argv, "requeue", requeue_usage, "requeue",
				  "requeued");
}
