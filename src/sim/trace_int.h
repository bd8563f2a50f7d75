/*
 * trace_int.h — what the trace readers share: the format table entry each
 * format file defines, the row a reader is handed, and the field parsers
 * that write "PATH:LINE: column 'x': ..." messages. Not part of the API.
 *
 * trace.c owns the line loop (limits, comments, splitting, the header, the
 * skip_bad_rows policy, sorting); a format only maps one row's fields to a
 * struct colloc_trace_job.
 */
#ifndef COLLOC_SIM_TRACE_INT_H
#define COLLOC_SIM_TRACE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "colloc/trace.h"

/* Columns one format knows; bit i of required stands for column i. */
#define COLLOC__TRACE_MAX_COLS 16
/* Longest line, without its newline. */
#define COLLOC__TRACE_LINE_MAX 4096
/* Every time, after conversion: 1e15 ms is about 31,700 years, far past any
 * trace and far from int64 overflow when times are added. */
#define COLLOC__TRACE_MS_MAX ((int64_t)1000000000000000)
/* GPUs one job may ask for. */
#define COLLOC__TRACE_GPUS_MAX 65536

/* What a row described, when it is not a bad row. */
enum colloc__trace_verdict {
	COLLOC__ROW_JOB, /* *job is filled in */
	COLLOC__ROW_CPU_ONLY, /* counted in cpu_only_rows */
	COLLOC__ROW_ZERO_LENGTH, /* counted in zero_length_rows */
};

struct colloc__trace_format;

/* One data row, its fields by the format's column index. */
struct colloc__trace_row {
	const struct colloc__trace_format *fmt;
	const char *name; /* file name for messages */
	size_t line; /* 1-based line number */
	uint64_t index; /* 0-based data row number, for ids */
	const char *val[COLLOC__TRACE_MAX_COLS]; /* NULL: the file has no such column */
	struct colloc_diag *diag;
	bool keep_all; /* colloc_trace_opts.keep_all_pods */
};

struct colloc__trace_format {
	const char *kind;
	char sep; /* field separator */
	bool header; /* the first line that is not blank names the columns */
	bool strict; /* an unknown header column is an error */
	bool comments; /* lines starting with '#' are skipped */
	const char *const *columns; /* names by index; for a format without a
				     * header, the fields in order */
	size_t n_columns;
	uint32_t required; /* columns the header must have */
	const char *missing_hint; /* appended to "missing column" messages */
	/*
	 * Map one row. Returns 0 with *verdict set (and *job filled in for
	 * COLLOC__ROW_JOB), or COLLOC_EFORMAT with a message in row->diag.
	 * *job arrives zeroed.
	 */
	int (*row)(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		   enum colloc__trace_verdict *verdict);
};

extern const struct colloc__trace_format colloc__trace_alibaba;
extern const struct colloc__trace_format colloc__trace_philly;
extern const struct colloc__trace_format colloc__trace_gavel;
extern const struct colloc__trace_format colloc__trace_csv;

/* "NAME:LINE: column 'COL': " followed by the formatted text, into
 * row->diag; returns COLLOC_EFORMAT. */
/* "NAME:LINE: WHAT" or, with col (not NULL), "NAME:LINE: column 'COL':
 * WHAT", WHAT formatted from fmt and ap, as COLLOC_EFORMAT into diag: the
 * message every line-oriented reader of src/sim gives. */
int colloc__line_vfail(struct colloc_diag *diag, const char *name, size_t line,
		       const char *col, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

int colloc__trace_fail(const struct colloc__trace_row *row, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* True when the column is absent or its field is empty. */
bool colloc__trace_empty(const struct colloc__trace_row *row, int col);

/* A decimal integer in [min, max] (sign allowed only when min < 0). */
int colloc__trace_int(const struct colloc__trace_row *row, int col, int64_t min,
		      int64_t max, int64_t *out);

/*
 * A time in the column's unit (ms_per_unit: 1000 for seconds, 1 for
 * milliseconds), decimals allowed, rounded to whole milliseconds.
 * Must be >= 0, and with positive at least 1 ms after rounding; at most
 * COLLOC__TRACE_MS_MAX.
 */
int colloc__trace_time_ms(const struct colloc__trace_row *row, int col,
			  double ms_per_unit, bool positive, int64_t *out);

/* Milliseconds from a positive count of seconds held as a double (derived
 * values such as steps / throughput); col names the column it came from. */
int colloc__trace_seconds_to_ms(const struct colloc__trace_row *row, int col, double s,
				int64_t *out);

/* Copy a model name (may be empty) into dst[COLLOC_TRACE_MODEL_MAX]:
 * printable ASCII only, and it must fit. */
int colloc__trace_model(const struct colloc__trace_row *row, int col, char *dst);

#endif
