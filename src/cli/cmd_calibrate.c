/*
 * cmd_calibrate.c — `colloc estimate --calibrate RUNS.csv --platform BASE`:
 * fit a platform profile's context_bytes to the user's own measured runs
 * and print the new profile (BASE with context_bytes and source replaced).
 *
 * RUNS.csv: a header naming the columns, then one run per line. Required:
 * model (an .onnx file or zoo name), batch, peak_bytes (measured peak
 * device memory of the run, bytes or a size such as 3.2GiB; the column
 * nvml_peak_bytes of tools/measure_gpu.py's CSV is taken as it). Optional:
 * optimizer, precision, loss, attention (eager, sdpa, flash: for an hf:
 * model), dims ("seq=128" or "seq=128;dec_seq=64"), seq (every sequence
 * dim, as --seq), error (a run with one is skipped: measure_gpu.py records
 * failed runs so). Other columns are ignored.
 * Lines starting with '#' and blank lines are skipped.
 *
 * The peaks are taken as full-process measurements on a fresh GPU (NVML's
 * per-process memory), which include the CUDA context: the fit is
 * context_bytes = median(measured - reserved - cuda_context_bytes). With
 * --context-subtracted (measurements that subtract a baseline taken after
 * CUDA initialised, as data/measurements/xmem_dev.csv) the context is not
 * subtracted again. Bounded: lines of at
 * most 4095 bytes, at most 4096 runs.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/estimate.h"
#include "colloc/model.h"
#include "colloc/platform.h"
#include "colloc/units.h"

#define MAX_RUNS 4096
#define MAX_COLS 64
#define LINE_MAX_BYTES 4096

enum {
	C_MODEL,
	C_BATCH,
	C_PEAK,
	C_OPT,
	C_PREC,
	C_LOSS,
	C_DIMS,
	C_SEQ,
	C_ERROR,
	C_ATTN,
	C_COUNT
};
static const char *const col_names[C_COUNT] = {
	"model", "batch", "peak_bytes", "optimizer", "precision",
	"loss",	 "dims",  "seq",	"error",     "attention"};

/* Split line in place at commas (no quoting: none of the fields needs
 * it); trailing newline and spaces around fields dropped. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		char *end = strchr(p, ',');

		if (end)
			*end = '\0';
		while (*p == ' ')
			p++;
		f[n++] = p;
		for (char *q = p + strlen(p); q > p && q[-1] == ' '; q--)
			q[-1] = '\0';
		if (!end)
			break;
		p = end + 1;
	}
	return n;
}

/* One run's estimate under plat; *reserved gets peak_device_bytes, which
 * with context_bytes 0 and the CUDA context excluded is peak reserved plus
 * the profile's cudnn_context_bytes for a graph that convolves. */
static int run_estimate(char **f, const int *col, int lineno, const char *csv,
			const struct colloc_estimate_opts *base, uint64_t *reserved)
{
	struct colloc_estimate_opts o = *base;
	struct colloc_model_opts mo = {0};
	struct cli_dims d;
	struct colloc_model *g = NULL;
	struct colloc_estimate e;
	struct colloc_diag diag = {{0}};
	char dims[512];
	int rc;

	memset(&d, 0, sizeof(d));
	if (cli_parse_batch(f[col[C_BATCH]], &d))
		goto bad;
	if (col[C_OPT] >= 0 && f[col[C_OPT]][0] && cli_parse_optimizer(f[col[C_OPT]], &o))
		goto bad;
	if (col[C_PREC] >= 0 && f[col[C_PREC]][0] &&
	    cli_parse_precision(f[col[C_PREC]], &o))
		goto bad;
	if (col[C_LOSS] >= 0 && f[col[C_LOSS]][0] && cli_parse_loss(f[col[C_LOSS]], &o))
		goto bad;
	if (col[C_SEQ] >= 0 && f[col[C_SEQ]][0] &&
	    (cli_parse_seq(f[col[C_SEQ]], &d) != 0))
		goto bad;
	if (col[C_ATTN] >= 0 && f[col[C_ATTN]][0] &&
	    (mo.attention = colloc_attention_parse(f[col[C_ATTN]])) < 0) {
		cli_error("%s:%d: attention '%s' is not one of eager, sdpa, flash", csv,
			  lineno, f[col[C_ATTN]]);
		goto bad;
	}
	if (col[C_DIMS] >= 0 && f[col[C_DIMS]][0]) {
		char *save = NULL, *tok;

		snprintf(dims, sizeof(dims), "%s", f[col[C_DIMS]]);
		for (tok = strtok_r(dims, "; ", &save); tok;
		     tok = strtok_r(NULL, "; ", &save))
			if (cli_parse_dim(tok, &d))
				goto bad;
	}
	if ((rc = cli_model_open(f[col[C_MODEL]], &mo, &g))) {
		cli_error("%s:%d: the run above cannot be estimated", csv, lineno);
		return rc;
	}
	cli_model_loss(g, col[C_LOSS] >= 0 && f[col[C_LOSS]][0], &o);
	rc = cli_estimate_at(g, &d, d.batch, &o, &e, &diag);
	colloc_model_destroy(g);
	if (rc) {
		cli_error("%s:%d: %s: %s", csv, lineno, f[col[C_MODEL]], diag.msg);
		return CLI_ERROR;
	}
	*reserved = e.peak_device_bytes;
	return CLI_OK;
bad:
	cli_error("%s:%d: the run above cannot be estimated", csv, lineno);
	return CLI_USAGE;
}

/* Read csv into measured/reserved; returns the run count or -exit status. */
static int read_runs(const char *csv, const struct colloc_estimate_opts *base,
		     uint64_t *measured, uint64_t *reserved)
{
	char line[LINE_MAX_BYTES], *f[MAX_COLS];
	int col[C_COUNT], n = 0, lineno = 0, nf, rc;
	bool header = false;
	FILE *fp = fopen(csv, "r");

	if (!fp) {
		cli_error("--calibrate: cannot open %s: %s", csv, strerror(errno));
		return -CLI_ERROR;
	}
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			cli_error("%s:%d: line longer than %d bytes", csv, lineno,
				  LINE_MAX_BYTES - 1);
			rc = -CLI_ERROR;
			goto out;
		}
		if (line[0] == '#' || line[strspn(line, " \r\n")] == '\0')
			continue;
		nf = split(line, f, MAX_COLS);
		if (!header) {
			for (int c = 0; c < C_COUNT; c++) {
				col[c] = -1;
				for (int k = 0; k < nf; k++)
					if (strcmp(f[k], col_names[c]) == 0 ||
					    (c == C_PEAK && col[c] < 0 &&
					     strcmp(f[k], "nvml_peak_bytes") == 0))
						col[c] = k;
			}
			if (col[C_MODEL] < 0 || col[C_BATCH] < 0 || col[C_PEAK] < 0) {
				cli_error(
					"%s:%d: the header must name the columns model, "
					"batch and peak_bytes or nvml_peak_bytes "
					"(optional: optimizer, precision, loss, "
					"attention, dims, seq, error)",
					csv, lineno);
				rc = -CLI_ERROR;
				goto out;
			}
			header = true;
			continue;
		}
		if (n == MAX_RUNS) {
			cli_error("%s: more than %d runs", csv, MAX_RUNS);
			rc = -CLI_ERROR;
			goto out;
		}
		for (int c = 0; c < C_COUNT; c++)
			if (col[c] >= nf) {
				cli_error("%s:%d: %d fields, the header has more", csv,
					  lineno, nf);
				rc = -CLI_ERROR;
				goto out;
			}
		if (col[C_ERROR] >= 0 && f[col[C_ERROR]][0]) {
			fprintf(stderr, "calibrate: %s:%d: skipped, the run failed: %s\n",
				csv, lineno, f[col[C_ERROR]]);
			continue;
		}
		if (colloc_parse_size(f[col[C_PEAK]], &measured[n]) || measured[n] == 0) {
			cli_error("%s:%d: peak_bytes '%s' is not a positive size", csv,
				  lineno, f[col[C_PEAK]]);
			rc = -CLI_ERROR;
			goto out;
		}
		if ((rc = run_estimate(f, col, lineno, csv, base, &reserved[n]))) {
			rc = -rc;
			goto out;
		}
		n++;
	}
	if (!header || n == 0) {
		cli_error("%s: no runs (a header line, then one run per line)", csv);
		rc = -CLI_ERROR;
		goto out;
	}
	rc = n;
out:
	fclose(fp);
	return rc;
}

static double mib(int64_t b)
{
	return (double)b / 1048576.0;
}

int cli_calibrate(const char *csv, const char *platform, const char *out_path,
		  bool subtracted, const struct colloc_estimate_opts *opts)
{
	static uint64_t measured[MAX_RUNS], reserved[MAX_RUNS];
	struct colloc_estimate_opts base = *opts;
	struct colloc_platform plat;
	struct colloc_context_fit fit;
	struct colloc_diag diag = {{0}};
	char path[4096], src[1024], *text = NULL;
	cJSON *root = NULL;
	size_t len;
	int n, rc;
	FILE *fp;

	if (!platform) {
		cli_error("--calibrate needs --platform BASE: the profile to start "
			  "from (`colloc estimate --list-platforms`)");
		return CLI_USAGE;
	}
	if (colloc_platform_load(platform, &plat, &diag)) {
		cli_error("%s", diag.msg);
		return CLI_ERROR;
	}
	base.platform = &plat;
	/* The fit is what lies outside the allocator besides the CUDA context
	 * (the profile's cuda_context_bytes, which full-process measurements
	 * include); --exclude is for measurements that subtracted it. */
	base.context_bytes = 0;
	base.exclude_cuda_context = true;
	n = read_runs(csv, &base, measured, reserved);
	if (n < 0)
		return -n;
	if (!subtracted)
		for (int k = 0; k < n; k++)
			reserved[k] += plat.cuda_context_bytes;
	if (colloc_platform_fit_context(measured, reserved, n, &fit))
		return CLI_ERROR;
	fprintf(stderr,
		"calibrate: %d runs; measured - estimated reserved: p10 %.1f MiB, "
		"median %.1f MiB, p90 %.1f MiB, max %.1f MiB\n"
		"calibrate: context_bytes %.1f MiB (was %.1f MiB in %s)\n",
		fit.runs, mib(fit.p10_bytes), mib(fit.p50_bytes), mib(fit.p90_bytes),
		mib(fit.max_bytes), mib((int64_t)fit.context_bytes),
		mib((int64_t)plat.context_bytes), plat.name);
	if (fit.p90_bytes - fit.p10_bytes > (int64_t)256 << 20)
		fprintf(stderr, "calibrate: warning: the runs disagree by more than "
				"256 MiB (p10..p90): one offset does not explain them; "
				"check that they were measured the same way\n");
	/* The new profile: BASE's file with context_bytes and source set. */
	colloc_platform_path(platform, path, sizeof(path));
	fp = fopen(path, "rb");
	if (!fp) {
		cli_error("cannot reopen %s: %s", path, strerror(errno));
		return CLI_ERROR;
	}
	text = malloc(65537);
	len = text ? fread(text, 1, 65536, fp) : 0;
	fclose(fp);
	if (text) {
		text[len] = '\0';
		root = cJSON_Parse(text);
	}
	free(text);
	if (!root) {
		cli_error("%s: cannot re-read the profile", path);
		return CLI_ERROR;
	}
	snprintf(src, sizeof(src),
		 "context_bytes calibrated by `colloc estimate --calibrate %s "
		 "--platform %s%s`: median of (measured peak - estimated reserved%s) "
		 "over %d runs (p10 %.0f MiB, p90 %.0f MiB); other values from %s",
		 csv, plat.name, subtracted ? " --context-subtracted" : "",
		 subtracted ? "" : " - cuda_context_bytes", fit.runs, mib(fit.p10_bytes),
		 mib(fit.p90_bytes), plat.name);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "context_bytes");
	cJSON_AddNumberToObject(root, "context_bytes", (double)fit.context_bytes);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "source");
	cJSON_AddStringToObject(root, "source", src);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return CLI_ERROR;
	rc = CLI_OK;
	if (out_path) {
		fp = fopen(out_path, "w");
		if (!fp || fputs(text, fp) < 0 || fputc('\n', fp) < 0) {
			cli_error("cannot write %s: %s", out_path, strerror(errno));
			rc = CLI_ERROR;
		}
		if (fp && fclose(fp) != 0 && rc == CLI_OK) {
			cli_error("cannot write %s: %s", out_path, strerror(errno));
			rc = CLI_ERROR;
		}
		if (rc == CLI_OK)
			fprintf(stderr,
				"calibrate: wrote %s (use it with --platform %s)\n",
				out_path, out_path);
	} else {
		puts(text);
	}
	free(text);
	return rc;
}
