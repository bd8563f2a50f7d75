/*
 * fuzz_platform.c — libFuzzer target for platform profiles
 * (colloc_platform_parse, colloc/platform.h): any bytes must give a
 * profile or a clear error, never a crash; a parsed profile's strings are
 * NUL-terminated within their fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct colloc_platform p;
	struct colloc_diag diag = {{0}};

	colloc_platform_default(&p);
	if (colloc_platform_parse((const char *)data, size, &p, &diag) == 0) {
		if (strnlen(p.gpu, sizeof(p.gpu)) == sizeof(p.gpu) ||
		    strnlen(p.source, sizeof(p.source)) == sizeof(p.source))
			abort();
	} else if (diag.msg[0] == '\0') {
		abort(); /* every failure explains itself */
	}
	return 0;
}
