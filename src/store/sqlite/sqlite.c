/*
 * The SQLite dialect of the claim protocol (dialect.h).
 *
 * Owns one sqlite3 connection per handle and the statements prepared on it.
 * Several processes share one database file: WAL mode, a 10 s busy timeout,
 * and BEGIN IMMEDIATE for every write transaction (the protocol asks for
 * BEGIN_WRITE since this dialect has no STORE_CAP_MULTI_WRITER), so a
 * transaction that reads and then writes holds the one write lock from its
 * first read.  SQLite has one writer at a time, which serialises claimers:
 * that is what stands in for SKIP LOCKED here.
 *
 * A batch of one column (a list of ids or names for IN) travels as ONE
 * bound JSON array read back with json_each().  A batch of rows runs its
 * statement once per row on the same prepared statement, the row's cells
 * bound as ?100, ?101, ... (R(00), R(01) in sql.h): SQLite is in the
 * process, so a step costs no round trip, while every value->>N re-reads the
 * row's JSON text (23 of them per job made `job apply` of 100,000 jobs 2.8x
 * slower than plain binds).  The protocol runs such statements inside a
 * transaction (STORE_CAP_ROW_BATCH), so a batch still lands whole or not
 * at all.
 *
 * Invariants: the SQL (sql.h) keeps them as stmt.h says; every time written
 * comes from NOW_SQL or from a parameter the protocol read from it; a
 * database file this dialect creates is 0600 (create_private).
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "store/dialect.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sql.h"

/* The statement texts with stmt.h's job-column markers expanded (rows.c). */
static store_sql_texts texts = STORE_SQL_TEXTS_INIT;
#include "store/store.h"
#include "store/stmt.h"

#define SQ_LISTS 2 /* one-column batches one statement may bind */

struct store_conn {
	sqlite3 *db; /* first: test_sqlite_synchronous reads it through the store */
	char *url;
	char *path; /* the file: url less "sqlite:" and its ?synchronous= option */
	sqlite3_stmt *stmts[ST__COUNT];
	sqlite3_stmt *cur; /* the open result */
	int cur_id;
	bool pending; /* exec stepped onto a first row that next() hands out */
	bool done;
	int64_t changes;
	const store_batch *rows; /* a row-by-row batch being run, else NULL */
	size_t next_row;
	bool made_row; /* the current row is made (see made_kind[]): column c
			* is made_id while c < made_off, else cell c - made_off
			* of made_cell's row */
	int made_off;
	int64_t made_id;
	const store_cell *made_cell;
	store_text jb; /* a cleaned cell of a row-by-row batch */
	/* the JSON of each one-column batch of a statement, in the order bound:
	 * a claim statement has two (handlers, the slow pool's jobs) */
	store_text lists[SQ_LISTS];
};

/* ---- JSON batch text ---- */

/* ---- errors ---- */

static int classify(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return DBCRON_EBUSY;
	case SQLITE_NOMEM:
		return DBCRON_ENOMEM;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
	case SQLITE_FULL:
		return DBCRON_EIO;
	case SQLITE_CONSTRAINT:
		return DBCRON_ECONSTRAINT;
	default:
		return DBCRON_EDB;
	}
}

static int fail(store_conn *q, int rc, const char *what, dbcron_err *err)
{
	return dbcron_err_set(err, classify(rc), "sqlite %s: %s: %s", q->path, what,
			      sqlite3_errmsg(q->db));
}

/* ---- statements ---- */

static void sq_reset(store_conn *q)
{
	if (q->cur)
		sqlite3_reset(q->cur);
	q->cur = NULL;
	q->rows = NULL;
	q->made_row = false;
	q->pending = false;
	q->done = true;
}

/* Bind row r of a row-by-row batch at ?100, ?101, ...  A TEXT_CLEAN cell
 * that is not UTF-8 is bound as a copy with '?' for the bad bytes, as the
 * JSON encoder does. */
static int bind_row(store_conn *q, sqlite3_stmt *st, const store_batch *bt, size_t r)
{
	for (int c = 0; c < bt->ncols; c++) {
		const store_cell *v = &bt->cells[r * (size_t)bt->ncols + (size_t)c];
		int i = ROW_BASE + c;
		if (v->null) {
			sqlite3_bind_null(st, i);
		} else if (bt->cols[c] == BC_I64 || bt->cols[c] == BC_BOOL) {
			sqlite3_bind_int64(st, i, v->i);
		} else {
			const char *t = store_text_clean(&q->jb, v->s);
			if (!t)
				return DBCRON_ENOMEM;
			/* a cleaned copy lives in jb, which the next cell reuses */
			sqlite3_bind_text(st, i, t, -1, t == v->s ? SQLITE_STATIC : SQLITE_TRANSIENT);
		}
	}
	return DBCRON_OK;
}

/* Run the rows of q->rows from q->next_row until one gives a row of
 * output: 1 a row is current, 0 the batch is done, < 0 -code. */
static int rows_advance(store_conn *q, dbcron_err *err)
{
	const store_batch *bt = q->rows;
	size_t n = store_batch_rows(bt);
	q->made_row = false;
	while (q->next_row < n) {
		sqlite3_reset(q->cur);
		if (bind_row(q, q->cur, bt, q->next_row++))
			return -dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
					       store_stmt_what(q->cur_id));
		int rc = sqlite3_step(q->cur);
		if (rc == SQLITE_ROW)
			return 1;
		if (rc != SQLITE_DONE)
			return -fail(q, rc, store_stmt_what(q->cur_id), err);
		int ch = sqlite3_changes(q->db);
		q->changes += ch;
		if (made_kind[q->cur_id] && ch == 1) {
			q->made_row = true;
			q->made_cell = &bt->cells[(q->next_row - 1) * (size_t)bt->ncols];
			q->made_off = made_kind[q->cur_id] == MADE_INSERTED;
			q->made_id = q->made_off ? sqlite3_last_insert_rowid(q->db) : q->made_cell->i;
			return 1;
		}
	}
	q->done = true;
	return 0;
}

static int sq_exec(store_conn *q, int id, const store_param *p, int np, dbcron_err *err)
{
	sqlite3_stmt *st;
	int rc, nlists = 0;

	sq_reset(q);
	if (id < 0 || id >= ST__COUNT)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "sqlite: statement %d", id);
	if (!(st = q->stmts[id])) {
		rc = sqlite3_prepare_v3(q->db, texts.text[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
		if (rc != SQLITE_OK)
			return fail(q, rc, store_stmt_what(id), err);
		q->stmts[id] = st;
	} else {
		sqlite3_clear_bindings(st);
	}
	for (int i = 0; i < np; i++) {
		switch (p[i].t) {
		case SP_NULL:
			sqlite3_bind_null(st, i + 1);
			break;
		case SP_I64:
			sqlite3_bind_int64(st, i + 1, p[i].i);
			break;
		case SP_TEXT:
			sqlite3_bind_text(st, i + 1, p[i].s, -1, SQLITE_STATIC);
			break;
		case SP_BATCH:
			if (per_row[id]) {
				if (p[i].b->oom)
					return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
							      store_stmt_what(id));
				q->rows = p[i].b;
				break;
			}
			if (p[i].b->ncols != 1)
				return dbcron_err_set(err, DBCRON_EINTERNAL,
						      "sqlite: %s: a %d-column batch must run row by row",
						      store_stmt_what(id), p[i].b->ncols);
			if (nlists == SQ_LISTS)
				return dbcron_err_set(err, DBCRON_EINTERNAL,
						      "sqlite: %s: more than %d list parameters",
						      store_stmt_what(id), SQ_LISTS);
			store_text *l = &q->lists[nlists++];
			if (store_batch_json(l, p[i].b))
				return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
						      store_stmt_what(id));
			sqlite3_bind_text(st, i + 1, l->p, (int)l->len, SQLITE_STATIC);
			break;
		}
	}
	q->cur = st;
	q->cur_id = id;
	q->done = false;
	if (q->rows) {
		q->next_row = 0;
		q->changes = 0;
		rc = rows_advance(q, err);
		if (rc >= 0) {
			q->pending = rc == 1;
			return DBCRON_OK;
		}
		sq_reset(q);
		return -rc;
	}
	/* SQLite makes every change of a statement on its first step, so the
	 * error of a write surfaces here, not in the middle of its rows. */
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		q->pending = true;
		return DBCRON_OK;
	}
	if (rc == SQLITE_DONE) {
		q->changes = sqlite3_changes(q->db);
		q->done = true;
		return DBCRON_OK;
	}
	rc = fail(q, rc, store_stmt_what(id), err);
	sq_reset(q);
	return rc;
}

static int sq_next(store_conn *q, dbcron_err *err)
{
	if (q->pending) {
		q->pending = false;
		return 1;
	}
	if (q->done || !q->cur)
		return 0;
	if (q->made_row)
		return rows_advance(q, err);
	int rc = sqlite3_step(q->cur);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE && q->rows) {
		q->changes += sqlite3_changes(q->db);
		return rows_advance(q, err);
	}
	q->done = true;
	if (rc == SQLITE_DONE) {
		q->changes = sqlite3_changes(q->db);
		return 0;
	}
	return -fail(q, rc, store_stmt_what(q->cur_id), err);
}

static bool sq_col_null(store_conn *q, int c)
{
	if (q->made_row)
		return c >= q->made_off && q->made_cell[c - q->made_off].null;
	return sqlite3_column_type(q->cur, c) == SQLITE_NULL;
}

static int64_t sq_col_i64(store_conn *q, int c)
{
	if (q->made_row)
		return c < q->made_off ? q->made_id : q->made_cell[c - q->made_off].i;
	return sqlite3_column_int64(q->cur, c);
}

static const char *sq_col_text(store_conn *q, int c)
{
	if (q->made_row)
		return c >= q->made_off && !q->made_cell[c - q->made_off].null
			       ? q->made_cell[c - q->made_off].s
			       : NULL;
	return (const char *)sqlite3_column_text(q->cur, c);
}

static int64_t sq_changes(store_conn *q) { return q->changes; }

void store_sqlite_own_process(void)
{
	/* SQLITE_MISUSE once SQLite is initialised: then the statistics stay,
	 * which costs time, not correctness */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static bool sq_in_tx(store_conn *q) { return !sqlite3_get_autocommit(q->db); }

static const char *sq_display(const store_conn *q) { return q->url; }

/* ---- open, close, schema ---- */

/* 50 tries 20 ms apart: a second at most before a real refusal is told */
#define CANTOPEN_TRIES 50

static bool sq_accepts(const char *url) { return strncmp(url, "sqlite:", 7) == 0; }

static const char *sq_file(const store_conn *q) { return q->path; }

/* A new database file is made here, 0600, before SQLite would make it
 * 0644 less the umask: it holds every job's command line, environment
 * and output.  SQLite gives the -wal and -shm files the database file's
 * mode (and its owner, when it runs as root), so they follow it.  An
 * existing file is left as it is (`dbcron init` warns about one others
 * can read); any other failure is SQLite's to report when it opens. */
static void create_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		close(fd);
}

static void sq_close(store_conn *q)
{
	if (!q)
		return;
	sq_reset(q);
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(q->stmts[i]);
	sqlite3_close_v2(q->db);
	store_text_free(&q->jb);
	for (int i = 0; i < SQ_LISTS; i++)
		store_text_free(&q->lists[i]);
	dbcron__free(q->url);
	dbcron__free(q->path);
	dbcron__free(q);
}

static int sq_open(const char *url, unsigned flags, store_conn **out, dbcron_err *err)
{
	int rc;
	*out = NULL;
	if (!sq_accepts(url) || !url[7])
		return dbcron_err_set(err, DBCRON_EINVAL, "bad SQLite URL '%s' (use sqlite:PATH)", url);
	if ((rc = store__sql_texts(&texts, sql, NULL, err)))
		return rc;
	store_conn *q = dbcron__calloc(1, sizeof(*q));
	if (!q)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening %s", url);
	q->done = true;
	if (!(q->url = dbcron__strdup(url))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening %s", url);
		goto out_close;
	}
	/* Durability (issue 23 item 12, docs/store.md "Durability"): FULL by
	 * default, so a COMMIT that returned (a claim, an outcome) survives a
	 * power loss; "?synchronous=normal" at the end of the URL trades that
	 * for fewer fsyncs.  Only these exact endings are options: any other
	 * '?' is part of the file's name, as it always was. */
	const char *sync = "FULL";
	size_t plen = strlen(url + 7);
	static const struct {
		const char *sfx, *mode;
	} syncs[] = {{"?synchronous=normal", "NORMAL"}, {"?synchronous=full", "FULL"}};
	for (size_t i = 0; i < sizeof(syncs) / sizeof(syncs[0]); i++) {
		size_t n = strlen(syncs[i].sfx);
		if (plen > n && strcmp(url + 7 + plen - n, syncs[i].sfx) == 0) {
			plen -= n;
			sync = syncs[i].mode;
			break;
		}
	}
	if (!(q->path = dbcron__strndup(url + 7, plen))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening %s", url);
		goto out_close;
	}
	const char *path = q->path;
	bool create = !(flags & STORE_OPEN_NOCREATE);
	if (create)
		create_private(path);
	int sr = sqlite3_open_v2(path, &q->db,
				 SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) |
					 SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (sr != SQLITE_OK && !create && access(path, F_OK) != 0) {
		rc = dbcron_err_set(err, DBCRON_EIO,
				    "SQLite database '%s' does not exist (dbcron init creates it)", path);
		goto out_close;
	}
	if (sr != SQLITE_OK) {
		rc = dbcron_err_set(err, DBCRON_EIO, "cannot open SQLite database '%s': %s", path,
				    q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(sr));
		goto out_close;
	}
	sqlite3_busy_timeout(q->db, 10000);
	/* WAL: readers never block the writer, and several processes can share
	 * the file.  synchronous: see above. */
	char *msg = NULL;
	char pragmas[128];
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=OFF;", sync);
	/* CANTOPEN here is most often a race, not a lasting refusal: a root
	 * process (an operator's `dbcron runs`) that makes the -wal or -shm
	 * first creates it as root and only then gives it to the database
	 * file's owner, and a node running as that owner can come in between.
	 * So it is tried again for a while before it counts. */
	for (int tries = 0;; tries++) {
		sr = sqlite3_exec(q->db, pragmas, NULL, NULL, &msg);
		if ((sr & 0xff) != SQLITE_CANTOPEN || tries >= CANTOPEN_TRIES)
			break;
		sqlite3_free(msg);
		msg = NULL;
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (sr != SQLITE_OK) {
		rc = dbcron_err_set(err, sr == SQLITE_BUSY ? DBCRON_EBUSY : DBCRON_EDB,
				    "SQLite database '%s': setting WAL mode: %s", path,
				    msg ? msg : sqlite3_errstr(sr));
		sqlite3_free(msg);
		goto out_close;
	}
	*out = q;
	return DBCRON_OK;
out_close:
	sq_close(q);
	return rc;
}

/* One integer from a one-off statement (schema queries). */
static int scalar(store_conn *q, const char *text, int *v, dbcron_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, text, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return fail(q, rc, "reading the schema version", err);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	int r = rc == SQLITE_ROW ? DBCRON_OK : fail(q, rc, "reading the schema version", err);
	sqlite3_finalize(st);
	return r;
}

static int sq_schema_read(store_conn *q, int *version, dbcron_err *err)
{
	int has = 0, rc;
	*version = 0;
	if ((rc = scalar(q, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
			    "name = 'schema_version'", &has, err)) || !has)
		return rc;
	return scalar(q, "SELECT coalesce(max(version), 0) FROM schema_version", version, err);
}

static int run_text(store_conn *q, const char *text, const char *what, dbcron_err *err)
{
	char *msg = NULL;
	int sr = sqlite3_exec(q->db, text, NULL, NULL, &msg);
	if (sr == SQLITE_OK)
		return DBCRON_OK;
	int rc = dbcron_err_set(err, classify(sr), "sqlite %s: %s: %s", q->path, what,
				msg ? msg : sqlite3_errstr(sr));
	sqlite3_free(msg);
	return rc;
}

/* BEGIN IMMEDIATE serialises concurrent `dbcron init`: the second waits on
 * the write lock, then finds the work done. */
static int sq_migrate(store_conn *q, int *from, dbcron_err *err)
{
	int rc, v = 0;
	char text[256];

	sq_reset(q);
	if ((rc = run_text(q, "BEGIN IMMEDIATE", "starting the migration", err)))
		return rc;
	if ((rc = run_text(q, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER "
			      "PRIMARY KEY, applied_ms INTEGER NOT NULL)",
			   "creating schema_version", err)) ||
	    (rc = sq_schema_read(q, &v, err)))
		goto out_rollback;
	*from = v;
	if (v > SQLITE_SCHEMA_VERSION) {
		rc = store_schema_newer(err, q->url, v, SQLITE_SCHEMA_VERSION);
		goto out_rollback;
	}
	for (int i = v + 1; i <= SQLITE_SCHEMA_VERSION; i++) {
		snprintf(text, sizeof(text),
			 "INSERT INTO schema_version(version, applied_ms) VALUES (%d, " NOW_SQL ")",
			 i);
		if ((rc = run_text(q, sqlite_migrations[i], "migration", err)) ||
		    (rc = run_text(q, text, "recording the migration", err)))
			goto out_rollback;
	}
	if ((rc = run_text(q, "COMMIT", "committing the migration", err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	if (!sqlite3_get_autocommit(q->db))
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Half a lease: a write lock held longer fails the statement (EBUSY,
 * retried with backoff) rather than holding the db thread past its lease. */
static int sq_tune(store_conn *q, int64_t lease_ms, dbcron_err *err)
{
	(void)err;
	int64_t ms = lease_ms / 2 > 250 ? lease_ms / 2 : 250;
	sqlite3_busy_timeout(q->db, (int)(ms < 10000 ? ms : 10000));
	return DBCRON_OK;
}

const store_dialect store_sqlite_dialect = {
	.version = STORE_DIALECT_VERSION,
	.name = "sqlite",
	.caps = STORE_CAP_RETURNING | STORE_CAP_ROW_BATCH,
	.schema_version = SQLITE_SCHEMA_VERSION,
	.sql = sql,
	.accepts = sq_accepts,
	.open = sq_open,
	.close = sq_close,
	.display = sq_display,
	.exec = sq_exec,
	.next = sq_next,
	.col_null = sq_col_null,
	.col_i64 = sq_col_i64,
	.col_text = sq_col_text,
	.changes = sq_changes,
	.reset = sq_reset,
	.in_tx = sq_in_tx,
	.schema_read = sq_schema_read,
	.migrate = sq_migrate,
	.tune = sq_tune,
	.file = sq_file,
};
