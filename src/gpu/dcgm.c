/*
 * dcgm.c — DCGM's profiling ratios for the nvml backend (gpu/dcgm_int.h):
 * graphics-engine, SM, SM-occupancy, tensor-pipe and DRAM activity, which
 * NVML does not give and which tell a compute-bound job from one that only
 * holds memory.
 *
 * libdcgm is loaded with dlopen() at run time like libnvidia-ml, its few
 * types and functions declared below from DCGM's public headers
 * (github.com/NVIDIA/DCGM, dcgmlib/dcgm_agent.h, dcgm_structs.h and
 * dcgm_fields.h; the DCGM API reference at docs.nvidia.com/datacenter/dcgm/).
 * It is deliberately small: one GPU group (all GPUs), one field group (the
 * five ratios and the UUID, to match DCGM's GPU ids to NVML's GPUs), one
 * watch, and one query per GPU per sample. Whatever fails, the ratios stay
 * absent and the GPUs keep working through NVML.
 *
 * Not here: health checks, policies, DCGM's own process statistics, MIG
 * instances' metrics (DCGM's GPU_I entities).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/dcgm_int.h"

/* ---- DCGM's declarations, from its public headers ------------------------- */

/* dcgmReturn_t (dcgm_structs.h): an enum, passed as int. */
#define DCGM_ST_OK 0

/* dcgmOperationMode_t: DCGM_OPERATION_MODE_AUTO = 1, the embedded host
 * engine updating watched fields by itself (MANUAL = 2 would need
 * dcgmUpdateAllFields on every sample). */
#define DCGM_OPERATION_MODE_AUTO 1
/* dcgmGroupType_t: DCGM_GROUP_DEFAULT = 0, "all the GPUs on the node". */
#define DCGM_GROUP_DEFAULT 0
/* DCGM_MAX_NUM_DEVICES is 32 since DCGM 2.0 (16 before); the list we pass
 * is larger so that a future DCGM with more cannot overrun it. */
#define DCGM_MAX_NUM_DEVICES 32
#define GPU_ID_LIST 256

/* Field ids (dcgm_fields.h). */
#define DCGM_FI_DEV_UUID 54
#define DCGM_FI_PROF_GR_ENGINE_ACTIVE 1001
#define DCGM_FI_PROF_SM_ACTIVE 1002
#define DCGM_FI_PROF_SM_OCCUPANCY 1003
#define DCGM_FI_PROF_PIPE_TENSOR_ACTIVE 1004
#define DCGM_FI_PROF_DRAM_ACTIVE 1005
/* Field types: DCGM_FT_DOUBLE 'd', DCGM_FT_STRING 's'. */
#define DCGM_FT_DOUBLE 'd'
#define DCGM_FT_STRING 's'
/* A double at or above DCGM_FP64_BLANK (2^47) is one of DCGM's "blank"
 * markers (no data, not found, not supported, no permission). */
#define DCGM_FP64_BLANK 140737488355328.0

/* DCGM_MAX_STR_LENGTH 256 and DCGM_MAX_BLOB_LENGTH 4096. */
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096

/* dcgmFieldValue_v1, the same in DCGM 2.x and 4.x headers; what
 * dcgmGetLatestValuesForFields fills. */
struct dcgm_field_value_v1 {
	unsigned int version;
	unsigned short field_id;
	unsigned short field_type;
	int status;
	int64_t ts;
	union {
		int64_t i64;
		double dbl;
		char str[DCGM_MAX_STR_LENGTH];
		char blob[DCGM_MAX_BLOB_LENGTH];
	} value;
};

/* dcgmFieldValue_version1 = MAKE_DCGM_VERSION(dcgmFieldValue_v1, 1) =
 * sizeof | 1 << 24. DCGM sets it on the way out; we set it on the way in
 * too, as with every versioned DCGM struct. */
#define DCGM_FIELD_VALUE_VERSION1 \
	((unsigned int)(sizeof(struct dcgm_field_value_v1) | (1u << 24)))

_Static_assert(sizeof(struct dcgm_field_value_v1) == 4120,
	       "dcgmFieldValue_v1 is 4 + 2 + 2 + 4 (+4 padding) + 8 + 4096 bytes");

/* dcgmHandle_t, dcgmGpuGrp_t and dcgmFieldGrp_t are uintptr_t. */
typedef int (*dcgm_void_fn)(void);
typedef const char *(*dcgm_error_string_fn)(int result);
typedef int (*dcgm_connect_fn)(const char *address, uintptr_t *handle);
typedef int (*dcgm_handle_fn)(uintptr_t handle);
typedef int (*dcgm_start_embedded_fn)(int mode, uintptr_t *handle);
typedef int (*dcgm_devices_fn)(uintptr_t handle, unsigned int *ids, int *count);
typedef int (*dcgm_group_create_fn)(uintptr_t handle, int type, const char *name,
				    uintptr_t *group);
typedef int (*dcgm_destroy_fn)(uintptr_t handle, uintptr_t group);
typedef int (*dcgm_field_group_create_fn)(uintptr_t handle, int n,
					  const unsigned short *fields, const char *name,
					  uintptr_t *group);
typedef int (*dcgm_watch_fn)(uintptr_t handle, uintptr_t group, uintptr_t fields,
			     long long update_us, double max_keep_s,
			     int max_keep_samples);
typedef int (*dcgm_update_fn)(uintptr_t handle, int wait);
typedef int (*dcgm_latest_fn)(uintptr_t handle, int gpu_id, unsigned short *fields,
			      unsigned int count, struct dcgm_field_value_v1 *values);

struct dcgm_api {
	dcgm_void_fn init;
	dcgm_void_fn shutdown;
	dcgm_error_string_fn error_string;
	dcgm_connect_fn connect;
	dcgm_handle_fn disconnect;
	dcgm_start_embedded_fn start_embedded;
	dcgm_handle_fn stop_embedded;
	dcgm_devices_fn devices;
	dcgm_group_create_fn group_create;
	dcgm_destroy_fn group_destroy;
	dcgm_field_group_create_fn field_group_create;
	dcgm_destroy_fn field_group_destroy;
	dcgm_watch_fn watch;
	dcgm_update_fn update_all;
	dcgm_latest_fn latest;
};

#define SYM_REQUIRED 1u

static const struct dcgm_sym {
	size_t offset;
	unsigned flags;
	const char *name;
} dcgm_syms[] = {
	{offsetof(struct dcgm_api, init), SYM_REQUIRED, "dcgmInit"},
	{offsetof(struct dcgm_api, shutdown), SYM_REQUIRED, "dcgmShutdown"},
	/* Exported unprefixed (dcgm_agent.h: errorString). */
	{offsetof(struct dcgm_api, error_string), 0, "errorString"},
	/* A pair each; one pair is required (checked after). */
	{offsetof(struct dcgm_api, connect), 0, "dcgmConnect"},
	{offsetof(struct dcgm_api, disconnect), 0, "dcgmDisconnect"},
	{offsetof(struct dcgm_api, start_embedded), 0, "dcgmStartEmbedded"},
	{offsetof(struct dcgm_api, stop_embedded), 0, "dcgmStopEmbedded"},
	{offsetof(struct dcgm_api, devices), SYM_REQUIRED, "dcgmGetAllSupportedDevices"},
	{offsetof(struct dcgm_api, group_create), SYM_REQUIRED, "dcgmGroupCreate"},
	{offsetof(struct dcgm_api, group_destroy), SYM_REQUIRED, "dcgmGroupDestroy"},
	{offsetof(struct dcgm_api, field_group_create), SYM_REQUIRED,
	 "dcgmFieldGroupCreate"},
	{offsetof(struct dcgm_api, field_group_destroy), SYM_REQUIRED,
	 "dcgmFieldGroupDestroy"},
	{offsetof(struct dcgm_api, watch), SYM_REQUIRED, "dcgmWatchFields"},
	{offsetof(struct dcgm_api, update_all), SYM_REQUIRED, "dcgmUpdateAllFields"},
	{offsetof(struct dcgm_api, latest), SYM_REQUIRED, "dcgmGetLatestValuesForFields"},
};

/* ---- the handle ------------------------------------------------------------- */

#define DCGM_LIBRARY_ENV "COLLOC_DCGM_LIBRARY"
/* The local nv-hostengine on its default port (DCGM_HE_PORT_NUMBER 5555). */
#define HOSTENGINE "127.0.0.1"
/* Sample once a second, as collocd does; keep a few seconds. */
#define WATCH_US 1000000LL
#define KEEP_S 10.0
#define KEEP_SAMPLES 4
#define N_RATIOS 5

static const unsigned short ratio_fields[N_RATIOS] = {
	DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE,
	DCGM_FI_PROF_SM_OCCUPANCY,     DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,
	DCGM_FI_PROF_DRAM_ACTIVE,
};

struct dcgm_gpu {
	unsigned id;
	char uuid[DCGM_MAX_STR_LENGTH]; /* "" until DCGM has given it */
};

struct colloc__dcgm {
	void *lib;
	struct dcgm_api api;
	uintptr_t handle, group, fields;
	bool connected, embedded, have_group, have_fields;
	struct dcgm_gpu *gpus;
	unsigned n_gpus;
	struct dcgm_field_value_v1 values[N_RATIOS]; /* 20 KiB: not on the stack */
};

const char *const *colloc__dcgm_symbol_names(size_t *n)
{
	static const char *names[sizeof(dcgm_syms) / sizeof(dcgm_syms[0]) + 1];

	for (size_t k = 0; k < sizeof(dcgm_syms) / sizeof(dcgm_syms[0]); k++)
		names[k] = dcgm_syms[k].name;
	if (n)
		*n = sizeof(dcgm_syms) / sizeof(dcgm_syms[0]);
	return names;
}

static const char *dcgm_error(const struct colloc__dcgm *d, int rc, char *buf, size_t len)
{
	const char *s = d->api.error_string ? d->api.error_string(rc) : NULL;

	if (s)
		snprintf(buf, len, "%s (DCGM error %d)", s, rc);
	else
		snprintf(buf, len, "DCGM error %d", rc);
	return buf;
}

static void *load_library(char *name, size_t name_len, char *note, size_t note_len)
{
	static const char *const defaults[] = {"libdcgm.so.4", "libdcgm.so.3",
					       "libdcgm.so"};
	const char *env = getenv(DCGM_LIBRARY_ENV);
	const char *why = NULL;
	void *lib = NULL;

	if (env && *env) {
		if (strcmp(env, "off") == 0) {
			snprintf(note, note_len, "off (%s=off)", DCGM_LIBRARY_ENV);
			return NULL;
		}
		snprintf(name, name_len, "%s", env);
		lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		why = lib ? NULL : dlerror();
	} else {
		for (size_t k = 0; k < sizeof(defaults) / sizeof(defaults[0]) && !lib;
		     k++) {
			snprintf(name, name_len, "%s", defaults[k]);
			lib = dlopen(defaults[k], RTLD_NOW | RTLD_LOCAL);
			if (!lib && !why)
				why = dlerror(); /* the first, most telling one */
			else if (!lib)
				(void)dlerror();
		}
	}
	if (!lib)
		snprintf(note, note_len, "off (no DCGM: %s)", why ? why : name);
	return lib;
}

static bool load_symbols(struct colloc__dcgm *d, const char *name, char *note,
			 size_t note_len)
{
	for (size_t k = 0; k < sizeof(dcgm_syms) / sizeof(dcgm_syms[0]); k++) {
		void *p = dlsym(d->lib, dcgm_syms[k].name);

		if (!p && (dcgm_syms[k].flags & SYM_REQUIRED)) {
			snprintf(note, note_len, "off (%s: no %s)", name,
				 dcgm_syms[k].name);
			return false;
		}
		/* POSIX: an object pointer from dlsym holds a function's
		 * address; memcpy keeps -Wpedantic quiet. */
		memcpy((char *)&d->api + dcgm_syms[k].offset, &p, sizeof(p));
	}
	if (!d->api.connect || !d->api.disconnect) {
		d->api.connect = NULL;
		d->api.disconnect = NULL;
	}
	if (!d->api.start_embedded || !d->api.stop_embedded) {
		d->api.start_embedded = NULL;
		d->api.stop_embedded = NULL;
	}
	if (!d->api.connect && !d->api.start_embedded) {
		snprintf(note, note_len,
			 "off (%s: neither dcgmConnect nor dcgmStartEmbedded)", name);
		return false;
	}
	return true;
}

/* DCGM's GPU ids are its own; its UUIDs are NVML's. Read the ones not yet
 * known (a value can be blank until DCGM's first update). */
static void map_uuids(struct colloc__dcgm *d)
{
	unsigned short field = DCGM_FI_DEV_UUID;

	for (unsigned k = 0; k < d->n_gpus; k++) {
		struct dcgm_field_value_v1 *v = &d->values[0];

		if (d->gpus[k].uuid[0])
			continue;
		memset(v, 0, sizeof(*v));
		v->version = DCGM_FIELD_VALUE_VERSION1;
		if (d->api.latest(d->handle, (int)d->gpus[k].id, &field, 1, v) !=
			    DCGM_ST_OK ||
		    v->status != DCGM_ST_OK || v->field_type != DCGM_FT_STRING)
			continue;
		v->value.str[sizeof(v->value.str) - 1] = '\0';
		/* DCGM's blank strings read "<<<NULL>>>", "<<<NOT_FOUND>>>"
		 * and so on (DCGM_STR_IS_BLANK); a UUID never starts with
		 * '<'. */
		if (v->value.str[0] && v->value.str[0] != '<')
			snprintf(d->gpus[k].uuid, sizeof(d->gpus[k].uuid), "%s",
				 v->value.str);
	}
}

void colloc__dcgm_close(struct colloc__dcgm *d)
{
	if (!d)
		return;
	if (d->connected) {
		if (d->have_fields)
			(void)d->api.field_group_destroy(d->handle, d->fields);
		if (d->have_group)
			(void)d->api.group_destroy(d->handle, d->group);
		if (d->embedded)
			(void)d->api.stop_embedded(d->handle);
		else
			(void)d->api.disconnect(d->handle);
	}
	(void)d->api.shutdown();
	/* libdcgm stays mapped: it starts threads and C++ runtime state that
	 * are not all safe to unmap (pydcgm never unloads it either); a later
	 * dlopen() finds the same copy. */
	free(d->gpus);
	free(d);
}

struct colloc__dcgm *colloc__dcgm_open(char *note, size_t note_len)
{
	unsigned short fields[1 + N_RATIOS];
	unsigned int ids[GPU_ID_LIST];
	struct colloc__dcgm *d;
	char name[128], err[128], gname[64];
	int count = 0, rc;

	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(note, note_len, "off (out of memory)");
		return NULL;
	}
	d->lib = load_library(name, sizeof(name), note, note_len);
	if (!d->lib) {
		free(d);
		return NULL;
	}
	if (!load_symbols(d, name, note, note_len)) {
		dlclose(d->lib);
		free(d);
		return NULL;
	}
	rc = d->api.init();
	if (rc != DCGM_ST_OK) {
		snprintf(note, note_len, "off (%s: dcgmInit: %s)", name,
			 dcgm_error(d, rc, err, sizeof(err)));
		free(d);
		return NULL;
	}
	/* A site's nv-hostengine first: it is shared with dcgm-exporter and
	 * already running as root, which profiling needs. Else our own. */
	rc = d->api.connect ? d->api.connect(HOSTENGINE, &d->handle) : -1;
	if (rc != DCGM_ST_OK) {
		if (!d->api.start_embedded) {
			snprintf(note, note_len, "off (%s: dcgmConnect %s: %s)", name,
				 HOSTENGINE, dcgm_error(d, rc, err, sizeof(err)));
			goto fail;
		}
		rc = d->api.start_embedded(DCGM_OPERATION_MODE_AUTO, &d->handle);
		if (rc != DCGM_ST_OK) {
			snprintf(note, note_len, "off (%s: dcgmStartEmbedded: %s)", name,
				 dcgm_error(d, rc, err, sizeof(err)));
			goto fail;
		}
		d->embedded = true;
	}
	d->connected = true;
	memset(ids, 0, sizeof(ids));
	rc = d->api.devices(d->handle, ids, &count);
	if (rc != DCGM_ST_OK || count < 0 || count > DCGM_MAX_NUM_DEVICES * 8) {
		snprintf(note, note_len, "off (%s: dcgmGetAllSupportedDevices: %s)", name,
			 rc != DCGM_ST_OK ? dcgm_error(d, rc, err, sizeof(err))
					  : "impossible GPU count");
		goto fail;
	}
	d->gpus = calloc(count ? (size_t)count : 1, sizeof(*d->gpus));
	if (!d->gpus) {
		snprintf(note, note_len, "off (out of memory)");
		goto fail;
	}
	d->n_gpus = (unsigned)count;
	for (unsigned k = 0; k < d->n_gpus; k++)
		d->gpus[k].id = ids[k];
	/* Names are unique per host engine, which other clients share. */
	snprintf(gname, sizeof(gname), "colloc-%ld", (long)getpid());
	rc = d->api.group_create(d->handle, DCGM_GROUP_DEFAULT, gname, &d->group);
	if (rc != DCGM_ST_OK) {
		snprintf(note, note_len, "off (%s: dcgmGroupCreate: %s)", name,
			 dcgm_error(d, rc, err, sizeof(err)));
		goto fail;
	}
	d->have_group = true;
	fields[0] = DCGM_FI_DEV_UUID;
	memcpy(fields + 1, ratio_fields, sizeof(ratio_fields));
	rc = d->api.field_group_create(d->handle, 1 + N_RATIOS, fields, gname,
				       &d->fields);
	if (rc != DCGM_ST_OK) {
		snprintf(note, note_len, "off (%s: dcgmFieldGroupCreate: %s)", name,
			 dcgm_error(d, rc, err, sizeof(err)));
		goto fail;
	}
	d->have_fields = true;
	/* Fails with DCGM_ST_PROFILING_NOT_SUPPORTED, _REQUIRES_ROOT or
	 * _PROFILING_MULTI_PASS on GPUs or set-ups that cannot give the five
	 * ratios together: then none. */
	rc = d->api.watch(d->handle, d->group, d->fields, WATCH_US, KEEP_S, KEEP_SAMPLES);
	if (rc != DCGM_ST_OK) {
		snprintf(note, note_len, "off (%s: dcgmWatchFields: %s)", name,
			 dcgm_error(d, rc, err, sizeof(err)));
		goto fail;
	}
	/* The first update comes with the next cycle; wait for one so that
	 * the UUIDs can be read now. */
	rc = d->api.update_all(d->handle, 1);
	if (rc != DCGM_ST_OK) {
		snprintf(note, note_len, "off (%s: dcgmUpdateAllFields: %s)", name,
			 dcgm_error(d, rc, err, sizeof(err)));
		goto fail;
	}
	map_uuids(d);
	snprintf(note, note_len, "on (%s, %s, %u GPU%s)", name,
		 d->embedded ? "embedded host engine" : "nv-hostengine at " HOSTENGINE,
		 d->n_gpus, d->n_gpus == 1 ? "" : "s");
	return d;
fail:
	colloc__dcgm_close(d);
	return NULL;
}

static double ratio(const struct dcgm_field_value_v1 *v, unsigned short field)
{
	double x = v->value.dbl;

	if (v->field_id != field || v->status != DCGM_ST_OK ||
	    v->field_type != DCGM_FT_DOUBLE || !isfinite(x) || x >= DCGM_FP64_BLANK ||
	    x < 0)
		return COLLOC_GPU_METRIC_ABSENT;
	return x > 1 ? 1 : x;
}

void colloc__dcgm_sample(struct colloc__dcgm *d, const char *uuid,
			 struct colloc_gpu_info *out)
{
	unsigned short fields[N_RATIOS];
	const struct dcgm_gpu *g = NULL;

	if (!d || !uuid[0])
		return;
	for (int pass = 0; pass < 2 && !g; pass++) {
		if (pass == 1)
			map_uuids(d);
		for (unsigned k = 0; k < d->n_gpus && !g; k++)
			if (strcmp(d->gpus[k].uuid, uuid) == 0)
				g = &d->gpus[k];
	}
	if (!g)
		return;
	memcpy(fields, ratio_fields, sizeof(fields));
	for (unsigned k = 0; k < N_RATIOS; k++) {
		memset(&d->values[k], 0, offsetof(struct dcgm_field_value_v1, value) + 8);
		d->values[k].version = DCGM_FIELD_VALUE_VERSION1;
	}
	/* A failed query (lost connection, GPU gone) leaves all absent: NVML
	 * is the one to say what happened to the GPU. */
	if (d->api.latest(d->handle, (int)g->id, fields, N_RATIOS, d->values) !=
	    DCGM_ST_OK)
		return;
	out->gr_engine_active = ratio(&d->values[0], DCGM_FI_PROF_GR_ENGINE_ACTIVE);
	out->sm_active = ratio(&d->values[1], DCGM_FI_PROF_SM_ACTIVE);
	out->sm_occupancy = ratio(&d->values[2], DCGM_FI_PROF_SM_OCCUPANCY);
	out->tensor_active = ratio(&d->values[3], DCGM_FI_PROF_PIPE_TENSOR_ACTIVE);
	out->dram_active = ratio(&d->values[4], DCGM_FI_PROF_DRAM_ACTIVE);
}
