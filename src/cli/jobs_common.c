/*
 * jobs_common.c — what the job commands share (see jobs_common.h): the
 * one-request call skeleton, the JOB arguments, and lenient JSON readers.
 */
#define _GNU_SOURCE /* strptime */
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

int cli_parse_since(const char *s, double *epoch_s)
{
	struct tm tm;
	const char *end;
	int64_t ms;
	uint64_t secs;

	if (s[0] == '@') {
		if (colloc_parse_u64(s + 1, (uint64_t)1 << 40, &secs) || secs == 0)
			goto bad;
		*epoch_s = (double)secs;
		return CLI_OK;
	}
	if (colloc_duration_parse(s, &ms) == 0) {
		*epoch_s = cli_now_s() - (double)ms / 1000.0;
		return CLI_OK;
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end && (*end == ' ' || *end == 'T')) {
		const char *t = strptime(end + 1, "%H:%M:%S", &tm);

		end = t ? t : strptime(end + 1, "%H:%M", &tm);
	}
	if (!end || *end)
		goto bad;
	tm.tm_isdst = -1; /* the local rule of that day */
	*epoch_s = (double)mktime(&tm);
	if (*epoch_s <= 0)
		goto bad;
	return CLI_OK;
bad:
	cli_error("--since wants a time such as 2h (ago), 2026-12-01, "
		  "'2026-12-01 14:30' or @1764500000, not '%s'",
		  s);
	return CLI_USAGE;
}

/*
 * The --state list with each state as collocd names it, so that people may
 * write them as squeue does (PD, R, CD, F, CA, pending, ...). A word that
 * names no state is passed on as it is: collocd's refusal names it. Returns
 * 0, or -1 when the list does not fit in buf.
 */
static int canonical_states(const char *states, char *buf, size_t len)
{
	size_t pos = 0;
	const char *p = states;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char word[64];
		const char *out;
		int st, w;

		if (n >= sizeof(word))
			return -1;
		memcpy(word, p, n);
		word[n] = '\0';
		st = colloc_job_state_from_user(word);
		out = st >= 0 ? colloc_job_state_name(st) : word;
		w = snprintf(buf + pos, len - pos, "%s%s", out, comma ? "," : "");
		if (w < 0 || (size_t)w >= len - pos)
			return -1;
		pos += (size_t)w;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/* Append "&KEY=ESCAPED(VALUE)" (or "?..." first) to path at *pos. */
static bool add_param(char *path, size_t len, size_t *pos, const char *key,
		      const char *value)
{
	char esc[512];
	int n;

	if (cli_url_escape(value, esc, sizeof(esc)))
		return false;
	n = snprintf(path + *pos, len - *pos, "%s%s=%s", strchr(path, '?') ? "&" : "?",
		     key, esc);
	if (n < 0 || (size_t)n >= len - *pos)
		return false;
	*pos += (size_t)n;
	return true;
}

int cli_job_filter_path(const struct cli_job_filter *f, const char *cmd, char *path,
			size_t len)
{
	char list[384], num[32];
	size_t pos;

	snprintf(path, len, "/v1/jobs");
	pos = strlen(path);
	if (f->states &&
	    (!*f->states || canonical_states(f->states, list, sizeof(list)))) {
		cli_error("--state wants a list such as queued,running, not '%s'",
			  f->states);
		return CLI_USAGE;
	}
	snprintf(num, sizeof(num), "%.3f", f->since_s);
	if ((f->all && !add_param(path, len, &pos, "all", "1")) ||
	    (f->states && !add_param(path, len, &pos, "state", list)) ||
	    (f->user && !add_param(path, len, &pos, "user", f->user)) ||
	    (f->name && !add_param(path, len, &pos, "name", f->name)) ||
	    (f->have_since && !add_param(path, len, &pos, "since", num))) {
		cli_error("%s: the filters are too long", cmd);
		return CLI_USAGE;
	}
	return CLI_OK;
}

int cli_jobs_post_each(int argc, char **argv, const char *cmd, const char *usage,
		       const char *action, const char *done)
{
	struct cli_job_args a;
	struct cli_client c;
	struct cli_response r;
	int rc = cli_parse_job_args(argc, argv, cmd, usage, "", 4096, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_client_open(&c, a.socket))) {
		free(a.ids);
		return rc;
	}
	cli_response_init(&r);
	for (int k = 0; k < a.n_ids; k++) {
		char path[96];
		int one;

		snprintf(path, sizeof(path), "/v1/jobs/%llu/%s",
			 (unsigned long long)a.ids[k], action);
		one = cli_client_call(&c, "POST", path, NULL, &r, NULL);
		if (one == CLI_OK) {
			printf("%s job %llu\n", done, (unsigned long long)a.ids[k]);
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

int cli_job_list(int argc, char **argv, const char *cmd, const char *usage,
		 const char *default_states,
		 int (*print)(const struct cJSON *answer, void *ctx))
{
	static const struct option opts[] = {
		{"all", no_argument, NULL, 'a'},
		{"state", required_argument, NULL, 's'},
		{"user", required_argument, NULL, 'u'},
		{"name", required_argument, NULL, 'n'},
		{"since", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_job_filter f = {0};
	const char *socket = NULL;
	char path[2048];
	struct cli_jobs_call call = {"GET", NULL, NULL, cmd, false, print, NULL};
	int ch, rc;

	f.states = default_states;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			f.all = true;
			break;
		case 's':
			f.states = optarg;
			break;
		case 'u':
			f.user = optarg;
			break;
		case 'n':
			f.name = optarg;
			break;
		case 't':
			if ((rc = cli_parse_since(optarg, &f.since_s)))
				return rc;
			f.have_since = true;
			break;
		case 'j':
			call.json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			cli_bad_option(cmd, argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("%s: unexpected argument '%s' (see `colloc %s --help`)", cmd,
			  argv[optind], cmd);
		return CLI_USAGE;
	}
	if ((rc = cli_job_filter_path(&f, cmd, path, sizeof(path))))
		return rc;
	call.path = path;
	return cli_jobs_call(socket, &call);
}
