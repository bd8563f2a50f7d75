/*
 * test_hf.c — graphs built from Hugging Face configurations (src/model/hf.c)
 * through the front door (colloc/model.h):
 *  - parameter counts exact against the published counts of the real
 *    models (data/hf/: gpt2 124,439,808; distilgpt2 81,912,576;
 *    Llama-2-7B 6,738,415,616; Llama-3-70B 70,553,706,496; opt-125m
 *    125,239,296; gpt-neo-125m 125,198,592; gpt-j-6b 6,050,882,784;
 *    t5-small 60,506,624; t5-base
 *    222,903,552; t5-v1_1-base 247,577,856; BertModel 109,482,240 and
 *    RobertaModel 124,645,632 from the masked-LM models built) and the LoRA
 *    count peft prints for gpt2 (r 8 on c_attn: 294,912);
 *  - the gpt2 built from its configuration estimates exactly as the zoo's
 *    torch.onnx export of the same model (data/zoo/gpt2.onnx);
 *  - against PyTorch on the CPU (data/reference/hf_cpu.json, written by
 *    tools/hf_reference.py): saved-for-backward bytes within 1% (as CUDA
 *    saves them: bool dropout masks, float32 layer-norm statistics), trainable
 *    and frozen counts, parameter, gradient and Adam state bytes exact, for
 *    every family (gpt2, llama, qwen2, opt, gpt_neo, gptj, bert, roberta,
 *    t5, t5 v1.1) x {full, LoRA} x {fp32, bf16} x {plain, gradient
 *    checkpointing}, with each model's own loss (BERT, T5: cross-entropy);
 *  - --parallel ddp|zero1|zero2|zero3|fsdp shards and buffers by hand;
 *  - --max-seq, and the speed of a 70B estimate (asserted < 50 ms in
 *    optimised builds);
 *  - --attention sdpa|flash worked by hand against eager, and the pure
 *    half-precision weights' tensor-core rate in the step time;
 *  - errors: an unknown model_type named with its architectures, a
 *    sequence past the position limit, LoRA on an ONNX graph, a --freeze
 *    pattern that matches nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colloc/model.h"
#include "colloc/perf.h"
#include "colloc/zoo.h"

#define SAVED_TOLERANCE 0.01

static const char *src_dir(void)
{
	const char *d = getenv("COLLOC_SOURCE_DIR");

	return d && *d ? d : ".";
}

static struct colloc_model *open_hf(const char *rel, const struct colloc_model_opts *o)
{
	struct colloc_model *m = NULL;
	struct colloc_diag diag = {{0}};
	char spec[4096];

	snprintf(spec, sizeof(spec), "hf:%s/%s", src_dir(), rel);
	if (colloc_model_open(spec, o, &m, &diag))
		fail_msg("%s: %s", spec, diag.msg);
	return m;
}

static void published_counts(void **state)
{
	static const struct {
		const char *dir;
		uint64_t params;
	} cases[] = {
		{"data/hf/gpt2", 124439808ull},
		{"data/hf/distilgpt2", 81912576ull},
		{"data/hf/llama-2-7b", 6738415616ull},
		{"data/hf/llama-3-70b", 70553706496ull},
		/* facebook/opt-125m's config.json: embed 50272 x 768, positions
		 * (2048 + 2) x 768, 12 x (4 biased 768 x 768 projections, fc1
		 * 768 x 3072, fc2 3072 x 768, two layer norms), final layer
		 * norm, tied head: what OPTForCausalLM.num_parameters() gives */
		{"data/hf/opt-125m", 125239296ull},
		/* EleutherAI/gpt-neo-125M's config.json: wte 50257 x 768, wpe
		 * 2048 x 768, 12 x (bias-free q/k/v, biased out_proj, c_fc,
		 * c_proj, two layer norms), ln_f, tied head */
		{"data/hf/gpt-neo-125m", 125198592ull},
		/* EleutherAI/gpt-j-6b's config.json: wte 50400 x 4096, 28 x
		 * (ln_1, bias-free q/k/v/out_proj 4096 x 4096, fc_in 4096 x
		 * 16384 + bias, fc_out 16384 x 4096 + bias), ln_f, the untied
		 * lm_head 50400 x 4096 + bias: what GPTJForCausalLM and
		 * tools/hf_reference.py --counts count. The model card's
		 * n_parameters (6,053,381,344) is 2,498,560 more than these
		 * modules hold (data/hf/README.md). */
		{"data/hf/gpt-j-6b", 6050882784ull},
		/* BertForMaskedLM / RobertaForMaskedLM (the checkpoints'
		 * architectures): the encoder without its pooler plus the MLM
		 * head (dense 768 x 768 + bias, LayerNorm, the decoder's bias
		 * [vocab]; its weight tied); base_params below checks the
		 * published BertModel / RobertaModel counts */
		{"data/hf/bert-base-uncased", 109514298ull},
		{"data/hf/roberta-base", 124697433ull},
		{"data/hf/bert-large-uncased", 335174458ull},
		/* T5ForConditionalGeneration: shared embedding, tied head for
		 * t5-small / t5-base, an untied lm_head for v1.1 */
		{"data/hf/t5-small", 60506624ull},
		{"data/hf/t5-base", 222903552ull},
		{"data/hf/t5-v1_1-base", 247577856ull},
	};
	struct colloc_model_opts lora = {0};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct colloc_model *m = open_hf(cases[k].dir, NULL);

		if (m->trainable_params != cases[k].params)
			fail_msg("%s: %llu parameters, published %llu", cases[k].dir,
				 (unsigned long long)m->trainable_params,
				 (unsigned long long)cases[k].params);
		assert_int_equal(m->frozen_params, 0);
		colloc_model_destroy(m);
	}
	/* BertForSequenceClassification on bert-large-uncased (the model of
	 * data/reference/published_finetune.md), 2 labels: the masked-LM
	 * count less the MLM head (dense 1024 x 1024 + 1024, LayerNorm 2048,
	 * the decoder's bias 30522), plus the pooler (1024 x 1024 + 1024)
	 * and the classifier (1024 x 2 + 2); tools/hf_reference.py --counts
	 * counts the same in torch.nn (hf_param_counts.json) */
	{
		struct colloc_model_opts cls = {0};
		struct colloc_model *m;

		cls.architecture = "BertForSequenceClassification";
		m = open_hf("data/hf/bert-large-uncased", &cls);
		assert_int_equal(m->trainable_params, 335143938ull);
		assert_int_equal(m->loss, COLLOC_LOSS_CROSS_ENTROPY);
		colloc_model_destroy(m);
		/* num_labels=5: 3 x (1024 + 1) more; one label regresses */
		cls.num_labels = 5;
		m = open_hf("data/hf/bert-large-uncased", &cls);
		assert_int_equal(m->trainable_params, 335143938ull + 3 * 1025);
		colloc_model_destroy(m);
		cls.num_labels = 1;
		m = open_hf("data/hf/bert-large-uncased", &cls);
		assert_int_equal(m->loss, COLLOC_LOSS_MSE);
		colloc_model_destroy(m);
		/* RobertaForSequenceClassification: no pooler; its head's dense
		 * 768 x 768 + 768 and out_proj 768 x 2 + 2 replace the MLM head
		 * (dense, LayerNorm 1536, bias 50265) */
		cls.num_labels = 0;
		cls.architecture = "RobertaForSequenceClassification";
		m = open_hf("data/hf/roberta-base", &cls);
		assert_int_equal(m->trainable_params, 124697433ull - 1536 - 50265 + 1538);
		colloc_model_destroy(m);
	}
	lora.trainable = COLLOC_TRAIN_LORA;
	{
		struct colloc_model *m = open_hf("data/hf/gpt2", &lora);

		assert_int_equal(m->trainable_params, 294912);
		assert_int_equal(m->frozen_params, 124439808ull);
		colloc_model_destroy(m);
	}
	/* Llama-2-7B, r 8 on q_proj,v_proj: 32 x 2 x 8 x (4096 + 4096) */
	{
		struct colloc_model *m = open_hf("data/hf/llama-2-7b", &lora);

		assert_int_equal(m->trainable_params, 4194304);
		colloc_model_destroy(m);
	}
	/* GPT-J-6B: peft's default q_proj,v_proj, 28 x 2 x 8 x (4096 + 4096);
	 * then every linear layer of a block by GPT-J's module names: 28 x 8
	 * x (4 x (4096 + 4096) + (4096 + 16384) + (16384 + 4096)) */
	{
		struct colloc_model *m = open_hf("data/hf/gpt-j-6b", &lora);

		assert_int_equal(m->trainable_params, 3670016);
		assert_int_equal(m->frozen_params, 6050882784ull);
		colloc_model_destroy(m);
		lora.lora_targets = "q_proj,k_proj,v_proj,out_proj,fc_in,fc_out";
		m = open_hf("data/hf/gpt-j-6b", &lora);
		assert_int_equal(m->trainable_params, 16515072);
		colloc_model_destroy(m);
		lora.lora_targets = NULL;
	}
}

/* Parameters whose names do not start with head (the MLM head). */
static uint64_t params_outside(struct colloc_model *m, const char *head)
{
	const struct colloc_graph *g = m->graph;
	struct colloc_model_dims d = {1, 8, NULL, 0, false};
	struct colloc_diag diag = {{0}};
	uint64_t n = 0;

	/* numel reads the inferred shapes */
	if (colloc_model_infer(m, &d, &diag))
		fail_msg("%s", diag.msg);

	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE &&
		    strncmp(g->tensors[i].name, head, strlen(head)) != 0)
			n += colloc_tensor_numel(&g->tensors[i]);
	return n;
}

/*
 * The published counts of the bare encoders (the model cards' and
 * BertModel.num_parameters(): 109,482,240 for bert-base-uncased,
 * 124,645,632 for roberta-base) are the masked-LM model's without its head,
 * plus the pooler (dense 768 x 768 + bias) the encoder-only class carries.
 * tools/hf_reference.py --counts builds both in torch.nn at full size and
 * counts the same (data/reference/hf_param_counts.json). LoRA on BERT
 * attaches to query and value (peft's default), T5's to q and v of every
 * self- and cross-attention.
 */
static void base_params(void **state)
{
	static const struct {
		const char *dir, *head;
		uint64_t base;
	} cases[] = {
		{"data/hf/bert-base-uncased", "cls.", 109482240ull},
		{"data/hf/roberta-base", "lm_head.", 124645632ull},
	};
	struct colloc_model_opts lora = {0};
	struct colloc_model *m;

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		m = open_hf(cases[k].dir, NULL);
		assert_int_equal(params_outside(m, cases[k].head) + 768 * 768 + 768,
				 cases[k].base);
		assert_int_equal(m->loss, COLLOC_LOSS_CROSS_ENTROPY);
		colloc_model_destroy(m);
	}
	lora.trainable = COLLOC_TRAIN_LORA;
	/* 12 layers x 2 x 8 x (768 + 768) */
	m = open_hf("data/hf/bert-base-uncased", &lora);
	assert_int_equal(m->trainable_params, 12 * 2 * 8 * (768 + 768));
	colloc_model_destroy(m);
	/* t5-small: 6 encoder self-attentions + 6 x 2 decoder attentions,
	 * each q and v: 8 x (512 + 512) */
	m = open_hf("data/hf/t5-small", &lora);
	assert_int_equal(m->trainable_params, 18 * 2 * 8 * (512 + 512));
	assert_int_equal(m->max_seq, 0);
	assert_int_equal(m->n_seq_dims, 2);
	colloc_model_destroy(m);
	/* roberta's positions start after the padding index: 514 - 2 */
	m = open_hf("data/hf/roberta-base", NULL);
	assert_int_equal(m->max_seq, 512);
	colloc_model_destroy(m);
}

/*
 * The models built from a configuration estimate exactly as the zoo's
 * torch.onnx exports of the same models (data/zoo/, plain torch.nn copies
 * exported by tools/export_zoo.py): gpt2, bert-base-uncased (BertForMaskedLM)
 * and t5-small, in float32 (T5's softmax upcast is then a no-op).
 */
static void same_as_zoo_export(void **state)
{
	static const struct {
		const char *hf, *zoo;
		int loss;
	} cases[] = {
		{"data/hf/gpt2", "gpt2", COLLOC_LOSS_CAUSAL_LM},
		{"data/hf/bert-base-uncased", "bert_base", COLLOC_LOSS_CROSS_ENTROPY},
		{"data/hf/t5-small", "t5_small", COLLOC_LOSS_CROSS_ENTROPY},
	};
	struct colloc_binding dec = {"dec_seq", 32};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		/* t5: a decoder of 32 beside the encoder's 64 */
		bool t5 = strcmp(cases[k].zoo, "t5_small") == 0;
		struct colloc_model_dims d = {4, 64, t5 ? &dec : NULL, t5 ? 1 : 0, false};
		struct colloc_model *hf = open_hf(cases[k].hf, NULL), *zoo = NULL;
		struct colloc_diag diag = {{0}};
		struct colloc_estimate_opts o;
		struct colloc_estimate a, b;

		if (colloc_model_open(cases[k].zoo, NULL, &zoo, &diag))
			fail_msg("%s", diag.msg);
		colloc_estimate_opts_init(&o);
		o.loss = cases[k].loss;
		assert_int_equal(hf->loss, cases[k].loss);
		if (colloc_estimate_model(hf, &d, &o, &a, &diag) ||
		    colloc_estimate_model(zoo, &d, &o, &b, &diag))
			fail_msg("%s: %s", cases[k].hf, diag.msg);
		assert_int_equal(a.saved_activation_bytes, b.saved_activation_bytes);
		assert_int_equal(a.param_bytes, b.param_bytes);
		assert_int_equal(a.peak_allocated_bytes, b.peak_allocated_bytes);
		assert_int_equal(a.peak_reserved_bytes, b.peak_reserved_bytes);
		colloc_model_destroy(hf);
		colloc_model_destroy(zoo);
	}
}

static uint64_t num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("reference: \"%s\" missing", key);
	return (uint64_t)v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v))
		fail_msg("reference: \"%s\" missing", key);
	return v->valuestring;
}

/* An optional boolean field (absent = false). */
static bool flag(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static cJSON *load_reference(void)
{
	char path[4096];
	FILE *f;
	char *buf;
	long n;
	cJSON *r;

	snprintf(path, sizeof(path), "%s/data/reference/hf_cpu.json", src_dir());
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	r = cJSON_Parse(buf);
	free(buf);
	assert_non_null(r);
	return r;
}

static void against_pytorch(void **state)
{
	cJSON *ref = load_reference();
	const cJSON *rec;
	int n = 0, bad = 0, bad_loss = 0;

	(void)state;
	cJSON_ArrayForEach(rec, ref)
	{
		struct colloc_model_opts mo = {0};
		struct colloc_model *m;
		struct colloc_platform plat;
		struct colloc_estimate_opts o;
		struct colloc_estimate e;
		struct colloc_diag diag = {{0}};
		struct colloc_model_dims d = {0};
		struct colloc_binding dec;
		const cJSON *adam, *loss;
		uint64_t want, unmodelled;
		double rel;

		mo.trainable = colloc_trainable_parse(str(rec, "trainable"));
		assert_true(mo.trainable >= 0);
		if (strcmp(str(rec, "precision"), "bf16") == 0)
			mo.weight_dtype = COLLOC_DT_BFLOAT16;
		mo.gradient_checkpointing = flag(rec, "gradient_checkpointing");
		m = open_hf(str(rec, "config"), &mo);
		/* rules that changed between torch versions follow the
		 * reference's (mean.dim saves its input before 2.0) */
		colloc_platform_default(&plat);
		snprintf(plat.torch, sizeof(plat.torch), "%s", str(rec, "torch_version"));
		colloc_estimate_opts_init(&o);
		o.platform = &plat;
		/* the model's own loss (BERT, T5: cross-entropy) is the
		 * reference's */
		loss = cJSON_GetObjectItemCaseSensitive(rec, "loss");
		o.loss = m->loss;
		if (cJSON_IsString(loss))
			assert_int_equal(m->loss, colloc_loss_parse(loss->valuestring));
		o.iterations = 2;
		d.batch = (int64_t)num(rec, "batch");
		d.seq = (int64_t)num(rec, "seq");
		if (cJSON_GetObjectItemCaseSensitive(rec, "dec_seq")) {
			dec.name = "dec_seq";
			dec.value = (int64_t)num(rec, "dec_seq");
			d.dims = &dec;
			d.n_dims = 1;
		}
		if (colloc_estimate_model(m, &d, &o, &e, &diag))
			fail_msg("%s: %s", rec->string, diag.msg);
		assert_int_equal(m->trainable_params, num(rec, "trainable_params"));
		assert_int_equal(m->frozen_params, num(rec, "frozen_params"));
		assert_int_equal(e.param_bytes, num(rec, "param_bytes"));
		assert_int_equal(e.grad_bytes, num(rec, "grad_bytes"));
		adam = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(rec, "optimizer_state"), "adam");
		/* `step` scalars live on the CPU in the CUDA implementations */
		assert_int_equal(e.optimizer_state_bytes,
				 num(adam, "bytes") - num(adam, "step_bytes"));
		want = num(rec, "saved_bytes_forward_cuda");
		/* RoBERTa's position ids, [batch, seq] int64 computed from the
		 * input (create_position_ids_from_input_ids) and saved by the
		 * position embedding when it trains (not under LoRA, whose
		 * frozen embedding saves nothing): integer index tensors are shape
		 * arithmetic to the estimator, which does not count them
		 * (docs/transformers.md); the comparison adds them */
		unmodelled = strcmp(m->family, "roberta") == 0 &&
					     mo.trainable == COLLOC_TRAIN_ALL
				     ? (uint64_t)(d.batch * d.seq) * 8
				     : 0;
		rel = fabs((double)(e.saved_activation_bytes + unmodelled) -
			   (double)want) /
		      (double)want;
		if (rel > SAVED_TOLERANCE)
			bad++;
		if (unmodelled)
			print_message(
				"%-22s saved %10llu, PyTorch %10llu (%+.2f%%; "
				"%+.2f%% with the int64 position ids)\n",
				rec->string, (unsigned long long)e.saved_activation_bytes,
				(unsigned long long)want,
				100.0 *
					((double)e.saved_activation_bytes -
					 (double)want) /
					(double)want,
				100.0 *
					((double)(e.saved_activation_bytes + unmodelled) -
					 (double)want) /
					(double)want);
		else
			print_message("%-22s saved %10llu, PyTorch %10llu (%+.2f%%)\n",
				      rec->string,
				      (unsigned long long)e.saved_activation_bytes,
				      (unsigned long long)want,
				      100.0 *
					      ((double)e.saved_activation_bytes -
					       (double)want) /
					      (double)want);
		/* what the loss saves beside them (log_softmax's result:
		 * float32 for causal-lm's logits.float() on half logits) */
		want = num(rec, "saved_bytes_forward_loss") -
		       num(rec, "saved_bytes_forward");
		rel = fabs((double)e.loss_saved_bytes - (double)want) / (double)want;
		if (rel > SAVED_TOLERANCE) {
			print_message("%-22s loss saved %10llu, PyTorch %10llu\n",
				      rec->string, (unsigned long long)e.loss_saved_bytes,
				      (unsigned long long)want);
			bad_loss++;
		}
		colloc_model_destroy(m);
		n++;
	}
	assert_true(n >= 96);
	cJSON_Delete(ref);
	if (bad || bad_loss)
		fail_msg("%d of %d cases saved more than %.0f%% off PyTorch, %d in the "
			 "loss (above)",
			 bad, n, 100 * SAVED_TOLERANCE, bad_loss);
}

/*
 * Gradient checkpointing on gpt2 (12 layers, batch 2, seq 512, SGD): the
 * forward keeps only the layers' inputs (and the ops outside the layers);
 * the peak still holds one recomputed layer beside them; the step runs each
 * layer's forward once more, which costs less than the whole forward.
 */
static void checkpointing(void **state)
{
	struct colloc_model_opts ck = {0};
	struct colloc_model *mf = open_hf("data/hf/gpt2", NULL), *mc;
	struct colloc_model_dims d = {2, 512, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate ef, ec;
	struct colloc_perf_opts po;
	struct colloc_perf pf, pc;
	struct colloc_diag diag = {{0}};
	uint64_t layer;

	(void)state;
	ck.gradient_checkpointing = true;
	mc = open_hf("data/hf/gpt2", &ck);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.optimizer = COLLOC_OPT_SGD;
	if (colloc_estimate_model(mf, &d, &o, &ef, &diag) ||
	    colloc_estimate_model(mc, &d, &o, &ec, &diag))
		fail_msg("%s", diag.msg);
	print_message("saved %llu -> %llu, peak %llu -> %llu\n",
		      (unsigned long long)ef.saved_activation_bytes,
		      (unsigned long long)ec.saved_activation_bytes,
		      (unsigned long long)ef.peak_allocated_bytes,
		      (unsigned long long)ec.peak_allocated_bytes);
	assert_true(ec.saved_activation_bytes * 8 < ef.saved_activation_bytes);
	assert_true(ec.peak_allocated_bytes < ef.peak_allocated_bytes);
	assert_int_equal(ec.param_bytes, ef.param_bytes);
	layer = (ef.saved_activation_bytes - ec.saved_activation_bytes) / 12;
	assert_true(ec.peak_allocated_bytes >=
		    ec.param_bytes + ec.saved_activation_bytes * 9 / 10 + layer);
	colloc_perf_opts_init(&po);
	po.loss = COLLOC_LOSS_CAUSAL_LM;
	po.optimizer = COLLOC_OPT_SGD;
	po.batch = 2;
	if (colloc_model_perf_predict(mf, &po, &pf, &diag) ||
	    colloc_model_perf_predict(mc, &po, &pc, &diag))
		fail_msg("%s", diag.msg);
	print_message("step %.2f -> %.2f ms (forward %.2f ms)\n", pf.step_ms, pc.step_ms,
		      pf.phase_ms[COLLOC_PERF_FORWARD]);
	assert_true(pc.step_ms > pf.step_ms);
	assert_true(pc.kernel_ms - pf.kernel_ms < pf.phase_ms[COLLOC_PERF_FORWARD]);
	assert_true(pc.kernel_ms - pf.kernel_ms > 0.5 * pf.phase_ms[COLLOC_PERF_FORWARD]);
	colloc_model_destroy(mf);
	colloc_model_destroy(mc);
}

/*
 * Pure half-precision weights (--precision bf16: torch_dtype=bfloat16, no
 * autocast) run their matrix products on the tensor cores: gpt2 at batch 8,
 * seq 512 on an A100 (bf16 312 TFLOPS against fp32 19.5) spends far less
 * compute-bound time than in float32, about what autocast's bf16 GEMMs
 * take, and the same bf16 graph at a platform without tensor-core rates
 * falls back to the fp32 rate.
 */
static void half_weights_rate(void **state)
{
	struct colloc_model_opts bf = {0};
	struct colloc_model *mf = open_hf("data/hf/gpt2", NULL), *mb;
	struct colloc_model_dims d = {8, 512, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_perf_opts po;
	struct colloc_perf pf, pb, pa, pn;
	struct colloc_platform a100, plain;
	struct colloc_diag diag = {{0}};

	(void)state;
	bf.weight_dtype = COLLOC_DT_BFLOAT16;
	mb = open_hf("data/hf/gpt2", &bf);
	if (colloc_platform_load("a100-40gb-cu124-torch26", &a100, &diag))
		fail_msg("%s", diag.msg);
	plain = a100;
	plain.tf32_tflops = plain.fp16_tflops = plain.bf16_tflops = 0;
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.platform = &a100;
	colloc_perf_opts_init(&po);
	po.loss = COLLOC_LOSS_CAUSAL_LM;
	po.batch = 8;
	po.platform = &a100;
	if (colloc_estimate_model(mf, &d, &o, &e, &diag) ||
	    colloc_model_perf_predict(mf, &po, &pf, &diag) ||
	    colloc_estimate_model(mb, &d, &o, &e, &diag) ||
	    colloc_model_perf_predict(mb, &po, &pb, &diag))
		fail_msg("%s", diag.msg);
	po.precision = COLLOC_PREC_AMP_BF16;
	if (colloc_model_perf_predict(mf, &po, &pa, &diag))
		fail_msg("%s", diag.msg);
	po.precision = COLLOC_PREC_FP32;
	po.platform = &plain;
	if (colloc_model_perf_predict(mb, &po, &pn, &diag))
		fail_msg("%s", diag.msg);
	print_message("compute-bound: fp32 %.2f ms, bf16 weights %.2f ms, amp-bf16 %.2f "
		      "ms, bf16 without tensor-core rates %.2f ms\n",
		      pf.compute_bound_ms, pb.compute_bound_ms, pa.compute_bound_ms,
		      pn.compute_bound_ms);
	assert_true(pb.compute_bound_ms < 0.25 * pf.compute_bound_ms);
	assert_true(pb.compute_bound_ms < 1.5 * pa.compute_bound_ms);
	assert_true(pn.compute_bound_ms > 0.5 * pf.compute_bound_ms);
	assert_true(pb.step_ms < pf.step_ms);
	colloc_model_destroy(mf);
	colloc_model_destroy(mb);
}

static uint64_t saved_with(const char *cfg, int attention, int precision, int64_t batch,
			   int64_t seq)
{
	struct colloc_model_opts mo = {0};
	struct colloc_model *m;
	struct colloc_model_dims d = {batch, seq, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_diag diag = {{0}};

	mo.attention = attention;
	m = open_hf(cfg, &mo);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.precision = precision;
	if (colloc_estimate_model(m, &d, &o, &e, &diag))
		fail_msg("%s: %s", cfg, diag.msg);
	colloc_model_destroy(m);
	return e.saved_activation_bytes;
}

/*
 * --attention, worked by hand on the tiny configurations (2 layers, 4
 * heads, head_dim 16; llama: 2 key/value heads), batch 3, seq 50:
 *  - llama, float32: eager saves the [3, 4, 50, 50] float32 probabilities
 *    per layer (softmax's result, read again by the second bmm); SDPA (the
 *    memory-efficient kernel for float32) saves instead a float32
 *    log-sum-exp [3, 4, 64] (50 rows padded to 32s); q, k, v and the
 *    output are saved by both (eager: by the two bmm and o_proj);
 *  - llama, flash: k and v are read with their 2 heads, so the repeat_kv
 *    copies [3, 4, 50, 16] of k and v are not saved; the rope'd k and
 *    v_proj's output [3, 2, 50, 16] are;
 *  - gpt2 (attn_pdrop 0.1), float32: eager's probabilities, their bool
 *    dropout mask and the dropped-out probabilities go, the log-sum-exp
 *    comes; its q, k, v copies for bmm become the views of c_attn's output
 *    (the same bytes);
 *  - under autocast (the flash kernel) the log-sum-exp is not padded, and
 *    eager saves softmax's float32 result and its half copy for the bmm.
 */
static void attention_kinds(void **state)
{
	const uint64_t b = 3, h = 4, t = 50, hd = 16, kvh = 2, layers = 2;
	const uint64_t probs = b * h * t * t * 4, lse_pad = b * h * 64 * 4,
		       lse = b * h * t * 4;
	uint64_t eager, sdpa, flash;

	(void)state;
	eager = saved_with("tests/data/hf/llama_tiny.json", COLLOC_ATTN_EAGER,
			   COLLOC_PREC_FP32, 3, 50);
	sdpa = saved_with("tests/data/hf/llama_tiny.json", COLLOC_ATTN_SDPA,
			  COLLOC_PREC_FP32, 3, 50);
	flash = saved_with("tests/data/hf/llama_tiny.json", COLLOC_ATTN_FLASH,
			   COLLOC_PREC_FP32, 3, 50);
	print_message("llama_tiny saved: eager %llu, sdpa %llu, flash %llu\n",
		      (unsigned long long)eager, (unsigned long long)sdpa,
		      (unsigned long long)flash);
	assert_int_equal(eager - sdpa, layers * (probs - lse_pad));
	/* flash: 2 repeat copies [b, h, t, hd] out, rope'd k and the v view
	 * [b, kvh, t, hd] in */
	assert_int_equal(sdpa - flash, layers * 2 * b * (h - kvh) * t * hd * 4);

	eager = saved_with("tests/data/hf/gpt2_tiny.json", COLLOC_ATTN_EAGER,
			   COLLOC_PREC_FP32, 3, 50);
	sdpa = saved_with("tests/data/hf/gpt2_tiny.json", COLLOC_ATTN_SDPA,
			  COLLOC_PREC_FP32, 3, 50);
	print_message("gpt2_tiny saved: eager %llu, sdpa %llu\n",
		      (unsigned long long)eager, (unsigned long long)sdpa);
	assert_int_equal(eager - sdpa, layers * (probs + probs / 4 + probs - lse_pad));

	/* autocast (the flash kernel): the log-sum-exp unpadded; eager saves
	 * softmax's float32 result and the half copy the second bmm reads */
	eager = saved_with("tests/data/hf/llama_tiny.json", COLLOC_ATTN_EAGER,
			   COLLOC_PREC_AMP_BF16, 3, 50);
	sdpa = saved_with("tests/data/hf/llama_tiny.json", COLLOC_ATTN_SDPA,
			  COLLOC_PREC_AMP_BF16, 3, 50);
	print_message("llama_tiny amp-bf16 saved: eager %llu, sdpa %llu\n",
		      (unsigned long long)eager, (unsigned long long)sdpa);
	assert_int_equal(eager - sdpa, layers * (probs + probs / 2 - lse));
}

/*
 * The fused kernels' step time: gpt2 at batch 8, seq 1024 under autocast
 * on an A100 never writes the [8, 12, 1024, 1024] score and probability
 * matrices, so sdpa's forward is shorter than eager's, and its kernels
 * fewer (one per layer instead of matmul, div, where, softmax, dropout,
 * matmul).
 */
static void attention_step_time(void **state)
{
	struct colloc_model_opts mo = {0};
	struct colloc_model *me = open_hf("data/hf/gpt2", NULL), *ms;
	struct colloc_model_dims d = {8, 1024, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_perf_opts po;
	struct colloc_perf pe, ps;
	struct colloc_platform a100;
	struct colloc_diag diag = {{0}};

	(void)state;
	mo.attention = COLLOC_ATTN_SDPA;
	ms = open_hf("data/hf/gpt2", &mo);
	if (colloc_platform_load("a100-40gb-cu124-torch26", &a100, &diag))
		fail_msg("%s", diag.msg);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.precision = COLLOC_PREC_AMP_BF16;
	o.platform = &a100;
	colloc_perf_opts_init(&po);
	po.loss = COLLOC_LOSS_CAUSAL_LM;
	po.precision = COLLOC_PREC_AMP_BF16;
	po.batch = 8;
	po.platform = &a100;
	if (colloc_estimate_model(me, &d, &o, &e, &diag) ||
	    colloc_model_perf_predict(me, &po, &pe, &diag) ||
	    colloc_estimate_model(ms, &d, &o, &e, &diag) ||
	    colloc_model_perf_predict(ms, &po, &ps, &diag))
		fail_msg("%s", diag.msg);
	print_message("gpt2 step: eager %.1f ms (forward %.1f, %d kernels), sdpa %.1f ms "
		      "(forward %.1f, %d kernels)\n",
		      pe.step_ms, pe.phase_ms[COLLOC_PERF_FORWARD], pe.kernels,
		      ps.step_ms, ps.phase_ms[COLLOC_PERF_FORWARD], ps.kernels);
	assert_true(ps.phase_ms[COLLOC_PERF_FORWARD] < pe.phase_ms[COLLOC_PERF_FORWARD]);
	assert_true(ps.kernels < pe.kernels);
	assert_true(ps.step_ms < pe.step_ms);
	/* still more than the forward's GEMMs alone: the fused kernel costs
	 * its FLOPs (2 x 8 x 12 x 1024 x 1024 x 128 per layer, ~half causal) */
	assert_true(ps.compute_bound_ms > 0);
	colloc_model_destroy(me);
	colloc_model_destroy(ms);
}

static void estimate_parallel(struct colloc_model *m, int par, int gpus,
			      struct colloc_estimate *e)
{
	struct colloc_model_dims d = {1, 16, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_diag diag = {{0}};

	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.parallel = par;
	o.gpus = gpus;
	if (colloc_estimate_model(m, &d, &o, e, &diag))
		fail_msg("%s", diag.msg);
}

/*
 * --parallel on Llama-2-7B over 8 GPUs, fp32, Adam, by hand: P =
 * 6,738,415,616 parameters x 4 bytes (every tensor's size divides by 8, so
 * the shards are exact eighths); a decoder layer (the FSDP unit) is
 * 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 parameters.
 *  - ddp: nothing sharded; the buckets are a second copy of the
 *    gradients, held from the wrapping on, so the peak grows by P at least;
 *  - zero1: Adam's two states / 8; one reduce bucket of 5e8 elements;
 *  - zero2: gradients / 8 too;
 *  - zero3 and fsdp: parameters / 8 too, plus two layers' parameters and
 *    one layer's gradients gathered; the optimizer step's peak is then
 *    within P / 32 of the shards, the gathered layers and Adam's foreach
 *    temporary.
 */
static void parallel_shards(void **state)
{
	const uint64_t p = 6738415616ull * 4, layer = 202383360ull * 4;
	struct colloc_model *m = open_hf("data/hf/llama-2-7b", NULL);
	struct colloc_estimate one, e;

	(void)state;
	estimate_parallel(m, COLLOC_PAR_NONE, 1, &one);
	assert_int_equal(one.param_bytes, p);
	assert_int_equal(one.optimizer_state_bytes, 2 * p);
	assert_int_equal(one.parallel_buffer_bytes, 0);

	estimate_parallel(m, COLLOC_PAR_DDP, 8, &e);
	assert_int_equal(e.param_bytes, p);
	assert_int_equal(e.grad_bytes, p);
	assert_int_equal(e.optimizer_state_bytes, 2 * p);
	assert_int_equal(e.parallel_buffer_bytes, p);
	assert_true(e.peak_allocated_bytes >= one.peak_allocated_bytes + p);

	estimate_parallel(m, COLLOC_PAR_ZERO1, 8, &e);
	assert_int_equal(e.param_bytes, p);
	assert_int_equal(e.grad_bytes, p);
	assert_int_equal(e.optimizer_state_bytes, 2 * p / 8);
	assert_int_equal(e.parallel_buffer_bytes, 500000000ull * 4);
	assert_true(e.peak_allocated_bytes < one.peak_allocated_bytes);

	estimate_parallel(m, COLLOC_PAR_ZERO2, 8, &e);
	assert_int_equal(e.grad_bytes, p / 8);
	assert_int_equal(e.optimizer_state_bytes, 2 * p / 8);

	for (int par = COLLOC_PAR_ZERO3; par <= COLLOC_PAR_FSDP; par++) {
		estimate_parallel(m, par, 8, &e);
		assert_int_equal(e.param_bytes, p / 8);
		assert_int_equal(e.grad_bytes, p / 8);
		assert_int_equal(e.optimizer_state_bytes, 2 * p / 8);
		assert_int_equal(e.parallel_buffer_bytes, 3 * layer);
		/* the peak is the optimizer step: the model state (4 P / 8),
		 * the gathered units, and Adam's foreach temporary (one
		 * parameter-sized list, of the shards: P / 8) */
		assert_true(e.peak_allocated_bytes >= 5 * p / 8 + 3 * layer);
		assert_true(e.peak_allocated_bytes < 5 * p / 8 + 3 * layer + p / 32);
	}
	/* a graph without known layers is one unit: resnet18's 11,689,512
	 * parameters gathered once, with their gradients */
	{
		struct colloc_model *cnn = NULL;
		struct colloc_model_dims d = {2, 0, NULL, 0, false};
		struct colloc_estimate_opts o;
		struct colloc_estimate ec;
		struct colloc_diag diag = {{0}};

		colloc_estimate_opts_init(&o);
		o.parallel = COLLOC_PAR_FSDP;
		o.gpus = 4;
		if (colloc_model_open("resnet18", NULL, &cnn, &diag) ||
		    colloc_estimate_model(cnn, &d, &o, &ec, &diag))
			fail_msg("%s", diag.msg);
		assert_int_equal(ec.parallel_buffer_bytes, 2 * 11689512ull * 4);
		colloc_model_destroy(cnn);
	}
	print_message("llama-2-7b peak allocated: 1 GPU %.1f GiB, zero3 x 8 %.1f GiB\n",
		      one.peak_allocated_bytes / 1073741824.0,
		      e.peak_allocated_bytes / 1073741824.0);
	colloc_model_destroy(m);
}

/*
 * --max-seq: gpt2 at batch 8 on a 16 GiB GPU: the sequence found fits and
 * one more token does not; on 80 GiB the position limit (1024) stops the
 * search; a CNN has no sequence to search.
 */
static void max_seq(void **state)
{
	struct colloc_model *m = open_hf("data/hf/gpt2", NULL), *cnn = NULL;
	struct colloc_model_dims d = {8, 0, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_diag diag = {{0}};
	int64_t seq = 0;
	bool capped = true;

	(void)state;
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	o.gpu_memory_bytes = 16ull << 30;
	if (colloc_estimate_max_seq(m, &d, &o, &seq, &capped, &e, &diag))
		fail_msg("%s", diag.msg);
	print_message("gpt2, batch 8, 16 GiB: seq %lld\n", (long long)seq);
	assert_true(seq > 1 && seq < 1024);
	assert_false(capped);
	assert_true(e.fits);
	d.seq = seq + 1;
	if (colloc_estimate_model(m, &d, &o, &e, &diag))
		fail_msg("%s", diag.msg);
	assert_false(e.fits);
	d.seq = 0;
	d.batch = 1;
	o.gpu_memory_bytes = 80ull << 30;
	if (colloc_estimate_max_seq(m, &d, &o, &seq, &capped, &e, &diag))
		fail_msg("%s", diag.msg);
	assert_int_equal(seq, 1024);
	assert_true(capped);
	colloc_model_destroy(m);
	if (colloc_model_open("resnet18", NULL, &cnn, &diag))
		fail_msg("%s", diag.msg);
	assert_int_equal(colloc_estimate_max_seq(cnn, &d, &o, &seq, &capped, &e, &diag),
			 COLLOC_EUSAGE);
	colloc_model_destroy(cnn);
}

/* A sanitizer or an unoptimised build is not what the speed claim is about. */
#if defined(__SANITIZE_ADDRESS__)
#define SPEED_ASSERTED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPEED_ASSERTED 0
#endif
#endif
#ifndef SPEED_ASSERTED
#ifdef __OPTIMIZE__
#define SPEED_ASSERTED 1
#else
#define SPEED_ASSERTED 0
#endif
#endif

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Speed (issue 12): Llama-3-70B (80 layers) at batch 1, seq 4096, opened
 * from its config.json and estimated in-process, under 50 ms in an
 * optimised build. The best of seven runs counts (the test machine is
 * shared); sanitizer and debug builds only print the time.
 */
static void speed_70b(void **state)
{
	struct colloc_model_dims d = {1, 4096, NULL, 0, false};
	double best = 1e9;

	(void)state;
	for (int run = 0; run < 7; run++) {
		struct colloc_estimate_opts o;
		struct colloc_estimate e;
		struct colloc_diag diag = {{0}};
		struct colloc_model *m;
		double t0 = now_ms(), dt;

		m = open_hf("data/hf/llama-3-70b", NULL);
		colloc_estimate_opts_init(&o);
		o.loss = m->loss;
		if (colloc_estimate_model(m, &d, &o, &e, &diag))
			fail_msg("%s", diag.msg);
		dt = now_ms() - t0;
		if (dt < best)
			best = dt;
		colloc_model_destroy(m);
	}
	print_message("llama-3-70b, seq 4096: open + estimate %.1f ms (best of 7)%s\n",
		      best, SPEED_ASSERTED ? "" : ", not asserted in this build");
	if (SPEED_ASSERTED && best >= 50.0)
		fail_msg("llama-3-70b estimate took %.1f ms, more than 50 ms", best);
}

/* Optimizer state bytes of bert_cls_tiny under optimizer opt. */
static uint64_t state_bytes(int opt, int block)
{
	struct colloc_model *m = open_hf("tests/data/hf/bert_cls_tiny.json", NULL);
	struct colloc_model_dims d = {4, 32, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	struct colloc_diag diag = {{0}};

	colloc_estimate_opts_init(&o);
	o.optimizer = opt;
	o.quant_block_elems = block;
	o.iterations = 2;
	if (colloc_estimate_model(m, &d, &o, &e, &diag))
		fail_msg("%s: %s", colloc_optimizer_name(opt), diag.msg);
	colloc_model_destroy(m);
	return e.optimizer_state_bytes;
}

/*
 * The loop optimizers' state, worked by hand on bert_cls_tiny
 * (tests/data/hf/bert_cls_tiny.json: vocab 512, hidden 64, intermediate
 * 256, 2 layers, 64 positions, 2 token types, 3 labels; 41 parameter
 * tensors, 141,443 elements) from the rules of src/estimate/optim.c:
 *  - adamw-loop (transformers' AdamW): exp_avg + exp_avg_sq like each
 *    parameter, 2 x 4 x 141,443 bytes;
 *  - adafactor (transformers' Adafactor, beta1 None): per matrix [out, in]
 *    float32 rows (out) and columns (in), per vector its float32 copy, and
 *    a 4-byte RMS per parameter;
 *  - adam8bit (bitsandbytes): parameters of 4096 elements or more keep
 *    uint8 state1 + state2 and a float32 absmax per block per state, the
 *    smaller ones two float32 states; two 256-entry float32 maps once.
 */
static void optimizer_states(void **state)
{
	/* matrices: word 512 x 64, positions 64 x 64, token types 2 x 64;
	 * per layer q, k, v, o 64 x 64, intermediate 256 x 64, output
	 * 64 x 256; pooler 64 x 64; classifier 3 x 64 */
	uint64_t mats = 512 * 64 + 64 * 64 + 2 * 64 +
			2 * (4 * 64 * 64 + 256 * 64 + 64 * 256) + 64 * 64 + 3 * 64;
	uint64_t rows_cols = (512 + 64) + (64 + 64) + (2 + 64) +
			     2 * (4 * (64 + 64) + (256 + 64) + (64 + 256)) + (64 + 64) +
			     (3 + 64);
	/* vectors: embedding LayerNorm 2 x 64; per layer 4 biases of 64,
	 * attention LayerNorm 2 x 64, intermediate bias 256, output bias 64,
	 * output LayerNorm 2 x 64; pooler bias 64; classifier bias 3 */
	uint64_t vec = 128 + 2 * (4 * 64 + 128 + 256 + 64 + 128) + 64 + 3;
	uint64_t tensors = 5 + 2 * 16 + 2 + 2;
	/* 8-bit: the word embeddings (32,768 elements), ten 64 x 64 (4,096:
	 * not under min_8bit_size) and four of 16,384; 32-bit: token types
	 * (128), the classifier's weight (192) and every vector */
	uint64_t q256 = (2 * 32768 + 2 * 4 * 128) + 10 * (2 * 4096 + 2 * 4 * 16) +
			4 * (2 * 16384 + 2 * 4 * 64);
	uint64_t q2048 = (2 * 32768 + 2 * 4 * 16) + 10 * (2 * 4096 + 2 * 4 * 2) +
			 4 * (2 * 16384 + 2 * 4 * 8);
	uint64_t small = 8 * (128 + 192 + vec), maps = 2 * 256 * 4;

	(void)state;
	assert_int_equal(tensors, 41);
	assert_int_equal(mats + vec, 141443);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAMW_LOOP, 0), 2 * 4 * 141443);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAMW, 0), 2 * 4 * 141443);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAFACTOR, 0),
			 4 * (rows_cols + vec) + 4 * tensors);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAM8BIT, 0), q256 + small + maps);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAMW8BIT, 256), q256 + small + maps);
	assert_int_equal(state_bytes(COLLOC_OPT_ADAM8BIT, 2048), q2048 + small + maps);
}

/*
 * What one optimizer step allocates, on bert-base-uncased as
 * BertForSequenceClassification at batch 1, 8 tokens, checkpointed (the
 * step is the peak). Its largest parameter is the word embeddings, W =
 * 30522 x 768 x 4 bytes. Beside the parameters, gradients and states, the
 * step holds: foreach AdamW one sqrt of every parameter (all of them);
 * AdamW stepped one parameter at a time, that parameter's sqrt and the
 * previous one's until it is rebound (W at most, plus the next, 512 x 768
 * position embeddings); Adafactor grad**2 and grad**2 + eps of one
 * parameter (2 W), 8-bit Adam nothing (its kernel works in place). What
 * else is temporary at the peak (the input ids, labels, cuBLAS's
 * workspace, the loss) is under 9 MiB; the allocator's blocks of W may
 * each hold up to 1 MiB more (a large block's remainder of up to 1 MiB is
 * not split off).
 */
static void optimizer_step_temporaries(void **state)
{
	static const struct {
		int opt;
		double lo, hi; /* temporaries at the peak / W */
	} cases[] = {
		{COLLOC_OPT_ADAMW, -1, 1e9}, /* lo: every parameter */
		/* + the two cuBLAS workspaces (main and autograd thread,
		 * 8.125 MiB each) and 3 MiB of small tensors */
		{COLLOC_OPT_ADAMW_LOOP, 1,
		 1 + (512.0 * 768 * 4 + (2 * 8.125 + 3) * 1048576) / (23440896 * 4)},
		{COLLOC_OPT_ADAFACTOR, 2, 2 + (2 * 8.125 + 3) * 1048576 / (23440896 * 4)},
		{COLLOC_OPT_ADAM8BIT, 0, 0},
	};
	struct colloc_model_opts mo = {0};
	struct colloc_model *m;
	struct colloc_model_dims d = {1, 8, NULL, 0, false};
	const double w = 23440896.0 * 4; /* 30522 x 768 float32 */

	(void)state;
	mo.architecture = "BertForSequenceClassification";
	mo.gradient_checkpointing = true;
	m = open_hf("data/hf/bert-base-uncased", &mo);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct colloc_estimate_opts o;
		struct colloc_estimate e;
		struct colloc_diag diag = {{0}};
		double tmp, cases_lo;

		colloc_estimate_opts_init(&o);
		o.optimizer = cases[k].opt;
		if (colloc_estimate_model(m, &d, &o, &e, &diag))
			fail_msg("%s", diag.msg);
		tmp = (double)e.breakdown.temporaries_bytes / w;
		if (cases[k].lo < 0)
			cases_lo = (double)m->trainable_params * 4 / w;
		else
			cases_lo = cases[k].lo;
		print_message("%-10s peak at %s, temporaries %.3f W\n",
			      colloc_optimizer_name(cases[k].opt),
			      colloc_phase_name(e.peak_phase), tmp);
		if (cases[k].opt == COLLOC_OPT_ADAM8BIT) {
			/* the step allocates nothing after the first one's
			 * states: the peak is elsewhere, with no step
			 * temporary in it */
			assert_int_not_equal(e.peak_phase, COLLOC_PHASE_OPTIMIZER);
			continue;
		}
		assert_int_equal(e.peak_phase, COLLOC_PHASE_OPTIMIZER);
		if (tmp < cases_lo || tmp > cases[k].hi)
			fail_msg("%s: temporaries at the step %.4f W, want %.4f..%.4f",
				 colloc_optimizer_name(cases[k].opt), tmp, cases_lo,
				 cases[k].hi);
	}
	colloc_model_destroy(m);
}

static void errors(void **state)
{
	static const char unknown[] =
		"{\"model_type\": \"mamba\", \"architectures\": [\"MambaForCausalLM\"]}";
	struct colloc_model *m = NULL;
	struct colloc_model_opts o = {0};
	struct colloc_diag diag = {{0}};
	struct colloc_model_dims d = {1, 2048, NULL, 0, false};
	char path[4096];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "hf:%s/test_hf_unknown.json",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	f = fopen(path + 3, "w");
	assert_non_null(f);
	fputs(unknown, f);
	fclose(f);
	assert_int_equal(colloc_model_open(path, NULL, &m, &diag), COLLOC_EUNSUPPORTED);
	assert_null(m);
	assert_non_null(strstr(diag.msg, "'mamba'"));
	assert_non_null(strstr(diag.msg, "MambaForCausalLM"));
	/* and the families it does know */
	assert_non_null(strstr(diag.msg, "known: gpt2,"));
	assert_non_null(strstr(diag.msg, "bert, roberta, t5"));
	remove(path + 3);
	f = fopen(path + 3, "w");
	assert_non_null(f);
	fputs("{\"model_type\": \"t5\", \"feed_forward_proj\": \"gated-swish\"}", f);
	fclose(f);
	assert_int_equal(colloc_model_open(path, NULL, &m, &diag), COLLOC_EUNSUPPORTED);
	assert_non_null(strstr(diag.msg, "gated-swish"));
	remove(path + 3);
	/* T5's position bias needs the eager scores */
	{
		struct colloc_model_opts sd = {0};
		char t5[4096];

		sd.attention = COLLOC_ATTN_SDPA;
		snprintf(t5, sizeof(t5), "hf:%s/data/hf/t5-small", src_dir());
		assert_int_equal(colloc_model_open(t5, &sd, &m, &diag),
				 COLLOC_EUNSUPPORTED);
		assert_non_null(strstr(diag.msg, "eager attention only"));
		/* GPT-J: eager attention only */
		snprintf(t5, sizeof(t5), "hf:%s/data/hf/gpt-j-6b", src_dir());
		assert_int_equal(colloc_model_open(t5, &sd, &m, &diag),
				 COLLOC_EUNSUPPORTED);
		assert_non_null(strstr(diag.msg, "eager attention only"));
	}

	assert_int_equal(
		colloc_model_open("hf:/nonexistent/config.json", NULL, &m, &diag),
		COLLOC_ENOTFOUND);

	/* a head the family does not build, asked for by name */
	o.architecture = "BertForTokenClassification";
	snprintf(path, sizeof(path), "hf:%s/data/hf/bert-base-uncased", src_dir());
	assert_int_equal(colloc_model_open(path, &o, &m, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "BertForSequenceClassification"));
	o.architecture = "GPT2ForSequenceClassification";
	snprintf(path, sizeof(path), "hf:%s/data/hf/gpt2", src_dir());
	assert_int_equal(colloc_model_open(path, &o, &m, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "GPT2LMHeadModel"));
	o.architecture = NULL;
	/* factored and quantized states on ZeRO's flat shards: refused */
	{
		struct colloc_estimate_opts eo;
		struct colloc_estimate e;
		struct colloc_model_dims dd = {1, 8, NULL, 0, false};

		m = open_hf("data/hf/gpt2", NULL);
		colloc_estimate_opts_init(&eo);
		eo.optimizer = COLLOC_OPT_ADAFACTOR;
		eo.parallel = COLLOC_PAR_ZERO2;
		eo.gpus = 4;
		assert_int_equal(colloc_estimate_model(m, &dd, &eo, &e, &diag),
				 COLLOC_EUNSUPPORTED);
		assert_non_null(strstr(diag.msg, "adafactor"));
		eo.parallel = COLLOC_PAR_DDP;
		assert_int_equal(colloc_estimate_model(m, &dd, &eo, &e, &diag), 0);
		colloc_model_destroy(m);
	}

	m = open_hf("data/hf/gpt2", NULL);
	assert_int_equal(colloc_model_infer(m, &d, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "position limit of 1024"));
	d.seq = 1024;
	assert_int_equal(colloc_model_infer(m, &d, &diag), 0);
	colloc_model_destroy(m);

	o.trainable = COLLOC_TRAIN_LORA;
	assert_int_equal(colloc_model_open("resnet18", &o, &m, &diag), COLLOC_EUSAGE);
	o.trainable = COLLOC_TRAIN_ALL;
	o.freeze = "no_such_layer";
	assert_int_equal(colloc_model_open("resnet18", &o, &m, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "no_such_layer"));
	/* ONNX graphs take --freeze too: resnet18's classifier, fc.weight
	 * [1000, 512] and fc.bias */
	o.freeze = "fc.";
	assert_int_equal(colloc_model_open("resnet18", &o, &m, &diag), 0);
	assert_int_equal(m->frozen_params, 512 * 1000 + 1000);
	assert_int_equal(m->trainable_params + m->frozen_params, 11689512);
	colloc_model_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(published_counts),
		cmocka_unit_test(base_params),
		cmocka_unit_test(same_as_zoo_export),
		cmocka_unit_test(against_pytorch),
		cmocka_unit_test(checkpointing),
		cmocka_unit_test(half_weights_rate),
		cmocka_unit_test(attention_kinds),
		cmocka_unit_test(attention_step_time),
		cmocka_unit_test(parallel_shards),
		cmocka_unit_test(max_seq),
		cmocka_unit_test(speed_70b),
		cmocka_unit_test(optimizer_states),
		cmocka_unit_test(optimizer_step_temporaries),
		cmocka_unit_test(errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
