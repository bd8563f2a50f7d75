/*
 * colloc_spank.c — the colloc SPANK plugin for Slurm 22.05 (docs/slurm.md).
 *
 * It adds to sbatch, salloc and srun
 *
 *   --colloc-model=MODEL --colloc-batch=N [--colloc-optimizer=OPT]
 *   [--colloc-precision=PREC] [--colloc-dim=NAME=V[,NAME=V...]]
 *
 * and, on the submitting side (allocator and local context: sbatch, salloc,
 * srun, running as the user, where the model file is readable), runs
 * `colloc estimate MODEL --batch N ... --json` and hands the figures to the
 * controller in the job control environment (spank_job_env), where
 * job_submit.lua turns them into a gres/shard request. In the job's tasks
 * (remote context, slurmstepd) it writes the per-process memory fence
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (the shards granted on the node times the
 * shard size; effective where an MPS control daemon serves the GPU) and the
 * estimate (COLLOC_PEAK_BYTES, ...) into each task's environment. With
 * pid_dir= it also leaves each task's pid where the epilog finds it to look
 * up the measured peak (colloc-epilog.sh).
 *
 * What it is not: the policy. How many shards a job gets, whether it is
 * refused, and what happens to jobs without a model is decided by
 * job_submit.lua in slurmctld, where users cannot skip it.
 *
 * Why it spawns the colloc binary instead of linking libcolloc: the plugin
 * is dlopen()ed into sbatch, srun and slurmstepd, which are not ours; a
 * model file is outside input, and a parser fault in a child process is an
 * error message while in sbatch it would be a crash of the user's command.
 * The child gives exactly the figure `colloc estimate` prints (one code
 * path), needs no position-independent build of the static libcolloc, and
 * keeps sanitizer builds of colloc out of Slurm's processes. It costs a
 * few milliseconds per submission.
 *
 * plugstack.conf arguments (all optional):
 *   colloc=PATH        the colloc binary (default: the installed one)
 *   shard_size=SIZE    bytes of GPU memory per shard, as job_submit.lua's
 *                      shard_size (default 1GiB)
 *   timeout=SECONDS    longest an estimate may take (default 10)
 *   platform=NAME      colloc's --platform for the estimate
 *   safety=point|bound which figure the job needs (default point)
 *   pid_dir=DIR        root-owned directory for the epilog's pid files
 *
 * Every buffer here has a fixed size; input longer than it is refused
 * with a message, never truncated.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

/* spank.h's macro (cppcheck does not read system headers) */
// cppcheck-suppress unknownMacro
SPANK_PLUGIN(colloc, 1)

#ifndef COLLOC_SPANK_DEFAULT_BIN
#define COLLOC_SPANK_DEFAULT_BIN "/usr/local/bin/colloc"
#endif

#define VALUE_MAX 256 /* one option value or one plugstack argument */
#define DIMS_MAX 16
#define OUT_MAX ((size_t)256 * 1024) /* colloc estimate --json is a few KiB */
#define ERR_MAX 1024 /* what is kept of colloc's stderr */
#define ARGV_MAX (16 + 2 * DIMS_MAX)
#define GIB ((uint64_t)1 << 30)

extern char **environ;

enum opt_id {
	OPT_MODEL = 1,
	OPT_BATCH,
	OPT_OPTIMIZER,
	OPT_PRECISION,
	OPT_DIM,
};

/* What the user asked for on the command line (or, in remote context, what
 * Slurm forwarded of it). */
struct job_opts {
	char model[PATH_MAX];
	char batch[32];
	char optimizer[32];
	char precision[32];
	char dims[DIMS_MAX][VALUE_MAX];
	size_t n_dims;
	bool given; /* any --colloc-* option */
};

/* The plugstack.conf line. */
struct plugin_conf {
	char colloc[PATH_MAX];
	uint64_t shard_bytes;
	int timeout_s;
	char platform[VALUE_MAX];
	bool bound;
	char pid_dir[PATH_MAX];
};

/* One estimate, as colloc printed it. */
struct estimate {
	uint64_t peak_bytes; /* peak_device_bytes */
	uint64_t upper_bytes; /* peak_device_upper_bytes */
	uint64_t need_bytes; /* the one safety= chose */
	char platform[VALUE_MAX];
};

static struct job_opts opts;
static struct plugin_conf conf;

/* Copy src into dst[len] whole; false (dst untouched) when it does not fit. */
static bool copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* A value that colloc will see as an argument, not as an option. */
static bool plain_value(const char *s)
{
	if (!s || !*s || *s == '-')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20)
			return false;
	return true;
}

/* An unsigned decimal in [1, max]; false for anything else. */
static bool parse_count(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		return false;
	*out = v;
	return true;
}

/* "1GiB", "512MiB", "1073741824", "2G": a size in bytes (binary units). */
static bool parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{"", 0},     {"B", 0},	{"K", 10},   {"KiB", 10}, {"M", 20},
		{"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},	  {"TiB", 40},
	};
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v == 0)
		return false;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		if (strcmp(end, units[k].suffix) != 0)
			continue;
		if (v > (UINT64_MAX >> units[k].shift))
			return false;
		*out = (uint64_t)v << units[k].shift;
		return true;
	}
	return false;
}

static int opt_cb(int val, const char *optarg, int remote)
{
	bool ok = plain_value(optarg);
	uint64_t n;

	(void)remote;
	switch (val) {
	case OPT_MODEL:
		ok = ok && copy_str(opts.model, sizeof(opts.model), optarg);
		break;
	case OPT_BATCH:
		ok = ok && parse_count(optarg, 100000000, &n) &&
		     copy_str(opts.batch, sizeof(opts.batch), optarg);
		break;
	case OPT_OPTIMIZER:
		ok = ok && copy_str(opts.optimizer, sizeof(opts.optimizer), optarg);
		break;
	case OPT_PRECISION:
		ok = ok && copy_str(opts.precision, sizeof(opts.precision), optarg);
		break;
	case OPT_DIM:
		/* Repeated --colloc-dim options add up; so do commas. */
		if (ok) {
			char buf[VALUE_MAX], *save = NULL, *tok;

			ok = copy_str(buf, sizeof(buf), optarg);
			for (tok = ok ? strtok_r(buf, ",", &save) : NULL; tok && ok;
			     tok = strtok_r(NULL, ",", &save)) {
				ok = opts.n_dims < DIMS_MAX && strchr(tok, '=') &&
				     copy_str(opts.dims[opts.n_dims], VALUE_MAX, tok);
				if (ok)
					opts.n_dims++;
			}
		}
		break;
	default:
		ok = false;
	}
	if (!ok) {
		slurm_error("colloc: invalid value '%s' for --colloc-%s (see --help)",
			    optarg ? optarg : "",
			    val == OPT_MODEL	   ? "model"
			    : val == OPT_BATCH	   ? "batch (a positive integer)"
			    : val == OPT_OPTIMIZER ? "optimizer"
			    : val == OPT_PRECISION ? "precision"
						   : "dim (NAME=VALUE, at most 16)");
		return -1;
	}
	opts.given = true;
	return 0;
}

/* struct spank_option wants char *, and -Wwrite-strings makes literals
 * const: the texts live in arrays of their own. */
static char o_model[] = "colloc-model", a_model[] = "MODEL",
	    u_model[] = "colloc: size the job's GPU share from the memory estimate of "
			"training MODEL (an .onnx file or a colloc zoo name); needs "
			"--colloc-batch";
static char o_batch[] = "colloc-batch", a_batch[] = "N",
	    u_batch[] = "colloc: training batch size of --colloc-model";
static char o_opt[] = "colloc-optimizer", a_opt[] = "OPT",
	    u_opt[] = "colloc: sgd|momentum|adam|adamw|rmsprop|adagrad|adamw-loop|"
		      "adafactor|adam8bit|adamw8bit";
static char o_prec[] = "colloc-precision", a_prec[] = "PREC",
	    u_prec[] = "colloc: fp32|tf32|amp-fp16|amp-bf16";
static char o_dim[] = "colloc-dim", a_dim[] = "NAME=V",
	    u_dim[] = "colloc: bind a symbolic dimension of the model (repeatable)";

static struct spank_option spank_opts[] = {
	{o_model, a_model, u_model, 1, OPT_MODEL, opt_cb},
	{o_batch, a_batch, u_batch, 1, OPT_BATCH, opt_cb},
	{o_opt, a_opt, u_opt, 1, OPT_OPTIMIZER, opt_cb},
	{o_prec, a_prec, u_prec, 1, OPT_PRECISION, opt_cb},
	{o_dim, a_dim, u_dim, 1, OPT_DIM, opt_cb},
};

/* Read the plugstack.conf arguments into conf; -1 after logging the bad one. */
static int parse_conf(int ac, char **av)
{
	uint64_t n;

	copy_str(conf.colloc, sizeof(conf.colloc), COLLOC_SPANK_DEFAULT_BIN);
	conf.shard_bytes = GIB;
	conf.timeout_s = 10;
	for (int i = 0; i < ac; i++) {
		const char *a = av[i], *v = strchr(a, '=');
		bool ok = v != NULL;

		if (ok)
			v++;
		if (!ok) {
			/* an argument without '=' */
		} else if (strncmp(a, "colloc=", 7) == 0) {
			ok = *v == '/' && copy_str(conf.colloc, sizeof(conf.colloc), v);
		} else if (strncmp(a, "shard_size=", 11) == 0) {
			ok = parse_size(v, &conf.shard_bytes);
		} else if (strncmp(a, "timeout=", 8) == 0) {
			ok = parse_count(v, 3600, &n);
			if (ok)
				conf.timeout_s = (int)n;
		} else if (strncmp(a, "platform=", 9) == 0) {
			ok = plain_value(v) &&
			     copy_str(conf.platform, sizeof(conf.platform), v);
		} else if (strncmp(a, "safety=", 7) == 0) {
			ok = strcmp(v, "point") == 0 || strcmp(v, "bound") == 0;
			conf.bound = strcmp(v, "bound") == 0;
		} else if (strncmp(a, "pid_dir=", 8) == 0) {
			ok = *v == '/' && copy_str(conf.pid_dir, sizeof(conf.pid_dir), v);
		} else {
			ok = false;
		}
		if (!ok) {
			slurm_error("colloc: plugstack.conf: bad argument '%s' (known: "
				    "colloc=PATH shard_size=SIZE timeout=SECONDS "
				    "platform=NAME safety=point|bound pid_dir=DIR)",
				    a);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (parse_conf(ac, av))
		return -1;
	/* The static spank_options[] table is not read in allocator context
	 * (sbatch, salloc); registering is the way that works everywhere. */
	for (size_t k = 0; k < sizeof(spank_opts) / sizeof(spank_opts[0]); k++) {
		spank_err_t rc = spank_option_register(sp, &spank_opts[k]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("colloc: cannot register --%s: %s",
				    spank_opts[k].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Append what fd has to buf[*len .. cap-1]; beyond cap is read and counted
 * in *over. Returns 1 at end of file, 0 for more, -1 on error. */
static int drain(int fd, char *buf, size_t cap, size_t *len, size_t *over)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0)
		return 1;
	for (ssize_t k = 0; k < n; k++) {
		if (*len + 1 < cap)
			buf[(*len)++] = tmp[k];
		else
			(*over)++;
	}
	buf[*len] = '\0';
	return 0;
}

/*
 * Run argv[0] with argv, its stdout into out[OUT_MAX] and its stderr into
 * err[ERR_MAX], killed after conf.timeout_s. Returns its exit status, or -1
 * with err saying why it did not run to an end.
 */
static int run_colloc(char *const argv[], char *out, char *err)
{
	posix_spawn_file_actions_t fa;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, status = 0, rc = -1;
	size_t olen = 0, elen = 0, oover = 0, eover = 0;
	bool oeof = false, eeof = false, timed_out = false;
	double deadline = mono_s() + conf.timeout_s;
	pid_t pid;

	out[0] = err[0] = '\0';
	if (pipe(po) || pipe(pe)) {
		snprintf(err, ERR_MAX, "pipe: %s", strerror(errno));
		goto out;
	}
	if (posix_spawn_file_actions_init(&fa)) {
		snprintf(err, ERR_MAX, "posix_spawn_file_actions_init failed");
		goto out;
	}
	posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, po[0]);
	posix_spawn_file_actions_addclose(&fa, pe[0]);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		snprintf(err, ERR_MAX, "cannot run %s: %s", argv[0], strerror(rc));
		rc = -1;
		goto out;
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	while (!oeof || !eeof) {
		struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
		double left = deadline - mono_s();
		int n;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (oeof)
			pf[0].fd = -1;
		if (eeof)
			pf[1].fd = -1;
		n = poll(pf, 2, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (!oeof && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			oeof = drain(po[0], out, OUT_MAX, &olen, &oover) != 0;
		if (!eeof && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
			eeof = drain(pe[0], err, ERR_MAX, &elen, &eover) != 0;
	}
	if (!oeof || !eeof)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		snprintf(err, ERR_MAX, "%s took longer than timeout=%d s", argv[0],
			 conf.timeout_s);
		rc = -1;
	} else if (oover) {
		snprintf(err, ERR_MAX, "%s printed more than %zu bytes", argv[0],
			 OUT_MAX);
		rc = -1;
	} else if (WIFEXITED(status)) {
		rc = WEXITSTATUS(status);
	} else {
		snprintf(err, ERR_MAX, "%s killed by signal %d", argv[0],
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		rc = -1;
	}
out:
	for (int k = 0; k < 2; k++) {
		if (po[k] >= 0)
			close(po[k]);
		if (pe[k] >= 0)
			close(pe[k]);
	}
	return rc;
}

/* A JSON number that is a byte count. */
static bool json_bytes(const cJSON *o, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
	    v->valuedouble >= 18446744073709551616.0)
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

/* The first line of s, for a one-line message. */
static const char *first_line(char *s)
{
	char *nl = strchr(s, '\n');

	if (nl)
		*nl = '\0';
	return *s ? s : "(no message)";
}

/* Run the estimate of opts into e; -1 after telling the user why not. */
static int estimate(struct estimate *e)
{
	char *argv[ARGV_MAX], dims[DIMS_MAX][VALUE_MAX + 8], *out = NULL;
	char err[ERR_MAX], opt_batch[] = "--batch", opt_json[] = "--json";
	char opt_opt[] = "--optimizer", opt_prec[] = "--precision";
	char opt_plat[] = "--platform", cmd[] = "estimate";
	const cJSON *plat;
	cJSON *root = NULL;
	int n = 0, rc = -1, status;

	argv[n++] = conf.colloc;
	argv[n++] = cmd;
	argv[n++] = opts.model;
	argv[n++] = opt_batch;
	argv[n++] = opts.batch;
	if (opts.optimizer[0]) {
		argv[n++] = opt_opt;
		argv[n++] = opts.optimizer;
	}
	if (opts.precision[0]) {
		argv[n++] = opt_prec;
		argv[n++] = opts.precision;
	}
	if (conf.platform[0]) {
		argv[n++] = opt_plat;
		argv[n++] = conf.platform;
	}
	for (size_t k = 0; k < opts.n_dims; k++) {
		snprintf(dims[k], sizeof(dims[k]), "--dim=%s", opts.dims[k]);
		argv[n++] = dims[k];
	}
	argv[n++] = opt_json;
	argv[n] = NULL;

	out = malloc(OUT_MAX);
	if (!out) {
		slurm_error("colloc: out of memory");
		return -1;
	}
	status = run_colloc(argv, out, err);
	if (status != 0) {
		const char *msg = status < 0 ? err : first_line(err);

		/* colloc's hint names its own option; the user has ours. */
		slurm_error("colloc: cannot estimate %s at batch %s: %s%s", opts.model,
			    opts.batch, msg,
			    strstr(msg, "--dim") ? " (here: --colloc-dim=NAME=V)" : "");
		goto out;
	}
	root = cJSON_ParseWithLength(out, strlen(out));
	if (!root || !json_bytes(root, "peak_device_bytes", &e->peak_bytes) ||
	    e->peak_bytes == 0) {
		slurm_error("colloc: %s estimate --json printed no peak_device_bytes",
			    conf.colloc);
		goto out;
	}
	if (!json_bytes(root, "peak_device_upper_bytes", &e->upper_bytes) ||
	    e->upper_bytes < e->peak_bytes)
		e->upper_bytes = e->peak_bytes;
	e->need_bytes = conf.bound ? e->upper_bytes : e->peak_bytes;
	plat = cJSON_GetObjectItemCaseSensitive(root, "platform");
	if (!cJSON_IsString(plat) || !plain_value(plat->valuestring) ||
	    !copy_str(e->platform, sizeof(e->platform), plat->valuestring))
		copy_str(e->platform, sizeof(e->platform), "default");
	rc = 0;
out:
	cJSON_Delete(root);
	free(out);
	return rc;
}

/*
 * Submitting side: estimate and hand the figures to slurmctld. sbatch and
 * salloc put the job control environment into the job as SLURM_SPANK_NAME
 * themselves; srun does not, so in local context the plugin puts the same
 * names into srun's environment, which its tasks inherit.
 */
static int submit_side(spank_t sp, bool local)
{
	struct estimate e = {0};
	char num[3][32], dims[DIMS_MAX * VALUE_MAX] = "";
	const char *names[10], *values[10];
	size_t n = 0, dlen = 0;

	if (!opts.model[0] || !opts.batch[0]) {
		slurm_error("colloc: --colloc-model=MODEL and --colloc-batch=N go "
			    "together; give both");
		return -1;
	}
	if (estimate(&e))
		return -1;
	snprintf(num[0], sizeof(num[0]), "%" PRIu64, e.peak_bytes);
	snprintf(num[1], sizeof(num[1]), "%" PRIu64, e.upper_bytes);
	snprintf(num[2], sizeof(num[2]), "%" PRIu64, e.need_bytes);
	/* The dims as `colloc estimate --calibrate` reads them: "a=1;b=2". */
	for (size_t k = 0; k < opts.n_dims; k++)
		dlen += (size_t)snprintf(dims + dlen, sizeof(dims) - dlen, "%s%s",
					 k ? ";" : "", opts.dims[k]);
	names[n] = "COLLOC_MODEL", values[n++] = opts.model;
	names[n] = "COLLOC_BATCH", values[n++] = opts.batch;
	names[n] = "COLLOC_PEAK_BYTES", values[n++] = num[0];
	names[n] = "COLLOC_PEAK_UPPER_BYTES", values[n++] = num[1];
	names[n] = "COLLOC_NEED_BYTES", values[n++] = num[2];
	names[n] = "COLLOC_SAFETY", values[n++] = conf.bound ? "bound" : "point";
	names[n] = "COLLOC_PLATFORM", values[n++] = e.platform;
	names[n] = "COLLOC_OPTIMIZER", values[n++] = opts.optimizer;
	names[n] = "COLLOC_PRECISION", values[n++] = opts.precision;
	names[n] = "COLLOC_DIMS", values[n++] = dims;
	for (size_t k = 0; k < n; k++) {
		spank_err_t rc;
		char var[64];

		if (!values[k][0])
			continue;
		rc = spank_job_control_setenv(sp, names[k], values[k], 1);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("colloc: cannot pass %s to the controller: %s",
				    names[k], spank_strerror(rc));
			return -1;
		}
		snprintf(var, sizeof(var), "SLURM_SPANK_%s", names[k]);
		if (local && setenv(var, values[k], 1)) {
			slurm_error("colloc: setenv %s: %s", var, strerror(errno));
			return -1;
		}
	}
	slurm_verbose("colloc: %s at batch %s needs %" PRIu64 " bytes (%s estimate)",
		      opts.model, opts.batch, e.need_bytes, values[5]);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	(void)ac;
	(void)av;
	if (!opts.given)
		return 0;
	if (ctx == S_CTX_ALLOCATOR || ctx == S_CTX_LOCAL)
		return submit_side(sp, ctx == S_CTX_LOCAL);
	return 0;
}

/* The job environment's value of name (or SLURM_SPANK_name) as a byte
 * count; false when absent or malformed. */
static bool env_bytes(spank_t sp, const char *name, uint64_t *out)
{
	char var[96], buf[64];

	snprintf(var, sizeof(var), "SLURM_SPANK_%s", name);
	if (spank_getenv(sp, var, buf, sizeof(buf)) != ESPANK_SUCCESS &&
	    spank_getenv(sp, name, buf, sizeof(buf)) != ESPANK_SUCCESS)
		return false;
	return parse_count(buf, UINT64_MAX, out);
}

static int set_env(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS) {
		slurm_error("colloc: cannot set %s in the task: %s", name,
			    spank_strerror(rc));
		return -1;
	}
	return 0;
}

static int set_env_u64(spank_t sp, const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return set_env(sp, name, buf);
}

/*
 * In each task: the fence and the figures. A colloc job is one whose
 * options reached this step, or whose estimate is in its environment (a
 * step srun started inside an annotated batch job).
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	uint64_t need = 0, peak = 0, upper = 0, shards = 0, fence;
	char buf[64];
	bool have_need;

	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	have_need = env_bytes(sp, "COLLOC_NEED_BYTES", &need);
	if (!opts.given && !have_need)
		return 0;
	if (spank_getenv(sp, "SLURM_SHARDS_ON_NODE", buf, sizeof(buf)) == ESPANK_SUCCESS)
		parse_count(buf, 1000000, &shards);
	/* The fence is what the job was granted: its shards. Without shards
	 * (a whole-GPU job) it is the estimate itself. */
	if (shards && conf.shard_bytes <= UINT64_MAX / shards)
		fence = shards * conf.shard_bytes;
	else
		fence = need;
	if (!fence) {
		slurm_error("colloc: no estimate reached this task (COLLOC_NEED_BYTES "
			    "is not in its environment); no memory fence set");
		return 0;
	}
	/* MPS reads device ordinals after CUDA_VISIBLE_DEVICES, and a shard
	 * job's shards on a node are all on one GPU: device 0. */
	snprintf(buf, sizeof(buf), "0=%" PRIu64 "M", (fence + (1 << 20) - 1) >> 20);
	if (set_env(sp, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", buf) ||
	    set_env_u64(sp, "COLLOC_FENCE_BYTES", fence))
		return -1;
	if (have_need && set_env_u64(sp, "COLLOC_NEED_BYTES", need))
		return -1;
	if (env_bytes(sp, "COLLOC_PEAK_BYTES", &peak) &&
	    set_env_u64(sp, "COLLOC_PEAK_BYTES", peak))
		return -1;
	if (env_bytes(sp, "COLLOC_PEAK_UPPER_BYTES", &upper) &&
	    set_env_u64(sp, "COLLOC_PEAK_UPPER_BYTES", upper))
		return -1;
	if (shards && set_env_u64(sp, "COLLOC_SHARDS", shards))
		return -1;
	if (opts.model[0] && set_env(sp, "COLLOC_MODEL", opts.model))
		return -1;
	if (opts.batch[0] && set_env(sp, "COLLOC_BATCH", opts.batch))
		return -1;
	return 0;
}

/*
 * As root in slurmstepd, after each task started: leave its pid for the
 * epilog, which looks up the process's peak memory in NVML's accounting
 * (colloc-epilog.sh). Failing to write it loses a history row, never a job.
 */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	uint32_t job_id = 0;
	pid_t pid = 0;
	uint64_t need;
	char path[PATH_MAX + 160], node[128];
	const char *env_node;
	FILE *fp;

	(void)ac;
	(void)av;
	if (!conf.pid_dir[0] || !spank_remote(sp))
		return 0;
	if (!opts.given && !env_bytes(sp, "COLLOC_NEED_BYTES", &need))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	/* Per node as well as per job: test clusters run several slurmd on
	 * one host, each with its own epilog. slurmstepd puts its node's name
	 * into its own environment. */
	env_node = getenv("SLURMD_NODENAME");
	if (!env_node || !plain_value(env_node) || strchr(env_node, '/') ||
	    !copy_str(node, sizeof(node), env_node))
		copy_str(node, sizeof(node), "node");
	snprintf(path, sizeof(path), "%s/%" PRIu32 ".%s.pids", conf.pid_dir, job_id,
		 node);
	fp = fopen(path, "a");
	if (!fp) {
		slurm_info("colloc: cannot record pid for the epilog in %s: %s", path,
			   strerror(errno));
		return 0;
	}
	fprintf(fp, "%ld\n", (long)pid);
	fclose(fp);
	return 0;
}
