/*
 * test_trace.c — the trace readers (src/sim/trace*.c): unit conversion of
 * every format, messages, limits, skipping, sorting, and excerpts of the
 * real traces (tests/data/traces, found through COLLOC_TRACE_DIR).
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

#include "colloc/error.h"
#include "colloc/trace.h"

static const char alibaba_header[] =
	"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
	"creation_time,deletion_time,scheduled_time\n";
static const char philly_header[] =
	"job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,"
	"interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,"
	"priority\n";

static struct colloc_trace *parse_ok(const char *kind, const char *text,
				     const struct colloc_trace_opts *opts)
{
	struct colloc_trace *t = NULL;
	struct colloc_diag diag = {{0}};
	int rc = colloc_trace_parse(kind, "t.csv", text, strlen(text), opts, &t, &diag);

	if (rc) {
		print_error("parse %s failed with %d: %s\n", kind, rc, diag.msg);
		fail();
	}
	/* success leaves the message alone, even when rows were skipped */
	assert_string_equal(diag.msg, "");
	assert_non_null(t);
	assert_string_equal(t->kind, kind);
	return t;
}

/* Fails with rc and a message that contains want. */
static void parse_bad(const char *kind, const char *text, size_t len,
		      const struct colloc_trace_opts *opts, int want_rc, const char *want)
{
	struct colloc_trace *t = (struct colloc_trace *)&t; /* must stay untouched */
	struct colloc_trace *const before = t;
	struct colloc_diag diag = {{0}};
	int rc = colloc_trace_parse(kind, "t.csv", text, len, opts, &t, &diag);

	if (rc != want_rc || !strstr(diag.msg, want)) {
		print_error("parse %s gave %d \"%s\", expected %d with \"%s\"\n", kind,
			    rc, diag.msg, want_rc, want);
		fail();
	}
	assert_ptr_equal(t, before);
}

static void bad(const char *kind, const char *text, const char *want)
{
	parse_bad(kind, text, strlen(text), NULL, COLLOC_EFORMAT, want);
}

static void check_job(const struct colloc_trace_job *j, uint64_t id, int64_t submit_ms,
		      int64_t duration_ms, int gpus, int milli)
{
	assert_int_equal(j->id, id);
	assert_int_equal(j->submit_ms, submit_ms);
	assert_int_equal(j->duration_ms, duration_ms);
	assert_int_equal(j->n_gpus, gpus);
	assert_int_equal(j->gpu_milli, milli);
}

/* --- alibaba2023 ---------------------------------------------------------- */

static void test_alibaba_units(void **state)
{
	char text[2048];
	struct colloc_trace *t;

	(void)state;
	snprintf(text, sizeof(text), "%s%s", alibaba_header,
		 "openb-pod-0003,6000,12288,1,460,,LS,Running,100,1100,150\n"
		 "openb-pod-0001,12000,16384,8,1000,V100M16|V100M32,LS,Succeeded,50,500,"
		 "60\n"
		 "openb-pod-0002,4000,8192,0,0,,BE,Running,10,20,10\n"
		 "openb-pod-0004,8000,30517,1,230,,BE,Pending,200,260,\n"
		 "openb-pod-0005,8000,30517,1,230,,BE,Pending,300,300,\n");
	t = parse_ok("alibaba2023", text, NULL);
	assert_int_equal(t->n_jobs, 3);
	assert_int_equal(t->cpu_only_rows, 1);
	assert_int_equal(t->zero_length_rows, 1);
	assert_int_equal(t->skipped_rows, 0);
	/* seconds to ms; run time from scheduled_time, creation_time when
	 * never scheduled; the first job (created at 50 s) moves to 0 */
	check_job(&t->jobs[0], 1, 0, 440000, 8, 1000);
	check_job(&t->jobs[1], 3, 50000, 950000, 1, 460);
	check_job(&t->jobs[2], 4, 150000, 60000, 1, 230);
	assert_string_equal(t->jobs[0].model, "");
	assert_int_equal(t->jobs[0].batch, 0);
	assert_int_equal(t->jobs[0].mem_bytes, 0);
	assert_int_equal(t->jobs[0].priority, 0);
	colloc_trace_destroy(t);
}

static void test_alibaba_errors(void **state)
{
	char text[1024];

	(void)state;
	bad("alibaba2023",
	    "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,12000,16384,1,"
	    "1000\n",
	    "t.csv:1: missing column 'creation_time' (kind alibaba2023); the multigpu*");
	snprintf(text, sizeof(text), "%sp,1,1,1,500,,LS,Running,100,90,150\n",
		 alibaba_header);
	bad("alibaba2023", text,
	    "t.csv:2: column 'deletion_time': '90' is before scheduled_time '150'");
	snprintf(text, sizeof(text), "%sp,1,1,1,1001,,LS,Running,100,900,150\n",
		 alibaba_header);
	bad("alibaba2023", text,
	    "t.csv:2: column 'gpu_milli': '1001' is out of range [0, 1000]");
	snprintf(text, sizeof(text), "%sp,1,1,1,0,,LS,Running,100,900,150\n",
		 alibaba_header);
	bad("alibaba2023", text,
	    "t.csv:2: column 'gpu_milli': '0' is not a share of a GPU");
	snprintf(text, sizeof(text), "%sp,1,1,-1,0,,LS,Running,100,900,150\n",
		 alibaba_header);
	bad("alibaba2023", text, "column 'num_gpu': '-1' is out of range");
	snprintf(text, sizeof(text), "%sp,1,1,1,10,,LS,Running,1.5x,900,150\n",
		 alibaba_header);
	bad("alibaba2023", text,
	    "t.csv:2: column 'creation_time': '1.5x' is not a non-negative number");
	/* a pod list of CPU-only pods holds no job */
	snprintf(text, sizeof(text), "%sp,1,1,0,0,,LS,Running,100,900,150\n",
		 alibaba_header);
	bad("alibaba2023", text,
	    "t.csv: no jobs in the trace (0 bad rows skipped, 1 CPU-only");
}

/* --- philly ------------------------------------------------------------------ */

static void test_philly_units(void **state)
{
	char text[2048];
	struct colloc_trace *t;

	(void)state;
	snprintf(text, sizeof(text), "%s%s", philly_header,
		 "0,1,5000,100,dqn,128,2868294000,46122000,490,446,8,0,1\n"
		 "1,8,201694000,100,vgg16,16,4472936000,201694000,509,435,8,0.5,0\n"
		 "2,32,201694000,100,shufflenet_v2_x1_0,4,1000,0,1,1,1,1,0\n");
	t = parse_ok("philly", text, NULL);
	assert_int_equal(t->n_jobs, 3);
	/* milliseconds stay milliseconds, shifted to the first job */
	check_job(&t->jobs[0], 0, 0, 2868294000, 1, 1000);
	check_job(&t->jobs[1], 1, 201689000, 4472936000, 8, 1000);
	check_job(&t->jobs[2], 2, 201689000, 1000, 32, 1000);
	assert_string_equal(t->jobs[0].model, "dqn");
	assert_int_equal(t->jobs[0].batch, 128);
	assert_string_equal(t->jobs[2].model, "shufflenet_v2_x1_0");
	/* opportunistic (1) ranks below resource-guarantee (0) */
	assert_int_equal(t->jobs[0].priority, 0);
	assert_int_equal(t->jobs[1].priority, 1);
	colloc_trace_destroy(t);
}

static void test_philly_errors(void **state)
{
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text),
		 "%s0,1,0,1,dqn,1,10,0,1,1,1,1,0\n1,1,0,1,dqn,1,-5,0,1,1,1,1,0\n",
		 philly_header);
	bad("philly", text, "t.csv:3: column 'duration': '-5' is not a positive number");
	snprintf(text, sizeof(text), "%s0,1,0,1,dqn,1,0,0,1,1,1,1,0\n", philly_header);
	bad("philly", text, "t.csv:2: column 'duration': '0' is not a positive number");
	snprintf(text, sizeof(text), "%s0,0,0,1,dqn,1,10,0,1,1,1,1,0\n", philly_header);
	bad("philly", text, "t.csv:2: column 'num_gpu': '0' is out of range [1, 65536]");
	snprintf(text, sizeof(text), "%s0,1,0,1,dqn,1,10,0,1,1,1,1,2\n", philly_header);
	bad("philly", text, "t.csv:2: column 'priority': '2' is out of range [0, 1]");
	snprintf(text, sizeof(text), "%s0,1,0,1,dqn,0,10,0,1,1,1,1,0\n", philly_header);
	bad("philly", text, "t.csv:2: column 'batch_size': '0' is out of range");
	snprintf(text, sizeof(text), "%s0,1,0,1,dqn,1,10,0,1,1,1\n", philly_header);
	bad("philly", text, "t.csv:2: has 11 fields, the header has 13");
	snprintf(text, sizeof(text), "%s0,1,0,1,%s,1,10,0,1,1,1,1,0\n", philly_header,
		 "a_model_name_that_is_much_longer_than_forty_seven_bytes");
	bad("philly", text, "t.csv:2: column 'model_name': 'a_model_name");
	bad("philly", "job_id,num_gpu,submit_time\n0,1,0\n",
	    "t.csv:1: missing column 'duration' (kind philly)");
}

/* --- gavel -------------------------------------------------------------------- */

static void test_gavel_units(void **state)
{
	struct colloc_trace *t;

	(void)state;
	t = parse_ok(
		"gavel",
		"ResNet-18 (batch size 64)\tcd %s && python3 train.py\t-step\t1\t2409\t"
		"6.000000\t1\n"
		"A3C\tcd %s\t--max-steps\t0\t1000\t6.5\t4\n"
		"LM (batch size 5)\tcd %s\t--steps\t1\t50000\t7.25\t8\n"
		"CycleGAN\tcd %s\t--n_steps\t1\t123\t10\t16\n",
		NULL);
	assert_int_equal(t->n_jobs, 4);
	/* steps / (isolated V100 throughput) -> seconds -> ms; ids are rows */
	check_job(&t->jobs[0], 0, 0, 99987, 1, 1000);
	assert_string_equal(t->jobs[0].model, "resnet18");
	assert_int_equal(t->jobs[0].batch, 64);
	/* A3C has no 4-GPU throughput: the 1-GPU one */
	check_job(&t->jobs[1], 1, 500, 139358, 4, 1000);
	assert_string_equal(t->jobs[1].model, "a3c");
	assert_int_equal(t->jobs[1].batch, 0);
	/* LM has an 8-GPU throughput */
	check_job(&t->jobs[2], 2, 1250, 71554, 8, 1000);
	assert_string_equal(t->jobs[2].model, "lm");
	assert_int_equal(t->jobs[2].batch, 5);
	check_job(&t->jobs[3], 3, 4000, 27790, 16, 1000);
	assert_string_equal(t->jobs[3].model, "cyclegan");
	colloc_trace_destroy(t);
}

static void test_gavel_errors(void **state)
{
	(void)state;
	bad("gavel", "ResNet-19 (batch size 64)\tc\t-step\t1\t10\t0\t1\n",
	    "t.csv:1: column 'job_type': 'ResNet-19 (batch size 64)' is not a Gavel job "
	    "type");
	bad("gavel", "A3C\tc\t-step\t1\t10\t0\n", "t.csv:1: has 6 fields, expected 7");
	bad("gavel", "A3C,c,-step,1,10,0,1\n", "t.csv:1: has 1 fields, expected 7");
	bad("gavel", "A3C\tc\t-step\t1\t10\t0\t0\n",
	    "t.csv:1: column 'scale_factor': '0' is out of range [1, 65536]");
	bad("gavel", "A3C\tc\t-step\t1\t0\t0\t1\n",
	    "t.csv:1: column 'total_steps': '0' is out of range");
	bad("gavel", "A3C\tc\t-step\t1\t10\t-3\t1\n",
	    "t.csv:1: column 'arrival_time': '-3' is not a non-negative number");
	bad("gavel", "A3C\tc\t-step\t2\t10\t3\t1\n",
	    "t.csv:1: column 'needs_data_dir': '2' is out of range [0, 1]");
	/* 1e15 steps at 2.8 steps/s: over the time limit */
	bad("gavel",
	    "Recommendation (batch size 8192)\tc\t-n\t1\t1000000000000000\t3\t1\n",
	    "t.csv:1: column 'total_steps': gives a run time over");
}

/* --- csv ---------------------------------------------------------------------- */

static void test_csv_format(void **state)
{
	struct colloc_trace *t;

	(void)state;
	t = parse_ok("csv",
		     "# a comment, then a blank line\n"
		     "\n"
		     "id,submit_s,duration_s,gpus,gpu_milli,model,batch,mem,priority\n"
		     "7,10.5,1.25,1,500,resnet50,64,6GiB,2\n"
		     "  # an indented comment\n"
		     "8, 12 ,3600,4,,bert_base,,,\n"
		     "9,12,0.001,1,,,,512MiB,-1\n",
		     NULL);
	assert_int_equal(t->n_jobs, 3);
	check_job(&t->jobs[0], 7, 0, 1250, 1, 500);
	assert_string_equal(t->jobs[0].model, "resnet50");
	assert_int_equal(t->jobs[0].batch, 64);
	assert_int_equal(t->jobs[0].mem_bytes, 6442450944ull);
	assert_int_equal(t->jobs[0].priority, 2);
	check_job(&t->jobs[1], 8, 1500, 3600000, 4, 1000);
	assert_string_equal(t->jobs[1].model, "bert_base");
	assert_int_equal(t->jobs[1].batch, 0);
	assert_int_equal(t->jobs[1].mem_bytes, 0);
	check_job(&t->jobs[2], 9, 1500, 1, 1, 1000);
	assert_int_equal(t->jobs[2].mem_bytes, 536870912ull);
	assert_int_equal(t->jobs[2].priority, -1);
	colloc_trace_destroy(t);

	/* only the required columns, in another order, CRLF and a BOM; the
	 * id is the data row's number */
	t = parse_ok("csv",
		     "\xef\xbb\xbfgpus,duration_s,submit_s\r\n2,60,0\r\n1,30,1e1\r\n",
		     NULL);
	assert_int_equal(t->n_jobs, 2);
	check_job(&t->jobs[0], 0, 0, 60000, 2, 1000);
	check_job(&t->jobs[1], 1, 10000, 30000, 1, 1000);
	colloc_trace_destroy(t);
}

static void test_csv_errors(void **state)
{
	(void)state;
	bad("csv", "submit_s,duration_s,gpus,color\n0,1,1,red\n",
	    "t.csv:1: unknown column 'color'");
	bad("csv", "submit_s,duration_s,gpus,gpus\n0,1,1,1\n",
	    "t.csv:1: column 'gpus' appears twice");
	bad("csv", "submit_s,gpus\n0,1\n",
	    "t.csv:1: missing column 'duration_s' (kind csv)");
	bad("csv", "submit_s,duration_s,gpus\n0,-5,1\n",
	    "t.csv:2: column 'duration_s': '-5' is not a positive number");
	bad("csv", "submit_s,duration_s,gpus\n0,0.0001,1\n",
	    "t.csv:2: column 'duration_s': '0.0001' is shorter than 1 ms");
	bad("csv", "submit_s,duration_s,gpus\n0,,1\n",
	    "t.csv:2: column 'duration_s': is empty");
	bad("csv", "submit_s,duration_s,gpus\n0,nan,1\n",
	    "'nan' is not a positive number");
	bad("csv", "submit_s,duration_s,gpus\n0,inf,1\n",
	    "'inf' is not a positive number");
	bad("csv", "submit_s,duration_s,gpus\n0,0x10,1\n",
	    "'0x10' is not a positive number");
	bad("csv", "submit_s,duration_s,gpus\n0,1,+1\n", "'+1' is not an integer");
	bad("csv", "submit_s,duration_s,gpus\n0,1,1.0\n", "'1.0' is not an integer");
	bad("csv", "submit_s,duration_s,gpus,gpu_milli\n0,1,2,500\n",
	    "t.csv:2: column 'gpu_milli': '500' shares a GPU, which needs gpus = 1");
	bad("csv", "submit_s,duration_s,gpus,mem\n0,1,1,6 parsecs\n",
	    "t.csv:2: column 'mem': '6 parsecs' is not a size such as 6GiB");
	bad("csv", "submit_s,duration_s,gpus,model\n0,1,1,res\x01net\n",
	    "column 'model': has a byte 0x01 that is not printable ASCII");
}

/* Overflow and huge values in every parser. */
static void test_huge_numbers(void **state)
{
	char text[1024];

	(void)state;
	bad("csv", "submit_s,duration_s,gpus\n0,1,99999999999999999999\n",
	    "t.csv:2: column 'gpus': '99999999999999999999' is out of range [1, 65536]");
	bad("csv", "id,submit_s,duration_s,gpus\n9223372036854775808,0,1,1\n",
	    "column 'id': '9223372036854775808' is out of range");
	bad("csv", "submit_s,duration_s,gpus\n1e300,1,1\n",
	    "t.csv:2: column 'submit_s': '1e300' is too large (over 1000000000000000 "
	    "ms)");
	bad("csv", "submit_s,duration_s,gpus\n0,1e999,1\n",
	    "'1e999' is not a positive number");
	bad("csv", "submit_s,duration_s,gpus,batch\n0,1,1,-9223372036854775809\n",
	    "column 'batch': '-9223372036854775809' is out of range");
	snprintf(text, sizeof(text), "%s0,1,0,1,dqn,1,1000000000000001,0,1,1,1,1,0\n",
		 philly_header);
	bad("philly", text, "column 'duration': '1000000000000001' is too large");
	snprintf(text, sizeof(text), "%sp,1,1,1,10,,LS,Running,0,1e13,\n",
		 alibaba_header);
	bad("alibaba2023", text, "column 'deletion_time': '1e13' is too large");
	/* the largest times allowed still subtract without overflow */
	{
		struct colloc_trace *t =
			parse_ok("csv",
				 "submit_s,duration_s,gpus\n1000000000000,1000000000000,"
				 "1\n0,1,1\n",
				 NULL);

		assert_int_equal(t->jobs[1].submit_ms, 1000000000000000);
		colloc_trace_destroy(t);
	}
}

/* --- what every reader shares ----------------------------------------------- */

static void test_sort_and_normalise(void **state)
{
	struct colloc_trace *t;

	(void)state;
	/* (submit, id) order; equal pairs keep their file order (model tells) */
	t = parse_ok("csv",
		     "id,submit_s,duration_s,gpus,model\n"
		     "5,100,1,1,a\n"
		     "3,50,1,1,b\n"
		     "1,50,1,1,c\n"
		     "3,50,1,1,d\n"
		     "3,50,1,1,e\n"
		     "0,75,1,1,f\n"
		     "2,20,1,1,g\n",
		     NULL);
	assert_int_equal(t->n_jobs, 7);
	{
		static const char order[] = "gcbdefa";
		static const int64_t submit[] = {0,	30000, 30000, 30000,
						 30000, 55000, 80000};

		for (size_t i = 0; i < 7; i++) {
			assert_int_equal(t->jobs[i].model[0], order[i]);
			assert_int_equal(t->jobs[i].submit_ms, submit[i]);
		}
	}
	colloc_trace_destroy(t);
}

static void test_empty_traces(void **state)
{
	(void)state;
	parse_bad("csv", "", 0, NULL, COLLOC_EFORMAT,
		  "t.csv: empty file (no header line)");
	parse_bad("csv", NULL, 0, NULL, COLLOC_EFORMAT, "t.csv: empty file");
	bad("csv", "# only a comment\n\n", "t.csv: empty file (no header line)");
	bad("csv", "submit_s,duration_s,gpus\n", "t.csv: no jobs in the trace");
	bad("philly", philly_header, "t.csv: no jobs in the trace");
	bad("gavel", "\n\n", "t.csv: no jobs in the trace");
}

static void test_limits(void **state)
{
	struct colloc_trace_opts opts = {0};
	size_t n = 5000;
	char *text = malloc(n + 64);

	(void)state;
	assert_non_null(text);
	memcpy(text, "submit_s,duration_s,gpus\n", 25);
	memset(text + 25, 'x', n);
	text[25 + n] = '\n';
	parse_bad("csv", text, 26 + n, NULL, COLLOC_ELIMIT,
		  "t.csv:2: line is longer than 4096 bytes");
	/* not even skip_bad_rows gets past it */
	opts.skip_bad_rows = true;
	parse_bad("csv", text, 26 + n, &opts, COLLOC_ELIMIT, "line is longer");
	free(text);

	/* a line of exactly 4096 bytes is fine (as a bad row) */
	text = malloc(4200);
	assert_non_null(text);
	memcpy(text, "submit_s,duration_s,gpus\n0,1,1\n", 31);
	memset(text + 31, '7', 4096);
	text[31 + 4096] = '\n';
	parse_bad("csv", text, 31 + 4097, NULL, COLLOC_EFORMAT, "t.csv:3: has 1 fields");
	free(text);

	opts.skip_bad_rows = false;
	opts.max_bytes = 10;
	parse_bad("csv", "submit_s,duration_s,gpus\n0,1,1\n", 31, &opts, COLLOC_ELIMIT,
		  "t.csv: 31 bytes is over the limit of 10");

	/* too many fields */
	bad("csv",
	    "submit_s,duration_s,gpus\n"
	    "0,1,1,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	    "\n",
	    "t.csv:2: has more than 64 fields, the header has 3");
	/* a NUL byte is a bad row, not the end of the line */
	parse_bad("csv", "submit_s,duration_s,gpus\n0,1\0,1\n", 32, NULL, COLLOC_EFORMAT,
		  "t.csv:2: contains a NUL byte");
}

static void test_max_jobs(void **state)
{
	struct colloc_trace_opts opts = {0};
	struct colloc_trace *t;
	const char *text = "submit_s,duration_s,gpus\n9,1,1\n8,1,1\n7,1,1\n0,1,1\nbad\n";

	(void)state;
	opts.max_jobs = 3;
	/* the first three rows in file order, then sorted */
	t = parse_ok("csv", text, &opts);
	assert_int_equal(t->n_jobs, 3);
	check_job(&t->jobs[0], 2, 0, 1000, 1, 1000);
	check_job(&t->jobs[2], 0, 2000, 1000, 1, 1000);
	colloc_trace_destroy(t);
	opts.max_jobs = 4;
	t = parse_ok("csv", text, &opts);
	assert_int_equal(t->n_jobs, 4);
	colloc_trace_destroy(t);
	opts.max_jobs = 0;
	bad("csv", text, "t.csv:6: has 1 fields, the header has 3");
}

static void test_skip_bad_rows(void **state)
{
	struct colloc_trace_opts opts = {0};
	struct colloc_trace *t;
	static const char text[] = "submit_s,duration_s,gpus\n"
				   "0,1,1\n"
				   "1,-1,1\n"
				   "2,1,0\n"
				   "3,1,1,extra\n"
				   "4,1\0,1\n"
				   "5,1,1\n";
	size_t len = sizeof(text) - 1;

	(void)state;
	parse_bad("csv", text, len, NULL, COLLOC_EFORMAT, "t.csv:3: column 'duration_s'");
	opts.skip_bad_rows = true;
	{
		struct colloc_diag diag = {{0}};

		assert_int_equal(
			colloc_trace_parse("csv", "t.csv", text, len, &opts, &t, &diag),
			0);
		assert_string_equal(diag.msg, "");
	}
	assert_int_equal(t->n_jobs, 2);
	assert_int_equal(t->skipped_rows, 4);
	/* ids count every data row, skipped ones too */
	check_job(&t->jobs[0], 0, 0, 1000, 1, 1000);
	check_job(&t->jobs[1], 5, 5000, 1000, 1, 1000);
	colloc_trace_destroy(t);

	/* header problems are never skipped */
	parse_bad("csv", "submit_s,gpus\n0,1\n", 18, &opts, COLLOC_EFORMAT,
		  "missing column");
	/* nor is a trace left empty */
	parse_bad("csv", "submit_s,duration_s,gpus\n0,0,1\n", 31, &opts, COLLOC_EFORMAT,
		  "t.csv: no jobs in the trace (1 bad rows skipped");
}

static void test_usage(void **state)
{
	struct colloc_trace *t = NULL;
	struct colloc_diag diag = {{0}};

	(void)state;
	parse_bad("tsv", "x", 1, NULL, COLLOC_EUSAGE,
		  "unknown trace kind 'tsv' (valid: alibaba2023, philly, gavel, csv)");
	parse_bad(NULL, "x", 1, NULL, COLLOC_EUSAGE, "unknown trace kind '(null)'");
	assert_int_equal(colloc_trace_parse("csv", NULL, "x", 1, NULL, NULL, &diag),
			 COLLOC_EUSAGE);
	assert_int_equal(colloc_trace_read("tsv", "/nonexistent", NULL, &t, &diag),
			 COLLOC_EUSAGE);
	assert_int_equal(
		colloc_trace_read("csv", "/nonexistent/trace.csv", NULL, &t, &diag),
		-ENOENT);
	assert_string_equal(diag.msg,
			    "/nonexistent/trace.csv: No such file or directory");
	assert_null(t);
	colloc_trace_destroy(NULL);
}

/* --- excerpts of the real traces ------------------------------------------ */

static struct colloc_trace *read_excerpt(const char *kind, const char *file,
					 const struct colloc_trace_opts *opts,
					 int want_rc, struct colloc_diag *diag)
{
	const char *dir = getenv("COLLOC_TRACE_DIR");
	struct colloc_trace *t = NULL;
	char path[1024];
	int rc;

	if (!dir) {
		print_error("COLLOC_TRACE_DIR is not set\n");
		fail();
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	rc = colloc_trace_read(kind, path, opts, &t, diag);
	if (rc != want_rc) {
		print_error("%s: %d, expected %d: %s\n", path, rc, want_rc, diag->msg);
		fail();
	}
	return t;
}

static void test_real_excerpts(void **state)
{
	struct colloc_diag diag = {{0}};
	struct colloc_trace_opts opts = {0};
	struct colloc_trace *t;

	(void)state;
	t = read_excerpt("alibaba2023", "alibaba2023_default_head.csv", NULL, 0, &diag);
	assert_int_equal(t->n_jobs, 46);
	assert_int_equal(t->cpu_only_rows, 4);
	/* openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0 */
	check_job(&t->jobs[0], 0, 0, 12537496000, 1, 1000);
	/* openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061 */
	check_job(&t->jobs[1], 1, 427061000, 12475899000, 1, 460);
	for (size_t i = 1; i < t->n_jobs; i++)
		assert_true(t->jobs[i - 1].submit_ms <= t->jobs[i].submit_ms);
	colloc_trace_destroy(t);

	read_excerpt("alibaba2023", "alibaba2023_multigpu20_head.csv", NULL,
		     COLLOC_EFORMAT, &diag);
	assert_non_null(strstr(diag.msg,
			       "alibaba2023_multigpu20_head.csv:1: missing column "
			       "'creation_time'"));

	t = read_excerpt("philly", "philly_trace1_head.csv", NULL, 0, &diag);
	assert_int_equal(t->n_jobs, 50);
	/* 0,1,0,5853661,dqn,128,2868294000,... */
	check_job(&t->jobs[0], 0, 0, 2868294000, 1, 1000);
	assert_string_equal(t->jobs[0].model, "dqn");
	colloc_trace_destroy(t);

	t = read_excerpt("gavel", "gavel_0e4a51_head.trace", NULL, 0, &diag);
	assert_int_equal(t->n_jobs, 50);
	/* Transformer (batch size 128), 95121 steps at 5.446 steps/s, at 0 */
	check_job(&t->jobs[0], 0, 0, 17465876, 1, 1000);
	assert_string_equal(t->jobs[0].model, "transformer");
	assert_int_equal(t->jobs[0].batch, 128);
	colloc_trace_destroy(t);

	/* a file over max_bytes */
	opts.max_bytes = 100;
	read_excerpt("gavel", "gavel_0e4a51_head.trace", &opts, COLLOC_ELIMIT, &diag);
	assert_non_null(strstr(diag.msg, "larger than the limit of 100 bytes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alibaba_units),
		cmocka_unit_test(test_alibaba_errors),
		cmocka_unit_test(test_philly_units),
		cmocka_unit_test(test_philly_errors),
		cmocka_unit_test(test_gavel_units),
		cmocka_unit_test(test_gavel_errors),
		cmocka_unit_test(test_csv_format),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_huge_numbers),
		cmocka_unit_test(test_sort_and_normalise),
		cmocka_unit_test(test_empty_traces),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_max_jobs),
		cmocka_unit_test(test_skip_bad_rows),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_real_excerpts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
