/*
 * cli.h — shared by the colloc subcommands (src/cli/). Each subcommand is a
 * function taking the arguments after its name and returning the process
 * exit status; main.c only dispatches.
 */
#ifndef COLLOC_CLI_H
#define COLLOC_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "colloc/shape.h"

/* Exit statuses, documented in `colloc --help`, docs/cli.md and
 * docs/cli-jobs.md. `colloc wait` also exits with its job's status. */
enum {
	CLI_OK = 0,
	CLI_ERROR = 1, /* the command ran and failed (bad model, refused, ...) */
	CLI_USAGE = 2, /* the command line was wrong */
	CLI_UNREACHABLE = 3, /* collocd could not be reached or did not answer */
	CLI_TIMEOUT = 124, /* `colloc wait --timeout` ran out (as timeout(1)) */
};

#define CLI_MAX_DIMS 32

/* Symbolic-dimension options shared by commands that take a MODEL. */
struct cli_dims {
	int64_t batch; /* 0 when not given */
	struct colloc_binding dims[CLI_MAX_DIMS];
	size_t n_dims;
};

/* Print "colloc: error: ..." to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse "--batch N" values and "--dim NAME=VALUE" into d; return 0 or
 * CLI_USAGE after printing why. */
int cli_parse_batch(const char *arg, struct cli_dims *d);
int cli_parse_dim(char *arg, struct cli_dims *d);

/* Exact JSON integers (cJSON numbers are doubles, exact only to 2^53). */
struct cJSON;
struct cJSON *cli_json_u64(uint64_t v);
struct cJSON *cli_json_i64(int64_t v);

int cmd_inspect(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_gpus(int argc, char **argv);

/* Clients of collocd (cmd_jobs.c, docs/cli-jobs.md). */
int cmd_submit(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv); /* cmd_top.c: live ncurses view */

#endif
