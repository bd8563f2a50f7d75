/*
 * test_util.h — helpers shared by the unit tests (linked into every test
 * binary with the ONNX builder).
 */
#ifndef COLLOC_TEST_UTIL_H
#define COLLOC_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The whole file at path as a malloc'd NUL-terminated string, or NULL when
 * it cannot be read or is larger than max_bytes. */
char *test_slurp(const char *path, size_t max_bytes);

/* CLOCK_MONOTONIC in ms, and a sleep of ms: for the tests' bounded waits. */
int64_t test_mono_ms(void);
void test_nap_ms(long ms);

/* rm -rf dir (a test's temporary directory); 0 or -1. */
int test_rm_rf(const char *dir);

#endif
