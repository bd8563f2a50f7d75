/*
 * api.h — collocd's HTTP/JSON API (docs/api.md) without the HTTP: routing a
 * request to the daemon's operations, validating request bodies and turning
 * records into JSON. server.c feeds it what libmicrohttpd received; the fuzz
 * target feeds it arbitrary bytes.
 *
 * Not here: sockets, connections, the event loop (server.h).
 *
 * Ownership: cd_api_handle() fills a caller-owned struct cd_api_response
 * whose body is heap memory owned by it; free it with
 * cd_api_response_fini().
 */
#ifndef COLLOC_DAEMON_API_H
#define COLLOC_DAEMON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "daemon/daemon.h"

#define CD_API_BODY_MAX (1u << 20) /* request bodies and log reads */

struct cd_api_response {
	int status; /* HTTP status */
	const char *content_type; /* static */
	char *body; /* owned */
	size_t body_len;
	/* Extra headers of the log endpoint (0 / "" when unused). */
	uint64_t log_offset;
	uint64_t log_size;
	const char *job_state; /* static, or NULL */
};

void cd_api_response_fini(struct cd_api_response *r);

/* What the server read of a request's headers (server.c). */
struct cd_api_headers {
	const char *idempotency_key; /* Idempotency-Key, NULL when absent */
	const char *problem; /* non-NULL: the headers are refused (400) because
			      * of this ("two different Content-Length
			      * headers") */
};

/*
 * Handle one request: method ("GET", "POST", ...), url path ("/v1/jobs/7"),
 * query (the raw text after '?', "" when none; parsed here), hdr (NULL:
 * none), body (may be NULL when len is 0). Always fills *resp with a status
 * and a body (an error body for 4xx/5xx, see docs/api.md). d may be NULL
 * only for the parsing part, as the fuzz target does: then every valid
 * request answers 503.
 */
void cd_api_handle(struct cd_daemon *d, const struct cd_peer *peer, const char *method,
		   const char *url, const char *query, const struct cd_api_headers *hdr,
		   const char *body, size_t len, struct cd_api_response *resp);

/*
 * Whether the n bytes at s are well-formed UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF) without NUL bytes; *bad
 * gets the offset of the first bad byte.
 */
bool cd_api_utf8_ok(const char *s, size_t n, size_t *bad);

/*
 * Validate a submit body into *req (cd_submit_fini() it). Strict: one JSON
 * object and nothing after it but white space, every field once, every
 * string well-formed UTF-8 without NUL (no \u0000). Returns 0, or
 * COLLOC_EFORMAT / COLLOC_EUSAGE / COLLOC_ELIMIT with a message naming the
 * field: "field 'gpus': expected an integer 1..16".
 */
int cd_api_parse_submit(const char *body, size_t len, struct cd_submit *req,
			struct colloc_diag *diag);

/* The job as the API shows it (docs/api.md); detail adds argv, cwd, the
 * names of the environment variables and events. Returns a cJSON object
 * the caller frees with cJSON_Delete, or NULL when out of memory. */
struct cJSON;
struct cJSON *cd_api_job_json(struct cd_daemon *d, const struct cd_job *job, int detail);

#endif
