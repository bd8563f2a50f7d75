/*
 * cmd_top.c — `colloc top`: a live screen of collocd's GPUs (memory, with the
 * part held back for starting jobs marked apart, utilization, SM activity,
 * power), the jobs running on each and the queue, redrawn every interval
 * until 'q'. With --once, or when stdin or stdout is not a terminal, it
 * prints one plain-text frame instead.
 *
 * Three layers, so that the plain and the ncurses output are the same text:
 * fetching (top_data.c) and formatting (top_draw.c), see top.h; and here
 * the output: the frame printed to stdout, or put on an ncurses screen.
 *
 * Not a monitor of processes or of GPUs collocd does not manage: it shows
 * what collocd reports. When collocd goes away the screen says so and keeps
 * retrying; only the first request decides the exit status (3 when collocd
 * cannot be reached), before the terminal is touched.
 */
#include <curses.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/top.h"
#include "colloc/units.h"

/* --once prints at this layout width, and at most this many lines. */
#define TOP_ONCE_WIDTH 120
#define TOP_ONCE_MAX_LINES 4096
#define TOP_INTERVAL_MIN_MS 100
#define TOP_INTERVAL_MAX_MS 3600000
/* getch() waits at most this long, so that a signal is seen promptly even
 * when the interval is long. */
#define TOP_WAIT_SLICE_MS 250
#define TOP_NOTE_MS 3000

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
	"                       /tmp/colloc-UID/collocd.sock; /run/collocd.sock for "
	"root)\n"
	"  -h, --help           this help\n"
	"\n"
	"A value collocd does not report shows as \"-\". When collocd goes away\n"
	"while the screen is up, the screen says so and keeps retrying.\n"
	"\n"
	"exit status: 0 success, 1 collocd refused the first request (--all by\n"
	"someone who is not an administrator), 2 invalid command line,\n"
	"3 collocd unreachable at start.\n";

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

	cli_top_snap_init(&s);
	rc = cli_top_refresh(c, show, true, &s);
	if (rc == CLI_OK) {
		if (cli_top_frame_init(&f, TOP_LINE_MAX, TOP_ONCE_WIDTH,
				       TOP_ONCE_MAX_LINES)) {
			cli_error("top: out of memory");
			rc = CLI_ERROR;
		} else {
			cli_top_draw(&f, &s, &v);
			rc = print_frame(&f);
			cli_top_frame_fini(&f);
		}
	}
	cli_top_snap_fini(&s);
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

	if (rows == 0 || cols == 0 || cli_top_frame_init(&f, cols, cols, rows))
		return;
	cli_top_draw(&f, s, v);
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
	cli_top_frame_fini(&f);
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
			cli_top_refresh(c, show, false, s);
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
	cli_top_snap_init(&s);
	rc = cli_top_refresh(&c, show, true, &s);
	if (rc == CLI_OK) {
		rc = top_screen(&c, show, interval_ms, &s);
		if (rc < 0) {
			const char *term = getenv("TERM");

			cli_error("top: cannot drive the terminal (TERM=%s); printing "
				  "one frame instead",
				  term ? term : "");
			cli_top_snap_fini(&s);
			rc = top_once(&c, show, interval_ms);
		}
	}
	cli_top_snap_fini(&s);
	cli_client_fini(&c);
	return rc;
}
