/*
 * trace_philly.c — the Philly-derived job traces of Muri (SIGCOMM '22,
 * simulator/trace-data/trace*.csv) as a colloc trace.
 *
 * Upstream columns: job_id, num_gpu, submit_time, iterations, model_name,
 * batch_size, duration, interval, iteration_time, resource_time_0..2,
 * priority. Times are in milliseconds (Muri's loader divides submit_time and
 * duration by 1000); duration is the run time alone, about iterations x
 * iteration_time. Muri's priority is 0 for a resource-guarantee job and 1
 * for an opportunistic one; colloc's is "higher first", so 0 becomes 1 and
 * 1 becomes 0.
 *
 * Not mapped: iterations, interval (does not match the submit gaps),
 * iteration_time and resource_time_* (Muri's interleaving model).
 */
#include "sim/trace_int.h"

enum {
	COL_JOB_ID,
	COL_NUM_GPU,
	COL_SUBMIT,
	COL_MODEL,
	COL_BATCH,
	COL_DURATION,
	COL_PRIORITY,
	N_COLS
};

static const char *const columns[N_COLS] = {
	[COL_JOB_ID] = "job_id",      [COL_NUM_GPU] = "num_gpu",
	[COL_SUBMIT] = "submit_time", [COL_MODEL] = "model_name",
	[COL_BATCH] = "batch_size",   [COL_DURATION] = "duration",
	[COL_PRIORITY] = "priority",
};

static int philly_row(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		      enum colloc__trace_verdict *verdict)
{
	int64_t id, gpus, v;
	int rc;

	rc = colloc__trace_int(row, COL_JOB_ID, 0, INT64_MAX, &id);
	if (!rc)
		rc = colloc__trace_int(row, COL_NUM_GPU, 1, COLLOC__TRACE_GPUS_MAX,
				       &gpus);
	if (!rc)
		rc = colloc__trace_time_ms(row, COL_SUBMIT, 1, false, &job->submit_ms);
	if (!rc)
		rc = colloc__trace_time_ms(row, COL_DURATION, 1, true, &job->duration_ms);
	if (!rc)
		rc = colloc__trace_model(row, COL_MODEL, job->model);
	if (rc)
		return rc;
	if (!colloc__trace_empty(row, COL_BATCH)) {
		rc = colloc__trace_int(row, COL_BATCH, 1, INT64_MAX, &job->batch);
		if (rc)
			return rc;
	}
	if (!colloc__trace_empty(row, COL_PRIORITY)) {
		rc = colloc__trace_int(row, COL_PRIORITY, 0, 1, &v);
		if (rc)
			return rc;
		job->priority = v == 0 ? 1 : 0;
	}
	job->id = (uint64_t)id;
	job->n_gpus = (int)gpus;
	job->gpu_milli = 1000;
	*verdict = COLLOC__ROW_JOB;
	return 0;
}

const struct colloc__trace_format colloc__trace_philly = {
	.kind = "philly",
	.sep = ',',
	.header = true,
	.strict = false,
	.comments = false,
	.columns = columns,
	.n_columns = N_COLS,
	.required = 1u << COL_JOB_ID | 1u << COL_NUM_GPU | 1u << COL_SUBMIT |
		    1u << COL_DURATION,
	.missing_hint = NULL,
	.row = philly_row,
};
