/*
 * files.c — directory listing for the zoo and platform lookups, and the
 * mkdir -p that collocd makes its state directories with.
 */
#define _XOPEN_SOURCE 700 /* S_ISVTX */
#include "common/files.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colloc/error.h"

#define MKDIR_PATH_MAX 4096 /* collocd's CD_PATH_MAX */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool colloc__bundled_name_ok(const char *s)
{
	if (!*s || strlen(s) > 128 || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
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

		if (*suffix == '/') {
			/* the directories that hold the file named */
			char p[MKDIR_PATH_MAX];
			int w = snprintf(p, sizeof(p), "%s/%s%s", dir, de->d_name,
					 suffix);

			if (de->d_name[0] == '.' || w < 0 || (size_t)w >= sizeof(p) ||
			    access(p, R_OK) != 0)
				continue;
			l += sl; /* the stem is the whole name */
		} else if (l <= sl || strcmp(de->d_name + l - sl, suffix) != 0) {
			continue;
		}
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

int colloc__mkdir_p(const char *path, mode_t mode, struct colloc_diag *diag)
{
	char buf[MKDIR_PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return colloc_diag_set(diag, COLLOC_ELIMIT, "bad directory path '%s'",
				       path);
	memcpy(buf, path, n + 1);
	for (size_t k = 1; k <= n; k++) {
		if (buf[k] != '/' && buf[k] != '\0')
			continue;
		buf[k] = '\0';
		if (mkdir(buf, k < n ? 0755 : mode) != 0 && errno != EEXIST) {
			int err = errno;

			return colloc_diag_set(diag, -err, "cannot create %s: %s", buf,
					       strerror(err));
		}
		if (k < n)
			buf[k] = '/';
	}
	return 0;
}

int colloc__check_owned(const char *path, enum colloc_owned kind, uid_t uid,
			struct colloc_diag *diag)
{
	struct stat sb;
	bool dir = kind != COLLOC_OWNED_FILE;
	bool root_ok = kind == COLLOC_OWNED_SOCKET_DIR;

	if (lstat(path, &sb) != 0) {
		int err = errno;

		if (err == ENOENT && kind == COLLOC_OWNED_FILE)
			return 0;
		return colloc_diag_set(diag, -err, "%s: %s", path, strerror(err));
	}
	if (dir ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"%s is not a %s (a link or something else there is "
			"not trusted)",
			path, dir ? "directory" : "regular file");
	if (sb.st_uid != uid && !(root_ok && sb.st_uid == 0))
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"%s belongs to uid %u, not to uid %u: another user may "
			"have made it to see or steer this collocd's jobs; "
			"remove it, or choose another path",
			path, (unsigned)sb.st_uid, (unsigned)uid);
	if ((sb.st_mode & S_IWGRP) ||
	    ((sb.st_mode & S_IWOTH) && !(root_ok && (sb.st_mode & S_ISVTX))))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s is writable by %s (mode %04o): others could "
				       "replace what collocd keeps there; chmod go-w it",
				       path,
				       (sb.st_mode & S_IWGRP) ? "its group" : "everyone",
				       (unsigned)(sb.st_mode & 07777));
	return 0;
}
