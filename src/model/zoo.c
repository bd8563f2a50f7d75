/*
 * zoo.c — locate bundled model graphs (see colloc/zoo.h).
 */
#include "colloc/zoo.h"

#include "common/files.h"

#include <errno.h>
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

const char *colloc_data_dir(void)
{
	const char *env = getenv("COLLOC_DATA_DIR");

	if (env && *env)
		return env;
	/* A build tree uses the checkout's data; an install uses share/. */
	if (is_dir(COLLOC_SOURCE_DATADIR "/zoo"))
		return COLLOC_SOURCE_DATADIR;
	return COLLOC_INSTALL_DATADIR;
}

static bool zoo_name_ok(const char *s)
{
	if (!*s || strlen(s) > 128 || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
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
	if (!zoo_name_ok(model))
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
