/*
 * cmd_submit.c — `colloc submit`: queue a command with collocd (POST
 * /v1/jobs, docs/api.md; user guide docs/cli-jobs.md).
 *
 * The one computation of the job commands lives here: `submit --model`
 * estimates the memory need and predicts the GPU utilization with libcolloc
 * exactly as `colloc estimate` does, so that the daemon never loads
 * user-supplied model files.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jobs_common.h"
#include "cli/json_get.h"
#include "colloc/estimate.h"
#include "colloc/jobs.h"
#include "colloc/model.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "colloc/units.h"

extern char **environ;

static const char submit_usage[] =
	"usage: colloc submit [options] [--] CMD [ARGS...]\n"
	"\n"
	"Queue CMD to run on GPUs that collocd chooses: as you, in the current\n"
	"directory, with the current environment (plus CUDA_VISIBLE_DEVICES set to\n"
	"the GPUs' UUIDs, and COLLOC_JOB_ID to its id). collocd starts it when its\n"
	"GPU memory need fits next to what already runs there. Prints \"submitted\n"
	"job ID\" (an array: its first job, then \"array: N jobs FIRST..LAST\").\n"
	"\n"
	"what the job needs:\n"
	"  --gpus N           GPUs, all on one node (1..16; default 1); --mem and\n"
	"                     --util are per GPU, and so is the --model estimate:\n"
	"                     give --batch as the batch each GPU runs (the\n"
	"                     per-GPU share of a data-parallel job)\n"
	"  --mem SIZE         GPU memory per GPU, e.g. 6GiB, 512MiB (default: the\n"
	"                     largest peak measured on earlier runs of the same\n"
	"                     command in the same directory, else collocd's\n"
	"                     default_mem)\n"
	"  --model MODEL      instead of --mem: estimate the need from the model\n"
	"                     (an .onnx file, a zoo name or hf:CONFIG) as `colloc\n"
	"                     estimate` does, and send its peak device memory and\n"
	"                     predicted GPU utilization and SM activity; needs\n"
	"                     --batch\n"
	"    --batch N          batch size on one GPU (with --gpus N: per GPU)\n"
	"    --dim NAME=VALUE   bind a named dim, e.g. --dim seq=128\n"
	"    --optimizer NAME   sgd|momentum|adam|adamw|rmsprop|adagrad|adamw-loop|\n"
	"                       adafactor|adam8bit|adamw8bit (adam)\n"
	"    --precision NAME   fp32|tf32|amp-fp16|amp-bf16|bf16|fp16 (fp32)\n"
	"    --loss NAME        cross-entropy|causal-lm|causal-lm-loop|causal-lm-copy|\n"
	"                       mse|none (cross-entropy; colloc estimate --help)\n"
	"    --safety point|bound  send the point estimate (default) or its upper\n"
	"                       bound as the memory need (`colloc estimate --help`)\n"
	"    --platform NAME    profile from data/platforms/ for the memory\n"
	"                       estimate and the utilization prediction (default:\n"
	"                       built-in for memory; for utilization the profile\n"
	"                       of collocd's GPU 0, else built-in)\n"
	"    --seq N, --trainable all|none|lora, --lora-rank R, --lora-alpha A,\n"
	"    --lora-targets LIST, --freeze PATTERNS, --gradient-checkpointing,\n"
	"    --attention eager|sdpa|flash, --architecture CLASS, --num-labels N,\n"
	"    --keep-grads, --grad-accum N, --quant-block N,\n"
	"    --parallel ddp|zero1|zero2|zero3|fsdp (sharded over --gpus)\n"
	"                       the training set-up, as `colloc estimate --help`\n"
	"                       describes them\n"
	"  --util U           how busy it keeps its GPU: a fraction 0..1 as in\n"
	"                     collocd's config and API (0.4), or a percentage\n"
	"                     (40%; a bare number above 1, such as 40, is read as\n"
	"                     a percentage too) (default: measured on earlier\n"
	"                     runs, else the --model prediction, else collocd's\n"
	"                     default_util)\n"
	"  --exclusive        GPUs of its own, shared with no other job\n"
	"\n";

/* Two strings: C99 compilers need only take 4095 bytes in one. */
static const char submit_usage_more[] =
	"scheduling and output:\n"
	"  --name NAME        job name (default: CMD's base name)\n"
	"  --priority P       -1000..1000, higher starts first (default 0)\n"
	"  --time DURATION    time limit from its start: 90s, 10m, 2h, 1h30m, 1d;\n"
	"                     past it the job is stopped as a cancel is and fails\n"
	"                     (\"exceeded its time limit of 10m\")\n"
	"  --after ID[:ok|any]  start only once job ID has ended: ok (the default)\n"
	"                     when it ended done, any however it ended; repeat it or\n"
	"                     give a comma list (at most 16). A dependency that can\n"
	"                     never be met (ok on a job that failed) fails the job\n"
	"  --hold             queue it held: it starts after `colloc release ID`\n"
	"  --array A-B[%N]    one job per index A..B (at most 1000 jobs), each with\n"
	"                     COLLOC_ARRAY_INDEX set to its index; %N: at most N of\n"
	"                     them run at once\n"
	"  --json             print the job as collocd's JSON object\n" CLI_SOCKET_HELP
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
	"\n" CLI_EXIT_HELP;

struct submit_args {
	const char *socket;
	const char *name;
	const char *model;
	const char *platform;
	struct cli_dims dims;
	struct colloc_estimate_opts opts;
	struct colloc_model_opts model_opts;
	struct cli_train train; /* the training options given */
	bool have_optimizer, have_precision, have_loss, have_safety;
	uint64_t gpus, mem_bytes;
	long long priority;
	double util; /* 0..1 */
	bool have_gpus, have_mem, have_priority, have_util, exclusive, json;
	int64_t time_ms; /* 0: no limit */
	bool hold;
	char after[16][32]; /* "ID:KIND" */
	int n_after;
	bool array;
	long array_first, array_last, array_max; /* array_max 0: no limit */
};

/* --after LIST into a->after; CLI_OK or CLI_USAGE after printing why. */
static int parse_after(const char *list, struct submit_args *a)
{
	char buf[512];
	char *save = NULL;

	if (strlen(list) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		uint64_t id;
		int kind;

		if (colloc_dep_parse(e, &id, &kind))
			goto bad;
		if (a->n_after == 16) {
			cli_error("--after: at most 16 dependencies");
			return CLI_USAGE;
		}
		snprintf(a->after[a->n_after++], sizeof(a->after[0]), "%llu:%s",
			 (unsigned long long)id, colloc_dep_kind_name(kind));
	}
	return CLI_OK;
bad:
	cli_error("--after wants ID, ID:ok or ID:any (comma-separated), not '%s'", list);
	return CLI_USAGE;
}

/* --array A-B[%N] (or A[%N]) into a; CLI_OK or CLI_USAGE after printing. */
static int parse_array(const char *text, struct submit_args *a)
{
	char *end;

	errno = 0;
	a->array_first = strtol(text, &end, 10);
	a->array_last = a->array_first;
	if (end != text && *end == '-') {
		const char *p = end + 1;

		a->array_last = strtol(p, &end, 10);
		if (end == p)
			goto bad;
	}
	a->array_max = 0;
	if (end != text && *end == '%') {
		const char *p = end + 1;

		a->array_max = strtol(p, &end, 10);
		if (end == p || a->array_max < 1)
			goto bad;
	}
	if (errno || end == text || *end || a->array_first < 0 ||
	    a->array_last < a->array_first || a->array_last > 1000000 ||
	    a->array_last - a->array_first >= 1000 || a->array_max > 1000)
		goto bad;
	a->array = true;
	return CLI_OK;
bad:
	cli_error("--array wants A-B or A-B%%N (0 <= A <= B, at most 1000 jobs), not "
		  "'%s'",
		  text);
	return CLI_USAGE;
}

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
	/* a data-parallel job's model is sharded over the job's GPUs */
	if (opts.parallel != COLLOC_PAR_NONE)
		opts.gpus = a->have_gpus ? (int)a->gpus : 1;
	if ((rc = cli_platform_load(a->platform, &plat)))
		return rc;
	opts.platform = &plat;
	if ((rc = cli_model_open(a->model, &a->model_opts, g)))
		return rc;
	if (!*g)
		return CLI_ERROR;
	cli_model_loss(*g, a->have_loss, &opts);
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

/* The model arguments as the history key and `show` see them, in a fixed
 * order: "resnet50 --batch 64 --optimizer adam --dim seq=128". */
static int model_text(const struct submit_args *a, char *buf, size_t len)
{
	size_t pos = 0;
	bool ok = cli_appendf(buf, len, &pos, "%s --batch %lld", a->model,
			      (long long)a->dims.batch);

	if (ok && a->have_optimizer)
		ok = cli_appendf(buf, len, &pos, " --optimizer %s",
				 colloc_optimizer_name(a->opts.optimizer));
	if (ok && a->have_precision)
		ok = cli_appendf(buf, len, &pos, " --precision %s",
				 cli_train_precision_name(&a->train));
	if (ok && a->have_loss)
		ok = cli_appendf(buf, len, &pos, " --loss %s",
				 colloc_loss_name(a->opts.loss));
	if (ok && a->have_safety)
		ok = cli_appendf(buf, len, &pos, " --safety %s",
				 colloc_safety_name(a->opts.safety));
	if (ok && a->platform)
		ok = cli_appendf(buf, len, &pos, " --platform %s", a->platform);
	for (size_t k = 0; ok && k < a->dims.n_dims; k++)
		ok = cli_appendf(buf, len, &pos, " --dim %s=%lld", a->dims.dims[k].name,
				 (long long)a->dims.dims[k].value);
	if (ok)
		ok = cli_train_text(&a->train, buf, len, &pos);
	if (!ok) {
		cli_error("submit: the model arguments are longer than %zu bytes",
			  len - 1);
		return CLI_USAGE;
	}
	return CLI_OK;
}

/*
 * --util U into *out, a fraction 0..1 as collocd's config and API take it:
 * "40%" is a percentage, a bare number up to 1 a fraction, and one above 1
 * a percentage (what --util meant before it took fractions). Returns 0 or
 * -1.
 */
static int parse_util(const char *text, double *out)
{
	bool pct = false;
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (end != text && *end == '%') {
		pct = true;
		end++;
	}
	if (errno || end == text || *end || !(v >= 0) || v > 100)
		return -1;
	*out = pct || v > 1 ? v / 100.0 : v;
	return 0;
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
		{"time", required_argument, NULL, 'T'},
		{"after", required_argument, NULL, 'A'},
		{"hold", no_argument, NULL, 'H'},
		{"array", required_argument, NULL, 'R'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		CLI_TRAIN_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool model_opt = false;
	char *end;
	int c, rc;

	a->train = (struct cli_train){&a->dims, &a->model_opts, &a->opts, 0, NULL};
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
			if (cli_train_precision(&a->train, optarg))
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
			if (parse_util(optarg, &a->util)) {
				cli_error("--util wants a percentage 0..100%% or a "
					  "fraction 0..1 (40%%, 0.4), not '%s'",
					  optarg);
				return CLI_USAGE;
			}
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
		case 'T':
			if (colloc_duration_parse(optarg, &a->time_ms)) {
				cli_error("--time wants a duration such as 90s, 10m, 2h, "
					  "1h30m or 1d, not '%s'",
					  optarg);
				return CLI_USAGE;
			}
			break;
		case 'A':
			if (parse_after(optarg, a))
				return CLI_USAGE;
			break;
		case 'H':
			a->hold = true;
			break;
		case 'R':
			if (parse_array(optarg, a))
				return CLI_USAGE;
			break;
		case 'j':
			a->json = true;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'h':
			fputs(submit_usage, stdout);
			fputs(submit_usage_more, stdout);
			return -1;
		default:
			if ((rc = cli_train_option(&a->train, c, optarg)) != 1) {
				if (rc)
					return rc;
				model_opt = true;
				break;
			}
			cli_bad_option("submit", argv[optind - 1]);
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
			  "--safety, --platform and the training options (--seq, "
			  "--trainable, ...) describe a --model; give --model MODEL or "
			  "--mem SIZE");
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
			 cJSON_CreateString(colloc_mem_source_name(
				 model ? COLLOC_MEM_ESTIMATE : COLLOC_MEM_REQUEST)));
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
	if (ok && a->time_ms)
		ok = add(req, "time_limit_s",
			 cJSON_CreateNumber((double)a->time_ms / 1000.0));
	if (ok && a->hold)
		ok = add(req, "hold", cJSON_CreateTrue());
	if (ok && a->n_after) {
		cJSON *deps = cJSON_CreateArray();

		ok = add(req, "after", deps);
		for (int k = 0; ok && k < a->n_after; k++)
			ok = cJSON_AddItemToArray(deps, cJSON_CreateString(a->after[k]));
	}
	if (ok && a->array) {
		cJSON *arr = cJSON_CreateObject();

		ok = add(req, "array", arr) &&
		     add(arr, "first", cli_json_i64(a->array_first)) &&
		     add(arr, "last", cli_json_i64(a->array_last));
		if (ok && a->array_max)
			ok = add(arr, "max_running", cli_json_i64(a->array_max));
	}
	if (ok)
		text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!text)
		cli_error("submit: out of memory");
	return text;
}

/* What `submit` prints without --json. */
static int print_submitted(const cJSON *job, void *ctx)
{
	const cJSON *ids = cli_jarray(job, "array_jobs");
	uint64_t id, first, last;
	int n = ids ? cJSON_GetArraySize(ids) : 0;

	(void)ctx;
	if (cli_ju64(job, "id", &id))
		printf("submitted job %llu\n", (unsigned long long)id);
	else
		printf("submitted job -\n");
	if (n > 0 && cJSON_IsNumber(cJSON_GetArrayItem(ids, 0)) &&
	    cJSON_IsNumber(cJSON_GetArrayItem(ids, n - 1))) {
		first = (uint64_t)cJSON_GetArrayItem(ids, 0)->valuedouble;
		last = (uint64_t)cJSON_GetArrayItem(ids, n - 1)->valuedouble;
		printf("array: %d jobs %llu..%llu\n", n, (unsigned long long)first,
		       (unsigned long long)last);
	}
	return CLI_OK;
}

/* A fresh idempotency key, "colloc-" and 32 random hex digits; 0, or -1
 * when the system gives no randomness (the submit then goes without). */
static int submit_key(char *buf, size_t len)
{
	unsigned char r[16];
	size_t off;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r) || len < 8 + 2 * sizeof(r))
		return -1;
	off = (size_t)snprintf(buf, len, "colloc-");
	for (size_t k = 0; k < sizeof(r); k++)
		off += (size_t)snprintf(buf + off, len - off, "%02x", r[k]);
	return 0;
}

int cmd_submit(int argc, char **argv)
{
	struct submit_args a;
	struct cli_client c;
	struct cli_jobs_call call = {"POST", "/v1/jobs",      NULL, "submit",
				     false,  print_submitted, NULL};
	struct util_graph ug = {0};
	struct colloc_model *g = NULL;
	char model[CLI_MODEL_TEXT_MAX], key[64];
	char *body;
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
	call.body = body;
	call.json = a.json;
	/* A submit is retried when it gets no answer: the key makes the retry
	 * find the job a lost answer was about, not queue it again. */
	if (submit_key(key, sizeof(key)) == 0 && cli_client_set_idempotency(&c, key, 4)) {
		free(body);
		cli_client_fini(&c);
		cli_error("submit: out of memory");
		return CLI_ERROR;
	}
	rc = cli_jobs_call_on(&c, &call);
	free(body);
	cli_client_fini(&c);
	return rc;
}
