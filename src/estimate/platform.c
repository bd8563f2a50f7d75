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

#include "colloc/perf.h"
#include "estimate/perf_int.h"
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
	/* Compute facts of an A100-SXM4-40GB (NVIDIA A100 Tensor Core GPU
	 * Architecture whitepaper, 2020, table 1: dense peaks at 1410 MHz);
	 * host copies at a typical PCIe 4.0 x16 pinned rate. */
	p->fp32_tflops = 19.5;
	p->tf32_tflops = 156;
	p->fp16_tflops = 312;
	p->bf16_tflops = 312;
	p->mem_bandwidth_gbs = 1555;
	p->pcie_gbs = 24;
	p->sm_count = 108;
	p->boost_clock_mhz = 1410;
	snprintf(p->perf_source, sizeof(p->perf_source),
		 "built-in default: NVIDIA A100-SXM4-40GB, A100 architecture "
		 "whitepaper (2020) table 1");
}

/* A file describes its own GPU: it inherits no compute facts from the
 * built-in default, so a profile that gives none cannot be mistaken for
 * an A100 by the step-time predictor. */
static void clear_compute(struct colloc_platform *p)
{
	p->fp32_tflops = p->tf32_tflops = p->fp16_tflops = p->bf16_tflops = 0;
	p->mem_bandwidth_gbs = p->pcie_gbs = p->boost_clock_mhz = 0;
	p->sm_count = 0;
	p->perf_source[0] = '\0';
	memset(p->eff, 0, sizeof(p->eff));
	p->eff_source[0] = '\0';
}

static int get_num(const cJSON *v, const char *key, double lo, double hi, double *out,
		   struct colloc_diag *diag)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "'%s' must be a number from %g to %g", key, lo,
				       hi);
	*out = v->valuedouble;
	return 0;
}

/* "eff": {"gemm": {"eta_compute": 0.9, "eta_memory": 0.8, "fixed_us": 6},
 * ...}: one object per kernel class of colloc/perf.h. */
static int get_eff(const cJSON *obj, struct colloc_platform *p, struct colloc_diag *diag)
{
	const cJSON *c, *v;

	if (!cJSON_IsObject(obj))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "'eff' must be an object of kernel classes");
	cJSON_ArrayForEach(c, obj)
	{
		int cls = -1;

		for (int k = 0; k < COLLOC_PERF_CLASS_COUNT_; k++)
			if (strcmp(c->string, colloc_perf_class_name(k)) == 0)
				cls = k;
		if (cls < 0)
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"eff: unknown kernel class '%s' (gemm, bmm, "
				"elem, softmax, norm)",
				c->string);
		if (!cJSON_IsObject(c))
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "eff.%s must be an object", c->string);
		/* keys the file leaves out keep the class's built-in value */
		p->eff[cls] = colloc__eff_default(cls);
		cJSON_ArrayForEach(v, c)
		{
			struct colloc_platform_eff *e = &p->eff[cls];
			int rc;

			if (strcmp(v->string, "eta_compute") == 0)
				rc = get_num(v, "eta_compute", 1e-4, 1, &e->eta_compute,
					     diag);
			else if (strcmp(v->string, "eta_memory") == 0)
				rc = get_num(v, "eta_memory", 1e-4, 1, &e->eta_memory,
					     diag);
			else if (strcmp(v->string, "fixed_us") == 0)
				rc = get_num(v, "fixed_us", 0, 999, &e->fixed_us, diag);
			else
				rc = colloc_diag_set(diag, COLLOC_EFORMAT,
						     "eff.%s: unknown key '%s'",
						     c->string, v->string);
			if (rc)
				return colloc_diag_prefix(diag, rc, "eff.%s", c->string);
		}
	}
	return 0;
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
		else if (strcmp(k, "cuda_context_bytes") == 0)
			rc = get_size(v, k, &p->cuda_context_bytes, diag);
		else if (strcmp(k, "cudnn_context_bytes") == 0)
			rc = get_size(v, k, &p->cudnn_context_bytes, diag);
		else if (strcmp(k, "cublas_workspace_bytes") == 0)
			rc = get_size(v, k, &p->cublas_workspace_bytes, diag);
		else if (strcmp(k, "cudnn_workspace_bytes") == 0)
			rc = get_size(v, k, &p->cudnn_workspace_bytes, diag);
		else if (strcmp(k, "fp32_tflops") == 0)
			rc = get_num(v, k, 0, 1e4, &p->fp32_tflops, diag);
		else if (strcmp(k, "tf32_tflops") == 0)
			rc = get_num(v, k, 0, 1e4, &p->tf32_tflops, diag);
		else if (strcmp(k, "fp16_tflops") == 0)
			rc = get_num(v, k, 0, 1e4, &p->fp16_tflops, diag);
		else if (strcmp(k, "bf16_tflops") == 0)
			rc = get_num(v, k, 0, 1e4, &p->bf16_tflops, diag);
		else if (strcmp(k, "mem_bandwidth_gbs") == 0)
			rc = get_num(v, k, 0, 1e5, &p->mem_bandwidth_gbs, diag);
		else if (strcmp(k, "pcie_gbs") == 0)
			rc = get_num(v, k, 0, 1e4, &p->pcie_gbs, diag);
		else if (strcmp(k, "boost_clock_mhz") == 0)
			rc = get_num(v, k, 0, 1e5, &p->boost_clock_mhz, diag);
		else if (strcmp(k, "sm_count") == 0) {
			double n = 0;

			rc = get_num(v, k, 0, 1024, &n, diag);
			p->sm_count = (int)n;
		} else if (strcmp(k, "perf_source") == 0)
			rc = get_str(v, k, p->perf_source, sizeof(p->perf_source), diag);
		else if (strcmp(k, "eff_source") == 0)
			rc = get_str(v, k, p->eff_source, sizeof(p->eff_source), diag);
		else if (strcmp(k, "eff") == 0)
			rc = get_eff(v, p, diag);
		else if (strcmp(k, "comment") == 0 || strcmp(k, "name") == 0)
			rc = 0;
		else
			rc = colloc_diag_set(diag, COLLOC_EFORMAT, "unknown key '%s'", k);
		if (rc)
			break;
	}
	cJSON_Delete(root);
	if (rc == 0)
		rc = colloc_perf_check_platform(p, diag);
	return rc;
}

void colloc_platform_path(const char *name_or_path, char *path, size_t len)
{
	if (strchr(name_or_path, '/') || strstr(name_or_path, ".json"))
		snprintf(path, len, "%s", name_or_path);
	else
		snprintf(path, len, "%s/platforms/%s.json", colloc_data_dir(),
			 name_or_path);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int colloc_platform_fit_context(const uint64_t *measured, const uint64_t *reserved, int n,
				struct colloc_context_fit *out)
{
	int64_t *d;

	memset(out, 0, sizeof(*out));
	if (n <= 0 || !measured || !reserved)
		return COLLOC_EUSAGE;
	d = malloc((size_t)n * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (int k = 0; k < n; k++) {
		d[k] = (int64_t)measured[k] - (int64_t)reserved[k];
		out->negative += d[k] < 0;
	}
	qsort(d, (size_t)n, sizeof(*d), cmp_i64);
	out->runs = n;
	out->p10_bytes = d[(n - 1) / 10];
	out->p50_bytes = d[(n - 1) / 2];
	out->p90_bytes = d[(n - 1) * 9 / 10];
	out->max_bytes = d[n - 1];
	out->context_bytes = out->p50_bytes > 0 ? (uint64_t)out->p50_bytes : 0;
	free(d);
	return 0;
}

int colloc_platform_load(const char *name_or_path, struct colloc_platform *out,
			 struct colloc_diag *diag)
{
	char path[4096], *text;
	const char *stem, *slash;
	size_t len;
	FILE *f;
	int rc;

	colloc_platform_path(name_or_path, path, sizeof(path));
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
	clear_compute(out);
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
