/*
 * cmd_jobs.c — the job commands, clients of collocd's HTTP API
 * (docs/api.md): `colloc submit`, `queue`, `show`, `cancel`, `logs`, `wait`.
 * User guide: docs/cli-jobs.md.
 *
 * Thin: each command parses its options, makes requests through client.h
 * and prints. Scheduling, launching and bookkeeping are the daemon's; the
 * one computation here is `submit --model`, which estimates the memory need
 * and predicts the GPU utilization with libcolloc exactly as `colloc
 * estimate` does, so that the daemon never loads user-supplied model files.
 *
 * Answers are read leniently: a field that is missing or of another type
 * prints as "-", never a crash. --json output is the daemon's body as sent.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json_get.h"
#include "colloc/estimate.h"
#include "colloc/model.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "colloc/units.h"

extern char **environ;

/* The API's limit on the model text, with its NUL. */
#define CLI_MODEL_TEXT_MAX 512

/* Job ids are JSON numbers: keep them exact in a double. */
#define MAX_JOB_ID ((uint64_t)1 << 53)

#define SOCKET_HELP                                                              \
	"  --socket PATH      collocd's socket (default: $COLLOC_SOCKET, else\n" \
	"                     $XDG_RUNTIME_DIR/collocd.sock, else\n"             \
	"                     /tmp/collocd-UID.sock; /run/collocd.sock for root)\n"

#define EXIT_HELP                                                                \
	"exit status: 0 success, 1 collocd refused or the request failed (its\n" \
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n"

/* ---------------------------------------------------------------------- */
/* Small helpers                                                          */

static int parse_job_id(const char *s, uint64_t *id)
{
	if (colloc_parse_u64(s, MAX_JOB_ID, id) || *id == 0) {
		cli_error("'%s' is not a job id (a positive integer, as `colloc queue` "
			  "shows)",
			  s);
		return CLI_USAGE;
	}
	return CLI_OK;
}

static void bad_option(const char *cmd, const char *opt)
{
	cli_error("%s: unknown or incomplete option '%s' (see `colloc %s --help`)", cmd,
		  opt, cmd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static bool state_final(const char *s)
{
	return s && (strcmp(s, "done") == 0 || strcmp(s, "failed") == 0 ||
		     strcmp(s, "cancelled") == 0);
}

/* --- lenient JSON reading ---------------------------------------------- */

static const char *fmt_u64(const cJSON *o, const char *key, char *buf, size_t len)
{
	uint64_t v;

	if (!cli_ju64(o, key, &v))
		return "-";
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static const char *fmt_int(const cJSON *o, const char *key, char *buf, size_t len)
{
	long long v;

	if (!cli_jint(o, key, &v))
		return "-";
	snprintf(buf, len, "%lld", v);
	return buf;
}

static const char *fmt_size(const cJSON *o, const char *key, char *buf, size_t len)
{
	uint64_t v;

	return cli_ju64(o, key, &v) ? colloc_format_bytes(v, buf, len) : "-";
}

/* A 0..1 fraction as a percentage. */
static const char *fmt_frac(const cJSON *o, const char *key, char *buf, size_t len)
{
	double v;

	if (!cli_jnum(o, key, &v))
		return "-";
	snprintf(buf, len, "%.0f%%", v * 100.0);
	return buf;
}

static const char *fmt_time(const cJSON *o, const char *key, char *buf, size_t len)
{
	double v;
	time_t t;
	struct tm tm;

	if (!cli_jnum(o, key, &v) || v < 0 || v > 1e12)
		return "-";
	t = (time_t)v;
	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		return "-";
	return buf;
}

/*
 * Copy s (NULL: "-") into buf for a terminal: control characters become '?'
 * (a job name is anyone's text), and more than max bytes end in "...",
 * cut at a UTF-8 character boundary.
 */
static const char *clean(const char *s, char *buf, size_t len, size_t max)
{
	size_t n, k;

	if (!s || !*s)
		s = "-";
	if (max >= len)
		max = len - 1;
	n = strlen(s);
	if (n > max) {
		n = max > 3 ? max - 3 : 0;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (k = 0; k < n; k++) {
		unsigned char ch = (unsigned char)s[k];

		buf[k] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (n < strlen(s) && max > 3) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

/* What `wait` and `show` say about how a job ended: "exit 3", "signal 9". */
static const char *fmt_outcome(const cJSON *job, char *buf, size_t len)
{
	long long code, sig;

	if (cli_jint(job, "signal", &sig))
		snprintf(buf, len, "signal %lld", sig);
	else if (cli_jint(job, "exit_code", &code))
		snprintf(buf, len, "exit %lld", code);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* ---------------------------------------------------------------------- */
/* submit                                                                 */

static const char submit_usage[] =
	"usage: colloc submit [options] [--] CMD [ARGS...]\n"
	"\n"
	"Queue CMD to run on GPUs that collocd chooses: as you, in the current\n"
	"directory, with the current environment (plus CUDA_VISIBLE_DEVICES set to\n"
	"the GPUs' UUIDs). collocd starts it when its GPU memory need fits next to\n"
	"what already runs there. Prints \"submitted job ID\".\n"
	"\n"
	"what the job needs:\n"
	"  --gpus N           GPUs, all on one node (1..16; default 1)\n"
	"  --mem SIZE         GPU memory per GPU, e.g. 6GiB, 512MiB (default: the\n"
	"                     largest peak measured on earlier runs of the same\n"
	"                     command in the same directory, else collocd's\n"
	"                     default_mem)\n"
	"  --model MODEL      instead of --mem: estimate the need from the model\n"
	"                     (an .onnx file or a zoo name) as `colloc estimate`\n"
	"                     does, and send its peak device memory and predicted\n"
	"                     GPU utilization and SM activity; needs --batch\n"
	"    --batch N          batch size\n"
	"    --dim NAME=VALUE   bind a named dim, e.g. --dim seq=128\n"
	"    --optimizer NAME   sgd|momentum|adam|adamw|rmsprop|adagrad (adam)\n"
	"    --precision NAME   fp32|tf32|amp-fp16|amp-bf16 (fp32)\n"
	"    --loss NAME        cross-entropy|causal-lm|mse|none (cross-entropy)\n"
	"    --safety point|bound  send the point estimate (default) or its upper\n"
	"                       bound as the memory need (`colloc estimate --help`)\n"
	"    --platform NAME    profile from data/platforms/ for the memory\n"
	"                       estimate and the utilization prediction (default:\n"
	"                       built-in for memory; for utilization the profile\n"
	"                       of collocd's GPU 0, else built-in)\n"
	"  --util PCT         how busy it keeps its GPU, 0..100 (default: measured\n"
	"                     on earlier runs, else the --model prediction, else\n"
	"                     collocd's default_util)\n"
	"  --exclusive        GPUs of its own, shared with no other job\n"
	"\n"
	"scheduling and output:\n"
	"  --name NAME        job name (default: CMD's base name)\n"
	"  --priority P       -1000..1000, higher starts first (default 0)\n"
	"  --json             print the job as collocd's JSON object\n" SOCKET_HELP
	"  -h, --help         this help\n"
	"\n"
	"Options end at CMD: in `colloc submit --gpus 2 python3 train.py --lr 0.1`,\n"
	"--lr goes to python3. Put -- before a CMD that starts with '-'.\n"
	"\n"
	"examples:\n"
	"  colloc submit --mem 6GiB -- python3 train.py --epochs 3\n"
	"  colloc submit --model resnet50 --batch 64 --optimizer sgd python3 train.py\n"
	"  id=$(colloc submit --json ./run.sh | python3 -c 'import json,sys; "
	"print(json.load(sys.stdin)[\"id\"])')\n"
	"\n" EXIT_HELP;

struct submit_args {
	const char *socket;
	const char *name;
	const char *model;
	const char *platform;
	struct cli_dims dims;
	struct colloc_estimate_opts opts;
	struct colloc_model_opts model_opts;
	bool have_optimizer, have_precision, have_loss, have_safety;
	uint64_t gpus, mem_bytes;
	long long priority;
	double util; /* 0..1 */
	bool have_gpus, have_mem, have_priority, have_util, exclusive, json;
};

/*
 * The peak device memory `colloc estimate MODEL --batch N ...` prints, from
 * the same helpers in the same order (cli.h, cmd_estimate.c), into *bytes;
 * the graph, inferred at the batch, stays in *g for the utilization
 * prediction (the caller destroys it). Returns CLI_OK, or an exit status
 * after printing why (*g is then NULL).
 */
static int estimate_need(const struct submit_args *a, struct colloc_model **g,
			 uint64_t *bytes)
{
	struct colloc_diag diag = {{0}};
	struct colloc_platform plat;
	struct colloc_estimate e;
	struct colloc_estimate_opts opts = a->opts;
	int rc;

	*g = NULL;
	if ((rc = cli_platform_load(a->platform, &plat)))
		return rc;
	opts.platform = &plat;
	if ((rc = cli_model_open(a->model, &a->model_opts, g)))
		return rc;
	if (!*g)
		return CLI_ERROR;
	rc = cli_estimate_at(*g, &a->dims, a->dims.batch, &opts, &e, &diag);
	if (rc) {
		colloc_model_destroy(*g);
		*g = NULL;
		return cli_estimate_error(a->model, rc, &diag);
	}
	*bytes = opts.safety == COLLOC_SAFETY_BOUND ? e.peak_device_upper_bytes
						    : e.peak_device_bytes;
	return CLI_OK;
}

/* The graph's utilization prediction, sent as "util_graph" (docs/api.md). */
struct util_graph {
	bool have;
	double gpu_util, sm_activity;
	char platform[sizeof(((struct colloc_platform *)0)->name)];
};

/*
 * The bundled profile (with compute facts) whose "gpu" is gpu_name, as
 * NVML names it, into *p; false when none is. The first by name wins.
 */
static bool platform_for_gpu(const char *gpu_name, struct colloc_platform *p)
{
	char *names[256];
	int n = colloc_platform_list(names, 256);
	bool found = false;

	for (int k = 0; k < n && k < 256; k++) {
		struct colloc_diag diag = {{0}};

		if (!found && colloc_platform_load(names[k], p, &diag) == 0 &&
		    p->fp32_tflops > 0 && strcmp(p->gpu, gpu_name) == 0)
			found = true;
		free(names[k]);
	}
	return found;
}

/*
 * The platform of collocd's GPU 0 (GET /v1/gpus) into *p, else the
 * built-in profile. CLI_OK, or CLI_UNREACHABLE / CLI_ERROR (printed) when
 * the daemon gave no answer at all: the submit that follows could not
 * reach it either. An answer that is an error, or names no known GPU, is
 * not a failure: the built-in profile stands in.
 */
static int daemon_platform(struct cli_client *c, struct colloc_platform *p)
{
	struct cli_response r;
	cJSON *root = NULL;
	const cJSON *gpus, *g0;
	const char *name = NULL;
	int rc;

	cli_response_init(&r);
	rc = cli_client_request(c, "GET", "/v1/gpus", NULL, &r);
	if (rc < 0) {
		rc = cli_client_result(c, rc, &r, NULL);
		cli_response_fini(&r);
		return rc;
	}
	if (r.status / 100 == 2 && r.body)
		root = cJSON_ParseWithLength(r.body, r.body_len);
	gpus = cli_jarray(root, "gpus");
	g0 = gpus ? cJSON_GetArrayItem(gpus, 0) : NULL;
	if (g0)
		name = cli_jstr(g0, "name");
	if (!name || !platform_for_gpu(name, p))
		colloc_platform_default(p);
	cJSON_Delete(root);
	cli_response_fini(&r);
	return CLI_OK;
}

/*
 * Predict the step's GPU utilization and SM activity of g (inferred at the
 * batch by estimate_need) on --platform, else on the profile of collocd's
 * GPU 0, else on the built-in one, as `colloc estimate --platform` does.
 * A model the predictor cannot handle is a warning, not a failure: the job
 * goes without a prediction. Returns CLI_OK, or an exit status after
 * printing why.
 */
static int predict_util(const struct submit_args *a, struct cli_client *c,
			struct colloc_graph *g, struct util_graph *out)
{
	struct colloc_diag diag = {{0}};
	struct colloc_platform plat;
	struct colloc_estimate_opts opts = a->opts;
	struct colloc_perf_opts po;
	struct colloc_perf p;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = a->platform ? cli_platform_load(a->platform, &plat)
			 : daemon_platform(c, &plat);
	if (rc)
		return rc;
	opts.platform = &plat;
	colloc_perf_opts_init(&po);
	if (cli_perf_at(g, a->dims.batch, &opts, &po, &p, &diag)) {
		fprintf(stderr,
			"colloc: warning: %s: no utilization prediction on platform %s: "
			"%s\n",
			a->model, plat.name, diag.msg);
		return CLI_OK;
	}
	/* The predictor's own ranges, clamped against rounding at the ends:
	 * the API takes fractions 0..1. */
	out->gpu_util = p.gpu_util < 0 ? 0 : p.gpu_util > 1 ? 1 : p.gpu_util;
	out->sm_activity = p.sm_activity < 0 ? 0 : p.sm_activity > 1 ? 1 : p.sm_activity;
	snprintf(out->platform, sizeof(out->platform), "%s", plat.name);
	out->have = true;
	return CLI_OK;
}

/* Append printf output to buf at *pos; false when it no longer fits. */
static bool appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *pos)
		return false;
	*pos += (size_t)n;
	return true;
}

/* The model arguments as the history key and `show` see them, in a fixed
 * order: "resnet50 --batch 64 --optimizer adam --dim seq=128". */
static int model_text(const struct submit_args *a, char *buf, size_t len)
{
	size_t pos = 0;
	bool ok = appendf(buf, len, &pos, "%s --batch %lld", a->model,
			  (long long)a->dims.batch);

	if (ok && a->have_optimizer)
		ok = appendf(buf, len, &pos, " --optimizer %s",
			     colloc_optimizer_name(a->opts.optimizer));
	if (ok && a->have_precision)
		ok = appendf(buf, len, &pos, " --precision %s",
			     colloc_precision_name(a->opts.precision));
	if (ok && a->have_loss)
		ok = appendf(buf, len, &pos, " --loss %s",
			     colloc_loss_name(a->opts.loss));
	if (ok && a->have_safety)
		ok = appendf(buf, len, &pos, " --safety %s",
			     colloc_safety_name(a->opts.safety));
	if (ok && a->platform)
		ok = appendf(buf, len, &pos, " --platform %s", a->platform);
	for (size_t k = 0; ok && k < a->dims.n_dims; k++)
		ok = appendf(buf, len, &pos, " --dim %s=%lld", a->dims.dims[k].name,
			     (long long)a->dims.dims[k].value);
	if (!ok) {
		cli_error("submit: the model arguments are longer than %zu bytes",
			  len - 1);
		return CLI_USAGE;
	}
	return CLI_OK;
}

static int parse_submit(int argc, char **argv, struct submit_args *a)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, 'g'},
		{"mem", required_argument, NULL, 'm'},
		{"model", required_argument, NULL, 'M'},
		{"batch", required_argument, NULL, 'b'},
		{"dim", required_argument, NULL, 'd'},
		{"optimizer", required_argument, NULL, 'o'},
		{"precision", required_argument, NULL, 'p'},
		{"loss", required_argument, NULL, 'L'},
		{"safety", required_argument, NULL, 'Y'},
		{"platform", required_argument, NULL, 'P'},
		{"util", required_argument, NULL, 'u'},
		{"name", required_argument, NULL, 'n'},
		{"priority", required_argument, NULL, 'r'},
		{"exclusive", no_argument, NULL, 'x'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool model_opt = false;
	char *end;
	int c;

	opterr = 0;
	optind = 1;
	/* '+': stop at CMD, whose own options are not ours. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (colloc_parse_u64(optarg, 1u << 20, &a->gpus) ||
			    a->gpus == 0) {
				cli_error("--gpus wants a positive integer, not '%s'",
					  optarg);
				return CLI_USAGE;
			}
			a->have_gpus = true;
			break;
		case 'm':
			if (colloc_parse_size(optarg, &a->mem_bytes) ||
			    a->mem_bytes == 0) {
				cli_error(
					"--mem: '%s' is not a positive size (e.g. 6GiB)",
					optarg);
				return CLI_USAGE;
			}
			a->have_mem = true;
			break;
		case 'M':
			a->model = optarg;
			break;
		case 'b':
			if (cli_parse_batch(optarg, &a->dims))
				return CLI_USAGE;
			model_opt = true;
			break;
		case 'd':
			if (cli_parse_dim(optarg, &a->dims))
				return CLI_USAGE;
			model_opt = true;
			break;
		case 'o':
			if (cli_parse_optimizer(optarg, &a->opts))
				return CLI_USAGE;
			a->have_optimizer = model_opt = true;
			break;
		case 'p':
			if (cli_parse_precision(optarg, &a->opts))
				return CLI_USAGE;
			a->have_precision = model_opt = true;
			break;
		case 'L':
			if (cli_parse_loss(optarg, &a->opts))
				return CLI_USAGE;
			a->have_loss = model_opt = true;
			break;
		case 'Y':
			if (cli_parse_safety(optarg, &a->opts))
				return CLI_USAGE;
			a->have_safety = model_opt = true;
			break;
		case 'P':
			a->platform = optarg;
			model_opt = true;
			break;
		case 'u':
			errno = 0;
			a->util = strtod(optarg, &end);
			if (end != optarg && *end == '%')
				end++;
			if (errno || end == optarg || *end || !(a->util >= 0) ||
			    a->util > 100) {
				cli_error("--util wants a percentage 0..100, not '%s'",
					  optarg);
				return CLI_USAGE;
			}
			a->util /= 100.0;
			a->have_util = true;
			break;
		case 'n':
			a->name = optarg;
			break;
		case 'r':
			errno = 0;
			a->priority = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || a->priority < -1000000 ||
			    a->priority > 1000000) {
				cli_error(
					"--priority wants an integer (-1000..1000), not "
					"'%s'",
					optarg);
				return CLI_USAGE;
			}
			a->have_priority = true;
			break;
		case 'x':
			a->exclusive = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'h':
			fputs(submit_usage, stdout);
			return -1;
		default:
			bad_option("submit", argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("submit: CMD is missing (see `colloc submit --help`)");
		return CLI_USAGE;
	}
	if (a->model && a->have_mem) {
		cli_error("submit: --mem and --model both give the memory need; choose "
			  "one");
		return CLI_USAGE;
	}
	if (model_opt && !a->model) {
		cli_error("submit: --batch, --dim, --optimizer, --precision, --loss, "
			  "--safety and --platform describe a --model; give --model "
			  "MODEL or --mem SIZE");
		return CLI_USAGE;
	}
	if (a->model && !a->dims.batch) {
		cli_error("submit: --model needs --batch N");
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* Add item to obj under key, taking ownership; false (item freed) on
 * failure. */
static bool add(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return false;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

/* The POST /v1/jobs body; NULL (after printing why) on failure. */
static char *submit_body(const struct submit_args *a, int argc, char **argv,
			 const char *model, const struct util_graph *ug)
{
	char cwd[4096];
	cJSON *req, *env;
	char *text = NULL;
	bool ok;

	if (!getcwd(cwd, sizeof(cwd))) {
		cli_error("cannot read the current directory: %s", strerror(errno));
		return NULL;
	}
	if (argc > 4096) {
		cli_error("submit: CMD has %d arguments; collocd takes at most 4096",
			  argc);
		return NULL;
	}
	req = cJSON_CreateObject();
	env = cJSON_CreateArray();
	ok = req && env;
	for (char **e = environ; ok && e && *e; e++) {
		cJSON *s = cJSON_CreateString(*e);

		ok = s && cJSON_AddItemToArray(env, s);
		if (!ok)
			cJSON_Delete(s);
	}
	if (ok) {
		ok = add(req, "env", env); /* env is req's, or freed, now */
	} else {
		cJSON_Delete(env);
	}
	ok = ok &&
	     add(req, "argv", cJSON_CreateStringArray((const char *const *)argv, argc));
	ok = ok && add(req, "cwd", cJSON_CreateString(cwd));
	if (ok && a->name)
		ok = add(req, "name", cJSON_CreateString(a->name));
	if (ok && a->have_gpus)
		ok = add(req, "gpus", cli_json_u64(a->gpus));
	if (ok && a->have_priority)
		ok = add(req, "priority", cli_json_i64(a->priority));
	if (ok && (a->have_mem || model)) {
		ok = add(req, "mem_bytes", cli_json_u64(a->mem_bytes)) &&
		     add(req, "mem_source",
			 cJSON_CreateString(model ? "estimate" : "request"));
	}
	if (ok && a->have_util)
		ok = add(req, "util", cJSON_CreateNumber(a->util));
	if (ok && ug && ug->have) {
		cJSON *g = cJSON_CreateObject();

		ok = add(req, "util_graph", g) &&
		     add(g, "gpu_util", cJSON_CreateNumber(ug->gpu_util)) &&
		     add(g, "sm_activity", cJSON_CreateNumber(ug->sm_activity)) &&
		     add(g, "platform", cJSON_CreateString(ug->platform));
	}
	if (ok && model)
		ok = add(req, "model", cJSON_CreateString(model));
	if (ok && a->exclusive)
		ok = add(req, "exclusive", cJSON_CreateTrue());
	if (ok)
		text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!text)
		cli_error("submit: out of memory");
	return text;
}

int cmd_submit(int argc, char **argv)
{
	struct submit_args a;
	struct cli_client c;
	struct cli_response r;
	struct util_graph ug = {0};
	struct colloc_model *g = NULL;
	char model[CLI_MODEL_TEXT_MAX];
	char *body;
	cJSON *job;
	uint64_t id;
	int rc;

	memset(&a, 0, sizeof(a));
	colloc_estimate_opts_init(&a.opts);
	rc = parse_submit(argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	/* Mistakes in the model arguments are found before the daemon is
	 * asked anything. */
	if (a.model) {
		if ((rc = model_text(&a, model, sizeof(model))) ||
		    (rc = estimate_need(&a, &g, &a.mem_bytes)))
			return rc;
	}
	if ((rc = cli_client_open(&c, a.socket))) {
		colloc_model_destroy(g);
		return rc;
	}
	if (g) { /* a.model was given and estimated */
		rc = predict_util(&a, &c, g->graph, &ug);
		colloc_model_destroy(g);
		if (rc) {
			cli_client_fini(&c);
			return rc;
		}
	}
	body = submit_body(&a, argc - optind, argv + optind, a.model ? model : NULL, &ug);
	if (!body) {
		cli_client_fini(&c);
		return CLI_ERROR;
	}
	cli_response_init(&r);
	rc = cli_client_call(&c, "POST", "/v1/jobs", body, &r, NULL);
	free(body);
	if (rc == CLI_OK && a.json) {
		job = cli_response_json(&r, "submit");
		rc = job ? cli_response_print(&r) : CLI_ERROR;
		cJSON_Delete(job);
	} else if (rc == CLI_OK) {
		job = cli_response_json(&r, "submit");
		if (job && cli_ju64(job, "id", &id))
			printf("submitted job %llu\n", (unsigned long long)id);
		else if (job)
			printf("submitted job -\n");
		rc = job ? CLI_OK : CLI_ERROR;
		cJSON_Delete(job);
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* queue                                                                  */

static const char queue_usage[] =
	"usage: colloc queue [--all] [--state STATE[,STATE...]] [--json]\n"
	"\n"
	"List your jobs, oldest first, one line each:\n"
	"  ID        the job id (for show, logs, wait, cancel)\n"
	"  NAME      --name, else the command's base name\n"
	"  USER      who submitted it\n"
	"  STATE     queued, running, done, failed or cancelled\n"
	"  GPUS      how many GPUs it asks for\n"
	"  MEM       its GPU memory need per GPU\n"
	"  ATTEMPTS  launches so far (an out-of-memory retry launches again)\n"
	"  TIME      queued: waiting since submit; running: since start;\n"
	"            ended: how long it ran\n"
	"  REASON    why it failed, was re-queued or cancelled\n"
	"\n"
	"  --all            everyone's jobs (administrators only)\n"
	"  --state LIST     only jobs in these states, e.g. queued,running\n"
	"  --json           print collocd's {\"jobs\": [...]} as is\n" SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" EXIT_HELP;

int cmd_queue(int argc, char **argv)
{
	static const struct option opts[] = {
		{"all", no_argument, NULL, 'a'},
		{"state", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket = NULL, *states = NULL;
	bool all = false, json = false;
	char path[512], esc[384];
	struct cli_client c;
	struct cli_response r;
	const cJSON *jobs, *job;
	const char *why;
	cJSON *root;
	double now = now_s();
	int ch, rc;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			all = true;
			break;
		case 's':
			states = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(queue_usage, stdout);
			return CLI_OK;
		default:
			bad_option("queue", argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("queue: unexpected argument '%s' (see `colloc queue --help`)",
			  argv[optind]);
		return CLI_USAGE;
	}
	if (states && (!*states || cli_url_escape(states, esc, sizeof(esc)))) {
		cli_error("--state wants a list such as queued,running, not '%s'",
			  states);
		return CLI_USAGE;
	}
	snprintf(path, sizeof(path), "/v1/jobs%s%s%s%s", all || states ? "?" : "",
		 all ? "all=1" : "", all && states ? "&" : "", states ? "state=" : "");
	if (states && (strlen(path) + strlen(esc) >= sizeof(path)))
		return CLI_USAGE; /* cannot happen: esc is smaller than path's room */
	if (states)
		memcpy(path + strlen(path), esc, strlen(esc) + 1);
	if ((rc = cli_client_open(&c, socket)))
		return rc;
	cli_response_init(&r);
	rc = cli_client_call(&c, "GET", path, NULL, &r, NULL);
	root = rc == CLI_OK ? cli_response_json(&r, "queue") : NULL;
	if (rc == CLI_OK && !root)
		rc = CLI_ERROR;
	if (rc == CLI_OK && json) {
		rc = cli_response_print(&r);
		goto out;
	}
	if (rc != CLI_OK)
		goto out;
	jobs = cli_jarray(root, "jobs");
	printf("%6s %-16s %-10s %-9s %4s %10s %8s %11s  %s\n", "ID", "NAME", "USER",
	       "STATE", "GPUS", "MEM", "ATTEMPTS", "TIME", "REASON");
	cJSON_ArrayForEach(job, jobs)
	{
		char id[24], name[64], user[64], st[16], gp[24], mem[32], att[24], el[32],
			reason[64];
		const char *state = cli_jstr(job, "state");
		double t0 = NAN, t1 = now;

		if (!cJSON_IsObject(job))
			continue;
		if (state && strcmp(state, "queued") == 0) {
			cli_jnum(job, "submit_time", &t0);
		} else if (state && strcmp(state, "running") == 0) {
			cli_jnum(job, "start_time", &t0);
		} else if (!cli_jnum(job, "start_time", &t0) ||
			   !cli_jnum(job, "end_time", &t1)) {
			t0 = NAN;
		}
		why = cli_jstr(job, "reason");
		printf("%6s %-16s %-10s %-9s %4s %10s %8s %11s  %s\n",
		       fmt_u64(job, "id", id, sizeof(id)),
		       clean(cli_jstr(job, "name"), name, sizeof(name), 16),
		       clean(cli_jstr(job, "user"), user, sizeof(user), 10),
		       clean(state, st, sizeof(st), 9),
		       fmt_u64(job, "n_gpus", gp, sizeof(gp)),
		       fmt_size(job, "mem_need_bytes", mem, sizeof(mem)),
		       fmt_u64(job, "attempts", att, sizeof(att)),
		       cli_fmt_elapsed(t1 - t0, el, sizeof(el)),
		       why && *why ? clean(why, reason, sizeof(reason), 48) : "");
	}
out:
	cJSON_Delete(root);
	cli_response_fini(&r);
	cli_client_fini(&c);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* show                                                                   */

static const char show_usage[] =
	"usage: colloc show JOB [--json]\n"
	"\n"
	"Everything collocd knows about job JOB: state and how it ended, what it\n"
	"asked for and where the memory figure came from (request, estimate,\n"
	"history, default, oom-retry) and the utilization figure (request,\n"
	"history, graph (PLATFORM), default), the graph's utilization prediction,\n"
	"the GPUs it ran on, measured peak memory and utilization, its command,\n"
	"directory, environment variable names and its events (start, OOM\n"
	"retries, end, ...).\n"
	"\n"
	"  --json           print collocd's job object as is\n" SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" EXIT_HELP;

/* Print a string as a shell word: bare when safe, else single-quoted. */
static void put_word(const char *s)
{
	bool plain = *s != '\0';

	for (const char *p = s; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789-_./=:,+@%",
			       *p) != NULL;
	if (plain) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch == '\'')
			fputs("'\\''", stdout);
		else
			putchar(ch < 0x20 || ch == 0x7f ? '?' : ch);
	}
	putchar('\'');
}

/* Strings of an array, separated by spaces, as shell words or as names. */
static void put_list(const cJSON *arr, bool words)
{
	const cJSON *v;
	bool first = true;
	char buf[256];

	if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr)) {
		fputs("-", stdout);
		return;
	}
	cJSON_ArrayForEach(v, arr)
	{
		if (!first)
			putchar(' ');
		first = false;
		if (!cJSON_IsString(v))
			fputs("?", stdout);
		else if (words)
			put_word(v->valuestring);
		else
			fputs(clean(v->valuestring, buf, sizeof(buf), 200), stdout);
	}
}

static void show_human(const cJSON *job)
{
	char b1[64], b2[64], text[600];
	const cJSON *ev, *events = cli_jarray(job, "events");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(job, "env");
	const char *state = cli_jstr(job, "state");
	double t0, t1;

	printf("id:          %s\n", fmt_u64(job, "id", b1, sizeof(b1)));
	printf("name:        %s\n",
	       clean(cli_jstr(job, "name"), text, sizeof(text), 200));
	printf("user:        %s (uid %s)\n",
	       clean(cli_jstr(job, "user"), b2, sizeof(b2), 60),
	       fmt_u64(job, "uid", b1, sizeof(b1)));
	printf("state:       %s\n", clean(state, b1, sizeof(b1), 20));
	if (state_final(state))
		printf("ended with:  %s\n", fmt_outcome(job, b1, sizeof(b1)));
	printf("reason:      %s\n",
	       clean(cli_jstr(job, "reason"), text, sizeof(text), 500));
	printf("gpus:        %s", fmt_u64(job, "n_gpus", b1, sizeof(b1)));
	if (cli_jarray(job, "gpus") && cJSON_GetArraySize(cli_jarray(job, "gpus")) > 0) {
		fputs(" on ", stdout);
		put_list(cli_jarray(job, "gpus"), false);
	}
	putchar('\n');
	printf("attempts:    %s\n", fmt_u64(job, "attempts", b1, sizeof(b1)));
	printf("memory need: %s per GPU (%s)\n",
	       fmt_size(job, "mem_need_bytes", b1, sizeof(b1)),
	       clean(cli_jstr(job, "mem_source"), b2, sizeof(b2), 20));
	printf("model:       %s\n",
	       clean(cli_jstr(job, "model"), text, sizeof(text), 511));
	printf("util pred:   %s (%s)\n", fmt_frac(job, "util_pred", b1, sizeof(b1)),
	       clean(cli_jstr(job, "util_source"), text, sizeof(text), 100));
	{
		const cJSON *ug = cJSON_GetObjectItemCaseSensitive(job, "util_graph");

		if (cJSON_IsObject(ug))
			printf("util graph:  %s gpu util, %s sm activity (%s)\n",
			       fmt_frac(ug, "gpu_util", b1, sizeof(b1)),
			       fmt_frac(ug, "sm_activity", b2, sizeof(b2)),
			       clean(cli_jstr(ug, "platform"), text, sizeof(text), 100));
	}
	printf("priority:    %s\n", fmt_int(job, "priority", b1, sizeof(b1)));
	printf("exclusive:   %s\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "exclusive")) ? "yes"
										: "no");
	printf("peak memory: %s\n", fmt_size(job, "peak_bytes", b1, sizeof(b1)));
	printf("util mean:   %s\n", fmt_frac(job, "util_mean", b1, sizeof(b1)));
	printf("submitted:   %s\n", fmt_time(job, "submit_time", b1, sizeof(b1)));
	printf("started:     %s\n", fmt_time(job, "start_time", b1, sizeof(b1)));
	printf("ended:       %s\n", fmt_time(job, "end_time", b1, sizeof(b1)));
	if (cli_jnum(job, "start_time", &t0)) {
		if (!cli_jnum(job, "end_time", &t1))
			t1 = now_s();
		printf("runtime:     %s\n", cli_fmt_elapsed(t1 - t0, b2, sizeof(b2)));
	}
	printf("cwd:         %s\n", clean(cli_jstr(job, "cwd"), text, sizeof(text), 500));
	printf("command:     ");
	put_list(cJSON_GetObjectItemCaseSensitive(job, "argv"), true);
	putchar('\n');
	/* The API names the variables without their values (docs/api.md). */
	printf("environment: ");
	put_list(cJSON_IsArray(env) ? env
				    : cJSON_GetObjectItemCaseSensitive(job, "env_names"),
		 false);
	putchar('\n');
	printf("events:\n");
	cJSON_ArrayForEach(ev, events)
	{
		double t;
		char ms[8] = "";

		if (cli_jnum(ev, "time", &t) && t >= 0)
			snprintf(ms, sizeof(ms), ".%03d",
				 (int)((t - floor(t)) * 1000.0) % 1000);
		const char *when = fmt_time(ev, "time", b1, sizeof(b1));

		printf("  %s%s  %-10s %s\n", when, when == b1 ? ms : "",
		       clean(cli_jstr(ev, "kind"), b2, sizeof(b2), 20),
		       clean(cli_jstr(ev, "message"), text, sizeof(text), 500));
	}
}

/* Options and job ids shared by show, logs, cancel and wait. */
struct job_args {
	const char *socket;
	bool json, follow;
	uint64_t timeout_ms;
	const char *timeout_text;
	bool have_timeout;
	uint64_t *ids;
	int n_ids;
};

/*
 * Parse the common options of cmd (those of opts that are set in allowed:
 * 'j' json, 'f' follow, 't' timeout) and the job ids; at least one, at most
 * max. Returns CLI_OK, -1 after printing help, or CLI_USAGE.
 */
static int parse_job_args(int argc, char **argv, const char *cmd, const char *usage,
			  const char *allowed, int max, struct job_args *a)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"follow", no_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 't'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct option mine[sizeof(opts) / sizeof(opts[0])];
	size_t n = 0;
	int c;

	/* Only this command's options, so that getopt_long reports the others
	 * as unknown with the right argv position. */
	for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
		if (!opts[k].name || strchr(allowed, opts[k].val) || opts[k].val == 'S' ||
		    opts[k].val == 'h')
			mine[n++] = opts[k];
	memset(a, 0, sizeof(*a));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, strchr(allowed, 'f') ? "hf" : "h", mine,
				NULL)) != -1) {
		switch (c) {
		case 'j':
			a->json = true;
			break;
		case 'f':
			a->follow = true;
			break;
		case 't':
			if (colloc_parse_duration_ms(optarg, &a->timeout_ms)) {
				cli_error(
					"--timeout wants a duration such as 90s, 500ms, "
					"10m, 2h, not '%s'",
					optarg);
				return CLI_USAGE;
			}
			a->have_timeout = true;
			a->timeout_text = optarg;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			bad_option(cmd, argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("%s: JOB is missing (see `colloc %s --help`)", cmd, cmd);
		return CLI_USAGE;
	}
	if (argc - optind > max) {
		cli_error("%s: one JOB only, got extra argument '%s'", cmd,
			  argv[optind + 1]);
		return CLI_USAGE;
	}
	a->n_ids = argc - optind;
	a->ids = calloc((size_t)a->n_ids, sizeof(*a->ids));
	if (!a->ids) {
		cli_error("%s: out of memory", cmd);
		return CLI_ERROR;
	}
	for (int k = 0; k < a->n_ids; k++)
		if (parse_job_id(argv[optind + k], &a->ids[k])) {
			free(a->ids);
			a->ids = NULL;
			return CLI_USAGE;
		}
	return CLI_OK;
}

int cmd_show(int argc, char **argv)
{
	struct job_args a;
	struct cli_client c;
	struct cli_response r;
	char path[64];
	cJSON *job = NULL;
	int rc = parse_job_args(argc, argv, "show", show_usage, "j", 1, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	snprintf(path, sizeof(path), "/v1/jobs/%llu", (unsigned long long)a.ids[0]);
	free(a.ids);
	if ((rc = cli_client_open(&c, a.socket)))
		return rc;
	cli_response_init(&r);
	rc = cli_client_call(&c, "GET", path, NULL, &r, NULL);
	if (rc == CLI_OK && !(job = cli_response_json(&r, "show")))
		rc = CLI_ERROR;
	if (rc == CLI_OK) {
		if (a.json)
			rc = cli_response_print(&r);
		else
			show_human(job);
	}
	cJSON_Delete(job);
	cli_response_fini(&r);
	cli_client_fini(&c);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* cancel                                                                 */

static const char cancel_usage[] =
	"usage: colloc cancel JOB...\n"
	"\n"
	"Cancel jobs. A queued job is cancelled at once. A running job's process\n"
	"group gets SIGTERM, then SIGKILL after collocd's kill_grace; it shows as\n"
	"cancelled once it has ended (`colloc wait JOB` waits for that).\n"
	"Prints \"cancelled job ID\" for each; a job that has already ended, or\n"
	"that is not yours, is an error.\n"
	"\n" SOCKET_HELP "  -h, --help       this help\n"
	"\n"
	"exit status: 0 all were cancelled, 1 collocd refused at least one (its\n"
	"message is printed), 2 invalid command line, 3 collocd unreachable.\n";

int cmd_cancel(int argc, char **argv)
{
	struct job_args a;
	struct cli_client c;
	struct cli_response r;
	int rc = parse_job_args(argc, argv, "cancel", cancel_usage, "", 4096, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_client_open(&c, a.socket))) {
		free(a.ids);
		return rc;
	}
	cli_response_init(&r);
	for (int k = 0; k < a.n_ids; k++) {
		char path[64], what[48];
		int one;

		snprintf(path, sizeof(path), "/v1/jobs/%llu/cancel",
			 (unsigned long long)a.ids[k]);
		snprintf(what, sizeof(what), "job %llu", (unsigned long long)a.ids[k]);
		one = cli_client_call(&c, "POST", path, NULL, &r, NULL);
		if (one == CLI_OK) {
			printf("cancelled job %llu\n", (unsigned long long)a.ids[k]);
			fflush(stdout);
		} else if (one == CLI_UNREACHABLE) {
			rc = one;
			break;
		} else {
			rc = CLI_ERROR;
		}
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	free(a.ids);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* logs                                                                   */

static const char logs_usage[] =
	"usage: colloc logs JOB [-f]\n"
	"\n"
	"Write job JOB's output (its stdout and stderr, interleaved as written) to\n"
	"stdout, byte for byte. A job that has not started has no output yet.\n"
	"\n"
	"  -f, --follow     keep printing as the job writes, until it has ended\n"
	"                   and everything is printed (polls every 200 ms)\n" SOCKET_HELP
	"  -h, --help       this help\n"
	"\n" EXIT_HELP;

#define LOG_POLL_MS 200

/* The job's state from GET /v1/jobs/ID, for a daemon that did not send
 * X-Colloc-State; "" when unknown. */
static int job_state(struct cli_client *c, uint64_t id, char *buf, size_t len)
{
	struct cli_response r;
	char path[64];
	cJSON *job;
	int rc;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/v1/jobs/%llu", (unsigned long long)id);
	cli_response_init(&r);
	rc = cli_client_call(c, "GET", path, NULL, &r, NULL);
	if (rc == CLI_OK && (job = cli_response_json(&r, "logs"))) {
		if (cli_jstr(job, "state"))
			snprintf(buf, len, "%s", cli_jstr(job, "state"));
		cJSON_Delete(job);
	}
	cli_response_fini(&r);
	return rc;
}

int cmd_logs(int argc, char **argv)
{
	struct job_args a;
	struct cli_client c;
	struct cli_response r;
	uint64_t offset = 0;
	bool final_seen = false;
	int rc = parse_job_args(argc, argv, "logs", logs_usage, "f", 1, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_client_open(&c, a.socket))) {
		free(a.ids);
		return rc;
	}
	cli_response_init(&r);
	for (;;) {
		char path[96], state[32];
		uint64_t next;
		bool caught_up, final;

		snprintf(path, sizeof(path), "/v1/jobs/%llu/log?offset=%llu",
			 (unsigned long long)a.ids[0], (unsigned long long)offset);
		if ((rc = cli_client_call(&c, "GET", path, NULL, &r, NULL)))
			break;
		if (r.body_len && (fwrite(r.body, 1, r.body_len, stdout) != r.body_len ||
				   fflush(stdout) != 0)) {
			rc = CLI_ERROR; /* a closed pipe: nobody to tell */
			break;
		}
		next = r.has_next_offset ? r.next_offset : offset + r.body_len;
		if (r.body_len && next <= offset)
			next = offset + r.body_len; /* never loop on a stuck offset */
		offset = next;
		caught_up = r.body_len == 0 || (r.has_size && offset >= r.size);
		if (!caught_up)
			continue;
		if (!a.follow)
			break;
		snprintf(state, sizeof(state), "%s", r.state);
		if (!state[0] && (rc = job_state(&c, a.ids[0], state, sizeof(state))))
			break;
		final = state_final(state);
		/* The log is complete once the job is final; a request made
		 * after seeing that reads to its true end. */
		if (final && final_seen && r.body_len == 0)
			break;
		if (final) {
			final_seen = true;
			continue;
		}
		sleep_ms(LOG_POLL_MS);
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	free(a.ids);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* wait                                                                   */

static const char wait_usage[] =
	"usage: colloc wait JOB... [--timeout DURATION] [--json]\n"
	"\n"
	"Wait until the jobs have ended (done, failed or cancelled) and print one\n"
	"line for each as it ends: \"job 7 failed (exit 3): REASON\".\n"
	"\n"
	"  --timeout DURATION  give up after DURATION (90s, 500ms, 10m, 2h)\n"
	"  --json              print {\"jobs\": [JOB, ...]}, collocd's job objects\n"
	"                      as they were last seen, in the order given\n" SOCKET_HELP
	"  -h, --help          this help\n"
	"\n"
	"exit status:\n"
	"  0        every job is done (exited 0)\n"
	"  1..255   one JOB that failed: its exit status when it exited non-zero,\n"
	"           128+N when signal N killed it, 1 when cancelled, when it could\n"
	"           not start, or when its supervisor was lost\n"
	"  1        several JOBs and at least one did not end done\n"
	"  1        collocd refused (no such job: its message is printed)\n"
	"  2        invalid command line\n"
	"  3        collocd unreachable\n"
	"  124      --timeout ran out first\n";

#define WAIT_FIRST_MS 50
#define WAIT_MAX_MS 500

/* The exit status `wait` gives for one ended job (see wait_usage). */
static int job_exit_status(const cJSON *job)
{
	const char *state = cli_jstr(job, "state");
	long long code, sig;

	if (state && strcmp(state, "done") == 0)
		return CLI_OK;
	if (!state || strcmp(state, "failed") != 0)
		return CLI_ERROR;
	if (cli_jint(job, "exit_code", &code) && code >= 1 && code <= 255)
		return (int)code;
	if (cli_jint(job, "signal", &sig) && sig >= 1 && sig <= 127)
		return 128 + (int)sig;
	return CLI_ERROR;
}

static void print_ended(uint64_t id, const cJSON *job)
{
	char st[24], out[48];
	const char *why = cli_jstr(job, "reason");

	fmt_outcome(job, out, sizeof(out));
	printf("job %llu %s", (unsigned long long)id,
	       clean(cli_jstr(job, "state"), st, sizeof(st), 20));
	if (strcmp(out, "-") != 0 && strcmp(out, "exit 0") != 0)
		printf(" (%s)", out);
	if (why && *why) {
		char reason[600];

		printf(": %s", clean(why, reason, sizeof(reason), 500));
	}
	putchar('\n');
	fflush(stdout);
}

/* Print {"jobs":[...]} from the bodies as they came. */
static int print_jobs_json(char **bodies, int n)
{
	fputs("{\"jobs\":[", stdout);
	for (int k = 0; k < n; k++) {
		size_t len = bodies[k] ? strlen(bodies[k]) : 0;

		while (len && (bodies[k][len - 1] == '\n' || bodies[k][len - 1] == '\r' ||
			       bodies[k][len - 1] == ' '))
			len--;
		if (k)
			putchar(',');
		if (!len)
			fputs("null", stdout);
		else
			fwrite(bodies[k], 1, len, stdout);
	}
	fputs("]}\n", stdout);
	return fflush(stdout) == 0 ? CLI_OK : CLI_ERROR;
}

int cmd_wait(int argc, char **argv)
{
	struct job_args a;
	struct cli_client c;
	struct cli_response r;
	char **bodies;
	bool *ended;
	uint64_t start = cli_mono_ms(), interval = WAIT_FIRST_MS;
	int left, status = CLI_OK,
		  rc = parse_job_args(argc, argv, "wait", wait_usage, "jt", 4096, &a);

	if (rc)
		return rc < 0 ? CLI_OK : rc;
	bodies = calloc((size_t)a.n_ids, sizeof(*bodies));
	ended = calloc((size_t)a.n_ids, sizeof(*ended));
	if (!bodies || !ended) {
		cli_error("wait: out of memory");
		rc = CLI_ERROR;
		goto out_free;
	}
	if ((rc = cli_client_open(&c, a.socket)))
		goto out_free;
	cli_response_init(&r);
	left = a.n_ids;
	for (;;) {
		uint64_t elapsed;

		for (int k = 0; k < a.n_ids && rc == CLI_OK; k++) {
			char path[64], what[48];
			cJSON *job;

			if (ended[k])
				continue;
			snprintf(path, sizeof(path), "/v1/jobs/%llu",
				 (unsigned long long)a.ids[k]);
			snprintf(what, sizeof(what), "job %llu",
				 (unsigned long long)a.ids[k]);
			if ((rc = cli_client_call(&c, "GET", path, NULL, &r, what)))
				break;
			if (!(job = cli_response_json(&r, what))) {
				rc = CLI_ERROR;
				break;
			}
			free(bodies[k]);
			bodies[k] = r.body; /* NUL-terminated; now ours */
			r.body = NULL;
			r.body_len = r.body_cap = 0;
			if (state_final(cli_jstr(job, "state"))) {
				int st = job_exit_status(job);

				ended[k] = true;
				left--;
				if (!a.json)
					print_ended(a.ids[k], job);
				if (st != CLI_OK)
					status = a.n_ids == 1 ? st : CLI_ERROR;
			}
			cJSON_Delete(job);
		}
		if (rc != CLI_OK || left == 0)
			break;
		elapsed = cli_mono_ms() - start;
		if (a.have_timeout && elapsed >= a.timeout_ms) {
			for (int k = 0; k < a.n_ids; k++)
				if (!ended[k]) {
					cli_error(
						"wait: timed out after %s: job %llu has "
						"not ended (%d of %d still running or "
						"queued)",
						a.timeout_text,
						(unsigned long long)a.ids[k], left,
						a.n_ids);
					break;
				}
			rc = CLI_TIMEOUT;
			break;
		}
		sleep_ms(a.have_timeout && a.timeout_ms - elapsed < interval
				 ? a.timeout_ms - elapsed
				 : interval);
		interval = interval * 2 > WAIT_MAX_MS ? WAIT_MAX_MS : interval * 2;
	}
	if (a.json && (rc == CLI_OK || rc == CLI_TIMEOUT) &&
	    print_jobs_json(bodies, a.n_ids))
		rc = CLI_ERROR;
	if (rc == CLI_OK)
		rc = status;
	cli_response_fini(&r);
	cli_client_fini(&c);
out_free:
	if (bodies)
		for (int k = 0; k < a.n_ids; k++)
			free(bodies[k]);
	free(bodies);
	free(ended);
	free(a.ids);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* stats                                                                  */

static const char stats_usage[] =
	"usage: colloc stats [--json]\n"
	"\n"
	"What collocd has done since it started: jobs by state, makespan (first\n"
	"submit to last end), mean wait and completion time, time-weighted GPU\n"
	"and memory utilization while jobs ran, jobs that shared a GPU, jobs\n"
	"re-queued after an out-of-memory death (and how many then finished),\n"
	"and jobs lost (their end could not be recorded; should be 0).\n"
	"\n"
	"  --json             the API's object (GET /v1/stats, docs/api.md)\n" SOCKET_HELP
	"  -h, --help         this help\n"
	"\n" EXIT_HELP;

int cmd_stats(int argc, char **argv)
{
	static const struct {
		const char *key, *label, *unit;
	} rows[] = {
		{"policy", "policy", ""},
		{"gpus", "GPUs", ""},
		{"jobs", "jobs", ""},
		{"done", "done", ""},
		{"failed", "failed", ""},
		{"cancelled", "cancelled", ""},
		{"queued", "queued", ""},
		{"running", "running", ""},
		{"makespan_s", "makespan", "s"},
		{"mean_wait_s", "mean wait", "s"},
		{"mean_jct_s", "mean completion time", "s"},
		{"gpu_util", "mean GPU utilization", "%"},
		{"mem_util", "mean GPU memory use", "%"},
		{"shared_jobs", "jobs that shared a GPU", ""},
		{"oom_requeued", "OOM deaths re-queued", ""},
		{"oom_recovered", "OOM recoveries (then done)", ""},
		{"jobs_lost", "jobs lost", ""},
	};
	struct cli_client c;
	struct cli_response r;
	const char *socket = NULL;
	bool json = false;
	cJSON *o = NULL;
	int rc;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0) {
			fputs(stats_usage, stdout);
			return CLI_OK;
		} else if (strcmp(argv[k], "--socket") == 0 && k + 1 < argc) {
			socket = argv[++k];
		} else if (strncmp(argv[k], "--socket=", 9) == 0) {
			socket = argv[k] + 9;
		} else {
			bad_option("stats", argv[k]);
			return CLI_USAGE;
		}
	}
	if ((rc = cli_client_open(&c, socket)))
		return rc;
	cli_response_init(&r);
	rc = cli_client_call(&c, "GET", "/v1/stats", NULL, &r, NULL);
	if (rc == CLI_OK && !(o = cli_response_json(&r, "stats")))
		rc = CLI_ERROR;
	if (rc == CLI_OK && json) {
		rc = cli_response_print(&r);
	} else if (rc == CLI_OK) {
		for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, rows[k].key);

			printf("%-28s ", rows[k].label);
			if (cJSON_IsString(v))
				printf("%s\n", v->valuestring);
			else if (!cJSON_IsNumber(v))
				printf("-\n");
			else if (strcmp(rows[k].unit, "%") == 0)
				printf("%.1f %%\n", v->valuedouble * 100.0);
			else if (strcmp(rows[k].unit, "s") == 0)
				printf("%.1f s\n", v->valuedouble);
			else
				printf("%.0f\n", v->valuedouble);
		}
	}
	cJSON_Delete(o);
	cli_response_fini(&r);
	cli_client_fini(&c);
	return rc;
}
