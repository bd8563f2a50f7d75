/*
 * fuzz_simstate.c — libFuzzer target for the simulated GPUs' state file
 * (colloc/simgpu.h): any file contents must attach cleanly or fail with a
 * message, never crash; an attached file answers count, info and processes
 * for every GPU. The input is written to a private temporary file, which is
 * how the state is read (shared between processes under a lock).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "colloc/simgpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/colloc-fuzz-simstate-XXXXXX";
	struct colloc_simgpu *sim = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_gpu_process procs[8];
	int fd = mkstemp(path);
	unsigned n = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	if (colloc_simgpu_attach(path, &sim, &diag) == 0) {
		if (colloc_simgpu_count(sim, &n, &diag) == 0)
			for (unsigned k = 0; k < n; k++) {
				struct colloc_gpu_info gi;
				size_t np = 0;

				if (colloc_simgpu_info(sim, k, &gi, &diag) == 0 &&
				    gi.mem_used_bytes > gi.mem_total_bytes)
					abort(); /* used never exceeds total */
				colloc_simgpu_processes(sim, k, procs, 8, &np, &diag);
			}
		colloc_simgpu_close(sim);
	} else if (diag.msg[0] == '\0') {
		abort();
	}
	unlink(path);
	return 0;
}
