/*
 * launcher.c — collocd's job launcher and supervisor; see launcher.h.
 *
 * Three processes take part. The daemon (cd_launch) checks the request,
 * prepares everything that can fail early — the job's environment, the two
 * log files, the status file's directory — and forks the supervisor. The
 * supervisor detaches (setsid, clean descriptors and signals), forks the job,
 * tells the daemon the job's pid over a handshake pipe, then waits for the
 * job and writes the status file. The job child switches to the user, enters
 * the working directory and execs; a failure on the way is sent to the
 * supervisor over a close-on-exec "exec error" pipe (EOF there means exec
 * succeeded).
 *
 * Between fork and exec the job child only makes system calls and copies
 * into stack buffers: everything it needs (environment, group list) is
 * built before it is forked.
 *
 * Not here: deciding what to run, reaping supervisors (the daemon does that
 * on SIGCHLD), recognising OOM (oom.c).
 */
#define _GNU_SOURCE /* pipe2, setgroups, getgrouplist, F_DUPFD_CLOEXEC, syscall */

#include "daemon/launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colloc/units.h"
#include "common/clock.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define STATUS_MAX_BYTES 8192
#define STATUS_HEADER "colloc-status 1"
#define PROC_STAT_MAX 4096
/* A day: longer is a configuration mistake (and would overflow clocks). */
#define KILL_GRACE_MAX_MS (24LL * 3600 * 1000)
/* How long the supervisor waits for the job's killed leftovers to go. */
#define LEFTOVER_WAIT_MS 2000
/* glibc's execvp default when PATH is unset (confstr(_CS_PATH)). */
#define DEFAULT_PATH "/bin:/usr/bin"
/* Supplementary groups: Linux's NGROUPS_MAX. */
#define GROUPS_MAX 65536

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef NAME_MAX
#define NAME_MAX 255
#endif

/* What went wrong, sent from the job child to the supervisor (exec error
 * pipe) or from the supervisor to the daemon (handshake pipe). */
/* Bytes reserved beside a running job for its final status (a status file
 * is well under this: status_format() writes at most 2 KiB). */
#define STATUS_RESERVE 4096

enum stage {
	STAGE_NONE = 0,
	/* job child -> supervisor */
	STAGE_PGID,
	STAGE_STDIO,
	STAGE_GROUPS,
	STAGE_GID,
	STAGE_UID,
	STAGE_CHDIR,
	STAGE_EXEC,
	/* supervisor -> daemon, before a job exists */
	STAGE_SUP_FDS,
	STAGE_SUP_GROUPS,
	STAGE_SUP_PIPE,
	STAGE_SUP_FORK,
	STAGE_SUP_CLAIM,
};

/* One message, well under PIPE_BUF: written and read whole. */
struct report {
	int32_t stage; /* enum stage; STAGE_NONE: pid is the job */
	int32_t err; /* errno */
	int64_t pid;
};

/* What the supervisor and the job child need; built by cd_launch() before
 * the first fork, so nothing after a fork has to allocate it. */
struct sup_ctx {
	const struct cd_launch_spec *spec;
	char **envp; /* the job's environment, NULL-terminated */
	const char *path; /* PATH of the submitted environment */
	const char *status_base; /* last component of status_path */
	char launch_name[NAME_MAX + 1]; /* status_base + ".launch": the intent */
	char sup_name[NAME_MAX + 1]; /* status_base + ".sup": the claim */
	int hs_fd; /* handshake, write end */
	int out_fd, err_fd; /* the logs */
	int dir_fd; /* the status file's directory */
	uint64_t out_off, err_off;
	bool switch_user; /* root daemon, job not run as root */
	pid_t sup_pid; /* the supervisor, set before it forks the job */
};

/* ---- small helpers ------------------------------------------------------------ */

/* execve() wants char *const[]; the strings are never written. Copying the
 * pointer's bytes drops the const without a cast that -Wcast-qual flags. */
static char *const *unconst_vec(const char *const *v)
{
	char *const *m;

	memcpy(&m, &v, sizeof(m));
	return m;
}

static char *unconst(const char *s)
{
	char *m;

	memcpy(&m, &s, sizeof(m));
	return m;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one struct report; 0, or -1 on EOF / a short message / an error. */
static int read_report(int fd, struct report *r)
{
	ssize_t n;

	do {
		n = read(fd, r, sizeof(*r));
	} while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*r) ? 0 : -1;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
}

/* Whether entry ("NAME=VALUE", or a bare "NAME") sets the variable name of
 * length len. */
static bool env_is(const char *entry, const char *name, size_t len)
{
	return len > 0 && strncmp(entry, name, len) == 0 &&
	       (entry[len] == '=' || entry[len] == '\0');
}

/* ---- /proc -------------------------------------------------------------------- */

/*
 * State (field 3) and start time (field 22) of pid from /proc/PID/stat.
 * The command name (field 2) is in parentheses and may itself hold spaces
 * and ')', so fields are counted from the last ')'. Returns 0 or -1.
 */
static int proc_stat(int64_t pid, char *state, uint64_t *start)
{
	char path[64], buf[PROC_STAT_MAX];
	const char *p;
	size_t got = 0;
	int fd, field;

	if (pid <= 0 || pid > INT32_MAX)
		return -1;
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == '\0')
		return -1;
	*state = p[2];
	/* p is at the end of field 2; each space starts the next field. */
	for (field = 2; *p && field < 22; p++) {
		if (*p == ' ')
			field++;
	}
	if (field != 22)
		return -1;
	{
		uint64_t v = 0;
		bool any = false;

		for (; *p >= '0' && *p <= '9'; p++) {
			unsigned d = (unsigned)(*p - '0');

			if (v > (UINT64_MAX - d) / 10)
				return -1;
			v = v * 10 + d;
			any = true;
		}
		if (!any || (*p != ' ' && *p != '\n' && *p != '\0'))
			return -1;
		*start = v;
	}
	return 0;
}

uint64_t cd_process_start_ticks(int64_t pid)
{
	char state;
	uint64_t start;

	return proc_stat(pid, &state, &start) == 0 ? start : 0;
}

bool cd_supervisor_alive(int64_t pid, uint64_t start_ticks)
{
	char state;
	uint64_t start;

	if (proc_stat(pid, &state, &start) != 0)
		return false;
	/* A zombie (Z) or dying task (X) has ended; only its parent's wait
	 * remains. */
	return state != 'Z' && state != 'X' && start == start_ticks;
}

int cd_supervisor_cancel(int64_t pid, uint64_t start_ticks, struct colloc_diag *diag)
{
	if (!cd_supervisor_alive(pid, start_ticks))
		return colloc_diag_set(diag, -ESRCH, "supervisor %lld is not running",
				       (long long)pid);
	if (kill((pid_t)pid, SIGTERM) != 0) {
		int rc = -errno;

		return colloc_diag_set(diag, rc, "cannot signal supervisor %lld: %s",
				       (long long)pid, strerror(-rc));
	}
	return 0;
}

int64_t cd_process_session(int64_t pid)
{
	pid_t sid;

	/* getsid(0) would answer for the caller. */
	if (pid <= 0 || pid > INT32_MAX)
		return -1;
	sid = getsid((pid_t)pid);
	return sid < 0 ? -1 : (int64_t)sid;
}

int cd_session_kill(int64_t sid)
{
	DIR *dir;
	const struct dirent *e;
	int n = 0;

	if (sid <= 1 || sid > INT32_MAX)
		return 0;
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end != '\0' || pid <= 1 || pid == (long)getpid())
			continue;
		if (getsid((pid_t)pid) == (pid_t)sid && kill((pid_t)pid, SIGKILL) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

/* ---- the status file ---------------------------------------------------------- */

static const char *const kind_names[] = {
	[CD_STATUS_EXITED] = "exited",
	[CD_STATUS_SIGNALED] = "signaled",
	[CD_STATUS_SETUP_FAILED] = "setup-failed",
};

/* The status file's text into buf; its length, or 0 when it does not fit. */
static size_t status_format(const struct cd_status *st, char *buf, size_t cap)
{
	char msg[sizeof(st->message)];
	size_t i;
	int n;

	/* One line per key: a message must not start a new one. */
	for (i = 0; i < sizeof(msg) - 1 && st->message[i]; i++)
		msg[i] = st->message[i] == '\n' || st->message[i] == '\r'
				 ? ' '
				 : st->message[i];
	msg[i] = '\0';
	n = snprintf(buf, cap,
		     STATUS_HEADER "\n"
				   "kind %s\n"
				   "code %d\n"
				   "job_pid %lld\n"
				   "start_ms %lld\n"
				   "end_ms %lld\n"
				   "stdout_offset %llu\n"
				   "stderr_offset %llu\n"
				   "message %s\n",
		     kind_names[st->kind], st->code, (long long)st->job_pid,
		     (long long)st->start_ms, (long long)st->end_ms,
		     (unsigned long long)st->stdout_offset,
		     (unsigned long long)st->stderr_offset, msg);
	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

enum status_key {
	KEY_KIND,
	KEY_CODE,
	KEY_JOB_PID,
	KEY_START_MS,
	KEY_END_MS,
	KEY_STDOUT_OFFSET,
	KEY_STDERR_OFFSET,
	KEY_MESSAGE,
	KEY_COUNT
};

static const struct {
	const char *name;
	uint64_t max; /* numbers only */
	bool required;
} status_keys[KEY_COUNT] = {
	[KEY_KIND] = {"kind", 0, true},
	[KEY_CODE] = {"code", INT32_MAX, true},
	[KEY_JOB_PID] = {"job_pid", INT32_MAX, true},
	[KEY_START_MS] = {"start_ms", INT64_MAX, true},
	[KEY_END_MS] = {"end_ms", INT64_MAX, true},
	[KEY_STDOUT_OFFSET] = {"stdout_offset", UINT64_MAX, true},
	[KEY_STDERR_OFFSET] = {"stderr_offset", UINT64_MAX, true},
	[KEY_MESSAGE] = {"message", 0, false},
};

/* A printable, bounded copy of outside bytes for a message. */
static const char *printable(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i;

	if (n > cap - 4) {
		n = cap - 4;
		memcpy(buf + n, "...", 4);
	} else {
		buf[n] = '\0';
	}
	for (i = 0; i < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	return buf;
}

static int status_number(const char *v, size_t vn, uint64_t max, uint64_t *out)
{
	char num[24];

	if (vn == 0)
		return COLLOC_EUSAGE;
	if (vn >= sizeof(num)) {
		for (size_t i = 0; i < vn; i++) {
			if (v[i] < '0' || v[i] > '9')
				return COLLOC_EUSAGE;
		}
		return COLLOC_EOVERFLOW;
	}
	memcpy(num, v, vn);
	num[vn] = '\0';
	return colloc_parse_u64(num, max, out);
}

/* Does code make sense for kind? Names the problem, or NULL. */
static const char *status_code_check(int kind, int code)
{
	switch (kind) {
	case CD_STATUS_EXITED:
		return code <= 255 ? NULL : "exit code above 255";
	case CD_STATUS_SIGNALED:
		return code >= 1 && code <= 127 ? NULL : "signal number out of range";
	default:
		return code >= 1 && code <= 4095 ? NULL : "errno out of range";
	}
}

int cd_status_parse(const char *buf, size_t len, const char *name, struct cd_status *st,
		    struct colloc_diag *diag)
{
	struct cd_status out;
	bool seen[KEY_COUNT] = {false};
	size_t pos = 0;
	unsigned line = 0;
	char shown[40];

	if (!name)
		name = "status";
	if (!st || (!buf && len > 0))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: no buffer", name);
	if (len > STATUS_MAX_BYTES)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "%s: larger than %d bytes, not a status file",
				       name, STATUS_MAX_BYTES);
	memset(&out, 0, sizeof(out));
	while (pos < len) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos, kn, vn;
		const char *sp, *v;
		int key;
		uint64_t num = 0;
		int rc;

		pos += n + (nl ? 1 : 0);
		line++;
		if (memchr(s, '\0', n))
			return colloc_diag_set(diag, COLLOC_EFORMAT, "%s:%u: NUL byte",
					       name, line);
		if (line == 1) {
			if (n == strlen(STATUS_HEADER) &&
			    memcmp(s, STATUS_HEADER, n) == 0)
				continue;
			if (n > 14 && memcmp(s, "colloc-status ", 14) == 0)
				return colloc_diag_set(
					diag, COLLOC_EFORMAT,
					"%s:1: unsupported status version '%s'", name,
					printable(s + 14, n - 14, shown, sizeof(shown)));
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:1: not a colloc status file", name);
		}
		sp = memchr(s, ' ', n);
		kn = sp ? (size_t)(sp - s) : n;
		v = sp ? sp + 1 : s + n;
		vn = sp ? n - kn - 1 : 0;
		for (key = 0; key < KEY_COUNT; key++) {
			if (strlen(status_keys[key].name) == kn &&
			    memcmp(status_keys[key].name, s, kn) == 0)
				break;
		}
		if (key == KEY_COUNT)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%u: unknown key '%s'", name, line,
					       printable(s, kn, shown, sizeof(shown)));
		if (seen[key])
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%u: '%s' given twice", name, line,
					       status_keys[key].name);
		seen[key] = true;
		if (key == KEY_KIND) {
			int k;

			for (k = 0; k < (int)ARRAY_LEN(kind_names); k++) {
				if (strlen(kind_names[k]) == vn &&
				    memcmp(kind_names[k], v, vn) == 0)
					break;
			}
			if (k == (int)ARRAY_LEN(kind_names))
				return colloc_diag_set(
					diag, COLLOC_EFORMAT,
					"%s:%u: kind '%s' is not exited, signaled or "
					"setup-failed",
					name, line,
					printable(v, vn, shown, sizeof(shown)));
			out.kind = k;
			continue;
		}
		if (key == KEY_MESSAGE) {
			if (vn >= sizeof(out.message))
				return colloc_diag_set(
					diag, COLLOC_EFORMAT,
					"%s:%u: message longer than %zu bytes", name,
					line, sizeof(out.message) - 1);
			memcpy(out.message, v, vn);
			out.message[vn] = '\0';
			continue;
		}
		rc = status_number(v, vn, status_keys[key].max, &num);
		if (rc != 0)
			return colloc_diag_set(
				diag, COLLOC_EFORMAT, "%s:%u: %s '%s' is %s", name, line,
				status_keys[key].name,
				printable(v, vn, shown, sizeof(shown)),
				rc == COLLOC_EOVERFLOW ? "out of range"
						       : "not a non-negative integer");
		switch (key) {
		case KEY_CODE:
			out.code = (int)num;
			break;
		case KEY_JOB_PID:
			out.job_pid = (int64_t)num;
			break;
		case KEY_START_MS:
			out.start_ms = (int64_t)num;
			break;
		case KEY_END_MS:
			out.end_ms = (int64_t)num;
			break;
		case KEY_STDOUT_OFFSET:
			out.stdout_offset = num;
			break;
		default:
			out.stderr_offset = num;
			break;
		}
	}
	if (line == 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s:1: empty, not a status file", name);
	for (int key = 0; key < KEY_COUNT; key++) {
		if (status_keys[key].required && !seen[key])
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s:%u: missing '%s'", name, line + 1,
					       status_keys[key].name);
	}
	{
		const char *bad = status_code_check(out.kind, out.code);

		if (bad)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s: %s (kind %s, code %d)", name, bad,
					       kind_names[out.kind], out.code);
	}
	*st = out;
	return 0;
}

int cd_status_read(const char *path, struct cd_status *st, struct colloc_diag *diag)
{
	char *buf;
	size_t got = 0;
	int fd, rc;

	if (!path || !st)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "cd_status_read: no path");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			return colloc_diag_set(diag, rc, "%s: not written yet", path);
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	/* One byte over the limit tells a full file from an oversized one. */
	buf = malloc(STATUS_MAX_BYTES + 1);
	if (!buf) {
		close(fd);
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
	}
	while (got < STATUS_MAX_BYTES + 1) {
		ssize_t n = read(fd, buf + got, STATUS_MAX_BYTES + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			free(buf);
			close(fd);
			return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = cd_status_parse(buf, got, path, st, diag);
	free(buf);
	return rc;
}

/* Write st as dir_fd/base: to base.tmp, fsync, rename, fsync the directory.
 * Returns 0 or -errno. */
static int status_write(int dir_fd, const char *base, const struct cd_status *st)
{
	char text[2048], tmp[NAME_MAX + 1];
	size_t len = status_format(st, text, sizeof(text));
	int fd, rc;

	if (len == 0)
		return -EOVERFLOW;
	snprintf(tmp, sizeof(tmp), "%s.tmp", base);
	/* A leftover of an earlier attempt; and never follow a planted link. */
	if (unlinkat(dir_fd, tmp, 0) != 0 && errno != ENOENT)
		return -errno;
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0640);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, text, len);
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dir_fd, tmp, dir_fd, base) != 0)
		rc = -errno;
	if (rc != 0) {
		unlinkat(dir_fd, tmp, 0);
		return rc;
	}
	/* The rename itself is durable only once the directory is. */
	fsync(dir_fd);
	return 0;
}

/* ---- the job child ------------------------------------------------------------ */

/* execvp() with the PATH of the job's environment rather than the
 * supervisor's. Returns the errno to report (glibc's rules: EACCES if some
 * candidate was not executable, else ENOENT; other errors stop the search).
 * Unlike execvp, a file without a #! line is not retried under /bin/sh. */
static int exec_search(const char *file, char *const argv[], char *const envp[],
		       const char *path)
{
	size_t flen = strlen(file);
	bool eacces = false;
	const char *p = path;

	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return errno;
	}
	for (;;) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);
		char cand[PATH_MAX];

		if (dlen + 1 + flen < sizeof(cand)) {
			/* An empty element means the current directory. */
			if (dlen > 0) {
				for (size_t i = 0; i < dlen; i++)
					cand[i] = p[i];
				cand[dlen] = '/';
				memcpy(cand + dlen + 1, file, flen + 1);
			} else {
				memcpy(cand, file, flen + 1);
			}
			execve(cand, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
			case ENAMETOOLONG:
			case ELOOP:
				break;
			default:
				return errno;
			}
		}
		if (!end)
			break;
		p = end + 1;
	}
	return eacces ? EACCES : ENOENT;
}

static _Noreturn void job_fail(int fd, enum stage stage, int err)
{
	struct report r = {.stage = stage, .err = err, .pid = 0};

	write_all(fd, &r, sizeof(r));
	_exit(127);
}

/* The forked job: only system calls and stack copies from here to exec. */
static _Noreturn void job_run(const struct sup_ctx *c, const gid_t *groups,
			      size_t ngroups, int err_fd)
{
	const struct cd_launch_spec *s = c->spec;
	pid_t sup = c->sup_pid; /* not getppid(): it may be gone already */
	struct sigaction sa;
	sigset_t none;
	int e;

	/* The supervisor ignores SIGPIPE and blocks SIGTERM/SIGCHLD; exec
	 * keeps both, the job must not. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (setpgid(0, 0) != 0)
		job_fail(err_fd, STAGE_PGID, errno);
	/* stdin is the supervisor's /dev/null; dup2 clears close-on-exec. */
	if (dup2(c->out_fd, STDOUT_FILENO) < 0 || dup2(c->err_fd, STDERR_FILENO) < 0)
		job_fail(err_fd, STAGE_STDIO, errno);
	if (c->switch_user) {
		if (setgroups(ngroups, groups) != 0)
			job_fail(err_fd, STAGE_GROUPS, errno);
		if (setgid((gid_t)s->gid) != 0)
			job_fail(err_fd, STAGE_GID, errno);
		if (setuid((uid_t)s->uid) != 0)
			job_fail(err_fd, STAGE_UID, errno);
	}
	/* After the switch, so that the user's own permissions apply. */
	if (chdir(s->cwd) != 0)
		job_fail(err_fd, STAGE_CHDIR, errno);
	/* The job dies with its supervisor: one killed by SIGKILL cannot stop
	 * it, and a job nobody supervises would keep its GPU memory under no
	 * job, beyond cancel (issue 14). Set after the user switch, which
	 * clears it; a supervisor that is already gone means no job. */
	if (prctl(PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0L, 0L, 0L) != 0 ||
	    getppid() != sup)
		job_fail(err_fd, STAGE_EXEC, ESRCH);
	e = exec_search(s->argv[0], unconst_vec(s->argv), c->envp, c->path);
	job_fail(err_fd, STAGE_EXEC, e);
}

/* ---- the supervisor ----------------------------------------------------------- */

static _Noreturn void sup_abort(int hs_fd, enum stage stage, int err)
{
	struct report r = {.stage = stage, .err = err, .pid = 0};

	write_all(hs_fd, &r, sizeof(r));
	_exit(1);
}

/* Default dispositions, SIGPIPE ignored (a vanished daemon must not kill
 * the supervisor), SIGTERM and SIGCHLD blocked for sigtimedwait(). */
static void sup_signals(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* SIGKILL, SIGSTOP: EINVAL, fine */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_SETMASK, &set, NULL);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Close every descriptor from 3 up except keep[0..n) (all >= 3). */
static int close_others(int *keep, size_t n)
{
	DIR *d;
	struct dirent *de;

	qsort(keep, n, sizeof(*keep), cmp_int);
#ifdef SYS_close_range
	{
		unsigned lo = 3;
		bool ok = true;

		for (size_t i = 0; i < n && ok; i++) {
			unsigned k = (unsigned)keep[i];

			if (k > lo && syscall(SYS_close_range, lo, k - 1, 0) != 0)
				ok = false;
			lo = k + 1;
		}
		if (ok && syscall(SYS_close_range, lo, ~0U, 0) == 0)
			return 0;
	}
#endif
	/* No close_range (Linux < 5.9): ask /proc which are open. */
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		uint64_t fd;
		bool kept = false;

		if (colloc_parse_u64(de->d_name, INT_MAX, &fd) != 0 || fd < 3 ||
		    (int)fd == dirfd(d))
			continue;
		for (size_t i = 0; i < n; i++)
			kept = kept || keep[i] == (int)fd;
		if (!kept)
			close((int)fd);
	}
	closedir(d);
	return 0;
}

/* Move *fd to a number above stdin/stdout/stderr. */
static int fd_above_stdio(int *fd)
{
	int nfd;

	if (*fd > STDERR_FILENO)
		return 0;
	nfd = fcntl(*fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (nfd < 0)
		return -errno;
	close(*fd);
	*fd = nfd;
	return 0;
}

/* Give the supervisor /dev/null as 0, 1 and 2 and nothing else but the
 * descriptors in c and also_keep (when it is one, above stderr). */
static int sup_fds(struct sup_ctx *c, int also_keep)
{
	int keep[5];
	int null, rc, n = 4;

	if ((rc = fd_above_stdio(&c->hs_fd)) != 0 ||
	    (rc = fd_above_stdio(&c->out_fd)) != 0 ||
	    (rc = fd_above_stdio(&c->err_fd)) != 0 ||
	    (rc = fd_above_stdio(&c->dir_fd)) != 0)
		return rc;
	null = open("/dev/null", O_RDWR | O_NOCTTY);
	if (null < 0)
		return -errno;
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fd != null && dup2(null, fd) < 0)
			return -errno;
	}
	if (null > STDERR_FILENO)
		close(null);
	keep[0] = c->hs_fd;
	keep[1] = c->out_fd;
	keep[2] = c->err_fd;
	keep[3] = c->dir_fd;
	if (also_keep > STDERR_FILENO)
		keep[n++] = also_keep;
	return close_others(keep, (size_t)n);
}

/* The groups the job gets: initgroups()'s list, computed here because the
 * job child must not call into NSS. *out is malloc'd. */
static int sup_groups(const struct cd_launch_spec *s, gid_t **out, size_t *n)
{
	int cap = 64;

	if (!s->user || !s->user[0]) {
		*out = malloc(sizeof(gid_t));
		if (!*out)
			return -ENOMEM;
		(*out)[0] = (gid_t)s->gid;
		*n = 1;
		return 0;
	}
	for (;;) {
		gid_t *g = malloc((size_t)cap * sizeof(*g));
		int got = cap;

		if (!g)
			return -ENOMEM;
		if (getgrouplist(s->user, (gid_t)s->gid, g, &got) >= 0) {
			*out = g;
			*n = (size_t)got;
			return 0;
		}
		free(g);
		/* got is now the number needed. */
		if (got <= cap || got > GROUPS_MAX)
			return -EINVAL;
		cap = got;
	}
}

/* Wait for the job; SIGTERM is forwarded to its group, and SIGKILL follows
 * grace_ms after the first. Returns the job's wait status, or -1 if lost. */
static int sup_wait(pid_t job, int64_t grace_ms)
{
	sigset_t set;
	bool armed = false, killed = false;
	int64_t kill_at = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	for (;;) {
		int ws, sig;
		pid_t w = waitpid(-1, &ws, WNOHANG);

		if (w == job)
			return ws;
		/* Another child is an orphan of the job's, adopted as subreaper:
		 * reap it now, or a long job could pile up zombies. */
		if (w > 0 || (w < 0 && errno == EINTR))
			continue;
		if (w < 0)
			return -1;
		if (armed) {
			int64_t left = kill_at - colloc__mono_ms();
			struct timespec ts;

			if (left <= 0) {
				kill(-job, SIGKILL);
				armed = false;
				killed = true;
				continue;
			}
			ts.tv_sec = (time_t)(left / 1000);
			ts.tv_nsec = (long)(left % 1000) * 1000000;
			sig = sigtimedwait(&set, NULL, &ts);
		} else {
			sig = sigwaitinfo(&set, NULL);
		}
		if (sig == SIGTERM) {
			kill(-job, SIGTERM);
			/* A stopped job would hold the SIGTERM until continued. */
			kill(-job, SIGCONT);
			if (!armed && !killed) {
				armed = true;
				kill_at = colloc__mono_ms() + grace_ms;
			}
		}
	}
}

/*
 * Reap what the job left behind (orphans adopted as subreaper, killed with
 * the group): until no member of the group pgid remains, or limit_ms.
 * Bounded because a process in uninterruptible sleep (a GPU driver call)
 * dies only when that call returns.
 */
static void sup_reap(pid_t pgid, int64_t limit_ms)
{
	int64_t deadline = colloc__mono_ms() + limit_ms;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (;;) {
		pid_t w = waitpid(-1, NULL, WNOHANG);
		int64_t left;
		struct timespec ts;

		if (w > 0 || (w < 0 && errno == EINTR))
			continue;
		if (w < 0)
			return; /* no children at all */
		if (kill(-pgid, 0) != 0 && errno == ESRCH)
			return;
		left = deadline - colloc__mono_ms();
		if (left <= 0)
			return;
		if (left > 50)
			left = 50; /* a member that is not our child gives no SIGCHLD */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000000;
		sigtimedwait(&set, NULL, &ts);
	}
}

static void setup_message(char *buf, size_t cap, const struct cd_launch_spec *s,
			  enum stage stage, int err)
{
	const char *why = strerror(err);

	switch (stage) {
	case STAGE_GROUPS:
	case STAGE_GID:
	case STAGE_UID:
		if (s->user && s->user[0])
			snprintf(buf, cap, "cannot switch to user '%s': %s", s->user,
				 why);
		else
			snprintf(buf, cap, "cannot switch to uid %u: %s",
				 (unsigned)s->uid, why);
		break;
	case STAGE_CHDIR:
		snprintf(buf, cap, "cannot chdir to '%s': %s", s->cwd, why);
		break;
	case STAGE_EXEC:
		snprintf(buf, cap, "cannot execute '%s': %s", s->argv[0], why);
		break;
	case STAGE_STDIO:
		snprintf(buf, cap, "cannot redirect output to the logs: %s", why);
		break;
	default:
		snprintf(buf, cap, "cannot start a process group: %s", why);
		break;
	}
}

/*
 * The supervisor claims its launch before the job exists: it writes its pid
 * and start time into the daemon's intent file and renames it to the claim.
 * rename() is atomic, so exactly one of this claim and a restarted daemon's
 * revocation (cd_launch_reconcile() unlinking the intent) wins. Returns 0 or
 * -errno (-ENOENT: revoked).
 */
/* The status, written into the claim's reserved blocks and renamed over
 * the status name: what status_write() does with a temporary file, without
 * needing a free block. 0 or -errno. */
static int status_write_reserved(const struct sup_ctx *c, const struct cd_status *st)
{
	char text[2048];
	size_t len = status_format(st, text, sizeof(text));
	int fd, rc = 0;

	if (len == 0 || len > STATUS_RESERVE)
		return -EOVERFLOW;
	fd = openat(c->dir_fd, c->sup_name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, text, len, 0) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	if (rc == 0 && ftruncate(fd, (off_t)len) != 0)
		rc = -errno;
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(c->dir_fd, c->sup_name, c->dir_fd, c->status_base) != 0)
		rc = -errno;
	if (rc == 0)
		fsync(c->dir_fd);
	return rc;
}

static int sup_claim(const struct sup_ctx *c)
{
	char line[64];
	int fd, n, rc = 0;

	fd = openat(c->dir_fd, c->launch_name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(line, sizeof(line), "%lld %llu\n", (long long)getpid(),
		     (unsigned long long)cd_process_start_ticks(getpid()));
	rc = write_all(fd, line, (size_t)n);
	/* The blocks the status will need, taken now: a state filesystem that
	 * fills up while the job runs (its own log, say) must not cost the
	 * record of how it ended (status_write_reserved). Without them the
	 * job still runs. */
	if (rc == 0)
		(void)posix_fallocate(fd, 0, STATUS_RESERVE);
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(c->dir_fd, c->launch_name, c->dir_fd, c->sup_name) != 0)
		rc = -errno;
	if (rc == 0)
		fsync(c->dir_fd);
	return rc;
}

static _Noreturn void supervise(struct sup_ctx *c)
{
	const struct cd_launch_spec *s = c->spec;
	struct cd_status st;
	struct report r = {.stage = STAGE_NONE, .err = 0, .pid = 0};
	gid_t *groups = NULL;
	size_t ngroups = 0;
	int ep[2], rc;
	pid_t job;

	setsid(); /* cannot fail: a fresh child leads no group */
	/* The daemon's descriptors go first: among them are its state-dir and
	 * database locks (flock, shared with this fork), and a daemon killed
	 * and restarted while a supervisor still held them would be refused
	 * ("another collocd is using the state directory"). Joining a cgroup
	 * can take milliseconds under load: not while holding them. */
	rc = sup_fds(c, s->in_cgroup ? s->cgroup_fd : -1);
	if (rc != 0)
		sup_abort(c->hs_fd, STAGE_SUP_FDS, -rc);
	/* Into the job's cgroup before anything starts: all the job starts
	 * stays in it. A failure leaves the job without one (its session is
	 * killed). */
	if (s->in_cgroup && s->cgroup_fd >= 0) {
		if (write(s->cgroup_fd, "0", 1) != 1) {
			/* nothing to do: the daemon kills the session */
		}
		close(s->cgroup_fd);
	}
	/* The job's orphans become ours, not init's, so that they are reaped
	 * here even where init does not reap (containers). */
	prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	sup_signals();
	/* Hold no directory (and so no mount) of the daemon's. */
	if (chdir("/") != 0)
		sup_abort(c->hs_fd, STAGE_SUP_FDS, errno);
	if (c->switch_user && (rc = sup_groups(s, &groups, &ngroups)) != 0)
		sup_abort(c->hs_fd, STAGE_SUP_GROUPS, -rc);
	if (pipe2(ep, O_CLOEXEC) != 0)
		sup_abort(c->hs_fd, STAGE_SUP_PIPE, errno);
	if ((rc = sup_claim(c)) != 0)
		sup_abort(c->hs_fd, STAGE_SUP_CLAIM, -rc);

	memset(&st, 0, sizeof(st));
	st.stdout_offset = c->out_off;
	st.stderr_offset = c->err_off;
	st.start_ms = colloc__wall_ms();
	c->sup_pid = getpid();
	job = fork();
	if (job < 0)
		sup_abort(c->hs_fd, STAGE_SUP_FORK, errno);
	if (job == 0) {
		close(ep[0]);
		job_run(c, groups, ngroups, ep[1]);
	}
	close(ep[1]);
	/* Either side may win the race; both make the group before anyone
	 * signals it. EACCES once the job has exec'd is fine. */
	setpgid(job, job);
	st.job_pid = job;
	r.pid = job;
	write_all(c->hs_fd, &r, sizeof(r));
	close(c->hs_fd);

	if (read_report(ep[0], &r) == 0) {
		reap(job);
		st.kind = CD_STATUS_SETUP_FAILED;
		st.code = r.err > 0 ? r.err : EIO;
		setup_message(st.message, sizeof(st.message), s, (enum stage)r.stage,
			      st.code);
	} else {
		int ws = sup_wait(job, s->kill_grace_ms);

		if (ws < 0) {
			st.kind = CD_STATUS_SETUP_FAILED;
			st.code = ECHILD;
			snprintf(st.message, sizeof(st.message), "lost track of the job");
		} else if (WIFSIGNALED(ws)) {
			st.kind = CD_STATUS_SIGNALED;
			st.code = WTERMSIG(ws);
		} else {
			st.kind = CD_STATUS_EXITED;
			st.code = WEXITSTATUS(ws);
		}
	}
	close(ep[0]);
	st.end_ms = colloc__wall_ms();
	/* Whatever the job left in its group would keep GPU memory. */
	kill(-job, SIGKILL);
	sup_reap(job, LEFTOVER_WAIT_MS);
	if (status_write(c->dir_fd, c->status_base, &st) != 0 &&
	    status_write_reserved(c, &st) != 0)
		_exit(1);
	/* The status says everything the claim did, and more. */
	unlinkat(c->dir_fd, c->sup_name, 0);
	_exit(0);
}

/* ---- the daemon's side -------------------------------------------------------- */

static int check_spec(const struct cd_launch_spec *s, struct colloc_diag *diag)
{
	const char *base;
	size_t n;

	if (!s->argv || !s->argv[0] || !s->argv[0][0])
		return colloc_diag_set(diag, COLLOC_EUSAGE, "job %llu: no command",
				       (unsigned long long)s->job_id);
	for (n = 0; s->argv[n]; n++) {
		if (n >= CD_LAUNCH_MAX_ARGS)
			return colloc_diag_set(
				diag, COLLOC_ELIMIT, "job %llu: more than %d arguments",
				(unsigned long long)s->job_id, CD_LAUNCH_MAX_ARGS);
	}
	for (n = 0; s->envp && s->envp[n]; n++) {
		if (n >= CD_LAUNCH_MAX_ENV)
			return colloc_diag_set(
				diag, COLLOC_ELIMIT,
				"job %llu: more than %d environment entries",
				(unsigned long long)s->job_id, CD_LAUNCH_MAX_ENV);
	}
	if (!s->cwd || s->cwd[0] != '/')
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "job %llu: working directory must be absolute",
				       (unsigned long long)s->job_id);
	if (!s->stdout_path || !s->stdout_path[0] || !s->stderr_path ||
	    !s->stderr_path[0] || !s->status_path || !s->status_path[0])
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "job %llu: log or status path missing",
				       (unsigned long long)s->job_id);
	base = strrchr(s->status_path, '/');
	base = base ? base + 1 : s->status_path;
	if (!base[0] || strlen(base) + 4 > NAME_MAX || strcmp(base, ".") == 0 ||
	    strcmp(base, "..") == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "job %llu: bad status file name '%s'",
				       (unsigned long long)s->job_id, s->status_path);
	for (size_t k = 0; k <= CD_LAUNCH_MAX_EXTRA; k++) {
		const char *e = k == 0	      ? s->extra_env
				: s->more_env ? s->more_env[k - 1]
					      : NULL;

		if (k > 0 && !e)
			break;
		if (k == CD_LAUNCH_MAX_EXTRA)
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"job %llu: more than %d extra environment entries",
				(unsigned long long)s->job_id, CD_LAUNCH_MAX_EXTRA - 1);
		if (e && e[0] && (e[0] == '=' || !strchr(e, '=')))
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"job %llu: extra environment '%s' is not NAME=VALUE",
				(unsigned long long)s->job_id, e);
	}
	if (s->kill_grace_ms < 0 || s->kill_grace_ms > KILL_GRACE_MAX_MS)
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"job %llu: kill grace %lld ms is not within 0..%lld",
			(unsigned long long)s->job_id, (long long)s->kill_grace_ms,
			(long long)KILL_GRACE_MAX_MS);
	if (geteuid() != 0 && s->uid != (uint32_t)geteuid())
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"job %llu: a daemon not running as root runs jobs only "
			"as itself (uid %u), not as uid %u",
			(unsigned long long)s->job_id, (unsigned)geteuid(),
			(unsigned)s->uid);
	return 0;
}

/* Whether submitted entry e is one the daemon sets (extras[0..n_extra)). */
static bool env_replaced(const char *e, const char *const *extras, size_t n_extra)
{
	for (size_t k = 0; k < n_extra; k++)
		if (env_is(e, extras[k], (size_t)(strchr(extras[k], '=') - extras[k])))
			return true;
	return false;
}

/* The job's environment: the submitted one without the entries we set,
 * then CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, extra_env and more_env. One
 * malloc'd block holding the array and the CUDA_VISIBLE_DEVICES string. */
static char **build_env(const struct cd_launch_spec *s, const char **path)
{
	static const char order[] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
	const char *devs = s->cuda_visible_devices ? s->cuda_visible_devices : "";
	const char *extras[CD_LAUNCH_MAX_EXTRA];
	size_t n = 0, k = 0, slots, n_extra = 0,
	       cvd_len = strlen("CUDA_VISIBLE_DEVICES=") + strlen(devs) + 1;
	char **env, *cvd;

	/* check_spec() has bounded and shaped these. */
	if (s->extra_env && s->extra_env[0])
		extras[n_extra++] = s->extra_env;
	for (size_t i = 0; s->more_env && s->more_env[i] && n_extra < CD_LAUNCH_MAX_EXTRA;
	     i++)
		if (s->more_env[i][0])
			extras[n_extra++] = s->more_env[i];
	while (s->envp && s->envp[n])
		n++;
	slots = n + 3 + n_extra; /* n <= CD_LAUNCH_MAX_ENV: no overflow */
	env = malloc(slots * sizeof(*env) + cvd_len);
	if (!env)
		return NULL;
	cvd = (char *)(env + slots);
	snprintf(cvd, cvd_len, "CUDA_VISIBLE_DEVICES=%s", devs);
	*path = DEFAULT_PATH;
	for (size_t i = n; i-- > 0;) {
		if (strncmp(s->envp[i], "PATH=", 5) == 0)
			*path = s->envp[i] + 5; /* the first one, as getenv */
	}
	for (size_t i = 0; i < n; i++) {
		const char *e = s->envp[i];

		if (env_is(e, "CUDA_VISIBLE_DEVICES", 20) ||
		    env_is(e, "CUDA_DEVICE_ORDER", 17) ||
		    env_replaced(e, extras, n_extra))
			continue;
		env[k++] = unconst(e);
	}
	env[k++] = cvd;
	env[k++] = unconst(order);
	for (size_t i = 0; i < n_extra; i++)
		env[k++] = unconst(extras[i]);
	env[k] = NULL;
	return env;
}

/* Open (create) a log for appending as the job's, and say where this
 * attempt starts in it. */
static int open_log(const struct cd_launch_spec *s, const char *path, int *fd_out,
		    uint64_t *size, struct colloc_diag *diag)
{
	struct stat sb;
	int fd, rc;

	/* A root daemon must not be steered through a planted link into
	 * chowning someone else's file. */
	/* O_NONBLOCK: a FIFO put where a log goes must not block the daemon in
	 * open() (it is refused below as not a plain file). */
	fd = open(path,
		  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW |
			  O_NONBLOCK,
		  0640);
	if (fd < 0) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "job %llu: cannot open log '%s': %s",
				       (unsigned long long)s->job_id, path,
				       strerror(-rc));
	}
	if (fstat(fd, &sb) != 0) {
		rc = -errno;
		close(fd);
		return colloc_diag_set(diag, rc, "job %llu: cannot stat log '%s': %s",
				       (unsigned long long)s->job_id, path,
				       strerror(-rc));
	}
	if (!S_ISREG(sb.st_mode) || (geteuid() == 0 && sb.st_nlink > 1)) {
		close(fd);
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"job %llu: log '%s' is not a plain file of its own",
			(unsigned long long)s->job_id, path);
	}
	/* The job's stdout blocks as usual. */
	(void)fcntl(fd, F_SETFL, O_APPEND);
	if (geteuid() == 0 && fchown(fd, (uid_t)s->uid, (gid_t)s->gid) != 0) {
		rc = -errno;
		close(fd);
		return colloc_diag_set(diag, rc,
				       "job %llu: cannot give log '%s' to uid %u: %s",
				       (unsigned long long)s->job_id, path,
				       (unsigned)s->uid, strerror(-rc));
	}
	*fd_out = fd;
	*size = (uint64_t)sb.st_size;
	return 0;
}

static int open_status_dir(const struct cd_launch_spec *s, int *fd_out,
			   struct colloc_diag *diag)
{
	const char *slash = strrchr(s->status_path, '/');
	char dir[PATH_MAX];
	int fd;

	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
	} else if (slash == s->status_path) {
		snprintf(dir, sizeof(dir), "/");
	} else {
		size_t n = (size_t)(slash - s->status_path);

		if (n >= sizeof(dir))
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "job %llu: status path too long",
					       (unsigned long long)s->job_id);
		memcpy(dir, s->status_path, n);
		dir[n] = '\0';
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;

		return colloc_diag_set(diag, rc, "job %llu: status directory '%s': %s",
				       (unsigned long long)s->job_id, dir, strerror(-rc));
	}
	*fd_out = fd;
	return 0;
}

/* Wait up to HANDSHAKE_TIMEOUT_MS for the supervisor's report. */
static int await_report(int fd, struct report *r)
{
	int64_t deadline = colloc__mono_ms() + HANDSHAKE_TIMEOUT_MS;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
		int64_t left = deadline - colloc__mono_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		return read_report(fd, r) == 0 ? 0 : -EPIPE;
	}
}

static const char *sup_stage_name(int stage)
{
	switch (stage) {
	case STAGE_SUP_GROUPS:
		return "cannot list the user's groups";
	case STAGE_SUP_PIPE:
		return "cannot create a pipe";
	case STAGE_SUP_FORK:
		return "cannot fork the job";
	case STAGE_SUP_CLAIM:
		return "its launch was revoked before it claimed it";
	default:
		return "cannot set up the supervisor";
	}
}

/* Record the intent to launch (an empty file the supervisor claims), made
 * durable before the supervisor exists; an earlier attempt's claim goes. */
static int write_intent(const struct sup_ctx *c, struct colloc_diag *diag)
{
	const struct cd_launch_spec *s = c->spec;
	int fd, rc = 0;

	if (unlinkat(c->dir_fd, c->sup_name, 0) != 0 && errno != ENOENT)
		rc = -errno;
	if (rc == 0 && unlinkat(c->dir_fd, c->launch_name, 0) != 0 && errno != ENOENT)
		rc = -errno;
	fd = rc ? -1
		: openat(c->dir_fd, c->launch_name,
			 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (rc == 0 && fd < 0)
		rc = -errno;
	if (fd >= 0) {
		if (fsync(fd) != 0)
			rc = -errno;
		close(fd);
	}
	if (rc == 0 && fsync(c->dir_fd) != 0)
		rc = -errno;
	if (rc)
		colloc_diag_printf(diag, "job %llu: cannot record its launch in '%s': %s",
				   (unsigned long long)s->job_id, s->status_path,
				   strerror(-rc));
	return rc;
}

int cd_launch_reconcile(const char *status_path, int64_t *sup_pid, uint64_t *sup_start,
			struct colloc_diag *diag)
{
	char path[PATH_MAX], buf[64], *end = buf;
	long long pid = 0;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	*sup_pid = 0;
	*sup_start = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s.launch", status_path) >=
	    sizeof(path))
		return colloc_diag_set(diag, COLLOC_ELIMIT, "status path too long");
	if (unlink(path) == 0)
		return CD_LAUNCH_REVOKED;
	if (errno != ENOENT)
		return colloc_diag_set(diag, -errno, "cannot revoke '%s': %s", path,
				       strerror(errno));
	snprintf(path, sizeof(path), "%s.sup", status_path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return CD_LAUNCH_NONE;
		return colloc_diag_set(diag, -errno, "cannot read '%s': %s", path,
				       strerror(errno));
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT, "'%s' is empty", path);
	buf[n] = '\0';
	errno = 0;
	pid = strtoll(buf, &end, 10);
	if (end != buf && *end == ' ')
		start = strtoull(end + 1, &end, 10);
	if (errno || pid <= 0 || pid > INT32_MAX || start == 0 || *end != '\n')
		return colloc_diag_set(diag, COLLOC_EFORMAT, "'%s' is not a claim", path);
	*sup_pid = pid;
	*sup_start = start;
	return CD_LAUNCH_CLAIMED;
}

int cd_launch(const struct cd_launch_spec *spec, struct cd_launch_result *res,
	      struct colloc_diag *diag)
{
	struct sup_ctx c;
	struct report r = {.stage = STAGE_NONE, .err = 0, .pid = 0};
	int hs[2], rc;
	pid_t sup;

	if (!spec || !res)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "cd_launch: no spec");
	rc = check_spec(spec, diag);
	if (rc != 0)
		return rc;
	memset(&c, 0, sizeof(c));
	c.spec = spec;
	c.switch_user = geteuid() == 0 && spec->uid != 0;
	c.out_fd = c.err_fd = c.dir_fd = c.hs_fd = -1;
	{
		const char *base = strrchr(spec->status_path, '/');

		c.status_base = base ? base + 1 : spec->status_path;
		if ((size_t)snprintf(c.launch_name, sizeof(c.launch_name), "%s.launch",
				     c.status_base) >= sizeof(c.launch_name) ||
		    (size_t)snprintf(c.sup_name, sizeof(c.sup_name), "%s.sup",
				     c.status_base) >= sizeof(c.sup_name))
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "job %llu: status file name too long",
					       (unsigned long long)spec->job_id);
	}
	c.envp = build_env(spec, &c.path);
	if (!c.envp)
		return colloc_diag_set(diag, -ENOMEM, "job %llu: out of memory",
				       (unsigned long long)spec->job_id);
	/* The directory first: a missing one should not leave new logs. */
	if ((rc = open_status_dir(spec, &c.dir_fd, diag)) != 0 ||
	    (rc = open_log(spec, spec->stdout_path, &c.out_fd, &c.out_off, diag)) != 0 ||
	    (rc = open_log(spec, spec->stderr_path, &c.err_fd, &c.err_off, diag)) != 0)
		goto out;
	/* An earlier attempt's status must not be taken for this one's. */
	if (unlinkat(c.dir_fd, c.status_base, 0) != 0 && errno != ENOENT) {
		rc = -errno;
		colloc_diag_printf(diag, "job %llu: cannot remove old status '%s': %s",
				   (unsigned long long)spec->job_id, spec->status_path,
				   strerror(-rc));
		goto out;
	}
	if ((rc = write_intent(&c, diag)) != 0)
		goto out;
	if (pipe2(hs, O_CLOEXEC) != 0) {
		rc = -errno;
		unlinkat(c.dir_fd, c.launch_name, 0);
		colloc_diag_printf(diag, "job %llu: cannot create a pipe: %s",
				   (unsigned long long)spec->job_id, strerror(-rc));
		goto out;
	}
	sup = fork();
	if (sup < 0) {
		rc = -errno;
		close(hs[0]);
		close(hs[1]);
		unlinkat(c.dir_fd, c.launch_name, 0);
		colloc_diag_printf(diag, "job %llu: cannot fork the supervisor: %s",
				   (unsigned long long)spec->job_id, strerror(-rc));
		goto out;
	}
	if (sup == 0) {
		close(hs[0]);
		c.hs_fd = hs[1];
		supervise(&c);
	}
	close(hs[1]);
	rc = await_report(hs[0], &r);
	close(hs[0]);
	if (rc != 0) {
		/* Silent or stuck: make sure it is gone, and its launch with it
		 * (a claim it made is undone: no job runs under it now). */
		kill(sup, SIGKILL);
		reap(sup);
		unlinkat(c.dir_fd, c.launch_name, 0);
		unlinkat(c.dir_fd, c.sup_name, 0);
		colloc_diag_printf(diag, "job %llu: supervisor %s",
				   (unsigned long long)spec->job_id,
				   rc == -ETIMEDOUT ? "did not report within 5 s"
						    : "exited without starting the job");
		goto out;
	}
	if (r.stage != STAGE_NONE || r.pid <= 0) {
		reap(sup);
		unlinkat(c.dir_fd, c.launch_name, 0);
		unlinkat(c.dir_fd, c.sup_name, 0);
		rc = r.err > 0 && r.err < 4096 ? -r.err : -EIO;
		colloc_diag_printf(diag, "job %llu: %s: %s",
				   (unsigned long long)spec->job_id,
				   sup_stage_name(r.stage), strerror(-rc));
		goto out;
	}
	res->sup_pid = sup;
	res->sup_start = cd_process_start_ticks(sup);
	res->job_pgid = r.pid;
	res->stdout_offset = c.out_off;
	res->stderr_offset = c.err_off;
	rc = 0;
out:
	if (c.dir_fd >= 0)
		close(c.dir_fd);
	if (c.err_fd >= 0)
		close(c.err_fd);
	if (c.out_fd >= 0)
		close(c.out_fd);
	free(c.envp);
	return rc;
}
