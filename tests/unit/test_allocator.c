/*
 * test_allocator.c — the caching-allocator model against hand-worked cases
 * (rounding, pool choice, segment sizes, best fit, split, merge, cache
 * release under a device limit) and randomised invariants.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "colloc/allocator.h"
#include "colloc/error.h"

#define MiB ((uint64_t)1 << 20)

static struct colloc_alloc_sim *mk(uint64_t limit)
{
	struct colloc_alloc_sim *s = NULL;

	assert_int_equal(colloc_alloc_sim_create(limit, &s), 0);
	return s;
}

static uint32_t take(struct colloc_alloc_sim *s, uint64_t size)
{
	uint32_t h = 0;

	assert_int_equal(colloc_alloc_sim_malloc(s, size, &h), 0);
	return h;
}

static void where(struct colloc_alloc_sim *s, uint32_t h, uint64_t *addr, uint64_t *size)
{
	assert_int_equal(colloc_alloc_sim_block(s, h, addr, size), 0);
}

static void test_rounding(void **state)
{
	(void)state;
	assert_int_equal(colloc_alloc_round(1), 512);
	assert_int_equal(colloc_alloc_round(511), 512);
	assert_int_equal(colloc_alloc_round(512), 512);
	assert_int_equal(colloc_alloc_round(513), 1024);
	assert_int_equal(colloc_alloc_round(4 * MiB + 1), 4 * MiB + 512);
}

static void test_segment_sizes(void **state)
{
	(void)state;
	assert_int_equal(colloc_alloc_segment_size(512), 2 * MiB);
	assert_int_equal(colloc_alloc_segment_size(1 * MiB), 2 * MiB);
	assert_int_equal(colloc_alloc_segment_size(1 * MiB + 512), 20 * MiB);
	assert_int_equal(colloc_alloc_segment_size(10 * MiB - 512), 20 * MiB);
	assert_int_equal(colloc_alloc_segment_size(10 * MiB), 10 * MiB);
	assert_int_equal(colloc_alloc_segment_size(10 * MiB + 512), 12 * MiB);
}

static void test_zero_size(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;
	uint32_t h = 7;

	(void)state;
	assert_int_equal(colloc_alloc_sim_malloc(s, 0, &h), 0);
	assert_int_equal(h, COLLOC_ALLOC_NULL);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 0);
	assert_int_equal(colloc_alloc_sim_free(s, h), 0);
	assert_int_equal(colloc_alloc_sim_free(s, 12345), COLLOC_EUSAGE);
	colloc_alloc_sim_destroy(s);
}

static void test_small_pool_split_and_merge(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;
	uint64_t a1, a2, a3, sz;
	uint32_t h1, h2, h3;

	(void)state;
	h1 = take(s, 1000); /* rounds to 1024 in a new 2 MiB segment */
	h2 = take(s, 1000); /* split remainder: right behind the first */
	where(s, h1, &a1, &sz);
	assert_int_equal(sz, 1024);
	where(s, h2, &a2, &sz);
	assert_int_equal(a2, a1 + 1024);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.allocated, 2048);
	assert_int_equal(st.requested, 2000);
	assert_int_equal(st.reserved, 2 * MiB);
	assert_int_equal(st.n_mallocs, 1);

	/* Free both: they merge with the tail into one 2 MiB free block, so
	 * a 1 MiB request lands at the segment start with no new segment. */
	assert_int_equal(colloc_alloc_sim_free(s, h1), 0);
	assert_int_equal(colloc_alloc_sim_free(s, h2), 0);
	h3 = take(s, 1 * MiB);
	where(s, h3, &a3, &sz);
	assert_int_equal(a3, a1);
	assert_int_equal(sz, 1 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.n_mallocs, 1);
	assert_int_equal(colloc_alloc_sim_free(s, h3), 0);
	colloc_alloc_sim_empty_cache(s);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 0);
	assert_int_equal(st.n_segments, 0);
	assert_int_equal(st.peak_reserved, 2 * MiB);
	colloc_alloc_sim_destroy(s);
}

static void test_pool_choice(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;

	(void)state;
	/* Exactly 1 MiB is small: two share a 2 MiB segment, a third needs
	 * another one. 1 MiB + 1 byte is large: a 20 MiB segment. */
	take(s, 1 * MiB);
	take(s, 1 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 2 * MiB);
	take(s, 1 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 4 * MiB);
	take(s, 1 * MiB + 1);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 24 * MiB);
	assert_int_equal(st.n_mallocs, 3);
	colloc_alloc_sim_destroy(s);
}

static void test_large_split_threshold(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;
	uint64_t a1, a2, sz;
	uint32_t h1, h2, h3;

	(void)state;
	/* 19 MiB in a 20 MiB segment: the 1 MiB remainder is not > kSmallSize,
	 * so the block is not split and counts 20 MiB as allocated. */
	h1 = take(s, 19 * MiB);
	where(s, h1, &a1, &sz);
	assert_int_equal(sz, 20 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.allocated, 20 * MiB);

	/* 2 MiB in a new 20 MiB segment leaves 18 MiB, which is split off
	 * and serves the next 3 MiB request. */
	h2 = take(s, 2 * MiB);
	h3 = take(s, 3 * MiB);
	where(s, h2, &a1, &sz);
	assert_int_equal(sz, 2 * MiB);
	where(s, h3, &a2, &sz);
	assert_int_equal(a2, a1 + 2 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 40 * MiB);
	assert_int_equal(st.allocated, 25 * MiB);
	colloc_alloc_sim_destroy(s);
}

static void test_best_fit(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;
	uint64_t a12, a14, a, sz;
	uint32_t h12, h14, h;

	(void)state;
	h12 = take(s, 12 * MiB); /* segment of 12 MiB */
	h14 = take(s, 14 * MiB); /* segment of 14 MiB */
	where(s, h12, &a12, &sz);
	where(s, h14, &a14, &sz);
	assert_int_equal(colloc_alloc_sim_free(s, h14), 0);
	assert_int_equal(colloc_alloc_sim_free(s, h12), 0);
	/* 11 MiB fits both; the smaller (12 MiB) wins, unsplit (1 MiB left). */
	h = take(s, 11 * MiB);
	where(s, h, &a, &sz);
	assert_int_equal(a, a12);
	assert_int_equal(sz, 12 * MiB);
	/* 13 MiB only fits the 14 MiB block. */
	h = take(s, 13 * MiB);
	where(s, h, &a, &sz);
	assert_int_equal(a, a14);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.n_mallocs, 2);
	colloc_alloc_sim_destroy(s);
}

static void test_merge_three(void **state)
{
	struct colloc_alloc_sim *s = mk(0);
	struct colloc_alloc_stats st;
	uint64_t a0, a, sz;
	uint32_t h[3], big;

	(void)state;
	for (int k = 0; k < 3; k++)
		h[k] = take(s, 4 * MiB); /* one 20 MiB segment, 8 MiB tail */
	where(s, h[0], &a0, &sz);
	assert_int_equal(colloc_alloc_sim_free(s, h[1]), 0);
	assert_int_equal(colloc_alloc_sim_free(s, h[0]), 0);
	assert_int_equal(colloc_alloc_sim_free(s, h[2]), 0);
	big = take(s, 20 * MiB);
	where(s, big, &a, &sz);
	assert_int_equal(a, a0);
	assert_int_equal(sz, 20 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.n_mallocs, 1);
	colloc_alloc_sim_destroy(s);
}

static void test_limit_releases_cache_then_ooms(void **state)
{
	struct colloc_alloc_sim *s = mk(30 * MiB);
	struct colloc_alloc_stats st;
	uint32_t h, h2;

	(void)state;
	h = take(s, 20 * MiB);
	assert_int_equal(colloc_alloc_sim_free(s, h), 0);
	/* 22 MiB does not fit the cached 20 MiB block and wants a 22 MiB
	 * segment: 20 + 22 > 30, so the cached segment is released first and
	 * the request succeeds. */
	h2 = take(s, 22 * MiB);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 22 * MiB);
	assert_int_equal(st.n_frees, 1);
	/* Another 16 MiB cannot fit beside it: out of memory, state intact. */
	assert_int_equal(colloc_alloc_sim_malloc(s, 16 * MiB, &h), -ENOMEM);
	colloc_alloc_sim_stats(s, &st);
	assert_int_equal(st.reserved, 22 * MiB);
	assert_int_equal(st.allocated, 22 * MiB);
	assert_int_equal(colloc_alloc_sim_free(s, h2), 0);
	colloc_alloc_sim_destroy(s);
}

static uint64_t rng_next(uint64_t *x)
{
	/* xorshift64*: deterministic across platforms. */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

static int cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void check_invariants(struct colloc_alloc_sim *s, const uint32_t *live, size_t n)
{
	struct colloc_alloc_stats st;
	uint64_t(*spans)[2] = calloc(n + 1, sizeof(*spans));
	uint64_t sum = 0;

	assert_non_null(spans);
	colloc_alloc_sim_stats(s, &st);
	for (size_t k = 0; k < n; k++) {
		where(s, live[k], &spans[k][0], &spans[k][1]);
		sum += spans[k][1];
	}
	assert_int_equal(sum, st.allocated);
	assert_true(st.reserved >= st.allocated);
	assert_true(st.peak_reserved >= st.reserved);
	assert_true(st.peak_allocated >= st.allocated);
	assert_true(st.peak_reserved >= st.peak_allocated);
	qsort(spans, n, sizeof(*spans), cmp_u64pair);
	for (size_t k = 1; k < n; k++)
		assert_true(spans[k - 1][0] + spans[k - 1][1] <= spans[k][0]);
	free(spans);
}

static void test_random_streams(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct colloc_alloc_sim *s = mk(seed % 4 == 0 ? 512 * MiB : 0);
		struct colloc_alloc_stats st;
		uint32_t live[512];
		size_t n = 0;
		uint64_t x = seed * 0x9E3779B97F4A7C15ull;

		for (int op = 0; op < 3000; op++) {
			uint64_t r = rng_next(&x);

			if (n < 512 && (n == 0 || r % 3 != 0)) {
				/* Sizes spread over both pools and all segment
				 * classes: up to 64 KiB, up to 4 MiB, up to 48 MiB. */
				uint64_t sz = r >> 8;
				uint32_t h;
				int rc;

				switch ((r >> 4) % 3) {
				case 0:
					sz %= 64 * 1024;
					break;
				case 1:
					sz %= 4 * MiB;
					break;
				default:
					sz %= 48 * MiB;
					break;
				}
				rc = colloc_alloc_sim_malloc(s, sz + 1, &h);
				if (rc == -ENOMEM)
					continue; /* only with the limit */
				assert_int_equal(rc, 0);
				live[n++] = h;
			} else {
				size_t k = (size_t)(r >> 16) % n;

				assert_int_equal(colloc_alloc_sim_free(s, live[k]), 0);
				live[k] = live[--n];
			}
			if (op % 97 == 0)
				check_invariants(s, live, n);
		}
		check_invariants(s, live, n);
		while (n)
			assert_int_equal(colloc_alloc_sim_free(s, live[--n]), 0);
		colloc_alloc_sim_stats(s, &st);
		assert_int_equal(st.allocated, 0);
		assert_int_equal(st.requested, 0);
		assert_int_equal(st.n_live, 0);
		colloc_alloc_sim_empty_cache(s);
		colloc_alloc_sim_stats(s, &st);
		assert_int_equal(st.reserved, 0);
		assert_int_equal(st.n_segments, 0);
		assert_int_equal(st.n_mallocs, st.n_frees);
		colloc_alloc_sim_destroy(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_segment_sizes),
		cmocka_unit_test(test_zero_size),
		cmocka_unit_test(test_small_pool_split_and_merge),
		cmocka_unit_test(test_pool_choice),
		cmocka_unit_test(test_large_split_threshold),
		cmocka_unit_test(test_best_fit),
		cmocka_unit_test(test_merge_three),
		cmocka_unit_test(test_limit_releases_cache_then_ooms),
		cmocka_unit_test(test_random_streams),
	};

	return cmocka_run_group_tests_name("allocator", tests, NULL, NULL);
}
