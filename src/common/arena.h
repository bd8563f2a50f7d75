/*
 * arena.h — a bump allocator for objects that live and die together.
 *
 * A loaded graph owns every string, array and tensor value it holds through
 * one arena, so destroying the graph is one call and partial failures during
 * loading leak nothing. Not thread-safe; not for objects freed one by one.
 * Internal to libcolloc.
 */
#ifndef COLLOC_ARENA_H
#define COLLOC_ARENA_H

#include <stddef.h>

struct colloc__arena_chunk;

struct colloc__arena {
	struct colloc__arena_chunk *head;
	size_t used_bytes; /* sum of all allocations, for limits */
	size_t limit_bytes; /* 0 = unlimited */
};

void colloc__arena_init(struct colloc__arena *a, size_t limit_bytes);
void colloc__arena_fini(struct colloc__arena *a);

/* Zeroed, 16-byte aligned memory, or NULL when out of memory or over limit. */
void *colloc__arena_alloc(struct colloc__arena *a, size_t size);

/* nmemb * size with overflow check; NULL on overflow. */
void *colloc__arena_calloc(struct colloc__arena *a, size_t nmemb, size_t size);

/* Copy of the first n bytes of s plus a NUL; NULL on failure. */
char *colloc__arena_strndup(struct colloc__arena *a, const char *s, size_t n);
char *colloc__arena_strdup(struct colloc__arena *a, const char *s);

#endif
