/*
 * top.h — `colloc top`'s two halves, shared by its three files:
 *   - top_data.c: one refresh, GET /v1/status, /v1/gpus and
 *     /v1/jobs?state=queued,running read leniently into a struct top_snap
 *     (a field that is missing or of another type is kept as absent and
 *     drawn as "-", never as 0);
 *   - top_draw.c: a snapshot laid out into a struct top_frame, lines of
 *     printable ASCII with one attribute per character, cut to a width and
 *     a height;
 * and cmd_top.c puts a frame on stdout or on an ncurses screen.
 *
 * Internal to src/cli/. Ownership: struct top_snap and struct top_frame
 * are caller-owned (_init/_fini); their arrays are heap memory freed by
 * _fini, which also makes them reusable.
 */
#ifndef COLLOC_CLI_TOP_H
#define COLLOC_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct cli_client;

/* A job's GPUs are a bit mask over the snapshot's GPUs. */
#define TOP_MAX_GPUS 64
#define TOP_MAX_JOBS 4096
#define TOP_MAX_GPU_JOBS 64
/* Widest line drawn; wider terminals get blank space on the right. */
#define TOP_LINE_MAX 512
/* Job ids are JSON numbers: exact in a double up to 2^53. */
#define TOP_MAX_JOB_ID ((uint64_t)1 << 53)

/* --- the snapshot: what one refresh learnt ------------------------------- */

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

void cli_top_snap_init(struct top_snap *s);
void cli_top_snap_fini(struct top_snap *s);

/*
 * Replace *s with what collocd says now. show says whose jobs to ask for
 * (TOP_SHOW_AUTO: everyone's for administrators). With report, a failure is
 * also printed the way every colloc command prints it. Returns CLI_OK, or
 * an exit status with s->err set: s then holds what was learnt before the
 * failure.
 */
int cli_top_refresh(struct cli_client *c, enum top_show show, bool report,
		    struct top_snap *s);

/* --- the frame: lines of text with an attribute per character ------------ */

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

/* A frame of at most max_lines lines cut at width (<= TOP_LINE_MAX), laid
 * out for layout columns. Returns 0 or -ENOMEM. */
int cli_top_frame_init(struct top_frame *f, size_t width, size_t layout,
		       size_t max_lines);
void cli_top_frame_fini(struct top_frame *f);

/* The whole screen for snapshot s, as far as it fits in f. */
void cli_top_draw(struct top_frame *f, const struct top_snap *s,
		  const struct top_view *v);

#endif
