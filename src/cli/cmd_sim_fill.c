/*
 * cmd_sim_fill.c — `colloc sim --fill`: the FGD paper's fill experiment
 * (colloc/sim_fill.h) over several seeds, printed as mean ± sd per policy.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sim_int.h"
#include "colloc/sim_fill.h"

/* Mean and sample standard deviation of x[0..n). */
static void mean_sd(const double *x, int n, double *mean, double *sd)
{
	double s = 0, q = 0;

	for (int i = 0; i < n; i++)
		s += x[i];
	*mean = n ? s / n : (double)NAN;
	for (int i = 0; i < n; i++)
		q += (x[i] - *mean) * (x[i] - *mean);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* The level nearest the end of every run: the request reached. */
static int last_level(const struct colloc_sim_fill_result *r, int n)
{
	int k = COLLOC_SIM_FILL_LEVELS;

	for (int i = 0; i < n; i++)
		if (r[i].n_levels < k)
			k = r[i].n_levels;
	return k - 1;
}

static void stat_at(const struct colloc_sim_fill_result *r, int n, int level, double *m,
		    double *sd)
{
	double x[CLI_SIM_MAX_SEEDS];

	for (int i = 0; i < n; i++)
		x[i] = level >= 0 && level < r[i].n_levels ? r[i].alloc_pct[level]
							   : (double)NAN;
	mean_sd(x, n, m, sd);
}

static void add_stat(cJSON *o, const char *key, double m, double sd)
{
	cJSON *s = cJSON_AddObjectToObject(o, key);

	cJSON_AddNumberToObject(s, "mean", m);
	cJSON_AddNumberToObject(s, "sd", sd);
}

int cli_sim_fill(const struct cli_sim_fill_args *a)
{
	struct colloc_diag diag = {{0}};
	struct colloc_sim_fill_result *res;
	int n_seeds = (int)(a->seed_hi - a->seed_lo + 1), rc = CLI_OK;
	cJSON *root = NULL, *arr = NULL;

	res = calloc((size_t)a->n_policies * (size_t)n_seeds, sizeof(*res));
	if (!res) {
		cli_error("out of memory");
		return CLI_ERROR;
	}
	for (int p = 0; p < a->n_policies; p++)
		for (int s = 0; s < n_seeds; s++) {
			struct colloc_sim_fill_opts o = a->opts;

			o.rule = a->rules[p];
			o.policy = a->policies[p];
			o.seed = a->seed_lo + (uint64_t)s;
			if (colloc_sim_fill(a->trace, a->nodes, &o, &res[p * n_seeds + s],
					    &diag)) {
				cli_error("%s", diag.msg);
				free(res);
				return CLI_ERROR;
			}
		}
	if (a->json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "mode", "fill");
		cJSON_AddStringToObject(root, "trace", a->trace_name);
		cJSON_AddStringToObject(root, "cluster", a->cluster_name);
		cJSON_AddNumberToObject(root, "nodes", (double)a->nodes->n);
		cJSON_AddNumberToObject(root, "gpus", (double)a->nodes->n_gpus);
		cJSON_AddNumberToObject(root, "seed_first", (double)a->seed_lo);
		cJSON_AddNumberToObject(root, "seed_last", (double)a->seed_hi);
		cJSON_AddNumberToObject(root, "fill_to", a->opts.tune_ratio);
		cJSON_AddBoolToObject(root, "shuffled", a->opts.shuffle);
		arr = cJSON_AddArrayToObject(root, "policies");
	} else {
		printf("fill: %s on %s (%zu nodes, %zu GPUs); seeds %llu-%llu; pods "
		       "arrive %s "
		       "until their GPU request is %.0f%% of the cluster's GPUs\n\n",
		       a->trace_name, a->cluster_name, a->nodes->n, a->nodes->n_gpus,
		       (unsigned long long)a->seed_lo, (unsigned long long)a->seed_hi,
		       a->opts.shuffle ? "shuffled" : "in trace order",
		       100 * a->opts.tune_ratio);
		printf("GPU allocation (%% of the cluster's GPUs, mean ± sd over seeds) "
		       "when "
		       "the arrived GPU request is 50%%, 90%%, 100%% of the cluster and "
		       "at "
		       "the end:\n\n");
		printf("%-16s %13s %13s %13s %13s %10s %8s %8s\n", "policy", "at 50%",
		       "at 90%", "at 100%", "at end", "failed", "frag%", "held%");
	}
	for (int p = 0; p < a->n_policies; p++) {
		const struct colloc_sim_fill_result *r =
			&res[(size_t)p * (size_t)n_seeds];
		int end = last_level(r, n_seeds);
		double m[4], sd[4], failed[CLI_SIM_MAX_SEEDS], frag[CLI_SIM_MAX_SEEDS],
			held[CLI_SIM_MAX_SEEDS], fm, fsd, gm, gsd, hm, hsd;
		const int lv[4] = {50, 90, 100, end};

		for (int k = 0; k < 4; k++)
			stat_at(r, n_seeds, lv[k], &m[k], &sd[k]);
		for (int s = 0; s < n_seeds; s++) {
			failed[s] = (double)r[s].failed_gpu_pods;
			frag[s] = r[s].frag_pct;
			held[s] = 100.0 * (double)r[s].held_milli /
				  (double)r[s].cluster_milli;
		}
		mean_sd(failed, n_seeds, &fm, &fsd);
		mean_sd(frag, n_seeds, &gm, &gsd);
		mean_sd(held, n_seeds, &hm, &hsd);
		if (!a->json) {
			char c[4][32];

			for (int k = 0; k < 4; k++)
				snprintf(c[k], sizeof(c[k]), "%.2f ± %.2f", m[k], sd[k]);
			printf("%-16s %13s %13s %13s %13s %10.0f %8.2f %8.2f\n",
			       colloc_sim_fill_name(a->rules[p], a->policies[p]), c[0],
			       c[1], c[2], c[3], fm, gm, hm);
			continue;
		}
		{
			cJSON *o = cJSON_CreateObject(), *seeds, *cv;

			cJSON_AddStringToObject(
				o, "policy",
				colloc_sim_fill_name(a->rules[p], a->policies[p]));
			add_stat(o, "alloc_pct_at_50", m[0], sd[0]);
			add_stat(o, "alloc_pct_at_90", m[1], sd[1]);
			add_stat(o, "alloc_pct_at_100", m[2], sd[2]);
			cJSON_AddNumberToObject(o, "end_level", end);
			add_stat(o, "alloc_pct_at_end", m[3], sd[3]);
			add_stat(o, "failed_gpu_pods", fm, fsd);
			add_stat(o, "frag_pct", gm, gsd);
			add_stat(o, "held_pct", hm, hsd);
			cv = cJSON_AddArrayToObject(o, "alloc_pct_mean");
			for (int k = 0; k <= end; k++) {
				double cm, csd;

				stat_at(r, n_seeds, k, &cm, &csd);
				cJSON_AddItemToArray(cv, cJSON_CreateNumber(cm));
			}
			seeds = cJSON_AddArrayToObject(o, "seeds");
			for (int s = 0; s < n_seeds; s++) {
				cJSON *x = cJSON_CreateObject();

				cJSON_AddNumberToObject(
					x, "seed", (double)(a->seed_lo + (uint64_t)s));
				cJSON_AddNumberToObject(x, "pods", (double)r[s].pods);
				cJSON_AddNumberToObject(x, "gpu_pods",
							(double)r[s].gpu_pods);
				cJSON_AddNumberToObject(x, "failed_gpu_pods",
							(double)r[s].failed_gpu_pods);
				cJSON_AddNumberToObject(x, "alloc_pct_at_100",
							r[s].n_levels > 100
								? r[s].alloc_pct[100]
								: (double)NAN);
				cJSON_AddNumberToObject(x, "alloc_milli",
							(double)r[s].alloc_milli);
				cJSON_AddNumberToObject(x, "arrived_milli",
							(double)r[s].arrived_milli);
				cJSON_AddNumberToObject(x, "sim_wall_s", r[s].wall_s);
				cJSON_AddItemToArray(seeds, x);
			}
			cJSON_AddItemToArray(arr, o);
		}
	}
	if (a->json) {
		char *text = cJSON_PrintUnformatted(root);

		cJSON_Delete(root);
		if (!text)
			rc = CLI_ERROR;
		else
			puts(text);
		free(text);
	} else {
		printf("\nfailed: GPU pods that found no place (mean); frag%%: idle "
		       "share on "
		       "partly used GPUs at the end; held%%: GPU share held (whole GPUs "
		       "for "
		       "exclusive)\n");
	}
	free(res);
	return rc;
}
