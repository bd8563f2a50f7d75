/*
 * colloc/sim_report.h — machine-readable outputs of simulator runs: a CSV
 * summary (one row per policy) and the data and gnuplot script behind the
 * pictures `colloc sim --plot DIR` draws (GPU utilization over time, CDF of
 * job completion times).
 *
 * These functions write files or a stream the caller names; they never run
 * programs (the CLI runs gnuplot on the script).
 */
#ifndef COLLOC_SIM_REPORT_H
#define COLLOC_SIM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "colloc/error.h"
#include "colloc/sim.h"

/*
 * The metrics of a result as one table, for summaries over seeds: name
 * i (0, 1, ...; "makespan_s"), NULL past the last, and its value in r.
 */
const char *colloc_sim_metric_name(int i);
double colloc_sim_metric(const struct colloc_sim_result *r, int i);

/* Mean and sample standard deviation (0 for one run) of metric i over
 * r[0..n). */
void colloc_sim_metric_stats(const struct colloc_sim_result *r, int n, int i,
			     double *mean, double *sd);

/*
 * Summaries over seeds to f: header "policy,stat,METRIC..." and, for each
 * of n_policies policies whose n_seeds results are r[p * n_seeds ...],
 * a "mean" and an "sd" line. Returns 0 or -EIO.
 */
int colloc_sim_write_csv_stats(FILE *f, const struct colloc_sim_result *r, int n_policies,
			       int n_seeds);

/* Header and one line per result to f. Returns 0 or -EIO. */
int colloc_sim_write_csv(FILE *f, const struct colloc_sim_result *r, int n);

/*
 * The per-job log of one run, r's job_records (colloc_sim_opts), to f: with
 * header, first the line "policy,seed,job_id,kind,gpus,gpu_milli,submit_s,
 * start_s,end_s,wait_s,jct_s,alone_s,slowdown,outcome,shared,crashed,
 * need_bytes,true_bytes", then one line per job in trace order. slowdown
 * is jct_s / alone_s; the fields a job does not have (a failed job's
 * start, end, wait, JCT and slowdown) are empty. Returns 0 or -EIO.
 */
int colloc_sim_write_job_log(FILE *f, const struct colloc_sim_result *r, uint64_t seed,
			     bool header);

/*
 * Into directory dir (created if missing): summary.csv, util_POLICY.dat and
 * jct_POLICY.dat per result, and plots.gp, a gnuplot script that draws
 * util.svg and jct_cdf.svg from them when run in dir. title is printed on
 * the plots. Returns 0 or a negative errno with the path in diag.
 */
int colloc_sim_write_plots(const char *dir, const char *title,
			   const struct colloc_sim_result *r, int n,
			   struct colloc_diag *diag);

#endif
