/*
 * error.c — colloc_strerror() and the diagnostic buffer helpers.
 */
#include "colloc/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *colloc_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "success";
#define COLLOC__ERR_CASE(name, value, msg) \
	case COLLOC_##name:                \
		return msg;
		COLLOC_ERRNO_MAP(COLLOC__ERR_CASE)
#undef COLLOC__ERR_CASE
	default:
		break;
	}
	if (rc < 0 && rc > -4096)
		return strerror(-rc);
	return "unknown error";
}

void colloc_diag_clear(struct colloc_diag *diag)
{
	if (diag)
		diag->msg[0] = '\0';
}

void colloc_diag_printf(struct colloc_diag *diag, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
}

void colloc_diag_prefixf(struct colloc_diag *diag, int rc, const char *fmt, ...)
{
	char prefix[COLLOC_DIAG_MAX];
	char old[COLLOC_DIAG_MAX];
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, diag->msg, sizeof(old));
	if (old[0] == '\0')
		snprintf(diag->msg, sizeof(diag->msg), "%s: %s", prefix,
			 colloc_strerror(rc));
	else
		snprintf(diag->msg, sizeof(diag->msg), "%s: %s", prefix, old);
}
