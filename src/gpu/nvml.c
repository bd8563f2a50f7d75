/*
 * nvml.c — the "nvml" GPU backend: NVIDIA GPUs through the NVIDIA
 * Management Library, libnvidia-ml.so.1, loaded with dlopen() at run time.
 *
 * Nothing NVIDIA is needed to build it: the few NVML types and functions it
 * uses are declared below from NVIDIA's public API reference (NVML API
 * Reference Guide, docs.nvidia.com/deploy/nvml-api/, the nvml.h of CUDA 12
 * and driver r535-r570), and every function is looked up by name from a
 * table, versioned names first, each required or optional. A missing
 * optional function turns off only what it measures (energy on pre-Volta
 * drivers, MIG before r450, MPS processes, ...).
 *
 * What it is not: a scheduler, a MIG configurator (it reads the MIG layout
 * and never changes it), or a DCGM client (dcgm.c adds DCGM's profiling
 * ratios to each GPU when libdcgm is present). See docs/gpu-backends.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/gpu.h"
#include "gpu/dcgm_int.h"
#include "gpu/gpu_int.h"

/* ---- NVML's declarations, from its API reference ---------------------------- */

/* nvmlReturn_t values (NVML API Reference, "Error reporting",
 * group__nvmlDeviceEnumvs.html#nvmlReturn_t). An enum, passed as int. */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15

/* Buffer sizes (nvml.h "Buffer size guaranteed to be large enough for ..."):
 * NVML_DEVICE_UUID_V2_BUFFER_SIZE 96, NVML_DEVICE_NAME_V2_BUFFER_SIZE 96,
 * NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
 * 32 and NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16 (nvmlPciInfo_t.busIdLegacy). */
#define NVML_UUID_LEN 96
#define NVML_NAME_LEN 96
#define NVML_DRIVER_LEN 80
#define NVML_BUS_ID_LEN 32
#define NVML_BUS_ID_LEGACY_LEN 16
_Static_assert(NVML_NAME_LEN <= NVML_UUID_LEN, "one buffer serves UUIDs and names");

/* NVML_DEVICE_MIG_ENABLE (nvmlDeviceGetMigMode's currentMode). */
#define NVML_MIG_ENABLE 1

/* nvmlProcessInfo_t.usedGpuMemory when the driver cannot tell:
 * NVML_VALUE_NOT_AVAILABLE, (-1) as unsigned long long. */
#define NVML_VALUE_NOT_AVAILABLE_ULL ULLONG_MAX

/* nvmlDevice_t: an opaque handle. */
struct nvml_device_st;

/* nvmlMemory_t, the v1 answer: used includes what the driver reserves. */
struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

/* nvmlMemory_v2_t: reserved apart, used = allocations only. */
struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
};

/* nvmlMemory_v2 = NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) |
 * 2 << 24. Not plain 2 (nvtop's mistake): with 2 the driver answers
 * NVML_ERROR_ARGUMENT_VERSION_MISMATCH and a caller that then falls back to
 * v1 reports reserved memory as used. */
#define NVML_MEMORY_V2_VERSION \
	((unsigned int)(sizeof(struct nvml_memory_v2) | (2u << 24)))

/* nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v2 and _v3 fill it. */
struct nvml_pci_info {
	char bus_id_legacy[NVML_BUS_ID_LEGACY_LEN];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_subsystem_id;
	char bus_id[NVML_BUS_ID_LEN];
};

/* nvmlUtilization_t: percent of the last sample period. */
struct nvml_utilization {
	unsigned int gpu;
	unsigned int memory;
};

/* nvmlProcessInfo_v1_t: what the unversioned process queries fill. */
struct nvml_process_v1 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
};

/* nvmlProcessInfo_v2_t (= nvmlProcessInfo_t): what _v2 and _v3 fill. */
struct nvml_process_v2 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

typedef int (*nvml_void_fn)(void);
typedef const char *(*nvml_error_string_fn)(int result);
typedef int (*nvml_driver_version_fn)(char *version, unsigned int length);
typedef int (*nvml_count_fn)(unsigned int *count);
typedef int (*nvml_handle_fn)(unsigned int index, struct nvml_device_st **device);
typedef int (*nvml_dev_string_fn)(struct nvml_device_st *device, char *buf,
				  unsigned int length);
typedef int (*nvml_pci_fn)(struct nvml_device_st *device, struct nvml_pci_info *pci);
typedef int (*nvml_memory_fn)(struct nvml_device_st *device, struct nvml_memory *memory);
typedef int (*nvml_memory_v2_fn)(struct nvml_device_st *device,
				 struct nvml_memory_v2 *memory);
typedef int (*nvml_util_fn)(struct nvml_device_st *device, struct nvml_utilization *util);
typedef int (*nvml_uint_fn)(struct nvml_device_st *device, unsigned int *value);
typedef int (*nvml_ull_fn)(struct nvml_device_st *device, unsigned long long *value);
typedef int (*nvml_mig_mode_fn)(struct nvml_device_st *device, unsigned int *current,
				unsigned int *pending);
typedef int (*nvml_mig_handle_fn)(struct nvml_device_st *device, unsigned int index,
				  struct nvml_device_st **mig);
typedef int (*nvml_procs_v1_fn)(struct nvml_device_st *device, unsigned int *count,
				struct nvml_process_v1 *infos);
typedef int (*nvml_procs_v2_fn)(struct nvml_device_st *device, unsigned int *count,
				struct nvml_process_v2 *infos);

/* The functions found in the library; NULL when absent. */
struct nvml_api {
	nvml_void_fn init;
	nvml_void_fn shutdown;
	nvml_error_string_fn error_string;
	nvml_driver_version_fn driver_version;
	nvml_count_fn count;
	nvml_handle_fn handle;
	nvml_dev_string_fn uuid;
	nvml_dev_string_fn name;
	nvml_pci_fn pci;
	nvml_memory_v2_fn memory_v2;
	nvml_memory_fn memory_v1;
	nvml_util_fn util;
	nvml_uint_fn power;
	nvml_ull_fn energy;
	nvml_procs_v2_fn procs;
	nvml_procs_v1_fn procs_v1;
	nvml_procs_v2_fn mps_procs;
	nvml_mig_mode_fn mig_mode;
	nvml_uint_fn mig_max;
	nvml_mig_handle_fn mig_handle;
	nvml_uint_fn gi_id;
	nvml_uint_fn ci_id;
};

#define SYM_REQUIRED 1u
/* One of a group of features that work only all together (MIG). */
#define SYM_MIG 2u

/* One function pointer of struct nvml_api and the names that fill it, the
 * newest first: each _vN takes the same arguments as the names after it
 * (the two process-list layouts are separate entries). */
struct nvml_sym {
	size_t offset;
	unsigned flags;
	const char *names[3];
};

#define SYM(member, flags, ...)                             \
	{                                                   \
		offsetof(struct nvml_api, member), (flags), \
		{                                           \
			__VA_ARGS__                         \
		}                                           \
	}

static const struct nvml_sym nvml_syms[] = {
	SYM(init, SYM_REQUIRED, "nvmlInit_v2", "nvmlInit"),
	SYM(shutdown, SYM_REQUIRED, "nvmlShutdown"),
	SYM(error_string, 0, "nvmlErrorString"),
	SYM(driver_version, 0, "nvmlSystemGetDriverVersion"),
	SYM(count, SYM_REQUIRED, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
	SYM(handle, SYM_REQUIRED, "nvmlDeviceGetHandleByIndex_v2",
	    "nvmlDeviceGetHandleByIndex"),
	SYM(uuid, SYM_REQUIRED, "nvmlDeviceGetUUID"),
	SYM(name, SYM_REQUIRED, "nvmlDeviceGetName"),
	/* Not the unversioned nvmlDeviceGetPciInfo: it belongs to the layout
	 * before the 32-byte busId, and _v2 is old enough. */
	SYM(pci, SYM_REQUIRED, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"),
	/* One of the two memory queries is required (checked after). */
	SYM(memory_v2, 0, "nvmlDeviceGetMemoryInfo_v2"),
	SYM(memory_v1, 0, "nvmlDeviceGetMemoryInfo"),
	SYM(util, 0, "nvmlDeviceGetUtilizationRates"),
	SYM(power, 0, "nvmlDeviceGetPowerUsage"),
	SYM(energy, 0, "nvmlDeviceGetTotalEnergyConsumption"),
	SYM(procs, 0, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2"),
	SYM(procs_v1, 0, "nvmlDeviceGetComputeRunningProcesses"),
	SYM(mps_procs, 0, "nvmlDeviceGetMPSComputeRunningProcesses_v3",
	    "nvmlDeviceGetMPSComputeRunningProcesses_v2"),
	SYM(mig_mode, SYM_MIG, "nvmlDeviceGetMigMode"),
	SYM(mig_max, SYM_MIG, "nvmlDeviceGetMaxMigDeviceCount"),
	SYM(mig_handle, SYM_MIG, "nvmlDeviceGetMigDeviceHandleByIndex"),
	SYM(gi_id, SYM_MIG, "nvmlDeviceGetGpuInstanceId"),
	SYM(ci_id, SYM_MIG, "nvmlDeviceGetComputeInstanceId"),
};

#undef SYM

/* ---- limits ------------------------------------------------------------------ */

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define NVML_LIBRARY_ENV "COLLOC_NVML_LIBRARY"
/* More than any machine has; NVML's own count is an unsigned int. */
#define MAX_GPUS 256
/* NVML_MAX_MIG_DEVICES... 7 on A100/H100; room to spare. */
#define MAX_MIG 64
/* Processes in one answer of one process query: the list grows between
 * calls, so the buffer grows with it, this far and no further. */
#define MAX_PROCS 65536
#define PROC_TRIES 4
#define PROC_FIRST 32

/* ---- the backend ------------------------------------------------------------- */

struct nvml_gpu {
	struct nvml_device_st *dev;
	char uuid[NVML_UUID_LEN];
	char name[NVML_NAME_LEN];
	char bus_id[NVML_BUS_ID_LEN];
	/* The NVML call and error that made this GPU unusable at open, or
	 * NULL; lost once NVML said it fell off the bus (it stays so: the
	 * driver needs the GPU reset first). */
	const char *open_fn;
	int open_rc;
	bool lost;
};

/* The processes of one GPU being gathered, merged by pid. */
struct proc_list {
	struct colloc_gpu_process *v;
	size_t n, cap;
};

struct nvml_backend {
	void *lib;
	struct nvml_api api;
	char lib_name[128];
	char driver[NVML_DRIVER_LEN];
	unsigned n_gpus;
	struct nvml_gpu *gpus;
	/* Reused between queries so that a sample allocates nothing. */
	void *raw; /* NVML's process records */
	size_t raw_bytes;
	struct proc_list all, kind, inst;
	struct colloc__dcgm *dcgm;
	char dcgm_note[384];
};

enum proc_kind { PROC_COMPUTE, PROC_MPS };

/* Not thread-safe on its first call: for the tests. */
const char *const *colloc__nvml_symbol_names(size_t *n)
{
	static const char *names[sizeof(nvml_syms) / sizeof(nvml_syms[0]) * 3 + 1];
	size_t k = 0;

	if (!names[0])
		for (size_t s = 0; s < sizeof(nvml_syms) / sizeof(nvml_syms[0]); s++)
			for (size_t j = 0; j < 3 && nvml_syms[s].names[j]; j++)
				names[k++] = nvml_syms[s].names[j];
	else
		while (names[k])
			k++;
	if (n)
		*n = k;
	return names;
}

static const char *nvml_error(const struct nvml_backend *b, int rc, char *buf, size_t len)
{
	const char *s = b->api.error_string ? b->api.error_string(rc) : NULL;

	if (s)
		snprintf(buf, len, "%s (NVML error %d)", s, rc);
	else
		snprintf(buf, len, "NVML error %d", rc);
	return buf;
}

/* "GPU 1 (GPU-...)" for messages. */
static const char *gpu_label(const struct nvml_backend *b, unsigned index, char *buf,
			     size_t len)
{
	const char *uuid = b->gpus[index].uuid;

	snprintf(buf, len, "GPU %u (%s)", index, uuid[0] ? uuid : "UUID unknown");
	return buf;
}

/*
 * The error for NVML call fn failing with rc on GPU index: -ENODEV when the
 * GPU has fallen off the bus (and from now on), -EIO otherwise. what names
 * a MIG device of the GPU, or is "".
 */
static int gpu_fail(struct nvml_backend *b, unsigned index, const char *what,
		    const char *fn, int rc, struct colloc_diag *diag)
{
	char label[NVML_UUID_LEN + 32], err[128];

	gpu_label(b, index, label, sizeof(label));
	nvml_error(b, rc, err, sizeof(err));
	if (rc == NVML_ERROR_GPU_IS_LOST) {
		b->gpus[index].lost = true;
		return colloc_diag_set(diag, -ENODEV,
				       "%s has fallen off the bus (%s%s: %s); it stays "
				       "unusable until it is reset",
				       label, what, fn, err);
	}
	return colloc_diag_set(diag, -EIO, "%s: %s%s: %s", label, what, fn, err);
}

/* GPU index if it can be asked, else the error saying why not. */
static int gpu_usable(struct nvml_backend *b, unsigned index, struct colloc_diag *diag)
{
	const struct nvml_gpu *g;
	char label[NVML_UUID_LEN + 32];

	if (index >= b->n_gpus)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "no GPU %u (NVML sees %u)",
				       index, b->n_gpus);
	g = &b->gpus[index];
	if (g->lost)
		return colloc_diag_set(diag, -ENODEV,
				       "%s has fallen off the bus; it stays unusable "
				       "until it is reset",
				       gpu_label(b, index, label, sizeof(label)));
	if (g->open_fn)
		return gpu_fail(b, index, "", g->open_fn, g->open_rc, diag);
	return 0;
}

/* Copy an NVML string of at most len bytes, terminated or not. */
static void copy_string(char *dst, size_t dst_len, const char *src, size_t len)
{
	size_t n = strnlen(src, len);

	if (n >= dst_len)
		n = dst_len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- open and close ----------------------------------------------------------- */

static int load_symbols(struct nvml_backend *b, struct colloc_diag *diag)
{
	bool mig = true;

	_Static_assert(sizeof(void *) == sizeof(nvml_void_fn),
		       "dlsym's object pointers must hold function pointers (POSIX)");
	for (size_t s = 0; s < sizeof(nvml_syms) / sizeof(nvml_syms[0]); s++) {
		const struct nvml_sym *sym = &nvml_syms[s];
		void *p = NULL;

		for (size_t j = 0; j < 3 && sym->names[j] && !p; j++)
			p = dlsym(b->lib, sym->names[j]);
		if (!p && (sym->flags & SYM_REQUIRED))
			return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
					       "%s: no %s%s%s (not NVML, or a driver "
					       "too old)",
					       b->lib_name, sym->names[0],
					       sym->names[1] ? " nor " : "",
					       sym->names[1] ? sym->names[1] : "");
		if (!p && (sym->flags & SYM_MIG))
			mig = false;
		/* dlsym returns an object pointer; POSIX guarantees it holds a
		 * function's address, and memcpy keeps -Wpedantic quiet. */
		memcpy((char *)&b->api + sym->offset, &p, sizeof(p));
	}
	if (!b->api.memory_v2 && !b->api.memory_v1)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: no nvmlDeviceGetMemoryInfo_v2 nor "
				       "nvmlDeviceGetMemoryInfo",
				       b->lib_name);
	if (!mig) {
		/* MIG needs all five; a driver with some is not one to trust
		 * with the others. */
		b->api.mig_mode = NULL;
		b->api.mig_max = NULL;
		b->api.mig_handle = NULL;
		b->api.gi_id = NULL;
		b->api.ci_id = NULL;
	}
	return 0;
}

/* Handles, UUIDs, names and bus ids: fixed while the driver is loaded. A GPU
 * that fails here stays in the count, unusable, so that indices keep
 * matching nvidia-smi's and the other GPUs work. */
static void open_gpu(struct nvml_backend *b, unsigned index)
{
	struct nvml_gpu *g = &b->gpus[index];
	char buf[NVML_UUID_LEN]; /* the longer of the two */
	struct nvml_pci_info pci;
	int rc;

	rc = b->api.handle(index, &g->dev);
	if (rc != NVML_SUCCESS) {
		g->open_fn = "nvmlDeviceGetHandleByIndex";
		goto fail;
	}
	memset(buf, 0, sizeof(buf));
	rc = b->api.uuid(g->dev, buf, NVML_UUID_LEN);
	if (rc != NVML_SUCCESS) {
		g->open_fn = "nvmlDeviceGetUUID";
		goto fail;
	}
	copy_string(g->uuid, sizeof(g->uuid), buf, NVML_UUID_LEN);
	memset(buf, 0, sizeof(buf));
	rc = b->api.name(g->dev, buf, NVML_NAME_LEN);
	if (rc != NVML_SUCCESS) {
		g->open_fn = "nvmlDeviceGetName";
		goto fail;
	}
	copy_string(g->name, sizeof(g->name), buf, NVML_NAME_LEN);
	memset(&pci, 0, sizeof(pci));
	rc = b->api.pci(g->dev, &pci);
	if (rc != NVML_SUCCESS) {
		g->open_fn = "nvmlDeviceGetPciInfo";
		goto fail;
	}
	copy_string(g->bus_id, sizeof(g->bus_id), pci.bus_id, sizeof(pci.bus_id));
	return;
fail:
	g->open_rc = rc;
	if (rc == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
}

static void nvml_close(void *backend)
{
	struct nvml_backend *b = backend;

	if (!b)
		return;
	colloc__dcgm_close(b->dcgm);
	if (b->api.shutdown)
		(void)b->api.shutdown();
	if (b->lib)
		dlclose(b->lib);
	free(b->gpus);
	free(b->raw);
	free(b->all.v);
	free(b->kind.v);
	free(b->inst.v);
	free(b);
}

static int nvml_open(const char *args, void **backend, struct colloc_diag *diag)
{
	const char *path = getenv(NVML_LIBRARY_ENV);
	struct nvml_backend *b;
	char err[128];
	unsigned n = 0;
	int rc;

	if (args && *args)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "nvml takes no arguments (got '%.64s'); %s names "
				       "the library",
				       args, NVML_LIBRARY_ENV);
	if (!path || !*path)
		path = NVML_DEFAULT_LIBRARY;
	b = calloc(1, sizeof(*b));
	if (!b)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	snprintf(b->lib_name, sizeof(b->lib_name), "%s", path);
	/* RTLD_LOCAL: NVML's symbols stay out of the global namespace, where
	 * they could satisfy some other library's references by accident. */
	b->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!b->lib) {
		const char *why = dlerror();

		colloc_diag_printf(diag, "%s", why ? why : path);
		free(b);
		return COLLOC_ENOTFOUND;
	}
	rc = load_symbols(b, diag);
	if (rc < 0)
		goto fail;
	rc = b->api.init();
	if (rc != NVML_SUCCESS) {
		/* Nothing to shut down: init failed. */
		b->api.shutdown = NULL;
		rc = colloc_diag_set(diag, -EIO, "nvmlInit: %s",
				     nvml_error(b, rc, err, sizeof(err)));
		goto fail;
	}
	if (b->api.driver_version) {
		char ver[NVML_DRIVER_LEN] = "";

		if (b->api.driver_version(ver, sizeof(ver)) == NVML_SUCCESS)
			copy_string(b->driver, sizeof(b->driver), ver, sizeof(ver));
	}
	rc = b->api.count(&n);
	if (rc != NVML_SUCCESS) {
		rc = colloc_diag_set(diag, -EIO, "nvmlDeviceGetCount: %s",
				     nvml_error(b, rc, err, sizeof(err)));
		goto fail;
	}
	if (n > MAX_GPUS) {
		rc = colloc_diag_set(diag, COLLOC_ELIMIT,
				     "NVML reports %u GPUs; at most %d are supported", n,
				     MAX_GPUS);
		goto fail;
	}
	b->gpus = calloc(n ? n : 1, sizeof(*b->gpus));
	if (!b->gpus) {
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		goto fail;
	}
	b->n_gpus = n;
	for (unsigned i = 0; i < n; i++)
		open_gpu(b, i);
	b->dcgm = colloc__dcgm_open(b->dcgm_note, sizeof(b->dcgm_note));
	*backend = b;
	return 0;
fail:
	nvml_close(b);
	return rc;
}

static int nvml_count(void *backend, unsigned *n, struct colloc_diag *diag)
{
	const struct nvml_backend *b = backend;

	(void)diag;
	*n = b->n_gpus;
	return 0;
}

/* ---- memory and MIG ------------------------------------------------------------ */

struct mem_figures {
	uint64_t total, used, free;
	int64_t reserved; /* -1: counted in used (v1) */
};

/* Memory of a GPU or MIG device: the v2 query when the driver has it, v1
 * only when it does not. Returns NVML's code. */
static int read_memory(const struct nvml_backend *b, struct nvml_device_st *dev,
		       struct mem_figures *m, const char **fn)
{
	int rc;

	if (b->api.memory_v2) {
		struct nvml_memory_v2 v2;

		memset(&v2, 0, sizeof(v2));
		v2.version = NVML_MEMORY_V2_VERSION;
		*fn = "nvmlDeviceGetMemoryInfo_v2";
		rc = b->api.memory_v2(dev, &v2);
		if (rc != NVML_SUCCESS)
			return rc;
		m->total = v2.total;
		m->used = v2.used;
		m->free = v2.free;
		m->reserved = v2.reserved > INT64_MAX ? INT64_MAX : (int64_t)v2.reserved;
	} else {
		struct nvml_memory v1;

		memset(&v1, 0, sizeof(v1));
		*fn = "nvmlDeviceGetMemoryInfo";
		rc = b->api.memory_v1(dev, &v1);
		if (rc != NVML_SUCCESS)
			return rc;
		m->total = v1.total;
		m->used = v1.used;
		m->free = v1.free;
		m->reserved = -1;
	}
	return NVML_SUCCESS;
}

/* MIG on for GPU index? *on is false when the driver has no MIG or the GPU
 * cannot do it. */
static int mig_enabled(struct nvml_backend *b, unsigned index, bool *on, int *mode,
		       struct colloc_diag *diag)
{
	unsigned cur = 0, pending = 0;
	int rc;

	*on = false;
	*mode = -1;
	if (!b->api.mig_mode)
		return 0;
	rc = b->api.mig_mode(b->gpus[index].dev, &cur, &pending);
	if (rc == NVML_ERROR_NOT_SUPPORTED) {
		*mode = 0;
		return 0;
	}
	if (rc != NVML_SUCCESS)
		return gpu_fail(b, index, "", "nvmlDeviceGetMigMode", rc, diag);
	*on = cur == NVML_MIG_ENABLE;
	*mode = *on ? 1 : 0;
	return 0;
}

/* The MIG devices of GPU index (MIG on): handles[0 .. *n) and their NVML
 * indices. */
static int mig_handles(struct nvml_backend *b, unsigned index,
		       struct nvml_device_st **handles, unsigned *slots, unsigned *n,
		       struct colloc_diag *diag)
{
	unsigned max = 0;
	int rc;

	*n = 0;
	rc = b->api.mig_max(b->gpus[index].dev, &max);
	if (rc == NVML_ERROR_NOT_SUPPORTED)
		return 0;
	if (rc != NVML_SUCCESS)
		return gpu_fail(b, index, "", "nvmlDeviceGetMaxMigDeviceCount", rc, diag);
	if (max > MAX_MIG)
		max = MAX_MIG;
	for (unsigned i = 0; i < max; i++) {
		struct nvml_device_st *mig = NULL;

		rc = b->api.mig_handle(b->gpus[index].dev, i, &mig);
		if (rc == NVML_ERROR_NOT_FOUND)
			continue; /* an empty slot: instances need not be dense */
		if (rc != NVML_SUCCESS)
			return gpu_fail(b, index, "",
					"nvmlDeviceGetMigDeviceHandleByIndex", rc, diag);
		handles[*n] = mig;
		slots[*n] = i;
		(*n)++;
	}
	return 0;
}

/* Sum of the MIG devices' memory: for a GPU whose aggregate NVML refuses to
 * an unprivileged caller (it does in MIG mode). Memory outside any
 * instance is then in neither used nor free. */
static int mig_memory(struct nvml_backend *b, unsigned index, struct mem_figures *m,
		      struct colloc_diag *diag)
{
	struct nvml_device_st *h[MAX_MIG];
	unsigned slots[MAX_MIG], n;
	int rc = mig_handles(b, index, h, slots, &n, diag);

	if (rc < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	m->reserved = -1;
	for (unsigned k = 0; k < n; k++) {
		struct mem_figures one;
		const char *fn;
		char what[48];

		rc = read_memory(b, h[k], &one, &fn);
		if (rc != NVML_SUCCESS) {
			snprintf(what, sizeof(what), "MIG device %u: ", slots[k]);
			return gpu_fail(b, index, what, fn, rc, diag);
		}
		m->total += one.total;
		m->used += one.used;
		m->free += one.free;
	}
	return 0;
}

/* ---- info ------------------------------------------------------------------------ */

/* An optional figure: NVML_ERROR_NOT_SUPPORTED leaves it absent. */
static int optional(struct nvml_backend *b, unsigned index, const char *fn, int rc,
		    bool *have, struct colloc_diag *diag)
{
	*have = rc == NVML_SUCCESS;
	if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED)
		return 0;
	return gpu_fail(b, index, "", fn, rc, diag);
}

static int nvml_info(void *backend, unsigned index, struct colloc_gpu_info *out,
		     struct colloc_diag *diag)
{
	struct nvml_backend *b = backend;
	struct nvml_device_st *dev;
	struct mem_figures mem;
	const struct nvml_gpu *g;
	const char *fn;
	bool mig_on, have;
	int rc, mode;

	rc = gpu_usable(b, index, diag);
	if (rc < 0)
		return rc;
	g = &b->gpus[index];
	dev = g->dev;
	colloc_gpu_info_init(out);
	snprintf(out->uuid, sizeof(out->uuid), "%s", g->uuid);
	snprintf(out->name, sizeof(out->name), "%s", g->name);
	snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", g->bus_id);

	rc = read_memory(b, dev, &mem, &fn);
	if (rc == NVML_ERROR_NO_PERMISSION && b->api.mig_mode) {
		rc = mig_enabled(b, index, &mig_on, &mode, diag);
		if (rc < 0)
			return rc;
		if (!mig_on)
			return gpu_fail(b, index, "", fn, NVML_ERROR_NO_PERMISSION, diag);
		rc = mig_memory(b, index, &mem, diag);
		if (rc < 0)
			return rc;
	} else if (rc != NVML_SUCCESS) {
		return gpu_fail(b, index, "", fn, rc, diag);
	}
	out->mem_total_bytes = mem.total;
	out->mem_used_bytes = mem.used;
	out->mem_free_bytes = mem.free;
	out->mem_reserved_bytes = mem.reserved;

	rc = mig_enabled(b, index, &mig_on, &out->mig_mode, diag);
	if (rc < 0)
		return rc;
	if (b->api.util) {
		struct nvml_utilization u = {0, 0};

		/* NOT_SUPPORTED under MIG: absent, not 0 and not an error. */
		rc = optional(b, index, "nvmlDeviceGetUtilizationRates",
			      b->api.util(dev, &u), &have, diag);
		if (rc < 0)
			return rc;
		if (have)
			out->util_pct = u.gpu > 100 ? 100 : (int)u.gpu;
	}
	if (b->api.power) {
		unsigned mw = 0;

		rc = optional(b, index, "nvmlDeviceGetPowerUsage", b->api.power(dev, &mw),
			      &have, diag);
		if (rc < 0)
			return rc;
		if (have)
			out->power_mw = mw;
	}
	if (b->api.energy) {
		unsigned long long mj = 0;

		rc = optional(b, index, "nvmlDeviceGetTotalEnergyConsumption",
			      b->api.energy(dev, &mj), &have, diag);
		if (rc < 0)
			return rc;
		if (have)
			out->energy_mj = (int64_t)(mj & (unsigned long long)INT64_MAX);
	}
	colloc__dcgm_sample(b->dcgm, g->uuid, out);
	return 0;
}

/* ---- processes ------------------------------------------------------------------- */

/* Add (pid, bytes) to list: summed with an entry of the same pid when sum,
 * else the larger one kept. */
static int list_add(struct proc_list *l, int64_t pid, uint64_t bytes, bool sum)
{
	for (size_t k = 0; k < l->n; k++)
		if (l->v[k].pid == pid) {
			if (sum)
				l->v[k].used_bytes =
					bytes > UINT64_MAX - l->v[k].used_bytes
						? UINT64_MAX
						: l->v[k].used_bytes + bytes;
			else if (bytes > l->v[k].used_bytes)
				l->v[k].used_bytes = bytes;
			return 0;
		}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct colloc_gpu_process *v;

		if (cap > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].pid = pid;
	l->v[l->n].used_bytes = bytes;
	l->n++;
	return 0;
}

static int ensure_raw(struct nvml_backend *b, size_t bytes)
{
	void *p;

	if (bytes <= b->raw_bytes)
		return 0;
	p = realloc(b->raw, bytes);
	if (!p)
		return -ENOMEM;
	b->raw = p;
	b->raw_bytes = bytes;
	return 0;
}

/*
 * One process query of kind on dev (a GPU or a MIG device), its records
 * added to b->inst (summed by pid). Grows the buffer on
 * NVML_ERROR_INSUFFICIENT_SIZE, as the list may grow between two calls,
 * PROC_TRIES times at most. Returns NVML's code, or a negative error in
 * *err (then the code is meaningless).
 */
static int query_procs(struct nvml_backend *b, struct nvml_device_st *dev,
		       enum proc_kind kind, const char **fn, int *err)
{
	bool v1 = kind == PROC_COMPUTE && !b->api.procs;
	size_t stride =
		v1 ? sizeof(struct nvml_process_v1) : sizeof(struct nvml_process_v2);
	unsigned want = b->raw_bytes / stride > PROC_FIRST
				? (unsigned)(b->raw_bytes / stride)
				: PROC_FIRST;
	int rc = NVML_ERROR_INSUFFICIENT_SIZE;

	*err = 0;
	*fn = kind == PROC_MPS ? "nvmlDeviceGetMPSComputeRunningProcesses"
			       : "nvmlDeviceGetComputeRunningProcesses";
	for (int attempt = 0; attempt < PROC_TRIES; attempt++) {
		unsigned count = want;

		if (ensure_raw(b, (size_t)want * stride) < 0) {
			*err = -ENOMEM;
			return rc;
		}
		if (kind == PROC_MPS)
			rc = b->api.mps_procs(dev, &count, b->raw);
		else if (v1)
			rc = b->api.procs_v1(dev, &count, b->raw);
		else
			rc = b->api.procs(dev, &count, b->raw);
		if (rc == NVML_SUCCESS) {
			if (count > want)
				count = want; /* a driver that says more than it wrote */
			for (unsigned k = 0; k < count; k++) {
				unsigned pid;
				unsigned long long used;

				if (v1) {
					const struct nvml_process_v1 *p =
						(const struct nvml_process_v1 *)b->raw +
						k;

					pid = p->pid;
					used = p->used_gpu_memory;
				} else {
					const struct nvml_process_v2 *p =
						(const struct nvml_process_v2 *)b->raw +
						k;

					pid = p->pid;
					used = p->used_gpu_memory;
				}
				/* Unknown (WDDM, or no permission) counts as 0:
				 * the process is listed, its memory is in the
				 * GPU's used figure anyway. */
				if (used == NVML_VALUE_NOT_AVAILABLE_ULL)
					used = 0;
				if (list_add(&b->inst, pid, used, true) < 0) {
					*err = -ENOMEM;
					return rc;
				}
			}
			return rc;
		}
		if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
			return rc;
		/* count is what NVML needs now; leave room for a few more. */
		if (count < want)
			count = want;
		if (count >= MAX_PROCS) {
			*err = COLLOC_ELIMIT;
			return rc;
		}
		want = count + count / 2 + 8 > MAX_PROCS ? MAX_PROCS
							 : count + count / 2 + 8;
	}
	*err = COLLOC_ELIMIT;
	return rc;
}

/* The processes of kind on GPU index, merged into b->all (the larger figure
 * kept for a pid already there). */
static int gather(struct nvml_backend *b, unsigned index, enum proc_kind kind,
		  struct colloc_diag *diag)
{
	struct nvml_device_st *h[MAX_MIG];
	unsigned slots[MAX_MIG], n;
	const char *fn;
	bool mig_on;
	int rc, err, mode;

	b->inst.n = 0;
	rc = query_procs(b, b->gpus[index].dev, kind, &fn, &err);
	if (err == COLLOC_ELIMIT)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "GPU %u: %s: the process list kept growing past "
				       "the buffer (%d tries, at most %d processes)",
				       index, fn, PROC_TRIES, MAX_PROCS);
	if (err < 0)
		return colloc_diag_set(diag, err, "out of memory");
	if (rc == NVML_ERROR_NO_PERMISSION || rc == NVML_ERROR_NOT_SUPPORTED) {
		/* In MIG mode the GPU-wide list needs privileges; each MIG
		 * device answers for its own processes. */
		int rc2 = mig_enabled(b, index, &mig_on, &mode, diag);

		if (rc2 < 0)
			return rc2;
		if (mig_on) {
			rc2 = mig_handles(b, index, h, slots, &n, diag);
			if (rc2 < 0)
				return rc2;
			for (unsigned k = 0; k < n; k++) {
				char what[48];

				rc = query_procs(b, h[k], kind, &fn, &err);
				if (err == COLLOC_ELIMIT)
					return colloc_diag_set(
						diag, COLLOC_ELIMIT,
						"GPU %u MIG device %u: %s: the process "
						"list "
						"kept growing past the buffer",
						index, slots[k], fn);
				if (err < 0)
					return colloc_diag_set(diag, err,
							       "out of memory");
				if (rc != NVML_SUCCESS) {
					snprintf(what, sizeof(what),
						 "MIG device %u: ", slots[k]);
					return gpu_fail(b, index, what, fn, rc, diag);
				}
			}
			rc = NVML_SUCCESS;
		} else if (rc == NVML_ERROR_NOT_SUPPORTED) {
			/* A GPU that cannot list processes has none to list. */
			rc = NVML_SUCCESS;
		}
	}
	if (rc != NVML_SUCCESS)
		return gpu_fail(b, index, "", fn, rc, diag);
	for (size_t k = 0; k < b->inst.n; k++)
		if (list_add(&b->all, b->inst.v[k].pid, b->inst.v[k].used_bytes, false) <
		    0)
			return colloc_diag_set(diag, -ENOMEM, "out of memory");
	return 0;
}

static int nvml_processes(void *backend, unsigned index, struct colloc_gpu_process *procs,
			  size_t cap, size_t *n, struct colloc_diag *diag)
{
	struct nvml_backend *b = backend;
	int rc = gpu_usable(b, index, diag);

	if (rc < 0)
		return rc;
	b->all.n = 0;
	rc = gather(b, index, PROC_COMPUTE, diag);
	if (rc == 0 && b->api.mps_procs)
		rc = gather(b, index, PROC_MPS, diag);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < b->all.n && k < cap; k++)
		procs[k] = b->all.v[k];
	*n = b->all.n;
	return 0;
}

/* ---- MIG instances ----------------------------------------------------------------- */

static int read_instance(struct nvml_backend *b, unsigned index, unsigned slot,
			 struct nvml_device_st *mig, struct colloc_gpu_mig_instance *out,
			 struct colloc_diag *diag)
{
	char buf[NVML_UUID_LEN]; /* the longer of the two */
	struct mem_figures mem;
	const char *fn;
	char what[48];
	int rc;

	snprintf(what, sizeof(what), "MIG device %u: ", slot);
	memset(out, 0, sizeof(*out));
	out->index = slot;
	memset(buf, 0, sizeof(buf));
	fn = "nvmlDeviceGetUUID";
	rc = b->api.uuid(mig, buf, NVML_UUID_LEN);
	if (rc != NVML_SUCCESS)
		goto fail;
	copy_string(out->uuid, sizeof(out->uuid), buf, NVML_UUID_LEN);
	memset(buf, 0, sizeof(buf));
	fn = "nvmlDeviceGetName";
	rc = b->api.name(mig, buf, NVML_NAME_LEN);
	if (rc != NVML_SUCCESS)
		goto fail;
	copy_string(out->name, sizeof(out->name), buf, NVML_NAME_LEN);
	rc = read_memory(b, mig, &mem, &fn);
	if (rc != NVML_SUCCESS)
		goto fail;
	out->mem_total_bytes = mem.total;
	out->mem_used_bytes = mem.used;
	out->mem_free_bytes = mem.free;
	fn = "nvmlDeviceGetGpuInstanceId";
	rc = b->api.gi_id(mig, &out->gi_id);
	if (rc != NVML_SUCCESS)
		goto fail;
	fn = "nvmlDeviceGetComputeInstanceId";
	rc = b->api.ci_id(mig, &out->ci_id);
	if (rc != NVML_SUCCESS)
		goto fail;
	return 0;
fail:
	return gpu_fail(b, index, what, fn, rc, diag);
}

static int nvml_mig_instances(void *backend, unsigned index,
			      struct colloc_gpu_mig_instance *out, size_t cap, size_t *n,
			      struct colloc_diag *diag)
{
	struct nvml_backend *b = backend;
	struct nvml_device_st *h[MAX_MIG];
	unsigned slots[MAX_MIG], count;
	bool on;
	int rc, mode;

	rc = gpu_usable(b, index, diag);
	if (rc < 0)
		return rc;
	*n = 0;
	rc = mig_enabled(b, index, &on, &mode, diag);
	if (rc < 0 || !on)
		return rc;
	rc = mig_handles(b, index, h, slots, &count, diag);
	if (rc < 0)
		return rc;
	for (unsigned k = 0; k < count && k < cap; k++) {
		rc = read_instance(b, index, slots[k], h[k], &out[k], diag);
		if (rc < 0)
			return rc;
	}
	*n = count;
	return 0;
}

static void nvml_describe(void *backend, char *buf, size_t len)
{
	const struct nvml_backend *b = backend;

	snprintf(buf, len, "NVML (%s%s%s), %u GPU%s; DCGM profiling metrics: %s",
		 b->lib_name, b->driver[0] ? ", driver " : "", b->driver, b->n_gpus,
		 b->n_gpus == 1 ? "" : "s", b->dcgm_note);
}

const struct colloc_gpu_backend_ops colloc__gpu_nvml_ops = {
	.name = "nvml",
	.open = nvml_open,
	.close = nvml_close,
	.count = nvml_count,
	.info = nvml_info,
	.processes = nvml_processes,
	.job_env = NULL,
	.mig_instances = nvml_mig_instances,
	.describe = nvml_describe,
};
