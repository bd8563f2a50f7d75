/*
 * params.c — which initializers PyTorch calls parameters and which buffers.
 *
 * torch.onnx.export writes parameters and buffers alike as initializers
 * named by their state_dict keys. The rules, checked against
 * model.parameters() / model.buffers() for every zoo model
 * (tests/unit/test_zoo.c):
 *
 *  1. Running statistics read by BatchNormalization (inputs 3 and 4) are
 *     buffers (register_buffer in torch.nn.modules.batchnorm).
 *  2. Non-floating initializers are buffers when they carry a module path
 *     name (e.g. Swin's relative_position_index), constants otherwise:
 *     autograd only tracks floating tensors, so no parameter is an integer.
 *  3. Initializers whose names the exporter made up ("onnx::Mul_123",
 *     numeric names, names starting with '/' or '_') are constants that
 *     the exporter hoisted out of the Python code, not module state.
 *  4. Every other floating initializer is a trainable parameter.
 *
 * Not visible in the graph: each _BatchNorm module's num_batches_tracked
 * scalar, which the exporter drops; colloc_graph_param_totals() adds one
 * per BatchNormalization node.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/error.h"
#include "model/graph_int.h"
#include "model/ops.h"

static int train_rule(const struct colloc_node *n)
{
	const struct colloc__op *op = colloc__node_op(n);

	return op ? op->train : -1;
}

static bool exporter_name(const char *s)
{
	bool digits = true;

	if (strncmp(s, "onnx::", 6) == 0 || s[0] == '/' || s[0] == '_')
		return true;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			digits = false;
	return digits;
}

void colloc__graph_classify_params(struct colloc_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc_tensor *t = &g->tensors[i];

		if (t->role != COLLOC_TENSOR_INITIALIZER)
			continue;
		if (exporter_name(t->name))
			t->param_class = COLLOC_PARAM_CONSTANT;
		else if (!colloc_dtype_is_float(t->dtype))
			t->param_class = COLLOC_PARAM_BUFFER;
		else
			t->param_class = COLLOC_PARAM_TRAINABLE;
	}
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];

		if (train_rule(n) != COLLOC__TR_BATCHNORM)
			continue;
		for (int in = 3; in < 5 && in < n->n_inputs; in++) {
			int t = n->inputs[in];

			if (t >= 0 && g->tensors[t].role == COLLOC_TENSOR_INITIALIZER)
				g->tensors[t].param_class = COLLOC_PARAM_BUFFER;
		}
	}
}

/* Transpose and Identity (views) and Cast (autocast exports): what an
 * exporter puts between a weight and the op that reads it. */
static bool passes_weight(const struct colloc__op *op)
{
	return op && (op->view == COLLOC__VIEW_TRANSPOSE ||
		      (op->train == COLLOC__TR_VIEW && op->view == COLLOC__VIEW_SELECT) ||
		      op->shape == colloc__shape_cast);
}

/* The input of node n that holds its weight, through the Transpose /
 * Identity / Cast nodes exporters put in front of nn.Linear weights. */
static int weight_source(const struct colloc_graph *g, int t)
{
	for (int depth = 0; depth < 4 && t >= 0; depth++) {
		const struct colloc_tensor *x = &g->tensors[t];
		const struct colloc_node *p;

		if (x->role == COLLOC_TENSOR_INITIALIZER || x->producer < 0)
			return t;
		p = &g->nodes[x->producer];
		if (!passes_weight(colloc__node_op(p)))
			return t;
		t = p->n_inputs > 0 ? p->inputs[0] : -1;
	}
	return t;
}

/*
 * torch.onnx's eval-mode export de-duplicates equal-valued initializers:
 * the all-ones weights and all-zeros biases of a fresh model's BatchNorms
 * become one tensor read by several BatchNormalization nodes. PyTorch
 * never ties BatchNorm parameters, so a tensor shared that way means
 * parameters were merged away.
 */
static int check_merged_bn(const struct colloc_graph *g, struct colloc_diag *diag)
{
	int *readers = calloc((size_t)g->n_tensors + 1, sizeof(*readers));
	int rc = 0;

	if (!readers)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	for (int k = 0; k < g->n_nodes && !rc; k++) {
		const struct colloc_node *n = &g->nodes[k];

		if (train_rule(n) != COLLOC__TR_BATCHNORM)
			continue;
		for (int in = 1; in < 3 && in < n->n_inputs && !rc; in++) {
			int t = weight_source(g, n->inputs[in]);
			char where[160];

			if (t < 0 ||
			    g->tensors[t].param_class != COLLOC_PARAM_TRAINABLE ||
			    ++readers[t] < 2)
				continue;
			colloc_node_describe(g, k, where, sizeof(where));
			rc = colloc_diag_set(
				diag, COLLOC_EUNSUPPORTED,
				"%s reads BatchNorm parameter '%s', which another "
				"BatchNormalization reads too: the export merged "
				"equal-valued initializers (torch.onnx does in eval "
				"mode), so some modules' parameters are missing. "
				"Re-export in training mode: torch.onnx.export(model."
				"train(), x, \"model.onnx\", "
				"training=torch.onnx.TrainingMode.TRAINING, "
				"do_constant_folding=False, "
				"dynamic_axes={\"input\": {0: \"batch\"}}) "
				"(or tools/colloc-export.py)",
				where, g->tensors[t].name);
		}
	}
	free(readers);
	return rc;
}

int colloc_graph_check_params(const struct colloc_graph *g, struct colloc_diag *diag)
{
	int rc = check_merged_bn(g, diag);

	if (rc)
		return rc;
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		int rule = train_rule(n);
		bool conv = rule == COLLOC__TR_CONV;
		bool mm = rule == COLLOC__TR_GEMM || rule == COLLOC__TR_MATMUL;
		char where[160];

		if (!conv && !mm)
			continue;
		for (int in = conv ? 1 : 0; in < 2 && in < n->n_inputs; in++) {
			int t = weight_source(g, n->inputs[in]);
			const struct colloc_tensor *w = t >= 0 ? &g->tensors[t] : NULL;

			if (!w || w->role != COLLOC_TENSOR_INITIALIZER ||
			    w->param_class != COLLOC_PARAM_CONSTANT ||
			    !colloc_dtype_is_float(w->dtype) || w->decl_rank < 2)
				continue;
			colloc_node_describe(g, k, where, sizeof(where));
			return colloc_diag_set(
				diag, COLLOC_EUNSUPPORTED,
				"%s reads its weight from '%s', a constant the exporter "
				"made: the "
				"export folded the model's parameters (an eval-mode "
				"export fuses "
				"BatchNorm into Conv; do_constant_folding=True renames "
				"weights), so "
				"what is trained cannot be told. Re-export: "
				"torch.onnx.export(model."
				"train(), x, \"model.onnx\", "
				"training=torch.onnx.TrainingMode.TRAINING, "
				"do_constant_folding=False, "
				"dynamic_axes={\"input\": {0: \"batch\"}})",
				where, w->name);
		}
	}
	return 0;
}
