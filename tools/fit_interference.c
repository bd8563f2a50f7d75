/*
 * fit_interference.c — fit the interference model (colloc/interference.h)
 * on Gavel's simulation_throughputs.json and print the held-out errors
 * next to the two baselines measured in the same run, then the parameters
 * and activities as the C table src/sim/interference.c compiles in.
 *
 * Then the simulator's scale (COLLOC_SIM_INTERFERENCE_SCALE, colloc/sim.h):
 * the simulator gives the model each job's SM activity as colloc's
 * predictor computes it (colloc_sim_kind_info, the same code as a run), not
 * the per-type activities derived from the pairs. With the builtin
 * parameters, the factor k that turns SM activity into the model's
 * activity is fitted on the training half of the pairs whose two types
 * both have a graph (ResNet-18/50, Transformer, LM), as SM activity
 * predicted on V100-16GB, P100-16GB and K80 profiles, and checked on the
 * held-out half next to the derived activities, k = 1/3 and the baselines.
 *
 *   build/fit_interference /work/shared/data/gavel/simulation_throughputs.json
 */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/interference.h"
#include "colloc/sim.h"

#define N_W 3
#define MAX_T COLLOC_INTERFERENCE_MAX_TYPES
#define MAX_OBS (N_W * MAX_T * MAX_T)

struct obs {
	int w, a, b, test;
	double speed;
};

static struct obs obs[MAX_OBS];
static double sm_act[N_W][MAX_T];
static bool predicted[N_W][MAX_T];

/* "ResNet-18 (batch size 64)" -> "resnet18", 64, as the Gavel trace reader
 * names its jobs; "A3C" -> "a3c", 0. */
static void split_type(const char *type, char *model, size_t cap, long *batch)
{
	const char *paren = strstr(type, " (batch size ");
	size_t n = 0;

	for (const char *p = type; *p && p != paren && n + 1 < cap; p++)
		if (*p != '-')
			model[n++] = (char)tolower((unsigned char)*p);
	model[n] = '\0';
	*batch = paren ? strtol(paren + strlen(" (batch size "), NULL, 10) : 0;
}

/* Speed of A beside B as the simulator computes it at scale k. */
static double sim_speed(int w, int a, int b, double k)
{
	struct colloc_interference_job j[2] = {{-1, k * sm_act[w][a]},
					       {-1, k * sm_act[w][b]}};
	double busy[2] = {sm_act[w][a], sm_act[w][b]}, sp[2];

	colloc_interference_gpu_speeds(colloc_interference_builtin(), w, j, busy, 2, sp);
	return sp[0];
}

/* Squared relative error over half `test` of the observations (both types
 * predicted when graphs_only). */
static double sse_k(const struct obs *o, size_t n, int test, bool graphs_only, double k)
{
	double e = 0;

	for (size_t i = 0; i < n; i++) {
		double d;

		if (o[i].test != test || (graphs_only && !(predicted[o[i].w][o[i].a] &&
							   predicted[o[i].w][o[i].b])))
			continue;
		d = sim_speed(o[i].w, o[i].a, o[i].b, k) / o[i].speed - 1;
		e += d * d;
	}
	return e;
}

static double fit_k(const struct obs *o, size_t n)
{
	double best = 1.0 / 3.0, ebest = INFINITY, lo = log(0.005), hi = log(5.0);

	for (int round = 0; round < 4; round++) {
		double step = (hi - lo) / 200;

		for (int i = 0; i <= 200; i++) {
			double k = exp(lo + i * step), e = sse_k(o, n, 0, true, k);

			if (e < ebest) {
				ebest = e;
				best = k;
			}
		}
		lo = log(best) - 2 * step;
		hi = log(best) + 2 * step;
	}
	return best;
}

struct err {
	double mae, mape;
	size_t n;
};

static void add(struct err *e, double pred, double speed)
{
	e->mae += fabs(pred - speed);
	e->mape += fabs(pred - speed) / speed;
	e->n++;
}

static void row2(const char *name, const struct err *e)
{
	printf("  %-40s %8.4f %8.1f%%  (%zu)\n", name, e->n ? e->mae / (double)e->n : 0,
	       e->n ? 100.0 * e->mape / (double)e->n : 0, e->n);
}

static int sim_scale(const struct colloc_interference *m)
{
	static const char *const workers[N_W] = {"v100", "p100", "k80"};
	static const char *const clusters[N_W] = {"1x1xV100-16GB", "1x1xP100-16GB",
						  "1x1xK80"};
	const struct colloc_interference *b = colloc_interference_builtin();
	struct err e[2][6] = {{{0}}};
	size_t n = 0, n_train = 0;
	double k;

	for (int wi = 0; wi < N_W; wi++) {
		int w = colloc_interference_worker(workers[wi]);
		struct colloc_sim_cluster c;
		struct colloc_diag diag = {{0}};

		if (colloc_sim_cluster_parse(clusters[wi], &c, &diag))
			goto fail;
		for (int t = 0; colloc_interference_type_name(m, t); t++) {
			struct colloc_sim_kind info;
			char model[64];
			long batch;

			split_type(colloc_interference_type_name(m, t), model,
				   sizeof(model), &batch);
			if (colloc_sim_kind_info(model, batch, &c, &info, &diag)) {
			fail:
				fprintf(stderr, "fit_interference: %s\n", diag.msg);
				return 1;
			}
			sm_act[w][t] = info.activity;
			predicted[w][t] = info.predicted;
		}
		for (int a = 0; colloc_interference_type_name(m, a); a++)
			for (int bb = 0; colloc_interference_type_name(m, bb); bb++) {
				double s = colloc_interference_pair(m, w, a, bb);

				if (s <= 0 || n == MAX_OBS)
					continue;
				obs[n] = (struct obs){
					w, a, bb,
					colloc_interference_split(
						workers[wi],
						colloc_interference_type_name(m, a),
						colloc_interference_type_name(m, bb)),
					s};
				n++;
			}
	}
	k = fit_k(obs, n);
	for (size_t i = 0; i < n; i++)
		n_train += !obs[i].test && predicted[obs[i].w][obs[i].a] &&
			   predicted[obs[i].w][obs[i].b];
	for (size_t i = 0; i < n; i++) {
		const struct obs *o = &obs[i];
		int g = predicted[o->w][o->a] && predicted[o->w][o->b] ? 0 : 1;
		/* the derived activities: the builtin model with Gavel types */
		struct colloc_interference_job ja = {
			colloc_interference_type(b,
						 colloc_interference_type_name(m, o->a)),
			0};
		struct colloc_interference_job jb = {
			colloc_interference_type(b,
						 colloc_interference_type_name(m, o->b)),
			0};

		if (!o->test)
			continue;
		add(&e[g][0], sim_speed(o->w, o->a, o->b, k), o->speed);
		add(&e[g][1], sim_speed(o->w, o->a, o->b, 1.0 / 3.0), o->speed);
		add(&e[g][2], sim_speed(o->w, o->a, o->b, 1.0), o->speed);
		add(&e[g][3], colloc_interference_speed(b, o->w, &ja, &jb, 1), o->speed);
		add(&e[g][4], 0.5, o->speed);
		add(&e[g][5], 1.0, o->speed);
	}
	printf("\nsimulator scale: SM activity (predicted) x k, builtin parameters, with "
	       "the ceiling\n");
	printf("predicted SM activity of the Gavel types (v100 p100 k80):\n");
	for (int t = 0; colloc_interference_type_name(m, t); t++)
		printf("  %-34s %.3f %.3f %.3f%s\n", colloc_interference_type_name(m, t),
		       sm_act[0][t], sm_act[1][t], sm_act[2][t],
		       predicted[0][t] ? "" : "  (assumed: no graph)");
	printf("k = %.4f, fitted on %zu training pairs of types with graphs\n", k,
	       n_train);
	for (int g = 0; g < 2; g++) {
		printf("held out, %s:       MAE     MAPE   (pairs)\n",
		       g ? "pairs with a graph-less type (assumed activity)"
			 : "both types with graphs (predicted activity)");
		row2("SM activity x k (fitted)", &e[g][0]);
		row2("SM activity x 1/3", &e[g][1]);
		row2("SM activity x 1", &e[g][2]);
		row2("derived per-type activities (no ceiling)", &e[g][3]);
		row2("baseline: fair share 1/n", &e[g][4]);
		row2("baseline: no interference", &e[g][5]);
	}
	printf("\n#define COLLOC_SIM_INTERFERENCE_SCALE %.3f\n", k);
	return 0;
}

static void row(const char *name, double mae, double mape)
{
	printf("  %-28s %8.4f %8.1f%%\n", name, mae, 100.0 * mape);
}

int main(int argc, char **argv)
{
	static const char *const workers[] = {"v100", "p100", "k80"};
	struct colloc_interference_report r;
	struct colloc_interference *m = NULL;
	const struct colloc_interference *b = colloc_interference_builtin();
	struct colloc_diag diag = {{0}};
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s simulation_throughputs.json\n", argv[0]);
		return 2;
	}
	rc = colloc_interference_load_gavel(argv[1], &m, &diag);
	if (rc == 0)
		rc = colloc_interference_fit(m, &r, &diag);
	if (rc) {
		fprintf(stderr, "fit_interference: %s\n", diag.msg);
		colloc_interference_destroy(m);
		return 1;
	}
	printf("measured pairs %zu (infeasible, skipped: %zu); train %zu, test %zu\n",
	       r.n_pairs, r.n_infeasible, r.n_train, r.n_test);
	printf("params: alpha %.4f  p %.4f  q %.4f   train RMS rel. error %.4f\n",
	       r.params[0], r.params[1], r.params[2], r.train_rmsre);
	printf("held-out half:                    MAE     MAPE\n");
	row("model", r.test_mae, r.test_mape);
	row("baseline: no interference", r.none_mae, r.none_mape);
	row("baseline: fair share 1/n", r.fair_mae, r.fair_mape);

	printf("\n/* builtin: params and activities (rows v100, p100, k80) */\n");
	printf("\t.params = {%.4f, %.4f, %.4f},\n\t.act = {\n", r.params[0], r.params[1],
	       r.params[2]);
	for (int w = 0; w < 3; w++) {
		int wi = colloc_interference_worker(workers[w]);

		printf("\t\t{");
		for (int t = 0; colloc_interference_type_name(b, t); t++) {
			int mt = colloc_interference_type(
				m, colloc_interference_type_name(b, t));
			double a = colloc_interference_activity(m, wi, mt);

			printf("%s%.3f", t ? ", " : "", a);
		}
		printf("},\n");
	}
	printf("\t},\n");
	rc = sim_scale(m);
	colloc_interference_destroy(m);
	return rc;
}
