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
#include "cli/sim_int.h"
#include "colloc/interference.h"
#include "colloc/sim.h"
#include "colloc/sim_fill.h"
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
	"  --cluster SPEC      NODESxGPUSxTYPE, e.g. 16x8xA100-40GB, or 4x8x40GiB;\n"
	"                      alibaba:PATH, a heterogeneous node list (openb_node_list\n"
	"                      _gpu_node.csv): each GPU has its model's memory and\n"
	"                      power, and a pod that states GPU types (gpu_spec)\n"
	"                      runs only on those; estimates and activities are\n"
	"                      on the model with the most GPUs (docs/simulator.md)\n"
	"  --policy LIST       exclusive, round-robin, most-free-memory, "
	"least-utilized,\n"
	"                      estimate-aware, request (trusts declared GPU shares\n"
	"                      and memory), fgd (fragmentation-aware packing of\n"
	"                      declared shares) (default: exclusive,estimate-aware)\n"
	"  --seed N            random seed of job identities and estimate errors (1)\n"
	"  --seeds A-B         run every policy once per seed A..B (at most 64) and\n"
	"                      print mean ± sd over them (sim_report.sh: 1-5)\n"
	"  --jobs N            use the first N jobs of the trace\n"
	"  --load RHO          replay at offered load RHO: arrival times scaled so that\n"
	"                      the jobs' GPU time over the cluster's GPU time from the\n"
	"                      first to the last arrival is RHO (default: as traced)\n"
	"  --headroom SIZE     memory kept free on every GPU (512MiB)\n"
	"  --est-error X       sigma of true peak / estimate (0.05)\n"
	"  --util-bound X      estimate-aware: max summed predicted activity per GPU "
	"(1.0)\n"
	"  --hard-bound        estimate-aware: the bound gates every job (a job for\n"
	"                      which no GPU within it fits waits). Default: soft, a\n"
	"                      job goes beyond it where sharing costs it less than\n"
	"                      waiting for empty GPUs (walltime x (A - 1) < wait)\n"
	"  --soft-bound        the default bound, named (as collocd's util_bound_soft)\n"
	"  --queue-wait        the default, named (collocd's queue_wait): under the\n"
	"                      soft bound a one-GPU job's wait counts the queue in\n"
	"                      front of it (docs/simulator.md)\n"
	"  --no-queue-wait     the wait a one-GPU job compares sharing with is its\n"
	"                      own, until GPUs that fit it empty (the old default)\n"
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
	"                      (Debian package gnuplot-nox) when it is installed\n";
/* the rest (one literal would pass C99's 4095-character minimum) */
static const char sim_usage_2[] =
	"  --job-log FILE      write one CSV row per job of every run (policy, seed,\n"
	"                      the trace's id, kind, GPUs, submit, start and end,\n"
	"                      wait, JCT, alone time, slowdown, outcome, memory):\n"
	"                      where a tail comes from (docs/simulator.md)\n"
	"  --fill              the fill experiment of the FGD paper (ATC '23): pods\n"
	"                      arrive shuffled, never leave, and are placed at once or\n"
	"                      fail; prints the GPU share allocated against the GPU\n"
	"                      request arrived. Needs --cluster alibaba:NODE_LIST.csv;\n"
	"                      policies: random and bestfit (the paper's baselines)\n"
	"                      or any above (default random,bestfit,fgd,estimate-aware)\n"
	"  --fill-to X         --fill: GPU request to reach, x the cluster (1.3)\n"
	"  --fill-order O      --fill: shuffled (as the paper's runs) or trace\n"
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

/* Print root as one line and free it: CLI_OK, or CLI_ERROR out of memory. */
static int put_json(cJSON *root)
{
	char *text = cJSON_PrintUnformatted(root);

	cJSON_Delete(root);
	if (!text)
		return CLI_ERROR;
	puts(text);
	free(text);
	return CLI_OK;
}

/* A heterogeneous cluster's GPU types into root ("gpu_types"); nothing for
 * a homogeneous one. */
static void add_types(cJSON *root, const struct colloc_sim_cluster *cl)
{
	cJSON *arr;

	if (cl->n_types == 0)
		return;
	arr = cJSON_AddArrayToObject(root, "gpu_types");
	for (int t = 0; t < cl->n_types; t++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "model", cl->types[t].name);
		cJSON_AddStringToObject(o, "sim_type", cl->types[t].sim_type);
		cJSON_AddNumberToObject(o, "gpus", cl->types[t].n_gpus);
		cJSON_AddNumberToObject(o, "mem_bytes", (double)cl->types[t].mem_bytes);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddStringToObject(root, "estimates_on", cl->gpu_type);
}

static int print_json(const char *trace, const char *cluster,
		      const struct colloc_sim_cluster *cl,
		      const struct colloc_sim_result *r, int n)
{
	cJSON *root = cJSON_CreateObject(), *arr;

	cJSON_AddStringToObject(root, "trace", trace);
	cJSON_AddStringToObject(root, "cluster", cluster);
	add_types(root, cl);
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
		cJSON_AddNumberToObject(o, "offered_load", x->offered_load);
		cJSON_AddNumberToObject(o, "sim_wall_s", x->sim_wall_s);
		cJSON_AddItemToArray(arr, o);
	}
	return put_json(root);
}

/* The columns of the table over seeds: metric names of
 * colloc_sim_metric_name(), as printed. */
static const struct {
	const char *metric, *head;
	int decimals;
	double scale;
} seed_cols[] = {
	{"makespan_s", "makespan_s", 0, 1},   {"mean_jct_all_s", "mean_jct_s", 0, 1},
	{"p99_jct_all_s", "p99_jct_s", 0, 1}, {"mean_wait_s", "mean_wait_s", 0, 1},
	{"alloc_frac", "alloc_frac", 3, 1},   {"useful_work", "useful_work", 3, 1},
	{"gpu_util", "gpu_util", 3, 1},	      {"energy_j", "energy_kWh", 1, 1 / 3.6e6},
	{"oom_per_1k_jobs", "ooms/1k", 1, 1}, {"jobs_lost", "lost", 0, 1},
};

static int metric_index(const char *name)
{
	for (int i = 0; colloc_sim_metric_name(i); i++)
		if (strcmp(colloc_sim_metric_name(i), name) == 0)
			return i;
	return -1;
}

static void print_table_seeds(const struct colloc_sim_result *r, int n_pol, int n_seeds)
{
	printf("%-17s", "policy");
	for (size_t c = 0; c < sizeof(seed_cols) / sizeof(seed_cols[0]); c++)
		printf(" %17s", seed_cols[c].head);
	printf("\n");
	for (int k = 0; k < n_pol; k++) {
		printf("%-17s",
		       colloc_policy_name(r[(size_t)k * (size_t)n_seeds].policy));
		for (size_t c = 0; c < sizeof(seed_cols) / sizeof(seed_cols[0]); c++) {
			char cell[64];
			double m, sd;

			colloc_sim_metric_stats(&r[(size_t)k * (size_t)n_seeds], n_seeds,
						metric_index(seed_cols[c].metric), &m,
						&sd);
			snprintf(cell, sizeof(cell), "%.*f±%.*f", seed_cols[c].decimals,
				 m * seed_cols[c].scale, seed_cols[c].decimals,
				 sd * seed_cols[c].scale);
			printf(" %17s", cell);
		}
		printf("\n");
	}
	printf("\nJCT columns count failed jobs as ending with the run (mean_jct_all_s, "
	       "p99_jct_all_s); every column is mean ± sample sd over the seeds.\n");
}

static int print_json_seeds(const char *trace, const char *cluster,
			    const struct colloc_sim_cluster *cl,
			    const struct colloc_sim_result *r, int n_pol, int n_seeds,
			    uint64_t seed_lo)
{
	cJSON *root = cJSON_CreateObject(), *arr;

	cJSON_AddStringToObject(root, "trace", trace);
	cJSON_AddStringToObject(root, "cluster", cluster);
	add_types(root, cl);
	cJSON_AddNumberToObject(root, "seed_first", (double)seed_lo);
	cJSON_AddNumberToObject(root, "seed_last",
				(double)(seed_lo + (uint64_t)n_seeds - 1));
	arr = cJSON_AddArrayToObject(root, "policies");
	for (int k = 0; k < n_pol; k++) {
		const struct colloc_sim_result *x = &r[(size_t)k * (size_t)n_seeds];
		cJSON *o = cJSON_CreateObject(), *mean, *sd, *seeds;

		cJSON_AddStringToObject(o, "policy", colloc_policy_name(x->policy));
		mean = cJSON_AddObjectToObject(o, "mean");
		sd = cJSON_AddObjectToObject(o, "sd");
		seeds = cJSON_AddArrayToObject(o, "seeds");
		for (int i = 0; colloc_sim_metric_name(i); i++) {
			double m, s;

			colloc_sim_metric_stats(x, n_seeds, i, &m, &s);
			cJSON_AddNumberToObject(mean, colloc_sim_metric_name(i), m);
			cJSON_AddNumberToObject(sd, colloc_sim_metric_name(i), s);
		}
		for (int q = 0; q < n_seeds; q++) {
			cJSON *one = cJSON_CreateObject();

			cJSON_AddNumberToObject(one, "seed",
						(double)(seed_lo + (uint64_t)q));
			for (int i = 0; colloc_sim_metric_name(i); i++)
				cJSON_AddNumberToObject(one, colloc_sim_metric_name(i),
							colloc_sim_metric(&x[q], i));
			cJSON_AddItemToArray(seeds, one);
		}
		cJSON_AddItemToArray(arr, o);
	}
	return put_json(root);
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

/* --job-log: written to PATH.tmp and renamed to PATH once every run has
 * ended, so that PATH is never a partial log. */
static int open_job_log(const char *path, char *tmp, size_t len, FILE **out)
{
	int w = snprintf(tmp, len, "%s.tmp", path);

	if (w < 0 || (size_t)w >= len) {
		cli_error("--job-log: path too long");
		return CLI_USAGE;
	}
	*out = fopen(tmp, "w");
	if (!*out) {
		cli_error("cannot write %s: %s", tmp, strerror(errno));
		return CLI_ERROR;
	}
	return CLI_OK;
}

static int close_job_log(const char *path, const char *tmp, FILE *f)
{
	bool bad = ferror(f) != 0;

	if (fclose(f) != 0 || bad) {
		cli_error("cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
		unlink(tmp);
		return CLI_ERROR;
	}
	if (rename(tmp, path) != 0) {
		cli_error("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return CLI_ERROR;
	}
	return CLI_OK;
}

/* "A-B" or "A" into lo, hi (at most CLI_SIM_MAX_SEEDS seeds). */
static int parse_seeds(const char *arg, uint64_t *lo, uint64_t *hi)
{
	char a[32];
	const char *dash = strchr(arg, '-');

	if (dash && (size_t)(dash - arg) < sizeof(a)) {
		snprintf(a, sizeof(a), "%.*s", (int)(dash - arg), arg);
		if (colloc_parse_u64(a, UINT64_MAX, lo) == 0 &&
		    colloc_parse_u64(dash + 1, UINT64_MAX, hi) == 0 && *lo <= *hi &&
		    *hi - *lo < CLI_SIM_MAX_SEEDS)
			return 0;
	} else if (!dash && colloc_parse_u64(arg, UINT64_MAX, lo) == 0) {
		*hi = *lo;
		return 0;
	}
	cli_error("--seeds wants A-B with A <= B and at most %d seeds, e.g. 1-5",
		  CLI_SIM_MAX_SEEDS);
	return -1;
}

/* The cluster of spec into *cl: NODESxGPUSxTYPE, or alibaba:PATH, whose
 * node list is read into *nodes (the caller destroys it). CLI_OK, or the
 * exit status after saying why. */
static int cluster_of(const char *spec, struct colloc_sim_cluster *cl,
		      struct colloc_sim_nodes **nodes)
{
	struct colloc_diag diag = {{0}};

	*nodes = NULL;
	if (strncmp(spec, "alibaba:", 8) != 0) {
		if (colloc_sim_cluster_parse(spec, cl, &diag)) {
			cli_error("%s", diag.msg);
			return CLI_USAGE;
		}
		return CLI_OK;
	}
	if (!spec[8]) {
		cli_error("--cluster alibaba: wants a node list, e.g. "
			  "alibaba:openb_node_list_gpu_node.csv");
		return CLI_USAGE;
	}
	if (colloc_sim_nodes_read(spec + 8, nodes, &diag) ||
	    colloc_sim_cluster_nodes(*nodes, cl, &diag)) {
		cli_error("%s", diag.msg);
		colloc_sim_nodes_destroy(*nodes);
		*nodes = NULL;
		return CLI_ERROR;
	}
	return CLI_OK;
}

/* "6212 GPUs: G2 x4392, T4 x842, ..." for the header line. */
static void describe_cluster(const struct colloc_sim_cluster *cl, char *buf, size_t len)
{
	size_t off;
	int w;

	if (cl->n_types == 0) {
		snprintf(buf, len, "%d GPUs of %s", cl->n_nodes * cl->gpus_per_node,
			 cl->gpu_type);
		return;
	}
	w = snprintf(buf, len, "%d nodes, GPUs", cl->n_nodes);
	off = w > 0 && (size_t)w < len ? (size_t)w : len - 1;
	for (int t = 0; t < cl->n_types && off + 1 < len; t++) {
		w = snprintf(buf + off, len - off, "%s %d x %s", t ? "," : "",
			     cl->types[t].n_gpus, cl->types[t].name);
		off += w > 0 && (size_t)w < len - off ? (size_t)w : len - off - 1;
	}
	if (off + 1 < len)
		snprintf(buf + off, len - off, "; estimates on %s", cl->gpu_type);
}

/* `--fill`: read the pods in full and the node list, then cli_sim_fill. */
static int run_fill(const char *kind, const char *trace, const char *cluster,
		    const char *policies, struct colloc_trace_opts to,
		    const struct colloc_sim_fill_opts *fo, uint64_t lo, uint64_t hi,
		    bool json)
{
	struct cli_sim_fill_args a;
	struct colloc_diag diag = {{0}};
	struct colloc_trace *tr = NULL;
	struct colloc_sim_nodes *nodes = NULL;
	char list[256];
	int rc;

	memset(&a, 0, sizeof(a));
	if (strncmp(cluster, "alibaba:", 8) != 0 || !cluster[8]) {
		cli_error("--fill wants --cluster alibaba:NODE_LIST.csv (e.g. "
			  "openb_node_list_gpu_node.csv)");
		return CLI_USAGE;
	}
	snprintf(list, sizeof(list), "%s",
		 policies ? policies : "random,bestfit,fgd,estimate-aware");
	for (char *save = NULL, *p = strtok_r(list, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (a.n_policies == CLI_SIM_MAX_RULES ||
		    colloc_sim_fill_parse(p, &a.rules[a.n_policies],
					  &a.policies[a.n_policies])) {
			cli_error("--policy: '%s' is not random, bestfit or a policy "
				  "(exclusive, round-robin, most-free-memory, "
				  "least-utilized, estimate-aware, request, fgd)",
				  p);
			return CLI_USAGE;
		}
		a.n_policies++;
	}
	if (colloc_sim_nodes_read(cluster + 8, &nodes, &diag)) {
		cli_error("%s", diag.msg);
		return CLI_ERROR;
	}
	to.keep_all_pods = true;
	if (colloc_trace_read(kind, trace, &to, &tr, &diag)) {
		cli_error("%s", diag.msg);
		colloc_sim_nodes_destroy(nodes);
		return CLI_ERROR;
	}
	a.trace = tr;
	a.nodes = nodes;
	a.trace_name = strrchr(trace, '/') ? strrchr(trace, '/') + 1 : trace;
	a.cluster_name = strrchr(cluster, '/') ? strrchr(cluster, '/') + 1 : cluster + 8;
	a.seed_lo = lo;
	a.seed_hi = hi;
	a.opts = *fo;
	a.json = json;
	rc = cli_sim_fill(&a);
	colloc_trace_destroy(tr);
	colloc_sim_nodes_destroy(nodes);
	return rc;
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
		{"seeds", required_argument, NULL, 'S'},
		{"load", required_argument, NULL, 'L'},
		{"soft-bound", no_argument, NULL, 'W'},
		{"hard-bound", no_argument, NULL, 'D'},
		{"queue-wait", no_argument, NULL, 'Q'},
		{"no-queue-wait", no_argument, NULL, 'q'},
		{"fill", no_argument, NULL, 'F'},
		{"job-log", required_argument, NULL, 'J'},
		{"fill-to", required_argument, NULL, 'T'},
		{"fill-order", required_argument, NULL, 'O'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct colloc_sim_opts so;
	struct colloc_trace_opts to = {0};
	struct colloc_sim_cluster cl;
	struct colloc_sim_result *res = NULL, *first = NULL;
	int n_seeds = 1, n_run = 0;
	struct colloc_diag diag = {{0}};
	struct colloc_trace *tr = NULL;
	const char *trace = NULL, *cluster = NULL, *policies = NULL;
	int pol[MAX_POLICIES], n_pol = 0, c, rc = CLI_OK;
	bool json = false, csv = false, show_kinds = false, fill = false;
	uint64_t seed_lo = 0, seed_hi = 0;
	bool have_seeds = false;
	struct colloc_sim_fill_opts fo;
	const char *plot_dir = NULL, *gavel = NULL, *job_log = NULL;
	char log_tmp[4096];
	FILE *log = NULL;
	struct colloc_interference *im = NULL;
	struct colloc_sim_nodes *nodes = NULL;
	char kind[32], list[256], what[512];
	uint64_t v;

	colloc_sim_opts_init(&so);
	colloc_sim_fill_opts_init(&fo);
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
		case 'J':
			job_log = optarg;
			break;
		case 'S':
			if (parse_seeds(optarg, &seed_lo, &seed_hi))
				return CLI_USAGE;
			have_seeds = true;
			break;
		case 'F':
			fill = true;
			break;
		case 'W':
			so.sched.util_soft = true;
			break;
		case 'D':
			so.sched.util_soft = false;
			break;
		case 'Q':
			so.sched.queue_wait = true;
			break;
		case 'q':
			so.sched.queue_wait = false;
			break;
		case 'L': {
			char *end;

			so.load = strtod(optarg, &end);
			if (end == optarg || *end || !(so.load > 0 && so.load <= 100)) {
				cli_error("--load wants an offered load in (0, 100], "
					  "e.g. 0.9");
				return CLI_USAGE;
			}
			break;
		}
		case 'T': {
			char *end;

			fo.tune_ratio = strtod(optarg, &end);
			if (end == optarg || *end ||
			    !(fo.tune_ratio > 0 && fo.tune_ratio <= 3)) {
				cli_error("--fill-to wants a number in (0, 3]");
				return CLI_USAGE;
			}
			break;
		}
		case 'O':
			if (strcmp(optarg, "shuffled") == 0) {
				fo.shuffle = true;
			} else if (strcmp(optarg, "trace") == 0) {
				fo.shuffle = false;
			} else {
				cli_error("--fill-order wants shuffled or trace");
				return CLI_USAGE;
			}
			break;
		case 'h':
			fputs(sim_usage, stdout);
			fputs(sim_usage_2, stdout);
			return CLI_OK;
		default:
			cli_error("sim: unknown or incomplete option '%s' (see `colloc "
				  "sim --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind == argc && show_kinds && cluster) {
		if ((rc = cluster_of(cluster, &cl, &nodes)) != CLI_OK)
			return rc;
		rc = print_kinds(&cl, json);
		colloc_sim_nodes_destroy(nodes);
		return rc;
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
	if (fill && (job_log || plot_dir)) {
		cli_error("--fill places pods and never runs them: %s is for the event "
			  "simulator",
			  job_log ? "--job-log" : "--plot");
		return CLI_USAGE;
	}
	if (fill)
		return run_fill(kind, trace, cluster, policies, to, &fo,
				have_seeds ? seed_lo : so.seed,
				have_seeds ? seed_hi : so.seed, json);
	snprintf(list, sizeof(list), "%s",
		 policies ? policies : "exclusive,estimate-aware");
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
	if ((rc = cluster_of(cluster, &cl, &nodes)) != CLI_OK)
		return rc;
	if (gavel) {
		if (colloc_interference_load_gavel(gavel, &im, &diag)) {
			cli_error("%s", diag.msg);
			colloc_sim_nodes_destroy(nodes);
			return CLI_ERROR;
		}
		so.interference = im;
	}
	if (colloc_trace_read(kind, trace, &to, &tr, &diag)) {
		cli_error("%s", diag.msg);
		colloc_interference_destroy(im);
		colloc_sim_nodes_destroy(nodes);
		return CLI_ERROR;
	}
	describe_cluster(&cl, what, sizeof(what));
	if (tr->skipped_rows)
		fprintf(stderr, "colloc: %zu bad trace rows skipped\n", tr->skipped_rows);
	n_seeds = have_seeds ? (int)(seed_hi - seed_lo + 1) : 1;
	if (!have_seeds)
		seed_lo = so.seed;
	res = calloc((size_t)n_pol * (size_t)n_seeds, sizeof(*res));
	first = calloc((size_t)n_pol, sizeof(*first));
	if (!res || !first) {
		cli_error("out of memory");
		rc = CLI_ERROR;
		goto done;
	}
	if (job_log && (rc = open_job_log(job_log, log_tmp, sizeof(log_tmp), &log)))
		goto done;
	so.job_records = log != NULL;
	for (int k = 0; k < n_pol; k++)
		for (int s = 0; s < n_seeds; s++) {
			struct colloc_sim_result *r = &res[k * n_seeds + s];

			so.sched.policy = pol[k];
			so.seed = seed_lo + (uint64_t)s;
			if (colloc_sim_run(tr, &cl, &so, r, &diag)) {
				cli_error("%s", diag.msg);
				rc = CLI_ERROR;
				goto done;
			}
			n_run++;
			if (log &&
			    colloc_sim_write_job_log(log, r, so.seed, n_run == 1)) {
				cli_error("cannot write %s: %s", log_tmp,
					  strerror(errno));
				rc = CLI_ERROR;
				goto done;
			}
			/* written: the records need not outlive the run */
			colloc_sim_result_drop_job_records(r);
		}
	if (log) {
		rc = close_job_log(job_log, log_tmp, log);
		log = NULL;
		if (rc)
			goto done;
	}
	/* Plots and single-seed outputs: each policy's first seed. */
	for (int k = 0; k < n_pol; k++)
		first[k] = res[(size_t)k * (size_t)n_seeds];
	if (plot_dir) {
		char title[512];

		const char *base = strrchr(trace, '/');

		snprintf(title, sizeof(title), "%s on %s%s", base ? base + 1 : trace,
			 cluster, n_seeds > 1 ? " (first seed)" : "");
		if (colloc_sim_write_plots(plot_dir, title, first, n_pol, &diag)) {
			cli_error("%s", diag.msg);
			rc = CLI_ERROR;
		} else {
			rc = run_gnuplot(plot_dir);
		}
	}
	if (csv && n_seeds > 1) {
		if (colloc_sim_write_csv_stats(stdout, res, n_pol, n_seeds))
			rc = CLI_ERROR;
	} else if (csv) {
		if (colloc_sim_write_csv(stdout, first, n_pol))
			rc = CLI_ERROR;
	} else if (json && n_seeds > 1) {
		rc = print_json_seeds(trace, cluster, &cl, res, n_pol, n_seeds, seed_lo)
			     ? CLI_ERROR
			     : rc;
	} else if (json) {
		rc = print_json(trace, cluster, &cl, first, n_pol) ? CLI_ERROR : rc;
	} else if (n_seeds > 1) {
		printf("trace %s (%zu jobs), cluster %s (%s, profile %s), "
		       "seeds %llu-%llu, offered load %.2f: mean ± sd\n\n",
		       trace, tr->n_jobs, cluster, what,
		       cl.platform ? cl.platform : "default", (unsigned long long)seed_lo,
		       (unsigned long long)seed_hi, first[0].offered_load);
		print_table_seeds(res, n_pol, n_seeds);
	} else {
		printf("trace %s (%zu jobs), cluster %s (%s, profile %s), "
		       "seed %llu, offered load %.2f\n\n",
		       trace, tr->n_jobs, cluster, what,
		       cl.platform ? cl.platform : "default", (unsigned long long)seed_lo,
		       first[0].offered_load);
		print_table(first, n_pol);
	}
done:
	if (log) {
		/* the runs did not all end: no partial log under its name */
		fclose(log);
		unlink(log_tmp);
	}
	for (int k = 0; k < n_run; k++)
		colloc_sim_result_fini(&res[k]);
	free(res);
	free(first);
	colloc_trace_destroy(tr);
	colloc_interference_destroy(im);
	colloc_sim_nodes_destroy(nodes);
	return rc;
}
