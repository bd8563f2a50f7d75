/*
 * colloc/ops.h — what colloc knows about ONNX ops, for people: the ops it
 * supports and, per op, how it counts FLOPs and what PyTorch saves for
 * backward when training it; and the decomposed subgraphs it recognises as
 * one fused PyTorch op. `colloc ops` prints these and docs/ops.md is
 * generated from them.
 *
 * All strings are static and owned by the library.
 */
#ifndef COLLOC_OPS_H
#define COLLOC_OPS_H

#include <stdbool.h>

struct colloc_op_doc {
	const char *name; /* ONNX op type, default domain */
	const char *family; /* "elementwise", "convolution", ... */
	const char *flops; /* how forward FLOPs are counted */
	const char *training; /* what the PyTorch op saves for backward */
	const char *autocast; /* "low precision", "float32" or "follows inputs" */
};

struct colloc_pattern_doc {
	const char *name; /* the PyTorch op, "F.silu" */
	const char *anchor; /* ONNX op the match starts from */
	const char *exported_as; /* the subgraph torch.onnx writes */
	const char *saves; /* what the fused op saves */
};

/* Number of supported ops; their docs by index 0..count-1, sorted by
 * name. Returns 0, or COLLOC_EUSAGE for an index out of range. */
int colloc_op_count(void);
int colloc_op_doc(int i, struct colloc_op_doc *out);

/* Number of recognised patterns; their docs by index, in match order. */
int colloc_pattern_count(void);
int colloc_pattern_doc(int i, struct colloc_pattern_doc *out);

#endif
