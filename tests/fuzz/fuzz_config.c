/*
 * fuzz_config.c — libFuzzer target for collocd's config file
 * (cd_config_parse, src/daemon/config.h): any bytes must give a config or
 * a clear error, never a crash; a failed parse leaves the config exactly as
 * it was; a parsed config's strings are NUL-terminated within their fields;
 * and a parsed config, written with cd_config_write(), parses back to the
 * same values.
 *
 * The OOM marker search (cd_oom_marker) runs over the same bytes: it must
 * never read past them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/oom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int terminated(const char *s, size_t cap)
{
	return strnlen(s, cap) < cap;
}

static int same(const struct cd_config *a, const struct cd_config *b)
{
	return strcmp(a->gpus, b->gpus) == 0 &&
	       strcmp(a->socket_path, b->socket_path) == 0 &&
	       strcmp(a->db_path, b->db_path) == 0 &&
	       strcmp(a->state_dir, b->state_dir) == 0 &&
	       a->sched.policy == b->sched.policy &&
	       a->sched.headroom_bytes == b->sched.headroom_bytes &&
	       a->sched.util_bound == b->sched.util_bound &&
	       a->sched.backfill == b->sched.backfill &&
	       a->sched.starve_ms == b->sched.starve_ms && a->sharing == b->sharing &&
	       a->sample_ms == b->sample_ms &&
	       strcmp(a->admin_group, b->admin_group) == 0 &&
	       a->default_mem_bytes == b->default_mem_bytes &&
	       a->default_util == b->default_util && a->oom.growth == b->oom.growth &&
	       a->oom.peak_margin == b->oom.peak_margin &&
	       a->oom.exclusive_after == b->oom.exclusive_after &&
	       a->oom.max_attempts == b->oom.max_attempts &&
	       a->kill_grace_ms == b->kill_grace_ms && a->reserve_ms == b->reserve_ms;
}

static void round_trip(const struct cd_config *cfg)
{
	struct colloc_diag diag = {{0}};
	struct cd_config back;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return; /* out of memory: nothing to check */
	rc = cd_config_write(cfg, f);
	if (fclose(f) != 0) {
		free(text);
		return;
	}
	/* Every value the parser accepts fits a line again: the writer never
	 * escapes more than the file had to, and drops the spaces around '='
	 * when a line is full. */
	if (rc != 0)
		abort();
	cd_config_defaults(&back);
	if (cd_config_parse(&back, text, len, "written", &diag) != 0 || !same(cfg, &back))
		abort(); /* what the writer wrote does not read back */
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cd_config cfg, before;
	struct colloc_diag diag = {{0}};
	int rc;

	(void)cd_oom_marker((const char *)data, size);

	cd_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof(cfg));
	rc = cd_config_parse(&cfg, (const char *)data, size, "fuzz.conf", &diag);
	if (rc != 0) {
		if (diag.msg[0] == '\0' || strncmp(diag.msg, "fuzz.conf:", 10) != 0)
			abort(); /* every failure explains itself, with its place */
		if (rc != COLLOC_EFORMAT && rc != COLLOC_ELIMIT && rc != COLLOC_EUSAGE)
			abort();
		if (memcmp(&cfg, &before, sizeof(cfg)) != 0)
			abort(); /* nothing partly applied */
		return 0;
	}
	if (!terminated(cfg.gpus, sizeof(cfg.gpus)) ||
	    !terminated(cfg.socket_path, sizeof(cfg.socket_path)) ||
	    !terminated(cfg.db_path, sizeof(cfg.db_path)) ||
	    !terminated(cfg.state_dir, sizeof(cfg.state_dir)) ||
	    !terminated(cfg.admin_group, sizeof(cfg.admin_group)))
		abort();
	round_trip(&cfg);
	return 0;
}
