/*
 * test_sweep.c — the estimator against PyTorch on models it was never tuned
 * on: data/reference/sweep.json (tools/reference_sweep.py: every torchvision
 * classifier, the segmentation, video and optical-flow models, RNN language
 * models, a UNet, a DCGAN pair; two sizes, batches 2 and 4, graphs at every
 * opset 13..17 plus a "with weights" variant at 14). For every case and
 * graph variant: load the graph, infer it at the case's batch and dims, run
 * the estimator with Adam and SGD, and require the bytes autograd saves in
 * one forward pass within 1% of PyTorch's (dropout masks at 1 byte), and
 * parameter, gradient and optimizer-state bytes exact.
 *
 * Where colloc refuses a graph or is off, the case must be listed in
 * data/reference/sweep_gaps.txt (one line per case and variant: ID VARIANT
 * STATUS DETAIL [# cause], STATUS `refused` or `wrong`). The test fails on a
 * mismatch that is not listed, on a listed case that now passes or changed
 * status, and on a listed line that matches no case, so the list cannot rot.
 *
 *   test_sweep                     check (COLLOC_DATA_DIR=.../data)
 *   test_sweep --write-gaps FILE   write the current gaps to FILE (causes
 *                                  after '#' kept from the old list) and
 *                                  exit 0
 *   test_sweep --batch N           only the cases of batch N
 *   test_sweep --verbose           print every check
 *
 * Under AddressSanitizer only batch 2 is checked (the ASan build is ~10x
 * slower; batch 4 adds no op the batch-2 cases do not have).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "colloc/estimate.h"
#include "colloc/onnx.h"
#include "colloc/shape.h"
#include "colloc/zoo.h"
#include "test_util.h"

#define SAVED_TOLERANCE 0.01
#define MAX_DIMS 8
#define MAX_VARIANTS 16

#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_ASAN 1
#endif
#endif
#ifndef SWEEP_ASAN
#define SWEEP_ASAN 0
#endif

enum verdict { V_OK = 0, V_REFUSED, V_WRONG };

static const char *verdict_name[] = {"ok", "refused", "wrong"};

/* One line of sweep_gaps.txt. */
struct gap {
	char *id, *variant, *cause; /* cause: text after '#', or NULL */
	enum verdict status;
	int used;
};

/* One checked (case, variant). */
struct check {
	char key[192]; /* "ID VARIANT" */
	char model[96];
	enum verdict v;
	char detail[512];
	double err; /* relative saved-bytes error, NAN when refused */
};

static struct {
	cJSON *doc;
	struct gap *gaps;
	size_t n_gaps;
	struct check *checks;
	size_t n_checks, cap_checks;
	size_t n_skipped; /* cases without a graph or a measurement */
	int64_t only_batch;
	const char *write_gaps;
	int verbose;
} S;

/* Outside cmocka's tests too (--write-gaps): stop with a message. */
#define need(cond, ...)                                              \
	do {                                                         \
		if (!(cond)) {                                       \
			fprintf(stderr, "test_sweep: " __VA_ARGS__); \
			fputc('\n', stderr);                         \
			exit(1);                                     \
		}                                                    \
	} while (0)

static uint64_t num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	need(d, "out of memory");
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static enum verdict parse_status(const char *s)
{
	if (strcmp(s, "refused") == 0)
		return V_REFUSED;
	if (strcmp(s, "wrong") == 0)
		return V_WRONG;
	return V_OK;
}

/* Read sweep_gaps.txt: "ID VARIANT STATUS DETAIL... [# CAUSE]" lines,
 * '#' comments and blank lines. A missing file is an empty list. */
static void read_gaps(const char *path)
{
	char *text = test_slurp(path, 8 << 20), *line, *next;

	if (!text)
		return;
	for (line = text; line && *line; line = next) {
		const char *f[3], *p, *hash;
		size_t len[3];
		int k;
		struct gap *g;
		char status[16];

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		for (k = 0; k < 3; k++) {
			while (*p == ' ' || *p == '\t')
				p++;
			f[k] = p;
			while (*p && *p != ' ' && *p != '\t')
				p++;
			len[k] = (size_t)(p - f[k]);
			need(len[k] > 0, "%s: malformed line '%s'", path, line);
		}
		need(len[2] < sizeof(status), "%s: bad status in '%s'", path, line);
		memcpy(status, f[2], len[2]);
		status[len[2]] = '\0';
		need(parse_status(status) != V_OK,
		     "%s: status must be refused or wrong: '%s'", path, line);
		S.gaps = realloc(S.gaps, (S.n_gaps + 1) * sizeof(*S.gaps));
		need(S.gaps, "out of memory");
		g = &S.gaps[S.n_gaps++];
		memset(g, 0, sizeof(*g));
		g->id = dup_range(f[0], len[0]);
		g->variant = dup_range(f[1], len[1]);
		g->status = parse_status(status);
		hash = strstr(p, " # ");
		if (hash)
			g->cause = dup_range(hash + 3, strlen(hash + 3));
	}
	free(text);
}

static struct gap *find_gap(const char *id, const char *variant)
{
	for (size_t i = 0; i < S.n_gaps; i++)
		if (strcmp(S.gaps[i].id, id) == 0 &&
		    strcmp(S.gaps[i].variant, variant) == 0)
			return &S.gaps[i];
	return NULL;
}

/* One graph file at the case's batch and dims: the verdict and its detail. */
static enum verdict run_file(const cJSON *c, const char *file, char *detail, size_t cap,
			     double *err)
{
	struct colloc_binding binds[MAX_DIMS];
	struct colloc_bind_opts bo = {0, binds, 0};
	struct colloc_diag diag = {{0}};
	struct colloc_graph *g = NULL;
	struct colloc_estimate_opts o;
	struct colloc_estimate e;
	const cJSON *dims = cJSON_GetObjectItemCaseSensitive(c, "dims"), *d;
	const cJSON *opt = cJSON_GetObjectItemCaseSensitive(c, "optimizer_state");
	const int opts[2] = {COLLOC_OPT_ADAM, COLLOC_OPT_SGD};
	char path[4096];
	uint64_t want;
	size_t n = 0;
	int rc;

	*err = NAN;
	snprintf(path, sizeof(path), "%s/reference/%s", colloc_data_dir(), file);
	rc = colloc_onnx_load_file(path, NULL, &g, &diag);
	if (rc == 0) {
		bo.batch = (int64_t)num(c, "batch");
		cJSON_ArrayForEach(d, dims)
		{
			need(bo.n_dims < MAX_DIMS, "%s: too many dims", file);
			binds[bo.n_dims].name = d->string;
			binds[bo.n_dims].value = (int64_t)d->valuedouble;
			bo.n_dims++;
		}
		rc = colloc_graph_infer(g, &bo, &diag);
	}
	for (int k = 0; rc == 0 && k < 2; k++) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(
			opt, colloc_optimizer_name(opts[k]));

		colloc_estimate_opts_init(&o);
		o.optimizer = opts[k];
		o.iterations = 2;
		rc = colloc_estimate_run(g, &o, &e, &diag);
		if (rc)
			break;
		need(r, "%s: no optimizer_state.%s", str(c, "id"),
		     colloc_optimizer_name(opts[k]));
		/* `step` scalars live on the CPU in the CUDA implementations. */
		want = num(r, "bytes") - num(r, "step_bytes");
		if (e.optimizer_state_bytes != want)
			n += (size_t)snprintf(detail + n, n < cap ? cap - n : 0,
					      "%s%s-state:%llu!=%llu", n ? "," : "",
					      colloc_optimizer_name(opts[k]),
					      (unsigned long long)e.optimizer_state_bytes,
					      (unsigned long long)want);
		if (k)
			continue;
		want = num(c, "saved_bytes_forward_bool_masks");
		*err = ((double)e.saved_activation_bytes - (double)want) / (double)want;
		if (fabs(*err) > SAVED_TOLERANCE)
			n += (size_t)snprintf(
				detail + n, n < cap ? cap - n : 0,
				"%ssaved:%+.2f%%(%llu/%llu)", n ? "," : "", 100.0 * *err,
				(unsigned long long)e.saved_activation_bytes,
				(unsigned long long)want);
		if (e.param_bytes != num(c, "param_bytes"))
			n += (size_t)snprintf(detail + n, n < cap ? cap - n : 0,
					      "%sparams:%llu!=%llu", n ? "," : "",
					      (unsigned long long)e.param_bytes,
					      (unsigned long long)num(c, "param_bytes"));
		if (e.grad_bytes != num(c, "grad_bytes"))
			n += (size_t)snprintf(detail + n, n < cap ? cap - n : 0,
					      "%sgrads:%llu!=%llu", n ? "," : "",
					      (unsigned long long)e.grad_bytes,
					      (unsigned long long)num(c, "grad_bytes"));
	}
	colloc_graph_destroy(g);
	if (rc) {
		char *p;

		snprintf(detail, cap, "%s", diag.msg[0] ? diag.msg : "error");
		for (p = detail; *p; p++) /* one line, no comment marker */
			if (*p == '\n' || *p == '#')
				*p = ' ';
		return V_REFUSED;
	}
	if (n == 0)
		snprintf(detail, cap, "saved:%+.3f%%", 100.0 * *err);
	return n ? V_WRONG : V_OK;
}

static struct check *add_check(void)
{
	if (S.n_checks == S.cap_checks) {
		S.cap_checks = S.cap_checks ? 2 * S.cap_checks : 256;
		S.checks = realloc(S.checks, S.cap_checks * sizeof(*S.checks));
		need(S.checks, "out of memory");
	}
	memset(&S.checks[S.n_checks], 0, sizeof(*S.checks));
	return &S.checks[S.n_checks++];
}

/* Run every (case, variant) once per distinct file. */
static void run_all(void)
{
	const cJSON *cases = cJSON_GetObjectItemCaseSensitive(S.doc, "cases"), *c;

	cJSON_ArrayForEach(c, cases)
	{
		const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(c, "graphs"), *v;
		const char *files[MAX_VARIANTS];
		enum verdict verdicts[MAX_VARIANTS];
		char details[MAX_VARIANTS][512];
		double errs[MAX_VARIANTS];
		size_t n_files = 0;

		if (!cJSON_GetObjectItemCaseSensitive(c,
						      "saved_bytes_forward_bool_masks") ||
		    cJSON_GetArraySize(graphs) == 0) {
			S.n_skipped++; /* not exported or not measured: the JSON says why
					*/
			continue;
		}
		if (S.only_batch > 0 && (int64_t)num(c, "batch") != S.only_batch)
			continue;
		cJSON_ArrayForEach(v, graphs)
		{
			struct check *ck;
			size_t f;

			need(cJSON_IsString(v), "%s: graphs must be file names",
			     str(c, "id"));
			for (f = 0; f < n_files; f++)
				if (strcmp(files[f], v->valuestring) == 0)
					break;
			if (f == n_files) {
				need(n_files < MAX_VARIANTS, "%s: too many graphs",
				     str(c, "id"));
				files[f] = v->valuestring;
				verdicts[f] = run_file(c, files[f], details[f],
						       sizeof(details[f]), &errs[f]);
				n_files++;
			}
			ck = add_check();
			snprintf(ck->key, sizeof(ck->key), "%s %s", str(c, "id"),
				 v->string);
			snprintf(ck->model, sizeof(ck->model), "%s", str(c, "model"));
			ck->v = verdicts[f];
			ck->err = errs[f];
			snprintf(ck->detail, sizeof(ck->detail), "%s", details[f]);
			if (S.verbose)
				printf("%-44s %-7s %s\n", ck->key, verdict_name[ck->v],
				       ck->detail);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void summary(void)
{
	size_t ok = 0, refused = 0, wrong = 0, n_err = 0;
	double *errs = calloc(S.n_checks + 1, sizeof(double)), median = NAN;
	char only[32] = "";

	need(errs, "out of memory");
	for (size_t i = 0; i < S.n_checks; i++) {
		ok += S.checks[i].v == V_OK;
		refused += S.checks[i].v == V_REFUSED;
		wrong += S.checks[i].v == V_WRONG;
		if (!isnan(S.checks[i].err))
			errs[n_err++] = fabs(S.checks[i].err);
	}
	if (n_err) {
		qsort(errs, n_err, sizeof(double), cmp_double);
		median = n_err % 2 ? errs[n_err / 2]
				   : (errs[n_err / 2 - 1] + errs[n_err / 2]) / 2;
	}
	if (S.only_batch > 0)
		snprintf(only, sizeof(only), "; batch %lld only",
			 (long long)S.only_batch);
	printf("test_sweep: %zu cases, %zu within 1%%, %zu refused, %zu known wrong, "
	       "median |error| %.3f%%, max %.3f%% (%zu more without a graph or "
	       "measurement%s)\n",
	       S.n_checks, ok, refused, wrong, 100.0 * median,
	       n_err ? 100.0 * errs[n_err - 1] : (double)NAN, S.n_skipped, only);
	free(errs);
}

static void test_sweep_cases(void **state)
{
	size_t bad = 0;

	(void)state;
	run_all();
	assert_true(S.n_checks > 0);
	for (size_t i = 0; i < S.n_checks; i++) {
		struct check *ck = &S.checks[i];
		char id[192], *sp;
		struct gap *g;

		snprintf(id, sizeof(id), "%s", ck->key);
		sp = strchr(id, ' ');
		assert_non_null(sp);
		*sp = '\0';
		g = find_gap(id, sp + 1);
		if (g)
			g->used = 1;
		if (ck->v == V_OK && !g)
			continue;
		if (g && g->status == ck->v)
			continue;
		bad++;
		if (ck->v == V_OK)
			printf("FAIL %s: listed as %s in sweep_gaps.txt but now passes "
			       "(%s): remove the line\n",
			       ck->key, verdict_name[g->status], ck->detail);
		else if (g)
			printf("FAIL %s: listed as %s, now %s: %s\n", ck->key,
			       verdict_name[g->status], verdict_name[ck->v], ck->detail);
		else
			printf("FAIL %s: %s: %s (not in sweep_gaps.txt)\n", ck->key,
			       verdict_name[ck->v], ck->detail);
	}
	summary();
	fflush(stdout);
	if (bad)
		fail_msg("%zu of %zu sweep checks differ from data/reference/"
			 "sweep_gaps.txt (regenerate with test_sweep --write-gaps, see "
			 "data/reference/sweep_README.md)",
			 bad, S.n_checks);
}

/* Every line of sweep_gaps.txt names a case and variant that was checked
 * (with --batch or under ASan, only lines of the batch checked count). */
static void test_gaps_name_cases(void **state)
{
	size_t stale = 0;
	char want[32];

	(void)state;
	snprintf(want, sizeof(want), "/b%lld", (long long)S.only_batch);
	for (size_t i = 0; i < S.n_gaps; i++) {
		if (S.gaps[i].used)
			continue;
		if (S.only_batch > 0 && !strstr(S.gaps[i].id, want))
			continue;
		printf("FAIL sweep_gaps.txt: '%s %s' matches no case of sweep.json\n",
		       S.gaps[i].id, S.gaps[i].variant);
		stale++;
	}
	fflush(stdout);
	if (stale)
		fail_msg("%zu stale lines in sweep_gaps.txt", stale);
}

/* The cause of a new gap: the old line's, else another line's of the same
 * model, else none. */
static const char *cause_for(const struct check *ck)
{
	char id[192], *sp;
	struct gap *g;
	size_t mlen = strlen(ck->model);

	snprintf(id, sizeof(id), "%s", ck->key);
	sp = strchr(id, ' ');
	*sp = '\0';
	g = find_gap(id, sp + 1);
	if (g && g->cause)
		return g->cause;
	for (size_t i = 0; i < S.n_gaps; i++)
		if (S.gaps[i].cause && strncmp(S.gaps[i].id, ck->model, mlen) == 0 &&
		    (S.gaps[i].id[mlen] == '/' || S.gaps[i].id[mlen] == '\0') &&
		    S.gaps[i].status == ck->v)
			return S.gaps[i].cause;
	return NULL;
}

static int write_gaps(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "test_sweep: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f,
		"# data/reference/sweep_gaps.txt: where colloc's estimate differs from "
		"the "
		"CPU\n# reference sweep (data/reference/sweep.json), checked by "
		"tests/unit/test_sweep.c.\n# Regenerate (keeps the causes after '#'):\n"
		"#   COLLOC_DATA_DIR=data build/tests/test_sweep --write-gaps "
		"data/reference/sweep_gaps.txt\n"
		"# ID VARIANT STATUS DETAIL [# cause]; STATUS refused (colloc returns an "
		"error) or\n# wrong (saved bytes off by more than 1%%, or parameter, "
		"gradient or optimizer-state\n# bytes not exact; DETAIL has the measured "
		"delta: colloc/PyTorch bytes).\n");
	for (size_t i = 0; i < S.n_checks; i++) {
		const struct check *ck = &S.checks[i];
		const char *cause;

		if (ck->v == V_OK)
			continue;
		cause = cause_for(ck);
		fprintf(f, "%s %s %s%s%s\n", ck->key, verdict_name[ck->v], ck->detail,
			cause ? " # " : "", cause ? cause : "");
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep_cases),
		cmocka_unit_test(test_gaps_name_cases),
	};
	char path[4096], *text;
	int failed;

	S.only_batch = SWEEP_ASAN ? 2 : 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--write-gaps") == 0 && i + 1 < argc) {
			S.write_gaps = argv[++i];
			S.only_batch = 0;
		} else if (strcmp(argv[i], "--verbose") == 0) {
			S.verbose = 1;
		} else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
			S.only_batch = strtoll(argv[++i], NULL, 10);
		} else {
			fprintf(stderr,
				"usage: test_sweep [--batch N] [--write-gaps FILE]\n");
			return 2;
		}
	}
	snprintf(path, sizeof(path), "%s/reference/sweep.json", colloc_data_dir());
	text = test_slurp(path, 64 << 20);
	S.doc = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!cJSON_IsObject(S.doc)) {
		fprintf(stderr, "test_sweep: cannot read %s\n", path);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/reference/sweep_gaps.txt", colloc_data_dir());
	read_gaps(path);
	if (S.write_gaps) {
		run_all();
		summary();
		failed = write_gaps(S.write_gaps);
	} else {
		failed = cmocka_run_group_tests_name("sweep", tests, NULL, NULL);
	}
	for (size_t i = 0; i < S.n_gaps; i++) {
		free(S.gaps[i].id);
		free(S.gaps[i].variant);
		free(S.gaps[i].cause);
	}
	free(S.gaps);
	free(S.checks);
	cJSON_Delete(S.doc);
	return failed;
}
