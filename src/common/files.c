/*
 * files.c — directory listing for the zoo and platform lookups.
 */
#include "common/files.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int colloc__list_stems(const char *dir, const char *suffix, char **names, int cap)
{
	size_t sl = strlen(suffix);
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (l <= sl || strcmp(de->d_name + l - sl, suffix) != 0)
			continue;
		if (n < cap) {
			names[n] = strndup(de->d_name, l - sl);
			if (!names[n]) {
				for (int k = 0; k < n; k++)
					free(names[k]);
				closedir(d);
				return -ENOMEM;
			}
		}
		if (n < 0x7fffffff)
			n++;
	}
	closedir(d);
	qsort(names, (size_t)(n < cap ? n : cap), sizeof(*names), cmp_str);
	return n;
}
