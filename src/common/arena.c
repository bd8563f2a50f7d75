/*
 * arena.c — chunked bump allocator (see arena.h).
 */
#include "common/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK_BYTES ((size_t)64 * 1024)
#define ARENA_ALIGN 16u

struct colloc__arena_chunk {
	struct colloc__arena_chunk *next;
	size_t cap;
	size_t off;
	/* Payload follows, aligned by the allocation below. */
	_Alignas(16) unsigned char data[];
};

void colloc__arena_init(struct colloc__arena *a, size_t limit_bytes)
{
	a->head = NULL;
	a->used_bytes = 0;
	a->limit_bytes = limit_bytes;
}

void colloc__arena_fini(struct colloc__arena *a)
{
	struct colloc__arena_chunk *c = a->head;

	while (c) {
		struct colloc__arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->used_bytes = 0;
}

void *colloc__arena_alloc(struct colloc__arena *a, size_t size)
{
	struct colloc__arena_chunk *c = a->head;
	size_t need;
	void *p;

	if (size == 0)
		size = 1;
	if (size > SIZE_MAX / 2)
		return NULL;
	need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (a->limit_bytes && need > a->limit_bytes - a->used_bytes)
		return NULL;
	if (!c || c->cap - c->off < need) {
		size_t cap = need > ARENA_CHUNK_BYTES ? need : ARENA_CHUNK_BYTES;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->off = 0;
		/* A big one-off block goes behind the head so the head's free
		 * tail stays usable for small allocations. */
		if (a->head && need > ARENA_CHUNK_BYTES) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	p = c->data + c->off;
	c->off += need;
	a->used_bytes += need;
	memset(p, 0, size);
	return p;
}

void *colloc__arena_calloc(struct colloc__arena *a, size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	return colloc__arena_alloc(a, nmemb * size);
}

char *colloc__arena_strndup(struct colloc__arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = colloc__arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *colloc__arena_strdup(struct colloc__arena *a, const char *s)
{
	return colloc__arena_strndup(a, s, strlen(s));
}
