/*
 * timeline.h — the training-loop replay of the estimator (internal).
 */
#ifndef COLLOC_TIMELINE_H
#define COLLOC_TIMELINE_H

#include "colloc/estimate.h"
#include "estimate/estimate_int.h"

struct colloc__timeline_result {
	uint64_t peak_allocated, peak_reserved;
	uint64_t peak_event;
	int peak_iter, peak_phase, peak_node;
	uint64_t peak_kind[COLLOC_MEM_KIND_COUNT_]; /* live bytes by kind */
	uint64_t saved_bytes_forward; /* saved for backward by the model */
	uint64_t saved_bytes_with_loss; /* ... and by the loss */
	uint64_t param_bytes, grad_bytes, optimizer_bytes;
	uint64_t events;
	int n_live; /* explain pass only */
	struct colloc_live_tensor live[COLLOC_EXPLAIN_MAX];
};

/*
 * Replay opts->iterations training iterations of g (classified into tops
 * by colloc__train_ops) and fill res. With stop_at > 0, stop after that
 * many allocator events and list the largest live storages (the explain
 * pass, run with the peak event of a first pass). ext (NULL: none) names
 * the checkpointed regions.
 */
int colloc__timeline_run(const struct colloc_graph *g, const struct colloc__top *tops,
			 const struct colloc_estimate_opts *opts,
			 const struct colloc_platform *plat,
			 const struct colloc__estimate_ext *ext, uint64_t stop_at,
			 struct colloc__timeline_result *res);

#endif
