/*
 * test_metrics.c — the Prometheus text (src/daemon/metrics.c) rendered from
 * a real daemon on simulated GPUs in a temporary directory: every family
 * has HELP and TYPE and is written in one piece, the values follow the
 * daemon's state (idle, a queued job, a running job using memory, a
 * cancelled one, GPUs that cannot be read), and label values are escaped.
 *
 * The running-job test launches a real `sleep` under a supervisor (as
 * collocd does) and cancels it; every wait is bounded.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colloc/error.h"
#include "colloc/simgpu.h"
#include "daemon/config.h"
#include "test_util.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"

#define GiB (1ull << 30)
#define WAIT_MS 10000

struct fixture {
	char dir[64];
	char state_path[128];
	struct cd_daemon *d;
	struct cd_peer peer;
};

static int setup(void **state)
{
	static struct fixture f;
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;

	memset(&f, 0, sizeof(f));
	snprintf(f.dir, sizeof(f.dir), "/tmp/colloc-metrics.XXXXXX");
	if (!mkdtemp(f.dir))
		return -1;
	snprintf(f.state_path, sizeof(f.state_path), "%s/gpus.state", f.dir);
	cd_config_defaults(&cfg);
	snprintf(cfg.gpus, sizeof(cfg.gpus), "sim:2x8GiB,path=%s", f.state_path);
	snprintf(cfg.db_path, sizeof(cfg.db_path), "%s/collocd.db", f.dir);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", f.dir);
	snprintf(cfg.socket_path, sizeof(cfg.socket_path), "%s/sock", f.dir);
	cfg.kill_grace_ms = 1000;
	if (cd_daemon_create(&cfg, cd_now_read(), NULL, &f.d, &diag) != 0) {
		print_error("cd_daemon_create: %s\n", diag.msg);
		return -1;
	}
	f.peer.uid = (uint32_t)geteuid();
	f.peer.gid = (uint32_t)getegid();
	f.peer.pid = getpid();
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	cd_daemon_destroy(f->d);
	return test_rm_rf(f->dir);
}

/* ----------------------------------------------------------------- helpers */

static char *render(struct cd_daemon *d)
{
	struct colloc_diag diag = {{0}};
	char *text = NULL;
	size_t len = 0;
	int rc = cd_metrics_render(d, &text, &len, &diag);

	if (rc != 0) {
		print_error("cd_metrics_render: %d %s\n", rc, diag.msg);
		fail();
	}
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_true(len > 0 && text[len - 1] == '\n');
	return text;
}

/*
 * The text's shape: every sample belongs to the family of the TYPE line
 * above it; every TYPE follows its HELP; no family appears twice; names are
 * colloc_*; values are numbers. Returns the number of families.
 */
static int check_shape(const char *text)
{
	char family[128] = "", help[128] = "";
	char seen[64][128];
	int n_seen = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n;
		char line[2048];

		assert_non_null(nl);
		n = (size_t)(nl - p);
		assert_true(n < sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (strncmp(line, "# HELP ", 7) == 0) {
			assert_true(sscanf(line + 7, "%127s", help) == 1);
			assert_non_null(strchr(line + 7, ' ')); /* has a text */
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char type[32];

			assert_int_equal(sscanf(line + 7, "%127s %31s", family, type), 2);
			assert_string_equal(family, help);
			assert_true(strcmp(type, "gauge") == 0 ||
				    strcmp(type, "counter") == 0);
			assert_true(strncmp(family, "colloc_", 7) == 0);
			for (int k = 0; k < n_seen; k++)
				assert_string_not_equal(seen[k], family);
			assert_true(n_seen < 64);
			snprintf(seen[n_seen++], sizeof(seen[0]), "%s", family);
			continue;
		}
		{
			size_t fl = strlen(family);
			const char *value = strrchr(line, ' ');
			char *end;

			assert_true(fl > 0);
			if (strncmp(line, family, fl) != 0 ||
			    (line[fl] != '{' && line[fl] != ' ')) {
				print_error("sample '%s' outside its family '%s'\n", line,
					    family);
				fail();
			}
			assert_non_null(value);
			(void)strtod(value + 1, &end);
			assert_true(end != value + 1 && *end == '\0');
		}
	}
	return n_seen;
}

static bool has_family(const char *text, const char *name, const char *type)
{
	char want[256];

	snprintf(want, sizeof(want), "# HELP %s ", name);
	if (!strstr(text, want))
		return false;
	snprintf(want, sizeof(want), "\n# TYPE %s %s\n", name, type);
	return strstr(text, want) != NULL;
}

/* The value of the sample written exactly as series ("name{labels}");
 * fails the test when there is none. */
static double value_of(const char *text, const char *series)
{
	char want[1024];
	const char *at;

	snprintf(want, sizeof(want), "\n%s ", series);
	at = strstr(text, want);
	if (!at) {
		print_error("no sample %s in:\n%s\n", series, text);
		fail();
		return -1; /* not reached */
	}
	return strtod(at + strlen(want), NULL);
}

static bool has_series(const char *text, const char *series)
{
	char want[1024];

	snprintf(want, sizeof(want), "\n%s ", series);
	return strstr(text, want) != NULL;
}

static const char *const daemon_families[][2] = {
	{"colloc_up", "gauge"},
	{"colloc_build_info", "gauge"},
	{"colloc_uptime_seconds", "gauge"},
	{"colloc_gpus", "gauge"},
	{"colloc_jobs", "gauge"},
	{"colloc_jobs_submitted_total", "counter"},
	{"colloc_oom_requeued_jobs_total", "counter"},
	{"colloc_jobs_lost_total", "counter"},
	{"colloc_scheduler_passes_total", "counter"},
	{"colloc_scheduler_pass_seconds_total", "counter"},
	{"colloc_scheduler_last_pass_seconds", "gauge"},
	{"colloc_gpu_info", "gauge"},
	{"colloc_gpu_up", "gauge"},
	{"colloc_gpu_memory_reserved_bytes", "gauge"},
	{"colloc_gpu_jobs", "gauge"},
};

static const char *const sampled_families[][2] = {
	{"colloc_gpu_memory_total_bytes", "gauge"},
	{"colloc_gpu_memory_used_bytes", "gauge"},
	{"colloc_gpu_utilization_ratio", "gauge"},
	{"colloc_gpu_power_watts", "gauge"},
	{"colloc_gpu_energy_joules_total", "counter"},
};

static const char *const job_families[][2] = {
	{"colloc_job_memory_need_bytes", "gauge"},
	{"colloc_job_memory_peak_bytes", "gauge"},
	{"colloc_job_memory_used_bytes", "gauge"},
	{"colloc_job_attempts", "gauge"},
	{"colloc_job_start_time_seconds", "gauge"},
};

static const char *const absent_on_sim[] = {
	"colloc_gpu_memory_driver_reserved_bytes",
	"colloc_gpu_mig_mode",
	"colloc_gpu_graphics_engine_active_ratio",
	"colloc_gpu_sm_active_ratio",
	"colloc_gpu_sm_occupancy_ratio",
	"colloc_gpu_tensor_active_ratio",
	"colloc_gpu_dram_active_ratio",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* "{gpu="G",uuid="U"}" of GPU g, from its colloc_gpu_info line. */
static void gpu_labels(const char *text, unsigned g, char *out, size_t cap)
{
	char want[64];
	const char *at, *end;

	snprintf(want, sizeof(want), "\ncolloc_gpu_info{gpu=\"%u\",uuid=\"", g);
	at = strstr(text, want);
	assert_non_null(at);
	at += strlen(want);
	end = strchr(at, '"');
	assert_non_null(end);
	snprintf(out, cap, "{gpu=\"%u\",uuid=\"%.*s\"}", g, (int)(end - at), at);
}

static uint64_t submit(struct fixture *f, const char *name, const char *argv_json)
{
	struct colloc_diag diag = {{0}};
	struct cd_submit req;
	struct cd_job job;
	uint64_t id;
	int rc;

	memset(&req, 0, sizeof(req));
	snprintf(req.name, sizeof(req.name), "%s", name);
	req.n_gpus = 1;
	req.mem_bytes = 2 * GiB;
	snprintf(req.mem_source, sizeof(req.mem_source), "request");
	req.util = 0.4;
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

/* ------------------------------------------------------------------- tests */

static void test_idle(void **state)
{
	struct fixture *f = *state;
	char *text = render(f->d);
	char series[256], labels[160];

	/* every daemon-wide and per-GPU family, HELP and TYPE, nothing of jobs */
	assert_true(check_shape(text) >=
		    (int)(N_OF(daemon_families) + N_OF(sampled_families)));
	for (size_t k = 0; k < N_OF(daemon_families); k++)
		assert_true(
			has_family(text, daemon_families[k][0], daemon_families[k][1]));
	for (size_t k = 0; k < N_OF(sampled_families); k++)
		assert_true(
			has_family(text, sampled_families[k][0], sampled_families[k][1]));
	for (size_t k = 0; k < N_OF(job_families); k++)
		assert_null(strstr(text, job_families[k][0]));
	/* the simulated GPUs have no DCGM, MIG or driver-reserved figure:
	 * absent, never 0 */
	for (size_t k = 0; k < N_OF(absent_on_sim); k++)
		assert_null(strstr(text, absent_on_sim[k]));

	assert_true(value_of(text, "colloc_up") == 1);
	assert_true(value_of(text, "colloc_gpus") == 2);
	assert_true(value_of(text, "colloc_build_info{version=\"" COLLOC_VERSION
				   "\",backend=\"sim\",policy=\"estimate-aware\"}") == 1);
	assert_true(value_of(text, "colloc_jobs{state=\"queued\"}") == 0);
	assert_true(value_of(text, "colloc_jobs{state=\"cancelled\"}") == 0);
	assert_true(value_of(text, "colloc_jobs_submitted_total") == 0);
	assert_true(value_of(text, "colloc_uptime_seconds") >= 0);
	for (unsigned g = 0; g < 2; g++) {
		gpu_labels(text, g, labels, sizeof(labels));
		assert_non_null(strstr(labels, "uuid=\"SIM-"));
		snprintf(series, sizeof(series), "colloc_gpu_up%s", labels);
		assert_true(value_of(text, series) == 1);
		snprintf(series, sizeof(series), "colloc_gpu_memory_total_bytes%s",
			 labels);
		assert_true(value_of(text, series) == (double)(8 * GiB));
		snprintf(series, sizeof(series), "colloc_gpu_memory_used_bytes%s",
			 labels);
		assert_true(value_of(text, series) == 0);
		snprintf(series, sizeof(series), "colloc_gpu_utilization_ratio%s",
			 labels);
		assert_true(value_of(text, series) == 0);
		snprintf(series, sizeof(series), "colloc_gpu_power_watts%s", labels);
		assert_true(value_of(text, series) == 60); /* the sim's idle power */
		snprintf(series, sizeof(series), "colloc_gpu_jobs%s", labels);
		assert_true(value_of(text, series) == 0);
	}
	free(text);
}

/* Queued jobs count by state but have no per-job series. */
static void test_queued(void **state)
{
	struct fixture *f = *state;
	char *text;

	assert_int_equal(submit(f, "first", "[\"sleep\",\"30\"]"), 1);
	assert_int_equal(submit(f, "second", "[\"sleep\",\"30\"]"), 2);
	text = render(f->d);
	check_shape(text);
	assert_true(value_of(text, "colloc_jobs{state=\"queued\"}") == 2);
	assert_true(value_of(text, "colloc_jobs{state=\"running\"}") == 0);
	assert_true(value_of(text, "colloc_jobs_submitted_total") == 2);
	assert_null(strstr(text, "colloc_job_"));
	free(text);
}

/* A running job with an awkward name: its series, its GPU's, and the
 * escaping; then cancelled, it leaves only the counts. */
static void test_running_job(void **state)
{
	/* quote, backslash, newline, a byte that is not UTF-8, and é */
	static const char name[] = "a\"b\\c\nd\xff\xc3\xa9";
	static const char escaped[] = "a\\\"b\\\\c\\nd\xef\xbf\xbd\xc3\xa9";
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct colloc_simgpu *sim = NULL;
	const struct passwd *pw = getpwuid(geteuid());
	char user[64], series[512], jl[256], gl[160];
	struct cd_job job;
	unsigned g = 0;
	uint64_t id;
	int64_t deadline;
	pid_t w;
	char *text;

	snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "");
	if (!pw)
		snprintf(user, sizeof(user), "%u", (unsigned)geteuid());
	id = submit(f, name, "[\"sleep\",\"30\"]");
	cd_daemon_set_now(f->d, cd_now_read());
	(void)cd_daemon_tick(f->d, true); /* places and launches it */
	assert_int_equal(cd_daemon_get(f->d, &f->peer, id, &job, &diag), 0);
	assert_int_equal(job.state, CD_JOB_RUNNING);
	assert_true(job.job_pgid > 0);

	/* The job "allocates" 1 GiB on its GPU, as colloc-simjob would. */
	assert_int_equal(colloc_simgpu_attach(f->state_path, &sim, &diag), 0);
	assert_int_equal(colloc_simgpu_find(sim, job.gpus[0], &g, &diag), 0);
	assert_int_equal(colloc_simgpu_alloc(sim, g, job.job_pgid, GiB, 40, &diag), 0);
	cd_daemon_set_now(f->d, cd_now_read());
	(void)cd_daemon_tick(f->d, true);

	text = render(f->d);
	check_shape(text);
	for (size_t k = 0; k < N_OF(job_families); k++)
		assert_true(has_family(text, job_families[k][0], job_families[k][1]));
	snprintf(jl, sizeof(jl), "{job=\"%llu\",user=\"%s\",name=\"%s\"}",
		 (unsigned long long)id, user, escaped);
	snprintf(series, sizeof(series), "colloc_job_memory_need_bytes%s", jl);
	assert_true(value_of(text, series) == (double)(2 * GiB));
	snprintf(series, sizeof(series), "colloc_job_memory_peak_bytes%s", jl);
	assert_true(value_of(text, series) == (double)GiB);
	snprintf(series, sizeof(series), "colloc_job_attempts%s", jl);
	assert_true(value_of(text, series) == 1);
	snprintf(series, sizeof(series), "colloc_job_start_time_seconds%s", jl);
	assert_true(value_of(text, series) == (double)job.start_ms / 1000.0);
	jl[strlen(jl) - 1] = '\0';
	snprintf(series, sizeof(series), "colloc_job_memory_used_bytes%s,gpu=\"%u\"}", jl,
		 g);
	assert_true(value_of(text, series) == (double)GiB);
	/* the raw name never appears: no line is broken by it */
	assert_null(strstr(text, "\nd"));

	gpu_labels(text, g, gl, sizeof(gl));
	snprintf(series, sizeof(series), "colloc_gpu_memory_used_bytes%s", gl);
	assert_true(value_of(text, series) == (double)GiB);
	/* within `reserve` and below its need: the rest is held back */
	snprintf(series, sizeof(series), "colloc_gpu_memory_reserved_bytes%s", gl);
	assert_true(value_of(text, series) == (double)GiB);
	snprintf(series, sizeof(series), "colloc_gpu_utilization_ratio%s", gl);
	assert_true(value_of(text, series) == 0.4);
	snprintf(series, sizeof(series), "colloc_gpu_jobs%s", gl);
	assert_true(value_of(text, series) == 1);
	snprintf(series, sizeof(series), "colloc_gpu_power_watts%s", gl);
	assert_true(value_of(text, series) > 60);
	assert_true(value_of(text, "colloc_jobs{state=\"running\"}") == 1);
	assert_true(value_of(text, "colloc_scheduler_passes_total") >= 1);
	assert_true(value_of(text, "colloc_scheduler_pass_seconds_total") > 0);
	free(text);

	/* Cancel; the supervisor ends; the daemon records it. */
	cd_job_fini(&job);
	assert_int_equal(cd_daemon_cancel(f->d, &f->peer, id, &job, &diag), 0);
	deadline = test_mono_ms() + WAIT_MS;
	while ((w = waitpid((pid_t)job.sup_pid, NULL, WNOHANG)) == 0 &&
	       test_mono_ms() < deadline)
		test_nap_ms(10);
	assert_int_equal(w, (pid_t)job.sup_pid);
	cd_daemon_reap(f->d, job.sup_pid);
	cd_job_fini(&job);
	assert_int_equal(cd_daemon_get(f->d, &f->peer, id, &job, &diag), 0);
	assert_int_equal(job.state, CD_JOB_CANCELLED);
	cd_job_fini(&job);
	cd_daemon_set_now(f->d, cd_now_read());
	(void)cd_daemon_tick(f->d, true);
	colloc_simgpu_close(sim);

	text = render(f->d);
	check_shape(text);
	assert_null(strstr(text, "colloc_job_"));
	assert_true(value_of(text, "colloc_jobs{state=\"running\"}") == 0);
	assert_true(value_of(text, "colloc_jobs{state=\"cancelled\"}") == 1);
	snprintf(series, sizeof(series), "colloc_gpu_jobs%s", gl);
	assert_true(value_of(text, series) == 0);
	snprintf(series, sizeof(series), "colloc_gpu_memory_used_bytes%s", gl);
	assert_true(value_of(text, series) == 0);
	free(text);
}

/* GPUs that cannot be read: up 0, and no stale figure written as if
 * measured; the families that would be empty are left out whole. */
static void test_gpus_down(void **state)
{
	struct fixture *f = *state;
	char series[256], labels[160];
	char *text = render(f->d);
	FILE *fp;

	gpu_labels(text, 1, labels, sizeof(labels));
	free(text);
	fp = fopen(f->state_path, "w");
	assert_non_null(fp);
	fputs("this is not a state file\n", fp);
	assert_int_equal(fclose(fp), 0);
	cd_daemon_set_now(f->d, cd_now_read());
	(void)cd_daemon_tick(f->d, true);

	text = render(f->d);
	check_shape(text);
	snprintf(series, sizeof(series), "colloc_gpu_up%s", labels);
	assert_true(value_of(text, series) == 0);
	for (size_t k = 0; k < N_OF(sampled_families); k++)
		assert_false(
			has_family(text, sampled_families[k][0], sampled_families[k][1]));
	snprintf(series, sizeof(series), "colloc_gpu_memory_used_bytes%s", labels);
	assert_false(has_series(text, series));
	/* what does not come from the sample stays */
	assert_non_null(strstr(text, "\ncolloc_gpu_info{gpu=\"1\",uuid=\"SIM-"));
	snprintf(series, sizeof(series), "colloc_gpu_jobs%s", labels);
	assert_true(value_of(text, series) == 0);
	assert_true(value_of(text, "colloc_up") == 1);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_running_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpus_down, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
