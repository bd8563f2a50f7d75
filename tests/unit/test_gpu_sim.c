/*
 * test_gpu_sim.c — the GPU backend interface (gpu.c) and the simulated GPUs
 * behind it (sim.c), on state files in a temporary directory; and the
 * duration parser colloc-simjob uses (units.c).
 *
 * One test forks a child to be a second process holding simulated memory:
 * the child does no cmocka calls and leaves with _exit().
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colloc/error.h"
#include "colloc/gpu.h"
#include "colloc/simgpu.h"
#include "colloc/units.h"
#include "test_util.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/colloc-test-gpu-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/state", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

static struct colloc_simgpu *make(const struct fixture *f, unsigned n, uint64_t mem)
{
	struct colloc_diag diag = {{0}};
	struct colloc_simgpu *sim = NULL;
	int rc = colloc_simgpu_create(f->path, n, mem, &sim, &diag);

	if (rc != 0) {
		print_error("colloc_simgpu_create: %d %s\n", rc, diag.msg);
		fail();
	}
	return sim;
}

static struct colloc_gpu_info info_of(struct colloc_simgpu *sim, unsigned index)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info info;
	int rc = colloc_simgpu_info(sim, index, &info, &diag);

	if (rc != 0) {
		print_error("colloc_simgpu_info: %d %s\n", rc, diag.msg);
		fail();
	}
	return info;
}

/* ---- duration parser ------------------------------------------------------------ */

static uint64_t dur_ok(const char *s)
{
	uint64_t v = 0;

	if (colloc_parse_duration_ms(s, &v) != 0) {
		print_error("colloc_parse_duration_ms(\"%s\") failed\n", s);
		fail();
	}
	return v;
}

static void test_duration(void **state)
{
	static const char *const bad[] = {"",	  "s",	 "-1s",
					  "1 s",  "2x",	 "1.2.3s",
					  "1e3s", "ms5", "9999999999999999999h"};
	uint64_t v = 77;

	(void)state;
	assert_int_equal(dur_ok("2s"), 2000);
	assert_int_equal(dur_ok("500ms"), 500);
	assert_int_equal(dur_ok("500MS"), 500);
	assert_int_equal(dur_ok("1m"), 60000);
	assert_int_equal(dur_ok("1min"), 60000);
	assert_int_equal(dur_ok("1.5s"), 1500);
	assert_int_equal(dur_ok("0.25m"), 15000);
	assert_int_equal(dur_ok("2h"), 7200000);
	assert_int_equal(dur_ok("3"), 3000);
	assert_int_equal(dur_ok("0"), 0);
	assert_int_equal(dur_ok("0.4ms"), 0);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		if (colloc_parse_duration_ms(bad[k], &v) != COLLOC_EUSAGE) {
			print_error("'%s' parsed as a duration\n", bad[k]);
			fail();
		}
	}
	assert_int_equal(colloc_parse_duration_ms(NULL, &v), COLLOC_EUSAGE);
	assert_int_equal(v, 77);
}

/* ---- specs ---------------------------------------------------------------------- */

static void spec_bad(const char *spec, int want, const char *msg)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	int rc = colloc_gpu_open(spec, &gpu, &diag);

	if (rc != want || !strstr(diag.msg, msg)) {
		print_error("'%s': rc %d '%s', expected %d with '%s'\n", spec, rc,
			    diag.msg, want, msg);
		fail();
	}
	assert_null(gpu);
}

static void test_spec_errors(void **state)
{
	unsigned n = 9;
	uint64_t mem = 9;
	char path[64];
	struct colloc_diag diag = {{0}};

	(void)state;
	spec_bad("sim:0x1GiB", COLLOC_EUSAGE, "the number of GPUs must be 1 to 64");
	spec_bad("sim:65x1GiB", COLLOC_EUSAGE, "the number of GPUs must be 1 to 64");
	spec_bad("sim:2xabc", COLLOC_EUSAGE, "'abc' is not a memory size");
	spec_bad("sim:2x0", COLLOC_EUSAGE, "more than 0 bytes");
	spec_bad("sim:twox1GiB", COLLOC_EUSAGE, "'two' is not a number of GPUs");
	spec_bad("sim:2", COLLOC_EUSAGE, "expected NxSIZE");
	spec_bad("sim:2x1GiB,util=5", COLLOC_EUSAGE, "unknown option 'util=5'");
	spec_bad("sim:2x1GiB,path=", COLLOC_EUSAGE, "path= wants a file");
	spec_bad("foo:1x2", COLLOC_ENOTFOUND,
		 "unknown GPU backend 'foo' (known: sim, nvml; or auto)");
	spec_bad("nvml:x", COLLOC_EUSAGE, "nvml takes no arguments");
	spec_bad("", COLLOC_EUSAGE, "not a GPU backend spec");
	spec_bad(":x", COLLOC_EUSAGE, "not a GPU backend spec");

	assert_int_equal(colloc_simgpu_parse_args("4x40GiB,path=/a,b", &n, &mem, path,
						  sizeof(path), &diag),
			 0);
	assert_int_equal(n, 4);
	assert_int_equal(mem, 40 * GiB);
	assert_string_equal(path, "/a,b");
	assert_int_equal(
		colloc_simgpu_parse_args("", &n, &mem, path, sizeof(path), &diag), 0);
	assert_int_equal(n, 0);
	assert_string_equal(path, "");
	assert_int_equal(
		colloc_simgpu_parse_args("path=/x", &n, &mem, path, sizeof(path), &diag),
		0);
	assert_int_equal(n, 0);
	assert_string_equal(path, "/x");

	assert_non_null(colloc_gpu_backend_find("sim"));
	assert_null(colloc_gpu_backend_find("dcgm"));
	{
		size_t nb = 0;
		const struct colloc_gpu_backend_ops *const *list =
			colloc_gpu_backends(&nb);

		assert_int_equal(nb, 2);
		assert_ptr_equal(list[0], colloc_gpu_backend_find("sim"));
	}
}

/* ---- the backend interface -------------------------------------------------------- */

static void test_open_info(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	struct colloc_gpu_info a, b, again;
	char spec[200], env[300], want[300];
	unsigned n = 0;
	size_t np = 9;

	snprintf(spec, sizeof(spec), "sim:2x1GiB,path=%s", f->path);
	assert_int_equal(colloc_gpu_open(spec, &gpu, &diag), 0);
	assert_string_equal(colloc_gpu_backend_name(gpu), "sim");
	assert_int_equal(colloc_gpu_count(gpu, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_int_equal(colloc_gpu_info(gpu, 0, &a, &diag), 0);
	assert_int_equal(colloc_gpu_info(gpu, 1, &b, &diag), 0);
	assert_int_equal(a.mem_total_bytes, GiB);
	assert_int_equal(a.mem_used_bytes, 0);
	assert_int_equal(a.mem_free_bytes, GiB);
	assert_int_equal(a.util_pct, 0);
	assert_int_equal(a.power_mw, 60000);
	assert_true(a.energy_mj >= 0);
	assert_int_equal(strncmp(a.uuid, "SIM-", 4), 0);
	assert_int_equal(strlen(a.uuid), 40); /* SIM- and 8-4-4-4-12 */
	assert_string_not_equal(a.uuid, b.uuid);
	assert_string_equal(a.pci_bus_id, "00000000:01:00.0");
	assert_string_equal(b.pci_bus_id, "00000000:02:00.0");
	assert_non_null(strstr(a.name, "simulated"));
	assert_int_equal(colloc_gpu_processes(gpu, 0, NULL, 0, &np, &diag), 0);
	assert_int_equal(np, 0);
	assert_int_equal(colloc_gpu_info(gpu, 2, &again, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "no simulated GPU 2"));

	/* A job must find the same file from any directory. */
	assert_int_equal(colloc_gpu_job_env(gpu, env, sizeof(env), &diag), 0);
	snprintf(want, sizeof(want), "COLLOC_SIM_STATE=%s", f->path);
	assert_string_equal(env, want);
	assert_int_equal(colloc_gpu_job_env(gpu, env, 10, &diag), COLLOC_ELIMIT);
	colloc_gpu_close(gpu);

	/* Reopened, by the same spec or by "sim:path=": the same UUIDs. */
	gpu = NULL;
	assert_int_equal(colloc_gpu_open(spec, &gpu, &diag), 0);
	assert_int_equal(colloc_gpu_info(gpu, 0, &again, &diag), 0);
	assert_string_equal(again.uuid, a.uuid);
	colloc_gpu_close(gpu);
	snprintf(spec, sizeof(spec), "sim:path=%s", f->path);
	gpu = NULL;
	assert_int_equal(colloc_gpu_open(spec, &gpu, &diag), 0);
	assert_int_equal(colloc_gpu_info(gpu, 1, &again, &diag), 0);
	assert_string_equal(again.uuid, b.uuid);
	colloc_gpu_close(gpu);
	colloc_gpu_close(NULL);
}

/* ---- accounting ------------------------------------------------------------------- */

static void test_alloc_release(void **state)
{
	struct fixture *f = *state;
	struct colloc_simgpu *sim = make(f, 2, GiB);
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process procs[4];
	struct colloc_gpu_info info;
	int64_t me = getpid(), parent = getppid();
	char *before, *after;
	size_t n = 0;

	assert_int_equal(colloc_simgpu_alloc(sim, 0, me, 600 * MiB, 30, &diag), 0);
	info = info_of(sim, 0);
	assert_int_equal(info.mem_used_bytes, 600 * MiB);
	assert_int_equal(info.mem_free_bytes, 424 * MiB);
	assert_int_equal(info.util_pct, 30);
	assert_int_equal(info.power_mw, 60000 + 240000 * 30 / 100);
	/* A second allocation adds to the first; util is the latest. */
	assert_int_equal(colloc_simgpu_alloc(sim, 0, me, 100 * MiB, 40, &diag), 0);
	assert_int_equal(colloc_simgpu_alloc(sim, 0, parent, 200 * MiB, 80, &diag), 0);
	info = info_of(sim, 0);
	assert_int_equal(info.mem_used_bytes, 900 * MiB);
	assert_int_equal(info.util_pct, 100); /* min(100, 40 + 80) */
	assert_int_equal(colloc_simgpu_processes(sim, 0, procs, 4, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_int_equal(procs[0].pid, me);
	assert_int_equal(procs[0].used_bytes, 700 * MiB);
	assert_int_equal(procs[1].pid, parent);
	assert_int_equal(procs[1].used_bytes, 200 * MiB);
	/* cap smaller than the number: the count still comes back. */
	assert_int_equal(colloc_simgpu_processes(sim, 0, procs, 1, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_int_equal(info_of(sim, 1).mem_used_bytes, 0);

	/* Overflow: -ENOMEM, and the file is exactly as it was. */
	before = test_slurp(f->path, 1 << 20);
	assert_non_null(before);
	assert_non_null(strstr(before, "\nproc 0 "));
	assert_int_equal(colloc_simgpu_alloc(sim, 0, me, 125 * MiB, 40, &diag), -ENOMEM);
	assert_non_null(strstr(diag.msg, "124 MiB free"));
	assert_int_equal(colloc_simgpu_alloc(sim, 0, 999999, GiB + 1, 10, &diag),
			 -ENOMEM);
	after = test_slurp(f->path, 1 << 20);
	assert_non_null(after);
	assert_string_equal(before, after);
	free(before);
	free(after);
	assert_int_equal(info_of(sim, 0).mem_used_bytes, 900 * MiB);

	/* What fits exactly is fine. */
	assert_int_equal(colloc_simgpu_alloc(sim, 0, me, 124 * MiB, 40, &diag), 0);
	assert_int_equal(info_of(sim, 0).mem_free_bytes, 0);

	assert_int_equal(colloc_simgpu_release(sim, 0, me, &diag), 0);
	info = info_of(sim, 0);
	assert_int_equal(info.mem_used_bytes, 200 * MiB);
	assert_int_equal(info.util_pct, 80);
	assert_int_equal(colloc_simgpu_release(sim, 0, me, &diag), 0); /* twice: fine */
	assert_int_equal(colloc_simgpu_release(sim, 0, parent, &diag), 0);
	info = info_of(sim, 0);
	assert_int_equal(info.mem_used_bytes, 0);
	assert_int_equal(info.util_pct, 0);

	assert_int_equal(colloc_simgpu_alloc(sim, 2, me, 1, 1, &diag), COLLOC_EUSAGE);
	assert_int_equal(colloc_simgpu_alloc(sim, 0, 0, 1, 1, &diag), COLLOC_EUSAGE);
	assert_int_equal(colloc_simgpu_alloc(sim, 0, me, 1, 101, &diag), COLLOC_EUSAGE);
	assert_int_equal(colloc_simgpu_release(sim, 5, me, &diag), COLLOC_EUSAGE);
	colloc_simgpu_close(sim);
}

/* A child takes memory and exits without giving it back: once it is gone
 * (reaped), the parent's next read frees it. */
static void test_dead_process(void **state)
{
	struct fixture *f = *state;
	struct colloc_simgpu *sim = make(f, 2, GiB);
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process procs[2];
	int up[2], down[2], status = 0;
	size_t n = 0;
	char byte = 0;
	pid_t child;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct colloc_simgpu *mine = NULL;
		int code = 0;

		close(up[0]);
		close(down[1]);
		if (colloc_simgpu_attach(f->path, &mine, NULL) != 0 ||
		    colloc_simgpu_alloc(mine, 1, getpid(), 512 * MiB, 70, NULL) != 0)
			code = 1;
		if (write(up[1], &code, 1) != 1 || read(down[0], &byte, 1) < 0)
			code = 2;
		_exit(code); /* no release, no close: a crash */
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &byte, 1), 1);
	assert_int_equal(byte, 0);
	assert_int_equal(info_of(sim, 1).mem_used_bytes, 512 * MiB);
	assert_int_equal(info_of(sim, 1).util_pct, 70);
	assert_int_equal(colloc_simgpu_processes(sim, 1, procs, 2, &n, &diag), 0);
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, child);
	assert_int_equal(write(down[1], "x", 1), 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(up[0]);
	close(down[1]);

	assert_int_equal(info_of(sim, 1).mem_used_bytes, 0);
	assert_int_equal(info_of(sim, 1).util_pct, 0);
	assert_int_equal(colloc_simgpu_processes(sim, 1, procs, 2, &n, &diag), 0);
	assert_int_equal(n, 0);
	colloc_simgpu_close(sim);
}

/* ---- the file --------------------------------------------------------------------- */

static void attach_bad(const struct fixture *f, const char *text, int want,
		       const char *msg)
{
	struct colloc_diag diag = {{0}};
	struct colloc_simgpu *sim = NULL;
	int rc;

	if (text)
		write_file(f->path, text);
	rc = colloc_simgpu_attach(f->path, &sim, &diag);
	if (rc != want || !strstr(diag.msg, msg) || !strstr(diag.msg, f->path)) {
		print_error("rc %d '%s', expected %d with '%s'\n", rc, diag.msg, want,
			    msg);
		fail();
	}
	assert_null(sim);
}

#define HEAD "colloc-simgpu 1\nid 00000000deadbeef\ngpus 1\n"
#define GPU0 "gpu 0 total 1073741824 energy_mj 0 stamp_ms 0\n"

static void test_corrupt(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct colloc_simgpu *sim = NULL;
	char *text;

	attach_bad(f, NULL, -ENOENT, "no simulated GPUs here");
	attach_bad(f, "", COLLOC_EFORMAT, "empty");
	attach_bad(f, "hello world\n", COLLOC_EFORMAT,
		   ":1: not a colloc-simgpu state file");
	attach_bad(f, "colloc-simgpu 2\n", COLLOC_EFORMAT, "version 2");
	attach_bad(f, HEAD GPU0, COLLOC_EFORMAT, "cut short");
	attach_bad(f, HEAD "gpu 0 total 10", COLLOC_EFORMAT,
		   ":4: the last line is cut short");
	attach_bad(f, HEAD "gpu 0 total 0 energy_mj 0 stamp_ms 0\nend\n", COLLOC_EFORMAT,
		   ":4: a GPU without memory");
	attach_bad(f, HEAD GPU0 "proc 0 1 1073741825 5\nend\n", COLLOC_EFORMAT,
		   ":5: processes use more memory than the GPU has");
	attach_bad(f, HEAD GPU0 "proc 0 1 10 101\nend\n", COLLOC_EFORMAT,
		   "expected 'proc GPU PID BYTES UTIL_PCT'");
	attach_bad(f, HEAD GPU0 "proc 0 1 10 5\nproc 0 1 10 5\nend\n", COLLOC_EFORMAT,
		   ":6: duplicate process");
	attach_bad(f, HEAD GPU0 "end\nend\n", COLLOC_EFORMAT, "text after 'end'");
	attach_bad(f, HEAD GPU0 "frob\nend\n", COLLOC_EFORMAT, ":5: unknown line");
	attach_bad(f, "colloc-simgpu 1\nid 00000000deadbeef\ngpus 2\n" GPU0 "end\n",
		   COLLOC_EFORMAT, "fewer GPUs than its header says");
	attach_bad(f, "colloc-simgpu 1\nid xyz\n", COLLOC_EFORMAT, "expected 'id HEX16'");
	attach_bad(f,
		   HEAD "gpu 0 total 99999999999999999999 energy_mj 0 stamp_ms 0\nend\n",
		   COLLOC_EFORMAT, "expected 'gpu INDEX total BYTES");
	{
		char nul[] = HEAD GPU0 "end\n";

		nul[3] = '\0';
		write_file(f->path, "");
		{
			FILE *fp = fopen(f->path, "w");

			assert_non_null(fp);
			assert_int_equal(fwrite(nul, 1, sizeof(nul) - 1, fp),
					 sizeof(nul) - 1);
			assert_int_equal(fclose(fp), 0);
		}
		attach_bad(f, NULL, COLLOC_EFORMAT, "NUL bytes");
	}

	/* create() neither repairs nor overwrites a corrupt file. */
	write_file(f->path, "hello world\n");
	assert_int_equal(colloc_simgpu_create(f->path, 2, GiB, &sim, &diag),
			 COLLOC_EFORMAT);
	assert_null(sim);
	text = test_slurp(f->path, 1024);
	assert_non_null(text);
	assert_string_equal(text, "hello world\n");
	free(text);

	/* A well-formed file written by hand is read; dead entries go. */
	write_file(f->path, HEAD GPU0 "proc 0 1 10 5\nend\n");
	assert_int_equal(colloc_simgpu_attach(f->path, &sim, &diag), 0);
	/* pid 1 lives (init), so it stays: EPERM is not ESRCH. */
	assert_int_equal(info_of(sim, 0).mem_used_bytes, 10);
	colloc_simgpu_close(sim);
}

/* Energy integrates power over time: a GPU idle (60 W) since a stamp 10 s
 * ago has used at least 600 J. */
static void test_energy(void **state)
{
	struct fixture *f = *state;
	struct colloc_simgpu *sim = NULL;
	struct colloc_diag diag = {{0}};
	struct timespec ts;
	char text[512];
	long long then;
	int64_t e;

	clock_gettime(CLOCK_REALTIME, &ts);
	then = (long long)ts.tv_sec * 1000 - 10000;
	snprintf(text, sizeof(text),
		 HEAD "gpu 0 total 1073741824 energy_mj 5 stamp_ms %lld\nend\n", then);
	write_file(f->path, text);
	assert_int_equal(colloc_simgpu_attach(f->path, &sim, &diag), 0);
	e = info_of(sim, 0).energy_mj;
	assert_true(e >= 5 + 600000);
	assert_true(e < 5 + 60000 * 20);
	colloc_simgpu_close(sim);
}

static void test_reshape_and_find(void **state)
{
	struct fixture *f = *state;
	struct colloc_simgpu *sim = make(f, 2, GiB), *other = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_info a = info_of(sim, 0), b = info_of(sim, 1);
	char lower[COLLOC_GPU_UUID_MAX];
	unsigned idx = 99, n = 0;

	assert_int_equal(colloc_simgpu_find(sim, b.uuid, &idx, &diag), 0);
	assert_int_equal(idx, 1);
	for (size_t k = 0; k < sizeof(lower); k++)
		lower[k] = (char)((b.uuid[k] >= 'A' && b.uuid[k] <= 'Z') ? b.uuid[k] + 32
									 : b.uuid[k]);
	assert_int_equal(colloc_simgpu_find(sim, lower, &idx, &diag), 0);
	assert_int_equal(idx, 1);
	assert_int_equal(colloc_simgpu_find(sim, "0", &idx, &diag), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(colloc_simgpu_find(sim, "2", &idx, &diag), COLLOC_ENOTFOUND);
	assert_int_equal(colloc_simgpu_find(sim, "SIM-nope", &idx, &diag),
			 COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "no simulated GPU 'SIM-nope'"));
	assert_int_equal(colloc_simgpu_find(sim, "GPU-0", &idx, &diag), COLLOC_ENOTFOUND);

	/* In use: other GPUs are refused. */
	assert_int_equal(colloc_simgpu_alloc(sim, 1, getpid(), MiB, 10, &diag), 0);
	assert_int_equal(colloc_simgpu_create(f->path, 4, 2 * GiB, &other, &diag),
			 COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "in use by 1 processes"));
	assert_null(other);
	/* The same shape attaches and sees the allocation. */
	assert_int_equal(colloc_simgpu_create(f->path, 2, GiB, &other, &diag), 0);
	assert_int_equal(info_of(other, 1).mem_used_bytes, MiB);
	colloc_simgpu_close(other);
	other = NULL;

	/* Idle: reshaped, with the UUIDs of the GPUs that stay. */
	assert_int_equal(colloc_simgpu_release(sim, 1, getpid(), &diag), 0);
	assert_int_equal(colloc_simgpu_create(f->path, 4, 2 * GiB, &other, &diag), 0);
	assert_int_equal(colloc_simgpu_count(sim, &n, &diag), 0);
	assert_int_equal(n, 4);
	assert_string_equal(info_of(sim, 0).uuid, a.uuid);
	assert_string_equal(info_of(sim, 1).uuid, b.uuid);
	assert_int_equal(info_of(sim, 3).mem_total_bytes, 2 * GiB);
	colloc_simgpu_close(other);
	colloc_simgpu_close(sim);
	colloc_simgpu_close(NULL);

	assert_int_equal(colloc_simgpu_create(f->path, 0, GiB, &other, &diag),
			 COLLOC_EUSAGE);
	assert_int_equal(colloc_simgpu_create(f->path, 1, 0, &other, &diag),
			 COLLOC_EUSAGE);
}

static void test_default_path(void **state)
{
	char buf[256];
	struct colloc_diag diag = {{0}};

	(void)state;
	assert_int_equal(setenv("COLLOC_SIM_STATE", "/x/y.state", 1), 0);
	assert_int_equal(colloc_simgpu_default_path(buf, sizeof(buf), &diag), 0);
	assert_string_equal(buf, "/x/y.state");
	assert_int_equal(colloc_simgpu_default_path(buf, 4, &diag), COLLOC_ELIMIT);
	assert_int_equal(unsetenv("COLLOC_SIM_STATE"), 0);
	assert_int_equal(setenv("XDG_RUNTIME_DIR", "/run/user/7", 1), 0);
	assert_int_equal(colloc_simgpu_default_path(buf, sizeof(buf), &diag), 0);
	assert_string_equal(buf, "/run/user/7/colloc-sim.state");
	assert_int_equal(unsetenv("XDG_RUNTIME_DIR"), 0);
	assert_int_equal(colloc_simgpu_default_path(buf, sizeof(buf), &diag), 0);
	assert_int_equal(strncmp(buf, "/tmp/colloc-sim-", 16), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test_setup_teardown(test_open_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_energy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reshape_and_find, setup, teardown),
		cmocka_unit_test(test_default_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
