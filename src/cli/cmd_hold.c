/*
 * cmd_hold.c — `colloc hold JOB...` and `colloc release JOB...` (POST
 * /v1/jobs/ID/hold and /release, docs/api.md; user guide
 * docs/cli-jobs.md): a held job stays queued and is not started.
 */
#include "cli/cli.h"
#include "cli/jobs_common.h"

static const char hold_usage[] =
	"usage: colloc hold JOB...\n"
	"\n"
	"Hold queued jobs: they stay in the queue but collocd does not start them\n"
	"until `colloc release JOB`. Only queued jobs can be held (a running job\n"
	"is not stopped: see `colloc requeue`). Prints \"held job ID\" for each.\n"
	"`colloc submit --hold` queues a job held from the start.\n"
	"\n" CLI_SOCKET_HELP "  -h, --help       this help\n"
	"\n"
	"exit status: 0 all were held, 1 collocd refused at least one (its\n"
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n";

static const char release_usage[] =
	"usage: colloc release JOB...\n"
	"\n"
	"Release held jobs: they may start again as soon as they fit, in their\n"
	"original place in the queue (priority, then submit time). A job that is\n"
	"not held is an error. Prints \"released job ID\" for each.\n"
	"\n" CLI_SOCKET_HELP "  -h, --help       this help\n"
	"\n"
	"exit status: 0 all were released, 1 collocd refused at least one (its\n"
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n";

int cmd_hold(int argc, char **argv)
{
	return cli_jobs_post_each(argc, argv, "hold", hold_usage, "hold", "held");
}

int cmd_release(int argc, char **argv)
{
	return cli_jobs_post_each(argc, argv, "release", release_usage, "release",
				  "released");
}
