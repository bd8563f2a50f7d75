/*
 * top_draw.c — `colloc top`'s layout (see top.h): a snapshot into a frame of
 * plain ASCII lines with an attribute per character, the same text for the
 * plain output and the ncurses screen. Reads no socket and no terminal.
 */
#include "cli/top.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "colloc/units.h"

int cli_top_frame_init(struct top_frame *f, size_t width, size_t layout, size_t max_lines)
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

void cli_top_frame_fini(struct top_frame *f)
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

/* Seconds from since (a job's start or submit, with its fraction) to the
 * refresh, which time() took in whole seconds: a job that started in the
 * refresh's own second is 0 seconds old, not a negative age ("-"). */
static double age_s(const struct top_snap *s, double since)
{
	double d = (double)s->taken - since;

	return d < 0 && d > -1 ? 0 : d;
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
		    cli_fmt_elapsed(age_s(s, j->since), up, sizeof(up)));
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
			prio, cli_fmt_elapsed(age_s(s, j->since), wait, sizeof(wait)));
		shown++;
		room--;
	}
	if (shown < queued)
		line_printf(f, frame_line(f), TOP_DIM, "    ... and %zu more",
			    queued - shown);
}

/* The whole screen for snapshot s. */
void cli_top_draw(struct top_frame *f, const struct top_snap *s, const struct top_view *v)
{
	draw_title(f, s, v);
	draw_status_line(f, s, v);
	if (!s->have_status)
		return;
	draw_gpus(f, s);
	draw_queued(f, s);
}
