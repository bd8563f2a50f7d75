/*
 * cmd_inspect.c — `colloc inspect MODEL`: shapes, parameters and FLOPs.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/cost.h"
#include "colloc/model.h"
#include "colloc/units.h"
#include "colloc/zoo.h"

static const char inspect_usage[] =
	"usage: colloc inspect MODEL [--batch N] [--dim NAME=VALUE]... [--json]\n"
	"       colloc inspect --list\n"
	"\n"
	"Load MODEL (an .onnx file, weights optional, or a zoo name), bind its\n"
	"symbolic dimensions, infer every tensor's shape and print a per-layer\n"
	"table: output shape, trainable parameters and forward FLOPs (a\n"
	"multiply-add counts 2; see docs/flops.md), then totals.\n"
	"\n"
	"options:\n"
	"  --batch N           size of the leading dim of every input whose\n"
	"                      leading dim is symbolic (default 1)\n"
	"  --dim NAME=VALUE    bind a named symbolic dim, e.g. --dim seq=128\n"
	"                      (repeatable; overrides --batch for that name)\n"
	"  --json              print one JSON object instead of the table\n"
	"  --list              list the bundled models: zoo names, then the\n"
	"                      Hugging Face configurations as hf:NAME\n"
	"  -h, --help          this help\n"
	"\n"
	"exit status: 0 success, 1 the model could not be loaded or inferred,\n"
	"2 invalid command line.\n";

static cJSON *json_shape(const struct colloc_tensor *t)
{
	cJSON *a = cJSON_CreateArray();

	for (int d = 0; a && d < t->rank; d++)
		cJSON_AddItemToArray(a, cli_json_u64((uint64_t)t->shape[d]));
	return a;
}

static cJSON *json_tensor(const struct colloc_tensor *t, bool with_name)
{
	cJSON *o = cJSON_CreateObject();

	if (with_name)
		cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddItemToObject(o, "shape", json_shape(t));
	cJSON_AddStringToObject(o, "dtype", colloc_dtype_name(t->dtype));
	return o;
}

static int print_json(const char *model, const struct colloc_graph *g, int64_t batch,
		      const struct colloc_param_totals *pt,
		      const struct colloc_cost_totals *ct)
{
	cJSON *root = cJSON_CreateObject(), *params, *arr;
	char *text;
	int rc = CLI_OK;

	if (!root)
		goto oom;
	cJSON_AddStringToObject(root, "model", model);
	cJSON_AddItemToObject(root, "batch", cli_json_u64((uint64_t)batch));
	cJSON_AddItemToObject(root, "opset",
			      cli_json_u64((uint64_t)(g->opset > 0 ? g->opset : 0)));
	params = cJSON_AddObjectToObject(root, "params");
	cJSON_AddItemToObject(params, "trainable", cli_json_u64(pt->trainable));
	cJSON_AddItemToObject(params, "buffers", cli_json_u64(pt->buffers));
	cJSON_AddItemToObject(params, "trainable_bytes",
			      cli_json_u64(pt->trainable_bytes));
	cJSON_AddItemToObject(params, "buffer_bytes", cli_json_u64(pt->buffer_bytes));
	cJSON_AddItemToObject(root, "flops_forward", cli_json_u64(ct->flops));
	cJSON_AddItemToObject(root, "bytes_read", cli_json_u64(ct->bytes_read));
	cJSON_AddItemToObject(root, "bytes_written", cli_json_u64(ct->bytes_written));
	arr = cJSON_AddArrayToObject(root, "inputs");
	for (int i = 0; i < g->n_inputs; i++)
		cJSON_AddItemToArray(arr, json_tensor(&g->tensors[g->inputs[i]], true));
	arr = cJSON_AddArrayToObject(root, "outputs");
	for (int i = 0; i < g->n_outputs; i++)
		cJSON_AddItemToArray(arr, json_tensor(&g->tensors[g->outputs[i]], true));
	arr = cJSON_AddArrayToObject(root, "nodes");
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		cJSON *o = cJSON_CreateObject(), *outs;

		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddStringToObject(o, "op", n->op_type);
		outs = cJSON_AddArrayToObject(o, "outputs");
		for (int j = 0; j < n->n_outputs; j++)
			if (n->outputs[j] >= 0)
				cJSON_AddItemToArray(
					outs,
					json_tensor(&g->tensors[n->outputs[j]], false));
		cJSON_AddItemToObject(o, "params", cli_json_u64(n->params));
		cJSON_AddItemToObject(o, "flops", cli_json_u64(n->flops));
		cJSON_AddItemToObject(o, "bytes_read", cli_json_u64(n->bytes_read));
		cJSON_AddItemToObject(o, "bytes_written", cli_json_u64(n->bytes_written));
		cJSON_AddItemToArray(arr, o);
	}
	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto oom;
	if (puts(text) == EOF)
		rc = CLI_ERROR;
	free(text);
	cJSON_Delete(root);
	return rc;
oom:
	cJSON_Delete(root);
	cli_error("out of memory");
	return CLI_ERROR;
}

static const char *shape_str(const struct colloc_tensor *t, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (t->rank < 0)
		return "?";
	off += (size_t)snprintf(buf, len, "[");
	for (int d = 0; d < t->rank && off < len; d++)
		off += (size_t)snprintf(buf + off, len - off, "%s%lld", d ? "," : "",
					(long long)t->shape[d]);
	if (off < len)
		snprintf(buf + off, len - off, "]");
	return buf;
}

static void print_table(const char *model, const struct colloc_graph *g, int64_t batch,
			const struct colloc_param_totals *pt,
			const struct colloc_cost_totals *ct)
{
	char b1[64], b2[64], b3[64], shape[160];
	int wname = 4;

	for (int k = 0; k < g->n_nodes; k++) {
		int l = (int)strlen(g->nodes[k].name);

		if (l > wname)
			wname = l;
	}
	if (wname > 48)
		wname = 48;
	printf("model %s (opset %lld, %s), batch %lld\n", model, (long long)g->opset,
	       g->producer[0] ? g->producer : "unknown producer", (long long)batch);
	for (int i = 0; i < g->n_inputs; i++) {
		const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

		printf("input  %-20s %-10s %s\n", t->name, colloc_dtype_name(t->dtype),
		       shape_str(t, shape, sizeof(shape)));
	}
	printf("\n%5s  %-*s %-20s %-22s %12s %12s\n", "#", wname, "name", "op",
	       "output shape", "params", "FLOPs");
	for (int k = 0; k < g->n_nodes; k++) {
		const struct colloc_node *n = &g->nodes[k];
		const struct colloc_tensor *y = n->n_outputs > 0 && n->outputs[0] >= 0
							? &g->tensors[n->outputs[0]]
							: NULL;
		const char *name = n->name;
		int l = (int)strlen(name);

		/* Keep the tail of long names: it names the layer. */
		if (l > wname)
			name += l - wname;
		printf("%5d  %-*s %-20.20s %-22s %12llu %12s\n", k, wname, name,
		       n->op_type, y ? shape_str(y, shape, sizeof(shape)) : "-",
		       (unsigned long long)n->params,
		       colloc_format_count(n->flops, b1, sizeof(b1)));
	}
	printf("\n");
	for (int i = 0; i < g->n_outputs; i++) {
		const struct colloc_tensor *t = &g->tensors[g->outputs[i]];

		/* t is an element's address, never NULL (analyser FP). */
		printf("output %-20s %-10s %s\n", t->name, // NOLINT
		       colloc_dtype_name(t->dtype), shape_str(t, shape, sizeof(shape)));
	}
	printf("nodes            %d\n", g->n_nodes);
	printf("trainable params %llu (%s)\n", (unsigned long long)pt->trainable,
	       colloc_format_bytes(pt->trainable_bytes, b1, sizeof(b1)));
	printf("buffers          %llu (%s)\n", (unsigned long long)pt->buffers,
	       colloc_format_bytes(pt->buffer_bytes, b2, sizeof(b2)));
	printf("forward FLOPs    %llu (%sFLOP)\n", (unsigned long long)ct->flops,
	       colloc_format_count(ct->flops, b3, sizeof(b3)));
	printf("bytes read       %s, written %s\n",
	       colloc_format_bytes(ct->bytes_read, b1, sizeof(b1)),
	       colloc_format_bytes(ct->bytes_written, b2, sizeof(b2)));
}

static int list_zoo(void)
{
	char *names[512];
	int n = colloc_zoo_list(names, 512);

	if (n < 0) {
		cli_error("cannot list %s/zoo: %s", colloc_data_dir(),
			  colloc_strerror(n));
		return CLI_ERROR;
	}
	for (int k = 0; k < n && k < 512; k++) {
		puts(names[k]);
		free(names[k]);
	}
	n = colloc_hf_list(names, 512);
	if (n < 0) {
		cli_error("cannot list %s/hf: %s", colloc_data_dir(), colloc_strerror(n));
		return CLI_ERROR;
	}
	for (int k = 0; k < n && k < 512; k++) {
		printf("hf:%s\n", names[k]);
		free(names[k]);
	}
	return CLI_OK;
}

int cmd_inspect(int argc, char **argv)
{
	static const struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"dim", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"list", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_dims dims = {0};
	struct colloc_diag diag = {{0}};
	struct colloc_model *m = NULL;
	struct colloc_graph *g;
	struct colloc_param_totals pt;
	struct colloc_cost_totals ct;
	struct colloc_model_dims md;
	bool json = false, list = false;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cli_parse_batch(optarg, &dims))
				return CLI_USAGE;
			break;
		case 'd':
			if (cli_parse_dim(optarg, &dims))
				return CLI_USAGE;
			break;
		case 'j':
			json = true;
			break;
		case 'l':
			list = true;
			break;
		case 'h':
			fputs(inspect_usage, stdout);
			return CLI_OK;
		default:
			cli_error("inspect: unknown or incomplete option '%s' (see "
				  "`colloc inspect --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (list)
		return list_zoo();
	if (optind != argc - 1) {
		cli_error(optind >= argc ? "inspect: MODEL is missing (see `colloc "
					   "inspect --help`)"
					 : "inspect: exactly one MODEL, got extra "
					   "argument '%s'",
			  optind < argc ? argv[optind + 1] : "");
		return CLI_USAGE;
	}
	if ((rc = cli_model_open(argv[optind], NULL, &m)))
		return rc;
	g = m->graph;
	md.batch = dims.batch ? dims.batch : 1;
	md.seq = dims.seq;
	md.dims = dims.dims;
	md.n_dims = dims.n_dims;
	md.use_defaults = true;
	/* A model with a fixed batch is fine when --batch was not asked for. */
	if (!dims.batch) {
		bool symbolic = false;

		for (int i = 0; i < g->n_inputs; i++) {
			const struct colloc_tensor *t = &g->tensors[g->inputs[i]];

			if (t->decl_rank > 0 && t->decl[0].value < 0)
				symbolic = true;
		}
		if (!symbolic)
			md.batch = 0;
	}
	rc = colloc_model_infer(m, &md, &diag);
	if (rc) {
		cli_error("%s: %s", argv[optind], diag.msg);
		colloc_model_destroy(m);
		return rc == COLLOC_EUSAGE || rc == COLLOC_EUNBOUND ? CLI_USAGE
								    : CLI_ERROR;
	}
	colloc_graph_param_totals(g, &pt);
	colloc_graph_cost(g, &ct);
	/* inspect still describes such a graph; estimate refuses it */
	if (colloc_graph_check_params(g, &diag))
		fprintf(stderr, "colloc: warning: %s: parameter counts are wrong: %s\n",
			argv[optind], diag.msg);
	{
		int64_t batch = md.batch;

		if (batch <= 0 && g->n_inputs > 0 && g->tensors[g->inputs[0]].rank > 0)
			batch = g->tensors[g->inputs[0]].shape[0];
		if (json)
			rc = print_json(argv[optind], g, batch, &pt, &ct);
		else
			print_table(argv[optind], g, batch, &pt, &ct), rc = CLI_OK;
	}
	colloc_model_destroy(m);
	if (fflush(stdout) != 0) {
		cli_error("cannot write output");
		return CLI_ERROR;
	}
	return rc;
}
