/*
 * trace.c — reading job traces into struct colloc_trace (colloc/trace.h).
 *
 * What it does: bounds the input (file size, line length, field count, job
 * count), splits lines into fields, maps the header onto the format's
 * columns, hands each row to the format's mapper (trace_alibaba.c,
 * trace_philly.c, trace_gavel.c, trace_csv.c), applies the skip_bad_rows
 * policy, then sorts the jobs stably by (submit_ms, id) and shifts times so
 * that the first job is at 0. It also holds the field parsers every format
 * uses, so that all messages read alike. What it does not do: simulate,
 * or know what a model name means.
 */
#include "colloc/trace.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/trace_int.h"

#define DEF_MAX_BYTES ((size_t)1 << 30)
/* Fields in one line; the widest format (philly) has 13. */
#define MAX_FIELDS 64
/* Jobs in one trace: bounds memory (about 100 bytes a job) whatever the
 * file size limit. */
#define MAX_JOBS ((size_t)1 << 24)
/* Read files in pieces of this size, so that pipes work too. */
#define READ_CHUNK ((size_t)1 << 20)
/* Longest field value quoted back in a message. */
#define QUOTE_MAX 40

static const struct colloc__trace_format *const formats[] = {
	&colloc__trace_alibaba,
	&colloc__trace_philly,
	&colloc__trace_gavel,
	&colloc__trace_csv,
};
#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

/* --- field parsers ------------------------------------------------------- */

int colloc__line_vfail(struct colloc_diag *diag, const char *name, size_t line,
		       const char *col, const char *fmt, va_list ap)
{
	char what[COLLOC_DIAG_MAX];

	vsnprintf(what, sizeof(what), fmt, ap);
	if (!col)
		return colloc_diag_set(diag, COLLOC_EFORMAT, "%s:%zu: %s", name, line,
				       what);
	return colloc_diag_set(diag, COLLOC_EFORMAT, "%s:%zu: column '%s': %s", name,
			       line, col, what);
}

int colloc__trace_fail(const struct colloc__trace_row *row, int col, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = colloc__line_vfail(row->diag, row->name, row->line,
				col < 0 ? NULL : row->fmt->columns[col], fmt, ap);
	va_end(ap);
	return rc;
}

bool colloc__trace_empty(const struct colloc__trace_row *row, int col)
{
	return !row->val[col] || !row->val[col][0];
}

/* The field, or a message saying it is missing (NULL then). */
static const char *need(const struct colloc__trace_row *row, int col)
{
	if (colloc__trace_empty(row, col)) {
		colloc__trace_fail(row, col, "is empty");
		return NULL;
	}
	return row->val[col];
}

int colloc__trace_int(const struct colloc__trace_row *row, int col, int64_t min,
		      int64_t max, int64_t *out)
{
	const char *s = need(row, col);
	char *end;
	long long v;

	if (!s)
		return COLLOC_EFORMAT;
	/* strtoll also takes leading spaces and '+'; the trace must not */
	if (!isdigit((unsigned char)s[0]) &&
	    !(s[0] == '-' && isdigit((unsigned char)s[1])))
		return colloc__trace_fail(row, col, "'%.*s' is not an integer", QUOTE_MAX,
					  s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return colloc__trace_fail(row, col, "'%.*s' is not an integer", QUOTE_MAX,
					  s);
	if (errno == ERANGE || v < min || v > max)
		return colloc__trace_fail(row, col, "'%.*s' is out of range [%lld, %lld]",
					  QUOTE_MAX, s, (long long)min, (long long)max);
	*out = (int64_t)v;
	return 0;
}

/* A plain decimal number: digits, one point, an exponent; no hex, inf or
 * nan, which strtod would take. */
static bool is_decimal(const char *s)
{
	bool digits = false;

	if (*s == '-' || *s == '+')
		s++;
	for (; isdigit((unsigned char)*s) || *s == '.'; s++)
		digits |= *s != '.';
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!isdigit((unsigned char)*s))
			return false;
		while (isdigit((unsigned char)*s))
			s++;
	}
	return *s == '\0';
}

int colloc__trace_time_ms(const struct colloc__trace_row *row, int col,
			  double ms_per_unit, bool positive, int64_t *out)
{
	const char *s = need(row, col);
	const char *what = positive ? "a positive number" : "a non-negative number";
	char *end;
	double v;

	if (!s)
		return COLLOC_EFORMAT;
	if (!is_decimal(s))
		return colloc__trace_fail(row, col, "'%.*s' is not %s", QUOTE_MAX, s,
					  what);
	v = strtod(s, &end);
	if (*end || !isfinite(v) || v < 0 || (positive && v == 0))
		return colloc__trace_fail(row, col, "'%.*s' is not %s", QUOTE_MAX, s,
					  what);
	v *= ms_per_unit;
	/* compare as double before converting: a cast of an out-of-range
	 * double to an integer is undefined */
	if (!(v <= (double)COLLOC__TRACE_MS_MAX))
		return colloc__trace_fail(row, col, "'%.*s' is too large (over %lld ms)",
					  QUOTE_MAX, s, (long long)COLLOC__TRACE_MS_MAX);
	*out = (int64_t)llround(v);
	if (positive && *out < 1)
		return colloc__trace_fail(row, col, "'%.*s' is shorter than 1 ms",
					  QUOTE_MAX, s);
	return 0;
}

int colloc__trace_seconds_to_ms(const struct colloc__trace_row *row, int col, double s,
				int64_t *out)
{
	double ms = s * 1000.0;

	if (!(ms <= (double)COLLOC__TRACE_MS_MAX))
		return colloc__trace_fail(row, col, "gives a run time over %lld ms",
					  (long long)COLLOC__TRACE_MS_MAX);
	if (!(ms >= 0.5))
		return colloc__trace_fail(row, col, "gives a run time under 1 ms");
	*out = (int64_t)llround(ms);
	return 0;
}

int colloc__trace_model(const struct colloc__trace_row *row, int col, char *dst)
{
	const char *s = row->val[col] ? row->val[col] : "";
	size_t n = strlen(s);

	if (n >= COLLOC_TRACE_MODEL_MAX)
		return colloc__trace_fail(row, col, "'%.*s...' is longer than %d bytes",
					  QUOTE_MAX, s, COLLOC_TRACE_MODEL_MAX - 1);
	for (size_t i = 0; i < n; i++) {
		if (!isprint((unsigned char)s[i]))
			return colloc__trace_fail(
				row, col, "has a byte 0x%02x that is not printable ASCII",
				(unsigned)(unsigned char)s[i]);
	}
	memcpy(dst, s, n + 1);
	return 0;
}

/* --- the line loop ----------------------------------------------------- */

struct reader {
	const struct colloc__trace_format *fmt;
	const char *name;
	struct colloc_trace_opts opts;
	struct colloc_trace *t;
	size_t cap;
	bool have_header;
	int field_of[COLLOC__TRACE_MAX_COLS]; /* column index -> field, -1 absent */
	size_t n_header_fields;
	uint64_t data_rows;
	struct colloc_diag row_diag; /* bad rows write here; copied out on failure */
	char line[COLLOC__TRACE_LINE_MAX + 1];
};

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* Split r->line in place; returns the number of fields, or MAX_FIELDS + 1
 * when there are more. */
static size_t split(struct reader *r, char **fields)
{
	char *p = r->line;
	size_t n = 0;

	for (;;) {
		char *sep = strchr(p, r->fmt->sep);

		if (n == MAX_FIELDS)
			return MAX_FIELDS + 1;
		if (sep)
			*sep = '\0';
		/* tabs separate gavel's fields, so only spaces are padding there */
		fields[n++] = r->fmt->sep == '\t' ? p : trim(p);
		if (!sep)
			return n;
		p = sep + 1;
	}
}

static int read_header(struct reader *r, char **fields, size_t n, size_t line,
		       struct colloc_diag *diag)
{
	const struct colloc__trace_format *f = r->fmt;

	if (n > MAX_FIELDS)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s:%zu: header has more than %d columns", r->name,
				       line, MAX_FIELDS);
	for (size_t i = 0; i < n; i++) {
		size_t c = 0;

		while (c < f->n_columns && strcmp(fields[i], f->columns[c]) != 0)
			c++;
		if (c == f->n_columns) {
			if (f->strict)
				return colloc_diag_set(diag, COLLOC_EFORMAT,
						       "%s:%zu: unknown column '%.*s' "
						       "(see docs/trace-format.md)",
						       r->name, line, QUOTE_MAX,
						       fields[i]);
			continue;
		}
		if (r->field_of[c] >= 0)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%zu: column '%s' appears twice",
					       r->name, line, f->columns[c]);
		r->field_of[c] = (int)i;
	}
	for (size_t c = 0; c < f->n_columns; c++) {
		if ((f->required >> c & 1u) && r->field_of[c] < 0)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%zu: missing column '%s' (kind %s)%s",
					       r->name, line, f->columns[c], f->kind,
					       f->missing_hint ? f->missing_hint : "");
	}
	r->n_header_fields = n;
	r->have_header = true;
	return 0;
}

static int add_job(struct reader *r, const struct colloc_trace_job *job,
		   struct colloc_diag *diag)
{
	struct colloc_trace *t = r->t;

	if (t->n_jobs == r->cap) {
		size_t ncap = r->cap ? 2 * r->cap : 256;
		struct colloc_trace_job *nj;

		if (ncap > MAX_JOBS)
			ncap = MAX_JOBS;
		if (t->n_jobs >= ncap)
			return colloc_diag_set(
				diag, COLLOC_ELIMIT,
				"%s: more than %zu jobs; set max_jobs to read a prefix",
				r->name, MAX_JOBS);
		/* ncap <= MAX_JOBS, so the product cannot overflow */
		nj = realloc(t->jobs, ncap * sizeof(*nj));
		if (!nj)
			return colloc_diag_set(diag, -ENOMEM, "%s: out of memory",
					       r->name);
		t->jobs = nj;
		r->cap = ncap;
	}
	t->jobs[t->n_jobs++] = *job;
	return 0;
}

/* One line, already copied into r->line without its newline. */
static int do_line(struct reader *r, size_t len, size_t line, struct colloc_diag *diag)
{
	const struct colloc__trace_format *f = r->fmt;
	struct colloc__trace_row row;
	struct colloc_trace_job job;
	enum colloc__trace_verdict verdict = COLLOC__ROW_JOB;
	char *fields[MAX_FIELDS];
	char *first;
	size_t n;
	int rc;

	memset(&row, 0, sizeof(row));
	row.fmt = f;
	row.name = r->name;
	row.line = line;
	row.diag = &r->row_diag;
	row.keep_all = r->opts.keep_all_pods;

	if (len && r->line[len - 1] == '\r')
		r->line[--len] = '\0';
	if (memchr(r->line, '\0', len)) {
		if (f->header && !r->have_header)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%zu: header contains a NUL byte",
					       r->name, line);
		row.index = r->data_rows++;
		rc = colloc__trace_fail(&row, -1, "contains a NUL byte");
		goto bad;
	}
	for (first = r->line; *first == ' ' || *first == '\t'; first++)
		;
	if (!*first)
		return 0; /* blank lines are padding in every format */
	if (f->comments && *first == '#')
		return 0;
	n = split(r, fields);
	if (f->header && !r->have_header)
		return read_header(r, fields, n, line, diag);

	row.index = r->data_rows++;
	if (f->header && n != r->n_header_fields) {
		rc = colloc__trace_fail(&row, -1, "has %s%zu fields, the header has %zu",
					n > MAX_FIELDS ? "more than " : "",
					n > MAX_FIELDS ? (size_t)MAX_FIELDS : n,
					r->n_header_fields);
		goto bad;
	}
	if (!f->header && n != f->n_columns) {
		rc = colloc__trace_fail(&row, -1, "has %s%zu fields, expected %zu",
					n > MAX_FIELDS ? "more than " : "",
					n > MAX_FIELDS ? (size_t)MAX_FIELDS : n,
					f->n_columns);
		goto bad;
	}
	for (size_t c = 0; c < f->n_columns; c++) {
		int at = f->header ? r->field_of[c] : (int)c;

		row.val[c] = at >= 0 ? fields[at] : NULL;
	}
	memset(&job, 0, sizeof(job));
	rc = f->row(&row, &job, &verdict);
	if (rc)
		goto bad;
	switch (verdict) {
	case COLLOC__ROW_CPU_ONLY:
		r->t->cpu_only_rows++;
		return 0;
	case COLLOC__ROW_ZERO_LENGTH:
		r->t->zero_length_rows++;
		return 0;
	case COLLOC__ROW_JOB:
		break;
	}
	return add_job(r, &job, diag);
bad:
	if (rc == COLLOC_EFORMAT && r->opts.skip_bad_rows) {
		r->t->skipped_rows++;
		return 0;
	}
	if (diag)
		memcpy(diag->msg, r->row_diag.msg, sizeof(diag->msg));
	return rc;
}

static int cmp_job(const struct colloc_trace_job *a, const struct colloc_trace_job *b)
{
	if (a->submit_ms != b->submit_ms)
		return a->submit_ms < b->submit_ms ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return 0;
}

/* Bottom-up merge sort: stable (qsort is not), so rows that tie on
 * (submit_ms, id) keep their order in the file. */
static int sort_jobs(struct colloc_trace *t)
{
	struct colloc_trace_job *tmp, *src = t->jobs, *dst;
	size_t n = t->n_jobs;
	bool sorted = true;

	for (size_t i = 1; i < n && sorted; i++)
		sorted = cmp_job(&t->jobs[i - 1], &t->jobs[i]) <= 0;
	if (sorted)
		return 0; /* the usual case: traces come in submit order */
	/* n <= MAX_JOBS, so the product cannot overflow */
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (size_t w = 1; w < n; w *= 2) {
		struct colloc_trace_job *swap;

		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = mid + w < n ? mid + w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				dst[k++] = cmp_job(&src[j], &src[i]) < 0 ? src[j++]
									 : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != t->jobs)
		memcpy(t->jobs, src, n * sizeof(*src));
	free(tmp);
	return 0;
}

static const struct colloc__trace_format *find_format(const char *kind)
{
	for (size_t i = 0; kind && i < N_FORMATS; i++) {
		if (strcmp(kind, formats[i]->kind) == 0)
			return formats[i];
	}
	return NULL;
}

static int no_jobs(const char *name, const struct colloc_trace *t,
		   struct colloc_diag *diag)
{
	return colloc_diag_set(
		diag, COLLOC_EFORMAT,
		"%s: no jobs in the trace (%zu bad rows skipped, %zu CPU-only, "
		"%zu zero-length)",
		name, t->skipped_rows, t->cpu_only_rows, t->zero_length_rows);
}

int colloc_trace_parse(const char *kind, const char *name, const char *buf, size_t len,
		       const struct colloc_trace_opts *opts, struct colloc_trace **out,
		       struct colloc_diag *diag)
{
	const struct colloc__trace_format *f = find_format(kind);
	struct reader *r;
	size_t pos = 0, line = 0;
	int rc = 0;

	if (!f)
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"unknown trace kind '%.*s' (valid: alibaba2023, philly, "
			"gavel, csv)",
			QUOTE_MAX, kind ? kind : "(null)");
	if (!out || (!buf && len))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "colloc_trace_parse: NULL argument");
	if (!name)
		name = "<buffer>";
	r = calloc(1, sizeof(*r));
	if (!r)
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", name);
	if (opts)
		r->opts = *opts;
	if (!r->opts.max_bytes)
		r->opts.max_bytes = DEF_MAX_BYTES;
	if (len > r->opts.max_bytes) {
		rc = colloc_diag_set(diag, COLLOC_ELIMIT,
				     "%s: %zu bytes is over the limit of %zu", name, len,
				     r->opts.max_bytes);
		goto out_reader;
	}
	r->fmt = f;
	r->name = name;
	for (size_t c = 0; c < COLLOC__TRACE_MAX_COLS; c++)
		r->field_of[c] = -1;
	r->t = calloc(1, sizeof(*r->t));
	if (!r->t) {
		rc = colloc_diag_set(diag, -ENOMEM, "%s: out of memory", name);
		goto out_reader;
	}
	snprintf(r->t->kind, sizeof(r->t->kind), "%s", f->kind);
	/* a UTF-8 byte order mark, as spreadsheets write it */
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		line++;
		if (n > COLLOC__TRACE_LINE_MAX) {
			rc = colloc_diag_set(diag, COLLOC_ELIMIT,
					     "%s:%zu: line is longer than %d bytes", name,
					     line, COLLOC__TRACE_LINE_MAX);
			goto out_trace;
		}
		memcpy(r->line, buf + pos, n);
		r->line[n] = '\0';
		pos += n + (nl ? 1 : 0);
		rc = do_line(r, n, line, diag);
		if (rc)
			goto out_trace;
		if (r->opts.max_jobs && r->t->n_jobs >= r->opts.max_jobs)
			break;
	}
	if (f->header && !r->have_header) {
		rc = colloc_diag_set(diag, COLLOC_EFORMAT,
				     "%s: empty file (no header line)", name);
		goto out_trace;
	}
	if (r->t->n_jobs == 0) {
		rc = no_jobs(name, r->t, diag);
		goto out_trace;
	}
	rc = sort_jobs(r->t);
	if (rc) {
		colloc_diag_printf(diag, "%s: out of memory", name);
		goto out_trace;
	}
	for (size_t i = 1; i < r->t->n_jobs; i++)
		r->t->jobs[i].submit_ms -= r->t->jobs[0].submit_ms;
	r->t->jobs[0].submit_ms = 0;
	*out = r->t;
	free(r);
	return 0;
out_trace:
	colloc_trace_destroy(r->t);
out_reader:
	free(r);
	return rc;
}

/* Read all of fd into a malloc'd buffer; COLLOC_ELIMIT past max bytes. */
static int slurp(int fd, size_t max, char **out, size_t *out_len)
{
	/* one byte past the limit tells "exactly max" from "more" */
	size_t limit = max < SIZE_MAX ? max + 1 : SIZE_MAX;
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t got;

		if (len == cap) {
			size_t ncap = cap ? (cap > limit / 2 ? limit : 2 * cap)
					  : (READ_CHUNK < limit ? READ_CHUNK : limit);
			char *nb = realloc(buf, ncap);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len > max) {
			free(buf);
			return COLLOC_ELIMIT;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

int colloc_trace_read(const char *kind, const char *path,
		      const struct colloc_trace_opts *opts, struct colloc_trace **out,
		      struct colloc_diag *diag)
{
	size_t max = opts && opts->max_bytes ? opts->max_bytes : DEF_MAX_BYTES;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	if (!find_format(kind))
		return colloc_trace_parse(kind, path, "", 0, opts, out, diag);
	if (!path || !out)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "colloc_trace_read: NULL argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	rc = slurp(fd, max, &buf, &len);
	close(fd);
	if (rc == COLLOC_ELIMIT)
		return colloc_diag_set(diag, rc, "%s: larger than the limit of %zu bytes",
				       path, max);
	if (rc)
		return colloc_diag_set(diag, rc, "%s: %s", path, colloc_strerror(rc));
	rc = colloc_trace_parse(kind, path, buf, len, opts, out, diag);
	free(buf);
	return rc;
}

void colloc_trace_destroy(struct colloc_trace *t)
{
	if (!t)
		return;
	free(t->jobs);
	free(t);
}
