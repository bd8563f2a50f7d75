/*
 * test_daemon.c — collocd's core driven with a time of the test's choosing
 * (cd_daemon_set_now): start-up reservations and their timing, a step of
 * the wall clock, a restart that adopts a running job, and the cost of a
 * submit against the depth of the queue. A real daemon core on simulated
 * GPUs in a temporary directory; running jobs are real `sleep` processes
 * under supervisors, cancelled before each test ends (every wait bounded).
 * Nothing here sleeps to let time pass: the test hands the core its time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colloc/error.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "test_util.h"

#define GiB (1ull << 30)
#define WAIT_MS 10000
#if defined(__SANITIZE_ADDRESS__)
#define LATENCY_BOUND_US 20000.0
#else
#define LATENCY_BOUND_US 5000.0
#endif

struct fixture {
	char dir[64];
	struct cd_config cfg;
	struct cd_daemon *d;
	struct cd_peer peer;
	struct cd_now now; /* the test's clock */
};

static double real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int open_daemon(struct fixture *f)
{
	struct colloc_diag diag = {{0}};

	if (cd_daemon_create(&f->cfg, f->now, NULL, &f->d, &diag) != 0) {
		print_error("cd_daemon_create: %s\n", diag.msg);
		return -1;
	}
	cd_daemon_set_now(f->d, f->now);
	return 0;
}

static int setup_gpus(void **state, const char *gpus, int64_t reserve_ms)
{
	static struct fixture f;

	memset(&f, 0, sizeof(f));
	snprintf(f.dir, sizeof(f.dir), "/tmp/colloc-core.XXXXXX");
	if (!mkdtemp(f.dir))
		return -1;
	cd_config_defaults(&f.cfg);
	snprintf(f.cfg.gpus, sizeof(f.cfg.gpus), "sim:%s,path=%s/gpus.state", gpus,
		 f.dir);
	snprintf(f.cfg.db_path, sizeof(f.cfg.db_path), "%s/collocd.db", f.dir);
	snprintf(f.cfg.state_dir, sizeof(f.cfg.state_dir), "%s/state", f.dir);
	snprintf(f.cfg.socket_path, sizeof(f.cfg.socket_path), "%s/sock", f.dir);
	f.cfg.kill_grace_ms = 1000;
	f.cfg.reserve_ms = reserve_ms;
	f.cfg.sched.headroom_bytes = GiB;
	/* A clock of the test's own, far from the real one: the core must
	 * take its time from cd_daemon_set_now() only. */
	f.now.mono_ms = test_mono_ms() + 1000000;
	f.now.wall_ms = (int64_t)1700000000 * 1000;
	f.peer.uid = (uint32_t)geteuid();
	f.peer.gid = (uint32_t)getegid();
	f.peer.pid = getpid();
	if (open_daemon(&f))
		return -1;
	*state = &f;
	return 0;
}

static int setup_40(void **state)
{
	return setup_gpus(state, "1x40GiB", 60 * 1000);
}

/* The same, with reservations that outlast the test. */
static int setup_40_held(void **state)
{
	return setup_gpus(state, "1x40GiB", 3600 * 1000);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	cd_daemon_destroy(f->d);
	return test_rm_rf(f->dir);
}

/* ----------------------------------------------------------------- helpers */

static void advance(struct fixture *f, int64_t mono_ms, int64_t wall_ms)
{
	f->now.mono_ms += mono_ms;
	f->now.wall_ms += wall_ms;
	cd_daemon_set_now(f->d, f->now);
	(void)cd_daemon_tick(f->d, true);
}

static uint64_t submit(struct fixture *f, uint64_t need, const char *argv_json)
{
	struct colloc_diag diag = {{0}};
	struct cd_submit req;
	struct cd_job job;
	uint64_t id;
	int rc;

	memset(&req, 0, sizeof(req));
	req.n_gpus = 1;
	req.mem_bytes = need;
	snprintf(req.mem_source, sizeof(req.mem_source), "request");
	req.util = 0.3;
	req.graph_gpu_util = -1;
	req.graph_sm_activity = -1;
	snprintf(req.cwd, sizeof(req.cwd), "/");
	req.argv_json = strdup(argv_json);
	req.env_json = strdup("[\"PATH=/usr/bin:/bin\"]");
	assert_non_null(req.argv_json);
	assert_non_null(req.env_json);
	rc = cd_daemon_submit(f->d, &f->peer, &req, &job, &diag);
	cd_submit_fini(&req);
	if (rc != 0) {
		print_error("submit: %s\n", diag.msg);
		fail();
	}
	id = job.id;
	cd_job_fini(&job);
	return id;
}

static int state_of(struct fixture *f, uint64_t id)
{
	struct colloc_diag diag = {{0}};
	struct cd_job job;
	int st;

	assert_int_equal(cd_daemon_get(f->d, &f->peer, id, &job, &diag), 0);
	st = job.state;
	cd_job_fini(&job);
	return st;
}

/* Cancel job id; when it ran, wait for its supervisor and reap it. */
static void cancel(struct fixture *f, uint64_t id)
{
	struct colloc_diag diag = {{0}};
	struct cd_job job;
	int64_t deadline;
	pid_t w = 0;

	assert_int_equal(cd_daemon_cancel(f->d, &f->peer, id, &job, &diag), 0);
	if (job.sup_pid > 0) {
		deadline = test_mono_ms() + WAIT_MS;
		while ((w = waitpid((pid_t)job.sup_pid, NULL, WNOHANG)) == 0 &&
		       test_mono_ms() < deadline)
			test_nap_ms(10);
		assert_int_equal(w, (pid_t)job.sup_pid);
		cd_daemon_reap(f->d, job.sup_pid);
	}
	cd_job_fini(&job);
	assert_int_equal(state_of(f, id), CD_JOB_CANCELLED);
}

/* ------------------------------------------------------------------- tests */

/*
 * A started job holds its need back until it uses it or `reserve` passes on
 * the monotonic clock. A wall-clock step of +120 s (NTP, an admin's `date`)
 * moves nothing; the monotonic minute does.
 */
static void test_reservation_follows_the_monotonic_clock(void **state)
{
	struct fixture *f = *state;
	uint64_t a, b;

	a = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 0, 0);
	assert_int_equal(state_of(f, a), CD_JOB_RUNNING);

	/* 40 GiB - 20 reserved < 20 + 1 GiB headroom */
	b = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 1000, 120 * 1000);
	assert_int_equal(state_of(f, b), CD_JOB_QUEUED);
	advance(f, 57 * 1000, 1000);
	assert_int_equal(state_of(f, b), CD_JOB_QUEUED);
	/* a minute of monotonic time after the start: the reservation lapses */
	advance(f, 2000, 0);
	assert_int_equal(state_of(f, b), CD_JOB_RUNNING);

	cancel(f, a);
	cancel(f, b);
}

/*
 * After a restart the core adopts the running job and holds its
 * reservation anew: the earlier process's clock is not trusted, and a wall
 * clock that says the job started long ago does not release it.
 */
static void test_restart_adopts_and_reserves_again(void **state)
{
	struct fixture *f = *state;
	uint64_t a, b;

	a = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 0, 0);
	assert_int_equal(state_of(f, a), CD_JOB_RUNNING);
	b = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 50 * 1000, 0);
	assert_int_equal(state_of(f, b), CD_JOB_QUEUED);

	cd_daemon_destroy(f->d);
	f->d = NULL;
	f->now.wall_ms += 3600 * 1000; /* the wall clock says an hour went by */
	f->now.mono_ms += 20 * 1000;
	assert_int_equal(open_daemon(f), 0);
	advance(f, 0, 0);
	assert_int_equal(state_of(f, a), CD_JOB_RUNNING);
	assert_int_equal(state_of(f, b), CD_JOB_QUEUED);
	advance(f, 61 * 1000, 0);
	assert_int_equal(state_of(f, b), CD_JOB_RUNNING);

	cancel(f, a);
	cancel(f, b);
}

/* Time handed to the core never goes back. */
static void test_time_is_monotonic(void **state)
{
	struct fixture *f = *state;
	struct cd_now back = f->now;
	uint64_t a, b;

	a = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 0, 0);
	b = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 61 * 1000, 0);
	assert_int_equal(state_of(f, b), CD_JOB_RUNNING);
	cancel(f, b);
	/* a caller that hands an earlier monotonic time changes nothing */
	back.mono_ms -= 3600 * 1000;
	cd_daemon_set_now(f->d, back);
	b = submit(f, 20 * GiB, "[\"sleep\",\"60\"]");
	(void)cd_daemon_tick(f->d, true);
	assert_int_equal(state_of(f, b), CD_JOB_RUNNING);
	cancel(f, a);
	cancel(f, b);
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* This thread's CPU time (user + system), us: what a submit costs, which
 * other processes on a busy machine do not stretch as they do wall time. */
static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Medians of the wall and CPU time of n submits, each followed by the
 * pass it asks for. */
static void submit_p50_us(struct fixture *f, int n, double *wall, double *cpu)
{
	double t[64], c[64];

	assert_true(n <= 64);
	for (int k = 0; k < n; k++) {
		double t0 = real_us(), c0 = cpu_us();

		(void)submit(f, 30 * GiB, "[\"true\"]");
		(void)cd_daemon_tick(f->d, false);
		t[k] = real_us() - t0;
		c[k] = cpu_us() - c0;
	}
	qsort(t, (size_t)n, sizeof(t[0]), cmp_d);
	qsort(c, (size_t)n, sizeof(c[0]), cmp_d);
	*wall = t[n / 2];
	*cpu = c[n / 2];
}

/*
 * The cost of a submit does not grow with the queue: the pass reads the
 * jobs from memory, not from the store. 5,000 jobs wait behind one that
 * holds the GPU; the median submit at depth 5,000 is compared with the one
 * at depth 100, and bounded (docs/collocd.md quotes the numbers).
 */
static void test_submit_cost_flat_in_queue_depth(void **state)
{
	struct fixture *f = *state;
	double shallow, deep, shallow_cpu, deep_cpu;
	uint64_t a;
	size_t queued, running;

	a = submit(f, 30 * GiB, "[\"sleep\",\"60\"]");
	advance(f, 0, 0);
	assert_int_equal(state_of(f, a), CD_JOB_RUNNING);
	for (int k = 0; k < 100; k++)
		(void)submit(f, 30 * GiB, "[\"true\"]");
	submit_p50_us(f, 31, &shallow, &shallow_cpu);
	for (int k = 0; k < 4900; k++)
		(void)submit(f, 30 * GiB, "[\"true\"]");
	submit_p50_us(f, 31, &deep, &deep_cpu);
	cd_daemon_counts(f->d, &queued, &running);
	assert_true(queued >= 5000);
	assert_int_equal(running, 1);
	print_message("submit + pass, median: %.2f ms at depth 100, %.2f ms at depth %zu "
		      "(CPU %.2f and %.2f ms)\n",
		      shallow / 1000, deep / 1000, queued, shallow_cpu / 1000,
		      deep_cpu / 1000);
	/* Under 5 ms at depth 5,000 (issue 14's bound, measured on an
	 * optimised build); ASan and UBSan make the pass over 5,000 records
	 * about four times slower, so a sanitised build gets 20 ms. Bounded
	 * in CPU time, which a loaded machine (the suite's other tests, a CI
	 * run beside it) does not stretch; the wall time, which it does, only
	 * within four times the bound, to catch a submit that blocks. */
	assert_true(deep_cpu < LATENCY_BOUND_US);
	assert_true(deep < 4 * LATENCY_BOUND_US);
	cancel(f, a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_reservation_follows_the_monotonic_clock, setup_40, teardown),
		cmocka_unit_test_setup_teardown(test_restart_adopts_and_reserves_again,
						setup_40, teardown),
		cmocka_unit_test_setup_teardown(test_time_is_monotonic, setup_40,
						teardown),
		cmocka_unit_test_setup_teardown(test_submit_cost_flat_in_queue_depth,
						setup_40_held, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
