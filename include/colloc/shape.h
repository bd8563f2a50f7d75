/*
 * colloc/shape.h — bind symbolic dimensions and infer every tensor's shape.
 *
 * Inference is concrete: once every symbolic input dimension has a value,
 * each node's output shapes are computed from its input shapes and
 * attributes, and small integer tensors (Shape -> Gather -> Concat ->
 * Reshape chains, as torch.onnx.export writes them) are evaluated so that
 * data-dependent shapes resolve. Unbound symbols are an error that names
 * them; so is an op colloc does not know, naming the node.
 *
 * The graph is modified in place (tensor.rank, tensor.shape, tensor.value of
 * folded tensors); run it again with other bindings to re-infer. Values
 * folded by an earlier run are discarded first. Scratch memory is owned by
 * the graph and released with it.
 */
#ifndef COLLOC_SHAPE_H
#define COLLOC_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/graph.h"

/* A name=value binding for a symbolic dimension. */
struct colloc_binding {
	const char *name;
	int64_t value;
};

struct colloc_bind_opts {
	/* Leading dim of every graph input whose leading dim is symbolic or
	 * unknown; <= 0 leaves it to the named bindings. */
	int64_t batch;
	const struct colloc_binding *dims;
	size_t n_dims;
};

/*
 * Bind inputs and infer all shapes. Returns 0, or a negative code with a
 * message such as "input 'input_ids' dim 1 ('seq') is unbound; bind it with
 * --dim seq=N" or "node 17 (/x/Conv, Conv): input 1 has rank 3, expected 4".
 * A binding naming a symbol the graph does not have is an error too
 * (COLLOC_EUSAGE), so that typos do not pass silently.
 */
int colloc_graph_infer(struct colloc_graph *g, const struct colloc_bind_opts *opts,
		       struct colloc_diag *diag);

/*
 * The distinct dim_param names of g's inputs, in order of first
 * appearance, written to names[0..cap); returns how many there are (which
 * may exceed cap). Strings are owned by g.
 */
size_t colloc_graph_symbols(const struct colloc_graph *g, const char **names, size_t cap);

/* The batch a graph was exported at when no input has a symbolic leading
 * dimension (the first input's leading dim), else 0. Binding that same
 * batch is accepted; any other is an error naming it. */
int64_t colloc_graph_fixed_batch(const struct colloc_graph *g);

#endif
