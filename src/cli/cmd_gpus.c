/*
 * cmd_gpus.c — `colloc gpus`: the GPUs, with memory, utilization, power and
 * what runs on each. When collocd answers on its socket this is its view
 * (GET /v1/gpus: the jobs on each GPU and the memory held back for them);
 * with --gpus SPEC, or when no daemon runs, it reads the backend directly
 * and lists processes instead of jobs.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json_get.h"
#include "colloc/gpu.h"
#include "colloc/units.h"

#define MAX_PROCS 128

static const char gpus_usage[] =
	"usage: colloc gpus [--gpus SPEC | --socket PATH] [--json]\n"
	"\n"
	"List the GPUs: UUID, name, memory used / total, utilization, power, and\n"
	"what runs on each.\n"
	"\n"
	"When collocd answers on its socket, this is collocd's view: a RESERVED\n"
	"column (memory held back for jobs that started but have not reached their\n"
	"need yet) and the ids of the jobs on each GPU (other users' jobs count in\n"
	"memory but their ids are shown only to administrators). Processes on a\n"
	"GPU that belong to no job collocd runs (a job's leftovers, work started\n"
	"outside collocd) follow the jobs as \"+N not collocd's (SIZE): pid ...\"\n"
	"(pids for administrators); their memory counts as used. Otherwise, or\n"
	"with --gpus, it reads the backend directly and lists the processes\n"
	"holding memory (pid:memory).\n"
	"\n"
	"  --gpus SPEC     read this backend directly: sim (attach to existing\n"
	"                  simulated GPUs), sim:NxSIZE[,path=FILE] (create them)\n"
	"  --socket PATH   collocd's socket; an explicit one that does not answer\n"
	"                  is an error (default: $COLLOC_SOCKET, else\n"
	"                  $XDG_RUNTIME_DIR/collocd.sock, else "
	"/tmp/colloc-UID/collocd.sock;\n"
	"                  when no daemon answers there, the backend sim is read)\n"
	"  --json          print one JSON object (from collocd: its answer as is)\n"
	"  -h, --help      this help\n"
	"\n"
	"exit status: 0 success, 1 the backend could not be read or collocd\n"
	"refused, 2 invalid command line, 3 collocd (given by --socket or\n"
	"COLLOC_SOCKET) could not be reached.\n";

static const char *jbytes(const cJSON *o, const char *key, char *buf, size_t len)
{
	double d;

	if (!cli_jnum(o, key, &d) || d < 0 || d >= 18446744073709551616.0)
		return "-";
	return colloc_format_bytes((uint64_t)d, buf, len);
}

/* A GPU's processes of no job, after its jobs: "  +2 not collocd's
 * (3.00 GiB): pid 41 (2.00 GiB), pid 42 (1.00 GiB)"; nothing when none. */
static void print_unowned(const cJSON *u)
{
	const cJSON *list = u ? cli_jarray(u, "list") : NULL, *p;
	char b[32];
	double n;
	bool first = true;

	if (!u || !cli_jnum(u, "processes", &n) || n < 1 || n > 1e9)
		return;
	printf("  +%.0f not collocd's (%s)", n,
	       jbytes(u, "mem_used_bytes", b, sizeof(b)));
	cJSON_ArrayForEach(p, list)
	{
		double pid;

		if (!cli_jnum(p, "pid", &pid) || pid < 0 || pid > 1e12)
			continue;
		printf("%s pid %.0f (%s)", first ? ":" : ",", pid,
		       jbytes(p, "mem_used_bytes", b, sizeof(b)));
		first = false;
	}
}

/* collocd's GET /v1/gpus as a table; missing fields print as "-". */
static void print_daemon_gpus(const cJSON *root)
{
	const cJSON *gpus = cli_jarray(root, "gpus"), *g;
	int k = 0;

	printf("%-3s %-42s %-20s %21s %10s %5s %8s  %s\n", "#", "uuid", "name",
	       "memory used/total", "reserved", "util", "power", "jobs");
	cJSON_ArrayForEach(g, gpus)
	{
		const char *uuid = cli_jstr(g, "uuid");
		const char *name = cli_jstr(g, "name");
		const cJSON *jobs = cli_jarray(g, "jobs"), *j;
		char b1[32], b2[32], b3[32], idx[16];
		double d;
		bool first = true;

		if (cli_jnum(g, "index", &d) && d >= 0 && d < 1e6)
			snprintf(idx, sizeof(idx), "%.0f", d);
		else
			snprintf(idx, sizeof(idx), "%d", k);
		k++;
		printf("%-3s %-42.42s %-20.20s %10s/%-10s %10s", idx, uuid ? uuid : "-",
		       name ? name : "-", jbytes(g, "mem_used_bytes", b1, sizeof(b1)),
		       jbytes(g, "mem_total_bytes", b2, sizeof(b2)),
		       jbytes(g, "mem_reserved_bytes", b3, sizeof(b3)));
		if (cli_jnum(g, "util_pct", &d))
			printf(" %4.0f%%", d);
		else
			printf(" %5s", "-");
		if (cli_jnum(g, "power_mw", &d))
			printf(" %6.0f W ", d / 1000.0);
		else
			printf(" %8s ", "-");
		putchar(' ');
		cJSON_ArrayForEach(j, jobs)
		{
			if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble))
				continue;
			printf("%s%.0f", first ? "" : ",", j->valuedouble);
			first = false;
		}
		if (first)
			putchar('-');
		print_unowned(cli_jobject(g, "unowned"));
		putchar('\n');
	}
}

/*
 * Show collocd's view when a daemon answers. Returns an exit status, or -1
 * when nobody answers on a socket that was not asked for by name (the
 * caller then reads the backend as before collocd existed).
 */
static int daemon_gpus(const char *socket_opt, bool json)
{
	struct cli_client c;
	struct cli_response r;
	bool named = cli_socket_is_explicit(socket_opt);
	int rc;

	if (!named) {
		char path[CLI_SOCKET_PATH_MAX + 64];

		/* A default path that cannot be used is no daemon either. */
		if (cli_socket_resolve(socket_opt, path, sizeof(path)) ||
		    cli_client_init(&c, path))
			return -1;
	} else if ((rc = cli_client_open(&c, socket_opt))) {
		return rc;
	}
	cli_response_init(&r);
	rc = cli_client_request(&c, "GET", "/v1/gpus", NULL, &r);
	if (rc == CLI_CLIENT_ECONNECT && !named) {
		cli_client_fini(&c);
		return -1;
	}
	rc = cli_client_result(&c, rc, &r, NULL);
	if (rc == CLI_OK) {
		cJSON *root = cli_response_json(&r, "gpus");

		if (!root) {
			rc = CLI_ERROR;
		} else if (json) {
			rc = cli_response_print(&r);
		} else {
			print_daemon_gpus(root);
		}
		cJSON_Delete(root);
	}
	cli_response_fini(&r);
	cli_client_fini(&c);
	return rc;
}

int cmd_gpus(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, 'g'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *spec = NULL, *socket = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	struct colloc_gpu_process procs[MAX_PROCS];
	cJSON *root = NULL, *arr = NULL;
	bool json = false;
	unsigned n = 0;
	int c, rc = CLI_OK;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			spec = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			fputs(gpus_usage, stdout);
			return CLI_OK;
		default:
			cli_error("gpus: unknown or incomplete option '%s' (see `colloc "
				  "gpus --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("gpus: unexpected argument '%s'", argv[optind]);
		return CLI_USAGE;
	}
	if (spec && socket) {
		cli_error("gpus: --gpus reads a backend, --socket asks collocd; choose "
			  "one");
		return CLI_USAGE;
	}
	if (!spec) {
		rc = daemon_gpus(socket, json);
		if (rc >= 0)
			return rc;
		rc = CLI_OK;
		spec = "sim";
	}
	if (colloc_gpu_open(spec, &gpu, &diag) || colloc_gpu_count(gpu, &n, &diag)) {
		cli_error("%s", diag.msg);
		colloc_gpu_close(gpu);
		return CLI_ERROR;
	}
	if (json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "backend", colloc_gpu_backend_name(gpu));
		arr = cJSON_AddArrayToObject(root, "gpus");
	} else {
		printf("%-3s %-42s %-20s %21s %5s %8s  %s\n", "#", "uuid", "name",
		       "memory used/total", "util", "power", "processes (pid:memory)");
	}
	for (unsigned k = 0; k < n && rc == CLI_OK; k++) {
		struct colloc_gpu_info gi;
		size_t np = 0;
		char b1[32], b2[32];

		if (colloc_gpu_info(gpu, k, &gi, &diag) ||
		    colloc_gpu_processes(gpu, k, procs, MAX_PROCS, &np, &diag)) {
			cli_error("%s", diag.msg);
			rc = CLI_ERROR;
			break;
		}
		if (np > MAX_PROCS)
			np = MAX_PROCS;
		if (json) {
			cJSON *o = cJSON_CreateObject(), *pa;

			cJSON_AddNumberToObject(o, "index", k);
			cJSON_AddStringToObject(o, "uuid", gi.uuid);
			cJSON_AddStringToObject(o, "name", gi.name);
			cJSON_AddStringToObject(o, "pci_bus_id", gi.pci_bus_id);
			cJSON_AddNumberToObject(o, "mem_total_bytes",
						(double)gi.mem_total_bytes);
			cJSON_AddNumberToObject(o, "mem_used_bytes",
						(double)gi.mem_used_bytes);
			cJSON_AddNumberToObject(o, "mem_free_bytes",
						(double)gi.mem_free_bytes);
			if (gi.util_pct >= 0)
				cJSON_AddNumberToObject(o, "util_pct", gi.util_pct);
			else
				cJSON_AddNullToObject(o,
						      "util_pct"); /* absent, never 0 */
			if (gi.power_mw >= 0)
				cJSON_AddNumberToObject(o, "power_mw",
							(double)gi.power_mw);
			else
				cJSON_AddNullToObject(o, "power_mw");
			pa = cJSON_AddArrayToObject(o, "processes");
			for (size_t i = 0; i < np; i++) {
				cJSON *po = cJSON_CreateObject();

				cJSON_AddNumberToObject(po, "pid", procs[i].pid);
				cJSON_AddNumberToObject(po, "used_bytes",
							(double)procs[i].used_bytes);
				cJSON_AddItemToArray(pa, po);
			}
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		printf("%-3u %-42s %-20.20s %10s/%-10s", k, gi.uuid, gi.name,
		       colloc_format_bytes(gi.mem_used_bytes, b1, sizeof(b1)),
		       colloc_format_bytes(gi.mem_total_bytes, b2, sizeof(b2)));
		if (gi.util_pct >= 0)
			printf(" %4d%%", gi.util_pct);
		else
			printf(" %5s", "-");
		if (gi.power_mw >= 0)
			printf(" %6.0f W ", (double)gi.power_mw / 1000.0);
		else
			printf(" %8s ", "-");
		for (size_t i = 0; i < np; i++)
			printf(" %d:%s", (int)procs[i].pid,
			       colloc_format_bytes(procs[i].used_bytes, b1, sizeof(b1)));
		printf("\n");
	}
	if (json && rc == CLI_OK) {
		char *text = cJSON_PrintUnformatted(root);

		if (text)
			puts(text);
		else
			rc = CLI_ERROR;
		free(text);
	}
	cJSON_Delete(root);
	colloc_gpu_close(gpu);
	return rc;
}
