/*
 * args.c — option parsing shared by the subcommands.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/units.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("colloc: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Largest dimension accepted on the command line: 2^31, far above any
 * real batch or sequence length, small enough that shapes never overflow. */
#define CLI_MAX_DIM_VALUE ((uint64_t)1 << 31)

int cli_parse_batch(const char *arg, struct cli_dims *d)
{
	uint64_t v;

	if (colloc_parse_u64(arg, CLI_MAX_DIM_VALUE, &v) || v == 0) {
		cli_error("--batch wants a positive integer up to %llu, not '%s'",
			  (unsigned long long)CLI_MAX_DIM_VALUE, arg);
		return CLI_USAGE;
	}
	d->batch = (int64_t)v;
	return 0;
}

int cli_parse_dim(char *arg, struct cli_dims *d)
{
	char *eq = strchr(arg, '=');
	uint64_t v;

	if (!eq || eq == arg || colloc_parse_u64(eq + 1, CLI_MAX_DIM_VALUE, &v)) {
		cli_error("--dim wants NAME=VALUE with a non-negative integer value, "
			  "not '%s'",
			  arg);
		return CLI_USAGE;
	}
	if (d->n_dims == CLI_MAX_DIMS) {
		cli_error("at most %d --dim options", CLI_MAX_DIMS);
		return CLI_USAGE;
	}
	/* The name points into argv, which outlives the command. */
	for (size_t k = 0; k < d->n_dims; k++)
		if (strncmp(d->dims[k].name, arg, (size_t)(eq - arg)) == 0 &&
		    d->dims[k].name[eq - arg] == '\0') {
			cli_error("--dim %.*s given twice", (int)(eq - arg), arg);
			return CLI_USAGE;
		}
	*eq = '\0';
	d->dims[d->n_dims].name = arg;
	d->dims[d->n_dims].value = (int64_t)v;
	d->n_dims++;
	return 0;
}

cJSON *cli_json_u64(uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return cJSON_CreateRaw(buf);
}

cJSON *cli_json_i64(int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return cJSON_CreateRaw(buf);
}
