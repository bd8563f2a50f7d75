/*
 * onnx_builder.c — see onnx_builder.h. Test support only: every allocation
 * is recorded in the model and freed by ob_model_destroy(); running out of
 * memory aborts.
 */
#include "onnx_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ob_model {
	Onnx__ModelProto proto;
	Onnx__GraphProto *graph;
	void **allocs;
	size_t n_allocs;
	size_t cap_allocs;
};

static void *ob_alloc(struct ob_model *m, size_t size)
{
	void *p;

	if (m->n_allocs == m->cap_allocs) {
		size_t cap = m->cap_allocs ? 2 * m->cap_allocs : 64;
		void **a = realloc(m->allocs, cap * sizeof(*a));

		if (!a)
			abort();
		m->allocs = a;
		m->cap_allocs = cap;
	}
	p = calloc(1, size ? size : 1);
	if (!p)
		abort();
	m->allocs[m->n_allocs++] = p;
	return p;
}

static char *ob_strdup(struct ob_model *m, const char *s)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s);
	p = ob_alloc(m, n + 1);
	memcpy(p, s, n + 1);
	return p;
}

/*
 * Make room for element n of an array of n elements of size elem. The
 * capacity is implicit (4, 8, 16, ... : the next power of two), so a
 * protobuf struct needs no extra field; superseded arrays stay in the
 * allocation list until the model is destroyed.
 */
static void *ob_grow(struct ob_model *m, void *arr, size_t n, size_t elem)
{
	void *p;

	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return arr;
	p = ob_alloc(m, (n ? 2 * n : 4) * elem);
	if (n)
		memcpy(p, arr, n * elem);
	return p;
}

#define OB_APPEND(m, arr, n, item)                                \
	do {                                                      \
		(arr) = ob_grow((m), (arr), (n), sizeof(*(arr))); \
		(arr)[(n)++] = (item);                            \
	} while (0)

struct ob_model *ob_model_create(int64_t opset)
{
	static const Onnx__ModelProto init = ONNX__MODEL_PROTO__INIT;
	struct ob_model *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	m->proto = init;
	m->proto.has_ir_version = 1;
	m->proto.ir_version = 8;
	m->graph = ob_graph_new(m, "g");
	m->proto.graph = m->graph;
	if (opset > 0)
		ob_model_opset(m, NULL, opset);
	return m;
}

void ob_model_destroy(struct ob_model *m)
{
	if (!m)
		return;
	for (size_t k = 0; k < m->n_allocs; k++)
		free(m->allocs[k]);
	free(m->allocs);
	free(m);
}

Onnx__ModelProto *ob_model_proto(struct ob_model *m)
{
	return &m->proto;
}

Onnx__GraphProto *ob_model_graph(struct ob_model *m)
{
	return m->graph;
}

void ob_model_producer(struct ob_model *m, const char *name, const char *version)
{
	m->proto.producer_name = ob_strdup(m, name);
	m->proto.producer_version = ob_strdup(m, version);
}

void ob_model_opset(struct ob_model *m, const char *domain, int64_t version)
{
	static const Onnx__OperatorSetIdProto init = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__OperatorSetIdProto *o = ob_alloc(m, sizeof(*o));

	*o = init;
	o->domain = ob_strdup(m, domain ? domain : "");
	o->has_version = 1;
	o->version = version;
	OB_APPEND(m, m->proto.opset_import, m->proto.n_opset_import, o);
}

int ob_model_pack(const struct ob_model *m, uint8_t **buf, size_t *len)
{
	const ProtobufCMessage *msg = &m->proto.base;
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *p = malloc(n ? n : 1);

	*buf = NULL;
	*len = 0;
	if (!p)
		return -1;
	if (protobuf_c_message_pack(msg, p) != n) {
		free(p);
		return -1;
	}
	*buf = p;
	*len = n;
	return 0;
}

Onnx__GraphProto *ob_graph_new(struct ob_model *m, const char *name)
{
	static const Onnx__GraphProto init = ONNX__GRAPH_PROTO__INIT;
	Onnx__GraphProto *g = ob_alloc(m, sizeof(*g));

	*g = init;
	g->name = ob_strdup(m, name);
	return g;
}

/* Split "a,b,,c" into strings appended to (*arr, *n). */
static void ob_split(struct ob_model *m, const char *list, char ***arr, size_t *n)
{
	const char *p = list;

	if (!list || !list[0])
		return;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *s = ob_alloc(m, len + 1);

		memcpy(s, p, len);
		OB_APPEND(m, *arr, *n, s);
		if (!end)
			break;
		p = end + 1;
	}
}

static Onnx__TensorShapeProto *ob_shape(struct ob_model *m, const char *dims)
{
	static const Onnx__TensorShapeProto init = ONNX__TENSOR_SHAPE_PROTO__INIT;
	static const Onnx__TensorShapeProto__Dimension dinit =
		ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
	Onnx__TensorShapeProto *s = ob_alloc(m, sizeof(*s));
	char **parts = NULL;
	size_t n = 0;

	*s = init;
	ob_split(m, dims, &parts, &n);
	for (size_t k = 0; k < n; k++) {
		Onnx__TensorShapeProto__Dimension *d = ob_alloc(m, sizeof(*d));
		char *end;
		long long v;

		*d = dinit;
		v = strtoll(parts[k], &end, 10);
		if (parts[k][0] && !*end) {
			d->value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = v;
		} else if (strcmp(parts[k], "?") != 0) {
			d->value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = parts[k];
		}
		OB_APPEND(m, s->dim, s->n_dim, d);
	}
	return s;
}

static Onnx__ValueInfoProto *ob_vi(struct ob_model *m, const char *name, int dtype,
				   const char *dims)
{
	static const Onnx__ValueInfoProto init = ONNX__VALUE_INFO_PROTO__INIT;
	static const Onnx__TypeProto tinit = ONNX__TYPE_PROTO__INIT;
	static const Onnx__TypeProto__Tensor ttinit = ONNX__TYPE_PROTO__TENSOR__INIT;
	Onnx__ValueInfoProto *vi = ob_alloc(m, sizeof(*vi));

	*vi = init;
	vi->name = ob_strdup(m, name);
	if (dtype > 0 || dims) {
		Onnx__TypeProto *tp = ob_alloc(m, sizeof(*tp));
		Onnx__TypeProto__Tensor *tt = ob_alloc(m, sizeof(*tt));

		*tp = tinit;
		*tt = ttinit;
		if (dtype > 0) {
			tt->has_elem_type = 1;
			tt->elem_type = dtype;
		}
		if (dims)
			tt->shape = ob_shape(m, dims);
		tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
		tp->tensor_type = tt;
		vi->type = tp;
	}
	return vi;
}

Onnx__ValueInfoProto *ob_input(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       int dtype, const char *dims)
{
	Onnx__ValueInfoProto *vi = ob_vi(m, name, dtype, dims);

	OB_APPEND(m, g->input, g->n_input, vi);
	return vi;
}

Onnx__ValueInfoProto *ob_output(struct ob_model *m, Onnx__GraphProto *g, const char *name,
				int dtype, const char *dims)
{
	Onnx__ValueInfoProto *vi = ob_vi(m, name, dtype, dims);

	OB_APPEND(m, g->output, g->n_output, vi);
	return vi;
}

Onnx__ValueInfoProto *ob_value_info(struct ob_model *m, Onnx__GraphProto *g,
				    const char *name, int dtype, const char *dims)
{
	Onnx__ValueInfoProto *vi = ob_vi(m, name, dtype, dims);

	OB_APPEND(m, g->value_info, g->n_value_info, vi);
	return vi;
}

Onnx__TensorProto *ob_tensor(struct ob_model *m, const char *name, int dtype,
			     const char *dims)
{
	static const Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
	Onnx__TensorProto *t = ob_alloc(m, sizeof(*t));
	char **parts = NULL;
	size_t n = 0;

	*t = init;
	t->name = ob_strdup(m, name);
	if (dtype > 0) {
		t->has_data_type = 1;
		t->data_type = dtype;
	}
	ob_split(m, dims, &parts, &n);
	for (size_t k = 0; k < n; k++) {
		int64_t d = strtoll(parts[k], NULL, 10);

		OB_APPEND(m, t->dims, t->n_dims, d);
	}
	return t;
}

void ob_tensor_i64(struct ob_model *m, Onnx__TensorProto *t, size_t n, const int64_t *v)
{
	t->int64_data = ob_alloc(m, n * sizeof(int64_t));
	if (n)
		memcpy(t->int64_data, v, n * sizeof(int64_t));
	t->n_int64_data = n;
}

void ob_tensor_f32(struct ob_model *m, Onnx__TensorProto *t, size_t n, const float *v)
{
	t->float_data = ob_alloc(m, n * sizeof(float));
	if (n)
		memcpy(t->float_data, v, n * sizeof(float));
	t->n_float_data = n;
}

void ob_tensor_raw(struct ob_model *m, Onnx__TensorProto *t, const void *data, size_t len)
{
	t->raw_data.data = ob_alloc(m, len);
	if (len)
		memcpy(t->raw_data.data, data, len);
	t->raw_data.len = len;
	t->has_raw_data = 1;
}

void ob_tensor_external(struct ob_model *m, Onnx__TensorProto *t, const char *location)
{
	static const Onnx__StringStringEntryProto init =
		ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto *e = ob_alloc(m, sizeof(*e));

	*e = init;
	e->key = ob_strdup(m, "location");
	e->value = ob_strdup(m, location);
	OB_APPEND(m, t->external_data, t->n_external_data, e);
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

Onnx__TensorProto *ob_init(struct ob_model *m, Onnx__GraphProto *g, Onnx__TensorProto *t)
{
	OB_APPEND(m, g->initializer, g->n_initializer, t);
	return t;
}

Onnx__TensorProto *ob_init_i64(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       const char *dims, size_t n, const int64_t *v)
{
	Onnx__TensorProto *t =
		ob_tensor(m, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, dims);

	ob_tensor_i64(m, t, n, v);
	return ob_init(m, g, t);
}

Onnx__TensorProto *ob_init_f32(struct ob_model *m, Onnx__GraphProto *g, const char *name,
			       const char *dims, size_t n, const float *v)
{
	Onnx__TensorProto *t =
		ob_tensor(m, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims);

	if (v)
		ob_tensor_f32(m, t, n, v);
	return ob_init(m, g, t);
}

Onnx__NodeProto *ob_node(struct ob_model *m, Onnx__GraphProto *g, const char *op_type,
			 const char *name, const char *inputs, const char *outputs)
{
	static const Onnx__NodeProto init = ONNX__NODE_PROTO__INIT;
	Onnx__NodeProto *n = ob_alloc(m, sizeof(*n));

	*n = init;
	n->op_type = ob_strdup(m, op_type);
	n->name = ob_strdup(m, name);
	ob_split(m, inputs, &n->input, &n->n_input);
	ob_split(m, outputs, &n->output, &n->n_output);
	OB_APPEND(m, g->node, g->n_node, n);
	return n;
}

static Onnx__AttributeProto *ob_attr(struct ob_model *m, Onnx__NodeProto *n,
				     const char *name,
				     Onnx__AttributeProto__AttributeType type)
{
	static const Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
	Onnx__AttributeProto *a = ob_alloc(m, sizeof(*a));

	*a = init;
	a->name = ob_strdup(m, name);
	a->has_type = 1;
	a->type = type;
	OB_APPEND(m, n->attribute, n->n_attribute, a);
	return a;
}

void ob_attr_int(struct ob_model *m, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

void ob_attr_ints(struct ob_model *m, Onnx__NodeProto *n, const char *name, size_t count,
		  const int64_t *v)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->ints = ob_alloc(m, count * sizeof(int64_t));
	if (count)
		memcpy(a->ints, v, count * sizeof(int64_t));
	a->n_ints = count;
}

void ob_attr_float(struct ob_model *m, Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

void ob_attr_floats(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    size_t count, const float *v)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);

	a->floats = ob_alloc(m, count * sizeof(float));
	if (count)
		memcpy(a->floats, v, count * sizeof(float));
	a->n_floats = count;
}

void ob_attr_string(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    const char *v)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	size_t len = strlen(v);

	a->has_s = 1;
	a->s.data = ob_alloc(m, len);
	memcpy(a->s.data, v, len);
	a->s.len = len;
}

void ob_attr_tensor(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		    Onnx__TensorProto *t)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);

	a->t = t;
}

void ob_attr_graph(struct ob_model *m, Onnx__NodeProto *n, const char *name,
		   Onnx__GraphProto *sub)
{
	Onnx__AttributeProto *a =
		ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);

	a->g = sub;
}

uint8_t *ob_nesting_bomb(const uint8_t *head, size_t n_head, const uint8_t *cycle,
			 size_t n_cycle, size_t levels, size_t *len)
{
	size_t cap = levels * 6 + 16, pos = cap;
	uint8_t *buf = malloc(cap);

	if (!buf)
		abort();
	/* Written back to front, so every length is known when its prefix
	 * is written. */
	for (size_t k = levels; k-- > 0;) {
		size_t body = cap - pos;
		uint8_t var[10];
		size_t nv = 0;
		uint32_t field = k < n_head ? head[k] : cycle[(k - n_head) % n_cycle];

		do {
			var[nv++] = (uint8_t)((body & 0x7f) | (body > 0x7f ? 0x80 : 0));
			body >>= 7;
		} while (body);
		pos -= nv;
		memcpy(buf + pos, var, nv);
		buf[--pos] = (uint8_t)(field << 3 | 2);
	}
	*len = cap - pos;
	memmove(buf, buf + pos, *len);
	return buf;
}
