/*
 * test_cgroup.c — finding collocd's cgroup v2 directory (src/daemon/cgroup.c)
 * from mountinfo and /proc/self/cgroup texts written here: the cgroup2 line
 * among others, a hybrid layout, a nested own path, and what is refused (no
 * cgroup2, escaped mount points, ".." in the own path, an unwritable base).
 * Killing a real cgroup needs a delegated one: test_collocd.sh does that.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cgroup.h"

struct fx {
	char dir[64], mountinfo[96], self[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/colloc-cg.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->mountinfo, sizeof(f->mountinfo), "%s/mountinfo", f->dir);
	snprintf(f->self, sizeof(f->self), "%s/self", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char sub[96];

	/* What the tests make: two files and one nested cgroup directory. */
	(void)unlink(f->mountinfo);
	(void)unlink(f->self);
	snprintf(sub, sizeof(sub), "%s/system.slice", f->dir);
	(void)rmdir(sub);
	if (rmdir(f->dir) != 0)
		return -1;
	free(f);
	return 0;
}

static void put(const char *path, const char *text)
{
	FILE *o = fopen(path, "w");

	assert_non_null(o);
	fputs(text, o);
	fclose(o);
}

/* mountinfo with a cgroup2 file system mounted at mnt (after a v1 one). */
static void mountinfo_at(const struct fx *f, const char *mnt)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "22 1 0:20 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		 "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		 "30 22 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 "
		 "cgroup2 rw,nsdelegate\n",
		 mnt);
	put(f->mountinfo, text);
}

static void test_root_cgroup(void **state)
{
	struct fx *f = *state;
	struct cd_cgroup cg;
	char why[256], path[CD_CGROUP_PATH_MAX + 32];

	mountinfo_at(f, f->dir);
	put(f->self, "4:memory:/x\n0::/\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_true(cg.on);
	assert_string_equal(cg.base, f->dir);
	assert_int_equal(cd_cgroup_path(&cg, 42, path, sizeof(path)), 0);
	/* the daemon's tag (its state dir's hash) in the name: two daemons,
	 * two names */
	assert_non_null(strstr(path, "/colloc-"));
	assert_non_null(strstr(path, "-job-42"));
	{
		struct cd_cgroup other;
		char p2[CD_CGROUP_PATH_MAX + 32];

		cd_cgroup_init(&other, f->mountinfo, f->self, "/tmp/another", why,
			       sizeof(why));
		assert_int_equal(cd_cgroup_path(&other, 42, p2, sizeof(p2)), 0);
		assert_string_not_equal(path, p2);
	}
	assert_non_null(strstr(why, "each job runs in a cgroup of its own"));
}

static void test_nested_cgroup(void **state)
{
	struct fx *f = *state;
	struct cd_cgroup cg;
	char why[256], sub[96], want[160];

	snprintf(sub, sizeof(sub), "%s/system.slice", f->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	mountinfo_at(f, f->dir);
	put(f->self, "0::/system.slice\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_true(cg.on);
	snprintf(want, sizeof(want), "%s/system.slice", f->dir);
	assert_string_equal(cg.base, want);
}

static void test_refused(void **state)
{
	struct fx *f = *state;
	struct cd_cgroup cg;
	char why[256];

	/* no cgroup2 at all */
	put(f->mountinfo, "25 1 8:1 / / rw - ext4 /dev/vda rw\n");
	put(f->self, "0::/\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_false(cg.on);
	assert_string_equal(why, "no cgroup v2 file system is mounted");
	/* a mount point with an escaped space */
	mountinfo_at(f, "/sys/fs/cg\\040x");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_false(cg.on);
	/* ".." in the own path, or no "0::" line */
	mountinfo_at(f, f->dir);
	put(f->self, "0::/a/../..\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_false(cg.on);
	put(f->self, "1:name=systemd:/\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_false(cg.on);
	assert_non_null(strstr(why, "cgroup v2 path is not in"));
	/* a base that does not exist: not delegated */
	put(f->self, "0::/missing\n");
	cd_cgroup_init(&cg, f->mountinfo, f->self, "/var/lib/colloc", why, sizeof(why));
	assert_false(cg.on);
	assert_non_null(strstr(why, "is not delegated to it"));
	/* files that cannot be read */
	cd_cgroup_init(&cg, "/nonexistent/mountinfo", f->self, "/var/lib/colloc", why,
		       sizeof(why));
	assert_false(cg.on);
}

static void test_off_is_inert(void **state)
{
	struct cd_cgroup cg = {0};
	struct colloc_diag diag = {{0}};
	bool removed = false;

	(void)state;
	assert_int_equal(cd_cgroup_kill(&cg, 7, &removed), 0);
	assert_true(removed);
	assert_true(cd_cgroup_open(&cg, 7, &diag) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_root_cgroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_cgroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test(test_off_is_inert),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
