/*
 * test_config.c — collocd's configuration (src/daemon/config.c): defaults
 * from the environment, every key with a good and a bad value, the file's
 * syntax and limits, atomic failure, command-line overrides, and writing a
 * config that parses back to the same struct.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "colloc/error.h"
#include "daemon/config.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

/* -------------------------------------------------------------- helpers */

/* s's bytes at dst, without its NUL: dst is a buffer, not a string. */
static void put(char *dst, const char *s)
{
	for (size_t i = 0; s[i]; i++)
		dst[i] = s[i];
}

static int parse(struct cd_config *cfg, const char *text, struct colloc_diag *diag)
{
	return cd_config_parse(cfg, text, strlen(text), "test.conf", diag);
}

static void parse_ok(struct cd_config *cfg, const char *text)
{
	struct colloc_diag diag = {{0}};
	int rc = parse(cfg, text, &diag);

	if (rc != 0) {
		print_error("parse of <<%s>> failed: %d %s\n", text, rc, diag.msg);
		fail();
	}
}

/* Parsing text must fail with rc and a message containing want, leaving
 * the config byte for byte as it was. */
static void parse_bad(const char *text, int rc_want, const char *want)
{
	struct colloc_diag diag = {{0}};
	struct cd_config cfg, before;
	int rc;

	cd_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof(cfg));
	rc = parse(&cfg, text, &diag);
	if (rc != rc_want || !strstr(diag.msg, want)) {
		print_error("parse of <<%s>>: rc %d msg '%s'; want rc %d and '%s'\n",
			    text, rc, diag.msg, rc_want, want);
		fail();
	}
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static bool cfg_equal(const struct cd_config *a, const struct cd_config *b)
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
	       a->kill_grace_ms == b->kill_grace_ms && a->reserve_ms == b->reserve_ms &&
	       strcmp(a->metrics, b->metrics) == 0 && a->retention_ms == b->retention_ms;
}

/* cd_config_write() into a malloc'd string; rc in *rc. */
static char *write_str(const struct cd_config *cfg, int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	*rc = cd_config_write(cfg, f);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* Write cfg, parse it over a fresh default config, and compare. */
static void round_trip(const struct cd_config *cfg)
{
	struct cd_config back;
	int rc;
	char *text = write_str(cfg, &rc);

	assert_int_equal(rc, 0);
	cd_config_defaults(&back);
	/* start from something different, so that equality is earned */
	back.sched.headroom_bytes = 12345;
	back.oom.max_attempts = 999;
	parse_ok(&back, text);
	if (!cfg_equal(cfg, &back)) {
		print_error("round trip changed the config; written:\n%s\n", text);
		fail();
	}
	free(text);
}

/* ------------------------------------------------------------- defaults */

struct env_save {
	const char *name;
	char *value; /* NULL: unset */
};

static struct env_save env_saved[] = {
	{"XDG_RUNTIME_DIR", NULL}, {"XDG_STATE_HOME", NULL}, {"HOME", NULL}};
#define N_ENV (sizeof(env_saved) / sizeof(env_saved[0]))

static void env_save(void)
{
	for (size_t k = 0; k < N_ENV; k++) {
		const char *v = getenv(env_saved[k].name);

		env_saved[k].value = v ? strdup(v) : NULL;
	}
}

static void env_restore(void)
{
	for (size_t k = 0; k < N_ENV; k++) {
		if (env_saved[k].value)
			setenv(env_saved[k].name, env_saved[k].value, 1);
		else
			unsetenv(env_saved[k].name);
		free(env_saved[k].value);
		env_saved[k].value = NULL;
	}
}

static void env_set(const char *runtime, const char *state, const char *home)
{
	const char *v[3] = {runtime, state, home};

	for (size_t k = 0; k < N_ENV; k++) {
		if (v[k])
			setenv(env_saved[k].name, v[k], 1);
		else
			unsetenv(env_saved[k].name);
	}
}

/* The defaults of a non-root user, under each environment. Filled while
 * the test may run with a borrowed euid; checked after it is given back. */
struct user_defaults {
	unsigned long uid;
	struct cd_config xdg, home, relative, bare, slashes;
};

static void user_defaults(struct user_defaults *u)
{
	u->uid = (unsigned long)geteuid();
	env_set("/run/user/1000", "/x/state", "/home/u");
	cd_config_defaults(&u->xdg);
	env_set(NULL, NULL, "/home/u/");
	cd_config_defaults(&u->home);
	env_set("relative/run", "relative/state", "/home/u");
	cd_config_defaults(&u->relative);
	env_set("", "", NULL);
	cd_config_defaults(&u->bare);
	env_set("/run/user/7//", "/", "/h");
	cd_config_defaults(&u->slashes);
}

static void check_user_defaults(const struct user_defaults *u)
{
	static char want[CD_PATH_MAX + 32];

	assert_string_equal(u->xdg.socket_path, "/run/user/1000/collocd.sock");
	assert_string_equal(u->xdg.state_dir, "/x/state/collocd");
	assert_string_equal(u->xdg.db_path, "/x/state/collocd/collocd.db");

	snprintf(want, sizeof(want), "/tmp/colloc-%lu/collocd.sock", u->uid);
	assert_string_equal(u->home.socket_path, want);
	assert_string_equal(u->home.state_dir, "/home/u/.local/state/collocd");
	assert_string_equal(u->home.db_path, "/home/u/.local/state/collocd/collocd.db");

	/* XDG: relative paths are to be ignored */
	assert_string_equal(u->relative.socket_path, want);
	assert_string_equal(u->relative.state_dir, "/home/u/.local/state/collocd");

	/* no $HOME: the password database's home, else /tmp */
	assert_string_equal(u->bare.socket_path, want);
	assert_int_equal(u->bare.state_dir[0], '/');
	assert_non_null(strstr(u->bare.state_dir, "collocd"));
	snprintf(want, sizeof(want), "%s/collocd.db", u->bare.state_dir);
	assert_string_equal(u->bare.db_path, want);

	assert_string_equal(u->slashes.socket_path, "/run/user/7/collocd.sock");
	assert_string_equal(u->slashes.state_dir, "/collocd");
}

static void check_fixed_defaults(const struct cd_config *c)
{
	assert_string_equal(c->gpus, "auto");
	assert_int_equal(c->sched.policy, COLLOC_POLICY_ESTIMATE_AWARE);
	assert_int_equal(c->sched.headroom_bytes, 512 * MiB);
	assert_true(c->sched.util_bound == 1.0);
	assert_true(c->sched.backfill);
	assert_int_equal(c->sched.starve_ms, 30 * 60 * 1000);
	assert_int_equal(c->sharing, CD_SHARING_TIME_SLICING);
	assert_int_equal(c->sample_ms, 1000);
	assert_string_equal(c->admin_group, "");
	assert_int_equal(c->default_mem_bytes, 8 * GiB);
	assert_true(c->default_util == 0.5);
	assert_true(c->oom.growth == 1.5);
	assert_true(c->oom.peak_margin == 1.2);
	assert_int_equal(c->oom.exclusive_after, 2);
	assert_int_equal(c->oom.max_attempts, 4);
	assert_int_equal(c->kill_grace_ms, 10000);
	assert_true(c->retention_ms == 0);
	assert_int_equal(c->reserve_ms, 60000);
	assert_string_equal(c->metrics, ""); /* no TCP port unless asked */
}

static void test_defaults(void **state)
{
	static struct user_defaults u;
	static struct cd_config root;
	bool is_root = geteuid() == 0, have_user = false;

	(void)state;
	env_save();
	if (is_root) {
		/* root ignores the environment */
		env_set("/run/user/0", "/root/.state", "/root");
		cd_config_defaults(&root);
		/* borrow an unprivileged euid to see the user's defaults; the
		 * real uid stays 0, so it can be given back */
		if (seteuid(65534) == 0) {
			user_defaults(&u);
			have_user = true;
			assert_int_equal(seteuid(0), 0);
		}
	} else {
		user_defaults(&u);
		have_user = true;
	}
	env_restore();

	if (is_root) {
		assert_string_equal(root.socket_path, "/run/collocd.sock");
		assert_string_equal(root.state_dir, "/var/lib/collocd");
		assert_string_equal(root.db_path, "/var/lib/collocd/collocd.db");
		check_fixed_defaults(&root);
	}
	if (have_user) {
		check_user_defaults(&u);
		check_fixed_defaults(&u.xdg);
	} else {
		print_message("user defaults not checked: cannot seteuid\n");
	}
}

/* ----------------------------------------------------------- every key */

static void test_every_key_valid(void **state)
{
	struct cd_config c;

	(void)state;
	cd_config_defaults(&c);
	parse_ok(&c, "gpus = sim:4x40GiB\n"
		     "socket = /run/colloc/s.sock\n"
		     "db = /srv/collocd/jobs.db\n"
		     "state_dir = /srv/collocd\n"
		     "policy = most-free-memory\n"
		     "headroom = 1GiB\n"
		     "util_bound = 1.5\n"
		     "backfill = no\n"
		     "starve = 2h\n"
		     "sharing = mps\n"
		     "sample_interval = 250ms\n"
		     "admin_group = gpuadmins\n"
		     "default_mem = 6GiB\n"
		     "default_util = 30%\n"
		     "oom_growth = 2\n"
		     "oom_peak_margin = 1.25\n"
		     "oom_exclusive_after = 3\n"
		     "oom_max_attempts = 5\n"
		     "kill_grace = 30s\n"
		     "reserve = 1.5min\n"
		     "metrics = 127.0.0.1:9400\n"
		     "retention = 7d\n");
	assert_string_equal(c.gpus, "sim:4x40GiB");
	assert_string_equal(c.socket_path, "/run/colloc/s.sock");
	assert_string_equal(c.db_path, "/srv/collocd/jobs.db");
	assert_string_equal(c.state_dir, "/srv/collocd");
	assert_int_equal(c.sched.policy, COLLOC_POLICY_MOST_FREE_MEMORY);
	assert_int_equal(c.sched.headroom_bytes, GiB);
	assert_true(c.sched.util_bound == 1.5);
	assert_false(c.sched.backfill);
	assert_int_equal(c.sched.starve_ms, 2 * 3600 * 1000);
	assert_int_equal(c.sharing, CD_SHARING_MPS);
	assert_int_equal(c.sample_ms, 250);
	assert_string_equal(c.admin_group, "gpuadmins");
	assert_int_equal(c.default_mem_bytes, 6 * GiB);
	assert_true(c.default_util == 0.3);
	assert_true(c.oom.growth == 2.0);
	assert_true(c.oom.peak_margin == 1.25);
	assert_int_equal(c.oom.exclusive_after, 3);
	assert_int_equal(c.oom.max_attempts, 5);
	assert_int_equal(c.kill_grace_ms, 30000);
	assert_int_equal(c.reserve_ms, 90000);
	assert_string_equal(c.metrics, "127.0.0.1:9400");
	assert_true(c.retention_ms == (int64_t)7 * 86400 * 1000);
	/* Compound forms, and 0: kept forever. */
	parse_ok(&c, "retention = 1d12h\n");
	assert_true(c.retention_ms == (int64_t)36 * 3600 * 1000);
	parse_ok(&c, "retention = 0\n");
	assert_true(c.retention_ms == 0);
}

static void test_value_forms(void **state)
{
	struct cd_config c;

	(void)state;
	cd_config_defaults(&c);
	/* every policy name, every sharing mode, every boolean word */
	for (int p = 0; p < COLLOC_POLICY_COUNT_; p++) {
		char line[64];
		struct cd_config d;

		cd_config_defaults(&d);
		snprintf(line, sizeof(line), "policy = %s", colloc_policy_name(p));
		parse_ok(&d, line);
		assert_int_equal(d.sched.policy, p);
	}
	parse_ok(&c, "sharing = time-slicing");
	assert_int_equal(c.sharing, CD_SHARING_TIME_SLICING);
	cd_config_defaults(&c);
	parse_ok(&c, "sharing = mig");
	assert_int_equal(c.sharing, CD_SHARING_MIG);

	static const struct {
		const char *word;
		bool value;
	} bools[] = {{"true", true}, {"false", false}, {"yes", true}, {"no", false},
		     {"on", true},   {"off", false},   {"1", true},   {"0", false},
		     {"TRUE", true}, {"Off", false}};
	for (size_t k = 0; k < sizeof(bools) / sizeof(bools[0]); k++) {
		char line[64];

		cd_config_defaults(&c);
		c.sched.backfill = !bools[k].value;
		snprintf(line, sizeof(line), "backfill = %s", bools[k].word);
		parse_ok(&c, line);
		assert_int_equal(c.sched.backfill, bools[k].value);
	}

	/* sizes: plain bytes exactly, decimal and binary units */
	cd_config_defaults(&c);
	parse_ok(&c, "headroom = 18446744073709551615\ndefault_mem = 1.5G");
	assert_true(c.sched.headroom_bytes == UINT64_MAX);
	assert_int_equal(c.default_mem_bytes, 1500000000ULL);
	cd_config_defaults(&c);
	parse_ok(&c, "headroom = 0\ndefault_mem = 512 MiB");
	assert_int_equal(c.sched.headroom_bytes, 0);
	assert_int_equal(c.default_mem_bytes, 512 * MiB);

	/* durations: bare numbers are seconds; big ms counts are exact */
	cd_config_defaults(&c);
	parse_ok(&c, "starve = 0\nkill_grace = 5\nreserve = 9223372036854775807ms\n"
		     "sample_interval = 1MS");
	assert_int_equal(c.sched.starve_ms, 0);
	assert_int_equal(c.kill_grace_ms, 5000);
	assert_true(c.reserve_ms == INT64_MAX);
	assert_int_equal(c.sample_ms, 1);

	/* fractions */
	cd_config_defaults(&c);
	parse_ok(&c, "default_util = 0\nutil_bound = 250%");
	assert_true(c.default_util == 0.0);
	assert_true(c.sched.util_bound == 2.5);
	cd_config_defaults(&c);
	parse_ok(&c, "default_util = 1\nutil_bound = 1e-3\noom_growth = 1.0\n"
		     "oom_peak_margin = 1000\noom_exclusive_after = 1\noom_max_attempts "
		     "= 1000");
	assert_true(c.default_util == 1.0);
	assert_true(c.sched.util_bound == 1e-3);
	assert_true(c.oom.growth == 1.0);
	assert_true(c.oom.peak_margin == 1000.0);
	assert_int_equal(c.oom.exclusive_after, 1);
	assert_int_equal(c.oom.max_attempts, 1000);

	/* admin_group may be empty, either way */
	cd_config_defaults(&c);
	snprintf(c.admin_group, sizeof(c.admin_group), "wheel");
	parse_ok(&c, "admin_group =");
	assert_string_equal(c.admin_group, "");
	snprintf(c.admin_group, sizeof(c.admin_group), "wheel");
	cd_config_defaults(&c);
	parse_ok(&c, "admin_group = \"\"  # root only");
	assert_string_equal(c.admin_group, "");
}

static void test_every_key_invalid(void **state)
{
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} bad[] = {
		{"gpus =", COLLOC_EUSAGE, "test.conf:1: gpus: empty value"},
		{"socket = \"\"", COLLOC_EUSAGE, "socket: empty value"},
		{"db = # nothing", COLLOC_EUSAGE, "db: empty value"},
		{"state_dir =   ", COLLOC_EUSAGE, "state_dir: empty value"},
		{"policy = fastest", COLLOC_EUSAGE, "'fastest' is not a policy (one of "},
		{"policy = Exclusive", COLLOC_EUSAGE, "policy"},
		{"headroom = lots", COLLOC_EUSAGE, "headroom: 'lots' is not a size"},
		{"headroom = -1GiB", COLLOC_EUSAGE, "headroom"},
		{"headroom = 18446744073709551616", COLLOC_EUSAGE, "headroom"},
		{"headroom = 20000000TiB", COLLOC_EUSAGE, "headroom"},
		{"util_bound = 0", COLLOC_EUSAGE,
		 "util_bound: '0' is not a number above 0"},
		{"util_bound = 101", COLLOC_EUSAGE, "util_bound"},
		{"util_bound = -1", COLLOC_EUSAGE, "util_bound"},
		{"util_bound = nan", COLLOC_EUSAGE, "util_bound"},
		{"util_bound = inf", COLLOC_EUSAGE, "util_bound"},
		{"util_bound = 1e999", COLLOC_EUSAGE, "util_bound"},
		{"util_bound = 0x1p0", COLLOC_EUSAGE, "util_bound"},
		{"backfill = maybe", COLLOC_EUSAGE,
		 "backfill: 'maybe' is not true or false"},
		{"backfill = 2", COLLOC_EUSAGE, "backfill"},
		{"starve = forever", COLLOC_EUSAGE,
		 "starve: 'forever' is not a duration"},
		{"starve = -5s", COLLOC_EUSAGE, "starve"},
		{"starve = 10 days", COLLOC_EUSAGE, "starve"},
		{"starve = 9223372036854775808ms", COLLOC_EUSAGE, "starve"},
		{"sharing = vgpu", COLLOC_EUSAGE,
		 "sharing: 'vgpu' is not a sharing mode"},
		{"sharing = MPS", COLLOC_EUSAGE, "sharing"},
		{"sample_interval = 0", COLLOC_EUSAGE,
		 "sample_interval: must be at least 1ms"},
		{"sample_interval = 0ms", COLLOC_EUSAGE, "sample_interval"},
		{"admin_group = "
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 COLLOC_ELIMIT, "admin_group: value is 68 bytes, the limit is 63"},
		{"default_mem = 0", COLLOC_EUSAGE, "default_mem: must be more than 0"},
		{"default_mem = 8 GiBs", COLLOC_EUSAGE, "default_mem"},
		{"default_util = 1.01", COLLOC_EUSAGE, "default_util"},
		{"default_util = 50", COLLOC_EUSAGE, "default_util"},
		{"default_util = 150%", COLLOC_EUSAGE, "default_util"},
		{"default_util = %", COLLOC_EUSAGE, "default_util"},
		{"default_util = 0.5%%", COLLOC_EUSAGE, "default_util"},
		{"oom_growth = 0.9", COLLOC_EUSAGE, "oom_growth: '0.9' is not a factor"},
		{"oom_growth = 1001", COLLOC_EUSAGE, "oom_growth"},
		{"oom_growth = 150%", COLLOC_EUSAGE, "oom_growth"},
		{"oom_peak_margin = 0", COLLOC_EUSAGE, "oom_peak_margin"},
		{"oom_peak_margin = 1.2.3", COLLOC_EUSAGE, "oom_peak_margin"},
		{"oom_exclusive_after = 0", COLLOC_EUSAGE,
		 "oom_exclusive_after: '0' is not a whole number from 1 to 1000"},
		{"oom_exclusive_after = 2.5", COLLOC_EUSAGE, "oom_exclusive_after"},
		{"oom_max_attempts = 1001", COLLOC_EUSAGE, "oom_max_attempts"},
		{"oom_max_attempts = -1", COLLOC_EUSAGE, "oom_max_attempts"},
		{"oom_max_attempts = 99999999999999999999999", COLLOC_EUSAGE,
		 "oom_max_attempts"},
		{"kill_grace = 10x", COLLOC_EUSAGE, "kill_grace"},
		{"retention = 30 days", COLLOC_EUSAGE, "retention"},
		{"retention = 1d-2h", COLLOC_EUSAGE, "retention"},
		{"reserve = 1e3s", COLLOC_EUSAGE, "reserve"},
		{"gpus = a\tb", COLLOC_EUSAGE, "gpus: control character 0x09"},
		{"metrics = 9400", COLLOC_EUSAGE, "metrics: '9400' is not HOST:PORT"},
		{"metrics = 127.0.0.1", COLLOC_EUSAGE,
		 "metrics: '127.0.0.1' is not HOST:PORT"},
		{"metrics = 127.0.0.1:65536", COLLOC_EUSAGE, "metrics"},
		{"metrics = host.example:9400", COLLOC_EUSAGE,
		 "'host.example' is not a numeric IPv4 address or localhost"},
		{"metrics = ::1:9400", COLLOC_EUSAGE,
		 "write an IPv6 address in brackets"},
		{"metrics = "
		 "\"[0000:0000:0000:0000:0000:0000:0000:0001]:9400 with enough "
		 "padding!!\"",
		 COLLOC_ELIMIT, "metrics: value is 68 bytes, the limit is 63"},
	};

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		parse_bad(bad[k].text, bad[k].rc, bad[k].msg);
}

/* ---------------------------------------------------------------- syntax */

static void test_comments_blank_crlf(void **state)
{
	struct cd_config c, d;

	(void)state;
	cd_config_defaults(&c);
	memcpy(&d, &c, sizeof(c));
	parse_ok(&c, "");
	parse_ok(&c, "\n\n   \n\t\n# only a comment\n   # indented comment = x\n");
	assert_memory_equal(&c, &d, sizeof(c));
	parse_ok(&c, "# collocd\r\n"
		     "policy=exclusive# no spaces\r\n"
		     "\theadroom\t=\t2GiB\t# tabs\r\n"
		     "gpus = sim:2x8GiB   \r\n"
		     "kill_grace = 3s"); /* no newline at the end */
	assert_int_equal(c.sched.policy, COLLOC_POLICY_EXCLUSIVE);
	assert_int_equal(c.sched.headroom_bytes, 2 * GiB);
	assert_string_equal(c.gpus, "sim:2x8GiB");
	assert_int_equal(c.kill_grace_ms, 3000);
}

static void test_quotes(void **state)
{
	struct cd_config c;

	(void)state;
	cd_config_defaults(&c);
	parse_ok(&c, "socket = \"/tmp/my dir/collocd.sock\"  # spaces\n"
		     "db = \"/srv/a#b/c.db\"\n"
		     "state_dir = \"/srv/say \\\"hi\\\"/back\\\\slash\"\n"
		     "gpus = \"  padded  \"\n"
		     "admin_group = unquoted\\back\n");
	assert_string_equal(c.socket_path, "/tmp/my dir/collocd.sock");
	assert_string_equal(c.db_path, "/srv/a#b/c.db");
	assert_string_equal(c.state_dir, "/srv/say \"hi\"/back\\slash");
	assert_string_equal(c.gpus, "  padded  ");
	assert_string_equal(c.admin_group, "unquoted\\back");
	/* other keys' values may be quoted too */
	parse_ok(&c, "policy = \"round-robin\"\nheadroom=\"1MiB\"");
	assert_int_equal(c.sched.policy, COLLOC_POLICY_ROUND_ROBIN);
	assert_int_equal(c.sched.headroom_bytes, MiB);

	parse_bad("socket = \"/tmp/x", COLLOC_EFORMAT, "test.conf:1: unterminated quote");
	parse_bad("socket = \"/tmp/x\" y", COLLOC_EFORMAT, "after the closing quote");
	parse_bad("socket = \"/tmp/x\\\"", COLLOC_EFORMAT, "unterminated quote");
	parse_bad("socket = \"/tmp/\\n\"", COLLOC_EFORMAT, "unknown escape");
	parse_bad("socket = /tmp/\"x\"", COLLOC_EFORMAT, "stray '\"'");
}

static void test_syntax_errors(void **state)
{
	(void)state;
	parse_bad("policy exclusive", COLLOC_EFORMAT,
		  "test.conf:1: expected '=' after 'policy'");
	parse_bad("\n\n= 5", COLLOC_EFORMAT, "test.conf:3: missing key before '='");
	parse_bad("\"policy\" = x", COLLOC_EFORMAT, "expected 'key = value'");
	parse_bad("polcy = exclusive", COLLOC_EUSAGE, "test.conf:1: unknown key 'polcy'");
	parse_bad("Policy = exclusive", COLLOC_EUSAGE, "unknown key 'Policy'");
	parse_bad("policy = exclusive\n# x\npolicy = exclusive", COLLOC_EFORMAT,
		  "test.conf:3: repeated key 'policy' (first on line 1)");
	parse_bad("gpus = a\001b", COLLOC_EFORMAT, "test.conf:1: control character 0x01");
	parse_bad("gpus = a\rb", COLLOC_EFORMAT, "control character 0x0d in column 9");

	/* a NUL byte inside the buffer is refused, not a string's end */
	{
		static const char text[] = "gpus = ab\0cd\n";
		struct colloc_diag diag = {{0}};
		struct cd_config c;

		cd_config_defaults(&c);
		assert_int_equal(
			cd_config_parse(&c, text, sizeof(text) - 1, "n.conf", &diag),
			COLLOC_EFORMAT);
		assert_non_null(strstr(diag.msg, "n.conf:1: control character 0x00"));
		assert_string_equal(c.gpus, "auto");
	}
	/* the buffer is read to len only: no terminating NUL needed */
	{
		char text[] = "gpus = abcXXXX";
		struct colloc_diag diag = {{0}};
		struct cd_config c;

		cd_config_defaults(&c);
		assert_int_equal(cd_config_parse(&c, text, 10, NULL, &diag), 0);
		assert_string_equal(c.gpus, "abc");
		/* and a NULL name still gives a message */
		assert_int_equal(cd_config_parse(&c, "x", 1, NULL, &diag),
				 COLLOC_EFORMAT);
		assert_non_null(strstr(diag.msg, "config:1:"));
	}
}

static void test_limits(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config c, before;
	size_t big = (64 << 10) + 1;
	char *text = malloc(big + 1);
	char line[1100];

	(void)state;
	assert_non_null(text);

	/* a line of exactly 1024 bytes is fine (plus CR), 1025 is not */
	cd_config_defaults(&c);
	memset(line, 0, sizeof(line));
	memset(line, 'x', 1024);
	put(line, "# ");
	assert_int_equal(strlen(line), 1024);
	line[1024] = '\r';
	assert_int_equal(cd_config_parse(&c, line, 1025, "l.conf", &diag), 0);
	line[1024] = 'x';
	memcpy(&before, &c, sizeof(c));
	assert_int_equal(cd_config_parse(&c, line, 1025, "l.conf", &diag), COLLOC_ELIMIT);
	assert_non_null(strstr(diag.msg, "l.conf:1: line is over the 1024-byte limit"));
	assert_memory_equal(&c, &before, sizeof(c));

	/* a path as long as a line allows is accepted */
	memset(line, 0, sizeof(line));
	memset(line, 'g', 1024);
	put(line, "gpus = ");
	assert_int_equal(cd_config_parse(&c, line, 1024, "l.conf", &diag), 0);
	assert_int_equal(strlen(c.gpus), 1024 - 7);

	/* 64 KiB of comments is fine; one byte more is refused, with the
	 * line where the limit was crossed */
	cd_config_defaults(&c);
	memset(text, '#', big);
	for (size_t i = 99; i < big; i += 100)
		text[i] = '\n';
	text[big] = '\0';
	assert_int_equal(cd_config_parse(&c, text, big - 1, "f.conf", &diag), 0);
	assert_int_equal(cd_config_parse(&c, text, big, "f.conf", &diag), COLLOC_ELIMIT);
	assert_non_null(strstr(diag.msg, "f.conf:656: file is over the 64 KiB limit"));
	free(text);
}

static void test_atomic(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config c, before;

	(void)state;
	cd_config_defaults(&c);
	memcpy(&before, &c, sizeof(c));
	/* many good lines, then a bad one: nothing of it is applied */
	assert_int_equal(parse(&c,
			       "gpus = sim:1x1GiB\npolicy = exclusive\nheadroom = 1MiB\n"
			       "admin_group = ops\noom_max_attempts = 9\n"
			       "default_util = 2\n",
			       &diag),
			 COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "test.conf:6: default_util:"));
	assert_memory_equal(&c, &before, sizeof(c));

	/* keys the file leaves out keep the values they had */
	c.sched.headroom_bytes = 7;
	parse_ok(&c, "policy = exclusive");
	assert_int_equal(c.sched.headroom_bytes, 7);
	assert_int_equal(c.sched.policy, COLLOC_POLICY_EXCLUSIVE);
}

/* --------------------------------------------------------------- metrics */

static void test_listen_parse(void **state)
{
	static const struct {
		const char *text;
		int family;
		const char *host;
		unsigned port;
		bool loopback;
	} good[] = {
		{"127.0.0.1:9400", AF_INET, "127.0.0.1", 9400, true},
		{"localhost:0", AF_INET, "127.0.0.1", 0, true},
		{"127.3.2.1:65535", AF_INET, "127.3.2.1", 65535, true},
		{"0.0.0.0:9100", AF_INET, "0.0.0.0", 9100, false},
		{"10.1.2.3:09100", AF_INET, "10.1.2.3", 9100, false},
		{"[::1]:9400", AF_INET6, "::1", 9400, true},
		{"[::]:80", AF_INET6, "::", 80, false},
		{"[fe80::1]:1", AF_INET6, "fe80::1", 1, false},
	};
	static const char *const bad[] = {
		"",
		"9400",
		":9400",
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:x",
		"127.0.0.1:-1",
		"127.0.0.1:+80",
		"127.0.0.1:65536",
		"127.0.0.1:100000",
		"127.0.0.1:9 ",
		" 127.0.0.1:9",
		"256.0.0.1:80",
		"127.1:80",
		"::1:9400",
		"[::1:9400",
		"::1]:9400",
		"[]:80",
		"[127.0.0.1]:80",
		"[localhost]:80",
		"example.org:80",
		"localhost",
		"[::1]",
		"[::g]:80",
	};
	struct colloc_diag diag = {{0}};
	struct cd_listen l;

	(void)state;
	for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
		memset(&l, 0x55, sizeof(l));
		if (cd_config_listen_parse(good[k].text, &l, &diag) != 0) {
			print_error("'%s': %s\n", good[k].text, diag.msg);
			fail();
		}
		assert_int_equal(l.family, good[k].family);
		assert_string_equal(l.host, good[k].host);
		assert_int_equal(l.port, good[k].port);
		assert_int_equal(l.loopback, good[k].loopback);
	}
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memset(&l, 0x55, sizeof(l));
		diag.msg[0] = '\0';
		if (cd_config_listen_parse(bad[k], &l, &diag) != COLLOC_EUSAGE) {
			print_error("'%s' was accepted\n", bad[k]);
			fail();
		}
		assert_true(diag.msg[0] != '\0');
		assert_int_equal(l.port, 0x5555); /* untouched */
	}
	assert_int_equal(cd_config_listen_parse(NULL, &l, &diag), COLLOC_EUSAGE);
}

/* The key itself: off by default, "" turns it off again, bad values are
 * refused with cfg unchanged. */
static void test_metrics_key(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config c, before;

	(void)state;
	cd_config_defaults(&c);
	assert_string_equal(c.metrics, "");
	assert_int_equal(cd_config_set(&c, "metrics", "localhost:9400", &diag), 0);
	assert_string_equal(c.metrics, "localhost:9400"); /* kept as written */
	assert_int_equal(cd_config_set(&c, "metrics", "[::1]:0", &diag), 0);
	assert_string_equal(c.metrics, "[::1]:0");
	memcpy(&before, &c, sizeof(c));
	assert_int_equal(cd_config_set(&c, "metrics", "yes", &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "metrics: 'yes' is not HOST:PORT"));
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(cd_config_set(&c, "metrics", "", &diag), 0);
	assert_string_equal(c.metrics, "");
	parse_ok(&c, "metrics = \"0.0.0.0:9100\"  # every interface");
	assert_string_equal(c.metrics, "0.0.0.0:9100");
	parse_ok(&c, "metrics =");
	assert_string_equal(c.metrics, "");
}

/* ------------------------------------------------------ set, load, write */

static void test_set(void **state)
{
	struct colloc_diag diag = {{0}};
	struct cd_config c, before;
	char *longpath = malloc(CD_PATH_MAX + 1);

	(void)state;
	assert_non_null(longpath);
	cd_config_defaults(&c);
	assert_int_equal(cd_config_set(&c, "policy", "round-robin", &diag), 0);
	assert_int_equal(cd_config_set(&c, "policy", "exclusive", &diag), 0);
	assert_int_equal(c.sched.policy, COLLOC_POLICY_EXCLUSIVE);
	/* the value is taken as is: no quotes or comments on a command line */
	assert_int_equal(cd_config_set(&c, "socket", "/tmp/a #b \"c\"", &diag), 0);
	assert_string_equal(c.socket_path, "/tmp/a #b \"c\"");
	assert_int_equal(cd_config_set(&c, "default_util", "75%", &diag), 0);
	assert_true(c.default_util == 0.75);

	memcpy(&before, &c, sizeof(c));
	assert_int_equal(cd_config_set(&c, "polcy", "exclusive", &diag), COLLOC_EUSAGE);
	assert_string_equal(diag.msg, "unknown key 'polcy'");
	assert_int_equal(cd_config_set(&c, "headroom", "big", &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "headroom: 'big' is not a size"));
	assert_int_equal(cd_config_set(&c, "gpus", "", &diag), COLLOC_EUSAGE);
	assert_string_equal(diag.msg, "gpus: empty value");
	assert_int_equal(cd_config_set(&c, "gpus", NULL, &diag), COLLOC_EUSAGE);
	assert_int_equal(cd_config_set(&c, NULL, "x", &diag), COLLOC_EUSAGE);
	memset(longpath, 'p', CD_PATH_MAX);
	longpath[CD_PATH_MAX] = '\0';
	assert_int_equal(cd_config_set(&c, "db", longpath, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "db: value is 4096 bytes, the limit is 4095"));
	assert_memory_equal(&c, &before, sizeof(c));

	longpath[CD_PATH_MAX - 1] = '\0';
	assert_int_equal(cd_config_set(&c, "db", longpath, &diag), 0);
	assert_int_equal(strlen(c.db_path), CD_PATH_MAX - 1);
	free(longpath);
}

static void test_load(void **state)
{
	char dir[] = "/tmp/colloc-test-config-XXXXXX";
	char path[128];
	struct colloc_diag diag = {{0}};
	struct cd_config c;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/collocd.conf", dir);
	cd_config_defaults(&c);

	assert_int_equal(cd_config_load(&c, path, &diag), -ENOENT);
	assert_non_null(strstr(diag.msg, "collocd.conf: "));
	assert_int_equal(cd_config_load(&c, dir, &diag), -EISDIR);

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("policy = least-utilized\n\nbackfill = off\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cd_config_load(&c, path, &diag), 0);
	assert_int_equal(c.sched.policy, COLLOC_POLICY_LEAST_UTILIZED);
	assert_false(c.sched.backfill);

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("\n\nbackfill = sometimes\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cd_config_load(&c, path, &diag), COLLOC_EUSAGE);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), ":3: backfill:");
	assert_non_null(strstr(diag.msg, path));
	path[strlen(path) - strlen(":3: backfill:")] = '\0';

	/* bigger than the limit: refused without reading it all */
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 20000; i++)
		fputs("# filler\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cd_config_load(&c, path, &diag), COLLOC_ELIMIT);
	assert_non_null(strstr(diag.msg, "file is over the 64 KiB limit"));

	unlink(path);
	rmdir(dir);
}

static void test_write_round_trip(void **state)
{
	struct cd_config c;
	char *text;
	int rc;

	(void)state;
	cd_config_defaults(&c);
	round_trip(&c);

	/* every key is written, one per line */
	text = write_str(&c, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "\ngpus = auto\n"));
	assert_non_null(strstr(text, "\npolicy = estimate-aware\n"));
	assert_non_null(strstr(text, "\nheadroom = 512MiB\n"));
	assert_non_null(strstr(text, "\nutil_bound = 1\n"));
	assert_non_null(strstr(text, "\nbackfill = true\n"));
	assert_non_null(strstr(text, "\nstarve = 30min\n"));
	assert_non_null(strstr(text, "\nsharing = time-slicing\n"));
	assert_non_null(strstr(text, "\nsample_interval = 1s\n"));
	assert_non_null(strstr(text, "\nadmin_group = \"\"\n"));
	assert_non_null(strstr(text, "\ndefault_mem = 8GiB\n"));
	assert_non_null(strstr(text, "\ndefault_util = 0.5\n"));
	assert_non_null(strstr(text, "\noom_growth = 1.5\n"));
	assert_non_null(strstr(text, "\noom_peak_margin = 1.2\n"));
	assert_non_null(strstr(text, "\noom_exclusive_after = 2\n"));
	assert_non_null(strstr(text, "\noom_max_attempts = 4\n"));
	assert_non_null(strstr(text, "\nkill_grace = 10s\n"));
	assert_non_null(strstr(text, "\nretention = 0ms\n"));
	assert_non_null(strstr(text, "\nreserve = 1min\n"));
	assert_non_null(strstr(text, "\nmetrics = \"\"\n"));
	assert_non_null(strstr(text, "\nsocket = "));
	assert_non_null(strstr(text, "\ndb = "));
	assert_non_null(strstr(text, "\nstate_dir = "));
	free(text);

	/* awkward values: quoting, escapes, extremes, inexact doubles */
	snprintf(c.gpus, sizeof(c.gpus), "sim:4x40GiB");
	snprintf(c.socket_path, sizeof(c.socket_path), "/tmp/my dir/c#1.sock");
	snprintf(c.db_path, sizeof(c.db_path), "/a/\"q\"/b\\c.db");
	snprintf(c.state_dir, sizeof(c.state_dir), " lead and trail\t");
	c.state_dir[strlen(c.state_dir) - 1] = ' ';
	snprintf(c.admin_group, sizeof(c.admin_group), "back\\slash");
	c.sched.policy = COLLOC_POLICY_ROUND_ROBIN;
	c.sched.headroom_bytes = UINT64_MAX;
	c.sched.util_bound = 0.1 + 0.2;
	c.sched.backfill = false;
	c.sched.starve_ms = INT64_MAX;
	c.sharing = CD_SHARING_MIG;
	c.sample_ms = 1;
	c.default_mem_bytes = UINT64_MAX - GiB + 1;
	c.default_util = 1.0 / 3.0;
	c.oom.growth = 1.0000000000000002;
	c.oom.peak_margin = 999.99999999999;
	c.oom.exclusive_after = 1000;
	c.oom.max_attempts = 1;
	c.kill_grace_ms = 0;
	c.reserve_ms = 3600001;
	snprintf(c.metrics, sizeof(c.metrics), "[::1]:9400");
	round_trip(&c);
	snprintf(c.metrics, sizeof(c.metrics), "0.0.0.0:0");
	round_trip(&c);

	c.sched.headroom_bytes = ((1ULL << 53) - 1) * 1024; /* KiB, exact */
	c.default_mem_bytes = 1;
	c.default_util = 4.9406564584124654e-324; /* the smallest double */
	c.sched.util_bound = 100.0;
	round_trip(&c);
}

static void test_write_refuses(void **state)
{
	struct cd_config c;
	char *text;
	int rc;

	(void)state;
	/* a value no line can carry: nothing at all is written */
	cd_config_defaults(&c);
	snprintf(c.gpus, sizeof(c.gpus), "a\nb");
	text = write_str(&c, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(strlen(text), 0);
	free(text);

	cd_config_defaults(&c);
	memset(c.db_path, 'd', 2000);
	c.db_path[2000] = '\0';
	text = write_str(&c, &rc);
	assert_int_equal(rc, -ENAMETOOLONG);
	assert_int_equal(strlen(text), 0);
	free(text);

	cd_config_defaults(&c);
	c.sharing = 17;
	text = write_str(&c, &rc);
	assert_int_equal(rc, -EINVAL);
	free(text);

	cd_config_defaults(&c);
	c.sched.policy = COLLOC_POLICY_COUNT_;
	text = write_str(&c, &rc);
	assert_int_equal(rc, -EINVAL);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key_valid),
		cmocka_unit_test(test_value_forms),
		cmocka_unit_test(test_every_key_invalid),
		cmocka_unit_test(test_comments_blank_crlf),
		cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_atomic),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_listen_parse),
		cmocka_unit_test(test_metrics_key),
		cmocka_unit_test(test_write_round_trip),
		cmocka_unit_test(test_write_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
