/*
 * main.c — collocd: parse the command line and the config file, open the
 * daemon, run the loop. Everything else is in the modules next to it.
 */
#define _GNU_SOURCE /* flock */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/files.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/server.h"

static const char usage[] =
	"usage: collocd [OPTIONS]\n"
	"\n"
	"The colloc resource manager: takes training jobs from `colloc submit`, packs "
	"them\n"
	"onto shared GPUs by their memory need, recovers jobs that die of GPU "
	"out-of-memory,\n"
	"and keeps every job in a SQLite database so that none is lost across restarts.\n"
	"Runs in the foreground and logs to stderr; stopping it (SIGTERM, Ctrl-C) "
	"leaves\n"
	"running jobs running under their supervisors, and the next collocd adopts "
	"them.\n"
	"\n"
	"Options (each overrides the config file):\n"
	"  --gpus SPEC          GPUs to manage: auto (default: NVIDIA's GPUs through\n"
	"                       NVML when the driver is there, else sim:4x40GiB),\n"
	"                       nvml, sim:4x40GiB, sim:2x24GiB,path=FILE\n"
	"  --socket PATH        API socket (default $XDG_RUNTIME_DIR/collocd.sock,\n"
	"                       /tmp/collocd-UID.sock; /run/collocd.sock as root)\n"
	"  --db PATH            job database (default STATE_DIR/collocd.db)\n"
	"  --state-dir DIR      logs/ and status/ (default $XDG_STATE_HOME/collocd,\n"
	"                       ~/.local/state/collocd; /var/lib/collocd as root)\n"
	"  --config FILE        config file, `key = value` lines "
	"(docs/collocd-config.md)\n"
	"  --policy P           exclusive, round-robin, most-free-memory, "
	"least-utilized,\n"
	"                       estimate-aware (default)\n"
	"  --set KEY=VALUE      any config key, e.g. --set headroom=1GiB\n"
	"  --print-config       print the resulting configuration and exit\n"
	"  -h, --help           this help;  --version  the version\n"
	"\n"
	"Exit status: 0 after a clean stop, 1 when it cannot start (the reason is "
	"printed),\n"
	"2 for a bad command line or config file.\n"
	"API: docs/api.md.  Configuration: docs/collocd-config.md.  Guide: "
	"docs/collocd.md.\n";

static void log_line(const char *line)
{
	char ts[32];
	time_t t = time(NULL);
	struct tm tm;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
	fprintf(stderr, "%s collocd: %s\n", ts, line);
}

/* One collocd per state directory: a second would fight over jobs. */
static int lock_state_dir(const char *dir)
{
	char path[CD_PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/collocd.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "collocd: error: cannot open %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "collocd: error: another collocd is using %s\n", dir);
		close(fd);
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;
	struct cd_daemon *d = NULL;
	const char *config_path = NULL;
	bool print = false;
	int rc, lock;

	cd_config_defaults(&cfg);
	/* The config file first, so that options override it wherever they
	 * are on the command line. */
	for (int k = 1; k < argc; k++)
		if (strcmp(argv[k], "--config") == 0 && k + 1 < argc)
			config_path = argv[k + 1];
	if (config_path && cd_config_load(&cfg, config_path, &diag) != 0) {
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
		return 2;
	}
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		static const char *const map[][2] = {
			{"--gpus", "gpus"},	{"--socket", "socket"},
			{"--db", "db"},		{"--state-dir", "state_dir"},
			{"--policy", "policy"},
		};
		bool done = false;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			printf("collocd %s\n", COLLOC_VERSION);
			return 0;
		}
		if (strcmp(a, "--print-config") == 0) {
			print = true;
			continue;
		}
		if (strcmp(a, "--config") == 0) {
			k++;
			continue;
		}
		for (size_t m = 0; m < sizeof(map) / sizeof(map[0]) && !done; m++) {
			if (strcmp(a, map[m][0]) != 0)
				continue;
			if (k + 1 >= argc) {
				fprintf(stderr, "collocd: error: %s needs a value\n", a);
				return 2;
			}
			if (cd_config_set(&cfg, map[m][1], argv[++k], &diag)) {
				fprintf(stderr, "collocd: error: %s: %s\n", a, diag.msg);
				return 2;
			}
			done = true;
		}
		if (done)
			continue;
		if (strcmp(a, "--set") == 0 && k + 1 < argc) {
			char kv[CD_PATH_MAX + 64];
			char *eq;

			snprintf(kv, sizeof(kv), "%s", argv[++k]);
			eq = strchr(kv, '=');
			if (!eq) {
				fprintf(stderr,
					"collocd: error: --set wants KEY=VALUE, got "
					"'%s'\n",
					kv);
				return 2;
			}
			*eq = '\0';
			if (cd_config_set(&cfg, kv, eq + 1, &diag)) {
				fprintf(stderr, "collocd: error: --set %s: %s\n", kv,
					diag.msg);
				return 2;
			}
			continue;
		}
		fprintf(stderr,
			"collocd: error: unknown option '%s' (see collocd --help)\n", a);
		return 2;
	}
	if (print)
		return cd_config_write(&cfg, stdout) ? 1 : 0;
	rc = colloc__mkdir_p(cfg.state_dir, 0755, NULL);
	if (rc != 0) {
		fprintf(stderr, "collocd: error: cannot create %s: %s\n", cfg.state_dir,
			colloc_strerror(rc));
		return 1;
	}
	lock = lock_state_dir(cfg.state_dir);
	if (lock < 0)
		return 1;
	if (cd_daemon_create(&cfg, cd_now_read(), log_line, &d, &diag) != 0) {
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
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
	rc = cd_server_run(d, cfg.socket_path, &diag);
	if (rc)
		fprintf(stderr, "collocd: error: %s\n", diag.msg);
	else
		log_line("stopped; running jobs continue under their supervisors");
	cd_daemon_destroy(d);
	close(lock);
	return rc ? 1 : 0;
}
