/*
 * The MySQL / MariaDB dialect of the claim protocol (dialect.h), over
 * MariaDB Connector/C with server-side prepared statements.
 *
 * Owns one MYSQL connection per handle, the statements prepared on it, and
 * the schema (schema.h).  What the server lacks, the dialect supplies, so
 * that the protocol stays the one protocol:
 *
 * - No UPDATE ... RETURNING.  A statement id may be a short script of parts
 *   (script.c runs them; the SQL text is sql.h).
 * - Parameters are positional '?' only: sql.h says ?N, ?1NN and ?LN, and
 *   script.c rewrites them to '?' and keeps the map.
 * - A batch on the claim and write paths travels as one JSON array read
 *   with JSON_TABLE, so a claim or a flush is a constant number of
 *   statements whatever its size.  So do a put's new jobs, in slices
 *   under the server's packet size; its updates (23 cells a row, not on
 *   a hot path) run once per row (STORE_CAP_ROW_BATCH: the protocol wraps
 *   them in a transaction), as the inserts do on a server without INSERT
 *   ... RETURNING.
 *
 * Results are copied out of the connection as they are read (script.c).
 *
 * Sessions: READ COMMITTED, UTC and strict SQL mode are set at every
 * connect; a node's waits are bounded by its lease (tune).  Database time
 * is the server's NOW(3) as epoch ms, never the client's clock.
 *
 * Connection loss: a statement that meets a broken connection fails with
 * DBCRON_ECONN; the next operation outside a transaction reconnects and
 * prepares again.  A statement is never silently retried: a write whose
 * reply was lost may have committed.  The password lives in the driver and
 * in this handle only; messages name the database by its masked URL.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "store/mysql/mysql_int.h"
#include "store/mysql/schema.h"
#include "store/mysql/sql.h"

/* The statement texts with stmt.h's job-column markers expanded (rows.c),
 * of both sets: with RETURNING and without. */
static store_sql_texts texts = STORE_SQL_TEXTS_INIT;
static store_sql_texts texts_no_returning = STORE_SQL_TEXTS_INIT;
/* The JSON_TABLE column type of each model_field_store ({PUT_JSON}): the
 * widest of its kind, so that the insert itself, in strict mode, refuses a
 * value the column cannot hold, as a row of parameters would be refused. */
static const char *const json_types[] = {
	[MODEL_FS_TEXT] = "LONGTEXT CHARACTER SET utf8mb4",
	[MODEL_FS_INT] = "BIGINT",
	[MODEL_FS_I64] = "BIGINT",
	[MODEL_FS_I64N] = "BIGINT",
	[MODEL_FS_INTN] = "BIGINT",
	[MODEL_FS_BOOL] = "BIGINT",
	[MODEL_FS_ARGV] = "LONGTEXT CHARACTER SET utf8mb4",
	[MODEL_FS_ENV] = "LONGTEXT CHARACTER SET utf8mb4",
	[MODEL_FS_HANDLER] = "LONGTEXT CHARACTER SET utf8mb4",
};

/* A sliced statement's JSON batch (sql.h) goes in parts of at most this
 * many bytes (a longer row alone): a quarter of the 16 MiB
 * max_allowed_packet the server and the connector have by default. */
#define MY_SLICE_BYTES (4u << 20)

/* ---- connection ---- */

/* q->db: a session on host h, set up as every session is. */
static int connect_host(store_conn *q, const my_host *h, dbcron_err *err)
{
	MYSQL *db = my__lib.mysql_init(NULL);
	if (!db)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory connecting to %s", q->masked);
	/* A node's connection: no statement waits longer than its lease for
	 * the server (a frozen or unreachable one), so the node moves on to
	 * the next host instead of hanging; the lease bounds what the node
	 * may wait anyway (a longer statement would let its lease lapse). */
	unsigned timeout = q->io_timeout_s ? q->io_timeout_s : 10;
	my_bool off = 0;
	my__lib.mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (q->io_timeout_s) {
		my__lib.mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &q->io_timeout_s);
		my__lib.mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &q->io_timeout_s);
	}
	my__lib.mysql_options(db, MYSQL_OPT_RECONNECT, &off);
	my__lib.mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	my__lib.mysql_options(db, MYSQL_READ_DEFAULT_GROUP, NULL);
	/* Every session alike: READ COMMITTED as the claim protocol assumes,
	 * UTC for UNIX_TIMESTAMP(), and strict mode so that a bad value is an
	 * error, not a warning. */
	my__lib.mysql_options(db, MYSQL_INIT_COMMAND, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	my__lib.mysql_options(db, MYSQL_INIT_COMMAND,
		      "SET SESSION time_zone = '+00:00', sql_mode = "
		      "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO'");
	/* matched, not changed, rows: a renew to the same instant still counts */
	if (!my__lib.mysql_real_connect(db, h->name, q->user, q->pass, q->dbname, h->port, q->socket,
				CLIENT_FOUND_ROWS)) {
		int rc;
		if (q->nhosts > 1)
			rc = dbcron_err_set(err, DBCRON_ECONN, "cannot connect to %s (host %s:%u): %s",
					    q->masked, h->name ? h->name : "localhost", h->port,
					    my__lib.mysql_error(db));
		else
			rc = dbcron_err_set(err, DBCRON_ECONN, "cannot connect to %s: %s", q->masked,
					    my__lib.mysql_error(db));
		my__lib.mysql_close(db);
		return rc;
	}
	q->db = db;
	return DBCRON_OK;
}

/* The server version and what follows from it, on a fresh session. */
static int server_checks(store_conn *q, dbcron_err *err)
{
	const char *info = my__lib.mysql_get_server_info(q->db);
	unsigned long ver = my__lib.mysql_get_server_version(q->db);
	q->mariadb = info && strstr(info, "MariaDB");
	/* FOR UPDATE SKIP LOCKED and JSON_TABLE: MariaDB 10.6, MySQL 8.0.4.
	 * INSERT ... RETURNING only on MariaDB (10.5); elsewhere the inserts
	 * read back (sql_no_returning). */
	if (q->mariadb ? ver < 100600 : ver < 80004)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "%s runs %s %s: dbcron needs MariaDB 10.6 or MySQL 8.0.4 or "
				      "later (FOR UPDATE SKIP LOCKED, JSON_TABLE)",
				      q->masked, q->mariadb ? "MariaDB" : "MySQL", info ? info : "?");
	q->insert_returning = q->mariadb && !q->no_returning_asked;
	q->connected = true;
	int rc = q->mariadb ? my__galera_check(q, err) : DBCRON_OK;
	if (!rc && q->tune[0])
		rc = my__run_text(q, q->tune, "setting session timeouts", err);
	return rc;
}

/*
 * Each host once, in the URL's order, from the one connected to last (the
 * one after it when that connection was lost): the first that answers and
 * may take writes.  Every node lists the hosts in one order, so they all
 * write through the same one (docs/cluster.md "MariaDB Galera").
 */
static int connect_db(store_conn *q, dbcron_err *err)
{
	if (q->db)
		my__lib.mysql_close(q->db);
	q->db = NULL;
	my__close_stmts(q);
	q->connected = q->in_tx = false;
	int start = q->rotate ? (q->cur + 1) % q->nhosts : q->cur, rc = DBCRON_ECONN;
	q->rotate = false;
	for (int k = 0; k < q->nhosts; k++) {
		q->cur = (start + k) % q->nhosts;
		if ((rc = connect_host(q, &q->hosts[q->cur], err))) {
			if (rc == DBCRON_ENOMEM)
				return rc;
			continue;
		}
		if ((rc = server_checks(q, err)) == DBCRON_OK)
			return DBCRON_OK;
		my__lib.mysql_close(q->db);
		q->db = NULL;
		my__close_stmts(q);
		q->connected = false;
		if (rc != DBCRON_ECONN)
			return rc;
	}
	return rc;
}

/* Before the first statement of an operation: reconnect after a loss. */
static int ready(store_conn *q, dbcron_err *err)
{
	if (q->connected && q->db)
		return DBCRON_OK;
	q->reconnects++;
	return connect_db(q, err);
}

static unsigned long my_reconnects(const store_conn *q) { return q->reconnects; }

static bool tx_control(int id)
{
	return id == ST_BEGIN || id == ST_BEGIN_WRITE || id == ST_COMMIT || id == ST_ROLLBACK;
}

static void my_reset(store_conn *q) { my__clear_result(q); }

/* What a Galera member needs before statement id (galera.c): a node's
 * heartbeat records its member, a claim waits while members disagree. */
static int galera_before(store_conn *q, int id, const store_param *p, int np, dbcron_err *err)
{
	if (id == ST_NODE_HEARTBEAT && np > 0 && p[0].t == SP_TEXT)
		return my__galera_beat(q, p[0].s, err);
	if (id == ST_CLAIM_DUE_JOBS || id == ST_CLAIM_RUNS)
		return my__galera_claim_ok(q, err);
	return DBCRON_OK;
}

/* At most the bytes row r of bt adds to its JSON (rows.c): a text cell's
 * bytes with their escapes, a number's widest form, the separators. */
static size_t row_bytes(const store_batch *bt, size_t r)
{
	size_t n = 3;
	for (int c = 0; c < bt->ncols; c++) {
		const store_cell *v = &bt->cells[r * (size_t)bt->ncols + (size_t)c];
		n += 24;
		if (bt->cols[c] != BC_TEXT || v->null || !v->s)
			continue;
		for (const unsigned char *t = (const unsigned char *)v->s; *t; t++)
			n += *t < 0x20 ? 6 : *t == '"' || *t == '\\' ? 2 : 1;
	}
	return n;
}

/* Statement id with its batch parameter p[bi] run once for each slice of
 * the batch's rows of at most MY_SLICE_BYTES (a row longer than that goes
 * alone); the results and changes of the slices add up. */
static int run_sliced(store_conn *q, int id, const store_param *p, int np, int bi,
		      dbcron_err *err)
{
	enum { MAX_PARAMS = 16 };
	const store_batch *bt = p[bi].b;
	size_t rows = store_batch_rows(bt), ncols = (size_t)bt->ncols;
	store_param sp[MAX_PARAMS];
	if (np > MAX_PARAMS)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: %d parameters",
				      store_stmt_what(id), np);
	memcpy(sp, p, sizeof(*p) * (size_t)np);
	for (size_t lo = 0, hi; lo < rows; lo = hi) {
		size_t bytes = row_bytes(bt, lo), next;
		for (hi = lo + 1; hi < rows && bytes + (next = row_bytes(bt, hi)) <= MY_SLICE_BYTES;
		     hi++)
			bytes += next;
		/* a view of rows lo..hi-1: the cells stay the caller's */
		store_batch view = *bt;
		view.cells = bt->cells + lo * ncols;
		view.ncells = view.cap = (hi - lo) * ncols;
		sp[bi] = sp_batch(&view);
		int rc = my__run_parts(q, id, sp, np, NULL, 0, false, err);
		if (rc)
			return rc;
	}
	return DBCRON_OK;
}

static int my_exec(store_conn *q, int id, const store_param *p, int np, dbcron_err *err)
{
	int rc;
	my__clear_result(q);
	q->changes = 0;
	if (id < 0 || id >= ST__COUNT)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: statement %d", id);
	if (id == ST_ROLLBACK && !q->connected) {
		q->in_tx = false; /* the server rolled it back with the session */
		return DBCRON_OK;
	}
	if (!q->in_tx && (rc = ready(q, err)))
		return rc;
	if (!q->connected)
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s",
				      store_stmt_what(id), q->masked);
	if (tx_control(id)) {
		rc = my__run_text(q, texts.text[id], store_stmt_what(id), err);
		if (id == ST_BEGIN || id == ST_BEGIN_WRITE)
			q->in_tx = rc == DBCRON_OK;
		else
			q->in_tx = false;
		return rc;
	}
	if (q->galera && (rc = galera_before(q, id, p, np, err)))
		return rc;
	bool no_ret = !q->insert_returning && sql_no_returning[id];
	const char *text = no_ret ? texts_no_returning.text[id] : texts.text[id];
	if ((rc = my__prepare(q, id, text, err)))
		return rc;
	const store_batch *bt = NULL;
	int bi = -1;
	for (int i = 0; i < np; i++)
		if (p[i].t == SP_BATCH) {
			bt = p[i].b;
			bi = i;
		}
	if (bt && bt->oom)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s", store_stmt_what(id));
	if (bt && !per_row[id] && !(no_ret && per_row_no_returning[id]))
		bt = NULL; /* bound whole as JSON (script.c) */
	if (bi >= 0 && !bt && sliced[id]) {
		if ((rc = run_sliced(q, id, p, np, bi, err)))
			goto fail;
	} else if (bt) {
		size_t rows = store_batch_rows(bt);
		for (size_t r = 0; r < rows; r++)
			if ((rc = my__run_parts(q, id, p, np, bt, r, made_row[id], err)))
				goto fail;
	} else if ((rc = my__run_parts(q, id, p, np, NULL, 0, made_row[id], err))) {
		goto fail;
	}
	q->row = -1;
	return DBCRON_OK;
fail:
	my__clear_result(q);
	return rc;
}

static int my_next(store_conn *q, dbcron_err *err)
{
	(void)err;
	if ((size_t)(q->row + 1) >= q->nrows)
		return 0;
	q->row++;
	return 1;
}

static const char *cell(store_conn *q, int c)
{
	if (q->row < 0 || c >= q->ncols)
		return NULL;
	return q->cells[(size_t)q->row * (size_t)q->ncols + (size_t)c];
}

static bool my_col_null(store_conn *q, int c) { return cell(q, c) == NULL; }

static int64_t my_col_i64(store_conn *q, int c)
{
	const char *v = cell(q, c);
	return v ? strtoll(v, NULL, 10) : 0;
}

static const char *my_col_text(store_conn *q, int c) { return cell(q, c); }

static int64_t my_changes(store_conn *q) { return q->changes; }

static bool my_in_tx(store_conn *q) { return q->in_tx; }

static const char *my_display(const store_conn *q) { return q->masked; }

/*
 * Waits bounded by the lease: a row or table lock held elsewhere fails our
 * statement after a third of it (retried) instead of stalling the
 * heartbeat; (MariaDB) a session idle inside a transaction for a lease is
 * ended by the server, freeing what it locked; and the driver gives up on
 * a server that has not answered for a lease (read, write and connect
 * timeouts: a frozen or unreachable server), so that the node moves on to
 * the next host of the URL.  The server ends a statement at that same
 * lease: past it the driver has given the statement up, and one left to
 * run (it was ten leases) went on holding its locks and a read view and
 * taking the CPU the live statements needed (issue 30 item 2: three nodes'
 * abandoned scans piled up on a loaded server).  Whole seconds: the server
 * and the driver count in seconds.
 */
static int my_tune(store_conn *q, int64_t lease_ms, dbcron_err *err)
{
	long lock_s = (long)((lease_ms / 3 + 999) / 1000);
	long idle_s = (long)((lease_ms + 999) / 1000);
	if (lock_s < 1)
		lock_s = 1;
	if (q->mariadb)
		snprintf(q->tune, sizeof(q->tune),
			 "SET SESSION innodb_lock_wait_timeout = %ld, lock_wait_timeout = %ld, "
			 "max_statement_time = %ld, idle_transaction_timeout = %ld",
			 lock_s, lock_s, idle_s, idle_s);
	else
		snprintf(q->tune, sizeof(q->tune),
			 "SET SESSION innodb_lock_wait_timeout = %ld, lock_wait_timeout = %ld, "
			 "max_execution_time = %lld",
			 lock_s, lock_s, (long long)idle_s * 1000);
	/* the driver takes its timeouts at connect: a new session */
	unsigned io_s = (unsigned)idle_s;
	bool again = q->connected && !q->in_tx && io_s != q->io_timeout_s;
	q->lease_ms = lease_ms;
	q->io_timeout_s = io_s;
	if (again)
		return connect_db(q, err);
	int rc = ready(q, err);
	return rc ? rc : my__run_text(q, q->tune, "setting session timeouts", err);
}

/* ---- URL ---- */

static bool my_accepts(const char *url)
{
	return strncmp(url, "mysql://", 8) == 0 || strncmp(url, "mariadb://", 10) == 0;
}

static void my_close(store_conn *q)
{
	if (!q)
		return;
	my__clear_result(q);
	dbcron__free(q->cells);
	my__close_stmts(q);
	if (q->db)
		my__lib.mysql_close(q->db);
	my__free_url(q);
	for (int k = 0; k < MY_BATCHES; k++)
		store_text_free(&q->json[k]);
	for (int k = 0; k < MAX_REFS; k++)
		store_text_free(&q->clean[k]);
	dbcron__free(q);
}

my_libmariadb my__lib;
#define MY_LIBMARIADB_SYM(f) DBCRON_DYNLIB_SYM(my_libmariadb, f)
static const dbcron_dynsym my_syms[] = {MY_LIBMARIADB_FUNCS(MY_LIBMARIADB_SYM)};
static dbcron_dynlib my_dynlib = {.soname = "libmariadb.so.3", .package = "libmariadb3",
				  .what = "MariaDB/MySQL", .syms = my_syms,
				  .nsyms = sizeof(my_syms) / sizeof(my_syms[0]), .api = &my__lib};

int my__load(dbcron_err *err) { return dbcron__dynlib_load(&my_dynlib, err); }

static int my_open(const char *url, unsigned flags, store_conn **out, dbcron_err *err)
{
	*out = NULL;
	int rc = my__load(err);
	if (rc)
		return rc;
	rc = store__sql_texts(&texts, sql, json_types, err);
	if (rc || (rc = store__sql_texts(&texts_no_returning, sql_no_returning, json_types, err)))
		return rc;
	store_conn *q = dbcron__calloc(1, sizeof(*q));
	if (!q)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	q->row = -1;
	store_mask_url(url, q->masked, sizeof(q->masked));
	rc = my__parse_url(q, url, err);
	if (rc == DBCRON_ENOMEM)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	if (!rc)
		rc = connect_db(q, err);
	if (rc) {
		my_close(q);
		return rc;
	}
	*out = q;
	return DBCRON_OK;
}

/* ---- schema ---- */

static int one_int(store_conn *q, const char *text, const char *what, long *v, dbcron_err *err)
{
	*v = 0;
	if (my__lib.mysql_real_query(q->db, text, (unsigned long)strlen(text)))
		return my__fail_db(q, what, err);
	MYSQL_RES *r = my__lib.mysql_store_result(q->db);
	if (!r)
		return my__fail_db(q, what, err);
	MYSQL_ROW row = my__lib.mysql_fetch_row(r);
	if (row && row[0])
		*v = strtol(row[0], NULL, 10);
	my__lib.mysql_free_result(r);
	return DBCRON_OK;
}

static int my_schema_read(store_conn *q, int *version, dbcron_err *err)
{
	long exists = 0, v = 0;
	int rc;
	*version = 0;
	my__clear_result(q);
	if ((rc = ready(q, err)) ||
	    (rc = one_int(q,
			  "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
			  "DATABASE() AND table_name = 'schema_version'",
			  "checking the schema", &exists, err)))
		return rc;
	if (!exists)
		return DBCRON_OK;
	if ((rc = one_int(q, "SELECT coalesce(max(version), 0) FROM schema_version",
			  "reading the schema version", &v, err)))
		return rc;
	*version = (int)v;
	return DBCRON_OK;
}

/*
 * Pending migrations under a named lock, so that two `dbcron init` at once
 * apply each exactly once: the second waits, then finds the work done.
 * DDL commits implicitly here; each migration records its version when its
 * statements are done (schema.h: they can be run again).
 */
static int my_migrate(store_conn *q, int *from, dbcron_err *err)
{
	int cur = 0, rc;
	long got = 0;
	char text[256];
	my__clear_result(q);
	if ((rc = ready(q, err)) ||
	    (rc = one_int(q, "SELECT GET_LOCK('dbcron_migrate', 60)", "migrate: waiting for the schema lock",
			  &got, err)))
		return rc;
	if (got != 1)
		return dbcron_err_set(err, DBCRON_EBUSY, "migrate: the schema lock of %s is held", q->masked);
	if ((rc = my__run_text(q, "CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL PRIMARY KEY,"
			      " applied_ms BIGINT NOT NULL)" MY_TABLE_OPTS,
			   "migrate: creating schema_version", err)) ||
	    (rc = my_schema_read(q, &cur, err)))
		goto out;
	*from = cur;
	if (cur > DBCRON_MY_SCHEMA_VERSION) {
		rc = store_schema_newer(err, q->masked, cur, DBCRON_MY_SCHEMA_VERSION);
		goto out;
	}
	for (size_t m = 0; m < sizeof(my_migrations) / sizeof(my_migrations[0]); m++) {
		if (my_migrations[m].version <= cur)
			continue;
		for (const char *const *s = my_migrations[m].stmts; *s; s++)
			if ((rc = my__run_text(q, *s, "migrate", err)))
				goto out;
		snprintf(text, sizeof(text),
			 "INSERT INTO schema_version (version, applied_ms) VALUES (%d, " DBNOW ")",
			 my_migrations[m].version);
		if ((rc = my__run_text(q, text, "migrate: recording the version", err)))
			goto out;
	}
out:
	if (q->connected) {
		dbcron_err ignore = {0};
		my__run_text(q, "DO RELEASE_LOCK('dbcron_migrate')", "migrate: releasing the lock", &ignore);
	}
	return rc;
}

const store_dialect store_mysql_dialect = {
	.version = STORE_DIALECT_VERSION,
	.name = "mysql",
	.caps = STORE_CAP_RETURNING | STORE_CAP_SKIP_LOCKED | STORE_CAP_MULTI_WRITER |
		STORE_CAP_ROW_BATCH,
	.schema_version = DBCRON_MY_SCHEMA_VERSION,
	.sql = sql,
	.accepts = my_accepts,
	.open = my_open,
	.close = my_close,
	.display = my_display,
	.exec = my_exec,
	.next = my_next,
	.col_null = my_col_null,
	.col_i64 = my_col_i64,
	.col_text = my_col_text,
	.changes = my_changes,
	.reset = my_reset,
	.in_tx = my_in_tx,
	.schema_read = my_schema_read,
	.migrate = my_migrate,
	.tune = my_tune,
	.reconnects = my_reconnects,
};

