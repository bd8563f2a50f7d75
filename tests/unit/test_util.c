/*
 * test_util.c — see test_util.h.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

char *test_slurp(const char *path, size_t max_bytes)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    (size_t)len <= max_bytes && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)len + 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			buf[len] = '\0';
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}
