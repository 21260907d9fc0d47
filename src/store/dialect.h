/*
 * What a database dialect supplies to the claim protocol, and nothing more:
 * a connection, statement execution by id with typed parameters and
 * batches, a cursor over the result, native errors classified into dbcron
 * codes, the SQL text of every statement id (stmt.h), and its schema with
 * numbered migrations.  Every algorithm (the claim, apply, reap, job put,
 * the bump-until-unique loops, row mapping, the argv codec, guards and
 * messages) lives once in the store's files (store_int.h names them); a
 * dialect never sees a job or a run, only parameters and columns.  SQLite's sqlite3_io_methods and
 * curl's vtls backend table are the models: a versioned const table chosen
 * at run time, with capability bits the protocol reads.
 *
 * One statement's result is open at a time per connection: exec() runs the
 * statement, next() steps its rows, reset() ends it (also implied by the
 * next exec()).
 */
#ifndef DBCRON_STORE_DIALECT_H
#define DBCRON_STORE_DIALECT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "store/stmt.h"

#define STORE_DIALECT_VERSION 4

/* Capability bits, read by the protocol only. */
#define STORE_CAP_SKIP_LOCKED 0x1u  /* concurrent claimers skip each other's rows */
#define STORE_CAP_RETURNING 0x2u    /* INSERT/UPDATE ... RETURNING */
#define STORE_CAP_MULTI_WRITER 0x4u /* writers run in parallel (not SQLite) */
#define STORE_CAP_DML_CTE 0x8u      /* data-changing statements inside WITH */
/* A batch statement makes its changes row by row as next() reads on, not
 * all at exec: the protocol runs each one inside a transaction and reads
 * it to the end (or rolls back) before reset. */
#define STORE_CAP_ROW_BATCH 0x10u

/* ---- parameters ---- */

typedef enum store_ptype { SP_NULL, SP_I64, SP_TEXT, SP_BATCH } store_ptype;

/* A batch column type.  Every text cell (TEXT and TEXT_CLEAN alike) is
 * cleaned by the dialect: bytes that are not UTF-8 become '?', because the
 * server would refuse the whole batch, and one job's text (a reason cut
 * mid-character, issue 23 item 1) must never fail every claim.
 * TEXT_CLEAN marks the columns where such bytes are expected (captured
 * output). */
typedef enum store_bcol { BC_I64, BC_BOOL, BC_TEXT, BC_TEXT_CLEAN } store_bcol;

typedef struct store_cell {
	bool null;
	int64_t i;
	const char *s; /* borrowed: lives until the statement ran */
} store_cell;

/* Rows of typed cells, appended row-major.  Owned by whoever built it. */
typedef struct store_batch {
	int ncols;
	const store_bcol *cols;
	store_cell *cells;
	size_t ncells, cap;
	bool oom;
} store_batch;

void store_batch_init(store_batch *b, int ncols, const store_bcol *cols);
void store_batch_reset(store_batch *b, int ncols, const store_bcol *cols);
void store_batch_free(store_batch *b);
void store_batch_i64(store_batch *b, int64_t v);
void store_batch_i64n(store_batch *b, int64_t v); /* < 0: NULL */
void store_batch_bool(store_batch *b, bool v);
void store_batch_text(store_batch *b, const char *s); /* NULL: NULL */
static inline size_t store_batch_rows(const store_batch *b)
{
	return b->ncols ? b->ncells / (size_t)b->ncols : 0;
}

typedef struct store_param {
	store_ptype t;
	int64_t i;
	const char *s;
	const store_batch *b;
} store_param;

static inline store_param sp_i64(int64_t v) { return (store_param){.t = SP_I64, .i = v}; }
static inline store_param sp_i64n(int64_t v)
{
	return v < 0 ? (store_param){.t = SP_NULL} : sp_i64(v);
}
static inline store_param sp_text(const char *s)
{
	return s ? (store_param){.t = SP_TEXT, .s = s} : (store_param){.t = SP_NULL};
}
static inline store_param sp_batch(const store_batch *b)
{
	return (store_param){.t = SP_BATCH, .b = b};
}

/* ---- the dialect table ---- */

typedef struct store_conn store_conn; /* the dialect's own */

typedef struct store_dialect {
	int version; /* STORE_DIALECT_VERSION */
	const char *name; /* "sqlite", "postgresql" */
	unsigned caps;
	int schema_version; /* the highest migration this binary has */
	const char *const *sql; /* [ST__COUNT], every entry set */

	bool (*accepts)(const char *url);
	/* Connects; never creates the schema.  The URL is the user's: the
	 * dialect keeps no password outside its driver and shows the URL only
	 * through display().  flags: STORE_OPEN_* (store.h); a server
	 * database ignores STORE_OPEN_NOCREATE, it never makes one. */
	int (*open)(const char *url, unsigned flags, store_conn **out, dbcron_err *err);
	void (*close)(store_conn *c);
	/* The URL with every password masked, for messages. */
	const char *(*display)(const store_conn *c);

	/* Run statement id; errors are classified: DBCRON_EBUSY (lock or busy
	 * timeout), DBCRON_ECONN (connection lost: the next exec reconnects,
	 * and a write whose reply was lost may have committed),
	 * DBCRON_ECONSTRAINT, DBCRON_ENOMEM, DBCRON_EIO, else DBCRON_EDB; the
	 * message starts with store_stmt_what(id). */
	int (*exec)(store_conn *c, int id, const store_param *p, int np, dbcron_err *err);
	/* 1: a row is current, 0: no more rows, < 0: -code. */
	int (*next)(store_conn *c, dbcron_err *err);
	bool (*col_null)(store_conn *c, int col);
	int64_t (*col_i64)(store_conn *c, int col); /* NULL reads as 0 */
	const char *(*col_text)(store_conn *c, int col); /* NULL for NULL; valid until next() */
	/* Rows changed by the last exec, once its rows were read. */
	int64_t (*changes)(store_conn *c);
	void (*reset)(store_conn *c);
	bool (*in_tx)(store_conn *c);

	/* 0 when there is no schema. */
	int (*schema_read)(store_conn *c, int *version, dbcron_err *err);
	/* Apply every migration above the current version in one transaction,
	 * serialised against concurrent `dbcron init`; *from is the version
	 * found.  DBCRON_ESCHEMA when the database is newer (message from
	 * store_schema_newer()). */
	int (*migrate)(store_conn *c, int *from, dbcron_err *err);

	/* A scheduler node's connection: waits bounded by its lease, so that
	 * a lock held elsewhere fails a statement (DBCRON_EBUSY, retried)
	 * instead of stalling the heartbeat, and (where the server has it) a
	 * session idle inside a transaction for a lease is ended.  Kept across
	 * reconnects. */
	int (*tune)(store_conn *c, int64_t lease_ms, dbcron_err *err);

	/* The file on this host that holds the database, or NULL (a server
	 * database; the hook may be NULL too).  Its owner keeps its mode
	 * right: it holds every job's command line and output. */
	const char *(*file)(const store_conn *c);

	/* How many times the connection was made again since open (a server
	 * restarted or failed over, a session given up); may be NULL (never).
	 * A node that reconnected was cut off, and so perhaps were the others:
	 * its reap rule waits (sched/dblease.c). */
	unsigned long (*reconnects)(const store_conn *c);
} store_dialect;

extern const store_dialect store_sqlite_dialect;
extern const store_dialect store_pg_dialect;
extern const store_dialect store_mysql_dialect;

/* Messages the protocol and every dialect share. */
int store_schema_newer(dbcron_err *err, const char *url, int found, int mine);

/*
 * One password masker for every URL a user may give: postgresql:// URIs
 * (user:password@ and ?password=), libpq key=value strings (password=...),
 * and any scheme://user:password@host (mysql://).  Always NUL-terminates;
 * returns the length the whole masked text needs, like snprintf.  When a
 * URL can be read more than one way it hides more (url.c says how).
 */
size_t store_mask_url(const char *url, char *buf, size_t len);

/* What store_mask_url hides: disjoint byte ranges [lo, hi) of url, in
 * order, at most max (the last one then runs to the end of what must be
 * hidden).  *ambiguous (may be NULL) is set when a URI's user-info could
 * end at more than one '@' (an '@' or '/' in the password not
 * percent-encoded), so that a reader such as libpq would take part of the
 * password for the host or the database. */
typedef struct store_span {
	size_t lo, hi;
} store_span;
#define STORE_URL_SPANS_MAX 32
size_t store_url_secrets(const char *url, store_span *out, size_t max, bool *ambiguous);

/* Length of the valid UTF-8 sequence at s, 0 when invalid. */
size_t store_utf8_seq(const unsigned char *s);
/* Is the whole string valid UTF-8? */
bool store_utf8_valid(const char *s);

/* A growing text for the batch encoders.  An allocation failure sets oom
 * and later appends do nothing, so an encoder checks once at the end.
 * p is always NUL-terminated once anything was appended; the owner frees
 * it with store_text_free(). */
typedef struct store_text {
	char *p;
	size_t len, cap;
	bool oom;
} store_text;

void store_text_putn(store_text *b, const char *s, size_t n);
/* v in decimal */
void store_text_i64(store_text *b, int64_t v);
/* The run of plain ASCII at p (no quote, no backslash; control characters
 * only when controls) in one append; returns its length, 0 when p starts
 * with something an encoder must escape or check. */
size_t store_text_plain(store_text *b, const unsigned char *p, bool controls);
/* b = bt as JSON, for json_each() / JSON_TABLE: a flat array for one
 * column ([1,"a",null]), an array of rows otherwise ([[1,"a"],[2,null]]).
 * Bools are 0/1; a TEXT_CLEAN cell's bytes that are not UTF-8 become '?'
 * (the server would refuse the whole batch).  NUL-terminated; ENOMEM. */
int store_batch_json(store_text *b, const store_batch *bt);
/* s itself when it is valid UTF-8, else a copy in b with '?' for the bad
 * bytes (valid until b's next use); NULL when out of memory. */
const char *store_text_clean(store_text *b, const char *s);
static inline void store_text_putc(store_text *b, char c) { store_text_putn(b, &c, 1); }
void store_text_free(store_text *b);

/* ---- rows.c: statement texts ---- */

/*
 * A dialect's statement texts with the job-column markers of stmt.h
 * expanded, built by the first open that asks (t is the dialect's static
 * STORE_SQL_TEXTS_INIT) and then shared: text[id] is sql[id] itself when
 * it has no marker, else a copy that lives as long as the process.  types:
 * the dialect's SQL type of each model_field_store for {PUT_ARRAYS} and
 * {PUT_JSON}, or NULL.  DBCRON_ENOMEM (the next open tries again), or DBCRON_EINTERNAL for
 * a marker rows.c does not know.
 */
typedef struct store_sql_texts {
	pthread_mutex_t mu;
	bool ready;
	const char *text[ST__COUNT];
} store_sql_texts;
#define STORE_SQL_TEXTS_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}
int store__sql_texts(store_sql_texts *t, const char *const *sql, const char *const *types,
		     dbcron_err *err);

#endif
