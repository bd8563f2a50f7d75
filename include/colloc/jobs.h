/*
 * colloc/jobs.h — the job vocabulary that collocd, its API and the colloc
 * CLI share: a job's states, where its memory need and its utilization
 * figure came from, their names on the wire, and which states are final.
 *
 * One table of truth (as Slurm's job_state_string() is shared by slurmctld
 * and squeue): collocd writes these names into its store and its JSON
 * answers, and the CLI reads them back through the same functions instead
 * of comparing strings of its own. The names are part of the API
 * (docs/api.md): never rename one, only add.
 *
 * Not here: the job record itself (collocd's src/daemon/job.h) or anything
 * that needs a clock, a socket or a file.
 *
 * Ownership: every function returns pointers to static strings; nothing is
 * allocated. All functions are pure and thread-safe.
 */
#ifndef COLLOC_JOBS_H
#define COLLOC_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A job's state. The values are stored in collocd's database: append only. */
enum colloc_job_state {
	COLLOC_JOB_QUEUED = 0,
	COLLOC_JOB_RUNNING,
	COLLOC_JOB_DONE, /* exited 0 */
	COLLOC_JOB_FAILED, /* non-zero exit, signal, exec failure, OOM given up */
	COLLOC_JOB_CANCELLED,
	COLLOC_JOB_STATE_COUNT
};

/* "queued", "running", "done", "failed", "cancelled"; "unknown" (never
 * NULL) for a value out of range. */
const char *colloc_job_state_name(int state);

/* The state named name exactly as colloc_job_state_name() writes it, or -1
 * (also for NULL). */
int colloc_job_state_parse(const char *name);

/*
 * A state as a person may type it: the name, any letter case, or the
 * Slurm/squeue spelling ("PD"/"pending" queued, "R" running,
 * "CD"/"completed" done, "F" failed, "CA"/"canceled" cancelled). -1 for
 * anything else. For command lines; the API takes the names only.
 */
int colloc_job_state_from_user(const char *text);

/* The squeue-style short code: "PD", "R", "CD", "F", "CA"; "?" when out of
 * range. */
const char *colloc_job_state_code(int state);

/* True for done, failed and cancelled: the job will never change again.
 * False for anything out of range. */
bool colloc_job_state_final(int state);

/* Where a job's per-GPU memory need came from. */
enum colloc_mem_source {
	COLLOC_MEM_REQUEST = 0, /* the user's --mem */
	COLLOC_MEM_ESTIMATE, /* the graph estimate `submit --model` sent */
	COLLOC_MEM_HISTORY, /* the measured peak of an earlier run */
	COLLOC_MEM_DEFAULT, /* collocd's default_mem */
	COLLOC_MEM_OOM_RETRY, /* raised after an out-of-memory death */
	COLLOC_MEM_OVERUSE, /* raised to what it was measured to use while
			     * sharing a GPU, after collocd stopped it */
	COLLOC_MEM_SOURCE_COUNT
};

/* The longest memory source name, with its NUL ("oom-retry"). */
#define COLLOC_MEM_SOURCE_NAME_MAX 10

/* "request", "estimate", "history", "default", "oom-retry", "overuse";
 * "unknown" for a value out of range. */
const char *colloc_mem_source_name(int source);
int colloc_mem_source_parse(const char *name); /* -1 when unknown or NULL */

/* True for the sources a client may send with a submission (request and
 * estimate); the others are collocd's own conclusions. */
bool colloc_mem_source_from_client(int source);

/* Where a job's predicted utilization came from. */
enum colloc_util_source {
	COLLOC_UTIL_REQUEST = 0, /* the user's --util */
	COLLOC_UTIL_HISTORY, /* measured on earlier runs */
	COLLOC_UTIL_GRAPH, /* the graph prediction, written "graph (PLATFORM)" */
	COLLOC_UTIL_DEFAULT, /* collocd's default_util */
	COLLOC_UTIL_UNKNOWN, /* a job stored before sources were recorded */
	COLLOC_UTIL_SOURCE_COUNT
};

/* "request", "history", "graph", "default", "unknown". */
const char *colloc_util_source_name(int source);

/*
 * The source a stored text names: one of the names, or "graph (PLATFORM)"
 * for COLLOC_UTIL_GRAPH. -1 for anything else (also NULL).
 */
int colloc_util_source_parse(const char *text);

/*
 * The text collocd stores and shows for source into buf[0..len):
 * "graph (PLATFORM)" when source is COLLOC_UTIL_GRAPH and platform is
 * non-empty, else the name. Returns 0, or -1 when it does not fit (buf then
 * holds a cut, terminated string) or source is out of range.
 */
int colloc_util_source_format(int source, const char *platform, char *buf, size_t len);

/* How a job depends on another (`submit --after ID[:KIND]`). */
enum colloc_dep_kind {
	COLLOC_DEP_OK = 0, /* the other ended done (exit 0); the default */
	COLLOC_DEP_ANY, /* the other ended, whatever its state */
	COLLOC_DEP_KIND_COUNT
};

/* "ok", "any"; "unknown" for a value out of range. */
const char *colloc_dep_kind_name(int kind);

/*
 * "ID", "ID:ok" or "ID:any" (also Slurm's "afterok:ID" / "afterany:ID")
 * into *id (1..2^53) and *kind. Returns 0, or -1 for anything else (also
 * NULL).
 */
int colloc_dep_parse(const char *text, uint64_t *id, int *kind);

/* The longest duration colloc_duration_parse() takes: 10 years. */
#define COLLOC_DURATION_MAX_MS ((int64_t)3650 * 86400 * 1000)

/*
 * A duration as people write time limits and retention periods: one or
 * more NUMBER UNIT groups, units ms, s, m (or min), h, d: "90s", "10m",
 * "1h30m", "30d", "500ms". A bare number is refused (minutes to Slurm,
 * seconds elsewhere: ambiguous). Into *ms, at most COLLOC_DURATION_MAX_MS.
 * Returns 0, or -1 (also for NULL, "" and 0).
 */
int colloc_duration_parse(const char *text, int64_t *ms);

/*
 * ms as colloc_duration_parse() reads it back, largest units first:
 * "10m", "1h30m", "2d", "1s500ms"; "0s" for 0 or less. Returns 0, or -1
 * when it does not fit in len (buf then holds a cut, terminated string).
 */
int colloc_duration_format(int64_t ms, char *buf, size_t len);

#endif
