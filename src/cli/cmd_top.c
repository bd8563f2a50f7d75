/*
 * cmd_top.c — `colloc top`: a live screen of collocd's GPUs (memory, with the
 * part held back for starting jobs marked apart, utilization, SM activity,
 * power), the jobs running on each and the queue, redrawn every interval
 * until 'q'. With --once, or when stdin or stdout is not a terminal, it
 * prints one plain-text frame instead.
 *
 * Three layers, so that the plain and the ncurses output are the same text:
 *   - fetching: GET /v1/status, /v1/gpus and /v1/jobs?state=queued,running
 *     read leniently into a struct top_snap (a field that is missing or of
 *     another type is kept as absent and drawn as "-", never as 0);
 *   - formatting: a snapshot into a struct top_frame, lines of printable
 *     ASCII with one attribute per character, cut to a width and a height;
 *   - output: the frame printed to stdout, or put on an ncurses screen.
 *
 * Not a monitor of processes or of GPUs collocd does not manage: it shows
 * what collocd reports. When collocd goes away the screen says so and keeps
 * retrying; only the first request decides the exit status (3 when collocd
 * cannot be reached), before the terminal is touched.
 */
#include <cjson/cJSON.h>
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json_get.h"
#include "colloc/units.h"

/* A job's GPUs are a bit mask over the snapshot's GPUs. */
#define TOP_MAX_GPUS 64
#define TOP_MAX_JOBS 4096
#define TOP_MAX_GPU_JOBS 64
/* Widest line drawn; wider terminals get blank space on the right. */
#define TOP_LINE_MAX 512
/* --once prints at this layout width, and at most this many lines. */
#define TOP_ONCE_WIDTH 120
#define TOP_ONCE_MAX_LINES 4096
#define TOP_INTERVAL_MIN_MS 100
#define TOP_INTERVAL_MAX_MS 3600000
/* getch() waits at most this long, so that a signal is seen promptly even
 * when the interval is long. */
#define TOP_WAIT_SLICE_MS 250
#define TOP_NOTE_MS 3000
/* Job ids are JSON numbers: exact in a double up to 2^53. */
#define TOP_MAX_JOB_ID ((uint64_t)1 << 53)

static const char top_usage[] =
	"usage: colloc top [--interval DURATION] [--all] [--once] [--socket PATH]\n"
	"\n"
	"A live screen of collocd's GPUs and the jobs on them, redrawn every\n"
	"interval: per GPU its memory (a bar: '#' used, '=' reserved for jobs that\n"
	"started but have not reached their need yet, '.' free), utilization, SM\n"
	"activity and power, and under it the jobs running there (id, user, name,\n"
	"memory need, measured peak); then the queued jobs that fit on the screen.\n"
	"\n"
	"keys: q (or Ctrl-C) quit, r refresh now, a everyone's jobs / yours\n"
	"(administrators).\n"
	"\n"
	"  --interval DURATION  time between refreshes, 100ms..1h (default 1s)\n"
	"  --all                everyone's jobs (administrators; the default for\n"
	"                       them)\n"
	"  --once               print one plain-text frame and exit (also what\n"
	"                       happens when stdin or stdout is not a terminal)\n"
	"  --socket PATH        collocd's socket (default: $COLLOC_SOCKET, else\n"
	"                       $XDG_RUNTIME_DIR/collocd.sock, else\n"
	"                       /tmp/collocd-UID.sock; /run/collocd.sock for root)\n"
	"  -h, --help           this help\n"
	"\n"
	"A value collocd does not report shows as \"-\". When collocd goes away\n"
	"while the screen is up, the screen says so and keeps retrying.\n"
	"\n"
	"exit status: 0 success, 1 collocd refused the first request (--all by\n"
	"someone who is not an administrator), 2 invalid command line,\n"
	"3 collocd unreachable at start.\n";

/* ---------------------------------------------------------------------- */
/* The snapshot: what one refresh learnt                                  */

struct top_gpu {
	char index[16];
	char uuid[64];
	char name[64];
	uint64_t mem_total_bytes, mem_used_bytes, mem_reserved_bytes;
	bool has_total, has_used, has_reserved;
	double util_pct; /* NAN when absent */
	double sm_active; /* 0..1, NAN when absent or null */
	double power_w; /* NAN when absent */
	uint64_t job_ids[TOP_MAX_GPU_JOBS]; /* as /v1/gpus lists them */
	size_t n_job_ids;
};

struct top_job {
	uint64_t id;
	bool has_id;
	bool running; /* else queued */
	char name[64];
	char user[32];
	uint64_t mem_need_bytes, peak_bytes, n_gpus;
	bool has_need, has_peak, has_n_gpus;
	long long priority;
	bool has_priority;
	double since; /* running: start_time; queued: submit_time; NAN */
	uint64_t gpu_mask; /* bit k: runs on gpus[k] */
};

struct top_snap {
	bool have_status;
	char backend[32];
	char policy[48];
	long long n_gpus, queued, running; /* -1 when absent */
	bool admin;
	bool all; /* jobs[] are everyone's */
	struct top_gpu *gpus;
	size_t n_gpus_listed, gpus_left_out;
	struct top_job *jobs;
	size_t n_jobs, jobs_left_out;
	time_t taken; /* wall clock of the refresh */
	bool unreachable;
	char err[320]; /* why the refresh failed, "" when it did not */
};

/* Whose jobs to ask for. */
enum top_show { TOP_SHOW_AUTO, TOP_SHOW_ALL, TOP_SHOW_MINE };

static void snap_init(struct top_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->n_gpus = s->queued = s->running = -1;
}

static void snap_fini(struct top_snap *s)
{
	free(s->gpus);
	free(s->jobs);
	snap_init(s);
}

/* --- lenient JSON reading ---------------------------------------------- */

static bool num_u64(double d, uint64_t *out)
{
	if (!(d >= 0) || d >= 18446744073709551616.0 || d != floor(d))
		return false;
	*out = (uint64_t)d;
	return true;
}

/* A number, or NAN when absent, null or of another type. */
static double jnum_or_nan(const cJSON *o, const char *key)
{
	double d;

	return cli_jnum(o, key, &d) ? d : (double)NAN;
}

/*
 * Copy s into dst (cap bytes with the NUL) for a terminal: every byte that
 * is not printable ASCII becomes '?' (a job name is anyone's text, and the
 * frame is one byte per column), and a NULL or empty s becomes "-".
 */
static void copy_text(char *dst, size_t cap, const char *s)
{
	size_t k = 0;

	if (!s || !*s)
		s = "-";
	for (; s[k] && k + 1 < cap; k++) {
		unsigned char ch = (unsigned char)s[k];

		dst[k] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	dst[k] = '\0';
}

static void fill_status(struct top_snap *s, const cJSON *st)
{
	const cJSON *admin = cJSON_GetObjectItemCaseSensitive(st, "admin");

	s->have_status = true;
	copy_text(s->backend, sizeof(s->backend), cli_jstr(st, "backend"));
	copy_text(s->policy, sizeof(s->policy), cli_jstr(st, "policy"));
	if (!cli_jint(st, "gpus", &s->n_gpus) || s->n_gpus < 0)
		s->n_gpus = -1;
	if (!cli_jint(st, "queued", &s->queued) || s->queued < 0)
		s->queued = -1;
	if (!cli_jint(st, "running", &s->running) || s->running < 0)
		s->running = -1;
	s->admin = cJSON_IsTrue(admin);
}

/* Returns false when out of memory. */
static bool fill_gpus(struct top_snap *s, const cJSON *root)
{
	const cJSON *arr = cli_jarray(root, "gpus"), *g;
	size_t n = 0, k = 0;

	cJSON_ArrayForEach(g, arr)
	{
		if (cJSON_IsObject(g))
			n++;
	}
	if (n > TOP_MAX_GPUS) {
		s->gpus_left_out = n - TOP_MAX_GPUS;
		n = TOP_MAX_GPUS;
	}
	if (n == 0)
		return true;
	s->gpus = calloc(n, sizeof(*s->gpus));
	if (!s->gpus)
		return false;
	cJSON_ArrayForEach(g, arr)
	{
		struct top_gpu *d = &s->gpus[k];
		const cJSON *jobs = cli_jarray(g, "jobs"), *j;
		long long idx;
		double mw;

		if (!cJSON_IsObject(g))
			continue;
		if (k == n)
			break;
		if (cli_jint(g, "index", &idx) && idx >= 0 && idx < 1000000)
			snprintf(d->index, sizeof(d->index), "%lld", idx);
		else
			copy_text(d->index, sizeof(d->index), NULL);
		copy_text(d->uuid, sizeof(d->uuid), cli_jstr(g, "uuid"));
		copy_text(d->name, sizeof(d->name), cli_jstr(g, "name"));
		d->has_total = cli_ju64(g, "mem_total_bytes", &d->mem_total_bytes);
		d->has_used = cli_ju64(g, "mem_used_bytes", &d->mem_used_bytes);
		d->has_reserved =
			cli_ju64(g, "mem_reserved_bytes", &d->mem_reserved_bytes);
		d->util_pct = jnum_or_nan(g, "util_pct");
		d->sm_active = jnum_or_nan(g, "sm_active");
		mw = jnum_or_nan(g, "power_mw");
		d->power_w = mw / 1000.0;
		cJSON_ArrayForEach(j, jobs)
		{
			uint64_t id;

			if (d->n_job_ids == TOP_MAX_GPU_JOBS)
				break;
			if (cJSON_IsNumber(j) && num_u64(j->valuedouble, &id) &&
			    id <= TOP_MAX_JOB_ID)
				d->job_ids[d->n_job_ids++] = id;
		}
		k++;
	}
	s->n_gpus_listed = k;
	return true;
}

/* Which of the snapshot's GPUs the job's "gpus" (UUIDs) name. */
static uint64_t job_gpu_mask(const struct top_snap *s, const cJSON *job)
{
	const cJSON *arr = cli_jarray(job, "gpus"), *u;
	uint64_t mask = 0;

	cJSON_ArrayForEach(u, arr)
	{
		char uuid[sizeof(s->gpus[0].uuid)];

		if (!cJSON_IsString(u) || !u->valuestring[0])
			continue;
		/* Compared as stored: cleaned and cut the same way. */
		copy_text(uuid, sizeof(uuid), u->valuestring);
		for (size_t k = 0; k < s->n_gpus_listed; k++)
			if (strcmp(s->gpus[k].uuid, uuid) == 0)
				mask |= (uint64_t)1 << k;
	}
	return mask;
}

/* Returns false when out of memory. */
static bool fill_jobs(struct top_snap *s, const cJSON *root)
{
	const cJSON *arr = cli_jarray(root, "jobs"), *j;
	size_t n = 0, k = 0;

	cJSON_ArrayForEach(j, arr)
	{
		if (cJSON_IsObject(j))
			n++;
	}
	if (n > TOP_MAX_JOBS) {
		s->jobs_left_out = n - TOP_MAX_JOBS;
		n = TOP_MAX_JOBS;
	}
	if (n == 0)
		return true;
	s->jobs = calloc(n, sizeof(*s->jobs));
	if (!s->jobs)
		return false;
	cJSON_ArrayForEach(j, arr)
	{
		struct top_job *d = &s->jobs[k];
		const char *state = cli_jstr(j, "state");

		if (!cJSON_IsObject(j))
			continue;
		if (k == n)
			break;
		/* The request asked for these two states only; anything else
		 * (a job that ended as the answer was written) is left out. */
		if (!state ||
		    (strcmp(state, "running") != 0 && strcmp(state, "queued") != 0))
			continue;
		d->running = strcmp(state, "running") == 0;
		d->has_id = cli_ju64(j, "id", &d->id) && d->id <= TOP_MAX_JOB_ID;
		copy_text(d->name, sizeof(d->name), cli_jstr(j, "name"));
		copy_text(d->user, sizeof(d->user), cli_jstr(j, "user"));
		d->has_need = cli_ju64(j, "mem_need_bytes", &d->mem_need_bytes);
		d->has_peak = cli_ju64(j, "peak_bytes", &d->peak_bytes);
		d->has_n_gpus = cli_ju64(j, "n_gpus", &d->n_gpus);
		d->has_priority = cli_jint(j, "priority", &d->priority);
		d->since = jnum_or_nan(j, d->running ? "start_time" : "submit_time");
		d->gpu_mask = d->running ? job_gpu_mask(s, j) : 0;
		k++;
	}
	s->n_jobs = k;
	return true;
}

/* --- requests ---------------------------------------------------------- */

/* Put into s->err why request rc for path (with answer r) failed. */
static void describe_failure(const struct cli_client *c, int rc,
			     const struct cli_response *r, const char *path,
			     struct top_snap *s)
{
	cJSON *j, *e, *m;
	char msg[200];

	if (rc == CLI_CLIENT_ECONNECT || rc == CLI_CLIENT_ETRANSPORT) {
		s->unreachable = true;
		copy_text(msg, sizeof(msg), c->err);
		snprintf(s->err, sizeof(s->err), "collocd unreachable: %s: %s",
			 c->socket_path, msg);
		return;
	}
	if (rc) {
		copy_text(msg, sizeof(msg), c->err);
		snprintf(s->err, sizeof(s->err), "GET %s: %s", path, msg);
		return;
	}
	j = r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	if (cJSON_IsString(m) && m->valuestring[0]) {
		copy_text(msg, sizeof(msg), m->valuestring);
		snprintf(s->err, sizeof(s->err), "collocd refused GET %s: %s", path, msg);
	} else {
		snprintf(s->err, sizeof(s->err), "collocd answered HTTP %ld to GET %s",
			 r->status, path);
	}
	cJSON_Delete(j);
}

/*
 * GET path and parse the answer into *out (the caller deletes it). Returns
 * CLI_OK, or an exit status with the reason in s->err; with report, the
 * reason is also printed the way every colloc command prints it.
 */
static int top_get(struct cli_client *c, const char *path, bool report,
		   struct top_snap *s, cJSON **out)
{
	struct cli_response r;
	int rc;

	*out = NULL;
	cli_response_init(&r);
	rc = cli_client_request(c, "GET", path, NULL, &r);
	if (rc == 0 && r.status >= 200 && r.status < 300) {
		*out = r.body ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
		rc = CLI_OK;
		if (!*out) {
			snprintf(s->err, sizeof(s->err),
				 "collocd's answer to GET %s is not valid JSON", path);
			if (report)
				cli_error("top: %s", s->err);
			rc = CLI_ERROR;
		}
	} else {
		describe_failure(c, rc, &r, path, s);
		if (report)
			rc = cli_client_result(c, rc, &r, "top");
		else
			rc = s->unreachable ? CLI_UNREACHABLE : CLI_ERROR;
	}
	cli_response_fini(&r);
	return rc;
}

/*
 * Replace *s with what collocd says now. show says whose jobs to ask for
 * (TOP_SHOW_AUTO: everyone's for administrators). Returns CLI_OK, or an exit
 * status with s->err set: s then holds what was learnt before the failure.
 */
static int top_refresh(struct cli_client *c, enum top_show show, bool report,
		       struct top_snap *s)
{
	static const char *const jobs_path[] = {
		"/v1/jobs?state=queued,running",
		"/v1/jobs?state=queued,running&all=1",
	};
	cJSON *root = NULL;
	int rc;

	snap_fini(s);
	s->taken = time(NULL);
	rc = top_get(c, "/v1/status", report, s, &root);
	if (rc)
		return rc;
	fill_status(s, root);
	cJSON_Delete(root);
	s->all = show == TOP_SHOW_ALL || (show == TOP_SHOW_AUTO && s->admin);
	rc = top_get(c, "/v1/gpus", report, s, &root);
	if (rc)
		return rc;
	if (!fill_gpus(s, root))
		goto nomem;
	cJSON_Delete(root);
	rc = top_get(c, jobs_path[s->all], report, s, &root);
	if (rc)
		return rc;
	if (!fill_jobs(s, root))
		goto nomem;
	cJSON_Delete(root);
	return CLI_OK;

nomem:
	cJSON_Delete(root);
	snprintf(s->err, sizeof(s->err), "out of memory");
	if (report)
		cli_error("top: out of memory");
	return CLI_ERROR;
}

/* ---------------------------------------------------------------------- */
/* The frame: lines of text with an attribute per character               */

enum top_attr {
	TOP_PLAIN,
	TOP_TITLE, /* the first line */
	TOP_HEAD, /* column headings */
	TOP_USED, /* memory bar: used */
	TOP_RESERVED, /* memory bar: reserved */
	TOP_FREE, /* memory bar: free */
	TOP_ERROR,
	TOP_DIM, /* key help, notes */
	TOP_N_ATTRS
};

struct top_line {
	char text[TOP_LINE_MAX + 1];
	unsigned char attr[TOP_LINE_MAX];
	size_t len;
};

struct top_frame {
	struct top_line *lines;
	size_t n, max_lines;
	size_t width; /* lines are cut here (<= TOP_LINE_MAX) */
	size_t layout; /* the width the layout aims at (bar length, clock) */
};

/* What the frame shows besides the snapshot. */
struct top_view {
	bool interactive;
	uint64_t interval_ms;
	const char *note; /* a passing remark for the second line, or NULL */
};

static int frame_init(struct top_frame *f, size_t width, size_t layout, size_t max_lines)
{
	size_t w = width < TOP_LINE_MAX ? width : TOP_LINE_MAX;

	memset(f, 0, sizeof(*f));
	f->width = w;
	f->layout = layout > w ? w : layout;
	f->max_lines = max_lines;
	if (max_lines == 0)
		return 0;
	f->lines = calloc(max_lines, sizeof(*f->lines));
	return f->lines ? 0 : -ENOMEM;
}

static void frame_fini(struct top_frame *f)
{
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

/* A new empty line, or NULL when the frame is full (every line function
 * takes NULL and does nothing: what does not fit is left out). */
static struct top_line *frame_line(struct top_frame *f)
{
	struct top_line *l;

	if (f->n >= f->max_lines)
		return NULL;
	l = &f->lines[f->n++];
	l->len = 0;
	l->text[0] = '\0';
	return l;
}

static size_t frame_room(const struct top_frame *f)
{
	return f->max_lines - f->n;
}

/* Append n bytes of s; what passes the frame's width is cut. */
static void line_putn(const struct top_frame *f, struct top_line *l, enum top_attr a,
		      const char *s, size_t n)
{
	if (!l)
		return;
	for (size_t i = 0; i < n && s[i] && l->len < f->width; i++) {
		unsigned char ch = (unsigned char)s[i];

		l->text[l->len] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
		l->attr[l->len] = (unsigned char)a;
		l->len++;
	}
	l->text[l->len] = '\0';
}

static void line_put(const struct top_frame *f, struct top_line *l, enum top_attr a,
		     const char *s)
{
	line_putn(f, l, a, s, strlen(s));
}

static void line_printf(const struct top_frame *f, struct top_line *l, enum top_attr a,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void line_printf(const struct top_frame *f, struct top_line *l, enum top_attr a,
			const char *fmt, ...)
{
	char buf[TOP_LINE_MAX + 1];
	va_list ap;

	if (!l)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	line_put(f, l, a, buf);
}

/* Append ch until the line is col characters long. */
static void line_fill(const struct top_frame *f, struct top_line *l, enum top_attr a,
		      char ch, size_t col)
{
	while (l && l->len < col && l->len < f->width) {
		line_putn(f, l, a, &ch, 1);
	}
}

/* s cut to width characters, ending in "..." when it was cut. */
static const char *fit(const char *s, size_t width, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (width >= len)
		width = len - 1;
	if (n <= width)
		return s;
	if (width <= 3) {
		memcpy(buf, s, width);
		buf[width] = '\0';
		return buf;
	}
	memcpy(buf, s, width - 3);
	memcpy(buf + width - 3, "...", 4);
	return buf;
}

/* "8.00 GiB", or "-" when absent. */
static const char *fmt_bytes(bool has, uint64_t v, char *buf, size_t len)
{
	return has ? colloc_format_bytes(v, buf, len) : "-";
}

/* A percentage, "-" when absent (never 0: a GPU that cannot be measured is
 * not an idle GPU). */
static const char *fmt_pct(double pct, char *buf, size_t len)
{
	if (isnan(pct))
		return "-";
	if (pct < 0)
		pct = 0;
	if (pct > 999)
		pct = 999;
	snprintf(buf, len, "%.0f%%", pct);
	return buf;
}

/* The UUID's start, enough to tell GPUs apart: "GPU-31aba172", or the
 * first 12 characters of a UUID of another shape. */
static const char *short_uuid(const char *uuid, char *buf, size_t len)
{
	const char *dash = strchr(uuid, '-');
	size_t n = 12;

	if (dash) {
		const char *second = strchr(dash + 1, '-');

		if (second && (size_t)(second - uuid) <= 16)
			n = (size_t)(second - uuid);
	}
	if (n >= len)
		n = len - 1;
	snprintf(buf, len, "%.*s", (int)n, uuid);
	return buf;
}

/* Columns of a GPU line besides its bar: "#", UUID, NAME, bar brackets,
 * USED/TOTAL, RESERVED, UTIL, SM, POWER and the spaces between them. */
#define TOP_GPU_FIXED_COLS 91
#define TOP_BAR_MIN 8
#define TOP_BAR_MAX 50

static size_t bar_cells(const struct top_frame *f)
{
	size_t w = f->layout > TOP_GPU_FIXED_COLS + 1 ? f->layout - TOP_GPU_FIXED_COLS - 1
						      : 0;

	return w < TOP_BAR_MIN ? TOP_BAR_MIN : w > TOP_BAR_MAX ? TOP_BAR_MAX : w;
}

/* A count of cells out of cells, rounded, for part of whole. */
static size_t cells_for(uint64_t part, uint64_t whole, size_t cells)
{
	double c;

	if (whole == 0 || part == 0)
		return 0;
	c = (double)part / (double)whole * (double)cells + 0.5;
	if (c > (double)cells)
		return cells;
	/* Something held shows as at least one cell. */
	return c < 1.0 ? 1 : (size_t)c;
}

static void draw_bar(const struct top_frame *f, struct top_line *l,
		     const struct top_gpu *g, size_t cells)
{
	line_put(f, l, TOP_PLAIN, "[");
	if (g->has_total && g->mem_total_bytes > 0) {
		uint64_t u = g->has_used ? g->mem_used_bytes : 0;
		uint64_t r = g->has_reserved ? g->mem_reserved_bytes : 0;
		size_t used = cells_for(u, g->mem_total_bytes, cells), rsv = 0, held;

		if (r > UINT64_MAX - u)
			r = UINT64_MAX - u;
		/* The reserved part ends where used + reserved would; a
		 * reservation too small for a cell of its own still gets one. */
		held = cells_for(u + r, g->mem_total_bytes, cells);
		if (held > used)
			rsv = held - used;
		else if (r > 0 && used < cells)
			rsv = 1;
		for (size_t k = 0; k < cells; k++) {
			if (k < used)
				line_put(f, l, TOP_USED, "#");
			else if (k < used + rsv)
				line_put(f, l, TOP_RESERVED, "=");
			else
				line_put(f, l, TOP_FREE, ".");
		}
	} else {
		line_fill(f, l, TOP_FREE, ' ', l ? l->len + cells : 0);
	}
	line_put(f, l, TOP_PLAIN, "]");
}

static void draw_title(struct top_frame *f, const struct top_snap *s,
		       const struct top_view *v)
{
	struct top_line *l = frame_line(f);
	char clock[16] = "";
	struct tm tm;

	if (localtime_r(&s->taken, &tm))
		strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	line_put(f, l, TOP_TITLE, "colloc top");
	if (s->have_status) {
		line_printf(f, l, TOP_TITLE, "  backend %s  policy %s", s->backend,
			    s->policy);
		if (s->n_gpus >= 0)
			line_printf(f, l, TOP_TITLE, "  %lld GPU%s", s->n_gpus,
				    s->n_gpus == 1 ? "" : "s");
		else
			line_put(f, l, TOP_TITLE, "  - GPUs");
		if (s->queued >= 0)
			line_printf(f, l, TOP_TITLE, "  %lld queued", s->queued);
		else
			line_put(f, l, TOP_TITLE, "  - queued");
		if (s->running >= 0)
			line_printf(f, l, TOP_TITLE, "  %lld running", s->running);
		else
			line_put(f, l, TOP_TITLE, "  - running");
		line_put(f, l, TOP_TITLE,
			 s->all ? "  (everyone's jobs)" : "  (your jobs)");
	}
	if (!l)
		return;
	if (v->interactive && l->len + 2 + strlen(clock) <= f->layout) {
		line_fill(f, l, TOP_TITLE, ' ', f->layout - strlen(clock) - 1);
		line_put(f, l, TOP_TITLE, clock);
		line_fill(f, l, TOP_TITLE, ' ', f->layout);
	} else {
		line_printf(f, l, TOP_TITLE, "  %s", clock);
	}
}

/* The second line: what went wrong, a passing note, or the keys. */
static void draw_status_line(struct top_frame *f, const struct top_snap *s,
			     const struct top_view *v)
{
	struct top_line *l;
	char every[32];

	if (s->err[0]) {
		l = frame_line(f);
		line_put(f, l, TOP_ERROR, s->err);
		if (v->interactive)
			line_put(f, l, TOP_ERROR, " (retrying)");
		return;
	}
	if (!v->interactive)
		return;
	l = frame_line(f);
	if (v->note) {
		line_put(f, l, TOP_ERROR, v->note);
		return;
	}
	if (v->interval_ms % 1000 == 0)
		snprintf(every, sizeof(every), "%llus",
			 (unsigned long long)(v->interval_ms / 1000));
	else
		snprintf(every, sizeof(every), "%llums",
			 (unsigned long long)v->interval_ms);
	line_printf(f, l, TOP_DIM,
		    "q quit  r refresh  a everyone/yours  every %s    memory: ", every);
	line_put(f, l, TOP_USED, "#");
	line_put(f, l, TOP_DIM, " used  ");
	line_put(f, l, TOP_RESERVED, "=");
	line_put(f, l, TOP_DIM, " reserved  ");
	line_put(f, l, TOP_FREE, ".");
	line_put(f, l, TOP_DIM, " free");
}

static const struct top_job *find_job(const struct top_snap *s, uint64_t id)
{
	for (size_t i = 0; i < s->n_jobs; i++)
		if (s->jobs[i].running && s->jobs[i].has_id && s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

/* A running job under its GPU; j NULL: a job /v1/gpus lists that the job
 * list does not hold (another user's, or one that started in between). */
static void draw_running_job(struct top_frame *f, const struct top_snap *s,
			     const struct top_job *j, uint64_t id)
{
	struct top_line *l = frame_line(f);
	char ids[24], user[16], name[32], need[32], peak[32], up[32];

	if (j && !j->has_id)
		snprintf(ids, sizeof(ids), "-");
	else
		snprintf(ids, sizeof(ids), "%llu", (unsigned long long)(j ? j->id : id));
	if (!j) {
		line_printf(f, l, TOP_PLAIN, "      job %-6s %-10s %-24s", ids, "-", "-");
		return;
	}
	line_printf(f, l, TOP_PLAIN,
		    "      job %-6s %-10s %-24s need %-9s  peak %-9s  up %s", ids,
		    fit(j->user, 10, user, sizeof(user)),
		    fit(j->name, 24, name, sizeof(name)),
		    fmt_bytes(j->has_need, j->mem_need_bytes, need, sizeof(need)),
		    fmt_bytes(j->has_peak, j->peak_bytes, peak, sizeof(peak)),
		    cli_fmt_elapsed((double)s->taken - j->since, up, sizeof(up)));
}

static bool listed(const struct top_gpu *g, uint64_t id)
{
	for (size_t i = 0; i < g->n_job_ids; i++)
		if (g->job_ids[i] == id)
			return true;
	return false;
}

static void draw_gpus(struct top_frame *f, const struct top_snap *s)
{
	size_t cells = bar_cells(f);
	struct top_line *l;

	frame_line(f);
	l = frame_line(f);
	line_printf(f, l, TOP_HEAD, "%3s %-12s %-24s %-*s %19s %9s %4s %4s %6s", "#",
		    "UUID", "NAME", (int)cells + 2, "MEMORY", "USED/TOTAL", "RESERVED",
		    "UTIL", "SM", "POWER");
	if (s->n_gpus_listed == 0) {
		line_put(f, frame_line(f), TOP_DIM, "    (no GPUs)");
		return;
	}
	for (size_t k = 0; k < s->n_gpus_listed; k++) {
		const struct top_gpu *g = &s->gpus[k];
		char uuid[32], name[32], used[32], total[32], rsv[32], mem[80], util[16],
			sm[16], power[32];

		l = frame_line(f);
		line_printf(f, l, TOP_PLAIN, "%3s %-12s %-24s ", g->index,
			    short_uuid(g->uuid, uuid, sizeof(uuid)),
			    fit(g->name, 24, name, sizeof(name)));
		draw_bar(f, l, g, cells);
		snprintf(mem, sizeof(mem), "%s/%s",
			 fmt_bytes(g->has_used, g->mem_used_bytes, used, sizeof(used)),
			 fmt_bytes(g->has_total, g->mem_total_bytes, total,
				   sizeof(total)));
		if (isnan(g->power_w))
			snprintf(power, sizeof(power), "-");
		else
			snprintf(power, sizeof(power), "%.0f W", g->power_w);
		line_printf(f, l, TOP_PLAIN, " %19s %9s %4s %4s %6s", mem,
			    fmt_bytes(g->has_reserved, g->mem_reserved_bytes, rsv,
				      sizeof(rsv)),
			    fmt_pct(g->util_pct, util, sizeof(util)),
			    fmt_pct(g->sm_active * 100.0, sm, sizeof(sm)), power);
		for (size_t i = 0; i < g->n_job_ids; i++)
			draw_running_job(f, s, find_job(s, g->job_ids[i]), g->job_ids[i]);
		for (size_t i = 0; i < s->n_jobs; i++) {
			const struct top_job *j = &s->jobs[i];

			if (j->running && (j->gpu_mask >> k & 1) &&
			    !(j->has_id && listed(g, j->id)))
				draw_running_job(f, s, j, 0);
		}
	}
	if (s->gpus_left_out)
		line_printf(f, frame_line(f), TOP_DIM, "    ... and %zu more GPUs",
			    s->gpus_left_out);
}

static void draw_queued(struct top_frame *f, const struct top_snap *s)
{
	size_t queued = 0, shown = 0, room;
	struct top_line *l;

	for (size_t i = 0; i < s->n_jobs; i++)
		queued += !s->jobs[i].running;
	queued += s->jobs_left_out; /* the list is cut at its end, the queue's */
	frame_line(f);
	line_printf(f, frame_line(f), TOP_HEAD, "QUEUED %zu", queued);
	if (queued == 0)
		return;
	l = frame_line(f);
	line_printf(f, l, TOP_HEAD, "%6s  %-10s %-24s %4s %9s %5s %8s", "ID", "USER",
		    "NAME", "GPUS", "NEED", "PRIO", "WAITING");
	room = frame_room(f);
	for (size_t i = 0; i < s->n_jobs && room > 0; i++) {
		const struct top_job *j = &s->jobs[i];
		char id[24], user[16], name[32], gp[24], need[32], prio[24], wait[32];

		if (j->running)
			continue;
		/* Keep the last line for "... and N more" when some do not fit. */
		if (room == 1 && shown + 1 < queued)
			break;
		if (j->has_id)
			snprintf(id, sizeof(id), "%llu", (unsigned long long)j->id);
		else
			snprintf(id, sizeof(id), "-");
		if (j->has_n_gpus)
			snprintf(gp, sizeof(gp), "%llu", (unsigned long long)j->n_gpus);
		else
			snprintf(gp, sizeof(gp), "-");
		if (j->has_priority)
			snprintf(prio, sizeof(prio), "%lld", j->priority);
		else
			snprintf(prio, sizeof(prio), "-");
		line_printf(
			f, frame_line(f), TOP_PLAIN, "%6s  %-10s %-24s %4s %9s %5s %8s",
			id, fit(j->user, 10, user, sizeof(user)),
			fit(j->name, 24, name, sizeof(name)), gp,
			fmt_bytes(j->has_need, j->mem_need_bytes, need, sizeof(need)),
			prio,
			cli_fmt_elapsed((double)s->taken - j->since, wait, sizeof(wait)));
		shown++;
		room--;
	}
	if (shown < queued)
		line_printf(f, frame_line(f), TOP_DIM, "    ... and %zu more",
			    queued - shown);
}

/* The whole screen for snapshot s. */
static void draw_frame(struct top_frame *f, const struct top_snap *s,
		       const struct top_view *v)
{
	draw_title(f, s, v);
	draw_status_line(f, s, v);
	if (!s->have_status)
		return;
	draw_gpus(f, s);
	draw_queued(f, s);
}

/* ---------------------------------------------------------------------- */
/* Output: plain text                                                     */

static int print_frame(const struct top_frame *f)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct top_line *l = &f->lines[i];
		size_t n = l->len;

		while (n > 0 && l->text[n - 1] == ' ')
			n--;
		if (fwrite(l->text, 1, n, stdout) != n || putchar('\n') == EOF)
			return CLI_ERROR;
	}
	return fflush(stdout) == 0 ? CLI_OK : CLI_ERROR;
}

static int top_once(struct cli_client *c, enum top_show show, uint64_t interval_ms)
{
	struct top_view v = {false, interval_ms, NULL};
	struct top_snap s;
	struct top_frame f;
	int rc;

	snap_init(&s);
	rc = top_refresh(c, show, true, &s);
	if (rc == CLI_OK) {
		if (frame_init(&f, TOP_LINE_MAX, TOP_ONCE_WIDTH, TOP_ONCE_MAX_LINES)) {
			cli_error("top: out of memory");
			rc = CLI_ERROR;
		} else {
			draw_frame(&f, &s, &v);
			rc = print_frame(&f);
			frame_fini(&f);
		}
	}
	snap_fini(&s);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Output: ncurses                                                        */

static volatile sig_atomic_t top_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

enum { TOP_PAIR_USED = 1, TOP_PAIR_RESERVED, TOP_PAIR_ERROR };

static chtype curses_attr(enum top_attr a, bool color)
{
	switch (a) {
	case TOP_TITLE:
		return A_REVERSE | A_BOLD;
	case TOP_HEAD:
		return A_BOLD;
	case TOP_USED:
		return color ? COLOR_PAIR(TOP_PAIR_USED) | A_BOLD : A_BOLD;
	case TOP_RESERVED:
		return color ? COLOR_PAIR(TOP_PAIR_RESERVED) | A_BOLD : A_NORMAL;
	case TOP_FREE:
	case TOP_DIM:
		return A_DIM;
	case TOP_ERROR:
		return color ? COLOR_PAIR(TOP_PAIR_ERROR) | A_BOLD : A_BOLD;
	case TOP_PLAIN:
	case TOP_N_ATTRS:
		break;
	}
	return A_NORMAL;
}

/* Put the snapshot on the screen, cut to its size (LINES and COLS follow
 * KEY_RESIZE). Out of memory leaves the screen as it was. */
static void curses_draw(const struct top_snap *s, const struct top_view *v, bool color)
{
	struct top_frame f;
	size_t rows = LINES > 0 ? (size_t)LINES : 0;
	size_t cols = COLS > 0 ? (size_t)COLS : 0;

	if (rows == 0 || cols == 0 || frame_init(&f, cols, cols, rows))
		return;
	draw_frame(&f, s, v);
	erase();
	for (size_t y = 0; y < f.n; y++) {
		const struct top_line *l = &f.lines[y];

		for (size_t x = 0; x < l->len; x++)
			/* The bottom-right cell answers ERR (the cursor cannot
			 * move past it) but is drawn. */
			mvaddch((int)y, (int)x,
				(chtype)(unsigned char)l->text[x] |
					curses_attr((enum top_attr)l->attr[x], color));
	}
	refresh();
	frame_fini(&f);
}

struct top_signals {
	struct sigaction old_int, old_term, old_hup;
};

/* Ctrl-C, kill and a closed terminal end the loop, so that the terminal is
 * restored. Installed before ncurses starts, which then keeps them (it
 * catches only signals left at their default). No SA_RESTART: the wait for a
 * key returns early. */
static void signals_catch(struct top_signals *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old->old_int);
	sigaction(SIGTERM, &sa, &old->old_term);
	sigaction(SIGHUP, &sa, &old->old_hup);
}

static void signals_restore(const struct top_signals *old)
{
	sigaction(SIGINT, &old->old_int, NULL);
	sigaction(SIGTERM, &old->old_term, NULL);
	sigaction(SIGHUP, &old->old_hup, NULL);
}

/*
 * The live screen, starting from snapshot s (already fetched). Returns an
 * exit status; -1 when the terminal cannot be driven (nothing was drawn).
 */
static int top_screen(struct cli_client *c, enum top_show show, uint64_t interval_ms,
		      struct top_snap *s)
{
	struct top_view v = {true, interval_ms, NULL};
	struct top_signals old;
	SCREEN *scr;
	uint64_t next = cli_mono_ms() + interval_ms, note_until = 0;
	bool color = false, dirty = true;

	top_stop = 0;
	signals_catch(&old);
	/* newterm(), unlike initscr(), returns NULL for an unknown TERM
	 * rather than exiting. */
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		signals_restore(&old);
		return -1;
	}
	set_term(scr);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors() && start_color() == OK) {
		use_default_colors();
		init_pair(TOP_PAIR_USED, COLOR_GREEN, -1);
		init_pair(TOP_PAIR_RESERVED, COLOR_YELLOW, -1);
		init_pair(TOP_PAIR_ERROR, COLOR_RED, -1);
		color = true;
	}
	while (!top_stop) {
		uint64_t now = cli_mono_ms(), wait_ms;
		int ch;

		if (now >= next) {
			top_refresh(c, show, false, s);
			now = cli_mono_ms();
			next = now + interval_ms;
			dirty = true;
		}
		if (v.note && now >= note_until) {
			v.note = NULL;
			dirty = true;
		}
		if (dirty) {
			curses_draw(s, &v, color);
			dirty = false;
		}
		wait_ms = next > now ? next - now : 0;
		if (v.note && note_until > now && note_until - now < wait_ms)
			wait_ms = note_until - now;
		if (wait_ms > TOP_WAIT_SLICE_MS)
			wait_ms = TOP_WAIT_SLICE_MS;
		timeout((int)wait_ms);
		ch = getch();
		switch (ch) {
		case 'q':
		case 'Q':
			top_stop = 1;
			break;
		case 'r':
		case 'R':
			next = 0;
			break;
		case 'a':
		case 'A':
			if (s->have_status && s->admin) {
				show = s->all ? TOP_SHOW_MINE : TOP_SHOW_ALL;
				next = 0;
			} else {
				v.note = "everyone's jobs: for administrators only";
				note_until = cli_mono_ms() + TOP_NOTE_MS;
				dirty = true;
			}
			break;
		case KEY_RESIZE:
			dirty = true;
			break;
		default:
			break;
		}
	}
	endwin();
	delscreen(scr);
	signals_restore(&old);
	return CLI_OK;
}

/* ---------------------------------------------------------------------- */

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{"interval", required_argument, NULL, 'i'},
		{"all", no_argument, NULL, 'a'},
		{"once", no_argument, NULL, '1'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket = NULL;
	uint64_t interval_ms = 1000;
	enum top_show show = TOP_SHOW_AUTO;
	bool once = false;
	struct cli_client c;
	struct top_snap s;
	int ch, rc;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			if (colloc_parse_duration_ms(optarg, &interval_ms) ||
			    interval_ms < TOP_INTERVAL_MIN_MS ||
			    interval_ms > TOP_INTERVAL_MAX_MS) {
				cli_error(
					"top: --interval wants a duration from 100ms to "
					"1h, such as 2s or 500ms, not '%s'",
					optarg);
				return CLI_USAGE;
			}
			break;
		case 'a':
			show = TOP_SHOW_ALL;
			break;
		case '1':
			once = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(top_usage, stdout);
			return CLI_OK;
		default:
			cli_error(
				"top: unknown or incomplete option '%s' (see `colloc top "
				"--help`)",
				argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("top: unexpected argument '%s' (see `colloc top --help`)",
			  argv[optind]);
		return CLI_USAGE;
	}
	if ((rc = cli_client_open(&c, socket)))
		return rc;
	/* A live screen must not hang on a daemon that never answers: each
	 * request gets at most a refresh interval (and at least a second). */
	cli_client_set_timeout(&c, interval_ms < 1000 ? 1000 : (long)interval_ms);
	if (once || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		rc = top_once(&c, show, interval_ms);
		cli_client_fini(&c);
		return rc;
	}
	/* The first refresh decides the exit status, before the terminal is
	 * touched: an unreachable daemon is an error, not an empty screen. */
	snap_init(&s);
	rc = top_refresh(&c, show, true, &s);
	if (rc == CLI_OK) {
		rc = top_screen(&c, show, interval_ms, &s);
		if (rc < 0) {
			const char *term = getenv("TERM");

			cli_error("top: cannot drive the terminal (TERM=%s); printing "
				  "one frame instead",
				  term ? term : "");
			snap_fini(&s);
			rc = top_once(&c, show, interval_ms);
		}
	}
	snap_fini(&s);
	cli_client_fini(&c);
	return rc;
}
