/*
 * model.c — the front door (colloc/model.h): resolve a MODEL, load or build
 * its graph, know its sequence dims and their defaults, and estimate it.
 *
 * This file assembles the chain resolve -> load -> infer -> estimate that
 * the CLI, the simulator and the benchmarks used to assemble each on their
 * own. It adds no estimating rule of its own: what PyTorch saves is the op
 * table's (src/estimate/train_ops.c), what the allocator does the
 * allocator model's. Building graphs from Hugging Face configurations is
 * hf.c's.
 */
#include "model/model_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/onnx.h"
#include "colloc/cost.h"
#include "colloc/perf.h"
#include "colloc/zoo.h"
#include "estimate/estimate_int.h"
#include "model/graph_int.h"

/* A zoo facts file is a few kilobytes; anything far larger is not one. */
#define ZOO_FACTS_MAX_BYTES (4u << 20)

static const char *const trainable_names[COLLOC_TRAIN_COUNT_] = {"all", "none", "lora"};
static const char *const attention_names[COLLOC_ATTN_COUNT_] = {"eager", "sdpa", "flash"};

const char *colloc_trainable_name(int t)
{
	return t >= 0 && t < COLLOC_TRAIN_COUNT_ ? trainable_names[t] : "unknown";
}

int colloc_trainable_parse(const char *s)
{
	for (int k = 0; k < COLLOC_TRAIN_COUNT_; k++)
		if (strcmp(s, trainable_names[k]) == 0)
			return k;
	return -1;
}

const char *colloc_attention_name(int a)
{
	return a >= 0 && a < COLLOC_ATTN_COUNT_ ? attention_names[a] : "unknown";
}

int colloc_attention_parse(const char *s)
{
	for (int k = 0; k < COLLOC_ATTN_COUNT_; k++)
		if (strcmp(s, attention_names[k]) == 0)
			return k;
	return -1;
}

static const char *first_param_name(const struct colloc_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].param_class == COLLOC_PARAM_TRAINABLE ||
		    g->tensors[i].frozen)
			return g->tensors[i].name;
	return "";
}

static struct colloc__model_priv *mpriv(struct colloc_model *m)
{
	return (struct colloc__model_priv *)m->priv_;
}

const char *colloc__model_strdup(struct colloc_model *m, const char *s)
{
	return colloc__arena_strdup(&mpriv(m)->arena, s);
}

void *colloc__model_alloc(struct colloc_model *m, size_t n)
{
	return colloc__arena_calloc(&mpriv(m)->arena, 1, n ? n : 1);
}

void colloc__model_note(struct colloc_model *m, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	const char *s;

	if (m->n_notes >= sizeof(m->notes) / sizeof(m->notes[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = colloc__model_strdup(m, buf);
	if (s)
		m->notes[m->n_notes++] = s;
}

void colloc_model_destroy(struct colloc_model *m)
{
	if (!m)
		return;
	colloc_graph_destroy(m->graph);
	if (m->priv_) {
		colloc_graph_destroy(mpriv(m)->stem);
		colloc__arena_fini(&mpriv(m)->arena);
		free(m->priv_);
	}
	free(m);
}

/* Item k of the comma-separated list pats, as (start, length); false past
 * the end. */
static bool list_item(const char *pats, size_t k, const char **p, size_t *n)
{
	const char *s = pats;

	for (size_t i = 0; i < k; i++) {
		s = strchr(s, ',');
		if (!s)
			return false;
		s++;
	}
	*p = s;
	*n = strchr(s, ',') ? (size_t)(strchr(s, ',') - s) : strlen(s);
	return true;
}

static bool contains(const char *name, const char *p, size_t n)
{
	for (const char *s = name; *s; s++)
		if (strncmp(s, p, n) == 0)
			return true;
	return false;
}

int colloc__model_freeze(struct colloc_graph *g, const char *patterns, int *matched,
			 struct colloc_diag *diag)
{
	/* which patterns matched, for the error naming one that did not */
	unsigned char hit[64] = {0};
	size_t n_pats = 1, n;
	const char *p;

	*matched = 0;
	if (patterns) {
		for (const char *c = patterns; *c; c++)
			n_pats += *c == ',';
		if (n_pats > sizeof(hit))
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "--freeze: at most %zu patterns",
					       sizeof(hit));
		for (size_t k = 0; list_item(patterns, k, &p, &n); k++)
			if (n == 0)
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "--freeze: empty pattern in '%s'",
						       patterns);
	}
	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc_tensor *t = &g->tensors[i];
		bool any = !patterns;

		if (t->param_class != COLLOC_PARAM_TRAINABLE && !t->frozen)
			continue;
		for (size_t k = 0; patterns && list_item(patterns, k, &p, &n); k++)
			if (contains(t->name, p, n))
				hit[k] = 1, any = true;
		if (!any || t->frozen)
			continue;
		t->param_class = COLLOC_PARAM_BUFFER;
		t->frozen = true;
		(*matched)++;
	}
	/* A pattern that names no parameter is a typo, not a no-op. */
	for (size_t k = 0; patterns && list_item(patterns, k, &p, &n); k++)
		if (!hit[k])
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "--freeze: '%.*s' matches no parameter "
					       "name (state_dict keys, such as '%s')",
					       (int)n, p, first_param_name(g));
	return 0;
}

/* The graph's sequence dims: symbolic dims of its inputs past the leading
 * (batch) one, in order of first appearance. */
static int seq_dims_from_graph(struct colloc_model *m, struct colloc_diag *diag)
{
	const struct colloc_graph *g = m->graph;

	for (int i = 0; i < g->n_inputs; i++) {
		const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

		for (int d = 1; d < t->decl_rank; d++) {
			const char *s = t->decl[d].symbol;
			bool seen = false;

			if (!s || t->decl[d].value >= 0)
				continue;
			for (size_t k = 0; k < m->n_seq_dims; k++)
				seen |= strcmp(m->seq_dims[k], s) == 0;
			if (seen)
				continue;
			if (m->n_seq_dims == COLLOC_MODEL_MAX_DIMS)
				return colloc_diag_set(diag, COLLOC_ELIMIT,
						       "%s: more than %d symbolic "
						       "sequence dims",
						       m->name, COLLOC_MODEL_MAX_DIMS);
			m->seq_dims[m->n_seq_dims++] = s;
		}
	}
	return 0;
}

static char *read_small_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, max + 1, f);
	fclose(f);
	if (*len > max) {
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

/*
 * The facts file next to a zoo graph (data/zoo/NAME.json, written by
 * tools/export_zoo.py): "max_positions" (the position limit of a
 * transformer with learned positions) and "default_dims" ({"seq": 128}),
 * both optional. A zoo graph without a facts file is used as it is.
 */
static int read_zoo_facts(struct colloc_model *m, const char *onnx_path,
			  struct colloc_diag *diag)
{
	char path[4096];
	size_t n = strlen(onnx_path), len = 0;
	const cJSON *mp, *dd, *it;
	cJSON *root;
	char *text;
	int rc = 0;

	if (n < 5 || n + 1 > sizeof(path))
		return 0;
	snprintf(path, sizeof(path), "%.*s.json", (int)(n - 5), onnx_path);
	text = read_small_file(path, ZOO_FACTS_MAX_BYTES, &len);
	if (!text)
		return 0;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return colloc_diag_set(diag, COLLOC_EFORMAT, "%s: not a JSON object",
				       path);
	}
	mp = cJSON_GetObjectItemCaseSensitive(root, "max_positions");
	if (mp) {
		if (!cJSON_IsNumber(mp) || mp->valuedouble < 1 || mp->valuedouble > 1e9) {
			rc = colloc_diag_set(diag, COLLOC_EFORMAT,
					     "%s: max_positions is not a positive "
					     "integer",
					     path);
			goto out;
		}
		m->max_seq = (int64_t)mp->valuedouble;
	}
	dd = cJSON_GetObjectItemCaseSensitive(root, "default_dims");
	cJSON_ArrayForEach(it, dd)
	{
		const char *name;

		if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1e9 ||
		    !it->string) {
			rc = colloc_diag_set(diag, COLLOC_EFORMAT,
					     "%s: default_dims wants NAME: positive "
					     "integer",
					     path);
			goto out;
		}
		if (m->n_defaults == COLLOC_MODEL_MAX_DIMS)
			break;
		name = colloc__model_strdup(m, it->string);
		if (!name) {
			rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
			goto out;
		}
		m->defaults[m->n_defaults++] =
			(struct colloc_binding){name, (int64_t)it->valuedouble};
	}
out:
	cJSON_Delete(root);
	return rc;
}

static int open_onnx(struct colloc_model *m, const char *name,
		     const struct colloc_model_opts *o, struct colloc_diag *diag)
{
	char path[4096];
	int rc;

	if ((rc = colloc_zoo_resolve(name, path, sizeof(path), diag)))
		return rc;
	/* colloc_zoo_resolve() returns paths as given and rewrites names */
	m->source = strcmp(path, name) == 0 ? COLLOC_MODEL_ONNX : COLLOC_MODEL_ZOO;
	m->path = colloc__model_strdup(m, path);
	if (!m->path)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	if ((rc = colloc_onnx_load_file(path, NULL, &m->graph, diag)))
		return rc;
	if ((rc = seq_dims_from_graph(m, diag)))
		return rc;
	if (m->source == COLLOC_MODEL_ZOO && (rc = read_zoo_facts(m, path, diag)))
		return rc;
	if (o->trainable == COLLOC_TRAIN_LORA)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: --trainable lora needs a Hugging Face "
				       "configuration (hf:PATH/config.json): an "
				       "ONNX graph has no adapters; --freeze "
				       "PATTERN freezes its parameters",
				       name);
	if (o->weight_dtype || o->attention != COLLOC_ATTN_EAGER ||
	    o->gradient_checkpointing)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: pure half-precision weights, --attention "
				       "and --gradient-checkpointing are built into "
				       "graphs made from a Hugging Face "
				       "configuration (hf:...); an ONNX graph has "
				       "them as it was exported",
				       name);
	if ((o->architecture && o->architecture[0]) || o->num_labels)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: --architecture and --num-labels choose the "
				       "head of a model built from a Hugging Face "
				       "configuration (hf:...); an ONNX graph has its "
				       "own",
				       name);
	return 0;
}

static int model_new(const char *name, struct colloc_model **out,
		     struct colloc_diag *diag)
{
	struct colloc_model *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	m->priv_ = calloc(1, sizeof(struct colloc__model_priv));
	if (!m->priv_) {
		free(m);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	colloc__arena_init(&mpriv(m)->arena, 0);
	m->name = colloc__model_strdup(m, name);
	if (!m->name) {
		colloc_model_destroy(m);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	*out = m;
	return 0;
}

/* What every model gets after its graph: the freezing options, counts. */
static int model_finish(struct colloc_model *m, const struct colloc_model_opts *opts,
			struct colloc_diag *diag)
{
	struct colloc_param_totals pt;
	int rc, n;

	if (opts->trainable == COLLOC_TRAIN_NONE) {
		if ((rc = colloc__model_freeze(m->graph, NULL, &n, diag)))
			return rc;
		colloc__model_note(m, "trainable none: %d parameter tensors frozen", n);
	}
	if (opts->freeze && opts->freeze[0]) {
		if ((rc = colloc__model_freeze(m->graph, opts->freeze, &n, diag)))
			return rc;
		colloc__model_note(m, "freeze '%s': %d parameter tensors frozen",
				   opts->freeze, n);
	}
	colloc_graph_param_totals(m->graph, &pt);
	m->trainable_params = pt.trainable;
	m->frozen_params = pt.frozen;
	return 0;
}

static int check_opts(const struct colloc_model_opts *opts, struct colloc_diag *diag)
{
	if (opts->trainable < 0 || opts->trainable >= COLLOC_TRAIN_COUNT_ ||
	    opts->attention < 0 || opts->attention >= COLLOC_ATTN_COUNT_ ||
	    opts->num_labels < 0 || opts->num_labels > (1 << 24))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "invalid model options");
	return 0;
}

int colloc_model_open(const char *name_or_path, const struct colloc_model_opts *opts,
		      struct colloc_model **out, struct colloc_diag *diag)
{
	struct colloc_model_opts def;
	struct colloc_model *m;
	int rc;

	*out = NULL;
	if (!opts) {
		memset(&def, 0, sizeof(def));
		opts = &def;
	}
	if ((rc = check_opts(opts, diag)) || (rc = model_new(name_or_path, &m, diag)))
		return rc;
	if (strncmp(name_or_path, "hf:", 3) == 0) {
		m->source = COLLOC_MODEL_HF;
		rc = colloc__hf_open(name_or_path + 3, opts, m, diag);
	} else {
		rc = open_onnx(m, name_or_path, opts, diag);
	}
	if (!rc)
		rc = model_finish(m, opts, diag);
	if (rc) {
		colloc_model_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int colloc__model_open_hf_text(const char *text, size_t len,
			       const struct colloc_model_opts *opts,
			       struct colloc_model **out, struct colloc_diag *diag)
{
	struct colloc_model *m;
	int rc;

	*out = NULL;
	if ((rc = check_opts(opts, diag)) || (rc = model_new("hf:config.json", &m, diag)))
		return rc;
	m->source = COLLOC_MODEL_HF;
	rc = colloc__hf_build_buffer(text, len, "config.json", opts, m, diag);
	if (!rc)
		rc = model_finish(m, opts, diag);
	if (rc) {
		colloc_model_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

static bool is_seq_dim(const struct colloc_model *m, const char *name)
{
	for (size_t k = 0; k < m->n_seq_dims; k++)
		if (strcmp(m->seq_dims[k], name) == 0)
			return true;
	return false;
}

static bool bound_in(const struct colloc_binding *b, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(b[k].name, name) == 0)
			return true;
	return false;
}

int colloc_model_infer(struct colloc_model *m, const struct colloc_model_dims *d,
		       struct colloc_diag *diag)
{
	struct colloc_binding b[64];
	struct colloc_bind_opts bo;
	size_t n = 0;

	if (d->n_dims + m->n_seq_dims + m->n_defaults > sizeof(b) / sizeof(b[0]))
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "too many dimension bindings");
	for (size_t k = 0; k < d->n_dims; k++)
		b[n++] = d->dims[k];
	if (d->seq > 0)
		for (size_t k = 0; k < m->n_seq_dims; k++)
			if (!bound_in(b, n, m->seq_dims[k]))
				b[n++] = (struct colloc_binding){m->seq_dims[k], d->seq};
	if (d->use_defaults)
		for (size_t k = 0; k < m->n_defaults; k++)
			if (!bound_in(b, n, m->defaults[k].name))
				b[n++] = m->defaults[k];
	if (m->max_seq > 0)
		for (size_t k = 0; k < n; k++)
			if (is_seq_dim(m, b[k].name) && b[k].value > m->max_seq)
				return colloc_diag_set(diag, COLLOC_EUSAGE,
						       "%s %lld exceeds the model's "
						       "position limit of %lld",
						       b[k].name, (long long)b[k].value,
						       (long long)m->max_seq);
	bo.batch = d->batch;
	bo.dims = b;
	bo.n_dims = n;
	if (mpriv(m)->stem) {
		int rc = colloc_graph_infer(mpriv(m)->stem, &bo, diag);

		if (rc)
			return colloc_diag_prefix(diag, rc,
						  "the model without its layers");
	}
	return colloc_graph_infer(m->graph, &bo, diag);
}

/*
 * The parameters (all, and the trainable ones) of m's largest layer: what
 * FSDP with transformer_auto_wrap_policy (one unit per layer) and ZeRO-3
 * gather at once, per unit. A parameter read by several layers (none in
 * the families built) counts in each. 0 when m has no known layers. The
 * graph must be inferred (sizes).
 */
static void largest_unit(struct colloc_model *m, uint64_t *all, uint64_t *trainable)
{
	const struct colloc_graph *g = m->graph;
	const struct colloc__model_priv *mp = mpriv(m);

	*all = *trainable = 0;
	for (int l = 0; l < mp->n_layers; l++) {
		uint64_t a = 0, t = 0;

		for (int k = mp->layer_first[l]; k < mp->layer_end[l] && k < g->n_nodes;
		     k++)
			for (int i = 0; i < g->nodes[k].n_inputs; i++) {
				int x = g->nodes[k].inputs[i];
				const struct colloc_tensor *v =
					x >= 0 ? &g->tensors[x] : NULL;

				if (!v || (v->param_class != COLLOC_PARAM_TRAINABLE &&
					   !v->frozen))
					continue;
				a += colloc_tensor_bytes(v);
				if (v->param_class == COLLOC_PARAM_TRAINABLE)
					t += colloc_tensor_bytes(v);
			}
		if (a > *all) {
			*all = a;
			*trainable = t;
		}
	}
}

int colloc_estimate_model(struct colloc_model *m, const struct colloc_model_dims *d,
			  const struct colloc_estimate_opts *opts,
			  struct colloc_estimate *out, struct colloc_diag *diag)
{
	int rc = colloc_model_infer(m, d, diag);

	struct colloc__estimate_ext ext;

	if (rc)
		return rc;
	memset(&ext, 0, sizeof(ext));
	ext.n_segs = mpriv(m)->n_ckpt;
	ext.seg_first = mpriv(m)->ckpt_first;
	ext.seg_end = mpriv(m)->ckpt_end;
	if (opts->parallel == COLLOC_PAR_ZERO3 || opts->parallel == COLLOC_PAR_FSDP)
		largest_unit(m, &ext.unit_param_bytes, &ext.unit_trainable_bytes);
	return colloc__estimate_run_ext(m->graph, opts, &ext, out, diag);
}

int colloc_estimate_max_batch(struct colloc_model *m, const struct colloc_model_dims *d,
			      const struct colloc_estimate_opts *opts, int64_t *batch,
			      struct colloc_estimate *at, struct colloc_diag *diag)
{
	struct colloc_model_dims at_b = *d;
	int64_t lo = 0, hi = 1, fixed = colloc_graph_fixed_batch(m->graph);
	int rc = 0;

	*batch = 0;
	if (!opts->gpu_memory_bytes)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "the largest batch needs a GPU memory size");
	if (fixed)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "exported at a fixed batch of %lld: the largest "
				       "batch needs a dynamic batch axis",
				       (long long)fixed);
	/* Peak memory grows with the batch: double, then bisect. */
	while (hi <= ((int64_t)1 << 30)) {
		at_b.batch = hi;
		if ((rc = colloc_estimate_model(m, &at_b, opts, at, diag)))
			return rc;
		if (!at->fits)
			break;
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;

		at_b.batch = mid;
		if ((rc = colloc_estimate_model(m, &at_b, opts, at, diag)))
			return rc;
		if (at->fits)
			lo = mid;
		else
			hi = mid;
	}
	if (lo > 0) {
		at_b.batch = lo;
		if ((rc = colloc_estimate_model(m, &at_b, opts, at, diag)))
			return rc;
	}
	*batch = lo;
	return 0;
}

int colloc_estimate_max_seq(struct colloc_model *m, const struct colloc_model_dims *d,
			    const struct colloc_estimate_opts *opts, int64_t *seq,
			    bool *capped, struct colloc_estimate *at,
			    struct colloc_diag *diag)
{
	struct colloc_model_dims at_s = *d;
	int64_t limit = m->max_seq > 0 ? m->max_seq : COLLOC_MODEL_MAX_SEQ;
	int64_t lo = 0, hi = 1;
	int rc = 0;

	*seq = 0;
	*capped = false;
	if (!opts->gpu_memory_bytes)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "the longest sequence needs a GPU memory size");
	if (!m->n_seq_dims)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s has no sequence dimension", m->name);
	if (d->batch <= 0 && !colloc_graph_fixed_batch(m->graph))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "the longest sequence needs a batch size");
	/* Peak memory grows with the sequence: double, then bisect. */
	for (;;) {
		at_s.seq = hi;
		if ((rc = colloc_estimate_model(m, &at_s, opts, at, diag)))
			return rc;
		if (!at->fits)
			break;
		lo = hi;
		if (hi == limit) {
			*capped = true;
			break;
		}
		hi = hi > limit / 2 ? limit : 2 * hi;
	}
	while (!*capped && hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;

		at_s.seq = mid;
		if ((rc = colloc_estimate_model(m, &at_s, opts, at, diag)))
			return rc;
		if (at->fits)
			lo = mid;
		else
			hi = mid;
	}
	if (lo > 0 && at_s.seq != lo) {
		at_s.seq = lo;
		if ((rc = colloc_estimate_model(m, &at_s, opts, at, diag)))
			return rc;
	}
	*seq = lo;
	return 0;
}

int colloc_model_perf_predict(struct colloc_model *m, const struct colloc_perf_opts *po,
			      struct colloc_perf *out, struct colloc_diag *diag)
{
	struct colloc_graph *stem = mpriv(m)->stem;
	struct colloc_perf sp;
	double extra, scale, delta;
	int rc;

	colloc_graph_cost(m->graph, NULL);
	if ((rc = colloc_perf_predict(m->graph, po, out, diag)) || !stem)
		return rc;
	colloc_graph_cost(stem, NULL);
	if ((rc = colloc_perf_predict(stem, po, &sp, diag)))
		return colloc_diag_prefix(diag, rc, "the model without its layers");
	extra = out->phase_ms[COLLOC_PERF_FORWARD] - sp.phase_ms[COLLOC_PERF_FORWARD];
	if (!(extra > 0) || !(out->step_ms > 0))
		return 0;
	/* the recomputation runs inside backward, layer by layer */
	scale = (out->step_ms + extra) / out->step_ms;
	out->phase_ms[COLLOC_PERF_BACKWARD] += extra;
	out->kernel_ms += extra;
	out->step_ms += extra;
	out->step_lo_ms *= scale;
	out->step_hi_ms *= scale;
	delta = (out->kernel_ms < out->step_ms ? out->kernel_ms / out->step_ms : 1) -
		out->gpu_util;
	out->gpu_util += delta;
	out->gpu_util_lo = out->gpu_util_lo + delta > 0 ? out->gpu_util_lo + delta : 0;
	out->gpu_util_hi = out->gpu_util_hi + delta < 1 ? out->gpu_util_hi + delta : 1;
	out->throughput_samples_per_s /= scale;
	return 0;
}
