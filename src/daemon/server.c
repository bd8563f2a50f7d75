/*
 * server.c — collocd's one event loop (see server.h). libmicrohttpd runs
 * in "external epoll" mode: it never starts a thread, and we poll its
 * epoll descriptor together with a signalfd, so API requests, child exits
 * and the sampling timer are handled one at a time in one thread.
 *
 * When the `metrics` key names a TCP address, a second libmicrohttpd daemon
 * listens there and serves GET /metrics (metrics.h) and nothing else; its
 * epoll descriptor joins the same poll(), so a scrape never runs
 * concurrently with the daemon it reads.
 */
#define _GNU_SOURCE /* struct ucred, SO_PEERCRED */
#include "daemon/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/files.h"
#include "daemon/api.h"
#include "daemon/metrics.h"

/* One request being received. */
struct request {
	char *body;
	size_t len, cap;
	bool too_large;
};

/* Append "key=value&" for each GET argument into the query buffer. */
struct query_buf {
	char text[1024];
	size_t len;
	bool overflow;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct query_buf *q = cls;
	int n;

	(void)kind;
	n = snprintf(q->text + q->len, sizeof(q->text) - q->len, "%s%s=%s",
		     q->len ? "&" : "", key ? key : "", value ? value : "");
	if (n < 0 || (size_t)n >= sizeof(q->text) - q->len) {
		q->overflow = true;
		return MHD_NO;
	}
	q->len += (size_t)n;
	return MHD_YES;
}

/* What a request's headers say that the API needs, and what is wrong with
 * them: one Content-Length at most (two that differ are how requests are
 * smuggled past a proxy), not with Transfer-Encoding, one Idempotency-Key. */
/*
 * Connections per user (issue 14): one user's unfinished requests must not
 * take every connection slot and lock everyone out. Each user but root and
 * the daemon's own uid may hold at most PER_UID_CONNECTIONS at once; past
 * that a new connection is shut down as it is accepted, and a request's
 * headers and body must arrive within CONNECTION_TIMEOUT_S.
 */
#define PER_UID_CONNECTIONS 32
#define CONNECTION_TIMEOUT_S 10
#define MAX_CONNECTIONS 1024
#define UID_SLOTS 256 /* distinct users with connections at once */

struct uid_count {
	uid_t uid;
	unsigned n;
};

static struct uid_count uid_counts[UID_SLOTS];

/* The user's slot (made when absent and make is set), or NULL. */
static struct uid_count *uid_slot(uid_t uid, bool make)
{
	struct uid_count *free_slot = NULL;

	for (size_t k = 0; k < UID_SLOTS; k++) {
		if (uid_counts[k].n && uid_counts[k].uid == uid)
			return &uid_counts[k];
		if (!uid_counts[k].n && !free_slot)
			free_slot = &uid_counts[k];
	}
	if (make && free_slot)
		free_slot->uid = uid;
	return make ? free_slot : NULL;
}

/* What a connection remembers: whose it is, for the count. */
struct conn_owner {
	uid_t uid;
	bool counted;
};

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;
	struct conn_owner *o = *socket_context;
	struct uid_count *slot;
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (o && o->counted && (slot = uid_slot(o->uid, false)) && slot->n)
			slot->n--;
		free(o);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0)
		return; /* on_request answers 403 */
	if (cred.uid == 0 || cred.uid == geteuid())
		return;
	o = calloc(1, sizeof(*o));
	slot = o ? uid_slot(cred.uid, true) : NULL;
	if (!slot || slot->n >= PER_UID_CONNECTIONS) {
		/* libmicrohttpd sees the end of the stream and frees the slot */
		shutdown(ci->connect_fd, SHUT_RDWR);
		free(o);
		return;
	}
	slot->n++;
	o->uid = cred.uid;
	o->counted = true;
	*socket_context = o;
}

struct header_scan {
	int n_length, n_te, n_idem;
	char length[32];
	char idem[CD_IDEM_MAX + 1];
	bool length_conflict, idem_long;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct header_scan *h = cls;

	(void)kind;
	if (!key)
		return MHD_YES;
	if (!value)
		value = "";
	if (strcasecmp(key, "Content-Length") == 0) {
		if (h->n_length++ && strcmp(h->length, value) != 0)
			h->length_conflict = true;
		snprintf(h->length, sizeof(h->length), "%s", value);
	} else if (strcasecmp(key, "Transfer-Encoding") == 0) {
		h->n_te++;
	} else if (strcasecmp(key, "Idempotency-Key") == 0) {
		h->n_idem++;
		h->idem_long = strlen(value) >= sizeof(h->idem);
		snprintf(h->idem, sizeof(h->idem), "%s", value);
	}
	return MHD_YES;
}

static void read_headers(struct MHD_Connection *c, struct header_scan *h,
			 struct cd_api_headers *out)
{
	memset(h, 0, sizeof(*h));
	memset(out, 0, sizeof(*out));
	MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, h);
	if (h->length_conflict)
		out->problem = "two different Content-Length headers";
	else if (h->n_length > 1)
		out->problem = "Content-Length given twice";
	else if (h->n_length && h->n_te)
		out->problem = "both Content-Length and Transfer-Encoding";
	else if (h->n_idem > 1)
		out->problem = "Idempotency-Key given twice";
	else if (h->idem_long)
		out->problem = "header Idempotency-Key: longer than 64 characters";
	if (h->n_idem == 1)
		out->idempotency_key = h->idem;
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct cd_api_response *r)
{
	static char empty[1];
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char num[32];

	resp = MHD_create_response_from_buffer(r->body_len, r->body ? r->body : empty,
					       r->body ? MHD_RESPMEM_MUST_FREE
						       : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		cd_api_response_fini(r);
		return MHD_NO;
	}
	r->body = NULL; /* MHD owns it now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type : "application/json");
	if (r->job_state) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)r->log_offset);
		MHD_add_response_header(resp, "X-Colloc-Offset", num);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)r->log_size);
		MHD_add_response_header(resp, "X-Colloc-Size", num);
		MHD_add_response_header(resp, "X-Colloc-State", r->job_state);
	}
	ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	cd_api_response_fini(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct cd_daemon *d = cls;
	struct request *req = *con_cls;
	struct cd_api_response r;
	struct query_buf q = {{0}, 0, false};
	const union MHD_ConnectionInfo *ci;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct cd_peer peer;
	struct header_scan hs;
	struct cd_api_headers hdr;

	(void)version;
	if (!req) {
		/* Headers that could make libmicrohttpd and a proxy read
		 * different bodies are refused before any body is read. */
		read_headers(c, &hs, &hdr);
		if (hdr.problem) {
			memset(&peer, 0, sizeof(peer));
			cd_api_handle(NULL, &peer, method, url, "", &hdr, NULL, 0, &r);
			return send_response(c, &r);
		}
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (req->too_large || req->len + n > CD_API_BODY_MAX) {
			req->too_large = true;
			return MHD_YES;
		}
		if (req->len + n + 1 > req->cap) {
			size_t cap = req->cap ? req->cap : 4096;
			char *nb;

			while (cap < req->len + n + 1)
				cap *= 2;
			nb = realloc(req->body, cap);
			if (!nb)
				return MHD_NO;
			req->body = nb;
			req->cap = cap;
		}
		memcpy(req->body + req->len, upload_data, n);
		req->len += n;
		req->body[req->len] = '\0';
		return MHD_YES;
	}
	memset(&r, 0, sizeof(r));
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
		static char msg[] =
			"{\"error\":{\"status\":403,\"code\":\"forbidden\","
			"\"message\":\"cannot read the caller's credentials\"}}";

		r.status = 403;
		r.content_type = "application/json";
		r.body = strdup(msg);
		r.body_len = r.body ? strlen(msg) : 0;
		return send_response(c, &r);
	}
	peer.uid = cred.uid;
	peer.gid = cred.gid;
	peer.pid = cred.pid;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
	read_headers(c, &hs, &hdr);
	if (req->too_large) {
		cd_api_handle(d, &peer, method, url, "", &hdr, NULL, CD_API_BODY_MAX + 1,
			      &r);
	} else if (q.overflow) {
		cd_api_handle(d, &peer, method, url, "x=overlong", &hdr, NULL, 0, &r);
	} else {
		cd_api_handle(d, &peer, method, url, q.text, &hdr, req->body, req->len,
			      &r);
	}
	return send_response(c, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (req) {
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

/* Bind and listen on path, replacing a stale socket but never a live one
 * or a file that is not a socket. */
static int listen_unix(const char *path, mode_t mode, struct colloc_diag *diag)
{
	struct sockaddr_un sa;
	struct stat sb;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "socket path '%s' is longer than %zu bytes", path,
				       sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Clients trust whoever listens here: the directory must be one no
	 * other user can put a socket into (issue 14). A missing last
	 * directory (the default /tmp/colloc-UID) is made private. */
	{
		char dir[sizeof(sa.sun_path)];
		const char *slash = strrchr(path, '/');
		int rc;

		if (slash && slash != path) {
			memcpy(dir, path, (size_t)(slash - path));
			dir[slash - path] = '\0';
			if (mkdir(dir, 0700) != 0 && errno != EEXIST)
				return colloc_diag_set(diag, -errno,
						       "cannot create %s: %s", dir,
						       strerror(errno));
			if ((rc = colloc__check_owned(dir, COLLOC_OWNED_SOCKET_DIR,
						      geteuid(), diag)))
				return rc;
		}
	}
	if (lstat(path, &sb) == 0) {
		int probe;

		if (!S_ISSOCK(sb.st_mode))
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"%s exists and is not a socket; not touching it", path);
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "another collocd is listening on %s",
					       path);
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return colloc_diag_set(diag, -errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(path, mode) != 0 ||
	    listen(fd, 128) != 0) {
		int e = errno;

		close(fd);
		return colloc_diag_set(diag, -e, "cannot listen on %s: %s", path,
				       strerror(e));
	}
	return fd;
}

/* --- the Prometheus endpoint ------------------------------------------------ */

/* Answer status with body[0..len) (malloc'd, or NULL for none), adding an
 * Allow header when allow is not NULL. */
static enum MHD_Result send_plain(struct MHD_Connection *c, unsigned status,
				  const char *content_type, char *body, size_t len,
				  const char *allow)
{
	static char empty[1];
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body ? body : empty,
					       body ? MHD_RESPMEM_MUST_FREE
						    : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_message(struct MHD_Connection *c, unsigned status,
				    const char *msg, const char *allow)
{
	char *body = strdup(msg);

	return send_plain(c, status, "text/plain; charset=utf-8", body,
			  body ? strlen(body) : 0, allow);
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	static int started; /* *con_cls: the headers have been seen */
	struct colloc_diag diag = {{0}};
	struct cd_daemon *d = cls;
	char *text = NULL;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	if (!*con_cls) {
		*con_cls = &started;
		return MHD_YES;
	}
	if (*upload_data_size) {
		/* Nothing here takes a body: read it and drop it. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") != 0)
		return send_message(c, MHD_HTTP_NOT_FOUND,
				    "not found: the metrics are at /metrics\n", NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return send_message(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "method not allowed: /metrics answers GET\n",
				    "GET, HEAD");
	if (cd_metrics_render(d, &text, &len, &diag) != 0) {
		char msg[COLLOC_DIAG_MAX + 64];

		snprintf(msg, sizeof(msg), "cannot render the metrics: %s\n", diag.msg);
		return send_message(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg, NULL);
	}
	return send_plain(c, MHD_HTTP_OK, CD_METRICS_CONTENT_TYPE, text, len, NULL);
}

/* Bind and listen on l's address; shown receives "HOST:PORT" with the port
 * actually bound (the kernel's choice for port 0). */
static int listen_tcp(const struct cd_listen *l, char *shown, size_t shown_len,
		      struct colloc_diag *diag)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	socklen_t sl;
	const char *open_b = l->family == AF_INET6 ? "[" : "";
	const char *close_b = l->family == AF_INET6 ? "]" : "";
	int fd, one = 1, e;
	unsigned port;

	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (l->family == AF_INET6) {
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(l->port);
		if (inet_pton(AF_INET6, l->host, &sin6.sin6_addr) != 1)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "metrics: '%s' is not an IPv6 address",
					       l->host);
		sa = (struct sockaddr *)&sin6;
		sl = sizeof(sin6);
	} else {
		sin.sin_family = AF_INET;
		sin.sin_port = htons(l->port);
		if (inet_pton(AF_INET, l->host, &sin.sin_addr) != 1)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "metrics: '%s' is not an IPv4 address",
					       l->host);
		sa = (struct sockaddr *)&sin;
		sl = sizeof(sin);
	}
	fd = socket(l->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return colloc_diag_set(diag, -errno, "socket: %s", strerror(errno));
	/* A restarted daemon must not wait for its predecessor's connections
	 * in TIME_WAIT; a port someone listens on is still refused. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, sl) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, sa, &sl) != 0) {
		e = errno;
		close(fd);
		return colloc_diag_set(
			diag, -e, "cannot listen for metrics on %s%s%s:%u: %s", open_b,
			l->host, close_b, (unsigned)l->port, strerror(e));
	}
	port = ntohs(l->family == AF_INET6 ? sin6.sin6_port : sin.sin_port);
	snprintf(shown, shown_len, "%s%s%s:%u", open_b, l->host, close_b, port);
	return fd;
}

/* Start the metrics endpoint when the config asks for one: *out is NULL
 * when it does not. */
static int start_metrics(struct cd_daemon *d, struct MHD_Daemon **out,
			 struct colloc_diag *diag)
{
	const struct cd_config *cfg = cd_daemon_config(d);
	struct cd_listen l;
	char shown[CD_LISTEN_MAX + 16], line[256];
	int fd, rc;

	*out = NULL;
	if (!cfg->metrics[0])
		return 0;
	if ((rc = cd_config_listen_parse(cfg->metrics, &l, diag)))
		return colloc_diag_prefix(diag, rc, "metrics");
	fd = listen_tcp(&l, shown, sizeof(shown), diag);
	if (fd < 0)
		return fd;
	*out = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_metrics, d,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)10, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
	if (!*out) {
		close(fd);
		return colloc_diag_set(diag, -EIO, "libmicrohttpd could not start on %s",
				       shown);
	}
	snprintf(line, sizeof(line), "metrics on %s (GET /metrics)%s", shown,
		 l.loopback ? ""
			    : "; not a loopback address: job names and users are "
			      "visible to anyone who can reach it");
	cd_daemon_log(d, line);
	return 0;
}

/* --- the loop ----------------------------------------------------------------- */

static void reap_children(struct cd_daemon *d)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);

		if (pid <= 0)
			break;
		cd_daemon_reap(d, pid);
	}
}

static void (*reload_fn)(struct cd_daemon *d);

void cd_server_on_reload(void (*fn)(struct cd_daemon *d))
{
	reload_fn = fn;
}

int cd_server_run(struct cd_daemon *d, const char *socket_path, struct colloc_diag *diag)
{
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *mhd = NULL, *mhd_metrics = NULL;
	struct pollfd pfd[3];
	nfds_t nfds = 2;
	sigset_t mask, old;
	int lfd, sfd = -1, rc = 0;
	bool stop = false;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, &old) != 0)
		return colloc_diag_set(diag, -errno, "sigprocmask: %s", strerror(errno));
	lfd = listen_unix(socket_path, geteuid() == 0 ? 0666 : 0600, diag);
	if (lfd < 0) {
		rc = lfd;
		goto out;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		rc = colloc_diag_set(diag, -errno, "signalfd: %s", strerror(errno));
		goto out;
	}
	mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, d,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS, MHD_OPTION_END);
	if (!mhd) {
		rc = colloc_diag_set(diag, -EIO, "libmicrohttpd could not start on %s",
				     socket_path);
		goto out;
	}
	info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		rc = colloc_diag_set(diag, -EIO, "libmicrohttpd has no epoll descriptor");
		goto out;
	}
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = info->epoll_fd;
	pfd[1].events = POLLIN;
	if ((rc = start_metrics(d, &mhd_metrics, diag)))
		goto out;
	if (mhd_metrics) {
		info = MHD_get_daemon_info(mhd_metrics, MHD_DAEMON_INFO_EPOLL_FD);
		if (!info) {
			rc = colloc_diag_set(diag, -EIO,
					     "libmicrohttpd has no epoll descriptor");
			goto out;
		}
		pfd[2].fd = info->epoll_fd;
		pfd[2].events = POLLIN;
		nfds = 3;
	}
	while (!stop) {
		MHD_UNSIGNED_LONG_LONG mhd_ms = 0;
		struct signalfd_siginfo si;
		int64_t wait_ms;

		/* One time for everything this turn of the loop does. */
		cd_daemon_set_now(d, cd_now_read());
		wait_ms = cd_daemon_tick(d, false);

		if (MHD_get_timeout(mhd, &mhd_ms) == MHD_YES && (int64_t)mhd_ms < wait_ms)
			wait_ms = (int64_t)mhd_ms;
		if (mhd_metrics && MHD_get_timeout(mhd_metrics, &mhd_ms) == MHD_YES &&
		    (int64_t)mhd_ms < wait_ms)
			wait_ms = (int64_t)mhd_ms;
		if (cd_daemon_dirty(d))
			wait_ms = 0;
		if (poll(pfd, nfds, (int)(wait_ms > 60000 ? 60000 : wait_ms)) < 0 &&
		    errno != EINTR) {
			rc = colloc_diag_set(diag, -errno, "poll: %s", strerror(errno));
			break;
		}
		cd_daemon_set_now(d, cd_now_read());
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				reap_children(d);
			else if (si.ssi_signo == SIGHUP && reload_fn)
				reload_fn(d);
			else if (si.ssi_signo == SIGHUP)
				cd_daemon_log(d, "SIGHUP: nothing to reload");
			else
				stop = true;
		}
		MHD_run(mhd);
		if (mhd_metrics)
			MHD_run(mhd_metrics);
	}
out:
	if (mhd_metrics)
		MHD_stop_daemon(mhd_metrics); /* closes its listening socket */
	if (mhd)
		MHD_stop_daemon(mhd); /* closes the listening socket too */
	else if (lfd >= 0)
		close(lfd);
	if (lfd >= 0)
		unlink(socket_path);
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
