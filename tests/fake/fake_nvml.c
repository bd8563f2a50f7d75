/*
 * fake_nvml.c — a stand-in libnvidia-ml.so.1 driven by a scenario file
 * ($FAKE_NVML_SCENARIO, README.md), so that colloc's nvml backend is tested
 * through dlopen() exactly as on a machine with NVIDIA GPUs.
 *
 * Built three times (tests/CMakeLists.txt), each a libnvidia-ml.so.1 in a
 * directory of its own, exporting the functions of a driver generation:
 *   FAKE_NVML_API 3 "full":    every name the backend knows, old and new
 *                              alike, as today's drivers export them
 *   FAKE_NVML_API 2 "older":   no _v3 calls, no nvmlDeviceGetMemoryInfo_v2
 *   FAKE_NVML_API 1 "minimal": only the required functions, unversioned
 *                              where NVML has an unversioned name
 * and nothing else (everything not NVML is hidden). Declarations are this
 * file's own, written from the NVML API reference like the backend's, and
 * checked against the reference's numbers (sizes, version words) rather
 * than against the backend.
 *
 * Every call appends "NAME RC" to $FAKE_NVML_LOG when that is set.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scenario.h"

#ifndef FAKE_NVML_API
#define FAKE_NVML_API 3
#endif

#define FAKE_API __attribute__((visibility("default")))

/* nvmlReturn_t values used here (NVML API reference). */
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN 999

struct nvmlDevice_st {
	int gpu;
	int slot; /* MIG device index, -1 for the GPU itself */
};
typedef struct nvmlDevice_st *nvml_device;

struct fake_memory {
	unsigned long long total, free, used;
};

struct fake_memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

/* nvmlMemory_v2: sizeof(nvmlMemory_v2_t) = 40 on LP64, | 2 << 24. Written
 * out as a number so that a wrong struct here cannot agree with a wrong
 * struct in the backend. */
#define FAKE_MEMORY_V2_VERSION 0x02000028u
_Static_assert(sizeof(struct fake_memory_v2) == 40, "nvmlMemory_v2_t is 40 bytes");

struct fake_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct fake_util {
	unsigned int gpu, memory;
};

struct fake_proc_v1 {
	unsigned int pid;
	unsigned long long used;
};

struct fake_proc_v2 {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance_id, compute_instance_id;
};
_Static_assert(sizeof(struct fake_proc_v1) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
_Static_assert(sizeof(struct fake_proc_v2) == 24, "nvmlProcessInfo_v2_t is 24 bytes");

static struct fake_scenario sc;
static int init_count;
static struct nvmlDevice_st handles[FAKE_MAX_GPUS];
#if FAKE_NVML_API >= 2
static struct nvmlDevice_st mig_handles[FAKE_MAX_GPUS][FAKE_MAX_MIG];
#endif
static uint32_t global_calls[8];

/* Exported: prototypes first, for -Wmissing-prototypes. */
FAKE_API int nvmlShutdown(void);
FAKE_API int nvmlDeviceGetUUID(nvml_device dev, char *buf, unsigned int len);
FAKE_API int nvmlDeviceGetName(nvml_device dev, char *buf, unsigned int len);
FAKE_API int nvmlDeviceGetPciInfo_v2(nvml_device dev, struct fake_pci *pci);
FAKE_API int nvmlDeviceGetMemoryInfo(nvml_device dev, struct fake_memory *m);
FAKE_API int nvmlDeviceGetComputeRunningProcesses(nvml_device dev, unsigned int *count,
						  struct fake_proc_v1 *infos);
#if FAKE_NVML_API >= 2
FAKE_API int nvmlInit_v2(void);
FAKE_API const char *nvmlErrorString(int rc);
FAKE_API int nvmlSystemGetDriverVersion(char *buf, unsigned int len);
FAKE_API int nvmlDeviceGetCount_v2(unsigned int *n);
FAKE_API int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device *dev);
FAKE_API int nvmlDeviceGetUtilizationRates(nvml_device dev, struct fake_util *u);
FAKE_API int nvmlDeviceGetPowerUsage(nvml_device dev, unsigned int *mw);
FAKE_API int nvmlDeviceGetTotalEnergyConsumption(nvml_device dev, unsigned long long *mj);
FAKE_API int nvmlDeviceGetComputeRunningProcesses_v2(nvml_device dev, unsigned int *count,
						     struct fake_proc_v2 *infos);
FAKE_API int nvmlDeviceGetMPSComputeRunningProcesses_v2(nvml_device dev,
							unsigned int *count,
							struct fake_proc_v2 *infos);
FAKE_API int nvmlDeviceGetMigMode(nvml_device dev, unsigned int *cur,
				  unsigned int *pending);
FAKE_API int nvmlDeviceGetMaxMigDeviceCount(nvml_device dev, unsigned int *n);
FAKE_API int nvmlDeviceGetMigDeviceHandleByIndex(nvml_device dev, unsigned int index,
						 nvml_device *mig);
FAKE_API int nvmlDeviceGetGpuInstanceId(nvml_device dev, unsigned int *id);
FAKE_API int nvmlDeviceGetComputeInstanceId(nvml_device dev, unsigned int *id);
#endif
/* Exported by every generation: the older ones only have these names. */
FAKE_API int nvmlInit(void);
FAKE_API int nvmlDeviceGetCount(unsigned int *n);
FAKE_API int nvmlDeviceGetHandleByIndex(unsigned int index, nvml_device *dev);
#if FAKE_NVML_API >= 3
FAKE_API int nvmlDeviceGetPciInfo_v3(nvml_device dev, struct fake_pci *pci);
FAKE_API int nvmlDeviceGetMemoryInfo_v2(nvml_device dev, struct fake_memory_v2 *m);
FAKE_API int nvmlDeviceGetComputeRunningProcesses_v3(nvml_device dev, unsigned int *count,
						     struct fake_proc_v2 *infos);
FAKE_API int nvmlDeviceGetMPSComputeRunningProcesses_v3(nvml_device dev,
							unsigned int *count,
							struct fake_proc_v2 *infos);
#endif

static int ret(const char *fn, int rc)
{
	fake_log(fn, rc);
	return rc;
}

/* The GPU a handle stands for, or -1 for a handle that is not ours. */
static int gpu_of(nvml_device dev)
{
	if (!dev || dev->gpu < 0 || (unsigned)dev->gpu >= sc.n_gpus)
		return -1;
	return dev->gpu;
}

/* The scripted error for a device call now, or 0. */
static int dev_error(const char *fn, nvml_device dev)
{
	int g = gpu_of(dev);

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (g < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	return fake_error(&sc, g, dev->slot, fn, fake_step(&sc, (unsigned)g));
}

/* The scripted error for a call that names no device: its step is how many
 * times it was called before. */
static int global_error(const char *fn, unsigned slot)
{
	uint32_t step = global_calls[slot]++;

	return fake_error(&sc, -1, FAKE_WHOLE_GPU, fn, step);
}

static int do_init(const char *fn)
{
	int rc;

	if (init_count == 0) {
		memset(global_calls, 0, sizeof(global_calls));
		if (fake_scenario_load(&sc) < 0)
			return ret(fn, NVML_ERROR_UNKNOWN);
	}
	rc = global_error(fn, 0);
	if (rc)
		return ret(fn, rc);
	init_count++;
	return ret(fn, NVML_SUCCESS);
}

int nvmlInit(void)
{
	return do_init(__func__);
}

int nvmlShutdown(void)
{
	if (init_count == 0)
		return ret(__func__, NVML_ERROR_UNINITIALIZED);
	init_count--;
	return ret(__func__, global_error(__func__, 3));
}

static int do_count(const char *fn, unsigned int *n)
{
	int rc;

	if (init_count == 0)
		return ret(fn, NVML_ERROR_UNINITIALIZED);
	rc = global_error(fn, 1);
	if (rc)
		return ret(fn, rc);
	if (!n)
		return ret(fn, NVML_ERROR_INVALID_ARGUMENT);
	*n = sc.count >= 0 ? (unsigned)sc.count : sc.n_gpus;
	return ret(fn, NVML_SUCCESS);
}

int nvmlDeviceGetCount(unsigned int *n)
{
	return do_count(__func__, n);
}

static int do_handle(const char *fn, unsigned int index, nvml_device *dev)
{
	int rc;

	if (init_count == 0)
		return ret(fn, NVML_ERROR_UNINITIALIZED);
	if (!dev || index >= sc.n_gpus)
		return ret(fn, NVML_ERROR_INVALID_ARGUMENT);
	rc = fake_error(&sc, (int)index, FAKE_WHOLE_GPU, fn, fake_step(&sc, index));
	if (rc)
		return ret(fn, rc);
	handles[index].gpu = (int)index;
	handles[index].slot = -1;
	*dev = &handles[index];
	return ret(fn, NVML_SUCCESS);
}

int nvmlDeviceGetHandleByIndex(unsigned int index, nvml_device *dev)
{
	return do_handle(__func__, index, dev);
}

/* Copy s into buf of len bytes as NVML does: INSUFFICIENT_SIZE if it does
 * not fit with its terminator. */
static int put_string(char *buf, unsigned int len, const char *s)
{
	size_t n = strlen(s);

	if (!buf || n + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n + 1);
	return NVML_SUCCESS;
}

static const struct fake_mig *mig_of(nvml_device dev)
{
	if (dev->slot < 0)
		return NULL;
	return &sc.gpus[dev->gpu].migs[dev->slot];
}

int nvmlDeviceGetUUID(nvml_device dev, char *buf, unsigned int len)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	return ret(__func__,
		   put_string(buf, len,
			      mig_of(dev) ? mig_of(dev)->uuid : sc.gpus[dev->gpu].uuid));
}

int nvmlDeviceGetName(nvml_device dev, char *buf, unsigned int len)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	return ret(__func__,
		   put_string(buf, len,
			      mig_of(dev) ? mig_of(dev)->name : sc.gpus[dev->gpu].name));
}

static int do_pci(const char *fn, nvml_device dev, struct fake_pci *pci)
{
	int rc = dev_error(fn, dev);

	if (rc)
		return ret(fn, rc);
	if (!pci)
		return ret(fn, NVML_ERROR_INVALID_ARGUMENT);
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", sc.gpus[dev->gpu].bus);
	/* busIdLegacy is the same tuple with a 4-digit domain. */
	snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), "%s",
		 strlen(sc.gpus[dev->gpu].bus) > 4 ? sc.gpus[dev->gpu].bus + 4 : "");
	return ret(fn, NVML_SUCCESS);
}

int nvmlDeviceGetPciInfo_v2(nvml_device dev, struct fake_pci *pci)
{
	return do_pci(__func__, dev, pci);
}

/* Memory of dev now. A query on a GPU (not a MIG device) advances that
 * GPU's step: the Nth query sees step N-1. */
/* The pid in the file at path (a job wrote it), or 0 when there is none. */
static unsigned pid_from_file(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%u", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid;
}

static int memory(const char *fn, nvml_device dev, uint64_t *total, uint64_t *reserved,
		  uint64_t *used)
{
	const struct fake_mig *m;
	struct fake_at v;
	int rc;

	if (gpu_of(dev) >= 0 && dev->slot < 0 && init_count > 0)
		sc.gpus[dev->gpu].mem_calls++;
	rc = dev_error(fn, dev);
	if (rc)
		return rc;
	m = mig_of(dev);
	if (m) {
		*total = m->total;
		*reserved = 0;
		*used = m->used;
		return NVML_SUCCESS;
	}
	fake_values(&sc, (unsigned)dev->gpu, fake_step(&sc, (unsigned)dev->gpu), &v);
	*total = sc.gpus[dev->gpu].total;
	*reserved = sc.gpus[dev->gpu].reserved;
	*used = v.used;
	return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(nvml_device dev, struct fake_memory *m)
{
	uint64_t total, reserved, used;
	int rc = memory(__func__, dev, &total, &reserved, &used);

	if (rc)
		return ret(__func__, rc);
	if (!m)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	/* v1 counts what the driver reserves as used. */
	m->total = total;
	m->used = used + reserved;
	m->free = total - m->used;
	return ret(__func__, NVML_SUCCESS);
}

/* Fill count records of stride bytes from the scripted processes of dev of
 * the kind asked. */
static int processes(const char *fn, nvml_device dev, bool mps, unsigned int *count,
		     void *infos, bool v1)
{
	unsigned n = 0, cap;
	uint32_t step;
	int rc = dev_error(fn, dev);

	if (rc == NVML_ERROR_INSUFFICIENT_SIZE && count) {
		/* Scripted: a list that grows faster than any buffer. */
		*count = *count > UINT_MAX / 2 ? UINT_MAX : *count * 2 + 1;
		return ret(fn, rc);
	}
	if (rc)
		return ret(fn, rc);
	if (!count || (*count && !infos))
		return ret(fn, NVML_ERROR_INVALID_ARGUMENT);
	cap = *count;
	step = fake_step(&sc, (unsigned)dev->gpu);
	for (unsigned k = 0; k < sc.n_procs; k++) {
		const struct fake_proc *p = &sc.procs[k];
		unsigned pid = p->pid;

		if ((int)p->gpu != dev->gpu || p->mps != mps || step < p->from ||
		    step >= p->until)
			continue;
		if (p->pidfile[0] && (pid = pid_from_file(p->pidfile)) == 0)
			continue;
		/* A MIG device lists its own processes; the GPU lists all. */
		if (dev->slot >= 0 && p->slot != dev->slot)
			continue;
		if (n < cap) {
			unsigned long long used =
				p->used == UINT64_MAX ? ULLONG_MAX : p->used;

			if (v1) {
				struct fake_proc_v1 *r = (struct fake_proc_v1 *)infos + n;

				r->pid = pid;
				r->used = used;
			} else {
				struct fake_proc_v2 *r = (struct fake_proc_v2 *)infos + n;
				const struct fake_mig *m =
					p->slot >= 0 ? &sc.gpus[p->gpu].migs[p->slot]
						     : NULL;

				r->pid = pid;
				r->used = used;
				r->gpu_instance_id = m ? m->gi : 0xFFFFFFFFu;
				r->compute_instance_id = m ? m->ci : 0xFFFFFFFFu;
			}
		}
		n++;
	}
	*count = n;
	return ret(fn, n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS);
}

int nvmlDeviceGetComputeRunningProcesses(nvml_device dev, unsigned int *count,
					 struct fake_proc_v1 *infos)
{
	return processes(__func__, dev, false, count, infos, true);
}

#if FAKE_NVML_API >= 2
int nvmlInit_v2(void)
{
	return do_init(__func__);
}

const char *nvmlErrorString(int rc)
{
	/* Logged with the code asked about. */
	fake_log(__func__, rc);
	switch (rc) {
	case 0:
		return "Success";
	case 1:
		return "Uninitialized";
	case 2:
		return "Invalid Argument";
	case 3:
		return "Not Supported";
	case 4:
		return "Insufficient Permissions";
	case 6:
		return "Not Found";
	case 7:
		return "Insufficient Size";
	case 9:
		return "Driver Not Loaded";
	case 15:
		return "GPU is lost";
	case 25:
		return "Argument version mismatch";
	default:
		return "Unknown Error";
	}
}

int nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	int rc;

	if (init_count == 0)
		return ret(__func__, NVML_ERROR_UNINITIALIZED);
	rc = global_error(__func__, 2);
	if (rc)
		return ret(__func__, rc);
	return ret(__func__, put_string(buf, len, sc.driver));
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	return do_count(__func__, n);
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device *dev)
{
	return do_handle(__func__, index, dev);
}

int nvmlDeviceGetUtilizationRates(nvml_device dev, struct fake_util *u)
{
	struct fake_at v;
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!u)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	/* NVML: "On MIG-enabled GPUs, querying device utilization rates is not
	 * currently supported." */
	if (sc.gpus[dev->gpu].mig == 1 || dev->slot >= 0)
		return ret(__func__, NVML_ERROR_NOT_SUPPORTED);
	fake_values(&sc, (unsigned)dev->gpu, fake_step(&sc, (unsigned)dev->gpu), &v);
	u->gpu = v.util;
	u->memory = v.mem_util;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetPowerUsage(nvml_device dev, unsigned int *mw)
{
	struct fake_at v;
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!mw)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	fake_values(&sc, (unsigned)dev->gpu, fake_step(&sc, (unsigned)dev->gpu), &v);
	*mw = v.power;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetTotalEnergyConsumption(nvml_device dev, unsigned long long *mj)
{
	struct fake_at v;
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!mj)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	fake_values(&sc, (unsigned)dev->gpu, fake_step(&sc, (unsigned)dev->gpu), &v);
	*mj = v.energy;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetComputeRunningProcesses_v2(nvml_device dev, unsigned int *count,
					    struct fake_proc_v2 *infos)
{
	return processes(__func__, dev, false, count, infos, false);
}

int nvmlDeviceGetMPSComputeRunningProcesses_v2(nvml_device dev, unsigned int *count,
					       struct fake_proc_v2 *infos)
{
	return processes(__func__, dev, true, count, infos, false);
}

int nvmlDeviceGetMigMode(nvml_device dev, unsigned int *cur, unsigned int *pending)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!cur || !pending)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	if (sc.gpus[dev->gpu].mig < 0 || dev->slot >= 0)
		return ret(__func__, NVML_ERROR_NOT_SUPPORTED);
	*cur = *pending = (unsigned)sc.gpus[dev->gpu].mig;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetMaxMigDeviceCount(nvml_device dev, unsigned int *n)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!n)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	/* "Returns zero if MIG is not supported or enabled." */
	*n = sc.gpus[dev->gpu].mig == 1 ? sc.gpus[dev->gpu].mig_max : 0;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetMigDeviceHandleByIndex(nvml_device dev, unsigned int index,
					nvml_device *mig)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!mig || dev->slot >= 0)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	if (sc.gpus[dev->gpu].mig != 1)
		return ret(__func__, NVML_ERROR_NOT_SUPPORTED);
	if (index >= FAKE_MAX_MIG || !sc.gpus[dev->gpu].migs[index].present)
		return ret(__func__, NVML_ERROR_NOT_FOUND);
	mig_handles[dev->gpu][index].gpu = dev->gpu;
	mig_handles[dev->gpu][index].slot = (int)index;
	*mig = &mig_handles[dev->gpu][index];
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetGpuInstanceId(nvml_device dev, unsigned int *id)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!id)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	if (dev->slot < 0)
		return ret(__func__, NVML_ERROR_NOT_SUPPORTED);
	*id = mig_of(dev)->gi;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetComputeInstanceId(nvml_device dev, unsigned int *id)
{
	int rc = dev_error(__func__, dev);

	if (rc)
		return ret(__func__, rc);
	if (!id)
		return ret(__func__, NVML_ERROR_INVALID_ARGUMENT);
	if (dev->slot < 0)
		return ret(__func__, NVML_ERROR_NOT_SUPPORTED);
	*id = mig_of(dev)->ci;
	return ret(__func__, NVML_SUCCESS);
}
#endif

#if FAKE_NVML_API >= 3
int nvmlDeviceGetPciInfo_v3(nvml_device dev, struct fake_pci *pci)
{
	return do_pci(__func__, dev, pci);
}

int nvmlDeviceGetMemoryInfo_v2(nvml_device dev, struct fake_memory_v2 *m)
{
	uint64_t total, reserved, used;
	int rc;

	/* The check this fake exists for: nvmlMemory_v2, not 2. */
	if (!m || m->version != FAKE_MEMORY_V2_VERSION) {
		if (gpu_of(dev) >= 0 && dev->slot < 0)
			sc.gpus[dev->gpu].mem_calls++;
		return ret(__func__, m ? NVML_ERROR_ARGUMENT_VERSION_MISMATCH
				       : NVML_ERROR_INVALID_ARGUMENT);
	}
	rc = memory(__func__, dev, &total, &reserved, &used);
	if (rc)
		return ret(__func__, rc);
	m->total = total;
	m->reserved = reserved;
	m->used = used;
	m->free = total - reserved - used;
	return ret(__func__, NVML_SUCCESS);
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvml_device dev, unsigned int *count,
					    struct fake_proc_v2 *infos)
{
	return processes(__func__, dev, false, count, infos, false);
}

int nvmlDeviceGetMPSComputeRunningProcesses_v3(nvml_device dev, unsigned int *count,
					       struct fake_proc_v2 *infos)
{
	return processes(__func__, dev, true, count, infos, false);
}
#endif
