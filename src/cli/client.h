/*
 * client.h — the colloc CLI's HTTP/JSON client of collocd (docs/api.md),
 * over the daemon's Unix socket, with libcurl.
 *
 * Not a general HTTP client: one request at a time, bodies bounded by
 * CLI_CLIENT_MAX_BODY, no redirects, no proxies, and the answers the CLI
 * needs (status, body, the X-Colloc-* log headers).
 *
 * Ownership: struct cli_client and struct cli_response are caller-owned
 * (_init/_fini). A response's body is heap memory owned by the response and
 * freed by cli_response_fini(), which also makes the response reusable.
 * cli_client_open() and cli_client_call() print their failures as
 * "colloc: error: ..." because they are the CLI's policy for turning a bad
 * socket path, a transport or an HTTP failure into an exit status;
 * cli_client_init() and cli_client_request() print nothing.
 */
#ifndef COLLOC_CLI_CLIENT_H
#define COLLOC_CLI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sizeof(struct sockaddr_un.sun_path) on Linux: the longest path is 107. */
#define CLI_SOCKET_PATH_MAX 108

/* Where collocd run as a system service listens (contrib/collocd.service,
 * docs/install.md). */
#define CLI_SYSTEM_SOCKET "/run/colloc/collocd.sock"

/* Largest response body accepted (a log chunk is at most 1 MiB; a job list
 * of thousands of jobs is well below this). */
#define CLI_CLIENT_MAX_BODY ((size_t)64 << 20)

#define CLI_CLIENT_CONNECT_TIMEOUT_MS 5000L
#define CLI_CLIENT_REQUEST_TIMEOUT_MS 30000L

/* Failures of cli_client_request(); detail in client->err. */
enum {
	CLI_CLIENT_ECONNECT = -1, /* nothing accepted the connection */
	CLI_CLIENT_ETRANSPORT = -2, /* connected, but no complete answer */
	CLI_CLIENT_ETOOBIG = -3, /* the answer exceeded CLI_CLIENT_MAX_BODY */
	CLI_CLIENT_ENOMEM = -4,
	CLI_CLIENT_EPEER = -5, /* what listens there is not this user's or
				* root's: nothing was sent */
};

struct cli_client {
	char socket_path[CLI_SOCKET_PATH_MAX];
	void *curl; /* CURL *, reused so that requests share one handle */
	struct curl_slist *headers; /* Content-Type and an empty Expect */
	char err[256]; /* why the last request failed */
	long timeout_ms; /* a whole request; 0 = CLI_CLIENT_REQUEST_TIMEOUT_MS */
	/* Before anything is sent the peer is checked: only a collocd running
	 * as this user or as root is spoken to (SO_PEERCRED). */
	char peer_err[256]; /* why the peer was refused, "" if it was not */
	int fd; /* the request's socket (curl owns it), -1 before */
	int retries; /* requests with an Idempotency-Key: how often a request
		      * that got no answer is sent again (0: never) */
};

struct cli_response {
	long status; /* HTTP status; 0 until an answer came */
	char *body; /* NUL-terminated (the NUL is not in body_len); may be NULL */
	size_t body_len;
	size_t body_cap;
	char state[32]; /* X-Colloc-State, "" when absent */
	uint64_t next_offset; /* X-Colloc-Offset */
	uint64_t size; /* X-Colloc-Size */
	bool has_next_offset, has_size;
};

/*
 * Where collocd listens: opt (a --socket value) when not NULL, else
 * $COLLOC_SOCKET when set and non-empty, else $XDG_RUNTIME_DIR/collocd.sock
 * when XDG_RUNTIME_DIR is set, else /run/collocd.sock for root, else
 * /tmp/colloc-UID/collocd.sock; when that default does not exist but
 * CLI_SYSTEM_SOCKET does, CLI_SYSTEM_SOCKET. Writes it to buf. Returns 0, or
 * -ENAMETOOLONG when it does not fit in buf or in a socket address (buf then holds as
 * much of it as fits, for the message).
 */
int cli_socket_resolve(const char *opt, char *buf, size_t len);

/* True when the path came from the command line or the environment rather
 * than the default (used by `colloc gpus` to decide whether to fall back). */
bool cli_socket_is_explicit(const char *opt);

/*
 * Prepare a client for the daemon at socket_path (copied). Returns 0, or
 * CLI_CLIENT_ENOMEM / -ENAMETOOLONG (nothing to fini then).
 */
int cli_client_init(struct cli_client *c, const char *socket_path);

/* Give up on a request after timeout_ms (connecting included) instead of
 * the default; `colloc top` uses its refresh interval so that a daemon that
 * accepts but never answers cannot freeze the screen. 0 restores the
 * default. */
void cli_client_set_timeout(struct cli_client *c, long timeout_ms);

/*
 * Send "Idempotency-Key: KEY" with every request of c from now on, and
 * retry a request that got no answer (collocd restarting, a connection
 * cut after the job was committed) up to retries times, 0.25 s, 0.5 s, 1 s
 * ... apart: the key makes the retry find the job the first try made
 * instead of queueing it twice (docs/api.md). 0, or CLI_CLIENT_ENOMEM.
 */
int cli_client_set_idempotency(struct cli_client *c, const char *key, int retries);

/* Release the client; a zeroed client is fine. */
void cli_client_fini(struct cli_client *c);

/*
 * The CLI's policy for starting a client: cli_socket_resolve(socket_opt)
 * then cli_client_init(). Returns CLI_OK; otherwise prints why and returns
 * CLI_UNREACHABLE (the path does not fit in a socket address) or CLI_ERROR
 * (out of memory), with nothing to fini.
 */
int cli_client_open(struct cli_client *c, const char *socket_opt);

void cli_response_init(struct cli_response *r);
void cli_response_fini(struct cli_response *r);

/*
 * Send METHOD (GET or POST) to path ("/v1/jobs?all=1": already
 * URL-encoded) with body (JSON, may be NULL for none) and fill r, which is
 * reset first. Returns 0 when an HTTP answer came back, whatever its status,
 * or a CLI_CLIENT_E* code with the reason in c->err.
 */
int cli_client_request(struct cli_client *c, const char *method, const char *path,
		       const char *body, struct cli_response *r);

/*
 * The CLI's policy for the outcome rc of cli_client_request(c, ..., r):
 * returns CLI_OK when r holds a 2xx answer; otherwise prints
 * "colloc: error: [what: ]MESSAGE" (MESSAGE being the daemon's error message
 * verbatim, or what went wrong) and returns CLI_ERROR, or CLI_UNREACHABLE
 * when the daemon could not be reached or did not answer. what may be NULL.
 */
int cli_client_result(const struct cli_client *c, int rc, const struct cli_response *r,
		      const char *what);

/* cli_client_request() followed by cli_client_result(). */
int cli_client_call(struct cli_client *c, const char *method, const char *path,
		    const char *body, struct cli_response *r, const char *what);

/*
 * Percent-encode s for a URL query value into buf (RFC 3986 unreserved
 * characters and ',' pass). Returns 0, or -ENAMETOOLONG when it does not fit.
 */
int cli_url_escape(const char *s, char *buf, size_t len);

/* Print r's body to stdout as it came, ending in one newline (what --json
 * prints). Returns CLI_OK, or CLI_ERROR when stdout could not be written. */
int cli_response_print(const struct cli_response *r);

/* The body parsed as JSON, or NULL (then prints why, prefixed by what). The
 * caller owns the result (cJSON_Delete). */
struct cJSON *cli_response_json(const struct cli_response *r, const char *what);

/* Print "cannot reach collocd at PATH: REASON (is collocd running? ...)". */
void cli_client_report_unreachable(const struct cli_client *c);

#endif
