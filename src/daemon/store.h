/*
 * store.h — collocd's durable state: jobs, their events and the measured
 * peaks of earlier runs, in one SQLite database in WAL mode.
 *
 * Everything the daemon must not lose goes through here before it is acted
 * on: a submitted job is committed before the submit is answered, a launch
 * is committed (with its supervisor's pid) right after the fork, and a final
 * state is committed when the supervisor's status has been read. Each call
 * is one transaction unless the caller wraps several in
 * cd_store_begin()/cd_store_commit(). Commits are synchronous=FULL: a
 * power cut after an answer loses nothing that answer promised.
 *
 * The schema carries a version (PRAGMA user_version); opening a database of
 * a newer version is refused with COLLOC_EUNSUPPORTED, a file that is not a
 * colloc database with COLLOC_EFORMAT. A database of an older version is
 * migrated in place, in one transaction, keeping its jobs, events and
 * peaks (version 1 -> 2 adds the jobs' utilization source and graph
 * prediction: "unknown" and none for the jobs it already holds; 2 -> 3 the
 * idempotency key; 3 -> 4 time limits, holds, dependencies and arrays,
 * "none" for the jobs it holds). Opening never deletes existing rows;
 * cd_store_job_prune() is the only call that does.
 *
 * Ownership: cd_store_open() returns a handle the caller owns and frees with
 * cd_store_close(). Records read out are caller-owned (struct cd_job with
 * its heap strings, see job.h). A handle is used by one thread.
 */
#ifndef COLLOC_DAEMON_STORE_H
#define COLLOC_DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "colloc/error.h"
#include "daemon/job.h"

struct cd_store;

/*
 * Open (creating when absent) the database at path; ":memory:" gives a
 * private in-memory database (tests, fuzzing). Sets WAL, synchronous=FULL,
 * foreign keys and a busy timeout. Returns 0 and *out, or a negative code
 * with the path and SQLite's message in diag.
 */
int cd_store_open(const char *path, struct cd_store **out, struct colloc_diag *diag);

/* Close store; NULL is a no-op. */
void cd_store_close(struct cd_store *store);

/* Group the following calls into one transaction (nesting is an error). */
int cd_store_begin(struct cd_store *store, struct colloc_diag *diag);
int cd_store_commit(struct cd_store *store, struct colloc_diag *diag);
/* Undo everything since cd_store_begin(); never fails visibly. */
void cd_store_rollback(struct cd_store *store);

/*
 * Insert job (its id is ignored) and write the new id into job->id.
 * argv_json / env_json may be NULL (stored as "[]").
 */
int cd_store_job_insert(struct cd_store *store, struct cd_job *job,
			struct colloc_diag *diag);

/* Replace every field of the job with id job->id. COLLOC_ENOTFOUND when
 * there is none. */
int cd_store_job_update(struct cd_store *store, const struct cd_job *job,
			struct colloc_diag *diag);

/* Read job id into *job (cd_job_fini() it afterwards). COLLOC_ENOTFOUND
 * when there is none; *job is then cd_job_init()ed. */
int cd_store_job_get(struct cd_store *store, uint64_t id, struct cd_job *job,
		     struct colloc_diag *diag);

/* The job uid submitted with idempotency key key: 0 and *job, or
 * COLLOC_ENOTFOUND (no diag message) when there is none. */
int cd_store_job_by_idem(struct cd_store *store, uint32_t uid, const char *key,
			 struct cd_job *job, struct colloc_diag *diag);

/*
 * Jobs whose state bit (1u << state) is in state_mask and, when uid >= 0,
 * that belong to uid, ordered by id. On success *jobs is a new array of *n
 * records (free each with cd_job_fini() and the array with free(); both NULL
 * and 0 when there are none). limit caps how many are returned (0: all).
 */
int cd_store_job_list(struct cd_store *store, unsigned state_mask, int64_t uid,
		      size_t limit, struct cd_job **jobs, size_t *n,
		      struct colloc_diag *diag);

/* Which jobs cd_store_job_find() returns (zero it, then set what filters). */
struct cd_job_filter {
	unsigned state_mask; /* bits 1u << state; 0 matches nothing */
	int64_t uid; /* < 0: every user's */
	const char *user; /* NULL: any user name; else exactly this one */
	const char *name_glob; /* NULL: any; else a shell pattern (SQLite
				* GLOB: * ? [...], case-sensitive) */
	int64_t active_since_ms; /* > 0: only jobs that had not ended before
				  * this wall-clock time (end_ms 0 or >=) */
	size_t limit; /* 0: all */
};

/* cd_store_job_list() with every filter of f; the same ownership. */
int cd_store_job_find(struct cd_store *store, const struct cd_job_filter *f,
		      struct cd_job **jobs, size_t *n, struct colloc_diag *diag);

/*
 * Delete the jobs that ended (done, failed, cancelled) before wall-clock
 * time ended_before_ms, with their events (measured peaks stay: they are
 * history for later runs). One transaction. *ids gets a new array of the
 * *n ids deleted (free() it; NULL and 0 when none), so that the caller can
 * remove their logs.
 */
int cd_store_job_prune(struct cd_store *store, int64_t ended_before_ms, uint64_t **ids,
		       size_t *n, struct colloc_diag *diag);

/* How many jobs are in each state, and how many have had their need
 * raised after an out-of-memory death (mem_source "oom-retry"). One query,
 * whatever the number of jobs. */
int cd_store_job_counts(struct cd_store *store, uint64_t by_state[CD_JOB_STATE_COUNT_],
			uint64_t *oom_retried, struct colloc_diag *diag);

/* The highest job id ever assigned (0 for an empty store). */
int cd_store_last_id(struct cd_store *store, uint64_t *id, struct colloc_diag *diag);

/*
 * Append an event to job id's history: ts_ms (wall clock), a short kind
 * ("submit", "start", "oom", "requeue", "exit", "cancel", "lost", ...) and a
 * human message (truncated to CD_REASON_MAX).
 */
int cd_store_event_add(struct cd_store *store, uint64_t job_id, int64_t ts_ms,
		       const char *kind, const char *message, struct colloc_diag *diag);

/* How many distinct jobs have at least one event of this kind. */
int cd_store_event_count(struct cd_store *store, const char *kind, uint64_t *n,
			 struct colloc_diag *diag);

/* The same, counting only events at or after wall-clock time since_ms. */
int cd_store_event_count_since(struct cd_store *store, const char *kind, int64_t since_ms,
			       uint64_t *n, struct colloc_diag *diag);

struct cd_event {
	int64_t ts_ms;
	char kind[32];
	char message[CD_REASON_MAX];
};

/* Events of job id in the order they were added; *events is a new array
 * of *n (free() it; NULL and 0 when none). */
int cd_store_event_list(struct cd_store *store, uint64_t job_id, struct cd_event **events,
			size_t *n, struct colloc_diag *diag);

/*
 * Record a finished run's measured peak (per GPU, bytes; 0 when none was
 * seen) and mean activity (0..1; negative or NaN when it had no sample)
 * under its history key (see cd_job_history_key). Several runs may be
 * recorded under one key.
 */
int cd_store_peak_record(struct cd_store *store, const char *key, uint64_t job_id,
			 uint64_t peak_bytes, double util_mean, int64_t ts_ms,
			 struct colloc_diag *diag);

/*
 * The largest peak recorded under key among its most recent 5 runs (0 when
 * none of them measured one), and the mean activity of those of them that
 * measured it (-1 when none did). COLLOC_ENOTFOUND when no run is recorded.
 */
int cd_store_peak_lookup(struct cd_store *store, const char *key, uint64_t *peak_bytes,
			 double *util_mean, struct colloc_diag *diag);

#endif
