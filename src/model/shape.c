/*
 * shape.c — binds symbolic input dimensions and walks the graph in order,
 * asking each node's rule (its op table row, ops.c) for its output shapes.
 *
 * Not here: the rules themselves, and costs (cost.c).
 */
#include "model/ops.h"
#include "model/shape_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

size_t colloc_graph_symbols(const struct colloc_graph *g, const char **names, size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < g->n_inputs; i++) {
		const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

		for (int d = 0; d < t->decl_rank; d++) {
			const char *s = t->decl[d].symbol;
			bool seen = false;

			if (!s || t->decl[d].value >= 0)
				continue;
			/* Quadratic, but graphs have a handful of inputs. */
			for (int j = 0; j <= i && !seen; j++) {
				const struct colloc_tensor *u = &g->tensors[g->inputs[j]];
				int upto = j == i ? d : u->decl_rank;

				for (int e = 0; e < upto; e++)
					if (u->decl[e].symbol &&
					    strcmp(u->decl[e].symbol, s) == 0)
						seen = true;
			}
			if (seen)
				continue;
			if (n < cap)
				names[n] = s;
			n++;
		}
	}
	return n;
}

static const struct colloc_binding *find_binding(const struct colloc_bind_opts *o,
						 const char *name)
{
	if (!name)
		return NULL;
	for (size_t k = 0; k < o->n_dims; k++)
		if (o->dims[k].name && strcmp(o->dims[k].name, name) == 0)
			return &o->dims[k];
	return NULL;
}

static int bind_inputs(struct colloc_graph *g, const struct colloc_bind_opts *o,
		       struct colloc_diag *diag)
{
	const char *syms[64];
	size_t n_syms = colloc_graph_symbols(g, syms, 64);

	for (size_t k = 0; k < o->n_dims; k++) {
		bool known = false;

		if (!o->dims[k].name || o->dims[k].value < 0)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "dimension bindings need a name and a "
					       "value >= 0");
		for (size_t s = 0; s < n_syms && s < 64; s++)
			if (strcmp(syms[s], o->dims[k].name) == 0)
				known = true;
		if (!known) {
			char list[256] = "";
			size_t len = 0;

			for (size_t s = 0; s < n_syms && s < 64; s++) {
				int w = snprintf(list + len, sizeof(list) - len, "%s%s",
						 s ? ", " : "", syms[s]);
				if (w < 0 || (size_t)w >= sizeof(list) - len)
					break;
				len += (size_t)w;
			}
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "the model has no dimension named '%s' "
					       "(its symbolic dimensions: %s)",
					       o->dims[k].name, n_syms ? list : "none");
		}
	}
	if (o->batch > 0) {
		bool any = false;

		for (int i = 0; i < g->n_inputs; i++) {
			const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

			if (t->decl_rank > 0 && t->decl[0].value < 0)
				any = true;
		}
		if (!any && g->n_inputs > 0 && o->batch != colloc_graph_fixed_batch(g))
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "the graph was exported at a fixed batch "
					       "of %lld (no input has a "
					       "symbolic leading dimension): estimate it "
					       "at that batch, or "
					       "re-export with dynamic_axes={\"input\": "
					       "{0: \"batch\"}} to choose "
					       "another",
					       (long long)colloc_graph_fixed_batch(g));
	}
	for (int i = 0; i < g->n_inputs; i++) {
		struct colloc_tensor *t = &g->tensors[g->inputs[i]];

		if (t->decl_rank < 0)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "input '%s' declares no shape", t->name);
		if (colloc_dtype_size(t->dtype) == 0)
			return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
					       "input '%s' has element type %s", t->name,
					       colloc_dtype_name(t->dtype));
		t->rank = t->decl_rank;
		for (int d = 0; d < t->decl_rank; d++) {
			const struct colloc_dim *dim = &t->decl[d];
			const struct colloc_binding *b = find_binding(o, dim->symbol);

			if (dim->value >= 0)
				t->shape[d] = dim->value;
			else if (b)
				t->shape[d] = b->value;
			else if (d == 0 && o->batch > 0)
				t->shape[d] = o->batch;
			else if (dim->symbol)
				return colloc_diag_set(
					diag, COLLOC_EUNBOUND,
					"input '%s' dim %d ('%s') is unbound; bind it "
					"with --dim %s=N%s",
					t->name, d, dim->symbol, dim->symbol,
					d == 0 ? " or --batch N" : "");
			else
				return colloc_diag_set(
					diag, COLLOC_EUNBOUND,
					"input '%s' dim %d has no size and no name; %s",
					t->name, d,
					d == 0 ? "bind it with --batch N"
					       : "the model cannot be inferred");
		}
	}
	return 0;
}

int colloc_graph_infer(struct colloc_graph *g, const struct colloc_bind_opts *opts,
		       struct colloc_diag *diag)
{
	struct colloc__graph_priv *p = colloc__priv(g);
	struct colloc_bind_opts none = {0, NULL, 0};
	struct colloc__infer c;
	int rc;

	if (!opts)
		opts = &none;
	/* Forget everything an earlier run inferred or folded. */
	colloc__arena_fini(&p->scratch);
	colloc__arena_init(&p->scratch, (size_t)256 << 20);
	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc_tensor *t = &g->tensors[i];

		if (t->role == COLLOC_TENSOR_INITIALIZER) {
			t->rank = t->decl_rank;
			for (int d = 0; d < t->decl_rank; d++)
				t->shape[d] = t->decl[d].value;
		} else {
			t->rank = -1;
			t->value = NULL;
		}
	}
	rc = bind_inputs(g, opts, diag);
	if (rc)
		return rc;

	c.g = g;
	c.scratch = &p->scratch;
	c.diag = diag;
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		const struct colloc__op *op = colloc__node_op(n);
		colloc__shape_fn fn = op ? op->shape : NULL;

		c.node = k;
		colloc_node_describe(g, k, c.where, sizeof(c.where));
		if (!fn)
			return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
					       "%s: colloc does not know op '%s%s%s'",
					       c.where, n->domain,
					       n->domain[0] ? "." : "", n->op_type);
		for (int i = 0; i < n->n_inputs; i++)
			if (n->inputs[i] >= 0 && g->tensors[n->inputs[i]].rank < 0)
				return colloc_diag_set(
					diag, COLLOC_EUNSUPPORTED,
					"%s: input %d '%s' has no known shape", c.where,
					i, g->tensors[n->inputs[i]].name);
		colloc_diag_clear(diag);
		rc = fn(&c, n);
		if (rc == -ENOMEM)
			return colloc_diag_set(diag, rc, "out of memory");
		if (rc)
			return colloc_diag_prefix(diag, rc, "%s", c.where);
		for (int o = 0; o < n->n_outputs; o++)
			if (n->outputs[o] >= 0 && g->tensors[n->outputs[o]].rank < 0)
				return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
						       "%s: output %d is not supported",
						       c.where, o);
	}
	return 0;
}

int64_t colloc_graph_fixed_batch(const struct colloc_graph *g)
{
	int64_t b = 0;

	for (int i = 0; i < g->n_inputs; i++) {
		const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

		if (t->decl_rank <= 0)
			continue;
		if (t->decl[0].value < 0)
			return 0;
		if (b == 0)
			b = t->decl[0].value;
	}
	return b;
}
