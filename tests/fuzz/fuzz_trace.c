/*
 * fuzz_trace.c — libFuzzer target for the trace readers (colloc/trace.h).
 *
 * The first byte chooses the reader and the options, the rest is the
 * trace:
 *   byte % 4      0 alibaba2023, 1 philly, 2 gavel, 3 csv
 *   byte & 4      skip_bad_rows
 *   byte & 8      max_jobs = 3
 * so the seeds can start with a digit: '0'..'3' read strictly, '4'..'7'
 * skip bad rows. Outcomes are not checked beyond the readers' promises on
 * success (jobs sorted, first at 0, fields in range), which are asserted
 * here; the sanitizers are the rest of the oracle.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "colloc/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct colloc_trace *t, size_t max_jobs)
{
	if (t->n_jobs == 0 || (max_jobs && t->n_jobs > max_jobs) ||
	    t->jobs[0].submit_ms != 0)
		abort();
	for (size_t i = 0; i < t->n_jobs; i++) {
		const struct colloc_trace_job *j = &t->jobs[i];

		if (j->duration_ms <= 0 || j->n_gpus < 1 || j->gpu_milli < 1 ||
		    j->gpu_milli > 1000 || j->model[COLLOC_TRACE_MODEL_MAX - 1] != '\0')
			abort();
		if (i && (j->submit_ms < j[-1].submit_ms ||
			  (j->submit_ms == j[-1].submit_ms && j->id < j[-1].id)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = {"alibaba2023", "philly", "gavel", "csv"};
	struct colloc_trace_opts opts = {0};
	struct colloc_trace *t = NULL;
	struct colloc_diag diag;

	if (size < 1)
		return 0;
	opts.skip_bad_rows = (data[0] & 4) != 0;
	opts.max_jobs = (data[0] & 8) ? 3 : 0;
	opts.max_bytes = (size_t)1 << 20;
	colloc_diag_clear(&diag);
	if (colloc_trace_parse(kinds[data[0] % 4], "fuzz", (const char *)data + 1,
			       size - 1, &opts, &t, &diag) == 0) {
		check(t, opts.max_jobs);
		colloc_trace_destroy(t);
	}
	return 0;
}
