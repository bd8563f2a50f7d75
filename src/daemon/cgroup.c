/*
 * cgroup.c — a cgroup v2 per job (cgroup.h).
 *
 * The kernel's interface is the cgroup v2 file system: mkdir makes a
 * cgroup, writing a pid (or "0", the writer) to cgroup.procs moves a
 * process in, cgroup.procs lists its processes, writing "1" to cgroup.kill
 * (Linux 5.14) kills them all, rmdir of an empty one removes it (see the
 * kernel's Documentation/admin-guide/cgroup-v2.rst).
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "daemon/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096
#define LINES_MAX 4096 /* of mountinfo read */
#define KILL_ROUNDS 4 /* without cgroup.kill: new pids may appear (forks) */
#define PIDS_MAX 4096 /* read per round */

/* The mount point of the first cgroup2 file system in mountinfo into out;
 * false when none (or one whose path has an escaped character). */
static bool cgroup2_mount(const char *mountinfo, char *out, size_t len)
{
	FILE *f = fopen(mountinfo, "re");
	char line[LINE_MAX_BYTES];
	bool found = false;

	if (!f)
		return false;
	for (int n = 0; !found && n < LINES_MAX && fgets(line, sizeof(line), f); n++) {
		char *sep = strstr(line, " - ");
		char *save = NULL, *tok;
		const char *point = NULL;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		/* ID PARENT MAJ:MIN ROOT POINT ... */
		tok = strtok_r(line, " ", &save);
		for (int k = 1; tok && k < 5; k++) {
			tok = strtok_r(NULL, " ", &save);
			if (k == 4)
				point = tok;
		}
		if (point && point[0] == '/' && !strchr(point, '\\') &&
		    strlen(point) < len) {
			snprintf(out, len, "%s", point);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* collocd's path in the cgroup v2 hierarchy (the "0::" line) into out. */
static bool self_path(const char *self_cgroup, char *out, size_t len)
{
	FILE *f = fopen(self_cgroup, "re");
	char line[LINE_MAX_BYTES];
	bool found = false;

	if (!f)
		return false;
	for (int n = 0; !found && n < 64 && fgets(line, sizeof(line), f); n++) {
		size_t l;

		if (strncmp(line, "0::", 3) != 0)
			continue;
		l = strcspn(line + 3, "\n");
		line[3 + l] = '\0';
		if (line[3] == '/' && l < len && !strstr(line + 3, "/..")) {
			snprintf(out, len, "%s", line + 3);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* 32-bit FNV-1a of s (the FNV hash's published offset basis and prime). */
static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

void cd_cgroup_init(struct cd_cgroup *cg, const char *mountinfo, const char *self_cgroup,
		    const char *state_dir, char *why, size_t why_len)
{
	char mnt[CD_CGROUP_PATH_MAX], self[CD_CGROUP_PATH_MAX], probe[CD_CGROUP_PATH_MAX];
	int n;

	memset(cg, 0, sizeof(*cg));
	snprintf(cg->tag, sizeof(cg->tag), "%08x",
		 (unsigned)fnv1a(state_dir ? state_dir : ""));
	if (!cgroup2_mount(mountinfo, mnt, sizeof(mnt))) {
		snprintf(why, why_len, "no cgroup v2 file system is mounted");
		return;
	}
	if (!self_path(self_cgroup, self, sizeof(self))) {
		snprintf(why, why_len, "collocd's cgroup v2 path is not in %s",
			 self_cgroup);
		return;
	}
	n = snprintf(cg->base, sizeof(cg->base), "%s%s", mnt,
		     strcmp(self, "/") == 0 ? "" : self);
	if (n < 0 || (size_t)n >= sizeof(cg->base) - 32) {
		snprintf(why, why_len, "collocd's cgroup path is too long");
		return;
	}
	snprintf(probe, sizeof(probe), "%s/colloc-probe-%ld", cg->base, (long)getpid());
	if (mkdir(probe, 0755) != 0) {
		snprintf(why, why_len, "collocd's cgroup %s is not delegated to it (%s)",
			 cg->base, strerror(errno));
		return;
	}
	(void)rmdir(probe);
	cg->on = true;
	snprintf(why, why_len, "each job runs in a cgroup of its own under %s", cg->base);
}

int cd_cgroup_path(const struct cd_cgroup *cg, uint64_t id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/colloc-%s-job-%llu", cg->base, cg->tag,
			 (unsigned long long)id);

	return n < 0 || (size_t)n >= len ? COLLOC_ELIMIT : 0;
}

int cd_cgroup_open(const struct cd_cgroup *cg, uint64_t id, struct colloc_diag *diag)
{
	char dir[CD_CGROUP_PATH_MAX + 32], procs[CD_CGROUP_PATH_MAX + 64];
	int fd, rc;

	if (!cg->on || cd_cgroup_path(cg, id, dir, sizeof(dir)) != 0)
		return colloc_diag_set(diag, -ENOENT, "job %llu: no cgroup",
				       (unsigned long long)id);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "job %llu: cannot make cgroup %s: %s",
				       (unsigned long long)id, dir, strerror(-rc));
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	fd = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		(void)rmdir(dir);
		return colloc_diag_set(diag, rc, "job %llu: cannot open %s: %s",
				       (unsigned long long)id, procs, strerror(-rc));
	}
	return fd;
}

/* SIGKILL to each pid listed in the cgroup.procs at path; how many. */
static int kill_listed(const char *path, bool signal_them)
{
	FILE *f = fopen(path, "re");
	char line[32];
	int n = 0;

	if (!f)
		return 0;
	for (int k = 0; k < PIDS_MAX && fgets(line, sizeof(line), f); k++) {
		char *end;
		long pid = strtol(line, &end, 10);

		if (end != line && pid > 1 && pid != (long)getpid() &&
		    (!signal_them || kill((pid_t)pid, SIGKILL) == 0))
			n++;
	}
	fclose(f);
	return n;
}

int cd_cgroup_kill(const struct cd_cgroup *cg, uint64_t id, bool *removed)
{
	char dir[CD_CGROUP_PATH_MAX + 32], file[CD_CGROUP_PATH_MAX + 64];
	int n, fd;

	*removed = true;
	if (!cg->on || cd_cgroup_path(cg, id, dir, sizeof(dir)) != 0)
		return 0;
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0; /* empty, or none */
	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	n = kill_listed(file, false);
	snprintf(file, sizeof(file), "%s/cgroup.kill", dir);
	fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
		for (int round = 0; round < KILL_ROUNDS; round++)
			if (kill_listed(file, true) == 0)
				break;
	}
	if (fd >= 0)
		close(fd);
	*removed = rmdir(dir) == 0 || errno == ENOENT;
	return n;
}
