/*
 * cmd_sim.c — `colloc sim`: replay a job trace on a simulated cluster under
 * one or more placement policies and compare them.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/interference.h"
#include "colloc/sim.h"
#include "colloc/sim_report.h"
#include "colloc/units.h"

#define MAX_POLICIES COLLOC_POLICY_COUNT_

static const char sim_usage[] =
	"usage: colloc sim --trace KIND:PATH --cluster SPEC [--policy P[,P...]] "
	"[options]\n"
	"\n"
	"Replay a job trace on a simulated GPU cluster with the scheduler core collocd\n"
	"runs, and compare placement policies side by side (ratios against exclusive).\n"
	"\n"
	"  --trace KIND:PATH   KIND: alibaba2023, philly, gavel or csv "
	"(docs/trace-format.md)\n"
	"  --cluster SPEC      NODESxGPUSxTYPE, e.g. 16x8xA100-40GB, or 4x8x40GiB\n"
	"  --policy LIST       exclusive, round-robin, most-free-memory, "
	"least-utilized,\n"
	"                      estimate-aware, request (trusts declared GPU shares\n"
	"                      and memory), fgd (fragmentation-aware packing of\n"
	"                      declared shares) (default: exclusive,estimate-aware)\n"
	"  --seed N            random seed of job identities and estimate errors (1)\n"
	"  --jobs N            use the first N jobs of the trace\n"
	"  --headroom SIZE     memory kept free on every GPU (512MiB)\n"
	"  --est-error X       sigma of true peak / estimate (0.05)\n"
	"  --util-bound X      estimate-aware: max summed predicted activity per GPU "
	"(1.0)\n"
	"  --backfill RULE     easy (EASY backfill: a reservation for the queue head,\n"
	"                      the default), starve (hold the line after 30 min, as\n"
	"                      collocd) or off (strict queue order)\n"
	"  --gavel FILE        Gavel's simulation_throughputs.json: measured pair\n"
	"                      speeds where both jobs are Gavel types\n"
	"  --skip-bad-rows     skip and count malformed trace rows instead of failing\n"
	"  --kinds             print each job kind's memory estimate, activity and\n"
	"                      predicted step time on the cluster's GPU type (no\n"
	"                      --trace needed), and exit\n"
	"  --json              print one JSON object\n"
	"  --csv               print one CSV row per policy\n"
	"  --plot DIR          write summary.csv, time series and a gnuplot script to\n"
	"                      DIR, and draw util.svg and jct_cdf.svg with gnuplot\n"
	"                      (Debian package gnuplot-nox) when it is installed\n"
	"  -h, --help          this help\n"
	"\n"
	"Same seed, same result. See docs/simulator.md for the model.\n"
	"exit status: 0 success, 1 the trace or a model could not be read, 2 invalid\n"
	"command line.\n";

static void print_table(const struct colloc_sim_result *r, int n)
{
	const struct colloc_sim_result *base = NULL;

	for (int k = 0; k < n; k++)
		if (r[k].policy == COLLOC_POLICY_EXCLUSIVE)
			base = &r[k];
	printf("%-18s %10s %10s %10s %10s %7s %7s %12s %7s %5s %5s %5s\n", "policy",
	       "makespan_s", "mean_jct_s", "p99_jct_s", "mean_wait", "gpu_util",
	       "mem_util", "energy_kWh", "shared", "ooms", "recov", "lost");
	for (int k = 0; k < n; k++) {
		const struct colloc_sim_result *x = &r[k];

		printf("%-18s %10.0f %10.0f %10.0f %10.0f %7.3f %7.3f %12.1f %7zu %5zu "
		       "%5zu "
		       "%5zu\n",
		       colloc_policy_name(x->policy), x->makespan_s, x->mean_jct_s,
		       x->p99_jct_s, x->mean_wait_s, x->gpu_util, x->mem_util,
		       x->energy_j / 3.6e6, x->shared_jobs, x->oom_crashes, x->recoveries,
		       x->jobs_lost);
	}
	if (!base || base->makespan_s <= 0)
		return;
	printf("\nratios against exclusive (makespan, mean JCT, GPU utilization, "
	       "energy):\n");
	for (int k = 0; k < n; k++) {
		const struct colloc_sim_result *x = &r[k];

		printf("%-18s %8.3f %8.3f %8.3f %8.3f\n", colloc_policy_name(x->policy),
		       x->makespan_s / base->makespan_s,
		       base->mean_jct_s > 0 ? x->mean_jct_s / base->mean_jct_s : 0,
		       base->gpu_util > 0 ? x->gpu_util / base->gpu_util : 0,
		       base->energy_j > 0 ? x->energy_j / base->energy_j : 0);
	}
}

static int print_json(const char *trace, const char *cluster,
		      const struct colloc_sim_result *r, int n)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text;

	cJSON_AddStringToObject(root, "trace", trace);
	cJSON_AddStringToObject(root, "cluster", cluster);
	arr = cJSON_AddArrayToObject(root, "policies");
	for (int k = 0; k < n; k++) {
		const struct colloc_sim_result *x = &r[k];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "policy", colloc_policy_name(x->policy));
		cJSON_AddNumberToObject(o, "jobs", (double)x->jobs);
		cJSON_AddNumberToObject(o, "finished", (double)x->finished);
		cJSON_AddNumberToObject(o, "failed", (double)x->failed);
		cJSON_AddNumberToObject(o, "makespan_s", x->makespan_s);
		cJSON_AddNumberToObject(o, "mean_jct_s", x->mean_jct_s);
		cJSON_AddNumberToObject(o, "median_jct_s", x->median_jct_s);
		cJSON_AddNumberToObject(o, "p99_jct_s", x->p99_jct_s);
		cJSON_AddNumberToObject(o, "mean_wait_s", x->mean_wait_s);
		cJSON_AddNumberToObject(o, "median_wait_s", x->median_wait_s);
		cJSON_AddNumberToObject(o, "p99_wait_s", x->p99_wait_s);
		cJSON_AddNumberToObject(o, "gpu_util", x->gpu_util);
		cJSON_AddNumberToObject(o, "mem_util", x->mem_util);
		cJSON_AddNumberToObject(o, "energy_j", x->energy_j);
		cJSON_AddNumberToObject(o, "alloc_frac", x->alloc_frac);
		cJSON_AddNumberToObject(o, "useful_work", x->useful_work);
		cJSON_AddNumberToObject(o, "mean_jct_all_s", x->mean_jct_all_s);
		cJSON_AddNumberToObject(o, "median_jct_all_s", x->median_jct_all_s);
		cJSON_AddNumberToObject(o, "p99_jct_all_s", x->p99_jct_all_s);
		cJSON_AddNumberToObject(o, "oom_per_1k_jobs", x->oom_per_1k_jobs);
		cJSON_AddNumberToObject(o, "shared_jobs", (double)x->shared_jobs);
		cJSON_AddNumberToObject(o, "oom_crashes", (double)x->oom_crashes);
		cJSON_AddNumberToObject(o, "recoveries", (double)x->recoveries);
		cJSON_AddNumberToObject(o, "jobs_lost", (double)x->jobs_lost);
		cJSON_AddNumberToObject(o, "scheduling_passes", (double)x->passes);
		cJSON_AddNumberToObject(o, "sim_wall_s", x->sim_wall_s);
		cJSON_AddItemToArray(arr, o);
	}
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		return CLI_ERROR;
	puts(text);
	free(text);
	return CLI_OK;
}

/* `--kinds`: what every job kind is on this cluster's GPU type, exactly as
 * a run takes it (colloc_sim_kind_info). */
static int print_kinds(const struct colloc_sim_cluster *cl, bool json)
{
	cJSON *root = json ? cJSON_CreateObject() : NULL, *arr = NULL;
	struct colloc_diag diag = {{0}};
	int rc = CLI_OK;

	if (json) {
		if (!root)
			return CLI_ERROR;
		cJSON_AddStringToObject(root, "gpu_type", cl->gpu_type);
		cJSON_AddStringToObject(root, "platform",
					cl->platform ? cl->platform : "default");
		arr = cJSON_AddArrayToObject(root, "kinds");
	} else {
		printf("GPU %s, platform profile %s\n\n", cl->gpu_type,
		       cl->platform ? cl->platform : "default (built-in)");
		printf("%-20s %-20s %6s %5s %10s %9s %9s %9s  %s\n", "kind", "graph",
		       "batch", "seq", "mem_GiB", "activity", "gpu_util", "step_ms",
		       "activity source");
	}
	for (int i = 0; colloc_sim_kind_name(i); i++) {
		struct colloc_sim_kind k;

		if (colloc_sim_kind_info(colloc_sim_kind_name(i), 0, cl, &k, &diag)) {
			cli_error("%s", diag.msg);
			rc = CLI_ERROR;
			break;
		}
		if (json) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "kind", k.kind);
			if (k.zoo)
				cJSON_AddStringToObject(o, "graph", k.zoo);
			else
				cJSON_AddNullToObject(o, "graph");
			cJSON_AddNumberToObject(o, "batch", (double)k.batch);
			cJSON_AddNumberToObject(o, "seq", (double)k.seq);
			cJSON_AddNumberToObject(o, "mem_bytes", (double)k.mem_bytes);
			cJSON_AddNumberToObject(o, "activity", k.activity);
			cJSON_AddStringToObject(o, "activity_source",
						k.predicted ? "predicted" : "assumed");
			cJSON_AddNumberToObject(o, "gpu_util", k.gpu_util);
			cJSON_AddNumberToObject(o, "step_ms", k.step_ms);
			cJSON_AddNumberToObject(o, "interference_activity",
						k.interference_activity);
			cJSON_AddItemToArray(arr, o);
		} else {
			printf("%-20s %-20s %6lld %5lld %10.2f %9.3f %9.3f %9.1f  %s\n",
			       k.kind, k.zoo ? k.zoo : "-", (long long)k.batch,
			       (long long)k.seq, (double)k.mem_bytes / (1 << 30),
			       k.activity, k.gpu_util, k.step_ms,
			       k.predicted ? "predicted (sm_activity)"
					   : "assumed (no graph)");
		}
	}
	if (json) {
		char *text = rc == CLI_OK ? cJSON_PrintUnformatted(root) : NULL;

		cJSON_Delete(root);
		if (rc == CLI_OK && !text)
			return CLI_ERROR;
		if (text)
			puts(text);
		free(text);
	}
	return rc;
}

/* Draw the plots: gnuplot plots.gp in dir (no shell involved). Missing
 * gnuplot is not an error: the data and script are there to draw later. */
static int run_gnuplot(const char *dir)
{
	pid_t pid = fork();
	int status = 0;

	if (pid < 0) {
		cli_error("cannot start gnuplot: %s", strerror(errno));
		return CLI_ERROR;
	}
	if (pid == 0) {
		if (chdir(dir) != 0)
			_exit(126);
		execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) {
		cli_error("gnuplot did not finish");
		return CLI_ERROR;
	}
	if (WEXITSTATUS(status) == 127) {
		fprintf(stderr,
			"colloc: gnuplot is not installed; %s/plots.gp draws the plots "
			"(apt-get install gnuplot-nox)\n",
			dir);
		return CLI_OK;
	}
	if (WEXITSTATUS(status) != 0) {
		cli_error("gnuplot failed on %s/plots.gp", dir);
		return CLI_ERROR;
	}
	return CLI_OK;
}

int cmd_sim(int argc, char **argv)
{
	static const struct option opts[] = {
		{"trace", required_argument, NULL, 't'},
		{"cluster", required_argument, NULL, 'c'},
		{"policy", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 's'},
		{"jobs", required_argument, NULL, 'n'},
		{"headroom", required_argument, NULL, 'H'},
		{"est-error", required_argument, NULL, 'e'},
		{"util-bound", required_argument, NULL, 'u'},
		{"skip-bad-rows", no_argument, NULL, 'k'},
		{"backfill", required_argument, NULL, 'B'},
		{"gavel", required_argument, NULL, 'G'},
		{"kinds", no_argument, NULL, 'K'},
		{"json", no_argument, NULL, 'j'},
		{"csv", no_argument, NULL, 'C'},
		{"plot", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct colloc_sim_opts so;
	struct colloc_trace_opts to = {false, 0, 0};
	struct colloc_sim_cluster cl;
	struct colloc_sim_result res[MAX_POLICIES];
	struct colloc_diag diag = {{0}};
	struct colloc_trace *tr = NULL;
	const char *trace = NULL, *cluster = NULL, *policies = "exclusive,estimate-aware";
	int pol[MAX_POLICIES], n_pol = 0, c, rc = CLI_OK;
	bool json = false, csv = false, show_kinds = false;
	const char *plot_dir = NULL, *gavel = NULL;
	struct colloc_interference *im = NULL;
	char kind[32], list[256];
	uint64_t v;

	colloc_sim_opts_init(&so);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			trace = optarg;
			break;
		case 'c':
			cluster = optarg;
			break;
		case 'p':
			policies = optarg;
			break;
		case 's':
			if (colloc_parse_u64(optarg, UINT64_MAX, &so.seed)) {
				cli_error("--seed wants a non-negative integer");
				return CLI_USAGE;
			}
			break;
		case 'n':
			if (colloc_parse_u64(optarg, 100000000, &v) || v == 0) {
				cli_error("--jobs wants a positive integer");
				return CLI_USAGE;
			}
			to.max_jobs = (size_t)v;
			break;
		case 'H':
			if (colloc_parse_size(optarg, &so.sched.headroom_bytes)) {
				cli_error("--headroom: '%s' is not a size", optarg);
				return CLI_USAGE;
			}
			break;
		case 'e': {
			char *end;

			so.est_error = strtod(optarg, &end);
			if (end == optarg || *end || so.est_error < 0 ||
			    so.est_error > 1) {
				cli_error("--est-error wants a number in 0..1");
				return CLI_USAGE;
			}
			break;
		}
		case 'u': {
			char *end;

			so.sched.util_bound = strtod(optarg, &end);
			if (end == optarg || *end || so.sched.util_bound <= 0 ||
			    so.sched.util_bound > 16) {
				cli_error("--util-bound wants a number in (0, 16]");
				return CLI_USAGE;
			}
			break;
		}
		case 'k':
			to.skip_bad_rows = true;
			break;
		case 'B':
			if (strcmp(optarg, "off") == 0) {
				so.sched.backfill = false;
			} else if (colloc_backfill_parse(optarg) >= 0) {
				so.sched.backfill = true;
				so.sched.backfill_rule = colloc_backfill_parse(optarg);
			} else {
				cli_error("--backfill wants easy, starve or off");
				return CLI_USAGE;
			}
			break;
		case 'G':
			gavel = optarg;
			break;
		case 'K':
			show_kinds = true;
			break;
		case 'j':
			json = true;
			break;
		case 'C':
			csv = true;
			break;
		case 'P':
			plot_dir = optarg;
			break;
		case 'h':
			fputs(sim_usage, stdout);
			return CLI_OK;
		default:
			cli_error("sim: unknown or incomplete option '%s' (see `colloc "
				  "sim --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind == argc && show_kinds && cluster) {
		if (colloc_sim_cluster_parse(cluster, &cl, &diag)) {
			cli_error("%s", diag.msg);
			return CLI_USAGE;
		}
		return print_kinds(&cl, json);
	}
	if (optind != argc || !trace || !cluster) {
		cli_error("sim: --trace KIND:PATH and --cluster SPEC are required (see "
			  "`colloc "
			  "sim --help`)");
		return CLI_USAGE;
	}
	{
		const char *colon = strchr(trace, ':');

		if (!colon || colon == trace || (size_t)(colon - trace) >= sizeof(kind)) {
			cli_error("--trace wants KIND:PATH, e.g. philly:trace1.csv");
			return CLI_USAGE;
		}
		snprintf(kind, sizeof(kind), "%.*s", (int)(colon - trace), trace);
		trace = colon + 1;
	}
	snprintf(list, sizeof(list), "%s", policies);
	for (char *save = NULL, *p = strtok_r(list, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		int k = colloc_policy_parse(p);

		if (k < 0 || n_pol == MAX_POLICIES) {
			cli_error("--policy: '%s' is not one of exclusive, round-robin, "
				  "most-free-memory, least-utilized, estimate-aware, "
				  "request, fgd",
				  p);
			return CLI_USAGE;
		}
		pol[n_pol++] = k;
	}
	if (colloc_sim_cluster_parse(cluster, &cl, &diag)) {
		cli_error("%s", diag.msg);
		return CLI_USAGE;
	}
	if (gavel) {
		if (colloc_interference_load_gavel(gavel, &im, &diag)) {
			cli_error("%s", diag.msg);
			return CLI_ERROR;
		}
		so.interference = im;
	}
	if (colloc_trace_read(kind, trace, &to, &tr, &diag)) {
		cli_error("%s", diag.msg);
		colloc_interference_destroy(im);
		return CLI_ERROR;
	}
	if (tr->skipped_rows)
		fprintf(stderr, "colloc: %zu bad trace rows skipped\n", tr->skipped_rows);
	for (int k = 0; k < n_pol; k++) {
		so.sched.policy = pol[k];
		if (colloc_sim_run(tr, &cl, &so, &res[k], &diag)) {
			cli_error("%s", diag.msg);
			for (int q = 0; q < k; q++)
				colloc_sim_result_fini(&res[q]);
			colloc_trace_destroy(tr);
			colloc_interference_destroy(im);
			return CLI_ERROR;
		}
	}
	if (plot_dir) {
		char title[512];

		const char *base = strrchr(trace, '/');

		snprintf(title, sizeof(title), "%s on %s", base ? base + 1 : trace,
			 cluster);
		if (colloc_sim_write_plots(plot_dir, title, res, n_pol, &diag)) {
			cli_error("%s", diag.msg);
			rc = CLI_ERROR;
		} else {
			rc = run_gnuplot(plot_dir);
		}
	}
	if (csv) {
		if (colloc_sim_write_csv(stdout, res, n_pol))
			rc = CLI_ERROR;
	} else if (json) {
		rc = print_json(trace, cluster, res, n_pol) ? CLI_ERROR : rc;
	} else {
		printf("trace %s (%zu jobs), cluster %s (%d GPUs of %s, profile %s), "
		       "seed %llu\n\n",
		       trace, tr->n_jobs, cluster, cl.n_nodes * cl.gpus_per_node,
		       cl.gpu_type, cl.platform ? cl.platform : "default",
		       (unsigned long long)so.seed);
		print_table(res, n_pol);
	}
	for (int k = 0; k < n_pol; k++)
		colloc_sim_result_fini(&res[k]);
	colloc_trace_destroy(tr);
	colloc_interference_destroy(im);
	return rc;
}
