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
 * Host resources (cpu_milli, memory_mib) and GPU type constraints
 * (gpu_spec: "V100M16|V100M32", empty or "nan" for none) are kept with the
 * job for the placement rules that read them (the fill mode,
 * colloc/sim_fill.h, and gpu_spec the event simulator on a node list,
 * colloc_sim_cluster_nodes). Not mapped: qos and pod_phase. The multigpu* lists
 * have no time columns and are refused at the header.
 */
#include <ctype.h>
#include <string.h>

#include "sim/trace_int.h"

enum {
	COL_NAME,
	COL_CPU_MILLI,
	COL_MEMORY_MIB,
	COL_GPU_SPEC,
	COL_NUM_GPU,
	COL_GPU_MILLI,
	COL_CREATION,
	COL_DELETION,
	COL_SCHEDULED,
	N_COLS
};

static const char *const columns[N_COLS] = {
	[COL_NAME] = "name",
	[COL_CPU_MILLI] = "cpu_milli",
	[COL_MEMORY_MIB] = "memory_mib",
	[COL_GPU_SPEC] = "gpu_spec",
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

/* Host requests, as bounded as the largest node could ever hold: 2^20
 * cores and 2^40 MiB. */
#define CPU_MILLI_MAX ((int64_t)1 << 30)
#define MEMORY_MIB_MAX ((int64_t)1 << 40)
/* One GPU type's name in gpu_spec. */
#define TYPE_MAX 31

/* gpu_spec into dst: '|'-separated type names of letters, digits, '-'
 * and '_'; empty names between bars are dropped; "nan" (pandas' empty) is
 * no constraint. */
static int gpu_spec(const struct colloc__trace_row *row, char *dst)
{
	const char *s = row->val[COL_GPU_SPEC] ? row->val[COL_GPU_SPEC] : "";
	size_t n = 0, len = 0;

	dst[0] = '\0';
	if (strcmp(s, "nan") == 0)
		return 0;
	for (const char *p = s;; p++) {
		if (*p == '|' || *p == '\0') {
			if (len > TYPE_MAX)
				return colloc__trace_fail(
					row, COL_GPU_SPEC,
					"a GPU type is longer than %d bytes", TYPE_MAX);
			len = 0;
			if (*p == '\0')
				break;
			if (n > 0 && dst[n - 1] != '|')
				dst[n++] = '|';
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return colloc__trace_fail(
				row, COL_GPU_SPEC,
				"byte 0x%02x is not part of a GPU type name "
				"(letters, digits, '-', '_', '|' between types)",
				(unsigned)(unsigned char)*p);
		if (n + 1 >= COLLOC_TRACE_SPEC_MAX)
			return colloc__trace_fail(row, COL_GPU_SPEC,
						  "is longer than %d bytes",
						  COLLOC_TRACE_SPEC_MAX - 1);
		dst[n++] = *p;
		len++;
	}
	if (n > 0 && dst[n - 1] == '|')
		n--;
	dst[n] = '\0';
	return 0;
}

/* The host requests and constraints every pod has, CPU-only ones too. */
static int host_part(const struct colloc__trace_row *row, struct colloc_trace_job *job)
{
	int64_t v;
	int rc;

	if (!colloc__trace_empty(row, COL_CPU_MILLI)) {
		if ((rc = colloc__trace_int(row, COL_CPU_MILLI, 0, CPU_MILLI_MAX, &v)))
			return rc;
		job->cpu_milli = v;
	}
	if (!colloc__trace_empty(row, COL_MEMORY_MIB)) {
		if ((rc = colloc__trace_int(row, COL_MEMORY_MIB, 0, MEMORY_MIB_MAX, &v)))
			return rc;
		job->host_mem_bytes = (uint64_t)v << 20;
	}
	return gpu_spec(row, job->gpu_spec);
}

static int alibaba_row(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		       enum colloc__trace_verdict *verdict)
{
	int64_t gpus, milli = 0, created, deleted, start;
	int rc;

	rc = colloc__trace_int(row, COL_NUM_GPU, 0, COLLOC__TRACE_GPUS_MAX, &gpus);
	if (rc)
		return rc;
	if ((rc = host_part(row, job)))
		return rc;
	if (gpus == 0 && !row->keep_all) {
		*verdict = COLLOC__ROW_CPU_ONLY;
		return 0;
	}
	rc = gpus == 0 ? 0 : colloc__trace_int(row, COL_GPU_MILLI, 0, 1000, &milli);
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
	if (deleted == start && !row->keep_all) {
		/* deleted within the second it started: at the trace's 1 s
		 * resolution there is no run time to simulate */
		*verdict = COLLOC__ROW_ZERO_LENGTH;
		return 0;
	}
	job->id = pod_id(row);
	job->submit_ms = created;
	job->duration_ms = deleted - start;
	job->n_gpus = (int)gpus;
	job->gpu_milli = gpus == 1 ? (int)milli : gpus == 0 ? 0 : 1000;
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
