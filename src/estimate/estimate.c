/*
 * estimate.c — colloc_estimate_run(): classify the graph's ops for
 * training, replay the training loop twice (once to find the peak, once to
 * stop there and list what is alive) and add the platform's fixed costs.
 */
#include "colloc/estimate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "estimate/timeline.h"

static const char *const prec_names[COLLOC_PREC_COUNT_] = {"fp32", "amp-fp16", "amp-bf16",
							   "tf32"};
static const char *const loss_names[COLLOC_LOSS_COUNT_] = {
	"cross-entropy", "mse", "none", "causal-lm", "causal-lm-loop", "causal-lm-copy"};
static const char *const phase_names[] = {"setup", "forward", "loss", "backward",
					  "optimizer"};
static const char *const kind_names[COLLOC_MEM_KIND_COUNT_] = {
	"parameter", "gradient", "optimizer", "activation", "temporary"};

#define NAME_OF(tab, i) \
	((i) >= 0 && (size_t)(i) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[i] : "unknown")

const char *colloc_optimizer_name(int v)
{
	const struct colloc__optim *o = colloc__optim_get(v);

	return o ? o->name : "unknown";
}

const char *colloc_precision_name(int v)
{
	return NAME_OF(prec_names, v);
}

const char *colloc_loss_name(int v)
{
	return NAME_OF(loss_names, v);
}

const char *colloc_phase_name(int v)
{
	return NAME_OF(phase_names, v);
}

const char *colloc_mem_kind_name(int v)
{
	return NAME_OF(kind_names, v);
}

static int parse_in(const char *const *tab, int n, const char *s)
{
	for (int k = 0; s && k < n; k++)
		if (strcmp(tab[k], s) == 0)
			return k;
	return -1;
}

int colloc_optimizer_parse(const char *s)
{
	for (int k = 0; s && k < COLLOC_OPT_COUNT_; k++)
		if (strcmp(colloc__optim_get(k)->name, s) == 0)
			return k;
	return -1;
}

int colloc_precision_parse(const char *s)
{
	return parse_in(prec_names, COLLOC_PREC_COUNT_, s);
}

int colloc_loss_parse(const char *s)
{
	return parse_in(loss_names, COLLOC_LOSS_COUNT_, s);
}

bool colloc_loss_shifts(int loss)
{
	return loss == COLLOC_LOSS_CAUSAL_LM_COPY || loss == COLLOC_LOSS_CAUSAL_LM_LOOP;
}

static const char *const par_names[COLLOC_PAR_COUNT_] = {"none",  "ddp",   "zero1",
							 "zero2", "zero3", "fsdp"};

const char *colloc_parallel_name(int par)
{
	return par >= 0 && par < COLLOC_PAR_COUNT_ ? par_names[par] : "?";
}

int colloc_parallel_parse(const char *s)
{
	return parse_in(par_names, COLLOC_PAR_COUNT_, s);
}

void colloc__shard_of(const struct colloc_estimate_opts *opts, struct colloc__shard *s)
{
	int p = opts->parallel;

	s->n = opts->gpus > 1 && p != COLLOC_PAR_NONE ? (uint64_t)opts->gpus : 1;
	s->states = s->n > 1 && p >= COLLOC_PAR_ZERO1;
	s->grads = s->n > 1 && p >= COLLOC_PAR_ZERO2;
	s->params = s->n > 1 && p >= COLLOC_PAR_ZERO3;
}

uint64_t colloc__shard_bytes(const struct colloc_tensor *t, uint64_t n)
{
	uint64_t numel = colloc_tensor_numel(t), bytes = colloc_tensor_bytes(t);

	if (n <= 1 || numel == 0)
		return bytes;
	return (numel + n - 1) / n * (bytes / numel);
}

/* DeepSpeed's default reduce_bucket_size, in elements */
#define ZERO_REDUCE_BUCKET_ELEMS 500000000ull

uint64_t colloc__parallel_buffer_bytes(const struct colloc_graph *g,
				       const struct colloc_estimate_opts *opts,
				       const struct colloc__estimate_ext *ext)
{
	struct colloc_param_totals pt;
	struct colloc__shard sh;
	uint64_t unit, unit_train;

	colloc__shard_of(opts, &sh);
	if (sh.n <= 1 && opts->parallel != COLLOC_PAR_DDP)
		return 0;
	colloc_graph_param_totals(g, &pt);
	switch (opts->parallel) {
	case COLLOC_PAR_DDP:
		/* the buckets hold a copy of every gradient */
		return pt.trainable_bytes;
	case COLLOC_PAR_ZERO1:
	case COLLOC_PAR_ZERO2:
		if (!pt.trainable)
			return 0;
		return (pt.trainable < ZERO_REDUCE_BUCKET_ELEMS
				? pt.trainable
				: ZERO_REDUCE_BUCKET_ELEMS) *
		       (pt.trainable_bytes / pt.trainable);
	case COLLOC_PAR_ZERO3:
	case COLLOC_PAR_FSDP:
		if (!ext || !ext->unit_param_bytes)
			/* one unit, the root module: nothing to prefetch */
			return pt.trainable_bytes + pt.frozen_bytes + pt.trainable_bytes;
		unit = ext->unit_param_bytes;
		unit_train = ext->unit_trainable_bytes;
		/* two units' gathered parameters, one unit's full gradients */
		return 2 * unit + unit_train;
	default:
		return 0;
	}
}

void colloc_estimate_opts_init(struct colloc_estimate_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->optimizer = COLLOC_OPT_ADAM;
	o->precision = COLLOC_PREC_FP32;
	o->loss = COLLOC_LOSS_CROSS_ENTROPY;
	o->iterations = 3;
	o->context_bytes = -1;
}

const char *colloc_safety_name(int safety)
{
	return safety == COLLOC_SAFETY_BOUND ? "bound" : "point";
}

int colloc_safety_parse(const char *name)
{
	if (!name)
		return -1;
	for (int k = 0; k < COLLOC_SAFETY_COUNT_; k++)
		if (strcmp(name, colloc_safety_name(k)) == 0)
			return k;
	return -1;
}

/* Bytes of tensor t as the step allocates it (autocast halves the float
 * outputs of ops it runs in low precision). */
static uint64_t step_bytes(const struct colloc_graph *g, int t, bool half)
{
	uint64_t b = colloc_tensor_bytes(&g->tensors[t]);

	return half && colloc_dtype_size(g->tensors[t].dtype) == 4 ? b / 2 : b;
}

/* Whether a step runs a convolution kernel (bound() counts the same). */
static bool convolves(const struct colloc_graph *g, const struct colloc__top *tops)
{
	for (int k = 0; k < g->n_nodes; k++)
		if (tops[k].kind == OPK_CONV && tops[k].fwd != FWD_SKIP)
			return true;
	return false;
}

/* The upper bound's two terms (colloc/estimate.h says why each). */
static void bound(const struct colloc_graph *g, const struct colloc__top *tops,
		  const struct colloc_estimate_opts *opts, struct colloc_estimate *out)
{
	bool amp = opts->precision == COLLOC_PREC_AMP_FP16 ||
		   opts->precision == COLLOC_PREC_AMP_BF16;
	uint64_t ws = 0, big = 0;

	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc__top *tp = &tops[k];
		const struct colloc_node *n = &g->nodes[tp->node];
		bool half = amp && (tp->kind == OPK_CONV || tp->kind == OPK_LINEAR ||
				    tp->kind == OPK_MATMUL);

		if (tp->fwd == FWD_SKIP)
			continue;
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0 && tp->fwd != FWD_VIEW) {
				uint64_t b = step_bytes(g, n->outputs[o], half);

				big = b > big ? b : big;
			}
		if (tp->kind != OPK_CONV)
			continue;
		/* its data input and its output */
		for (int side = 0; side < 2; side++) {
			int t = side ? (n->n_outputs > 0 ? n->outputs[0] : -1)
				     : (n->n_inputs > 0 ? n->inputs[0] : -1);
			uint64_t b = t >= 0 ? step_bytes(g, t, amp) : 0;

			ws = b > ws ? b : ws;
		}
	}
	out->conv_workspace_bytes =
		ws ? colloc_alloc_segment_size(colloc_alloc_round(ws)) : 0;
	out->fragmentation_bytes =
		big ? colloc_alloc_segment_size(colloc_alloc_round(big)) : 0;
	out->peak_device_upper_bytes = out->peak_device_bytes +
				       out->conv_workspace_bytes +
				       out->fragmentation_bytes;
}

int colloc_estimate_run(const struct colloc_graph *g,
			const struct colloc_estimate_opts *opts,
			struct colloc_estimate *out, struct colloc_diag *diag)
{
	return colloc__estimate_run_ext(g, opts, NULL, out, diag);
}

int colloc__estimate_run_ext(const struct colloc_graph *g,
			     const struct colloc_estimate_opts *opts,
			     const struct colloc__estimate_ext *ext,
			     struct colloc_estimate *out, struct colloc_diag *diag)
{
	struct colloc__timeline_result r1, r2;
	struct colloc_platform def;
	const struct colloc_platform *plat = opts->platform;
	struct colloc__top *tops;
	uint64_t context;
	int rc;

	memset(out, 0, sizeof(*out));
	if (opts->optimizer < 0 || opts->optimizer >= COLLOC_OPT_COUNT_ ||
	    opts->precision < 0 || opts->precision >= COLLOC_PREC_COUNT_ ||
	    opts->loss < 0 || opts->loss >= COLLOC_LOSS_COUNT_ || opts->parallel < 0 ||
	    opts->parallel >= COLLOC_PAR_COUNT_ || opts->gpus < 0 ||
	    opts->gpus > COLLOC_MAX_GPUS || opts->quant_block_elems < 0 ||
	    opts->quant_block_elems > (1 << 30) || opts->grad_accum < 0 ||
	    opts->grad_accum > COLLOC_GRAD_ACCUM_MAX)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "invalid estimator options");
	{
		struct colloc__shard sh;

		colloc__shard_of(opts, &sh);
		if (sh.states && !colloc__optim_get(opts->optimizer)->shardable)
			return colloc_diag_set(
				diag, COLLOC_EUNSUPPORTED,
				"--optimizer %s under --parallel %s: its per-matrix "
				"or per-block state on flat shards is not modelled "
				"(ddp is)",
				colloc_optimizer_name(opts->optimizer),
				colloc_parallel_name(opts->parallel));
	}
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].rank < 0 && g->tensors[i].role == COLLOC_TENSOR_INPUT)
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"the graph has not been inferred (bind its "
				"dimensions first)");
	if (!plat) {
		colloc_platform_default(&def);
		plat = &def;
	}
	if ((rc = colloc_graph_check_params(g, diag)))
		return rc;
	tops = calloc((size_t)g->n_nodes + 1, sizeof(*tops));
	if (!tops)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	rc = colloc__train_ops(g, opts->precision, plat, tops, diag);
	if (rc < 0)
		goto done;
	for (int i = 0; ext && i < ext->n_segs; i++)
		if (ext->seg_first[i] < 0 || ext->seg_end[i] > g->n_nodes ||
		    ext->seg_first[i] >= ext->seg_end[i] ||
		    (i > 0 && ext->seg_first[i] < ext->seg_end[i - 1])) {
			rc = colloc_diag_set(diag, COLLOC_EUSAGE,
					     "checkpoint region %d (nodes %d..%d) is "
					     "not inside the graph, in order",
					     i, ext->seg_first[i], ext->seg_end[i]);
			goto done;
		}
	rc = colloc__timeline_run(g, tops, opts, plat, ext, 0, &r1);
	if (rc)
		goto fail;
	rc = colloc__timeline_run(g, tops, opts, plat, ext, r1.peak_event, &r2);
	if (rc)
		goto fail;

	context = (opts->context_bytes >= 0 ? (uint64_t)opts->context_bytes
					    : plat->context_bytes) +
		  (opts->exclude_cuda_context ? 0 : plat->cuda_context_bytes);
	if (convolves(g, tops)) /* cuDNN is loaded once */
		context += plat->cudnn_context_bytes;
	out->peak_allocated_bytes = r1.peak_allocated;
	out->peak_reserved_bytes = r1.peak_reserved;
	out->peak_device_bytes = r1.peak_reserved + context;
	out->breakdown.params_bytes = r1.peak_kind[COLLOC_MEM_PARAM];
	out->breakdown.grads_bytes = r1.peak_kind[COLLOC_MEM_GRAD];
	out->breakdown.optimizer_bytes = r1.peak_kind[COLLOC_MEM_OPTIMIZER];
	out->breakdown.activations_bytes = r1.peak_kind[COLLOC_MEM_ACTIVATION];
	out->breakdown.temporaries_bytes = r1.peak_kind[COLLOC_MEM_TEMPORARY];
	out->breakdown.allocator_overhead_bytes = r1.peak_reserved - r1.peak_allocated;
	out->breakdown.context_bytes = context;
	out->saved_activation_bytes = r1.saved_bytes_forward;
	out->loss_saved_bytes = r1.saved_bytes_with_loss - r1.saved_bytes_forward;
	{
		/* Exact (unrounded) sizes, as torch reports tensor nbytes. */
		struct colloc_param_totals pt;

		struct colloc__shard sh;
		uint64_t shard = 0;

		colloc_graph_param_totals(g, &pt);
		colloc__shard_of(opts, &sh);
		for (int i = 0; sh.n > 1 && i < g->n_tensors; i++)
			if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE)
				shard += colloc__shard_bytes(&g->tensors[i], sh.n);
		out->param_bytes = sh.params ? shard : pt.trainable_bytes;
		out->grad_bytes = sh.grads ? shard : pt.trainable_bytes;
		if (colloc__optim_get(opts->optimizer)->step == STEP_LOOP)
			out->optimizer_state_bytes = colloc__optim_state_bytes(
				g, opts->optimizer, sh.states ? sh.n : 1,
				(uint64_t)opts->quant_block_elems);
		else
			out->optimizer_state_bytes =
				(sh.states ? shard : pt.trainable_bytes) *
				(uint64_t)colloc__optimizer_state_factor(opts->optimizer);
		out->parallel_buffer_bytes = colloc__parallel_buffer_bytes(g, opts, ext);
	}
	out->peak_iteration = r1.peak_iter;
	out->peak_phase = r1.peak_phase;
	out->peak_node = r1.peak_node;
	if (r1.peak_node >= 0)
		colloc_node_describe(g, r1.peak_node, out->peak_op, sizeof(out->peak_op));
	else
		snprintf(out->peak_op, sizeof(out->peak_op), "%s",
			 r1.peak_phase == COLLOC_PHASE_OPTIMIZER ? "optimizer step"
			 : r1.peak_phase == COLLOC_PHASE_LOSS	 ? "loss"
								 : "outside the model");
	out->n_explain = r2.n_live;
	memcpy(out->explain, r2.live, sizeof(out->explain));
	out->events = r1.events;
	bound(g, tops, opts, out);
	if (opts->gpu_memory_bytes) {
		out->headroom_bytes = (int64_t)opts->gpu_memory_bytes -
				      (int64_t)(opts->safety == COLLOC_SAFETY_BOUND
							? out->peak_device_upper_bytes
							: out->peak_device_bytes);
		out->fits = out->headroom_bytes >= 0;
	}
	rc = 0;
	goto done;
fail:
	if (rc == -ENOMEM)
		colloc_diag_printf(diag, "out of memory while estimating");
done:
	free(tops);
	return rc < 0 ? rc : 0;
}
