/*
 * cmd_gpus.c — `colloc gpus`: the GPUs a backend sees, with memory,
 * utilization, power and the processes on each. Without a daemon this reads
 * the backend directly (collocd will serve the same view with its jobs).
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "colloc/gpu.h"
#include "colloc/units.h"

#define MAX_PROCS 128

static const char gpus_usage[] =
	"usage: colloc gpus [--gpus SPEC] [--json]\n"
	"\n"
	"List the GPUs of a backend: UUID, name, memory used / total, utilization,\n"
	"power, and the processes holding memory on each.\n"
	"\n"
	"  --gpus SPEC   backend: sim (attach to existing simulated GPUs),\n"
	"                sim:NxSIZE[,path=FILE] (create them), default sim\n"
	"  --json        print one JSON object\n"
	"  -h, --help    this help\n"
	"\n"
	"exit status: 0 success, 1 the backend could not be read, 2 invalid command "
	"line.\n";

int cmd_gpus(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, 'g'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *spec = "sim";
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
