/*
 * test_zoo.c — every bundled zoo model against the facts PyTorch recorded
 * when it was exported (tools/export_zoo.py writes data/zoo/NAME.json):
 * exact trainable-parameter and buffer counts, exact output shapes at
 * several batch sizes and sequence lengths, and forward FLOPs within 1% of
 * the independent ATen-level counter in tools/zoo_reference.py.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "colloc/cost.h"
#include "colloc/onnx.h"
#include "colloc/shape.h"
#include "colloc/zoo.h"
#include "test_util.h"

#define MIN_ZOO_MODELS 25
#define MAX_MODELS 256

static uint64_t json_u64(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_non_null(v);
	assert_true(cJSON_IsNumber(v));
	return (uint64_t)v->valuedouble;
}

/* What a test allocates, so the teardown can free it when an assertion
 * jumps out of the test. */
struct zoo_case {
	const char *name;
	cJSON *facts;
	struct colloc_graph *g;
};

static int zoo_teardown(void **state)
{
	struct zoo_case *zc = *state;

	cJSON_Delete(zc->facts);
	zc->facts = NULL;
	colloc_graph_destroy(zc->g);
	zc->g = NULL;
	return 0;
}

static void check_model(void **state)
{
	struct zoo_case *zc = *state;
	const char *name = zc->name;
	char path[4096];
	char *text;
	cJSON *facts, *checks, *check;
	struct colloc_graph *g = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_param_totals pt;
	int rc;

	snprintf(path, sizeof(path), "%s/zoo/%s.json", colloc_data_dir(), name);
	text = test_slurp(path, 8 << 20);
	assert_non_null(text);
	facts = cJSON_Parse(text);
	free(text);
	assert_non_null(facts);
	zc->facts = facts;

	snprintf(path, sizeof(path), "%s/zoo/%s.onnx", colloc_data_dir(), name);
	rc = colloc_onnx_load_file(path, NULL, &g, &diag);
	if (rc)
		fail_msg("%s: %s", name, diag.msg);
	zc->g = g;

	colloc_graph_param_totals(g, &pt);
	if (pt.trainable != json_u64(facts, "trainable_params"))
		fail_msg("%s: trainable params %llu, PyTorch says %llu", name,
			 (unsigned long long)pt.trainable,
			 (unsigned long long)json_u64(facts, "trainable_params"));
	if (pt.buffers != json_u64(facts, "buffers"))
		fail_msg("%s: buffer elements %llu, PyTorch says %llu", name,
			 (unsigned long long)pt.buffers,
			 (unsigned long long)json_u64(facts, "buffers"));

	checks = cJSON_GetObjectItemCaseSensitive(facts, "checks");
	assert_true(cJSON_IsArray(checks));
	assert_true(cJSON_GetArraySize(checks) >= 2);
	cJSON_ArrayForEach(check, checks)
	{
		struct colloc_binding binds[8];
		struct colloc_bind_opts opts = {0, binds, 0};
		const cJSON *dims = cJSON_GetObjectItemCaseSensitive(check, "dims");
		const cJSON *outs = cJSON_GetObjectItemCaseSensitive(check, "outputs");
		const cJSON *d, *o;
		struct colloc_cost_totals ct;
		uint64_t want_flops;
		double rel;
		int k = 0;

		opts.batch = (int64_t)json_u64(check, "batch");
		cJSON_ArrayForEach(d, dims)
		{
			assert_true(opts.n_dims < 8);
			binds[opts.n_dims].name = d->string;
			binds[opts.n_dims].value = (int64_t)d->valuedouble;
			opts.n_dims++;
		}
		rc = colloc_graph_infer(g, &opts, &diag);
		if (rc)
			fail_msg("%s batch %lld: %s", name, (long long)opts.batch,
				 diag.msg);
		assert_int_equal(cJSON_GetArraySize(outs), g->n_outputs);
		cJSON_ArrayForEach(o, outs)
		{
			const struct colloc_tensor *t = &g->tensors[g->outputs[k]];
			const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
			const cJSON *dim;
			int r = 0;

			assert_int_equal(cJSON_GetArraySize(shape), t->rank);
			cJSON_ArrayForEach(dim, shape)
			{
				if ((int64_t)dim->valuedouble != t->shape[r])
					fail_msg("%s batch %lld: output %d dim %d is "
						 "%lld, "
						 "PyTorch says %lld",
						 name, (long long)opts.batch, k, r,
						 (long long)t->shape[r],
						 (long long)dim->valuedouble);
				r++;
			}
			k++;
		}
		colloc_graph_cost(g, &ct);
		want_flops = json_u64(check, "flops_forward");
		rel = fabs((double)ct.flops - (double)want_flops) / (double)want_flops;
		if (rel > 0.01)
			fail_msg("%s batch %lld: %llu FLOPs, reference %llu (%.2f%% off)",
				 name, (long long)opts.batch,
				 (unsigned long long)ct.flops,
				 (unsigned long long)want_flops, rel * 100);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	static char *names[MAX_MODELS];
	static struct CMUnitTest tests[MAX_MODELS];
	static struct zoo_case cases[MAX_MODELS];
	char dir[4096];
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int failed;

	snprintf(dir, sizeof(dir), "%s/zoo", colloc_data_dir());
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "test_zoo: cannot open %s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) != NULL && n < MAX_MODELS) {
		size_t l = strlen(de->d_name);

		if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
			names[n++] = strndup(de->d_name, l - 5);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	if (n < MIN_ZOO_MODELS) {
		fprintf(stderr, "test_zoo: %zu models with facts in %s, expected >= %d\n",
			n, dir, MIN_ZOO_MODELS);
		return 1;
	}
	for (size_t k = 0; k < n; k++) {
		cases[k].name = names[k];
		tests[k].name = names[k];
		tests[k].test_func = check_model;
		tests[k].teardown_func = zoo_teardown;
		tests[k].initial_state = &cases[k];
	}
	failed = _cmocka_run_group_tests("zoo", tests, n, NULL, NULL);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	return failed;
}
