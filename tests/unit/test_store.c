/*
 * test_store.c — collocd's job record (job.c) and durable store (store.c):
 * every field through SQLite and back, listing, events, peaks, transactions,
 * persistence across reopen, and the files the store must refuse.
 *
 * File databases live in a mkdtemp() directory per test that teardown
 * empties and removes. Where a test needs what the API does not offer
 * (deleting rows, a newer schema version, a damaged row) it edits the file
 * with SQLite directly while no store has it open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "colloc/error.h"
#include "daemon/job.h"
#include "daemon/store.h"
#include "test_util.h"

struct fixture {
	char dir[64];
	char db[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/colloc-test-store-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->db, sizeof(f->db), "%s/colloc.db", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	DIR *d = opendir(f->dir);
	struct dirent *e;

	while (d && (e = readdir(d)) != NULL) {
		char path[512];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", f->dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct cd_store *open_ok(const char *path)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = NULL;
	int rc = cd_store_open(path, &store, &diag);

	if (rc != 0) {
		print_error("cd_store_open(%s): %d %s\n", path, rc, diag.msg);
		fail();
	}
	assert_non_null(store);
	return store;
}

/* Run constant SQL on path with SQLite directly (no store open). */
static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *err = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		print_error("%s: %s\n", sql, err ? err : "?");
		sqlite3_free(err);
		sqlite3_close(db);
		fail();
	}
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *r = malloc(n);

	assert_non_null(r);
	memcpy(r, s, n);
	return r;
}

/* A job with every field set to something other than its init value. */
static void full_job(struct cd_job *job)
{
	cd_job_init(job);
	snprintf(job->name, sizeof(job->name), "训练-ρ-🚀 résumé");
	job->uid = 4000000000u;
	job->gid = 1234;
	snprintf(job->user, sizeof(job->user), "alice");
	job->state = CD_JOB_RUNNING;
	job->n_gpus = 16;
	job->priority = -7;
	job->mem_need_bytes = UINT64_MAX;
	snprintf(job->mem_source, sizeof(job->mem_source), "oom-retry");
	job->util_pred = 0.625;
	/* The longest utilization source the field holds. */
	snprintf(job->util_source, sizeof(job->util_source), "graph (%.*s)",
		 (int)sizeof(job->util_source) - 9,
		 "a100-80gb-cu124-torch26-with-a-very-long-name-for-a-profile-file-"
		 "that-goes-on");
	job->graph_gpu_util = 0.875;
	job->graph_sm_activity = 0.0;
	snprintf(job->graph_platform, sizeof(job->graph_platform),
		 "a100-80gb-cu124-torch26");
	snprintf(job->model, sizeof(job->model), "--model resnet50 --batch 64");
	cd_job_history_key("[\"python\",\"train.py\"]", "/x", job->model, job->key);
	/* The longest cwd the field holds. */
	memset(job->cwd, 'd', sizeof(job->cwd) - 1);
	job->cwd[0] = '/';
	job->cwd[sizeof(job->cwd) - 1] = '\0';
	job->argv_json = xstrdup("[\"python\",\"train.py\",\"--lr\",\"0.1\"]");
	job->env_json =
		xstrdup("[\"CUDA_DEVICE_ORDER=PCI_BUS_ID\",\"HOME=/home/alice\"]");
	job->attempts = 3;
	job->exclusive = true;
	job->n_assigned = COLLOC_SCHED_MAX_GPUS;
	for (int i = 0; i < COLLOC_SCHED_MAX_GPUS; i++)
		snprintf(job->gpus[i], sizeof(job->gpus[i]),
			 "GPU-%08x-1234-5678-9abc-%012x", 0xdeadbe00u + (unsigned)i,
			 (unsigned)i * 7u);
	/* One UUID as long as the field allows. */
	memset(job->gpus[5], 'u', sizeof(job->gpus[5]) - 1);
	job->gpus[5][sizeof(job->gpus[5]) - 1] = '\0';
	job->sup_pid = 123456;
	job->sup_start = UINT64_MAX - 1;
	job->job_pgid = 123457;
	job->peak_bytes = (uint64_t)INT64_MAX + 12345;
	job->util_mean = 0.3125;
	job->util_samples = UINT64_MAX;
	job->cancel_requested = true;
	job->exit_code = 137;
	job->term_signal = 9;
	snprintf(job->reason, sizeof(job->reason), "CUDA out of memory — tried 2 GiB");
	job->submit_ms = 1700000000123;
	job->start_ms = 1700000001456;
	job->end_ms = -1;
	job->stop_cause = CD_STOP_TIME_LIMIT;
	job->time_limit_ms = CD_TIME_LIMIT_MAX_MS;
	job->held = true;
	job->n_deps = CD_DEPS_MAX;
	for (int i = 0; i < CD_DEPS_MAX; i++) {
		job->deps[i].id = ((uint64_t)1 << 53) - (uint64_t)i;
		job->deps[i].kind = i % 2 ? COLLOC_DEP_ANY : COLLOC_DEP_OK;
		job->deps[i].met = i % 3 == 0;
	}
	job->array_id = 41;
	job->array_index = 999999;
	job->array_max_running = 1000;
}

static void assert_job_equal(const struct cd_job *a, const struct cd_job *b)
{
	assert_true(a->id == b->id);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_string_equal(a->user, b->user);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->n_gpus, b->n_gpus);
	assert_int_equal(a->priority, b->priority);
	assert_true(a->mem_need_bytes == b->mem_need_bytes);
	assert_string_equal(a->mem_source, b->mem_source);
	assert_true(a->util_pred == b->util_pred);
	assert_string_equal(a->util_source, b->util_source);
	assert_true(a->graph_gpu_util == b->graph_gpu_util);
	assert_true(a->graph_sm_activity == b->graph_sm_activity);
	assert_string_equal(a->graph_platform, b->graph_platform);
	assert_string_equal(a->model, b->model);
	assert_string_equal(a->key, b->key);
	assert_string_equal(a->cwd, b->cwd);
	assert_string_equal(a->argv_json ? a->argv_json : "[]", b->argv_json);
	assert_string_equal(a->env_json ? a->env_json : "[]", b->env_json);
	assert_int_equal(a->attempts, b->attempts);
	assert_int_equal(a->exclusive, b->exclusive);
	assert_int_equal(a->n_assigned, b->n_assigned);
	for (int i = 0; i < a->n_assigned; i++)
		assert_string_equal(a->gpus[i], b->gpus[i]);
	assert_true(a->sup_pid == b->sup_pid);
	assert_true(a->sup_start == b->sup_start);
	assert_true(a->job_pgid == b->job_pgid);
	assert_true(a->peak_bytes == b->peak_bytes);
	assert_true(a->util_mean == b->util_mean);
	assert_true(a->util_samples == b->util_samples);
	assert_int_equal(a->cancel_requested, b->cancel_requested);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_int_equal(a->term_signal, b->term_signal);
	assert_string_equal(a->reason, b->reason);
	assert_true(a->submit_ms == b->submit_ms);
	assert_true(a->start_ms == b->start_ms);
	assert_true(a->end_ms == b->end_ms);
	assert_int_equal(a->stop_cause, b->stop_cause);
	assert_true(a->time_limit_ms == b->time_limit_ms);
	assert_int_equal(a->held, b->held);
	assert_int_equal(a->n_deps, b->n_deps);
	for (int i = 0; i < a->n_deps; i++) {
		assert_true(a->deps[i].id == b->deps[i].id);
		assert_int_equal(a->deps[i].kind, b->deps[i].kind);
		assert_int_equal(a->deps[i].met, b->deps[i].met);
	}
	assert_true(a->array_id == b->array_id);
	assert_int_equal(a->array_index, b->array_index);
	assert_int_equal(a->array_max_running, b->array_max_running);
}

/* Insert a plain job with the given state and uid; returns its id. */
static uint64_t add_job(struct cd_store *store, int state, uint32_t uid)
{
	struct colloc_diag diag = {{0}};
	struct cd_job job;
	int rc;

	cd_job_init(&job);
	job.state = state;
	job.uid = uid;
	job.n_gpus = 1;
	snprintf(job.name, sizeof(job.name), "job-%d-%u", state, (unsigned)uid);
	rc = cd_store_job_insert(store, &job, &diag);
	if (rc != 0) {
		print_error("insert: %d %s\n", rc, diag.msg);
		fail();
	}
	return job.id;
}

/* --- job.c ------------------------------------------------------------------ */

static void test_state_names(void **state)
{
	(void)state;
	for (int s = 0; s < CD_JOB_STATE_COUNT_; s++)
		assert_int_equal(cd_job_state_parse(cd_job_state_name(s)), s);
	assert_string_equal(cd_job_state_name(CD_JOB_QUEUED), "queued");
	assert_string_equal(cd_job_state_name(CD_JOB_RUNNING), "running");
	assert_string_equal(cd_job_state_name(CD_JOB_DONE), "done");
	assert_string_equal(cd_job_state_name(CD_JOB_FAILED), "failed");
	assert_string_equal(cd_job_state_name(CD_JOB_CANCELLED), "cancelled");
	assert_non_null(cd_job_state_name(-1));
	assert_non_null(cd_job_state_name(CD_JOB_STATE_COUNT_));
	assert_int_equal(cd_job_state_parse("Queued"), -1);
	assert_int_equal(cd_job_state_parse(""), -1);
	assert_int_equal(cd_job_state_parse("unknown"), -1);
	assert_int_equal(cd_job_state_parse(NULL), -1);
	assert_false(cd_job_state_final(CD_JOB_QUEUED));
	assert_false(cd_job_state_final(CD_JOB_RUNNING));
	assert_true(cd_job_state_final(CD_JOB_DONE));
	assert_true(cd_job_state_final(CD_JOB_FAILED));
	assert_true(cd_job_state_final(CD_JOB_CANCELLED));
	assert_false(cd_job_state_final(-1));
	assert_false(cd_job_state_final(CD_JOB_STATE_COUNT_));
}

static void test_job_init_fini(void **state)
{
	struct cd_job job;

	(void)state;
	memset(&job, 0x5a, sizeof(job));
	cd_job_init(&job);
	assert_int_equal(job.exit_code, -1);
	assert_int_equal(job.state, CD_JOB_QUEUED);
	assert_true(job.id == 0);
	assert_null(job.argv_json);
	assert_null(job.env_json);
	assert_string_equal(job.name, "");
	assert_string_equal(job.cwd, "");
	assert_int_equal(job.n_assigned, 0);
	assert_true(job.util_pred == 0.0);
	assert_string_equal(job.util_source, "");
	assert_true(job.graph_gpu_util < 0 && job.graph_sm_activity < 0);

	job.argv_json = xstrdup("[\"a\"]");
	job.env_json = xstrdup("[]");
	job.state = CD_JOB_DONE;
	cd_job_fini(&job); /* ASan reports a leak if the strings stay */
	assert_null(job.argv_json);
	assert_null(job.env_json);
	assert_int_equal(job.exit_code, -1);
	assert_int_equal(job.state, CD_JOB_QUEUED);
	cd_job_fini(NULL);
}

static void test_history_key(void **state)
{
	const char *argv = "[\"python\",\"train.py\"]";
	char key[CD_KEY_MAX];
	char other[CD_KEY_MAX];

	(void)state;
	/* Expected values from Python: FNV-1a 64 over each part and a NUL. */
	cd_job_history_key(argv, "/home/u/proj", "", key);
	assert_string_equal(key, "12ba4348a071771c");
	cd_job_history_key(NULL, NULL, NULL, key);
	assert_string_equal(key, "d94d12186c0f2fb7");
	cd_job_history_key("", "", "", other);
	assert_string_equal(key, other);

	cd_job_history_key(argv, "/home/u/proj", "", key);
	cd_job_history_key(argv, "/home/u/proj", NULL, other);
	assert_string_equal(key, other);
	assert_int_equal(strlen(key), 16);
	for (int i = 0; i < 16; i++)
		assert_non_null(strchr("0123456789abcdef", key[i]));

	cd_job_history_key("[\"python\",\"train2.py\"]", "/home/u/proj", "", other);
	assert_string_not_equal(key, other);
	cd_job_history_key(argv, "/home/u/proj2", "", other);
	assert_string_not_equal(key, other);
	cd_job_history_key(argv, "/home/u/proj", "--batch 8", other);
	assert_string_not_equal(key, other);
	/* The NUL separators keep the parts apart. */
	cd_job_history_key("ab", "c", "", key);
	cd_job_history_key("a", "bc", "", other);
	assert_string_not_equal(key, other);
	cd_job_history_key("a", "", "b", key);
	cd_job_history_key("a", "b", "", other);
	assert_string_not_equal(key, other);
}

/* --- store: jobs ------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job job;
	struct cd_job got;
	uint64_t last = 99;

	(void)state;
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 0);

	full_job(&job);
	job.id = 777; /* ignored */
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_true(job.id == 1);
	assert_int_equal(cd_store_job_get(store, 1, &got, &diag), 0);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);

	/* NULL JSON strings are stored as "[]"; no GPUs assigned. */
	cd_job_fini(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_true(job.id == 2);
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), 0);
	assert_string_equal(got.argv_json, "[]");
	assert_string_equal(got.env_json, "[]");
	assert_int_equal(got.exit_code, -1);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);

	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 2);
	assert_string_equal(diag.msg, ""); /* success leaves diag alone */
	cd_store_close(store);
	cd_store_close(NULL);
}

/* A field filled to the brim without its NUL is stored cut, not overrun. */
static void test_unterminated_fields(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job job;
	struct cd_job got;

	(void)state;
	cd_job_init(&job);
	memset(job.name, 'n', sizeof(job.name));
	memset(job.user, 'u', sizeof(job.user));
	memset(job.key, 'k', sizeof(job.key));
	job.n_assigned = 1;
	memset(job.gpus[0], 'g', sizeof(job.gpus[0]));
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_int_equal(cd_store_job_get(store, job.id, &got, &diag), 0);
	assert_int_equal(strlen(got.name), sizeof(got.name) - 1);
	assert_int_equal(strlen(got.user), sizeof(got.user) - 1);
	assert_int_equal(strlen(got.key), sizeof(got.key) - 1);
	assert_int_equal(strlen(got.gpus[0]), sizeof(got.gpus[0]) - 1);
	cd_job_fini(&got);
	cd_store_close(store);
}

static void test_update(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job job;
	struct cd_job got;

	(void)state;
	full_job(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	add_job(store, CD_JOB_QUEUED, 1);

	job.state = CD_JOB_FAILED;
	job.exit_code = 1;
	job.term_signal = 0;
	job.n_assigned = 2;
	snprintf(job.gpus[1], sizeof(job.gpus[1]), "MIG-abc");
	job.end_ms = 1700000009999;
	job.peak_bytes = 42;
	job.exclusive = false;
	snprintf(job.reason, sizeof(job.reason), "exit status 1");
	free(job.env_json);
	job.env_json = NULL;
	assert_int_equal(cd_store_job_update(store, &job, &diag), 0);
	assert_int_equal(cd_store_job_get(store, job.id, &got, &diag), 0);
	assert_job_equal(&job, &got);
	assert_string_equal(got.env_json, "[]");
	cd_job_fini(&got);

	/* The other job is untouched. */
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), 0);
	assert_string_equal(got.name, "job-0-1");
	cd_job_fini(&got);

	job.id = 3;
	assert_int_equal(cd_store_job_update(store, &job, &diag), COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "job 3"));
	cd_job_fini(&job);
	cd_store_close(store);
}

static void test_get_missing(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job got;

	(void)state;
	memset(&got, 0x5a, sizeof(got));
	assert_int_equal(cd_store_job_get(store, 1, &got, &diag), COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "not found"));
	assert_null(got.argv_json);
	assert_int_equal(got.exit_code, -1);
	cd_job_fini(&got);
	add_job(store, CD_JOB_QUEUED, 0);
	assert_int_equal(cd_store_job_get(store, 0, &got, &diag), COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_job_get(store, UINT64_MAX, &got, &diag),
			 COLLOC_ENOTFOUND);
	cd_store_close(store);
}

static void test_invalid_job(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job job;
	uint64_t last = 0;

	(void)state;
	cd_job_init(&job);
	job.state = CD_JOB_STATE_COUNT_;
	assert_int_equal(cd_store_job_insert(store, &job, &diag), COLLOC_EUSAGE);
	job.state = CD_JOB_QUEUED;
	job.n_assigned = COLLOC_SCHED_MAX_GPUS + 1;
	assert_int_equal(cd_store_job_insert(store, &job, &diag), COLLOC_EUSAGE);
	job.n_assigned = -1;
	assert_int_equal(cd_store_job_insert(store, &job, &diag), COLLOC_EUSAGE);
	job.n_assigned = 1;
	snprintf(job.gpus[0], sizeof(job.gpus[0]), "GPU-a,GPU-b");
	assert_int_equal(cd_store_job_insert(store, &job, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "comma"));
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 0);
	cd_store_close(store);
}

static void test_list(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job *jobs = NULL;
	size_t n = 99;
	const unsigned all = (1u << CD_JOB_STATE_COUNT_) - 1;
	const unsigned live = (1u << CD_JOB_QUEUED) | (1u << CD_JOB_RUNNING);

	(void)state;
	assert_int_equal(cd_store_job_list(store, all, -1, 0, &jobs, &n, &diag), 0);
	assert_null(jobs);
	assert_int_equal(n, 0);

	add_job(store, CD_JOB_QUEUED, 1000); /* 1 */
	add_job(store, CD_JOB_RUNNING, 1001); /* 2 */
	add_job(store, CD_JOB_DONE, 1000); /* 3 */
	add_job(store, CD_JOB_FAILED, 1000); /* 4 */
	add_job(store, CD_JOB_CANCELLED, 1001); /* 5 */
	add_job(store, CD_JOB_QUEUED, 1001); /* 6 */
	add_job(store, CD_JOB_QUEUED, 4000000000u); /* 7 */

	assert_int_equal(cd_store_job_list(store, all, -1, 0, &jobs, &n, &diag), 0);
	assert_int_equal(n, 7);
	for (size_t i = 0; i < n; i++) {
		assert_true(jobs[i].id == i + 1);
		assert_string_equal(jobs[i].argv_json, "[]");
		cd_job_fini(&jobs[i]);
	}
	free(jobs);

	assert_int_equal(cd_store_job_list(store, live, -1, 0, &jobs, &n, &diag), 0);
	assert_int_equal(n, 4);
	assert_true(jobs[0].id == 1 && jobs[1].id == 2 && jobs[2].id == 6 &&
		    jobs[3].id == 7);
	for (size_t i = 0; i < n; i++)
		cd_job_fini(&jobs[i]);
	free(jobs);

	assert_int_equal(cd_store_job_list(store, all, 1000, 0, &jobs, &n, &diag), 0);
	assert_int_equal(n, 3);
	assert_true(jobs[0].id == 1 && jobs[1].id == 3 && jobs[2].id == 4);
	for (size_t i = 0; i < n; i++)
		cd_job_fini(&jobs[i]);
	free(jobs);

	/* A uid above INT32_MAX is still matched exactly. */
	assert_int_equal(cd_store_job_list(store, all, 4000000000LL, 0, &jobs, &n, &diag),
			 0);
	assert_int_equal(n, 1);
	assert_true(jobs[0].id == 7 && jobs[0].uid == 4000000000u);
	cd_job_fini(&jobs[0]);
	free(jobs);

	assert_int_equal(
		cd_store_job_list(store, 1u << CD_JOB_QUEUED, 1001, 0, &jobs, &n, &diag),
		0);
	assert_int_equal(n, 1);
	assert_true(jobs[0].id == 6);
	cd_job_fini(&jobs[0]);
	free(jobs);

	assert_int_equal(cd_store_job_list(store, all, -1, 2, &jobs, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_true(jobs[0].id == 1 && jobs[1].id == 2);
	for (size_t i = 0; i < n; i++)
		cd_job_fini(&jobs[i]);
	free(jobs);

	assert_int_equal(cd_store_job_list(store, live, 1000, 5, &jobs, &n, &diag), 0);
	assert_int_equal(n, 1);
	assert_true(jobs[0].id == 1);
	cd_job_fini(&jobs[0]);
	free(jobs);

	assert_int_equal(cd_store_job_list(store, 0, -1, 0, &jobs, &n, &diag), 0);
	assert_null(jobs);
	assert_int_equal(n, 0);
	assert_int_equal(cd_store_job_list(store, all, 5, 0, &jobs, &n, &diag), 0);
	assert_null(jobs);
	assert_int_equal(n, 0);
	cd_store_close(store);
}

/* More jobs than the list's first allocation. */
static void test_list_many(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job *jobs = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(cd_store_begin(store, &diag), 0);
	for (int i = 0; i < 100; i++)
		add_job(store, i % 2 ? CD_JOB_DONE : CD_JOB_QUEUED, 7);
	assert_int_equal(cd_store_commit(store, &diag), 0);
	assert_int_equal(
		cd_store_job_list(store, 1u << CD_JOB_DONE, 7, 0, &jobs, &n, &diag), 0);
	assert_int_equal(n, 50);
	for (size_t i = 0; i < n; i++) {
		assert_true(jobs[i].id == 2 * i + 2);
		cd_job_fini(&jobs[i]);
	}
	free(jobs);
	cd_store_close(store);
}

/* Counts by state in one query, and the OOM-retried ones among them. */
static void test_job_counts(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	uint64_t by[CD_JOB_STATE_COUNT_], oom = 99;
	struct cd_job job;

	(void)state;
	assert_int_equal(cd_store_job_counts(store, by, &oom, &diag), 0);
	for (int k = 0; k < CD_JOB_STATE_COUNT_; k++)
		assert_int_equal(by[k], 0);
	assert_int_equal(oom, 0);
	for (int i = 0; i < 10; i++)
		add_job(store,
			i < 6	? CD_JOB_DONE
			: i < 9 ? CD_JOB_QUEUED
				: CD_JOB_FAILED,
			1);
	cd_job_init(&job);
	assert_int_equal(cd_store_job_get(store, 7, &job, &diag), 0);
	snprintf(job.mem_source, sizeof(job.mem_source), "oom-retry");
	assert_int_equal(cd_store_job_update(store, &job, &diag), 0);
	cd_job_fini(&job);
	assert_int_equal(cd_store_job_counts(store, by, &oom, &diag), 0);
	assert_int_equal(by[CD_JOB_DONE], 6);
	assert_int_equal(by[CD_JOB_QUEUED], 3);
	assert_int_equal(by[CD_JOB_FAILED], 1);
	assert_int_equal(by[CD_JOB_RUNNING], 0);
	assert_int_equal(oom, 1);
	cd_store_close(store);
}

static void test_ids_never_reused(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_job got;
	uint64_t last = 0;

	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 1);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 2);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 3);
	assert_int_equal(cd_store_event_add(store, 3, 1, "submit", "", &diag), 0);
	cd_store_close(store);

	/* The newest job and its events go; its id must not come back. */
	raw_exec(f->db, "PRAGMA foreign_keys = ON; DELETE FROM jobs WHERE id >= 2");
	store = open_ok(f->db);
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 3);
	assert_int_equal(cd_store_job_get(store, 3, &got, &diag), COLLOC_ENOTFOUND);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 4);
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 4);
	cd_store_close(store);

	raw_exec(f->db, "DELETE FROM jobs");
	store = open_ok(f->db);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 5);
	cd_store_close(store);
}

/* --- store: events ---------------------------------------------------------- */

static void test_events(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_event *ev = NULL;
	char long_msg[CD_REASON_MAX * 2];
	size_t n = 99;
	size_t i;
	uint64_t a = add_job(store, CD_JOB_QUEUED, 1);
	uint64_t b = add_job(store, CD_JOB_QUEUED, 1);

	(void)state;
	assert_int_equal(cd_store_event_list(store, a, &ev, &n, &diag), 0);
	assert_null(ev);
	assert_int_equal(n, 0);

	/* Timestamps out of order on purpose: the order is that of adding. */
	assert_int_equal(cd_store_event_add(store, a, 300, "submit", "queued", &diag), 0);
	assert_int_equal(cd_store_event_add(store, b, 301, "submit", "other", &diag), 0);
	assert_int_equal(cd_store_event_add(store, a, 200, "start", "on GPU-1", &diag),
			 0);
	/* A long message is cut to fit on a UTF-8 boundary: "é" is 2 bytes,
	 * so byte CD_REASON_MAX - 1 would be the first half of one. */
	for (i = 0; i + 2 < sizeof(long_msg); i += 2)
		memcpy(long_msg + i, "\xc3\xa9", 2);
	long_msg[i] = '\0';
	assert_int_equal(cd_store_event_add(store, a, 250,
					    "an-event-kind-longer-than-31-bytes",
					    long_msg, &diag),
			 0);
	assert_int_equal(cd_store_event_add(store, a, 260, "exit", NULL, &diag), 0);

	assert_int_equal(cd_store_event_list(store, a, &ev, &n, &diag), 0);
	assert_int_equal(n, 4);
	assert_true(ev[0].ts_ms == 300);
	assert_string_equal(ev[0].kind, "submit");
	assert_string_equal(ev[0].message, "queued");
	assert_true(ev[1].ts_ms == 200);
	assert_string_equal(ev[1].kind, "start");
	assert_string_equal(ev[1].message, "on GPU-1");
	assert_true(ev[2].ts_ms == 250);
	assert_string_equal(ev[2].kind, "an-event-kind-longer-than-31-by");
	assert_int_equal(strlen(ev[2].message), CD_REASON_MAX - 2);
	assert_memory_equal(ev[2].message, long_msg, CD_REASON_MAX - 2);
	assert_string_equal(ev[3].kind, "exit");
	assert_string_equal(ev[3].message, "");
	free(ev);

	assert_int_equal(cd_store_event_list(store, b, &ev, &n, &diag), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ev[0].message, "other");
	free(ev);

	assert_int_equal(cd_store_event_add(store, 99, 1, "submit", "x", &diag),
			 COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "99"));
	assert_int_equal(cd_store_event_add(store, a, 1, NULL, "x", &diag),
			 COLLOC_EUSAGE);
	cd_store_close(store);
}

/* --- store: peaks ----------------------------------------------------------- */

/* Runs recorded without a utilization measurement (negative or NaN) are
 * left out of the mean, and a window of only such runs has none (-1). */
static void test_peaks_without_util(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	const char *key = "00000000000000aa";
	uint64_t peak = 0;
	double util = 0;

	(void)state;
	assert_int_equal(cd_store_peak_record(store, key, 1, 1000, -1.0, 100, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 1000);
	assert_true(util == -1.0);
	assert_int_equal(cd_store_peak_record(store, key, 2, 0, 0.25, 200, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 3, 0, NAN, 300, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 4, 0, 0.0, 400, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 1000);
	assert_true(util == 0.125); /* (0.25 + 0.0) / 2: a measured 0 counts */
	cd_store_close(store);
}

static void test_peaks(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	const char *key = "0123456789abcdef";
	uint64_t peak = 1;
	double util = 1.0;

	(void)state;
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag),
			 COLLOC_ENOTFOUND);
	assert_true(peak == 1 && util == 1.0); /* untouched */

	assert_int_equal(cd_store_peak_record(store, key, 1, 1000, 0.5, 100, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 1000);
	assert_true(util == 0.5);

	/* The oldest run holds the largest peak; it falls out of the window
	 * once five newer runs are recorded. Recorded out of time order. */
	assert_int_equal(cd_store_peak_record(store, key, 2, 900, 0.25, 600, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 3, 700, 0.25, 300, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 4, 800, 0.25, 500, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 5, 600, 0.25, 200, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 1000);
	assert_true(util == (0.5 + 0.25 * 4) / 5);
	assert_int_equal(cd_store_peak_record(store, key, 6, 500, 0.75, 400, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 900); /* runs at 200..600; 100 dropped */
	assert_true(util == (0.25 * 4 + 0.75) / 5);

	/* Equal timestamps: the higher job id is the more recent, whatever
	 * the order of recording. */
	assert_int_equal(cd_store_peak_record(store, key, 8, 100, 0.0, 600, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 7, 100, 0.0, 600, &diag), 0);
	/* Now: 600 (8, 7, 2), 500 (4), 400 (6) */
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 900);
	assert_true(util == (0.0 + 0.0 + 0.25 + 0.25 + 0.75) / 5);
	assert_int_equal(cd_store_peak_record(store, key, 9, 100, 0.0, 600, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, key, 1, 100, 0.0, 600, &diag), 0);
	/* 600: 9, 8, 7, 2, 1 — job 1 (id lowest) is last in the window. */
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == 900);
	assert_true(util == 0.25 / 5);

	/* Six runs at one instant: the lowest job id is the oldest and falls
	 * out, though it was recorded last. */
	for (uint64_t id = 12; id <= 16; id++)
		assert_int_equal(
			cd_store_peak_record(store, "tie", id, 1, 0.5, 50, &diag), 0);
	assert_int_equal(cd_store_peak_record(store, "tie", 11, 999, 0.0, 50, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, "tie", &peak, &util, &diag), 0);
	assert_true(peak == 1 && util == 0.5);

	/* Peaks above INT64_MAX survive and win the maximum. */
	assert_int_equal(
		cd_store_peak_record(store, key, 10, UINT64_MAX - 3, 1.0, 700, &diag), 0);
	assert_int_equal(cd_store_peak_lookup(store, key, &peak, &util, &diag), 0);
	assert_true(peak == UINT64_MAX - 3);

	/* Keys are separate. */
	assert_int_equal(
		cd_store_peak_lookup(store, "fedcba9876543210", &peak, &util, &diag),
		COLLOC_ENOTFOUND);
	assert_int_equal(
		cd_store_peak_record(store, "fedcba9876543210", 1, 5, 0.125, 1, &diag),
		0);
	assert_int_equal(
		cd_store_peak_lookup(store, "fedcba9876543210", &peak, &util, &diag), 0);
	assert_true(peak == 5 && util == 0.125);

	assert_int_equal(
		cd_store_peak_record(store, "0123456789abcdef0", 1, 5, 0.1, 1, &diag),
		COLLOC_EUSAGE);
	assert_int_equal(cd_store_peak_record(store, NULL, 1, 5, 0.1, 1, &diag),
			 COLLOC_EUSAGE);
	cd_store_close(store);
}

/* --- store: files ----------------------------------------------------------- */

static void test_persistence(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_event *ev = NULL;
	struct cd_job job;
	struct cd_job got;
	struct stat st;
	uint64_t peak = 0;
	double util = 0.0;
	size_t n = 0;

	full_job(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_int_equal(cd_store_event_add(store, job.id, 5, "submit", "hello", &diag),
			 0);
	assert_int_equal(cd_store_peak_record(store, job.key, job.id, job.peak_bytes, 0.5,
					      9, &diag),
			 0);
	cd_store_close(store);

	/* Jobs' environments may hold secrets. */
	assert_int_equal(stat(f->db, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, job.id, &got, &diag), 0);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);
	assert_int_equal(cd_store_event_list(store, job.id, &ev, &n, &diag), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ev[0].message, "hello");
	free(ev);
	assert_int_equal(cd_store_peak_lookup(store, job.key, &peak, &util, &diag), 0);
	assert_true(peak == job.peak_bytes && util == 0.5);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 2);

	/* A second handle on the same file sees committed rows. */
	{
		struct cd_store *second = open_ok(f->db);

		assert_int_equal(cd_store_job_get(second, 2, &got, &diag), 0);
		cd_job_fini(&got);
		cd_store_close(second);
	}
	cd_store_close(store);
	cd_job_fini(&job);
}

static void test_file_settings(void **state)
{
	struct fixture *f = *state;
	struct cd_store *store = open_ok(f->db);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	cd_store_close(store);
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(
				 db,
				 "SELECT (SELECT journal_mode FROM pragma_journal_mode),"
				 " (SELECT user_version FROM pragma_user_version)",
				 -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
	assert_int_equal(sqlite3_column_int(st, 1), 4);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_newer_version_refused(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);

	add_job(store, CD_JOB_QUEUED, 1);
	cd_store_close(store);
	raw_exec(f->db, "PRAGMA user_version = 5");
	store = (struct cd_store *)1;
	assert_int_equal(cd_store_open(f->db, &store, &diag), COLLOC_EUNSUPPORTED);
	assert_null(store);
	assert_non_null(strstr(diag.msg, f->db));
	assert_non_null(strstr(diag.msg, "version 5"));
	/* Refusing left the file alone: back to version 4, it opens. */
	raw_exec(f->db, "PRAGMA user_version = 4");
	store = open_ok(f->db);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 2);
	cd_store_close(store);
}

static void test_text_file_refused(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = NULL;
	const char *text = "this is a config file, not a database\n"
			   "it is long enough to have a header's worth of bytes "
			   "and then some more, to be sure SQLite reads it\n";
	char *back;

	write_file(f->db, text);
	assert_int_equal(cd_store_open(f->db, &store, &diag), COLLOC_EFORMAT);
	assert_null(store);
	assert_non_null(strstr(diag.msg, f->db));
	back = test_slurp(f->db, 4096);
	assert_non_null(back);
	assert_string_equal(back, text);
	free(back);

	/* Short text too. */
	write_file(f->db, "hi\n");
	assert_int_equal(cd_store_open(f->db, &store, &diag), COLLOC_EFORMAT);
	assert_null(store);
}

static void test_foreign_database_refused(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	raw_exec(f->db, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep')");
	assert_int_equal(cd_store_open(f->db, &store, &diag), COLLOC_EFORMAT);
	assert_null(store);
	assert_non_null(strstr(diag.msg, f->db));

	/* Untouched: still in rollback-journal mode, row still there. */
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(
				 db,
				 "SELECT (SELECT journal_mode FROM pragma_journal_mode),"
				 " (SELECT t FROM notes)",
				 -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "delete");
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "keep");
	sqlite3_finalize(st);
	sqlite3_close(db);

	/* Version 1 without colloc's application id is someone else's too. */
	raw_exec(f->db, "PRAGMA user_version = 1");
	assert_int_equal(cd_store_open(f->db, &store, &diag), COLLOC_EFORMAT);
	assert_null(store);
}

static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = NULL;
	char path[256];

	assert_int_equal(cd_store_open(NULL, &store, &diag), COLLOC_EUSAGE);
	assert_int_equal(cd_store_open("", &store, &diag), COLLOC_EUSAGE);
	snprintf(path, sizeof(path), "%s/no/such/dir/colloc.db", f->dir);
	assert_true(cd_store_open(path, &store, &diag) < 0);
	assert_null(store);
	assert_non_null(strstr(diag.msg, path));
	/* A directory is not a database either. */
	assert_true(cd_store_open(f->dir, &store, &diag) < 0);
	assert_null(store);
}

static void test_damaged_row(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_job job;
	struct cd_job *jobs = NULL;
	size_t n = 0;

	full_job(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	cd_job_fini(&job);
	cd_store_close(store);

	raw_exec(f->db, "UPDATE jobs SET gpus = 'GPU-a,GPU-b', n_assigned = 3");
	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 1, &job, &diag), COLLOC_EFORMAT);
	assert_null(job.argv_json);
	assert_int_equal(cd_store_job_list(store, ~0u, -1, 0, &jobs, &n, &diag),
			 COLLOC_EFORMAT);
	assert_null(jobs);
	assert_int_equal(n, 0);
	cd_store_close(store);

	raw_exec(f->db, "UPDATE jobs SET n_assigned = 1000");
	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 1, &job, &diag), COLLOC_EFORMAT);
	cd_store_close(store);

	raw_exec(f->db, "UPDATE jobs SET n_assigned = 0, gpus = '', state = 9");
	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 1, &job, &diag), COLLOC_EFORMAT);
	cd_store_close(store);

	/* Over-long strings in the file are cut to the fields, at a UTF-8
	 * character boundary, and always terminated. */
	raw_exec(f->db, "UPDATE jobs SET state = 0, name = replace(hex(zeroblob(200)),"
			" '00', 'é'), user = replace(hex(zeroblob(100)), '00', 'u')");
	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 1, &job, &diag), 0);
	assert_int_equal(strlen(job.name), CD_NAME_MAX - 2); /* 63 × 'é' */
	assert_int_equal(strlen(job.user), CD_USER_MAX - 1);
	cd_job_fini(&job);
	cd_store_close(store);
}

/* A client's idempotency key finds the job it made, for that user only;
 * the same key twice for one user is refused by the file itself. */
static void test_idempotency_key(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_job job, got;

	cd_job_init(&job);
	job.uid = 1000;
	job.n_gpus = 1;
	snprintf(job.name, sizeof(job.name), "keyed");
	snprintf(job.idem_key, sizeof(job.idem_key), "retry-1");
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_int_equal(cd_store_job_by_idem(store, 1000, "retry-1", &got, &diag), 0);
	assert_int_equal(got.id, job.id);
	assert_string_equal(got.idem_key, "retry-1");
	cd_job_fini(&got);
	assert_int_equal(cd_store_job_by_idem(store, 1001, "retry-1", &got, &diag),
			 COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_job_by_idem(store, 1000, "retry-2", &got, &diag),
			 COLLOC_ENOTFOUND);
	/* a job without a key is found by none */
	(void)add_job(store, CD_JOB_QUEUED, 1000);
	assert_int_equal(cd_store_job_by_idem(store, 1000, "", &got, &diag),
			 COLLOC_ENOTFOUND);
	assert_true(cd_store_job_insert(store, &job, &diag) < 0);
	job.uid = 1001;
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	cd_job_fini(&job);
	cd_store_close(store);
}

/* A file whose pages are damaged is refused at open with what SQLite's
 * quick_check found, instead of answering 500 job by job later. */
static void test_damaged_file_refused(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	char junk[4096];
	FILE *fp;

	for (int k = 0; k < 50; k++)
		(void)add_job(store, CD_JOB_QUEUED, 1000);
	cd_store_close(store);
	memset(junk, 0x5a, sizeof(junk));
	fp = fopen(f->db, "r+b");
	assert_non_null(fp);
	/* page 3 onwards: the tables' b-trees, not the header */
	assert_int_equal(fseek(fp, 2 * 4096, SEEK_SET), 0);
	assert_int_equal(fwrite(junk, 1, sizeof(junk), fp), sizeof(junk));
	assert_int_equal(fclose(fp), 0);
	store = (struct cd_store *)1;
	assert_true(cd_store_open(f->db, &store, &diag) < 0);
	assert_null(store);
	if (!strstr(diag.msg, "damaged") && !strstr(diag.msg, "malformed"))
		print_error("unexpected message: %s\n", diag.msg);
	assert_true(strstr(diag.msg, "damaged") || strstr(diag.msg, "malformed"));
	assert_non_null(strstr(diag.msg, f->db));
}

/* --- store: migration ------------------------------------------------------- */

/* The schema of version 1 (store.c before the utilization source), as
 * collocd 0.1 created it. */
static const char schema_v1[] =
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
	" state INTEGER NOT NULL, n_gpus INTEGER NOT NULL, priority INTEGER NOT NULL,"
	" mem_need_bytes INTEGER NOT NULL, mem_source TEXT NOT NULL, util_pred REAL,"
	" model TEXT NOT NULL, key TEXT NOT NULL, cwd TEXT NOT NULL,"
	" argv_json TEXT NOT NULL, env_json TEXT NOT NULL, attempts INTEGER NOT NULL,"
	" exclusive INTEGER NOT NULL, n_assigned INTEGER NOT NULL, gpus TEXT NOT NULL,"
	" sup_pid INTEGER NOT NULL, sup_start INTEGER NOT NULL,"
	" job_pgid INTEGER NOT NULL, peak_bytes INTEGER NOT NULL, util_mean REAL,"
	" util_samples INTEGER NOT NULL, cancel_requested INTEGER NOT NULL,"
	" exit_code INTEGER NOT NULL, term_signal INTEGER NOT NULL,"
	" reason TEXT NOT NULL, submit_ms INTEGER NOT NULL, start_ms INTEGER NOT NULL,"
	" end_ms INTEGER NOT NULL);"
	"CREATE INDEX jobs_state ON jobs(state);"
	"CREATE TABLE events (seq INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" ts_ms INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);"
	"CREATE INDEX events_job ON events(job_id);"
	"CREATE TABLE peaks (key TEXT NOT NULL, job_id INTEGER NOT NULL,"
	" peak_bytes INTEGER NOT NULL, util_mean REAL, ts_ms INTEGER NOT NULL);"
	"CREATE INDEX peaks_key ON peaks(key, ts_ms, job_id);"
	"PRAGMA application_id = 1131375724;"
	"PRAGMA user_version = 1;";

/* Two jobs (one done, one queued), an event and three measured runs, as a
 * version-1 collocd wrote them (a run without samples has util_mean 0). */
static const char rows_v1[] =
	"INSERT INTO jobs VALUES (1, 'old-done', 1000, 1000, 'ada', 2, 1, 0,"
	" 1073741824, 'request', 0.4, '', 'aaaaaaaaaaaaaaaa', '/home/ada',"
	" '[\"true\"]', '[\"HOME=/home/ada\"]', 1, 0, 1, 'GPU-1', 0, 0, 0,"
	" 536870912, 0.35, 12, 0, 0, 0, '', 1700000000000, 1700000001000,"
	" 1700000002000);"
	"INSERT INTO jobs VALUES (2, 'old-queued', 1000, 1000, 'ada', 0, 1, 5,"
	" 2147483648, 'estimate', 0.5, 'resnet18 --batch 8', 'bbbbbbbbbbbbbbbb',"
	" '/home/ada', '[\"python3\",\"train.py\"]', '[]', 0, 0, 0, '', 0, 0, 0,"
	" 0, NULL, 0, 0, -1, 0, '', 1700000003000, 0, 0);"
	"INSERT INTO events (job_id, ts_ms, kind, message)"
	" VALUES (1, 1700000000000, 'submit', 'by ada');"
	"INSERT INTO peaks VALUES ('aaaaaaaaaaaaaaaa', 1, 536870912, 0.35, "
	"1700000002000);"
	"INSERT INTO peaks VALUES ('cccccccccccccccc', 7, 1048576, 0, 1700000002000);"
	"INSERT INTO peaks VALUES ('cccccccccccccccc', 8, 2097152, 0, 1700000003000);";

/* The one integer that constant SQL sql answers on path (no store open). */
static int64_t query_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static int64_t user_version(const char *path)
{
	return query_int(path, "PRAGMA user_version");
}

static void test_migrate_v1(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store;
	struct cd_job job, got;
	struct cd_event *ev = NULL;
	size_t n_ev = 0;
	uint64_t peak = 0, last = 0;
	double util = 0;

	raw_exec(f->db, schema_v1);
	raw_exec(f->db, rows_v1);
	store = open_ok(f->db);
	assert_int_equal(user_version(f->db), 4);

	/* The jobs are kept, with the new fields "not recorded". */
	assert_int_equal(cd_store_job_get(store, 1, &got, &diag), 0);
	assert_string_equal(got.name, "old-done");
	assert_int_equal(got.state, CD_JOB_DONE);
	assert_true(got.mem_need_bytes == 1073741824);
	assert_true(got.util_pred == 0.4);
	assert_true(got.util_mean == 0.35);
	assert_string_equal(got.argv_json, "[\"true\"]");
	assert_string_equal(got.gpus[0], "GPU-1");
	assert_string_equal(got.util_source, "unknown");
	assert_true(got.graph_gpu_util < 0 && got.graph_sm_activity < 0);
	assert_string_equal(got.graph_platform, "");
	/* Version 4's fields: no limit, not held, no dependencies or array. */
	assert_true(got.time_limit_ms == 0 && !got.held && got.n_deps == 0);
	assert_true(got.array_id == 0 && got.array_index == -1 &&
		    got.array_max_running == 0 && got.stop_cause == CD_STOP_CANCEL);
	cd_job_fini(&got);
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), 0);
	assert_string_equal(got.name, "old-queued");
	assert_int_equal(got.state, CD_JOB_QUEUED);
	assert_string_equal(got.model, "resnet18 --batch 8");
	assert_int_equal(got.priority, 5);
	assert_string_equal(got.util_source, "unknown");
	/* A migrated job takes the new fields like any other. */
	snprintf(got.util_source, sizeof(got.util_source), "graph (t4-16gb)");
	got.graph_gpu_util = 0.5;
	got.graph_sm_activity = 0.25;
	assert_int_equal(cd_store_job_update(store, &got, &diag), 0);
	cd_job_fini(&got);
	assert_int_equal(cd_store_event_list(store, 1, &ev, &n_ev, &diag), 0);
	assert_int_equal(n_ev, 1);
	assert_string_equal(ev[0].kind, "submit");
	free(ev);

	/* Peaks are kept; version 1's "0 = no samples" is no measurement. */
	assert_int_equal(
		cd_store_peak_lookup(store, "aaaaaaaaaaaaaaaa", &peak, &util, &diag), 0);
	assert_true(peak == 536870912 && util == 0.35);
	assert_int_equal(
		cd_store_peak_lookup(store, "cccccccccccccccc", &peak, &util, &diag), 0);
	assert_true(peak == 2097152 && util == -1.0);

	/* Ids go on from the old ones. */
	full_job(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_true(job.id == 3);
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 3);
	cd_store_close(store);

	/* Reopening a migrated file changes nothing more. */
	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), 0);
	assert_string_equal(got.util_source, "graph (t4-16gb)");
	assert_true(got.graph_gpu_util == 0.5 && got.graph_sm_activity == 0.25);
	cd_job_fini(&got);
	assert_int_equal(cd_store_job_get(store, 3, &got, &diag), 0);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);
	cd_job_fini(&job);
	cd_store_close(store);
	assert_int_equal(user_version(f->db), 4);
}

/* A migration that fails leaves the file as it was: version 1, rows and
 * all (here a column the migration adds is already there). */
static void test_migrate_failure_leaves_file(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = (struct cd_store *)1;

	raw_exec(f->db, schema_v1);
	raw_exec(f->db, rows_v1);
	raw_exec(f->db, "ALTER TABLE jobs ADD COLUMN graph_platform TEXT");
	assert_true(cd_store_open(f->db, &store, &diag) < 0);
	assert_null(store);
	assert_non_null(strstr(diag.msg, "migrating schema version 1 to 2"));
	assert_int_equal(user_version(f->db), 1);
	/* Untouched: no util_source column, the v1 zeros still there. */
	raw_exec(f->db, "ALTER TABLE jobs DROP COLUMN graph_platform");
	assert_int_equal(
		query_int(f->db, "SELECT count(*) FROM peaks WHERE util_mean = 0"), 2);
	assert_int_equal(query_int(f->db, "SELECT count(*) FROM pragma_table_info('jobs')"
					  " WHERE name = 'util_source'"),
			 0);
	store = open_ok(f->db);
	assert_int_equal(user_version(f->db), 4);
	cd_store_close(store);
}

/* A version-3 database (idempotency keys, before issue 16's job features)
 * is migrated to 4: its rows kept, the new columns "none". */
static void test_migrate_v3(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_job job, got;
	uint64_t id;

	full_job(&job);
	job.state = CD_JOB_DONE;
	job.n_deps = 0;
	job.held = false;
	job.time_limit_ms = 0;
	job.array_id = 0;
	job.array_index = -1;
	job.array_max_running = 0;
	job.stop_cause = CD_STOP_CANCEL;
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	id = job.id;
	cd_store_close(store);
	/* Back to version 3's shape: without the columns version 4 adds. */
	raw_exec(f->db, "DROP INDEX jobs_end;"
			"ALTER TABLE jobs DROP COLUMN time_limit_ms;"
			"ALTER TABLE jobs DROP COLUMN held;"
			"ALTER TABLE jobs DROP COLUMN deps;"
			"ALTER TABLE jobs DROP COLUMN array_id;"
			"ALTER TABLE jobs DROP COLUMN array_index;"
			"ALTER TABLE jobs DROP COLUMN array_max_running;"
			"ALTER TABLE jobs DROP COLUMN stop_cause;"
			"PRAGMA user_version = 3;");
	store = open_ok(f->db);
	assert_int_equal(user_version(f->db), 4);
	assert_int_equal(cd_store_job_get(store, id, &got, &diag), 0);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);
	cd_job_fini(&job);
	/* And it takes the new fields. */
	full_job(&job);
	assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
	assert_int_equal(cd_store_job_get(store, job.id, &got, &diag), 0);
	assert_job_equal(&job, &got);
	cd_job_fini(&got);
	cd_job_fini(&job);
	cd_store_close(store);
}

/* Filters of cd_store_job_find(), and the retention sweep's deletion. */
static void test_find_and_prune(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(":memory:");
	struct cd_job_filter flt;
	struct cd_job job, *jobs = NULL;
	struct cd_event *ev = NULL;
	uint64_t *ids = NULL, peak = 0;
	double util = 0;
	size_t n = 0, n_ev = 0;
	static const struct {
		const char *name, *user;
		int state;
		int64_t end_ms;
	} rows[] = {
		{"train-a", "ada", CD_JOB_DONE, 1000},
		{"train-b", "bob", CD_JOB_FAILED, 5000},
		{"eval", "ada", CD_JOB_CANCELLED, 9000},
		{"train-c", "ada", CD_JOB_QUEUED, 0},
		{"train-d", "bob", CD_JOB_RUNNING, 0},
	};

	(void)state;
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		cd_job_init(&job);
		snprintf(job.name, sizeof(job.name), "%s", rows[k].name);
		snprintf(job.user, sizeof(job.user), "%s", rows[k].user);
		snprintf(job.key, sizeof(job.key), "aaaaaaaaaaaaaaaa");
		job.uid = rows[k].user[0] == 'a' ? 1000 : 1001;
		job.state = rows[k].state;
		job.end_ms = rows[k].end_ms;
		assert_int_equal(cd_store_job_insert(store, &job, &diag), 0);
		assert_int_equal(
			cd_store_event_add(store, job.id, 1, "submit", "x", &diag), 0);
		cd_job_fini(&job);
	}
	assert_int_equal(
		cd_store_peak_record(store, "aaaaaaaaaaaaaaaa", 1, 4096, 0.5, 1, &diag),
		0);
	memset(&flt, 0, sizeof(flt));
	flt.state_mask = ~0u;
	flt.uid = -1;
	flt.name_glob = "train-*";
	flt.user = "ada";
	assert_int_equal(cd_store_job_find(store, &flt, &jobs, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_string_equal(jobs[0].name, "train-a");
	assert_string_equal(jobs[1].name, "train-c");
	for (size_t k = 0; k < n; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	/* Not ended before 5000: the failed one at 5000, the cancelled one
	 * and those that have not ended. */
	memset(&flt, 0, sizeof(flt));
	flt.state_mask = ~0u;
	flt.uid = -1;
	flt.active_since_ms = 5000;
	assert_int_equal(cd_store_job_find(store, &flt, &jobs, &n, &diag), 0);
	assert_int_equal(n, 4);
	assert_true(jobs[0].id == 2 && jobs[3].id == 5);
	for (size_t k = 0; k < n; k++)
		cd_job_fini(&jobs[k]);
	free(jobs);
	/* The user filter is exact, not a pattern. */
	flt.active_since_ms = 0;
	flt.user = "a*";
	assert_int_equal(cd_store_job_find(store, &flt, &jobs, &n, &diag), 0);
	assert_int_equal(n, 0);
	assert_null(jobs);

	/* Finished jobs that ended before 6000 go, with their events; the
	 * queued and running ones and the peaks stay. */
	assert_int_equal(cd_store_job_prune(store, 6000, &ids, &n, &diag), 0);
	assert_int_equal(n, 2);
	assert_true(ids[0] + ids[1] == 3);
	free(ids);
	assert_int_equal(cd_store_job_get(store, 1, &job, &diag), COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_event_list(store, 1, &ev, &n_ev, &diag), 0);
	assert_int_equal(n_ev, 0);
	free(ev);
	assert_int_equal(cd_store_job_get(store, 4, &job, &diag), 0);
	cd_job_fini(&job);
	assert_int_equal(
		cd_store_peak_lookup(store, "aaaaaaaaaaaaaaaa", &peak, &util, &diag), 0);
	assert_true(peak == 4096);
	assert_int_equal(cd_store_job_prune(store, 6000, &ids, &n, &diag), 0);
	assert_int_equal(n, 0);
	assert_null(ids);
	cd_store_close(store);
}

/* --- store: transactions ---------------------------------------------------- */

static void test_transactions(void **state)
{
	struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_store *store = open_ok(f->db);
	struct cd_job *jobs = NULL;
	struct cd_event *ev = NULL;
	struct cd_job got;
	uint64_t last = 9;
	uint64_t peak = 0;
	double util = 0.0;
	size_t n = 9;

	assert_int_equal(cd_store_commit(store, &diag), COLLOC_EUSAGE);
	cd_store_rollback(store); /* nothing open: a no-op */
	cd_store_rollback(NULL);

	assert_int_equal(cd_store_begin(store, &diag), 0);
	assert_int_equal(cd_store_begin(store, &diag), COLLOC_EUSAGE);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 1);
	assert_true(add_job(store, CD_JOB_RUNNING, 1) == 2);
	assert_int_equal(cd_store_event_add(store, 1, 1, "submit", "", &diag), 0);
	assert_int_equal(cd_store_peak_record(store, "k", 1, 5, 0.5, 1, &diag), 0);
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), 0); /* seen inside */
	cd_job_fini(&got);
	cd_store_rollback(store);

	assert_int_equal(cd_store_job_get(store, 1, &got, &diag), COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_job_list(store, ~0u, -1, 0, &jobs, &n, &diag), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cd_store_event_list(store, 1, &ev, &n, &diag), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cd_store_peak_lookup(store, "k", &peak, &util, &diag),
			 COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_last_id(store, &last, &diag), 0);
	assert_true(last == 0);

	/* Committed groups survive a reopen. */
	assert_int_equal(cd_store_begin(store, &diag), 0);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 1);
	assert_int_equal(cd_store_event_add(store, 1, 1, "submit", "", &diag), 0);
	assert_int_equal(cd_store_commit(store, &diag), 0);
	assert_int_equal(cd_store_commit(store, &diag), COLLOC_EUSAGE);

	/* A transaction left open at close is rolled back. */
	assert_int_equal(cd_store_begin(store, &diag), 0);
	assert_true(add_job(store, CD_JOB_QUEUED, 1) == 2);
	cd_store_close(store);

	store = open_ok(f->db);
	assert_int_equal(cd_store_job_get(store, 1, &got, &diag), 0);
	cd_job_fini(&got);
	assert_int_equal(cd_store_job_get(store, 2, &got, &diag), COLLOC_ENOTFOUND);
	assert_int_equal(cd_store_event_list(store, 1, &ev, &n, &diag), 0);
	assert_int_equal(n, 1);
	free(ev);
	cd_store_close(store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_job_init_fini),
		cmocka_unit_test(test_history_key),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_unterminated_fields),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_get_missing),
		cmocka_unit_test(test_invalid_job),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_list_many),
		cmocka_unit_test(test_job_counts),
		cmocka_unit_test_setup_teardown(test_ids_never_reused, setup, teardown),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_peaks),
		cmocka_unit_test(test_peaks_without_util),
		cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_failure_leaves_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v3, setup, teardown),
		cmocka_unit_test(test_find_and_prune),
		cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_settings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_version_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_text_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_database_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idempotency_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_file_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
