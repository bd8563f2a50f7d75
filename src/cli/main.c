/*
 * main.c — the `colloc` command: dispatch to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifndef COLLOC_VERSION
#define COLLOC_VERSION "0.1.0"
#endif

static const char usage[] =
	"usage: colloc [--help] [--version] COMMAND [ARGS...]\n"
	"\n"
	"colloc predicts how much GPU memory a training job needs and how busy\n"
	"it keeps the GPU, from the model's graph, before anything runs.\n"
	"\n"
	"commands:\n"
	"  inspect MODEL    per-layer shapes, parameters and FLOPs of a model\n"
	"  estimate MODEL   peak GPU memory of training the model\n"
	"  sim              replay a job trace on a simulated cluster, compare policies\n"
	"  gpus             list GPUs (simulated or real) with memory, use and "
	"processes\n"
	"\n"
	"MODEL is an .onnx file or the name of a bundled zoo model\n"
	"(`colloc inspect --list` lists them). Run `colloc COMMAND --help` for a\n"
	"command's options.\n"
	"\n"
	"exit status: 0 success, 1 the command failed, 2 invalid command line.\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("colloc %s\n", COLLOC_VERSION);
		return CLI_OK;
	}
	if (strcmp(argv[1], "inspect") == 0)
		return cmd_inspect(argc - 1, argv + 1);
	if (strcmp(argv[1], "estimate") == 0)
		return cmd_estimate(argc - 1, argv + 1);
	if (strcmp(argv[1], "sim") == 0)
		return cmd_sim(argc - 1, argv + 1);
	if (strcmp(argv[1], "gpus") == 0)
		return cmd_gpus(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see `colloc --help`)", argv[1]);
	return CLI_USAGE;
}
