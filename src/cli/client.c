/*
 * client.c — HTTP/JSON requests to collocd over its Unix socket (libcurl).
 *
 * Not a general HTTP client: see client.h. The socket path rules mirror the
 * daemon's defaults (docs/api.md) so that `colloc` and `collocd` started by
 * the same user meet without options.
 */
#define _GNU_SOURCE /* struct ucred */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "colloc/units.h"

bool cli_socket_is_explicit(const char *opt)
{
	const char *env = getenv("COLLOC_SOCKET");

	return opt || (env && *env);
}

int cli_socket_resolve(const char *opt, char *buf, size_t len)
{
	const char *env = getenv("COLLOC_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (opt)
		n = snprintf(buf, len, "%s", opt);
	else if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/collocd.sock", xdg);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/collocd.sock");
	else
		n = snprintf(buf, len, "/tmp/colloc-%u/collocd.sock",
			     (unsigned)geteuid());
	if (n < 0 || (size_t)n >= len || (size_t)n >= CLI_SOCKET_PATH_MAX)
		return -ENAMETOOLONG;
	/* No personal collocd: the machine's service, when there is one
	 * (contrib/collocd.service), so that users need not set anything. */
	if (!opt && !(env && *env) && access(buf, F_OK) != 0 &&
	    access(CLI_SYSTEM_SOCKET, F_OK) == 0 && len > strlen(CLI_SYSTEM_SOCKET))
		snprintf(buf, len, "%s", CLI_SYSTEM_SOCKET);
	return 0;
}

int cli_client_init(struct cli_client *c, const char *socket_path)
{
	struct curl_slist *h;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (strlen(socket_path) >= sizeof(c->socket_path))
		return -ENAMETOOLONG;
	memcpy(c->socket_path, socket_path, strlen(socket_path) + 1);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return CLI_CLIENT_ENOMEM;
	c->curl = curl_easy_init();
	if (!c->curl)
		goto fail_global;
	/* An empty Expect: stops curl from waiting for "100 Continue" before
	 * sending a large body (a submit with a big environment). */
	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (!h)
		goto fail_easy;
	c->headers = h;
	h = curl_slist_append(c->headers, "Expect:");
	if (!h)
		goto fail_headers;
	c->headers = h;
	return 0;

fail_headers:
	curl_slist_free_all(c->headers);
	c->headers = NULL;
fail_easy:
	curl_easy_cleanup(c->curl);
	c->curl = NULL;
fail_global:
	curl_global_cleanup();
	return CLI_CLIENT_ENOMEM;
}

void cli_client_set_timeout(struct cli_client *c, long timeout_ms)
{
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

void cli_client_fini(struct cli_client *c)
{
	if (!c->curl)
		return;
	curl_slist_free_all(c->headers);
	curl_easy_cleanup(c->curl);
	curl_global_cleanup();
	c->headers = NULL;
	c->curl = NULL;
}

int cli_client_open(struct cli_client *c, const char *socket_opt)
{
	char path[CLI_SOCKET_PATH_MAX + 64];
	int rc = cli_socket_resolve(socket_opt, path, sizeof(path));

	if (rc == 0)
		rc = cli_client_init(c, path);
	if (rc == -ENAMETOOLONG) {
		cli_error(
			"cannot reach collocd at %s: a socket path has at most %d bytes "
			"(set --socket or COLLOC_SOCKET)",
			path, CLI_SOCKET_PATH_MAX - 1);
		return CLI_UNREACHABLE;
	}
	if (rc) {
		cli_error("cannot start the HTTP client: out of memory");
		return CLI_ERROR;
	}
	return CLI_OK;
}

void cli_response_init(struct cli_response *r)
{
	memset(r, 0, sizeof(*r));
}

void cli_response_fini(struct cli_response *r)
{
	free(r->body);
	cli_response_init(r);
}

/* What the write callback saw, beyond the bytes: why it stopped. */
struct sink {
	struct cli_response *r;
	int fail; /* 0, CLI_CLIENT_ETOOBIG or CLI_CLIENT_ENOMEM */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	struct cli_response *r = s->r;
	size_t n = size * nmemb; /* curl documents size as always 1 */

	if (n > CLI_CLIENT_MAX_BODY - r->body_len) {
		s->fail = CLI_CLIENT_ETOOBIG;
		return 0;
	}
	if (r->body_len + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		char *p;

		/* Bounded by CLI_CLIENT_MAX_BODY + 1, so no overflow. */
		while (cap < r->body_len + n + 1)
			cap *= 2;
		if (cap > CLI_CLIENT_MAX_BODY + 1)
			cap = CLI_CLIENT_MAX_BODY + 1;
		p = realloc(r->body, cap);
		if (!p) {
			s->fail = CLI_CLIENT_ENOMEM;
			return 0;
		}
		r->body = p;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return n;
}

/* If line is the header "name: value", copy the trimmed value into val and
 * return true. */
static bool header_value(const char *line, size_t len, const char *name, char *val,
			 size_t val_len)
{
	size_t nl = strlen(name), b, e;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return false;
	b = nl + 1;
	e = len;
	while (b < e && (line[b] == ' ' || line[b] == '\t'))
		b++;
	while (e > b && (line[e - 1] == '\r' || line[e - 1] == '\n' ||
			 line[e - 1] == ' ' || line[e - 1] == '\t'))
		e--;
	if (e - b >= val_len)
		e = b + val_len - 1;
	memcpy(val, line + b, e - b);
	val[e - b] = '\0';
	return true;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ud)
{
	struct cli_response *r = ud;
	size_t n = size * nitems;
	char v[64];

	if (header_value(data, n, "X-Colloc-State", r->state, sizeof(r->state)))
		return n;
	if (header_value(data, n, "X-Colloc-Offset", v, sizeof(v)))
		r->has_next_offset =
			colloc_parse_u64(v, UINT64_MAX, &r->next_offset) == 0;
	else if (header_value(data, n, "X-Colloc-Size", v, sizeof(v)))
		r->has_size = colloc_parse_u64(v, UINT64_MAX, &r->size) == 0;
	return n;
}

/*
 * Before curl sends a byte on a fresh connection: who listens there? Anyone
 * can create a socket at a path the user will connect to (/tmp, a squatted
 * directory); what they must not get is the user's submit, whose
 * environment holds tokens (issue 14). Only a collocd running as this user
 * or as root is spoken to. (curl 7.88 ignores CURL_SOCKOPT_ALREADY_CONNECTED,
 * curl/curl#10626, so the check runs here rather than on a socket we would
 * connect ourselves.)
 */
/* curl's socket, made here so that check_peer() knows which it is. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose,
				 struct curl_sockaddr *addr)
{
	struct cli_client *c = ud;

	(void)purpose;
	c->fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	return c->fd >= 0 ? c->fd : CURL_SOCKET_BAD;
}

static int check_peer(void *ud, char *ip, char *local_ip, int port, int local_port)
{
	struct cli_client *c = ud;
	curl_socket_t fd = c->fd;
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	if (fd < 0) {
		snprintf(c->peer_err, sizeof(c->peer_err),
			 "cannot see the connection to check who listens there");
		return CURL_PREREQFUNC_ABORT;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
		snprintf(c->peer_err, sizeof(c->peer_err),
			 "cannot read the credentials of the process listening there: %s",
			 strerror(errno));
		return CURL_PREREQFUNC_ABORT;
	}
	if (cr.uid != geteuid() && cr.uid != 0) {
		snprintf(c->peer_err, sizeof(c->peer_err),
			 "the process listening there (pid %ld) runs as uid %u, neither "
			 "you (uid %u) nor root: not sending it anything (another user "
			 "may "
			 "have put a socket where collocd's should be)",
			 (long)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
		return CURL_PREREQFUNC_ABORT;
	}
	return CURL_PREREQFUNC_OK;
}

int cli_client_request(struct cli_client *c, const char *method, const char *path,
		       const char *body, struct cli_response *r)
{
	char url[2048], errbuf[CURL_ERROR_SIZE];
	struct sink s = {r, 0};
	CURL *h = c->curl;
	CURLcode res;
	long os_errno = 0;
	int n;

	cli_response_fini(r);
	c->err[0] = '\0';
	c->peer_err[0] = '\0';
	n = snprintf(url, sizeof(url), "http://localhost%s", path);
	if (n < 0 || (size_t)n >= sizeof(url)) {
		snprintf(c->err, sizeof(c->err), "request path too long");
		return CLI_CLIENT_ETRANSPORT;
	}
	errbuf[0] = '\0';
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
	/* c->fd stays: a reused connection keeps the socket opened for it */
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, check_peer);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, c);
	/* An http_proxy in the environment must not capture a local socket. */
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 c->timeout_ms > 0 &&
					 c->timeout_ms < CLI_CLIENT_CONNECT_TIMEOUT_MS
				 ? c->timeout_ms
				 : (long)CLI_CLIENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 c->timeout_ms > 0 ? c->timeout_ms
					   : (long)CLI_CLIENT_REQUEST_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(body ? strlen(body) : 0));
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
	res = curl_easy_perform(h);
	if (res == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		return 0;
	}
	if (s.fail == CLI_CLIENT_ETOOBIG) {
		snprintf(c->err, sizeof(c->err), "answer larger than %zu MiB",
			 CLI_CLIENT_MAX_BODY >> 20);
		return CLI_CLIENT_ETOOBIG;
	}
	if (s.fail == CLI_CLIENT_ENOMEM) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return CLI_CLIENT_ENOMEM;
	}
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
	if (c->peer_err[0]) {
		snprintf(c->err, sizeof(c->err), "%s", c->peer_err);
		return CLI_CLIENT_EPEER;
	}
	if (res == CURLE_COULDNT_CONNECT) {
		/* The errno of connect(2) says it best: "No such file or
		 * directory", "Connection refused", "Permission denied". */
		snprintf(c->err, sizeof(c->err), "%s",
			 os_errno ? strerror((int)os_errno)
				  : (errbuf[0] ? errbuf : curl_easy_strerror(res)));
		return CLI_CLIENT_ECONNECT;
	}
	snprintf(c->err, sizeof(c->err), "%s",
		 errbuf[0] ? errbuf : curl_easy_strerror(res));
	return CLI_CLIENT_ETRANSPORT;
}

void cli_client_report_unreachable(const struct cli_client *c)
{
	cli_error("cannot reach collocd at %s: %s (is collocd running? set --socket or "
		  "COLLOC_SOCKET)",
		  c->socket_path, c->err);
}

/* Print the first line of a non-JSON error body, bounded and printable. */
static void report_status(const struct cli_response *r, const char *what)
{
	char text[160];
	size_t k = 0;

	for (size_t i = 0; r->body && i < r->body_len && k + 1 < sizeof(text); i++) {
		unsigned char ch = (unsigned char)r->body[i];

		if (ch == '\n' || ch == '\r')
			break;
		text[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	text[k] = '\0';
	cli_error("%s%scollocd answered HTTP %ld%s%s", what ? what : "", what ? ": " : "",
		  r->status, k ? ": " : "", text);
}

int cli_client_result(const struct cli_client *c, int rc, const struct cli_response *r,
		      const char *what)
{
	cJSON *j, *e, *m;

	if (rc == CLI_CLIENT_ECONNECT) {
		cli_client_report_unreachable(c);
		return CLI_UNREACHABLE;
	}
	if (rc == CLI_CLIENT_ETRANSPORT) {
		cli_error("collocd at %s did not answer: %s", c->socket_path, c->err);
		return CLI_UNREACHABLE;
	}
	if (rc == CLI_CLIENT_EPEER) {
		cli_error("refusing collocd at %s: %s", c->socket_path, c->err);
		return CLI_UNREACHABLE;
	}
	if (rc) {
		cli_error("%s%s%s", what ? what : "", what ? ": " : "", c->err);
		return CLI_ERROR;
	}
	if (r->status >= 200 && r->status < 300)
		return CLI_OK;
	j = r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	if (cJSON_IsString(m) && m->valuestring[0])
		cli_error("%s%s%s", what ? what : "", what ? ": " : "", m->valuestring);
	else
		report_status(r, what);
	cJSON_Delete(j);
	return CLI_ERROR;
}

int cli_client_set_idempotency(struct cli_client *c, const char *key, int retries)
{
	char line[128];
	struct curl_slist *h;

	snprintf(line, sizeof(line), "Idempotency-Key: %s", key);
	h = curl_slist_append(c->headers, line);
	if (!h)
		return CLI_CLIENT_ENOMEM;
	c->headers = h;
	c->retries = retries > 0 ? retries : 0;
	return 0;
}

int cli_client_call(struct cli_client *c, const char *method, const char *path,
		    const char *body, struct cli_response *r, const char *what)
{
	int rc = cli_client_request(c, method, path, body, r);
	long pause_ms = 250;

	/* Only what carries an idempotency key is safe to send twice. */
	/* No answer, or a socket nobody listens on yet (collocd restarting);
	 * not a socket that is not there at all. */
	for (int k = 0; k < c->retries && (rc == CLI_CLIENT_ETRANSPORT ||
					   (rc == CLI_CLIENT_ECONNECT &&
					    access(c->socket_path, F_OK) == 0));
	     k++, pause_ms *= 2) {
		struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};

		nanosleep(&ts, NULL);
		rc = cli_client_request(c, method, path, body, r);
	}
	return cli_client_result(c, rc, r, what);
}

int cli_url_escape(const char *s, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
			     ch == '_' || ch == '~' ||
			     ch == ','; /* a list separator the API expects as is */

		if (k + (plain ? 1 : 3) >= len)
			return -ENAMETOOLONG;
		if (plain) {
			buf[k++] = (char)ch;
		} else {
			buf[k++] = '%';
			buf[k++] = hex[ch >> 4];
			buf[k++] = hex[ch & 15];
		}
	}
	if (k >= len)
		return -ENAMETOOLONG;
	buf[k] = '\0';
	return 0;
}

int cli_response_print(const struct cli_response *r)
{
	if (r->body_len && fwrite(r->body, 1, r->body_len, stdout) != r->body_len)
		return CLI_ERROR;
	if (!r->body_len || r->body[r->body_len - 1] != '\n')
		putchar('\n');
	return fflush(stdout) == 0 ? CLI_OK : CLI_ERROR;
}

cJSON *cli_response_json(const struct cli_response *r, const char *what)
{
	cJSON *j = r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;

	if (!j)
		cli_error("%s%scollocd's answer is not valid JSON", what ? what : "",
			  what ? ": " : "");
	return j;
}
