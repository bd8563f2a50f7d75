/*
 * allocator.c — replay of PyTorch's CUDA caching allocator (see
 * colloc/allocator.h for the rules mirrored and their source).
 *
 * Blocks live in one array indexed by handle; each block knows its
 * neighbours within its segment. Free blocks of each pool are kept in an
 * array sorted by (size, address), so best-fit is a binary search, as
 * PyTorch's std::set<Block*, BlockComparator>::lower_bound is. Pools hold
 * tens to hundreds of free blocks in practice, so the O(n) insertions are
 * cheaper than a tree.
 */
#include "colloc/allocator.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/error.h"

#define MAX_BLOCKS (1u << 26)

struct block {
	uint64_t addr;
	uint64_t size;
	uint64_t requested;
	int32_t prev, next; /* neighbours in the segment, -1 at the ends */
	uint32_t next_unused; /* free-slot list when the slot is unused */
	bool allocated;
	bool small;
	bool in_use; /* slot holds a block (free or allocated) */
};

struct pool {
	uint32_t *free; /* block indices sorted by (size, addr) */
	uint32_t n, cap;
};

struct colloc_alloc_sim {
	struct block *blocks;
	uint32_t n_blocks, cap_blocks;
	uint32_t unused; /* head of the free-slot list, UINT32_MAX if none */
	struct pool small, large;
	uint64_t limit;
	uint64_t next_addr;
	struct colloc_alloc_stats st;
};

uint64_t colloc_alloc_round(uint64_t size)
{
	if (size < COLLOC_ALLOC_MIN_BLOCK)
		return COLLOC_ALLOC_MIN_BLOCK;
	if (size > UINT64_MAX - COLLOC_ALLOC_MIN_BLOCK)
		return UINT64_MAX & ~(uint64_t)(COLLOC_ALLOC_MIN_BLOCK - 1);
	return (size + COLLOC_ALLOC_MIN_BLOCK - 1) / COLLOC_ALLOC_MIN_BLOCK *
	       COLLOC_ALLOC_MIN_BLOCK;
}

uint64_t colloc_alloc_segment_size(uint64_t rounded)
{
	if (rounded <= COLLOC_ALLOC_SMALL_SIZE)
		return COLLOC_ALLOC_SMALL_BUFFER;
	if (rounded < COLLOC_ALLOC_MIN_LARGE_ALLOC)
		return COLLOC_ALLOC_LARGE_BUFFER;
	if (rounded > UINT64_MAX - COLLOC_ALLOC_ROUND_LARGE)
		return UINT64_MAX & ~(uint64_t)(COLLOC_ALLOC_ROUND_LARGE - 1);
	return (rounded + COLLOC_ALLOC_ROUND_LARGE - 1) / COLLOC_ALLOC_ROUND_LARGE *
	       COLLOC_ALLOC_ROUND_LARGE;
}

int colloc_alloc_sim_create(uint64_t limit_bytes, struct colloc_alloc_sim **out)
{
	struct colloc_alloc_sim *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->limit = limit_bytes;
	s->unused = UINT32_MAX;
	/* Segments start at a plausible device address; gaps between them
	 * keep blocks of different segments from ever looking adjacent. */
	s->next_addr = (uint64_t)1 << 40;
	*out = s;
	return 0;
}

void colloc_alloc_sim_destroy(struct colloc_alloc_sim *s)
{
	if (!s)
		return;
	free(s->blocks);
	free(s->small.free);
	free(s->large.free);
	free(s);
}

static int new_block(struct colloc_alloc_sim *s, uint32_t *idx)
{
	if (s->unused != UINT32_MAX) {
		*idx = s->unused;
		s->unused = s->blocks[*idx].next_unused;
	} else {
		if (s->n_blocks == s->cap_blocks) {
			uint32_t cap = s->cap_blocks ? s->cap_blocks * 2 : 256;
			struct block *b;

			if (cap > MAX_BLOCKS)
				return COLLOC_ELIMIT;
			b = realloc(s->blocks, cap * sizeof(*b));
			if (!b)
				return -ENOMEM;
			s->blocks = b;
			s->cap_blocks = cap;
		}
		*idx = s->n_blocks++;
	}
	memset(&s->blocks[*idx], 0, sizeof(struct block));
	s->blocks[*idx].prev = s->blocks[*idx].next = -1;
	s->blocks[*idx].in_use = true;
	return 0;
}

static void drop_block(struct colloc_alloc_sim *s, uint32_t idx)
{
	s->blocks[idx].in_use = false;
	s->blocks[idx].next_unused = s->unused;
	s->unused = idx;
}

/* Order of PyTorch's BlockComparator for one stream: size, then address. */
static bool before(const struct block *a, const struct block *b)
{
	return a->size != b->size ? a->size < b->size : a->addr < b->addr;
}

/* First position in pool whose block is not before (size, addr). */
static uint32_t lower_bound(const struct colloc_alloc_sim *s, const struct pool *p,
			    uint64_t size, uint64_t addr)
{
	uint32_t lo = 0, hi = p->n;
	struct block key = {0};

	key.size = size;
	key.addr = addr;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (before(&s->blocks[p->free[mid]], &key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int pool_insert(struct colloc_alloc_sim *s, struct pool *p, uint32_t idx)
{
	uint32_t at;

	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 64;
		uint32_t *f = realloc(p->free, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		p->free = f;
		p->cap = cap;
	}
	at = lower_bound(s, p, s->blocks[idx].size, s->blocks[idx].addr);
	memmove(p->free + at + 1, p->free + at, (p->n - at) * sizeof(*p->free));
	p->free[at] = idx;
	p->n++;
	return 0;
}

static void pool_remove(struct colloc_alloc_sim *s, struct pool *p, uint32_t idx)
{
	uint32_t at = lower_bound(s, p, s->blocks[idx].size, s->blocks[idx].addr);

	if (at < p->n && p->free[at] == idx) {
		memmove(p->free + at, p->free + at + 1,
			(p->n - at - 1) * sizeof(*p->free));
		p->n--;
	}
}

static void bump_peaks(struct colloc_alloc_sim *s)
{
	if (s->st.allocated > s->st.peak_allocated)
		s->st.peak_allocated = s->st.allocated;
	if (s->st.reserved > s->st.peak_reserved)
		s->st.peak_reserved = s->st.reserved;
}

/* Release fully free segments of both pools (cache flush). */
static void release_cached(struct colloc_alloc_sim *s)
{
	struct pool *pools[2] = {&s->small, &s->large};

	for (int k = 0; k < 2; k++) {
		struct pool *p = pools[k];
		uint32_t w = 0;

		for (uint32_t r = 0; r < p->n; r++) {
			uint32_t idx = p->free[r];
			struct block *b = &s->blocks[idx];

			if (b->prev < 0 && b->next < 0) {
				s->st.reserved -= b->size;
				s->st.n_segments--;
				s->st.n_frees++;
				drop_block(s, idx);
			} else {
				p->free[w++] = idx;
			}
		}
		p->n = w;
	}
}

int colloc_alloc_sim_malloc(struct colloc_alloc_sim *s, uint64_t size, uint32_t *handle)
{
	uint64_t rounded = colloc_alloc_round(size);
	bool small = rounded <= COLLOC_ALLOC_SMALL_SIZE;
	struct pool *p = small ? &s->small : &s->large;
	uint32_t at, idx;
	uint64_t remaining;
	int rc;

	if (size == 0) {
		*handle = COLLOC_ALLOC_NULL;
		return 0;
	}
	at = lower_bound(s, p, rounded, 0);
	if (at < p->n) {
		idx = p->free[at];
		memmove(p->free + at, p->free + at + 1,
			(p->n - at - 1) * sizeof(*p->free));
		p->n--;
	} else {
		uint64_t seg = colloc_alloc_segment_size(rounded);

		if (s->limit &&
		    seg > s->limit - (s->st.reserved < s->limit ? s->st.reserved
								: s->limit)) {
			/* cudaMalloc failed: PyTorch frees its cache and tries
			 * once more before raising OutOfMemoryError. */
			release_cached(s);
			if (s->st.reserved > s->limit || seg > s->limit - s->st.reserved)
				return -ENOMEM;
		}
		if ((rc = new_block(s, &idx)))
			return rc;
		s->blocks[idx].addr = s->next_addr;
		s->blocks[idx].size = seg;
		s->blocks[idx].small = small;
		/* Keep a gap so segments never touch; 2 MiB aligned like CUDA. */
		s->next_addr += seg + COLLOC_ALLOC_ROUND_LARGE;
		s->st.reserved += seg;
		s->st.n_segments++;
		s->st.n_mallocs++;
	}

	/* should_split(): small pool keeps remainders of at least 512 bytes,
	 * the large pool only remainders over 1 MiB (kSmallSize). */
	remaining = s->blocks[idx].size - rounded;
	if (small ? remaining >= COLLOC_ALLOC_MIN_BLOCK
		  : remaining > COLLOC_ALLOC_SMALL_SIZE) {
		uint32_t rest;
		struct block *b, *r;

		if ((rc = new_block(s, &rest))) {
			/* Put the block back as it was; nothing changed. */
			pool_insert(s, p, idx);
			return rc;
		}
		b = &s->blocks[idx];
		r = &s->blocks[rest];
		r->addr = b->addr + rounded;
		r->size = remaining;
		r->small = small;
		r->prev = (int32_t)idx;
		r->next = b->next;
		if (b->next >= 0)
			s->blocks[b->next].prev = (int32_t)rest;
		b->next = (int32_t)rest;
		b->size = rounded;
		if ((rc = pool_insert(s, p, rest)))
			return rc;
	}
	s->blocks[idx].allocated = true;
	s->blocks[idx].requested = size;
	s->st.allocated += s->blocks[idx].size;
	s->st.requested += size;
	s->st.n_live++;
	bump_peaks(s);
	*handle = idx;
	return 0;
}

/* Merge free neighbour nb into block idx (PyTorch try_merge_blocks). */
static void merge(struct colloc_alloc_sim *s, struct pool *p, uint32_t idx, int32_t nb)
{
	struct block *b = &s->blocks[idx], *n;

	if (nb < 0 || s->blocks[nb].allocated)
		return;
	n = &s->blocks[nb];
	pool_remove(s, p, (uint32_t)nb);
	if (n->addr < b->addr) { /* nb is prev */
		b->addr = n->addr;
		b->prev = n->prev;
		if (b->prev >= 0)
			s->blocks[b->prev].next = (int32_t)idx;
	} else {
		b->next = n->next;
		if (b->next >= 0)
			s->blocks[b->next].prev = (int32_t)idx;
	}
	b->size += n->size;
	drop_block(s, (uint32_t)nb);
}

int colloc_alloc_sim_free(struct colloc_alloc_sim *s, uint32_t handle)
{
	struct block *b;
	struct pool *p;

	if (handle == COLLOC_ALLOC_NULL)
		return 0;
	if (handle >= s->n_blocks || !s->blocks[handle].in_use ||
	    !s->blocks[handle].allocated)
		return COLLOC_EUSAGE;
	b = &s->blocks[handle];
	p = b->small ? &s->small : &s->large;
	s->st.allocated -= b->size;
	s->st.requested -= b->requested;
	s->st.n_live--;
	b->allocated = false;
	b->requested = 0;
	merge(s, p, handle, s->blocks[handle].prev);
	merge(s, p, handle, s->blocks[handle].next);
	return pool_insert(s, p, handle);
}

void colloc_alloc_sim_empty_cache(struct colloc_alloc_sim *s)
{
	release_cached(s);
}

void colloc_alloc_sim_reset_peaks(struct colloc_alloc_sim *s)
{
	s->st.peak_allocated = s->st.allocated;
	s->st.peak_reserved = s->st.reserved;
}

void colloc_alloc_sim_stats(const struct colloc_alloc_sim *s,
			    struct colloc_alloc_stats *out)
{
	*out = s->st;
}

int colloc_alloc_sim_block(const struct colloc_alloc_sim *s, uint32_t handle,
			   uint64_t *addr, uint64_t *size)
{
	if (handle >= s->n_blocks || !s->blocks[handle].in_use ||
	    !s->blocks[handle].allocated)
		return COLLOC_EUSAGE;
	*addr = s->blocks[handle].addr;
	*size = s->blocks[handle].size;
	return 0;
}
