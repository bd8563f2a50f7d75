/*
 * args.c — option parsing and the small helpers shared by the subcommands
 * (cli.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "colloc/estimate.h"
#include "colloc/units.h"

bool cli_appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *pos)
		return false;
	*pos += (size_t)n;
	return true;
}

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

int cli_parse_seq(const char *arg, struct cli_dims *d)
{
	uint64_t v;

	if (colloc_parse_u64(arg, CLI_MAX_DIM_VALUE, &v) || v == 0) {
		cli_error("--seq wants a positive integer up to %llu, not '%s'",
			  (unsigned long long)CLI_MAX_DIM_VALUE, arg);
		return CLI_USAGE;
	}
	d->seq = (int64_t)v;
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

int cli_parse_optimizer(const char *arg, struct colloc_estimate_opts *o)
{
	if ((o->optimizer = colloc_optimizer_parse(arg)) < 0) {
		cli_error("--optimizer: '%s' is not one of sgd, momentum, adam, adamw, "
			  "rmsprop, adagrad, adamw-loop, adafactor, adam8bit, "
			  "adamw8bit",
			  arg);
		return CLI_USAGE;
	}
	return 0;
}

int cli_parse_precision(const char *arg, struct colloc_estimate_opts *o)
{
	if ((o->precision = colloc_precision_parse(arg)) < 0) {
		cli_error(
			"--precision: '%s' is not one of fp32, tf32, amp-fp16, amp-bf16",
			arg);
		return CLI_USAGE;
	}
	return 0;
}

int cli_parse_safety(const char *arg, struct colloc_estimate_opts *o)
{
	if ((o->safety = colloc_safety_parse(arg)) < 0) {
		cli_error("--safety: '%s' is not one of point, bound", arg);
		return CLI_USAGE;
	}
	return 0;
}

int cli_parse_loss(const char *arg, struct colloc_estimate_opts *o)
{
	if ((o->loss = colloc_loss_parse(arg)) < 0) {
		cli_error("--loss: '%s' is not one of cross-entropy, causal-lm, "
			  "causal-lm-loop, causal-lm-copy, mse, none",
			  arg);
		return CLI_USAGE;
	}
	return 0;
}

uint64_t cli_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *cli_fmt_elapsed(double s, char *buf, size_t len)
{
	unsigned long long t;

	if (!(s >= 0) || s > 1e12) /* also catches NaN */
		return "-";
	t = (unsigned long long)s;
	if (t >= 86400)
		snprintf(buf, len, "%llu-%02llu:%02llu:%02llu", t / 86400, t / 3600 % 24,
			 t / 60 % 60, t % 60);
	else if (t >= 3600)
		snprintf(buf, len, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%llu:%02llu", t / 60, t % 60);
	return buf;
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

int cli_parse_nonneg(const char *arg, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0 && v <= max))
		return CLI_USAGE;
	*out = v;
	return 0;
}
