/*
 * platform.c — platform profiles (colloc/platform.h): the built-in default
 * and JSON files in data/platforms/.
 */
#include "colloc/platform.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/units.h"
#include "colloc/zoo.h"
#include "common/files.h"

#define MAX_PROFILE_BYTES ((size_t)64 * 1024)

/* cuBLAS workspace PyTorch 2.x asks for by default on pre-Hopper GPUs:
 * CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8" = 2 x 4096 KiB + 8 x 16 KiB
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize). */
#define CUBLAS_WS_DEFAULT ((uint64_t)(2 * 4096 + 8 * 16) * 1024)

void colloc_platform_default(struct colloc_platform *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "default");
	snprintf(p->gpu, sizeof(p->gpu), "generic CUDA GPU");
	snprintf(p->cuda, sizeof(p->cuda), "12.4");
	snprintf(p->cudnn, sizeof(p->cudnn), "9");
	snprintf(p->torch, sizeof(p->torch), "2.6");
	/* Context: see data/platforms/README.md for how this was fitted. */
	p->context_bytes = (uint64_t)400 << 20;
	p->cublas_workspace_bytes = CUBLAS_WS_DEFAULT;
	p->cudnn_workspace_bytes = 0;
	snprintf(p->source, sizeof(p->source),
		 "built-in default: CUDA context of a PyTorch 2.x process with lazy "
		 "module loading; cuBLAS workspace per CublasHandlePool.cpp");
}

static int get_size(const cJSON *v, const char *key, uint64_t *out,
		    struct colloc_diag *diag)
{
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble < 0 || v->valuedouble > 1e18)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "'%s' is out of range", key);
		*out = (uint64_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && colloc_parse_size(v->valuestring, out) == 0)
		return 0;
	return colloc_diag_set(diag, COLLOC_EFORMAT,
			       "'%s' must be a byte count or a size like \"450MiB\"",
			       key);
}

static int get_str(const cJSON *v, const char *key, char *out, size_t len,
		   struct colloc_diag *diag)
{
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "'%s' must be a string of under %zu bytes", key,
				       len);
	snprintf(out, len, "%s", v->valuestring);
	return 0;
}

int colloc_platform_parse(const char *text, size_t len, struct colloc_platform *p,
			  struct colloc_diag *diag)
{
	cJSON *root, *v;
	int rc = 0;

	if (len > MAX_PROFILE_BYTES)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "profile larger than %zu bytes",
				       MAX_PROFILE_BYTES);
	root = cJSON_ParseWithLength(text, len);

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return colloc_diag_set(diag, COLLOC_EFORMAT, "not a JSON object");
	}
	cJSON_ArrayForEach(v, root)
	{
		const char *k = v->string;

		if (strcmp(k, "gpu") == 0)
			rc = get_str(v, k, p->gpu, sizeof(p->gpu), diag);
		else if (strcmp(k, "cuda") == 0)
			rc = get_str(v, k, p->cuda, sizeof(p->cuda), diag);
		else if (strcmp(k, "cudnn") == 0)
			rc = get_str(v, k, p->cudnn, sizeof(p->cudnn), diag);
		else if (strcmp(k, "torch") == 0)
			rc = get_str(v, k, p->torch, sizeof(p->torch), diag);
		else if (strcmp(k, "source") == 0)
			rc = get_str(v, k, p->source, sizeof(p->source), diag);
		else if (strcmp(k, "gpu_memory_bytes") == 0)
			rc = get_size(v, k, &p->gpu_memory_bytes, diag);
		else if (strcmp(k, "context_bytes") == 0)
			rc = get_size(v, k, &p->context_bytes, diag);
		else if (strcmp(k, "cublas_workspace_bytes") == 0)
			rc = get_size(v, k, &p->cublas_workspace_bytes, diag);
		else if (strcmp(k, "cudnn_workspace_bytes") == 0)
			rc = get_size(v, k, &p->cudnn_workspace_bytes, diag);
		else if (strcmp(k, "comment") == 0 || strcmp(k, "name") == 0)
			rc = 0;
		else
			rc = colloc_diag_set(diag, COLLOC_EFORMAT, "unknown key '%s'", k);
		if (rc)
			break;
	}
	cJSON_Delete(root);
	return rc;
}

int colloc_platform_load(const char *name_or_path, struct colloc_platform *out,
			 struct colloc_diag *diag)
{
	char path[4096], *text;
	const char *stem, *slash;
	size_t len;
	FILE *f;
	int rc;

	if (strchr(name_or_path, '/') || strstr(name_or_path, ".json"))
		snprintf(path, sizeof(path), "%s", name_or_path);
	else
		snprintf(path, sizeof(path), "%s/platforms/%s.json", colloc_data_dir(),
			 name_or_path);
	f = fopen(path, "rb");
	if (!f) {
		rc = -errno;
		return colloc_diag_set(
			diag, rc == -ENOENT ? COLLOC_ENOTFOUND : rc,
			"platform '%s': cannot open %s: %s (see `colloc estimate "
			"--list-platforms`)",
			name_or_path, path, strerror(-rc));
	}
	text = malloc(MAX_PROFILE_BYTES + 1);
	if (!text) {
		fclose(f);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	len = fread(text, 1, MAX_PROFILE_BYTES + 1, f);
	fclose(f);
	if (len > MAX_PROFILE_BYTES) {
		free(text);
		return colloc_diag_set(diag, COLLOC_ELIMIT, "%s: larger than %zu bytes",
				       path, MAX_PROFILE_BYTES);
	}
	text[len] = '\0';
	colloc_platform_default(out);
	slash = strrchr(path, '/');
	stem = slash ? slash + 1 : path;
	snprintf(out->name, sizeof(out->name), "%.*s",
		 (int)(strstr(stem, ".json") ? (size_t)(strstr(stem, ".json") - stem)
					     : strlen(stem)),
		 stem);
	rc = colloc_platform_parse(text, len, out, diag);
	free(text);
	if (rc)
		return colloc_diag_prefix(diag, rc, "%s", path);
	return 0;
}

int colloc_platform_list(char **names, int cap)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/platforms", colloc_data_dir());
	return colloc__list_stems(path, ".json", names, cap);
}
