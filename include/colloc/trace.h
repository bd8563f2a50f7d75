/*
 * colloc/trace.h — job traces for the simulator (`colloc sim`).
 *
 * A trace is a list of jobs with submit times, durations, GPU counts and,
 * where the trace says, the model trained and its batch size. Readers turn
 * each supported format into the same record, converting units (every time
 * here is in milliseconds) and validating every field:
 *
 *   alibaba2023  Alibaba PAI "openb" pod lists (seconds; gpu_milli is a
 *                fraction of one GPU in thousandths; CPU, host memory and
 *                GPU type constraints too)
 *   philly       the Philly-derived traces of Muri (milliseconds)
 *   gavel        Gavel's Philly VC traces (.trace, seconds)
 *   csv          colloc's own format (docs/trace-format.md)
 *
 * Ownership: colloc_trace_read() returns a trace the caller frees with
 * colloc_trace_destroy(); jobs[] and every string live in it.
 */
#ifndef COLLOC_TRACE_H
#define COLLOC_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"

#define COLLOC_TRACE_MODEL_MAX 48
/* GPU types a job may run on, '|'-separated ("V100M16|V100M32"). */
#define COLLOC_TRACE_SPEC_MAX 64

struct colloc_trace_job {
	uint64_t id; /* from the trace, or its row number */
	int64_t submit_ms; /* >= 0, relative to the trace's first job */
	int64_t duration_ms; /* > 0: run time when alone on its GPUs */
	int n_gpus; /* whole GPUs asked for, >= 1 */
	int gpu_milli; /* share of one GPU when n_gpus == 1 (1..1000) */
	int priority; /* higher first; 0 when the trace has none */
	char model[COLLOC_TRACE_MODEL_MAX]; /* "" when the trace has none */
	int64_t batch; /* 0 when the trace has none */
	uint64_t mem_bytes; /* GPU memory the trace states, 0 if none */
	/* Host resources and placement constraints (alibaba2023): */
	int64_t cpu_milli; /* CPU asked for, thousandths of a core; 0 none */
	uint64_t host_mem_bytes; /* main memory asked for; 0 none */
	/* GPU types allowed ("T4", "V100M16|V100M32"); "" any */
	char gpu_spec[COLLOC_TRACE_SPEC_MAX];
};

struct colloc_trace {
	char kind[16];
	size_t n_jobs;
	struct colloc_trace_job *jobs; /* sorted by submit_ms, then id */
	size_t skipped_rows; /* bad rows skipped (skip_bad_rows) */
	size_t cpu_only_rows; /* alibaba2023: pods with num_gpu 0 */
	size_t zero_length_rows; /* alibaba2023: pods deleted within the
				  * second they started (no run time at
				  * the trace's 1 s resolution) */
};

struct colloc_trace_opts {
	bool skip_bad_rows; /* count and skip bad rows instead of failing */
	size_t max_jobs; /* stop after this many jobs; 0 = no limit */
	size_t max_bytes; /* refuse larger files; 0 = 1 GiB */
	/*
	 * Keep every row that is a valid pod (alibaba2023 only): CPU-only
	 * pods become jobs with n_gpus 0, and pods without a run time
	 * (deleted within the second they started) jobs with duration_ms 0.
	 * For the fill mode (colloc/sim_fill.h), which reads requests, not
	 * times; colloc_sim_run() refuses such jobs.
	 */
	bool keep_all_pods;
};

/*
 * Read the trace at path in format kind ("alibaba2023", "philly", "gavel",
 * "csv"); docs/trace-format.md says how each is mapped. The whole file is
 * read into memory (at most opts->max_bytes). Submit times are shifted so
 * that the first job is at 0, and jobs are sorted stably by (submit_ms, id).
 *
 * Returns 0 and sets *out, or a negative code with a message in diag and
 * *out untouched:
 *   COLLOC_EUSAGE   unknown kind (the message lists the valid ones), NULL
 *                   arguments
 *   COLLOC_EFORMAT  a bad row ("PATH:LINE: column 'duration': '-5' is not
 *                   a positive number"), unless opts->skip_bad_rows, which
 *                   counts it in skipped_rows instead; a bad or missing
 *                   header (never skipped); a trace with no jobs
 *   COLLOC_ELIMIT   file larger than max_bytes, a line longer than 4096
 *                   bytes, more than 16 Mi jobs
 *   -errno          the file cannot be opened or read; -ENOMEM
 * opts may be NULL (all defaults).
 */
int colloc_trace_read(const char *kind, const char *path,
		      const struct colloc_trace_opts *opts, struct colloc_trace **out,
		      struct colloc_diag *diag);

/* The same from a buffer (for tests and fuzzing); name is used in messages
 * (NULL reads as "<buffer>"). buf need not be NUL-terminated; a NUL byte in
 * it is a bad row. */
int colloc_trace_parse(const char *kind, const char *name, const char *buf, size_t len,
		       const struct colloc_trace_opts *opts, struct colloc_trace **out,
		       struct colloc_diag *diag);

/* Free a trace; NULL is a no-op. */
void colloc_trace_destroy(struct colloc_trace *t);

#endif
