/*
 * report.c — CSV and plot files of simulator results (see
 * colloc/sim_report.h).
 */
#include "colloc/sim_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The metrics that summaries over seeds report, in order. */
static const char *const metric_names[] = {
	"jobs",
	"finished",
	"failed",
	"makespan_s",
	"mean_jct_s",
	"median_jct_s",
	"p99_jct_s",
	"mean_wait_s",
	"median_wait_s",
	"p99_wait_s",
	"gpu_util",
	"mem_util",
	"energy_j",
	"alloc_frac",
	"useful_work",
	"mean_jct_all_s",
	"median_jct_all_s",
	"p99_jct_all_s",
	"oom_per_1k_jobs",
	"shared_jobs",
	"oom_crashes",
	"recoveries",
	"jobs_lost",
	"scheduling_passes",
	"offered_load",
	"sim_wall_s",
};
#define N_METRICS (int)(sizeof(metric_names) / sizeof(metric_names[0]))

const char *colloc_sim_metric_name(int i)
{
	return i >= 0 && i < N_METRICS ? metric_names[i] : NULL;
}

double colloc_sim_metric(const struct colloc_sim_result *r, int i)
{
	const double v[] = {
		(double)r->jobs,
		(double)r->finished,
		(double)r->failed,
		r->makespan_s,
		r->mean_jct_s,
		r->median_jct_s,
		r->p99_jct_s,
		r->mean_wait_s,
		r->median_wait_s,
		r->p99_wait_s,
		r->gpu_util,
		r->mem_util,
		r->energy_j,
		r->alloc_frac,
		r->useful_work,
		r->mean_jct_all_s,
		r->median_jct_all_s,
		r->p99_jct_all_s,
		r->oom_per_1k_jobs,
		(double)r->shared_jobs,
		(double)r->oom_crashes,
		(double)r->recoveries,
		(double)r->jobs_lost,
		(double)r->passes,
		r->offered_load,
		r->sim_wall_s,
	};
	_Static_assert(sizeof(v) / sizeof(v[0]) == N_METRICS, "one value per name");

	return i >= 0 && i < N_METRICS ? v[i] : (double)NAN;
}

void colloc_sim_metric_stats(const struct colloc_sim_result *r, int n, int i,
			     double *mean, double *sd)
{
	double s = 0, q = 0;

	for (int k = 0; k < n; k++)
		s += colloc_sim_metric(&r[k], i);
	*mean = n > 0 ? s / n : (double)NAN;
	for (int k = 0; k < n; k++) {
		double d = colloc_sim_metric(&r[k], i) - *mean;

		q += d * d;
	}
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

int colloc_sim_write_csv_stats(FILE *f, const struct colloc_sim_result *r, int n_policies,
			       int n_seeds)
{
	fprintf(f, "policy,stat");
	for (int i = 0; i < N_METRICS; i++)
		fprintf(f, ",%s", metric_names[i]);
	fprintf(f, "\n");
	for (int p = 0; p < n_policies; p++) {
		const struct colloc_sim_result *x = &r[(size_t)p * (size_t)n_seeds];
		double m[N_METRICS], sd[N_METRICS];

		for (int i = 0; i < N_METRICS; i++)
			colloc_sim_metric_stats(x, n_seeds, i, &m[i], &sd[i]);
		for (int which = 0; which < 2; which++) {
			fprintf(f, "%s,%s", colloc_policy_name(x->policy),
				which ? "sd" : "mean");
			for (int i = 0; i < N_METRICS; i++)
				fprintf(f, ",%.10g", which ? sd[i] : m[i]);
			fprintf(f, "\n");
		}
	}
	return ferror(f) ? -EIO : 0;
}

int colloc_sim_write_csv(FILE *f, const struct colloc_sim_result *r, int n)
{
	fprintf(f, "policy,jobs,finished,failed,makespan_s,mean_jct_s,median_jct_s,p99_"
		   "jct_s,"
		   "mean_wait_s,median_wait_s,p99_wait_s,gpu_util,mem_util,energy_j,"
		   "shared_jobs,"
		   "oom_crashes,recoveries,jobs_lost,sim_wall_s\n");
	for (int k = 0; k < n; k++) {
		const struct colloc_sim_result *x = &r[k];

		fprintf(f,
			"%s,%zu,%zu,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.6f,%.6f,%."
			"1f,%zu,%zu,"
			"%zu,%zu,%.3f\n",
			colloc_policy_name(x->policy), x->jobs, x->finished, x->failed,
			x->makespan_s, x->mean_jct_s, x->median_jct_s, x->p99_jct_s,
			x->mean_wait_s, x->median_wait_s, x->p99_wait_s, x->gpu_util,
			x->mem_util, x->energy_j, x->shared_jobs, x->oom_crashes,
			x->recoveries, x->jobs_lost, x->sim_wall_s);
	}
	return ferror(f) ? -EIO : 0;
}

int colloc_sim_write_job_log(FILE *f, const struct colloc_sim_result *r, uint64_t seed,
			     bool header)
{
	if (header)
		fprintf(f,
			"policy,seed,job_id,kind,gpus,gpu_milli,submit_s,start_s,end_s,"
			"wait_s,jct_s,alone_s,slowdown,outcome,shared,crashed,"
			"need_bytes,true_bytes\n");
	for (size_t k = 0; k < r->n_job_records; k++) {
		const struct colloc_sim_job_record *j = &r->job_records[k];

		fprintf(f, "%s,%llu,%llu,%s,%d,%d,%.3f,", colloc_policy_name(r->policy),
			(unsigned long long)seed, (unsigned long long)j->id, j->kind,
			j->n_gpus, j->gpu_milli, j->submit_s);
		if (j->start_s >= 0)
			fprintf(f, "%.3f,", j->start_s);
		else
			fputs(",", f);
		if (j->end_s >= 0)
			fprintf(f, "%.3f,%.3f,%.3f,%.3f,%.4f,", j->end_s,
				j->start_s - j->submit_s, j->end_s - j->submit_s,
				j->alone_s,
				j->alone_s > 0 ? (j->end_s - j->submit_s) / j->alone_s
					       : 0);
		else
			fprintf(f, ",,,%.3f,,", j->alone_s);
		fprintf(f, "%s,%d,%d,%llu,%llu\n", colloc_sim_outcome_name(j->outcome),
			j->shared, j->crashed, (unsigned long long)j->need_bytes,
			(unsigned long long)j->true_bytes);
	}
	return ferror(f) ? -EIO : 0;
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
	int w = snprintf(path, len, "%s/%s", dir, name);

	if (w < 0 || (size_t)w >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(path, "w");
}

static int close_checked(FILE *f)
{
	int bad = ferror(f);

	return fclose(f) != 0 || bad ? -EIO : 0;
}

int colloc_sim_write_plots(const char *dir, const char *title,
			   const struct colloc_sim_result *r, int n,
			   struct colloc_diag *diag)
{
	char path[4096], name[96];
	FILE *f;
	int rc;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return colloc_diag_set(diag, -errno, "%s: %s", dir, strerror(errno));
	if (!(f = open_in(dir, "summary.csv", path, sizeof(path))))
		return colloc_diag_set(diag, -errno, "%s: %s", path, strerror(errno));
	colloc_sim_write_csv(f, r, n);
	if ((rc = close_checked(f)))
		return colloc_diag_set(diag, rc, "%s: write error", path);
	for (int k = 0; k < n; k++) {
		const struct colloc_sim_result *x = &r[k];

		snprintf(name, sizeof(name), "util_%s.dat",
			 colloc_policy_name(x->policy));
		if (!(f = open_in(dir, name, path, sizeof(path))))
			return colloc_diag_set(diag, -errno, "%s: %s", path,
					       strerror(errno));
		fprintf(f, "# time_h gpu_util\n");
		for (size_t i = 0; i < x->n_series; i++)
			fprintf(f, "%.4f %.5f\n", x->series_t_s[i] / 3600.0,
				x->series_util[i]);
		if ((rc = close_checked(f)))
			return colloc_diag_set(diag, rc, "%s: write error", path);
		snprintf(name, sizeof(name), "jct_%s.dat", colloc_policy_name(x->policy));
		if (!(f = open_in(dir, name, path, sizeof(path))))
			return colloc_diag_set(diag, -errno, "%s: %s", path,
					       strerror(errno));
		fprintf(f, "# jct_h fraction_of_jobs\n");
		for (size_t i = 0; i < x->finished; i++)
			fprintf(f, "%.5f %.6f\n", x->jct_s[i] / 3600.0,
				(double)(i + 1) / (double)x->finished);
		if ((rc = close_checked(f)))
			return colloc_diag_set(diag, rc, "%s: write error", path);
	}
	if (!(f = open_in(dir, "plots.gp", path, sizeof(path))))
		return colloc_diag_set(diag, -errno, "%s: %s", path, strerror(errno));
	fprintf(f, "# gnuplot script written by colloc sim; run it in this directory.\n"
		   "set terminal svg size 900,450 dynamic font 'sans,12'\n"
		   "set key outside right\nset grid\n");
	fprintf(f,
		"set output 'util.svg'\nset title \"GPU utilization over time: %s\" "
		"noenhanced\n"
		"set xlabel 'time (hours)'\nset ylabel 'GPU utilization (0-1)'\n"
		"set yrange [0:1]\nplot ",
		title);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s'util_%s.dat' using 1:2 with steps lw 2 title '%s'",
			k ? ", " : "", colloc_policy_name(r[k].policy),
			colloc_policy_name(r[k].policy));
	fprintf(f,
		"\nset output 'jct_cdf.svg'\nset title \"Job completion time CDF: %s\" "
		"noenhanced\nset xlabel 'job completion time (hours, log scale)'\n"
		"set ylabel 'fraction of jobs'\nset logscale x\nplot ",
		title);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s'jct_%s.dat' using 1:2 with lines lw 2 title '%s'",
			k ? ", " : "", colloc_policy_name(r[k].policy),
			colloc_policy_name(r[k].policy));
	fprintf(f, "\n");
	if ((rc = close_checked(f)))
		return colloc_diag_set(diag, rc, "%s: write error", path);
	return 0;
}
