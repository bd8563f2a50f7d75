/*
 * test_interference.c — the interference model (src/sim/interference.c):
 * the formula by hand, the loader's errors on small inline JSON, what it
 * skips, the speeds of a GPU's jobs under the physical ceiling, the split,
 * the fit on the v100 excerpt of Gavel's table
 * (tests/data/gavel, path compiled in as COLLOC_GAVEL_EXCERPT), the
 * model-name mapping, the builtin model, and the speeds the simulator
 * gives two jobs of Gavel's types beside each other against Gavel's
 * measured pairs (MAPE, with the constant baselines beside it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/error.h"
#include "colloc/interference.h"
#include "colloc/sim.h"

#define EPS 1e-9

/* cmocka's assert_float_equal compares in float; these are doubles. */
#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)

static void near_(double got, double want, double eps, const char *what, int line)
{
	if (!(fabs(got - want) <= eps)) {
		print_error("line %d: %s = %.12g, expected %.12g\n", line, what, got,
			    want);
		fail();
	}
}

static struct colloc_interference *parse_ok(const char *text)
{
	struct colloc_interference *m = NULL;
	struct colloc_diag diag = {{0}};
	int rc = colloc_interference_parse_gavel(text, strlen(text), &m, &diag);

	if (rc) {
		print_error("parse failed with %d: %s\n", rc, diag.msg);
		fail();
	}
	assert_string_equal(diag.msg, "");
	return m;
}

/* Fails with rc and a message that contains want; *out untouched. */
static void parse_bad(const char *text, int want_rc, const char *want)
{
	struct colloc_interference *m = (struct colloc_interference *)&m;
	struct colloc_interference *const before = m;
	struct colloc_diag diag = {{0}};
	int rc = colloc_interference_parse_gavel(text, strlen(text), &m, &diag);

	if (rc != want_rc || !strstr(diag.msg, want)) {
		print_error("parse gave %d \"%s\", expected %d with \"%s\"\n", rc,
			    diag.msg, want_rc, want);
		fail();
	}
	assert_ptr_equal(m, before);
}

/* --- the formula ---------------------------------------------------------- */

static void test_formula_by_hand(void **state)
{
	const double unit[3] = {1.0, 0.0, 1.0}, p[3] = {2.0, 1.0, 2.0};
	const double one = 1.0, two[2] = {0.5, 1.0};

	(void)state;
	/* two fully active jobs under alpha 1, p 0, q 1: fair share */
	assert_near(colloc_interference_model_speed(unit, 1.0, &one, 1), 0.5, EPS);
	/* 1 / (1 + 2 * 0.5^1 * (0.5^2 + 1^2)) = 1 / 2.25 */
	assert_near(colloc_interference_model_speed(p, 0.5, two, 2), 1.0 / 2.25, EPS);
	/* alone, or beside idle jobs, or idle itself with p > 0: full speed */
	assert_near(colloc_interference_model_speed(p, 0.5, two, 0), 1.0, EPS);
	assert_near(colloc_interference_model_speed(p, 0.0, two, 2), 1.0, EPS);
	/* activities are clamped to [0, 1]; NaN counts as 0 */
	{
		const double wild[2] = {7.0, NAN};

		assert_near(colloc_interference_model_speed(unit, 3.0, wild, 2), 0.5,
			    EPS);
	}
}

/* --- loader --------------------------------------------------------------- */

/* A on v100: alone 2; with A 1.0 (0.5), with B infeasible. B: alone 4; with A
 * 1.0 (0.25), with B 2.0 (0.5). */
static const char tiny[] = "{\"v100\": {"
			   "\"('A', 1)\": {\"null\": 2.0, \"('A', 1)\": [1.0, 1.0],"
			   "  \"('B', 1)\": [0.0, 0.0]},"
			   "\"('B', 1)\": {\"null\": 4.0, \"('A', 1)\": [1.0, 0.5],"
			   "  \"('B', 1)\": [2.0, 2.0], \"('B', 2)\": [9.0, 9.0]},"
			   "\"('B', 2)\": {\"null\": 8.0, \"('B', 2)\": [1.0, 1.0]}},"
			   "\"k80_unconsolidated\": {\"('A', 1)\": {\"null\": 1.0}}}";

static void test_loader_reads_pairs(void **state)
{
	struct colloc_interference *m = parse_ok(tiny);
	int a = colloc_interference_type(m, "A"), b = colloc_interference_type(m, "B");
	int v100 = colloc_interference_worker("V100");

	(void)state;
	assert_int_equal(v100, 0);
	assert_true(a >= 0 && b >= 0);
	assert_null(colloc_interference_type_name(m, 2)); /* scale 2 not kept */
	assert_near(colloc_interference_pair(m, v100, a, a), 0.5, 1e-6);
	assert_near(colloc_interference_pair(m, v100, a, b), -1.0, 1e-6);
	assert_near(colloc_interference_pair(m, v100, b, a), 0.25, 1e-6);
	assert_near(colloc_interference_pair(m, v100, b, b), 0.5, 1e-6);
	assert_near(colloc_interference_pair(m, 1, a, a), 0.0, 1e-6); /* p100 */
	colloc_interference_destroy(m);
}

static void test_loader_skips(void **state)
{
	/* A has alone throughput 0, B none at all: nothing measured; a speed
	 * above 1.5 is clamped */
	struct colloc_interference *m =
		parse_ok("{\"p100\": {\"('A', 1)\": {\"null\": 0, \"('A', 1)\": [1, 1]},"
			 "\"('B', 1)\": {\"('A', 1)\": [1, 1]},"
			 "\"('C', 1)\": {\"null\": 1, \"('C', 1)\": [3, 3]}}}");
	int c = colloc_interference_type(m, "C");

	(void)state;
	assert_int_equal(colloc_interference_type(m, "A"), -1);
	assert_int_equal(colloc_interference_type(m, "B"), -1);
	assert_near(colloc_interference_pair(m, 1, c, c), 1.5, 1e-6);
	colloc_interference_destroy(m);
}

static void test_loader_errors(void **state)
{
	char big[400];
	struct colloc_interference *m = NULL;
	struct colloc_diag diag = {{0}};

	(void)state;
	parse_bad("", COLLOC_EFORMAT, "not valid JSON");
	parse_bad("{\"v100\": {", COLLOC_EFORMAT, "not valid JSON");
	parse_bad("[1, 2]", COLLOC_EFORMAT, "not a JSON object");
	parse_bad("{\"v100\": 3}", COLLOC_EFORMAT, "worker \"v100\": expected an object");
	parse_bad("{\"v100\": {\"ResNet\": {}}}", COLLOC_EFORMAT,
		  "worker \"v100\": key \"ResNet\" is not of the form");
	parse_bad("{\"v100\": {\"('A', x)\": {}}}", COLLOC_EFORMAT, "('A', x)");
	parse_bad("{\"v100\": {\"('A', 1) \": {}}}", COLLOC_EFORMAT, "not of the form");
	parse_bad("{\"v100\": {\"('A', 0)\": {}}}", COLLOC_EFORMAT, "not of the form");
	parse_bad("{\"v100\": {\"('', 1)\": {}}}", COLLOC_EFORMAT, "not of the form");
	parse_bad("{\"v100\": {\"('A', 1)\": [1, 2]}}", COLLOC_EFORMAT,
		  "\"('A', 1)\": expected an object");
	parse_bad("{\"v100\": {\"('A', 1)\": {\"null\": -1}}}", COLLOC_EFORMAT,
		  "alone throughput");
	parse_bad("{\"v100\": {\"('A', 1)\": {\"null\": \"fast\"}}}", COLLOC_EFORMAT,
		  "alone throughput");
	parse_bad("{\"k80\": {\"('A', 1)\": {\"null\": 1, \"('B', 1)\": [1]}}}",
		  COLLOC_EFORMAT, "\"('A', 1)\" with \"('B', 1)\": expected [throughput");
	parse_bad("{\"k80\": {\"('A', 1)\": {\"null\": 1, \"('B', 1)\": [1, \"2\"]}}}",
		  COLLOC_EFORMAT, "expected [throughput");
	parse_bad("{\"k80\": {\"('A', 1)\": {\"null\": 1, \"('B', 1)\": {\"a\": 1, "
		  "\"b\": 2}}}}",
		  COLLOC_EFORMAT, "expected [throughput");
	parse_bad("{\"k80\": {\"('A', 1)\": {\"null\": 1, \"B\": [1, 1]}}}",
		  COLLOC_EFORMAT, "\"('A', 1)\": key \"B\" is not of the form");
	/* the shape of unused workers and scale factors is checked too */
	parse_bad("{\"x\": {\"('A', 4)\": {\"null\": 1, \"('B', 4)\": [1, -2]}}}",
		  COLLOC_EFORMAT, "worker \"x\"");

	/* limits */
	snprintf(big, sizeof(big), "{\"v100\": {\"('%070d', 1)\": {}}}", 0);
	parse_bad(big, COLLOC_ELIMIT, "longer than 63 bytes");
	snprintf(big, sizeof(big), "{\"v100%0200d\": {}}", 0);
	parse_bad(big, COLLOC_ELIMIT, "is over 127 bytes");
	assert_int_equal(colloc_interference_parse_gavel(
				 "{}", COLLOC_INTERFERENCE_MAX_BYTES + 1, &m, &diag),
			 COLLOC_ELIMIT);
	assert_null(m);
	assert_int_equal(colloc_interference_load_gavel("/nonexistent/x.json", &m, &diag),
			 COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "/nonexistent/x.json"));
	assert_null(m);
}

static void test_loader_type_limit(void **state)
{
	char text[8192];
	size_t n = 0;

	(void)state;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"v100\": {");
	for (int i = 0; i <= COLLOC_INTERFERENCE_MAX_TYPES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s\"('T%d', 1)\": {\"null\": 1}", i ? ", " : "",
				      i);
	snprintf(text + n, sizeof(text) - n, "}}");
	assert_true(n < sizeof(text) - 4);
	parse_bad(text, COLLOC_ELIMIT, "more than 64 job types");
}

/* --- speed() -------------------------------------------------------------- */

static void test_speed_lookup_and_model(void **state)
{
	struct colloc_interference *m = parse_ok(tiny);
	int a = colloc_interference_type(m, "A"), b = colloc_interference_type(m, "B");
	struct colloc_interference_job ja = {a, 0.9}, jb = {b, 0.9}, anon = {-1, 0.3};
	struct colloc_interference_job two[2] = {{b, 0.9}, {-1, 0.3}};
	double params[3], act[2];

	(void)state;
	colloc_interference_params(m, params);
	/* measured pair */
	assert_near(colloc_interference_speed(m, 0, &jb, &ja, 1), 0.25, 1e-6);
	assert_near(colloc_interference_speed(m, 0, &ja, &jb, 0), 1.0, EPS);
	/* infeasible pair, unknown worker, anonymous job: the model from the
	 * jobs' own activities (no fit yet, so no derived ones) */
	assert_near(colloc_interference_speed(m, 0, &ja, &jb, 1),
		    colloc_interference_model_speed(params, 0.9, &jb.activity, 1), EPS);
	assert_near(colloc_interference_speed(m, -1, &jb, &ja, 1),
		    colloc_interference_model_speed(params, 0.9, &ja.activity, 1), EPS);
	act[0] = 0.9;
	act[1] = 0.3;
	assert_near(colloc_interference_speed(m, 0, &ja, two, 2),
		    colloc_interference_model_speed(params, 0.9, act, 2), EPS);
	assert_near(colloc_interference_speed(m, 0, &anon, &ja, 1),
		    colloc_interference_model_speed(params, 0.3, &ja.activity, 1), EPS);
	colloc_interference_destroy(m);
}

/* --- gpu_speeds(): all jobs of one GPU, with the physical ceiling -------- */

static void test_gpu_speeds(void **state)
{
	const struct colloc_interference *m = colloc_interference_builtin();
	struct colloc_interference *tm = parse_ok(tiny);
	int a = colloc_interference_type(tm, "A"), b = colloc_interference_type(tm, "B");
	struct colloc_interference_job jobs[16], pair[2] = {{b, 0.9}, {a, 0.9}};
	double busy[16], sp[16], used;

	(void)state;
	/* alone: 1; under the ceiling: speed() of each beside the others */
	jobs[0] = (struct colloc_interference_job){-1, 0.3};
	colloc_interference_gpu_speeds(m, 0, jobs, NULL, 1, sp);
	assert_near(sp[0], 1.0, EPS);
	for (int i = 0; i < 3; i++)
		jobs[i] = (struct colloc_interference_job){-1, 0.1 + 0.2 * i};
	colloc_interference_gpu_speeds(m, 0, jobs, NULL, 3, sp);
	for (int i = 0; i < 3; i++) {
		struct colloc_interference_job others[2];
		int n = 0;

		for (int o = 0; o < 3; o++)
			if (o != i)
				others[n++] = jobs[o];
		assert_near(sp[i], colloc_interference_speed(m, 0, &jobs[i], others, 2),
			    1e-12);
	}
	/* a measured pair is used for two jobs (0.25 for B beside A) */
	colloc_interference_gpu_speeds(tm, 0, pair, NULL, 2, sp);
	assert_near(sp[0], 0.25, 1e-6);
	/* The ceiling binds: jobs the model thinks harmless to each other
	 * (activity 0.01) that each keep the GPU 90% busy alone. Together
	 * they keep it exactly fully busy, at equal speeds. */
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct colloc_interference_job){-1, 0.01};
		busy[i] = 0.9;
	}
	colloc_interference_gpu_speeds(m, 0, jobs, busy, 4, sp);
	used = 0;
	for (int i = 0; i < 4; i++)
		used += busy[i] * sp[i];
	assert_near(used, 1.0, 1e-12);
	assert_near(sp[0], 1.0 / 3.6, 1e-12);
	assert_near(sp[3], sp[0], 1e-15);
	/* n identical jobs of activity a: together at most min(n, 1/a) x one
	 * job, whatever the model says */
	for (int n = 2; n <= 16; n *= 2)
		for (double act = 0.1; act <= 1.0 + 1e-9; act += 0.3)
			for (double model_act = 0.0; model_act <= 1.0 + 1e-9;
			     model_act += 0.25) {
				double sum = 0;

				for (int i = 0; i < n; i++) {
					jobs[i] = (struct colloc_interference_job){
						-1, model_act};
					busy[i] = act;
				}
				colloc_interference_gpu_speeds(m, 0, jobs, busy, n, sp);
				for (int i = 0; i < n; i++) {
					assert_true(sp[i] > 0 && sp[i] <= 1.0);
					sum += sp[i];
				}
				assert_true(sum <= fmin(n, 1.0 / act) + 1e-12);
			}
	colloc_interference_destroy(tm);
}

/* --- split and fit on the excerpt ---------------------------------------- */

static struct colloc_interference *load_excerpt(void)
{
	struct colloc_interference *m = NULL;
	struct colloc_diag diag = {{0}};

	if (colloc_interference_load_gavel(COLLOC_GAVEL_EXCERPT, &m, &diag)) {
		print_error("%s\n", diag.msg);
		fail();
	}
	return m;
}

static void test_split_deterministic(void **state)
{
	struct colloc_interference *m = load_excerpt();
	int n[2] = {0, 0};

	(void)state;
	for (int a = 0; colloc_interference_type_name(m, a); a++)
		for (int b = 0; colloc_interference_type_name(m, b); b++) {
			const char *na = colloc_interference_type_name(m, a);
			const char *nb = colloc_interference_type_name(m, b);
			int s = colloc_interference_split("v100", na, nb);

			assert_true(s == 0 || s == 1);
			assert_int_equal(s, colloc_interference_split("v100", nb, na));
			assert_int_equal(s, colloc_interference_split("v100", na, nb));
			n[s]++;
		}
	/* 26 x 26 ordered pairs, roughly half each side */
	assert_int_equal(n[0] + n[1], 26 * 26);
	assert_true(n[0] > 250 && n[1] > 250);
	/* pinned: a change of the hash would silently change every number in
	 * docs/interference.md */
	assert_int_equal(colloc_interference_split("v100", "A3C", "CycleGAN"),
			 colloc_interference_split("v100", "CycleGAN", "A3C"));
	assert_int_equal(colloc_interference_split("v100", "A3C", "CycleGAN"), 1);
	assert_int_equal(colloc_interference_split("k80", "LM (batch size 5)", "A3C"), 0);
	colloc_interference_destroy(m);
}

static void test_fit_beats_baselines(void **state)
{
	struct colloc_interference *m = load_excerpt(), *m2 = load_excerpt();
	struct colloc_interference_report r, r2;
	struct colloc_diag diag = {{0}};
	int t;

	(void)state;
	assert_int_equal(colloc_interference_fit(m, &r, &diag), 0);
	assert_int_equal(r.n_pairs + r.n_infeasible, 26 * 26);
	assert_int_equal(r.n_infeasible, 40);
	assert_int_equal(r.n_train + r.n_test, r.n_pairs);
	assert_true(r.n_train > 200 && r.n_test > 200);
	assert_true(r.test_mape < r.fair_mape && r.test_mape < r.none_mape);
	assert_true(r.test_mae < r.fair_mae && r.test_mae < r.none_mae);
	assert_true(r.params[0] > 0.0);
	/* deterministic */
	assert_int_equal(colloc_interference_fit(m2, &r2, &diag), 0);
	assert_memory_equal(&r, &r2, sizeof(r));
	/* derived activities exist for every type afterwards */
	for (t = 0; colloc_interference_type_name(m, t); t++) {
		double a = colloc_interference_activity(m, 0, t);

		assert_true(a >= 0.0 && a <= 1.0);
	}
	assert_int_equal(t, 26);
	colloc_interference_destroy(m);
	colloc_interference_destroy(m2);
}

static void test_fit_needs_pairs(void **state)
{
	struct colloc_interference *m = parse_ok("{\"v100\": {}}");
	struct colloc_interference_report r;
	struct colloc_diag diag = {{0}};

	(void)state;
	assert_int_equal(colloc_interference_fit(m, &r, &diag), COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "need at least 3"));
	colloc_interference_destroy(m);
}

/* --- names and the builtin model ------------------------------------------ */

static void test_gavel_type(void **state)
{
	(void)state;
	assert_string_equal(colloc_interference_gavel_type("resnet50", 48),
			    "ResNet-50 (batch size 64)");
	assert_string_equal(colloc_interference_gavel_type("ResNet-18", 0),
			    "ResNet-18 (batch size 64)");
	assert_string_equal(colloc_interference_gavel_type("resnet18", 1),
			    "ResNet-18 (batch size 16)");
	assert_string_equal(colloc_interference_gavel_type("bert_base", 8),
			    "Transformer (batch size 16)");
	assert_string_equal(colloc_interference_gavel_type("gpt2", 4096),
			    "Transformer (batch size 256)");
	assert_string_equal(colloc_interference_gavel_type("LM", 7), "LM (batch size 5)");
	assert_string_equal(colloc_interference_gavel_type("dqn", 128), "A3C");
	assert_string_equal(colloc_interference_gavel_type("a2c", 0), "A3C");
	assert_string_equal(colloc_interference_gavel_type("CycleGAN", 1), "CycleGAN");
	assert_string_equal(colloc_interference_gavel_type("recommendation", 2500),
			    "Recommendation (batch size 2048)");
	assert_null(colloc_interference_gavel_type("vgg16", 64));
	assert_null(colloc_interference_gavel_type("shufflenet_v2_x1_0", 64));
	assert_null(colloc_interference_gavel_type("", 64));
	assert_null(colloc_interference_gavel_type(NULL, 64));
}

static void test_builtin(void **state)
{
	const struct colloc_interference *b = colloc_interference_builtin();
	struct colloc_interference *excerpt = load_excerpt();
	int n = 0;
	double params[3];

	(void)state;
	/* every name the mapping can return is a type of the builtin model and
	 * of Gavel's table */
	for (int t = 0; colloc_interference_type_name(b, t); t++, n++) {
		const char *name = colloc_interference_type_name(b, t);

		assert_int_equal(colloc_interference_type(b, name), t);
		assert_true(colloc_interference_type(excerpt, name) >= 0);
		for (int w = 0; w < COLLOC_INTERFERENCE_N_WORKERS; w++) {
			double a = colloc_interference_activity(b, w, t);

			assert_true(a == -1.0 || (a >= 0.0 && a <= 1.0));
		}
	}
	assert_int_equal(n, 26);
	assert_true(colloc_interference_type(
			    b, colloc_interference_gavel_type("gpt2", 64)) >= 0);
	colloc_interference_params(b, params);
	assert_true(params[0] > 1.0 && params[0] < 8.0);
	assert_near(colloc_interference_pair(b, 0, 0, 1), 0.0, EPS);
	{
		struct colloc_interference_job x = {-1, 1.0 / 3}, y = {-1, 1.0 / 3};
		double s = colloc_interference_speed(b, 0, &x, &y, 1);

		/* two unknown jobs that would each halve a partner under the
		 * plain formula (activity 1/3): close to fair share */
		assert_true(s > 0.4 && s < 0.6);
	}
	colloc_interference_destroy(NULL);
	colloc_interference_destroy(excerpt);
}

/* --- the simulator's speeds against the measured pairs ------------------- */

/* A Gavel type name as a trace would name the job: "ResNet-50 (batch size
 * 64)" -> model "ResNet-50", batch 64 ("LM" is spelt as the simulator's
 * kind, whose two-letter name is matched only exactly). */
static void gavel_job(const char *type, char *model, size_t cap, int64_t *batch)
{
	const char *paren = strstr(type, " (batch size ");
	size_t n = paren ? (size_t)(paren - type) : strlen(type);

	if (n >= cap)
		n = cap - 1;
	memcpy(model, type, n);
	model[n] = '\0';
	*batch = paren ? (int64_t)strtoll(paren + 13, NULL, 10) : 0;
}

struct mape_acc {
	double sum;
	size_t n;
};

static void mape_add(struct mape_acc *a, double pred, double meas)
{
	a->sum += fabs(pred / meas - 1.0);
	a->n++;
}

static double mape_of(const struct mape_acc *a)
{
	return a->n ? 100.0 * a->sum / (double)a->n : 0.0;
}

/*
 * Every measured, feasible V100 pair of the excerpt: the speed the
 * simulator gives job A beside job B on a V100-16GB, as colloc_sim_run
 * computes it (colloc_interference_gpu_speeds with the jobs' SM activity
 * from colloc_sim_kind_info, the formula reading it times
 * COLLOC_SIM_INTERFERENCE_SCALE, the ceiling reading it as it is), against
 * Gavel's measurement. Without --gavel (the builtin model, no pairs) the
 * MAPE is printed beside the constant baselines: no interference (1), fair
 * share (1/2) and the best constant in hindsight. Asserted: the model is
 * closer to the best constant than to ignoring interference (its MAPE
 * below the midpoint of those two baselines' MAPEs, which no interference
 * is not), and with --gavel (the measured pairs loaded) the simulator
 * reproduces every measured pair exactly. Not asserted, because it is not
 * true today: that the model beats fair share. The predictor puts every
 * type with a graph at SM activity 0.88..1.00, so on the simulator's scale
 * the formula gives them all about 1/2 (docs/interference.md).
 */
static void test_sim_speeds_vs_gavel(void **state)
{
	struct colloc_interference *m = load_excerpt();
	const struct colloc_interference *bi = colloc_interference_builtin();
	struct colloc_sim_cluster c;
	struct colloc_diag diag = {{0}};
	struct colloc_sim_kind info[64];
	int gt[64], n_types = 0, v100 = colloc_interference_worker("v100");
	struct mape_acc model = {0, 0}, held = {0, 0}, none = {0, 0}, fair = {0, 0};
	struct mape_acc gavel = {0, 0}, best[100];
	double best_mape = 1e300, best_c = 0;

	(void)state;
	memset(best, 0, sizeof(best));
	assert_int_equal(colloc_sim_cluster_parse("1x2xV100-16GB", &c, &diag), 0);
	for (int t = 0; colloc_interference_type_name(m, t); t++) {
		const char *name = colloc_interference_type_name(m, t);
		char model_name[64];
		int64_t batch;
		const char *g;

		assert_true(t < 64);
		gavel_job(name, model_name, sizeof(model_name), &batch);
		if (strcmp(model_name, "LM") == 0)
			snprintf(model_name, sizeof(model_name), "lm");
		if (colloc_sim_kind_info(model_name, batch, &c, &info[t], &diag))
			fail_msg("%s: %s", name, diag.msg);
		/* What the simulator maps the job to with --gavel. */
		g = colloc_interference_gavel_type(model_name, batch);
		gt[t] = g ? colloc_interference_type(m, g) : -1;
		n_types++;
	}
	assert_int_equal(n_types, 26);
	for (int a = 0; a < n_types; a++)
		for (int b = 0; b < n_types; b++) {
			double meas = colloc_interference_pair(m, v100, a, b), sp[2];
			struct colloc_interference_job ij[2] = {
				{-1, info[a].interference_activity},
				{-1, info[b].interference_activity}};
			double busy[2] = {info[a].activity, info[b].activity};

			if (meas <= 0)
				continue; /* infeasible (out of memory) */
			colloc_interference_gpu_speeds(bi, v100, ij, busy, 2, sp);
			mape_add(&model, sp[0], meas);
			if (colloc_interference_split(
				    "v100", colloc_interference_type_name(m, a),
				    colloc_interference_type_name(m, b)) == 1)
				mape_add(&held, sp[0], meas);
			mape_add(&none, 1.0, meas);
			mape_add(&fair, 0.5, meas);
			for (int k = 0; k < 100; k++)
				mape_add(&best[k], 0.01 * (k + 1), meas);
			ij[0].type = gt[a];
			ij[1].type = gt[b];
			colloc_interference_gpu_speeds(m, v100, ij, busy, 2, sp);
			mape_add(&gavel, sp[0], meas);
		}
	for (int k = 0; k < 100; k++)
		if (mape_of(&best[k]) < best_mape) {
			best_mape = mape_of(&best[k]);
			best_c = 0.01 * (k + 1);
		}
	print_message("simulator speeds vs Gavel's measured V100 pairs (%zu, excerpt):\n"
		      "  builtin model (no --gavel)   MAPE %.1f %% (held-out half %zu: "
		      "%.1f %%)\n"
		      "  --gavel (measured pairs)     MAPE %.2f %%\n"
		      "  no interference (1)          MAPE %.1f %%\n"
		      "  fair share (1/2)             MAPE %.1f %%\n"
		      "  best constant (%.2f)         MAPE %.1f %%\n",
		      model.n, mape_of(&model), held.n, mape_of(&held), mape_of(&gavel),
		      mape_of(&none), mape_of(&fair), best_c, best_mape);
	assert_true(model.n > 500);
	assert_true(mape_of(&model) < 0.5 * (best_mape + mape_of(&none)));
	assert_false(mape_of(&none) < 0.5 * (best_mape + mape_of(&none)));
	assert_true(mape_of(&gavel) < 1e-6);
	colloc_interference_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formula_by_hand),
		cmocka_unit_test(test_loader_reads_pairs),
		cmocka_unit_test(test_loader_skips),
		cmocka_unit_test(test_loader_errors),
		cmocka_unit_test(test_loader_type_limit),
		cmocka_unit_test(test_speed_lookup_and_model),
		cmocka_unit_test(test_gpu_speeds),
		cmocka_unit_test(test_split_deterministic),
		cmocka_unit_test(test_fit_beats_baselines),
		cmocka_unit_test(test_fit_needs_pairs),
		cmocka_unit_test(test_gavel_type),
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_sim_speeds_vs_gavel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
