/*
 * jobs_common.c — what the job commands share (see jobs_common.h): the
 * one-request call skeleton, the JOB arguments, and lenient JSON readers.
 */
#include "cli/jobs_common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json_get.h"
#include "colloc/jobs.h"
#include "colloc/units.h"

/* --- the call skeleton --------------------------------------------------- */

int cli_jobs_call_on(struct cli_client *c, const struct cli_jobs_call *call)
{
	struct cli_response r;
	cJSON *answer = NULL;
	int rc;

	cli_response_init(&r);
	rc = cli_client_call(c, call->method, call->path, call->body, &r, NULL);
	/* An answer that is not JSON is an error even under --json: the
	 * caller's script would choke on it further down. */
	if (rc == CLI_OK && !(answer = cli_response_json(&r, call->what)))
		rc = CLI_ERROR;
	if (rc == CLI_OK)
		rc = call->json ? cli_response_print(&r) : call->print(answer, call->ctx);
	cJSON_Delete(answer);
	cli_response_fini(&r);
	return rc;
}

int cli_jobs_call(const char *socket, const struct cli_jobs_call *call)
{
	struct cli_client c;
	int rc;

	if ((rc = cli_client_open(&c, socket)))
		return rc;
	rc = cli_jobs_call_on(&c, call);
	cli_client_fini(&c);
	return rc;
}

/* --- small helpers ------------------------------------------------------- */

int cli_parse_job_id(const char *s, uint64_t *id)
{
	if (colloc_parse_u64(s, CLI_MAX_JOB_ID, id) || *id == 0) {
		cli_error("'%s' is not a job id (a positive integer, as `colloc queue` "
			  "shows)",
			  s);
		return CLI_USAGE;
	}
	return CLI_OK;
}

void cli_bad_option(const char *cmd, const char *opt)
{
	cli_error("%s: unknown or incomplete option '%s' (see `colloc %s --help`)", cmd,
		  opt, cmd);
}

double cli_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool cli_state_final(const char *s)
{
	return colloc_job_state_final(colloc_job_state_parse(s));
}

/* --- lenient JSON reading ---------------------------------------------- */

const char *cli_fmt_u64(const cJSON *o, const char *key, char *buf, size_t len)
{
	uint64_t v;

	if (!cli_ju64(o, key, &v))
		return "-";
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

const char *cli_fmt_int(const cJSON *o, const char *key, char *buf, size_t len)
{
	long long v;

	if (!cli_jint(o, key, &v))
		return "-";
	snprintf(buf, len, "%lld", v);
	return buf;
}

const char *cli_fmt_size(const cJSON *o, const char *key, char *buf, size_t len)
{
	uint64_t v;

	return cli_ju64(o, key, &v) ? colloc_format_bytes(v, buf, len) : "-";
}

/* A 0..1 fraction as a percentage. */
const char *cli_fmt_frac(const cJSON *o, const char *key, char *buf, size_t len)
{
	double v;

	if (!cli_jnum(o, key, &v))
		return "-";
	snprintf(buf, len, "%.0f%%", v * 100.0);
	return buf;
}

const char *cli_fmt_time(const cJSON *o, const char *key, char *buf, size_t len)
{
	double v;
	time_t t;
	struct tm tm;

	if (!cli_jnum(o, key, &v) || v < 0 || v > 1e12)
		return "-";
	t = (time_t)v;
	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		return "-";
	return buf;
}

/* See jobs_common.h. */
const char *cli_clean(const char *s, char *buf, size_t len, size_t max)
{
	size_t n, k;

	if (!s || !*s)
		s = "-";
	if (max >= len)
		max = len - 1;
	n = strlen(s);
	if (n > max) {
		n = max > 3 ? max - 3 : 0;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (k = 0; k < n; k++) {
		unsigned char ch = (unsigned char)s[k];

		buf[k] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (n < strlen(s) && max > 3) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

/* What `wait` and `show` say about how a job ended: "exit 3", "signal 9". */
const char *cli_fmt_outcome(const cJSON *job, char *buf, size_t len)
{
	long long code, sig;

	if (cli_jint(job, "signal", &sig))
		snprintf(buf, len, "signal %lld", sig);
	else if (cli_jint(job, "exit_code", &code))
		snprintf(buf, len, "exit %lld", code);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* --- JOB arguments ------------------------------------------------------- */

/*
 * Parse the common options of cmd (those of opts that are set in allowed:
 * 'j' json, 'f' follow, 't' timeout) and the job ids; at least one, at most
 * max. Returns CLI_OK, -1 after printing help, or CLI_USAGE.
 */
int cli_parse_job_args(int argc, char **argv, const char *cmd, const char *usage,
		       const char *allowed, int max, struct cli_job_args *a)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"follow", no_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 't'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct option mine[sizeof(opts) / sizeof(opts[0])];
	size_t n = 0;
	int c;

	/* Only this command's options, so that getopt_long reports the others
	 * as unknown with the right argv position. */
	for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
		if (!opts[k].name || strchr(allowed, opts[k].val) || opts[k].val == 'S' ||
		    opts[k].val == 'h')
			mine[n++] = opts[k];
	memset(a, 0, sizeof(*a));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, strchr(allowed, 'f') ? "hf" : "h", mine,
				NULL)) != -1) {
		switch (c) {
		case 'j':
			a->json = true;
			break;
		case 'f':
			a->follow = true;
			break;
		case 't':
			if (colloc_parse_duration_ms(optarg, &a->timeout_ms)) {
				cli_error(
					"--timeout wants a duration such as 90s, 500ms, "
					"10m, 2h, not '%s'",
					optarg);
				return CLI_USAGE;
			}
			a->have_timeout = true;
			a->timeout_text = optarg;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			cli_bad_option(cmd, argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("%s: JOB is missing (see `colloc %s --help`)", cmd, cmd);
		return CLI_USAGE;
	}
	if (argc - optind > max) {
		cli_error("%s: one JOB only, got extra argument '%s'", cmd,
			  argv[optind + 1]);
		return CLI_USAGE;
	}
	a->n_ids = argc - optind;
	a->ids = calloc((size_t)a->n_ids, sizeof(*a->ids));
	if (!a->ids) {
		cli_error("%s: out of memory", cmd);
		return CLI_ERROR;
	}
	for (int k = 0; k < a->n_ids; k++)
		if (cli_parse_job_id(argv[optind + k], &a->ids[k])) {
			free(a->ids);
			a->ids = NULL;
			return CLI_USAGE;
		}
	return CLI_OK;
}
