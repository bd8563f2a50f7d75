/*
 * estimate_int.h — internals shared by the estimator's files:
 * patterns.c (decomposed ONNX patterns -> the PyTorch op they came from),
 * train_ops.c (what each op allocates, views and saves), timeline.c (the
 * event replay) and estimate.c (the public entry point).
 */
#ifndef COLLOC_ESTIMATE_INT_H
#define COLLOC_ESTIMATE_INT_H

#include "colloc/allocator.h"
#include "colloc/estimate.h"
#include "colloc/graph.h"
#include "colloc/platform.h"

struct colloc__op;

/* How a node's first output relates to storage in the forward pass. */
enum colloc__fwd {
	FWD_NEW = 0, /* a new contiguous tensor */
	FWD_VIEW, /* a view of input 0 (Reshape may still copy) */
	FWD_INPLACE, /* may run in place on input 0 (ReLU(inplace=True)) */
	FWD_SKIP, /* no tensor op at all (shape arithmetic, absorbed) */
};

/* Bits of what a node saves for backward. */
enum {
	SAVE_IN0 = 1 << 0,
	SAVE_IN1 = 1 << 1,
	SAVE_IN2 = 1 << 2,
	SAVE_OUT0 = 1 << 4,
};

/* A node as PyTorch runs it, after pattern recognition. */
struct colloc__top {
	int node; /* representative graph node (the pattern's last) */
	const struct colloc__op *op; /* the node's op table row (NULL: none) */
	int kind; /* enum colloc__op_kind */
	enum colloc__fwd fwd;
	int in[3]; /* graph tensors read (after fusion), -1 if none */
	int n_in;
	int out; /* graph tensor produced, -1 if none */
	unsigned save; /* SAVE_* bits */
	/* Extra tensors saved for backward beyond inputs and outputs (BN
	 * statistics, max-pool indices, dropout masks, instance norm's
	 * repeated weight), in bytes each. */
	uint64_t extra_saved[3];
	int n_extra;
	/* nn.Linear's bias where the graph adds it after a MatMul (the Add is
	 * absorbed into this top; a Gemm's is in[2]): only autocast reads it,
	 * colloc__amp_input(). -1 if none. */
	int bias;
	bool matmul; /* uses cuBLAS (workspace allocated at first use) */
	bool grad_view; /* backward hands grad_output through as a view */
};

enum colloc__op_kind {
	OPK_OTHER = 0,
	OPK_CONV,
	OPK_LINEAR, /* Gemm, or MatMul (+ Add bias) with a parameter */
	OPK_MATMUL, /* between activations (attention) */
	OPK_BATCHNORM,
	OPK_LAYERNORM, /* LayerNormalization, or the decomposed pattern */
	OPK_GELU, /* erf GELU recognised from Div/Erf/Add/Mul/Mul */
	OPK_SILU, /* x * sigmoid(x) */
	OPK_ACT_RESULT, /* activations whose backward uses the output */
	OPK_ACT_INPUT, /* activations whose backward uses the input */
	OPK_POOL_MAX,
	OPK_POOL_AVG,
	OPK_SOFTMAX,
	OPK_DROPOUT,
	OPK_ADD, /* saves nothing */
	OPK_MUL, /* saves the tensor operands */
	OPK_DIV,
	OPK_EMBEDDING, /* Gather from a parameter */
	OPK_CONCAT,
	OPK_SPLIT, /* views forward, a new buffer backward */
	OPK_SLICE,
	OPK_VIEW,
	OPK_REDUCE,
	OPK_COPY, /* Expand/Tile/Pad/Where...: new tensor, saves none */
	OPK_ATTENTION, /* fused SDPA / flash-attention (q, k, v) */
};

/* Recognise patterns and classify every node of g into tops[0..n), for
 * the torch version of plat (NULL: the default platform's). Returns the
 * count (<= g->n_nodes) or a negative code. */
int colloc__train_ops(const struct colloc_graph *g, int precision,
		      const struct colloc_platform *plat, struct colloc__top *tops,
		      struct colloc_diag *diag);

/* requires_grad of every tensor as autograd sets it: trainable parameters
 * and the float outputs of any node with an input that requires it. req
 * has g->n_tensors entries. */
void colloc__requires_grad(const struct colloc_graph *g, bool *req);

/* Whether tensor t is a trainable parameter, possibly through a
 * Transpose/Cast/Identity chain of parameters (how exporters feed
 * nn.Linear weights). Returns the parameter's tensor index or -1. */
int colloc__param_source(const struct colloc_graph *g, int t);

/*
 * torch.autocast at forward op tp (its CUDA op lists in PyTorch 2.x: the
 * matrix products, convolutions and attention in the half type; softmax,
 * norms and the op table's COLLOC__AMP_FP32 ops in float32; the rest in
 * the widest precision of its tensor inputs, parameters counting except a
 * batch norm's own). Under fp16 (not bf16) autocast softmax reads its half
 * input and writes float32 in one kernel (half_to_float, ATen's
 * SoftMax.cpp), so nothing is cast for it. One rule for the memory
 * timeline and the step-time model. esz[] holds every tensor's element size at run time
 * and gets the op's outputs'; present[x] < 0 says tensor x has no storage on the device
 * (a folded constant), which is never cast. cast[k], for input k:
 *  - 0: read as it is;
 *  - 2 or 4: a copy in that element size, made for this op alone;
 *  - COLLOC__AMP_WCACHE: parameter psrc[tp->in[k]] in half precision,
 *    the autocast cache's one copy per forward pass.
 */
/*
 * The loss's precision (cross-entropy and the causal-LM losses, on logits
 * of element size logits_esz): *upcast, log_softmax runs in float32 on
 * half logits -- autocast's fp32_set_opt_dtype, and Hugging Face's
 * ForCausalLMLoss calling logits.float() itself, autocast or not;
 * *copies, that float32 conversion is a copy of its own, with the
 * gradient converted back -- logits.float(), and log_softmax's
 * input.toType(float) under bf16 autocast, but not under fp16 autocast,
 * where CUDA's log_softmax reads half and writes float32 in one kernel and
 * its backward writes the half gradient (half_to_float, ATen's
 * SoftMax.cpp). One rule for the memory timeline and the step-time model.
 */
void colloc__loss_precision(int loss, int precision, int logits_esz, bool is_float,
			    bool *upcast, bool *copies);

#define COLLOC__AMP_WCACHE 0x80
/* The tensor in autocast's input slot k (0..2) of tp: in[k], and for a
 * MatMul + Add linear its bias in slot 2. */
int colloc__amp_input(const struct colloc__top *tp, int k);
void colloc__amp_op(const struct colloc_graph *g, const struct colloc__top *tp, bool fp16,
		    const int *psrc, const int *present, uint8_t *esz, uint8_t cast[3]);

/*
 * What colloc_estimate_run() is not told through the public options
 * (colloc/estimate.h) and the front door (model.c) knows from the model it
 * built: which regions of the graph are checkpointed. Zero-initialised =
 * none.
 */
struct colloc__estimate_ext {
	/* torch.utils.checkpoint regions (one per decoder layer): graph nodes
	 * [seg_first[i], seg_end[i]), disjoint and in node order. Their
	 * forward saves nothing but their inputs; backward recomputes each
	 * region's forward (saving as usual) just before its gradients. */
	int n_segs;
	const int *seg_first, *seg_end;
	/* ZeRO-3 / FSDP: the parameters (all) and the trainable ones of the
	 * largest unit the runtime gathers (a transformer layer); 0 = the
	 * whole model is one unit. */
	uint64_t unit_param_bytes, unit_trainable_bytes;
};

/* What opts->parallel shards, for gpus (>= 1) GPUs. */
struct colloc__shard {
	uint64_t n; /* 1: nothing sharded */
	bool params, grads, states;
};
void colloc__shard_of(const struct colloc_estimate_opts *opts, struct colloc__shard *s);

/* One GPU's part of tensor t under s (ceil(numel / n) elements). */
uint64_t colloc__shard_bytes(const struct colloc_tensor *t, uint64_t n);

/* The bytes opts->parallel adds on each GPU for g (enum colloc_parallel),
 * with ext's unit sizes (ext may be NULL). */
uint64_t colloc__parallel_buffer_bytes(const struct colloc_graph *g,
				       const struct colloc_estimate_opts *opts,
				       const struct colloc__estimate_ext *ext);

/* colloc_estimate_run() with the extensions above (ext may be NULL). */
int colloc__estimate_run_ext(const struct colloc_graph *g,
			     const struct colloc_estimate_opts *opts,
			     const struct colloc__estimate_ext *ext,
			     struct colloc_estimate *out, struct colloc_diag *diag);

/* --- optim.c: the optimizers (one table for the replay, the exact sizes and
 * the step time; docs/estimator.md) ------------------------------------------ */

/* How an optimizer steps. */
enum colloc__step_kind {
	STEP_FOREACH = 0, /* torch.optim's _multi_tensor_*: each list op over
			   * all parameters at once */
	STEP_LOOP, /* one parameter after the other */
};

struct colloc__optim {
	const char *name; /* as --optimizer reads it */
	int step; /* enum colloc__step_kind */
	/* foreach: parameter-sized states (created at the first step, or in
	 * the constructor with ctor_state) and parameter-sized temporaries
	 * of one step (_foreach_sqrt of a state) */
	int state_factor, temp_factor;
	bool ctor_state;
	/* ZeRO / FSDP's flat shards keep the state's layout (elementwise
	 * states); false: the sharded modes are refused */
	bool shardable;
	/* foreach: passes over the parameters (tensor lists read, written) */
	const int (*passes)[2];
	int n_passes;
};

/* The table row of optimizer opt (enum colloc_optimizer), NULL if none. */
const struct colloc__optim *colloc__optim_get(int opt);

/* Foreach optimizers' state per parameter, in parameter sizes (GPU tensors
 * only: Adam's and Adagrad's scalar `step` live on the CPU unless
 * capturable); 0 for the loop optimizers (colloc__optim_states). */
int colloc__optimizer_state_factor(int optimizer);

/* What a loop optimizer keeps for one parameter, in creation order. */
#define COLLOC__OPT_MAX_PIECES 4
struct colloc__optstate {
	uint64_t bytes[COLLOC__OPT_MAX_PIECES];
	int n;
	int renew; /* the piece replaced at every step (OPT_RENEW), or 0 when
		    * none (piece 0 is never one) */
	bool shared; /* needs the optimizer's shared buffers
		      * (colloc__optim_shared) */
};

/* Fill st with loop optimizer opt's state for parameter p, sharded over
 * shards (1: whole), 8-bit blocks of block elements (0: the default).
 * Returns st->n (0 for foreach optimizers). */
int colloc__optim_states(int opt, const struct colloc_tensor *p, uint64_t shards,
			 uint64_t block, struct colloc__optstate *st);

/* Buffers the whole optimizer keeps once (bitsandbytes' two quantization
 * maps), created with the first parameter whose state needs them: their
 * bytes into bytes[0..2); returns the count. */
int colloc__optim_shared(int opt, uint64_t *bytes);

/* Exact GPU state bytes of a loop optimizer over g's trainable parameters. */
uint64_t colloc__optim_state_bytes(const struct colloc_graph *g, int opt, uint64_t shards,
				   uint64_t block);

/* One allocator event of a loop optimizer's update of one parameter. */
enum colloc__optop {
	OPT_NEW = 0, /* allocate bytes into slot; the slot's previous storage
		      * (a Python name rebound) is freed after */
	OPT_FREE, /* free the slot's storage (none: nothing) */
	OPT_STATES, /* the first step creates the parameter's state here */
	OPT_RENEW, /* the renew piece: created at the first step, replaced
		    * (new, then old freed) at the others */
};

#define COLLOC__OPT_SLOTS 8
#define COLLOC__OPT_MAX_EVENTS 40
struct colloc__optev {
	uint8_t op; /* enum colloc__optop */
	uint8_t slot; /* < COLLOC__OPT_SLOTS; slots outlive the parameter,
		       * as Python names outlive a loop iteration */
	uint64_t bytes;
};

/* Loop optimizer opt's update of parameter p (sharded over shards) into
 * ev[0..COLLOC__OPT_MAX_EVENTS); returns the count (0 for foreach ones). */
int colloc__optim_script(int opt, const struct colloc_tensor *p, uint64_t shards,
			 struct colloc__optev *ev);

/* The kernels of a loop optimizer's update of p, for the step time. */
#define COLLOC__OPT_MAX_KERNELS 32
struct colloc__optkern {
	double elems, bytes;
};
int colloc__optim_kernels(int opt, const struct colloc_tensor *p,
			  struct colloc__optkern *kv);

#endif
