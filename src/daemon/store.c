/*
 * store.c — collocd's durable store on SQLite. See store.h for the contract.
 *
 * Every statement is prepared once at open from a constant string and only
 * ever bound, never built from values. Unsigned 64-bit values are stored
 * bit for bit in SQLite's signed INTEGER and read back the same way, so
 * values above INT64_MAX survive (they only sort wrongly inside SQL, which is
 * why the peak lookup takes its maximum in C). Strings read back are copied
 * into the fixed fields of struct cd_job with their bounds, cut at a UTF-8
 * character boundary.
 *
 * Not here: deciding what to store when, or which jobs are old enough to
 * prune (the daemon).
 */
#include "daemon/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#define SCHEMA_VERSION 4
/* PRAGMA application_id, "Coll": tells a colloc database from any other
 * SQLite file (and lets file(1) name it). */
#define APPLICATION_ID 0x436f6c6c
#define BUSY_TIMEOUT_MS 5000
#define PEAK_RUNS 5
/* A job's dependencies as text: "ID:KIND[:met]" joined by commas. */
#define DEPS_TEXT_MAX ((size_t)CD_DEPS_MAX * 32)
/* Comma-joined UUIDs: (COLLOC_GPU_UUID_MAX - 1) bytes and one separator or
 * the final NUL per GPU. */
#define GPUS_TEXT_MAX (COLLOC_SCHED_MAX_GPUS * COLLOC_GPU_UUID_MAX)

/* What struct cd_event holds, without the NUL. */
#define EVENT_KIND_LEN (sizeof((struct cd_event){0}.kind) - 1)
#define EVENT_MESSAGE_LEN (sizeof((struct cd_event){0}.message) - 1)

_Static_assert(CD_JOB_STATE_COUNT_ == 5, "job list binds one parameter per state");

/* Applied in one transaction to an empty database: the current schema.
 * Columns added by a migration come last, declared as the migration adds
 * them, so that a created and a migrated database are alike. */
static const char schema_sql[] =
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" name TEXT NOT NULL,"
	" uid INTEGER NOT NULL,"
	" gid INTEGER NOT NULL,"
	" user TEXT NOT NULL,"
	" state INTEGER NOT NULL,"
	" n_gpus INTEGER NOT NULL,"
	" priority INTEGER NOT NULL,"
	" mem_need_bytes INTEGER NOT NULL,"
	" mem_source TEXT NOT NULL,"
	" util_pred REAL," /* NaN is stored as NULL by SQLite */
	" model TEXT NOT NULL,"
	" key TEXT NOT NULL,"
	" cwd TEXT NOT NULL,"
	" argv_json TEXT NOT NULL,"
	" env_json TEXT NOT NULL,"
	" attempts INTEGER NOT NULL,"
	" exclusive INTEGER NOT NULL,"
	" n_assigned INTEGER NOT NULL,"
	" gpus TEXT NOT NULL,"
	" sup_pid INTEGER NOT NULL,"
	" sup_start INTEGER NOT NULL,"
	" job_pgid INTEGER NOT NULL,"
	" peak_bytes INTEGER NOT NULL,"
	" util_mean REAL,"
	" util_samples INTEGER NOT NULL,"
	" cancel_requested INTEGER NOT NULL,"
	" exit_code INTEGER NOT NULL,"
	" term_signal INTEGER NOT NULL,"
	" reason TEXT NOT NULL,"
	" submit_ms INTEGER NOT NULL,"
	" start_ms INTEGER NOT NULL,"
	" end_ms INTEGER NOT NULL,"
	/* version 2 */
	" util_source TEXT NOT NULL DEFAULT '',"
	" graph_gpu_util REAL," /* NULL: no graph prediction */
	" graph_sm_activity REAL,"
	" graph_platform TEXT NOT NULL DEFAULT '',"
	/* version 3 */
	" idem_key TEXT," /* NULL: submitted without an idempotency key */
	/* version 4 */
	" time_limit_ms INTEGER NOT NULL DEFAULT 0,"
	" held INTEGER NOT NULL DEFAULT 0,"
	" deps TEXT NOT NULL DEFAULT '',"
	" array_id INTEGER NOT NULL DEFAULT 0,"
	" array_index INTEGER NOT NULL DEFAULT -1,"
	" array_max_running INTEGER NOT NULL DEFAULT 0,"
	" stop_cause INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX jobs_state ON jobs(state);"
	"CREATE UNIQUE INDEX jobs_idem ON jobs(uid, idem_key) WHERE idem_key IS NOT NULL;"
	"CREATE INDEX jobs_end ON jobs(end_ms);"
	"CREATE TABLE events ("
	" seq INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" ts_ms INTEGER NOT NULL,"
	" kind TEXT NOT NULL,"
	" message TEXT NOT NULL);"
	"CREATE INDEX events_job ON events(job_id);"
	/* No foreign key: measured peaks outlive the jobs they came from. */
	"CREATE TABLE peaks ("
	" key TEXT NOT NULL,"
	" job_id INTEGER NOT NULL,"
	" peak_bytes INTEGER NOT NULL,"
	" util_mean REAL,"
	" ts_ms INTEGER NOT NULL);"
	"CREATE INDEX peaks_key ON peaks(key, ts_ms, job_id);"
	"PRAGMA application_id = 1131375724;" /* APPLICATION_ID */
	"PRAGMA user_version = 4;"; /* SCHEMA_VERSION */

/*
 * migrations[v] turns a version-v database into version v + 1, in the
 * same transaction as every later step. Existing rows are kept: new
 * columns get values that say "not recorded".
 */
static const char *const migrations[] = {
	[0] = NULL, /* version 0 is an empty file: schema_sql creates it */
	/* 1 -> 2: where a job's utilization figure came from, and the graph
	 * prediction beside it. Version 1 wrote a run without utilization
	 * samples as 0 in peaks.util_mean (and read 0 as "none"); NULL says
	 * so now, so that a measured 0 can count as history. */
	[1] = "ALTER TABLE jobs ADD COLUMN util_source TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE jobs ADD COLUMN graph_gpu_util REAL;"
	      "ALTER TABLE jobs ADD COLUMN graph_sm_activity REAL;"
	      "ALTER TABLE jobs ADD COLUMN graph_platform TEXT NOT NULL DEFAULT '';"
	      "UPDATE jobs SET util_source = 'unknown';"
	      "UPDATE peaks SET util_mean = NULL WHERE util_mean = 0;"
	      "PRAGMA user_version = 2;",
	/* 2 -> 3: the client's idempotency key, unique per user, so that a
	 * retried submit finds the job its first try committed. */
	[2] = "ALTER TABLE jobs ADD COLUMN idem_key TEXT;"
	      "CREATE UNIQUE INDEX jobs_idem ON jobs(uid, idem_key) "
	      "WHERE idem_key IS NOT NULL;"
	      "PRAGMA user_version = 3;",
	/* 3 -> 4: the job features of issue 16 (time limit, hold,
	 * dependencies, arrays, why a running job is being stopped), all
	 * "none" for the jobs already stored; end_ms indexed for the
	 * retention sweep. */
	[3] = "ALTER TABLE jobs ADD COLUMN time_limit_ms INTEGER NOT NULL DEFAULT 0;"
	      "ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;"
	      "ALTER TABLE jobs ADD COLUMN deps TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE jobs ADD COLUMN array_id INTEGER NOT NULL DEFAULT 0;"
	      "ALTER TABLE jobs ADD COLUMN array_index INTEGER NOT NULL DEFAULT -1;"
	      "ALTER TABLE jobs ADD COLUMN array_max_running INTEGER NOT NULL "
	      "DEFAULT 0;"
	      "ALTER TABLE jobs ADD COLUMN stop_cause INTEGER NOT NULL DEFAULT 0;"
	      "CREATE INDEX jobs_end ON jobs(end_ms);"
	      "PRAGMA user_version = 4;",
};

_Static_assert(APPLICATION_ID == 1131375724, "schema_sql spells APPLICATION_ID");
_Static_assert(SCHEMA_VERSION == 4, "schema_sql spells SCHEMA_VERSION");
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == SCHEMA_VERSION,
	       "one migration per version below SCHEMA_VERSION");

/* The columns of jobs after id, in the order of enum job_col. */
#define JOB_COLS                                                                      \
	"name, uid, gid, user, state, n_gpus, priority, mem_need_bytes, mem_source, " \
	"util_pred, model, key, cwd, argv_json, env_json, attempts, exclusive, "      \
	"n_assigned, gpus, sup_pid, sup_start, job_pgid, peak_bytes, util_mean, "     \
	"util_samples, cancel_requested, exit_code, term_signal, reason, submit_ms, " \
	"start_ms, end_ms, util_source, graph_gpu_util, graph_sm_activity, "          \
	"graph_platform, idem_key, time_limit_ms, held, deps, array_id, "             \
	"array_index, array_max_running, stop_cause"
#define JOB_PARAMS                                                                     \
	"?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, " \
	"?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, "  \
	"?33, ?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44"

/* Parameter number in INSERT/UPDATE, and column number in SELECT id, ... */
enum job_col {
	JC_NAME = 1,
	JC_UID,
	JC_GID,
	JC_USER,
	JC_STATE,
	JC_N_GPUS,
	JC_PRIORITY,
	JC_MEM_NEED_BYTES,
	JC_MEM_SOURCE,
	JC_UTIL_PRED,
	JC_MODEL,
	JC_KEY,
	JC_CWD,
	JC_ARGV_JSON,
	JC_ENV_JSON,
	JC_ATTEMPTS,
	JC_EXCLUSIVE,
	JC_N_ASSIGNED,
	JC_GPUS,
	JC_SUP_PID,
	JC_SUP_START,
	JC_JOB_PGID,
	JC_PEAK_BYTES,
	JC_UTIL_MEAN,
	JC_UTIL_SAMPLES,
	JC_CANCEL_REQUESTED,
	JC_EXIT_CODE,
	JC_TERM_SIGNAL,
	JC_REASON,
	JC_SUBMIT_MS,
	JC_START_MS,
	JC_END_MS,
	JC_UTIL_SOURCE,
	JC_GRAPH_GPU_UTIL,
	JC_GRAPH_SM_ACTIVITY,
	JC_GRAPH_PLATFORM,
	JC_IDEM_KEY,
	JC_TIME_LIMIT_MS,
	JC_HELD,
	JC_DEPS,
	JC_ARRAY_ID,
	JC_ARRAY_INDEX,
	JC_ARRAY_MAX_RUNNING,
	JC_STOP_CAUSE,
	JC_COUNT_ = JC_STOP_CAUSE
};

enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_JOB_INSERT,
	ST_JOB_UPDATE,
	ST_JOB_GET,
	ST_JOB_LIST,
	ST_LAST_ID,
	ST_EVENT_COUNT,
	ST_JOB_COUNTS,
	ST_EVENT_ADD,
	ST_EVENT_LIST,
	ST_PEAK_RECORD,
	ST_PEAK_LOOKUP,
	ST_JOB_BY_IDEM,
	ST_JOB_PRUNE,
	ST_COUNT_
};

static const char *const stmt_sql[ST_COUNT_] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_JOB_INSERT] = "INSERT INTO jobs (" JOB_COLS ") VALUES (" JOB_PARAMS ")",
	[ST_JOB_UPDATE] =
		"UPDATE jobs SET (" JOB_COLS ") = (" JOB_PARAMS ") WHERE id = ?45",
	[ST_JOB_GET] = "SELECT id, " JOB_COLS " FROM jobs WHERE id = ?1",
	[ST_JOB_BY_IDEM] =
		"SELECT id, " JOB_COLS " FROM jobs WHERE uid = ?1 AND idem_key = ?2",
	/* Unbound state parameters are NULL and match nothing. */
	[ST_JOB_LIST] = "SELECT id, " JOB_COLS " FROM jobs"
			" WHERE state IN (?1, ?2, ?3, ?4, ?5) AND (?6 < 0 OR uid = ?6)"
			" AND (?8 IS NULL OR user = ?8)"
			" AND (?9 IS NULL OR end_ms = 0 OR end_ms >= ?9)"
			" AND (?10 IS NULL OR name GLOB ?10)"
			" ORDER BY id LIMIT ?7",
	/* Final states only (the CHECK in cd_store_job_prune binds them);
	 * events go with their jobs (ON DELETE CASCADE), peaks stay. */
	[ST_JOB_PRUNE] = "DELETE FROM jobs WHERE state IN (?1, ?2, ?3) AND end_ms > 0"
			 " AND end_ms < ?4 RETURNING id",
	[ST_LAST_ID] = "SELECT seq FROM sqlite_sequence WHERE name = 'jobs'",
	[ST_EVENT_COUNT] = "SELECT COUNT(DISTINCT job_id) FROM events WHERE kind = ?1 "
			   "AND ts_ms >= ?2",
	[ST_JOB_COUNTS] =
		"SELECT state, COUNT(*), SUM(mem_source = 'oom-retry') FROM jobs"
		" GROUP BY state",
	[ST_EVENT_ADD] = "INSERT INTO events (job_id, ts_ms, kind, message)"
			 " VALUES (?1, ?2, ?3, ?4)",
	[ST_EVENT_LIST] = "SELECT ts_ms, kind, message FROM events WHERE job_id = ?1"
			  " ORDER BY seq",
	[ST_PEAK_RECORD] = "INSERT INTO peaks (key, job_id, peak_bytes, util_mean, ts_ms)"
			   " VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_PEAK_LOOKUP] = "SELECT peak_bytes, util_mean FROM peaks WHERE key = ?1"
			   " ORDER BY ts_ms DESC, job_id DESC, rowid DESC LIMIT ?2",
};

struct cd_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT_];
	char path[]; /* for messages */
};

/* --- values ---------------------------------------------------------------- */

/* SQLite's INTEGER is signed 64-bit; unsigned values travel bit for bit. */
static int64_t u64_to_i64(uint64_t v)
{
	int64_t r;

	memcpy(&r, &v, sizeof(r));
	return r;
}

static uint64_t i64_to_u64(int64_t v)
{
	uint64_t r;

	memcpy(&r, &v, sizeof(r));
	return r;
}

/* Length of s capped at max bytes, backed off so that a multi-byte UTF-8
 * character is never cut in half. s[max] is read only when s is longer. */
static size_t text_len(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (n < max || s[n] == '\0')
		return n;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Same, for a fixed field that may lack its NUL: cut to size - 1 bytes. */
static size_t field_len(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n < size)
		return n;
	return text_len(s, size - 1);
}

/* Copy column col into dst of size bytes, cut safely; NULL reads as "". */
static void copy_col(sqlite3_stmt *st, int col, char *dst, size_t size)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	size_t n = 0;

	if (t) {
		n = (size_t)sqlite3_column_bytes(st, col);
		if (n >= size) {
			n = size - 1;
			while (n > 0 && ((unsigned char)t[n] & 0xC0) == 0x80)
				n--;
		}
		memcpy(dst, t, n);
	}
	dst[n] = '\0';
}

/* A heap copy of column col (NULL reads as fallback); NULL when out of
 * memory. */
static char *dup_col(sqlite3_stmt *st, int col, const char *fallback)
{
	const char *t = fallback;
	size_t n = strlen(fallback);
	char *r;

	/* The type first: it is undefined once column_text() converted. */
	if (sqlite3_column_type(st, col) != SQLITE_NULL) {
		t = (const char *)sqlite3_column_text(st, col);
		if (!t)
			return NULL;
		n = (size_t)sqlite3_column_bytes(st, col);
	}
	r = malloc(n + 1);
	if (!r)
		return NULL;
	memcpy(r, t, n);
	r[n] = '\0';
	return r;
}

static double real_col(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL
		       ? 0.0
		       : sqlite3_column_double(st, col);
}

/* A fraction that may be absent: NULL reads as -1. */
static double opt_real_col(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL
		       ? -1.0
		       : sqlite3_column_double(st, col);
}

/* Binds parameters one after another and keeps the first failure, so that
 * a long run of binds is checked once. */
struct binder {
	sqlite3_stmt *st;
	int rc;
};

static void bind_i64(struct binder *b, int idx, int64_t v)
{
	if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_int64(b->st, idx, v);
}

static void bind_u64(struct binder *b, int idx, uint64_t v)
{
	bind_i64(b, idx, u64_to_i64(v));
}

static void bind_double(struct binder *b, int idx, double v)
{
	if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_double(b->st, idx, v);
}

/* A value that may be absent (negative or NaN): NULL in the file. */
static void bind_opt_double(struct binder *b, int idx, double v)
{
	if (b->rc == SQLITE_OK)
		b->rc = v >= 0 ? sqlite3_bind_double(b->st, idx, v)
			       : sqlite3_bind_null(b->st, idx);
}

/* The text stays the caller's until the statement is reset. */
static void bind_text(struct binder *b, int idx, const char *s, size_t n)
{
	if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_text64(b->st, idx, s, n, SQLITE_STATIC, SQLITE_UTF8);
}

static void bind_field(struct binder *b, int idx, const char *s, size_t size)
{
	bind_text(b, idx, s, field_len(s, size));
}

/* --- errors ---------------------------------------------------------------- */

/* A negative colloc code for SQLite result src (extended codes are on). */
static int map_rc(sqlite3 *db, int src)
{
	int sys;

	switch (src & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return COLLOC_EFORMAT;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_TOOBIG:
	case SQLITE_RANGE:
		return COLLOC_ELIMIT;
	case SQLITE_CONSTRAINT:
		/* The only foreign key is an event's job. */
		return src == SQLITE_CONSTRAINT_FOREIGNKEY ? COLLOC_ENOTFOUND
							   : COLLOC_EUSAGE;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		sys = db ? sqlite3_system_errno(db) : 0;
		return sys > 0 ? -sys : -EIO;
	default:
		return -EIO;
	}
}

/* Set diag to "path: what: SQLite's message" and return the mapped code.
 * Call before resetting the statement that failed. */
static int db_fail(struct cd_store *store, int src, const char *what,
		   struct colloc_diag *diag)
{
	return colloc_diag_set(diag, map_rc(store->db, src), "%s: %s: %s", store->path,
			       what, sqlite3_errmsg(store->db));
}

/* --- statements ------------------------------------------------------------ */

static sqlite3_stmt *stmt_get(struct cd_store *store, enum stmt_id id)
{
	return store->stmt[id];
}

/* Ready a statement for its next use; its error, if any, was reported by
 * the step that failed. */
static void stmt_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Step a statement that returns no rows and reset it. */
static int run_plain(struct cd_store *store, enum stmt_id id, struct binder *b,
		     const char *what, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, id);
	int src = b ? b->rc : SQLITE_OK;
	int rc = 0;

	if (src == SQLITE_OK)
		src = sqlite3_step(st);
	if (src != SQLITE_DONE && src != SQLITE_ROW)
		rc = db_fail(store, src, what, diag);
	stmt_done(st);
	return rc;
}

/* --- open and close -------------------------------------------------------- */

struct identity {
	int64_t version;
	int64_t app_id;
	int64_t n_objects;
};

static int read_identity(sqlite3 *db, struct identity *id)
{
	static const char sql[] = "SELECT (SELECT user_version FROM pragma_user_version),"
				  " (SELECT application_id FROM pragma_application_id),"
				  " (SELECT count(*) FROM sqlite_master)";
	sqlite3_stmt *st = NULL;
	int src = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (src == SQLITE_OK) {
		src = sqlite3_step(st);
		if (src == SQLITE_ROW) {
			id->version = sqlite3_column_int64(st, 0);
			id->app_id = sqlite3_column_int64(st, 1);
			id->n_objects = sqlite3_column_int64(st, 2);
			src = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return src;
}

/* 0 when the database is colloc's, else the refusal; *version is its schema
 * version (0: an empty file, to be created; below SCHEMA_VERSION: to be
 * migrated). Reads only, so a foreign file is never touched. */
static int check_identity(struct cd_store *store, int64_t *version,
			  struct colloc_diag *diag)
{
	struct identity id = {0, 0, 0};
	int src = read_identity(store->db, &id);

	if (src != SQLITE_OK) {
		if ((src & 0xff) == SQLITE_NOTADB)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s: not a colloc database: %s",
					       store->path, sqlite3_errmsg(store->db));
		return db_fail(store, src, "reading the schema version", diag);
	}
	if (id.version > SCHEMA_VERSION)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: schema version %lld is newer than this "
				       "collocd's (%d)",
				       store->path, (long long)id.version,
				       SCHEMA_VERSION);
	if (id.version > 0 && id.app_id != APPLICATION_ID)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: not a colloc database (application id %lld)",
				       store->path, (long long)id.app_id);
	if (id.version <= 0 && id.n_objects > 0)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: not a colloc database (it has tables but no "
				       "colloc schema version)",
				       store->path);
	*version = id.version < 0 ? 0 : id.version;
	return 0;
}

/* One-off statement without values: settings and the schema. */
static int exec_const(struct cd_store *store, const char *sql, const char *what,
		      struct colloc_diag *diag)
{
	int src = sqlite3_exec(store->db, sql, NULL, NULL, NULL);

	return src == SQLITE_OK ? 0 : db_fail(store, src, what, diag);
}

static int set_wal(struct cd_store *store, struct colloc_diag *diag)
{
	sqlite3_stmt *st = NULL;
	char mode[16] = "";
	int src =
		sqlite3_prepare_v2(store->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	int rc = 0;

	if (src == SQLITE_OK) {
		src = sqlite3_step(st);
		if (src == SQLITE_ROW) {
			copy_col(st, 0, mode, sizeof(mode));
			src = SQLITE_OK;
		}
	}
	if (src != SQLITE_OK)
		rc = db_fail(store, src, "setting WAL mode", diag);
	/* An in-memory database has no WAL and says "memory". */
	else if (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
		rc = colloc_diag_set(
			diag, COLLOC_EUNSUPPORTED,
			"%s: cannot use WAL mode (journal mode stays \"%s\")",
			store->path, mode);
	sqlite3_finalize(st);
	return rc;
}

/*
 * Bring the schema to SCHEMA_VERSION: create it in an empty file, or apply
 * the migrations from the file's version, all in one transaction (a
 * failure leaves the file as it was). The version is read again under the
 * write lock: another opener may have done the work since check_identity().
 */
static int upgrade_schema(struct cd_store *store, struct colloc_diag *diag)
{
	int64_t version = SCHEMA_VERSION;
	int rc = exec_const(store, "BEGIN IMMEDIATE", "upgrading the schema", diag);

	if (rc < 0)
		return rc;
	rc = check_identity(store, &version, diag);
	if (rc == 0 && version == 0)
		rc = exec_const(store, schema_sql, "creating the schema", diag);
	for (int64_t v = version; rc == 0 && v > 0 && v < SCHEMA_VERSION; v++) {
		char what[64];

		snprintf(what, sizeof(what), "migrating schema version %lld to %lld",
			 (long long)v, (long long)v + 1);
		rc = exec_const(store, migrations[v], what, diag);
	}
	if (rc == 0)
		rc = exec_const(store, "COMMIT", "upgrading the schema", diag);
	if (rc < 0)
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int prepare_all(struct cd_store *store, struct colloc_diag *diag)
{
	for (int i = 0; i < ST_COUNT_; i++) {
		int src = sqlite3_prepare_v3(store->db, stmt_sql[i], -1,
					     SQLITE_PREPARE_PERSISTENT, &store->stmt[i],
					     NULL);

		if (src != SQLITE_OK)
			return db_fail(store, src, "preparing statements", diag);
	}
	return 0;
}

/*
 * The database holds jobs' environments, which may carry secrets: create
 * the file 0600 before SQLite does (its -wal and -shm files copy the
 * database's mode). Sets *created when this call made the file.
 */
static int precreate(const char *path, bool *created, struct colloc_diag *diag)
{
	int fd;

	*created = false;
	if (strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;

		/* Existing files, directories and the like are SQLite's to
		 * judge and report. */
		if (err == EEXIST)
			return 0;
		return colloc_diag_set(diag, -err, "%s: cannot create: %s", path,
				       strerror(err));
	}
	close(fd);
	*created = true;
	return 0;
}

static void store_free(struct cd_store *store)
{
	for (int i = 0; i < ST_COUNT_; i++)
		sqlite3_finalize(store->stmt[i]);
	/* Closing rolls back a transaction still open. */
	sqlite3_close_v2(store->db);
	free(store);
}

/* PRAGMA quick_check: "ok", or the first problems SQLite reports. */
static int quick_check(struct cd_store *store, struct colloc_diag *diag)
{
	sqlite3_stmt *st = NULL;
	char found[512] = "";
	size_t off = 0;
	int src, rows = 0;

	src = sqlite3_prepare_v2(store->db, "PRAGMA quick_check(8)", -1, &st, NULL);
	if (src != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(store, src, "checking the database", diag);
	}
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);

		if (t && strcmp((const char *)t, "ok") == 0)
			continue;
		rows++;
		if (t && off < sizeof(found) - 1)
			off += (size_t)snprintf(found + off, sizeof(found) - off, "%s%s",
						off ? "; " : "", (const char *)t);
	}
	sqlite3_finalize(st);
	if (src != SQLITE_DONE)
		return db_fail(store, src, "checking the database", diag);
	if (rows)
		return colloc_diag_set(
			diag, COLLOC_EFORMAT,
			"%s: the database is damaged (PRAGMA quick_check: %s); "
			"restore a backup, or move it aside to start empty",
			store->path, found);
	return 0;
}

int cd_store_open(const char *path, struct cd_store **out, struct colloc_diag *diag)
{
	struct cd_store *store;
	bool created = false;
	int64_t version = 0;
	size_t len;
	int src;
	int rc;

	*out = NULL;
	if (!path || path[0] == '\0')
		return colloc_diag_set(diag, COLLOC_EUSAGE, "store: no database path");
	len = strlen(path);
	if (len > SIZE_MAX - sizeof(*store) - 1)
		return colloc_diag_set(diag, COLLOC_EOVERFLOW, "store: path too long");
	store = calloc(1, sizeof(*store) + len + 1);
	if (!store)
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
	memcpy(store->path, path, len + 1);

	rc = precreate(path, &created, diag);
	if (rc < 0)
		goto fail_free;
	src = sqlite3_open_v2(path, &store->db,
			      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				      SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
			      NULL);
	if (src != SQLITE_OK) {
		rc = store->db
			     ? db_fail(store, src, "cannot open", diag)
			     : colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
		goto fail_close;
	}
	sqlite3_extended_result_codes(store->db, 1);
	sqlite3_busy_timeout(store->db, BUSY_TIMEOUT_MS);
	/* SQLite falls back to read-only when the file is not writable;
	 * a store that cannot commit is no store. */
	if (sqlite3_db_readonly(store->db, "main") == 1) {
		rc = colloc_diag_set(diag, -EACCES, "%s: database is not writable", path);
		goto fail_close;
	}

	/* Identify the file before anything writes to it: switching a
	 * foreign or newer database to WAL would already change it. */
	rc = check_identity(store, &version, diag);
	if (rc < 0)
		goto fail_close;
	rc = set_wal(store, diag);
	if (rc < 0)
		goto fail_close;
	/* foreign_keys is ignored inside a transaction: set it first. */
	rc = exec_const(store, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON",
			"configuring", diag);
	if (rc < 0)
		goto fail_close;
	/* A damaged file is refused here, with what SQLite found, rather than
	 * discovered job by job while it runs (issue 14). */
	if (version > 0 && (rc = quick_check(store, diag)) < 0)
		goto fail_close;
	if (version < SCHEMA_VERSION) {
		rc = upgrade_schema(store, diag);
		if (rc < 0)
			goto fail_close;
	}
	rc = prepare_all(store, diag);
	if (rc < 0)
		goto fail_close;
	*out = store;
	return 0;

fail_close:
	for (int i = 0; i < ST_COUNT_; i++)
		sqlite3_finalize(store->stmt[i]);
	sqlite3_close_v2(store->db);
	/* The file is ours only when this call made it. */
	if (created)
		unlink(path);
fail_free:
	free(store);
	return rc;
}

void cd_store_close(struct cd_store *store)
{
	if (store)
		store_free(store);
}

/* --- transactions ---------------------------------------------------------- */

int cd_store_begin(struct cd_store *store, struct colloc_diag *diag)
{
	if (!sqlite3_get_autocommit(store->db))
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: a transaction is already open", store->path);
	/* IMMEDIATE takes the write lock now, under the busy timeout, rather
	 * than failing at the first write with SQLITE_BUSY. */
	return run_plain(store, ST_BEGIN, NULL, "begin", diag);
}

int cd_store_commit(struct cd_store *store, struct colloc_diag *diag)
{
	if (sqlite3_get_autocommit(store->db))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: no transaction is open",
				       store->path);
	/* A failed COMMIT may leave the transaction open (SQLITE_BUSY);
	 * cd_store_rollback() then ends it. */
	return run_plain(store, ST_COMMIT, NULL, "commit", diag);
}

void cd_store_rollback(struct cd_store *store)
{
	if (!store || sqlite3_get_autocommit(store->db))
		return;
	run_plain(store, ST_ROLLBACK, NULL, "rollback", NULL);
}

/* --- jobs ------------------------------------------------------------------ */

static int check_job(struct cd_store *store, const struct cd_job *job,
		     struct colloc_diag *diag)
{
	if (job->state < 0 || job->state >= CD_JOB_STATE_COUNT_)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: job %llu: invalid state %d", store->path,
				       (unsigned long long)job->id, job->state);
	if (job->n_assigned < 0 || job->n_assigned > COLLOC_SCHED_MAX_GPUS)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: job %llu: %d assigned GPUs (at most %d)",
				       store->path, (unsigned long long)job->id,
				       job->n_assigned, COLLOC_SCHED_MAX_GPUS);
	for (int i = 0; i < job->n_assigned; i++)
		if (memchr(job->gpus[i], ',', strnlen(job->gpus[i], COLLOC_GPU_UUID_MAX)))
			return colloc_diag_set(
				diag, COLLOC_EUSAGE,
				"%s: job %llu: GPU UUID \"%.*s\" has a comma",
				store->path, (unsigned long long)job->id,
				(int)field_len(job->gpus[i], COLLOC_GPU_UUID_MAX),
				job->gpus[i]);
	if (job->n_deps < 0 || job->n_deps > CD_DEPS_MAX)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: job %llu: %d dependencies (at most %d)",
				       store->path, (unsigned long long)job->id,
				       job->n_deps, CD_DEPS_MAX);
	for (int i = 0; i < job->n_deps; i++)
		if (job->deps[i].id == 0 || job->deps[i].kind < 0 ||
		    job->deps[i].kind >= COLLOC_DEP_KIND_COUNT)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "%s: job %llu: invalid dependency %d",
					       store->path, (unsigned long long)job->id,
					       i);
	if (job->stop_cause < 0 || job->stop_cause >= CD_STOP_CAUSE_COUNT_)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "%s: job %llu: invalid stop cause %d", store->path,
				       (unsigned long long)job->id, job->stop_cause);
	return 0;
}

/* The first n_assigned UUIDs joined by commas into buf (GPUS_TEXT_MAX). */
static size_t join_gpus(const struct cd_job *job, char *buf)
{
	size_t n = 0;

	for (int i = 0; i < job->n_assigned; i++) {
		size_t len = field_len(job->gpus[i], COLLOC_GPU_UUID_MAX);

		if (i > 0)
			buf[n++] = ',';
		memcpy(buf + n, job->gpus[i], len);
		n += len;
	}
	buf[n] = '\0';
	return n;
}

/* Split column col's comma-joined UUIDs into exactly job->n_assigned
 * entries. */
static bool split_gpus(sqlite3_stmt *st, int col, struct cd_job *job)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	size_t len = t ? (size_t)sqlite3_column_bytes(st, col) : 0;
	size_t start = 0;
	int i = 0;

	if (job->n_assigned == 0)
		return len == 0;
	for (size_t pos = 0; pos <= len; pos++) {
		size_t n;

		if (pos < len && t[pos] != ',')
			continue;
		if (i == job->n_assigned)
			return false;
		n = pos - start;
		if (n >= COLLOC_GPU_UUID_MAX)
			n = text_len(t + start, COLLOC_GPU_UUID_MAX - 1);
		if (n > 0)
			memcpy(job->gpus[i], t + start, n);
		job->gpus[i][n] = '\0';
		i++;
		start = pos + 1;
	}
	return i == job->n_assigned;
}

/* job's dependencies as "ID:KIND[:met]" joined by commas into buf
 * (DEPS_TEXT_MAX); check_job() has bounded n_deps. */
static size_t join_deps(const struct cd_job *job, char *buf)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < job->n_deps; i++) {
		int w = snprintf(buf + n, DEPS_TEXT_MAX - n, "%s%llu:%s%s", i ? "," : "",
				 (unsigned long long)job->deps[i].id,
				 colloc_dep_kind_name(job->deps[i].kind),
				 job->deps[i].met ? ":met" : "");

		if (w < 0 || (size_t)w >= DEPS_TEXT_MAX - n)
			break; /* cannot happen: 16 entries of at most 30 bytes */
		n += (size_t)w;
	}
	return n;
}

/* Column col's dependency text back into job; false when it is not what
 * join_deps() writes. */
static bool split_deps(sqlite3_stmt *st, int col, struct cd_job *job)
{
	char buf[DEPS_TEXT_MAX];
	char *save = NULL;

	job->n_deps = 0;
	if ((size_t)sqlite3_column_bytes(st, col) >= sizeof(buf))
		return false;
	copy_col(st, col, buf, sizeof(buf));
	for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		struct cd_dep *dp;
		size_t len = strlen(e);
		bool met = len > 4 && strcmp(e + len - 4, ":met") == 0;

		if (job->n_deps == CD_DEPS_MAX)
			return false;
		dp = &job->deps[job->n_deps];
		if (met)
			e[len - 4] = '\0';
		if (colloc_dep_parse(e, &dp->id, &dp->kind) != 0)
			return false;
		dp->met = met;
		job->n_deps++;
	}
	return true;
}

static void bind_job(struct binder *b, const struct cd_job *job, const char *gpus,
		     size_t gpus_len, const char *deps, size_t deps_len)
{
	bind_field(b, JC_NAME, job->name, sizeof(job->name));
	bind_i64(b, JC_UID, job->uid);
	bind_i64(b, JC_GID, job->gid);
	bind_field(b, JC_USER, job->user, sizeof(job->user));
	bind_i64(b, JC_STATE, job->state);
	bind_i64(b, JC_N_GPUS, job->n_gpus);
	bind_i64(b, JC_PRIORITY, job->priority);
	bind_u64(b, JC_MEM_NEED_BYTES, job->mem_need_bytes);
	bind_field(b, JC_MEM_SOURCE, job->mem_source, sizeof(job->mem_source));
	bind_double(b, JC_UTIL_PRED, job->util_pred);
	bind_field(b, JC_MODEL, job->model, sizeof(job->model));
	bind_field(b, JC_KEY, job->key, sizeof(job->key));
	bind_field(b, JC_CWD, job->cwd, sizeof(job->cwd));
	bind_text(b, JC_ARGV_JSON, job->argv_json ? job->argv_json : "[]",
		  job->argv_json ? strlen(job->argv_json) : 2);
	bind_text(b, JC_ENV_JSON, job->env_json ? job->env_json : "[]",
		  job->env_json ? strlen(job->env_json) : 2);
	bind_i64(b, JC_ATTEMPTS, job->attempts);
	bind_i64(b, JC_EXCLUSIVE, job->exclusive);
	bind_i64(b, JC_N_ASSIGNED, job->n_assigned);
	bind_text(b, JC_GPUS, gpus, gpus_len);
	bind_i64(b, JC_SUP_PID, job->sup_pid);
	bind_u64(b, JC_SUP_START, job->sup_start);
	bind_i64(b, JC_JOB_PGID, job->job_pgid);
	bind_u64(b, JC_PEAK_BYTES, job->peak_bytes);
	bind_double(b, JC_UTIL_MEAN, job->util_mean);
	bind_u64(b, JC_UTIL_SAMPLES, job->util_samples);
	bind_i64(b, JC_CANCEL_REQUESTED, job->cancel_requested);
	bind_i64(b, JC_EXIT_CODE, job->exit_code);
	bind_i64(b, JC_TERM_SIGNAL, job->term_signal);
	bind_field(b, JC_REASON, job->reason, sizeof(job->reason));
	bind_i64(b, JC_SUBMIT_MS, job->submit_ms);
	bind_i64(b, JC_START_MS, job->start_ms);
	bind_i64(b, JC_END_MS, job->end_ms);
	bind_field(b, JC_UTIL_SOURCE, job->util_source, sizeof(job->util_source));
	bind_opt_double(b, JC_GRAPH_GPU_UTIL, job->graph_gpu_util);
	bind_opt_double(b, JC_GRAPH_SM_ACTIVITY, job->graph_sm_activity);
	bind_field(b, JC_GRAPH_PLATFORM, job->graph_platform,
		   sizeof(job->graph_platform));
	if (job->idem_key[0])
		bind_field(b, JC_IDEM_KEY, job->idem_key, sizeof(job->idem_key));
	else if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_null(b->st, JC_IDEM_KEY);
	bind_i64(b, JC_TIME_LIMIT_MS, job->time_limit_ms);
	bind_i64(b, JC_HELD, job->held);
	bind_text(b, JC_DEPS, deps, deps_len);
	bind_u64(b, JC_ARRAY_ID, job->array_id);
	bind_i64(b, JC_ARRAY_INDEX, job->array_index);
	bind_i64(b, JC_ARRAY_MAX_RUNNING, job->array_max_running);
	bind_i64(b, JC_STOP_CAUSE, job->stop_cause);
}

/* Fill job (cd_job_init()ed) from the current row of SELECT id, JOB_COLS.
 * On failure job may hold heap strings: the caller cd_job_fini()s it. */
static int read_job(struct cd_store *store, sqlite3_stmt *st, struct cd_job *job,
		    struct colloc_diag *diag)
{
	job->id = i64_to_u64(sqlite3_column_int64(st, 0));
	copy_col(st, JC_NAME, job->name, sizeof(job->name));
	job->uid = (uint32_t)sqlite3_column_int64(st, JC_UID);
	job->gid = (uint32_t)sqlite3_column_int64(st, JC_GID);
	copy_col(st, JC_USER, job->user, sizeof(job->user));
	job->state = sqlite3_column_int(st, JC_STATE);
	job->n_gpus = sqlite3_column_int(st, JC_N_GPUS);
	job->priority = sqlite3_column_int(st, JC_PRIORITY);
	job->mem_need_bytes = i64_to_u64(sqlite3_column_int64(st, JC_MEM_NEED_BYTES));
	copy_col(st, JC_MEM_SOURCE, job->mem_source, sizeof(job->mem_source));
	job->util_pred = real_col(st, JC_UTIL_PRED);
	copy_col(st, JC_MODEL, job->model, sizeof(job->model));
	copy_col(st, JC_KEY, job->key, sizeof(job->key));
	copy_col(st, JC_CWD, job->cwd, sizeof(job->cwd));
	job->argv_json = dup_col(st, JC_ARGV_JSON, "[]");
	job->env_json = dup_col(st, JC_ENV_JSON, "[]");
	if (!job->argv_json || !job->env_json)
		return colloc_diag_set(diag, -ENOMEM, "%s: job %llu: out of memory",
				       store->path, (unsigned long long)job->id);
	job->attempts = sqlite3_column_int(st, JC_ATTEMPTS);
	job->exclusive = sqlite3_column_int64(st, JC_EXCLUSIVE) != 0;
	job->n_assigned = sqlite3_column_int(st, JC_N_ASSIGNED);
	job->sup_pid = sqlite3_column_int64(st, JC_SUP_PID);
	job->sup_start = i64_to_u64(sqlite3_column_int64(st, JC_SUP_START));
	job->job_pgid = sqlite3_column_int64(st, JC_JOB_PGID);
	job->peak_bytes = i64_to_u64(sqlite3_column_int64(st, JC_PEAK_BYTES));
	job->util_mean = real_col(st, JC_UTIL_MEAN);
	job->util_samples = i64_to_u64(sqlite3_column_int64(st, JC_UTIL_SAMPLES));
	job->cancel_requested = sqlite3_column_int64(st, JC_CANCEL_REQUESTED) != 0;
	job->exit_code = sqlite3_column_int(st, JC_EXIT_CODE);
	job->term_signal = sqlite3_column_int(st, JC_TERM_SIGNAL);
	copy_col(st, JC_REASON, job->reason, sizeof(job->reason));
	job->submit_ms = sqlite3_column_int64(st, JC_SUBMIT_MS);
	job->start_ms = sqlite3_column_int64(st, JC_START_MS);
	job->end_ms = sqlite3_column_int64(st, JC_END_MS);
	copy_col(st, JC_UTIL_SOURCE, job->util_source, sizeof(job->util_source));
	job->graph_gpu_util = opt_real_col(st, JC_GRAPH_GPU_UTIL);
	job->graph_sm_activity = opt_real_col(st, JC_GRAPH_SM_ACTIVITY);
	copy_col(st, JC_GRAPH_PLATFORM, job->graph_platform, sizeof(job->graph_platform));
	copy_col(st, JC_IDEM_KEY, job->idem_key, sizeof(job->idem_key));
	job->time_limit_ms = sqlite3_column_int64(st, JC_TIME_LIMIT_MS);
	job->held = sqlite3_column_int64(st, JC_HELD) != 0;
	job->array_id = i64_to_u64(sqlite3_column_int64(st, JC_ARRAY_ID));
	job->array_index = sqlite3_column_int(st, JC_ARRAY_INDEX);
	job->array_max_running = sqlite3_column_int(st, JC_ARRAY_MAX_RUNNING);
	job->stop_cause = sqlite3_column_int(st, JC_STOP_CAUSE);
	if (job->stop_cause < 0 || job->stop_cause >= CD_STOP_CAUSE_COUNT_)
		job->stop_cause = CD_STOP_CANCEL; /* stopping it is what was asked */
	if (!split_deps(st, JC_DEPS, job))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: job %llu: unreadable dependency list",
				       store->path, (unsigned long long)job->id);

	/* Rows are only as trustworthy as the file: never index gpus[] or
	 * the state names with an unchecked value. */
	if (job->state < 0 || job->state >= CD_JOB_STATE_COUNT_)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: job %llu: invalid state %d", store->path,
				       (unsigned long long)job->id, job->state);
	if (job->n_assigned < 0 || job->n_assigned > COLLOC_SCHED_MAX_GPUS) {
		int n = job->n_assigned;

		job->n_assigned = 0;
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: job %llu: %d assigned GPUs (at most %d)",
				       store->path, (unsigned long long)job->id, n,
				       COLLOC_SCHED_MAX_GPUS);
	}
	if (!split_gpus(st, JC_GPUS, job))
		return colloc_diag_set(
			diag, COLLOC_EFORMAT,
			"%s: job %llu: GPU list does not match %d assigned GPUs",
			store->path, (unsigned long long)job->id, job->n_assigned);
	return 0;
}

int cd_store_job_insert(struct cd_store *store, struct cd_job *job,
			struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_INSERT);
	struct binder b = {st, SQLITE_OK};
	char gpus[GPUS_TEXT_MAX], deps[DEPS_TEXT_MAX];
	size_t gpus_len, deps_len;
	int rc = check_job(store, job, diag);

	if (rc < 0)
		return rc;
	gpus_len = join_gpus(job, gpus);
	deps_len = join_deps(job, deps);
	bind_job(&b, job, gpus, gpus_len, deps, deps_len);
	rc = run_plain(store, ST_JOB_INSERT, &b, "inserting a job", diag);
	if (rc == 0)
		job->id = i64_to_u64(sqlite3_last_insert_rowid(store->db));
	return rc;
}

int cd_store_job_update(struct cd_store *store, const struct cd_job *job,
			struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_UPDATE);
	struct binder b = {st, SQLITE_OK};
	char gpus[GPUS_TEXT_MAX], deps[DEPS_TEXT_MAX];
	size_t gpus_len, deps_len;
	int rc = check_job(store, job, diag);

	if (rc < 0)
		return rc;
	gpus_len = join_gpus(job, gpus);
	deps_len = join_deps(job, deps);
	bind_job(&b, job, gpus, gpus_len, deps, deps_len);
	bind_u64(&b, JC_COUNT_ + 1, job->id);
	rc = run_plain(store, ST_JOB_UPDATE, &b, "updating a job", diag);
	if (rc == 0 && sqlite3_changes(store->db) == 0)
		rc = colloc_diag_set(diag, COLLOC_ENOTFOUND, "%s: job %llu: not found",
				     store->path, (unsigned long long)job->id);
	return rc;
}

int cd_store_job_get(struct cd_store *store, uint64_t id, struct cd_job *job,
		     struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_GET);
	struct binder b = {st, SQLITE_OK};
	int src;
	int rc;

	cd_job_init(job);
	bind_u64(&b, 1, id);
	src = b.rc == SQLITE_OK ? sqlite3_step(st) : b.rc;
	if (src == SQLITE_ROW)
		rc = read_job(store, st, job, diag);
	else if (src == SQLITE_DONE)
		rc = colloc_diag_set(diag, COLLOC_ENOTFOUND, "%s: job %llu: not found",
				     store->path, (unsigned long long)id);
	else
		rc = db_fail(store, src, "reading a job", diag);
	stmt_done(st);
	if (rc < 0)
		cd_job_fini(job);
	return rc;
}

int cd_store_job_by_idem(struct cd_store *store, uint32_t uid, const char *key,
			 struct cd_job *job, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_BY_IDEM);
	struct binder b = {st, SQLITE_OK};
	int src;
	int rc;

	cd_job_init(job);
	bind_i64(&b, 1, uid);
	bind_text(&b, 2, key, strlen(key));
	src = b.rc == SQLITE_OK ? sqlite3_step(st) : b.rc;
	if (src == SQLITE_ROW)
		rc = read_job(store, st, job, diag);
	else if (src == SQLITE_DONE)
		rc = COLLOC_ENOTFOUND;
	else
		rc = db_fail(store, src, "reading a job by idempotency key", diag);
	stmt_done(st);
	if (rc < 0)
		cd_job_fini(job);
	return rc;
}

/* arr (of *cap elements, n used) with room for one more, doubling; NULL
 * when out of memory or the size would overflow (arr is then unchanged). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t new_cap;
	void *p;

	if (n < *cap)
		return arr;
	new_cap = *cap ? *cap * 2 : 16;
	if (new_cap < *cap || new_cap > SIZE_MAX / elem)
		return NULL;
	p = realloc(arr, new_cap * elem);
	if (p)
		*cap = new_cap;
	return p;
}

int cd_store_job_list(struct cd_store *store, unsigned state_mask, int64_t uid,
		      size_t limit, struct cd_job **jobs, size_t *n,
		      struct colloc_diag *diag)
{
	struct cd_job_filter f;

	memset(&f, 0, sizeof(f));
	f.state_mask = state_mask;
	f.uid = uid;
	f.limit = limit;
	return cd_store_job_find(store, &f, jobs, n, diag);
}

/* A filter string as a text parameter, or NULL (no filter). */
static void bind_opt_text(struct binder *b, int idx, const char *s, size_t max)
{
	if (s)
		bind_text(b, idx, s, text_len(s, max));
	else if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_null(b->st, idx);
}

int cd_store_job_find(struct cd_store *store, const struct cd_job_filter *f,
		      struct cd_job **jobs, size_t *n, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_LIST);
	struct binder b = {st, SQLITE_OK};
	struct cd_job *arr = NULL;
	size_t count = 0;
	size_t cap = 0;
	int src;
	int rc = 0;

	*jobs = NULL;
	*n = 0;
	for (int s = 0; s < CD_JOB_STATE_COUNT_; s++)
		if (f->state_mask & (1u << s))
			bind_i64(&b, s + 1, s);
	bind_i64(&b, 6, f->uid < 0 ? -1 : f->uid);
	/* LIMIT -1 is SQLite's "no limit". */
	bind_i64(&b, 7, f->limit == 0 || f->limit > INT64_MAX ? -1 : (int64_t)f->limit);
	bind_opt_text(&b, 8, f->user, CD_USER_MAX - 1);
	if (f->active_since_ms > 0)
		bind_i64(&b, 9, f->active_since_ms);
	else if (b.rc == SQLITE_OK)
		b.rc = sqlite3_bind_null(st, 9);
	bind_opt_text(&b, 10, f->name_glob, CD_NAME_MAX - 1);
	src = b.rc;
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		void *p;

		src = sqlite3_step(st);
		if (src != SQLITE_ROW)
			break;
		p = grow(arr, &cap, count, sizeof(*arr));
		if (!p) {
			rc = colloc_diag_set(diag, -ENOMEM,
					     "%s: listing jobs: out of memory",
					     store->path);
			break;
		}
		arr = p;
		cd_job_init(&arr[count]);
		rc = read_job(store, st, &arr[count], diag);
		count++;
		if (rc < 0)
			break;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = db_fail(store, src, "listing jobs", diag);
	stmt_done(st);
	if (rc < 0) {
		for (size_t i = 0; i < count; i++)
			cd_job_fini(&arr[i]);
		free(arr);
		return rc;
	}
	*jobs = arr;
	*n = count;
	return 0;
}

int cd_store_last_id(struct cd_store *store, uint64_t *id, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_LAST_ID);
	int src = sqlite3_step(st);
	int rc = 0;

	/* sqlite_sequence keeps the highest id even after its row is
	 * deleted; no row yet means no job was ever inserted. */
	if (src == SQLITE_ROW)
		*id = i64_to_u64(sqlite3_column_int64(st, 0));
	else if (src == SQLITE_DONE)
		*id = 0;
	else
		rc = db_fail(store, src, "reading the last job id", diag);
	stmt_done(st);
	return rc;
}

int cd_store_job_prune(struct cd_store *store, int64_t ended_before_ms, uint64_t **ids,
		       size_t *n, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_PRUNE);
	struct binder b = {st, SQLITE_OK};
	uint64_t *arr = NULL;
	size_t count = 0, cap = 0;
	int src, rc = 0;

	*ids = NULL;
	*n = 0;
	bind_i64(&b, 1, CD_JOB_DONE);
	bind_i64(&b, 2, CD_JOB_FAILED);
	bind_i64(&b, 3, CD_JOB_CANCELLED);
	bind_i64(&b, 4, ended_before_ms);
	src = b.rc;
	/* One statement is one transaction: every row RETURNING names is
	 * deleted, or none is. */
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		void *p;

		src = sqlite3_step(st);
		if (src != SQLITE_ROW)
			break;
		p = grow(arr, &cap, count, sizeof(*arr));
		if (!p) {
			/* The deletion still completes; only the ids are lost. */
			rc = colloc_diag_set(diag, -ENOMEM,
					     "%s: pruning jobs: out of memory",
					     store->path);
			continue;
		}
		arr = p;
		arr[count++] = i64_to_u64(sqlite3_column_int64(st, 0));
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = db_fail(store, src, "pruning jobs", diag);
	stmt_done(st);
	if (rc < 0) {
		free(arr);
		return rc;
	}
	*ids = arr;
	*n = count;
	return 0;
}

/* --- events ---------------------------------------------------------------- */

int cd_store_job_counts(struct cd_store *store, uint64_t by_state[CD_JOB_STATE_COUNT_],
			uint64_t *oom_retried, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_JOB_COUNTS);
	int src, rc = 0;

	memset(by_state, 0, sizeof(uint64_t) * CD_JOB_STATE_COUNT_);
	*oom_retried = 0;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t state = sqlite3_column_int64(st, 0);

		if (state >= 0 && state < CD_JOB_STATE_COUNT_)
			by_state[state] = (uint64_t)sqlite3_column_int64(st, 1);
		*oom_retried += (uint64_t)sqlite3_column_int64(st, 2);
	}
	if (src != SQLITE_DONE)
		rc = db_fail(store, src, "counting jobs", diag);
	stmt_done(st);
	return rc;
}

int cd_store_event_count(struct cd_store *store, const char *kind, uint64_t *n,
			 struct colloc_diag *diag)
{
	return cd_store_event_count_since(store, kind, INT64_MIN, n, diag);
}

int cd_store_event_count_since(struct cd_store *store, const char *kind, int64_t since_ms,
			       uint64_t *n, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_EVENT_COUNT);
	int src = sqlite3_bind_text(st, 1, kind ? kind : "", -1, SQLITE_STATIC);
	int rc = 0;

	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(st, 2, since_ms);
	if (src == SQLITE_OK)
		src = sqlite3_step(st);
	if (src == SQLITE_ROW)
		*n = (uint64_t)sqlite3_column_int64(st, 0);
	else
		rc = db_fail(store, src, "counting events", diag);
	stmt_done(st);
	return rc;
}

int cd_store_event_add(struct cd_store *store, uint64_t job_id, int64_t ts_ms,
		       const char *kind, const char *message, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_EVENT_ADD);
	struct binder b = {st, SQLITE_OK};
	int rc;

	if (!kind)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: event without a kind",
				       store->path);
	if (!message)
		message = "";
	bind_u64(&b, 1, job_id);
	bind_i64(&b, 2, ts_ms);
	bind_text(&b, 3, kind, text_len(kind, EVENT_KIND_LEN));
	bind_text(&b, 4, message, text_len(message, EVENT_MESSAGE_LEN));
	rc = run_plain(store, ST_EVENT_ADD, &b, "adding an event", diag);
	if (rc == COLLOC_ENOTFOUND)
		rc = colloc_diag_set(diag, rc, "%s: event for job %llu: no such job",
				     store->path, (unsigned long long)job_id);
	return rc;
}

int cd_store_event_list(struct cd_store *store, uint64_t job_id, struct cd_event **events,
			size_t *n, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_EVENT_LIST);
	struct binder b = {st, SQLITE_OK};
	struct cd_event *arr = NULL;
	size_t count = 0;
	size_t cap = 0;
	int src;
	int rc = 0;

	*events = NULL;
	*n = 0;
	bind_u64(&b, 1, job_id);
	src = b.rc;
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		void *p;

		src = sqlite3_step(st);
		if (src != SQLITE_ROW)
			break;
		p = grow(arr, &cap, count, sizeof(*arr));
		if (!p) {
			rc = colloc_diag_set(diag, -ENOMEM,
					     "%s: listing events: out of memory",
					     store->path);
			break;
		}
		arr = p;
		arr[count].ts_ms = sqlite3_column_int64(st, 0);
		copy_col(st, 1, arr[count].kind, sizeof(arr[count].kind));
		copy_col(st, 2, arr[count].message, sizeof(arr[count].message));
		count++;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = db_fail(store, src, "listing events", diag);
	stmt_done(st);
	if (rc < 0) {
		free(arr);
		return rc;
	}
	*events = arr;
	*n = count;
	return 0;
}

/* --- peaks ----------------------------------------------------------------- */

static int check_key(struct cd_store *store, const char *key, struct colloc_diag *diag)
{
	/* A longer key would be cut by the fixed fields it is compared with
	 * elsewhere and so match the wrong runs. */
	if (!key || strnlen(key, CD_KEY_MAX) >= CD_KEY_MAX)
		return colloc_diag_set(
			diag, COLLOC_EUSAGE,
			"%s: history key missing or longer than %d characters",
			store->path, CD_KEY_MAX - 1);
	return 0;
}

int cd_store_peak_record(struct cd_store *store, const char *key, uint64_t job_id,
			 uint64_t peak_bytes, double util_mean, int64_t ts_ms,
			 struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_PEAK_RECORD);
	struct binder b = {st, SQLITE_OK};
	int rc = check_key(store, key, diag);

	if (rc < 0)
		return rc;
	bind_text(&b, 1, key, strlen(key));
	bind_u64(&b, 2, job_id);
	bind_u64(&b, 3, peak_bytes);
	bind_opt_double(&b, 4, util_mean);
	bind_i64(&b, 5, ts_ms);
	return run_plain(store, ST_PEAK_RECORD, &b, "recording a peak", diag);
}

int cd_store_peak_lookup(struct cd_store *store, const char *key, uint64_t *peak_bytes,
			 double *util_mean, struct colloc_diag *diag)
{
	sqlite3_stmt *st = stmt_get(store, ST_PEAK_LOOKUP);
	struct binder b = {st, SQLITE_OK};
	uint64_t peak = 0;
	double util_sum = 0.0;
	int runs = 0, util_runs = 0;
	int src;
	int rc = check_key(store, key, diag);

	if (rc < 0)
		return rc;
	bind_text(&b, 1, key, strlen(key));
	bind_i64(&b, 2, PEAK_RUNS);
	src = b.rc;
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		uint64_t p;

		src = sqlite3_step(st);
		if (src != SQLITE_ROW)
			break;
		/* The maximum is taken here: in SQL, peaks above INT64_MAX
		 * would compare as negative. */
		p = i64_to_u64(sqlite3_column_int64(st, 0));
		if (p > peak)
			peak = p;
		/* A run without utilization samples has no say in the mean. */
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
			util_sum += sqlite3_column_double(st, 1);
			util_runs++;
		}
		runs++;
	}
	if (src != SQLITE_DONE)
		rc = db_fail(store, src, "looking up peaks", diag);
	else if (runs == 0)
		rc = colloc_diag_set(diag, COLLOC_ENOTFOUND,
				     "%s: no peaks recorded under %s", store->path, key);
	stmt_done(st);
	if (rc < 0)
		return rc;
	*peak_bytes = peak;
	*util_mean = util_runs ? util_sum / util_runs : -1.0;
	return 0;
}
