/*
 * test_mps.c — MPS control daemons and client environments (src/daemon/
 * mps.c) against tests/fake/fake-mps-control, which records every call.
 * The fake's path comes from FAKE_MPS_CONTROL (set by CTest).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ftw.h>
#include <unistd.h>

#include "colloc/error.h"
#include "daemon/mps.h"
#include "test_util.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static char dir[64];
static char logpath[128];

static const char *control(void)
{
	const char *c = getenv("FAKE_MPS_CONTROL");

	return c ? c : "fake-mps-control";
}

/* The fake's log as one string (static buffer). */
static const char *fake_log(void)
{
	static char buf[4096];
	FILE *f = fopen(logpath, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/colloc-mps.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(logpath, sizeof(logpath), "%s/fake.log", dir);
	setenv("FAKE_MPS_LOG", logpath, 1);
	unsetenv("FAKE_MPS_FAIL");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return test_rm_rf(dir);
}

static void test_start_stop(void **state)
{
	struct colloc_diag diag = {{0}};
	char base[128], expect[512], ctl[256];
	struct stat sb;

	(void)state;
	snprintf(base, sizeof(base), "%s/mps", dir);
	assert_int_equal(cd_mps_start(control(), base, "GPU-aaaa", 5000, &diag), 0);
	snprintf(expect, sizeof(expect),
		 "start gpu=GPU-aaaa pipe=%s/GPU-aaaa/pipe log=%s/GPU-aaaa/log", base,
		 base);
	assert_non_null(strstr(fake_log(), expect));
	snprintf(ctl, sizeof(ctl), "%s/GPU-aaaa/pipe/control", base);
	assert_int_equal(stat(ctl, &sb), 0);
	/* A second start finds it running and leaves it alone. */
	assert_int_equal(cd_mps_start(control(), base, "GPU-aaaa", 5000, &diag), 0);
	assert_non_null(strstr(fake_log(), "get_server_list gpu=GPU-aaaa"));
	assert_null(strstr(strstr(fake_log(), expect) + 1, "start gpu=GPU-aaaa"));
	assert_int_equal(cd_mps_stop(control(), base, "GPU-aaaa", 5000, &diag), 0);
	assert_non_null(strstr(fake_log(), "quit gpu=GPU-aaaa"));
	assert_int_not_equal(stat(ctl, &sb), 0);
}

static void test_start_fails(void **state)
{
	struct colloc_diag diag = {{0}};
	char base[128];

	(void)state;
	snprintf(base, sizeof(base), "%s/mps", dir);
	setenv("FAKE_MPS_FAIL", "start", 1);
	assert_int_equal(cd_mps_start(control(), base, "GPU-bbbb", 5000, &diag),
			 COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "cannot start MPS"));
	assert_non_null(strstr(diag.msg, "already running"));
	unsetenv("FAKE_MPS_FAIL");
	assert_int_not_equal(
		cd_mps_start("/nonexistent/mps-control", base, "GPU-bbbb", 5000, &diag),
		0);
	assert_non_null(strstr(diag.msg, "cannot execute '/nonexistent/mps-control'"));
}

static void test_job_env(void **state)
{
	struct colloc_diag diag = {{0}};
	char env[CD_MPS_ENV_MAX][CD_MPS_ENV_LEN];
	size_t n = 0;

	(void)state;
	assert_int_equal(cd_mps_job_env("/s/mps", "GPU-cccc", 0.42, 0, 6 * GiB, 512 * MiB,
					env, &n, &diag),
			 0);
	assert_int_equal(n, 3);
	assert_string_equal(env[0], "CUDA_MPS_PIPE_DIRECTORY=/s/mps/GPU-cccc/pipe");
	assert_string_equal(env[1], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=42");
	assert_string_equal(env[2], "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=6656M");
	/* Clamped to 10..100, a configured share wins, MiB rounded up. */
	assert_int_equal(cd_mps_job_env("/s", "G", 0.01, 0, 1, 0, env, &n, &diag), 0);
	assert_string_equal(env[1], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10");
	assert_string_equal(env[2], "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1M");
	assert_int_equal(cd_mps_job_env("/s", "G", 0.5, 75, GiB, 0, env, &n, &diag), 0);
	assert_string_equal(env[1], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=75");
	assert_string_equal(env[2], "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1024M");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_fails, setup, teardown),
		cmocka_unit_test(test_job_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
