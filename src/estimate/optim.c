/*
 * optim.c — the optimizers the estimator models, in one table that the
 * replay (timeline.c), the exact state sizes (estimate.c) and the step-time
 * predictor (perf.c) all read: each optimizer's name, the state it keeps
 * per parameter, what one step allocates and the kernels it runs.
 *
 * Two kinds of step:
 *  - foreach (torch.optim's _multi_tensor_* implementations, PyTorch 2.x's
 *    default on CUDA): every state is parameter-sized and each list op
 *    runs over all parameters at once, so one step's temporary is a
 *    parameter-sized tensor for every parameter (_foreach_sqrt);
 *  - loop: one parameter after the other (transformers' AdamW and
 *    Adafactor, bitsandbytes' 8-bit optimizers). The state is per
 *    parameter and may not be parameter-sized; the temporaries are those
 *    of one parameter's update, plus whatever a Python name still holds
 *    from the parameter before (a name is rebound only after the new
 *    value exists). colloc__optim_script() writes one parameter's update
 *    as allocator events, from the optimizers' code:
 *      adamw-loop  transformers.optimization.AdamW (4.x, since removed), step():
 *                  denom = exp_avg_sq.sqrt().add_(eps), the rest in place;
 *      adafactor   transformers.optimization.Adafactor, step(), with the
 *                  Trainer's optim="adafactor" settings (scale_parameter
 *                  False, relative_step False, warmup_init False, beta1
 *                  None, weight_decay 0);
 *      adam8bit,   bitsandbytes/optim/optimizer.py Optimizer2State
 *      adamw8bit   (init_state, update_step: one fused kernel in place).
 *    Read at https://github.com/huggingface/transformers (src/transformers/
 *    optimization.py at 005edacb; AdamW and an older Adafactor, on
 *    p.data and p.grad.data with the same state and temporaries, in a copy
 *    of its 4.x optimization.py) and
 *    https://github.com/bitsandbytes-foundation/bitsandbytes (commit
 *    20e1677d of 2021-11-29 and 95f9af30 of 2026); docs/estimator.md has
 *    the rules.
 *
 * Not here: the allocator, the replay itself, names of anything else.
 */
#include <string.h>

#include "estimate/estimate_int.h"

/* Foreach passes over the parameters: (tensor lists read, written) per
 * torch.optim's _multi_tensor_* implementation. */
static const int sgd_passes[][2] = {{2, 1}};
static const int mom_passes[][2] = {{1, 1}, {2, 1}, {2, 1}};
static const int adam_passes[][2] = {{2, 1}, {1, 1}, {2, 1}, {1, 1},
				     {1, 1}, {1, 1}, {3, 1}};
static const int adamw_passes[][2] = {{1, 1}, {2, 1}, {1, 1}, {2, 1},
				      {1, 1}, {1, 1}, {1, 1}, {3, 1}};
static const int rms_passes[][2] = {{1, 1}, {2, 1}, {1, 1}, {1, 1}, {3, 1}};
static const int ada_passes[][2] = {{2, 1}, {1, 1}, {1, 1}, {3, 1}};

#define PASSES(p) (p), (int)(sizeof(p) / sizeof((p)[0]))

static const struct colloc__optim optims[COLLOC_OPT_COUNT_] = {
	[COLLOC_OPT_SGD] = {"sgd", STEP_FOREACH, 0, 0, false, true, PASSES(sgd_passes)},
	[COLLOC_OPT_MOMENTUM] = {"momentum", STEP_FOREACH, 1, 0, false, true,
				 PASSES(mom_passes)},
	[COLLOC_OPT_ADAM] = {"adam", STEP_FOREACH, 2, 1, false, true,
			     PASSES(adam_passes)},
	[COLLOC_OPT_ADAMW] = {"adamw", STEP_FOREACH, 2, 1, false, true,
			      PASSES(adamw_passes)},
	[COLLOC_OPT_RMSPROP] = {"rmsprop", STEP_FOREACH, 1, 1, false, true,
				PASSES(rms_passes)},
	[COLLOC_OPT_ADAGRAD] = {"adagrad", STEP_FOREACH, 1, 1, true, true,
				PASSES(ada_passes)},
	/* elementwise states: a flat shard keeps them as they are */
	[COLLOC_OPT_ADAMW_LOOP] = {"adamw-loop", STEP_LOOP, 0, 0, false, true, NULL, 0},
	/* factored and block-quantized states: the flat 1-D shards of ZeRO
	 * and FSDP change them (no rows and columns; blocks across
	 * parameters), which is not modelled */
	[COLLOC_OPT_ADAFACTOR] = {"adafactor", STEP_LOOP, 0, 0, false, false, NULL, 0},
	[COLLOC_OPT_ADAM8BIT] = {"adam8bit", STEP_LOOP, 0, 0, false, false, NULL, 0},
	[COLLOC_OPT_ADAMW8BIT] = {"adamw8bit", STEP_LOOP, 0, 0, false, false, NULL, 0},
};

const struct colloc__optim *colloc__optim_get(int opt)
{
	return opt >= 0 && opt < COLLOC_OPT_COUNT_ ? &optims[opt] : NULL;
}

int colloc__optimizer_state_factor(int opt)
{
	const struct colloc__optim *o = colloc__optim_get(opt);

	return o ? o->state_factor : 0;
}

/* bitsandbytes: parameters with fewer elements keep float32 states
 * (min_8bit_size, Optimizer2State's default). */
#define BNB_MIN_8BIT_SIZE 4096
/* create_dynamic_map(): 256 float32 values, signed and unsigned. */
#define BNB_QMAP_BYTES ((uint64_t)256 * 4)

static bool is_8bit(int opt)
{
	return opt == COLLOC_OPT_ADAM8BIT || opt == COLLOC_OPT_ADAMW8BIT;
}

/* Elements of p that one GPU keeps (ceil(numel / shards)). */
static uint64_t elems_of(const struct colloc_tensor *p, uint64_t shards)
{
	uint64_t n = colloc_tensor_numel(p);

	return shards > 1 ? (n + shards - 1) / shards : n;
}

static uint64_t esize_of(const struct colloc_tensor *p)
{
	size_t sz = colloc_dtype_size(p->dtype);

	return sz ? (uint64_t)sz : 4;
}

/* Adafactor's factored second moment (_get_options: factored = the
 * gradient has at least 2 dims): exp_avg_sq_row has grad.shape[:-1],
 * exp_avg_sq_col grad.shape[:-2] + grad.shape[-1:]. Elements of both. */
static void factored_sizes(const struct colloc_tensor *p, uint64_t *row, uint64_t *col)
{
	uint64_t n = colloc_tensor_numel(p);
	int64_t last = p->shape[p->rank - 1], prev = p->shape[p->rank - 2];

	*row = last > 0 ? n / (uint64_t)last : 0;
	*col = prev > 0 ? n / (uint64_t)prev : 0;
}

int colloc__optim_states(int opt, const struct colloc_tensor *p, uint64_t shards,
			 uint64_t block, struct colloc__optstate *st)
{
	uint64_t n = elems_of(p, shards), es = esize_of(p);

	memset(st, 0, sizeof(*st));
	switch (opt) {
	case COLLOC_OPT_ADAMW_LOOP:
		/* exp_avg, exp_avg_sq = torch.zeros_like(p.data); step is a
		 * Python int */
		st->bytes[0] = st->bytes[1] = n * es;
		st->n = 2;
		return 2;
	case COLLOC_OPT_ADAFACTOR:
		/* the gradient is cast to float32 first (grad.float() for
		 * half parameters), and the state follows its dtype; no
		 * exp_avg with beta1=None; state["RMS"], a 0-dim float32
		 * tensor (_rms of the float32 parameter), replaced every step
		 * (the `renew` piece); step is a Python int */
		if (p->rank >= 2) {
			uint64_t row, col;

			factored_sizes(p, &row, &col);
			st->bytes[0] = row * 4;
			st->bytes[1] = col * 4;
			st->n = 2;
		} else {
			st->bytes[0] = n * 4;
			st->n = 1;
		}
		st->renew = st->n;
		st->bytes[st->n++] = 4;
		return st->n;
	case COLLOC_OPT_ADAM8BIT:
	case COLLOC_OPT_ADAMW8BIT:
		if (n < BNB_MIN_8BIT_SIZE) {
			/* state1, state2: float32 whatever the parameter */
			st->bytes[0] = st->bytes[1] = n * 4;
			st->n = 2;
			return 2;
		}
		/* state1, state2: uint8; absmax1, absmax2: a float32 per
		 * block of `block` elements */
		if (block == 0)
			block = COLLOC_QUANT_BLOCK_DEFAULT;
		st->bytes[0] = st->bytes[1] = n;
		st->bytes[2] = st->bytes[3] = (n + block - 1) / block * 4;
		st->n = 4;
		st->shared = true;
		return 4;
	default:
		return 0;
	}
}

int colloc__optim_shared(int opt, uint64_t *bytes)
{
	if (!is_8bit(opt))
		return 0;
	/* name2qmap["dynamic"] and ["udynamic"], moved to the device at the
	 * first 8-bit parameter's init_state and shared by all */
	bytes[0] = bytes[1] = BNB_QMAP_BYTES;
	return 2;
}

uint64_t colloc__optim_state_bytes(const struct colloc_graph *g, int opt, uint64_t shards,
				   uint64_t block)
{
	uint64_t total = 0, shared[2];
	bool any = false;

	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc__optstate st;

		if (g->tensors[i].param_class != COLLOC_PARAM_TRAINABLE)
			continue;
		colloc__optim_states(opt, &g->tensors[i], shards, block, &st);
		for (int k = 0; k < st.n; k++)
			total += st.bytes[k];
		any = any || st.shared;
	}
	if (any)
		for (int k = 0, n = colloc__optim_shared(opt, shared); k < n; k++)
			total += shared[k];
	return total;
}

/* Script writers: ev[*n] = one event. */
static void ev_add(struct colloc__optev *ev, int *n, int op, int slot, uint64_t bytes)
{
	if (*n >= COLLOC__OPT_MAX_EVENTS)
		return;
	ev[*n].op = (uint8_t)op;
	ev[*n].slot = (uint8_t)slot;
	ev[*n].bytes = bytes;
	(*n)++;
}

/* Adafactor's Python names, each holding one storage (slots). */
enum { AF_GRAD = 0, AF_P32, AF_UPDATE, AF_T1, AF_T2, AF_T3, AF_T4 };

/*
 * One parameter's Adafactor update (transformers' Adafactor.step), as
 * allocator events. n elements, f32 = 4 bytes each.
 */
static int adafactor_script(const struct colloc_tensor *p, struct colloc__optev *ev)
{
	uint64_t n = colloc_tensor_numel(p), f = n * 4, row = 0, col = 0, rmean = 0;
	bool half = esize_of(p) < 4, fac = p->rank >= 2;
	int k = 0;

	if (fac) {
		factored_sizes(p, &row, &col);
		/* exp_avg_sq_row.mean(dim=-1, keepdim=True) */
		rmean = p->shape[p->rank - 2] > 0 ? row / (uint64_t)p->shape[p->rank - 2]
						  : 0;
	}
	/* grad = p.grad frees the last parameter's float32 copy; then
	 * grad.float() for half gradients */
	ev_add(ev, &k, OPT_FREE, AF_GRAD, 0);
	if (half)
		ev_add(ev, &k, OPT_NEW, AF_GRAD, f);
	ev_add(ev, &k, OPT_STATES, 0, 0);
	/* p_data_fp32 = p; p.float() for half parameters */
	ev_add(ev, &k, OPT_FREE, AF_P32, 0);
	if (half)
		ev_add(ev, &k, OPT_NEW, AF_P32, f);
	/* state["RMS"] = _rms(p_data_fp32): norm, then / sqrt(numel) */
	ev_add(ev, &k, OPT_NEW, AF_T1, 4);
	ev_add(ev, &k, OPT_RENEW, 0, 4);
	ev_add(ev, &k, OPT_FREE, AF_T1, 0);
	/* update = grad**2 + eps: two tensors, then the name lets go of the
	 * last parameter's update */
	ev_add(ev, &k, OPT_NEW, AF_T1, f);
	ev_add(ev, &k, OPT_NEW, AF_UPDATE, f);
	ev_add(ev, &k, OPT_FREE, AF_T1, 0);
	if (fac) {
		/* row and column means, added into the state in place */
		ev_add(ev, &k, OPT_NEW, AF_T1, row * 4);
		ev_add(ev, &k, OPT_FREE, AF_T1, 0);
		ev_add(ev, &k, OPT_NEW, AF_T1, col * 4);
		ev_add(ev, &k, OPT_FREE, AF_T1, 0);
		/* _approx_sq_grad: r = (row / row.mean(-1)).rsqrt_(),
		 * c = col.rsqrt(), torch.mul(r, c) becomes the update */
		ev_add(ev, &k, OPT_NEW, AF_T1, rmean * 4);
		ev_add(ev, &k, OPT_NEW, AF_T2, row * 4);
		ev_add(ev, &k, OPT_FREE, AF_T1, 0);
		ev_add(ev, &k, OPT_NEW, AF_T3, col * 4);
		ev_add(ev, &k, OPT_NEW, AF_UPDATE, f);
		ev_add(ev, &k, OPT_FREE, AF_T2, 0);
		ev_add(ev, &k, OPT_FREE, AF_T3, 0);
	} else {
		/* exp_avg_sq updated in place; exp_avg_sq.rsqrt() */
		ev_add(ev, &k, OPT_NEW, AF_UPDATE, f);
	}
	/* update.div_((_rms(update) / clip_threshold).clamp_(min=1.0)):
	 * three 0-dim tensors */
	ev_add(ev, &k, OPT_NEW, AF_T1, 4);
	ev_add(ev, &k, OPT_NEW, AF_T2, 4);
	ev_add(ev, &k, OPT_FREE, AF_T1, 0);
	ev_add(ev, &k, OPT_NEW, AF_T3, 4);
	ev_add(ev, &k, OPT_FREE, AF_T2, 0);
	ev_add(ev, &k, OPT_FREE, AF_T3, 0);
	/* p_data_fp32.add_(-update) */
	ev_add(ev, &k, OPT_NEW, AF_T4, f);
	ev_add(ev, &k, OPT_FREE, AF_T4, 0);
	return k;
}

int colloc__optim_script(int opt, const struct colloc_tensor *p, uint64_t shards,
			 struct colloc__optev *ev)
{
	int k = 0;

	switch (opt) {
	case COLLOC_OPT_ADAMW_LOOP:
		/* state created when the parameter is first stepped; denom =
		 * exp_avg_sq.sqrt().add_(eps) replaces the last parameter's
		 * denom once it exists */
		ev_add(ev, &k, OPT_STATES, 0, 0);
		ev_add(ev, &k, OPT_NEW, 0, elems_of(p, shards) * esize_of(p));
		return k;
	case COLLOC_OPT_ADAFACTOR:
		return adafactor_script(p, ev);
	case COLLOC_OPT_ADAM8BIT:
	case COLLOC_OPT_ADAMW8BIT:
		/* init_state at the first step; the update is one kernel on
		 * p, grad and the states, in place */
		ev_add(ev, &k, OPT_STATES, 0, 0);
		return k;
	default:
		return 0;
	}
}

/* Kernel writers: one kernel of e elements moving b bytes. */
static void k_add(struct colloc__optkern *kv, int *n, double e, double b)
{
	if (*n >= COLLOC__OPT_MAX_KERNELS)
		return;
	kv[*n].elems = e;
	kv[*n].bytes = b;
	(*n)++;
}

int colloc__optim_kernels(int opt, const struct colloc_tensor *p,
			  struct colloc__optkern *kv)
{
	double n = (double)colloc_tensor_numel(p), es = (double)esize_of(p);
	int k = 0;

	switch (opt) {
	case COLLOC_OPT_ADAMW_LOOP:
		/* exp_avg.mul_, .add_(grad), exp_avg_sq.mul_, .addcmul_(grad,
		 * grad), sqrt, add_(eps), p.addcdiv_ (no weight decay at the
		 * Trainer's default weight_decay=0) */
		k_add(kv, &k, n, 2 * n * es);
		k_add(kv, &k, n, 3 * n * es);
		k_add(kv, &k, n, 2 * n * es);
		k_add(kv, &k, n, 3 * n * es);
		k_add(kv, &k, n, 2 * n * es);
		k_add(kv, &k, n, 2 * n * es);
		k_add(kv, &k, n, 4 * n * es);
		return k;
	case COLLOC_OPT_ADAFACTOR: {
		uint64_t row = (uint64_t)n, col = (uint64_t)n;

		if (p->rank >= 2)
			factored_sizes(p, &row, &col);
		if (es < 4) {
			/* grad.float(), p.float(), and p.copy_() at the end */
			k_add(kv, &k, n, n * (es + 4));
			k_add(kv, &k, n, n * (es + 4));
			k_add(kv, &k, n, n * (es + 4));
		}
		/* _rms(p): norm, div */
		k_add(kv, &k, n, 4 * n);
		k_add(kv, &k, 1, 8);
		/* grad**2, + eps */
		k_add(kv, &k, n, 8 * n);
		k_add(kv, &k, n, 8 * n);
		if (p->rank >= 2) {
			/* two means, each added into its state (mul_, add_) */
			k_add(kv, &k, n, 4 * n);
			k_add(kv, &k, (double)row, 8.0 * (double)row);
			k_add(kv, &k, (double)row, 12.0 * (double)row);
			k_add(kv, &k, n, 4 * n);
			k_add(kv, &k, (double)col, 8.0 * (double)col);
			k_add(kv, &k, (double)col, 12.0 * (double)col);
			/* row.mean, div, rsqrt_, col.rsqrt, torch.mul(r, c) */
			k_add(kv, &k, (double)row, 4.0 * (double)row);
			k_add(kv, &k, (double)row, 8.0 * (double)row);
			k_add(kv, &k, (double)row, 8.0 * (double)row);
			k_add(kv, &k, (double)col, 8.0 * (double)col);
			k_add(kv, &k, n, 4 * n);
		} else {
			/* exp_avg_sq.mul_, .add_, .rsqrt() */
			k_add(kv, &k, n, 8 * n);
			k_add(kv, &k, n, 12 * n);
			k_add(kv, &k, n, 8 * n);
		}
		/* update.mul_(grad); _rms(update): norm, div; / clip,
		 * clamp_; div_; mul_(lr); -update; p.add_ */
		k_add(kv, &k, n, 12 * n);
		k_add(kv, &k, n, 4 * n);
		k_add(kv, &k, 1, 8);
		k_add(kv, &k, 1, 8);
		k_add(kv, &k, 1, 8);
		k_add(kv, &k, n, 8 * n);
		k_add(kv, &k, n, 8 * n);
		k_add(kv, &k, n, 8 * n);
		k_add(kv, &k, n, 12 * n);
		return k;
	}
	case COLLOC_OPT_ADAM8BIT:
	case COLLOC_OPT_ADAMW8BIT:
		/* one fused kernel: reads p, grad and both states, writes p
		 * and the states (8-bit, or float32 below min_8bit_size) */
		if (n < BNB_MIN_8BIT_SIZE)
			k_add(kv, &k, n, n * (2 * es + 8 + es + 8));
		else
			k_add(kv, &k, n, n * (2 * es + 2 + es + 2));
		return k;
	default:
		return 0;
	}
}
