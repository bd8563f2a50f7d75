/*
 * test_oom.c — recognising GPU out-of-memory deaths and sizing the retry
 * (src/daemon/oom.c): each marker, bounded search, scanning log files from
 * an offset, and a table of decisions including absurd sizes.
 *
 * Whether the job exited non-zero is the caller's rule; only the functions
 * are tested here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colloc/error.h"
#include "daemon/oom.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

static const char *const all_markers[] = {
	"CUDA out of memory",	      "OutOfMemoryError",
	"CUBLAS_STATUS_ALLOC_FAILED", "CUDA_ERROR_OUT_OF_MEMORY",
	"cudaErrorMemoryAllocation",  "RESOURCE_EXHAUSTED",
};
#define N_MARKERS (sizeof(all_markers) / sizeof(all_markers[0]))

/* s's bytes at dst, without its NUL: dst is a buffer, not a string. */
static void put(char *dst, const char *s)
{
	for (size_t i = 0; s[i]; i++)
		dst[i] = s[i];
}

/* A heap copy of exactly len bytes, so that ASan sees any read past it. */
static char *exact(const char *s, size_t len)
{
	char *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, s, len);
	return p;
}

static void test_each_marker(void **state)
{
	char text[256];

	(void)state;
	for (size_t k = 0; k < N_MARKERS; k++) {
		const char *m;
		char *buf;
		int n;

		/* alone, exactly filling the buffer */
		buf = exact(all_markers[k], strlen(all_markers[k]));
		m = cd_oom_marker(buf, strlen(all_markers[k]));
		assert_non_null(m);
		assert_string_equal(m, all_markers[k]);
		free(buf);

		/* in the middle of a log, after a line break */
		n = snprintf(text, sizeof(text),
			     "epoch 3\nstep 10 loss 0.1\nError: %s. Tried",
			     all_markers[k]);
		buf = exact(text, (size_t)n);
		m = cd_oom_marker(buf, (size_t)n);
		assert_non_null(m);
		assert_string_equal(m, all_markers[k]);

		/* cut off by the end of the buffer, one byte short: not found */
		m = cd_oom_marker(buf, (size_t)(strstr(text, all_markers[k]) - text) +
					       strlen(all_markers[k]) - 1);
		assert_null(m);
		free(buf);
	}
}

static void test_marker_rules(void **state)
{
	static const char pytorch[] =
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
	static const char nul_inside[] = "abc\0def\0RESOURCE_EXHAUSTED\0";
	char *buf;

	(void)state;
	/* several: the first in oom.h's list wins, not the first in the text */
	assert_string_equal(cd_oom_marker(pytorch, sizeof(pytorch) - 1),
			    "CUDA out of memory");
	/* case-sensitive */
	assert_null(cd_oom_marker("cuda out of memory", 18));
	assert_null(cd_oom_marker("resource_exhausted", 18));
	/* not across a line break inside the marker */
	assert_null(cd_oom_marker("CUDA out of\nmemory", 18));
	/* NUL bytes are ordinary bytes: no reliance on termination */
	assert_string_equal(cd_oom_marker(nul_inside, sizeof(nul_inside) - 1),
			    "RESOURCE_EXHAUSTED");
	/* empty and NULL */
	assert_null(cd_oom_marker("", 0));
	assert_null(cd_oom_marker(NULL, 0));
	assert_null(cd_oom_marker(NULL, 100));
	/* a near miss at the very end (every prefix of a marker) */
	for (size_t k = 0; k < N_MARKERS; k++) {
		size_t len = strlen(all_markers[k]);

		for (size_t cut = 1; cut < len; cut++) {
			buf = exact(all_markers[k], cut);
			assert_null(cd_oom_marker(buf, cut));
			free(buf);
		}
	}
	/* the static string is returned, not a pointer into buf */
	buf = exact("xxRESOURCE_EXHAUSTEDxx", 22);
	{
		const char *m = cd_oom_marker(buf, 22);

		assert_non_null(m);
		assert_true(m < buf || m >= buf + 22);
	}
	free(buf);
}

/* ------------------------------------------------------------- files */

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/colloc-test-oom-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/job.err", f->dir);
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

static void write_bytes(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static const char *scan(const char *path, uint64_t offset, size_t max_bytes)
{
	struct colloc_diag diag = {{0}};
	const char *m = "untouched";
	int rc = cd_oom_scan_file(path, offset, max_bytes, &m, &diag);

	if (rc != 0) {
		print_error("scan %s: %d %s\n", path, rc, diag.msg);
		fail();
	}
	return m;
}

static void test_scan_file(void **state)
{
	struct fixture *f = *state;
	static const char log[] = "starting\n" /* 0..9 */
				  "RuntimeError: CUDA out of memory\n" /* 9..42 */
				  "more output after it\n"; /* 42..63 */
	struct colloc_diag diag = {{0}};
	const char *m = "untouched";

	/* missing file: the job printed nothing */
	assert_null(scan(f->path, 0, 4096));

	write_bytes(f->path, log, sizeof(log) - 1);
	assert_string_equal(scan(f->path, 0, 4096), "CUDA out of memory");
	/* from an offset before the marker, and from one inside it */
	assert_string_equal(scan(f->path, 9, 4096), "CUDA out of memory");
	assert_string_equal(scan(f->path, 23, 4096), "CUDA out of memory");
	assert_null(scan(f->path, 24, 4096));
	assert_null(scan(f->path, 42, 4096));
	/* at and past the end: nothing new */
	assert_null(scan(f->path, sizeof(log) - 1, 4096));
	assert_null(scan(f->path, 1000000, 4096));
	assert_null(scan(f->path, UINT64_MAX, 4096));
	/* only the last max_bytes count: the marker starts 40 bytes before
	 * the end of the file */
	assert_string_equal(scan(f->path, 0, 40), "CUDA out of memory");
	assert_null(scan(f->path, 0, 39)); /* straddles the window's start */
	assert_null(scan(f->path, 0, 0));

	/* not a regular file */
	assert_int_equal(cd_oom_scan_file(f->dir, 0, 100, &m, &diag), -EINVAL);
	assert_null(m);
	assert_non_null(strstr(diag.msg, "not a regular file"));
	/* unreadable: a path through a file */
	{
		char bad[160];

		snprintf(bad, sizeof(bad), "%s/x", f->path);
		m = "untouched";
		assert_int_equal(cd_oom_scan_file(bad, 0, 100, &m, &diag), -ENOTDIR);
		assert_null(m);
	}
}

/* Markers anywhere in a file larger than the scan's chunks, including
 * across the chunk boundaries (16 KiB apart, so every 64 KiB is one). */
static void test_scan_big_file(void **state)
{
	struct fixture *f = *state;
	size_t len = (size_t)300 << 10;
	char *data = malloc(len);
	static const size_t at[] = {0,
				    (64 << 10) - 5,
				    (64 << 10) - 25,
				    (128 << 10) - 1,
				    (200 << 10) + 3,
				    ((size_t)300 << 10) - 26};

	assert_non_null(data);
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		static const char mk[] = "CUBLAS_STATUS_ALLOC_FAILED";

		for (size_t i = 0; i < len; i++)
			data[i] = (char)('a' + i % 26);
		put(data + at[k], mk);
		write_bytes(f->path, data, len);
		assert_string_equal(scan(f->path, 0, SIZE_MAX), mk);
		assert_string_equal(scan(f->path, at[k], len), mk);
		assert_null(scan(f->path, at[k] + 1, len));
		/* with the window starting inside it */
		assert_null(scan(f->path, 0, len - at[k] - 1));
	}

	/* the earlier marker in the list wins even when found later */
	for (size_t i = 0; i < len; i++)
		data[i] = '.';
	put(data + 10, "RESOURCE_EXHAUSTED");
	put(data + len - 30, "CUDA out of memory");
	write_bytes(f->path, data, len);
	assert_string_equal(scan(f->path, 0, len), "CUDA out of memory");
	put(data + len - 30, "cudaErrorMemoryAllocation");
	write_bytes(f->path, data, len);
	assert_string_equal(scan(f->path, 0, len), "cudaErrorMemoryAllocation");
	free(data);
}

/* ------------------------------------------------------------ decide */

static void test_policy_defaults(void **state)
{
	struct cd_oom_policy p;

	(void)state;
	cd_oom_policy_init(&p);
	assert_true(p.growth == 1.5);
	assert_true(p.peak_margin == 1.2);
	assert_int_equal(p.exclusive_after, 2);
	assert_int_equal(p.max_attempts, 4);
}

static void test_decide_table(void **state)
{
	static const struct {
		int attempts;
		uint64_t old_need, peak, total;
		bool was_exclusive;
		int action;
		uint64_t need;
	} cases[] = {
		/* growth: 4 GiB * 1.5 = 6 GiB */
		{1, 4 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY, 6 * GiB},
		/* the peak wins when larger: 7 GiB * 1.2 = 8.4 GiB -> 8.5 GiB */
		{1, 4 * GiB, 7 * GiB, 80 * GiB, false, CD_OOM_RETRY, 8 * GiB + 512 * MiB},
		/* rounded up to 256 MiB: 1000 MiB * 1.5 = 1500 MiB -> 1536 MiB */
		{1, 1000 * MiB, 0, 80 * GiB, false, CD_OOM_RETRY, 1536 * MiB},
		/* an exact multiple stays: 1 GiB * 1.5 = 1.5 GiB */
		{1, GiB, 0, 80 * GiB, false, CD_OOM_RETRY, 1536 * MiB},
		/* unknown need: at least one step */
		{1, 0, 0, 80 * GiB, false, CD_OOM_RETRY, 256 * MiB},
		{1, 1, 0, 80 * GiB, false, CD_OOM_RETRY, 256 * MiB},
		/* the next attempt (3) reaches exclusive_after (3) */
		{2, 4 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY_EXCLUSIVE, 6 * GiB},
		{3, 6 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY_EXCLUSIVE, 9 * GiB},
		/* attempts >= max_attempts: give up with the old need */
		{4, 9 * GiB, 0, 80 * GiB, true, CD_OOM_GIVE_UP, 9 * GiB},
		{5, 9 * GiB, 0, 80 * GiB, false, CD_OOM_GIVE_UP, 9 * GiB},
		/* capped at the GPU */
		{1, 60 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY, 80 * GiB},
		{1, 4 * GiB, 79 * GiB, 80 * GiB, false, CD_OOM_RETRY, 80 * GiB},
		/* the whole GPU already, shared: one more try alone */
		{1, 80 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY_EXCLUSIVE, 80 * GiB},
		/* the whole GPU already, alone: nothing left to try */
		{2, 80 * GiB, 0, 80 * GiB, true, CD_OOM_GIVE_UP, 80 * GiB},
		{1, 90 * GiB, 0, 80 * GiB, true, CD_OOM_GIVE_UP, 90 * GiB},
		/* alone but not the whole GPU: grow, stay alone */
		{1, 40 * GiB, 0, 80 * GiB, true, CD_OOM_RETRY_EXCLUSIVE, 60 * GiB},
		{2, 60 * GiB, 0, 80 * GiB, true, CD_OOM_RETRY_EXCLUSIVE, 80 * GiB},
		/* a GPU size that is not a multiple of 256 MiB */
		{1, 20 * GiB, 0, 23 * GiB + 1, false, CD_OOM_RETRY, 23 * GiB + 1},
		/* unknown GPU size (0): no cap */
		{1, 100 * GiB, 0, 0, false, CD_OOM_RETRY, 150 * GiB},
		{1, 100 * GiB, 0, 0, true, CD_OOM_RETRY_EXCLUSIVE, 150 * GiB},
		/* huge values saturate instead of wrapping */
		{1, UINT64_MAX, 0, 0, false, CD_OOM_RETRY, UINT64_MAX},
		{1, UINT64_MAX / 2, 0, 0, false, CD_OOM_RETRY, 3ULL << 62},
		{1, 0, UINT64_MAX, 0, false, CD_OOM_RETRY, UINT64_MAX},
		{1, UINT64_MAX, UINT64_MAX, UINT64_MAX, false, CD_OOM_RETRY_EXCLUSIVE,
		 UINT64_MAX},
		{1, UINT64_MAX - 1, 0, UINT64_MAX, false, CD_OOM_RETRY, UINT64_MAX},
		{1, UINT64_MAX, 0, UINT64_MAX, true, CD_OOM_GIVE_UP, UINT64_MAX},
		{1, 4 * GiB, 0, UINT64_MAX, false, CD_OOM_RETRY, 6 * GiB},
		/* just past the exactness of doubles: never less than old */
		{1, (1ULL << 53) + 1, 0, 0, false, CD_OOM_RETRY,
		 ((1ULL << 53) + (1ULL << 52) + 256 * MiB - 1) & ~(256 * MiB - 1)},
		/* attempts below 1 count as 1 */
		{0, 4 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY, 6 * GiB},
		{INT_MIN, 4 * GiB, 0, 80 * GiB, false, CD_OOM_RETRY, 6 * GiB},
		{INT_MAX, 4 * GiB, 0, 80 * GiB, false, CD_OOM_GIVE_UP, 4 * GiB},
	};
	struct cd_oom_policy p;

	(void)state;
	/* exclusive from the third attempt, so that the table shows both
	 * kinds of retry */
	cd_oom_policy_init(&p);
	p.exclusive_after = 3;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct cd_oom_decision d;

		memset(&d, 0xa5, sizeof(d));
		cd_oom_decide(&p, cases[k].attempts, cases[k].old_need, cases[k].peak,
			      cases[k].total, cases[k].was_exclusive, &d);
		if (d.action != cases[k].action || d.mem_need_bytes != cases[k].need ||
		    d.reason[0] == '\0' || !memchr(d.reason, '\0', sizeof(d.reason))) {
			print_error("case %zu: action %d need %llu (%s); want %d %llu\n",
				    k, d.action, (unsigned long long)d.mem_need_bytes,
				    d.reason, cases[k].action,
				    (unsigned long long)cases[k].need);
			fail();
		}
		if (d.action != CD_OOM_GIVE_UP)
			assert_true(d.mem_need_bytes >= cases[k].old_need ||
				    d.mem_need_bytes == cases[k].total);
	}
}

static void test_decide_policies(void **state)
{
	struct cd_oom_decision d;
	struct cd_oom_policy p;

	(void)state;
	/* by default (exclusive_after 2) the first retry, attempt 2, is
	 * already alone; so it is with exclusive_after 1 */
	cd_oom_policy_init(&p);
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_RETRY_EXCLUSIVE);
	p.exclusive_after = 1;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_RETRY_EXCLUSIVE);
	p.exclusive_after = 3;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_RETRY);
	/* exclusive only from attempt INT_MAX on: no overflow on the way */
	p.exclusive_after = INT_MAX;
	p.max_attempts = INT_MAX;
	cd_oom_decide(&p, INT_MAX - 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_RETRY_EXCLUSIVE); /* next is INT_MAX */
	cd_oom_decide(&p, INT_MAX - 2, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_RETRY);
	/* one attempt in all: the first OOM is final */
	cd_oom_policy_init(&p);
	p.max_attempts = 1;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.action, CD_OOM_GIVE_UP);
	/* growth 1 and no peak: the same need again (rounded) */
	cd_oom_policy_init(&p);
	p.growth = 1.0;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.mem_need_bytes, 4 * GiB);
	/* nonsense factors never shrink the need, nor overflow */
	p.growth = 0.1;
	p.peak_margin = -3;
	cd_oom_decide(&p, 1, 4 * GiB, 2 * GiB, 80 * GiB, false, &d);
	assert_int_equal(d.mem_need_bytes, 4 * GiB);
	p.growth = 1e300;
	p.peak_margin = 1e300;
	cd_oom_decide(&p, 1, 4 * GiB, 2 * GiB, 0, false, &d);
	assert_true(d.mem_need_bytes == UINT64_MAX);
	p.growth = (double)NAN;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_int_equal(d.mem_need_bytes, 4 * GiB);
}

static void test_decide_reason(void **state)
{
	struct cd_oom_decision d;
	struct cd_oom_policy p;

	(void)state;
	cd_oom_policy_init(&p);
	p.exclusive_after = 3;
	cd_oom_decide(&p, 1, 4 * GiB, 0, 80 * GiB, false, &d);
	assert_string_equal(d.reason,
			    "out of memory on attempt 1: need 4.00 GiB -> 6.00 GiB");
	cd_oom_decide(&p, 2, 6 * GiB, 0, 80 * GiB, false, &d);
	assert_string_equal(d.reason,
			    "out of memory on attempt 2: need 6.00 GiB -> 9.00 GiB, "
			    "on GPUs of its own");
	cd_oom_decide(&p, 4, 9 * GiB, 0, 80 * GiB, true, &d);
	assert_string_equal(d.reason, "out of memory on attempt 4 of 4 (need 9.00 GiB): "
				      "giving up");
	cd_oom_decide(&p, 3, 80 * GiB, 0, 80 * GiB, true, &d);
	assert_string_equal(d.reason,
			    "out of memory on attempt 3 with a whole 80.0 GiB GPU "
			    "to itself: giving up");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_marker),
		cmocka_unit_test(test_marker_rules),
		cmocka_unit_test_setup_teardown(test_scan_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_big_file, setup, teardown),
		cmocka_unit_test(test_policy_defaults),
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_decide_policies),
		cmocka_unit_test(test_decide_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
