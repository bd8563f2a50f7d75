/*
 * test_jobs_vocab.c — the job vocabulary shared by collocd and the CLI
 * (colloc/jobs.h): names round-trip, final states, the squeue spellings a
 * person may type, and the "graph (PLATFORM)" utilization source.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "colloc/jobs.h"

static void test_states(void **state)
{
	(void)state;
	for (int k = 0; k < COLLOC_JOB_STATE_COUNT; k++) {
		assert_int_equal(colloc_job_state_parse(colloc_job_state_name(k)), k);
		assert_int_equal(colloc_job_state_from_user(colloc_job_state_code(k)), k);
	}
	assert_string_equal(colloc_job_state_name(COLLOC_JOB_QUEUED), "queued");
	assert_string_equal(colloc_job_state_name(COLLOC_JOB_CANCELLED), "cancelled");
	assert_string_equal(colloc_job_state_name(-1), "unknown");
	assert_string_equal(colloc_job_state_name(COLLOC_JOB_STATE_COUNT), "unknown");
	assert_int_equal(colloc_job_state_parse(NULL), -1);
	assert_int_equal(colloc_job_state_parse("Queued"), -1); /* the API: exact */
	assert_int_equal(colloc_job_state_parse("PD"), -1);
	assert_false(colloc_job_state_final(COLLOC_JOB_QUEUED));
	assert_false(colloc_job_state_final(COLLOC_JOB_RUNNING));
	assert_true(colloc_job_state_final(COLLOC_JOB_DONE));
	assert_true(colloc_job_state_final(COLLOC_JOB_FAILED));
	assert_true(colloc_job_state_final(COLLOC_JOB_CANCELLED));
	assert_false(colloc_job_state_final(-1));
	assert_false(colloc_job_state_final(COLLOC_JOB_STATE_COUNT));
}

static void test_user_spellings(void **state)
{
	(void)state;
	assert_int_equal(colloc_job_state_from_user("PD"), COLLOC_JOB_QUEUED);
	assert_int_equal(colloc_job_state_from_user("pending"), COLLOC_JOB_QUEUED);
	assert_int_equal(colloc_job_state_from_user("QUEUED"), COLLOC_JOB_QUEUED);
	assert_int_equal(colloc_job_state_from_user("r"), COLLOC_JOB_RUNNING);
	assert_int_equal(colloc_job_state_from_user("CD"), COLLOC_JOB_DONE);
	assert_int_equal(colloc_job_state_from_user("completed"), COLLOC_JOB_DONE);
	assert_int_equal(colloc_job_state_from_user("F"), COLLOC_JOB_FAILED);
	assert_int_equal(colloc_job_state_from_user("canceled"), COLLOC_JOB_CANCELLED);
	assert_int_equal(colloc_job_state_from_user("CA"), COLLOC_JOB_CANCELLED);
	assert_int_equal(colloc_job_state_from_user("bogus"), -1);
	assert_int_equal(colloc_job_state_from_user(""), -1);
	assert_int_equal(colloc_job_state_from_user(NULL), -1);
}

static void test_mem_sources(void **state)
{
	(void)state;
	for (int k = 0; k < COLLOC_MEM_SOURCE_COUNT; k++) {
		assert_int_equal(colloc_mem_source_parse(colloc_mem_source_name(k)), k);
		assert_true(strlen(colloc_mem_source_name(k)) <
			    COLLOC_MEM_SOURCE_NAME_MAX);
	}
	assert_string_equal(colloc_mem_source_name(COLLOC_MEM_OOM_RETRY), "oom-retry");
	assert_true(colloc_mem_source_from_client(COLLOC_MEM_REQUEST));
	assert_true(colloc_mem_source_from_client(COLLOC_MEM_ESTIMATE));
	assert_false(colloc_mem_source_from_client(COLLOC_MEM_HISTORY));
	assert_false(colloc_mem_source_from_client(COLLOC_MEM_OOM_RETRY));
	assert_false(colloc_mem_source_from_client(-1));
	assert_int_equal(colloc_mem_source_parse("estimated"), -1);
}

static void test_util_sources(void **state)
{
	char buf[64];

	(void)state;
	for (int k = 0; k < COLLOC_UTIL_SOURCE_COUNT; k++)
		assert_int_equal(colloc_util_source_parse(colloc_util_source_name(k)), k);
	assert_int_equal(
		colloc_util_source_format(COLLOC_UTIL_GRAPH, "a100", buf, sizeof(buf)),
		0);
	assert_string_equal(buf, "graph (a100)");
	assert_int_equal(colloc_util_source_parse(buf), COLLOC_UTIL_GRAPH);
	assert_int_equal(
		colloc_util_source_format(COLLOC_UTIL_GRAPH, "", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "graph");
	assert_int_equal(
		colloc_util_source_format(COLLOC_UTIL_HISTORY, "a100", buf, sizeof(buf)),
		0);
	assert_string_equal(buf, "history");
	assert_int_equal(colloc_util_source_format(COLLOC_UTIL_GRAPH, "a100", buf, 8),
			 -1);
	assert_int_equal(colloc_util_source_format(99, NULL, buf, sizeof(buf)), -1);
	assert_int_equal(colloc_util_source_parse("graph ()"), -1);
	assert_int_equal(colloc_util_source_parse("graph (x"), -1);
	assert_int_equal(colloc_util_source_parse("graphs"), -1);
	assert_int_equal(colloc_util_source_parse(NULL), -1);
}

static void test_deps(void **state)
{
	uint64_t id = 0;
	int kind = -1;

	(void)state;
	assert_int_equal(colloc_dep_parse("12", &id, &kind), 0);
	assert_true(id == 12 && kind == COLLOC_DEP_OK);
	assert_int_equal(colloc_dep_parse("12:any", &id, &kind), 0);
	assert_true(id == 12 && kind == COLLOC_DEP_ANY);
	assert_int_equal(colloc_dep_parse("7:ok", &id, &kind), 0);
	assert_true(id == 7 && kind == COLLOC_DEP_OK);
	assert_int_equal(colloc_dep_parse("afterany:9", &id, &kind), 0);
	assert_true(id == 9 && kind == COLLOC_DEP_ANY);
	assert_int_equal(colloc_dep_parse("9007199254740992", &id, &kind), 0);
	static const char *const bad[] = {"",
					  "0",
					  "012",
					  "1:",
					  "1:OK",
					  "1:maybe",
					  "x",
					  "1 ",
					  ":ok",
					  "afterok:",
					  "9007199254740993",
					  "12345678901234567"};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		assert_int_equal(colloc_dep_parse(bad[k], &id, &kind), -1);
	assert_int_equal(colloc_dep_parse(NULL, &id, &kind), -1);
	assert_string_equal(colloc_dep_kind_name(COLLOC_DEP_ANY), "any");
	assert_string_equal(colloc_dep_kind_name(99), "unknown");
}

static void test_durations(void **state)
{
	static const struct {
		const char *text;
		int64_t ms;
		const char *back;
	} good[] = {
		{"90s", 90000, "1m30s"},       {"10m", 600000, "10m"},
		{"10min", 600000, "10m"},      {"2h", 7200000, "2h"},
		{"1h30m", 5400000, "1h30m"},   {"30d", 2592000000, "30d"},
		{"500ms", 500, "500ms"},       {"1s500ms", 1500, "1s500ms"},
		{"1d12h", 129600000, "1d12h"},
	};
	static const char *const bad[] = {
		"",	  "10",	 "0s",	 "m",	  "10x",
		"1h 30m", "-5s", "1.5h", "3651d", "99999999999999999999d"};
	char buf[32];
	int64_t ms;

	(void)state;
	for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
		assert_int_equal(colloc_duration_parse(good[k].text, &ms), 0);
		assert_true(ms == good[k].ms);
		assert_int_equal(colloc_duration_format(ms, buf, sizeof(buf)), 0);
		assert_string_equal(buf, good[k].back);
		assert_int_equal(colloc_duration_parse(buf, &ms), 0);
		assert_true(ms == good[k].ms);
	}
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		assert_int_equal(colloc_duration_parse(bad[k], &ms), -1);
	assert_int_equal(colloc_duration_parse(NULL, &ms), -1);
	assert_int_equal(colloc_duration_format(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0s");
	assert_int_equal(colloc_duration_format(5400000, buf, 4), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states),	    cmocka_unit_test(test_user_spellings),
		cmocka_unit_test(test_mem_sources), cmocka_unit_test(test_util_sources),
		cmocka_unit_test(test_deps),	    cmocka_unit_test(test_durations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
