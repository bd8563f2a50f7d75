/*
 * main.c — the `colloc` command: dispatch to a subcommand.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#ifndef COLLOC_VERSION
#define COLLOC_VERSION "0.1.0"
#endif

static const char usage[] =
	"usage: colloc [--help] [--version] [--socket PATH] COMMAND [ARGS...]\n"
	"\n"
	"colloc predicts how much GPU memory a training job needs and how busy\n"
	"it keeps the GPU, from the model's graph, before anything runs, and\n"
	"queues jobs on shared GPUs through the collocd daemon.\n"
	"\n"
	"commands:\n"
	"  inspect MODEL    per-layer shapes, parameters and FLOPs of a model\n"
	"  estimate MODEL   peak GPU memory of training the model\n"
	"  sim              replay a job trace on a simulated cluster, compare policies\n"
	"  ops [OP...]      the ONNX ops and fused patterns colloc supports\n"
	"  gpus             list GPUs with memory, use and the jobs (from collocd)\n"
	"                   or processes (from the backend) on each\n"
	"  slurm-gres       gres.conf / slurm.conf lines sharing GPUs as Slurm\n"
	"                   shards (docs/slurm.md)\n"
	"\n"
	"job commands (clients of collocd; see docs/cli-jobs.md):\n"
	"  submit [OPTS] [--] CMD [ARGS...]   queue a command to run on GPUs\n"
	"  queue            list your jobs and their states\n"
	"  show JOB         everything about one job, with its events\n"
	"  cancel JOB...    cancel queued or running jobs\n"
	"  logs JOB [-f]    a job's output; -f follows it until the job ends\n"
	"  wait JOB...      wait for jobs to end; exits with the job's status\n"
	"  hold JOB...      keep queued jobs from starting; release JOB... undoes it\n"
	"  release JOB...   let held jobs start\n"
	"  requeue JOB...   put finished or running jobs back in the queue\n"
	"  update JOB       change a queued job's --mem or --priority\n"
	"  history          finished jobs with measured peak memory and utilization\n"
	"  stats            what collocd did: makespan, utilization, sharing, OOMs\n"
	"  top              live screen of the GPUs, their jobs and the queue\n"
	"\n"
	"MODEL is an .onnx file or the name of a bundled zoo model\n"
	"(`colloc inspect --list` lists them). Run `colloc COMMAND --help` for a\n"
	"command's options.\n"
	"\n"
	"--socket PATH (before COMMAND, or among its options) says where collocd\n"
	"listens; default $COLLOC_SOCKET, else $XDG_RUNTIME_DIR/collocd.sock, else\n"
	"/tmp/colloc-UID/collocd.sock (/run/collocd.sock for root).\n"
	"\n"
	"exit status:\n"
	"  0    success\n"
	"  1    the command failed, or collocd refused the request (its message\n"
	"       is printed)\n"
	"  2    invalid command line\n"
	"  3    collocd could not be reached\n"
	"  `colloc wait` exits with its job's status instead (1..255, 128+signal),\n"
	"  124 when its --timeout runs out; see `colloc wait --help`.\n";

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	bool daemon; /* talks to collocd, so takes --socket */
};

static const struct command commands[] = {
	{"inspect", cmd_inspect, false}, {"estimate", cmd_estimate, false},
	{"sim", cmd_sim, false},	 {"ops", cmd_ops, false},
	{"gpus", cmd_gpus, true},	 {"submit", cmd_submit, true},
	{"queue", cmd_queue, true},	 {"show", cmd_show, true},
	{"cancel", cmd_cancel, true},	 {"logs", cmd_logs, true},
	{"wait", cmd_wait, true},	 {"stats", cmd_stats, true},
	{"top", cmd_top, true},		 {"slurm-gres", cmd_slurm_gres, false},
	{"hold", cmd_hold, true},	 {"release", cmd_release, true},
	{"requeue", cmd_requeue, true},	 {"update", cmd_update, true},
	{"history", cmd_history, true},
};

/*
 * Run cmd with "--socket PATH" put first among its options, as if it had
 * been written after the command name (where each command parses it).
 */
static int run_with_socket(const struct command *cmd, char *socket, int argc, char **argv)
{
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	char opt[] = "--socket";
	int rc;

	if (!args) {
		cli_error("out of memory");
		return CLI_ERROR;
	}
	args[0] = argv[0];
	args[1] = opt;
	args[2] = socket;
	for (int k = 1; k < argc; k++)
		args[k + 2] = argv[k];
	rc = cmd->run(argc + 2, args);
	free(args);
	return rc;
}

int main(int argc, char **argv)
{
	char *socket = NULL;
	int i = 1;

	/* The one option before COMMAND besides --help and --version. */
	while (i < argc && strncmp(argv[i], "--socket", 8) == 0) {
		if (argv[i][8] == '=') {
			socket = argv[i] + 9;
			i++;
		} else if (argv[i][8] == '\0' && i + 1 < argc) {
			socket = argv[i + 1];
			i += 2;
		} else {
			cli_error("%s wants a path: --socket PATH (see `colloc --help`)",
				  argv[i]);
			return CLI_USAGE;
		}
	}
	if (i >= argc) {
		fputs(usage, stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
	    strcmp(argv[i], "help") == 0) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (strcmp(argv[i], "--version") == 0) {
		printf("colloc %s\n", COLLOC_VERSION);
		return CLI_OK;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		const struct command *cmd = &commands[k];

		if (strcmp(argv[i], cmd->name) != 0)
			continue;
		if (!socket)
			return cmd->run(argc - i, argv + i);
		if (!cmd->daemon) {
			cli_error("--socket is for commands that talk to collocd, not "
				  "'%s'",
				  cmd->name);
			return CLI_USAGE;
		}
		return run_with_socket(cmd, socket, argc - i, argv + i);
	}
	cli_error("unknown command '%s' (see `colloc --help`)", argv[i]);
	return CLI_USAGE;
}
