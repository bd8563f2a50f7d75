/*
 * fuzz_interference.c — libFuzzer target for the Gavel throughput loader
 * (colloc_interference_parse_gavel). The whole input is the JSON text. On
 * success the model is fitted when it has pairs and queried, and the
 * promises of the header are asserted: speeds in (0, 1], activities -1 or
 * in [0, 1]. The sanitizers are the rest of the oracle.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "colloc/interference.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_speed(double s)
{
	if (!(s > 0.0 && s <= 1.0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct colloc_interference *m = NULL;
	struct colloc_diag diag;

	colloc_diag_clear(&diag);
	if (colloc_interference_parse_gavel((const char *)data, size, &m, &diag) != 0)
		return 0;
	(void)colloc_interference_fit(m, NULL, &diag);
	for (int w = 0; w < COLLOC_INTERFERENCE_N_WORKERS; w++) {
		for (int a = 0; colloc_interference_type_name(m, a); a++) {
			struct colloc_interference_job ja = {a, 0.5}, jb = {a, 0.5};
			double act = colloc_interference_activity(m, w, a);

			if (act != -1.0 && !(act >= 0.0 && act <= 1.0))
				abort();
			for (int b = 0; colloc_interference_type_name(m, b); b++) {
				double p = colloc_interference_pair(m, w, a, b);

				if (!(p == -1.0 || (p >= 0.0 && p <= 1.5)))
					abort();
				jb.type = b;
				check_speed(colloc_interference_speed(m, w, &ja, &jb, 1));
			}
		}
	}
	colloc_interference_destroy(m);
	return 0;
}
