/*
 * sim.c — simulated GPUs in a state file shared by processes (see
 * colloc/simgpu.h), and the "sim" GPU backend built on them.
 *
 * Every public call is one transaction: lock the whole file, read and check
 * it, drop the entries of dead processes, change what the call changes,
 * write it back when anything changed, unlock. The file is rewritten in
 * place (pwrite + ftruncate) rather than replaced by rename(): fcntl locks
 * belong to an inode, and a renamed-in file would leave other processes
 * waiting on a lock of the old one.
 *
 * It does not model speed, kernels or CUDA; only memory, utilization,
 * power and energy as NVML would report them.
 */
#include "colloc/simgpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "colloc/units.h"
#include "common/clock.h"
#include "gpu/gpu_int.h"

#define SIM_MAGIC "colloc-simgpu"
#define SIM_VERSION 1
/* Largest well-formed file: 64 GPUs x (a gpu line + 128 proc lines) is
 * about 460 KB; anything past this is not ours. */
#define SIM_FILE_MAX (1L << 20)
#define SIM_LINE_MAX 256
#define SIM_TOKEN_MAX 32

/* Simulated board power: idle plus a share of the busy range by util. */
#define SIM_POWER_IDLE_MW 60000
#define SIM_POWER_MAX_MW 300000

struct sim_proc {
	int64_t pid;
	uint64_t bytes;
	unsigned util_pct;
};

struct sim_gpu {
	uint64_t total_bytes;
	uint64_t energy_mj; /* up to stamp_ms */
	int64_t stamp_ms; /* CLOCK_REALTIME: the file outlives boots */
	unsigned n_procs;
	struct sim_proc procs[COLLOC_SIMGPU_MAX_PROCS];
};

struct sim_state {
	uint64_t id;
	unsigned n_gpus;
	struct sim_gpu gpus[COLLOC_SIMGPU_MAX_GPUS];
};

struct colloc_simgpu {
	int fd;
	bool dirty; /* st differs from the file */
	char path[COLLOC_SIMGPU_PATH_MAX];
	struct sim_state st;
	char buf[SIM_FILE_MAX + 1];
};

/* "PATH: WHAT<strerror>" into diag; returns -errno (never 0). */
static int sys_fail(const struct colloc_simgpu *sim, struct colloc_diag *diag,
		    const char *what)
{
	int err = errno;

	colloc_diag_printf(diag, "%s: %s%s", sim->path, what,
			   strerror(err > 0 ? err : EIO));
	return err > 0 && err < 4096 ? -err : -EIO;
}

/* ---- time, identity ------------------------------------------------------ */

/* splitmix64's finaliser: a bijection that scatters nearby inputs. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t new_id(int fd)
{
	struct timespec ts = {0, 0};
	struct stat sb;
	uint64_t id = 0;
	int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (rfd >= 0) {
		ssize_t got = read(rfd, &id, sizeof(id));

		close(rfd);
		if (got == (ssize_t)sizeof(id))
			return id;
	}
	/* No /dev/urandom (a chroot): unique enough for one machine. */
	clock_gettime(CLOCK_REALTIME, &ts);
	id = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	id ^= (uint64_t)getpid() << 32;
	if (fstat(fd, &sb) == 0)
		id ^= mix64((uint64_t)sb.st_ino);
	return mix64(id);
}

static void format_uuid(uint64_t id, unsigned index, char *buf, size_t len)
{
	uint64_t h1 = mix64(id ^ (0x9e3779b97f4a7c15ULL * (index + 1)));
	uint64_t h2 = mix64(h1 ^ id ^ 0x5851f42d4c957f2dULL);

	snprintf(buf, len, "SIM-%08x-%04x-%04x-%04x-%012llx", (unsigned)(h1 >> 32),
		 (unsigned)(h1 >> 16) & 0xffffu, (unsigned)h1 & 0xffffu,
		 (unsigned)(h2 >> 48) & 0xffffu,
		 (unsigned long long)(h2 & 0xffffffffffffULL));
}

/* ---- accounting ------------------------------------------------------------- */

static unsigned gpu_util(const struct sim_gpu *g)
{
	unsigned util = 0;

	for (unsigned k = 0; k < g->n_procs; k++) {
		util += g->procs[k].util_pct;
		if (util >= 100)
			return 100;
	}
	return util;
}

static uint64_t gpu_used(const struct sim_gpu *g)
{
	uint64_t used = 0;

	/* The file was checked: the sum never exceeds total_bytes. */
	for (unsigned k = 0; k < g->n_procs; k++)
		used += g->procs[k].bytes;
	return used;
}

static int64_t gpu_power_mw(unsigned util_pct)
{
	return SIM_POWER_IDLE_MW +
	       (int64_t)(SIM_POWER_MAX_MW - SIM_POWER_IDLE_MW) * util_pct / 100;
}

/* Energy up to now at the current power; saturates instead of wrapping. */
static uint64_t gpu_energy_at(const struct sim_gpu *g, int64_t now)
{
	uint64_t dt, add;

	if (now <= g->stamp_ms)
		return g->energy_mj;
	dt = (uint64_t)(now - g->stamp_ms);
	/* mW x ms = uJ; /1000 = mJ. power < 2^19, so dt < 2^44 cannot
	 * overflow the product. */
	if (dt > (1ULL << 44))
		dt = 1ULL << 44;
	add = (uint64_t)gpu_power_mw(gpu_util(g)) * dt / 1000;
	if (g->energy_mj > UINT64_MAX - add)
		return UINT64_MAX;
	return g->energy_mj + add;
}

/* Fold the energy used so far into every GPU, before utilization changes. */
static void settle(struct sim_state *st, int64_t now)
{
	for (unsigned i = 0; i < st->n_gpus; i++) {
		struct sim_gpu *g = &st->gpus[i];

		g->energy_mj = gpu_energy_at(g, now);
		if (now > g->stamp_ms)
			g->stamp_ms = now;
	}
}

static bool pid_gone(int64_t pid)
{
	/* EPERM: alive, someone else's. Only ESRCH proves it is gone. */
	return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

/* Drop the entries of processes that no longer exist; true when any. */
static bool prune(struct sim_state *st)
{
	bool settled = false;

	for (unsigned i = 0; i < st->n_gpus; i++) {
		struct sim_gpu *g = &st->gpus[i];
		unsigned keep = 0;

		for (unsigned k = 0; k < g->n_procs; k++) {
			if (!pid_gone(g->procs[k].pid)) {
				g->procs[keep++] = g->procs[k];
				continue;
			}
			if (!settled) {
				settle(st, colloc__wall_ms());
				settled = true;
			}
		}
		g->n_procs = keep;
	}
	return settled;
}

/* ---- the file ----------------------------------------------------------------- */

static int lock_file(struct colloc_simgpu *sim, short type, struct colloc_diag *diag)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 0; /* the whole file, however long it grows */
	/* EINTR: a signal (the job's SIGTERM) arrived while waiting; its
	 * handler only sets a flag, so wait on. */
	while (fcntl(sim->fd, F_SETLKW, &fl) == -1) {
		if (errno != EINTR)
			return sys_fail(sim, diag, "cannot lock: ");
	}
	return 0;
}

static void unlock_file(struct colloc_simgpu *sim)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_UNLCK;
	fl.l_whence = SEEK_SET;
	(void)fcntl(sim->fd, F_SETLK, &fl);
}

/* A reader of one line's space-separated tokens. */
struct line {
	const char *p, *end;
	unsigned no;
};

static bool next_token(struct line *ln, char *tok)
{
	size_t n = 0;

	while (ln->p < ln->end && *ln->p == ' ')
		ln->p++;
	while (ln->p < ln->end && *ln->p != ' ') {
		if (n + 1 >= SIM_TOKEN_MAX)
			return false;
		tok[n++] = *ln->p++;
	}
	tok[n] = '\0';
	return n > 0;
}

static bool token_is(struct line *ln, const char *want)
{
	char tok[SIM_TOKEN_MAX];

	return next_token(ln, tok) && strcmp(tok, want) == 0;
}

static bool token_u64(struct line *ln, uint64_t max, uint64_t *v)
{
	char tok[SIM_TOKEN_MAX];

	return next_token(ln, tok) && colloc_parse_u64(tok, max, v) == 0;
}

static bool line_done(struct line *ln)
{
	char tok[SIM_TOKEN_MAX];

	return !next_token(ln, tok) && ln->p == ln->end;
}

static int corrupt(struct colloc_simgpu *sim, struct colloc_diag *diag, unsigned line,
		   const char *what)
{
	if (line)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s:%u: %s; the simulated GPU state is corrupt "
				       "(remove the file to start afresh)",
				       sim->path, line, what);
	return colloc_diag_set(diag, COLLOC_EFORMAT,
			       "%s: %s; the simulated GPU state is corrupt (remove the "
			       "file to start afresh)",
			       sim->path, what);
}

/* Parse sim->buf[0 .. len) into st. */
static int parse_state(struct colloc_simgpu *sim, size_t len, struct sim_state *st,
		       struct colloc_diag *diag)
{
	const char *p = sim->buf, *end = sim->buf + len;
	unsigned no = 0, next_gpu = 0;
	bool ended = false;
	uint64_t v;

	memset(st, 0, sizeof(*st));
	if (memchr(sim->buf, '\0', len))
		return corrupt(sim, diag, 0, "it contains NUL bytes");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct line ln;
		char tok[SIM_TOKEN_MAX];

		no++;
		if (!nl)
			return corrupt(sim, diag, no, "the last line is cut short");
		if (nl - p > SIM_LINE_MAX)
			return corrupt(sim, diag, no, "line too long");
		if (ended)
			return corrupt(sim, diag, no, "text after 'end'");
		ln.p = p;
		ln.end = nl;
		ln.no = no;
		p = nl + 1;
		if (no == 1) {
			if (!token_is(&ln, SIM_MAGIC))
				return corrupt(sim, diag, no,
					       "not a colloc-simgpu state file");
			if (!token_u64(&ln, UINT32_MAX, &v) || !line_done(&ln))
				return corrupt(sim, diag, no, "bad version line");
			if (v != SIM_VERSION) {
				return colloc_diag_set(
					diag, COLLOC_EFORMAT,
					"%s: state file version %llu, this colloc "
					"reads version %d (remove the file to start "
					"afresh)",
					sim->path, (unsigned long long)v, SIM_VERSION);
			}
			continue;
		}
		if (!next_token(&ln, tok))
			return corrupt(sim, diag, no, "empty line");
		if (no == 2) {
			char *e;

			if (strcmp(tok, "id") != 0 || !next_token(&ln, tok) ||
			    strlen(tok) != 16 || !line_done(&ln))
				return corrupt(sim, diag, no, "expected 'id HEX16'");
			for (const char *c = tok; *c; c++)
				if (!isxdigit((unsigned char)*c))
					return corrupt(sim, diag, no,
						       "expected 'id HEX16'");
			errno = 0;
			st->id = strtoull(tok, &e, 16);
			if (errno || *e)
				return corrupt(sim, diag, no, "expected 'id HEX16'");
		} else if (no == 3) {
			if (strcmp(tok, "gpus") != 0 ||
			    !token_u64(&ln, COLLOC_SIMGPU_MAX_GPUS, &v) || v == 0 ||
			    !line_done(&ln))
				return corrupt(sim, diag, no,
					       "expected 'gpus N' (N 1 to 64)");
			st->n_gpus = (unsigned)v;
		} else if (strcmp(tok, "gpu") == 0) {
			struct sim_gpu *g;
			uint64_t idx, total, energy, stamp;

			if (!token_u64(&ln, UINT32_MAX, &idx) ||
			    !token_is(&ln, "total") ||
			    !token_u64(&ln, UINT64_MAX, &total) ||
			    !token_is(&ln, "energy_mj") ||
			    !token_u64(&ln, UINT64_MAX, &energy) ||
			    !token_is(&ln, "stamp_ms") ||
			    !token_u64(&ln, INT64_MAX, &stamp) || !line_done(&ln))
				return corrupt(
					sim, diag, no,
					"expected 'gpu INDEX total BYTES energy_mj "
					"MJ stamp_ms MS'");
			if (idx != next_gpu || idx >= st->n_gpus)
				return corrupt(sim, diag, no, "GPU out of order");
			if (total == 0)
				return corrupt(sim, diag, no, "a GPU without memory");
			g = &st->gpus[next_gpu++];
			g->total_bytes = total;
			g->energy_mj = energy;
			g->stamp_ms = (int64_t)stamp;
		} else if (strcmp(tok, "proc") == 0) {
			struct sim_gpu *g;
			uint64_t idx, pid, bytes, util;

			if (!token_u64(&ln, UINT32_MAX, &idx) ||
			    !token_u64(&ln, INT32_MAX, &pid) ||
			    !token_u64(&ln, UINT64_MAX, &bytes) ||
			    !token_u64(&ln, 100, &util) || !line_done(&ln))
				return corrupt(sim, diag, no,
					       "expected 'proc GPU PID BYTES UTIL_PCT'");
			if (next_gpu == 0 || idx != next_gpu - 1)
				return corrupt(sim, diag, no,
					       "a process outside its GPU's block");
			g = &st->gpus[idx];
			if (pid == 0 || g->n_procs >= COLLOC_SIMGPU_MAX_PROCS)
				return corrupt(sim, diag, no,
					       "bad pid or too many processes");
			for (unsigned k = 0; k < g->n_procs; k++)
				if (g->procs[k].pid == (int64_t)pid)
					return corrupt(sim, diag, no,
						       "duplicate process");
			if (bytes > g->total_bytes - gpu_used(g))
				return corrupt(
					sim, diag, no,
					"processes use more memory than the GPU has");
			g->procs[g->n_procs].pid = (int64_t)pid;
			g->procs[g->n_procs].bytes = bytes;
			g->procs[g->n_procs].util_pct = (unsigned)util;
			g->n_procs++;
		} else if (strcmp(tok, "end") == 0) {
			if (!line_done(&ln))
				return corrupt(sim, diag, no, "text after 'end'");
			ended = true;
		} else {
			return corrupt(sim, diag, no, "unknown line");
		}
	}
	if (no < 3 || !ended)
		return corrupt(sim, diag, 0, "it is cut short (no 'end' line)");
	if (next_gpu != st->n_gpus)
		return corrupt(sim, diag, 0, "fewer GPUs than its header says");
	return 0;
}

/*
 * Read the file into sim->st. Returns 0, 1 when the file is empty (created
 * but never written), or a negative code. The caller holds the lock.
 */
static int load(struct colloc_simgpu *sim, struct colloc_diag *diag)
{
	struct stat sb;
	size_t len = 0;

	if (fstat(sim->fd, &sb) != 0)
		return sys_fail(sim, diag, "");
	if (sb.st_size == 0)
		return 1;
	if (sb.st_size > SIM_FILE_MAX)
		return corrupt(sim, diag, 0, "it is too large");
	while (len < (size_t)sb.st_size) {
		ssize_t got = pread(sim->fd, sim->buf + len, (size_t)sb.st_size - len,
				    (off_t)len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return sys_fail(sim, diag, "cannot read: ");
		if (got == 0)
			break;
		len += (size_t)got;
	}
	sim->buf[len] = '\0';
	sim->dirty = false;
	return parse_state(sim, len, &sim->st, diag);
}

/* Append to sim->buf; false when it would not fit (cannot happen for a
 * state within the limits, but is checked all the same). */
static bool put(struct colloc_simgpu *sim, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool put(struct colloc_simgpu *sim, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(sim->buf + *len, sizeof(sim->buf) - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(sim->buf) - *len)
		return false;
	*len += (size_t)n;
	return true;
}

static int store(struct colloc_simgpu *sim, struct colloc_diag *diag)
{
	const struct sim_state *st = &sim->st;
	size_t len = 0, off = 0;
	bool ok;

	ok = put(sim, &len, "%s %d\nid %016llx\ngpus %u\n", SIM_MAGIC, SIM_VERSION,
		 (unsigned long long)st->id, st->n_gpus);
	for (unsigned i = 0; ok && i < st->n_gpus; i++) {
		const struct sim_gpu *g = &st->gpus[i];

		ok = put(sim, &len, "gpu %u total %llu energy_mj %llu stamp_ms %lld\n", i,
			 (unsigned long long)g->total_bytes,
			 (unsigned long long)g->energy_mj, (long long)g->stamp_ms);
		for (unsigned k = 0; ok && k < g->n_procs; k++)
			ok = put(sim, &len, "proc %u %lld %llu %u\n", i,
				 (long long)g->procs[k].pid,
				 (unsigned long long)g->procs[k].bytes,
				 g->procs[k].util_pct);
	}
	if (ok)
		ok = put(sim, &len, "end\n");
	if (!ok)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "%s: state too large",
				       sim->path);
	while (off < len) {
		ssize_t n = pwrite(sim->fd, sim->buf + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO; /* a regular file never takes 0 bytes */
		if (n <= 0)
			return sys_fail(sim, diag, "cannot write: ");
		off += (size_t)n;
	}
	if (ftruncate(sim->fd, (off_t)len) != 0)
		return sys_fail(sim, diag, "cannot write: ");
	sim->dirty = false;
	return 0;
}

/* Lock, load and prune: what every call starts with. Returns 0, 1 for an
 * empty file (still locked), or a negative code (unlocked). */
static int begin(struct colloc_simgpu *sim, struct colloc_diag *diag)
{
	int rc = lock_file(sim, F_WRLCK, diag);

	if (rc < 0)
		return rc;
	rc = load(sim, diag);
	if (rc < 0) {
		unlock_file(sim);
		return rc;
	}
	if (rc == 0 && prune(&sim->st))
		sim->dirty = true;
	return rc;
}

/* Write back when anything changed, then unlock. Returns 0 or rc's
 * replacement when writing fails. */
static int finish(struct colloc_simgpu *sim, int rc, struct colloc_diag *diag)
{
	if (sim->dirty) {
		struct colloc_diag wdiag = {{0}};
		int wrc = store(sim, &wdiag);

		if (wrc < 0 && rc >= 0) {
			colloc_diag_printf(diag, "%s", wdiag.msg);
			rc = wrc;
		}
	}
	unlock_file(sim);
	return rc;
}

/* ---- open, close ------------------------------------------------------------ */

int colloc_simgpu_default_path(char *buf, size_t len, struct colloc_diag *diag)
{
	const char *env = getenv(COLLOC_SIMGPU_ENV);
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/colloc-sim.state", xdg);
	else
		n = snprintf(buf, len, "/tmp/colloc-sim-%lu.state",
			     (unsigned long)getuid());
	if (n < 0 || (size_t)n >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "the simulated GPU state path is too long");
	return 0;
}

/* A new handle on the file at path (NULL: the default), or NULL with *rc
 * and diag set. */
static struct colloc_simgpu *sim_open_fd(const char *path, bool create, int *rc,
					 struct colloc_diag *diag)
{
	struct colloc_simgpu *sim;
	struct stat sb;
	int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
	int err;

	sim = malloc(sizeof(*sim));
	if (!sim) {
		*rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		return NULL;
	}
	memset(sim, 0, offsetof(struct colloc_simgpu, buf));
	if (path)
		err = snprintf(sim->path, sizeof(sim->path), "%s", path) <
				      (int)sizeof(sim->path)
			      ? 0
			      : colloc_diag_set(
					diag, COLLOC_ELIMIT,
					"the simulated GPU state path is too long");
	else
		err = colloc_simgpu_default_path(sim->path, sizeof(sim->path), diag);
	if (err < 0)
		goto fail_free;
	if (sim->path[0] == '\0') {
		err = colloc_diag_set(diag, COLLOC_EUSAGE,
				      "empty simulated GPU state path");
		goto fail_free;
	}
	sim->fd = open(sim->path, flags, 0666);
	if (sim->fd < 0) {
		err = sys_fail(sim, diag, "");
		if (err == -ENOENT && !create)
			colloc_diag_printf(
				diag,
				"%s: no simulated GPUs here (open the sim backend "
				"with a size, e.g. sim:2x40GiB, or run "
				"colloc-simjob --setup sim:2x40GiB, to make them)",
				sim->path);
		goto fail_free;
	}
	if (fstat(sim->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		err = colloc_diag_set(diag, COLLOC_EUSAGE, "%s: not a regular file",
				      sim->path);
		goto fail_close;
	}
	/* Jobs get the path in their environment and run elsewhere. */
	if (sim->path[0] != '/') {
		char cwd[COLLOC_SIMGPU_PATH_MAX], rel[COLLOC_SIMGPU_PATH_MAX];
		int n;

		memcpy(rel, sim->path, sizeof(rel));
		if (!getcwd(cwd, sizeof(cwd)) ||
		    (n = snprintf(sim->path, sizeof(sim->path), "%s/%s", cwd, rel)) < 0 ||
		    (size_t)n >= sizeof(sim->path)) {
			err = colloc_diag_set(diag, COLLOC_ELIMIT,
					      "%s: cannot make the path absolute", rel);
			goto fail_close;
		}
	}
	return sim;

fail_close:
	close(sim->fd);
fail_free:
	free(sim);
	*rc = err;
	return NULL;
}

void colloc_simgpu_close(struct colloc_simgpu *sim)
{
	if (!sim)
		return;
	close(sim->fd);
	free(sim);
}

const char *colloc_simgpu_path(const struct colloc_simgpu *sim)
{
	return sim->path;
}

static bool shape_matches(const struct sim_state *st, unsigned n_gpus, uint64_t mem_bytes)
{
	if (st->n_gpus != n_gpus)
		return false;
	for (unsigned i = 0; i < n_gpus; i++)
		if (st->gpus[i].total_bytes != mem_bytes)
			return false;
	return true;
}

static unsigned live_procs(const struct sim_state *st)
{
	unsigned n = 0;

	for (unsigned i = 0; i < st->n_gpus; i++)
		n += st->gpus[i].n_procs;
	return n;
}

/* Give st n_gpus empty GPUs of mem_bytes; energy of GPUs kept stays. */
static void reshape(struct sim_state *st, unsigned n_gpus, uint64_t mem_bytes,
		    int64_t now)
{
	for (unsigned i = 0; i < n_gpus; i++) {
		struct sim_gpu *g = &st->gpus[i];

		if (i >= st->n_gpus) {
			g->energy_mj = 0;
			g->stamp_ms = now;
		}
		g->total_bytes = mem_bytes;
		g->n_procs = 0;
	}
	st->n_gpus = n_gpus;
}

int colloc_simgpu_create(const char *path, unsigned n_gpus, uint64_t mem_bytes,
			 struct colloc_simgpu **out, struct colloc_diag *diag)
{
	struct colloc_simgpu *sim = NULL;
	int64_t now = colloc__wall_ms();
	int rc;

	if (n_gpus == 0 || n_gpus > COLLOC_SIMGPU_MAX_GPUS)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%u simulated GPUs: the number must be 1 to %d",
				       n_gpus, COLLOC_SIMGPU_MAX_GPUS);
	if (mem_bytes == 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "simulated GPUs need more than 0 bytes of memory");
	sim = sim_open_fd(path, true, &rc, diag);
	if (!sim)
		return rc;
	rc = begin(sim, diag);
	if (rc < 0)
		goto fail;
	if (rc == 1) {
		/* New (or created by a process that died before writing). */
		memset(&sim->st, 0, sizeof(sim->st));
		sim->st.id = new_id(sim->fd);
		sim->st.n_gpus = 0;
		reshape(&sim->st, n_gpus, mem_bytes, now);
		sim->dirty = true;
		rc = 0;
	} else if (!shape_matches(&sim->st, n_gpus, mem_bytes)) {
		if (live_procs(&sim->st) > 0) {
			char have[32], want[32];

			colloc_format_bytes(sim->st.gpus[0].total_bytes, have,
					    sizeof(have));
			colloc_format_bytes(mem_bytes, want, sizeof(want));
			rc = colloc_diag_set(diag, COLLOC_EUSAGE,
					     "%s: has %u simulated GPUs of %s in use by "
					     "%u processes; cannot make them %u of %s "
					     "(use another path= or wait for them)",
					     sim->path, sim->st.n_gpus, have,
					     live_procs(&sim->st), n_gpus, want);
		} else {
			settle(&sim->st, now);
			reshape(&sim->st, n_gpus, mem_bytes, now);
			sim->dirty = true;
		}
	}
	rc = finish(sim, rc, diag);
	if (rc < 0)
		goto fail;
	*out = sim;
	return 0;
fail:
	colloc_simgpu_close(sim);
	return rc;
}

int colloc_simgpu_attach(const char *path, struct colloc_simgpu **out,
			 struct colloc_diag *diag)
{
	struct colloc_simgpu *sim = NULL;
	int rc = 0;

	sim = sim_open_fd(path, false, &rc, diag);
	if (!sim)
		return rc;
	rc = begin(sim, diag);
	if (rc < 0)
		goto fail;
	if (rc == 1)
		rc = corrupt(sim, diag, 0, "it is empty (never initialised)");
	rc = finish(sim, rc, diag);
	if (rc < 0)
		goto fail;
	*out = sim;
	return 0;
fail:
	colloc_simgpu_close(sim);
	return rc;
}

/* ---- queries and changes ---------------------------------------------------- */

static int check_index(struct colloc_simgpu *sim, unsigned index,
		       struct colloc_diag *diag)
{
	if (index >= sim->st.n_gpus)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: no simulated GPU %u (there are %u)",
				       sim->path, index, sim->st.n_gpus);
	return 0;
}

/* begin() for calls that need an initialised file. */
static int begin_ready(struct colloc_simgpu *sim, struct colloc_diag *diag)
{
	int rc = begin(sim, diag);

	if (rc == 1) {
		/* Someone truncated it under us. */
		unlock_file(sim);
		return corrupt(sim, diag, 0, "it is empty");
	}
	return rc;
}

int colloc_simgpu_count(struct colloc_simgpu *sim, unsigned *n, struct colloc_diag *diag)
{
	int rc = begin_ready(sim, diag);

	if (rc < 0)
		return rc;
	*n = sim->st.n_gpus;
	return finish(sim, 0, diag);
}

int colloc_simgpu_info(struct colloc_simgpu *sim, unsigned index,
		       struct colloc_gpu_info *out, struct colloc_diag *diag)
{
	const struct sim_gpu *g;
	char size[32];
	int rc = begin_ready(sim, diag);

	if (rc < 0)
		return rc;
	rc = check_index(sim, index, diag);
	if (rc < 0)
		return finish(sim, rc, diag);
	g = &sim->st.gpus[index];
	/* No MIG, no reserved memory figure, no DCGM: all absent. */
	colloc_gpu_info_init(out);
	format_uuid(sim->st.id, index, out->uuid, sizeof(out->uuid));
	snprintf(out->name, sizeof(out->name), "colloc simulated GPU %s",
		 colloc_format_bytes(g->total_bytes, size, sizeof(size)));
	snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "00000000:%02X:00.0",
		 index + 1);
	out->mem_total_bytes = g->total_bytes;
	out->mem_used_bytes = gpu_used(g);
	out->mem_free_bytes = g->total_bytes - out->mem_used_bytes;
	out->util_pct = (int)gpu_util(g);
	out->power_mw = gpu_power_mw(gpu_util(g));
	out->energy_mj =
		(int64_t)(gpu_energy_at(g, colloc__wall_ms()) & (uint64_t)INT64_MAX);
	return finish(sim, 0, diag);
}

int colloc_simgpu_processes(struct colloc_simgpu *sim, unsigned index,
			    struct colloc_gpu_process *procs, size_t cap, size_t *n,
			    struct colloc_diag *diag)
{
	const struct sim_gpu *g;
	int rc = begin_ready(sim, diag);

	if (rc < 0)
		return rc;
	rc = check_index(sim, index, diag);
	if (rc < 0)
		return finish(sim, rc, diag);
	g = &sim->st.gpus[index];
	for (unsigned k = 0; k < g->n_procs && k < cap; k++) {
		procs[k].pid = g->procs[k].pid;
		procs[k].used_bytes = g->procs[k].bytes;
	}
	*n = g->n_procs;
	return finish(sim, 0, diag);
}

int colloc_simgpu_find(struct colloc_simgpu *sim, const char *id, unsigned *index,
		       struct colloc_diag *diag)
{
	uint64_t v;
	int rc = begin_ready(sim, diag);

	if (rc < 0)
		return rc;
	rc = colloc_diag_set(diag, COLLOC_ENOTFOUND, "%s: no simulated GPU '%.100s'",
			     sim->path, id ? id : "");
	if (id && colloc_parse_u64(id, UINT32_MAX, &v) == 0) {
		if (v < sim->st.n_gpus) {
			*index = (unsigned)v;
			rc = 0;
		}
	} else if (id) {
		for (unsigned i = 0; i < sim->st.n_gpus; i++) {
			char uuid[COLLOC_GPU_UUID_MAX];

			format_uuid(sim->st.id, i, uuid, sizeof(uuid));
			if (strcasecmp(uuid, id) == 0) {
				*index = i;
				rc = 0;
				break;
			}
		}
	}
	return finish(sim, rc, diag);
}

int colloc_simgpu_alloc(struct colloc_simgpu *sim, unsigned index, int64_t pid,
			uint64_t bytes, unsigned util_pct, struct colloc_diag *diag)
{
	struct sim_gpu *g;
	struct sim_proc *p = NULL;
	uint64_t free_bytes;
	int rc;

	if (pid <= 0 || pid > INT32_MAX || util_pct > 100)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "simulated allocation: bad pid %lld or util %u%%",
				       (long long)pid, util_pct);
	rc = begin_ready(sim, diag);
	if (rc < 0)
		return rc;
	rc = check_index(sim, index, diag);
	if (rc < 0)
		return finish(sim, rc, diag);
	g = &sim->st.gpus[index];
	free_bytes = g->total_bytes - gpu_used(g);
	for (unsigned k = 0; k < g->n_procs; k++)
		if (g->procs[k].pid == pid)
			p = &g->procs[k];
	if (bytes > free_bytes) {
		char want[32], have[32];

		rc = colloc_diag_set(
			diag, -ENOMEM, "simulated GPU %u: cannot allocate %s, %s free",
			index, colloc_format_bytes(bytes, want, sizeof(want)),
			colloc_format_bytes(free_bytes, have, sizeof(have)));
		return finish(sim, rc, diag);
	}
	if (!p && g->n_procs >= COLLOC_SIMGPU_MAX_PROCS) {
		rc = colloc_diag_set(diag, COLLOC_ELIMIT,
				     "simulated GPU %u: already %d processes", index,
				     COLLOC_SIMGPU_MAX_PROCS);
		return finish(sim, rc, diag);
	}
	settle(&sim->st, colloc__wall_ms());
	if (!p) {
		p = &g->procs[g->n_procs++];
		p->pid = pid;
		p->bytes = 0;
	}
	p->bytes += bytes;
	p->util_pct = util_pct;
	sim->dirty = true;
	return finish(sim, 0, diag);
}

int colloc_simgpu_release(struct colloc_simgpu *sim, unsigned index, int64_t pid,
			  struct colloc_diag *diag)
{
	struct sim_gpu *g;
	int rc = begin_ready(sim, diag);

	if (rc < 0)
		return rc;
	rc = check_index(sim, index, diag);
	if (rc < 0)
		return finish(sim, rc, diag);
	g = &sim->st.gpus[index];
	for (unsigned k = 0; k < g->n_procs; k++) {
		if (g->procs[k].pid != pid)
			continue;
		settle(&sim->st, colloc__wall_ms());
		g->procs[k] = g->procs[g->n_procs - 1];
		g->n_procs--;
		sim->dirty = true;
		break;
	}
	return finish(sim, 0, diag);
}

/* ---- the "sim" backend -------------------------------------------------------- */

int colloc_simgpu_parse_args(const char *args, unsigned *n_gpus, uint64_t *mem_bytes,
			     char *path, size_t path_len, struct colloc_diag *diag)
{
	const char *opt = NULL; /* "path=..." when given */
	char geom[64], *x;
	uint64_t n, mem;

	*n_gpus = 0;
	*mem_bytes = 0;
	if (path_len)
		path[0] = '\0';
	if (!args)
		args = "";
	if (strncmp(args, "path=", 5) == 0) {
		opt = args;
	} else if (*args) {
		const char *comma = strchr(args, ',');
		size_t len = comma ? (size_t)(comma - args) : strlen(args);

		if (len >= sizeof(geom))
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"sim:%.40s...: expected NxSIZE, e.g. 4x40GiB", args);
		memcpy(geom, args, len);
		geom[len] = '\0';
		x = strpbrk(geom, "xX");
		if (!x)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "sim:%s: expected NxSIZE, e.g. 4x40GiB",
					       geom);
		*x++ = '\0';
		switch (colloc_parse_u64(geom, COLLOC_SIMGPU_MAX_GPUS, &n)) {
		case 0:
			if (n > 0)
				break;
			/* fall through */
		case COLLOC_EOVERFLOW:
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"sim:%sx%s: the number of GPUs must be 1 to %d", geom, x,
				COLLOC_SIMGPU_MAX_GPUS);
		default:
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "sim:%sx%s: '%s' is not a number of GPUs",
					       geom, x, geom);
		}
		if (colloc_parse_size(x, &mem) != 0)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "sim:%sx%s: '%s' is not a memory size "
					       "(e.g. 40GiB)",
					       geom, x, x);
		if (mem == 0)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "sim:%sx%s: GPUs need more than 0 bytes",
					       geom, x);
		if (comma)
			opt = comma + 1;
		*n_gpus = (unsigned)n;
		*mem_bytes = mem;
	}
	if (!opt)
		return 0;
	if (strncmp(opt, "path=", 5) != 0)
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"sim: unknown option '%.40s' (sim:NxSIZE[,path=FILE])", opt);
	if (opt[5] == '\0')
		return colloc_diag_set(diag, COLLOC_EUSAGE, "sim: path= wants a file");
	if (snprintf(path, path_len, "%s", opt + 5) >= (int)path_len)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "sim: path= is too long");
	return 0;
}

static int sim_backend_open(const char *args, void **backend, struct colloc_diag *diag)
{
	char path[COLLOC_SIMGPU_PATH_MAX];
	struct colloc_simgpu *sim = NULL;
	uint64_t mem;
	unsigned n;
	int rc = colloc_simgpu_parse_args(args, &n, &mem, path, sizeof(path), diag);

	if (rc < 0)
		return rc;
	if (n > 0)
		rc = colloc_simgpu_create(path[0] ? path : NULL, n, mem, &sim, diag);
	else
		rc = colloc_simgpu_attach(path[0] ? path : NULL, &sim, diag);
	if (rc < 0)
		return rc;
	*backend = sim;
	return 0;
}

static void sim_backend_close(void *backend)
{
	colloc_simgpu_close(backend);
}

static int sim_backend_count(void *backend, unsigned *n, struct colloc_diag *diag)
{
	return colloc_simgpu_count(backend, n, diag);
}

static int sim_backend_info(void *backend, unsigned index, struct colloc_gpu_info *out,
			    struct colloc_diag *diag)
{
	return colloc_simgpu_info(backend, index, out, diag);
}

static int sim_backend_processes(void *backend, unsigned index,
				 struct colloc_gpu_process *procs, size_t cap, size_t *n,
				 struct colloc_diag *diag)
{
	return colloc_simgpu_processes(backend, index, procs, cap, n, diag);
}

static int sim_backend_job_env(void *backend, char *buf, size_t len,
			       struct colloc_diag *diag)
{
	const struct colloc_simgpu *sim = backend;
	int n = snprintf(buf, len, "%s=%s", COLLOC_SIMGPU_ENV, sim->path);

	if (n < 0 || (size_t)n >= len)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "no room for the job environment");
	return 0;
}

const struct colloc_gpu_backend_ops colloc__gpu_sim_ops = {
	.name = "sim",
	.open = sim_backend_open,
	.close = sim_backend_close,
	.count = sim_backend_count,
	.info = sim_backend_info,
	.processes = sim_backend_processes,
	.job_env = sim_backend_job_env,
};
