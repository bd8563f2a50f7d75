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
