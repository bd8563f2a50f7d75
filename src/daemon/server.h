/*
 * server.h — collocd's event loop: the API on a Unix socket
 * (libmicrohttpd, driven from our own poll() loop, no threads), child
 * exits, signals and the sampling timer, all in one thread.
 *
 * Ownership: the server borrows the daemon; the caller destroys both.
 */
#ifndef COLLOC_DAEMON_SERVER_H
#define COLLOC_DAEMON_SERVER_H

#include "colloc/error.h"
#include "daemon/daemon.h"

/*
 * Bind the socket at path (mode 0666 for a root daemon, which serves every
 * user, 0600 otherwise; a stale socket nobody listens on is replaced, a
 * live one is an error) and serve until SIGTERM or SIGINT. Returns 0 after
 * a clean stop, or a negative code when the socket cannot be set up.
 * Running jobs are left running under their supervisors.
 */
int cd_server_run(struct cd_daemon *d, const char *socket_path, struct colloc_diag *diag);

/* What SIGHUP runs (collocd's main: read the config again and hand it to
 * cd_daemon_reconfigure); NULL, the default, logs that there is nothing to
 * reload. */
void cd_server_on_reload(void (*fn)(struct cd_daemon *d));

#endif
