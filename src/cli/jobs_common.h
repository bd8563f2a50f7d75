/*
 * jobs_common.h — what the job commands (cmd_submit.c, cmd_queue.c,
 * cmd_show.c, cmd_cancel.c, cmd_logs.c, cmd_wait.c, cmd_stats.c) share:
 * the call skeleton every one-request command follows, the options and job
 * ids of the commands that take JOB arguments, help text fragments, and
 * lenient readers that turn a field of collocd's JSON into text.
 *
 * Internal to src/cli/. Not the HTTP client (client.h) and not the job
 * vocabulary (colloc/jobs.h, shared with collocd).
 *
 * Ownership: the formatters write into the caller's buffer and return it,
 * or a static "-" when the field is missing or of another type; they never
 * allocate. cli_parse_job_args() allocates a->ids, which the caller frees.
 */
#ifndef COLLOC_CLI_JOBS_COMMON_H
#define COLLOC_CLI_JOBS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct cli_client;

/* The API's limit on the model text, with its NUL. */
#define CLI_MODEL_TEXT_MAX 512

/* Job ids are JSON numbers: keep them exact in a double. */
#define CLI_MAX_JOB_ID ((uint64_t)1 << 53)

#define CLI_SOCKET_HELP                                                             \
	"  --socket PATH      collocd's socket (default: $COLLOC_SOCKET, else\n"    \
	"                     $XDG_RUNTIME_DIR/collocd.sock, else\n"                \
	"                     /tmp/colloc-UID/collocd.sock; /run/collocd.sock for " \
	"root;\n"                                                                   \
	"                     when that does not exist, the service's\n"            \
	"                     /run/colloc/collocd.sock)\n"

#define CLI_EXIT_HELP                                                            \
	"exit status: 0 success, 1 collocd refused or the request failed (its\n" \
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n"

/*
 * The skeleton of a command that makes one request: send method to path
 * with body (NULL: none), require a JSON answer (what names the command in
 * messages: "queue: ..."), then print collocd's body as it came when json is
 * set, else hand the parsed answer to print. Returns the exit status:
 * print's, or the client's failure after it was printed.
 */
struct cli_jobs_call {
	const char *method; /* "GET" or "POST" */
	const char *path; /* already URL-encoded */
	const char *body;
	const char *what;
	bool json;
	int (*print)(const struct cJSON *answer, void *ctx); /* an exit status */
	void *ctx;
};

/* The skeleton on a client the caller opened (and finishes). */
int cli_jobs_call_on(struct cli_client *c, const struct cli_jobs_call *call);

/* The skeleton on a client of its own for socket (a --socket value or
 * NULL), opened and finished here. */
int cli_jobs_call(const char *socket, const struct cli_jobs_call *call);

/* Options and job ids shared by show, logs, cancel and wait. */
struct cli_job_args {
	const char *socket;
	bool json, follow;
	uint64_t timeout_ms;
	const char *timeout_text;
	bool have_timeout;
	uint64_t *ids; /* owned by the caller once parsed */
	int n_ids;
};

/*
 * Parse the common options of cmd (those set in allowed: 'j' --json,
 * 'f' --follow, 't' --timeout; --socket and --help always) and the job ids;
 * at least one, at most max. Returns CLI_OK, -1 after printing usage, or an
 * exit status after printing why (a->ids is then NULL).
 */
int cli_parse_job_args(int argc, char **argv, const char *cmd, const char *usage,
		       const char *allowed, int max, struct cli_job_args *a);

/* A job id (1..2^53) into *id; CLI_OK or CLI_USAGE after printing why. */
int cli_parse_job_id(const char *s, uint64_t *id);

/* Print "CMD: unknown or incomplete option 'OPT' (see `colloc CMD --help`)". */
void cli_bad_option(const char *cmd, const char *opt);

/* Wall-clock seconds since the epoch (what collocd's times are in). */
double cli_now_s(void);

/* Sleep ms milliseconds, resuming after signals. */
void cli_sleep_ms(uint64_t ms);

/* True when s names a final state (colloc_job_state_final()). */
bool cli_state_final(const char *s);

/*
 * A point in time for --since: a duration ago ("2h", "30m", "7d"), a local
 * date "YYYY-MM-DD" (its midnight) or date and time "YYYY-MM-DD HH:MM[:SS]"
 * (also with a T), or "@SECONDS" since the epoch. Into *epoch_s; CLI_OK or
 * CLI_USAGE after printing why.
 */
int cli_parse_since(const char *s, double *epoch_s);

/* The filters of `queue` and `history` (GET /v1/jobs). */
struct cli_job_filter {
	bool all; /* everyone's (admins) */
	const char *states; /* "queued,PD,..." as typed; NULL: any */
	const char *user; /* NULL: any */
	const char *name; /* a shell pattern; NULL: any */
	bool have_since;
	double since_s; /* jobs that had not ended before this time */
};

/*
 * "/v1/jobs?..." for f into path; the states written as collocd names
 * them (squeue's PD, R, CD, F, CA and pending, completed work too), every
 * value URL-escaped. CLI_OK, or CLI_USAGE after printing why (cmd names
 * the command).
 */
int cli_job_filter_path(const struct cli_job_filter *f, const char *cmd, char *path,
			size_t len);

/*
 * `colloc queue` and `colloc history`: their options (--all, --state,
 * --user, --name, --since, --json, --socket, --help) into a filter
 * (default_states when --state is not given; NULL: any), GET /v1/jobs with
 * it, and print's table of the answer. An exit status.
 */
int cli_job_list(int argc, char **argv, const char *cmd, const char *usage,
		 const char *default_states,
		 int (*print)(const struct cJSON *answer, void *ctx));

/*
 * POST /v1/jobs/ID/ACTION (action: "cancel", "hold", ...) for every JOB of
 * the command line (cli_parse_job_args() with usage), printing "DONE job
 * ID" for each that succeeded (done: "cancelled", "held", ...) and
 * collocd's message for each that did not. Returns CLI_OK when all
 * succeeded, CLI_ERROR when collocd refused one, or the first other
 * failure (CLI_UNREACHABLE stops at once).
 */
int cli_jobs_post_each(int argc, char **argv, const char *cmd, const char *usage,
		       const char *action, const char *done);

/* --- lenient JSON reading: "-" when the field is missing ------------------ */

const char *cli_fmt_u64(const struct cJSON *o, const char *key, char *buf, size_t len);
const char *cli_fmt_int(const struct cJSON *o, const char *key, char *buf, size_t len);
/* "8.00 GiB" (colloc_format_bytes). */
const char *cli_fmt_size(const struct cJSON *o, const char *key, char *buf, size_t len);
/* A 0..1 fraction as a percentage: "40%". */
const char *cli_fmt_frac(const struct cJSON *o, const char *key, char *buf, size_t len);
/* Seconds since the epoch as local "YYYY-MM-DD HH:MM:SS". */
const char *cli_fmt_time(const struct cJSON *o, const char *key, char *buf, size_t len);
/* How a job ended: "exit 3", "signal 9", "-". */
const char *cli_fmt_outcome(const struct cJSON *job, char *buf, size_t len);

/*
 * Copy s (NULL: "-") into buf for a terminal: control characters become '?'
 * (a job name is anyone's text), and more than max bytes end in "...",
 * cut at a UTF-8 character boundary.
 */
const char *cli_clean(const char *s, char *buf, size_t len, size_t max);

#endif
