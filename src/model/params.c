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
#include <string.h>

#include "colloc/error.h"
#include "model/graph_int.h"

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

		if (strcmp(n->op_type, "BatchNormalization") != 0)
			continue;
		for (int in = 3; in < 5 && in < n->n_inputs; in++) {
			int t = n->inputs[in];

			if (t >= 0 && g->tensors[t].role == COLLOC_TENSOR_INITIALIZER)
				g->tensors[t].param_class = COLLOC_PARAM_BUFFER;
		}
	}
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
		if (strcmp(p->op_type, "Transpose") != 0 &&
		    strcmp(p->op_type, "Identity") != 0 &&
		    strcmp(p->op_type, "Cast") != 0)
			return t;
		t = p->n_inputs > 0 ? p->inputs[0] : -1;
	}
	return t;
}

int colloc_graph_check_params(const struct colloc_graph *g, struct colloc_diag *diag)
{
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		bool conv = strcmp(n->op_type, "Conv") == 0 ||
			    strcmp(n->op_type, "ConvTranspose") == 0;
		bool mm = strcmp(n->op_type, "Gemm") == 0 ||
			  strcmp(n->op_type, "MatMul") == 0;
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
