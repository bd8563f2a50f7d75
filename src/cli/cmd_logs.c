/*
 * cmd_logs.c — `colloc logs JOB [-f]`: a job's output, byte for byte
 * (GET /v1/jobs/ID/log, docs/api.md; user guide docs/cli-jobs.md).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"

static const char logs_usage[] =
	"usage: colloc logs JOB [-f]\n"
	"\n"
	"Write job JOB's output (its stdout and stderr, interleaved as written) to\n"
	"stdout, byte for byte. A job that has not started has no output yet.\n"
	"\n"
	"  -f, --follow     keep printing as the job writes, until it has ended\n"
	"                   and everything is printed (polls every 200 "
	"ms)\n" CLI_SOCKET_HELP "  -h, --help       this help\n"
	"\n" CLI_EXIT_HELP;

#define LOG_POLL_MS 200

/* The job's state from GET /v1/jobs/ID, for a daemon that did not send
 * X-Colloc-State; "" when unknown. */
static int job_state(struct cli_client *c, uint64_t id, char *buf, size_t len)
{
	struct cli_response r;
	char path[64];
	cJSON *job;
	int rc;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/v1/jobs/%llu", (unsigned long long)id);
	cli_response_init(&r);
	rc = cli_client_call(c, "GET", path, NULL, &r, NULL);
	if (rc == CLI_OK && (job = cli_response_json(&r, "logs"))) {
		if (cli_jstr(job, "state"))
			snprintf(buf, len, "%s", cli_jstr(job, "state"));
		cJSON_Delete(job);
	}
	cli_response_fini(&r);
	return rc;
}

int cmd_logs(int argc, char **argv)
{
	struct cli_job_args a;
	struct cli_client c;
	struct cli_response r;
	uint64_t offset = 0;
	bool final_seen = false;
	int rc = cli_parse_job_args(argc, argv, "logs", logs_usage, "f", 1, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_client_open(&c, a.socket))) {
		free(a.ids);
		return rc;
	}
	cli_response_init(&r);
	for (;;) {
		char path[96], state[32];
		uint64_t next;
		bool caught_up, final;

		snprintf(path, sizeof(path), "/v1/jobs/%llu/log?offset=%llu",
			 (unsigned long long)a.ids[0], (unsigned long long)offset);
		if ((rc = cli_client_call(&c, "GET", path, NULL, &r, NULL)))
			break;
		if (r.body_len && (fwrite(r.body, 1, r.body_len, stdout) != r.body_len ||
				   fflush(stdout) != 0)) {
			rc = CLI_ERROR; /* a closed pipe: nobody to tell */
			break;
		}
		next = r.has_next_offset ? r.next_offset : offset + r.body_len;
		if (r.body_len && next <= offset)
			next = offset + r.body_len; /* never loop on a stuck offset */
		offset = next;
		caught_up = r.body_len == 0 || (r.has_size && offset >= r.size);
		if (!caught_up)
			continue;
		if (!a.follow)
			break;
		snprintf(state, sizeof(state), "%s", r.state);
		if (!state[0] && (rc = job_state(&c, a.ids[0], state, sizeof(state))))
			break;
		final = cli_state_final(state);
		/* The log is complete once the job is final; a request made
		 * after seeing that reads to its true end. */
		if (final && final_seen && r.body_len == 0)
			break;
		if (final) {
			final_seen = true;
			continue;
		}
		cli_sleep_ms(LOG_POLL_MS);
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	free(a.ids);
	return rc;
}
