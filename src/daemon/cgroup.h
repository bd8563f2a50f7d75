/*
 * cgroup.h — a cgroup v2 per job, where collocd's own cgroup is delegated
 * to it (it may create child cgroups there): every process a job starts,
 * one that leaves the job's session with setsid included, stays in the
 * job's cgroup, and the end of the job kills the whole cgroup.
 *
 * The cgroups are children of collocd's own: BASE/colloc-TAG-job-ID, where
 * TAG names the daemon (a hash of its state dir, which one collocd holds at
 * a time: two daemons in one cgroup never share a name, and a restarted one
 * finds its adopted jobs' cgroups), and
 * BASE is the cgroup v2 mount (from /proc/self/mountinfo) joined with
 * collocd's path in it (the "0::" line of /proc/self/cgroup). No controller
 * is enabled: the cgroup only groups, so the no-internal-process rule does
 * not apply. Where there is no cgroup v2, or BASE cannot be written, jobs
 * run without one (cd_cgroup_init() says why) and their session is what
 * is killed (launcher.h).
 */
#ifndef COLLOC_DAEMON_CGROUP_H
#define COLLOC_DAEMON_CGROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "colloc/error.h"

#define CD_CGROUP_PATH_MAX 512

struct cd_cgroup {
	bool on; /* jobs get a cgroup */
	char base[CD_CGROUP_PATH_MAX]; /* collocd's own cgroup directory */
	char tag[16]; /* this daemon's part of its jobs' cgroup names */
};

/*
 * Find collocd's cgroup v2 directory and check that it may create a child
 * there (by making and removing one). cg->on false with why (a sentence)
 * when not; never fails otherwise. mountinfo and self_cgroup are the
 * files to read (/proc/self/mountinfo, /proc/self/cgroup; tests pass
 * others).
 */
void cd_cgroup_init(struct cd_cgroup *cg, const char *mountinfo, const char *self_cgroup,
		    const char *state_dir, char *why, size_t why_len);

/* BASE/colloc-TAG-job-ID into buf; COLLOC_ELIMIT when it does not fit. */
int cd_cgroup_path(const struct cd_cgroup *cg, uint64_t id, char *buf, size_t len);

/*
 * Make job id's cgroup and open its cgroup.procs for writing (the
 * supervisor writes "0" there to move itself in before it forks the job).
 * Returns the descriptor (close-on-exec), or a negative code with why.
 */
int cd_cgroup_open(const struct cd_cgroup *cg, uint64_t id, struct colloc_diag *diag);

/*
 * Kill every process in job id's cgroup (cgroup.kill where the kernel has
 * it, else SIGKILL to each listed pid, a few rounds) and remove the cgroup
 * when it is empty. Returns how many processes were signalled (0 for none
 * or no such cgroup); *removed says whether the cgroup is gone (it stays
 * while killed processes are still exiting: call again later).
 */
int cd_cgroup_kill(const struct cd_cgroup *cg, uint64_t id, bool *removed);

#endif
