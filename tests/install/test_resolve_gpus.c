/*
 * test_resolve_gpus.c — what collocd makes of its gpus setting before it
 * opens the GPUs (cd_config_resolve_gpus, src/daemon/config.c): auto is
 * NVML or a refusal, never simulated GPUs unless allow_sim or the spec
 * names them; simulated GPUs without path= get a state file in state_dir.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colloc/error.h"
#include "daemon/config.h"

static void setup_cfg(struct cd_config *cfg, const char *gpus)
{
	cd_config_defaults(cfg);
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/colloc");
	snprintf(cfg->gpus, sizeof(cfg->gpus), "%s", gpus);
}

static void test_auto(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;
	char note[512];

	(void)state;
	unsetenv("COLLOC_SIM_STATE");
	setup_cfg(&cfg, "auto");
	assert_int_equal(
		cd_config_resolve_gpus(&cfg, true, NULL, note, sizeof(note), &diag), 0);
	assert_string_equal(cfg.gpus, "nvml");

	/* No NVML: refused, saying why and how to ask for simulated GPUs. */
	setup_cfg(&cfg, "auto");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false,
						"libnvidia-ml.so.1 not found", note,
						sizeof(note), &diag),
			 COLLOC_ENOTFOUND);
	assert_string_equal(cfg.gpus, "auto");
	assert_non_null(strstr(diag.msg, "libnvidia-ml.so.1 not found"));
	assert_non_null(strstr(diag.msg, "allow_sim"));

	/* allow_sim: simulated, in the state dir, and the note says so. */
	setup_cfg(&cfg, "auto");
	cfg.allow_sim = true;
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, "no driver", note,
						sizeof(note), &diag),
			 0);
	assert_string_equal(cfg.gpus, "sim:4x40GiB,path=/var/lib/colloc/gpus.sim");
	assert_non_null(strstr(note, "SIMULATED"));

	/* auto:SPEC names its fallback. */
	setup_cfg(&cfg, "auto:sim:1x8GiB");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, "no driver", note,
						sizeof(note), &diag),
			 0);
	assert_string_equal(cfg.gpus, "sim:1x8GiB,path=/var/lib/colloc/gpus.sim");
	setup_cfg(&cfg, "auto:sim:1x8GiB");
	assert_int_equal(
		cd_config_resolve_gpus(&cfg, true, NULL, note, sizeof(note), &diag), 0);
	assert_string_equal(cfg.gpus, "nvml");
}

static void test_sim_paths(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;

	(void)state;
	unsetenv("COLLOC_SIM_STATE");
	setup_cfg(&cfg, "sim:2x8GiB");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "sim:2x8GiB,path=/var/lib/colloc/gpus.sim");
	setup_cfg(&cfg, "sim");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "sim:path=/var/lib/colloc/gpus.sim");
	/* A path of its own is kept. */
	setup_cfg(&cfg, "sim:2x8GiB,path=/tmp/x,y.state");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "sim:2x8GiB,path=/tmp/x,y.state");
	setup_cfg(&cfg, "sim:path=/tmp/g.state");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "sim:path=/tmp/g.state");
	/* $COLLOC_SIM_STATE chose the file. */
	setenv("COLLOC_SIM_STATE", "/tmp/env.state", 1);
	setup_cfg(&cfg, "sim:2x8GiB");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "sim:2x8GiB");
	unsetenv("COLLOC_SIM_STATE");
	/* Other backends are left alone. */
	setup_cfg(&cfg, "nvml");
	assert_int_equal(cd_config_resolve_gpus(&cfg, false, NULL, NULL, 0, &diag), 0);
	assert_string_equal(cfg.gpus, "nvml");
}

static void test_allow_sim_key(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg;
	const char text[] = "allow_sim = yes\n";

	(void)state;
	cd_config_defaults(&cfg);
	assert_false(cfg.allow_sim);
	assert_int_equal(cd_config_parse(&cfg, text, strlen(text), "c.conf", &diag), 0);
	assert_true(cfg.allow_sim);
	assert_int_equal(cd_config_set(&cfg, "allow_sim", "maybe", &diag), COLLOC_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_sim_paths),
		cmocka_unit_test(test_allow_sim_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
