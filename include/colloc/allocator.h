/*
 * colloc/allocator.h — a model of PyTorch's CUDA caching allocator.
 *
 * The peak memory a training job takes on a GPU is decided less by the sum
 * of its tensors than by how PyTorch's caching allocator packs them into
 * cudaMalloc'd segments. This module replays a stream of malloc/free
 * requests through the same rules (c10/cuda/CUDACachingAllocator.cpp in
 * PyTorch 1.13-2.6, default settings: no max_split_size, no expandable
 * segments, no garbage-collection threshold, one stream):
 *
 *  - request sizes round up to a multiple of 512 bytes (minimum 512);
 *  - requests of at most 1 MiB come from the small pool, larger ones from
 *    the large pool;
 *  - a request that finds no cached block gets a new segment: 2 MiB for
 *    small requests, 20 MiB for large requests under 10 MiB, otherwise the
 *    request rounded up to a multiple of 2 MiB;
 *  - the cached block chosen is the smallest free block of the pool that
 *    fits (ties broken by lowest address);
 *  - a chosen block is split when the remainder is at least 512 bytes
 *    (small pool) or more than 1 MiB (large pool);
 *  - a freed block merges with free neighbours of the same segment;
 *  - when a device limit is set and a new segment does not fit, every
 *    fully free segment is released (as PyTorch frees its cache and
 *    retries) before the request fails with -ENOMEM.
 *
 * "allocated" counts the rounded sizes of live blocks (what
 * torch.cuda.memory_allocated reports); "reserved" counts segment sizes
 * (torch.cuda.memory_reserved). The simulator owns all its memory; handles
 * are small integers valid until freed.
 */
#ifndef COLLOC_ALLOCATOR_H
#define COLLOC_ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

/* Constants of CUDACachingAllocator.cpp (names as there). */
#define COLLOC_ALLOC_MIN_BLOCK 512u /* kMinBlockSize */
#define COLLOC_ALLOC_SMALL_SIZE (1u << 20) /* kSmallSize */
#define COLLOC_ALLOC_SMALL_BUFFER (2u << 20) /* kSmallBuffer */
#define COLLOC_ALLOC_LARGE_BUFFER (20u << 20) /* kLargeBuffer */
#define COLLOC_ALLOC_MIN_LARGE_ALLOC (10u << 20) /* kMinLargeAlloc */
#define COLLOC_ALLOC_ROUND_LARGE (2u << 20) /* kRoundLarge */

struct colloc_alloc_sim;

struct colloc_alloc_stats {
	uint64_t allocated; /* bytes in live blocks now */
	uint64_t reserved; /* bytes in segments now */
	uint64_t requested; /* unrounded bytes asked for, live now */
	uint64_t peak_allocated; /* maxima since creation or reset_peaks */
	uint64_t peak_reserved;
	uint64_t n_segments; /* live segments */
	uint64_t n_mallocs; /* segments ever created (cudaMalloc calls) */
	uint64_t n_frees; /* segments released (cudaFree calls) */
	uint64_t n_live; /* live blocks */
};

/* Rounded block size PyTorch uses for a request of size bytes. */
uint64_t colloc_alloc_round(uint64_t size);
/* Segment size cudaMalloc'd for a rounded request that found no block. */
uint64_t colloc_alloc_segment_size(uint64_t rounded);

/*
 * Create a simulator. limit_bytes caps reserved memory (0 = unlimited).
 * Returns 0 or -ENOMEM.
 */
int colloc_alloc_sim_create(uint64_t limit_bytes, struct colloc_alloc_sim **out);
/* Free the simulator; NULL is a no-op. */
void colloc_alloc_sim_destroy(struct colloc_alloc_sim *s);

/* Handle of a zero-byte allocation: no block, as PyTorch's nullptr. */
#define COLLOC_ALLOC_NULL UINT32_MAX

/*
 * Allocate size bytes (0 gives COLLOC_ALLOC_NULL and takes no memory).
 * On success stores a handle in *handle and returns 0; returns -ENOMEM when
 * the device limit would be exceeded even after releasing the cache (the
 * simulated CUDA out-of-memory), or COLLOC_ELIMIT when the simulator's own
 * tables are full.
 */
int colloc_alloc_sim_malloc(struct colloc_alloc_sim *s, uint64_t size, uint32_t *handle);

/* Free a live handle (COLLOC_ALLOC_NULL is a no-op). Returns 0, or
 * COLLOC_EUSAGE for an unknown handle. */
int colloc_alloc_sim_free(struct colloc_alloc_sim *s, uint32_t handle);

/* Release every fully free segment (torch.cuda.empty_cache()). */
void colloc_alloc_sim_empty_cache(struct colloc_alloc_sim *s);

/* Reset the peaks to the current values. */
void colloc_alloc_sim_reset_peaks(struct colloc_alloc_sim *s);

void colloc_alloc_sim_stats(const struct colloc_alloc_sim *s,
			    struct colloc_alloc_stats *out);

/*
 * Where a live handle's block is: simulated address and block size (the
 * rounded size, or more when the allocator did not split). For tests.
 */
int colloc_alloc_sim_block(const struct colloc_alloc_sim *s, uint32_t handle,
			   uint64_t *addr, uint64_t *size);

#endif
