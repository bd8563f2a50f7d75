/*
 * fit_perf.c — calibrate the step-time predictor's kernel efficiencies
 * (colloc/perf.h) on NeuSight's measured PyTorch kernels, and say how well
 * the rule fits next to the plain roofline measured on the same kernels.
 *
 *   build/fit_perf --data ../shared/data [--json]
 *
 * For each GPU of the kernel files that has a platform profile (matched by
 * the profile's "gpu" name), per kernel class: fit fixed_us and eta by
 * least squares on log time over the even rows, report the median |error|
 * on the odd rows (held out) beside the roofline's (eta 1, no fixed
 * latency, no shape effects). The GEMM shape constants (perf_int.h) are
 * searched over all GPUs together and printed for perf.c. With --json it
 * prints one line per profile: {"profile": ..., "eff": {...}}, which
 * tools/fit_perf.sh writes into data/platforms/.
 *
 * The kernel files are MIT-licensed data of sitar-lab/NeuSight (see
 * ../shared/data/perf/README.md); they are read where they are.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_fields.h"
#include "colloc/estimate.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "estimate/perf_int.h"

#define MAX_ROWS 20000
#define MAX_GPUS 16
#define MAX_FIELDS 32
#define LINE_MAX_BYTES 8192
/* A kernel's latency beyond its roofline time is a few microseconds of
 * launch-to-completion (an empty kernel) plus pipeline fill; the kernel
 * files hold few small kernels, so the fit is kept in that physical range
 * rather than letting it absorb shape effects of large ones. */
#define FIXED_US_MAX 5.0
/* Bandwidth efficiency for GPUs whose elementwise kernels were not
 * measured (NeuSight has none for H100): the built-in default. */
#define ETA_MEMORY_UNMEASURED 0.80

struct row {
	int gpu; /* index into gpus[] */
	double t_s; /* measured */
	double flops, bytes;
	double m, n, k, b; /* GEMM shape; rows for row kernels in m */
	double shape; /* GEMM shape efficiency under the constants tried */
};

struct gpu {
	char device[96];
	struct colloc_platform plat;
	bool have;
};

static struct gpu gpus[MAX_GPUS];
static int n_gpus;

/* Split one CSV line in place (double quotes, no embedded newlines). */

static int gpu_index(const char *device)
{
	for (int i = 0; i < n_gpus; i++)
		if (strcmp(gpus[i].device, device) == 0)
			return i;
	if (n_gpus == MAX_GPUS)
		return -1;
	snprintf(gpus[n_gpus].device, sizeof(gpus[n_gpus].device), "%s", device);
	return n_gpus++;
}

/* Bytes each elementwise op of elem.csv moves per element (fp32): binary
 * ops read two tensors; the "u" variants take a Python scalar. */
static double elem_bytes_per(const char *op)
{
	size_t n = strlen(op);

	if (n > 1 && op[n - 1] == 'u')
		return 8;
	if (strcmp(op, "add") == 0 || strcmp(op, "mul") == 0 || strcmp(op, "div") == 0 ||
	    strcmp(op, "pow") == 0)
		return 12;
	return 8;
}

static int read_class(const char *dir, const char *file, int cls, struct row *rows,
		      int cap)
{
	char path[4096], line[LINE_MAX_BYTES], hline[LINE_MAX_BYTES];
	char *hdr[MAX_FIELDS], *f[MAX_FIELDS];
	int nh, n = 0, cdev, clat, cb, cm, cn, ck, ch, cop;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/perf/neusight/kernels/%s", dir, file);
	fp = tool_csv_open(path, hline, sizeof(hline), hdr, MAX_FIELDS, &nh);
	if (!fp) {
		fprintf(stderr, "fit_perf: cannot read %s\n", path);
		return -1;
	}
	cdev = tool_csv_col(hdr, nh, "Device");
	clat = tool_csv_col(hdr, nh, "Latency");
	cop = tool_csv_col(hdr, nh, "OPName");
	cb = tool_csv_col(hdr, nh, "B");
	cm = tool_csv_col(hdr, nh, "M");
	cn = tool_csv_col(hdr, nh, "N");
	ck = tool_csv_col(hdr, nh, "K");
	ch = tool_csv_col(hdr, nh, "H");
	while (n < cap && fgets(line, sizeof(line), fp)) {
		int nf = tool_csv_split(line, f, MAX_FIELDS), g;
		struct row *r = &rows[n];

		if (nf < nh || cdev < 0 || clat < 0 || cb < 0)
			continue;
		g = gpu_index(f[cdev]);
		if (g < 0)
			continue;
		memset(r, 0, sizeof(*r));
		r->gpu = g;
		r->t_s = atof(f[clat]) * 1e-3;
		r->b = atof(f[cb]);
		if (cls == COLLOC_PERF_GEMM || cls == COLLOC_PERF_BMM) {
			if (cm < 0 || cn < 0 || ck < 0)
				continue;
			r->m = atof(f[cm]);
			r->n = atof(f[cn]);
			r->k = atof(f[ck]);
			if (cls ==
			    COLLOC_PERF_GEMM) { /* linear: batch dims fold into M */
				r->m *= r->b;
				r->b = 1;
			}
			r->flops = 2 * r->b * r->m * r->n * r->k;
			r->bytes = 4 * r->b * (r->m * r->k + r->k * r->n + r->m * r->n);
		} else {
			double el;

			if (ch < 0)
				continue;
			el = r->b * atof(f[ch]);
			r->m = r->b; /* rows */
			r->flops = el;
			r->bytes = cls == COLLOC_PERF_ELEM ? el * elem_bytes_per(f[cop])
							   : 8 * el;
		}
		if (r->t_s > 0 && r->flops > 0)
			n++;
	}
	fclose(fp);
	return n;
}

/* The predictor's own kernel rule (perf.c), with trial efficiencies. */
static double predict(const struct gpu *g, int cls, const struct row *r, double eta_c,
		      double eta_m, double fixed_us)
{
	struct colloc_platform p = g->plat;

	p.eff[cls].eta_compute = eta_c;
	p.eff[cls].eta_memory = eta_m;
	p.eff[cls].fixed_us = fixed_us;
	return colloc__kernel_time_s(&p, cls, COLLOC_PREC_FP32, false, r->flops, r->bytes,
				     cls <= COLLOC_PERF_BMM ? r->shape : 1);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n == 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct fit {
	double eta_c, eta_m, fixed_us, sse;
	double med_test, med_roof, p90_test;
	int n_train, n_test;
};

/* Grid least squares of log time over the even rows of GPU g. When
 * compute is true eta_c is fitted and eta_m given, else eta_m. */
static struct fit fit_gpu(int gi, int cls, struct row *rows, int n, double eta_m_given)
{
	const struct gpu *g = &gpus[gi];
	bool compute = cls <= COLLOC_PERF_BMM;
	struct fit best = {0};
	static double err[MAX_ROWS], roof[MAX_ROWS];
	int ne = 0;

	best.sse = INFINITY;
	for (int ie = 10; ie <= 100; ie++)
		for (int ifx = 0; ifx <= (int)(2 * FIXED_US_MAX); ifx++) {
			double eta = ie / 100.0, fx = ifx / 2.0;
			double sse = 0;
			int cnt = 0;

			for (int i = 0; i < n; i += 2) {
				double p, d;

				if (rows[i].gpu != gi)
					continue;
				p = compute ? predict(g, cls, &rows[i], eta, eta_m_given,
						      fx)
					    : predict(g, cls, &rows[i], 1, eta, fx);
				d = log(p / rows[i].t_s);
				sse += d * d;
				cnt++;
			}
			if (cnt && sse < best.sse) {
				best.sse = sse;
				best.eta_c = compute ? eta : 1;
				best.eta_m = compute ? eta_m_given : eta;
				best.fixed_us = fx;
				best.n_train = cnt;
			}
		}
	for (int i = 1; i < n; i += 2) {
		struct row rr;

		if (rows[i].gpu != gi)
			continue;
		rr = rows[i];
		err[ne] =
			fabs(predict(g, cls, &rr, best.eta_c, best.eta_m, best.fixed_us) /
				     rr.t_s -
			     1);
		rr.shape = 1;
		roof[ne] = fabs(predict(g, cls, &rr, 1, 1, 0) / rr.t_s - 1);
		ne++;
	}
	best.n_test = ne;
	best.med_test = median(err, ne);
	best.p90_test = ne ? err[(int)(0.9 * (ne - 1))] : (double)NAN;
	best.med_roof = median(roof, ne);
	return best;
}

static void set_shape(struct row *rows, int n, int cls,
		      const struct colloc__gemm_shape *c)
{
	for (int i = 0; i < n; i++)
		rows[i].shape =
			cls <= COLLOC_PERF_BMM
				? colloc__gemm_shape_eff(
					  rows[i].m, rows[i].n, rows[i].k, rows[i].b,
					  gpus[rows[i].gpu].plat.sm_count, c, NULL)
				: 1;
}

/* Match NeuSight's device names to bundled profiles by the "gpu" field. */
static void find_profiles(void)
{
	char *names[256];
	int n = colloc_platform_list(names, 256);

	for (int k = 0; k < n && k < 256; k++) {
		struct colloc_platform p;
		struct colloc_diag d = {{0}};

		if (colloc_platform_load(names[k], &p, &d) == 0 && p.fp32_tflops > 0)
			for (int g = 0; g < n_gpus; g++)
				if (!gpus[g].have && strcmp(p.gpu, gpus[g].device) == 0) {
					gpus[g].plat = p;
					gpus[g].have = true;
				}
		free(names[k]);
	}
}

int main(int argc, char **argv)
{
	static const char *const files[COLLOC_PERF_CLASS_COUNT_] = {
		"linear.csv", "bmm.csv", "elem.csv", "softmax.csv", "ln.csv"};
	static struct row rows[COLLOC_PERF_CLASS_COUNT_][MAX_ROWS];
	static struct fit fits[COLLOC_PERF_CLASS_COUNT_][MAX_GPUS];
	int nrows[COLLOC_PERF_CLASS_COUNT_];
	const char *dir = NULL;
	bool json = false, search = false;
	struct colloc__gemm_shape shape = colloc__gemm_shape_fitted;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--search-shape") == 0)
			search = true;
		else {
			fprintf(stderr,
				"usage: fit_perf --data DIR [--json] [--search-shape]\n");
			return 2;
		}
	}
	if (!dir) {
		fprintf(stderr, "usage: fit_perf --data DIR (the shared data folder)\n");
		return 2;
	}
	for (int c = 0; c < COLLOC_PERF_CLASS_COUNT_; c++) {
		nrows[c] = read_class(dir, files[c], c, rows[c], MAX_ROWS);
		if (nrows[c] < 0) {
			fprintf(stderr,
				"fit_perf: NeuSight kernels not found under %s; "
				"skipped\n",
				dir);
			return 0;
		}
	}
	find_profiles();

	if (search) { /* GEMM shape constants over all GPUs and both classes */
		static const double isat[] = {16, 21.3, 24, 32, 42.7, 64};
		static const double khalf[] = {0, 8, 16, 24, 32, 48, 64, 96};
		double best = INFINITY;

		for (size_t a = 0; a < sizeof(isat) / sizeof(isat[0]); a++)
			for (size_t b = 0; b < sizeof(khalf) / sizeof(khalf[0]); b++) {
				struct colloc__gemm_shape c = {isat[a], khalf[b]};
				double sse = 0;

				for (int cls = 0; cls <= COLLOC_PERF_BMM; cls++) {
					set_shape(rows[cls], nrows[cls], cls, &c);
					for (int g = 0; g < n_gpus; g++)
						if (gpus[g].have)
							sse += fit_gpu(g, cls, rows[cls],
								       nrows[cls], 0.8)
								       .sse;
				}
				fprintf(stderr,
					"intensity_sat %5.1f k_half %3.0f: sse %.2f\n",
					c.intensity_sat, c.k_half, sse);
				if (sse < best) {
					best = sse;
					shape = c;
				}
			}
		printf("best GEMM shape constants: intensity_sat %.1f, k_half %.0f "
		       "(compiled in: %.1f, %.0f)\n",
		       shape.intensity_sat, shape.k_half,
		       colloc__gemm_shape_fitted.intensity_sat,
		       colloc__gemm_shape_fitted.k_half);
	}

	/* memory-bound classes first: GEMMs take the GPU's elementwise
	 * bandwidth as their memory term */
	for (int cls = COLLOC_PERF_CLASS_COUNT_ - 1; cls >= 0; cls--) {
		set_shape(rows[cls], nrows[cls], cls, &shape);
		for (int g = 0; g < n_gpus; g++)
			if (gpus[g].have)
				fits[cls][g] =
					fit_gpu(g, cls, rows[cls], nrows[cls],
						fits[COLLOC_PERF_ELEM][g].n_train
							? fits[COLLOC_PERF_ELEM][g].eta_m
							: ETA_MEMORY_UNMEASURED);
	}
	if (json) {
		for (int g = 0; g < n_gpus; g++) {
			if (!gpus[g].have)
				continue;
			int first = 1;

			printf("{\"profile\": \"%s\", \"device\": \"%s\", \"eff\": {",
			       gpus[g].plat.name, gpus[g].device);
			for (int cls = 0; cls < COLLOC_PERF_CLASS_COUNT_; cls++) {
				if (!fits[cls][g].n_train)
					continue; /* not measured: defaults apply */
				printf("%s\"%s\": {\"eta_compute\": %.2f, "
				       "\"eta_memory\": %.2f, "
				       "\"fixed_us\": %.1f}",
				       first ? "" : ", ", colloc_perf_class_name(cls),
				       fits[cls][g].eta_c, fits[cls][g].eta_m,
				       fits[cls][g].fixed_us);
				first = 0;
			}
			printf("}}\n");
		}
		return 0;
	}
	printf("kernel-time fit on NeuSight's measured kernels (fp32), median |error| on "
	       "held-out rows\n");
	printf("%-24s %-8s %6s %6s %6s %8s %7s %7s %7s\n", "GPU", "class", "eta_c",
	       "eta_m", "fix_us", "n_test", "ours", "p90", "roofln");
	for (int g = 0; g < n_gpus; g++) {
		if (!gpus[g].have) {
			printf("%-24s (no platform profile with this gpu name: "
			       "skipped)\n",
			       gpus[g].device);
			continue;
		}
		for (int cls = 0; cls < COLLOC_PERF_CLASS_COUNT_; cls++) {
			const struct fit *f = &fits[cls][g];

			if (!f->n_train) {
				printf("%-24s %-8s (no measured kernels: built-in "
				       "default)\n",
				       gpus[g].device, colloc_perf_class_name(cls));
				continue;
			}
			printf("%-24s %-8s %6.2f %6.2f %6.1f %8d %6.1f%% %6.1f%% "
			       "%6.1f%%\n",
			       gpus[g].device, colloc_perf_class_name(cls), f->eta_c,
			       f->eta_m, f->fixed_us, f->n_test, 100 * f->med_test,
			       100 * f->p90_test, 100 * f->med_roof);
		}
	}
	return 0;
}
