/*
 * colloc/error.h — error codes and diagnostics shared by all of libcolloc.
 *
 * Every libcolloc function that can fail returns an int: 0 on success and a
 * negative code on failure, either a negated errno value (-ENOMEM, -EIO, ...)
 * or one of the COLLOC_E* codes below. colloc_strerror() turns either into a
 * static string.
 *
 * Human detail goes into a caller-owned struct colloc_diag. A function that
 * fails writes one message into it (when the pointer is not NULL); a function
 * that succeeds leaves it untouched. The library never prints or exits.
 */
#ifndef COLLOC_ERROR_H
#define COLLOC_ERROR_H

#include <stddef.h>

/* X(name, value, message). Values stay clear of errno's range. */
#define COLLOC_ERRNO_MAP(X)                              \
	X(EFORMAT, -1001, "malformed input")             \
	X(ELIMIT, -1002, "input exceeds a limit")        \
	X(EUNSUPPORTED, -1003, "unsupported feature")    \
	X(EUNBOUND, -1004, "unbound symbolic dimension") \
	X(ESHAPE, -1005, "inconsistent tensor shapes")   \
	X(ENOTFOUND, -1006, "not found")                 \
	X(EUSAGE, -1007, "invalid argument")             \
	X(EOVERFLOW, -1008, "arithmetic overflow")

enum colloc_errno {
#define COLLOC__ERR_ENUM(name, value, msg) COLLOC_##name = (value),
	COLLOC_ERRNO_MAP(COLLOC__ERR_ENUM)
#undef COLLOC__ERR_ENUM
};

#define COLLOC_DIAG_MAX 512

/* Caller-owned; zero-initialise or call colloc_diag_clear() before use. */
struct colloc_diag {
	char msg[COLLOC_DIAG_MAX];
};

/*
 * Return a static description of rc (a COLLOC_E* code or a negated errno).
 * Never returns NULL.
 */
const char *colloc_strerror(int rc);

/* Empty the message of diag; diag may be NULL. */
void colloc_diag_clear(struct colloc_diag *diag);

/*
 * Replace diag's message with a printf-formatted one (truncated to fit);
 * diag may be NULL. Prefer the two macros below, which also yield rc.
 */
void colloc_diag_printf(struct colloc_diag *diag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Put "prefix: " in front of diag's message (or of colloc_strerror(rc) when
 * diag is empty), as an error travels outwards. diag may be NULL. */
void colloc_diag_prefixf(struct colloc_diag *diag, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * `return colloc_diag_set(diag, rc, fmt, ...);` sets the message and
 * returns rc; `colloc_diag_prefix` likewise. Macros rather than functions so
 * that the value returned is visible to the compiler and static analysers
 * at the call site. rc is evaluated once, after the message is written.
 */
#define colloc_diag_set(diag, rc, ...) (colloc_diag_printf((diag), __VA_ARGS__), (rc))
#define colloc_diag_prefix(diag, rc, ...) \
	(colloc_diag_prefixf((diag), (rc), __VA_ARGS__), (rc))

#endif
