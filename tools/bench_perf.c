/*
 * bench_perf.c — accuracy of the step-time and utilization predictor
 * (colloc/perf.h) against public measurements, each printed next to the
 * baselines measured or published on the same rows.
 *
 *   build/bench_perf --data data --shared ../shared/data
 *
 * 1. NeuSight (data/measurements/perf/train_e2e_dev.csv, MIT): forward +
 *    backward time of BERT-large, GPT-2 large, GPT-3 XL / 2.7B, OPT-1.3B on
 *    A100-80GB and V100, fp32, beside the roofline, Habitat, NeuSight and
 *    Li et al. predictions published with it. Graphs: data/bench/perf/.
 * 2. Pollux (data/measurements/perf/single_gpu_step_time.csv, Apache-2.0):
 *    step time over a batch sweep (ResNet-50 ImageNet, ResNet-18 CIFAR-10),
 *    beside a constant-median baseline.
 * 3. Gavel (shared/data/gavel/simulation_throughputs.json, MIT): isolated
 *    throughput of the job types with zoo twins on K80, P100, V100.
 * 4. GPUMemNet's 3,000 MLP runs (shared/data/perf/gpumemnet-mlp, no licence:
 *    read in place, skipped when absent): utilization.gpu and SM activity,
 *    MAE in points and RMSLE on percent, beside a constant-median baseline.
 *    Each MLP graph is built here from its layer list.
 * 6. This project's H200 runs (data/measurements/perf/h200-*): step time
 *    and utilization of zoo models and GPUMemNet-style MLPs, with colloc's
 *    default host costs and with those measured on the same machine.
 *
 * It never fails on numbers; it exits 1 only when it cannot run at all.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csv_fields.h"
#include "colloc/cost.h"
#include "colloc/estimate.h"
#include "colloc/onnx.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "colloc/shape.h"
#include "onnx_builder.h"

#define LINE_MAX_BYTES 16384
#define MAX_FIELDS 32
#define MAX_ROWS 4096

static const char *data_dir = "data", *shared_dir = "../shared/data";
/* --host-scale: the GPUMemNet host's speed relative to the CPU the host
 * costs were measured on (a sensitivity check, not a fit). */
static double host_scale = 1.0;

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double *c;
	double m;

	if (n <= 0)
		return (double)NAN;
	c = malloc((size_t)n * sizeof(*c));
	if (!c)
		return (double)NAN;
	memcpy(c, v, (size_t)n * sizeof(*c));
	qsort(c, (size_t)n, sizeof(*c), cmp_d);
	m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
	free(c);
	return m;
}

static double rel_err(double pred, double meas)
{
	return fabs(pred / meas - 1);
}

/* Predict one graph file at batch (and seq when > 0). */
static int predict_file(const char *path, int64_t batch, int64_t seq,
			const char *platform, int loss, int optimizer, int precision,
			struct colloc_perf *out)
{
	struct colloc_graph *g = NULL;
	struct colloc_platform p;
	struct colloc_diag diag = {{0}};
	struct colloc_binding dim = {"seq", seq};
	struct colloc_bind_opts bind = {batch, &dim, seq > 0 ? 1 : 0};
	struct colloc_perf_opts o;
	int rc;

	if ((rc = colloc_platform_load(platform, &p, &diag)) ||
	    (rc = colloc_onnx_load_file(path, NULL, &g, &diag)) ||
	    (rc = colloc_graph_infer(g, &bind, &diag))) {
		fprintf(stderr, "bench_perf: %s: %s\n", path, diag.msg);
		colloc_graph_destroy(g);
		return rc;
	}
	colloc_graph_cost(g, NULL);
	colloc_perf_opts_init(&o);
	o.platform = &p;
	o.batch = batch;
	o.loss = loss;
	o.optimizer = optimizer;
	o.precision = precision;
	o.input_on_host = false;
	rc = colloc_perf_predict(g, &o, out, &diag);
	if (rc)
		fprintf(stderr, "bench_perf: %s: %s\n", path, diag.msg);
	colloc_graph_destroy(g);
	return rc;
}

/* --- 1. NeuSight ------------------------------------------------------ */

static const char *neusight_platform(const char *device)
{
	if (strstr(device, "A100_80GB"))
		return "a100-80gb-cu124-torch26";
	if (strstr(device, "V100"))
		return "v100-32gb-cu124-torch26";
	return NULL;
}

static void bench_neusight(void)
{
	static const char *const cols[] = {"roofline_ms", "habitat_ms", "neusight_ms",
					   "li_micro_ms"};
	char path[4096], hline[LINE_MAX_BYTES], line[LINE_MAX_BYTES];
	char *hdr[MAX_FIELDS], *f[MAX_FIELDS];
	double ours[64], base[4][64];
	int nh, n = 0, cm, cs, cb, cd, cmeas, cb_[4];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/measurements/perf/train_e2e_dev.csv", data_dir);
	fp = tool_csv_open(path, hline, LINE_MAX_BYTES, hdr, MAX_FIELDS, &nh);
	if (!fp) {
		printf("1. NeuSight: %s not found; skipped\n\n", path);
		return;
	}
	cm = tool_csv_col(hdr, nh, "model");
	cs = tool_csv_col(hdr, nh, "seqlen");
	cb = tool_csv_col(hdr, nh, "batch");
	cd = tool_csv_col(hdr, nh, "device");
	cmeas = tool_csv_col(hdr, nh, "measured_ms");
	for (int i = 0; i < 4; i++)
		cb_[i] = tool_csv_col(hdr, nh, cols[i]);
	printf("1. Step time (forward + backward, fp32) against NeuSight's measured "
	       "rows\n");
	printf("%-12s %5s %3s %-22s %9s %9s %7s | %7s %7s %7s %7s\n", "model", "seq",
	       "bs", "GPU", "measured", "colloc", "err", "roofln", "habitat", "neusght",
	       "li");
	while (n < 64 && fgets(line, sizeof(line), fp)) {
		struct colloc_perf p;
		const char *plat;
		double meas, pred;
		char graph[4096];

		if (tool_csv_split(line, f, MAX_FIELDS) < nh || cm < 0 || cmeas < 0)
			continue;
		plat = neusight_platform(f[cd]);
		snprintf(graph, sizeof(graph), "%s/bench/perf/%s.onnx", data_dir, f[cm]);
		if (!plat || predict_file(graph, atoll(f[cb]), atoll(f[cs]), plat,
					  COLLOC_LOSS_CROSS_ENTROPY, COLLOC_OPT_SGD,
					  COLLOC_PREC_FP32, &p)) {
			printf("%-12s %5s %3s %-22.22s   (no graph or platform: "
			       "skipped)\n",
			       f[cm], f[cs], f[cb], f[cd]);
			continue;
		}
		meas = atof(f[cmeas]);
		/* NeuSight times forward + backward with CUDA events; the
		 * optimizer step is not part of it */
		pred = p.phase_ms[COLLOC_PERF_FORWARD] + p.phase_ms[COLLOC_PERF_BACKWARD];
		ours[n] = rel_err(pred, meas);
		printf("%-12s %5s %3s %-22.22s %9.1f %9.1f %6.1f%% |", f[cm], f[cs],
		       f[cb], f[cd], meas, pred, 100 * ours[n]);
		for (int i = 0; i < 4; i++) {
			base[i][n] = cb_[i] >= 0 ? rel_err(atof(f[cb_[i]]), meas)
						 : (double)NAN;
			printf(" %6.1f%%", 100 * base[i][n]);
		}
		printf("\n");
		n++;
	}
	fclose(fp);
	printf("median |error| over %d rows: colloc %.1f%% | roofline %.1f%%, Habitat "
	       "%.1f%%, "
	       "NeuSight %.1f%%, Li %.1f%%  (target <= 10%%)\n\n",
	       n, 100 * median(ours, n), 100 * median(base[0], n),
	       100 * median(base[1], n), 100 * median(base[2], n),
	       100 * median(base[3], n));
}

/* --- 2. Pollux -------------------------------------------------------- */

static void bench_pollux(const char *platform)
{
	/* adaptdl's osdi21-artifact examples: ImageNet ResNet-50 under apex
	 * O1 (fp16 autocast), CIFAR ResNet-18 and BERT SQuAD in fp32 */
	static const struct {
		const char *model, *graph;
		int64_t seq;
		int prec, opt;
	} twins[] = {
		{"imagenet_resnet50", "zoo/resnet50.onnx", 0, COLLOC_PREC_AMP_FP16,
		 COLLOC_OPT_MOMENTUM},
		{"cifar10_resnet18", "bench/perf/resnet18_cifar.onnx", 0,
		 COLLOC_PREC_FP32, COLLOC_OPT_MOMENTUM},
		{"bert", "bench/perf/bert_base_squad.onnx", 384, COLLOC_PREC_FP32,
		 COLLOC_OPT_ADAMW},
	};
	char path[4096], hline[LINE_MAX_BYTES], line[LINE_MAX_BYTES];
	char *hdr[MAX_FIELDS], *f[MAX_FIELDS];
	double err[MAX_ROWS], meas_v[MAX_ROWS], pred_v[MAX_ROWS];
	int nh, n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/measurements/perf/single_gpu_step_time.csv",
		 data_dir);
	fp = tool_csv_open(path, hline, LINE_MAX_BYTES, hdr, MAX_FIELDS, &nh);
	if (!fp) {
		printf("2. Pollux: %s not found; skipped\n\n", path);
		return;
	}
	printf("2. Step time over a batch sweep against Pollux's single-GPU runs "
	       "(platform %s)\n",
	       platform);
	printf("%-20s %6s %10s %10s %7s\n", "model", "batch", "measured", "colloc",
	       "err");
	while (n < MAX_ROWS && fgets(line, sizeof(line), fp)) {
		struct colloc_perf p;
		char graph[4096];
		int t = -1;

		if (tool_csv_split(line, f, MAX_FIELDS) < 3)
			continue;
		for (size_t i = 0; i < sizeof(twins) / sizeof(twins[0]); i++)
			if (strcmp(f[0], twins[i].model) == 0)
				t = (int)i;
		if (t < 0)
			continue;
		snprintf(graph, sizeof(graph), "%s/%s", data_dir, twins[t].graph);
		if (predict_file(graph, atoll(f[1]), twins[t].seq, platform,
				 COLLOC_LOSS_CROSS_ENTROPY, twins[t].opt, twins[t].prec,
				 &p))
			continue;
		meas_v[n] = atof(f[2]) * 1e3;
		pred_v[n] = p.step_ms;
		err[n] = rel_err(pred_v[n], meas_v[n]);
		printf("%-20s %6s %8.1f ms %8.1f ms %6.1f%%\n", f[0], f[1], meas_v[n],
		       pred_v[n], 100 * err[n]);
		n++;
	}
	fclose(fp);
	{
		double med = median(meas_v, n), base[MAX_ROWS];

		for (int i = 0; i < n; i++)
			base[i] = rel_err(med, meas_v[i]);
		printf("median |error| over %d rows: colloc %.1f%% | constant median "
		       "%.1f%%\n\n",
		       n, 100 * median(err, n), 100 * median(base, n));
	}
}

/* --- 3. Gavel --------------------------------------------------------- */

/* Gavel's workloads (stanford-futuredata/gavel workloads/pytorch): the
 * CIFAR ResNet-18 and torchvision ResNet-50, fp32, SGD with momentum,
 * torch 1.4; the value is isolated steps/s on one GPU of AWS p2.xlarge
 * (K80), p3.2xlarge (V100-SXM2-16GB) and a P100. Data loading runs in
 * worker processes and overlaps the step. */
static void bench_gavel(void)
{
	static const struct {
		const char *gpu, *platform;
	} gpus[] = {
		{"k80", "k80-cu114-torch112"},
		{"p100", "p100-16gb-cu124-torch26"},
		{"v100", "v100-16gb-cu124-torch26"},
	};
	static const struct {
		const char *job, *graph;
		int batches[5];
	} jobs[] = {
		{"ResNet-18", "bench/perf/resnet18_cifar.onnx", {16, 32, 64, 128, 256}},
		{"ResNet-50", "zoo/resnet50.onnx", {16, 32, 64, 128, 0}},
	};
	char path[4096];
	double err[64], base[64], meas[64];
	int n = 0;
	cJSON *root;
	FILE *fp;
	char *text;
	long len;

	snprintf(path, sizeof(path), "%s/gavel/simulation_throughputs.json", shared_dir);
	fp = fopen(path, "rb");
	if (!fp) {
		printf("3. Gavel: %s not found; skipped\n\n", path);
		return;
	}
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	text = len > 0 && len < (64L << 20) ? malloc((size_t)len) : NULL;
	if (!text || fread(text, 1, (size_t)len, fp) != (size_t)len) {
		free(text);
		fclose(fp);
		printf("3. Gavel: cannot read %s; skipped\n\n", path);
		return;
	}
	fclose(fp);
	root = cJSON_ParseWithLength(text, (size_t)len);
	free(text);
	printf("3. Step time of Gavel's isolated jobs (1 GPU, fp32)\n");
	printf("%-24s %-5s %10s %10s %7s\n", "job", "GPU", "measured", "colloc", "err");
	for (size_t gi = 0; gi < sizeof(gpus) / sizeof(gpus[0]); gi++)
		for (size_t j = 0; j < sizeof(jobs) / sizeof(jobs[0]); j++)
			for (int b = 0; b < 5 && jobs[j].batches[b]; b++) {
				char key[128], graph[4096];
				const cJSON *v;
				struct colloc_perf p;

				snprintf(key, sizeof(key), "('%s (batch size %d)', 1)",
					 jobs[j].job, jobs[j].batches[b]);
				v = cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetObjectItemCaseSensitive(
							root, gpus[gi].gpu),
						key),
					"null");
				if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || n >= 64)
					continue;
				snprintf(graph, sizeof(graph), "%s/%s", data_dir,
					 jobs[j].graph);
				if (predict_file(
					    graph, jobs[j].batches[b], 0,
					    gpus[gi].platform, COLLOC_LOSS_CROSS_ENTROPY,
					    COLLOC_OPT_MOMENTUM, COLLOC_PREC_FP32, &p))
					continue;
				meas[n] = 1e3 / v->valuedouble;
				err[n] = rel_err(p.step_ms, meas[n]);
				snprintf(key, sizeof(key), "%s bs %d", jobs[j].job,
					 jobs[j].batches[b]);
				printf("%-24s %-5s %8.1f ms %8.1f ms %6.1f%%\n", key,
				       gpus[gi].gpu, meas[n], p.step_ms, 100 * err[n]);
				n++;
			}
	cJSON_Delete(root);
	{
		double med = median(meas, n);

		for (int i = 0; i < n; i++)
			base[i] = rel_err(med, meas[i]);
		printf("median |error| over %d rows: colloc %.1f%% | constant median "
		       "%.1f%%\n\n",
		       n, 100 * median(err, n), 100 * median(base, n));
	}
}

/* --- 4. GPUMemNet MLPs -------------------------------------------------- */

/* Build the MLP of one row: Gemm(transB) + Relu per layer, as torch.onnx
 * exports nn.Sequential(nn.Linear, nn.ReLU, ...). Weights are external. */
static int mlp_graph(int64_t in_dim, const int64_t *widths, int n_layers, int64_t batch,
		     struct colloc_graph **g)
{
	struct ob_model *m = ob_model_create(14);
	Onnx__GraphProto *gp = ob_model_graph(m);
	struct colloc_diag diag = {{0}};
	char prev[64] = "x", dims[64], name[64], ins[256], out[64];
	uint8_t *buf = NULL;
	size_t len = 0;
	int64_t width = in_dim;
	int rc;

	snprintf(dims, sizeof(dims), "batch,%lld", (long long)in_dim);
	ob_input(m, gp, "x", 1, dims);
	for (int l = 0; l < n_layers; l++) {
		Onnx__TensorProto *t;
		Onnx__NodeProto *nd;

		snprintf(name, sizeof(name), "layers.%d.weight", 2 * l);
		snprintf(dims, sizeof(dims), "%lld,%lld", (long long)widths[l],
			 (long long)width);
		t = ob_tensor(m, name, 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		snprintf(name, sizeof(name), "layers.%d.bias", 2 * l);
		snprintf(dims, sizeof(dims), "%lld", (long long)widths[l]);
		t = ob_tensor(m, name, 1, dims);
		ob_tensor_external(m, t, "weights");
		ob_init(m, gp, t);
		snprintf(ins, sizeof(ins), "%s,layers.%d.weight,layers.%d.bias", prev,
			 2 * l, 2 * l);
		snprintf(out, sizeof(out), "h%d", l);
		nd = ob_node(m, gp, "Gemm", "", ins, out);
		ob_attr_int(m, nd, "transB", 1);
		snprintf(prev, sizeof(prev), "%s", out);
		if (l + 1 < n_layers) {
			snprintf(out, sizeof(out), "r%d", l);
			ob_node(m, gp, "Relu", "", prev, out);
			snprintf(prev, sizeof(prev), "%s", out);
		}
		width = widths[l];
	}
	snprintf(dims, sizeof(dims), "batch,%lld", (long long)width);
	ob_output(m, gp, prev, 1, dims);
	rc = ob_model_pack(m, &buf, &len);
	ob_model_destroy(m);
	if (rc)
		return rc;
	rc = colloc_onnx_load_buffer(buf, len, NULL, g, &diag);
	free(buf);
	if (rc == 0) {
		struct colloc_bind_opts bind = {batch, NULL, 0};

		rc = colloc_graph_infer(*g, &bind, &diag);
	}
	if (rc)
		fprintf(stderr, "bench_perf: MLP graph: %s\n", diag.msg);
	return rc;
}

static double rmsle(const double *p, const double *m, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++) {
		double d = log1p(p[i]) - log1p(m[i]);

		s += d * d;
	}
	return n ? sqrt(s / n) : (double)NAN;
}

static double mae(const double *p, const double *m, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += fabs(p[i] - m[i]);
	return n ? s / n : (double)NAN;
}

/* Where the utilization RMSLE comes from: runs binned by measured
 * utilization (10-point bins), each bin's share of the summed squared log
 * error and its mean signed log error (< 0: predicted too low). */
static void error_by_bin(const double *p, const double *m, int n)
{
	double sse[10] = {0}, sle[10] = {0}, tot = 0;
	int cnt[10] = {0};

	for (int i = 0; i < n; i++) {
		int b = m[i] < 0 ? 0 : m[i] >= 90 ? 9 : (int)(m[i] / 10);
		double d = log1p(p[i]) - log1p(m[i]);

		sse[b] += d * d;
		sle[b] += d;
		cnt[b]++;
		tot += d * d;
	}
	printf("%-22s %6s %14s %16s\n", "measured utilization", "runs", "share of SSE",
	       "mean log error");
	for (int b = 0; b < 10; b++)
		if (cnt[b])
			printf("%2d-%2d%%%16s %6d %14.2f %16.3f\n", 10 * b, 10 * b + 9,
			       "", cnt[b], tot > 0 ? sse[b] / tot : 0, sle[b] / cnt[b]);
	printf("\n");
}

/*
 * The host a set of runs was measured on: per-op costs and the DataLoader's
 * main-thread time per step, loader_ms = fixed + per_sample * batch +
 * per_byte * batch * width * 4 (tools/measure_dataloader.py's fit).
 */
struct host {
	const char *what;
	double op_us, bwd_op_us;
	double ld_fixed_ms, ld_sample_us, ld_byte_ns;
};

/*
 * GPUMemNet's runs (NeuroNetGen_scripts/MLP/mlp.py of itu-rad/GPUMemNet):
 * 4,096 random samples held on the CPU, a DataLoader with no workers and
 * shuffling, the batch copied to the GPU from pageable memory every step,
 * cross-entropy, Adam, fp32, loss.item() every step; A100-SXM4-40GB (the
 * author's logs). Their host is unknown: colloc's defaults, measured on
 * this project's CPU by tools/measure_host_overhead.py and
 * tools/measure_dataloader.py (torch 1.13): 0.0627 ms + 4.362 us per sample
 * + 0.3242 ns per input byte.
 */
static const struct host project_host = {
	"this project's CPU, torch 1.13 (colloc's defaults)",
	COLLOC_PERF_HOST_OP_US_DEFAULT,
	COLLOC_PERF_HOST_BWD_OP_US_DEFAULT,
	0.0627,
	4.362,
	0.3242};

static double loader_ms(const struct host *h, int64_t batch, int64_t width)
{
	return h->ld_fixed_ms + h->ld_sample_us * 1e-3 * (double)batch +
	       h->ld_byte_ns * 1e-6 * (double)batch * (double)width * 4;
}

/*
 * The host of this project's H200 runs, read from what the same session
 * measured there (data/measurements/perf/h200-host.txt: measure_host_overhead.py
 * with CUDA tensors, and measure_dataloader.py's fit). 0 when the file or a
 * line is missing.
 */
static int read_host(const char *path, struct host *h)
{
	char line[512];
	bool cuda = false;
	int got = 0;
	FILE *fp = fopen(path, "r");

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		double a, b, c;

		if (strstr(line, "python ") == line)
			cuda = strstr(line, "cpu tensors") == NULL;
		else if (cuda && sscanf(line, "forward_us_per_op %lf", &a) == 1)
			h->op_us = a, got |= 1;
		else if (cuda && sscanf(line, "backward_us_per_node %lf", &a) == 1)
			h->bwd_op_us = a, got |= 2;
		else if (sscanf(line, "fixed_ms %lf per_sample_us %lf per_byte_ns %lf",
				&a, &b, &c) == 3)
			h->ld_fixed_ms = a, h->ld_sample_us = b, h->ld_byte_ns = c,
			got |= 4;
	}
	fclose(fp);
	return got == 7 ? 0 : -1;
}

/*
 * MLP runs in GPUMemNet's columns (Filename, Activations-Params, Batch Size,
 * Avg GPUTL, Avg SMACT): predicted on platform with host h, printed beside
 * a constant-median baseline. Rows with an empty SMACT count for
 * utilization only.
 */
static void bench_mlp(const char *title, const char *path, const char *platform,
		      const struct host *h)
{
	static double pu[MAX_ROWS], mu[MAX_ROWS], ps[MAX_ROWS], ms[MAX_ROWS],
		cu[MAX_ROWS], cs[MAX_ROWS];
	char hline[LINE_MAX_BYTES], line[LINE_MAX_BYTES];
	char *hdr[MAX_FIELDS], *f[MAX_FIELDS];
	struct colloc_platform plat;
	struct colloc_diag diag = {{0}};
	int nh, n = 0, nsm = 0, cfile, clist, cbatch, cutil, csm;
	FILE *fp;

	fp = tool_csv_open(path, hline, LINE_MAX_BYTES, hdr, MAX_FIELDS, &nh);
	if (!fp) {
		printf("%s: %s not found; skipped\n\n", title, path);
		return;
	}
	if (colloc_platform_load(platform, &plat, &diag)) {
		fprintf(stderr, "bench_perf: %s\n", diag.msg);
		fclose(fp);
		return;
	}
	cfile = tool_csv_col(hdr, nh, "Filename");
	clist = tool_csv_col(hdr, nh, "Activations-Params");
	cbatch = tool_csv_col(hdr, nh, "Batch Size");
	cutil = tool_csv_col(hdr, nh, "Avg GPUTL");
	csm = tool_csv_col(hdr, nh, "Avg SMACT");
	while (n < MAX_ROWS && fgets(line, sizeof(line), fp)) {
		int64_t widths[64], in_dim;
		int nl = 0;
		const char *s;
		struct colloc_graph *g = NULL;
		struct colloc_perf p;
		struct colloc_perf_opts o;

		if (tool_csv_split(line, f, MAX_FIELDS) < nh || cfile < 0 || clist < 0 ||
		    cbatch < 0 || cutil < 0 || csm < 0 || !*f[cutil])
			continue;
		s = strstr(f[cfile], "input:");
		if (!s)
			continue;
		in_dim = atoll(s + 6);
		/* one output: BCE on a shape it cannot take; these 22 runs
		 * of GPUMemNet's crashed (SM activity 0 throughout) */
		if (strstr(f[cfile], "_output:1_"))
			continue;
		for (s = f[clist]; (s = strstr(s, "('linear', ")) && nl < 64; s++)
			widths[nl++] = atoll(s + 11);
		if (nl == 0 || in_dim <= 0 ||
		    mlp_graph(in_dim, widths, nl, atoll(f[cbatch]), &g))
			continue;
		colloc_graph_cost(g, NULL);
		colloc_perf_opts_init(&o);
		o.platform = &plat;
		o.batch = atoll(f[cbatch]);
		o.optimizer = COLLOC_OPT_ADAM;
		o.loss = COLLOC_LOSS_CROSS_ENTROPY;
		o.input_on_host = true;
		o.dataloader_ms = loader_ms(h, o.batch, in_dim) * host_scale;
		o.host_op_us = h->op_us * host_scale;
		o.host_bwd_op_us = h->bwd_op_us * host_scale;
		if (colloc_perf_predict(g, &o, &p, &diag) == 0) {
			pu[n] = 100 * p.gpu_util;
			mu[n] = atof(f[cutil]);
			if (*f[csm]) {
				ps[nsm] = 100 * p.sm_activity;
				ms[nsm++] = 100 * atof(f[csm]);
			}
			if (getenv("BENCH_PERF_DEBUG") &&
			    (n < 12 || getenv("BENCH_PERF_ALL")))
				fprintf(stderr,
					"%s b=%s: util %.0f/%.0f step %.3f ms kern %.3f "
					"host %.3f n=%d fixed %.3f\n",
					f[cfile], f[cbatch], pu[n], mu[n], p.step_ms,
					p.kernel_ms, p.host_ms, p.kernels, p.fixed_ms);
			n++;
		}
		colloc_graph_destroy(g);
	}
	fclose(fp);
	{
		double mu_med = median(mu, n), ms_med = median(ms, nsm);

		for (int i = 0; i < n; i++)
			cu[i] = mu_med;
		for (int i = 0; i < nsm; i++)
			cs[i] = ms_med;
		printf("%s: %d MLP runs (platform %s; host: %s, x %.2f), in percent\n",
		       title, n, platform, h->what, host_scale);
		printf("%-30s %10s %10s\n", "", "MAE (pt)", "RMSLE");
		printf("%-30s %10.1f %10.3f\n", "utilization.gpu: colloc", mae(pu, mu, n),
		       rmsle(pu, mu, n));
		printf("%-30s %10.1f %10.3f\n", "utilization.gpu: const median",
		       mae(cu, mu, n), rmsle(cu, mu, n));
		if (nsm) {
			printf("%-30s %10.1f %10.3f\n", "SM activity: colloc",
			       mae(ps, ms, nsm), rmsle(ps, ms, nsm));
			printf("%-30s %10.1f %10.3f\n", "SM activity: const median",
			       mae(cs, ms, nsm), rmsle(cs, ms, nsm));
		} else {
			printf("(no SM activity in this file: dcgmi was not there)\n");
		}
		printf("(targets: RMSLE <= 0.10 on utilization, MAE <= 7 points on SM "
		       "activity; "
		       "HotCloud '20 reports RMSLE 0.154)\n");
		error_by_bin(pu, mu, n);
	}
}

static void bench_gpumemnet(const char *platform)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/perf/gpumemnet-mlp/mlp_data_step1.csv",
		 shared_dir);
	bench_mlp("4. GPUMemNet's MLP runs (no licence: read in place)", path, platform,
		  &project_host);
}

/*
 * 6, kernels: the kernels one step launches, counted by the profiler
 * (measure_gpu.py's `kernels`) and by colloc's step model, and what
 * autocast adds to them -- an AMP row's count less its model's fp32 row's
 * -- against colloc's casts (colloc__amp_op); before them colloc added 2
 * kernels for autocast (the loss's conversions), the baseline printed.
 */
static void h200_kernels(int n, double kern[2][MAX_ROWS], char rmodel[][64],
			 const int *rprec)
{
	static double e[MAX_ROWS], ec[MAX_ROWS], ma[MAX_ROWS], pa[MAX_ROWS], ea[MAX_ROWS],
		eb[MAX_ROWS], mk[MAX_ROWS];
	int m = 0, na = 0;
	double med;

	for (int i = 0; i < n; i++)
		if (kern[0][i] > 0) {
			mk[m] = kern[0][i];
			e[m++] = rel_err(kern[1][i], kern[0][i]);
		}
	if (m == 0)
		return;
	med = median(mk, m);
	for (int i = 0; i < m; i++)
		ec[i] = rel_err(med, mk[i]);
	printf("6, kernels per step (the profiler's count, %d rows)  median|e|\n", m);
	printf("%-44s %9.1f%%\n", "colloc", 100 * median(e, m));
	printf("%-44s %9.1f%%\n", "constant median", 100 * median(ec, m));
	printf("autocast's kernels: an AMP row's count less its model's fp32 row's\n");
	printf("  %-14s %-9s %9s %9s\n", "model", "precision", "measured", "colloc");
	for (int i = 0; i < n; i++) {
		int f32 = -1;

		if (kern[0][i] <= 0 || (rprec[i] != COLLOC_PREC_AMP_FP16 &&
					rprec[i] != COLLOC_PREC_AMP_BF16))
			continue;
		for (int j = 0; j < n; j++)
			if (rprec[j] == COLLOC_PREC_FP32 && kern[0][j] > 0 &&
			    strcmp(rmodel[j], rmodel[i]) == 0)
				f32 = j;
		if (f32 < 0)
			continue;
		ma[na] = kern[0][i] - kern[0][f32];
		pa[na] = kern[1][i] - kern[1][f32];
		ea[na] = ma[na] > 0 ? fabs(pa[na] - ma[na]) / ma[na] : 0;
		eb[na] = ma[na] > 0 ? fabs(2 - ma[na]) / ma[na] : 0;
		printf("  %-14s %-9s %+9.0f %+9.0f\n", rmodel[i],
		       rprec[i] == COLLOC_PREC_AMP_FP16 ? "amp-fp16" : "amp-bf16", ma[na],
		       pa[na]);
		na++;
	}
	if (na) {
		printf("%-44s %9.1f%%\n", "  colloc's casts, median|e|",
		       100 * median(ea, na));
		printf("%-44s %9.1f%%\n", "  2 kernels (colloc before its casts)",
		       100 * median(eb, na));
	}
	printf("\n");
}

/*
 * 6. This project's H200 runs (data/measurements/perf/, tools/measure_gpu.py
 * --perf and tools/measure_mlp_util.py, one session): step time and
 * utilization.gpu of zoo models x precisions with the batch on the GPU, and
 * GPUMemNet-style MLPs, each predicted with colloc's default host costs and
 * with the host costs measured on the same machine in the same session
 * (h200-host.txt) -- no constant fitted to these rows.
 */
static void bench_h200(void)
{
	static const struct {
		const char *name;
		int prec;
	} precs[] = {{"fp32", COLLOC_PREC_FP32},
		     {"tf32", COLLOC_PREC_TF32},
		     {"amp-fp16", COLLOC_PREC_AMP_FP16},
		     {"amp-bf16", COLLOC_PREC_AMP_BF16}};
	static const char *const plat = "h200-141gb-cu130-torch211";
	struct host mh = {
		"measured on the H200's machine (h200-host.txt)", 0, 0, 0, 0, 0};
	char path[4096], hline[LINE_MAX_BYTES], line[LINE_MAX_BYTES];
	char *hdr[64], *f[64];
	static double step[2][MAX_ROWS], meas[MAX_ROWS], util[2][MAX_ROWS],
		mutil[MAX_ROWS], cut[MAX_ROWS], kern[2][MAX_ROWS];
	static char rmodel[MAX_ROWS][64];
	static int rprec[MAX_ROWS];
	static const char *const cols[6] = {
		"model", "batch", "seq", "precision", "step_ms_median", "util_gpu_pct"};
	int nh, n = 0, c[6], cm, cb, cs, cp, cstep, cutil, ck;
	const char *missing;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/measurements/perf/h200-host.txt", data_dir);
	if (read_host(path, &mh)) {
		printf("6. H200 runs: %s missing or incomplete; skipped\n\n", path);
		return;
	}
	snprintf(path, sizeof(path), "%s/measurements/perf/h200-steps.csv", data_dir);
	fp = tool_csv_open(path, hline, LINE_MAX_BYTES, hdr, 64, &nh);
	if (!fp) {
		printf("6. H200 runs: %s not found; skipped\n\n", path);
		return;
	}
	if ((missing = tool_csv_cols(hdr, nh, cols, c, 6))) {
		printf("6. H200 runs: %s has no column %s; skipped\n\n", path, missing);
		fclose(fp);
		return;
	}
	cm = c[0], cb = c[1], cs = c[2], cp = c[3], cstep = c[4], cutil = c[5];
	ck = tool_csv_col(hdr, nh, "kernels"); /* the profiler's count, if any */
	while (n < MAX_ROWS && fgets(line, sizeof(line), fp)) {
		int prec = -1;
		char gpath[4096];
		bool ok = true;

		if (tool_csv_split(line, f, 64) < nh || atof(f[cstep]) <= 0 || !*f[cutil])
			continue;
		for (size_t k = 0; k < sizeof(precs) / sizeof(precs[0]); k++)
			if (strcmp(f[cp], precs[k].name) == 0)
				prec = precs[k].prec;
		if (prec < 0)
			continue;
		snprintf(gpath, sizeof(gpath), "%s/zoo/%s.onnx", data_dir, f[cm]);
		{
			struct colloc_graph *g = NULL;
			struct colloc_platform p;
			struct colloc_diag diag = {{0}};
			struct colloc_binding dims[2] = {{"seq", atoll(f[cs])},
							 {"dec_seq", atoll(f[cs])}};
			/* measure_gpu.py binds seq and, for T5, dec_seq alike */
			struct colloc_bind_opts bind = {atoll(f[cb]), dims,
							atoll(f[cs]) <= 0 ? 0
							: strcmp(f[cm], "t5_small") == 0
								? 2
								: 1};

			if (colloc_platform_load(plat, &p, &diag) ||
			    colloc_onnx_load_file(gpath, NULL, &g, &diag) ||
			    colloc_graph_infer(g, &bind, &diag)) {
				fprintf(stderr, "bench_perf: %s: %s\n", gpath, diag.msg);
				colloc_graph_destroy(g);
				continue;
			}
			colloc_graph_cost(g, NULL);
			/* the same graph, with the default and the measured host */
			for (int hset = 0; hset < 2 && ok; hset++) {
				struct colloc_perf_opts o;
				struct colloc_perf r;

				colloc_perf_opts_init(&o);
				o.platform = &p;
				o.batch = bind.batch;
				o.optimizer = COLLOC_OPT_ADAM;
				o.precision = prec;
				/* measure_gpu.py's step loop: the
				 * shifted copy made and dropped in it */
				o.loss = strcmp(f[cm], "gpt2") == 0
						 ? COLLOC_LOSS_CAUSAL_LM_COPY
						 : COLLOC_LOSS_CROSS_ENTROPY;
				o.input_on_host = false;
				if (hset) {
					o.host_op_us = mh.op_us;
					o.host_bwd_op_us = mh.bwd_op_us;
				}
				ok = colloc_perf_predict(g, &o, &r, &diag) == 0;
				if (ok && hset == 0)
					kern[1][n] = r.kernels;
				if (ok) {
					step[hset][n] = r.step_ms;
					util[hset][n] = 100 * r.gpu_util;
				} else {
					fprintf(stderr, "bench_perf: %s: %s\n", gpath,
						diag.msg);
				}
			}
			colloc_graph_destroy(g);
		}
		if (!ok)
			continue;
		meas[n] = atof(f[cstep]);
		mutil[n] = atof(f[cutil]);
		kern[0][n] = ck >= 0 ? atof(f[ck]) : 0;
		snprintf(rmodel[n], sizeof(rmodel[n]), "%s", f[cm]);
		rprec[n] = prec;
		if (getenv("BENCH_PERF_DEBUG"))
			fprintf(stderr,
				"%s b%s %s: step %.1f | %.1f / %.1f ms, util %.0f | %.0f "
				"/ %.0f\n",
				f[cm], f[cb], f[cp], meas[n], step[0][n], step[1][n],
				mutil[n], util[0][n], util[1][n]);
		n++;
	}
	fclose(fp);
	{
		static double e[2][MAX_ROWS], ec[MAX_ROWS];
		double med = median(meas, n), umed = median(mutil, n);

		for (int i = 0; i < n; i++) {
			cut[i] = umed;
			ec[i] = rel_err(med, meas[i]);
			for (int hset = 0; hset < 2; hset++)
				e[hset][i] = rel_err(step[hset][i], meas[i]);
		}
		printf("6. This project's H200 runs "
		       "(data/measurements/perf/h200-steps.csv: "
		       "%d model x precision rows, Adam, batch on the GPU; platform "
		       "%s)\n",
		       n, plat);
		printf("%-44s %14s %12s %12s\n", "", "step median|e|", "util MAE pt",
		       "util RMSLE");
		printf("%-44s %13.1f%% %12.1f %12.3f\n", "colloc, default host costs",
		       100 * median(e[0], n), mae(util[0], mutil, n),
		       rmsle(util[0], mutil, n));
		printf("%-44s %13.1f%% %12.1f %12.3f\n",
		       "colloc, host costs measured there", 100 * median(e[1], n),
		       mae(util[1], mutil, n), rmsle(util[1], mutil, n));
		printf("%-44s %13.1f%% %12.1f %12.3f\n", "constant median",
		       100 * median(ec, n), mae(cut, mutil, n), rmsle(cut, mutil, n));
		printf("(host costs there: %.2f us per forward op, %.2f us per backward "
		       "node, "
		       "CUDA tensors)\n\n",
		       mh.op_us, mh.bwd_op_us);
	}
	h200_kernels(n, kern, rmodel, rprec);
	snprintf(path, sizeof(path), "%s/measurements/perf/h200-mlp.csv", data_dir);
	bench_mlp("6b. This project's H200 MLP runs, default host costs", path, plat,
		  &project_host);
	bench_mlp("6c. The same, host costs measured there", path, plat, &mh);
}

/* --- 5. speed ---------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One prediction for ResNet-50 at batch 64, beside the memory estimate of
 * the same graph (what `colloc estimate` already does), in-process. */
static void bench_speed(void)
{
	struct colloc_graph *g = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_bind_opts bind = {64, NULL, 0};
	struct colloc_perf_opts o;
	struct colloc_estimate_opts eo;
	struct colloc_perf p;
	struct colloc_estimate e;
	char path[4096];
	double t0, t_perf, t_est;
	const int reps = 50;

	snprintf(path, sizeof(path), "%s/zoo/resnet50.onnx", data_dir);
	if (colloc_onnx_load_file(path, NULL, &g, &diag) ||
	    colloc_graph_infer(g, &bind, &diag)) {
		printf("5. speed: %s: %s; skipped\n", path, diag.msg);
		colloc_graph_destroy(g);
		return;
	}
	colloc_graph_cost(g, NULL);
	colloc_perf_opts_init(&o);
	colloc_estimate_opts_init(&eo);
	t0 = now_s();
	for (int i = 0; i < reps; i++)
		colloc_perf_predict(g, &o, &p, &diag);
	t_perf = (now_s() - t0) / reps;
	t0 = now_s();
	for (int i = 0; i < reps; i++)
		colloc_estimate_run(g, &eo, &e, &diag);
	t_est = (now_s() - t0) / reps;
	printf("5. Speed, ResNet-50 batch 64, in-process (mean of %d)\n", reps);
	printf("step-time prediction %.3f ms | memory estimate of the same graph %.3f "
	       "ms\n\n",
	       t_perf * 1e3, t_est * 1e3);
	colloc_graph_destroy(g);
}

int main(int argc, char **argv)
{
	const char *pollux_plat = "t4-16gb-cu124-torch26",
		   *mlp_plat = "a100-40gb-cu124-torch26";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			data_dir = argv[++i];
		else if (strcmp(argv[i], "--shared") == 0 && i + 1 < argc)
			shared_dir = argv[++i];
		else if (strcmp(argv[i], "--mlp-platform") == 0 && i + 1 < argc)
			mlp_plat = argv[++i];
		else if (strcmp(argv[i], "--pollux-platform") == 0 && i + 1 < argc)
			pollux_plat = argv[++i];
		else if (strcmp(argv[i], "--host-scale") == 0 && i + 1 < argc)
			host_scale = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_perf [--data DIR] [--shared DIR] "
					"[--mlp-platform P] [--pollux-platform P] "
					"[--host-scale F]\n");
			return 2;
		}
	}
	setenv("COLLOC_DATA_DIR", data_dir, 0);
	bench_neusight();
	bench_pollux(pollux_plat);
	bench_gavel();
	bench_gpumemnet(mlp_plat);
	bench_h200();
	bench_speed();
	return 0;
}
