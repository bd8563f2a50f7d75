/*
 * gpu.c — open a GPU backend by name and forward calls to it (see
 * colloc/gpu.h). It knows the list of backends and nothing about any one
 * of them.
 */
#include "colloc/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_int.h"

#define BACKEND_NAME_MAX 32

struct colloc_gpu {
	const struct colloc_gpu_backend_ops *ops;
	void *backend;
};

/* Looked up in this order. nvml (libnvidia-ml.so.1) and dcgm (libdcgm.so.4),
 * both loaded with dlopen() so that libcolloc never links NVIDIA software,
 * go here when they exist. */
static const struct colloc_gpu_backend_ops *const backends[] = {
	&colloc__gpu_sim_ops,
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
				       "unknown GPU backend '%s' (known: %s)", name,
				       known);
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

int colloc_gpu_info(struct colloc_gpu *gpu, unsigned index, struct colloc_gpu_info *out,
		    struct colloc_diag *diag)
{
	return gpu->ops->info(gpu->backend, index, out, diag);
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
