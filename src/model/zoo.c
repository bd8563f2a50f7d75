/*
 * zoo.c — locate bundled model graphs and the data directory (see
 * colloc/zoo.h).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "colloc/zoo.h"

#include "common/files.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* True when path is dir or lies below it (both absolute, no "..", as
 * realpath() and /proc/self/exe give them). */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * The data directory for the running binary into out[0..len): the
 * checkout's data/ when the binary lies in the build tree it was configured
 * in, else COLLOC_BIN_TO_DATA next to the binary's directory (an install
 * under any prefix: PREFIX/bin/colloc -> PREFIX/share/colloc), else the
 * configure-time install path. /proc/self/exe, not argv[0]: a binary found
 * through $PATH or a symlink still knows where it really is.
 */
static void find_data_dir(char *out, size_t len)
{
	char exe[PATH_MAX], build[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		if (realpath(COLLOC_BUILD_DIR, build) && path_under(exe, build) &&
		    is_dir(COLLOC_SOURCE_DATADIR "/zoo")) {
			snprintf(out, len, "%s", COLLOC_SOURCE_DATADIR);
			return;
		}
		snprintf(cand, sizeof(cand), "%s/%s", exe, COLLOC_BIN_TO_DATA);
		if (is_dir(cand) && realpath(cand, real)) {
			snprintf(out, len, "%s", real);
			return;
		}
	}
	snprintf(out, len, "%s", COLLOC_INSTALL_DATADIR);
}

const char *colloc_data_dir(void)
{
	static char found[PATH_MAX];
	const char *env = getenv("COLLOC_DATA_DIR");

	if (env && *env)
		return env;
	/* Worked out once: the binary does not move while it runs. */
	if (!found[0])
		find_data_dir(found, sizeof(found));
	return found;
}

int colloc_zoo_resolve(const char *model, char *buf, size_t len, struct colloc_diag *diag)
{
	size_t n = strlen(model);
	struct stat st;
	int w;

	if (stat(model, &st) == 0 || strchr(model, '/') ||
	    (n > 5 && strcmp(model + n - 5, ".onnx") == 0)) {
		w = snprintf(buf, len, "%s", model);
		if (w < 0 || (size_t)w >= len)
			return colloc_diag_set(diag, COLLOC_ELIMIT, "path too long");
		return 0;
	}
	if (!colloc__bundled_name_ok(model))
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "'%s' is neither a file nor a zoo model name",
				       model);
	w = snprintf(buf, len, "%s/zoo/%s.onnx", colloc_data_dir(), model);
	if (w < 0 || (size_t)w >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "path too long");
	if (access(buf, R_OK) != 0)
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "no file '%s' and no zoo model '%s' in %s/zoo "
				       "(see `colloc inspect --list`; set "
				       "COLLOC_DATA_DIR to use another data directory)",
				       model, model, colloc_data_dir());
	return 0;
}

int colloc_zoo_list(char **names, size_t cap)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/zoo", colloc_data_dir());
	return colloc__list_stems(path, ".onnx", names,
				  cap > INT32_MAX ? INT32_MAX : (int)cap);
}

int colloc_hf_list(char **names, size_t cap)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/hf", colloc_data_dir());
	return colloc__list_stems(path, "/config.json", names,
				  cap > INT32_MAX ? INT32_MAX : (int)cap);
}
