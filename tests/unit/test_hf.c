/*
 * test_hf.c — graphs built from Hugging Face configurations (src/model/hf.c)
 * through the front door (colloc/model.h):
 *  - parameter counts exact against the published counts of the real
 *    models (data/hf/: gpt2 124,439,808; distilgpt2 81,912,576;
 *    Llama-2-7B 6,738,415,616; Llama-3-70B 70,553,706,496) and the LoRA
 *    count peft prints for gpt2 (r 8 on c_attn: 294,912);
 *  - the gpt2 built from its configuration estimates exactly as the zoo's
 *    torch.onnx export of the same model (data/zoo/gpt2.onnx);
 *  - against PyTorch on the CPU (data/reference/hf_cpu.json, written by
 *    tools/hf_reference.py): saved-for-backward bytes within 1% (as CUDA
 *    saves them: bool dropout masks, float32 layer-norm statistics), trainable
 *    and frozen counts, parameter, gradient and Adam state bytes exact, for
 *    every family x {full, LoRA} x {fp32, bf16} x {plain, gradient
 *    checkpointing};
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
	assert_true(n >= 24);
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
		cmocka_unit_test(published_counts), cmocka_unit_test(same_as_zoo_export),
		cmocka_unit_test(against_pytorch),  cmocka_unit_test(checkpointing),
		cmocka_unit_test(errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
