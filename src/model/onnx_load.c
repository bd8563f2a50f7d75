/*
 * onnx_load.c — ONNX protobuf (via protobuf-c) to struct colloc_graph.
 *
 * What it does: bounds the input, checks protobuf nesting against the
 * schema before protobuf-c's recursive decoder sees it, decodes with the
 * code generated from the system's onnx.proto, and converts the tree into
 * the arena-backed IR while checking that every name resolves and nodes come
 * in topological order. What it does not do: read weights (external data is
 * never opened), check op semantics (shape.c does), or run the graph.
 */
#include "colloc/onnx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/graph_int.h"
#include "onnx.pb-c.h"

#define DEF_MAX_FILE ((size_t)2 << 30)
#define DEF_MAX_NODES ((size_t)1000000)
#define DEF_MAX_TENSORS ((size_t)4000000)
#define DEF_MAX_STRING ((size_t)64 << 10)
#define DEF_MAX_ATTR ((size_t)1 << 20)
#define DEF_MAX_VALUE ((size_t)1 << 20)
#define DEF_MAX_DEPTH 8
/* Protobuf message nesting allowed before decoding. A graph nests
 * model > graph > node > attribute > graph ..., about 4 levels per subgraph,
 * plus type protos (sequence of map of ...). */
#define MAX_PB_DEPTH 64

struct loader {
	struct colloc_onnx_limits lim;
	struct colloc__arena *arena;
	struct colloc_diag *diag;
};

/* --- protobuf nesting check ---------------------------------------------
 * protobuf-c decodes nested messages recursively with no depth limit, so a
 * crafted file of deeply nested length-delimited fields would exhaust the
 * stack. Walk the wire format with the generated descriptors, descending
 * only into fields the schema says are messages, and refuse files nested
 * deeper than MAX_PB_DEPTH. Everything else is left to protobuf-c. */

static int read_varint(const uint8_t *p, size_t len, size_t *off, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= len)
			return -1;
		b = p[(*off)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int check_nesting(const uint8_t *p, size_t len,
			 const ProtobufCMessageDescriptor *desc, int depth)
{
	size_t off = 0;

	if (depth > MAX_PB_DEPTH)
		return COLLOC_ELIMIT;
	while (off < len) {
		uint64_t key, v;
		uint32_t tag;
		const ProtobufCFieldDescriptor *f;

		if (read_varint(p, len, &off, &key))
			return COLLOC_EFORMAT;
		if ((key >> 3) > 0x1fffffff || (key >> 3) == 0)
			return COLLOC_EFORMAT;
		tag = (uint32_t)(key >> 3);
		switch (key & 7) {
		case 0:
			if (read_varint(p, len, &off, &v))
				return COLLOC_EFORMAT;
			break;
		case 1:
			if (len - off < 8)
				return COLLOC_EFORMAT;
			off += 8;
			break;
		case 5:
			if (len - off < 4)
				return COLLOC_EFORMAT;
			off += 4;
			break;
		case 2:
			if (read_varint(p, len, &off, &v) || v > len - off)
				return COLLOC_EFORMAT;
			f = protobuf_c_message_descriptor_get_field(desc, tag);
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
				int rc = check_nesting(p + off, (size_t)v, f->descriptor,
						       depth + 1);
				if (rc)
					return rc;
			}
			off += (size_t)v;
			break;
		default: /* groups (3, 4) are not used by onnx.proto */
			return COLLOC_EFORMAT;
		}
	}
	return 0;
}

/* --- name table used while building -------------------------------------- */

struct names {
	int *slots;
	size_t n_slots;
	struct colloc_tensor *tensors;
	int n;
	int cap;
	const struct names *outer; /* enclosing graph's scope, or NULL */
};

static int names_init(struct loader *L, struct names *nm, size_t cap)
{
	size_t n = 16;

	if (cap > L->lim.max_tensors)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "graph declares more than %zu tensors",
				       L->lim.max_tensors);
	while (n < cap * 2)
		n *= 2;
	nm->slots = colloc__arena_calloc(L->arena, n, sizeof(int));
	nm->tensors = colloc__arena_calloc(L->arena, cap ? cap : 1, sizeof(*nm->tensors));
	if (!nm->slots || !nm->tensors)
		return -ENOMEM;
	memset(nm->slots, 0xff, n * sizeof(int));
	nm->n_slots = n;
	nm->n = 0;
	nm->cap = (int)cap;
	return 0;
}

static int names_find(const struct names *nm, const char *name)
{
	size_t h = (size_t)colloc__hash_str(name) & (nm->n_slots - 1);

	while (nm->slots[h] >= 0) {
		if (strcmp(nm->tensors[nm->slots[h]].name, name) == 0)
			return nm->slots[h];
		h = (h + 1) & (nm->n_slots - 1);
	}
	return -1;
}

/* Append a tensor called name (already arena-owned); -1 if full. */
static int names_add(struct names *nm, const char *name)
{
	size_t h = (size_t)colloc__hash_str(name) & (nm->n_slots - 1);
	struct colloc_tensor *t;

	if (nm->n >= nm->cap)
		return -1;
	while (nm->slots[h] >= 0)
		h = (h + 1) & (nm->n_slots - 1);
	nm->slots[h] = nm->n;
	t = &nm->tensors[nm->n];
	t->name = name;
	t->decl_rank = -1;
	t->rank = -1;
	t->producer = -1;
	return nm->n++;
}

/* --- small conversions ---------------------------------------------------- */

/* Arena copy of a protobuf string, bounded. what names it for errors. */
static int copy_str(struct loader *L, const char *s, const char **out, const char *what)
{
	size_t n;

	if (!s) {
		*out = "";
		return 0;
	}
	n = strnlen(s, L->lim.max_string_bytes + 1);
	if (n > L->lim.max_string_bytes)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "%s is longer than %zu bytes", what,
				       L->lim.max_string_bytes);
	*out = colloc__arena_strndup(L->arena, s, n);
	return *out ? 0 : -ENOMEM;
}

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	int m = h & 0x3ff;
	double v;

	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, e - 25);
	return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Little-endian load of size bytes at p. */
static uint64_t load_le(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	for (size_t k = 0; k < size; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

static int64_t sext(uint64_t v, size_t size)
{
	uint64_t sign;

	if (size == 0 || size >= 8)
		return (int64_t)v;
	sign = 1ull << (8 * size - 1);
	return (int64_t)((v ^ sign) - sign);
}

/* Decode element k of raw little-endian data of the given dtype. */
static void raw_elem(const uint8_t *p, int dtype, size_t k, int64_t *iv, double *fv)
{
	size_t sz = colloc_dtype_size(dtype);
	uint64_t u = load_le(p + k * sz, sz);

	switch (dtype) {
	case COLLOC_DT_FLOAT: {
		uint32_t w = (uint32_t)u;
		float f;

		memcpy(&f, &w, sizeof(f));
		*fv = f;
		break;
	}
	case COLLOC_DT_DOUBLE:
		memcpy(fv, &u, sizeof(*fv));
		break;
	case COLLOC_DT_FLOAT16:
		*fv = half_to_double((uint16_t)u);
		break;
	case COLLOC_DT_BFLOAT16:
		*fv = bf16_to_double((uint16_t)u);
		break;
	case COLLOC_DT_INT8:
	case COLLOC_DT_INT16:
	case COLLOC_DT_INT32:
	case COLLOC_DT_INT64:
		*iv = sext(u, sz);
		break;
	case COLLOC_DT_UINT64:
		*iv = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
		break;
	default: /* uint8/16/32, bool */
		*iv = (int64_t)u;
		break;
	}
}

static bool dtype_valid(int32_t dt)
{
	return dt > 0 && dt < COLLOC_DT_COUNT_;
}

/*
 * Read dims and (when inline and small) data of a TensorProto. what names the
 * tensor in errors. Sets *value to NULL when the data is external, absent,
 * too large to keep, or of a type shape arithmetic never uses.
 */
static int read_tensor(struct loader *L, const Onnx__TensorProto *tp, const char *what,
		       int *dtype, int *rank, int64_t *dims,
		       const struct colloc_value **value, bool *external)
{
	size_t numel = 1, sz;
	struct colloc_value *v;
	bool is_float;

	*value = NULL;
	*external = false;
	if (!tp->has_data_type || !dtype_valid(tp->data_type))
		return colloc_diag_set(L->diag, COLLOC_EFORMAT,
				       "%s: missing or unknown data_type %d", what,
				       (int)tp->data_type);
	*dtype = tp->data_type;
	if (tp->n_dims > COLLOC_MAX_RANK)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "%s: rank %zu exceeds the maximum of %d", what,
				       tp->n_dims, COLLOC_MAX_RANK);
	*rank = (int)tp->n_dims;
	for (size_t k = 0; k < tp->n_dims; k++) {
		if (tp->dims[k] < 0)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "%s: dim %zu is negative (%lld)", what, k,
					       (long long)tp->dims[k]);
		dims[k] = tp->dims[k];
		if (dims[k] && numel > SIZE_MAX / (size_t)dims[k])
			return colloc_diag_set(L->diag, COLLOC_EOVERFLOW,
					       "%s: element count overflows", what);
		numel *= (size_t)dims[k];
	}
	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		*external = true;
		return 0;
	}
	sz = colloc_dtype_size(*dtype);
	if (tp->has_raw_data) {
		if (sz == 0)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "%s: raw_data for a %s tensor", what,
					       colloc_dtype_name(*dtype));
		/* numel * sz cannot overflow: numel <= SIZE_MAX and
		 * compared via division. */
		if (tp->raw_data.len / sz != numel || tp->raw_data.len % sz)
			return colloc_diag_set(
				L->diag, COLLOC_EFORMAT,
				"%s: raw_data holds %zu bytes, expected %zu x %zu", what,
				tp->raw_data.len, numel, sz);
	}
	if (*dtype == COLLOC_DT_STRING || *dtype == COLLOC_DT_COMPLEX64 ||
	    *dtype == COLLOC_DT_COMPLEX128 || numel > L->lim.max_value_elems)
		return 0;
	is_float = colloc_dtype_is_float(*dtype);
	if (tp->has_raw_data) {
		v = colloc__value_new(L->arena, numel, is_float);
		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < numel; k++) {
			int64_t iv = 0;
			double fv = 0;

			raw_elem(tp->raw_data.data, *dtype, k, &iv, &fv);
			if (is_float)
				v->f[k] = fv;
			else
				v->i[k] = iv;
		}
		*value = v;
		return 0;
	}
	/* Typed fields: exactly one of them may carry the data. */
	{
		size_t have = tp->n_float_data + tp->n_int32_data + tp->n_int64_data +
			      tp->n_double_data + tp->n_uint64_data;
		int fields = !!tp->n_float_data + !!tp->n_int32_data +
			     !!tp->n_int64_data + !!tp->n_double_data +
			     !!tp->n_uint64_data;

		if (have == 0)
			return 0; /* stripped weights: keep shape only */
		/* The copy below reads one field for all elements. */
		if (fields > 1)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "%s: values in more than one typed field",
					       what);
		if (have != numel)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "%s: holds %zu values, expected %zu", what,
					       have, numel);
	}
	v = colloc__value_new(L->arena, numel, is_float);
	if (!v)
		return -ENOMEM;
	for (size_t k = 0; k < numel; k++) {
		double fv = 0;
		int64_t iv = 0;

		if (tp->n_float_data)
			fv = tp->float_data[k], iv = colloc__f64_to_i64(fv);
		else if (tp->n_double_data)
			fv = tp->double_data[k], iv = colloc__f64_to_i64(fv);
		else if (tp->n_int64_data)
			iv = tp->int64_data[k], fv = (double)iv;
		else if (tp->n_uint64_data)
			iv = tp->uint64_data[k] > (uint64_t)INT64_MAX
				     ? INT64_MAX
				     : (int64_t)tp->uint64_data[k],
			fv = (double)iv;
		else if (*dtype == COLLOC_DT_FLOAT16)
			fv = half_to_double((uint16_t)tp->int32_data[k]);
		else if (*dtype == COLLOC_DT_BFLOAT16)
			fv = bf16_to_double((uint16_t)tp->int32_data[k]);
		else
			iv = tp->int32_data[k], fv = (double)iv;
		if (is_float)
			v->f[k] = fv;
		else
			v->i[k] = iv;
	}
	*value = v;
	return 0;
}

/* Declared type of a ValueInfoProto into tensor t (tensor types only). */
static int read_value_info(struct loader *L, const Onnx__ValueInfoProto *vi,
			   struct colloc_tensor *t)
{
	const Onnx__TypeProto__Tensor *tt;

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type)
		return 0; /* sequences, maps: shapes unknown, not an error */
	tt = vi->type->tensor_type;
	if (tt->has_elem_type && dtype_valid(tt->elem_type))
		t->dtype = tt->elem_type;
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > COLLOC_MAX_RANK)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "tensor '%s': rank %zu exceeds the maximum of %d",
				       t->name, tt->shape->n_dim, COLLOC_MAX_RANK);
	t->decl_rank = (int)tt->shape->n_dim;
	for (size_t k = 0; k < tt->shape->n_dim; k++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
		int rc;

		t->decl[k].value = -1;
		t->decl[k].symbol = NULL;
		if (d->value_case ==
		    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return colloc_diag_set(
					L->diag, COLLOC_EFORMAT,
					"tensor '%s': dim %zu is negative (%lld)",
					t->name, k, (long long)d->dim_value);
			t->decl[k].value = d->dim_value;
		} else if (d->value_case ==
				   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   d->dim_param && d->dim_param[0]) {
			rc = copy_str(L, d->dim_param, &t->decl[k].symbol, "dim_param");
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int convert_graph(struct loader *L, const Onnx__GraphProto *gp, int depth,
			 const struct names *outer, struct colloc_graph *g);

static int convert_attr(struct loader *L, const Onnx__AttributeProto *ap,
			struct colloc_attr *a, int depth, const struct names *scope)
{
	int rc = copy_str(L, ap->name, &a->name, "attribute name");

	if (rc)
		return rc;
	if (!a->name[0])
		return colloc_diag_set(L->diag, COLLOC_EFORMAT,
				       "attribute without a name");
	if (ap->n_ints > L->lim.max_attr_elems || ap->n_floats > L->lim.max_attr_elems ||
	    ap->n_strings > L->lim.max_attr_elems)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "attribute '%s' has more than %zu elements",
				       a->name, L->lim.max_attr_elems);
	switch (ap->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		a->type = COLLOC_ATTR_FLOAT;
		a->f = ap->f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		a->type = COLLOC_ATTR_INT;
		a->i = ap->i;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		a->type = COLLOC_ATTR_STRING;
		if (ap->s.len > L->lim.max_string_bytes)
			return colloc_diag_set(L->diag, COLLOC_ELIMIT,
					       "attribute '%s' is longer than %zu bytes",
					       a->name, L->lim.max_string_bytes);
		a->s = colloc__arena_strndup(L->arena, (const char *)ap->s.data,
					     ap->s.len);
		if (!a->s)
			return -ENOMEM;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: {
		int64_t *v = colloc__arena_calloc(L->arena, ap->n_ints + 1, sizeof(*v));

		if (!v)
			return -ENOMEM;
		if (ap->n_ints)
			memcpy(v, ap->ints, ap->n_ints * sizeof(*v));
		a->type = COLLOC_ATTR_INTS;
		a->ints = v;
		a->n = ap->n_ints;
		break;
	}
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
		double *v = colloc__arena_calloc(L->arena, ap->n_floats + 1, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < ap->n_floats; k++)
			v[k] = ap->floats[k];
		a->type = COLLOC_ATTR_FLOATS;
		a->floats = v;
		a->n = ap->n_floats;
		break;
	}
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
		const char **v =
			colloc__arena_calloc(L->arena, ap->n_strings + 1, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < ap->n_strings; k++) {
			if (ap->strings[k].len > L->lim.max_string_bytes)
				return colloc_diag_set(
					L->diag, COLLOC_ELIMIT,
					"attribute '%s' string %zu is too long", a->name,
					k);
			v[k] = colloc__arena_strndup(L->arena,
						     (const char *)ap->strings[k].data,
						     ap->strings[k].len);
			if (!v[k])
				return -ENOMEM;
		}
		a->type = COLLOC_ATTR_STRINGS;
		a->strings = v;
		a->n = ap->n_strings;
		break;
	}
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
		bool ext;
		char what[128];

		if (!ap->t)
			return colloc_diag_set(
				L->diag, COLLOC_EFORMAT,
				"attribute '%s' of type TENSOR has no tensor", a->name);
		snprintf(what, sizeof(what), "attribute '%s'", a->name);
		a->type = COLLOC_ATTR_TENSOR;
		rc = read_tensor(L, ap->t, what, &a->t_dtype, &a->t_rank, a->t_dims,
				 &a->t_value, &ext);
		if (rc)
			return rc;
		break;
	}
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
		struct colloc_graph *sub;

		if (!ap->g)
			return colloc_diag_set(
				L->diag, COLLOC_EFORMAT,
				"attribute '%s' of type GRAPH has no graph", a->name);
		if (depth + 1 > L->lim.max_depth)
			return colloc_diag_set(L->diag, COLLOC_ELIMIT,
					       "subgraphs nested deeper than %d",
					       L->lim.max_depth);
		sub = colloc__arena_alloc(L->arena, sizeof(*sub));
		if (!sub)
			return -ENOMEM;
		rc = convert_graph(L, ap->g, depth + 1, scope, sub);
		if (rc)
			return colloc_diag_prefix(L->diag, rc, "subgraph '%s'", a->name);
		a->type = COLLOC_ATTR_GRAPH;
		a->g = sub;
		break;
	}
	default:
		a->type = COLLOC_ATTR_OTHER;
		break;
	}
	return 0;
}

/* Resolve a name: this graph first, then (for subgraphs) enclosing scopes,
 * which become implicit inputs of the subgraph. */
static int resolve(struct names *nm, const struct names *outer, const char *name)
{
	int k = names_find(nm, name);
	const struct names *s = outer;

	if (k >= 0)
		return k;
	/* Any enclosing scope, not only the parent: a nested Loop body may
	 * read a tensor of the main graph that its parent never names. */
	while (s && names_find(s, name) < 0)
		s = s->outer;
	if (!s)
		return -1;
	k = names_add(nm, name);
	if (k >= 0)
		nm->tensors[k].role = COLLOC_TENSOR_INPUT;
	return k;
}

static int convert_graph(struct loader *L, const Onnx__GraphProto *gp, int depth,
			 const struct names *outer, struct colloc_graph *g)
{
	struct colloc__graph_priv *priv;
	struct names nm;
	size_t cap;
	int rc, *ins, *outs;
	char where[256];

	priv = colloc__arena_alloc(L->arena, sizeof(*priv));
	if (!priv)
		return -ENOMEM;
	g->priv_ = priv;
	rc = copy_str(L, gp->name, &g->name, "graph name");
	if (rc)
		return rc;
	if (gp->n_node > L->lim.max_nodes)
		return colloc_diag_set(L->diag, COLLOC_ELIMIT,
				       "graph has %zu nodes, more than the limit of %zu",
				       gp->n_node, L->lim.max_nodes);
	if (gp->n_sparse_initializer)
		return colloc_diag_set(L->diag, COLLOC_EUNSUPPORTED,
				       "sparse initializers are not supported");

	/* Upper bound on distinct tensors: every input, initializer, node
	 * output, plus (subgraphs) every node input that may come from an
	 * enclosing scope. Each term is bounded by the file size. */
	cap = gp->n_input + gp->n_initializer + gp->n_output + 1;
	for (size_t k = 0; k < gp->n_node; k++) {
		cap += gp->node[k]->n_output;
		if (outer)
			cap += gp->node[k]->n_input;
	}
	rc = names_init(L, &nm, cap);
	if (rc)
		return rc;
	nm.outer = outer;

	/* Initializers first: a graph input of the same name is then an
	 * initializer listed as input (keep_initializers_as_inputs). */
	for (size_t k = 0; k < gp->n_initializer; k++) {
		const Onnx__TensorProto *tp = gp->initializer[k];
		const char *name;
		struct colloc_tensor *t;
		int idx;

		rc = copy_str(L, tp->name, &name, "initializer name");
		if (rc)
			return rc;
		if (!name[0])
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "initializer %zu has no name", k);
		if (names_find(&nm, name) >= 0)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "initializer '%s' is defined twice", name);
		idx = names_add(&nm, name);
		t = &nm.tensors[idx];
		t->role = COLLOC_TENSOR_INITIALIZER;
		snprintf(where, sizeof(where), "initializer '%s'", name);
		{
			int64_t dims[COLLOC_MAX_RANK];
			int rank = 0;

			rc = read_tensor(L, tp, where, &t->dtype, &rank, dims, &t->value,
					 &t->external);
			if (rc)
				return rc;
			t->decl_rank = rank;
			for (int d = 0; d < rank; d++) {
				t->decl[d].value = dims[d];
				t->decl[d].symbol = NULL;
			}
		}
	}

	ins = colloc__arena_calloc(L->arena, gp->n_input + 1, sizeof(int));
	if (!ins)
		return -ENOMEM;
	g->n_inputs = 0;
	for (size_t k = 0; k < gp->n_input; k++) {
		const char *name;
		int idx;

		rc = copy_str(L, gp->input[k]->name, &name, "input name");
		if (rc)
			return rc;
		if (!name[0])
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "graph input %zu has no name", k);
		idx = names_find(&nm, name);
		if (idx >= 0) {
			if (nm.tensors[idx].role != COLLOC_TENSOR_INITIALIZER)
				return colloc_diag_set(L->diag, COLLOC_EFORMAT,
						       "graph input '%s' is listed twice",
						       name);
			continue; /* an initializer also listed as input */
		}
		idx = names_add(&nm, name);
		nm.tensors[idx].role = COLLOC_TENSOR_INPUT;
		rc = read_value_info(L, gp->input[k], &nm.tensors[idx]);
		if (rc)
			return rc;
		ins[g->n_inputs++] = idx;
	}
	g->inputs = ins;

	g->nodes = colloc__arena_calloc(L->arena, gp->n_node + 1, sizeof(*g->nodes));
	if (!g->nodes)
		return -ENOMEM;
	g->n_nodes = (int)gp->n_node;
	for (size_t k = 0; k < gp->n_node; k++) {
		const Onnx__NodeProto *np = gp->node[k];
		struct colloc_node *n = &g->nodes[k];
		int *nin, *nout;
		struct colloc_attr *attrs;

		rc = copy_str(L, np->name, &n->name, "node name");
		if (!rc)
			rc = copy_str(L, np->op_type, &n->op_type, "op type");
		if (!rc)
			rc = copy_str(L, np->domain, &n->domain, "domain");
		if (rc)
			return colloc_diag_prefix(L->diag, rc, "node %zu", k);
		if (!n->op_type[0])
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "node %zu (%s): no op_type", k, n->name);
		colloc_node_describe(g, (int)k, where, sizeof(where));
		if (np->n_input > INT16_MAX || np->n_output > INT16_MAX ||
		    np->n_attribute > INT16_MAX)
			return colloc_diag_set(
				L->diag, COLLOC_ELIMIT,
				"%s: too many inputs, outputs or attributes", where);
		nin = colloc__arena_calloc(L->arena, np->n_input + 1, sizeof(int));
		nout = colloc__arena_calloc(L->arena, np->n_output + 1, sizeof(int));
		attrs = colloc__arena_calloc(L->arena, np->n_attribute + 1,
					     sizeof(*attrs));
		if (!nin || !nout || !attrs)
			return -ENOMEM;
		for (size_t i = 0; i < np->n_input; i++) {
			const char *in = np->input[i] ? np->input[i] : "";

			if (strnlen(in, L->lim.max_string_bytes + 1) >
			    L->lim.max_string_bytes)
				return colloc_diag_set(L->diag, COLLOC_ELIMIT,
						       "%s: input %zu name too long",
						       where, i);
			if (!in[0]) {
				nin[i] = -1;
				continue;
			}
			nin[i] = resolve(&nm, outer, in);
			if (nin[i] < 0)
				return colloc_diag_set(
					L->diag, COLLOC_EFORMAT,
					"%s: input %zu '%s' is not a graph input, an "
					"initializer or the output of an earlier node",
					where, i, in);
			nm.tensors[nin[i]].consumers++;
		}
		for (size_t a = 0; a < np->n_attribute; a++) {
			rc = convert_attr(L, np->attribute[a], &attrs[a], depth, &nm);
			if (rc)
				return colloc_diag_prefix(L->diag, rc, "%s", where);
		}
		for (size_t o = 0; o < np->n_output; o++) {
			const char *name;
			int idx;

			rc = copy_str(L, np->output[o], &name, "output name");
			if (rc)
				return colloc_diag_prefix(L->diag, rc, "%s", where);
			if (!name[0]) {
				nout[o] = -1;
				continue;
			}
			idx = names_find(&nm, name);
			if (idx >= 0)
				return colloc_diag_set(
					L->diag, COLLOC_EFORMAT,
					"%s: output '%s' is already defined%s", where,
					name,
					nm.tensors[idx].producer >= 0
						? " by an earlier node"
						: " as an input or initializer");
			idx = names_add(&nm, name);
			if (idx < 0)
				return colloc_diag_set(L->diag, COLLOC_EFORMAT,
						       "%s: too many tensors", where);
			nm.tensors[idx].producer = (int)k;
			nout[o] = idx;
		}
		n->inputs = nin;
		n->n_inputs = (int)np->n_input;
		n->outputs = nout;
		n->n_outputs = (int)np->n_output;
		n->attrs = attrs;
		n->n_attrs = (int)np->n_attribute;
	}

	outs = colloc__arena_calloc(L->arena, gp->n_output + 1, sizeof(int));
	if (!outs)
		return -ENOMEM;
	for (size_t k = 0; k < gp->n_output; k++) {
		const char *name = gp->output[k]->name ? gp->output[k]->name : "";
		int idx = resolve(&nm, outer, name);

		if (idx < 0)
			return colloc_diag_set(L->diag, COLLOC_EFORMAT,
					       "graph output '%.200s' is never produced",
					       name);
		outs[k] = idx;
	}
	g->outputs = outs;
	g->n_outputs = (int)gp->n_output;

	/* Declared shapes of intermediate tensors, where the file has them. */
	for (size_t k = 0; k < gp->n_value_info + gp->n_output; k++) {
		const Onnx__ValueInfoProto *vi =
			k < gp->n_value_info ? gp->value_info[k]
					     : gp->output[k - gp->n_value_info];
		int idx = vi->name ? names_find(&nm, vi->name) : -1;

		if (idx >= 0 && nm.tensors[idx].role == COLLOC_TENSOR_ACTIVATION) {
			rc = read_value_info(L, vi, &nm.tensors[idx]);
			if (rc)
				return rc;
		}
	}

	g->tensors = nm.tensors;
	g->n_tensors = nm.n;
	priv->slots = nm.slots;
	priv->n_slots = nm.n_slots;
	for (int k = 0; k < g->n_nodes; k++)
		if (strcmp(g->nodes[k].op_type, "BatchNormalization") == 0 &&
		    !g->nodes[k].domain[0])
			g->n_batchnorm++;
	colloc__graph_classify_params(g);
	return 0;
}

static void fill_limits(struct colloc_onnx_limits *out,
			const struct colloc_onnx_limits *in)
{
	memset(out, 0, sizeof(*out));
	if (in)
		*out = *in;
	if (!out->max_file_bytes)
		out->max_file_bytes = DEF_MAX_FILE;
	if (!out->max_nodes)
		out->max_nodes = DEF_MAX_NODES;
	if (!out->max_tensors)
		out->max_tensors = DEF_MAX_TENSORS;
	if (!out->max_string_bytes)
		out->max_string_bytes = DEF_MAX_STRING;
	if (!out->max_attr_elems)
		out->max_attr_elems = DEF_MAX_ATTR;
	if (!out->max_value_elems)
		out->max_value_elems = DEF_MAX_VALUE;
	if (!out->max_depth)
		out->max_depth = DEF_MAX_DEPTH;
}

/* Files people hand colloc instead of an ONNX graph, told apart by their
 * first bytes (zip local header "PK\3\4" with torch.save's data.pkl or
 * TorchScript's constants.pkl / code/ entries; pickle protocol 2-5; the
 * safetensors 8-byte little-endian header length then '{'; GGUF; HDF5).
 * Returns what the file is, or NULL. */
static bool has_bytes(const uint8_t *b, size_t n, const char *s)
{
	size_t k = strlen(s);

	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(b + i, s, k) == 0)
			return true;
	return false;
}

/* b[0..n) is the file's head, t[0..nt) its tail (where a zip's central
 * directory lists every entry; TorchScript writes its code/ last). */
static const char *foreign_format(const uint8_t *b, size_t n, const uint8_t *t, size_t nt)
{
	if (n >= 4 && memcmp(b, "PK\3\4", 4) == 0) {
		bool ts = has_bytes(b, n, "constants.pkl") ||
			  has_bytes(t, nt, "constants.pkl") || has_bytes(t, nt, "/code/");
		bool ckpt = has_bytes(b, n, "data.pkl") || has_bytes(t, nt, "data.pkl");

		return ts     ? "a TorchScript archive (torch.jit.save)"
		       : ckpt ? "a PyTorch checkpoint (torch.save)"
			      : "a zip archive";
	}
	if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
		return "a Python pickle (torch.save before PyTorch 1.6, or pickle.dump)";
	if (n >= 9 && b[8] == '{') {
		uint64_t h = 0;

		for (int i = 7; i >= 0; i--)
			h = h << 8 | b[i];
		if (h >= 2 && h < ((uint64_t)100 << 20))
			return "a safetensors file (weights only, no graph)";
	}
	if (n >= 4 && memcmp(b, "GGUF", 4) == 0)
		return "a GGUF file (weights only, no training graph)";
	if (n >= 8 && memcmp(b, "\x89HDF\r\n\x1a\n", 8) == 0)
		return "an HDF5 file (Keras weights?)";
	return NULL;
}

#define EXPORT_HINT                                                                      \
	"; export the model to ONNX first: tools/colloc-export.py FILE.py:CALLABLE "     \
	"--input SHAPE, or torch.onnx.export(model, example_input, "                     \
	"\"model.onnx\", training=torch.onnx.TrainingMode.TRAINING, "                    \
	"do_constant_folding=False, dynamic_axes={\"input\": {0: \"batch\"}}) (README, " \
	"\"Exporting your own model\")"

/* The graph of mp, a model message (unpacked or built in memory), under
 * L's limits; mp is only read. */
static int load_model(struct loader *L, const Onnx__ModelProto *mp,
		      struct colloc_graph **out)
{
	struct colloc__arena arena;
	struct colloc__graph_priv *priv;
	struct colloc_graph *g;
	int rc;

	if (!mp->graph)
		return colloc_diag_set(L->diag, COLLOC_EFORMAT,
				       "ONNX model has no graph");
	colloc__arena_init(&arena, 0);
	L->arena = &arena;
	g = colloc__arena_alloc(&arena, sizeof(*g));
	if (!g) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = convert_graph(L, mp->graph, 0, NULL, g);
	if (rc)
		goto fail;
	priv = colloc__priv(g);
	priv->root = true;
	colloc__arena_init(&priv->scratch, 0);
	g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
	for (size_t k = 0; k < mp->n_opset_import; k++) {
		const char *dom = mp->opset_import[k]->domain;

		if ((!dom || !dom[0] || strcmp(dom, "ai.onnx") == 0) &&
		    mp->opset_import[k]->has_version)
			g->opset = mp->opset_import[k]->version;
	}
	{
		char prod[160];

		snprintf(prod, sizeof(prod), "%.60s%s%.60s",
			 mp->producer_name ? mp->producer_name : "",
			 mp->producer_version && mp->producer_version[0] ? " " : "",
			 mp->producer_version ? mp->producer_version : "");
		g->producer = colloc__arena_strdup(&arena, prod);
		if (!g->producer) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	/* The arena struct was copied into priv only now that g exists. */
	priv->arena = arena;
	L->arena = NULL; /* this frame's arena: L outlives it */
	*out = g;
	return 0;

fail:
	colloc__arena_fini(&arena);
	L->arena = NULL;
	if (rc == -ENOMEM)
		colloc_diag_printf(L->diag, "out of memory while loading the model");
	return rc;
}

int colloc__onnx_load_model(const Onnx__ModelProto *mp,
			    const struct colloc_onnx_limits *limits,
			    struct colloc_graph **out, struct colloc_diag *diag)
{
	struct loader L;

	*out = NULL;
	fill_limits(&L.lim, limits);
	L.diag = diag;
	return load_model(&L, mp, out);
}

int colloc_onnx_load_buffer(const void *buf, size_t len,
			    const struct colloc_onnx_limits *limits,
			    struct colloc_graph **out, struct colloc_diag *diag)
{
	Onnx__ModelProto *mp;
	struct loader L;
	const char *what;
	int rc;

	*out = NULL;
	fill_limits(&L.lim, limits);
	L.diag = diag;
	what = foreign_format(buf, len < 65536 ? len : 65536,
			      (const uint8_t *)buf + (len > 65536 ? len - 65536 : 0),
			      len < 65536 ? len : 65536);
	if (what)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "this is %s, not an ONNX graph" EXPORT_HINT, what);
	if (len > L.lim.max_file_bytes)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "model is %zu bytes, more than the limit of %zu",
				       len, L.lim.max_file_bytes);
	if (len == 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT, "empty file");
	rc = check_nesting(buf, len, &onnx__model_proto__descriptor, 0);
	if (rc == COLLOC_ELIMIT)
		return colloc_diag_set(diag, rc,
				       "protobuf messages nested deeper than %d",
				       MAX_PB_DEPTH);
	if (rc)
		return colloc_diag_set(
			diag, rc, "not an ONNX model (protobuf wire format is broken)");
	mp = onnx__model_proto__unpack(NULL, len, buf);
	if (!mp)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "not an ONNX model (protobuf decoding failed)");
	rc = load_model(&L, mp, out);
	onnx__model_proto__free_unpacked(mp, NULL);
	return rc;
}

int colloc_onnx_load_file(const char *path, const struct colloc_onnx_limits *limits,
			  struct colloc_graph **out, struct colloc_diag *diag)
{
	struct colloc_onnx_limits lim;
	struct stat st;
	FILE *f;
	void *buf;
	size_t got;
	int rc;

	*out = NULL;
	fill_limits(&lim, limits);
	f = fopen(path, "rb");
	if (!f) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	if (fstat(fileno(f), &st) != 0) {
		rc = -errno;
		fclose(f);
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: not a regular file",
				       path);
	}
	if ((uint64_t)st.st_size > lim.max_file_bytes) {
		/* a large non-ONNX file deserves its real name, not a size error */
		static uint8_t head[65536], tail[65536];
		size_t nh = fread(head, 1, sizeof(head), f), nt = 0;
		const char *what;

		if (fseek(f, -(long)sizeof(tail), SEEK_END) == 0)
			nt = fread(tail, 1, sizeof(tail), f);
		what = foreign_format(head, nh, tail, nt);

		fclose(f);
		if (what)
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"%s: this is %s, not an ONNX graph" EXPORT_HINT, path,
				what);
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "%s: %lld bytes, more than the limit of %zu", path,
				       (long long)st.st_size, lim.max_file_bytes);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fclose(f);
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
	}
	got = fread(buf, 1, (size_t)st.st_size, f);
	if (ferror(f) || got != (size_t)st.st_size) {
		free(buf);
		fclose(f);
		return colloc_diag_set(diag, -EIO, "%s: read error", path);
	}
	fclose(f);
	rc = colloc_onnx_load_buffer(buf, got, &lim, out, diag);
	free(buf);
	if (rc)
		return colloc_diag_prefix(diag, rc, "%s", path);
	return 0;
}
