/*
 * gpu.c — open a GPU backend by name and forward calls to it (see
 * colloc/gpu.h). It knows the list of backends, and the "auto" choice
 * between real and simulated GPUs, and nothing about any one backend.
 */
#include "colloc/gpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_int.h"

#define BACKEND_NAME_MAX 32
/* What "auto" falls back to when no NVIDIA GPU answers. */
#define AUTO_FALLBACK "sim:4x40GiB"

struct colloc_gpu {
	const struct colloc_gpu_backend_ops *ops;
	void *backend;
};

/* Looked up in this order. nvml loads libnvidia-ml.so.1 (and libdcgm for
 * profiling metrics) with dlopen() so that libcolloc never links NVIDIA
 * software; DCGM is part of nvml rather than a backend of its own because
 * it only adds figures to NVML's GPUs. */
static const struct colloc_gpu_backend_ops *const backends[] = {
	&colloc__gpu_sim_ops,
	&colloc__gpu_nvml_ops,
};

const struct colloc_gpu_backend_ops *const *colloc_gpu_backends(size_t *n)
{
	if (n)
		*n = sizeof(backends) / sizeof(backends[0]);
	return backends;
}

const struct colloc_gpu_backend_ops *colloc_gpu_backend_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t k = 0; k < sizeof(backends) / sizeof(backends[0]); k++)
		if (strcmp(backends[k]->name, name) == 0)
			return backends[k];
	return NULL;
}

int colloc_gpu_open(const char *spec, struct colloc_gpu **out, struct colloc_diag *diag)
{
	const struct colloc_gpu_backend_ops *ops;
	char name[BACKEND_NAME_MAX];
	const char *colon, *args;
	struct colloc_gpu *gpu;
	size_t len;
	int rc;

	if (!spec || !out)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "no GPU backend given");
	if (strcmp(spec, "auto") == 0)
		return colloc_gpu_open_auto(AUTO_FALLBACK, out, NULL, 0, diag);
	if (strncmp(spec, "auto:", 5) == 0)
		return colloc_gpu_open_auto(spec + 5, out, NULL, 0, diag);
	colon = strchr(spec, ':');
	len = colon ? (size_t)(colon - spec) : strlen(spec);
	args = colon ? colon + 1 : "";
	if (len == 0 || len >= sizeof(name))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "'%.64s': not a GPU backend spec (NAME[:ARGS], "
				       "e.g. sim:4x40GiB)",
				       spec);
	memcpy(name, spec, len);
	name[len] = '\0';
	ops = colloc_gpu_backend_find(name);
	if (!ops) {
		char known[128] = "";
		size_t used = 0;

		for (size_t k = 0; k < sizeof(backends) / sizeof(backends[0]); k++) {
			int w = snprintf(known + used, sizeof(known) - used, "%s%s",
					 k ? ", " : "", backends[k]->name);

			if (w < 0 || (size_t)w >= sizeof(known) - used)
				break;
			used += (size_t)w;
		}
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "unknown GPU backend '%s' (known: %s; or auto)",
				       name, known);
	}
	gpu = calloc(1, sizeof(*gpu));
	if (!gpu)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	gpu->ops = ops;
	rc = ops->open(args, &gpu->backend, diag);
	if (rc < 0) {
		free(gpu);
		return rc;
	}
	*out = gpu;
	return 0;
}

/* Write note (truncated, terminated); note may be NULL with len 0. */
static void note_printf(char *note, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note_printf(char *note, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!note || len == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(note, len, fmt, ap);
	va_end(ap);
}

int colloc_gpu_open_auto(const char *fallback_spec, struct colloc_gpu **out, char *note,
			 size_t note_len, struct colloc_diag *diag)
{
	struct colloc_diag why = {{0}};
	struct colloc_gpu *gpu = NULL;
	const char *what;
	unsigned n = 0;
	int rc;

	if (!out)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "no place for the GPU handle");
	if (fallback_spec && (strcmp(fallback_spec, "auto") == 0 ||
			      strncmp(fallback_spec, "auto:", 5) == 0))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "auto cannot fall back to auto ('%.64s')",
				       fallback_spec);
	rc = colloc_gpu_open("nvml", &gpu, &why);
	if (rc == 0) {
		rc = colloc_gpu_count(gpu, &n, &why);
		if (rc == 0 && n > 0) {
			char line[COLLOC_DIAG_MAX];

			colloc_gpu_describe(gpu, line, sizeof(line));
			note_printf(note, note_len, "%s", line);
			*out = gpu;
			return 0;
		}
		colloc_gpu_close(gpu);
		if (rc == 0)
			colloc_diag_printf(&why, "NVML sees no GPU");
	}
	if (!fallback_spec) {
		note_printf(note, note_len, "%s", why.msg);
		if (rc == 0)
			rc = COLLOC_ENOTFOUND;
		return colloc_diag_set(diag, rc, "%s", why.msg);
	}
	/* A missing library is the ordinary case of a machine without NVIDIA
	 * software; anything else is a driver that is there but broken, which
	 * the note says differently so that nobody mistakes one for the other. */
	what = rc == COLLOC_ENOTFOUND ? "no NVIDIA driver" : "NVIDIA GPUs unusable";
	if (rc == 0)
		what = "no NVIDIA GPU";
	rc = colloc_gpu_open(fallback_spec, out, diag);
	if (rc < 0) {
		(void)colloc_diag_prefix(diag, rc, "%s (%s); fallback '%.64s'", what,
					 why.msg, fallback_spec);
		note_printf(note, note_len, "%s", diag ? diag->msg : why.msg);
		return rc;
	}
	note_printf(note, note_len, "%s (%s); using %s GPUs %s", what, why.msg,
		    strcmp(colloc_gpu_backend_name(*out), "sim") == 0 ? "simulated"
								      : "the",
		    fallback_spec);
	return 0;
}

void colloc_gpu_close(struct colloc_gpu *gpu)
{
	if (!gpu)
		return;
	gpu->ops->close(gpu->backend);
	free(gpu);
}

const char *colloc_gpu_backend_name(const struct colloc_gpu *gpu)
{
	return gpu->ops->name;
}

int colloc_gpu_count(struct colloc_gpu *gpu, unsigned *n, struct colloc_diag *diag)
{
	return gpu->ops->count(gpu->backend, n, diag);
}

void colloc_gpu_info_init(struct colloc_gpu_info *info)
{
	memset(info, 0, sizeof(*info));
	info->util_pct = -1;
	info->power_mw = -1;
	info->energy_mj = -1;
	info->mig_mode = -1;
	info->mem_reserved_bytes = -1;
	info->gr_engine_active = COLLOC_GPU_METRIC_ABSENT;
	info->sm_active = COLLOC_GPU_METRIC_ABSENT;
	info->sm_occupancy = COLLOC_GPU_METRIC_ABSENT;
	info->tensor_active = COLLOC_GPU_METRIC_ABSENT;
	info->dram_active = COLLOC_GPU_METRIC_ABSENT;
}

int colloc_gpu_info(struct colloc_gpu *gpu, unsigned index, struct colloc_gpu_info *out,
		    struct colloc_diag *diag)
{
	return gpu->ops->info(gpu->backend, index, out, diag);
}

int colloc_gpu_mig_instances(struct colloc_gpu *gpu, unsigned index,
			     struct colloc_gpu_mig_instance *out, size_t cap, size_t *n,
			     struct colloc_diag *diag)
{
	unsigned count;
	int rc;

	if (gpu->ops->mig_instances)
		return gpu->ops->mig_instances(gpu->backend, index, out, cap, n, diag);
	/* A backend without MIG still refuses a bad index, as the others do. */
	rc = gpu->ops->count(gpu->backend, &count, diag);
	if (rc < 0)
		return rc;
	if (index >= count)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "no GPU %u (there are %u)",
				       index, count);
	*n = 0;
	return 0;
}

void colloc_gpu_describe(struct colloc_gpu *gpu, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	if (gpu->ops->describe)
		gpu->ops->describe(gpu->backend, buf, len);
}

int colloc_gpu_processes(struct colloc_gpu *gpu, unsigned index,
			 struct colloc_gpu_process *procs, size_t cap, size_t *n,
			 struct colloc_diag *diag)
{
	return gpu->ops->processes(gpu->backend, index, procs, cap, n, diag);
}

int colloc_gpu_job_env(struct colloc_gpu *gpu, char *buf, size_t len,
		       struct colloc_diag *diag)
{
	if (!buf || len == 0)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "no room for the job environment");
	if (!gpu->ops->job_env) {
		buf[0] = '\0';
		return 0;
	}
	return gpu->ops->job_env(gpu->backend, buf, len, diag);
}
