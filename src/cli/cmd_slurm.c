/*
 * cmd_slurm.c — `colloc slurm-gres`: the gres.conf and slurm.conf lines that
 * give each GPU of a node as many Slurm shards as it has GiB (or
 * --shard-size units) of memory, and the job_submit.lua settings that go
 * with them (docs/slurm.md). The GPUs come from a backend, as in
 * `colloc gpus --gpus SPEC` (NVML where the node has NVIDIA GPUs, else the
 * simulated ones), or from platform profiles (data/platforms) for a node
 * that is not this machine.
 *
 * It only prints; it never edits Slurm's files nor talks to Slurm.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli/cli.h"
#include "colloc/gpu.h"
#include "colloc/platform.h"
#include "colloc/units.h"

#define MAX_GPUS 64
#define MAX_PLATFORMS 16
#define NODE_MAX 128
#define PREFIX_MAX 256

static const char slurm_gres_usage[] =
	"usage: colloc slurm-gres [--gpus SPEC | --platform NAME[xN][,NAME[xN]...]]\n"
	"           [--shard-size SIZE] [--reserve SIZE] [--node NAME]\n"
	"           [--device-prefix PATH]\n"
	"\n"
	"Print the Slurm configuration that shares this node's GPUs by memory\n"
	"(gres/shard, one shard = --shard-size of a GPU's memory): the slurm.conf\n"
	"lines, the gres.conf lines (one shard count per GPU, from its memory) and\n"
	"the colloc_submit.conf keys job_submit.lua needs to refuse a job larger\n"
	"than any GPU. Paste them in; see docs/slurm.md.\n"
	"\n"
	"  --gpus SPEC        read the GPUs from this backend, as `colloc gpus\n"
	"                     --gpus`: nvml, sim:NxSIZE, or auto (default: NVML\n"
	"                     when this machine has NVIDIA GPUs, else 4 simulated\n"
	"                     40 GiB GPUs, said in a comment)\n"
	"  --platform LIST    GPUs of platform profiles instead (data/platforms,\n"
	"                     `colloc estimate --list-platforms`); NAMExN for N of\n"
	"                     them, e.g. a100-80gb-cu124-torch26x4\n"
	"  --shard-size SIZE  GPU memory per shard (default 1GiB); must match\n"
	"                     job_submit.lua's shard_size and the SPANK plugin's\n"
	"  --reserve SIZE     memory of each GPU kept out of shards (MPS server,\n"
	"                     driver; default 0)\n"
	"  --node NAME        NodeName in the lines (default: this host's name)\n"
	"  --device-prefix P  device files are P0, P1, ... (default /dev/nvidia)\n"
	"  -h, --help         this help\n"
	"\n"
	"exit status: 0 success, 1 the GPUs could not be read or a GPU has no\n"
	"shard, 2 invalid command line.\n";

struct slurm_gpu {
	char name[COLLOC_GPU_NAME_MAX];
	uint64_t mem_bytes;
};

/* "NAME" or "NAMExN" into gpus[*n ...]; CLI_OK, CLI_USAGE or CLI_ERROR. */
static int add_platform(char *item, struct slurm_gpu *gpus, size_t *n)
{
	struct colloc_platform p;
	uint64_t count = 1;
	char *x = strrchr(item, 'x');

	/* A trailing "xN" is a count only when N is all digits: profile
	 * names contain x too (rtx3060). */
	if (x && x[1] && strspn(x + 1, "0123456789") == strlen(x + 1)) {
		if (colloc_parse_u64(x + 1, MAX_GPUS, &count) || count == 0) {
			cli_error("slurm-gres: --platform %s: count must be 1..%d", item,
				  MAX_GPUS);
			return CLI_USAGE;
		}
		*x = '\0';
	}
	if (cli_platform_load(item, &p))
		return CLI_USAGE;
	if (!p.gpu_memory_bytes) {
		cli_error("slurm-gres: platform %s records no GPU memory size", item);
		return CLI_ERROR;
	}
	for (uint64_t k = 0; k < count; k++) {
		if (*n >= MAX_GPUS) {
			cli_error("slurm-gres: more than %d GPUs", MAX_GPUS);
			return CLI_USAGE;
		}
		snprintf(gpus[*n].name, sizeof(gpus[*n].name), "%s",
			 p.gpu[0] ? p.gpu : p.name);
		gpus[*n].mem_bytes = p.gpu_memory_bytes;
		(*n)++;
	}
	return CLI_OK;
}

/* The GPUs the backend spec sees; note gets what "auto" chose. */
static int backend_gpus(const char *spec, struct slurm_gpu *gpus, size_t *n, char *note,
			size_t note_len)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	unsigned count = 0;
	int rc;

	note[0] = '\0';
	if (strcmp(spec, "auto") == 0)
		rc = colloc_gpu_open_auto("sim:4x40GiB", &gpu, note, note_len, &diag);
	else
		rc = colloc_gpu_open(spec, &gpu, &diag);
	if (rc || colloc_gpu_count(gpu, &count, &diag)) {
		cli_error("slurm-gres: %s", diag.msg);
		colloc_gpu_close(gpu);
		return rc == COLLOC_EUSAGE ? CLI_USAGE : CLI_ERROR;
	}
	if (count > MAX_GPUS) {
		cli_error("slurm-gres: %u GPUs, more than the %d this command lists",
			  count, MAX_GPUS);
		colloc_gpu_close(gpu);
		return CLI_ERROR;
	}
	for (unsigned k = 0; k < count; k++) {
		struct colloc_gpu_info gi;

		if (colloc_gpu_info(gpu, k, &gi, &diag)) {
			cli_error("slurm-gres: %s", diag.msg);
			colloc_gpu_close(gpu);
			return CLI_ERROR;
		}
		snprintf(gpus[k].name, sizeof(gpus[k].name), "%s", gi.name);
		/* NVML's v2 total counts driver-reserved memory no job gets. */
		gpus[k].mem_bytes = gi.mem_total_bytes;
		if (gi.mem_reserved_bytes > 0 &&
		    (uint64_t)gi.mem_reserved_bytes < gpus[k].mem_bytes)
			gpus[k].mem_bytes -= (uint64_t)gi.mem_reserved_bytes;
	}
	*n = count;
	colloc_gpu_close(gpu);
	return CLI_OK;
}

static void print_config(const struct slurm_gpu *gpus, size_t n, const uint64_t *shards,
			 uint64_t shard_bytes, uint64_t reserve, const char *node,
			 const char *prefix, const char *source)
{
	uint64_t total = 0, max = 0;
	char b1[32], b2[32];

	for (size_t k = 0; k < n; k++) {
		total += shards[k];
		if (shards[k] > max)
			max = shards[k];
	}
	printf("# colloc slurm-gres: %zu GPU%s from %s; 1 shard = %s", n,
	       n == 1 ? "" : "s", source,
	       colloc_format_bytes(shard_bytes, b1, sizeof(b1)));
	if (reserve)
		printf(", %s of each GPU kept out",
		       colloc_format_bytes(reserve, b2, sizeof(b2)));
	printf("\n");
	for (size_t k = 0; k < n; k++)
		printf("#   %s%zu  %-32s %10s  %llu shards\n", prefix, k, gpus[k].name,
		       colloc_format_bytes(gpus[k].mem_bytes, b1, sizeof(b1)),
		       (unsigned long long)shards[k]);
	printf("\n# slurm.conf (never list gres/mps beside gres/shard)\n");
	printf("GresTypes=gpu,shard\n");
	printf("SelectType=select/cons_tres\n");
	printf("JobSubmitPlugins=lua\n");
	printf("NodeName=%s Gres=gpu:%zu,shard:%llu\n", node, n,
	       (unsigned long long)total);
	printf("\n# gres.conf (File= is the GPU's device; check that %sN is GPU N)\n",
	       prefix);
	for (size_t k = 0; k < n; k++)
		printf("NodeName=%s Name=gpu File=%s%zu\n", node, prefix, k);
	for (size_t k = 0; k < n; k++)
		printf("NodeName=%s Name=shard Count=%llu File=%s%zu\n", node,
		       (unsigned long long)shards[k], prefix, k);
	printf("\n# colloc_submit.conf, next to job_submit.lua (the largest GPU of all\n"
	       "# nodes is what max_shards_per_gpu must say)\n");
	printf("shard_size=%llu\n", (unsigned long long)shard_bytes);
	printf("max_shards_per_gpu=%llu\n", (unsigned long long)max);
}

int cmd_slurm_gres(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, 'g'},
		{"platform", required_argument, NULL, 'p'},
		{"shard-size", required_argument, NULL, 's'},
		{"reserve", required_argument, NULL, 'r'},
		{"node", required_argument, NULL, 'n'},
		{"device-prefix", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *spec = NULL, *platforms = NULL, *node = NULL;
	const char *prefix = "/dev/nvidia";
	struct slurm_gpu gpus[MAX_GPUS];
	uint64_t shards[MAX_GPUS], shard_bytes = (uint64_t)1 << 30, reserve = 0;
	char note[512], source[600], list[1024], host[NODE_MAX];
	struct utsname un;
	size_t n = 0;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			spec = optarg;
			break;
		case 'p':
			platforms = optarg;
			break;
		case 's':
			if (colloc_parse_size(optarg, &shard_bytes) ||
			    shard_bytes < ((uint64_t)1 << 20)) {
				cli_error("slurm-gres: --shard-size wants a size of at "
					  "least "
					  "1MiB, e.g. 1GiB or 512MiB, not '%s'",
					  optarg);
				return CLI_USAGE;
			}
			break;
		case 'r':
			if (colloc_parse_size(optarg, &reserve)) {
				cli_error("slurm-gres: --reserve wants a size, e.g. "
					  "512MiB, "
					  "not '%s'",
					  optarg);
				return CLI_USAGE;
			}
			break;
		case 'n':
			node = optarg;
			break;
		case 'd':
			prefix = optarg;
			break;
		case 'h':
			fputs(slurm_gres_usage, stdout);
			return CLI_OK;
		default:
			cli_error("slurm-gres: unknown or incomplete option '%s' (see "
				  "`colloc "
				  "slurm-gres --help`)",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("slurm-gres: unexpected argument '%s'", argv[optind]);
		return CLI_USAGE;
	}
	if (spec && platforms) {
		cli_error(
			"slurm-gres: --gpus reads this machine's GPUs, --platform names "
			"them; choose one");
		return CLI_USAGE;
	}
	if (!prefix || strlen(prefix) >= PREFIX_MAX || strpbrk(prefix, " \t\n")) {
		cli_error("slurm-gres: --device-prefix must be a path without spaces");
		return CLI_USAGE;
	}
	if (!node) {
		if (uname(&un) == 0) {
			snprintf(host, sizeof(host), "%s", un.nodename);
			host[strcspn(host, ".")] = '\0';
		} else {
			snprintf(host, sizeof(host), "NODE");
		}
		node = host;
	}
	if (!*node || strlen(node) >= NODE_MAX || strpbrk(node, " \t\n=")) {
		cli_error("slurm-gres: --node wants a node name without spaces or '='");
		return CLI_USAGE;
	}
	if (platforms) {
		char *save = NULL, *item;

		if (strlen(platforms) >= sizeof(list)) {
			cli_error("slurm-gres: --platform list longer than %zu bytes",
				  sizeof(list) - 1);
			return CLI_USAGE;
		}
		snprintf(list, sizeof(list), "%s", platforms);
		for (item = strtok_r(list, ",", &save); item;
		     item = strtok_r(NULL, ",", &save))
			if ((rc = add_platform(item, gpus, &n)))
				return rc;
		if (n == 0) {
			cli_error("slurm-gres: --platform names no profile");
			return CLI_USAGE;
		}
		snprintf(source, sizeof(source), "platform profiles %s", platforms);
	} else {
		if (!spec)
			spec = "auto";
		if ((rc = backend_gpus(spec, gpus, &n, note, sizeof(note))))
			return rc;
		if (n == 0) {
			cli_error("slurm-gres: the backend %s sees no GPU", spec);
			return CLI_ERROR;
		}
		if (note[0])
			snprintf(source, sizeof(source), "%s (%s)", spec, note);
		else
			snprintf(source, sizeof(source), "%s", spec);
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t usable =
			gpus[k].mem_bytes > reserve ? gpus[k].mem_bytes - reserve : 0;

		shards[k] = usable / shard_bytes;
		if (shards[k] == 0) {
			char b1[32], b2[32];

			cli_error(
				"slurm-gres: GPU %zu (%s, %s) has less than one shard of "
				"%s; use a smaller --shard-size or --reserve",
				k, gpus[k].name,
				colloc_format_bytes(gpus[k].mem_bytes, b1, sizeof(b1)),
				colloc_format_bytes(shard_bytes, b2, sizeof(b2)));
			return CLI_ERROR;
		}
	}
	print_config(gpus, n, shards, shard_bytes, reserve, node, prefix, source);
	return CLI_OK;
}
