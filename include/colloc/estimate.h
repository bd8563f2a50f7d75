/*
 * colloc/estimate.h — peak GPU memory of a training job, from its graph.
 *
 * The estimator replays what PyTorch does over a few training iterations:
 * it turns the forward graph into the allocation and free events of the
 * forward pass (outputs, what autograd saves for backward, views that
 * allocate nothing), the loss, the backward pass (gradient buffers freed as
 * soon as they are used, parameter gradients kept until zero_grad), and the
 * optimizer step (states created at the first step, foreach temporaries,
 * or one parameter's temporaries at a time for the loop optimizers),
 * then runs those events through the caching-allocator model
 * (colloc/allocator.h) and adds the platform's fixed costs (CUDA context,
 * library workspaces; colloc/platform.h). docs/estimator.md lists every rule
 * with the PyTorch behaviour it mirrors.
 *
 * Ownership: colloc_estimate_run() reads the graph (which must have been
 * inferred with colloc_graph_infer() at the batch of interest) and fills a
 * caller-owned struct colloc_estimate; nothing is retained.
 */
#ifndef COLLOC_ESTIMATE_H
#define COLLOC_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/graph.h"
#include "colloc/platform.h"

enum colloc_optimizer {
	COLLOC_OPT_SGD = 0, /* torch.optim.SGD, no momentum: no state */
	COLLOC_OPT_MOMENTUM, /* SGD with momentum: 1 buffer per parameter */
	COLLOC_OPT_ADAM, /* exp_avg + exp_avg_sq */
	COLLOC_OPT_ADAMW,
	COLLOC_OPT_RMSPROP, /* square_avg (no momentum, not centered) */
	COLLOC_OPT_ADAGRAD, /* sum, created in the constructor */
	/* Optimizers that step one parameter at a time (docs/estimator.md):
	 * transformers' AdamW (exp_avg + exp_avg_sq; one sqrt temporary of
	 * one parameter, not of all); */
	COLLOC_OPT_ADAMW_LOOP,
	/* transformers' Adafactor as the Trainer's optim="adafactor" makes
	 * it (beta1 None): a row and a column vector of float32 per matrix,
	 * a full float32 vector per 1-D parameter, a 0-dim RMS; */
	COLLOC_OPT_ADAFACTOR,
	/* bitsandbytes' Adam8bit / AdamW8bit: uint8 state1 and state2 with a
	 * float32 absmax per block (opts.quant_block_elems) each; float32
	 * states for parameters under 4096 elements (min_8bit_size). */
	COLLOC_OPT_ADAM8BIT,
	COLLOC_OPT_ADAMW8BIT,
	COLLOC_OPT_COUNT_
};

enum colloc_precision {
	COLLOC_PREC_FP32 = 0,
	COLLOC_PREC_AMP_FP16, /* torch.autocast fp16 + GradScaler */
	COLLOC_PREC_AMP_BF16, /* torch.autocast bf16 */
	COLLOC_PREC_TF32, /* fp32 tensors, matmuls on TF32 tensor cores
			   * (allow_tf32): fp32's memory, faster matmuls */
	COLLOC_PREC_COUNT_
};

enum colloc_loss {
	COLLOC_LOSS_CROSS_ENTROPY = 0,
	COLLOC_LOSS_MSE,
	COLLOC_LOSS_NONE, /* the graph's first output is the loss already */
	/* Hugging Face's next-token loss since transformers 4.49
	 * (ForCausalLMLoss): the labels are shifted (padded with -100), the
	 * logits are not copied; logits.float() upcasts half logits, autocast
	 * or not */
	COLLOC_LOSS_CAUSAL_LM,
	/* the logits shifted in the training loop
	 * (logits = out[:, :-1].contiguous(); loss = crit(logits, y)): the
	 * shifted copy is held by its name until the next iteration's */
	COLLOC_LOSS_CAUSAL_LM_LOOP,
	/* the same shift inside the model's forward, the copy dropped when it
	 * returns: transformers before 4.49 (logits[..., :-1, :].contiguous())
	 * and models that write their loss that way */
	COLLOC_LOSS_CAUSAL_LM_COPY,
	COLLOC_LOSS_COUNT_
};
/* Does the loss copy the logits shifted by one (causal-lm-loop,
 * causal-lm-copy)? */
bool colloc_loss_shifts(int loss);

/*
 * Data-parallel training on several GPUs (colloc_estimate_opts.parallel,
 * with .gpus), estimated for one GPU. What each GPU holds of the model
 * state, with N GPUs (docs/transformers.md has the rules and sources):
 *  - ddp: everything, plus the gradient buckets: DistributedDataParallel
 *    (gradient_as_bucket_view=False, its default) all-reduces flat bucket
 *    tensors that hold a copy of every gradient (bucket_cap_mb 25, the
 *    first bucket 1 MiB), allocated when the model is wrapped;
 *  - zero1 (DeepSpeed ZeRO stage 1): optimizer states / N, plus one
 *    reduce bucket (reduce_bucket_size, 5e8 elements, or the trainable
 *    count when smaller);
 *  - zero2: gradients / N too, and the same reduce bucket;
 *  - zero3, fsdp (FULL_SHARD, one unit per transformer layer): parameters
 *    / N too, plus the unsharded parameters of two units (the one
 *    computing and the next all-gathered ahead of it) and the unsharded
 *    gradients of one (before its reduce-scatter), of the largest layer
 *    for Hugging Face configurations; other graphs are one unit, the
 *    whole model (FSDP without a wrap policy gathers the root module
 *    whole), gathered once with its gradients.
 * Each tensor is sharded as ceil(numel / N) elements. Activations do not
 * change (the batch is per GPU).
 */
enum colloc_parallel {
	COLLOC_PAR_NONE = 0, /* one GPU */
	COLLOC_PAR_DDP,
	COLLOC_PAR_ZERO1,
	COLLOC_PAR_ZERO2,
	COLLOC_PAR_ZERO3,
	COLLOC_PAR_FSDP,
	COLLOC_PAR_COUNT_
};
const char *colloc_parallel_name(int par); /* "none", "ddp", "zero1", ... */
int colloc_parallel_parse(const char *s); /* -1 if unknown */
#define COLLOC_MAX_GPUS 65536

enum colloc_phase {
	COLLOC_PHASE_SETUP = 0, /* model.to(cuda), optimizer constructor */
	COLLOC_PHASE_FORWARD,
	COLLOC_PHASE_LOSS,
	COLLOC_PHASE_BACKWARD,
	COLLOC_PHASE_OPTIMIZER,
};

/* Names for printing and parsing ("adam", "amp-fp16", "backward", ...). */
const char *colloc_optimizer_name(int opt);
const char *colloc_precision_name(int prec);
const char *colloc_loss_name(int loss);
const char *colloc_phase_name(int phase);
/* Parse a name; returns the enum value or -1. */
int colloc_optimizer_parse(const char *s);
int colloc_precision_parse(const char *s);
int colloc_loss_parse(const char *s);

struct colloc_estimate_opts {
	int optimizer; /* enum colloc_optimizer, default adam */
	int precision; /* enum colloc_precision, default fp32 */
	int loss; /* enum colloc_loss, default cross-entropy */
	int iterations; /* training iterations to replay; 0 = 3 */
	/* Platform fixed costs; NULL = the built-in default profile. */
	const struct colloc_platform *platform;
	/* Override of the platform's context_bytes; < 0 = keep. */
	int64_t context_bytes;
	/* Leave the profile's cuda_context_bytes out of peak_device_bytes:
	 * for comparing with measurements that subtract the context (a
	 * baseline taken after CUDA initialised). */
	bool exclude_cuda_context;
	/* Device memory to test the fit against; 0 = none. */
	uint64_t gpu_memory_bytes;
	/* Which peak `fits` and `headroom_bytes` test (enum colloc_safety). */
	int safety;
	/* Data parallelism (enum colloc_parallel) over gpus GPUs (0 or 1 =
	 * one; at most COLLOC_MAX_GPUS): the estimate is one GPU's. */
	int parallel;
	int gpus;
	/* 8-bit optimizers (adam8bit, adamw8bit): elements per quantization
	 * block, each keeping a float32 absmax per state. 0 = 256,
	 * bitsandbytes' block since 0.44.0 (2048 before). At most 2^30. */
	int quant_block_elems;
	/* opt.zero_grad(set_to_none=False), the default of PyTorch before 2.0
	 * (and of Module.zero_grad there): gradients are zeroed in place, stay
	 * allocated from the first backward on, and backward adds into them.
	 * false: set_to_none=True, PyTorch 2's default, which frees them. */
	bool keep_grads;
	/* Gradient accumulation: micro-batches per optimizer step (0 or 1 =
	 * none; at most COLLOC_GRAD_ACCUM_MAX). zero_grad runs before the
	 * first one's backward, step after the last one's; the batch is one
	 * micro-batch's. From the second micro-batch on, backward runs with
	 * every gradient allocated. */
	int grad_accum;
};
#define COLLOC_QUANT_BLOCK_DEFAULT 256
#define COLLOC_GRAD_ACCUM_MAX 65536

/* What a memory decision trusts: the point estimate, or its upper bound
 * (peak_device_upper_bytes, which adds what the point estimate cannot
 * know: cuDNN's workspace choice and allocator fragmentation). */
enum colloc_safety { COLLOC_SAFETY_POINT = 0, COLLOC_SAFETY_BOUND, COLLOC_SAFETY_COUNT_ };
const char *colloc_safety_name(int safety);
int colloc_safety_parse(const char *name); /* -1 if unknown */

/* Fill opts with the defaults above. */
void colloc_estimate_opts_init(struct colloc_estimate_opts *opts);

/* What was alive at the peak, by kind (bytes, rounded as allocated). */
struct colloc_breakdown {
	uint64_t params_bytes;
	uint64_t grads_bytes;
	uint64_t optimizer_bytes;
	uint64_t activations_bytes; /* saved for backward, live at the peak */
	uint64_t temporaries_bytes; /* everything else allocated: outputs in
				     * flight, gradient buffers, workspaces,
				     * inputs, loss */
	uint64_t allocator_overhead_bytes; /* reserved - allocated */
	uint64_t context_bytes; /* CUDA context and libraries: the profile's
				 * context_bytes + cuda_context_bytes */
};

#define COLLOC_EXPLAIN_MAX 16

/* One tensor alive at the peak, for --explain. */
struct colloc_live_tensor {
	char what[96]; /* "saved input of node 12 (/layer1/Conv)" */
	uint64_t bytes; /* rounded block size */
	int kind; /* enum colloc_mem_kind */
};

enum colloc_mem_kind {
	COLLOC_MEM_PARAM = 0,
	COLLOC_MEM_GRAD,
	COLLOC_MEM_OPTIMIZER,
	COLLOC_MEM_ACTIVATION,
	COLLOC_MEM_TEMPORARY,
	COLLOC_MEM_KIND_COUNT_
};
const char *colloc_mem_kind_name(int kind);

struct colloc_estimate {
	uint64_t peak_allocated_bytes; /* torch.cuda.max_memory_allocated */
	uint64_t peak_reserved_bytes; /* torch.cuda.max_memory_reserved */
	uint64_t peak_device_bytes; /* what NVML shows for the process */
	/*
	 * Upper bound on peak_device_bytes: the point estimate plus
	 *  - conv_workspace_bytes: cuDNN's convolution workspace, which the
	 *    point estimate takes from the profile (0 when unmeasured) but
	 *    which depends on the algorithm cuDNN picks for each shape; its
	 *    transform-based algorithms (FFT, Winograd, im2col GEMM) work on a
	 *    transformed copy of one operand, so the bound is the largest
	 *    convolution operand (0 without convolutions);
	 *  - fragmentation_bytes: a request the caching allocator cannot serve
	 *    from its free blocks opens a new segment, so the bound allows one
	 *    more block of the largest tensor the step allocates.
	 * benchmarks measure how often a real run exceeds it.
	 */
	uint64_t peak_device_upper_bytes;
	uint64_t conv_workspace_bytes, fragmentation_bytes;
	struct colloc_breakdown breakdown; /* at the peak of allocated */

	/* Bytes autograd saves for backward in one forward pass (unique
	 * storages; parameters and the model input excluded). */
	uint64_t saved_activation_bytes;
	/* ... and beside them, what the loss saves: the cross-entropy losses
	 * log_softmax's result and nll_loss's total_weight, mse_loss the
	 * model's output (the target is data; 0 for none). */
	uint64_t loss_saved_bytes;
	/* Exact sizes of trainable parameters, their gradients and the
	 * optimizer's GPU state (not rounded by the allocator). */
	uint64_t param_bytes, grad_bytes, optimizer_state_bytes;
	/* With opts.parallel: these three are one GPU's shards, and
	 * parallel_buffer_bytes what the data-parallel runtime adds on it
	 * (DDP buckets, ZeRO reduce bucket, gathered units; see
	 * enum colloc_parallel). */
	uint64_t parallel_buffer_bytes;

	/* When the allocated peak happens. */
	int peak_iteration; /* 0-based */
	int peak_phase; /* enum colloc_phase */
	int peak_node; /* graph node index, -1 if none */
	char peak_op[96]; /* "node 57 (/layer4/Add, Add)" or "optimizer step" */

	/* Largest tensors alive at the peak, largest first. */
	int n_explain;
	struct colloc_live_tensor explain[COLLOC_EXPLAIN_MAX];

	/* Fit against opts.gpu_memory_bytes (when given). */
	bool fits;
	int64_t headroom_bytes; /* gpu memory - peak_device, or - the upper
				 * bound under COLLOC_SAFETY_BOUND (may be < 0) */

	uint64_t events; /* allocator events replayed */
};

/*
 * Estimate the training memory of inferred graph g under opts. Returns 0,
 * or a negative code with a message (unsupported op for training, graph
 * not inferred, ...).
 */
int colloc_estimate_run(const struct colloc_graph *g,
			const struct colloc_estimate_opts *opts,
			struct colloc_estimate *out, struct colloc_diag *diag);

#endif
