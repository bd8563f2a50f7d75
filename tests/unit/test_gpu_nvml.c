/*
 * test_gpu_nvml.c — the nvml backend (src/gpu/nvml.c, dcgm.c) and "auto"
 * (gpu.c) against the fake libraries of tests/fake, loaded with dlopen()
 * exactly as the real ones are: COLLOC_NVML_LIBRARY and COLLOC_DCGM_LIBRARY
 * name them, scenario files (tests/data/nvml/NAME.scn, or written here) script
 * the machine, and the fakes log every call to a file this test reads back.
 *
 *   test_gpu_nvml            the unit tests; the last one checks that every
 *                            NVML and DCGM name the backend resolves was
 *                            called, and failed, at least once
 *   test_gpu_nvml --soname   the libraries found by soname through
 *                            LD_LIBRARY_PATH, no COLLOC_*_LIBRARY set
 *   test_gpu_nvml --bench    CPU time of one sample of 8 GPUs, nvml (fake)
 *                            against sim; prints, never fails on numbers
 *
 * Environment (tests/CMakeLists.txt sets it): COLLOC_NVML_LIBRARY (the
 * "full" fake), FAKE_NVML_OLDER, FAKE_NVML_MINIMAL, COLLOC_DCGM_LIBRARY,
 * FAKE_NVML_SCENARIO_DIR.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colloc/error.h"
#include "colloc/gpu.h"
#include "colloc/simgpu.h"
#include "gpu/dcgm_int.h"
#include "gpu/gpu_int.h"
#include "test_util.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)
#define LOG_MAX (64u << 20)

static struct {
	char full[512], older[512], minimal[512], dcgm[512], dir[512];
	char tmp[64]; /* a directory for generated scenarios and sim state */
	char log[128];
} env;

#define UUID0 "GPU-11111111-2222-3333-4444-555555555555"
#define UUID1 "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"

/* ---- helpers ------------------------------------------------------------------ */

static void copy_env(char *dst, size_t len, const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		print_error("%s is not set (run the test through ctest)\n", name);
		fail();
	}
	snprintf(dst, len, "%s", v);
}

static void must_setenv(const char *name, const char *value)
{
	assert_int_equal(setenv(name, value, 1), 0);
}

/* Point the backend at lib (NVML) and dcgm ("off" for none), the fakes at
 * scenario scn: a name in tests/data/nvml or an absolute path. */
static void use(const char *lib, const char *dcgm, const char *scn)
{
	char path[1024];

	if (scn[0] == '/')
		snprintf(path, sizeof(path), "%s", scn);
	else
		snprintf(path, sizeof(path), "%s/%s", env.dir, scn);
	must_setenv("COLLOC_NVML_LIBRARY", lib);
	must_setenv("COLLOC_DCGM_LIBRARY", dcgm);
	must_setenv("FAKE_NVML_SCENARIO", path);
}

/* Write text as a scenario of its own; returns its path (static). */
static const char *scenario(const char *text)
{
	static char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/gen.scn", env.tmp);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
	return path;
}

static struct colloc_gpu *open_nvml(void)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	int rc = colloc_gpu_open("nvml", &gpu, &diag);

	if (rc != 0) {
		print_error("colloc_gpu_open(nvml): %d %s\n", rc, diag.msg);
		fail();
	}
	assert_string_equal(colloc_gpu_backend_name(gpu), "nvml");
	return gpu;
}

static struct colloc_gpu_info info_ok(struct colloc_gpu *gpu, unsigned index)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info info;
	int rc = colloc_gpu_info(gpu, index, &info, &diag);

	if (rc != 0) {
		print_error("colloc_gpu_info(%u): %d %s\n", index, rc, diag.msg);
		fail();
	}
	return info;
}

/* A query's error: rc as expected and the message containing want. */
static void expect_error(int rc, int want_rc, const struct colloc_diag *diag,
			 const char *want)
{
	if (rc != want_rc || !strstr(diag->msg, want)) {
		print_error("got %d '%s', wanted %d with '%s'\n", rc, diag->msg, want_rc,
			    want);
		fail();
	}
}

static void expect_contains(const char *text, const char *want)
{
	if (!strstr(text, want)) {
		print_error("'%s' does not contain '%s'\n", text, want);
		fail();
	}
}

#define assert_ratio(a, b) assert_true(fabs((a) - (b)) < 1e-12)

static void assert_ratios_absent(const struct colloc_gpu_info *i)
{
	assert_true(i->gr_engine_active == COLLOC_GPU_METRIC_ABSENT);
	assert_true(i->sm_active == COLLOC_GPU_METRIC_ABSENT);
	assert_true(i->sm_occupancy == COLLOC_GPU_METRIC_ABSENT);
	assert_true(i->tensor_active == COLLOC_GPU_METRIC_ABSENT);
	assert_true(i->dram_active == COLLOC_GPU_METRIC_ABSENT);
}

/* Where the call log ends now, to look only at what comes after. */
static long log_mark(void)
{
	char *text = test_slurp(env.log, LOG_MAX);
	long n = text ? (long)strlen(text) : 0;

	free(text);
	return n;
}

/* The line after p, or NULL at the end of text. */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl && nl[1] ? nl + 1 : NULL;
}

/* Whether the log has the line exactly, after mark. */
static int log_has(long mark, const char *line)
{
	char *text = test_slurp(env.log, LOG_MAX);
	size_t len = strlen(line);
	int found = 0;

	if (!text)
		return 0;
	for (const char *p = text[mark] ? text + mark : NULL; p && !found;
	     p = next_line(p))
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
			found = 1;
	free(text);
	return found;
}

static void expect_logged(long mark, const char *line)
{
	if (!log_has(mark, line)) {
		print_error("the fake's log has no line '%s'\n", line);
		fail();
	}
}

static void expect_not_logged(long mark, const char *line)
{
	if (log_has(mark, line)) {
		print_error("the fake's log has '%s'\n", line);
		fail();
	}
}

static size_t procs(struct colloc_gpu *gpu, unsigned index, struct colloc_gpu_process *p,
		    size_t cap)
{
	struct colloc_diag diag = {{0}};
	size_t n = 0;
	int rc = colloc_gpu_processes(gpu, index, p, cap, &n, &diag);

	if (rc != 0) {
		print_error("colloc_gpu_processes(%u): %d %s\n", index, rc, diag.msg);
		fail();
	}
	return n;
}

static uint64_t proc_bytes(const struct colloc_gpu_process *p, size_t n, int64_t pid)
{
	for (size_t k = 0; k < n; k++)
		if (p[k].pid == pid)
			return p[k].used_bytes;
	print_error("pid %lld not listed\n", (long long)pid);
	fail();
	return 0;
}

/* ---- setup --------------------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	copy_env(env.full, sizeof(env.full), "COLLOC_NVML_LIBRARY");
	copy_env(env.dcgm, sizeof(env.dcgm), "COLLOC_DCGM_LIBRARY");
	copy_env(env.older, sizeof(env.older), "FAKE_NVML_OLDER");
	copy_env(env.minimal, sizeof(env.minimal), "FAKE_NVML_MINIMAL");
	copy_env(env.dir, sizeof(env.dir), "FAKE_NVML_SCENARIO_DIR");
	snprintf(env.tmp, sizeof(env.tmp), "/tmp/colloc-test-nvml-XXXXXX");
	if (!mkdtemp(env.tmp))
		return -1;
	snprintf(env.log, sizeof(env.log), "%s/calls.log", env.tmp);
	if (setenv("FAKE_NVML_LOG", env.log, 1) != 0)
		return -1;
	/* The sim backend's default path must not be the user's. */
	unsetenv(COLLOC_SIMGPU_ENV);
	return 0;
}

static int group_teardown(void **state)
{
	char path[256];
	static const char *const files[] = {"calls.log", "gen.scn", "sim.state",
					    "colloc-sim.state", "bench.state"};

	(void)state;
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		snprintf(path, sizeof(path), "%s/%s", env.tmp, files[k]);
		unlink(path);
	}
	rmdir(env.tmp);
	return 0;
}

/* ---- the tests ------------------------------------------------------------------ */

/* Two H100s through the newest NVML calls, three samples of GPU 0. */
static void test_basic_info(void **state)
{
	struct colloc_gpu_process p[8];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_mig_instance mig[2];
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	char line[COLLOC_DIAG_MAX], want[1024];
	unsigned n = 0;
	size_t np;

	(void)state;
	use(env.full, env.dcgm, "basic.scn");
	gpu = open_nvml();
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 2);
	colloc_gpu_describe(gpu, line, sizeof(line));
	snprintf(want, sizeof(want), "NVML (%s, driver 550.54.15), 2 GPUs", env.full);
	expect_contains(line, want);
	snprintf(want, sizeof(want),
		 "DCGM profiling metrics: on (%s, embedded host engine", env.dcgm);
	expect_contains(line, want);

	/* Sample 0 of GPU 0; DCGM knows it as GPU id 1. */
	i = info_ok(gpu, 0);
	assert_string_equal(i.uuid, UUID0);
	assert_string_equal(i.name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(i.pci_bus_id, "00000000:18:00.0");
	assert_true(i.mem_total_bytes == 80 * GiB);
	assert_true(i.mem_used_bytes == 1 * GiB);
	assert_true(i.mem_reserved_bytes == (int64_t)(512 * MiB));
	assert_true(i.mem_free_bytes == 80 * GiB - 512 * MiB - 1 * GiB);
	assert_int_equal(i.util_pct, 10);
	assert_int_equal(i.power_mw, 100000);
	assert_int_equal(i.energy_mj, 5000000);
	assert_int_equal(i.mig_mode, 0);
	assert_ratio(i.gr_engine_active, 0.25);
	assert_ratio(i.sm_active, 0.5);
	assert_ratio(i.sm_occupancy, 0.125);
	assert_ratio(i.tensor_active, 0.75);
	assert_ratio(i.dram_active, 0.375);

	/* Sample 1: blank and missing DCGM values are absent, 1.5 is 1. */
	i = info_ok(gpu, 0);
	assert_true(i.mem_used_bytes == 21 * GiB);
	assert_int_equal(i.util_pct, 80);
	assert_int_equal(i.power_mw, 550000);
	assert_int_equal(i.energy_mj, 5600000);
	assert_ratio(i.gr_engine_active, 0.875);
	assert_true(i.sm_active == COLLOC_GPU_METRIC_ABSENT);
	assert_true(i.sm_occupancy == COLLOC_GPU_METRIC_ABSENT);
	assert_ratio(i.tensor_active, 1.0);
	assert_ratio(i.dram_active, 0.5);

	/* GPU 1 idle: DCGM's zeros are zeros, not absent. */
	i = info_ok(gpu, 1);
	assert_string_equal(i.uuid, UUID1);
	assert_string_equal(i.pci_bus_id, "00000000:2A:00.0");
	assert_int_equal(i.util_pct, 0);
	assert_int_equal(i.power_mw, 70000);
	assert_ratio(i.gr_engine_active, 0.0);
	assert_ratio(i.dram_active, 0.0);

	/* Processes at GPU 0's step 1: one compute, one MPS client. */
	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 2);
	assert_true(proc_bytes(p, np, 4242) == 20 * GiB);
	assert_true(proc_bytes(p, np, 5000) == 512 * MiB);
	assert_int_equal(procs(gpu, 0, NULL, 0), 2); /* cap 0 asks the number */
	assert_int_equal(procs(gpu, 0, p, 1), 2);

	/* Sample 2: power and energy not scripted again hold their values. */
	i = info_ok(gpu, 0);
	assert_true(i.mem_used_bytes == 41 * GiB);
	assert_int_equal(i.power_mw, 550000);
	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 3);
	/* 4242 in both lists: the larger figure, not the sum. */
	assert_true(proc_bytes(p, np, 4242) == 20 * GiB);
	assert_true(proc_bytes(p, np, 4243) == 20 * GiB);

	/* Memory NVML cannot attribute (NVML_VALUE_NOT_AVAILABLE) is 0. */
	np = procs(gpu, 1, p, 8);
	assert_int_equal(np, 1);
	assert_true(proc_bytes(p, np, 77) == 0);

	/* MIG off: no instances. Bad indices are usage errors. */
	np = 99;
	assert_int_equal(colloc_gpu_mig_instances(gpu, 0, mig, 2, &np, &diag), 0);
	assert_int_equal(np, 0);
	expect_error(colloc_gpu_info(gpu, 2, &i, &diag), COLLOC_EUSAGE, &diag,
		     "no GPU 2");
	expect_error(colloc_gpu_processes(gpu, 7, p, 8, &np, &diag), COLLOC_EUSAGE, &diag,
		     "no GPU 7");
	expect_error(colloc_gpu_mig_instances(gpu, 5, mig, 2, &np, &diag), COLLOC_EUSAGE,
		     &diag, "no GPU 5");
	/* Real GPUs need no environment for jobs beyond CUDA_VISIBLE_DEVICES. */
	assert_int_equal(colloc_gpu_job_env(gpu, line, sizeof(line), &diag), 0);
	assert_string_equal(line, "");
	colloc_gpu_close(gpu);
}

/* The newest names are called, the v2 memory query with nvmlMemory_v2 (the
 * fake answers ARGUMENT_VERSION_MISMATCH to anything else), and no v1
 * fallback while _v2 exists. */
static void test_newest_calls_and_memory_version(void **state)
{
	struct colloc_gpu_process p[8];
	struct colloc_gpu *gpu;
	long mark = log_mark();

	(void)state;
	use(env.full, "off", "basic.scn");
	gpu = open_nvml();
	(void)info_ok(gpu, 0);
	(void)info_ok(gpu, 0);
	(void)procs(gpu, 0, p, 8);
	colloc_gpu_close(gpu);
	expect_logged(mark, "nvmlInit_v2 0");
	expect_logged(mark, "nvmlDeviceGetCount_v2 0");
	expect_logged(mark, "nvmlDeviceGetHandleByIndex_v2 0");
	expect_logged(mark, "nvmlDeviceGetPciInfo_v3 0");
	expect_logged(mark, "nvmlDeviceGetMemoryInfo_v2 0");
	expect_logged(mark, "nvmlDeviceGetComputeRunningProcesses_v3 0");
	expect_logged(mark, "nvmlDeviceGetMPSComputeRunningProcesses_v3 0");
	expect_logged(mark, "nvmlShutdown 0");
	expect_not_logged(mark, "nvmlDeviceGetMemoryInfo_v2 25");
	expect_not_logged(mark, "nvmlDeviceGetMemoryInfo 0");
	expect_not_logged(mark, "nvmlInit 0");
	expect_not_logged(mark, "nvmlDeviceGetComputeRunningProcesses_v2 0");
}

/* A driver before nvmlDeviceGetMemoryInfo_v2 and the _v3 process calls:
 * v1 memory (reserved inside used, said so with -1), _v2 processes. */
static void test_older_library(void **state)
{
	struct colloc_gpu_process p[8];
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	char line[COLLOC_DIAG_MAX];
	long mark = log_mark();
	size_t np;

	(void)state;
	use(env.older, "off", "basic.scn");
	gpu = open_nvml();
	i = info_ok(gpu, 0);
	assert_true(i.mem_total_bytes == 80 * GiB);
	assert_true(i.mem_used_bytes == 1 * GiB + 512 * MiB);
	assert_true(i.mem_free_bytes == 80 * GiB - 1 * GiB - 512 * MiB);
	assert_int_equal(i.mem_reserved_bytes, -1);
	assert_int_equal(i.util_pct, 10);
	assert_int_equal(i.energy_mj, 5000000);
	assert_ratios_absent(&i);
	(void)info_ok(gpu, 0);
	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 2);
	assert_true(proc_bytes(p, np, 5000) == 512 * MiB);
	colloc_gpu_describe(gpu, line, sizeof(line));
	expect_contains(line, "DCGM profiling metrics: off (COLLOC_DCGM_LIBRARY=off)");
	colloc_gpu_close(gpu);
	expect_logged(mark, "nvmlDeviceGetMemoryInfo 0");
	expect_logged(mark, "nvmlDeviceGetPciInfo_v2 0");
	expect_logged(mark, "nvmlDeviceGetComputeRunningProcesses_v2 0");
	expect_logged(mark, "nvmlDeviceGetMPSComputeRunningProcesses_v2 0");
}

/* Only the required functions, unversioned: every optional figure absent,
 * the rest working, messages without nvmlErrorString. */
static void test_minimal_library(void **state)
{
	struct colloc_gpu_process p[8];
	struct colloc_gpu_mig_instance mig[2];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	char line[COLLOC_DIAG_MAX];
	long mark = log_mark();
	size_t np;

	(void)state;
	use(env.minimal, "off", "basic.scn");
	gpu = open_nvml();
	i = info_ok(gpu, 0);
	assert_true(i.mem_used_bytes == 1 * GiB + 512 * MiB);
	assert_int_equal(i.util_pct, -1);
	assert_int_equal(i.power_mw, -1);
	assert_int_equal(i.energy_mj, -1);
	assert_int_equal(i.mig_mode, -1);
	assert_int_equal(i.mem_reserved_bytes, -1);
	assert_ratios_absent(&i);
	(void)info_ok(gpu, 0);
	/* No MPS list in this driver: the compute process only. */
	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 1);
	assert_true(proc_bytes(p, np, 4242) == 20 * GiB);
	assert_int_equal(colloc_gpu_mig_instances(gpu, 0, mig, 2, &np, &diag), 0);
	assert_int_equal(np, 0);
	colloc_gpu_describe(gpu, line, sizeof(line));
	expect_contains(line, "2 GPUs");
	assert_null(strstr(line, "driver"));
	colloc_gpu_close(gpu);
	expect_logged(mark, "nvmlInit 0");
	expect_logged(mark, "nvmlDeviceGetCount 0");
	expect_logged(mark, "nvmlDeviceGetHandleByIndex 0");
	expect_logged(mark, "nvmlDeviceGetComputeRunningProcesses 0");

	/* A lost GPU through the v1 names, the error without its string. */
	use(env.minimal, "off", "lost.scn");
	gpu = open_nvml();
	(void)info_ok(gpu, 1);
	(void)info_ok(gpu, 1);
	expect_error(
		colloc_gpu_info(gpu, 1, &i, &diag), -ENODEV, &diag,
		"GPU 1 (GPU-00000000-0000-0000-0000-0000000000a1) has fallen off the "
		"bus (nvmlDeviceGetMemoryInfo: NVML error 15)");
	colloc_gpu_close(gpu);
}

/* MIG: instances read from NVML, utilization absent, and the GPU-wide
 * memory and process queries replaced by the MIG devices' own when NVML
 * refuses them to an unprivileged caller. */
static void test_mig(void **state)
{
	struct colloc_gpu_mig_instance mig[4];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process p[8];
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	size_t n = 0, np;

	(void)state;
	use(env.full, "off", "mig.scn");
	gpu = open_nvml();

	/* Step 0: the GPU-wide figures answer. */
	i = info_ok(gpu, 0);
	assert_int_equal(i.mig_mode, 1);
	assert_int_equal(i.util_pct, -1); /* NOT_SUPPORTED under MIG: absent */
	assert_int_equal(i.power_mw, 90000);
	assert_int_equal(i.energy_mj, 777);
	assert_true(i.mem_total_bytes == 40 * GiB);
	assert_true(i.mem_used_bytes == 3 * GiB);
	assert_int_equal(i.mem_reserved_bytes, 0);

	assert_int_equal(colloc_gpu_mig_instances(gpu, 0, mig, 4, &n, &diag), 0);
	assert_int_equal(n, 3);
	assert_string_equal(mig[0].uuid, "MIG-00000000-aaaa-aaaa-aaaa-000000000000");
	assert_string_equal(mig[0].name, "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
	assert_true(mig[0].mem_total_bytes == 19968 * MiB);
	assert_true(mig[0].mem_used_bytes == 1 * GiB);
	assert_true(mig[0].mem_free_bytes == 19968 * MiB - 1 * GiB);
	assert_int_equal(mig[0].gi_id, 1);
	assert_int_equal(mig[0].ci_id, 0);
	assert_int_equal(mig[0].index, 0);
	/* Slot 1 is empty: the next instance is slot 2. */
	assert_int_equal(mig[1].index, 2);
	assert_int_equal(mig[1].gi_id, 5);
	assert_true(mig[1].mem_total_bytes == 9856 * MiB);
	assert_int_equal(mig[2].index, 3);
	assert_int_equal(mig[2].gi_id, 13);
	assert_true(mig[2].mem_used_bytes == 2 * GiB);
	/* cap 1: the count, one filled. */
	memset(mig, 0, sizeof(mig));
	assert_int_equal(colloc_gpu_mig_instances(gpu, 0, mig, 1, &n, &diag), 0);
	assert_int_equal(n, 3);
	assert_int_equal(mig[0].gi_id, 1);
	assert_int_equal(mig[1].gi_id, 0);

	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 3);
	assert_true(proc_bytes(p, np, 100) == 1 * GiB);
	assert_true(proc_bytes(p, np, 101) == 1536 * MiB);
	assert_true(proc_bytes(p, np, 102) == 512 * MiB);

	/* Step 1: NO_PERMISSION GPU-wide; the sum of the MIG devices. */
	i = info_ok(gpu, 0);
	assert_true(i.mem_total_bytes == (19968 + 9856 + 4864) * MiB);
	assert_true(i.mem_used_bytes == 3 * GiB);
	assert_true(i.mem_free_bytes == (19968 + 9856 + 4864) * MiB - 3 * GiB);
	assert_int_equal(i.mem_reserved_bytes, -1);
	np = procs(gpu, 0, p, 8);
	assert_int_equal(np, 3);
	assert_true(proc_bytes(p, np, 100) == 1 * GiB);
	assert_true(proc_bytes(p, np, 101) == 1536 * MiB);
	assert_true(proc_bytes(p, np, 102) == 512 * MiB);

	/* The other A100, MIG off. */
	i = info_ok(gpu, 1);
	assert_int_equal(i.mig_mode, 0);
	assert_int_equal(i.util_pct, 50);
	assert_int_equal(colloc_gpu_mig_instances(gpu, 1, mig, 4, &n, &diag), 0);
	assert_int_equal(n, 0);
	colloc_gpu_close(gpu);
}

/* A GPU that falls off the bus fails with -ENODEV naming it, for good; a
 * GPU lost before open is in the count and unusable; the others work. */
static void test_lost(void **state)
{
	struct colloc_gpu_mig_instance mig[2];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process p[4];
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	unsigned n = 0;
	size_t np;

	(void)state;
	use(env.full, "off", "lost.scn");
	gpu = open_nvml();
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 3);
	expect_error(colloc_gpu_info(gpu, 2, &i, &diag), -ENODEV, &diag,
		     "GPU 2 (UUID unknown) has fallen off the bus");
	expect_error(colloc_gpu_processes(gpu, 2, p, 4, &np, &diag), -ENODEV, &diag,
		     "GPU 2 (UUID unknown) has fallen off the bus");
	expect_error(colloc_gpu_mig_instances(gpu, 2, mig, 2, &np, &diag), -ENODEV, &diag,
		     "GPU 2 (UUID unknown) has fallen off the bus");

	(void)info_ok(gpu, 1);
	assert_int_equal(procs(gpu, 1, p, 4), 1);
	(void)info_ok(gpu, 1);
	expect_error(
		colloc_gpu_info(gpu, 1, &i, &diag), -ENODEV, &diag,
		"GPU 1 (GPU-00000000-0000-0000-0000-0000000000a1) has fallen off the "
		"bus (nvmlDeviceGetMemoryInfo_v2: GPU is lost (NVML error 15))");
	expect_error(
		colloc_gpu_processes(gpu, 1, p, 4, &np, &diag), -ENODEV, &diag,
		"GPU 1 (GPU-00000000-0000-0000-0000-0000000000a1) has fallen off the "
		"bus");
	expect_error(colloc_gpu_info(gpu, 1, &i, &diag), -ENODEV, &diag,
		     "has fallen off the bus");
	for (int k = 0; k < 4; k++) {
		i = info_ok(gpu, 0);
		assert_string_equal(i.uuid, "GPU-00000000-0000-0000-0000-0000000000a0");
		assert_true(i.mem_used_bytes == 1 * GiB);
	}
	colloc_gpu_close(gpu);
}

/* One failure per GPU (errors.scn). */
static void test_errors(void **state)
{
	struct colloc_gpu_mig_instance mig[2];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process p[64];
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	size_t np;

	(void)state;
	use(env.full, "off", "errors.scn");
	gpu = open_nvml();

	/* NOT_SUPPORTED: absent figures, no MPS list, not errors. */
	i = info_ok(gpu, 0);
	assert_int_equal(i.power_mw, -1);
	assert_int_equal(i.energy_mj, -1);
	assert_int_equal(i.util_pct, 5);
	/* 40 processes: more than the first buffer, grown on
	 * NVML_ERROR_INSUFFICIENT_SIZE. */
	np = procs(gpu, 0, p, 64);
	assert_int_equal(np, 40);
	for (int64_t pid = 1000; pid < 1040; pid++)
		assert_true(proc_bytes(p, np, pid) == 1 * MiB);
	assert_int_equal(procs(gpu, 0, p, 10), 40);

	/* Other driver errors fail the query and name the call. */
	(void)info_ok(gpu, 1);
	expect_error(colloc_gpu_info(gpu, 1, &i, &diag), -EIO, &diag,
		     "GPU 1 (GPU-e1000000-0000-0000-0000-000000000000): "
		     "nvmlDeviceGetPowerUsage: Unknown Error (NVML error 999)");
	/* NO_PERMISSION without MIG is an error too. */
	expect_error(colloc_gpu_processes(gpu, 1, p, 64, &np, &diag), -EIO, &diag,
		     "nvmlDeviceGetComputeRunningProcesses: Insufficient Permissions");

	/* A GPU whose UUID could not be read at open is unusable. */
	expect_error(colloc_gpu_info(gpu, 2, &i, &diag), -EIO, &diag,
		     "GPU 2 (UUID unknown): nvmlDeviceGetUUID: Insufficient Permissions");
	expect_error(colloc_gpu_processes(gpu, 2, p, 64, &np, &diag), -EIO, &diag,
		     "nvmlDeviceGetUUID");

	/* A list that never fits: bounded retries, then an error. */
	expect_error(colloc_gpu_processes(gpu, 3, p, 64, &np, &diag), COLLOC_ELIMIT,
		     &diag,
		     "GPU 3: nvmlDeviceGetComputeRunningProcesses: the process list kept "
		     "growing");

	/* Cannot list processes at all: none. */
	assert_int_equal(procs(gpu, 4, p, 64), 0);
	(void)info_ok(gpu, 4);
	expect_error(colloc_gpu_info(gpu, 4, &i, &diag), -EIO, &diag,
		     "nvmlDeviceGetMigMode: Unknown Error");
	expect_error(colloc_gpu_mig_instances(gpu, 4, mig, 2, &np, &diag), -EIO, &diag,
		     "nvmlDeviceGetMigMode");
	colloc_gpu_close(gpu);
}

/* Each NVML function failing with NVML_ERROR_UNKNOWN, in each library that
 * has it: the queries that need it fail and name it; the others, and the
 * other GPU, are unaffected. */
#define F_OPEN 1u
#define F_INFO 2u
#define F_PROCS 4u
#define F_MIG 8u
#define F_ALL (F_INFO | F_PROCS | F_MIG)
#define LIB_FULL 1u
#define LIB_OLDER 2u
#define LIB_MINIMAL 4u
#define LIB_ALL 7u
#define LIB_MIG (LIB_FULL | LIB_OLDER)

static void test_every_call_failing(void **state)
{
	static const struct {
		const char *fn;
		unsigned fails;
		unsigned libs;
	} rows[] = {
		{"nvmlInit", F_OPEN, LIB_ALL},
		{"nvmlDeviceGetCount", F_OPEN, LIB_ALL},
		{"nvmlShutdown", 0, LIB_ALL},
		{"nvmlSystemGetDriverVersion", 0, LIB_MIG},
		{"nvmlDeviceGetHandleByIndex", F_ALL, LIB_ALL},
		{"nvmlDeviceGetUUID", F_ALL, LIB_ALL},
		{"nvmlDeviceGetName", F_ALL, LIB_ALL},
		{"nvmlDeviceGetPciInfo", F_ALL, LIB_ALL},
		/* MIG devices' memory too, where the driver has MIG. */
		{"nvmlDeviceGetMemoryInfo", F_INFO | F_MIG, LIB_MIG},
		{"nvmlDeviceGetMemoryInfo", F_INFO, LIB_MINIMAL},
		{"nvmlDeviceGetUtilizationRates", F_INFO, LIB_MIG},
		{"nvmlDeviceGetPowerUsage", F_INFO, LIB_MIG},
		{"nvmlDeviceGetTotalEnergyConsumption", F_INFO, LIB_MIG},
		{"nvmlDeviceGetMigMode", F_INFO | F_MIG, LIB_MIG},
		{"nvmlDeviceGetComputeRunningProcesses", F_PROCS, LIB_ALL},
		{"nvmlDeviceGetMPSComputeRunningProcesses", F_PROCS, LIB_MIG},
		{"nvmlDeviceGetMaxMigDeviceCount", F_MIG, LIB_MIG},
		{"nvmlDeviceGetMigDeviceHandleByIndex", F_MIG, LIB_MIG},
		{"nvmlDeviceGetGpuInstanceId", F_MIG, LIB_MIG},
		{"nvmlDeviceGetComputeInstanceId", F_MIG, LIB_MIG},
	};
	const char *libs[3] = {env.full, env.older, env.minimal};

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		for (unsigned l = 0; l < 3; l++) {
			struct colloc_gpu_mig_instance mig[2];
			struct colloc_diag diag = {{0}};
			struct colloc_gpu_process p[4];
			struct colloc_gpu_info i;
			struct colloc_gpu *gpu = NULL;
			unsigned fails = rows[r].fails;
			char text[2048];
			int rc;
			size_t n;

			if (!(rows[r].libs & (1u << l)))
				continue;
			/* GPU 0 in MIG mode with one MIG device and processes,
			 * the failure on it; GPU 1 plain and healthy. */
			snprintf(text, sizeof(text),
				 "gpu 0 uuid GPU-f0 name F bus 00000000:01:00.0 total "
				 "8GiB\n"
				 "gpu 1 uuid GPU-f1 name F bus 00000000:02:00.0 total "
				 "8GiB\n"
				 "mig 0 on\n"
				 "migdev 0 0 uuid MIG-f0 name M gi 1 ci 0 total 4GiB "
				 "used 1GiB\n"
				 "at 0 gpu 0 used 1GiB power 1 energy 1\n"
				 "proc 0 5 used 1GiB mig 0\n"
				 "proc 0 6 used 1GiB mig 0 mps\n"
				 "error %s 999%s\n",
				 rows[r].fn, fails & F_ALL ? " gpu 0" : "");
			use(libs[l], "off", scenario(text));
			rc = colloc_gpu_open("nvml", &gpu, &diag);
			if (fails & F_OPEN) {
				expect_error(rc, -EIO, &diag, rows[r].fn);
				assert_null(gpu);
				continue;
			}
			assert_int_equal(rc, 0);
			rc = colloc_gpu_info(gpu, 0, &i, &diag);
			if (fails & F_INFO)
				expect_error(rc, -EIO, &diag, rows[r].fn);
			else
				assert_int_equal(rc, 0);
			rc = colloc_gpu_processes(gpu, 0, p, 4, &n, &diag);
			if (fails & F_PROCS)
				expect_error(rc, -EIO, &diag, rows[r].fn);
			else
				assert_int_equal(rc, 0);
			rc = colloc_gpu_mig_instances(gpu, 0, mig, 2, &n, &diag);
			if (fails & F_MIG)
				expect_error(rc, -EIO, &diag, rows[r].fn);
			else
				assert_int_equal(rc, 0);
			(void)info_ok(gpu, 1);
			colloc_gpu_close(gpu);
		}
}

/* A driver that sees no GPU opens (count 0); auto falls back. */
static void test_no_gpu(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu = NULL;
	char note[COLLOC_DIAG_MAX], spec[256];
	unsigned n = 99;

	(void)state;
	use(env.full, "off", "nogpu.scn");
	gpu = open_nvml();
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 0);
	expect_error(colloc_gpu_info(gpu, 0, &i, &diag), COLLOC_EUSAGE, &diag,
		     "no GPU 0");
	colloc_gpu_close(gpu);

	snprintf(spec, sizeof(spec), "sim:2x1GiB,path=%s/sim.state", env.tmp);
	assert_int_equal(colloc_gpu_open_auto(spec, &gpu, note, sizeof(note), &diag), 0);
	assert_string_equal(colloc_gpu_backend_name(gpu), "sim");
	expect_contains(note, "no NVIDIA GPU (NVML sees no GPU); using simulated GPUs "
			      "sim:2x1GiB,path=");
	colloc_gpu_close(gpu);
	/* Without a fallback, the reason is the error. */
	gpu = NULL;
	expect_error(colloc_gpu_open_auto(NULL, &gpu, note, sizeof(note), &diag),
		     COLLOC_ENOTFOUND, &diag, "NVML sees no GPU");
	assert_null(gpu);
}

/* nvmlInit failing: "nvml" fails, auto falls back and says why. */
static void test_init_fails(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	char note[COLLOC_DIAG_MAX], spec[256];

	(void)state;
	use(env.full, "off", "initfail.scn");
	expect_error(colloc_gpu_open("nvml", &gpu, &diag), -EIO, &diag,
		     "nvmlInit: Driver Not Loaded (NVML error 9)");
	assert_null(gpu);
	snprintf(spec, sizeof(spec), "sim:2x1GiB,path=%s/sim.state", env.tmp);
	assert_int_equal(colloc_gpu_open_auto(spec, &gpu, note, sizeof(note), &diag), 0);
	assert_string_equal(colloc_gpu_backend_name(gpu), "sim");
	expect_contains(note, "NVIDIA GPUs unusable (nvmlInit: Driver Not Loaded (NVML "
			      "error 9)); using simulated GPUs sim:2x1GiB");
	colloc_gpu_close(gpu);
	gpu = NULL;
	expect_error(colloc_gpu_open_auto(NULL, &gpu, NULL, 0, &diag), -EIO, &diag,
		     "nvmlInit");
	/* A fallback that fails: its error, with the reason for falling back. */
	expect_error(colloc_gpu_open_auto("nosuch:1", &gpu, note, sizeof(note), &diag),
		     COLLOC_ENOTFOUND, &diag, "NVIDIA GPUs unusable (nvmlInit");
	expect_contains(note, "unknown GPU backend 'nosuch'");
}

/* No libnvidia-ml.so.1 at all: the ordinary machine without NVIDIA
 * software. "auto" (and "auto:SPEC") give simulated GPUs. */
static void test_missing_library(void **state)
{
	struct colloc_gpu_mig_instance mig[2];
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu = NULL;
	char note[COLLOC_DIAG_MAX], spec[256], path[256], line[64];
	unsigned n = 0;
	size_t nm = 9;

	(void)state;
	snprintf(path, sizeof(path), "%s/nowhere/libnvidia-ml.so.1", env.tmp);
	use(path, "off", "basic.scn");
	expect_error(colloc_gpu_open("nvml", &gpu, &diag), COLLOC_ENOTFOUND, &diag,
		     "cannot open shared object file");
	snprintf(spec, sizeof(spec), "sim:2x1GiB,path=%s/sim.state", env.tmp);
	assert_int_equal(colloc_gpu_open_auto(spec, &gpu, note, sizeof(note), &diag), 0);
	expect_contains(note, "no NVIDIA driver (");
	expect_contains(note, "libnvidia-ml.so.1: cannot open shared object file");
	expect_contains(note, "); using simulated GPUs sim:2x1GiB");
	/* The sim backend's new figures are absent, and it has no MIG. */
	i = info_ok(gpu, 1);
	assert_int_equal(i.mig_mode, -1);
	assert_int_equal(i.mem_reserved_bytes, -1);
	assert_ratios_absent(&i);
	assert_int_equal(colloc_gpu_mig_instances(gpu, 1, mig, 2, &nm, &diag), 0);
	assert_int_equal(nm, 0);
	expect_error(colloc_gpu_mig_instances(gpu, 2, mig, 2, &nm, &diag), COLLOC_EUSAGE,
		     &diag, "no GPU 2");
	colloc_gpu_describe(gpu, line, sizeof(line));
	assert_string_equal(line, "");
	colloc_gpu_close(gpu);

	/* "auto": sim:4x40GiB at the default path (kept in our directory). */
	must_setenv("XDG_RUNTIME_DIR", env.tmp);
	assert_int_equal(colloc_gpu_open("auto", &gpu, &diag), 0);
	assert_string_equal(colloc_gpu_backend_name(gpu), "sim");
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 4);
	assert_true(info_ok(gpu, 0).mem_total_bytes == 40 * GiB);
	colloc_gpu_close(gpu);
	unsetenv("XDG_RUNTIME_DIR");
	/* "auto:SPEC" falls back to SPEC; auto never to auto. */
	snprintf(spec, sizeof(spec), "auto:sim:path=%s/sim.state", env.tmp);
	assert_int_equal(colloc_gpu_open(spec, &gpu, &diag), 0);
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 2);
	colloc_gpu_close(gpu);
	gpu = NULL;
	expect_error(colloc_gpu_open("auto:auto", &gpu, &diag), COLLOC_EUSAGE, &diag,
		     "auto cannot fall back to auto");
	expect_error(colloc_gpu_open_auto("auto:sim", &gpu, NULL, 0, &diag),
		     COLLOC_EUSAGE, &diag, "auto cannot fall back to auto");
	assert_null(gpu);
}

/* A library that is not NVML, and arguments "nvml" does not take. */
static void test_not_nvml(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;

	(void)state;
	use(env.dcgm, "off", "basic.scn");
	expect_error(colloc_gpu_open("nvml", &gpu, &diag), COLLOC_EUNSUPPORTED, &diag,
		     "no nvmlInit_v2 nor nvmlInit");
	use(env.full, "off", "basic.scn");
	expect_error(colloc_gpu_open("nvml:x", &gpu, &diag), COLLOC_EUSAGE, &diag,
		     "nvml takes no arguments");
	assert_null(gpu);
	expect_error(colloc_gpu_open("nosuch", &gpu, &diag), COLLOC_ENOTFOUND, &diag,
		     "unknown GPU backend 'nosuch' (known: sim, nvml; or auto)");
}

/* DCGM through a running nv-hostengine; UUIDs DCGM does not know yet at
 * open are matched at the first sample. */
static void test_dcgm_hostengine(void **state)
{
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	char line[COLLOC_DIAG_MAX];
	long mark = log_mark();

	(void)state;
	use(env.full, env.dcgm,
	    scenario("gpu 0 uuid GPU-d0 name D bus 00000000:01:00.0 total 8GiB\n"
		     "hostengine\n"
		     "dcgmblankuuid 1\n"
		     "dcgmat 0 0 gr 0.5 dram 0.25\n"));
	gpu = open_nvml();
	colloc_gpu_describe(gpu, line, sizeof(line));
	expect_contains(line, "on (");
	expect_contains(line, ", nv-hostengine at 127.0.0.1, 1 GPU)");
	i = info_ok(gpu, 0);
	assert_ratio(i.gr_engine_active, 0.5);
	assert_ratio(i.dram_active, 0.25);
	assert_true(i.sm_active == COLLOC_GPU_METRIC_ABSENT);
	colloc_gpu_close(gpu);
	expect_logged(mark, "dcgmConnect 0");
	expect_logged(mark, "dcgmDisconnect 0");
	expect_not_logged(mark, "dcgmStartEmbedded 0");
}

/* Each DCGM call failing: the ratios absent, the reason in the backend's
 * description, NVML's figures untouched. Failures on the way out are
 * ignored. */
static void test_dcgm_failures(void **state)
{
	static const struct {
		const char *lines;
		const char *note; /* in the description */
		int on; /* the ratios still come (from the first sample) */
	} rows[] = {
		{"error dcgmInit -7\n", "dcgmInit: DCGM initialization error", 0},
		{"error dcgmStartEmbedded -7\n",
		 "dcgmStartEmbedded: DCGM initialization error (DCGM error -7)", 0},
		{"hostengine\nerror dcgmConnect -21\nerror dcgmStartEmbedded -29\n",
		 "dcgmStartEmbedded: This operation cannot be performed when the host "
		 "engine is running as non-root (DCGM error -29)",
		 0},
		{"error dcgmGetAllSupportedDevices -3\n",
		 "dcgmGetAllSupportedDevices: DCGM error -3", 0},
		{"error dcgmGroupCreate -3\n", "dcgmGroupCreate: DCGM error -3", 0},
		{"error dcgmFieldGroupCreate -3\n", "dcgmFieldGroupCreate: DCGM error -3",
		 0},
		{"error dcgmWatchFields -36\n",
		 "dcgmWatchFields: Profiling is not supported for this group of GPUs or "
		 "GPU (DCGM error -36)",
		 0},
		{"error dcgmUpdateAllFields -3\n", "dcgmUpdateAllFields: DCGM error -3",
		 0},
		{"error dcgmGetLatestValuesForFields -21 gpu 0 from 1\n", "on (", 1},
		{"error dcgmGetLatestValuesForFields -16 gpu 0\n", "on (", 0},
		{"error dcgmFieldGroupDestroy -3\nerror dcgmGroupDestroy -3\n"
		 "error dcgmStopEmbedded -3\nerror dcgmShutdown -3\n",
		 "on (", 1},
		{"hostengine\nerror dcgmDisconnect -3\n", "nv-hostengine", 1},
	};
	char text[1024], line[COLLOC_DIAG_MAX];

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct colloc_gpu_info i;
		struct colloc_gpu *gpu;

		snprintf(text, sizeof(text),
			 "gpu 0 uuid GPU-d0 name D bus 00000000:01:00.0 total 8GiB\n"
			 "at 0 gpu 0 used 1GiB util 7\n"
			 "dcgmat 0 0 gr 0.5 sm 0.5 occ 0.5 tensor 0.5 dram 0.5\n%s",
			 rows[r].lines);
		use(env.full, env.dcgm, scenario(text));
		gpu = open_nvml();
		colloc_gpu_describe(gpu, line, sizeof(line));
		expect_contains(line, rows[r].note);
		i = info_ok(gpu, 0);
		assert_int_equal(i.util_pct, 7);
		if (rows[r].on) {
			assert_ratio(i.sm_active, 0.5);
			/* The second sample's query fails in row 8. */
			i = info_ok(gpu, 0);
			if (strstr(rows[r].lines, "from 1"))
				assert_ratios_absent(&i);
		} else {
			assert_ratios_absent(&i);
		}
		colloc_gpu_close(gpu);
	}
}

/* No libdcgm, or a library that is not DCGM: the ratios absent. */
static void test_dcgm_missing(void **state)
{
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu;
	char line[COLLOC_DIAG_MAX], path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/nowhere/libdcgm.so.4", env.tmp);
	use(env.full, path, "basic.scn");
	gpu = open_nvml();
	colloc_gpu_describe(gpu, line, sizeof(line));
	expect_contains(line, "DCGM profiling metrics: off (no DCGM: ");
	expect_contains(line, "cannot open shared object file");
	i = info_ok(gpu, 0);
	assert_ratios_absent(&i);
	colloc_gpu_close(gpu);

	use(env.full, env.minimal, "basic.scn");
	gpu = open_nvml();
	colloc_gpu_describe(gpu, line, sizeof(line));
	expect_contains(line, ": no dcgmInit)");
	colloc_gpu_close(gpu);
}

/* Last: every name in the backend's symbol tables was called against the
 * fakes, and each function that returns a code also failed at least once. */
static void test_every_symbol_called(void **state)
{
	const char *const *lists[2];
	size_t counts[2];
	char *text = test_slurp(env.log, LOG_MAX);

	(void)state;
	assert_non_null(text);
	lists[0] = colloc__nvml_symbol_names(&counts[0]);
	lists[1] = colloc__dcgm_symbol_names(&counts[1]);
	assert_int_equal(counts[0], 28);
	assert_int_equal(counts[1], 15);
	for (int l = 0; l < 2; l++)
		for (size_t k = 0; k < counts[l]; k++) {
			const char *name = lists[l][k];
			size_t len = strlen(name);
			int called = 0, failed = 0;
			/* The two string functions are "called with a code". */
			int strings = strcmp(name, "nvmlErrorString") == 0 ||
				      strcmp(name, "errorString") == 0;

			for (const char *p = text[0] ? text : NULL; p; p = next_line(p))
				if (strncmp(p, name, len) == 0 && p[len] == ' ') {
					called = 1;
					failed |= strncmp(p + len, " 0\n", 3) != 0;
				}
			if (!called || (!failed && !strings)) {
				print_error("%s was %s against the fakes\n", name,
					    called ? "never failing" : "never called");
				fail();
			}
		}
	free(text);
}

/* ---- --soname: found by the loader, as on a real machine --------------------------- */

static void test_soname(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info i;
	struct colloc_gpu *gpu = NULL;
	char note[COLLOC_DIAG_MAX], spec[256];

	(void)state;
	unsetenv("COLLOC_NVML_LIBRARY");
	unsetenv("COLLOC_DCGM_LIBRARY");
	snprintf(spec, sizeof(spec), "%s/basic.scn", env.dir);
	must_setenv("FAKE_NVML_SCENARIO", spec);
	snprintf(spec, sizeof(spec), "sim:2x1GiB,path=%s/sim.state", env.tmp);
	assert_int_equal(colloc_gpu_open_auto(spec, &gpu, note, sizeof(note), &diag), 0);
	assert_string_equal(colloc_gpu_backend_name(gpu), "nvml");
	expect_contains(note,
			"NVML (libnvidia-ml.so.1, driver 550.54.15), 2 GPUs; DCGM "
			"profiling metrics: on (libdcgm.so.4, embedded host engine, 2 "
			"GPUs)");
	i = info_ok(gpu, 0);
	assert_string_equal(i.uuid, UUID0);
	assert_ratio(i.sm_active, 0.5);
	colloc_gpu_close(gpu);
}

static int soname_setup(void **state)
{
	(void)state;
	copy_env(env.dir, sizeof(env.dir), "FAKE_NVML_SCENARIO_DIR");
	snprintf(env.tmp, sizeof(env.tmp), "/tmp/colloc-test-nvml-XXXXXX");
	if (!mkdtemp(env.tmp))
		return -1;
	snprintf(env.log, sizeof(env.log), "%s/calls.log", env.tmp);
	unsetenv("FAKE_NVML_LOG");
	unsetenv(COLLOC_SIMGPU_ENV);
	return 0;
}

/* ---- --bench: the cost of sampling ---------------------------------------------------
 */

static double cpu_seconds(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of one full sample of every GPU: info, processes, MIG. */
static double sample_cost(struct colloc_gpu *gpu, int rounds)
{
	struct colloc_gpu_mig_instance mig[8];
	struct colloc_gpu_process p[64];
	struct colloc_gpu_info info;
	struct colloc_diag diag = {{0}};
	unsigned n = 0;
	double t0;
	size_t np;

	if (colloc_gpu_count(gpu, &n, &diag) != 0)
		return -1;
	t0 = cpu_seconds();
	for (int r = 0; r < rounds; r++)
		for (unsigned g = 0; g < n; g++)
			if (colloc_gpu_info(gpu, g, &info, &diag) != 0 ||
			    colloc_gpu_processes(gpu, g, p, 64, &np, &diag) != 0 ||
			    colloc_gpu_mig_instances(gpu, g, mig, 8, &np, &diag) != 0) {
				fprintf(stderr, "bench: GPU %u: %s\n", g, diag.msg);
				return -1;
			}
	return (cpu_seconds() - t0) / rounds;
}

static int bench(void)
{
	struct colloc_diag diag = {{0}};
	struct colloc_simgpu *sim = NULL;
	struct colloc_gpu *gpu = NULL;
	char spec[512], note[COLLOC_DIAG_MAX];
	const int rounds = 2000;
	double nvml, simc;

	snprintf(env.tmp, sizeof(env.tmp), "/tmp/colloc-bench-nvml-XXXXXX");
	copy_env(env.dir, sizeof(env.dir), "FAKE_NVML_SCENARIO_DIR");
	if (!mkdtemp(env.tmp))
		return 1;
	unsetenv("FAKE_NVML_LOG");
	snprintf(spec, sizeof(spec), "%s/bench8.scn", env.dir);
	setenv("FAKE_NVML_SCENARIO", spec, 1);
	if (colloc_gpu_open_auto(NULL, &gpu, note, sizeof(note), &diag) != 0) {
		fprintf(stderr, "bench: %s\n", diag.msg);
		return 1;
	}
	printf("nvml: %s\n", note);
	(void)sample_cost(gpu, 10);
	nvml = sample_cost(gpu, rounds);
	colloc_gpu_close(gpu);

	snprintf(spec, sizeof(spec), "%s/bench.state", env.tmp);
	if (colloc_simgpu_create(spec, 8, 80 * GiB, &sim, &diag) != 0)
		return 1;
	for (unsigned g = 0; g < 8; g++)
		if (colloc_simgpu_alloc(sim, g, getpid(), 10 * GiB, 50, &diag) != 0 ||
		    colloc_simgpu_alloc(sim, g, getppid(), 10 * GiB, 40, &diag) != 0)
			return 1;
	snprintf(spec, sizeof(spec), "sim:path=%s/bench.state", env.tmp);
	if (colloc_gpu_open(spec, &gpu, &diag) != 0) {
		fprintf(stderr, "bench: %s\n", diag.msg);
		return 1;
	}
	(void)sample_cost(gpu, 10);
	simc = sample_cost(gpu, rounds);
	colloc_gpu_close(gpu);
	colloc_simgpu_close(sim);
	snprintf(spec, sizeof(spec), "%s/bench.state", env.tmp);
	unlink(spec);
	rmdir(env.tmp);
	if (nvml < 0 || simc < 0)
		return 1;
	printf("one sample of 8 GPUs (info + processes + MIG instances), %d rounds:\n",
	       rounds);
	printf("  nvml (fake libnvidia-ml + libdcgm): %8.1f us CPU = %.4f%% of a core at "
	       "1 Hz\n",
	       nvml * 1e6, nvml * 100);
	printf("  sim (state file, baseline):         %8.1f us CPU = %.4f%% of a core at "
	       "1 Hz\n",
	       simc * 1e6, simc * 100);
	printf("  nvml / sim: %.2f; target: under 1%% of a core (%s)\n",
	       simc > 0 ? nvml / simc : 0.0, nvml * 100 < 1 ? "met" : "NOT met");
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_info),
		cmocka_unit_test(test_newest_calls_and_memory_version),
		cmocka_unit_test(test_older_library),
		cmocka_unit_test(test_minimal_library),
		cmocka_unit_test(test_mig),
		cmocka_unit_test(test_lost),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_every_call_failing),
		cmocka_unit_test(test_no_gpu),
		cmocka_unit_test(test_init_fails),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_not_nvml),
		cmocka_unit_test(test_dcgm_hostengine),
		cmocka_unit_test(test_dcgm_failures),
		cmocka_unit_test(test_dcgm_missing),
		/* Last: it reads the calls of all the others. */
		cmocka_unit_test(test_every_symbol_called),
	};
	const struct CMUnitTest soname[] = {
		cmocka_unit_test(test_soname),
	};

	if (argc == 2 && strcmp(argv[1], "--bench") == 0)
		return bench();
	if (argc == 2 && strcmp(argv[1], "--soname") == 0)
		return cmocka_run_group_tests(soname, soname_setup, group_teardown);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
