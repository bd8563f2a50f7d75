/*
 * test_util.h — helpers shared by the unit tests (linked into every test
 * binary with the ONNX builder).
 */
#ifndef COLLOC_TEST_UTIL_H
#define COLLOC_TEST_UTIL_H

#include <stddef.h>

/* The whole file at path as a malloc'd NUL-terminated string, or NULL when
 * it cannot be read or is larger than max_bytes. */
char *test_slurp(const char *path, size_t max_bytes);

#endif
