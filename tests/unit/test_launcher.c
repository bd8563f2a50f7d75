/*
 * test_launcher.c — collocd's job launcher and supervisor (launcher.c):
 * real jobs (/bin/sh, env, ls, sleep) in a temporary directory, their
 * status files and logs; and the status-file parser on its own.
 *
 * cd_launch() forks a supervisor that forks the job; neither ever returns
 * into cmocka (they leave with _exit or exec). Each test reaps the
 * supervisors it started. Every wait has a deadline of a few seconds; jobs
 * that would run longer are cancelled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colloc/error.h"
#include "daemon/launcher.h"
#include "test_util.h"

#define WAIT_MS 5000

struct fixture {
	char dir[64];
	char out[128];
	char err[128];
	char status[128];
};

static const char *const env_std[] = {"PATH=/usr/bin:/bin", "HOME=/", NULL};

/* ---- helpers ------------------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* Remove dir and what is in it, one level of subdirectories deep. */
static void rm_tree(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char p[512];
		struct stat sb;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode) && depth > 0)
			rm_tree(p, depth - 1);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/colloc-test-launch-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->out, sizeof(f->out), "%s/job.out", f->dir);
	snprintf(f->err, sizeof(f->err), "%s/job.err", f->dir);
	snprintf(f->status, sizeof(f->status), "%s/job.status", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rm_tree(f->dir, 1);
	free(f);
	return 0;
}

static void spec_init(const struct fixture *f, struct cd_launch_spec *s,
		      const char *const *argv, const char *const *envp)
{
	memset(s, 0, sizeof(*s));
	s->job_id = 42;
	s->argv = argv;
	s->envp = envp;
	s->cwd = f->dir;
	s->uid = (uint32_t)geteuid();
	s->gid = (uint32_t)getegid();
	s->user = NULL;
	s->cuda_visible_devices = "GPU-aaaa,GPU-bbbb";
	s->extra_env = "COLLOC_SIM_STATE=/tmp/colloc-test.state";
	s->stdout_path = f->out;
	s->stderr_path = f->err;
	s->status_path = f->status;
	s->kill_grace_ms = 2000;
}

static void launch_ok(const struct cd_launch_spec *s, struct cd_launch_result *res)
{
	struct colloc_diag diag = {{0}};
	int rc = cd_launch(s, res, &diag);

	if (rc != 0) {
		print_error("cd_launch: %d %s\n", rc, diag.msg);
		fail();
	}
	assert_true(res->sup_pid > 0);
	assert_true(res->sup_start > 0);
	assert_true(res->job_pgid > 0);
}

/* Poll for the status file until WAIT_MS have passed. */
static void wait_status(const char *path, struct cd_status *st)
{
	int64_t deadline = now_ms() + WAIT_MS;
	struct colloc_diag diag = {{0}};
	int rc;

	while ((rc = cd_status_read(path, st, &diag)) == -ENOENT && now_ms() < deadline)
		nap_ms(5);
	if (rc != 0) {
		print_error("cd_status_read: %d %s\n", rc, diag.msg);
		fail();
	}
}

/* The supervisor exits right after writing the status file. */
static void reap_sup(int64_t pid)
{
	int64_t deadline = now_ms() + WAIT_MS;
	int ws = 0;
	pid_t w;

	while ((w = waitpid((pid_t)pid, &ws, WNOHANG)) == 0 && now_ms() < deadline)
		nap_ms(5);
	assert_int_equal(w, (pid_t)pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
}

/* Launch, wait for the end, reap: the status in *st. */
static void run_job(const struct cd_launch_spec *s, struct cd_launch_result *res,
		    struct cd_status *st)
{
	launch_ok(s, res);
	wait_status(s->status_path, st);
	reap_sup(res->sup_pid);
	assert_int_equal(st->job_pid, res->job_pgid);
}

static char *slurp(const char *path)
{
	char *text = test_slurp(path, 1 << 20);

	assert_non_null(text);
	return text;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	size_t len = strlen(text);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* Wait until pid has ended (gone, or a zombie under someone else). */
static bool wait_dead(int64_t pid)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (cd_supervisor_alive(pid, cd_process_start_ticks(pid))) {
		if (now_ms() >= deadline)
			return false;
		nap_ms(5);
	}
	return true;
}

/* Whether pid has gone entirely: ended and reaped. */
static bool proc_gone(long pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return access(path, F_OK) != 0;
}

/* Wait until the log at path contains needle. */
static void wait_log(const char *path, const char *needle)
{
	int64_t deadline = now_ms() + WAIT_MS;

	for (;;) {
		char *text = test_slurp(path, 1 << 20);
		bool found = text && strstr(text, needle);

		free(text);
		if (found)
			return;
		if (now_ms() >= deadline) {
			print_error("%s never contained '%s'\n", path, needle);
			fail();
		}
		nap_ms(5);
	}
}

static void assert_no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static size_t count_lines(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* ---- jobs ---------------------------------------------------------------------- */

static void test_exit_code_and_logs(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"/bin/sh", "-c",
					   "echo out; echo err >&2; exit 3", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	struct stat sb;
	char tmp[160];
	char *text;

	/* An earlier attempt's output stays; this one's starts at 9. */
	write_file(f->out, "previous\n", 0640);
	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 3);
	assert_string_equal(st.message, "");
	assert_true(st.start_ms > 0);
	assert_true(st.end_ms >= st.start_ms);
	assert_int_equal(res.stdout_offset, 9);
	assert_int_equal(res.stderr_offset, 0);
	assert_int_equal(st.stdout_offset, 9);
	assert_int_equal(st.stderr_offset, 0);
	text = slurp(f->out);
	assert_string_equal(text, "previous\nout\n");
	free(text);
	text = slurp(f->err);
	assert_string_equal(text, "err\n");
	free(text);
	assert_int_equal(stat(f->err, &sb), 0);
	assert_int_equal(sb.st_mode & 0137, 0); /* created 0640 (less umask) */
	/* Renamed into place: no temporary left. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", f->status);
	assert_int_equal(access(tmp, F_OK), -1);

	/* A second attempt appends and records where it started. */
	run_job(&s, &res, &st);
	assert_int_equal(st.stdout_offset, 13);
	assert_int_equal(st.stderr_offset, 4);
	text = slurp(f->out);
	assert_string_equal(text, "previous\nout\nout\n");
	free(text);
}

static void test_environment(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"env", NULL};
	static const char *const envp[] = {
		"PATH=/usr/bin:/bin",	      "SUBMITTED=yes",
		"CUDA_VISIBLE_DEVICES=wrong", "CUDA_DEVICE_ORDER=FASTEST_FIRST",
		"COLLOC_SIM_STATE=old",	      NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	char *text;

	assert_int_equal(setenv("COLLOC_TEST_DAEMON_ONLY", "1", 1), 0);
	spec_init(f, &s, argv, envp);
	run_job(&s, &res, &st);
	assert_int_equal(unsetenv("COLLOC_TEST_DAEMON_ONLY"), 0);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	assert_non_null(strstr(text, "PATH=/usr/bin:/bin\n"));
	assert_non_null(strstr(text, "SUBMITTED=yes\n"));
	assert_non_null(strstr(text, "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb\n"));
	assert_non_null(strstr(text, "CUDA_DEVICE_ORDER=PCI_BUS_ID\n"));
	assert_non_null(strstr(text, "COLLOC_SIM_STATE=/tmp/colloc-test.state\n"));
	assert_null(strstr(text, "COLLOC_TEST_DAEMON_ONLY"));
	assert_null(strstr(text, "wrong"));
	assert_null(strstr(text, "FASTEST_FIRST"));
	assert_null(strstr(text, "=old"));
	assert_int_equal(count_lines(text), 5);
	free(text);

	/* No GPUs and no backend entry: an empty CUDA_VISIBLE_DEVICES hides
	 * every GPU. */
	unlink(f->out);
	s.cuda_visible_devices = NULL;
	s.extra_env = NULL;
	s.envp = env_std;
	run_job(&s, &res, &st);
	text = slurp(f->out);
	assert_non_null(strstr(text, "CUDA_VISIBLE_DEVICES=\n"));
	assert_null(strstr(text, "COLLOC_SIM_STATE"));
	assert_int_equal(count_lines(text), 4);
	free(text);
}

static void test_cwd(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "pwd -P", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	struct stat a, b;
	char *text, *nl;

	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = '\0';
	/* Compare the directories themselves: /tmp may be a link. */
	assert_int_equal(stat(text, &a), 0);
	assert_int_equal(stat(f->dir, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	free(text);
}

static void test_submitted_path(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"colloc-test-cmd", "arg1", NULL};
	const char *envp[3] = {NULL, "HOME=/", NULL};
	char bin[128], cmd[160], path_env[200], old_path[4096], *text;
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;

	snprintf(bin, sizeof(bin), "%s/bin", f->dir);
	snprintf(cmd, sizeof(cmd), "%s/colloc-test-cmd", bin);
	assert_int_equal(mkdir(bin, 0755), 0);
	write_file(cmd, "#!/bin/sh\necho found-me \"$1\"\n", 0755);

	/* Found through the job's PATH, which the daemon's lacks. */
	snprintf(path_env, sizeof(path_env), "PATH=%s:/usr/bin:/bin", bin);
	envp[0] = path_env;
	spec_init(f, &s, argv, envp);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	assert_string_equal(text, "found-me arg1\n");
	free(text);

	/* Not found when only the daemon's PATH has it. */
	snprintf(old_path, sizeof(old_path), "%s", getenv("PATH") ? getenv("PATH") : "");
	assert_int_equal(setenv("PATH", bin, 1), 0);
	s.envp = env_std;
	launch_ok(&s, &res);
	assert_int_equal(setenv("PATH", old_path, 1), 0);
	wait_status(s.status_path, &st);
	reap_sup(res.sup_pid);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, ENOENT);

	/* No PATH at all: the default (/bin:/usr/bin) still finds sh. */
	{
		static const char *const sh_argv[] = {"sh", "-c", "exit 4", NULL};
		static const char *const no_env[] = {NULL};

		s.argv = sh_argv;
		s.envp = no_env;
		run_job(&s, &res, &st);
		assert_int_equal(st.kind, CD_STATUS_EXITED);
		assert_int_equal(st.code, 4);
	}
}

static void test_exec_failures(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"trian.py", "--epochs", "3", NULL};
	const char *noexec_argv[] = {NULL, NULL};
	char noexec[128], want[300];
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;

	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, ENOENT);
	snprintf(want, sizeof(want), "cannot execute 'trian.py': %s", strerror(ENOENT));
	assert_string_equal(st.message, want);
	assert_true(st.job_pid > 0);

	/* A file without execute permission (root needs an x bit too). */
	snprintf(noexec, sizeof(noexec), "%s/noexec.sh", f->dir);
	write_file(noexec, "#!/bin/sh\nexit 0\n", 0644);
	noexec_argv[0] = noexec;
	s.argv = noexec_argv;
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, EACCES);
	snprintf(want, sizeof(want), "cannot execute '%s': %s", noexec, strerror(EACCES));
	assert_string_equal(st.message, want);
}

static void test_bad_cwd(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"/bin/true", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	char want[300];

	spec_init(f, &s, argv, env_std);
	s.cwd = "/nonexistent-colloc-test-dir";
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, ENOENT);
	snprintf(want, sizeof(want), "cannot chdir to '/nonexistent-colloc-test-dir': %s",
		 strerror(ENOENT));
	assert_string_equal(st.message, want);
}

static void test_signal_death(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;

	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_SIGNALED);
	assert_int_equal(st.code, SIGKILL);
}

static void test_cancel(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sleep", "20", NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int64_t t0;

	spec_init(f, &s, argv, env_std);
	launch_ok(&s, &res);
	assert_true(cd_supervisor_alive(res.sup_pid, res.sup_start));
	/* The job runs in its supervisor's session, in its own group. */
	assert_int_equal(cd_process_session(res.job_pgid), res.sup_pid);
	assert_int_equal(cd_process_session(res.sup_pid), res.sup_pid);
	assert_int_equal(cd_status_read(f->status, &st, &diag), -ENOENT);

	t0 = now_ms();
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start, &diag), 0);
	wait_status(f->status, &st);
	assert_true(now_ms() - t0 < 1500); /* well before the 2 s grace */
	assert_int_equal(st.kind, CD_STATUS_SIGNALED);
	assert_int_equal(st.code, SIGTERM);
	reap_sup(res.sup_pid);
	assert_true(wait_dead(res.job_pgid));
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start, &diag), -ESRCH);
	assert_true(diag.msg[0] != '\0');
}

/* A supervisor killed with SIGKILL (which it cannot forward) takes its
 * job with it: no job runs on, holding GPU memory, under nobody. */
static void test_supervisor_killed(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sleep", "20", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;

	spec_init(f, &s, argv, env_std);
	launch_ok(&s, &res);
	assert_true(cd_supervisor_alive(res.sup_pid, res.sup_start));
	assert_int_equal(kill((pid_t)res.sup_pid, SIGKILL), 0);
	assert_int_equal(waitpid((pid_t)res.sup_pid, NULL, 0), (pid_t)res.sup_pid);
	assert_true(wait_dead(res.job_pgid));
}

/* What a job started in the background outlives a supervisor killed by
 * SIGKILL (it is not the supervisor's child); cd_session_kill() finds it by
 * its session and ends it. */
static void test_session_leftovers(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c",
					   "sleep 60 & echo $! > \"$PIDF\"; wait", NULL};
	char envf[300], pidf[256];
	const char *env[] = {"PATH=/usr/bin:/bin", envf, NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	char *text = NULL;
	long bg = 0;
	int64_t deadline;

	snprintf(pidf, sizeof(pidf), "%s/bg.pid", f->dir);
	snprintf(envf, sizeof(envf), "PIDF=%s", pidf);
	spec_init(f, &s, argv, env);
	launch_ok(&s, &res);
	deadline = now_ms() + WAIT_MS;
	while (!(text = test_slurp(pidf, 64)) && now_ms() < deadline)
		nap_ms(5);
	assert_non_null(text);
	bg = strtol(text, NULL, 10);
	free(text);
	assert_true(bg > 1);
	assert_int_equal(kill((pid_t)res.sup_pid, SIGKILL), 0);
	assert_int_equal(waitpid((pid_t)res.sup_pid, NULL, 0), (pid_t)res.sup_pid);
	assert_true(wait_dead(res.job_pgid));
	assert_true(cd_supervisor_alive(bg, cd_process_start_ticks(bg)));
	assert_true(cd_session_kill(res.sup_pid) >= 1);
	assert_true(wait_dead(bg));
	assert_int_equal(cd_session_kill(0), 0);
	assert_int_equal(cd_session_kill(1), 0);
}

static void test_cancel_needs_kill(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c",
					   "trap '' TERM; echo ready; sleep 20", NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int64_t t0, took;

	spec_init(f, &s, argv, env_std);
	s.kill_grace_ms = 300;
	launch_ok(&s, &res);
	wait_log(f->out, "ready\n"); /* the trap is set */
	t0 = now_ms();
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start, &diag), 0);
	wait_status(f->status, &st);
	took = now_ms() - t0;
	assert_int_equal(st.kind, CD_STATUS_SIGNALED);
	assert_int_equal(st.code, SIGKILL);
	assert_true(took >= 250);
	assert_true(took < 3000);
	reap_sup(res.sup_pid);
}

static void test_leftovers_killed(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "sleep 20 & echo $!; exit 0",
					   NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	char *text;
	long pid;

	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	pid = strtol(text, NULL, 10);
	free(text);
	assert_true(pid > 1);
	/* Killed and reaped (the supervisor adopted it) before the status. */
	assert_true(proc_gone(pid));
}

/* An orphan of the job's is adopted and reaped by the supervisor while the
 * job runs: no zombies pile up under a long job. */
static void test_orphans_reaped(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {
		"sh", "-c", "(sleep 0.05 & echo $!); echo ready; sleep 20", NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int64_t deadline;
	char *text;
	long pid;

	spec_init(f, &s, argv, env_std);
	launch_ok(&s, &res);
	wait_log(f->out, "ready\n");
	text = slurp(f->out);
	pid = strtol(text, NULL, 10);
	free(text);
	assert_true(pid > 1);
	deadline = now_ms() + WAIT_MS;
	while (!proc_gone(pid) && now_ms() < deadline)
		nap_ms(5);
	assert_true(proc_gone(pid));
	assert_int_equal(cd_status_read(f->status, &st, &diag), -ENOENT);
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start, &diag), 0);
	wait_status(f->status, &st);
	assert_int_equal(st.kind, CD_STATUS_SIGNALED);
	reap_sup(res.sup_pid);
}

static void test_no_fd_leak(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "ls /proc/$$/fd", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int fd, p[2];
	char *text;

	/* Inheritable descriptors of the "daemon", as a database or socket. */
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, 57), 57);
	assert_int_equal(pipe(p), 0);
	spec_init(f, &s, argv, env_std);
	run_job(&s, &res, &st);
	close(fd);
	close(57);
	close(p[0]);
	close(p[1]);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	assert_string_equal(text, "0\n1\n2\n");
	free(text);
}

/* A daemon without stdin: the first log then opens as descriptor 0, and
 * the supervisor must move it out of the way. */
static void test_closed_stdin(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "echo hi; ls /proc/$$/fd", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int saved = dup(STDIN_FILENO);
	char *text;

	assert_true(saved >= 0);
	assert_int_equal(close(STDIN_FILENO), 0);
	spec_init(f, &s, argv, env_std);
	launch_ok(&s, &res);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	wait_status(f->status, &st);
	reap_sup(res.sup_pid);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	assert_string_equal(text, "hi\n0\n1\n2\n");
	free(text);
}

static void test_user(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "id -u; id -g", NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	const struct passwd *pw;
	char want[300];
	struct stat sb;
	char *text;

	spec_init(f, &s, argv, env_std);
	if (geteuid() != 0) {
		s.uid = (uint32_t)geteuid() + 1;
		assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
		assert_non_null(strstr(diag.msg, "uid"));
		assert_no_children();
		assert_int_equal(access(f->out, F_OK), -1); /* nothing created */
		return;
	}
	pw = getpwnam("nobody");
	if (!pw) {
		print_message("no user 'nobody': skipping the user switch\n");
		return;
	}
	s.uid = (uint32_t)pw->pw_uid;
	s.gid = (uint32_t)pw->pw_gid;
	s.user = "nobody";
	s.cwd = "/";
	snprintf(want, sizeof(want), "%u\n%u\n", (unsigned)pw->pw_uid,
		 (unsigned)pw->pw_gid);
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	text = slurp(f->out);
	assert_string_equal(text, want);
	free(text);
	assert_int_equal(stat(f->out, &sb), 0);
	assert_int_equal(sb.st_uid, pw->pw_uid);
	assert_int_equal(sb.st_gid, pw->pw_gid);

	/* The working directory is entered as the user: the test's 0700
	 * directory is closed to nobody. */
	s.cwd = f->dir;
	run_job(&s, &res, &st);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, EACCES);
	snprintf(want, sizeof(want), "cannot chdir to '%s': %s", f->dir,
		 strerror(EACCES));
	assert_string_equal(st.message, want);
}

/* The "daemon" launches and exits at once: the job runs on and its end is
 * recorded all the same. */
static void test_daemon_gone(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sh", "-c", "sleep 0.2; echo done", NULL};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;
	int p[2], ws;
	pid_t daemon;
	char *text;

	spec_init(f, &s, argv, env_std);
	/* Adopt the orphaned supervisor, so that it can be reaped here and no
	 * zombie is left with an init that does not reap. */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L), 0);
	assert_int_equal(pipe(p), 0);
	daemon = fork();
	assert_true(daemon >= 0);
	if (daemon == 0) {
		struct cd_launch_result r;
		int rc = cd_launch(&s, &r, NULL);

		if (rc == 0 && write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r))
			_exit(0);
		_exit(1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	close(p[0]);
	assert_int_equal(waitpid(daemon, &ws, 0), daemon);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

	wait_status(f->status, &st);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_int_equal(st.code, 0);
	assert_int_equal(st.job_pid, res.job_pgid);
	text = slurp(f->out);
	assert_string_equal(text, "done\n");
	free(text);
	assert_true(wait_dead(res.sup_pid));
	reap_sup(res.sup_pid);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L), 0);
}

static void test_alive_and_session(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"sleep", "20", NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	struct cd_status st;

	assert_true(cd_process_start_ticks(getpid()) > 0);
	assert_int_equal(cd_process_start_ticks(0), 0);
	assert_int_equal(cd_process_start_ticks(-5), 0);
	assert_int_equal(cd_process_session(getpid()), (int64_t)getsid(0));
	assert_int_equal(cd_process_session(0), -1);
	assert_int_equal(cd_process_session(-1), -1);
	assert_false(cd_supervisor_alive(0, 0));
	assert_false(cd_supervisor_alive(-1, 1));

	spec_init(f, &s, argv, env_std);
	launch_ok(&s, &res);
	assert_true(cd_supervisor_alive(res.sup_pid, res.sup_start));
	/* A pid reused by another process has another start time. */
	assert_false(cd_supervisor_alive(res.sup_pid, res.sup_start + 1));
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start + 1, &diag),
			 -ESRCH);
	assert_int_equal(cd_supervisor_cancel(res.sup_pid, res.sup_start, &diag), 0);
	wait_status(f->status, &st);
	/* Exited but not yet reaped: a zombie is not alive. */
	assert_true(wait_dead(res.sup_pid));
	assert_false(cd_supervisor_alive(res.sup_pid, res.sup_start));
	reap_sup(res.sup_pid);
	assert_false(cd_supervisor_alive(res.sup_pid, res.sup_start));
	assert_int_equal(cd_process_start_ticks(res.sup_pid), 0);
	assert_int_equal(cd_process_session(res.sup_pid), -1);
}

static void test_launch_errors(void **state)
{
	const struct fixture *f = *state;
	static const char *const argv[] = {"/bin/true", NULL};
	static const char *const empty_argv[] = {"", NULL};
	static const char *const no_argv[] = {NULL};
	struct colloc_diag diag = {{0}};
	struct cd_launch_spec s;
	struct cd_launch_result res;
	char path[160];

	spec_init(f, &s, no_argv, env_std);
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.argv = empty_argv;
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.argv = argv;
	s.cwd = "relative/dir";
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.cwd = f->dir;
	s.extra_env = "NOEQUALS";
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.extra_env = "=x";
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.extra_env = "";
	s.kill_grace_ms = -1;
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.kill_grace_ms = INT64_MAX;
	assert_int_equal(cd_launch(&s, &res, &diag), COLLOC_EUSAGE);
	s.kill_grace_ms = 100;

	/* The status directory does not exist: refused before anything is
	 * created or started. */
	snprintf(path, sizeof(path), "%s/missing/job.status", f->dir);
	s.status_path = path;
	diag.msg[0] = '\0';
	assert_int_equal(cd_launch(&s, &res, &diag), -ENOENT);
	assert_non_null(strstr(diag.msg, "missing"));
	assert_int_equal(access(f->out, F_OK), -1);
	s.status_path = f->status;

	/* A log that cannot be opened. */
	snprintf(path, sizeof(path), "%s/missing/job.err", f->dir);
	s.stderr_path = path;
	diag.msg[0] = '\0';
	assert_int_equal(cd_launch(&s, &res, &diag), -ENOENT);
	assert_non_null(strstr(diag.msg, "job.err"));
	s.stderr_path = f->err;

	/* A log that is a link is refused (a root daemon would chown its
	 * target). */
	snprintf(path, sizeof(path), "%s/link.out", f->dir);
	assert_int_equal(symlink("/dev/null", path), 0);
	s.stdout_path = path;
	assert_true(cd_launch(&s, &res, &diag) < 0);
	s.stdout_path = f->out;

	/* A FIFO where a log goes is refused at once: open() must not block
	 * the single-threaded daemon until someone reads it. */
	snprintf(path, sizeof(path), "%s/fifo.out", f->dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	s.stdout_path = path;
	assert_true(cd_launch(&s, &res, &diag) < 0);
	s.stdout_path = f->out;

	assert_no_children();
	assert_int_equal(access(f->status, F_OK), -1);
}

/* ---- the status file ----------------------------------------------------------- */

static const char good_status[] =
	"colloc-status 1\n"
	"kind setup-failed\n"
	"code 2\n"
	"job_pid 4242\n"
	"start_ms 1700000000000\n"
	"end_ms 1700000000123\n"
	"stdout_offset 18446744073709551615\n"
	"stderr_offset 7\n"
	"message cannot execute 'trian.py': No such file or directory\n";

static void test_status_parse_good(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_status st;
	char buf[1024];
	int n;

	(void)state;
	assert_int_equal(
		cd_status_parse(good_status, strlen(good_status), "t", &st, &diag), 0);
	assert_int_equal(st.kind, CD_STATUS_SETUP_FAILED);
	assert_int_equal(st.code, 2);
	assert_int_equal(st.job_pid, 4242);
	assert_int_equal(st.start_ms, 1700000000000LL);
	assert_int_equal(st.end_ms, 1700000000123LL);
	assert_true(st.stdout_offset == UINT64_MAX);
	assert_int_equal(st.stderr_offset, 7);
	assert_string_equal(st.message,
			    "cannot execute 'trian.py': No such file or directory");

	/* Any order; message optional or empty; no final newline needed. */
	n = snprintf(buf, sizeof(buf), "%s",
		     "colloc-status 1\nend_ms 2\nstart_ms 1\ncode 0\nkind exited\n"
		     "stderr_offset 0\nstdout_offset 0\njob_pid 1\nmessage");
	assert_int_equal(cd_status_parse(buf, (size_t)n, "t", &st, &diag), 0);
	assert_int_equal(st.kind, CD_STATUS_EXITED);
	assert_string_equal(st.message, "");
	n = snprintf(buf, sizeof(buf), "%s",
		     "colloc-status 1\nkind signaled\ncode 15\njob_pid 9\nstart_ms 1\n"
		     "end_ms 2\nstdout_offset 3\nstderr_offset 4");
	assert_int_equal(cd_status_parse(buf, (size_t)n, "t", &st, &diag), 0);
	assert_int_equal(st.kind, CD_STATUS_SIGNALED);
	assert_int_equal(st.code, 15);
	assert_int_equal(st.stderr_offset, 4);
}

/* good_status with line `line` (1-based) replaced by repl ("" drops it). */
static size_t status_variant(char *buf, size_t cap, unsigned line, const char *repl)
{
	const char *p = good_status;
	size_t len = 0;

	for (unsigned l = 1; *p; l++) {
		const char *nl = strchr(p, '\n');
		size_t n = (size_t)(nl - p) + 1;
		const char *src = l == line ? repl : p;
		size_t sn = l == line ? strlen(repl) : n;

		assert_true(len + sn < cap);
		memcpy(buf + len, src, sn);
		len += sn;
		p += n;
	}
	buf[len] = '\0';
	return len;
}

static void expect_bad(const char *buf, size_t len, const char *prefix)
{
	struct colloc_diag diag = {{0}};
	struct cd_status st;
	int rc = cd_status_parse(buf, len, "t", &st, &diag);

	if (rc != COLLOC_EFORMAT || strncmp(diag.msg, prefix, strlen(prefix)) != 0) {
		print_error("input <%.*s>: rc %d, message '%s', wanted '%s...'\n",
			    (int)len, buf, rc, diag.msg, prefix);
		fail();
	}
}

static void test_status_parse_bad(void **state)
{
	static const struct {
		unsigned line;
		const char *repl;
		const char *prefix;
	} cases[] = {
		{1, "colloc-status 2\n", "t:1: unsupported status version '2'"},
		{1, "colloc-status\n", "t:1: not a colloc status file"},
		{1, "hello\n", "t:1: not a colloc status file"},
		{2, "kind exit\n", "t:2: kind 'exit'"},
		{2, "kind\n", "t:2: kind ''"},
		{2, "", "t:9: missing 'kind'"},
		{3, "", "t:9: missing 'code'"},
		{4, "", "t:9: missing 'job_pid'"},
		{7, "", "t:9: missing 'stdout_offset'"},
		{3, "code 2x\n", "t:3: code '2x' is not a non-negative integer"},
		{3, "code -1\n", "t:3: code '-1' is not"},
		{3, "code +1\n", "t:3: code '+1' is not"},
		{3, "code  1\n", "t:3: code ' 1' is not"},
		{3, "code 1 \n", "t:3: code '1 ' is not"},
		{3, "code\n", "t:3: code '' is not"},
		{3, "code 2147483648\n", "t:3: code '2147483648' is out of range"},
		{3, "code 99999999999999999999999999999\n", "t:3: code '9999"},
		{4, "job_pid 2147483648\n", "t:4: job_pid '2147483648' is out of range"},
		{5, "start_ms 9223372036854775808\n",
		 "t:5: start_ms '9223372036854775808' is out"},
		{7, "stdout_offset 18446744073709551616\n", "t:7: stdout_offset"},
		{6, "colour red\n", "t:6: unknown key 'colour'"},
		{6, "\n", "t:6: unknown key ''"},
		{6, "end_ms\x01 5\n", "t:6: unknown key 'end_ms?'"},
		{6, "code 3\n", "t:6: 'code' given twice"},
		{9, "message two\nmessage three\n", "t:10: 'message' given twice"},
	};
	char buf[2048], big[9000], longmsg[700];
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = status_variant(buf, sizeof(buf), cases[i].line, cases[i].repl);
		expect_bad(buf, len, cases[i].prefix);
	}
	expect_bad("", 0, "t:1: empty");

	/* Semantics: exit codes 0..255, signals 1..127, errno > 0. */
	len = (size_t)snprintf(
		buf, sizeof(buf), "%s",
		"colloc-status 1\nkind exited\ncode 256\njob_pid 1\n"
		"start_ms 1\nend_ms 1\nstdout_offset 0\nstderr_offset 0\n");
	expect_bad(buf, len, "t: exit code above 255");
	len = (size_t)snprintf(
		buf, sizeof(buf), "%s",
		"colloc-status 1\nkind signaled\ncode 0\njob_pid 1\n"
		"start_ms 1\nend_ms 1\nstdout_offset 0\nstderr_offset 0\n");
	expect_bad(buf, len, "t: signal number out of range");
	len = (size_t)snprintf(
		buf, sizeof(buf), "%s",
		"colloc-status 1\nkind setup-failed\ncode 0\njob_pid 1\n"
		"start_ms 1\nend_ms 1\nstdout_offset 0\nstderr_offset 0\n");
	expect_bad(buf, len, "t: errno out of range");

	/* A NUL byte inside a line. */
	len = strlen(good_status);
	memcpy(buf, good_status, len);
	buf[20] = '\0';
	expect_bad(buf, len, "t:2: NUL byte");

	/* A message longer than the field. */
	memset(longmsg, 'x', sizeof(longmsg));
	memcpy(longmsg, "message ", 8);
	longmsg[sizeof(longmsg) - 2] = '\n';
	longmsg[sizeof(longmsg) - 1] = '\0';
	len = status_variant(buf, sizeof(buf), 9, longmsg);
	expect_bad(buf, len, "t:9: message longer than 511 bytes");

	/* Over 8 KiB: refused without a look. */
	memset(big, 'x', sizeof(big));
	{
		struct colloc_diag diag = {{0}};
		struct cd_status st;

		assert_int_equal(cd_status_parse(big, sizeof(big), "t", &st, &diag),
				 COLLOC_ELIMIT);
		assert_true(diag.msg[0] != '\0');
		assert_int_equal(cd_status_parse(NULL, 0, NULL, &st, &diag),
				 COLLOC_EFORMAT);
	}
}

static void test_status_read(void **state)
{
	const struct fixture *f = *state;
	struct colloc_diag diag = {{0}};
	struct cd_status st;
	char big[9000];

	assert_int_equal(cd_status_read(f->status, &st, &diag), -ENOENT);
	assert_true(diag.msg[0] != '\0');
	write_file(f->status, good_status, 0640);
	assert_int_equal(cd_status_read(f->status, &st, &diag), 0);
	assert_int_equal(st.job_pid, 4242);
	write_file(f->status, "not a status file\n", 0640);
	diag.msg[0] = '\0';
	assert_int_equal(cd_status_read(f->status, &st, &diag), COLLOC_EFORMAT);
	assert_int_equal(strncmp(diag.msg, f->status, strlen(f->status)), 0);
	assert_int_equal(strncmp(diag.msg + strlen(f->status), ":1: ", 4), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_file(f->status, big, 0640);
	assert_int_equal(cd_status_read(f->status, &st, &diag), COLLOC_ELIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_parse_good),
		cmocka_unit_test(test_status_parse_bad),
		cmocka_unit_test_setup_teardown(test_status_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_launch_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_code_and_logs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submitted_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_death, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_supervisor_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_leftovers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_needs_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_reaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_fd_leak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_stdin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alive_and_session, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
