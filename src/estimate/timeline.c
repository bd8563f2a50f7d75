/*
 * timeline.c — replay the allocations of a training loop through the
 * caching-allocator model and find the peak.
 *
 * The loop mirrored is the common one (and the one of the measurements in
 * data/ and ../shared/data/memory-groundtruth):
 *
 *   model.to(cuda); opt = Optimizer(model.parameters())
 *   for it in range(N):
 *       x, y = x.to(cuda), y.to(cuda)     # last iteration's x, y freed after
 *       out = model(x)                     # last iteration's out still alive
 *       loss = crit(out, y)
 *       opt.zero_grad()                    # set_to_none: grads freed here
 *       loss.backward()
 *       opt.step()                         # states created at the first step
 *
 * with two variants of zero_grad (colloc_estimate_opts): set_to_none=False
 * (keep_grads) zeroes the gradients in place, so they stay allocated and
 * backward adds into them; and gradient accumulation over grad_accum
 * micro-batches, where zero_grad runs before the first micro-batch's
 * backward and step after the last one's. An iteration is one optimizer
 * step. Of its micro-batches the first and the last are replayed: the ones
 * between do what the last does but the step, so they add no peak.
 *
 * Storage, not tensors, is what the allocator sees: views share their base's
 * storage, and a storage is freed when no pending forward use, no holder and
 * no pending backward use (autograd saved it) remains. Strides are tracked
 * so that reshape() copies exactly when PyTorch's would (a view is only
 * possible when the old strides allow it), which decides whether attention
 * and head-merging reshapes allocate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "estimate/timeline.h"
#include "model/ops.h"

struct stor {
	uint64_t bytes;
	uint32_t handle;
	int kind; /* enum colloc_mem_kind */
	int refs; /* pending forward uses and holders */
	int savers; /* pending backward nodes that saved it */
	int node; /* node that made it, -1 for none */
	int tensor; /* parameter it belongs to (params, grads, states), or -1 */
	const char *role;
	bool alive;
	bool counted; /* already in the saved-bytes total of this forward */
};

struct tl {
	const struct colloc_graph *g;
	const struct colloc__top *tops;
	const struct colloc_estimate_opts *opts;
	const struct colloc_platform *plat;
	struct colloc_alloc_sim *sim;

	struct stor *st;
	int n_st, cap_st;

	int *tstor; /* graph tensor -> storage, -1 if not materialised */
	int64_t (*strides)[COLLOC_MAX_RANK];
	int *uses; /* graph tensor -> forward consumers (static) */
	bool *req; /* graph tensor requires grad */
	int *grad; /* graph tensor -> gradient storage, -1 if none */
	int *pgrad; /* parameter tensor -> .grad storage, -1 if none */
	int (*saved)[6]; /* node -> storages it saved, -1 terminated */
	uint8_t *esz; /* graph tensor -> element size at run time (autocast) */
	int *wcast; /* parameter -> its autocast (half) copy, -1 if none */
	/* graph tensor -> the trainable parameter it reads through
	 * Transpose / Cast / Identity (colloc__param_source), -1 if none;
	 * computed once, asked for at every op of every replayed pass */
	int *psrc;
	/* loop optimizers: each parameter's state pieces (tensor i, piece k
	 * at i * COLLOC__OPT_MAX_PIECES + k; -1: none) */
	int *ostate;
	bool amp; /* torch.autocast to fp16/bf16 */
	struct colloc__shard sh; /* what --parallel keeps of each on a GPU */

	/* Gradient checkpointing (colloc__estimate_ext): the region of each
	 * node (-1: none), the storages each region holds for its backward
	 * (its inputs: hold[hold_at[r]..hold_at[r + 1]) while alive), and
	 * whether save() keeps nothing (a region's first forward). */
	const struct colloc__estimate_ext *ext;
	int *seg_of;
	int *hold, *hold_at, *hold_n;
	bool nosave;

	uint64_t kind_bytes[COLLOC_MEM_KIND_COUNT_];
	uint64_t saved_bytes; /* saved-for-backward total of the last forward */
	/* storage of the cuBLAS workspaces, or -1: [0] the main thread's
	 * (forward, loss), [1] the autograd engine's device thread's */
	int cublas[2];
	int oshared[2]; /* loop optimizers' shared buffers (ostate), or -1 */

	/* position */
	int iter, phase, node;
	uint64_t events;

	/* peak (of allocated) */
	uint64_t peak;
	uint64_t peak_event;
	int peak_iter, peak_phase, peak_node;
	uint64_t peak_kind[COLLOC_MEM_KIND_COUNT_];
	uint64_t stop_at; /* explain pass: stop replaying after this event */
	bool stopped;
	int held_shift; /* causal-lm-loop: the loop's shifted logits, -1 */
};

static int psrc(const struct tl *t, int x)
{
	return x >= 0 ? t->psrc[x] : -1;
}

#define ROLE_OUT "output of"

static int st_new(struct tl *t, uint64_t bytes, int kind, int node, const char *role,
		  int *out)
{
	struct stor *s;
	struct colloc_alloc_stats as;
	int rc;

	*out = -1;
	if (t->stopped)
		return 0;
	if (t->n_st == t->cap_st) {
		int cap = t->cap_st ? t->cap_st * 2 : 1024;
		struct stor *n = realloc(t->st, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->st = n;
		t->cap_st = cap;
	}
	s = &t->st[t->n_st];
	memset(s, 0, sizeof(*s));
	s->bytes = bytes;
	s->kind = kind;
	s->node = node;
	s->tensor = -1;
	s->role = role;
	rc = colloc_alloc_sim_malloc(t->sim, bytes, &s->handle);
	if (rc)
		return rc;
	s->alive = true;
	if (s->handle != COLLOC_ALLOC_NULL) {
		uint64_t addr, size;

		colloc_alloc_sim_block(t->sim, s->handle, &addr, &size);
		t->kind_bytes[kind] += size;
	}
	*out = t->n_st++;
	t->events++;
	colloc_alloc_sim_stats(t->sim, &as);
	if (as.allocated > t->peak) {
		t->peak = as.allocated;
		t->peak_event = t->events;
		t->peak_iter = t->iter;
		t->peak_phase = t->phase;
		t->peak_node = t->node;
		memcpy(t->peak_kind, t->kind_bytes, sizeof(t->peak_kind));
	}
	if (t->stop_at && t->events >= t->stop_at)
		t->stopped = true;
	return 0;
}

static void st_free(struct tl *t, int id)
{
	struct stor *s;

	if (id < 0 || t->stopped)
		return;
	s = &t->st[id];
	if (!s->alive)
		return;
	if (s->handle != COLLOC_ALLOC_NULL) {
		uint64_t addr, size;

		colloc_alloc_sim_block(t->sim, s->handle, &addr, &size);
		t->kind_bytes[s->kind] -= size;
		colloc_alloc_sim_free(t->sim, s->handle);
	}
	s->alive = false;
	t->events++;
}

/* Free a storage if nothing needs it any more. */
static void st_release(struct tl *t, int id)
{
	if (id >= 0 && t->st[id].refs <= 0 && t->st[id].savers <= 0)
		st_free(t, id);
}

static void st_unref(struct tl *t, int id)
{
	if (id < 0)
		return;
	t->st[id].refs--;
	st_release(t, id);
}

/* --- strides -------------------------------------------------------------- */

static void contiguous(const struct colloc_tensor *x, int64_t *str)
{
	int64_t s = 1;

	for (int d = x->rank - 1; d >= 0; d--) {
		str[d] = s;
		s *= x->shape[d] > 0 ? x->shape[d] : 1;
	}
}

static bool is_contiguous(const struct colloc_tensor *x, const int64_t *str)
{
	int64_t s = 1;

	for (int d = x->rank - 1; d >= 0; d--) {
		if (x->shape[d] != 1 && str[d] != s)
			return false;
		s *= x->shape[d];
	}
	return true;
}

/*
 * Strides of a view of (shape os, strides ost) with shape ns, or false when
 * no view exists and reshape() must copy. Old dims are grouped into runs
 * that are contiguous with each other; every run must map onto whole new
 * dims (the rule of ATen's computeStride, written from its description).
 */
static bool view_strides(int ro, const int64_t *os, const int64_t *ost, int rn,
			 const int64_t *ns, int64_t *nst)
{
	int64_t numel = 1, base, tn = 1, vn = 1;
	int vd = rn - 1;

	for (int d = 0; d < ro; d++)
		numel *= os[d];
	if (numel == 0 || ro == 0) {
		int64_t s = 1;

		for (int d = rn - 1; d >= 0; d--) {
			nst[d] = s;
			s *= ns[d] > 0 ? ns[d] : 1;
		}
		return true;
	}
	base = ost[ro - 1];
	for (int td = ro - 1; td >= 0; td--) {
		tn *= os[td];
		if (td == 0 || (os[td - 1] != 1 && ost[td - 1] != tn * base)) {
			while (vd >= 0 && (vn < tn || ns[vd] == 1)) {
				nst[vd] = vn * base;
				vn *= ns[vd];
				vd--;
			}
			if (vn != tn)
				return false;
			if (td > 0) {
				base = ost[td - 1];
				tn = 1;
				vn = 1;
			}
		}
	}
	return vd == -1;
}

/* --- forward --------------------------------------------------------------- */

static const struct colloc_tensor *T(const struct tl *t, int i)
{
	return &t->g->tensors[i];
}

/* Bytes of tensor i at its run-time precision. */
static uint64_t tbytes(const struct tl *t, int i)
{
	return colloc_tensor_numel(T(t, i)) * t->esz[i];
}

/* Map tensor `out` onto storage s (a view or in-place result). */
static void alias(struct tl *t, int out, int s)
{
	t->tstor[out] = s;
	if (s >= 0)
		t->st[s].refs += t->uses[out];
}

/* Give tensor `out` a new contiguous storage. */
static int fresh(struct tl *t, int out, int kind, const char *role)
{
	int s, rc;

	rc = st_new(t, tbytes(t, out), kind, t->node, role, &s);
	if (rc)
		return rc;
	contiguous(T(t, out), t->strides[out]);
	alias(t, out, s);
	return 0;
}

/* Add storage s to this forward's saved bytes, once (not the model's
 * input, which the saved-bytes totals leave out). */
static void count_saved(struct tl *t, int s)
{
	if (!t->st[s].counted && t->st[s].role != NULL &&
	    strcmp(t->st[s].role, "input") != 0) {
		t->st[s].counted = true;
		t->saved_bytes += t->st[s].bytes;
	}
}

static void save(struct tl *t, int node, int s)
{
	int k;

	if (s < 0 || t->stopped || t->nosave)
		return;
	if (t->st[s].kind == COLLOC_MEM_PARAM)
		return; /* parameters and buffers are not activations */
	for (k = 0; k < 6 && t->saved[node][k] >= 0; k++)
		if (t->saved[node][k] == s)
			return;
	if (k == 6)
		return;
	t->saved[node][k] = s;
	if (k + 1 < 6)
		t->saved[node][k + 1] = -1;
	t->st[s].savers++;
	count_saved(t, s);
}

/* The operand of a matmul as bmm/mm sees it: its storage if the folded
 * view exists, else a contiguous copy (which is then what is saved). */
static int matmul_operand(struct tl *t, int in, bool fold_batch, int *copy)
{
	const struct colloc_tensor *x = T(t, in);
	int64_t ns[3], nst[3];
	int rn = 0, rc;

	*copy = -1;
	if (t->tstor[in] < 0)
		return 0;
	if (x->rank >= 3 || (fold_batch && x->rank >= 2)) {
		int64_t lead = 1;

		for (int d = 0; d < x->rank - 2; d++)
			lead *= x->shape[d];
		if (fold_batch) {
			ns[rn++] = lead * x->shape[x->rank - 2];
			ns[rn++] = x->shape[x->rank - 1];
		} else {
			ns[rn++] = lead;
			ns[rn++] = x->shape[x->rank - 2];
			ns[rn++] = x->shape[x->rank - 1];
		}
		if (!view_strides(x->rank, x->shape, t->strides[in], rn, ns, nst)) {
			rc = st_new(t, tbytes(t, in), COLLOC_MEM_ACTIVATION, t->node,
				    "contiguous copy for matmul", copy);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Autocast before the op runs (colloc__amp_op): its inputs' casts (and
 * the cached half copies of parameters) into casts[], and the output's
 * precision. */
static int amp_prepare(struct tl *t, const struct colloc__top *tp, int *casts)
{
	uint8_t cast[3];
	int rc;

	colloc__amp_op(t->g, tp, t->opts->precision == COLLOC_PREC_AMP_FP16, t->psrc,
		       t->tstor, t->esz, cast);
	for (int k = 0; k < 3; k++) {
		int in = colloc__amp_input(tp, k), p;

		if (!cast[k])
			continue;
		if (cast[k] == COLLOC__AMP_WCACHE) {
			p = psrc(t, in);
			/* The autocast cache keeps one half copy of each
			 * weight for the whole forward pass. */
			if (t->wcast[p] < 0) {
				rc = st_new(t, colloc_tensor_numel(T(t, p)) * 2,
					    COLLOC_MEM_ACTIVATION, tp->node,
					    "half-precision weight copy for",
					    &t->wcast[p]);
				if (rc)
					return rc;
				if (t->wcast[p] >= 0)
					t->st[t->wcast[p]].refs = 1;
			}
			casts[k] = t->wcast[p];
			continue;
		}
		rc = st_new(t, colloc_tensor_numel(T(t, in)) * cast[k],
			    COLLOC_MEM_ACTIVATION, tp->node,
			    cast[k] == 2 ? "half-precision input copy for"
					 : "float32 input copy for",
			    &casts[k]);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * cuBLAS takes a workspace from the caching allocator at a handle's first
 * GEMM and keeps it until the process ends (PyTorch >= 1.11 keys them by
 * handle and stream). Handles are per thread, and the autograd engine runs
 * a CUDA backward on its own device thread, so training holds two: the
 * main thread's from the first forward GEMM, the engine's from the first
 * backward one. Measured on an H200 (data/measurements/h200-context.csv,
 * stage backward_linear: allocated grows by the layer's tensors plus
 * 32 MiB, and empty_cache leaves 2 x 32 MiB allocated).
 */
static int cublas_workspace(struct tl *t, int thread, int node)
{
	int rc;

	if (t->cublas[thread] >= 0 || !t->plat->cublas_workspace_bytes)
		return 0;
	rc = st_new(t, t->plat->cublas_workspace_bytes, COLLOC_MEM_TEMPORARY, node,
		    thread ? "cuBLAS workspace (autograd thread)" : "cuBLAS workspace",
		    &t->cublas[thread]);
	if (rc == 0 && t->cublas[thread] >= 0)
		t->st[t->cublas[thread]].refs = 1;
	return rc;
}

static int run_forward_op(struct tl *t, const struct colloc__top *tp)
{
	const struct colloc_graph *g = t->g;
	const struct colloc_node *n = &g->nodes[tp->node];
	int out = tp->out, rc, copies[2] = {-1, -1}, casts[3] = {-1, -1, -1};
	int s_in0 = tp->in[0] >= 0 ? t->tstor[tp->in[0]] : -1;

	t->node = tp->node;
	if (t->amp && (rc = amp_prepare(t, tp, casts)))
		return rc;
	/* a recomputation in the backward runs on the autograd thread */
	if (tp->matmul &&
	    (rc = cublas_workspace(t, t->phase == COLLOC_PHASE_BACKWARD, tp->node)))
		return rc;
	if (tp->kind == OPK_MATMUL ||
	    (tp->kind == OPK_LINEAR && tp->op && tp->op->train == COLLOC__TR_MATMUL)) {
		for (int k = 0; k < 2; k++)
			if (tp->in[k] >= 0 && psrc(t, tp->in[k]) < 0 && casts[k] < 0) {
				rc = matmul_operand(t, tp->in[k], tp->kind == OPK_LINEAR,
						    &copies[k]);
				if (rc)
					return rc;
			}
	}

	/* The output. */
	if (out >= 0) {
		const struct colloc_tensor *y = T(t, out);

		switch (tp->fwd) {
		case FWD_VIEW:
			if (s_in0 < 0) {
				t->tstor[out] = -1;
				break;
			}
			if (tp->kind == OPK_SPLIT) {
				for (int o = 0; o < n->n_outputs; o++)
					if (n->outputs[o] >= 0) {
						memcpy(t->strides[n->outputs[o]],
						       t->strides[tp->in[0]],
						       sizeof(t->strides[0]));
						alias(t, n->outputs[o], s_in0);
					}
				break;
			}
			if (tp->kind == OPK_SLICE) {
				memcpy(t->strides[out], t->strides[tp->in[0]],
				       sizeof(t->strides[0]));
				alias(t, out, s_in0);
				break;
			}
			if (tp->op && tp->op->view == COLLOC__VIEW_TRANSPOSE) {
				const struct colloc_attr *p = colloc_node_attr(n, "perm");
				const struct colloc_tensor *x = T(t, tp->in[0]);

				for (int d = 0; d < y->rank; d++) {
					int from = p && p->type == COLLOC_ATTR_INTS &&
								   (size_t)d < p->n
							   ? (int)p->ints[d]
							   : y->rank - 1 - d;

					t->strides[out][d] =
						from >= 0 && from < x->rank
							? t->strides[tp->in[0]][from]
							: 1;
				}
				alias(t, out, s_in0);
				break;
			}
			if (tp->op && tp->op->view == COLLOC__VIEW_EXPAND) {
				const struct colloc_tensor *x = T(t, tp->in[0]);
				int off = y->rank - x->rank;

				for (int d = 0; d < y->rank; d++)
					t->strides[out][d] =
						d < off || (x->shape[d - off] == 1 &&
							    y->shape[d] != 1)
							? 0
							: t->strides[tp->in[0]][d - off];
				alias(t, out, s_in0);
				break;
			}
			if (tp->op && tp->op->view == COLLOC__VIEW_SELECT) {
				/* select(): drop the gathered axis' stride */
				const struct colloc_tensor *x = T(t, tp->in[0]);
				int axis = (int)colloc_node_attr_int(n, "axis", 0), j = 0;

				if (axis < 0)
					axis += x->rank;
				for (int d = 0; d < x->rank && j < COLLOC_MAX_RANK; d++)
					if (tp->op->train != COLLOC__TR_GATHER ||
					    d != axis)
						t->strides[out][j++] =
							t->strides[tp->in[0]][d];
				alias(t, out, s_in0);
				break;
			}
			/* Reshape family: a view when the strides allow. */
			if (view_strides(T(t, tp->in[0])->rank, T(t, tp->in[0])->shape,
					 t->strides[tp->in[0]], y->rank, y->shape,
					 t->strides[out])) {
				alias(t, out, s_in0);
			} else {
				rc = fresh(t, out, COLLOC_MEM_ACTIVATION,
					   "reshape copy of");
				if (rc)
					return rc;
			}
			break;
		case FWD_INPLACE:
			/* In place when the input dies here anyway and nothing
			 * saved it: what a model written with inplace=True does
			 * (PyTorch would refuse otherwise). */
			if (s_in0 >= 0 && t->st[s_in0].refs == 1 &&
			    t->st[s_in0].savers == 0 &&
			    t->st[s_in0].kind == COLLOC_MEM_ACTIVATION &&
			    t->uses[tp->in[0]] == 1 &&
			    is_contiguous(T(t, tp->in[0]), t->strides[tp->in[0]])) {
				contiguous(y, t->strides[out]);
				alias(t, out, s_in0);
				break;
			}
			/* fall through */
		case FWD_NEW:
			rc = fresh(t, out, COLLOC_MEM_ACTIVATION, ROLE_OUT);
			if (rc)
				return rc;
			break;
		case FWD_SKIP:
			break;
		}
		/* SDPA's flash and memory-efficient kernels (and flash-attn)
		 * write the output as [B, T, H, D] and return it transposed to
		 * [B, H, T, D]: merging the heads back (transpose(1, 2) and
		 * reshape) is then a view, not a copy. */
		if (tp->kind == OPK_ATTENTION && y->rank == 4 && t->tstor[out] >= 0) {
			t->strides[out][3] = 1;
			t->strides[out][1] = y->shape[3];
			t->strides[out][2] = y->shape[1] * y->shape[3];
			t->strides[out][0] = y->shape[2] * t->strides[out][2];
		}
	}

	/* What autograd keeps for backward. */
	t->saved[tp->node][0] = -1;
	for (int k = 0; k < 3; k++) {
		int s = tp->in[k] >= 0 ? t->tstor[tp->in[k]] : -1;

		if (k < 2 && copies[k] >= 0)
			s = copies[k];
		if (casts[k] >= 0)
			s = casts[k];
		if ((tp->save & (1u << k)) && tp->in[k] >= 0)
			save(t, tp->node, s);
	}
	if ((tp->save & SAVE_OUT0) && out >= 0)
		save(t, tp->node, t->tstor[out]);
	/* The weight of a convolution or linear layer is saved too; under
	 * autocast that is the half copy, which is not a parameter. */
	if (t->amp && (tp->kind == OPK_CONV || tp->kind == OPK_LINEAR))
		for (int k = 0; k < 2; k++)
			if (casts[k] >= 0 && tp->in[k] >= 0 && psrc(t, tp->in[k]) >= 0)
				save(t, tp->node, casts[k]);
	for (int k = 0; k < 2; k++)
		if (copies[k] >= 0)
			st_release(t, copies[k]); /* freed now unless saved */
	for (int k = 0; k < 3; k++)
		if (casts[k] >= 0 && t->st[casts[k]].refs == 0)
			st_release(t, casts[k]); /* input casts live only if saved */
	for (int k = 0; k < tp->n_extra; k++) {
		int s;

		rc = st_new(t, tp->extra_saved[k], COLLOC_MEM_ACTIVATION, tp->node,
			    "saved statistics/mask/indices of", &s);
		if (rc)
			return rc;
		save(t, tp->node, s);
		st_release(t, s); /* a checkpointed forward keeps none */
	}

	/* Inputs are used once more: drop the forward references. */
	if (tp->kind == OPK_CONCAT) {
		for (int i = 0; i < n->n_inputs; i++)
			if (n->inputs[i] >= 0)
				st_unref(t, t->tstor[n->inputs[i]]);
	} else {
		for (int k = 0; k < tp->n_in; k++)
			if (tp->in[k] >= 0)
				st_unref(t, t->tstor[tp->in[k]]);
	}
	/* Outputs nobody reads (and nobody saved) go right away. */
	if (out >= 0 && t->tstor[out] >= 0)
		st_release(t, t->tstor[out]);
	return 0;
}

/* --- backward -------------------------------------------------------------- */

static int grad_into(struct tl *t, int in, int from_out, bool as_view)
{
	int p = psrc(t, in), s, rc;
	uint64_t bytes = p >= 0 ? colloc_tensor_bytes(T(t, p)) : tbytes(t, in);

	if (p >= 0) {
		/* AccumulateGrad: the first gradient becomes .grad; later
		 * ones (tied weights) are added into it. ZeRO-2/3 and FSDP
		 * keep this GPU's shard of it (the unsharded gradient is in
		 * the runtime's buffers). */
		if (t->pgrad[p] < 0 || !t->st[t->pgrad[p]].alive) {
			rc = st_new(t,
				    t->sh.grads ? colloc__shard_bytes(T(t, p), t->sh.n)
						: bytes,
				    COLLOC_MEM_GRAD, t->node, "gradient of",
				    &t->pgrad[p]);
			if (rc)
				return rc;
			if (t->pgrad[p] >= 0) {
				t->st[t->pgrad[p]].refs = 1;
				t->st[t->pgrad[p]].tensor = p;
			}
			return 0;
		}
		rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, t->node,
			    "gradient (to add) of", &s);
		st_free(t, s);
		return rc;
	}
	if (!t->req[in])
		return 0;
	if (t->grad[in] >= 0 && t->st[t->grad[in]].alive) {
		/* Accumulated into the existing buffer (InputBuffer::add). */
		rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, t->node,
			    "gradient (to add) of", &s);
		st_free(t, s);
		return rc;
	}
	if (as_view && from_out >= 0 && t->grad[from_out] >= 0) {
		t->grad[in] = t->grad[from_out];
		t->st[t->grad[in]].refs++;
		return 0;
	}
	rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, t->node, "gradient of", &t->grad[in]);
	if (rc == 0 && t->grad[in] >= 0)
		t->st[t->grad[in]].refs = 1;
	return rc;
}

static int run_backward_op(struct tl *t, const struct colloc__top *tp)
{
	const struct colloc_node *n = &t->g->nodes[tp->node];
	int out = tp->out, rc = 0;
	bool flows = false;

	t->node = tp->node;
	if (tp->kind == OPK_SPLIT) {
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0 && t->grad[n->outputs[o]] >= 0)
				flows = true;
	} else if (out >= 0 && t->grad[out] >= 0) {
		flows = true;
	}
	if (flows && tp->matmul && (rc = cublas_workspace(t, 1, tp->node)))
		return rc;
	if (flows) {
		if (tp->kind == OPK_CONCAT) {
			/* cat's backward hands out slices of grad_output. */
			for (int i = 0; i < n->n_inputs && !rc; i++)
				if (n->inputs[i] >= 0)
					rc = grad_into(t, n->inputs[i], out, true);
		} else {
			for (int k = 0; k < tp->n_in && !rc; k++) {
				int in = tp->in[k];

				if (in < 0)
					continue;
				if (psrc(t, in) < 0 && !t->req[in])
					continue;
				rc = grad_into(t, in, out, tp->grad_view && k == 0);
			}
			/* BatchNorm / LayerNorm weights and biases are not in
			 * tp->in (they are parameters): their grads too. */
			if (tp->kind == OPK_BATCHNORM || tp->kind == OPK_LAYERNORM ||
			    tp->kind == OPK_CONV || tp->kind == OPK_LINEAR) {
				for (int i = 0; i < n->n_inputs && !rc; i++) {
					int in = n->inputs[i];
					int p = in >= 0 ? psrc(t, in) : -1;

					if (p < 0 ||
					    (tp->kind == OPK_BATCHNORM && i >= 3))
						continue;
					if (in == tp->in[0] || in == tp->in[1])
						continue;
					rc = grad_into(t, in, out, false);
				}
			}
		}
		if (rc)
			return rc;
	}
	/* grad_output is consumed. */
	if (tp->kind == OPK_SPLIT) {
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0 && t->grad[n->outputs[o]] >= 0) {
				st_unref(t, t->grad[n->outputs[o]]);
				t->grad[n->outputs[o]] = -1;
			}
	} else if (out >= 0 && t->grad[out] >= 0) {
		st_unref(t, t->grad[out]);
		t->grad[out] = -1;
	}
	/* Saved tensors are released once the node has run. */
	for (int k = 0; k < 6 && t->saved[tp->node][k] >= 0; k++) {
		int s = t->saved[tp->node][k];

		t->st[s].savers--;
		st_release(t, s);
	}
	t->saved[tp->node][0] = -1;
	return 0;
}

/* --- gradient checkpointing ------------------------------------------------ */

/*
 * torch.utils.checkpoint(layer, *args, use_reentrant=False), as Hugging
 * Face's gradient_checkpointing_enable() wraps each decoder layer: inside
 * the region the saved-tensor hooks keep a placeholder instead of each
 * tensor autograd saves (so the forward keeps nothing), the arguments stay
 * alive in the recomputation's closure, and the first backward node of the
 * region that unpacks a placeholder re-runs the region's forward with the
 * real tensors kept; each is freed as its backward node runs. The
 * recomputation's outputs themselves are dropped.
 */
static int seg_setup(struct tl *t)
{
	const struct colloc_graph *g = t->g;
	const struct colloc__estimate_ext *x = t->ext;
	size_t cap = 1;
	int off = 0;

	if (!x || x->n_segs <= 0)
		return 0;
	t->seg_of = malloc(((size_t)g->n_nodes + 1) * sizeof(*t->seg_of));
	t->hold_at = malloc(((size_t)x->n_segs + 1) * sizeof(*t->hold_at));
	t->hold_n = calloc((size_t)x->n_segs + 1, sizeof(*t->hold_n));
	if (!t->seg_of || !t->hold_at || !t->hold_n)
		return -ENOMEM;
	for (int k = 0; k < g->n_nodes; k++) {
		t->seg_of[k] = -1;
		cap += (size_t)g->nodes[k].n_inputs;
	}
	for (int i = 0; i < x->n_segs; i++) {
		t->hold_at[i] = off;
		for (int k = x->seg_first[i]; k < x->seg_end[i]; k++) {
			t->seg_of[k] = i;
			off += g->nodes[k].n_inputs;
		}
	}
	t->hold_at[x->n_segs] = off;
	t->hold = malloc(2 * cap * sizeof(*t->hold));
	return t->hold ? 0 : -ENOMEM;
}

/* A tensor the replay folds away (shape arithmetic on constants: the
 * causal mask) is still computed on the GPU once per forward by the model;
 * a checkpoint's closure keeps it, so it is given its storage. */
static int materialise(struct tl *t, int x, int *s)
{
	const struct colloc_tensor *v = T(t, x);
	int rc;

	*s = -1;
	if (v->producer < 0 || colloc_tensor_numel(v) <= 1 ||
	    !(colloc_dtype_is_float(v->dtype) || v->dtype == COLLOC_DT_BOOL))
		return 0;
	contiguous(v, t->strides[x]);
	rc = st_new(t, tbytes(t, x), COLLOC_MEM_ACTIVATION, v->producer, ROLE_OUT,
		    &t->tstor[x]);
	*s = t->tstor[x];
	return rc;
}

/* Entering region r in the forward: keep what it reads from outside. */
static int seg_hold(struct tl *t, int r)
{
	const struct colloc_graph *g = t->g;
	int first = t->ext->seg_first[r], *h = t->hold + t->hold_at[r], rc;

	t->hold_n[r] = 0;
	for (int k = first; k < t->ext->seg_end[r]; k++)
		for (int i = 0; i < g->nodes[k].n_inputs; i++) {
			int x = g->nodes[k].inputs[i], s, j;

			if (x < 0 || g->tensors[x].producer >= first)
				continue;
			s = t->tstor[x];
			if (s < 0 && g->tensors[x].role != COLLOC_TENSOR_INITIALIZER &&
			    (rc = materialise(t, x, &s)))
				return rc;
			if (s < 0 || t->st[s].kind == COLLOC_MEM_PARAM || !t->st[s].alive)
				continue;
			for (j = 0; j < t->hold_n[r] && h[j] != s; j++)
				;
			if (j < t->hold_n[r])
				continue;
			h[t->hold_n[r]++] = s;
			t->st[s].savers++;
			count_saved(t, s);
		}
	return 0;
}

/* Backward reaches region r: run its forward again, saving. */
static int seg_recompute(struct tl *t, int r)
{
	const struct colloc_graph *g = t->g;
	int *h = t->hold + t->hold_at[r];
	int *refs = t->hold + t->hold_at[t->ext->n_segs] + 1; /* scratch half */
	int from = t->n_st, rc;

	/* the inputs' forward references are the first forward's */
	for (int j = 0; j < t->hold_n[r]; j++)
		refs[j] = t->st[h[j]].refs;
	t->nosave = false;
	for (int k = t->ext->seg_first[r]; k < t->ext->seg_end[r] && !t->stopped; k++) {
		if (t->tops[k].fwd == FWD_SKIP)
			continue;
		if ((rc = run_forward_op(t, &t->tops[k])))
			return rc;
	}
	for (int j = 0; j < t->hold_n[r]; j++)
		t->st[h[j]].refs = refs[j];
	/* The autocast cache of the recomputation goes with it, and so does
	 * every output nothing saved. */
	for (int i = 0; i < g->n_tensors; i++)
		if (t->wcast[i] >= from)
			t->wcast[i] = -1;
	for (int i = from; i < t->n_st; i++)
		if (t->st[i].alive && i != t->cublas[0] && i != t->cublas[1]) {
			t->st[i].refs = 0;
			st_release(t, i);
		}
	return 0;
}

/* Region r's backward is done: its inputs are no longer held. */
static void seg_release(struct tl *t, int r)
{
	const int *h = t->hold + t->hold_at[r];

	for (int j = 0; j < t->hold_n[r]; j++) {
		t->st[h[j]].savers--;
		st_release(t, h[j]);
	}
	t->hold_n[r] = 0;
}

/* --- the loop ------------------------------------------------------------- */

static void compute_uses_and_req(struct tl *t)
{
	const struct colloc_graph *g = t->g;

	memset(t->uses, 0, (size_t)g->n_tensors * sizeof(*t->uses));
	memset(t->req, 0, (size_t)g->n_tensors * sizeof(*t->req));
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE)
			t->req[i] = true;
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc__top *tp = &t->tops[k];
		const struct colloc_node *n = &g->nodes[tp->node];
		bool r = false;

		if (tp->fwd == FWD_SKIP)
			continue;
		if (tp->kind == OPK_CONCAT) {
			for (int i = 0; i < n->n_inputs; i++)
				if (n->inputs[i] >= 0) {
					t->uses[n->inputs[i]]++;
					r |= t->req[n->inputs[i]];
				}
		} else {
			for (int j = 0; j < tp->n_in; j++)
				if (tp->in[j] >= 0) {
					t->uses[tp->in[j]]++;
					r |= t->req[tp->in[j]] || psrc(t, tp->in[j]) >= 0;
				}
			for (int i = 0; i < n->n_inputs; i++)
				if (n->inputs[i] >= 0 && psrc(t, n->inputs[i]) >= 0)
					r = true;
		}
		if (tp->kind == OPK_SPLIT) {
			for (int o = 0; o < n->n_outputs; o++)
				if (n->outputs[o] >= 0)
					t->req[n->outputs[o]] = r;
		} else if (tp->out >= 0) {
			t->req[tp->out] =
				r && colloc_dtype_is_float(g->tensors[tp->out].dtype);
		}
	}
	/* A graph output has one more reader: model(x) returns it, so it is
	 * not freed when the op that makes it ends (the loop below hands
	 * that reference to the Python name `out`, or drops it for outputs
	 * the loss does not read). */
	for (int o = 0; o < g->n_outputs; o++)
		if (g->outputs[o] >= 0)
			t->uses[g->outputs[o]]++;
}

static int first_output(const struct colloc_graph *g)
{
	return g->n_outputs > 0 ? g->outputs[0] : -1;
}

/* The loss's precision on output y (colloc__loss_precision): returns
 * whether log_softmax runs in float32 on half logits; *copies, whether
 * that conversion is a copy of its own. */
static bool loss_prec(const struct tl *t, int y, bool *copies)
{
	bool up = false;

	*copies = false;
	if (y >= 0)
		colloc__loss_precision(t->opts->loss, t->opts->precision, t->esz[y],
				       colloc_dtype_is_float(t->g->tensors[y].dtype), &up,
				       copies);
	return up;
}

static bool loss_upcast(const struct tl *t, int y)
{
	bool copies;

	return loss_prec(t, y, &copies);
}

static bool loss_copies(const struct tl *t, int y)
{
	bool copies;

	loss_prec(t, y, &copies);
	return copies;
}

/* Is the loss log_softmax + nll_loss over the last dimension of the first
 * output (cross-entropy and the causal-LM losses)? */
static bool loss_is_ce(int loss)
{
	return loss == COLLOC_LOSS_CROSS_ENTROPY || loss == COLLOC_LOSS_CAUSAL_LM ||
	       colloc_loss_shifts(loss);
}

static int run_loss(struct tl *t, int *loss_st, int *logp_st, int *shift_st)
{
	const struct colloc_graph *g = t->g;
	int y = first_output(g), rc;
	uint64_t bytes = y >= 0 ? tbytes(t, y) : 0;
	const struct colloc_tensor *yt = y >= 0 ? T(t, y) : NULL;

	*loss_st = *logp_st = *shift_st = -1;
	t->phase = COLLOC_PHASE_LOSS;
	t->node = -1;
	if (!yt)
		return 0;
	if (loss_is_ce(t->opts->loss)) {
		int wide = -1;

		if (colloc_loss_shifts(t->opts->loss) && yt->rank == 3 &&
		    yt->shape[1] > 1) {
			/* The logits shifted by one and made contiguous, a
			 * copy (causal-lm-copy, causal-lm-loop; causal-lm
			 * shifts the labels instead). */
			bytes = bytes / (uint64_t)yt->shape[1] *
				(uint64_t)(yt->shape[1] - 1);
			rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1,
				    "shifted logits for the loss", shift_st);
			if (rc)
				return rc;
		}
		if (loss_upcast(t, y)) {
			/* Under autocast log_softmax runs in float32
			 * (fp32_set_opt_dtype in ATen's autocast_mode.cpp) and
			 * keeps a float32 result; where it converts its half
			 * input first (loss_copies), that copy is dropped when
			 * it returns. */
			bytes = bytes / t->esz[y] * 4;
			if (loss_copies(t, y)) {
				rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1,
					    "float32 copy of the logits for the loss",
					    &wide);
				if (rc)
					return rc;
			}
		}
		/* log_softmax keeps its result for backward. */
		rc = st_new(t, bytes, COLLOC_MEM_ACTIVATION, -1,
			    "log_softmax of the loss", logp_st);
		if (rc)
			return rc;
		st_free(t, wide);
		if (*logp_st >= 0) {
			t->st[*logp_st].savers = 1;
			count_saved(t, *logp_st);
		}
		/* nll_loss saves its total_weight too, a 0-dim tensor of the
		 * log-probabilities' type (counted; its one small block, like
		 * the loss's own, is below the allocator's resolution here) */
		t->saved_bytes += loss_upcast(t, y) ? 4 : (uint64_t)t->esz[y];
		if (*shift_st >= 0) {
			/* causal-lm-copy: the contiguous() copy is read by log_softmax
			 * and dropped when the model's forward returns;
			 * causal-lm-loop: the loop's name `logits` holds it until
			 * the next iteration's copy replaces it. */
			if (t->opts->loss == COLLOC_LOSS_CAUSAL_LM_LOOP) {
				t->st[*shift_st].refs = 1;
				st_unref(t, t->held_shift);
				t->held_shift = *shift_st;
			} else {
				t->st[*shift_st].refs = 0;
				st_release(t, *shift_st);
			}
			*shift_st = -1;
		}
	} else if (t->opts->loss == COLLOC_LOSS_MSE) {
		int target;

		rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1, "MSE target", &target);
		if (rc)
			return rc;
		/* mse_loss saves self and target */
		if (target >= 0)
			t->st[target].savers = 1;
		*logp_st = target;
		/* the output is what it saves (the target is data, as the
		 * model's input and the labels are not counted) */
		if (t->tstor[y] >= 0) {
			t->st[t->tstor[y]].savers++;
			count_saved(t, t->tstor[y]);
		}
	}
	return st_new(t, 4, COLLOC_MEM_TEMPORARY, -1, "loss", loss_st);
}

static int run_loss_backward(struct tl *t, int logp_st)
{
	const struct colloc_graph *g = t->g;
	int y = first_output(g), gl, gnll = -1, rc;
	const struct colloc_tensor *yt = y >= 0 ? T(t, y) : NULL;
	uint64_t bytes = yt ? tbytes(t, y) : 0;

	t->phase = COLLOC_PHASE_BACKWARD;
	t->node = -1;
	if (!yt)
		return 0;
	rc = st_new(t, 4, COLLOC_MEM_TEMPORARY, -1, "gradient of the loss", &gl);
	if (rc)
		return rc;
	if (loss_is_ce(t->opts->loss)) {
		uint64_t sb = bytes;
		int glogp;

		if (colloc_loss_shifts(t->opts->loss) && yt->rank == 3 &&
		    yt->shape[1] > 1)
			sb = bytes / (uint64_t)yt->shape[1] *
			     (uint64_t)(yt->shape[1] - 1);
		if (loss_upcast(t, y))
			sb = sb / t->esz[y] * 4;
		/* nll_loss backward: a zero-filled gradient of log_softmax's
		 * output; log_softmax backward: the gradient of its input. */
		rc = st_new(t, sb, COLLOC_MEM_TEMPORARY, -1, "gradient of log_softmax",
			    &gnll);
		if (rc)
			return rc;
		st_free(t, gl);
		/* half_to_float's backward writes the half gradient itself */
		if (loss_upcast(t, y) && !loss_copies(t, y))
			sb = sb / 4 * t->esz[y];
		rc = st_new(t, sb, COLLOC_MEM_TEMPORARY, -1, "gradient of the logits",
			    &glogp);
		if (rc)
			return rc;
		st_free(t, gnll);
		if (logp_st >= 0) {
			t->st[logp_st].savers = 0;
			st_release(t, logp_st);
		}
		if (loss_copies(t, y)) {
			/* the float32 conversion's backward: the gradient
			 * converted back to the logits' type */
			int narrow;

			rc = st_new(t, sb / 4 * t->esz[y], COLLOC_MEM_TEMPORARY, -1,
				    "gradient of the logits", &narrow);
			if (rc)
				return rc;
			st_free(t, glogp);
			glogp = narrow;
			sb = sb / 4 * t->esz[y];
		}
		if (sb != bytes) {
			/* the shift's backward: zeros of the full logits, the
			 * shifted gradient copied in */
			rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1,
				    "gradient of the logits", &t->grad[y]);
			if (rc)
				return rc;
			st_free(t, glogp);
		} else {
			t->grad[y] = glogp;
		}
	} else if (t->opts->loss == COLLOC_LOSS_MSE) {
		rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1, "gradient of the output",
			    &t->grad[y]);
		st_free(t, gl);
		if (logp_st >= 0) {
			t->st[logp_st].savers = 0;
			st_release(t, logp_st);
		}
		if (t->tstor[y] >= 0) {
			t->st[t->tstor[y]].savers--;
			st_release(t, t->tstor[y]);
		}
	} else {
		rc = st_new(t, bytes, COLLOC_MEM_TEMPORARY, -1, "gradient of the output",
			    &t->grad[y]);
		st_free(t, gl);
	}
	if (rc == 0 && t->grad[y] >= 0)
		t->st[t->grad[y]].refs = 1;
	return rc;
}

/* Foreach temporaries (one list of parameter-sized tensors) in PyTorch 2.x:
 * Adam/AdamW and RMSprop/Adagrad take a _foreach_sqrt of a state. */
static int temp_factor(int opt)
{
	const struct colloc__optim *o = colloc__optim_get(opt);

	return o && o->step == STEP_FOREACH ? o->temp_factor : 0;
}

static int make_states(struct tl *t)
{
	const struct colloc_graph *g = t->g;
	int f = colloc__optimizer_state_factor(t->opts->optimizer), rc, s;

	for (int rep = 0; rep < f; rep++)
		for (int i = 0; i < g->n_tensors; i++)
			if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE) {
				rc = st_new(t,
					    t->sh.states
						    ? colloc__shard_bytes(&g->tensors[i],
									  t->sh.n)
						    : colloc_tensor_bytes(&g->tensors[i]),
					    COLLOC_MEM_OPTIMIZER, -1,
					    "optimizer state of", &s);
				if (rc)
					return rc;
				if (s >= 0) {
					t->st[s].refs = 1;
					t->st[s].tensor = i;
				}
			}
	return 0;
}

/* A loop optimizer's state of parameter i: created at its first step. */
static int loop_states(struct tl *t, int i, const struct colloc__optstate *os)
{
	int rc, s;

	if (os->shared && t->oshared[0] < 0) {
		uint64_t b[2];
		int n = colloc__optim_shared(t->opts->optimizer, b);

		for (int k = 0; k < n && k < 2; k++) {
			rc = st_new(t, b[k], COLLOC_MEM_OPTIMIZER, -1,
				    "optimizer quantization map", &s);
			if (rc)
				return rc;
			if (s >= 0)
				t->st[s].refs = 1;
			t->oshared[k] = s;
		}
	}
	for (int k = 0; k < os->n; k++) {
		if (os->renew && k == os->renew)
			continue;
		rc = st_new(t, os->bytes[k], COLLOC_MEM_OPTIMIZER, -1,
			    "optimizer state of", &s);
		if (rc)
			return rc;
		if (s >= 0) {
			t->st[s].refs = 1;
			t->st[s].tensor = i;
		}
		t->ostate[(size_t)i * COLLOC__OPT_MAX_PIECES + (size_t)k] = s;
	}
	return 0;
}

/*
 * opt.step() of an optimizer that updates one parameter after the other
 * (optim.c writes each parameter's update as allocator events): the
 * parameters in the model's order, each one's state created at its first
 * step, its temporaries in slots that, like the Python names holding them,
 * live on into the next parameter's update until rebound; all are gone
 * when step() returns.
 */
static int run_step_loop(struct tl *t, int iter)
{
	const struct colloc_graph *g = t->g;
	int slot[COLLOC__OPT_SLOTS], rc = 0, opt = t->opts->optimizer;
	uint64_t shards = t->sh.states ? t->sh.n : 1;

	for (int k = 0; k < COLLOC__OPT_SLOTS; k++)
		slot[k] = -1;
	for (int i = 0; i < g->n_tensors && !rc; i++) {
		const struct colloc_tensor *p = &g->tensors[i];
		struct colloc__optev ev[COLLOC__OPT_MAX_EVENTS];
		struct colloc__optstate os;
		int n, s;

		if (p->param_class != COLLOC_PARAM_TRAINABLE)
			continue;
		colloc__optim_states(opt, p, shards, (uint64_t)t->opts->quant_block_elems,
				     &os);
		n = colloc__optim_script(opt, p, shards, ev);
		for (int k = 0; k < n && !rc; k++) {
			int *sl = &slot[ev[k].slot % COLLOC__OPT_SLOTS],
			    *piece = &t->ostate[(size_t)i * COLLOC__OPT_MAX_PIECES +
						(size_t)os.renew];

			switch (ev[k].op) {
			case OPT_NEW:
				rc = st_new(t, ev[k].bytes, COLLOC_MEM_TEMPORARY, -1,
					    "optimizer step temporary of", &s);
				if (!rc && s >= 0)
					t->st[s].tensor = i;
				st_free(t, *sl);
				*sl = s;
				break;
			case OPT_FREE:
				st_free(t, *sl);
				*sl = -1;
				break;
			case OPT_STATES:
				if (iter == 0)
					rc = loop_states(t, i, &os);
				break;
			case OPT_RENEW:
				if (!os.renew)
					break;
				rc = st_new(t, os.bytes[os.renew], COLLOC_MEM_OPTIMIZER,
					    -1, "optimizer state of", &s);
				if (!rc && s >= 0) {
					t->st[s].refs = 1;
					t->st[s].tensor = i;
				}
				st_free(t, *piece);
				*piece = s;
				break;
			default:
				break;
			}
		}
	}
	for (int k = 0; k < COLLOC__OPT_SLOTS; k++)
		st_free(t, slot[k]);
	return rc;
}

static int run_step(struct tl *t, int iter)
{
	const struct colloc_graph *g = t->g;
	int n_par = 0, rc, *tmp;

	t->phase = COLLOC_PHASE_OPTIMIZER;
	t->node = -1;
	if (colloc__optim_get(t->opts->optimizer)->step == STEP_LOOP)
		return run_step_loop(t, iter);
	if (iter == 0 && !colloc__optim_get(t->opts->optimizer)->ctor_state) {
		rc = make_states(t);
		if (rc)
			return rc;
	}
	if (!temp_factor(t->opts->optimizer))
		return 0;
	for (int i = 0; i < g->n_tensors; i++)
		n_par += g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE;
	tmp = calloc((size_t)n_par + 1, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	n_par = 0;
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE) {
			rc = st_new(t,
				    t->sh.states
					    ? colloc__shard_bytes(&g->tensors[i], t->sh.n)
					    : colloc_tensor_bytes(&g->tensors[i]),
				    COLLOC_MEM_TEMPORARY, -1,
				    "optimizer foreach temporary", &tmp[n_par++]);
			if (rc) {
				free(tmp);
				return rc;
			}
		}
	for (int k = 0; k < n_par; k++)
		st_free(t, tmp[k]);
	free(tmp);
	return 0;
}

/*
 * What the data-parallel runtime allocates when it wraps the model, held
 * for the whole run (enum colloc_parallel): DDP's buckets (the first of
 * 1 MiB, then bucket_cap_mb = 25 MiB each), ZeRO's reduce bucket, or
 * ZeRO-3 / FSDP's gathered units (two units' parameters, one unit's
 * gradients; the caching allocator keeps their blocks between layers).
 */
static int parallel_buffers(struct tl *t)
{
	uint64_t left = colloc__parallel_buffer_bytes(t->g, t->opts, t->ext),
		 cap = 1 << 20;
	int s, rc;

	while (left > 0) {
		uint64_t n =
			t->opts->parallel == COLLOC_PAR_DDP && left > cap ? cap : left;

		rc = st_new(t, n, COLLOC_MEM_TEMPORARY, -1,
			    t->opts->parallel == COLLOC_PAR_DDP ? "DDP gradient bucket"
			    : t->opts->parallel <= COLLOC_PAR_ZERO2
				    ? "ZeRO reduce bucket"
				    : "gathered parameters and gradients",
			    &s);
		if (rc)
			return rc;
		if (s >= 0)
			t->st[s].refs = 1 << 30;
		left -= n;
		cap = (uint64_t)25 << 20;
	}
	return 0;
}

int colloc__timeline_run(const struct colloc_graph *g, const struct colloc__top *tops,
			 const struct colloc_estimate_opts *opts,
			 const struct colloc_platform *plat,
			 const struct colloc__estimate_ext *ext, uint64_t stop_at,
			 struct colloc__timeline_result *res)
{
	struct tl t;
	int rc = -ENOMEM, iters = opts->iterations > 0 ? opts->iterations : 3;
	/* micro-batches replayed per step: the first and the last */
	int micro = opts->grad_accum > 1 ? 2 : 1;
	int prev_out = -1, prev_loss = -1, prev_labels = -1, *prev_in = NULL;
	int n_in = g->n_inputs;
	size_t nt = (size_t)g->n_tensors + 1;

	memset(&t, 0, sizeof(t));
	memset(res, 0, sizeof(*res));
	t.g = g;
	t.tops = tops;
	t.opts = opts;
	t.plat = plat;
	t.ext = ext;
	t.cublas[0] = t.cublas[1] = -1;
	t.stop_at = stop_at;
	t.peak_node = -1;
	t.held_shift = -1;
	t.tstor = malloc(nt * sizeof(*t.tstor));
	t.strides = calloc(nt, sizeof(*t.strides));
	t.uses = calloc(nt, sizeof(*t.uses));
	t.req = calloc(nt, sizeof(*t.req));
	t.grad = malloc(nt * sizeof(*t.grad));
	t.pgrad = malloc(nt * sizeof(*t.pgrad));
	t.saved = malloc(((size_t)g->n_nodes + 1) * sizeof(*t.saved));
	t.esz = malloc(nt * sizeof(*t.esz));
	t.wcast = malloc(nt * sizeof(*t.wcast));
	t.psrc = malloc(nt * sizeof(*t.psrc));
	t.ostate = malloc(nt * COLLOC__OPT_MAX_PIECES * sizeof(*t.ostate));
	t.oshared[0] = t.oshared[1] = -1;
	t.amp = opts->precision == COLLOC_PREC_AMP_FP16 ||
		opts->precision == COLLOC_PREC_AMP_BF16;
	colloc__shard_of(opts, &t.sh);
	prev_in = malloc(((size_t)n_in + 1) * sizeof(*prev_in));
	if (!t.tstor || !t.strides || !t.uses || !t.req || !t.grad || !t.pgrad ||
	    !t.saved || !prev_in || !t.ostate || !t.esz || !t.wcast || !t.psrc)
		goto out;
	for (int i = 0; i < g->n_tensors; i++)
		t.psrc[i] = colloc__param_source(g, i);
	t.psrc[g->n_tensors] = -1;
	memset(t.pgrad, 0xff, nt * sizeof(*t.pgrad));
	memset(t.ostate, 0xff, nt * COLLOC__OPT_MAX_PIECES * sizeof(*t.ostate));
	memset(t.wcast, 0xff, nt * sizeof(*t.wcast));
	for (int i = 0; i < g->n_tensors; i++)
		t.esz[i] = (uint8_t)colloc_dtype_size(g->tensors[i].dtype);
	for (int k = 0; k <= g->n_nodes; k++)
		t.saved[k][0] = -1;
	for (int k = 0; k < n_in; k++)
		prev_in[k] = -1;
	if ((rc = seg_setup(&t)) || (rc = colloc_alloc_sim_create(0, &t.sim)))
		goto out;
	compute_uses_and_req(&t);

	/* model.to(cuda): parameters and buffers, in file order. */
	t.phase = COLLOC_PHASE_SETUP;
	t.node = -1;
	memset(t.tstor, 0xff, nt * sizeof(*t.tstor));
	for (int i = 0; i < g->n_tensors; i++) {
		const struct colloc_tensor *x = &g->tensors[i];
		int s;

		if (x->param_class != COLLOC_PARAM_TRAINABLE &&
		    x->param_class != COLLOC_PARAM_BUFFER)
			continue;
		/* ZeRO-3 / FSDP keep a shard of every parameter, frozen
		 * ones too; buffers stay whole */
		rc = st_new(&t,
			    t.sh.params && (x->param_class == COLLOC_PARAM_TRAINABLE ||
					    x->frozen)
				    ? colloc__shard_bytes(x, t.sh.n)
				    : colloc_tensor_bytes(x),
			    COLLOC_MEM_PARAM, -1,
			    x->param_class == COLLOC_PARAM_TRAINABLE ? "parameter"
								     : "buffer",
			    &s);
		if (rc)
			goto out;
		if (s >= 0) {
			t.st[s].refs = 1 << 30; /* held for the whole run */
			t.st[s].tensor = i;
		}
		t.tstor[i] = s;
		contiguous(x, t.strides[i]);
	}
	res->param_bytes = t.kind_bytes[COLLOC_MEM_PARAM];
	if ((rc = parallel_buffers(&t)))
		goto out;
	if (colloc__optim_get(opts->optimizer)->ctor_state && (rc = make_states(&t)))
		goto out; /* Adagrad creates its state in the constructor */

	for (int it = 0; it < iters * micro && !t.stopped; it++) {
		int loss_st = -1, logp_st = -1, shift_st = -1, mb = it % micro;

		t.iter = it / micro;
		t.phase = COLLOC_PHASE_FORWARD;
		t.node = -1;
		/* Forward-pass tensors of the last iteration are gone; reset
		 * the per-tensor maps, keeping parameters. */
		for (int i = 0; i < g->n_tensors; i++) {
			if (g->tensors[i].role != COLLOC_TENSOR_INITIALIZER)
				t.tstor[i] = -1;
			t.grad[i] = -1;
			t.esz[i] = (uint8_t)colloc_dtype_size(g->tensors[i].dtype);
		}
		t.saved_bytes = 0;
		for (int i = 0; i < t.n_st; i++)
			t.st[i].counted = false;
		/* x, y = x.to(cuda), y.to(cuda) */
		for (int k = 0; k < n_in; k++) {
			int in = g->inputs[k], s;

			rc = st_new(&t, colloc_tensor_bytes(&g->tensors[in]),
				    COLLOC_MEM_TEMPORARY, -1, "input", &s);
			if (rc)
				goto out;
			contiguous(&g->tensors[in], t.strides[in]);
			t.tstor[in] = s;
			if (s >= 0)
				t.st[s].refs = t.uses[in] + 1; /* +1: the Python name */
			if (prev_in[k] >= 0) {
				t.st[prev_in[k]].refs--;
				st_release(&t, prev_in[k]);
			}
			prev_in[k] = s;
		}
		if (loss_is_ce(opts->loss) && g->n_outputs > 0) {
			/* labels: int64, one per row of the logits */
			const struct colloc_tensor *y = &g->tensors[g->outputs[0]];
			uint64_t rows =
				colloc_tensor_numel(y) /
				(uint64_t)(y->rank > 0 && y->shape[y->rank - 1] > 0
						   ? y->shape[y->rank - 1]
						   : 1);
			int s;

			rc = st_new(&t, rows * 8, COLLOC_MEM_TEMPORARY, -1, "input", &s);
			if (rc)
				goto out;
			if (s >= 0)
				t.st[s].refs = 1; /* the Python name y */
			st_unref(&t, prev_labels);
			prev_labels = s;
		}
		for (int k = 0; k < g->n_nodes && !t.stopped; k++) {
			if (t.seg_of) {
				int r = t.seg_of[k];

				t.nosave = r >= 0;
				if (r >= 0 && k == ext->seg_first[r] &&
				    (rc = seg_hold(&t, r)))
					goto out;
			}
			if (tops[k].fwd == FWD_SKIP)
				continue;
			rc = run_forward_op(&t, &tops[k]);
			if (rc)
				goto out;
		}
		t.nosave = false;
		/* out = model(x): the new logits replace the old ones. */
		if (g->n_outputs > 0 && t.tstor[g->outputs[0]] >= 0)
			t.st[t.tstor[g->outputs[0]]].refs++;
		if (prev_out >= 0)
			st_unref(&t, prev_out);
		prev_out = g->n_outputs > 0 ? t.tstor[g->outputs[0]] : -1;
		/* Other graph outputs (aux heads) die with the expression. */
		for (int o = 0; o < g->n_outputs; o++)
			st_unref(&t, t.tstor[g->outputs[o]]);
		if (it == 0)
			res->saved_bytes_forward = t.saved_bytes;
		rc = run_loss(&t, &loss_st, &logp_st, &shift_st);
		if (rc)
			goto out;
		if (it == 0)
			res->saved_bytes_with_loss = t.saved_bytes;
		if (prev_loss >= 0)
			st_free(&t, prev_loss);
		prev_loss = loss_st;
		/* Leaving the autocast region empties its weight cache; copies
		 * saved for backward live on until their nodes have run. */
		for (int i = 0; i < g->n_tensors; i++)
			if (t.wcast[i] >= 0) {
				st_unref(&t, t.wcast[i]);
				t.wcast[i] = -1;
			}
		/* opt.zero_grad(set_to_none=True) before the first micro-batch's
		 * backward; set_to_none=False zeroes them in place (no memory
		 * event). */
		t.phase = COLLOC_PHASE_BACKWARD;
		for (int i = 0; i < g->n_tensors && mb == 0 && !opts->keep_grads; i++)
			if (t.pgrad[i] >= 0) {
				st_free(&t, t.pgrad[i]);
				t.pgrad[i] = -1;
			}
		rc = run_loss_backward(&t, logp_st);
		if (rc)
			goto out;
		for (int o = 1; o < g->n_outputs; o++)
			t.grad[g->outputs[o]] = -1;
		for (int k = g->n_nodes - 1; k >= 0 && !t.stopped; k--) {
			int r = t.seg_of ? t.seg_of[k] : -1;

			if (r >= 0 && k == ext->seg_end[r] - 1 &&
			    (rc = seg_recompute(&t, r)))
				goto out;
			if (tops[k].fwd != FWD_SKIP &&
			    (rc = run_backward_op(&t, &tops[k])))
				goto out;
			if (r >= 0 && k == ext->seg_first[r])
				seg_release(&t, r);
		}
		/* Anything still holding a gradient (unused branches) is freed
		 * when backward returns. */
		for (int i = 0; i < g->n_tensors; i++)
			if (t.grad[i] >= 0) {
				st_free(&t, t.grad[i]);
				t.grad[i] = -1;
			}
		if (it == 0)
			res->grad_bytes = t.kind_bytes[COLLOC_MEM_GRAD];
		if (mb < micro - 1)
			continue; /* accumulating: no step yet */
		rc = run_step(&t, t.iter);
		if (rc)
			goto out;
		if (t.iter == 0)
			res->optimizer_bytes = t.kind_bytes[COLLOC_MEM_OPTIMIZER];
	}

	{
		struct colloc_alloc_stats as;

		colloc_alloc_sim_stats(t.sim, &as);
		res->peak_allocated = as.peak_allocated;
		res->peak_reserved = as.peak_reserved;
	}
	res->peak_event = t.peak_event;
	res->peak_iter = t.peak_iter;
	res->peak_phase = t.peak_phase;
	res->peak_node = t.peak_node;
	memcpy(res->peak_kind, t.peak_kind, sizeof(res->peak_kind));
	res->events = t.events;
	if (stop_at) {
		/* Explain pass: list what is alive now (at the peak). */
		for (int i = 0; i < t.n_st; i++) {
			const struct stor *s = &t.st[i];
			int k;

			if (!s->alive || s->handle == COLLOC_ALLOC_NULL)
				continue;
			for (k = res->n_live; k > 0 && res->live[k - 1].bytes < s->bytes;
			     k--)
				if (k < COLLOC_EXPLAIN_MAX)
					res->live[k] = res->live[k - 1];
			if (k >= COLLOC_EXPLAIN_MAX)
				continue;
			res->live[k].bytes = s->bytes;
			res->live[k].kind = s->kind;
			if (s->tensor >= 0) {
				snprintf(res->live[k].what, sizeof(res->live[k].what),
					 "%s %s", s->role, g->tensors[s->tensor].name);
			} else if (s->node >= 0) {
				char where[64];

				colloc_node_describe(g, s->node, where, sizeof(where));
				snprintf(res->live[k].what, sizeof(res->live[k].what),
					 "%s %s", s->role, where);
			} else {
				snprintf(res->live[k].what, sizeof(res->live[k].what),
					 "%s", s->role);
			}
			if (res->n_live < COLLOC_EXPLAIN_MAX)
				res->n_live++;
		}
	}
	rc = 0;
out:
	colloc_alloc_sim_destroy(t.sim);
	free(t.st);
	free(t.tstor);
	free(t.strides);
	free(t.uses);
	free(t.req);
	free(t.grad);
	free(t.pgrad);
	free(t.saved);
	free(t.esz);
	free(t.wcast);
	free(t.psrc);
	free(t.ostate);
	free(t.seg_of);
	free(t.hold);
	free(t.hold_at);
	free(t.hold_n);
	free(prev_in);
	return rc;
}
