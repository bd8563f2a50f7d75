/*
 * nodes.c — heterogeneous node lists (colloc/sim_fill.h): the Alibaba
 * "openb" node CSVs, sn,cpu_milli,memory_mib,gpu,model.
 *
 * What it does: bounds the input (file size, line length, node count),
 * maps the header, validates every field with "PATH:LINE: column 'x'"
 * messages. What it does not: place anything (fill.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/sim_fill.h"
#include "sim/trace_int.h"

#define MAX_BYTES ((size_t)64 << 20)
#define LINE_MAX_BYTES 4096
#define QUOTE_MAX 40

enum { COL_SN, COL_CPU, COL_MEM, COL_GPU, COL_MODEL, N_COLS };

static const char *const col_name[N_COLS] = {"sn", "cpu_milli", "memory_mib", "gpu",
					     "model"};

struct nreader {
	const char *name;
	size_t line;
	int field_of[N_COLS];
	size_t n_fields;
	struct colloc_sim_nodes *out;
	size_t cap;
	struct colloc_diag *diag;
};

static int fail(const struct nreader *r, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(const struct nreader *r, int col, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = colloc__line_vfail(r->diag, r->name, r->line, col < 0 ? NULL : col_name[col],
				fmt, ap);
	va_end(ap);
	return rc;
}

/* A decimal integer in [0, max]. */
static int uint_field(const struct nreader *r, int col, const char *s, int64_t max,
		      int64_t *out)
{
	int64_t v = 0;

	if (!*s)
		return fail(r, col, "is empty");
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return fail(r, col, "'%.*s' is not a non-negative integer",
				    QUOTE_MAX, s);
		if (v > (max - (*p - '0')) / 10)
			return fail(r, col, "'%.*s' is out of range [0, %lld]", QUOTE_MAX,
				    s, (long long)max);
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

/* A name: printable, no separators, shorter than max. */
static int name_field(const struct nreader *r, int col, const char *s, char *dst,
		      size_t max, bool type)
{
	size_t n = strlen(s);

	if (n >= max)
		return fail(r, col, "'%.*s' is longer than %zu bytes", QUOTE_MAX, s,
			    max - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = type ? isalnum(c) || c == '-' || c == '_' : isgraph(c);

		if (!ok)
			return fail(r, col, "byte 0x%02x is not allowed in %s", c,
				    type ? "a GPU type (letters, digits, '-', '_')"
					 : "a node name");
	}
	memcpy(dst, s, n + 1);
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Split line in place at commas; returns the count, or N_COLS + 1 when
 * there are more fields than any valid row has. */
static size_t split(char *line, char **f)
{
	size_t n = 0;

	for (char *p = line;;) {
		char *c = strchr(p, ',');

		if (n == N_COLS)
			return N_COLS + 1;
		if (c)
			*c = '\0';
		f[n++] = trim(p);
		if (!c)
			return n;
		p = c + 1;
	}
}

static int header(struct nreader *r, char **f, size_t n)
{
	for (int c = 0; c < N_COLS; c++)
		r->field_of[c] = -1;
	if (n > N_COLS)
		return fail(r, -1,
			    "header has more than %d columns (expected %s,%s,%s,%s,%s)",
			    N_COLS, col_name[0], col_name[1], col_name[2], col_name[3],
			    col_name[4]);
	for (size_t i = 0; i < n; i++) {
		int c = 0;

		while (c < N_COLS && strcmp(f[i], col_name[c]) != 0)
			c++;
		if (c == N_COLS)
			return fail(r, -1,
				    "unknown column '%.*s' (a node list has sn, "
				    "cpu_milli, memory_mib, gpu, model)",
				    QUOTE_MAX, f[i]);
		if (r->field_of[c] >= 0)
			return fail(r, -1, "column '%s' appears twice", col_name[c]);
		r->field_of[c] = (int)i;
	}
	for (int c = 0; c < N_COLS; c++)
		if (r->field_of[c] < 0)
			return fail(r, -1, "missing column '%s'", col_name[c]);
	r->n_fields = n;
	return 0;
}

static int row(struct nreader *r, char **f, size_t n)
{
	struct colloc_sim_node nd;
	int64_t v = 0;
	int rc;

	if (n != r->n_fields)
		return fail(r, -1, "has %s%zu fields, the header has %zu",
			    n > N_COLS ? "more than " : "",
			    n > N_COLS ? (size_t)N_COLS : n, r->n_fields);
	memset(&nd, 0, sizeof(nd));
	if ((rc = name_field(r, COL_SN, f[r->field_of[COL_SN]], nd.name, sizeof(nd.name),
			     false)))
		return rc;
	if (!nd.name[0])
		return fail(r, COL_SN, "is empty");
	if ((rc = uint_field(r, COL_CPU, f[r->field_of[COL_CPU]], (int64_t)1 << 40, &v)))
		return rc;
	nd.cpu_milli = v;
	if ((rc = uint_field(r, COL_MEM, f[r->field_of[COL_MEM]], (int64_t)1 << 40, &v)))
		return rc;
	nd.mem_bytes = (uint64_t)v << 20;
	if ((rc = uint_field(r, COL_GPU, f[r->field_of[COL_GPU]],
			     COLLOC_SIM_NODE_GPUS_MAX, &v)))
		return rc;
	nd.n_gpus = (int)v;
	if ((rc = name_field(r, COL_MODEL, f[r->field_of[COL_MODEL]], nd.gpu_type,
			     sizeof(nd.gpu_type), true)))
		return rc;
	if (nd.n_gpus > 0 && !nd.gpu_type[0])
		return fail(r, COL_MODEL, "is empty, but the node has %d GPUs",
			    nd.n_gpus);
	if (nd.n_gpus == 0 && nd.gpu_type[0])
		return fail(r, COL_MODEL,
			    "'%s' names a GPU type, but the node has no GPUs",
			    nd.gpu_type);
	if (r->out->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct colloc_sim_node *nn;

		if (r->out->n >= COLLOC_SIM_NODES_MAX)
			return colloc_diag_set(r->diag, COLLOC_ELIMIT,
					       "%s: more than %d nodes", r->name,
					       COLLOC_SIM_NODES_MAX);
		nn = realloc(r->out->node, cap * sizeof(*nn));
		if (!nn)
			return colloc_diag_set(r->diag, -ENOMEM, "%s: out of memory",
					       r->name);
		r->out->node = nn;
		r->cap = cap;
	}
	r->out->node[r->out->n++] = nd;
	r->out->n_gpus += (size_t)nd.n_gpus;
	return 0;
}

int colloc_sim_nodes_parse(const char *name, const char *buf, size_t len,
			   struct colloc_sim_nodes **out, struct colloc_diag *diag)
{
	struct nreader r;
	char line[LINE_MAX_BYTES + 1];
	bool have_header = false;
	size_t pos = 0;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	r.name = name ? name : "<buffer>";
	r.diag = diag;
	if (!out || (!buf && len))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "colloc_sim_nodes_parse: NULL argument");
	if (len > MAX_BYTES)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "%s: larger than %zu bytes",
				       r.name, MAX_BYTES);
	r.out = calloc(1, sizeof(*r.out));
	if (!r.out)
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", r.name);
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char *f[N_COLS + 1], *first;
		size_t nf;

		r.line++;
		if (n > LINE_MAX_BYTES) {
			rc = colloc_diag_set(diag, COLLOC_ELIMIT,
					     "%s:%zu: line is longer than %d bytes",
					     r.name, r.line, LINE_MAX_BYTES);
			goto bad;
		}
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos += n + (nl ? 1 : 0);
		if (memchr(line, '\0', n)) {
			rc = fail(&r, -1, "contains a NUL byte");
			goto bad;
		}
		first = trim(line);
		if (!*first)
			continue;
		nf = split(first, f);
		rc = have_header ? row(&r, f, nf) : header(&r, f, nf);
		if (rc)
			goto bad;
		have_header = true;
	}
	if (r.out->n == 0) {
		rc = colloc_diag_set(diag, COLLOC_EFORMAT, "%s: no nodes in the list",
				     r.name);
		goto bad;
	}
	*out = r.out;
	return 0;
bad:
	colloc_sim_nodes_destroy(r.out);
	return rc;
}

int colloc_sim_nodes_read(const char *path, struct colloc_sim_nodes **out,
			  struct colloc_diag *diag)
{
	FILE *f;
	char *buf;
	size_t len = 0;
	int rc;

	if (!path || !out)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "colloc_sim_nodes_read: NULL argument");
	f = fopen(path, "rb");
	if (!f) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	/* One byte past the limit tells "exactly the limit" from "more". */
	buf = malloc(MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
	}
	len = fread(buf, 1, MAX_BYTES + 1, f);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return colloc_diag_set(diag, -EIO, "%s: read error", path);
	}
	fclose(f);
	if (len > MAX_BYTES) {
		free(buf);
		return colloc_diag_set(diag, COLLOC_ELIMIT, "%s: larger than %zu bytes",
				       path, MAX_BYTES);
	}
	rc = colloc_sim_nodes_parse(path, buf, len, out, diag);
	free(buf);
	return rc;
}

void colloc_sim_nodes_destroy(struct colloc_sim_nodes *nodes)
{
	if (!nodes)
		return;
	free(nodes->node);
	free(nodes);
}
