/*
 * The SQLite backend of the store interface (store.h).
 *
 * Owns one sqlite3 connection per handle and the prepared statements cached
 * on it.  Several processes share one database file: WAL mode, a 10 s busy
 * timeout, and BEGIN IMMEDIATE for every multi-statement write, so that a
 * transaction that reads and then writes (the claim) holds the one write
 * lock from its first read and never meets SQLITE_BUSY_SNAPSHOT halfway.
 * SQLite has one writer at a time, which serialises claimers: that is what
 * stands in for PostgreSQL's SKIP LOCKED here.
 *
 * Batches (all fires of a claim, all updates of an apply) travel as ONE
 * bound JSON array read back with json_each(): one prepared statement per
 * operation whatever the batch size, no variable limit to chunk around, and
 * every value still a bound parameter.
 *
 * Invariants kept here (DESIGN.md):
 *  1 the claim inserts fires with ON CONFLICT DO NOTHING RETURNING and hands
 *    out only the rows that RETURNING reported;
 *  3 every change to a claimed run matches (id, claim_token, node) and only
 *    SCHEDULED/RUNNING rows: a terminal row is never overwritten;
 *  4 every time written comes from NOW_SQL or from a value derived from it.
 *
 * Statement counting: each executed statement (BEGIN and COMMIT included)
 * adds one to s->base.stmt_count, in prep().
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "store/sqlite_schema.h"
#include "store/store.h"

/* The database clock in epoch ms ('now' is stable within one step). */
#define NOW_SQL "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

/* Enum values spelled in SQL so that partial indexes match literally. */
#define ST_SCHEDULED "1"
#define ST_RUNNING "2"
#define ST_ABANDONED "8"
#define KIND_AFTER "3"
#define LOSS_RETRY "1"

#define JOB_COLS                                                              \
	"id, name, kind, spec, interval_ms, anchor_ms, at_ms, tz, misfire, "  \
	"max_catchup, misfire_threshold_ms, overlap, node_loss, max_retries, " \
	"retry_base_ms, retry_cap_ms, retry_jitter, timeout_ms, executor, "   \
	"argv, handler, arg, paused, next_fire_at, created_ms, updated_ms"

#define RUN_COLS                                                           \
	"id, job_id, job_name, fire_at, attempt, state, due_at, node, "    \
	"claim_token, started_ms, finished_ms, exit_code, missed, error, " \
	"output"

/* Abandoned RUNNING runs (?1: JSON ids) get a new attempt when the job's
 * node_loss policy is retry and attempts remain.  ?2: now. */
#define RESOLVE_RETRY_SQL                                                     \
	"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, " \
	"created_ms) SELECT r.job_id, r.job_name, r.fire_at, r.attempt + 1, "  \
	ST_SCHEDULED ", ?2, ?2 FROM runs r JOIN jobs j ON j.id = r.job_id "    \
	"WHERE r.id IN (SELECT value FROM json_each(?1)) AND j.node_loss = "   \
	LOSS_RETRY " AND r.attempt <= j.max_retries ON CONFLICT DO NOTHING"

enum sq_stmt {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_NOW,
	S_JOB_BY_NAME,
	S_JOB_LIST,
	S_JOB_PEEK,
	S_JOB_INSERT,
	S_JOB_UPDATE,
	S_JOB_PRUNE,
	S_RUNS_ORPHANS,
	S_JOB_SET_PAUSED,
	S_JOB_DELETE,
	S_JOB_ID,
	S_TRIGGER,
	S_DUE_JOBS,
	S_FIRES_INSERT,
	S_JOBS_NEXT,
	S_CLAIM_UNCLAIMED,
	S_JOBS_BY_IDS,
	S_APPLY,
	S_RETRY_INSERT,
	S_JOBS_NEXT_IF_NULL,
	S_NODE_UPSERT,
	S_NODE_HEARTBEAT,
	S_NODE_STOP,
	S_RUNS_UNCLAIM_NODE,
	S_RUNS_RELEASE,
	S_NODES_EXPIRE,
	S_RES_ABANDON,
	S_RES_RETRY,
	S_RES_AFTER,
	S_RES_UNCLAIM,
	S_JOB_RUNNING,
	S_RUNS_LIST,
	S_NODES_LIST,
	S_LOCK_ACQUIRE,
	S_LOCK_GET,
	S_LOCK_RENEW,
	S_LOCK_RELEASE,
	S_LOCK_LIST,
	S_LOG_RUN,
	S_PRUNE_RUNS,
	S__COUNT
};

static const char *const sq_sql[S__COUNT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_NOW] = "SELECT " NOW_SQL,
	[S_JOB_BY_NAME] = "SELECT " JOB_COLS " FROM jobs WHERE name = ?1",
	[S_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs ORDER BY name",
	[S_JOB_PEEK] = "SELECT id, kind, spec, tz, next_fire_at, anchor_ms, "
		       "paused FROM jobs WHERE name = ?1",
	[S_JOB_INSERT] =
		"INSERT INTO jobs(name, kind, spec, interval_ms, anchor_ms, "
		"at_ms, tz, misfire, max_catchup, misfire_threshold_ms, overlap, "
		"node_loss, max_retries, retry_base_ms, retry_cap_ms, "
		"retry_jitter, timeout_ms, executor, argv, handler, arg, paused, "
		"next_fire_at, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, "
		"?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
		"?19, ?20, ?21, ?22, ?23, ?24, ?24)",
	[S_JOB_UPDATE] =
		"UPDATE jobs SET name = ?1, kind = ?2, spec = ?3, "
		"interval_ms = ?4, anchor_ms = ?5, at_ms = ?6, tz = ?7, "
		"misfire = ?8, max_catchup = ?9, misfire_threshold_ms = ?10, "
		"overlap = ?11, node_loss = ?12, max_retries = ?13, "
		"retry_base_ms = ?14, retry_cap_ms = ?15, retry_jitter = ?16, "
		"timeout_ms = ?17, executor = ?18, argv = ?19, handler = ?20, "
		"arg = ?21, paused = ?22, next_fire_at = ?23, updated_ms = ?24 "
		"WHERE id = ?25",
	[S_JOB_PRUNE] = "DELETE FROM jobs WHERE id NOT IN "
			"(SELECT value FROM json_each(?1))",
	/* Unclaimed runs of a deleted job would wait forever: close them so
	 * that the fire is accounted for (invariant 2). */
	[S_RUNS_ORPHANS] =
		"UPDATE runs SET state = " ST_ABANDONED ", finished_ms = ?1, "
		"error = 'job deleted' WHERE state = " ST_SCHEDULED
		" AND node IS NULL AND NOT EXISTS "
		"(SELECT 1 FROM jobs WHERE jobs.id = runs.job_id)",
	[S_JOB_SET_PAUSED] =
		"UPDATE jobs SET paused = ?2, next_fire_at = CASE WHEN ?2 "
		"THEN next_fire_at ELSE ?3 END, updated_ms = " NOW_SQL
		" WHERE name = ?1",
	[S_JOB_DELETE] = "DELETE FROM jobs WHERE name = ?1",
	[S_JOB_ID] = "SELECT id FROM jobs WHERE name = ?1",
	[S_TRIGGER] = "INSERT INTO runs(job_id, job_name, fire_at, attempt, "
		      "state, due_at, created_ms) VALUES (?1, ?2, ?3, 1, "
		      ST_SCHEDULED ", ?3, ?4) ON CONFLICT DO NOTHING "
		      "RETURNING id",
	[S_DUE_JOBS] = "SELECT " JOB_COLS " FROM jobs WHERE paused = 0 AND "
		       "next_fire_at IS NOT NULL AND next_fire_at <= ?1 "
		       "ORDER BY next_fire_at LIMIT ?2",
	/* Invariant 1: a fire that already has a first attempt conflicts on
	 * UNIQUE(job_id, fire_at, attempt) and is not RETURNed, so it is
	 * never handed out.  Element: [job_id, name, fire_at, state, due_at,
	 * missed, error].  ?1 node, ?2 token, ?3 now. */
	[S_FIRES_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, "
		"due_at, node, claim_token, finished_ms, missed, error, "
		"created_ms) SELECT value->>0, value->>1, value->>2, 1, "
		"value->>3, value->>4, CASE WHEN value->>3 = " ST_SCHEDULED
		" THEN ?1 END, CASE WHEN value->>3 = " ST_SCHEDULED
		" THEN ?2 END, CASE WHEN value->>3 <> " ST_SCHEDULED
		" THEN ?3 END, value->>5, value->>6, ?3 FROM json_each(?4) "
		"WHERE true ON CONFLICT DO NOTHING "
		"RETURNING id, job_id, job_name, fire_at, state, due_at, missed",
	[S_JOBS_NEXT] = "UPDATE jobs SET next_fire_at = v.nf FROM (SELECT "
			"value->>0 AS id, value->>1 AS nf FROM json_each(?1)) "
			"AS v WHERE jobs.id = v.id",
	/* Retries, manual triggers and runs handed back or taken from dead
	 * nodes: any node may take them.  The partial index walks them in
	 * due order and stops at the limit (without statistics the planner
	 * would pick (node, state) and sort every unclaimed run). */
	[S_CLAIM_UNCLAIMED] =
		"UPDATE runs SET node = ?1, claim_token = ?2 WHERE id IN "
		"(SELECT r.id FROM runs r INDEXED BY runs_unclaimed WHERE "
		"r.state = " ST_SCHEDULED
		" AND r.node IS NULL AND r.due_at <= ?3 AND EXISTS (SELECT 1 "
		"FROM jobs j WHERE j.id = r.job_id) ORDER BY r.due_at LIMIT ?4) "
		"RETURNING id, job_id, job_name, fire_at, attempt, due_at, missed",
	[S_JOBS_BY_IDS] = "SELECT " JOB_COLS " FROM jobs WHERE id IN "
			  "(SELECT value FROM json_each(?1))",
	/* Invariant 3: fenced by (id, claim_token, node); terminal rows are
	 * final.  The unary + keeps the planner off the (node, state) index:
	 * the batch drives the loop, each row found by its id, O(batch).  Element: [id, token, state, started|null, finished|null,
	 * has_exit, exit, error, output].  ?2 node. */
	[S_APPLY] =
		"UPDATE runs SET state = v.st, started_ms = coalesce(v.sm, "
		"runs.started_ms), finished_ms = coalesce(v.fm, "
		"runs.finished_ms), exit_code = CASE WHEN v.hx THEN v.xc ELSE "
		"runs.exit_code END, error = coalesce(v.er, runs.error), "
		"output = coalesce(v.ou, runs.output) FROM (SELECT value->>0 AS "
		"id, value->>1 AS tok, value->>2 AS st, value->>3 AS sm, "
		"value->>4 AS fm, value->>5 AS hx, value->>6 AS xc, value->>7 "
		"AS er, value->>8 AS ou FROM json_each(?1)) AS v WHERE runs.id = "
		"v.id AND runs.claim_token = v.tok AND +runs.node = ?2 AND "
		"+runs.state IN (" ST_SCHEDULED ", " ST_RUNNING ") "
		"RETURNING runs.id",
	/* A retry is a new unclaimed row any node may take.  [id, due]. */
	[S_RETRY_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, "
		"due_at, created_ms) SELECT r.job_id, r.job_name, r.fire_at, "
		"r.attempt + 1, " ST_SCHEDULED ", v.value->>1, " NOW_SQL
		" FROM json_each(?1) AS v JOIN runs r ON r.id = v.value->>0 "
		"WHERE true ON CONFLICT DO NOTHING",
	[S_JOBS_NEXT_IF_NULL] =
		"UPDATE jobs SET next_fire_at = v.nf FROM (SELECT value->>0 AS "
		"id, value->>1 AS nf FROM json_each(?1)) AS v WHERE jobs.id = "
		"v.id AND jobs.next_fire_at IS NULL",
	[S_NODE_UPSERT] =
		"INSERT INTO nodes(id, incarnation, host, pid, workers, state, "
		"started_ms, heartbeat_ms, lease_until) VALUES (?1, ?2, ?3, ?4, "
		"?5, 'alive', ?6, ?6, ?6 + ?7) ON CONFLICT(id) DO UPDATE SET "
		"incarnation = excluded.incarnation, host = excluded.host, "
		"pid = excluded.pid, workers = excluded.workers, state = 'alive', "
		"started_ms = excluded.started_ms, heartbeat_ms = "
		"excluded.heartbeat_ms, lease_until = excluded.lease_until",
	[S_NODE_HEARTBEAT] =
		"UPDATE nodes SET heartbeat_ms = " NOW_SQL ", lease_until = "
		NOW_SQL " + ?3 WHERE id = ?1 AND incarnation = ?2 AND "
		"state = 'alive' RETURNING heartbeat_ms",
	[S_NODE_STOP] = "UPDATE nodes SET state = 'stopped', heartbeat_ms = "
			NOW_SQL " WHERE id = ?1 AND incarnation = ?2 AND "
			"state = 'alive'",
	[S_RUNS_UNCLAIM_NODE] = "UPDATE runs SET node = NULL, claim_token = "
				"NULL WHERE node = ?1 AND state = " ST_SCHEDULED,
	[S_RUNS_RELEASE] =
		"UPDATE runs SET node = NULL, claim_token = NULL FROM (SELECT "
		"value->>0 AS id, value->>1 AS tok FROM json_each(?1)) AS v "
		"WHERE runs.id = v.id AND runs.claim_token = v.tok AND "
		"+runs.node = ?2 AND +runs.state = " ST_SCHEDULED,
	[S_NODES_EXPIRE] = "UPDATE nodes SET state = 'dead' WHERE state = "
			   "'alive' AND lease_until < ?1 RETURNING id",
	[S_RES_ABANDON] =
		"UPDATE runs SET state = " ST_ABANDONED ", finished_ms = ?2, "
		"error = 'node lost' WHERE state = " ST_RUNNING " AND node IN "
		"(SELECT value FROM json_each(?1)) RETURNING id",
	[S_RES_RETRY] = RESOLVE_RETRY_SQL,
	/* An AFTER job is driven by run completions: when its run ended
	 * without a new attempt, nothing else would set its next fire. */
	[S_RES_AFTER] =
		"UPDATE jobs SET next_fire_at = ?2 + interval_ms WHERE kind = "
		KIND_AFTER " AND next_fire_at IS NULL AND id IN (SELECT "
		"r.job_id FROM runs r WHERE r.id IN (SELECT value FROM "
		"json_each(?1)) AND NOT EXISTS (SELECT 1 FROM runs n WHERE "
		"n.job_id = r.job_id AND n.fire_at = r.fire_at AND n.attempt = "
		"r.attempt + 1))",
	[S_RES_UNCLAIM] = "UPDATE runs SET node = NULL, claim_token = NULL "
			  "WHERE state = " ST_SCHEDULED " AND node IN "
			  "(SELECT value FROM json_each(?1))",
	[S_JOB_RUNNING] =
		"SELECT 1 FROM runs r WHERE r.job_id = ?1 AND r.state = "
		ST_RUNNING " AND r.id <> ?2 AND NOT EXISTS (SELECT 1 FROM nodes "
		"n WHERE n.id = r.node AND n.state <> 'alive') LIMIT 1",
	[S_RUNS_LIST] =
		"SELECT * FROM (SELECT " RUN_COLS " FROM runs WHERE (?1 IS NULL "
		"OR job_name = ?1) AND (?2 = 0 OR state = ?2) AND (?3 < 0 OR "
		"fire_at >= ?3) ORDER BY fire_at DESC, job_name DESC, attempt "
		"DESC LIMIT ?4) ORDER BY fire_at, job_name, attempt",
	[S_NODES_LIST] =
		"SELECT id, host, pid, workers, state, started_ms, heartbeat_ms, "
		"lease_until, (SELECT count(*) FROM runs r WHERE r.node = "
		"nodes.id AND r.state = " ST_RUNNING ") FROM nodes ORDER BY id",
	/* Seed 002's upsert: insert, or take over only an expired lease; the
	 * fence grows on every acquisition. */
	[S_LOCK_ACQUIRE] =
		"INSERT INTO locks(name, owner, since_ms, until_ms, fence) "
		"VALUES (?1, ?2, " NOW_SQL ", " NOW_SQL " + ?3, 1) "
		"ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, "
		"since_ms = excluded.since_ms, until_ms = excluded.until_ms, "
		"fence = locks.fence + 1 WHERE locks.until_ms < "
		"excluded.since_ms RETURNING fence, until_ms",
	[S_LOCK_GET] = "SELECT name, owner, since_ms, until_ms, fence FROM "
		       "locks WHERE name = ?1",
	[S_LOCK_RENEW] = "UPDATE locks SET until_ms = " NOW_SQL " + ?4 WHERE "
			 "name = ?1 AND owner = ?2 AND fence = ?3 "
			 "RETURNING until_ms",
	/* The row stays so that the fence keeps growing. */
	[S_LOCK_RELEASE] = "UPDATE locks SET until_ms = " NOW_SQL " - 1 WHERE "
			   "name = ?1 AND owner = ?2 AND fence = ?3",
	[S_LOCK_LIST] = "SELECT name, owner, since_ms, until_ms, fence FROM "
			"locks ORDER BY name",
	[S_LOG_RUN] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, "
		"due_at, node, claim_token, started_ms, finished_ms, exit_code, "
		"missed, error, output, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, "
		"?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, " NOW_SQL ") "
		"ON CONFLICT DO NOTHING RETURNING id",
	/* fire_at <= finished_ms for every run, so the fire_at index bounds
	 * the scan. */
	[S_PRUNE_RUNS] = "DELETE FROM runs WHERE fire_at < ?1 AND "
			 "finished_ms < ?1 AND state >= 3",
};

/* A growing JSON text for batch parameters. */
struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

typedef struct sq_store {
	store base;
	sqlite3 *db;
	char *url;
	sqlite3_stmt *stmts[S__COUNT];
	struct jbuf jb[3];
} sq_store;

static sq_store *SQ(store *s) { return (sq_store *)s; }

/* ---- JSON batch text ---- */

static void jb_reset(struct jbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->p)
		b->p[0] = '\0';
}

static void jb_putn(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = dbcron__realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void jb_ch(struct jbuf *b, char c) { jb_putn(b, &c, 1); }

/* A value follows: separate it from the previous one. */
static void jb_sep(struct jbuf *b)
{
	if (b->len && b->p[b->len - 1] != '[')
		jb_ch(b, ',');
}

static void jb_open(struct jbuf *b)
{
	jb_sep(b);
	jb_ch(b, '[');
}

static void jb_i64(struct jbuf *b, int64_t v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%lld", (long long)v);
	jb_sep(b);
	jb_putn(b, t, (size_t)n);
}

/* Negative means unset: JSON null. */
static void jb_i64n(struct jbuf *b, int64_t v)
{
	if (v < 0) {
		jb_sep(b);
		jb_putn(b, "null", 4);
	} else {
		jb_i64(b, v);
	}
}

static void jb_str(struct jbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	jb_sep(b);
	if (!s) {
		jb_putn(b, "null", 4);
		return;
	}
	jb_ch(b, '"');
	const char *run = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		jb_putn(b, run, (size_t)(p - run));
		char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			jb_putn(b, esc, 2);
		} else {
			jb_putn(b, esc, 6);
		}
		run = p + 1;
	}
	jb_putn(b, run, strlen(run));
	jb_ch(b, '"');
}

/* ---- statements ---- */

static int sq_fail(sq_store *q, int rc, const char *what, dbcron_err *err)
{
	int code = DBCRON_EDB;
	int prim = rc & 0xff;
	if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
		code = DBCRON_EBUSY;
	else if (prim == SQLITE_NOMEM)
		code = DBCRON_ENOMEM;
	else if (prim == SQLITE_CANTOPEN || prim == SQLITE_IOERR ||
		 prim == SQLITE_FULL)
		code = DBCRON_EIO;
	return dbcron_err_set(err, code, "sqlite %s: %s: %s", q->url + 7, what,
			      sqlite3_errmsg(q->db));
}

/* The cached statement for id, reset and unbound; counts one execution. */
static int prep(sq_store *q, enum sq_stmt id, sqlite3_stmt **out,
		dbcron_err *err)
{
	sqlite3_stmt *st = q->stmts[id];
	if (!st) {
		int rc = sqlite3_prepare_v3(q->db, sq_sql[id], -1,
					    SQLITE_PREPARE_PERSISTENT, &st,
					    NULL);
		if (rc != SQLITE_OK)
			return sq_fail(q, rc, "prepare", err);
		q->stmts[id] = st;
	} else {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	q->base.stmt_count++;
	*out = st;
	return DBCRON_OK;
}

/* Step a statement that returns no rows we need, then reset it. */
static int exec_stmt(sq_store *q, sqlite3_stmt *st, const char *what,
		     dbcron_err *err)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE) {
		int r = sq_fail(q, rc, what, err);
		sqlite3_reset(st);
		return r;
	}
	sqlite3_reset(st);
	return DBCRON_OK;
}

/* One step that may give a row: 1 row, 0 done, < 0 error (-code). */
static int step_row(sq_store *q, sqlite3_stmt *st, const char *what,
		    dbcron_err *err)
{
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	int r = sq_fail(q, rc, what, err);
	sqlite3_reset(st);
	return -r;
}

static int run_simple(sq_store *q, enum sq_stmt id, const char *what,
		      dbcron_err *err)
{
	sqlite3_stmt *st;
	int rc = prep(q, id, &st, err);
	return rc ? rc : exec_stmt(q, st, what, err);
}

static int tx_begin(sq_store *q, dbcron_err *err)
{
	return run_simple(q, S_BEGIN, "begin immediate", err);
}

static int tx_commit(sq_store *q, dbcron_err *err)
{
	return run_simple(q, S_COMMIT, "commit", err);
}

static void tx_rollback(sq_store *q)
{
	if (!sqlite3_get_autocommit(q->db))
		run_simple(q, S_ROLLBACK, "rollback", NULL);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static void bind_i64n(sqlite3_stmt *st, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

static int bind_json(sqlite3_stmt *st, int i, struct jbuf *b)
{
	if (b->oom)
		return DBCRON_ENOMEM;
	sqlite3_bind_text(st, i, b->p ? b->p : "[]", (int)b->len,
			  SQLITE_STATIC);
	return DBCRON_OK;
}

static int64_t col_i64n(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL
		       ? -1
		       : sqlite3_column_int64(st, i);
}

/* Copy a text column (NULL stays NULL).  DBCRON_ENOMEM on failure. */
static int col_str(sqlite3_stmt *st, int i, char **out)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	*out = NULL;
	if (!t)
		return DBCRON_OK;
	*out = dbcron__strdup((const char *)t);
	return *out ? DBCRON_OK : DBCRON_ENOMEM;
}

static int db_now(sq_store *q, int64_t *now, dbcron_err *err)
{
	sqlite3_stmt *st;
	int rc = prep(q, S_NOW, &st, err);
	if (rc)
		return rc;
	rc = step_row(q, st, "read clock", err);
	if (rc < 0)
		return -rc;
	*now = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return DBCRON_OK;
}

/* ---- jobs <-> rows ---- */

static int argv_from_json(const char *text, dbcron_job *job)
{
	json_error_t jerr;
	json_t *a = json_loads(text, 0, &jerr);
	int rc = DBCRON_EDB;
	if (!a || !json_is_array(a))
		goto out_decref;
	size_t n = json_array_size(a);
	job->argv = dbcron__calloc(n + 1, sizeof(char *));
	rc = DBCRON_ENOMEM;
	if (!job->argv)
		goto out_decref;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s) {
			rc = DBCRON_EDB;
			goto out_decref;
		}
		job->argv[i] = dbcron__strdup(s);
		if (!job->argv[i])
			goto out_decref;
		job->argc = (int)i + 1;
	}
	rc = DBCRON_OK;
out_decref:
	json_decref(a);
	return rc;
}

static void argv_to_json(struct jbuf *b, const dbcron_job *job)
{
	jb_reset(b);
	jb_ch(b, '[');
	for (int i = 0; i < job->argc; i++)
		jb_str(b, job->argv[i]);
	jb_ch(b, ']');
}

/* Row of JOB_COLS -> job (initialised here; cleared by the caller). */
static int read_job(sq_store *q, sqlite3_stmt *st, dbcron_job *job,
		    dbcron_err *err)
{
	int rc;
	dbcron_job_init(job);
	job->id = sqlite3_column_int64(st, 0);
	job->kind = sqlite3_column_int(st, 2);
	job->interval_ms = sqlite3_column_int64(st, 4);
	job->anchor_ms = sqlite3_column_int64(st, 5);
	job->at_ms = sqlite3_column_int64(st, 6);
	job->misfire = sqlite3_column_int(st, 8);
	job->max_catchup = sqlite3_column_int(st, 9);
	job->misfire_threshold_ms = sqlite3_column_int64(st, 10);
	job->overlap = sqlite3_column_int(st, 11);
	job->node_loss = sqlite3_column_int(st, 12);
	job->max_retries = sqlite3_column_int(st, 13);
	job->retry_base_ms = sqlite3_column_int64(st, 14);
	job->retry_cap_ms = sqlite3_column_int64(st, 15);
	job->retry_jitter = sqlite3_column_int(st, 16) != 0;
	job->timeout_ms = sqlite3_column_int64(st, 17);
	job->executor = sqlite3_column_int(st, 18);
	job->paused = sqlite3_column_int(st, 22) != 0;
	job->next_fire_at = col_i64n(st, 23);
	job->created_ms = sqlite3_column_int64(st, 24);
	job->updated_ms = sqlite3_column_int64(st, 25);
	if ((rc = col_str(st, 1, &job->name)) || (rc = col_str(st, 3, &job->spec)) ||
	    (rc = col_str(st, 7, &job->tz)) || (rc = col_str(st, 20, &job->handler)) ||
	    (rc = col_str(st, 21, &job->arg)))
		goto out_clear;
	const unsigned char *argv = sqlite3_column_text(st, 19);
	if (argv && (rc = argv_from_json((const char *)argv, job)))
		goto out_clear;
	return DBCRON_OK;
out_clear:
	dbcron_job_clear(job);
	if (rc == DBCRON_ENOMEM)
		return dbcron_err_set(err, rc, "out of memory reading a job");
	return dbcron_err_set(err, rc, "sqlite %s: job %lld: bad argv column",
			      q->url + 7, (long long)sqlite3_column_int64(st, 0));
}

/* Row of RUN_COLS -> run (zeroed here; cleared by the caller). */
static int read_run(sqlite3_stmt *st, dbcron_run *run, dbcron_err *err)
{
	int rc;
	memset(run, 0, sizeof(*run));
	run->id = sqlite3_column_int64(st, 0);
	run->job_id = sqlite3_column_int64(st, 1);
	run->fire_at = sqlite3_column_int64(st, 3);
	run->attempt = sqlite3_column_int(st, 4);
	run->state = sqlite3_column_int(st, 5);
	run->due_at = sqlite3_column_int64(st, 6);
	run->started_ms = col_i64n(st, 9);
	run->finished_ms = col_i64n(st, 10);
	run->has_exit_code = sqlite3_column_type(st, 11) != SQLITE_NULL;
	run->exit_code = sqlite3_column_int(st, 11);
	run->missed = sqlite3_column_int64(st, 12);
	if ((rc = col_str(st, 2, &run->job_name)) || (rc = col_str(st, 7, &run->node)) ||
	    (rc = col_str(st, 8, &run->claim_token)) ||
	    (rc = col_str(st, 13, &run->error)) || (rc = col_str(st, 14, &run->output))) {
		dbcron_run_clear(run);
		return dbcron_err_set(err, rc, "out of memory reading a run");
	}
	return DBCRON_OK;
}

/* ---- open, close, schema ---- */

static void sq_close(store *s)
{
	sq_store *q = SQ(s);
	if (!q)
		return;
	for (int i = 0; i < S__COUNT; i++)
		sqlite3_finalize(q->stmts[i]);
	sqlite3_close_v2(q->db);
	for (size_t i = 0; i < sizeof(q->jb) / sizeof(q->jb[0]); i++)
		dbcron__free(q->jb[i].p);
	dbcron__free(q->url);
	dbcron__free(q);
}

static int sq_open(const char *url, store **out, dbcron_err *err)
{
	int rc;
	*out = NULL;
	if (strncmp(url, "sqlite:", 7) != 0 || !url[7])
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "bad SQLite URL '%s' (use sqlite:PATH)", url);
	sq_store *q = dbcron__calloc(1, sizeof(*q));
	if (!q)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening %s", url);
	q->base.ops = &store_sqlite_ops;
	q->url = dbcron__strdup(url);
	if (!q->url) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening %s", url);
		goto out_close;
	}
	const char *path = url + 7;
	int sr = sqlite3_open_v2(path, &q->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					 SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (sr != SQLITE_OK) {
		rc = dbcron_err_set(err, DBCRON_EIO, "cannot open SQLite database '%s': %s",
				    path, q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(sr));
		goto out_close;
	}
	sqlite3_busy_timeout(q->db, 10000);
	/* WAL: readers never block the writer, and several processes can
	 * share the file; NORMAL sync is durable across process crashes. */
	char *msg = NULL;
	sr = sqlite3_exec(q->db,
			  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			  " PRAGMA foreign_keys=OFF;",
			  NULL, NULL, &msg);
	if (sr != SQLITE_OK) {
		rc = dbcron_err_set(err, sr == SQLITE_BUSY ? DBCRON_EBUSY : DBCRON_EDB,
				    "SQLite database '%s': setting WAL mode: %s", path,
				    msg ? msg : sqlite3_errstr(sr));
		sqlite3_free(msg);
		goto out_close;
	}
	*out = &q->base;
	return DBCRON_OK;
out_close:
	sq_close(&q->base);
	return rc;
}

static int schema_version(sq_store *q, int *version, dbcron_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db,
				    "SELECT (SELECT count(*) FROM sqlite_master WHERE "
				    "type = 'table' AND name = 'schema_version')",
				    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sq_fail(q, rc, "read schema version", err);
	q->base.stmt_count++;
	rc = sqlite3_step(st);
	int has = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	if (has < 0)
		return sq_fail(q, rc, "read schema version", err);
	*version = 0;
	if (!has)
		return DBCRON_OK;
	rc = sqlite3_prepare_v2(q->db, "SELECT coalesce(max(version), 0) FROM schema_version",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return sq_fail(q, rc, "read schema version", err);
	q->base.stmt_count++;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sq_fail(q, rc, "read schema version", err);
	return DBCRON_OK;
}

static int sq_migrate(store *s, int *from, int *to, dbcron_err *err)
{
	sq_store *q = SQ(s);
	int rc, v = 0;
	char *msg = NULL;

	if ((rc = tx_begin(q, err)))
		return rc;
	int sr = sqlite3_exec(q->db,
			      "CREATE TABLE IF NOT EXISTS schema_version ("
			      "version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)",
			      NULL, NULL, &msg);
	q->base.stmt_count++;
	if (sr != SQLITE_OK) {
		rc = dbcron_err_set(err, DBCRON_EDB, "sqlite %s: create schema_version: %s",
				    q->url + 7, msg ? msg : sqlite3_errstr(sr));
		goto out_rollback;
	}
	if ((rc = schema_version(q, &v, err)))
		goto out_rollback;
	if (from)
		*from = v;
	if (v > SQLITE_SCHEMA_VERSION) {
		rc = dbcron_err_set(err, DBCRON_ESCHEMA,
				    "database %s has schema version %d, newer than this "
				    "binary's %d: upgrade dbcron",
				    q->url, v, SQLITE_SCHEMA_VERSION);
		goto out_rollback;
	}
	for (int i = v + 1; i <= SQLITE_SCHEMA_VERSION; i++) {
		sr = sqlite3_exec(q->db, sqlite_migrations[i], NULL, NULL, &msg);
		q->base.stmt_count++;
		if (sr != SQLITE_OK) {
			rc = dbcron_err_set(err, DBCRON_EDB, "sqlite %s: migration %d: %s",
					    q->url + 7, i, msg ? msg : sqlite3_errstr(sr));
			goto out_rollback;
		}
		sqlite3_stmt *st;
		sr = sqlite3_prepare_v2(q->db,
					"INSERT INTO schema_version(version, applied_ms) "
					"VALUES (?1, " NOW_SQL ")",
					-1, &st, NULL);
		if (sr != SQLITE_OK) {
			rc = sq_fail(q, sr, "record migration", err);
			goto out_rollback;
		}
		sqlite3_bind_int(st, 1, i);
		q->base.stmt_count++;
		sr = sqlite3_step(st);
		sqlite3_finalize(st);
		if (sr != SQLITE_DONE) {
			rc = sq_fail(q, sr, "record migration", err);
			goto out_rollback;
		}
	}
	if ((rc = tx_commit(q, err)))
		goto out_rollback;
	if (to)
		*to = SQLITE_SCHEMA_VERSION;
	return DBCRON_OK;
out_rollback:
	sqlite3_free(msg);
	tx_rollback(q);
	return rc;
}

static int sq_check_schema(store *s, dbcron_err *err)
{
	sq_store *q = SQ(s);
	int v, rc = schema_version(q, &v, err);
	if (rc)
		return rc;
	if (v == 0)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database has no dbcron schema; run `dbcron init --db %s`",
				      q->url);
	if (v > SQLITE_SCHEMA_VERSION)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database %s has schema version %d, newer than this "
				      "binary's %d: upgrade dbcron",
				      q->url, v, SQLITE_SCHEMA_VERSION);
	if (v < SQLITE_SCHEMA_VERSION)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database %s has schema version %d, older than this "
				      "binary's %d; run `dbcron init --db %s`",
				      q->url, v, SQLITE_SCHEMA_VERSION, q->url);
	return DBCRON_OK;
}

static int sq_now_ms(store *s, int64_t *out, dbcron_err *err)
{
	return db_now(SQ(s), out, err);
}

/* ---- jobs ---- */

static bool same_str(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static void bind_job(sqlite3_stmt *st, const dbcron_job *j, const char *argv,
		     bool paused, int64_t next, int64_t anchor, int64_t now)
{
	bind_text(st, 1, j->name);
	sqlite3_bind_int(st, 2, j->kind);
	bind_text(st, 3, j->spec);
	sqlite3_bind_int64(st, 4, j->interval_ms);
	sqlite3_bind_int64(st, 5, anchor);
	sqlite3_bind_int64(st, 6, j->at_ms);
	bind_text(st, 7, j->tz);
	sqlite3_bind_int(st, 8, j->misfire);
	sqlite3_bind_int(st, 9, j->max_catchup);
	sqlite3_bind_int64(st, 10, j->misfire_threshold_ms);
	sqlite3_bind_int(st, 11, j->overlap);
	sqlite3_bind_int(st, 12, j->node_loss);
	sqlite3_bind_int(st, 13, j->max_retries);
	sqlite3_bind_int64(st, 14, j->retry_base_ms);
	sqlite3_bind_int64(st, 15, j->retry_cap_ms);
	sqlite3_bind_int(st, 16, j->retry_jitter);
	sqlite3_bind_int64(st, 17, j->timeout_ms);
	sqlite3_bind_int(st, 18, j->executor);
	bind_text(st, 19, argv);
	bind_text(st, 20, j->handler);
	bind_text(st, 21, j->arg);
	sqlite3_bind_int(st, 22, paused);
	bind_i64n(st, 23, next);
	sqlite3_bind_int64(st, 24, now);
}

/*
 * The whole batch in one transaction with two reused statements per job,
 * so 100,000 definitions load in seconds.  An unchanged schedule (kind,
 * spec, tz) keeps its next_fire_at and anchor: re-applying a file must not
 * move or repeat fires.  A job's paused flag is not the file's business.
 */
static int sq_job_put(store *s, dbcron_job *jobs, size_t n, store_put_mode mode,
		      bool prune, size_t *created, size_t *updated,
		      size_t *deleted, dbcron_err *err)
{
	sq_store *q = SQ(s);
	struct jbuf *ids = &q->jb[0], *argv = &q->jb[1];
	size_t nc = 0, nu = 0, nd = 0;
	int64_t now;
	int rc;

	if (created)
		*created = 0;
	if (updated)
		*updated = 0;
	if (deleted)
		*deleted = 0;
	if (mode != STORE_PUT_CREATE && mode != STORE_PUT_UPSERT)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_put: bad mode %d", (int)mode);
	if (prune && mode != STORE_PUT_UPSERT)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_put: prune needs upsert mode");
	for (size_t i = 0; i < n; i++)
		if (!jobs[i].name || !jobs[i].spec)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job_put: job %zu has no name or schedule", i + 1);
	if ((rc = tx_begin(q, err)))
		return rc;
	if ((rc = db_now(q, &now, err)))
		goto out_rollback;
	jb_reset(ids);
	jb_ch(ids, '[');
	for (size_t i = 0; i < n; i++) {
		dbcron_job *j = &jobs[i];
		sqlite3_stmt *st;
		if ((rc = prep(q, S_JOB_PEEK, &st, err)))
			goto out_rollback;
		bind_text(st, 1, j->name);
		int row = step_row(q, st, "look up job", err);
		if (row < 0) {
			rc = -row;
			goto out_rollback;
		}
		int64_t id = 0, next = j->next_fire_at, anchor = j->anchor_ms;
		bool paused = j->paused;
		if (row) {
			id = sqlite3_column_int64(st, 0);
			const char *spec = (const char *)sqlite3_column_text(st, 2);
			const char *tz = (const char *)sqlite3_column_text(st, 3);
			if (sqlite3_column_int(st, 1) == (int)j->kind &&
			    same_str(spec, j->spec) && same_str(tz, j->tz)) {
				next = col_i64n(st, 4);
				anchor = sqlite3_column_int64(st, 5);
			}
			paused = sqlite3_column_int(st, 6) != 0;
		}
		sqlite3_reset(st);
		if (row && mode == STORE_PUT_CREATE) {
			rc = dbcron_err_set(err, DBCRON_EEXISTS,
					    "job '%s' already exists", j->name);
			goto out_rollback;
		}
		argv_to_json(argv, j);
		if (argv->oom) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
			goto out_rollback;
		}
		if ((rc = prep(q, row ? S_JOB_UPDATE : S_JOB_INSERT, &st, err)))
			goto out_rollback;
		bind_job(st, j, j->executor == DBCRON_EXEC_SHELL || j->argv ? argv->p : NULL,
			 paused, next, anchor, now);
		if (row)
			sqlite3_bind_int64(st, 25, id);
		if ((rc = exec_stmt(q, st, row ? "update job" : "insert job", err)))
			goto out_rollback;
		if (!row) {
			id = sqlite3_last_insert_rowid(q->db);
			nc++;
		} else {
			nu++;
		}
		j->id = id;
		j->next_fire_at = next;
		j->anchor_ms = anchor;
		j->paused = paused;
		if (prune)
			jb_i64(ids, id);
	}
	jb_ch(ids, ']');
	if (prune) {
		sqlite3_stmt *st;
		if ((rc = prep(q, S_JOB_PRUNE, &st, err)))
			goto out_rollback;
		if ((rc = bind_json(st, 1, ids)) ||
		    (rc = exec_stmt(q, st, "prune jobs", err)))
			goto out_rollback;
		nd = (size_t)sqlite3_changes(q->db);
		if (nd) {
			if ((rc = prep(q, S_RUNS_ORPHANS, &st, err)))
				goto out_rollback;
			sqlite3_bind_int64(st, 1, now);
			if ((rc = exec_stmt(q, st, "close runs of pruned jobs", err)))
				goto out_rollback;
		}
	}
	if ((rc = tx_commit(q, err)))
		goto out_rollback;
	if (created)
		*created = nc;
	if (updated)
		*updated = nu;
	if (deleted)
		*deleted = nd;
	return DBCRON_OK;
out_rollback:
	if (rc == DBCRON_ENOMEM && err && !err->msg[0])
		dbcron_err_set(err, rc, "out of memory writing jobs");
	tx_rollback(q);
	return rc;
}

static int sq_job_get(store *s, const char *name, dbcron_job *out,
		      dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_JOB_BY_NAME, &st, err);
	dbcron_job_init(out);
	if (rc)
		return rc;
	bind_text(st, 1, name);
	int row = step_row(q, st, "read job", err);
	if (row < 0)
		return -row;
	if (row == 0) {
		sqlite3_reset(st);
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
	}
	rc = read_job(q, st, out, err);
	sqlite3_reset(st);
	return rc;
}

static int sq_job_list(store *s, store_job_cb cb, void *ctx, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_JOB_LIST, &st, err), row;
	if (rc)
		return rc;
	while ((row = step_row(q, st, "list jobs", err)) == 1) {
		dbcron_job job;
		if ((rc = read_job(q, st, &job, err)))
			break;
		int stop = cb(ctx, &job);
		dbcron_job_clear(&job);
		if (stop)
			break;
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	return rc;
}

static int sq_job_set_paused(store *s, const char *name, bool paused,
			     int64_t next_fire_at, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_JOB_SET_PAUSED, &st, err);
	if (rc)
		return rc;
	bind_text(st, 1, name);
	sqlite3_bind_int(st, 2, paused);
	bind_i64n(st, 3, next_fire_at);
	if ((rc = exec_stmt(q, st, paused ? "pause job" : "resume job", err)))
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
	return DBCRON_OK;
}

static int sq_job_delete(store *s, const char *name, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int64_t now;
	int rc = tx_begin(q, err);
	if (rc)
		return rc;
	if ((rc = db_now(q, &now, err)) || (rc = prep(q, S_JOB_DELETE, &st, err)))
		goto out_rollback;
	bind_text(st, 1, name);
	if ((rc = exec_stmt(q, st, "delete job", err)))
		goto out_rollback;
	if (sqlite3_changes(q->db) == 0) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
		goto out_rollback;
	}
	if ((rc = prep(q, S_RUNS_ORPHANS, &st, err)))
		goto out_rollback;
	sqlite3_bind_int64(st, 1, now);
	if ((rc = exec_stmt(q, st, "close runs of deleted job", err)) ||
	    (rc = tx_commit(q, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	return rc;
}

/* Insert a row whose fire_at is bumped by 1 ms until it is unique.  st is
 * prepared and bound except for the fire_at parameters; fire_idx and
 * due_idx (0: none) receive the candidate. */
static int insert_bumped(sq_store *q, sqlite3_stmt *st,
			 int fire_idx, int due_idx, int64_t *fire_at,
			 int64_t *run_id, const char *what, dbcron_err *err)
{
	for (int tries = 0; tries < 10000; tries++) {
		if (tries) {
			q->base.stmt_count++;
			sqlite3_reset(st);
		}
		sqlite3_bind_int64(st, fire_idx, *fire_at);
		if (due_idx)
			sqlite3_bind_int64(st, due_idx, *fire_at);
		int row = step_row(q, st, what, err);
		if (row < 0)
			return -row;
		if (row) {
			*run_id = sqlite3_column_int64(st, 0);
			sqlite3_reset(st);
			return DBCRON_OK;
		}
		(*fire_at)++;
	}
	sqlite3_reset(st);
	return dbcron_err_set(err, DBCRON_EINTERNAL, "%s: no free fire time", what);
}

static int sq_job_trigger(store *s, const char *name, int64_t *run_id,
			  int64_t *fire_at, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int64_t now, job_id, rid = 0;
	int rc = tx_begin(q, err), row;
	if (rc)
		return rc;
	if ((rc = db_now(q, &now, err)) || (rc = prep(q, S_JOB_ID, &st, err)))
		goto out_rollback;
	bind_text(st, 1, name);
	row = step_row(q, st, "look up job", err);
	if (row <= 0) {
		rc = row < 0 ? -row
			     : dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
		goto out_rollback;
	}
	job_id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if ((rc = prep(q, S_TRIGGER, &st, err)))
		goto out_rollback;
	sqlite3_bind_int64(st, 1, job_id);
	bind_text(st, 2, name);
	sqlite3_bind_int64(st, 4, now);
	int64_t at = now;
	if ((rc = insert_bumped(q, st, 3, 0, &at, &rid, "trigger job", err)) ||
	    (rc = tx_commit(q, err)))
		goto out_rollback;
	if (run_id)
		*run_id = rid;
	if (fire_at)
		*fire_at = at;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	return rc;
}

/* ---- the claim ---- */

static int job_id_cmp(const void *a, const void *b)
{
	const dbcron_job *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int claimed_cmp(const void *a, const void *b)
{
	const store_claimed *x = a, *y = b;
	if (x->run.due_at != y->run.due_at)
		return x->run.due_at < y->run.due_at ? -1 : 1;
	if (x->run.job_id != y->run.job_id)
		return x->run.job_id < y->run.job_id ? -1 : 1;
	return x->run.attempt - y->run.attempt;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Append every job row of a stepped statement to out->jobs; resets st. */
static int read_jobs_into(sq_store *q, sqlite3_stmt *st, store_claim_result *out,
			  size_t *jobs_cap, const char *what, dbcron_err *err)
{
	int row, rc = DBCRON_OK;
	while ((row = step_row(q, st, what, err)) == 1) {
		if (dbcron__grow((void **)&out->jobs, jobs_cap, out->njobs + 1,
				 sizeof(*out->jobs))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in claim");
			break;
		}
		if ((rc = read_job(q, st, &out->jobs[out->njobs], err)))
			break;
		out->njobs++;
	}
	if (row < 0)
		rc = -row;
	sqlite3_reset(st);
	return rc;
}

static const dbcron_job *find_job(const store_claim_result *r, int64_t id)
{
	dbcron_job key;
	key.id = id;
	return r->njobs ? bsearch(&key, r->jobs, r->njobs, sizeof(*r->jobs), job_id_cmp) : NULL;
}

/* Append a claimed run from a RETURNING row: id, job_id, job_name,
 * fire_at, then (attempt, due_at, missed) at the given columns. */
static int add_claimed(store_claim_result *out, size_t *cap, sqlite3_stmt *st,
		       int attempt_col, int due_col, int missed_col,
		       const store_claim_req *req)
{
	if (dbcron__grow((void **)&out->runs, cap, out->nruns + 1, sizeof(*out->runs)))
		return DBCRON_ENOMEM;
	store_claimed *c = &out->runs[out->nruns];
	memset(c, 0, sizeof(*c));
	dbcron_run *r = &c->run;
	r->id = sqlite3_column_int64(st, 0);
	r->job_id = sqlite3_column_int64(st, 1);
	r->fire_at = sqlite3_column_int64(st, 3);
	r->attempt = attempt_col < 0 ? 1 : sqlite3_column_int(st, attempt_col);
	r->state = DBCRON_RUN_SCHEDULED;
	r->due_at = sqlite3_column_int64(st, due_col);
	r->missed = sqlite3_column_int64(st, missed_col);
	r->started_ms = r->finished_ms = -1;
	out->nruns++;
	if (col_str(st, 2, &r->job_name) ||
	    !(r->node = dbcron__strdup(req->node_id)) ||
	    !(r->claim_token = dbcron__strdup(req->token)))
		return DBCRON_ENOMEM;
	return DBCRON_OK;
}

static int plan_due_jobs(sq_store *q, const store_claim_req *req, int64_t now,
			 int64_t horizon, store_claim_result *out,
			 size_t *runs_cap, dbcron_err *err)
{
	struct jbuf *fires = &q->jb[0], *next = &q->jb[1];
	size_t jobs_cap = 0, nfires = 0, nplanned = 0;
	int scheduled = 0, rc, row;
	sqlite3_stmt *st;

	if ((rc = prep(q, S_DUE_JOBS, &st, err)))
		return rc;
	sqlite3_bind_int64(st, 1, horizon);
	sqlite3_bind_int(st, 2, req->max);
	if ((rc = read_jobs_into(q, st, out, &jobs_cap, "read due jobs", err)))
		return rc;
	if (!out->njobs)
		return DBCRON_OK;

	jb_reset(fires);
	jb_ch(fires, '[');
	jb_reset(next);
	jb_ch(next, '[');
	for (size_t i = 0; i < out->njobs && scheduled < req->max; i++) {
		dbcron_job *j = &out->jobs[i];
		store_plan plan = {.fires = NULL, .nfires = 0, .next_fire_at = -1};
		if ((rc = req->plan(req->plan_ctx, j, now, horizon, &plan)))
			return rc;
		for (size_t k = 0; k < plan.nfires; k++) {
			const store_fire *f = &plan.fires[k];
			if (f->state != DBCRON_RUN_SCHEDULED &&
			    f->state != DBCRON_RUN_MISFIRED && f->state != DBCRON_RUN_SKIPPED)
				return dbcron_err_set(err, DBCRON_EINTERNAL,
						      "planner gave job '%s' a fire in state %d",
						      j->name, (int)f->state);
			jb_open(fires);
			jb_i64(fires, j->id);
			jb_str(fires, j->name);
			jb_i64(fires, f->fire_at);
			jb_i64(fires, f->state);
			jb_i64(fires, f->due_at >= 0 ? f->due_at : f->fire_at);
			jb_i64(fires, f->missed > 0 ? f->missed : 0);
			jb_str(fires, f->error);
			jb_ch(fires, ']');
			nfires++;
			if (f->state == DBCRON_RUN_SCHEDULED)
				scheduled++;
		}
		jb_open(next);
		jb_i64(next, j->id);
		jb_i64n(next, plan.next_fire_at);
		jb_ch(next, ']');
		j->next_fire_at = plan.next_fire_at;
		nplanned++;
	}
	jb_ch(fires, ']');
	jb_ch(next, ']');
	/* Jobs beyond the budget stay due for the next claim. */
	while (out->njobs > nplanned)
		dbcron_job_clear(&out->jobs[--out->njobs]);

	if (nfires) {
		if ((rc = prep(q, S_FIRES_INSERT, &st, err)))
			return rc;
		bind_text(st, 1, req->node_id);
		bind_text(st, 2, req->token);
		sqlite3_bind_int64(st, 3, now);
		if ((rc = bind_json(st, 4, fires)))
			return dbcron_err_set(err, rc, "out of memory in claim");
		while ((row = step_row(q, st, "insert fires", err)) == 1) {
			if (sqlite3_column_int(st, 4) != DBCRON_RUN_SCHEDULED) {
				out->nterminal++;
				continue;
			}
			if ((rc = add_claimed(out, runs_cap, st, -1, 5, 6, req))) {
				sqlite3_reset(st);
				return dbcron_err_set(err, rc, "out of memory in claim");
			}
		}
		if (row < 0)
			return -row;
		sqlite3_reset(st);
	}
	if ((rc = prep(q, S_JOBS_NEXT, &st, err)))
		return rc;
	if ((rc = bind_json(st, 1, next)))
		return dbcron_err_set(err, rc, "out of memory in claim");
	return exec_stmt(q, st, "advance jobs", err);
}

/* Unclaimed SCHEDULED runs (retries, triggers, hand-backs, takeovers) with
 * what is left of the budget, and the jobs they need. */
static int claim_unclaimed(sq_store *q, const store_claim_req *req,
			   int64_t horizon, int budget, store_claim_result *out,
			   size_t *runs_cap, dbcron_err *err)
{
	struct jbuf *ids = &q->jb[0];
	size_t first = out->nruns, jobs_cap = out->njobs, nneed = 0;
	int64_t *need = NULL;
	sqlite3_stmt *st;
	int rc, row;

	if ((rc = prep(q, S_CLAIM_UNCLAIMED, &st, err)))
		return rc;
	bind_text(st, 1, req->node_id);
	bind_text(st, 2, req->token);
	sqlite3_bind_int64(st, 3, horizon);
	sqlite3_bind_int(st, 4, budget);
	while ((row = step_row(q, st, "claim unclaimed runs", err)) == 1) {
		if ((rc = add_claimed(out, runs_cap, st, 4, 5, 6, req))) {
			sqlite3_reset(st);
			return dbcron_err_set(err, rc, "out of memory in claim");
		}
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	if (out->nruns == first)
		return DBCRON_OK;

	/* Jobs not already loaded by the due-job pass. */
	dbcron__sort(out->jobs, out->njobs, sizeof(*out->jobs), job_id_cmp);
	need = dbcron__calloc(out->nruns - first, sizeof(*need));
	if (!need)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in claim");
	for (size_t i = first; i < out->nruns; i++)
		if (!find_job(out, out->runs[i].run.job_id))
			need[nneed++] = out->runs[i].run.job_id;
	dbcron__sort(need, nneed, sizeof(*need), i64_cmp);
	jb_reset(ids);
	jb_ch(ids, '[');
	for (size_t i = 0; i < nneed; i++)
		if (i == 0 || need[i] != need[i - 1])
			jb_i64(ids, need[i]);
	jb_ch(ids, ']');
	dbcron__free(need);
	if (!nneed)
		return DBCRON_OK;
	if ((rc = prep(q, S_JOBS_BY_IDS, &st, err)))
		return rc;
	if ((rc = bind_json(st, 1, ids)))
		return dbcron_err_set(err, rc, "out of memory in claim");
	if ((rc = read_jobs_into(q, st, out, &jobs_cap, "read jobs of claimed runs", err)))
		return rc;
	return DBCRON_OK;
}

/*
 * One IMMEDIATE transaction, a constant number of statements whatever the
 * batch: clock, due jobs, one INSERT of all fires, one UPDATE of all next
 * fires, one UPDATE claiming unclaimed runs, one SELECT of their jobs.
 */
static int sq_claim(store *s, const store_claim_req *req, store_claim_result *out,
		    dbcron_err *err)
{
	sq_store *q = SQ(s);
	size_t runs_cap = 0;
	int64_t now;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req || !req->node_id || !req->token || !req->plan)
		return dbcron_err_set(err, DBCRON_EINVAL, "claim: node, token and planner are required");
	if ((rc = tx_begin(q, err)))
		return rc;
	if ((rc = db_now(q, &now, err)))
		goto out_rollback;
	out->now_ms = now;
	int64_t horizon = now + (req->horizon_ms_ahead > 0 ? req->horizon_ms_ahead : 0);
	if (req->max > 0 &&
	    (rc = plan_due_jobs(q, req, now, horizon, out, &runs_cap, err)))
		goto out_rollback;
	int budget = req->max - (int)out->nruns;
	if (budget > 0 &&
	    (rc = claim_unclaimed(q, req, horizon, budget, out, &runs_cap, err)))
		goto out_rollback;
	if ((rc = tx_commit(q, err)))
		goto out_rollback;

	dbcron__sort(out->jobs, out->njobs, sizeof(*out->jobs), job_id_cmp);
	dbcron__sort(out->runs, out->nruns, sizeof(*out->runs), claimed_cmp);
	for (size_t i = 0; i < out->nruns; i++) {
		out->runs[i].job = find_job(out, out->runs[i].run.job_id);
		/* Cannot happen: the write lock was held from the first read. */
		if (!out->runs[i].job) {
			rc = dbcron_err_set(err, DBCRON_EINTERNAL,
					    "claim: run %lld has no job",
					    (long long)out->runs[i].run.id);
			store_claim_result_clear(out);
			return rc;
		}
	}
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	store_claim_result_clear(out);
	return rc;
}

/* ---- apply ---- */

struct apply_slot {
	int64_t run_id;
	size_t pos; /* index into ups */
};

static int apply_slot_cmp(const void *a, const void *b)
{
	const struct apply_slot *x = a, *y = b;
	if (x->run_id != y->run_id)
		return x->run_id < y->run_id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Several updates of one run in a batch (RUNNING, then its end) are merged
 * in order into one row of the batch: UPDATE ... FROM would apply only one
 * of them, at random.
 */
static int sq_apply(store *s, const char *node_id, store_update *ups, size_t n,
		    dbcron_err *err)
{
	sq_store *q = SQ(s);
	struct jbuf *b = &q->jb[0], *retry = &q->jb[1], *next = &q->jb[2];
	struct apply_slot *slots = NULL;
	bool extra = false;
	sqlite3_stmt *st;
	int rc, row;

	for (size_t i = 0; i < n; i++) {
		ups[i].applied = false;
		if (ups[i].state < DBCRON_RUN_RUNNING || ups[i].state > DBCRON_RUN_ABANDONED ||
		    !ups[i].token)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "apply: run %lld: bad state %d or no token",
					      (long long)ups[i].run_id, (int)ups[i].state);
		if (ups[i].retry_due_at >= 0 || ups[i].job_next_fire_at >= 0)
			extra = true;
	}
	if (n == 0)
		return DBCRON_OK;
	slots = dbcron__calloc(n, sizeof(*slots));
	if (!slots)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in apply");
	for (size_t i = 0; i < n; i++) {
		slots[i].run_id = ups[i].run_id;
		slots[i].pos = i;
	}
	dbcron__sort(slots, n, sizeof(*slots), apply_slot_cmp);

	jb_reset(b);
	jb_ch(b, '[');
	for (size_t i = 0; i < n;) {
		size_t j = i;
		const store_update *u = &ups[slots[i].pos];
		int64_t sm = -1, fm = -1;
		bool hx = false;
		int xc = 0;
		const char *er = NULL, *ou = NULL, *tok = u->token;
		dbcron_run_state stt = u->state;
		for (; j < n && slots[j].run_id == u->run_id; j++) {
			const store_update *v = &ups[slots[j].pos];
			stt = v->state;
			tok = v->token;
			if (v->started_ms >= 0)
				sm = v->started_ms;
			if (v->finished_ms >= 0)
				fm = v->finished_ms;
			if (v->has_exit_code) {
				hx = true;
				xc = v->exit_code;
			}
			if (v->error)
				er = v->error;
			if (v->output)
				ou = v->output;
		}
		jb_open(b);
		jb_i64(b, u->run_id);
		jb_str(b, tok);
		jb_i64(b, stt);
		jb_i64n(b, sm);
		jb_i64n(b, fm);
		jb_i64(b, hx);
		jb_i64(b, xc);
		jb_str(b, er);
		jb_str(b, ou);
		jb_ch(b, ']');
		i = j;
	}
	jb_ch(b, ']');
	if (b->oom) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in apply");
		goto out_free;
	}
	/* Without retries or next fires the UPDATE is the whole transaction. */
	if (extra && (rc = tx_begin(q, err)))
		goto out_free;
	if ((rc = prep(q, S_APPLY, &st, err)))
		goto out_rollback;
	bind_json(st, 1, b);
	bind_text(st, 2, node_id);
	while ((row = step_row(q, st, "apply run updates", err)) == 1) {
		int64_t id = sqlite3_column_int64(st, 0);
		/* Mark every update of that run: binary search the slots. */
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (slots[mid].run_id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < n && slots[lo].run_id == id; lo++)
			ups[slots[lo].pos].applied = true;
	}
	if (row < 0) {
		rc = -row;
		goto out_rollback;
	}
	sqlite3_reset(st);
	if (extra) {
		size_t nr = 0, nn = 0;
		jb_reset(retry);
		jb_ch(retry, '[');
		jb_reset(next);
		jb_ch(next, '[');
		for (size_t i = 0; i < n; i++) {
			const store_update *u = &ups[i];
			if (!u->applied)
				continue;
			if (u->retry_due_at >= 0) {
				jb_open(retry);
				jb_i64(retry, u->run_id);
				jb_i64(retry, u->retry_due_at);
				jb_ch(retry, ']');
				nr++;
			}
			if (u->job_next_fire_at >= 0) {
				jb_open(next);
				jb_i64(next, u->job_id);
				jb_i64(next, u->job_next_fire_at);
				jb_ch(next, ']');
				nn++;
			}
		}
		jb_ch(retry, ']');
		jb_ch(next, ']');
		if (retry->oom || next->oom) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in apply");
			goto out_rollback;
		}
		if (nr) {
			if ((rc = prep(q, S_RETRY_INSERT, &st, err)))
				goto out_rollback;
			bind_json(st, 1, retry);
			if ((rc = exec_stmt(q, st, "insert retries", err)))
				goto out_rollback;
		}
		if (nn) {
			if ((rc = prep(q, S_JOBS_NEXT_IF_NULL, &st, err)))
				goto out_rollback;
			bind_json(st, 1, next);
			if ((rc = exec_stmt(q, st, "set next fires", err)))
				goto out_rollback;
		}
		if ((rc = tx_commit(q, err)))
			goto out_rollback;
	}
	dbcron__free(slots);
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
out_free:
	dbcron__free(slots);
	return rc;
}

static int sq_job_running(store *s, int64_t job_id, int64_t except_run_id,
			  bool *running, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_JOB_RUNNING, &st, err);
	*running = false;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, job_id);
	sqlite3_bind_int64(st, 2, except_run_id);
	int row = step_row(q, st, "check running runs", err);
	if (row < 0)
		return -row;
	*running = row == 1;
	sqlite3_reset(st);
	return DBCRON_OK;
}

/* ---- nodes ---- */

/*
 * Resolve the runs of the nodes listed in the JSON array `nodes` as lost:
 * SCHEDULED ones go back to the pool, RUNNING ones end ABANDONED with a new
 * attempt when the job's node_loss policy says retry.  Inside the caller's
 * transaction.
 */
static int resolve_lost(sq_store *q, struct jbuf *nodes, int64_t now,
			size_t *touched, dbcron_err *err)
{
	struct jbuf *ids = &q->jb[1];
	sqlite3_stmt *st;
	size_t nab = 0;
	int rc, row;

	if ((rc = prep(q, S_RES_ABANDON, &st, err)))
		return rc;
	bind_json(st, 1, nodes);
	sqlite3_bind_int64(st, 2, now);
	jb_reset(ids);
	jb_ch(ids, '[');
	while ((row = step_row(q, st, "abandon runs of lost nodes", err)) == 1) {
		jb_i64(ids, sqlite3_column_int64(st, 0));
		nab++;
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	jb_ch(ids, ']');
	if (ids->oom)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in reap");
	if (nab) {
		if ((rc = prep(q, S_RES_RETRY, &st, err)))
			return rc;
		bind_json(st, 1, ids);
		sqlite3_bind_int64(st, 2, now);
		if ((rc = exec_stmt(q, st, "retry runs of lost nodes", err)))
			return rc;
		if ((rc = prep(q, S_RES_AFTER, &st, err)))
			return rc;
		bind_json(st, 1, ids);
		sqlite3_bind_int64(st, 2, now);
		if ((rc = exec_stmt(q, st, "reschedule after-jobs of lost nodes", err)))
			return rc;
	}
	if ((rc = prep(q, S_RES_UNCLAIM, &st, err)))
		return rc;
	bind_json(st, 1, nodes);
	if ((rc = exec_stmt(q, st, "unclaim runs of lost nodes", err)))
		return rc;
	if (touched)
		*touched = nab + (size_t)sqlite3_changes(q->db);
	return DBCRON_OK;
}

static int sq_node_register(store *s, const store_node_info *n, dbcron_err *err)
{
	sq_store *q = SQ(s);
	struct jbuf *nodes = &q->jb[0];
	sqlite3_stmt *st;
	int64_t now;
	int rc;

	if (!n || !n->node_id || !n->incarnation || n->lease_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "node_register: node id, incarnation and a lease are required");
	if ((rc = tx_begin(q, err)))
		return rc;
	if ((rc = db_now(q, &now, err)))
		goto out_rollback;
	/* pg_cron resolves orphans at start-up: whatever this node id still
	 * holds was claimed by an earlier process. */
	jb_reset(nodes);
	jb_ch(nodes, '[');
	jb_str(nodes, n->node_id);
	jb_ch(nodes, ']');
	if ((rc = resolve_lost(q, nodes, now, NULL, err)))
		goto out_rollback;
	if ((rc = prep(q, S_NODE_UPSERT, &st, err)))
		goto out_rollback;
	bind_text(st, 1, n->node_id);
	bind_text(st, 2, n->incarnation);
	bind_text(st, 3, n->host);
	sqlite3_bind_int(st, 4, n->pid);
	sqlite3_bind_int(st, 5, n->workers);
	sqlite3_bind_int64(st, 6, now);
	sqlite3_bind_int64(st, 7, n->lease_ms);
	if ((rc = exec_stmt(q, st, "register node", err)) || (rc = tx_commit(q, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	return rc;
}

static int sq_node_heartbeat(store *s, const char *node_id, const char *incarnation,
			     int64_t lease_ms, int64_t *db_now_out, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_NODE_HEARTBEAT, &st, err);
	if (rc)
		return rc;
	bind_text(st, 1, node_id);
	bind_text(st, 2, incarnation);
	sqlite3_bind_int64(st, 3, lease_ms);
	int row = step_row(q, st, "heartbeat", err);
	if (row < 0)
		return -row;
	if (row == 1 && db_now_out)
		*db_now_out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (row == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "node '%s': lease lost (declared dead or replaced by "
				      "another process); its runs belong to others now",
				      node_id);
	return DBCRON_OK;
}

static int sq_node_stop(store *s, const char *node_id, const char *incarnation,
			dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = tx_begin(q, err);
	if (rc)
		return rc;
	if ((rc = prep(q, S_NODE_STOP, &st, err)))
		goto out_rollback;
	bind_text(st, 1, node_id);
	bind_text(st, 2, incarnation);
	if ((rc = exec_stmt(q, st, "stop node", err)))
		goto out_rollback;
	if (sqlite3_changes(q->db) == 0) {
		/* Reaped already: its runs were resolved by another node. */
		rc = dbcron_err_set(err, DBCRON_EFENCED,
				    "node '%s': lease lost before the stop; nothing handed back",
				    node_id);
		goto out_rollback;
	}
	if ((rc = prep(q, S_RUNS_UNCLAIM_NODE, &st, err)))
		goto out_rollback;
	bind_text(st, 1, node_id);
	if ((rc = exec_stmt(q, st, "hand back runs", err)) || (rc = tx_commit(q, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	return rc;
}

static int sq_runs_release(store *s, const char *node_id, const int64_t *ids,
			   const char *const *tokens, size_t n, dbcron_err *err)
{
	sq_store *q = SQ(s);
	struct jbuf *b = &q->jb[0];
	sqlite3_stmt *st;
	int rc;

	if (n == 0)
		return DBCRON_OK;
	jb_reset(b);
	jb_ch(b, '[');
	for (size_t i = 0; i < n; i++) {
		jb_open(b);
		jb_i64(b, ids[i]);
		jb_str(b, tokens[i]);
		jb_ch(b, ']');
	}
	jb_ch(b, ']');
	if ((rc = prep(q, S_RUNS_RELEASE, &st, err)))
		return rc;
	if ((rc = bind_json(st, 1, b)))
		return dbcron_err_set(err, rc, "out of memory in release");
	bind_text(st, 2, node_id);
	return exec_stmt(q, st, "hand back runs", err);
}

static int sq_reap(store *s, size_t *reaped, dbcron_err *err)
{
	sq_store *q = SQ(s);
	struct jbuf *nodes = &q->jb[0];
	sqlite3_stmt *st;
	size_t nn = 0;
	int64_t now;
	int rc, row;

	if (reaped)
		*reaped = 0;
	if ((rc = tx_begin(q, err)))
		return rc;
	if ((rc = db_now(q, &now, err)) || (rc = prep(q, S_NODES_EXPIRE, &st, err)))
		goto out_rollback;
	sqlite3_bind_int64(st, 1, now);
	jb_reset(nodes);
	jb_ch(nodes, '[');
	while ((row = step_row(q, st, "expire nodes", err)) == 1) {
		jb_str(nodes, (const char *)sqlite3_column_text(st, 0));
		nn++;
	}
	if (row < 0) {
		rc = -row;
		goto out_rollback;
	}
	sqlite3_reset(st);
	jb_ch(nodes, ']');
	if (nodes->oom) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in reap");
		goto out_rollback;
	}
	if (nn && (rc = resolve_lost(q, nodes, now, reaped, err)))
		goto out_rollback;
	if ((rc = tx_commit(q, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	if (reaped)
		*reaped = 0;
	return rc;
}

/* ---- views ---- */

static int sq_runs_list(store *s, const store_run_filter *f, store_run_cb cb,
			void *ctx, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_RUNS_LIST, &st, err), row;
	if (rc)
		return rc;
	bind_text(st, 1, f ? f->job : NULL);
	sqlite3_bind_int(st, 2, f ? f->state : 0);
	sqlite3_bind_int64(st, 3, f ? f->since_ms : -1);
	sqlite3_bind_int64(st, 4, f && f->limit > 0 ? (int64_t)f->limit : -1);
	while ((row = step_row(q, st, "list runs", err)) == 1) {
		dbcron_run run;
		if ((rc = read_run(st, &run, err)))
			break;
		int stop = cb(ctx, &run);
		dbcron_run_clear(&run);
		if (stop)
			break;
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	return rc;
}

static int sq_nodes_list(store *s, store_node_cb cb, void *ctx, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_NODES_LIST, &st, err), row;
	if (rc)
		return rc;
	while ((row = step_row(q, st, "list nodes", err)) == 1) {
		store_node_row r = {0};
		r.pid = sqlite3_column_int(st, 2);
		r.workers = sqlite3_column_int(st, 3);
		r.started_ms = sqlite3_column_int64(st, 5);
		r.heartbeat_ms = sqlite3_column_int64(st, 6);
		r.lease_until = sqlite3_column_int64(st, 7);
		r.running = sqlite3_column_int64(st, 8);
		if (col_str(st, 0, &r.node_id) || col_str(st, 1, &r.host) ||
		    col_str(st, 4, &r.state)) {
			store_node_row_clear(&r);
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing nodes");
			break;
		}
		int stop = cb(ctx, &r);
		store_node_row_clear(&r);
		if (stop)
			break;
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	return rc;
}

/* ---- lease locks ---- */

static int read_lock(sqlite3_stmt *st, store_lock_row *r, dbcron_err *err)
{
	memset(r, 0, sizeof(*r));
	r->since_ms = sqlite3_column_int64(st, 2);
	r->until_ms = sqlite3_column_int64(st, 3);
	r->fence = sqlite3_column_int64(st, 4);
	if (col_str(st, 0, &r->name) || col_str(st, 1, &r->owner)) {
		store_lock_row_clear(r);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a lock");
	}
	return DBCRON_OK;
}

static int sq_lock_acquire(store *s, const char *name, const char *owner,
			   int64_t ttl_ms, int64_t *fence, int64_t *until_ms,
			   store_lock_row *holder, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc, row;

	if (holder)
		memset(holder, 0, sizeof(*holder));
	if (!name || !*name || !owner || !*owner || ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "lock: a name, an owner and a positive ttl are required");
	if ((rc = prep(q, S_LOCK_ACQUIRE, &st, err)))
		return rc;
	bind_text(st, 1, name);
	bind_text(st, 2, owner);
	sqlite3_bind_int64(st, 3, ttl_ms);
	row = step_row(q, st, "acquire lock", err);
	if (row < 0)
		return -row;
	if (row == 1) {
		if (fence)
			*fence = sqlite3_column_int64(st, 0);
		if (until_ms)
			*until_ms = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
		return DBCRON_OK;
	}
	sqlite3_reset(st);
	/* Held: say by whom (a read outside the upsert, for the message). */
	if ((rc = prep(q, S_LOCK_GET, &st, err)))
		return rc;
	bind_text(st, 1, name);
	row = step_row(q, st, "read lock", err);
	if (row < 0)
		return -row;
	store_lock_row r = {0};
	if (row == 1 && (rc = read_lock(st, &r, err))) {
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	rc = dbcron_err_set(err, DBCRON_ELOCKED, "lock '%s' is held by '%s' until %lld",
			    name, r.owner ? r.owner : "?", (long long)r.until_ms);
	if (holder)
		*holder = r;
	else
		store_lock_row_clear(&r);
	return rc;
}

static int sq_lock_renew(store *s, const char *name, const char *owner,
			 int64_t fence, int64_t ttl_ms, int64_t *until_ms,
			 dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_LOCK_RENEW, &st, err);
	if (rc)
		return rc;
	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock '%s': ttl must be positive", name);
	bind_text(st, 1, name);
	bind_text(st, 2, owner);
	sqlite3_bind_int64(st, 3, fence);
	sqlite3_bind_int64(st, 4, ttl_ms);
	int row = step_row(q, st, "renew lock", err);
	if (row < 0)
		return -row;
	if (row == 1 && until_ms)
		*until_ms = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (row == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': lease lost by '%s' (fence %lld); another owner took it",
				      name, owner, (long long)fence);
	return DBCRON_OK;
}

static int sq_lock_release(store *s, const char *name, const char *owner,
			   int64_t fence, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_LOCK_RELEASE, &st, err);
	if (rc)
		return rc;
	bind_text(st, 1, name);
	bind_text(st, 2, owner);
	sqlite3_bind_int64(st, 3, fence);
	if ((rc = exec_stmt(q, st, "release lock", err)))
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': not released, '%s' (fence %lld) no longer holds it",
				      name, owner, (long long)fence);
	return DBCRON_OK;
}

static int sq_lock_list(store *s, store_lock_cb cb, void *ctx, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_LOCK_LIST, &st, err), row;
	if (rc)
		return rc;
	while ((row = step_row(q, st, "list locks", err)) == 1) {
		store_lock_row r;
		if ((rc = read_lock(st, &r, err)))
			break;
		int stop = cb(ctx, &r);
		store_lock_row_clear(&r);
		if (stop)
			break;
	}
	if (row < 0)
		return -row;
	sqlite3_reset(st);
	return rc;
}

static int sq_log_run(store *s, const dbcron_run *run, dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int64_t now, rid;
	int rc;

	if (!run || !run->job_name)
		return dbcron_err_set(err, DBCRON_EINVAL, "log_run: the run needs a job name");
	if ((rc = tx_begin(q, err)))
		return rc;
	if ((rc = db_now(q, &now, err)) || (rc = prep(q, S_LOG_RUN, &st, err)))
		goto out_rollback;
	int64_t fire = run->fire_at >= 0 ? run->fire_at : now;
	sqlite3_bind_int64(st, 1, run->job_id);
	bind_text(st, 2, run->job_name);
	sqlite3_bind_int(st, 4, run->attempt > 0 ? run->attempt : 1);
	sqlite3_bind_int(st, 5, run->state ? (int)run->state : DBCRON_RUN_SUCCEEDED);
	bind_text(st, 7, run->node);
	bind_text(st, 8, run->claim_token);
	bind_i64n(st, 9, run->started_ms);
	sqlite3_bind_int64(st, 10, run->finished_ms >= 0 ? run->finished_ms : now);
	if (run->has_exit_code)
		sqlite3_bind_int(st, 11, run->exit_code);
	else
		sqlite3_bind_null(st, 11);
	sqlite3_bind_int64(st, 12, run->missed > 0 ? run->missed : 0);
	bind_text(st, 13, run->error);
	bind_text(st, 14, run->output);
	if ((rc = insert_bumped(q, st, 3, 6, &fire, &rid, "log run", err)) ||
	    (rc = tx_commit(q, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	tx_rollback(q);
	return rc;
}

static int sq_prune_runs(store *s, int64_t cutoff_ms, int64_t *deleted,
			 dbcron_err *err)
{
	sq_store *q = SQ(s);
	sqlite3_stmt *st;
	int rc = prep(q, S_PRUNE_RUNS, &st, err);
	if (deleted)
		*deleted = 0;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, cutoff_ms);
	if ((rc = exec_stmt(q, st, "prune runs", err)))
		return rc;
	if (deleted)
		*deleted = sqlite3_changes64(q->db);
	return DBCRON_OK;
}

const store_ops store_sqlite_ops = {
	.version = STORE_OPS_VERSION,
	.name = "sqlite",
	.caps = STORE_CAP_RETURNING,
	.open = sq_open,
	.close = sq_close,
	.migrate = sq_migrate,
	.check_schema = sq_check_schema,
	.now_ms = sq_now_ms,
	.job_put = sq_job_put,
	.job_get = sq_job_get,
	.job_list = sq_job_list,
	.job_set_paused = sq_job_set_paused,
	.job_delete = sq_job_delete,
	.job_trigger = sq_job_trigger,
	.node_register = sq_node_register,
	.node_heartbeat = sq_node_heartbeat,
	.node_stop = sq_node_stop,
	.runs_release = sq_runs_release,
	.reap = sq_reap,
	.claim = sq_claim,
	.apply = sq_apply,
	.job_running = sq_job_running,
	.runs_list = sq_runs_list,
	.nodes_list = sq_nodes_list,
	.lock_acquire = sq_lock_acquire,
	.lock_renew = sq_lock_renew,
	.lock_release = sq_lock_release,
	.lock_list = sq_lock_list,
	.log_run = sq_log_run,
	.prune_runs = sq_prune_runs,
};
