/*
 * cmd_wait.c — `colloc wait JOB...`: poll collocd until the jobs have
 * ended and exit with their status (docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"
#include "colloc/jobs.h"

static const char wait_usage[] =
	"usage: colloc wait JOB... [--timeout DURATION] [--json]\n"
	"\n"
	"Wait until the jobs have ended (done, failed or cancelled) and print one\n"
	"line for each as it ends: \"job 7 failed (exit 3): REASON\".\n"
	"\n"
	"  --timeout DURATION  give up after DURATION (90s, 500ms, 10m, 2h)\n"
	"  --json              print {\"jobs\": [JOB, ...]}, collocd's job objects\n"
	"                      as they were last seen, in the order "
	"given\n" CLI_SOCKET_HELP "  -h, --help          this help\n"
	"\n"
	"exit status:\n"
	"  0        every job is done (exited 0)\n"
	"  1..255   one JOB that failed: its exit status when it exited non-zero,\n"
	"           128+N when signal N killed it, 1 when cancelled, when it could\n"
	"           not start, or when its supervisor was lost\n"
	"  1        several JOBs and at least one did not end done\n"
	"  1        collocd refused (no such job: its message is printed)\n"
	"  2        invalid command line\n"
	"  3        collocd unreachable\n"
	"  124      --timeout ran out first\n";

#define WAIT_FIRST_MS 50
#define WAIT_MAX_MS 500

/* The exit status `wait` gives for one ended job (see wait_usage). */
static int job_exit_status(const cJSON *job)
{
	int state = colloc_job_state_parse(cli_jstr(job, "state"));
	long long code, sig;

	if (state == COLLOC_JOB_DONE)
		return CLI_OK;
	if (state != COLLOC_JOB_FAILED)
		return CLI_ERROR;
	if (cli_jint(job, "exit_code", &code) && code >= 1 && code <= 255)
		return (int)code;
	if (cli_jint(job, "signal", &sig) && sig >= 1 && sig <= 127)
		return 128 + (int)sig;
	return CLI_ERROR;
}

static void print_ended(uint64_t id, const cJSON *job)
{
	char st[24], out[48];
	const char *why = cli_jstr(job, "reason");

	cli_fmt_outcome(job, out, sizeof(out));
	printf("job %llu %s", (unsigned long long)id,
	       cli_clean(cli_jstr(job, "state"), st, sizeof(st), 20));
	if (strcmp(out, "-") != 0 && strcmp(out, "exit 0") != 0)
		printf(" (%s)", out);
	if (why && *why) {
		char reason[600];

		printf(": %s", cli_clean(why, reason, sizeof(reason), 500));
	}
	putchar('\n');
	fflush(stdout);
}

/* Print {"jobs":[...]} from the bodies as they came. */
static int print_jobs_json(char **bodies, int n)
{
	fputs("{\"jobs\":[", stdout);
	for (int k = 0; k < n; k++) {
		size_t len = bodies[k] ? strlen(bodies[k]) : 0;

		while (len && (bodies[k][len - 1] == '\n' || bodies[k][len - 1] == '\r' ||
			       bodies[k][len - 1] == ' '))
			len--;
		if (k)
			putchar(',');
		if (!len)
			fputs("null", stdout);
		else
			fwrite(bodies[k], 1, len, stdout);
	}
	fputs("]}\n", stdout);
	return fflush(stdout) == 0 ? CLI_OK : CLI_ERROR;
}

int cmd_wait(int argc, char **argv)
{
	struct cli_job_args a;
	struct cli_client c;
	struct cli_response r;
	char **bodies;
	bool *ended;
	uint64_t start = cli_mono_ms(), interval = WAIT_FIRST_MS;
	int left, status = CLI_OK,
		  rc = cli_parse_job_args(argc, argv, "wait", wait_usage, "jt", 4096, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	bodies = calloc((size_t)a.n_ids, sizeof(*bodies));
	ended = calloc((size_t)a.n_ids, sizeof(*ended));
	if (!bodies || !ended) {
		cli_error("wait: out of memory");
		rc = CLI_ERROR;
		goto out_free;
	}
	if ((rc = cli_client_open(&c, a.socket)))
		goto out_free;
	cli_response_init(&r);
	left = a.n_ids;
	for (;;) {
		uint64_t elapsed;

		for (int k = 0; k < a.n_ids && rc == CLI_OK; k++) {
			char path[64], what[48];
			cJSON *job;

			if (ended[k])
				continue;
			snprintf(path, sizeof(path), "/v1/jobs/%llu",
				 (unsigned long long)a.ids[k]);
			snprintf(what, sizeof(what), "job %llu",
				 (unsigned long long)a.ids[k]);
			if ((rc = cli_client_call(&c, "GET", path, NULL, &r, what)))
				break;
			if (!(job = cli_response_json(&r, what))) {
				rc = CLI_ERROR;
				break;
			}
			free(bodies[k]);
			bodies[k] = r.body; /* NUL-terminated; now ours */
			r.body = NULL;
			r.body_len = r.body_cap = 0;
			if (cli_state_final(cli_jstr(job, "state"))) {
				int st = job_exit_status(job);

				ended[k] = true;
				left--;
				if (!a.json)
					print_ended(a.ids[k], job);
				if (st != CLI_OK)
					status = a.n_ids == 1 ? st : CLI_ERROR;
			}
			cJSON_Delete(job);
		}
		if (rc != CLI_OK || left == 0)
			break;
		elapsed = cli_mono_ms() - start;
		if (a.have_timeout && elapsed >= a.timeout_ms) {
			for (int k = 0; k < a.n_ids; k++)
				if (!ended[k]) {
					cli_error(
						"wait: timed out after %s: job %llu has "
						"not ended (%d of %d still running or "
						"queued)",
						a.timeout_text,
						(unsigned long long)a.ids[k], left,
						a.n_ids);
					break;
				}
			rc = CLI_TIMEOUT;
			break;
		}
		cli_sleep_ms(a.have_timeout && a.timeout_ms - elapsed < interval
				     ? a.timeout_ms - elapsed
				     : interval);
		interval = interval * 2 > WAIT_MAX_MS ? WAIT_MAX_MS : interval * 2;
	}
	if (a.json && (rc == CLI_OK || rc == CLI_TIMEOUT) &&
	    print_jobs_json(bodies, a.n_ids))
		rc = CLI_ERROR;
	if (rc == CLI_OK)
		rc = status;
	cli_response_fini(&r);
	cli_client_fini(&c);
out_free:
	if (bodies)
		for (int k = 0; k < a.n_ids; k++)
			free(bodies[k]);
	free(bodies);
	free(ended);
	free(a.ids);
	return rc;
}
