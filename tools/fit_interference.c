/*
 * fit_interference.c — fit the interference model (colloc/interference.h)
 * on Gavel's simulation_throughputs.json and print the held-out errors
 * next to the two baselines measured in the same run, then the parameters
 * and activities as the C table src/sim/interference.c compiles in.
 *
 *   build/fit_interference /work/shared/data/gavel/simulation_throughputs.json
 */
#include <stdio.h>

#include "colloc/interference.h"

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
	colloc_interference_destroy(m);
	return 0;
}
