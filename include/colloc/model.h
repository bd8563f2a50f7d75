/*
 * colloc/model.h — libcolloc's front door: a model by name, its default
 * dimensions, and its training estimate in one place.
 *
 * A MODEL is what a user types after `colloc estimate`: a zoo name
 * ("resnet50"), a path to an ONNX file, or a Hugging Face configuration
 * ("hf:PATH/config.json", or "hf:DIR" holding one; colloc/hf.h).
 * colloc_model_open() resolves it, loads or builds its graph (the same IR
 * either way: colloc/graph.h), and says which of the graph's symbolic
 * dimensions are sequence lengths, which default values they take (from the
 * zoo's JSON facts, data/zoo/NAME.json, or from the configuration) and how
 * long a sequence the model can read (its position limit). The CLI, the
 * simulator, collocd's client path and the benchmarks all come in here, so
 * that one model gives one figure everywhere.
 *
 * It is not a second estimator: colloc_estimate_model() binds the dims,
 * runs shape inference (colloc/shape.h) and colloc_estimate_run()
 * (colloc/estimate.h) on the model's graph, exactly as a caller assembling
 * the chain by hand would.
 *
 * Ownership: colloc_model_open() allocates a struct colloc_model that the
 * caller releases with colloc_model_destroy(); the model owns its graph and
 * every string it points to. Estimating re-infers the graph in place, so a
 * model must not be estimated from two threads at once.
 */
#ifndef COLLOC_MODEL_H
#define COLLOC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/estimate.h"
#include "colloc/graph.h"
#include "colloc/shape.h"

/* Where a model came from. */
enum colloc_model_source {
	COLLOC_MODEL_ONNX = 0, /* a path to an .onnx file */
	COLLOC_MODEL_ZOO, /* a bundled graph, data/zoo/NAME.onnx (+ NAME.json) */
	COLLOC_MODEL_HF, /* built from a Hugging Face config.json */
};

/* Symbolic dims a model declares (sequence axes, defaults); more is an
 * error on open. */
#define COLLOC_MODEL_MAX_DIMS 8
/* Comma-separated module names a LoRA adapter attaches to. */
#define COLLOC_MODEL_TARGETS_MAX 256

/* Which parameters train (PyTorch's requires_grad). */
enum colloc_trainable {
	COLLOC_TRAIN_ALL = 0, /* every parameter (the default) */
	COLLOC_TRAIN_NONE, /* every parameter frozen: a forward/backward
			    * through the activations only */
	COLLOC_TRAIN_LORA, /* base weights frozen, LoRA adapters train
			    * (Hugging Face configurations only) */
	COLLOC_TRAIN_COUNT_
};
const char *colloc_trainable_name(int t); /* "all", "none", "lora" */
int colloc_trainable_parse(const char *s); /* -1 if unknown */

/* How attention is computed (Hugging Face configurations only). */
enum colloc_attention {
	COLLOC_ATTN_EAGER = 0, /* softmax(QK^T)V as separate ops: the
				* probability matrix is saved for backward */
	COLLOC_ATTN_SDPA, /* scaled_dot_product_attention (a memory-efficient
			   * or flash kernel): saves Q, K, V, the output and
			   * the per-row log-sum-exp, never the matrix */
	COLLOC_ATTN_FLASH, /* flash-attention 2: as sdpa */
	COLLOC_ATTN_COUNT_
};
const char *colloc_attention_name(int a);
int colloc_attention_parse(const char *s);

/* What to build or change when opening. Zero-initialised = defaults. */
struct colloc_model_opts {
	int trainable; /* enum colloc_trainable */
	/* Freeze every parameter whose name contains one of these
	 * comma-separated substrings ("embed,layers.0."); NULL = none. For
	 * ONNX graphs the names are the initializers' (state_dict keys). */
	const char *freeze;
	/* LoRA (trainable == COLLOC_TRAIN_LORA): rank r (0 = 8), alpha
	 * (scaling only: no memory effect; 0 = 2r), target modules
	 * (comma-separated, NULL = the family's attention query and value
	 * projections, as peft's defaults). */
	int lora_rank;
	double lora_alpha;
	const char *lora_targets;
	/* Weights stored in this dtype (COLLOC_DT_BFLOAT16, _FLOAT16) rather
	 * than float32: a model loaded with torch_dtype=... and trained
	 * without autocast. 0 = float32. Hugging Face configurations only. */
	int weight_dtype;
	int attention; /* enum colloc_attention */
	/* Recompute each transformer block in backward
	 * (model.gradient_checkpointing_enable()). */
	bool gradient_checkpointing;
	/* Hugging Face configurations: the transformers class to build
	 * ("BertForSequenceClassification", what AutoModelFor...() would
	 * pick), instead of the first of the configuration's architectures;
	 * NULL = those. docs/transformers.md lists the classes built. */
	const char *architecture;
	/* Classification heads: the number of labels (num_labels=...); 0 =
	 * the configuration's (its id2label, or num_labels), else 2. */
	int num_labels;
};

struct colloc_model {
	const char *name; /* as given to colloc_model_open() */
	const char *path; /* the file read */
	int source; /* enum colloc_model_source */
	struct colloc_graph *graph; /* owned */

	/* Symbolic dims that are sequence lengths (the non-leading dims of
	 * the inputs; for zoo models as data/zoo/NAME.json lists them). */
	size_t n_seq_dims;
	const char *seq_dims[COLLOC_MODEL_MAX_DIMS];
	/* Values a dim takes when the caller gives none. */
	size_t n_defaults;
	struct colloc_binding defaults[COLLOC_MODEL_MAX_DIMS];
	/* Longest sequence the model accepts (positions); 0 = unknown or
	 * unlimited (T5's relative positions). */
	int64_t max_seq;
	/* The loss its training computes (enum colloc_loss) when the caller
	 * names none: for Hugging Face configurations causal-lm (decoders)
	 * or cross-entropy (BERT's masked-LM head, T5's labels, a
	 * classification head; mse for a one-label, regression head); ONNX
	 * and zoo graphs leave it cross-entropy. */
	int loss;

	/* Parameter counts after the options (PyTorch's numel over
	 * parameters() with and without requires_grad). */
	uint64_t trainable_params, frozen_params;

	/* For Hugging Face configurations: "gpt2", "llama", ... and what the
	 * options changed, one line per change ("lora: r=8 on q_proj,v_proj
	 * of 32 layers"). */
	const char *family;
	size_t n_notes;
	const char *notes[16];

	void *priv_;
};

/*
 * Resolve name_or_path (zoo name, ONNX path, or "hf:..."), load or build
 * its graph under opts (NULL = defaults) and fill a new model in *out.
 * Returns 0, or a negative code with the reason in diag: COLLOC_ENOTFOUND
 * for a name or file that does not exist, COLLOC_EUNSUPPORTED for a
 * Hugging Face model_type colloc does not know (naming it and its
 * architectures), COLLOC_EUSAGE for options that do not apply (LoRA on an
 * ONNX graph, a --freeze pattern that matches nothing), or the loader's
 * codes. *out is NULL on failure.
 */
int colloc_model_open(const char *name_or_path, const struct colloc_model_opts *opts,
		      struct colloc_model **out, struct colloc_diag *diag);

/* Release m and its graph. NULL is a no-op. */
void colloc_model_destroy(struct colloc_model *m);

/* The dims of one estimate. */
struct colloc_model_dims {
	int64_t batch; /* leading dim of symbolic inputs; <= 0: leave it to
			* named bindings (or the graph's fixed batch) */
	/* Bind every sequence dim of the model to seq (> 0), checked
	 * against max_seq; 0 = none. Named dims below win over it. */
	int64_t seq;
	const struct colloc_binding *dims;
	size_t n_dims;
	/* Bind the model's defaults for the dims left unbound. */
	bool use_defaults;
};

/*
 * Bind d (seq, named dims, defaults) and infer m's graph. Returns 0 or the
 * shape inference's code; COLLOC_EUSAGE with "seq 2048 exceeds gpt2's
 * position limit of 1024" when seq is too long.
 */
int colloc_model_infer(struct colloc_model *m, const struct colloc_model_dims *d,
		       struct colloc_diag *diag);

/*
 * Infer m at d and estimate training under opts: colloc_model_infer() then
 * colloc_estimate_run(). The graph stays inferred at d for a step-time
 * prediction afterwards.
 */
int colloc_estimate_model(struct colloc_model *m, const struct colloc_model_dims *d,
			  const struct colloc_estimate_opts *opts,
			  struct colloc_estimate *out, struct colloc_diag *diag);

/*
 * The largest batch whose estimate fits opts->gpu_memory_bytes (which must
 * be set) under opts->safety: doubling from 1, then bisecting (peak memory
 * grows with the batch), at most 2^30. *batch is 0 when not even batch 1
 * fits; otherwise *at holds the estimate at *batch and the graph is left
 * inferred there. d->batch is ignored. Returns 0 or the first failing
 * estimate's code; COLLOC_EUSAGE for a graph exported at a fixed batch.
 */
int colloc_estimate_max_batch(struct colloc_model *m, const struct colloc_model_dims *d,
			      const struct colloc_estimate_opts *opts, int64_t *batch,
			      struct colloc_estimate *at, struct colloc_diag *diag);

/*
 * The longest sequence whose estimate at d->batch (which must be set)
 * fits opts->gpu_memory_bytes (which must be set) under opts->safety: every
 * sequence dim of m bound to it (named dims in d win, as in
 * colloc_model_infer()), doubling from 1 and bisecting, up to m's position
 * limit (max_seq) or COLLOC_MODEL_MAX_SEQ when it has none. *seq is 0 when
 * not even 1 fits; otherwise *at holds the estimate at *seq and the graph is
 * left inferred there; *capped says the position limit, not the memory,
 * stopped it. d->seq is ignored. Returns 0 or the first failing estimate's
 * code; COLLOC_EUSAGE for a model without sequence dims.
 */
#define COLLOC_MODEL_MAX_SEQ (1 << 24)
int colloc_estimate_max_seq(struct colloc_model *m, const struct colloc_model_dims *d,
			    const struct colloc_estimate_opts *opts, int64_t *seq,
			    bool *capped, struct colloc_estimate *at,
			    struct colloc_diag *diag);

/*
 * Predict one training step of m at the dims it was last inferred at
 * (colloc_model_infer(), colloc_estimate_model()): colloc_graph_cost() and
 * colloc_perf_predict() on its graph, plus what the options add that the
 * graph cannot show. With gradient checkpointing every layer's forward runs
 * again in backward: its kernel time (the model's forward less the forward
 * of the same model without its layers) is added to the backward, the
 * kernel time and the step (a host-bound step is assumed to issue the
 * recomputation as fast as the GPU runs it), and utilization and
 * throughput follow. Returns 0 or colloc_perf_predict()'s code.
 */
struct colloc_perf;
struct colloc_perf_opts;
int colloc_model_perf_predict(struct colloc_model *m, const struct colloc_perf_opts *po,
			      struct colloc_perf *out, struct colloc_diag *diag);

#endif
