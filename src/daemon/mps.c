/*
 * mps.c — MPS control daemons and the environment of MPS clients (mps.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "daemon/mps.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/files.h"

int cd_mps_dirs(const char *base, const char *uuid, char *pipe_dir, char *log_dir,
		size_t len, struct colloc_diag *diag)
{
	int a = snprintf(pipe_dir, len, "%s/%s/pipe", base, uuid);
	int b = snprintf(log_dir, len, "%s/%s/log", base, uuid);

	if (a < 0 || b < 0 || (size_t)a >= len || (size_t)b >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "MPS directory under '%s' too long", base);
	return 0;
}

/*
 * Run `control [arg]` for GPU uuid with the MPS variables set, feeding it
 * input on stdin (NULL: none), and wait at most timeout_ms. Returns its exit
 * status (>= 0), or a negative code when it could not be run or timed out.
 */
static int run_control(const char *control, const char *base, const char *uuid,
		       const char *arg, const char *input, int64_t timeout_ms,
		       struct colloc_diag *diag)
{
	char pipe_dir[4096], log_dir[4096];
	int in[2], err[2], status = 0, rc;
	int64_t deadline;
	pid_t pid;

	if ((rc = cd_mps_dirs(base, uuid, pipe_dir, log_dir, sizeof(pipe_dir), diag)))
		return rc;
	if (pipe2(in, O_CLOEXEC) != 0)
		return colloc_diag_set(diag, -errno, "pipe: %s", strerror(errno));
	if (pipe2(err, O_CLOEXEC) != 0) {
		rc = -errno;
		close(in[0]);
		close(in[1]);
		return colloc_diag_set(diag, rc, "pipe: %s", strerror(-rc));
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(in[0]);
		close(in[1]);
		close(err[0]);
		close(err[1]);
		return colloc_diag_set(diag, rc, "fork: %s", strerror(-rc));
	}
	if (pid == 0) {
		sigset_t none;
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(in[0], 0);
		if (devnull >= 0)
			dup2(devnull, 1);
		dup2(err[1], 2);
		if (setenv("CUDA_VISIBLE_DEVICES", uuid, 1) != 0 ||
		    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1) != 0 ||
		    setenv("CUDA_MPS_LOG_DIRECTORY", log_dir, 1) != 0)
			_exit(126);
		if (arg)
			execlp(control, control, arg, (char *)NULL);
		else
			execlp(control, control, (char *)NULL);
		dprintf(2, "cannot execute '%s': %s", control, strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(err[1]);
	if (input) {
		size_t len = strlen(input), off = 0;

		while (off < len) {
			ssize_t k = write(in[1], input + off, len - off);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	close(in[1]);
	deadline = colloc__mono_ms() + timeout_ms;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		struct timespec ts = {0, 10 * 1000000L};

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			rc = colloc_diag_set(diag, -errno, "waitpid: %s",
					     strerror(errno));
			close(err[0]);
			return rc;
		}
		if (colloc__mono_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(err[0]);
			return colloc_diag_set(
				diag, -ETIMEDOUT, "'%s %s' did not finish within %lld ms",
				control, arg ? arg : "", (long long)timeout_ms);
		}
		nanosleep(&ts, NULL);
	}
	{
		char msg[256];
		ssize_t k = read(err[0], msg, sizeof(msg) - 1);

		msg[k > 0 ? k : 0] = '\0';
		msg[strcspn(msg, "\n")] = '\0';
		close(err[0]);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			return 0;
		if (WIFEXITED(status))
			colloc_diag_printf(diag, "'%s%s%s' for %s exited %d%s%s", control,
					   arg ? " " : "", arg ? arg : "", uuid,
					   WEXITSTATUS(status), msg[0] ? ": " : "", msg);
		else
			colloc_diag_printf(diag, "'%s' for %s was killed by signal %d",
					   control, uuid, WTERMSIG(status));
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
}

int cd_mps_start(const char *control, const char *base, const char *uuid,
		 int64_t timeout_ms, struct colloc_diag *diag)
{
	char pipe_dir[4096], log_dir[4096], probe[4200];
	struct stat sb;
	int rc;

	if ((rc = cd_mps_dirs(base, uuid, pipe_dir, log_dir, sizeof(pipe_dir), diag)) ||
	    (rc = colloc__mkdir_p(pipe_dir, 0755, diag)) ||
	    (rc = colloc__mkdir_p(log_dir, 0755, diag)))
		return rc;
	/* The control daemon listens on PIPE/control; if it answers, it is
	 * ours from an earlier start and still serves running jobs. */
	snprintf(probe, sizeof(probe), "%s/control", pipe_dir);
	if (stat(probe, &sb) == 0 &&
	    run_control(control, base, uuid, NULL, "get_server_list\n", timeout_ms,
			NULL) == 0)
		return 0;
	rc = run_control(control, base, uuid, "-d", NULL, timeout_ms, diag);
	if (rc > 0)
		return colloc_diag_prefix(diag, COLLOC_EUSAGE, "cannot start MPS");
	return rc;
}

int cd_mps_stop(const char *control, const char *base, const char *uuid,
		int64_t timeout_ms, struct colloc_diag *diag)
{
	int rc = run_control(control, base, uuid, NULL, "quit\n", timeout_ms, diag);

	if (rc > 0)
		return colloc_diag_prefix(diag, COLLOC_EUSAGE, "cannot stop MPS");
	return rc;
}

int cd_mps_job_env(const char *base, const char *uuid, double util_pred, int thread_pct,
		   uint64_t need_bytes, uint64_t headroom_bytes,
		   char env[][CD_MPS_ENV_LEN], size_t *n, struct colloc_diag *diag)
{
	char pipe_dir[4096], log_dir[4096];
	uint64_t limit = need_bytes + headroom_bytes;
	int pct = thread_pct;
	int rc;

	*n = 0;
	if ((rc = cd_mps_dirs(base, uuid, pipe_dir, log_dir, sizeof(pipe_dir), diag)))
		return rc;
	if (limit < need_bytes)
		limit = UINT64_MAX; /* overflow: no meaningful limit */
	if (pct <= 0) {
		double p =
			ceil((util_pred > 0 && util_pred <= 1 ? util_pred : 1.0) * 100.0);

		pct = p < 10 ? 10 : p > 100 ? 100 : (int)p;
	}
	if ((size_t)snprintf(env[0], CD_MPS_ENV_LEN, "CUDA_MPS_PIPE_DIRECTORY=%s",
			     pipe_dir) >= CD_MPS_ENV_LEN)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "MPS pipe directory too long");
	snprintf(env[1], CD_MPS_ENV_LEN, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct);
	snprintf(
		env[2], CD_MPS_ENV_LEN, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%lluM",
		(unsigned long long)(limit / (1ull << 20) + (limit % (1ull << 20) != 0)));
	*n = 3;
	return 0;
}
