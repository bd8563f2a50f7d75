/*
 * fuzz_onnx.c — libFuzzer target for the ONNX loader and everything that
 * runs on what it accepts: shape inference and costing.
 *
 * Limits are small so that one input stays cheap; every symbolic dimension
 * the model declares is bound (to small values), so that inference runs on
 * any graph that loads, and then runs again with other values to exercise
 * re-inference. Outcomes are not checked here: the sanitizers and
 * the loader's own invariants are the oracle.
 */
#include <stddef.h>
#include <stdint.h>

#include "colloc/cost.h"
#include "colloc/graph.h"
#include "colloc/onnx.h"
#include "colloc/shape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_SYMS 8

static void infer_and_cost(struct colloc_graph *g, int64_t batch, int64_t base)
{
	const char *syms[FUZZ_MAX_SYMS];
	struct colloc_binding dims[FUZZ_MAX_SYMS];
	struct colloc_bind_opts opts;
	struct colloc_diag diag;
	struct colloc_cost_totals tot;
	struct colloc_param_totals params;
	size_t n = colloc_graph_symbols(g, syms, FUZZ_MAX_SYMS);

	if (n > FUZZ_MAX_SYMS)
		n = FUZZ_MAX_SYMS;
	for (size_t k = 0; k < n; k++) {
		dims[k].name = syms[k];
		dims[k].value = base + (int64_t)k;
	}
	opts.batch = batch;
	opts.dims = dims;
	opts.n_dims = n;
	colloc_diag_clear(&diag);
	if (colloc_graph_infer(g, &opts, &diag) == 0)
		colloc_graph_cost(g, &tot);
	colloc_graph_param_totals(g, &params);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct colloc_onnx_limits lim = {0};
	struct colloc_graph *g = NULL;
	struct colloc_diag diag;
	struct colloc_bind_opts none = {2, NULL, 0};

	lim.max_file_bytes = (size_t)1 << 20;
	lim.max_nodes = 512;
	lim.max_tensors = 4096;
	lim.max_string_bytes = 256;
	lim.max_attr_elems = 4096;
	lim.max_value_elems = 4096;
	lim.max_depth = 4;
	if (colloc_onnx_load_buffer(data, size, &lim, &g, &diag) != 0)
		return 0;
	/* --batch alone: fails with EUNBOUND or EUSAGE on most graphs, which
	 * exercises the binding errors */
	colloc_graph_infer(g, &none, &diag);
	/* every symbol bound, without --batch (fixed-batch graphs refuse
	 * one) and with it, to re-infer at another size */
	infer_and_cost(g, 0, 2);
	infer_and_cost(g, 3, 1);
	colloc_graph_destroy(g);
	return 0;
}
