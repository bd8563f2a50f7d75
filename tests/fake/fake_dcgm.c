/*
 * fake_dcgm.c — a stand-in libdcgm.so.4 reading the same scenario file as
 * the fake NVML ($FAKE_NVML_SCENARIO, README.md): DCGM's GPU ids, the
 * profiling ratios over steps, blank values, failing calls. It exports the
 * fifteen functions colloc's dcgm.c resolves and nothing else.
 *
 * Layouts are this file's own, from DCGM's public headers (dcgm_structs.h:
 * dcgmFieldValue_v1, MAKE_DCGM_VERSION; dcgm_fields.h: field ids and types).
 *
 * Every call appends "NAME RC" to $FAKE_NVML_LOG when that is set.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scenario.h"

#define FAKE_API __attribute__((visibility("default")))

/* dcgmReturn_t values used here (dcgm_structs.h). */
#define DCGM_ST_OK 0
#define DCGM_ST_BADPARAM (-1)
#define DCGM_ST_INIT_ERROR (-7)
#define DCGM_ST_UNINITIALIZED (-10)
#define DCGM_ST_NO_DATA (-14)
#define DCGM_ST_NOT_WATCHED (-16)
#define DCGM_ST_CONNECTION_NOT_VALID (-21)

#define DCGM_FP64_BLANK 140737488355328.0

struct fake_field_value {
	unsigned int version;
	unsigned short field_id;
	unsigned short field_type;
	int status;
	int64_t ts;
	union {
		int64_t i64;
		double dbl;
		char str[256];
		char blob[4096];
	} value;
};
_Static_assert(sizeof(struct fake_field_value) == 4120,
	       "dcgmFieldValue_v1 is 4120 bytes");

/* dcgmFieldValue_version1 = MAKE_DCGM_VERSION(dcgmFieldValue_v1, 1). */
#define FAKE_FIELD_VALUE_VERSION1 (4120u | (1u << 24))

FAKE_API int dcgmInit(void);
FAKE_API int dcgmShutdown(void);
FAKE_API const char *errorString(int rc);
FAKE_API int dcgmConnect(const char *address, uintptr_t *handle);
FAKE_API int dcgmDisconnect(uintptr_t handle);
FAKE_API int dcgmStartEmbedded(int mode, uintptr_t *handle);
FAKE_API int dcgmStopEmbedded(uintptr_t handle);
FAKE_API int dcgmGetAllSupportedDevices(uintptr_t handle, unsigned int *ids, int *count);
FAKE_API int dcgmGroupCreate(uintptr_t handle, int type, const char *name,
			     uintptr_t *group);
FAKE_API int dcgmGroupDestroy(uintptr_t handle, uintptr_t group);
FAKE_API int dcgmFieldGroupCreate(uintptr_t handle, int n, const unsigned short *fields,
				  const char *name, uintptr_t *group);
FAKE_API int dcgmFieldGroupDestroy(uintptr_t handle, uintptr_t group);
FAKE_API int dcgmWatchFields(uintptr_t handle, uintptr_t group, uintptr_t fields,
			     long long update_us, double keep_s, int keep_samples);
FAKE_API int dcgmUpdateAllFields(uintptr_t handle, int wait);
FAKE_API int dcgmGetLatestValuesForFields(uintptr_t handle, int gpu_id,
					  unsigned short *fields, unsigned int count,
					  struct fake_field_value *values);

#define HANDLE_REMOTE 0x5555u
#define HANDLE_EMBEDDED 0xE5u
#define GROUP_ID 7u
#define FIELD_GROUP_ID 9u

static struct fake_scenario sc;
static bool initialized;
static uintptr_t handle_now; /* 0: not connected */
static bool have_group, have_fields, watched;
static unsigned short watched_fields[16];
static int n_watched;
static uint32_t calls[16];

static int ret(const char *fn, int rc)
{
	fake_log(fn, rc);
	return rc;
}

/* The scripted error for a call with no GPU id (step: its call count). */
static int global_error(const char *fn, unsigned slot)
{
	return fake_error(&sc, -1, FAKE_WHOLE_GPU, fn, calls[slot]++);
}

int dcgmInit(void)
{
	int rc;

	memset(calls, 0, sizeof(calls));
	if (fake_scenario_load(&sc) < 0)
		return ret(__func__, DCGM_ST_INIT_ERROR);
	rc = global_error(__func__, 0);
	if (rc)
		return ret(__func__, rc);
	initialized = true;
	handle_now = 0;
	have_group = have_fields = watched = false;
	n_watched = 0;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmShutdown(void)
{
	if (!initialized)
		return ret(__func__, DCGM_ST_UNINITIALIZED);
	initialized = false;
	handle_now = 0;
	return ret(__func__, global_error(__func__, 8));
}

const char *errorString(int rc)
{
	/* Logged with the code asked about. */
	fake_log(__func__, rc);
	switch (rc) {
	case DCGM_ST_OK:
		return "Success";
	case DCGM_ST_BADPARAM:
		return "Bad parameter passed to function";
	case DCGM_ST_INIT_ERROR:
		return "DCGM initialization error";
	case DCGM_ST_CONNECTION_NOT_VALID:
		return "Host engine connection invalid/disconnected";
	case -29:
		return "This operation cannot be performed when the host engine is "
		       "running as non-root";
	case -36:
		return "Profiling is not supported for this group of GPUs or GPU";
	default:
		return NULL; /* as DCGM for a code it does not know */
	}
}

int dcgmConnect(const char *address, uintptr_t *handle)
{
	int rc;

	if (!initialized)
		return ret(__func__, DCGM_ST_UNINITIALIZED);
	rc = global_error(__func__, 1);
	if (rc)
		return ret(__func__, rc);
	if (!address || !handle)
		return ret(__func__, DCGM_ST_BADPARAM);
	if (!sc.hostengine)
		return ret(__func__, DCGM_ST_CONNECTION_NOT_VALID);
	*handle = handle_now = HANDLE_REMOTE;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmDisconnect(uintptr_t handle)
{
	if (handle != HANDLE_REMOTE || handle_now != handle)
		return ret(__func__, DCGM_ST_BADPARAM);
	handle_now = 0;
	return ret(__func__, global_error(__func__, 9));
}

int dcgmStartEmbedded(int mode, uintptr_t *handle)
{
	int rc;

	if (!initialized)
		return ret(__func__, DCGM_ST_UNINITIALIZED);
	rc = global_error(__func__, 2);
	if (rc)
		return ret(__func__, rc);
	/* DCGM_OPERATION_MODE_AUTO (1) or _MANUAL (2). */
	if ((mode != 1 && mode != 2) || !handle)
		return ret(__func__, DCGM_ST_BADPARAM);
	*handle = handle_now = HANDLE_EMBEDDED;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmStopEmbedded(uintptr_t handle)
{
	if (handle != HANDLE_EMBEDDED || handle_now != handle)
		return ret(__func__, DCGM_ST_BADPARAM);
	handle_now = 0;
	return ret(__func__, global_error(__func__, 10));
}

static bool valid(uintptr_t handle)
{
	return initialized && handle && handle == handle_now;
}

int dcgmGetAllSupportedDevices(uintptr_t handle, unsigned int *ids, int *count)
{
	int rc;

	if (!valid(handle) || !ids || !count)
		return ret(__func__, DCGM_ST_BADPARAM);
	rc = global_error(__func__, 3);
	if (rc)
		return ret(__func__, rc);
	for (unsigned k = 0; k < sc.n_dcgm; k++)
		ids[k] = k;
	*count = (int)sc.n_dcgm;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmGroupCreate(uintptr_t handle, int type, const char *name, uintptr_t *group)
{
	int rc;

	/* DCGM_GROUP_DEFAULT (0): all GPUs. */
	if (!valid(handle) || type != 0 || !name || !*name || !group)
		return ret(__func__, DCGM_ST_BADPARAM);
	rc = global_error(__func__, 4);
	if (rc)
		return ret(__func__, rc);
	*group = GROUP_ID;
	have_group = true;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmGroupDestroy(uintptr_t handle, uintptr_t group)
{
	if (!valid(handle) || group != GROUP_ID || !have_group)
		return ret(__func__, DCGM_ST_BADPARAM);
	have_group = false;
	return ret(__func__, global_error(__func__, 11));
}

int dcgmFieldGroupCreate(uintptr_t handle, int n, const unsigned short *fields,
			 const char *name, uintptr_t *group)
{
	int rc;

	if (!valid(handle) || n <= 0 || n > 16 || !fields || !name || !*name || !group)
		return ret(__func__, DCGM_ST_BADPARAM);
	rc = global_error(__func__, 5);
	if (rc)
		return ret(__func__, rc);
	memcpy(watched_fields, fields, (size_t)n * sizeof(*fields));
	n_watched = n;
	*group = FIELD_GROUP_ID;
	have_fields = true;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmFieldGroupDestroy(uintptr_t handle, uintptr_t group)
{
	if (!valid(handle) || group != FIELD_GROUP_ID || !have_fields)
		return ret(__func__, DCGM_ST_BADPARAM);
	have_fields = false;
	watched = false;
	return ret(__func__, global_error(__func__, 12));
}

int dcgmWatchFields(uintptr_t handle, uintptr_t group, uintptr_t fields,
		    long long update_us, double keep_s, int keep_samples)
{
	int rc;

	if (!valid(handle) || group != GROUP_ID || fields != FIELD_GROUP_ID ||
	    update_us <= 0 || keep_s < 0 || keep_samples < 0)
		return ret(__func__, DCGM_ST_BADPARAM);
	rc = global_error(__func__, 6);
	if (rc)
		return ret(__func__, rc);
	watched = true;
	return ret(__func__, DCGM_ST_OK);
}

int dcgmUpdateAllFields(uintptr_t handle, int wait)
{
	int rc;

	if (!valid(handle) || (wait != 0 && wait != 1))
		return ret(__func__, DCGM_ST_BADPARAM);
	rc = global_error(__func__, 7);
	return ret(__func__, rc);
}

static bool is_watched(unsigned short field)
{
	for (int k = 0; k < n_watched; k++)
		if (watched_fields[k] == field)
			return watched;
	return false;
}

/* Ratio r (field 1001 + r) of DCGM GPU id at step. */
static void ratio_at(unsigned id, uint32_t step, unsigned r, struct fake_field_value *v)
{
	const struct fake_dcgm_at *best = NULL;

	for (unsigned k = 0; k < sc.n_dcgm_at; k++) {
		const struct fake_dcgm_at *a = &sc.dcgm_at[k];

		if (a->id == id && (a->mask & (1u << r)) && a->from <= step &&
		    (!best || a->from >= best->from))
			best = a;
	}
	v->field_type = 'd';
	if (!best || best->kind[r] == RATIO_NODATA) {
		v->status = DCGM_ST_NO_DATA;
		v->value.dbl = DCGM_FP64_BLANK;
	} else if (best->kind[r] == RATIO_BLANK) {
		v->value.dbl = DCGM_FP64_BLANK;
	} else {
		v->value.dbl = best->value[r];
	}
}

int dcgmGetLatestValuesForFields(uintptr_t handle, int gpu_id, unsigned short *fields,
				 unsigned int count, struct fake_field_value *values)
{
	bool ratios = false;
	uint32_t step;
	int rc;

	if (!valid(handle) || !fields || !values || count == 0 || count > 64 ||
	    gpu_id < 0 || (unsigned)gpu_id >= sc.n_dcgm)
		return ret(__func__, DCGM_ST_BADPARAM);
	for (unsigned k = 0; k < count; k++)
		ratios |= fields[k] >= 1001 && fields[k] <= 1005;
	/* Like the fake NVML's memory query, a query of the ratios is a
	 * sample: the Nth sees step N-1. */
	if (ratios)
		sc.dcgm_calls[gpu_id]++;
	step = sc.dcgm_calls[gpu_id] ? sc.dcgm_calls[gpu_id] - 1 : 0;
	rc = fake_error(&sc, gpu_id, FAKE_WHOLE_GPU, __func__, step);
	if (rc)
		return ret(__func__, rc);
	for (unsigned k = 0; k < count; k++) {
		struct fake_field_value *v = &values[k];

		memset(v, 0, sizeof(*v));
		v->version = FAKE_FIELD_VALUE_VERSION1;
		v->field_id = fields[k];
		v->ts = 1700000000000000LL + (int64_t)step * 1000000;
		if (!is_watched(fields[k])) {
			v->status = DCGM_ST_NOT_WATCHED;
			continue;
		}
		if (fields[k] == 54) { /* DCGM_FI_DEV_UUID */
			v->field_type = 's';
			/* DCGM_STR_BLANK until DCGM has read it, if scripted. */
			snprintf(v->value.str, sizeof(v->value.str), "%s",
				 sc.uuid_calls[gpu_id]++ < sc.blank_uuids
					 ? "<<<NULL>>>"
					 : sc.gpus[sc.dcgm_gpu[gpu_id]].uuid);
		} else if (fields[k] >= 1001 && fields[k] <= 1005) {
			ratio_at((unsigned)gpu_id, step, fields[k] - 1001u, v);
		} else {
			v->status = DCGM_ST_NO_DATA;
		}
	}
	return ret(__func__, DCGM_ST_OK);
}
