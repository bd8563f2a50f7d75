/*
 * cmd_estimate.c — `colloc estimate MODEL`: peak GPU memory of training.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/estimate.h"
#include "colloc/cost.h"
#include "colloc/model.h"
#include "colloc/perf.h"
#include "colloc/units.h"
#include "colloc/zoo.h"

static const char estimate_usage[] =
	"usage: colloc estimate MODEL --batch N [--dim NAME=VALUE]... [options]\n"
	"       colloc estimate MODEL --max-batch --gpu-memory SIZE [options]\n"
	"       colloc estimate --list-platforms\n"
	"\n"
	"Predict, for training MODEL (an .onnx file, a zoo name, or hf:CONFIG, a\n"
	"Hugging Face config.json, its directory or a bundled one's name such as\n"
	"hf:gpt2; `colloc inspect --list`) with PyTorch,\n"
	"the peak GPU memory (what the caching allocator has allocated and\n"
	"reserved at its worst moment, and what NVML shows for the process:\n"
	"reserved + CUDA context and libraries; docs/estimator.md) and one\n"
	"training step's time, GPU utilization (NVML utilization.gpu), SM\n"
	"activity (DCGM 1002) and throughput on the platform's GPU\n"
	"(docs/perf-model.md).\n"
	"\n"
	"options:\n"
	"  --batch N              batch size (leading dim of symbolic inputs)\n"
	"  --dim NAME=VALUE       bind a named dim, e.g. --dim seq=128\n"
	"  --optimizer NAME       sgd|momentum|adam|adamw|rmsprop|adagrad (adam):\n"
	"                         torch.optim's foreach step; adamw-loop: AdamW one\n"
	"                         parameter at a time (transformers' AdamW);\n"
	"                         adafactor: transformers' Adafactor (Trainer\n"
	"                         optim=\"adafactor\"); adam8bit|adamw8bit:\n"
	"                         bitsandbytes' 8-bit states (docs/estimator.md)\n"
	"  --quant-block N        adam8bit|adamw8bit: elements per quantization\n"
	"                         block (256; bitsandbytes < 0.44: 2048)\n"
	"  --precision NAME       fp32|tf32|amp-fp16|amp-bf16|bf16|fp16 (fp32); amp-*\n"
	"                         model torch.autocast (see docs/estimator.md), and\n"
	"                         amp-fp16's step the GradScaler of PyTorch's recipe;\n"
	"                         tf32 = fp32 with allow_tf32 matmuls (same memory);\n"
	"                         bf16|fp16: weights stored in half precision, no\n"
	"                         autocast (hf: models only)\n"
	"  --seq N                bind every sequence dim of MODEL to N, checked\n"
	"                         against its position limit\n"
	"  --trainable WHAT       all|none|lora (all): which parameters train;\n"
	"                         lora adds adapters (hf: models only, see\n"
	"                         docs/transformers.md)\n"
	"  --lora-rank R          LoRA rank (8)\n"
	"  --lora-alpha A         LoRA alpha (2R; scaling only, no memory effect)\n"
	"  --lora-targets LIST    modules with adapters (q_proj,v_proj; gpt2: c_attn)\n"
	"  --architecture CLASS   hf: models: the transformers class to build, e.g.\n"
	"                         BertForSequenceClassification (the config's\n"
	"                         architectures; docs/transformers.md)\n"
	"  --num-labels N         classification heads: labels (the config's, or 2)\n"
	"  --freeze PATTERNS      freeze parameters whose names contain one of the\n"
	"                         comma-separated patterns (ONNX and hf: models)\n";
static const char estimate_usage_1b[] =
	"  --gradient-checkpointing  hf: models: torch.utils.checkpoint around each\n"
	"                         layer (use_reentrant=False): layer inputs kept,\n"
	"                         the rest recomputed in backward\n"
	"  --attention KIND       hf: models: eager|sdpa|flash (eager: the attention\n"
	"                         matrix is saved; sdpa/flash: one fused kernel, not\n"
	"                         saved; transformers' own default is sdpa for most\n"
	"                         families, eager the larger estimate)\n"
	"  --loss NAME            "
	"cross-entropy|causal-lm|causal-lm-loop|causal-lm-copy|\n"
	"                         mse|none (cross-entropy; hf: decoders causal-lm).\n"
	"                         causal-lm: Hugging Face's next-token loss since\n"
	"                         transformers 4.49, labels shifted, logits not copied;\n"
	"                         causal-lm-loop: the shift written in the loop,\n"
	"                         logits = out[:, :-1].contiguous(), held by that\n"
	"                         name until the next step's; causal-lm-copy: that\n"
	"                         copy made inside forward and dropped when it\n"
	"                         returns (transformers before 4.49)\n"
	"  --platform NAME        profile from data/platforms/ (default: built-in,\n"
	"                         an A100-40GB for the step time)\n"
	"  --data-loader-ms MS    main-thread time per step waiting for data (0)\n"
	"  --host-op-us US        host cost per forward op: Python, dispatcher,\n"
	"                         launch (default in docs/perf-model.md)\n"
	"  --input-on-gpu         the batch is already on the GPU (no copy)\n"
	"  --context-bytes SIZE   override the profile's CUDA context size\n"
	"  --gpu-memory SIZE      say whether the job fits, with the headroom\n"
	"                         (default with --max-batch: the profile's GPU)\n"
	"  --max-batch            print the largest batch that fits\n";
/* the rest (one literal would pass C99's 4095-character minimum) */
static const char estimate_usage_2[] =
	"  --max-seq              print the longest sequence that fits at --batch N,\n"
	"                         up to the model's position limit\n"
	"  --parallel MODE        ddp|zero1|zero2|zero3|fsdp: data-parallel training,\n"
	"                         estimated for one GPU: ZeRO-1 shards optimizer\n"
	"                         states, ZeRO-2 also gradients, ZeRO-3/FSDP also\n"
	"                         parameters (+ gathered layers); DDP adds its\n"
	"                         gradient buckets (docs/transformers.md)\n"
	"  --gpus N               GPUs the model is sharded over (1)\n"
	"  --calibrate RUNS.csv   fit --platform's context_bytes to your measured\n"
	"                         runs and print the new profile (--out FILE\n"
	"                         writes it); RUNS.csv: model,batch,peak_bytes\n"
	"                         [,optimizer,precision,loss,attention,dims,seq,\n"
	"                         error]; the\n"
	"                         CSV of tools/measure_gpu.py is read as it is\n"
	"                         (docs/estimator.md)\n"
	"  --context-subtracted   with --calibrate: the peaks exclude the CUDA\n"
	"                         context (a baseline was subtracted)\n"
	"  --safety point|bound   what --gpu-memory and --max-batch test: the point\n"
	"                         estimate (default) or its upper bound, which adds\n"
	"                         cuDNN's workspace choice and one segment of\n"
	"                         allocator fragmentation (docs/estimator.md)\n"
	"  --iterations N         training iterations (optimizer steps) to replay (3)\n"
	"  --keep-grads           opt.zero_grad(set_to_none=False), PyTorch < 2.0's\n"
	"                         default: gradients zeroed in place stay allocated,\n"
	"                         so backward runs with all of them (default: freed,\n"
	"                         PyTorch 2's set_to_none=True)\n"
	"  --grad-accum N         gradient accumulation: N micro-batches of --batch\n"
	"                         per optimizer step; from the second on, backward\n"
	"                         runs with every gradient allocated (1)\n"
	"  --explain              list the largest tensors alive at the peak and\n"
	"                         the ops that take most of the step's GPU time\n"
	"  --json                 print one JSON object\n"
	"  --list-platforms       list the bundled platform profiles\n"
	"  -h, --help             this help\n"
	"\n"
	"SIZE accepts units: 12GiB, 450MiB, 8e9.\n"
	"exit status: 0 success (with --gpu-memory: also when it does not fit;\n"
	"see \"fits\"), 1 the model could not be estimated, 2 invalid command line.\n";

struct est_args {
	struct cli_dims dims;
	struct colloc_model_opts model_opts;
	struct colloc_estimate_opts opts;
	struct colloc_perf_opts perf;
	struct colloc_platform plat;
	struct cli_train train; /* the training options given (train_args.c) */
	bool have_plat, json, explain, max_batch, max_seq;
};

void cli_perf_json(cJSON *r, const struct colloc_perf *p, const char *error, bool explain)
{
	cJSON *b;

	if (error) {
		cJSON_AddNullToObject(r, "step_time_ms");
		cJSON_AddNullToObject(r, "gpu_util");
		cJSON_AddNullToObject(r, "sm_activity");
		cJSON_AddNullToObject(r, "throughput_samples_per_s");
		cJSON_AddStringToObject(r, "perf_error", error);
		return;
	}
	cJSON_AddNumberToObject(r, "step_time_ms", p->step_ms);
	cJSON_AddNumberToObject(r, "step_time_lo_ms", p->step_lo_ms);
	cJSON_AddNumberToObject(r, "step_time_hi_ms", p->step_hi_ms);
	cJSON_AddNumberToObject(r, "gpu_util", p->gpu_util);
	cJSON_AddNumberToObject(r, "gpu_util_lo", p->gpu_util_lo);
	cJSON_AddNumberToObject(r, "gpu_util_hi", p->gpu_util_hi);
	cJSON_AddNumberToObject(r, "sm_activity", p->sm_activity);
	cJSON_AddNumberToObject(r, "sm_activity_lo", p->sm_activity_lo);
	cJSON_AddNumberToObject(r, "sm_activity_hi", p->sm_activity_hi);
	cJSON_AddNumberToObject(r, "throughput_samples_per_s",
				p->throughput_samples_per_s);
	b = cJSON_AddObjectToObject(r, "step_breakdown");
	cJSON_AddNumberToObject(b, "forward_ms", p->phase_ms[COLLOC_PERF_FORWARD]);
	cJSON_AddNumberToObject(b, "backward_ms", p->phase_ms[COLLOC_PERF_BACKWARD]);
	cJSON_AddNumberToObject(b, "optimizer_ms", p->phase_ms[COLLOC_PERF_OPTIMIZER]);
	cJSON_AddNumberToObject(b, "compute_bound_ms", p->compute_bound_ms);
	cJSON_AddNumberToObject(b, "memory_bound_ms", p->memory_bound_ms);
	cJSON_AddNumberToObject(b, "kernel_fixed_ms", p->fixed_ms);
	cJSON_AddNumberToObject(b, "kernel_ms", p->kernel_ms);
	cJSON_AddNumberToObject(b, "input_copy_ms", p->copy_ms);
	cJSON_AddNumberToObject(b, "host_ms", p->host_ms);
	cJSON_AddNumberToObject(b, "gpu_idle_ms", p->idle_ms);
	cJSON_AddNumberToObject(b, "kernels", p->kernels);
	cJSON_AddBoolToObject(b, "host_bound", p->host_bound);
	if (explain) {
		cJSON *x = cJSON_AddArrayToObject(r, "explain_step");

		for (int k = 0; k < p->n_top; k++) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "what", p->top[k].what);
			cJSON_AddStringToObject(o, "class",
						colloc_perf_class_name(p->top[k].cls));
			cJSON_AddNumberToObject(o, "gpu_ms", p->top[k].gpu_ms);
			cJSON_AddNumberToObject(o, "share", p->top[k].share);
			cJSON_AddItemToArray(x, o);
		}
	}
}

void cli_perf_print(const struct colloc_perf *p, const char *error, bool explain)
{
	if (error) {
		printf("step time       not predicted: %s\n", error);
		return;
	}
	printf("step time       %.3g ms  (%.3g..%.3g; forward %.3g, backward %.3g, "
	       "optimizer %.3g ms of GPU time)\n",
	       p->step_ms, p->step_lo_ms, p->step_hi_ms, p->phase_ms[COLLOC_PERF_FORWARD],
	       p->phase_ms[COLLOC_PERF_BACKWARD], p->phase_ms[COLLOC_PERF_OPTIMIZER]);
	printf("                %d kernels: %.3g ms compute-bound, %.3g ms memory-bound, "
	       "%.3g ms fixed latency; host %.3g ms%s\n",
	       p->kernels, p->compute_bound_ms, p->memory_bound_ms, p->fixed_ms,
	       p->host_ms,
	       p->host_bound ? " (host-bound: the GPU waits for the host)" : "");
	printf("gpu util        %.0f%%  (%.0f..%.0f; NVML utilization.gpu)\n",
	       100 * p->gpu_util, 100 * p->gpu_util_lo, 100 * p->gpu_util_hi);
	printf("sm activity     %.0f%%  (%.0f..%.0f; DCGM SM activity)\n",
	       100 * p->sm_activity, 100 * p->sm_activity_lo, 100 * p->sm_activity_hi);
	printf("throughput      %.4g samples/s\n", p->throughput_samples_per_s);
	if (explain && p->n_top) {
		printf("ops taking most of the step's GPU time:\n");
		for (int k = 0; k < p->n_top; k++)
			printf("  %8.3g ms %5.1f%%  %-7s %s\n", p->top[k].gpu_ms,
			       100 * p->top[k].share,
			       colloc_perf_class_name(p->top[k].cls), p->top[k].what);
	}
}

int cli_perf_at(struct colloc_graph *g, int64_t batch,
		const struct colloc_estimate_opts *eo, struct colloc_perf_opts *po,
		struct colloc_perf *out, struct colloc_diag *diag)
{
	po->precision = eo->precision;
	po->optimizer = eo->optimizer;
	po->loss = eo->loss;
	po->batch = batch;
	po->platform = eo->platform;
	colloc_graph_cost(g, NULL);
	return colloc_perf_predict(g, po, out, diag);
}

/* Graphs built from a configuration, and graphs whose parameters the
 * options changed, say what was built; other outputs stay as they were. */
static bool model_described(const struct colloc_model *m, const struct est_args *a)
{
	return m->source == COLLOC_MODEL_HF || m->frozen_params > 0 ||
	       a->train.precision_name || a->model_opts.trainable != COLLOC_TRAIN_ALL ||
	       a->dims.seq > 0;
}

static void model_json(cJSON *r, const struct colloc_model *m, const struct est_args *a)
{
	cJSON *o = cJSON_AddObjectToObject(r, "model_info"), *n;

	if (!o)
		return;
	if (m->family)
		cJSON_AddStringToObject(o, "family", m->family);
	cJSON_AddItemToObject(o, "trainable_params", cli_json_u64(m->trainable_params));
	cJSON_AddItemToObject(o, "frozen_params", cli_json_u64(m->frozen_params));
	cJSON_AddStringToObject(o, "trainable",
				colloc_trainable_name(a->model_opts.trainable));
	if (m->max_seq > 0)
		cJSON_AddItemToObject(o, "max_seq", cli_json_i64(m->max_seq));
	if (a->dims.seq > 0)
		cJSON_AddItemToObject(o, "seq", cli_json_i64(a->dims.seq));
	n = cJSON_AddArrayToObject(o, "changes");
	for (size_t k = 0; n && k < m->n_notes; k++)
		cJSON_AddItemToArray(n, cJSON_CreateString(m->notes[k]));
}

/* what --parallel adds on each GPU; layered: the model's units are its
 * transformer layers (Hugging Face configurations), else the whole model */
static const char *parallel_buffer_what(int par, bool layered)
{
	switch (par) {
	case COLLOC_PAR_DDP:
		return "DDP gradient buckets (a copy of every gradient)";
	case COLLOC_PAR_ZERO1:
	case COLLOC_PAR_ZERO2:
		return "ZeRO reduce bucket (reduce_bucket_size 5e8 elements)";
	case COLLOC_PAR_ZERO3:
	case COLLOC_PAR_FSDP:
		return layered ? "gathered parameters of two units, gradients of "
				 "one (the largest layer)"
			       : "gathered parameters of two units, gradients of "
				 "one (the whole model: no layers known)";
	default:
		return "none";
	}
}

static int print_json(const char *model, int64_t batch, const struct est_args *a,
		      const struct colloc_model *m, const struct colloc_estimate *e,
		      const struct colloc_perf *p, const char *perr)
{
	cJSON *r = cJSON_CreateObject(), *b, *x;
	char *text;

	if (!r)
		return CLI_ERROR;
	cJSON_AddStringToObject(r, "model", model);
	cJSON_AddItemToObject(r, "batch", cli_json_i64(batch));
	cJSON_AddStringToObject(r, "optimizer", colloc_optimizer_name(a->opts.optimizer));
	cJSON_AddStringToObject(r, "precision", cli_train_precision_name(&a->train));
	cJSON_AddStringToObject(r, "loss", colloc_loss_name(a->opts.loss));
	cJSON_AddStringToObject(r, "platform", a->opts.platform->name);
	cJSON_AddItemToObject(r, "peak_allocated_bytes",
			      cli_json_u64(e->peak_allocated_bytes));
	cJSON_AddItemToObject(r, "peak_reserved_bytes",
			      cli_json_u64(e->peak_reserved_bytes));
	cJSON_AddItemToObject(r, "peak_device_bytes", cli_json_u64(e->peak_device_bytes));
	cJSON_AddItemToObject(r, "peak_device_upper_bytes",
			      cli_json_u64(e->peak_device_upper_bytes));
	x = cJSON_AddObjectToObject(r, "upper_bound_parts");
	cJSON_AddItemToObject(x, "conv_workspace_bytes",
			      cli_json_u64(e->conv_workspace_bytes));
	cJSON_AddItemToObject(x, "fragmentation_bytes",
			      cli_json_u64(e->fragmentation_bytes));
	b = cJSON_AddObjectToObject(r, "breakdown");
	cJSON_AddItemToObject(b, "params_bytes", cli_json_u64(e->breakdown.params_bytes));
	cJSON_AddItemToObject(b, "grads_bytes", cli_json_u64(e->breakdown.grads_bytes));
	cJSON_AddItemToObject(b, "optimizer_bytes",
			      cli_json_u64(e->breakdown.optimizer_bytes));
	cJSON_AddItemToObject(b, "activations_bytes",
			      cli_json_u64(e->saved_activation_bytes));
	cJSON_AddItemToObject(b, "loss_saved_bytes", cli_json_u64(e->loss_saved_bytes));
	cJSON_AddItemToObject(b, "activations_live_bytes",
			      cli_json_u64(e->breakdown.activations_bytes));
	cJSON_AddItemToObject(b, "temporaries_bytes",
			      cli_json_u64(e->breakdown.temporaries_bytes));
	cJSON_AddItemToObject(b, "allocator_overhead_bytes",
			      cli_json_u64(e->breakdown.allocator_overhead_bytes));
	cJSON_AddItemToObject(b, "context_bytes",
			      cli_json_u64(e->breakdown.context_bytes));
	/* exact sizes (not rounded by the allocator) of what the training
	 * state holds; with --parallel one GPU's shards */
	x = cJSON_AddObjectToObject(r, "state");
	cJSON_AddItemToObject(x, "param_bytes", cli_json_u64(e->param_bytes));
	cJSON_AddItemToObject(x, "grad_bytes", cli_json_u64(e->grad_bytes));
	cJSON_AddItemToObject(x, "optimizer_state_bytes",
			      cli_json_u64(e->optimizer_state_bytes));
	if (a->opts.optimizer == COLLOC_OPT_ADAM8BIT ||
	    a->opts.optimizer == COLLOC_OPT_ADAMW8BIT)
		cJSON_AddItemToObject(x, "quant_block_elems",
				      cli_json_i64(a->opts.quant_block_elems
							   ? a->opts.quant_block_elems
							   : COLLOC_QUANT_BLOCK_DEFAULT));
	cJSON_AddBoolToObject(r, "keep_grads", a->opts.keep_grads);
	cJSON_AddItemToObject(
		r, "grad_accum",
		cli_json_i64(a->opts.grad_accum > 1 ? a->opts.grad_accum : 1));
	cJSON_AddStringToObject(r, "peak_phase", colloc_phase_name(e->peak_phase));
	cJSON_AddItemToObject(r, "peak_iteration", cli_json_i64(e->peak_iteration));
	cJSON_AddStringToObject(r, "peak_op", e->peak_op);
	if (a->opts.gpu_memory_bytes) {
		cJSON_AddItemToObject(r, "gpu_memory_bytes",
				      cli_json_u64(a->opts.gpu_memory_bytes));
		cJSON_AddStringToObject(r, "safety", colloc_safety_name(a->opts.safety));
		cJSON_AddBoolToObject(r, "fits", e->fits);
		cJSON_AddItemToObject(r, "headroom_bytes",
				      cli_json_i64(e->headroom_bytes));
	}
	if (a->explain) {
		x = cJSON_AddArrayToObject(r, "explain");
		for (int k = 0; k < e->n_explain; k++) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "what", e->explain[k].what);
			cJSON_AddStringToObject(o, "kind",
						colloc_mem_kind_name(e->explain[k].kind));
			cJSON_AddItemToObject(o, "bytes",
					      cli_json_u64(e->explain[k].bytes));
			cJSON_AddItemToArray(x, o);
		}
	}
	if (a->opts.parallel != COLLOC_PAR_NONE) {
		x = cJSON_AddObjectToObject(r, "parallel");
		cJSON_AddStringToObject(x, "mode",
					colloc_parallel_name(a->opts.parallel));
		cJSON_AddItemToObject(x, "gpus",
				      cli_json_i64(a->opts.gpus > 0 ? a->opts.gpus : 1));
		/* one GPU's shards and what the runtime adds on it */
		cJSON_AddItemToObject(x, "param_bytes", cli_json_u64(e->param_bytes));
		cJSON_AddItemToObject(x, "grad_bytes", cli_json_u64(e->grad_bytes));
		cJSON_AddItemToObject(x, "optimizer_state_bytes",
				      cli_json_u64(e->optimizer_state_bytes));
		cJSON_AddItemToObject(x, "buffer_bytes",
				      cli_json_u64(e->parallel_buffer_bytes));
		cJSON_AddStringToObject(
			x, "buffer",
			parallel_buffer_what(a->opts.parallel,
					     m->source == COLLOC_MODEL_HF));
	}
	cJSON_AddItemToObject(r, "allocator_events", cli_json_u64(e->events));
	if (model_described(m, a))
		model_json(r, m, a);
	cli_perf_json(r, p, perr, a->explain);
	text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	if (!text)
		return CLI_ERROR;
	puts(text);
	free(text);
	return CLI_OK;
}

static void line(const char *label, uint64_t bytes)
{
	char b[32];

	printf("  %-24s %12s\n", label, colloc_format_bytes(bytes, b, sizeof(b)));
}

static void print_human(const char *model, int64_t batch, const struct est_args *a,
			const struct colloc_model *m, const struct colloc_estimate *e,
			const struct colloc_perf *p, const char *perr)
{
	char b1[32], b2[32], b3[32];

	printf("model %s, batch %lld, %s, %s, loss %s, platform %s\n", model,
	       (long long)batch, colloc_optimizer_name(a->opts.optimizer),
	       cli_train_precision_name(&a->train), colloc_loss_name(a->opts.loss),
	       a->opts.platform->name);
	if (a->opts.keep_grads || a->opts.grad_accum > 1) {
		printf("gradients       %s",
		       a->opts.keep_grads ? "zeroed in place (set_to_none=False)"
					  : "freed at zero_grad");
		if (a->opts.grad_accum > 1)
			printf(", accumulated over %d micro-batches", a->opts.grad_accum);
		printf("\n");
	}
	if (model_described(m, a)) {
		printf("parameters      %llu trainable, %llu frozen%s%s\n",
		       (unsigned long long)m->trainable_params,
		       (unsigned long long)m->frozen_params, m->family ? "; " : "",
		       m->family ? m->family : "");
		for (size_t k = 0; k < m->n_notes; k++)
			printf("                %s\n", m->notes[k]);
	}
	printf("peak allocated  %s\n",
	       colloc_format_bytes(e->peak_allocated_bytes, b1, sizeof(b1)));
	printf("peak reserved   %s\n",
	       colloc_format_bytes(e->peak_reserved_bytes, b1, sizeof(b1)));
	printf("peak device     %s  (reserved + %s CUDA context and libraries)\n",
	       colloc_format_bytes(e->peak_device_bytes, b1, sizeof(b1)),
	       colloc_format_bytes(e->breakdown.context_bytes, b2, sizeof(b2)));
	printf("upper bound     %s  (+ %s cuDNN workspace bound, + %s fragmentation)\n",
	       colloc_format_bytes(e->peak_device_upper_bytes, b1, sizeof(b1)),
	       colloc_format_bytes(e->conv_workspace_bytes, b2, sizeof(b2)),
	       colloc_format_bytes(e->fragmentation_bytes, b3, sizeof(b3)));
	printf("peak at         iteration %d, %s, %s\n", e->peak_iteration + 1,
	       colloc_phase_name(e->peak_phase), e->peak_op);
	printf("alive at the peak:\n");
	line("parameters and buffers", e->breakdown.params_bytes);
	line("gradients", e->breakdown.grads_bytes);
	line("optimizer state", e->breakdown.optimizer_bytes);
	line("saved activations", e->breakdown.activations_bytes);
	line("temporaries", e->breakdown.temporaries_bytes);
	line("allocator overhead", e->breakdown.allocator_overhead_bytes);
	line("context and libraries", e->breakdown.context_bytes);
	printf("saved for backward by one forward pass: %s",
	       colloc_format_bytes(e->saved_activation_bytes, b1, sizeof(b1)));
	printf(", by the loss: %s\n",
	       colloc_format_bytes(e->loss_saved_bytes, b1, sizeof(b1)));
	if (a->opts.parallel != COLLOC_PAR_NONE) {
		char b4[32];

		printf("per GPU (%s, %d GPUs): parameters %s, gradients %s, "
		       "optimizer state %s, + %s %s\n",
		       colloc_parallel_name(a->opts.parallel),
		       a->opts.gpus > 0 ? a->opts.gpus : 1,
		       colloc_format_bytes(e->param_bytes, b1, sizeof(b1)),
		       colloc_format_bytes(e->grad_bytes, b2, sizeof(b2)),
		       colloc_format_bytes(e->optimizer_state_bytes, b3, sizeof(b3)),
		       colloc_format_bytes(e->parallel_buffer_bytes, b4, sizeof(b4)),
		       parallel_buffer_what(a->opts.parallel,
					    m->source == COLLOC_MODEL_HF));
	}
	if (a->opts.gpu_memory_bytes)
		printf("fits in %s (%s): %s (headroom %s%s)\n",
		       colloc_format_bytes(a->opts.gpu_memory_bytes, b1, sizeof(b1)),
		       a->opts.safety == COLLOC_SAFETY_BOUND ? "upper bound"
							     : "point estimate",
		       e->fits ? "yes" : "NO", e->headroom_bytes < 0 ? "-" : "",
		       colloc_format_bytes((uint64_t)(e->headroom_bytes < 0
							      ? -e->headroom_bytes
							      : e->headroom_bytes),
					   b2, sizeof(b2)));
	if (a->explain) {
		printf("largest tensors alive at the peak:\n");
		for (int k = 0; k < e->n_explain; k++)
			printf("  %10s  %-10s %s\n",
			       colloc_format_bytes(e->explain[k].bytes, b1, sizeof(b1)),
			       colloc_mem_kind_name(e->explain[k].kind),
			       e->explain[k].what);
	}
	cli_perf_print(p, perr, a->explain);
}

int cli_platform_load(const char *name, struct colloc_platform *p)
{
	struct colloc_diag diag = {{0}};

	if (!name) {
		colloc_platform_default(p);
		return CLI_OK;
	}
	if (colloc_platform_load(name, p, &diag)) {
		cli_error("%s", diag.msg);
		return CLI_USAGE;
	}
	return CLI_OK;
}

int cli_model_open(const char *model, const struct colloc_model_opts *mo,
		   struct colloc_model **m)
{
	struct colloc_diag diag = {{0}};
	int rc = colloc_model_open(model, mo, m, &diag);

	if (rc) {
		/* only the model options can be a usage error: a bad file (a
		 * directory, ...) is the model's failure, as it always was */
		bool opts = mo &&
			    (mo->trainable || (mo->freeze && mo->freeze[0]) ||
			     mo->weight_dtype || mo->attention ||
			     mo->gradient_checkpointing ||
			     (mo->architecture && mo->architecture[0]) || mo->num_labels);

		cli_error("%s", diag.msg);
		return rc == COLLOC_EUSAGE && opts ? CLI_USAGE : CLI_ERROR;
	}
	return CLI_OK;
}

void cli_model_loss(const struct colloc_model *m, bool named,
		    struct colloc_estimate_opts *o)
{
	if (!named)
		o->loss = m->loss;
}

int cli_estimate_at(struct colloc_model *m, const struct cli_dims *d, int64_t batch,
		    const struct colloc_estimate_opts *opts, struct colloc_estimate *e,
		    struct colloc_diag *diag)
{
	struct colloc_model_dims md = {batch, d->seq, d->dims, d->n_dims, true};

	return colloc_estimate_model(m, &md, opts, e, diag);
}

int cli_estimate_error(const char *model, int rc, const struct colloc_diag *diag)
{
	cli_error("%s: %s", model, diag->msg);
	return rc == COLLOC_EUSAGE || rc == COLLOC_EUNBOUND ? CLI_USAGE : CLI_ERROR;
}

static int list_platforms(void)
{
	char *names[256];
	int n = colloc_platform_list(names, 256);

	if (n < 0) {
		cli_error("cannot list %s/platforms: %s", colloc_data_dir(),
			  colloc_strerror(n));
		return CLI_ERROR;
	}
	for (int k = 0; k < n && k < 256; k++) {
		struct colloc_platform p;
		struct colloc_diag d = {{0}};

		if (colloc_platform_load(names[k], &p, &d) == 0)
			printf("%-28s %s, CUDA %s, PyTorch %s\n", names[k], p.gpu, p.cuda,
			       p.torch);
		else
			printf("%-28s (invalid: %s)\n", names[k], d.msg);
		free(names[k]);
	}
	return CLI_OK;
}

/* --max-seq: the longest sequence that fits at the batch given. */
static int print_max_seq(const char *model, struct colloc_model *m, struct est_args *a)
{
	struct colloc_model_dims md = {a->dims.batch, 0, a->dims.dims, a->dims.n_dims,
				       true};
	struct colloc_diag diag = {{0}};
	struct colloc_estimate e;
	int64_t seq = 0;
	bool capped = false;
	char b1[32], b2[32];
	int rc = colloc_estimate_max_seq(m, &md, &a->opts, &seq, &capped, &e, &diag);

	if (rc)
		return cli_estimate_error(model, rc, &diag);
	if (a->json) {
		cJSON *r = cJSON_CreateObject();
		char *text;

		if (!r)
			return CLI_ERROR;
		cJSON_AddStringToObject(r, "model", model);
		cJSON_AddItemToObject(r, "batch", cli_json_i64(a->dims.batch));
		cJSON_AddItemToObject(r, "max_seq", cli_json_i64(seq));
		if (m->max_seq > 0)
			cJSON_AddItemToObject(r, "position_limit",
					      cli_json_i64(m->max_seq));
		cJSON_AddBoolToObject(r, "limited_by_positions", capped);
		cJSON_AddItemToObject(r, "gpu_memory_bytes",
				      cli_json_u64(a->opts.gpu_memory_bytes));
		cJSON_AddStringToObject(r, "safety", colloc_safety_name(a->opts.safety));
		cJSON_AddItemToObject(r, "peak_device_bytes",
				      cli_json_u64(seq > 0 ? e.peak_device_bytes : 0));
		cJSON_AddItemToObject(
			r, "peak_device_upper_bytes",
			cli_json_u64(seq > 0 ? e.peak_device_upper_bytes : 0));
		text = cJSON_PrintUnformatted(r);
		cJSON_Delete(r);
		if (!text)
			return CLI_ERROR;
		puts(text);
		free(text);
	} else if (seq == 0) {
		printf("%s: not even a sequence of 1 fits in %s at batch %lld\n", model,
		       colloc_format_bytes(a->opts.gpu_memory_bytes, b1, sizeof(b1)),
		       (long long)a->dims.batch);
	} else {
		printf("%s: longest sequence that fits in %s at batch %lld: %lld%s (peak "
		       "device %s)\n",
		       model,
		       colloc_format_bytes(a->opts.gpu_memory_bytes, b1, sizeof(b1)),
		       (long long)a->dims.batch, (long long)seq,
		       capped ? ", the model's position limit" : "",
		       colloc_format_bytes(e.peak_device_bytes, b2, sizeof(b2)));
	}
	return CLI_OK;
}

int cmd_estimate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"dim", required_argument, NULL, 'd'},
		{"optimizer", required_argument, NULL, 'o'},
		{"precision", required_argument, NULL, 'p'},
		{"loss", required_argument, NULL, 'L'},
		{"platform", required_argument, NULL, 'P'},
		{"context-bytes", required_argument, NULL, 'c'},
		{"gpu-memory", required_argument, NULL, 'g'},
		{"iterations", required_argument, NULL, 'i'},
		{"max-batch", no_argument, NULL, 'm'},
		{"safety", required_argument, NULL, 'S'},
		{"calibrate", required_argument, NULL, 'C'},
		{"out", required_argument, NULL, 'O'},
		{"context-subtracted", no_argument, NULL, 'X'},
		{"explain", no_argument, NULL, 'e'},
		{"json", no_argument, NULL, 'j'},
		{"data-loader-ms", required_argument, NULL, 'D'},
		{"host-op-us", required_argument, NULL, 'H'},
		{"input-on-gpu", no_argument, NULL, 'G'},
		{"list-platforms", no_argument, NULL, 'l'},
		{"max-seq", no_argument, NULL, 'Q'},
		{"gpus", required_argument, NULL, 'N'},
		CLI_TRAIN_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct est_args a;
	struct colloc_diag diag = {{0}};
	struct colloc_model *m = NULL;
	struct colloc_graph *g;
	struct colloc_estimate e;
	const char *platform = NULL, *calibrate = NULL, *out_path = NULL;
	bool subtracted = false, have_loss = false;
	uint64_t v;
	int c, rc;

	memset(&a, 0, sizeof(a));
	colloc_estimate_opts_init(&a.opts);
	colloc_perf_opts_init(&a.perf);
	a.train = (struct cli_train){&a.dims, &a.model_opts, &a.opts, 0, NULL};
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cli_parse_batch(optarg, &a.dims))
				return CLI_USAGE;
			break;
		case 'd':
			if (cli_parse_dim(optarg, &a.dims))
				return CLI_USAGE;
			break;
		case 'o':
			if (cli_parse_optimizer(optarg, &a.opts))
				return CLI_USAGE;
			break;
		case 'p':
			if (cli_train_precision(&a.train, optarg))
				return CLI_USAGE;
			break;
		case 'L':
			if (cli_parse_loss(optarg, &a.opts))
				return CLI_USAGE;
			have_loss = true;
			break;
		case 'P':
			platform = optarg;
			break;
		case 'c':
			if (colloc_parse_size(optarg, &v) || v > INT64_MAX) {
				cli_error("--context-bytes: '%s' is not a size", optarg);
				return CLI_USAGE;
			}
			a.opts.context_bytes = (int64_t)v;
			break;
		case 'g':
			if (colloc_parse_size(optarg, &v) || v == 0 || v > INT64_MAX) {
				cli_error("--gpu-memory: '%s' is not a positive size",
					  optarg);
				return CLI_USAGE;
			}
			a.opts.gpu_memory_bytes = v;
			break;
		case 'S':
			if (cli_parse_safety(optarg, &a.opts))
				return CLI_USAGE;
			break;
		case 'C':
			calibrate = optarg;
			break;
		case 'O':
			out_path = optarg;
			break;
		case 'X':
			subtracted = true;
			break;
		case 'i':
			if (colloc_parse_u64(optarg, 100, &v) || v == 0) {
				cli_error("--iterations wants 1..100, not '%s'", optarg);
				return CLI_USAGE;
			}
			a.opts.iterations = (int)v;
			break;
		case 'm':
			a.max_batch = true;
			break;
		case 'Q':
			a.max_seq = true;
			break;
		case 'N':
			if (colloc_parse_u64(optarg, COLLOC_MAX_GPUS, &v) || v == 0) {
				cli_error("--gpus wants 1..%d, not '%s'", COLLOC_MAX_GPUS,
					  optarg);
				return CLI_USAGE;
			}
			a.opts.gpus = (int)v;
			break;
		case 'D':
		case 'H':
			if (cli_parse_nonneg(optarg, c == 'D' ? 1e6 : 1e5,
					     c == 'D' ? &a.perf.dataloader_ms
						      : &a.perf.host_op_us)) {
				cli_error("--%s: '%s' is not a number from 0 to %g",
					  c == 'D' ? "data-loader-ms" : "host-op-us",
					  optarg, c == 'D' ? 1e6 : 1e5);
				return CLI_USAGE;
			}
			if (c == 'H') /* the engine's share scales alike */
				a.perf.host_bwd_op_us =
					a.perf.host_op_us *
					COLLOC_PERF_HOST_BWD_OP_US_DEFAULT /
					COLLOC_PERF_HOST_OP_US_DEFAULT;
			break;
		case 'G':
			a.perf.input_on_host = false;
			break;
		case 'e':
			a.explain = true;
			break;
		case 'j':
			a.json = true;
			break;
		case 'l':
			return list_platforms();
		case 'h':
			fputs(estimate_usage, stdout);
			fputs(estimate_usage_1b, stdout);
			fputs(estimate_usage_2, stdout);
			return CLI_OK;
		default:
			if ((rc = cli_train_option(&a.train, c, optarg)) != 1) {
				if (rc)
					return rc;
				break;
			}
			cli_error("estimate: unknown or incomplete option '%s' (see "
				  "`colloc "
				  "estimate --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (calibrate) {
		if (optind < argc) {
			cli_error("estimate --calibrate takes the models from %s; drop "
				  "'%s'",
				  calibrate, argv[optind]);
			return CLI_USAGE;
		}
		return cli_calibrate(calibrate, platform, out_path, subtracted, &a.opts);
	}
	if (a.opts.gpus > 1 && a.opts.parallel == COLLOC_PAR_NONE) {
		cli_error(
			"estimate: --gpus %d needs --parallel ddp|zero1|zero2|zero3|fsdp "
			"(how the GPUs share the model)",
			a.opts.gpus);
		return CLI_USAGE;
	}
	if (out_path || subtracted) {
		cli_error("estimate: --out and --context-subtracted are for --calibrate");
		return CLI_USAGE;
	}
	if (optind != argc - 1) {
		cli_error(
			optind >= argc
				? "estimate: MODEL is missing (see `colloc estimate "
				  "--help`)"
				: "estimate: exactly one MODEL, got extra argument '%s'",
			optind < argc ? argv[optind + 1] : "");
		return CLI_USAGE;
	}
	if ((rc = cli_platform_load(platform, &a.plat)))
		return rc;
	a.opts.platform = &a.plat;
	if (a.max_batch && a.max_seq) {
		cli_error(
			"estimate: --max-batch and --max-seq search one dimension each: "
			"give --seq N to the first or --batch N to the second");
		return CLI_USAGE;
	}
	/* Both searches fit one GPU: --gpu-memory, else the platform's. */
	if ((a.max_batch || a.max_seq) && !a.opts.gpu_memory_bytes)
		a.opts.gpu_memory_bytes = a.plat.gpu_memory_bytes;
	if ((a.max_batch || a.max_seq) && !a.opts.gpu_memory_bytes) {
		cli_error("%s needs --gpu-memory SIZE (or a --platform with a GPU size)",
			  a.max_seq ? "--max-seq" : "--max-batch");
		return CLI_USAGE;
	}
	if ((rc = cli_model_open(argv[optind], &a.model_opts, &m)))
		return rc;
	g = m->graph;
	cli_model_loss(m, have_loss, &a.opts);
	if (!a.max_batch && !a.dims.batch) {
		/* a graph exported without a dynamic batch axis is estimated at
		 * the batch it was exported at */
		a.dims.batch = colloc_graph_fixed_batch(g);
		if (!a.dims.batch) {
			colloc_model_destroy(m);
			cli_error("estimate: --batch N is required (or --max-batch)%s",
				  a.max_seq ? ": --max-seq searches the sequence at a "
					      "given batch"
					    : "");
			return CLI_USAGE;
		}
	}
	if (a.max_batch && colloc_graph_fixed_batch(g)) {
		cli_error(
			"estimate: %s was exported at a fixed batch of %lld: --max-batch "
			"needs "
			"a graph with a dynamic batch axis (dynamic_axes={\"input\": {0: "
			"\"batch\"}})",
			argv[optind], (long long)colloc_graph_fixed_batch(g));
		colloc_model_destroy(m);
		return CLI_USAGE;
	}
	if (a.max_seq) {
		rc = print_max_seq(argv[optind], m, &a);
		colloc_model_destroy(m);
		return rc;
	}
	if (a.max_batch) {
		struct colloc_model_dims md = {0, a.dims.seq, a.dims.dims, a.dims.n_dims,
					       true};
		int64_t lo = 0;

		rc = colloc_estimate_max_batch(m, &md, &a.opts, &lo, &e, &diag);
		if (rc) {
			colloc_model_destroy(m);
			return cli_estimate_error(argv[optind], rc, &diag);
		}
		if (a.json) {
			char b[32];

			snprintf(b, sizeof(b), "%lld", (long long)lo);
			printf("{\"model\":\"%s\",\"max_batch\":%s,\"gpu_memory_bytes\":%"
			       "llu,"
			       "\"safety\":\"%s\",\"peak_device_bytes\":%llu,"
			       "\"peak_device_upper_bytes\":%llu}\n",
			       argv[optind], b,
			       (unsigned long long)a.opts.gpu_memory_bytes,
			       colloc_safety_name(a.opts.safety),
			       (unsigned long long)(lo > 0 ? e.peak_device_bytes : 0),
			       (unsigned long long)(lo > 0 ? e.peak_device_upper_bytes
							   : 0));
		} else if (lo == 0) {
			char b[32];

			printf("%s: not even batch 1 fits in %s\n", argv[optind],
			       colloc_format_bytes(a.opts.gpu_memory_bytes, b,
						   sizeof(b)));
		} else {
			char b1[32], b2[32];

			printf("%s: largest batch that fits in %s: %lld (peak device "
			       "%s)\n",
			       argv[optind],
			       colloc_format_bytes(a.opts.gpu_memory_bytes, b1,
						   sizeof(b1)),
			       (long long)lo,
			       colloc_format_bytes(e.peak_device_bytes, b2, sizeof(b2)));
		}
		colloc_model_destroy(m);
		return CLI_OK;
	}
	rc = cli_estimate_at(m, &a.dims, a.dims.batch, &a.opts, &e, &diag);
	if (rc) {
		colloc_model_destroy(m);
		return cli_estimate_error(argv[optind], rc, &diag);
	}
	{
		struct colloc_perf p;
		struct colloc_diag pd = {{0}};
		const char *perr = NULL;

		a.perf.precision = a.opts.precision;
		a.perf.optimizer = a.opts.optimizer;
		a.perf.loss = a.opts.loss;
		a.perf.batch = a.dims.batch;
		a.perf.platform = a.opts.platform;
		if (colloc_model_perf_predict(m, &a.perf, &p, &pd))
			perr = pd.msg;
		if (a.json)
			rc = print_json(argv[optind], a.dims.batch, &a, m, &e, &p, perr);
		else
			print_human(argv[optind], a.dims.batch, &a, m, &e, &p, perr),
				rc = CLI_OK;
	}
	colloc_model_destroy(m);
	return rc;
}
