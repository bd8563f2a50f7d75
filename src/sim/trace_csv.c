/*
 * trace_csv.c — colloc's own trace format (docs/trace-format.md).
 *
 * A header names the columns, in any order:
 *   id,submit_s,duration_s,gpus,gpu_milli,model,batch,mem,priority
 * submit_s, duration_s and gpus are required; the others may be left out
 * or left empty. Times are seconds with decimals; mem is a size such as
 * "6GiB" (colloc_parse_size). Lines starting with '#' are comments. There
 * is no quoting: no field may hold a comma.
 */
#include "colloc/units.h"
#include "sim/trace_int.h"

enum {
	COL_ID,
	COL_SUBMIT,
	COL_DURATION,
	COL_GPUS,
	COL_GPU_MILLI,
	COL_MODEL,
	COL_BATCH,
	COL_MEM,
	COL_PRIORITY,
	N_COLS
};

static const char *const columns[N_COLS] = {
	[COL_ID] = "id",
	[COL_SUBMIT] = "submit_s",
	[COL_DURATION] = "duration_s",
	[COL_GPUS] = "gpus",
	[COL_GPU_MILLI] = "gpu_milli",
	[COL_MODEL] = "model",
	[COL_BATCH] = "batch",
	[COL_MEM] = "mem",
	[COL_PRIORITY] = "priority",
};

static int csv_row(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		   enum colloc__trace_verdict *verdict)
{
	int64_t v;
	int rc;

	job->id = row->index;
	if (!colloc__trace_empty(row, COL_ID)) {
		rc = colloc__trace_int(row, COL_ID, 0, INT64_MAX, &v);
		if (rc)
			return rc;
		job->id = (uint64_t)v;
	}
	rc = colloc__trace_time_ms(row, COL_SUBMIT, 1000, false, &job->submit_ms);
	if (!rc)
		rc = colloc__trace_time_ms(row, COL_DURATION, 1000, true,
					   &job->duration_ms);
	if (!rc)
		rc = colloc__trace_int(row, COL_GPUS, 1, COLLOC__TRACE_GPUS_MAX, &v);
	if (!rc)
		rc = colloc__trace_model(row, COL_MODEL, job->model);
	if (rc)
		return rc;
	job->n_gpus = (int)v;
	job->gpu_milli = 1000;
	if (!colloc__trace_empty(row, COL_GPU_MILLI)) {
		rc = colloc__trace_int(row, COL_GPU_MILLI, 1, 1000, &v);
		if (rc)
			return rc;
		if (job->n_gpus > 1 && v != 1000)
			return colloc__trace_fail(
				row, COL_GPU_MILLI,
				"'%s' shares a GPU, which needs gpus = 1",
				row->val[COL_GPU_MILLI]);
		job->gpu_milli = (int)v;
	}
	if (!colloc__trace_empty(row, COL_BATCH)) {
		rc = colloc__trace_int(row, COL_BATCH, 1, INT64_MAX, &job->batch);
		if (rc)
			return rc;
	}
	if (!colloc__trace_empty(row, COL_MEM) &&
	    colloc_parse_size(row->val[COL_MEM], &job->mem_bytes) != 0)
		return colloc__trace_fail(row, COL_MEM,
					  "'%.40s' is not a size such as 6GiB",
					  row->val[COL_MEM]);
	if (!colloc__trace_empty(row, COL_PRIORITY)) {
		rc = colloc__trace_int(row, COL_PRIORITY, -1000000, 1000000, &v);
		if (rc)
			return rc;
		job->priority = (int)v;
	}
	*verdict = COLLOC__ROW_JOB;
	return 0;
}

const struct colloc__trace_format colloc__trace_csv = {
	.kind = "csv",
	.sep = ',',
	.header = true,
	.strict = true,
	.comments = true,
	.columns = columns,
	.n_columns = N_COLS,
	.required = 1u << COL_SUBMIT | 1u << COL_DURATION | 1u << COL_GPUS,
	.missing_hint = NULL,
	.row = csv_row,
};
