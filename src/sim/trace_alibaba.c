/*
 * trace_alibaba.c — Alibaba PAI "openb" pod lists (cluster-trace-gpu-v2023,
 * the FGD paper's trace) as a colloc trace.
 *
 * Upstream columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli,
 * gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time,
 * times in whole seconds from the trace's start. The trace stores no run
 * time; the one used here is the proxy the data README suggests:
 * deletion_time - scheduled_time, or deletion_time - creation_time for pods
 * never scheduled (Pending). Pods still running when the trace ends carry
 * the trace's end as deletion_time, so their run time is a lower bound.
 *
 * Not mapped: cpu_milli and memory_mib (host resources), gpu_spec (GPU type
 * constraints), qos and pod_phase. The multigpu* lists have no time columns
 * and are refused at the header.
 */
#include <string.h>

#include "sim/trace_int.h"

enum {
	COL_NAME,
	COL_NUM_GPU,
	COL_GPU_MILLI,
	COL_CREATION,
	COL_DELETION,
	COL_SCHEDULED,
	N_COLS
};

static const char *const columns[N_COLS] = {
	[COL_NAME] = "name",
	[COL_NUM_GPU] = "num_gpu",
	[COL_GPU_MILLI] = "gpu_milli",
	[COL_CREATION] = "creation_time",
	[COL_DELETION] = "deletion_time",
	[COL_SCHEDULED] = "scheduled_time",
};

/* "openb-pod-0017" is job 17; a name without a number keeps the row's. */
static uint64_t pod_id(const struct colloc__trace_row *row)
{
	const char *s = row->val[COL_NAME] ? row->val[COL_NAME] : "";
	size_t n = strlen(s), start = n;
	uint64_t v = 0;

	while (start > 0 && s[start - 1] >= '0' && s[start - 1] <= '9')
		start--;
	if (start == n || n - start > 18)
		return row->index;
	for (size_t i = start; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	return v;
}

static int alibaba_row(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		       enum colloc__trace_verdict *verdict)
{
	int64_t gpus, milli, created, deleted, start;
	int rc;

	rc = colloc__trace_int(row, COL_NUM_GPU, 0, COLLOC__TRACE_GPUS_MAX, &gpus);
	if (rc)
		return rc;
	if (gpus == 0) {
		*verdict = COLLOC__ROW_CPU_ONLY;
		return 0;
	}
	rc = colloc__trace_int(row, COL_GPU_MILLI, 0, 1000, &milli);
	if (rc)
		return rc;
	/* gpu_milli describes sharing, which only single-GPU pods do; the
	 * multi-GPU pods of the trace all say 1000 */
	if (gpus == 1 && milli == 0)
		return colloc__trace_fail(row, COL_GPU_MILLI,
					  "'0' is not a share of a GPU (1 to 1000)");
	rc = colloc__trace_time_ms(row, COL_CREATION, 1000, false, &created);
	if (!rc)
		rc = colloc__trace_time_ms(row, COL_DELETION, 1000, false, &deleted);
	if (rc)
		return rc;
	start = created;
	if (!colloc__trace_empty(row, COL_SCHEDULED)) {
		rc = colloc__trace_time_ms(row, COL_SCHEDULED, 1000, false, &start);
		if (rc)
			return rc;
	}
	if (deleted < start)
		return colloc__trace_fail(row, COL_DELETION, "'%s' is before %s '%s'",
					  row->val[COL_DELETION],
					  colloc__trace_empty(row, COL_SCHEDULED)
						  ? "creation_time"
						  : "scheduled_time",
					  colloc__trace_empty(row, COL_SCHEDULED)
						  ? row->val[COL_CREATION]
						  : row->val[COL_SCHEDULED]);
	if (deleted == start) {
		/* deleted within the second it started: at the trace's 1 s
		 * resolution there is no run time to simulate */
		*verdict = COLLOC__ROW_ZERO_LENGTH;
		return 0;
	}
	job->id = pod_id(row);
	job->submit_ms = created;
	job->duration_ms = deleted - start;
	job->n_gpus = (int)gpus;
	job->gpu_milli = gpus == 1 ? (int)milli : 1000;
	*verdict = COLLOC__ROW_JOB;
	return 0;
}

const struct colloc__trace_format colloc__trace_alibaba = {
	.kind = "alibaba2023",
	.sep = ',',
	.header = true,
	.strict = false,
	.comments = false,
	.columns = columns,
	.n_columns = N_COLS,
	.required = 1u << COL_NUM_GPU | 1u << COL_GPU_MILLI | 1u << COL_CREATION |
		    1u << COL_DELETION | 1u << COL_SCHEDULED,
	.missing_hint =
		"; the multigpu* pod lists have no time columns and cannot drive a "
		"simulation",
	.row = alibaba_row,
};
