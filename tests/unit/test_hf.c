/*
 * test_hf.c — graphs built from Hugging Face configurations (src/model/hf.c)
 * through the front door (colloc/model.h):
 *  - parameter counts exact against the published counts of the real
 *    models (data/hf/: gpt2 124,439,808; distilgpt2 81,912,576;
 *    Llama-2-7B 6,738,415,616; Llama-3-70B 70,553,706,496; opt-125m
 *    125,239,296; gpt-neo-125m 125,198,592) and the LoRA
 *    count peft prints for gpt2 (r 8 on c_attn: 294,912);
 *  - the gpt2 built from its configuration estimates exactly as the zoo's
 *    torch.onnx export of the same model (data/zoo/gpt2.onnx);
 *  - against PyTorch on the CPU (data/reference/hf_cpu.json, written by
 *    tools/hf_reference.py): saved-for-backward bytes within 1% (as CUDA
 *    saves them: bool dropout masks, float32 layer-norm statistics), trainable
 *    and frozen counts, parameter, gradient and Adam state bytes exact, for
 *    every family (gpt2, llama, qwen2, opt, gpt_neo) x {full, LoRA} x
 *    {fp32, bf16} x {plain, gradient checkpointing};
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
}

static void same_as_zoo_export(void **state)
{
	struct colloc_model *hf = open_hf("data/hf/gpt2", NULL), *zoo = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_model_dims d = {4, 64, NULL, 0, false};
	struct colloc_estimate_opts o;
	struct colloc_estimate a, b;

	(void)state;
	if (colloc_model_open("gpt2", NULL, &zoo, &diag))
		fail_msg("%s", diag.msg);
	colloc_estimate_opts_init(&o);
	o.loss = COLLOC_LOSS_CAUSAL_LM;
	if (colloc_estimate_model(hf, &d, &o, &a, &diag) ||
	    colloc_estimate_model(zoo, &d, &o, &b, &diag))
		fail_msg("%s", diag.msg);
	assert_int_equal(a.saved_activation_bytes, b.saved_activation_bytes);
	assert_int_equal(a.param_bytes, b.param_bytes);
	assert_int_equal(a.peak_allocated_bytes, b.peak_allocated_bytes);
	assert_int_equal(a.peak_reserved_bytes, b.peak_reserved_bytes);
	colloc_model_destroy(hf);
	colloc_model_destroy(zoo);
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
	int n = 0, bad = 0;

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
		const cJSON *adam;
		uint64_t want;
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
		o.loss = COLLOC_LOSS_CAUSAL_LM;
		o.iterations = 2;
		d.batch = (int64_t)num(rec, "batch");
		d.seq = (int64_t)num(rec, "seq");
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
		rel = fabs((double)e.saved_activation_bytes - (double)want) /
		      (double)want;
		if (rel > SAVED_TOLERANCE)
			bad++;
		print_message("%-22s saved %10llu, PyTorch %10llu (%+.2f%%)\n",
			      rec->string, (unsigned long long)e.saved_activation_bytes,
			      (unsigned long long)want,
			      100.0 * ((double)e.saved_activation_bytes - (double)want) /
				      (double)want);
		colloc_model_destroy(m);
		n++;
	}
	assert_true(n >= 40);
	cJSON_Delete(ref);
	if (bad)
		fail_msg("%d of %d cases saved more than %.0f%% off PyTorch (above)", bad,
			 n, 100 * SAVED_TOLERANCE);
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
	remove(path + 3);

	assert_int_equal(
		colloc_model_open("hf:/nonexistent/config.json", NULL, &m, &diag),
		COLLOC_ENOTFOUND);

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
		cmocka_unit_test(same_as_zoo_export),
		cmocka_unit_test(against_pytorch),
		cmocka_unit_test(checkpointing),
		cmocka_unit_test(half_weights_rate),
		cmocka_unit_test(attention_kinds),
		cmocka_unit_test(attention_step_time),
		cmocka_unit_test(errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
