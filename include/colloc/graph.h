/*
 * colloc/graph.h — the model graph IR of libcolloc.
 *
 * A struct colloc_graph is what every other part of colloc reads a model
 * through: tensors with a dtype and a shape, nodes with an op type,
 * attributes, inputs and outputs, and initializers classified into trainable
 * parameters, buffers and constants as PyTorch would see them. It is filled
 * by a loader (colloc/onnx.h), given concrete shapes by colloc_graph_infer()
 * (colloc/shape.h) and costed by colloc_graph_cost() (colloc/cost.h).
 *
 * Ownership: the graph owns everything it points to (strings, arrays,
 * values, nested subgraphs) in one arena; all of it is released by
 * colloc_graph_destroy(). Pointers into a graph stay valid until then.
 * Shape inference rewrites the inferred shapes and values in place, so one
 * graph can be inferred again at another batch size; a graph must not be
 * inferred from two threads at once.
 */
#ifndef COLLOC_GRAPH_H
#define COLLOC_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Element types, numbered as ONNX's TensorProto.DataType. */
enum colloc_dtype {
	COLLOC_DT_UNDEFINED = 0,
	COLLOC_DT_FLOAT = 1,
	COLLOC_DT_UINT8 = 2,
	COLLOC_DT_INT8 = 3,
	COLLOC_DT_UINT16 = 4,
	COLLOC_DT_INT16 = 5,
	COLLOC_DT_INT32 = 6,
	COLLOC_DT_INT64 = 7,
	COLLOC_DT_STRING = 8,
	COLLOC_DT_BOOL = 9,
	COLLOC_DT_FLOAT16 = 10,
	COLLOC_DT_DOUBLE = 11,
	COLLOC_DT_UINT32 = 12,
	COLLOC_DT_UINT64 = 13,
	COLLOC_DT_COMPLEX64 = 14,
	COLLOC_DT_COMPLEX128 = 15,
	COLLOC_DT_BFLOAT16 = 16,
	COLLOC_DT_COUNT_
};

/* "float32", "int64", ... ; "undefined" for unknown values. */
const char *colloc_dtype_name(int dtype);
/* Bytes per element (1 for bool), 0 for undefined or string. */
size_t colloc_dtype_size(int dtype);
bool colloc_dtype_is_float(int dtype);

/* Most dimensions a tensor may have; deeper tensors are rejected on load. */
#define COLLOC_MAX_RANK 8

/* A dimension as declared in the file: a number, a name, or neither. */
struct colloc_dim {
	int64_t value; /* >= 0 when known, -1 otherwise */
	const char *symbol; /* dim_param, or NULL */
};

enum colloc_tensor_role {
	COLLOC_TENSOR_ACTIVATION = 0, /* produced by a node */
	COLLOC_TENSOR_INPUT, /* fed by the user (graph input) */
	COLLOC_TENSOR_INITIALIZER, /* stored in the model file */
};

/* How PyTorch would see an initializer (see params.c for the rules). */
enum colloc_param_class {
	COLLOC_PARAM_NONE = 0, /* not an initializer */
	COLLOC_PARAM_TRAINABLE,
	COLLOC_PARAM_BUFFER,
	COLLOC_PARAM_CONSTANT, /* exporter-made constant: neither */
};

/*
 * Known contents of a small tensor, used to evaluate shape arithmetic.
 * Integer and bool tensors fill i; floating tensors fill f. n is the element
 * count and equals the product of the tensor's inferred shape.
 */
struct colloc_value {
	size_t n;
	int64_t *i;
	double *f;
};

struct colloc_tensor {
	const char *name;
	int dtype; /* enum colloc_dtype */
	enum colloc_tensor_role role;
	enum colloc_param_class param_class;

	/* Declared shape from the file (value_info, inputs, initializer
	 * dims); decl_rank is -1 when the file says nothing. */
	int decl_rank;
	struct colloc_dim decl[COLLOC_MAX_RANK];

	/* Inferred concrete shape; rank is -1 until inference succeeds. */
	int rank;
	int64_t shape[COLLOC_MAX_RANK];

	/* Constant contents when known (initializers with inline data,
	 * Constant nodes, and shape arithmetic folded during inference). */
	const struct colloc_value *value;
	/* Initializer data lives in an external file, or was stripped. */
	bool external;
	/* A parameter frozen by the caller (requires_grad=False: --freeze,
	 * --trainable none|lora; colloc/model.h). It is then classed
	 * COLLOC_PARAM_BUFFER, which is what the estimator needs (held in
	 * memory, no gradient, no optimizer state), but counted apart from
	 * the model's own buffers. */
	bool frozen;

	int producer; /* node index, or -1 */
	int consumers; /* number of node inputs reading it */
};

enum colloc_attr_type {
	COLLOC_ATTR_UNDEFINED = 0,
	COLLOC_ATTR_FLOAT,
	COLLOC_ATTR_INT,
	COLLOC_ATTR_STRING,
	COLLOC_ATTR_TENSOR,
	COLLOC_ATTR_GRAPH,
	COLLOC_ATTR_FLOATS,
	COLLOC_ATTR_INTS,
	COLLOC_ATTR_STRINGS,
	COLLOC_ATTR_OTHER, /* sparse tensors, type protos, lists thereof */
};

struct colloc_graph;

struct colloc_attr {
	const char *name;
	enum colloc_attr_type type;
	int64_t i;
	double f;
	const char *s; /* STRING (NUL-terminated copy) */
	size_t n; /* element count of ints / floats / strings */
	const int64_t *ints;
	const double *floats;
	const char *const *strings;
	/* TENSOR: dtype, dims and (if inline) values of the tensor */
	int t_dtype;
	int t_rank;
	int64_t t_dims[COLLOC_MAX_RANK];
	const struct colloc_value *t_value;
	const struct colloc_graph *g; /* GRAPH */
};

struct colloc_node {
	const char *name; /* may be "" */
	const char *op_type;
	const char *domain; /* "" for the default ONNX domain */
	int n_inputs;
	const int *inputs; /* tensor indices; -1 for an omitted optional */
	int n_outputs;
	const int *outputs; /* tensor indices; -1 for an omitted optional */
	int n_attrs;
	const struct colloc_attr *attrs;

	/* Filled by colloc_graph_cost(); zero before. */
	uint64_t flops;
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t output_bytes;
	uint64_t params; /* trainable elements first read by this node */
};

struct colloc_graph {
	const char *name;
	const char *producer; /* "pytorch 1.13.0", or "" */
	int64_t opset; /* default-domain opset version */
	int64_t ir_version;

	int n_tensors;
	struct colloc_tensor *tensors;
	int n_nodes;
	struct colloc_node *nodes; /* in file order, which ONNX requires to be
				    * topological; the loader checks it */
	int n_inputs;
	const int *inputs; /* user-fed inputs only, initializers excluded */
	int n_outputs;
	const int *outputs;

	/* Modules PyTorch would count with one num_batches_tracked buffer
	 * each (BatchNormalization nodes); see params.c. */
	int n_batchnorm;

	/* Opaque storage. */
	void *priv_;
};

/* Release the graph and everything it owns. NULL is a no-op. */
void colloc_graph_destroy(struct colloc_graph *g);

/* Index of the tensor called name, or -1. O(1) on average. */
int colloc_graph_find_tensor(const struct colloc_graph *g, const char *name);

/* Attribute called name on node n, or NULL. */
const struct colloc_attr *colloc_node_attr(const struct colloc_node *n, const char *name);
/* Convenience readers: the attribute's value, or def when absent or of
 * another type. */
int64_t colloc_node_attr_int(const struct colloc_node *n, const char *name, int64_t def);
double colloc_node_attr_float(const struct colloc_node *n, const char *name, double def);

/* Element count of an inferred tensor (0 if unknown or overflowing). */
uint64_t colloc_tensor_numel(const struct colloc_tensor *t);
/* numel * dtype size, saturating at UINT64_MAX; 0 if unknown. */
uint64_t colloc_tensor_bytes(const struct colloc_tensor *t);
/* Element count of an initializer from its declared dims. */
uint64_t colloc_tensor_decl_numel(const struct colloc_tensor *t);

/* Totals over initializers by class (elements, and bytes for trainable). */
struct colloc_param_totals {
	uint64_t trainable;
	uint64_t trainable_bytes;
	uint64_t trainable_tensors;
	uint64_t buffers; /* incl. one num_batches_tracked per batch norm */
	uint64_t buffer_bytes;
	uint64_t constants;
	uint64_t frozen; /* frozen parameters (tensor.frozen), not buffers */
	uint64_t frozen_bytes;
};
void colloc_graph_param_totals(const struct colloc_graph *g,
			       struct colloc_param_totals *out);

/*
 * Refuse a graph whose convolutions or matmuls read their weights from
 * exporter-made constants (an export that folded BatchNorm into Conv, or
 * constant-folded nn.Linear weights): its trainable parameters are lost,
 * so any training estimate would be silently wrong. Returns 0, or
 * COLLOC_EUNSUPPORTED with the node, the tensor and the re-export command
 * in diag.
 */
struct colloc_diag;
int colloc_graph_check_params(const struct colloc_graph *g, struct colloc_diag *diag);

/* Write "node 17 (/layer1/Conv, Conv)" into buf; returns buf. */
const char *colloc_node_describe(const struct colloc_graph *g, int node, char *buf,
				 size_t len);

#endif
