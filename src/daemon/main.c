/*
 * main.c — collocd: parse the command line and the config file (the
 * default one when present), decide which GPUs to serve, open the daemon,
 * run the loop. Everything else is in the modules next to it.
 */
#define _GNU_SOURCE /* flock */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "colloc/gpu.h"
#include "common/files.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/server.h"

static const char usage[] =
	"usage: collocd [OPTIONS]\n"
	"\n"
	"The colloc resource manager: takes training jobs from `colloc submit`, packs\n"
	"them onto shared GPUs by their memory need, recovers jobs that die of GPU\n"
	"out-of-memory, and keeps every job in a SQLite database so that none is lost\n"
	"across restarts. Runs in the foreground and logs to stderr; stopping it\n"
	"(SIGTERM, Ctrl-C) leaves running jobs running under their supervisors, and\n"
	"the next collocd adopts them.\n"
	"\n"
	"Options (each overrides the config file; --opt VALUE and --opt=VALUE both "
	"work):\n"
	"  --gpus SPEC          GPUs to manage: auto (default: NVIDIA's GPUs through\n"
	"                       NVML; without a usable NVML collocd refuses to start\n"
	"                       unless allow_sim = true, then sim:4x40GiB), nvml,\n"
	"                       sim:4x40GiB, sim:2x24GiB,path=FILE, auto:SPEC (NVML,\n"
	"                       else SPEC). Simulated GPUs without path= live in\n"
	"                       STATE_DIR/gpus.sim (or $COLLOC_SIM_STATE)\n"
	"  --socket PATH        API socket (default $XDG_RUNTIME_DIR/collocd.sock,\n"
	"                       /tmp/colloc-UID/collocd.sock; /run/collocd.sock as "
	"root)\n"
	"  --db PATH            job database (default STATE_DIR/collocd.db)\n"
	"  --state-dir DIR      logs/ and status/ (default $XDG_STATE_HOME/collocd,\n"
	"                       ~/.local/state/collocd; /var/lib/collocd as root)\n"
	"  --config FILE        config file, `key = value` lines (collocd.conf(5),\n"
	"                       docs/collocd-config.md); default " CD_CONFIG_DEFAULT_PATH
	"\n"
	"                       when it exists\n"
	"  --no-config          read no config file, not even the default one\n"
	"  --policy P           exclusive, round-robin, most-free-memory,\n"
	"                       least-utilized, estimate-aware (default)\n"
	"  --set KEY=VALUE      any config key, e.g. --set headroom=1GiB or\n"
	"                       --set allow_sim=true\n"
	"  --print-config       print the resulting configuration and exit\n"
	"  -h, --help           this help\n"
	"  --version            the version\n"
	"\n"
	"Signals: SIGTERM and SIGINT stop collocd; running jobs continue.\n"
	"\n"
	"Exit status: 0 after a clean stop, 1 when it cannot start (the reason is\n"
	"printed), 2 for a bad command line or config file.\n"
	"API: docs/api.md.  Configuration: collocd.conf(5), docs/collocd-config.md.\n"
	"Guide: docs/collocd.md; running it as a service: docs/install.md.\n";

static void log_line(const char *line)
{
	char ts[32];
	time_t t = time(NULL);
	struct tm tm;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
	fprintf(stderr, "%s collocd: %s\n", ts, line);
}

/* An exclusive lock on lock_path, held while collocd runs: a second
 * collocd on the same what (named by name) would fight over its jobs. */
static int lock_file(const char *lock_path, const char *what, const char *name)
{
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0) {
		fprintf(stderr, "collocd: error: cannot open %s: %s\n", lock_path,
			strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "collocd: error: another collocd is using the %s %s\n",
			what, name);
		close(fd);
		return -1;
	}
	return fd;
}

/* One collocd per state directory and one per database (two state dirs
 * may name the same database). Returns 0, or -1 after saying why. */
static int lock_state(const struct cd_config *cfg, int *lock, int *db_lock)
{
	char path[CD_PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/collocd.lock", cfg->state_dir);
	*lock = lock_file(path, "state directory", cfg->state_dir);
	if (*lock < 0)
		return -1;
	snprintf(path, sizeof(path), "%s.lock", cfg->db_path);
	*db_lock = lock_file(path, "database", cfg->db_path);
	if (*db_lock < 0) {
		close(*lock);
		return -1;
	}
	return 0;
}

/* collocd's options (getopt_long: --opt VALUE, --opt=VALUE, unique
 * prefixes); option_key() gives the config key of those that set one. */
enum {
	OPT_GPUS = 256,
	OPT_SOCKET,
	OPT_DB,
	OPT_STATE_DIR,
	OPT_POLICY,
	OPT_CONFIG,
	OPT_NO_CONFIG,
	OPT_SET,
	OPT_PRINT,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{"gpus", required_argument, NULL, OPT_GPUS},
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"db", required_argument, NULL, OPT_DB},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"no-config", no_argument, NULL, OPT_NO_CONFIG},
	{"set", required_argument, NULL, OPT_SET},
	{"print-config", no_argument, NULL, OPT_PRINT},
	{"version", no_argument, NULL, OPT_VERSION},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* The config key an option sets, or NULL. */
static const char *option_key(int opt)
{
	switch (opt) {
	case OPT_GPUS:
		return "gpus";
	case OPT_SOCKET:
		return "socket";
	case OPT_DB:
		return "db";
	case OPT_STATE_DIR:
		return "state_dir";
	case OPT_POLICY:
		return "policy";
	default:
		return NULL;
	}
}

/* The long option whose value is opt. */
static const char *option_name(int opt)
{
	for (size_t k = 0; long_opts[k].name; k++)
		if (long_opts[k].val == opt)
			return long_opts[k].name;
	return "?";
}

/* Why getopt_long stopped at argv[optind - 1]; exit status 2. */
static int bad_option(int argc, char **argv)
{
	const char *a = optind - 1 < argc ? argv[optind - 1] : "";

	if (optopt && optopt != '?' && optopt < 256)
		fprintf(stderr,
			"collocd: error: unknown option '-%c' (see collocd --help)\n",
			optopt);
	else if (strncmp(a, "--", 2) == 0 && !strchr(a, '='))
		fprintf(stderr,
			"collocd: error: unknown option '%s', or it needs a value (see "
			"collocd --help)\n",
			a);
	else
		fprintf(stderr, "collocd: error: bad option '%s' (see collocd --help)\n",
			a);
	return 2;
}

/*
 * The config file: --config FILE (must exist), else the default one when it
 * exists; --no-config: none. Reads it into cfg before any option is
 * applied, so that options override it wherever they are. Returns 0, 1
 * (--help/--version printed) or the exit status 2.
 */
static int load_config(int argc, char **argv, struct cd_config *cfg, const char **read)
{
	struct colloc_diag diag = {{0}};
	const char *path = NULL;
	bool none = false;
	int c;

	*read = NULL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 1;
		}
		if (c == OPT_VERSION) {
			printf("collocd %s\n", COLLOC_VERSION);
			return 1;
		}
		if (c == OPT_CONFIG)
			path = optarg;
		if (c == OPT_NO_CONFIG)
			none = true;
		if (c == '?' || c == ':')
			return bad_option(argc, argv);
	}
	if (optind != argc) {
		fprintf(stderr,
			"collocd: error: unexpected argument '%s' (collocd takes options "
			"only; see collocd --help)\n",
			argv[optind]);
		return 2;
	}
	if (path && none) {
		fprintf(stderr, "collocd: error: --config and --no-config: choose one\n");
		return 2;
	}
	if (none)
		return 0;
	if (!path) {
		/* The default file is optional; one that exists but cannot be
		 * read is an error, not a silent change of configuration. */
		if (access(CD_CONFIG_DEFAULT_PATH, F_OK) != 0)
			return 0;
		path = CD_CONFIG_DEFAULT_PATH;
	}
	if (cd_config_load(cfg, path, &diag) != 0) {
		fprintf(stderr, "collocd: error: %s%s\n", diag.msg,
			strcmp(path, CD_CONFIG_DEFAULT_PATH) == 0
				? " (the default config file; --config FILE or "
				  "--no-config to use another or none)"
				: "");
		return 2;
	}
	*read = path;
	return 0;
}

/* Apply the options other than --config to cfg. Returns 0 or exit status 2. */
static int apply_options(int argc, char **argv, struct cd_config *cfg, bool *print)
{
	struct colloc_diag diag = {{0}};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", long_opts, NULL)) != -1) {
		const char *key = option_key(c);

		if (key) {
			if (cd_config_set(cfg, key, optarg, &diag)) {
				fprintf(stderr, "collocd: error: --%s: %s\n",
					option_name(c), diag.msg);
				return 2;
			}
		} else if (c == OPT_SET) {
			char kv[CD_PATH_MAX + 64];
			char *eq;

			snprintf(kv, sizeof(kv), "%s", optarg);
			eq = strchr(kv, '=');
			if (!eq) {
				fprintf(stderr,
					"collocd: error: --set wants KEY=VALUE, got "
					"'%s'\n",
					kv);
				return 2;
			}
			*eq = '\0';
			if (cd_config_set(cfg, kv, eq + 1, &diag)) {
				fprintf(stderr, "collocd: error: --set %s: %s\n", kv,
					diag.msg);
				return 2;
			}
		} else if (c == OPT_PRINT) {
			*print = true;
		}
	}
	return 0;
}

/*
 * Decide what "gpus" means before the daemon opens it (config.h,
 * cd_config_resolve_gpus): "auto" is probed here so that a machine whose
 * NVML is broken is refused with the reason instead of being served
 * simulated GPUs. Returns 0 or exit status 1.
 */
static int resolve_gpus(struct cd_config *cfg)
{
	struct colloc_diag diag = {{0}}, why = {{0}};
	char note[COLLOC_DIAG_MAX + CD_PATH_MAX];
	char line[COLLOC_DIAG_MAX];
	bool nvml_ok = false;

	if (cd_config_gpus_is_auto(cfg->gpus)) {
		struct colloc_gpu *gpu = NULL;
		unsigned n = 0;

		if (colloc_gpu_open("nvml", &gpu, &why) == 0) {
			if (colloc_gpu_count(gpu, &n, &why) == 0 && n == 0)
				colloc_diag_printf(&why, "NVML sees no GPU");
			nvml_ok = n > 0;
			if (nvml_ok)
				colloc_gpu_describe(gpu, line, sizeof(line));
			colloc_gpu_close(gpu);
		}
	}
	if (cd_config_resolve_gpus(cfg, nvml_ok, why.msg, note, sizeof(note), &diag)) {
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
		return 1;
	}
	if (note[0])
		log_line(note);
	if (nvml_ok)
		log_line(line);
	return 0;
}

/*
 * The configuration: defaults, then the config file, then the options (the
 * same at start and on SIGHUP). Returns 0, 1 when --help or --version was
 * answered, or an exit status.
 */
static int build_config(int argc, char **argv, struct cd_config *cfg, const char **read,
			bool *print)
{
	struct cd_config defaults;
	int rc;

	cd_config_defaults(cfg);
	defaults = *cfg;
	if ((rc = load_config(argc, argv, cfg, read)) ||
	    (rc = apply_options(argc, argv, cfg, print)))
		return rc;
	/* The database lives in the state dir unless it was named
	 * (--help: "default STATE_DIR/collocd.db"). */
	if (strcmp(cfg->db_path, defaults.db_path) == 0 &&
	    strcmp(cfg->state_dir, defaults.state_dir) != 0 &&
	    (size_t)snprintf(cfg->db_path, sizeof(cfg->db_path), "%s/collocd.db",
			     cfg->state_dir) >= sizeof(cfg->db_path)) {
		fprintf(stderr, "collocd: error: state_dir path too long\n");
		return 2;
	}
	return 0;
}

static int main_argc;
static char **main_argv;
static char start_gpus[CD_PATH_MAX]; /* gpus as configured, before resolving */

/* SIGHUP: the config file read again, and what can change live applied
 * (cd_daemon_reconfigure); a file that no longer parses changes nothing. */
static void reload(struct cd_daemon *d)
{
	struct cd_config cfg;
	const char *read = NULL;
	bool print = false;

	if (build_config(main_argc, main_argv, &cfg, &read, &print) != 0) {
		log_line("SIGHUP: the configuration does not load (above); keeping the "
			 "running one");
		return;
	}
	/* gpus was resolved at start ("auto" -> what it found): the same spec
	 * in the file is no change */
	if (strcmp(cfg.gpus, start_gpus) == 0)
		snprintf(cfg.gpus, sizeof(cfg.gpus), "%s", cd_daemon_config(d)->gpus);
	(void)cd_daemon_reconfigure(d, &cfg);
}

int main(int argc, char **argv)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;
	struct cd_daemon *d = NULL;
	const char *config_read = NULL;
	bool print = false;
	int rc, lock, db_lock;

	/* Files collocd makes are its own to write: a permissive umask must
	 * not make its state dir group-writable (which it then refuses). */
	umask(022);
	main_argc = argc;
	main_argv = argv;
	rc = build_config(argc, argv, &cfg, &config_read, &print);
	if (rc)
		return rc == 1 ? 0 : rc;
	snprintf(start_gpus, sizeof(start_gpus), "%s", cfg.gpus);
	if (print) {
		printf("# config file: %s\n", config_read ? config_read : "none");
		return cd_config_write(&cfg, stdout) ? 1 : 0;
	}
	if (config_read) {
		char line[CD_PATH_MAX + 32];

		snprintf(line, sizeof(line), "config %s", config_read);
		log_line(line);
	}
	rc = colloc__mkdir_p(cfg.state_dir, 0755, NULL);
	if (rc != 0) {
		fprintf(stderr, "collocd: error: cannot create %s: %s\n", cfg.state_dir,
			colloc_strerror(rc));
		return 1;
	}
	if (colloc__check_owned(cfg.state_dir, COLLOC_OWNED_DIR, geteuid(), &diag)) {
		fprintf(stderr, "collocd: error: state_dir: %s\n", diag.msg);
		return 1;
	}
	if (lock_state(&cfg, &lock, &db_lock))
		return 1;
	if (resolve_gpus(&cfg)) {
		close(db_lock);
		close(lock);
		return 1;
	}
	if (cd_daemon_create(&cfg, cd_now_read(), log_line, &d, &diag) != 0) {
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
		close(db_lock);
		close(lock);
		return 1;
	}
	log_line("ready");
	{
		char line[CD_PATH_MAX * 2];

		snprintf(line, sizeof(line),
			 "serving %s: %u GPU(s) on backend %s, policy %s, db %s",
			 cfg.socket_path, cd_daemon_gpu_count(d), cd_daemon_backend(d),
			 colloc_policy_name(cfg.sched.policy), cfg.db_path);
		log_line(line);
	}
	cd_server_on_reload(reload);
	rc = cd_server_run(d, cfg.socket_path, &diag);
	if (rc)
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
	else
		log_line("stopped; running jobs continue under their supervisors");
	cd_daemon_destroy(d);
	close(db_lock);
	close(lock);
	return rc ? 1 : 0;
}
