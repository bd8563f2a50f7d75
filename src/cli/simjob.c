/*
 * simjob.c — `colloc-simjob`: a stand-in for a GPU training job on simulated
 * GPUs (colloc/simgpu.h). It takes memory on the GPUs CUDA_VISIBLE_DEVICES
 * names, ramping up, holds it, gives it back and exits; when a GPU is full it
 * dies the way PyTorch does. collocd's tests and demos launch it instead of
 * real training. It computes nothing. See docs/simjob.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colloc/gpu.h"
#include "colloc/simgpu.h"
#include "colloc/units.h"

#define MAX_VISIBLE COLLOC_SIMGPU_MAX_GPUS
#define RAMP_STEPS 4

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char usage[] =
	"usage: colloc-simjob --mem SIZE --duration DURATION [--ramp DURATION]\n"
	"                     [--util PCT] [--gpus ID[,ID...]] [--state FILE]\n"
	"       colloc-simjob --setup sim:NxSIZE[,path=FILE]\n"
	"       colloc-simjob --list [--state FILE]\n"
	"\n"
	"A pretend training job on simulated GPUs: takes SIZE of memory on each of\n"
	"its GPUs (linearly in 4 steps over --ramp), holds it for --duration, gives\n"
	"it back and exits 0. When a GPU has too little memory free it prints\n"
	"PyTorch's 'torch.OutOfMemoryError: CUDA out of memory. ...' and exits 1.\n"
	"\n"
	"  --mem SIZE          memory per GPU, e.g. 600MiB, 2GiB\n"
	"  --duration D        how long to hold it once allocated: 2s, 500ms, 1m\n"
	"  --ramp D            time to reach SIZE (default 0: all at once)\n"
	"  --util PCT          utilization the job causes on each GPU, 0-100 (100)\n"
	"  --gpus ID,...       GPU UUIDs or indices (default: $CUDA_VISIBLE_DEVICES,\n"
	"                      and GPU 0 when that is unset)\n"
	"  --state FILE        the simulated GPUs' state file (default:\n"
	"                      $COLLOC_SIM_STATE, $XDG_RUNTIME_DIR/colloc-sim.state,\n"
	"                      /tmp/colloc-sim-UID.state)\n"
	"  --setup SPEC        create (or reshape) simulated GPUs; print their UUIDs\n"
	"  --list              print the simulated GPUs and their processes\n"
	"  -h, --help          this help\n"
	"\n"
	"exit status: 0 done, 1 out of memory or an error, 2 invalid command line,\n"
	"128+N killed by signal N (SIGTERM: 143), after giving its memory back.\n";

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("colloc-simjob: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see colloc-simjob --help)\n", stderr);
}

/* c10's format_size(), so that the message reads exactly as PyTorch's. */
static const char *torch_size(uint64_t size, char *buf, size_t len)
{
	if (size <= 1024)
		snprintf(buf, len, "%llu bytes", (unsigned long long)size);
	else if (size <= 1048576)
		snprintf(buf, len, "%.2f KiB", (double)size / 1024.0);
	else if (size <= 1073741824ULL)
		snprintf(buf, len, "%.2f MiB", (double)size / 1048576.0);
	else
		snprintf(buf, len, "%.2f GiB", (double)size / 1073741824.0);
	return buf;
}

/* Sleep ms, or less when a signal arrives. */
static void nap_ms(uint64_t ms)
{
	struct timespec now, end, left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(ms / 1000);
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (!got_signal) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			return;
		/* EINTR: the handler ran; the loop condition sees it. */
		(void)nanosleep(&left, NULL);
	}
}

struct job {
	struct colloc_simgpu *sim;
	unsigned gpus[MAX_VISIBLE];
	unsigned n_gpus;
};

static void release_all(const struct job *job)
{
	struct colloc_diag diag = {{0}};

	for (unsigned i = 0; i < job->n_gpus; i++)
		if (colloc_simgpu_release(job->sim, job->gpus[i], (int64_t)getpid(),
					  &diag) < 0)
			fprintf(stderr, "colloc-simjob: warning: %s\n", diag.msg);
}

/* Resolve a comma-separated list of UUIDs or indices into job->gpus. */
static int pick_gpus(struct job *job, const char *list)
{
	const char *p = list;
	struct colloc_diag diag = {{0}};

	job->n_gpus = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char id[COLLOC_GPU_UUID_MAX];

		if (len == 0 || len >= sizeof(id)) {
			fprintf(stderr, "colloc-simjob: error: bad GPU list '%.200s'\n",
				list);
			return EXIT_FAIL;
		}
		if (job->n_gpus >= MAX_VISIBLE) {
			fprintf(stderr, "colloc-simjob: error: more than %d GPUs\n",
				MAX_VISIBLE);
			return EXIT_FAIL;
		}
		memcpy(id, p, len);
		id[len] = '\0';
		if (colloc_simgpu_find(job->sim, id, &job->gpus[job->n_gpus], &diag) <
		    0) {
			fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
			return EXIT_FAIL;
		}
		for (unsigned k = 0; k < job->n_gpus; k++) {
			if (job->gpus[k] == job->gpus[job->n_gpus]) {
				fprintf(stderr,
					"colloc-simjob: error: GPU '%s' is listed "
					"twice\n",
					id);
				return EXIT_FAIL;
			}
		}
		job->n_gpus++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (job->n_gpus == 0) {
		/* What torch.cuda says when CUDA_VISIBLE_DEVICES is "". */
		fputs("RuntimeError: No CUDA GPUs are available\n", stderr);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Report an allocation that did not fit, as PyTorch does. */
static void report_oom(struct job *job, unsigned visible, uint64_t bytes)
{
	struct colloc_gpu_info info;
	struct colloc_diag diag = {{0}};
	char want[32], total[32], left[32];

	if (colloc_simgpu_info(job->sim, job->gpus[visible], &info, &diag) < 0) {
		info.mem_total_bytes = 0;
		info.mem_free_bytes = 0;
	}
	fprintf(stderr,
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU "
		"%u "
		"has a total capacity of %s of which %s is free.\n",
		torch_size(bytes, want, sizeof(want)), visible,
		torch_size(info.mem_total_bytes, total, sizeof(total)),
		torch_size(info.mem_free_bytes, left, sizeof(left)));
}

static int run_job(struct job *job, uint64_t mem, uint64_t ramp_ms, uint64_t hold_ms,
		   unsigned util)
{
	unsigned steps = ramp_ms > 0 ? RAMP_STEPS : 1;
	uint64_t done = 0;
	char size[32];

	for (unsigned s = 1; s <= steps && !got_signal; s++) {
		/* Linear: step s brings the total to s/steps of mem, the last
		 * one exactly at the end of the ramp. */
		uint64_t target = s == steps ? mem : mem / steps * s;
		uint64_t step = target - done;

		if (s > 1)
			nap_ms(ramp_ms / (steps - 1));
		if (got_signal)
			break;
		for (unsigned i = 0; i < job->n_gpus && step > 0; i++) {
			struct colloc_diag diag = {{0}};
			int rc =
				colloc_simgpu_alloc(job->sim, job->gpus[i],
						    (int64_t)getpid(), step, util, &diag);

			if (rc == -ENOMEM) {
				report_oom(job, i, step);
				release_all(job);
				return EXIT_FAIL;
			}
			if (rc < 0) {
				fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
				release_all(job);
				return EXIT_FAIL;
			}
		}
		done = target;
	}
	if (!got_signal) {
		printf("colloc-simjob: holding %s on %u GPU%s for %llu ms\n",
		       colloc_format_bytes(mem, size, sizeof(size)), job->n_gpus,
		       job->n_gpus == 1 ? "" : "s", (unsigned long long)hold_ms);
		fflush(stdout);
		nap_ms(hold_ms);
	}
	release_all(job);
	return got_signal ? 128 + got_signal : EXIT_OK;
}

static int do_setup(const char *spec)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	unsigned n = 0;
	int rc;

	if (strncmp(spec, "sim:", 4) != 0) {
		die_usage("--setup wants sim:NxSIZE[,path=FILE], not '%s'", spec);
		return EXIT_USAGE;
	}
	rc = colloc_gpu_open(spec, &gpu, &diag);
	if (rc == COLLOC_EUSAGE) {
		fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
		return EXIT_USAGE;
	}
	if (rc == 0)
		rc = colloc_gpu_count(gpu, &n, &diag);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct colloc_gpu_info info;

		rc = colloc_gpu_info(gpu, i, &info, &diag);
		if (rc == 0)
			printf("%s\n", info.uuid);
	}
	colloc_gpu_close(gpu);
	if (rc < 0) {
		fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int do_list(void)
{
	struct colloc_diag diag = {{0}};
	struct colloc_gpu *gpu = NULL;
	unsigned n = 0;
	int rc = colloc_gpu_open("sim", &gpu, &diag);

	if (rc == 0)
		rc = colloc_gpu_count(gpu, &n, &diag);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct colloc_gpu_process procs[COLLOC_SIMGPU_MAX_PROCS];
		struct colloc_gpu_info info;
		size_t np = 0;

		rc = colloc_gpu_info(gpu, i, &info, &diag);
		if (rc == 0)
			rc = colloc_gpu_processes(gpu, i, procs, COLLOC_SIMGPU_MAX_PROCS,
						  &np, &diag);
		if (rc < 0)
			break;
		printf("%u %s total %llu used %llu free %llu util %d power_mw %lld procs",
		       i, info.uuid, (unsigned long long)info.mem_total_bytes,
		       (unsigned long long)info.mem_used_bytes,
		       (unsigned long long)info.mem_free_bytes, info.util_pct,
		       (long long)info.power_mw);
		for (size_t k = 0; k < np && k < COLLOC_SIMGPU_MAX_PROCS; k++)
			printf(" %lld:%llu", (long long)procs[k].pid,
			       (unsigned long long)procs[k].used_bytes);
		printf("\n");
	}
	colloc_gpu_close(gpu);
	if (rc < 0) {
		fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"mem", required_argument, NULL, 'm'},
		{"duration", required_argument, NULL, 'd'},
		{"ramp", required_argument, NULL, 'r'},
		{"util", required_argument, NULL, 'u'},
		{"gpus", required_argument, NULL, 'g'},
		{"state", required_argument, NULL, 's'},
		{"setup", required_argument, NULL, 'S'},
		{"list", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *gpus = NULL, *setup = NULL, *mem_arg = NULL, *dur_arg = NULL;
	uint64_t mem = 0, ramp_ms = 0, hold_ms = 0, util = 100;
	struct colloc_diag diag = {{0}};
	struct sigaction sa;
	struct job job;
	int list = 0, c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mem_arg = optarg;
			if (colloc_parse_size(optarg, &mem) != 0 || mem == 0) {
				die_usage("--mem wants a size such as 600MiB, not '%s'",
					  optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			dur_arg = optarg;
			if (colloc_parse_duration_ms(optarg, &hold_ms) != 0) {
				die_usage("--duration wants a duration such as 2s, not "
					  "'%s'",
					  optarg);
				return EXIT_USAGE;
			}
			break;
		case 'r':
			if (colloc_parse_duration_ms(optarg, &ramp_ms) != 0) {
				die_usage(
					"--ramp wants a duration such as 500ms, not '%s'",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'u':
			if (colloc_parse_u64(optarg, 100, &util) != 0) {
				die_usage("--util wants a percentage 0-100, not '%s'",
					  optarg);
				return EXIT_USAGE;
			}
			break;
		case 'g':
			gpus = optarg;
			break;
		case 's':
			if (setenv(COLLOC_SIMGPU_ENV, optarg, 1) != 0) {
				perror("colloc-simjob: setenv");
				return EXIT_FAIL;
			}
			break;
		case 'S':
			setup = optarg;
			break;
		case 'l':
			list = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			die_usage("unknown or incomplete option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		die_usage("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (setup)
		return do_setup(setup);
	if (list)
		return do_list();
	if (!mem_arg) {
		die_usage("%s", "--mem SIZE is missing");
		return EXIT_USAGE;
	}
	if (!dur_arg) {
		die_usage("%s", "--duration DURATION is missing");
		return EXIT_USAGE;
	}

	/* No SA_RESTART: a signal cuts the sleeps short. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	memset(&job, 0, sizeof(job));
	rc = colloc_simgpu_attach(NULL, &job.sim, &diag);
	if (rc < 0) {
		fprintf(stderr, "colloc-simjob: error: %s\n", diag.msg);
		return EXIT_FAIL;
	}
	if (!gpus)
		gpus = getenv("CUDA_VISIBLE_DEVICES");
	rc = pick_gpus(&job, gpus ? gpus : "0");
	if (rc == EXIT_OK)
		rc = run_job(&job, mem, ramp_ms, hold_ms, (unsigned)util);
	colloc_simgpu_close(job.sim);
	return rc;
}
