/*
 * metrics.h — collocd's state as Prometheus metrics: the text that
 * GET /metrics answers (docs/metrics.md lists every metric).
 *
 * Pure rendering: it reads the daemon (its last GPU sample, its counters)
 * and the store, and writes text exposition format 0.0.4 into a buffer. It
 * opens no socket and changes nothing; server.c serves the result.
 *
 * Ownership: the daemon is borrowed for the call; the text is a new malloc'd
 * buffer the caller frees.
 */
#ifndef COLLOC_DAEMON_METRICS_H
#define COLLOC_DAEMON_METRICS_H

#include <stddef.h>

#include "colloc/error.h"
#include "daemon/daemon.h"

/* The Content-Type of what cd_metrics_render() writes. */
#define CD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The largest text rendered (a machine with thousands of running jobs
 * stays far below it). */
#define CD_METRICS_MAX_BYTES ((size_t)64 << 20)

/*
 * Render every metric of d: a HELP and a TYPE line per family, then its
 * samples; label values escaped (backslash, double quote, newline) and made
 * valid UTF-8 (an invalid byte becomes U+FFFD). A figure the backend cannot
 * measure is left out, never written as 0. On success *text is a new
 * NUL-terminated buffer of *len bytes (free() it) and 0 is returned; on
 * failure (the store, out of memory, CD_METRICS_MAX_BYTES: COLLOC_ELIMIT)
 * a negative code with the reason in diag, and *text is NULL.
 */
int cd_metrics_render(struct cd_daemon *d, char **text, size_t *len,
		      struct colloc_diag *diag);

#endif
