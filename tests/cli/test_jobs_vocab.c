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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_user_spellings),
		cmocka_unit_test(test_mem_sources),
		cmocka_unit_test(test_util_sources),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
