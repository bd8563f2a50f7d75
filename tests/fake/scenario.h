/*
 * scenario.h — the scripted machine behind the fake libnvidia-ml.so.1 and
 * libdcgm.so.4 (tests/fake/README.md has the file format). Compiled into
 * each fake with hidden visibility: a fake exports only the NVML or DCGM
 * functions it stands in for.
 *
 * All storage is static and fixed-size, so a fake allocates nothing and
 * leaks nothing however a test ends.
 */
#ifndef FAKE_SCENARIO_H
#define FAKE_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_MAX_GPUS 16
#define FAKE_MAX_MIG 8
#define FAKE_MAX_AT 64
#define FAKE_MAX_PROCS 256
#define FAKE_MAX_ERRORS 32
#define FAKE_MAX_DCGM_AT 64
#define FAKE_STR 96
#define FAKE_NO_STEP UINT32_MAX

/* The DCGM ratios a scenario scripts, in field order 1001..1005. */
#define FAKE_RATIOS 5
/* How a DCGM value is given: a number, DCGM's blank marker, or a status. */
enum fake_ratio_kind { RATIO_VALUE, RATIO_BLANK, RATIO_NODATA };

struct fake_mig {
	bool present;
	char uuid[FAKE_STR];
	char name[FAKE_STR];
	unsigned gi, ci;
	uint64_t total, used;
};

struct fake_gpu {
	char uuid[FAKE_STR];
	char name[FAKE_STR];
	char bus[32];
	uint64_t total, reserved;
	int mig; /* -1 no MIG (NOT_SUPPORTED), 0 off, 1 on */
	unsigned mig_max;
	struct fake_mig migs[FAKE_MAX_MIG];
	uint32_t mem_calls; /* memory queries on this GPU so far: its step */
};

/* "at STEP gpu I ...": figures from STEP on; mask says which are given. */
#define AT_USED 1u
#define AT_UTIL 2u
#define AT_POWER 4u
#define AT_ENERGY 8u
struct fake_at {
	unsigned gpu;
	uint32_t from;
	unsigned mask;
	uint64_t used, energy;
	unsigned util, mem_util, power;
};

#define FAKE_PIDFILE_MAX 160
struct fake_proc {
	unsigned gpu;
	unsigned pid;
	/* "@PATH" as the PID: the pid is read from PATH at each query (a
	 * job's, written by the job); absent while PATH holds none. */
	char pidfile[FAKE_PIDFILE_MAX];
	uint64_t used; /* UINT64_MAX: NVML_VALUE_NOT_AVAILABLE */
	bool mps;
	int slot; /* MIG device index, or -1 */
	uint32_t from, until;
};

#define FAKE_ANY_DEVICE (-2)
#define FAKE_WHOLE_GPU (-1)
struct fake_error {
	int target; /* GPU index (DCGM id for DCGM calls), -1 for any */
	int slot; /* FAKE_ANY_DEVICE, FAKE_WHOLE_GPU or a MIG device index */
	char fn[64]; /* "*" or a name; a _vN suffix is ignored */
	int code;
	uint32_t from, until;
};

struct fake_dcgm_at {
	unsigned id;
	uint32_t from;
	unsigned mask; /* bit k: ratio k given */
	enum fake_ratio_kind kind[FAKE_RATIOS];
	double value[FAKE_RATIOS];
};

struct fake_scenario {
	bool loaded;
	int count; /* nvmlDeviceGetCount's answer, -1: n_gpus */
	char driver[80];
	unsigned n_gpus;
	struct fake_gpu gpus[FAKE_MAX_GPUS];
	unsigned n_at;
	struct fake_at at[FAKE_MAX_AT];
	unsigned n_procs;
	struct fake_proc procs[FAKE_MAX_PROCS];
	unsigned n_errors;
	struct fake_error errors[FAKE_MAX_ERRORS];
	/* DCGM */
	bool hostengine; /* dcgmConnect succeeds */
	unsigned blank_uuids; /* UUID queries per GPU id answered blank first */
	unsigned uuid_calls[FAKE_MAX_GPUS];
	unsigned n_dcgm; /* DCGM GPU ids 0 .. n_dcgm-1 */
	int dcgm_gpu[FAKE_MAX_GPUS]; /* DCGM id -> NVML GPU index */
	uint32_t dcgm_calls[FAKE_MAX_GPUS];
	unsigned n_dcgm_at;
	struct fake_dcgm_at dcgm_at[FAKE_MAX_DCGM_AT];
};

/* Read the file named by $FAKE_NVML_SCENARIO into sc. Returns 0, or -1
 * with a message (file:line: what) written to stderr: a fake is test code
 * and says what is wrong with its script. */
int fake_scenario_load(struct fake_scenario *sc);

/* The step of a call now: GPU g's memory-query count minus one (0 before
 * the first). */
uint32_t fake_step(const struct fake_scenario *sc, unsigned g);

/* The error code scripted for function fn on target (-1: not a device
 * call) and slot (FAKE_WHOLE_GPU, or the MIG device asked) at step, or 0. */
int fake_error(const struct fake_scenario *sc, int target, int slot, const char *fn,
	       uint32_t step);

/* The figures of GPU g at step (0 where never scripted). */
void fake_values(const struct fake_scenario *sc, unsigned g, uint32_t step,
		 struct fake_at *out);

/* Append "fn rc\n" to $FAKE_NVML_LOG when it is set. */
void fake_log(const char *fn, int rc);

#endif
