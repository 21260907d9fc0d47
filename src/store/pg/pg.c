/*
 * The PostgreSQL dialect of the claim protocol (dialect.h), over libpq.
 *
 * Owns one PGconn per handle, the statements prepared on it, and the
 * PostgreSQL schema (schema.h).  A batch becomes one array parameter per
 * column, taken apart with unnest(); every statement is parameterised and
 * prepared once per connection.  Concurrent claimers skip each other's rows
 * (FOR UPDATE SKIP LOCKED, seed 003).
 *
 * Connection loss: a statement that meets a broken connection fails with
 * DBCRON_ECONN; the first statement of the next operation (the connection
 * idle, outside a transaction) reconnects (PQreset) and prepares again.  A
 * statement is never silently retried: a write whose reply was lost may
 * have committed.
 *
 * Passwords: the connection string is kept only inside libpq; messages name
 * the database by its masked form (store_mask_url) and server text is
 * scrubbed of every secret (the password as libpq read it and as it was
 * used, and everything the masker hides) before it reaches a dbcron_err.
 * A URI whose user-info libpq would end at another '@' than the last is
 * refused before libpq sees it: libpq would quote the password's tail as
 * the host.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/alloc.h"
#include "core/dynlib.h"
#include "core/timeutil.h"
#include "store/dialect.h"
#include "store/pg/classify.h"
#include "store/pg/schema.h"
#include "store/pg/sql.h"
#include "store/stmt.h"

/* The statement texts with stmt.h's job-column markers expanded (rows.c);
 * a put batch's column arrays are typed by how each field is stored. */
static store_sql_texts texts = STORE_SQL_TEXTS_INIT;
static const char *const array_types[] = {
	[MODEL_FS_TEXT] = "text",   [MODEL_FS_INT] = "int",    [MODEL_FS_I64] = "bigint",
	[MODEL_FS_I64N] = "bigint", [MODEL_FS_INTN] = "int",   [MODEL_FS_BOOL] = "bool",
	[MODEL_FS_ARGV] = "text",   [MODEL_FS_ENV] = "text",   [MODEL_FS_HANDLER] = "text",
};

/* libpq, loaded when the first PostgreSQL handle opens (core/dynlib.h):
 * every libpq function this file calls goes through `pq`. */
#define PG_LIBPQ_FUNCS(X)                                                              \
	X(PQclear) X(PQcmdTuples) X(PQconnectdbParams) X(PQconninfoFree)               \
	X(PQconninfoParse) X(PQconsumeInput) X(PQerrorMessage) X(PQfinish) X(PQflush)  \
	X(PQfreemem) X(PQgetisnull) X(PQgetResult) X(PQgetvalue) X(PQisBusy)           \
	X(PQntuples) X(PQparameterStatus) X(PQpass) X(PQreset) X(PQresultErrorField)   \
	X(PQresultErrorMessage) X(PQresultStatus) X(PQsendPrepare) X(PQsendQuery)      \
	X(PQsendQueryParams) X(PQsendQueryPrepared) X(PQsetNoticeReceiver)             \
	X(PQsetnonblocking) X(PQsocket) X(PQstatus) X(PQtransactionStatus)
typedef struct pg_libpq {
	PG_LIBPQ_FUNCS(DBCRON_DYNLIB_MEMBER)
} pg_libpq;
static pg_libpq pq;
#define PG_LIBPQ_SYM(f) DBCRON_DYNLIB_SYM(pg_libpq, f)
static const dbcron_dynsym pq_syms[] = {PG_LIBPQ_FUNCS(PG_LIBPQ_SYM)};
static dbcron_dynlib pq_lib = {.soname = "libpq.so.5", .package = "libpq5",
			       .what = "PostgreSQL", .syms = pq_syms,
			       .nsyms = sizeof(pq_syms) / sizeof(pq_syms[0]), .api = &pq};

/* Serialises concurrent `dbcron init` (pg_advisory_xact_lock key). */
#define MIGRATE_LOCK_KEY "4419240577205112"

/* Texts scrubbed from every message: the password as libpq read it, what
 * the masker hides (raw and percent-decoded), the password libpq used. */
#define MAX_SECRETS (2 * STORE_URL_SPANS_MAX + 2)

/* Parameters of one statement: a job put sends one array per column. */
#define MAX_PARAMS 64

struct store_conn {
	PGconn *conn;
	char masked[256];
	char *secrets[MAX_SECRETS]; /* longest first */
	size_t nsecrets;
	bool prepared[ST__COUNT];
	char tune[256]; /* SET statements for a node's session, "" for none */
	int64_t deadline_ms; /* a node's statement deadline, 0 for none */
	bool broken; /* given up (deadline, a session that cannot write): reconnect */
	unsigned long reconnects;
	/* A WARNING that came with a statement that commits (a cancelled
	 * synchronous-replication wait): the outcome is unknown. */
	bool commits, warned;
	char warning[300];
	PGresult *res; /* the open result */
	int row, nrows;
	/* Parameter texts of the statement being sent. */
	store_text arrays[MAX_PARAMS];
	char nums[MAX_PARAMS][24];
};

/* ---- text ---- */

/* One column of a batch in PostgreSQL's array text form: {1,NULL,"a\"b"}.
 * Every text column is cleaned (dialect.h): the server rejects invalid
 * UTF-8 and would fail the whole batch, so such bytes become '?'. */
static const char *array_text(store_text *b, const store_batch *bt, int col)
{
	size_t rows = store_batch_rows(bt);
	store_bcol type = bt->cols[col];
	b->len = 0;
	b->oom = bt->oom;
	store_text_putc(b, '{');
	for (size_t r = 0; r < rows; r++) {
		const store_cell *v = &bt->cells[r * (size_t)bt->ncols + (size_t)col];
		if (r)
			store_text_putc(b, ',');
		if (v->null) {
			store_text_putn(b, "NULL", 4);
		} else if (type == BC_BOOL) {
			store_text_putc(b, v->i ? 't' : 'f');
		} else if (type == BC_I64) {
			store_text_i64(b, v->i);
		} else {
			store_text_putc(b, '"');
			const unsigned char *p = (const unsigned char *)v->s;
			while (*p) {
				size_t plain = store_text_plain(b, p, true);
				if (plain) {
					p += plain;
					continue;
				}
				size_t n = store_utf8_seq(p);
				if (n == 0) {
					store_text_putc(b, '?');
					p++;
					continue;
				}
				if (*p == '"' || *p == '\\')
					store_text_putc(b, '\\');
				store_text_putn(b, (const char *)p, n);
				p += n;
			}
			store_text_putc(b, '"');
		}
	}
	store_text_putc(b, '}');
	return b->oom ? NULL : b->p;
}

/* One line of server text, without any secret, newlines folded. */
static void scrub(const store_conn *s, const char *msg, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = msg ? msg : ""; *p && o + 1 < len;) {
		size_t hit = 0;
		for (size_t i = 0; i < s->nsecrets && !hit; i++) {
			size_t k = strlen(s->secrets[i]);
			if (strncmp(p, s->secrets[i], k) == 0)
				hit = k;
		}
		if (hit) {
			for (const char *m = "***"; *m && o + 1 < len; m++)
				out[o++] = *m;
			p += hit;
			continue;
		}
		char c = *p++;
		if (c == '\n' || c == '\t' || c == '\r') {
			if (o && out[o - 1] != ' ' && *p)
				out[o++] = ' ';
			continue;
		}
		out[o++] = c;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Keep a copy of t[0, n) (percent-decoded when decode) as a secret,
 * longest first; false on out of memory. */
static bool add_secret(store_conn *s, const char *t, size_t n, bool decode)
{
	char *c = dbcron__strndup(t, n);
	if (!c)
		return false;
	if (decode) {
		size_t o = 0;
		for (size_t i = 0; c[i]; i++) {
			int hi, lo;
			if (c[i] == '%' && (hi = hexval(c[i + 1])) >= 0 && (lo = hexval(c[i + 2])) >= 0) {
				c[o++] = (char)(hi * 16 + lo);
				i += 2;
			} else {
				c[o++] = c[i];
			}
		}
		c[o] = '\0';
	}
	size_t k = strlen(c);
	bool dup = k == 0 || s->nsecrets == MAX_SECRETS;
	for (size_t i = 0; i < s->nsecrets && !dup; i++)
		dup = strcmp(s->secrets[i], c) == 0;
	if (dup) {
		dbcron__free(c);
		return true;
	}
	size_t at = s->nsecrets++;
	while (at && strlen(s->secrets[at - 1]) < k) {
		s->secrets[at] = s->secrets[at - 1];
		at--;
	}
	s->secrets[at] = c;
	return true;
}

/* Native error -> dbcron class (classify.c): an error that means this
 * session is no use any more (a lost server, one that is no longer the
 * primary) is DBCRON_ECONN and gives the session up, so that the next
 * operation reconnects instead of retrying on it. */
static int fail(store_conn *s, const PGresult *res, const char *what, dbcron_err *err)
{
	char msg[400];
	const char *text = res ? pq.PQresultErrorMessage(res) : NULL;
	if (!text || !*text)
		text = pq.PQerrorMessage(s->conn);
	scrub(s, text, msg, sizeof(msg));
	const char *st = res ? pq.PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	switch (pg_classify(st, pq.PQstatus(s->conn) == CONNECTION_BAD)) {
	case PG_ERR_RECONNECT:
		s->broken = true;
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s: %s", what,
				      s->masked, msg);
	case PG_ERR_BUSY:
		return dbcron_err_set(err, DBCRON_EBUSY, "%s: %s", what, msg);
	case PG_ERR_CONSTRAINT:
		return dbcron_err_set(err, DBCRON_ECONSTRAINT, "%s: %s", what, msg);
	case PG_ERR_OTHER:
		break;
	}
	return dbcron_err_set(err, DBCRON_EDB, "%s: %s", what, msg);
}

/*
 * Notices are dropped, but for a WARNING that comes with a statement that
 * commits: PostgreSQL reports a COMMIT whose wait for a synchronous
 * standby was cancelled (statement_timeout, a cancel, a shutdown) as a
 * success with the WARNING "canceling wait for synchronous replication
 * ... committed locally, but might not have been replicated".  After a
 * failover that commit may be gone, so it is no success: pg_exec turns it
 * into an unknown outcome.  The severity is read unlocalized, so a server
 * speaking another language is read the same.
 */
static void on_notice(void *arg, const PGresult *res)
{
	store_conn *s = arg;
	const char *sev = pq.PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	if (!s->commits || s->warned || !sev || strcmp(sev, "WARNING") != 0)
		return;
	s->warned = true;
	scrub(s, pq.PQresultErrorMessage(res), s->warning, sizeof(s->warning));
}

/* ---- the statement deadline ---- */

/* Wait for the socket (events) until the deadline (mono ms, 0: none):
 * 0 ready, 1 the deadline passed, -1 the socket failed. */
static int wait_socket(store_conn *s, short events, int64_t deadline)
{
	for (;;) {
		int ms = -1;
		if (deadline) {
			int64_t left = deadline - dbcron__mono_ms();
			if (left <= 0)
				return 1;
			ms = left > 60000 ? 60000 : (int)left;
		}
		struct pollfd pfd = {.fd = pq.PQsocket(s->conn), .events = events};
		if (pfd.fd < 0)
			return -1;
		int n = poll(&pfd, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/* The deadline passed: the session is given up, and whatever it was
 * doing (a COMMIT too) has an unknown outcome, as a lost reply has. */
static int overdue(store_conn *s, const char *what, dbcron_err *err)
{
	s->broken = true;
	return dbcron_err_set(err, DBCRON_ECONN,
			      "%s: no reply from %s within the statement deadline (%lld ms): "
			      "connection given up, outcome unknown",
			      what, s->masked, (long long)s->deadline_ms);
}

/*
 * The result of what was just sent (sent: what the PQsend* call returned),
 * waited for with poll() until the deadline, never inside libpq: a frozen
 * or unreachable server (its TCP connection still up) must not pin the db
 * thread, or the node never follows a failover.  As PQexec, the first
 * error wins over later results.  On success *out is the result (the
 * caller clears it).
 */
static int result_of(store_conn *s, int sent, const char *what, PGresult **out, dbcron_err *err)
{
	PGresult *keep = NULL;
	int w = 0, f, rc;
	*out = NULL;
	if (!sent)
		return fail(s, NULL, what, err);
	int64_t deadline = s->deadline_ms ? dbcron__mono_ms() + s->deadline_ms : 0;
	while ((f = pq.PQflush(s->conn)) == 1 &&
	       (w = wait_socket(s, POLLIN | POLLOUT, deadline)) == 0 && pq.PQconsumeInput(s->conn))
		;
	if (w > 0)
		return overdue(s, what, err);
	for (;;) {
		while (pq.PQstatus(s->conn) == CONNECTION_OK && pq.PQisBusy(s->conn)) {
			if ((w = wait_socket(s, POLLIN, deadline)) > 0) {
				pq.PQclear(keep);
				return overdue(s, what, err);
			}
			if (w < 0 || !pq.PQconsumeInput(s->conn))
				break;
		}
		/* a connection gone has no more to read: this does not wait */
		PGresult *r = pq.PQgetResult(s->conn);
		if (!r)
			break;
		ExecStatusType st = keep ? pq.PQresultStatus(keep) : PGRES_COMMAND_OK;
		if (keep && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
			pq.PQclear(r);
			continue;
		}
		pq.PQclear(keep);
		keep = r;
	}
	ExecStatusType st = keep ? pq.PQresultStatus(keep) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = fail(s, keep, what, err);
		pq.PQclear(keep);
		return rc;
	}
	*out = keep;
	return DBCRON_OK;
}

/* A statement without parameters (session settings, DDL, the schema
 * queries), under the deadline; *out as result_of, or NULL to drop it. */
static int cmd(store_conn *s, const char *text, const char *what, PGresult **out,
	       dbcron_err *err)
{
	PGresult *res = NULL;
	int rc = result_of(s, pq.PQsendQuery(s->conn, text), what, &res, err);
	if (out && !rc)
		*out = res;
	else
		pq.PQclear(res);
	return rc;
}

/* The node's session settings, on this connection (again after a reset). */
static int apply_tune(store_conn *s, dbcron_err *err)
{
	return cmd(s, s->tune, "setting session timeouts", NULL, err);
}

/*
 * lock_timeout a third of the lease: a row lock held by a frozen node
 * fails our statement (retried) instead of stalling the heartbeat;
 * idle_in_transaction_session_timeout one lease: the server ends a session
 * frozen inside a transaction and frees what it locked; statement_timeout
 * ten leases: a runaway statement cannot hold the db thread for good.  The
 * isolation level is pinned at connect (options).
 *
 * The client's own deadline on every statement is half a lease (at least
 * a second).  A node stops its at-least-once runs when its lease has gone
 * three quarters of a lease unrenewed; a server that does not answer for
 * half a lease (frozen, partitioned, powered off with the TCP connection
 * up) is given up then, so that the next operation reconnects, with a
 * multi-host URL finds the new primary, and can still renew the lease in
 * time when the failover is quick.  A full lease would always come too
 * late for that; much shorter, a loaded but healthy server would see its
 * slow statements cut and retried.
 */
static int pg_tune(store_conn *s, int64_t lease_ms, dbcron_err *err)
{
	int64_t lock = lease_ms / 3 > 100 ? lease_ms / 3 : 100;
	snprintf(s->tune, sizeof(s->tune),
		 "SET lock_timeout = %lld; SET idle_in_transaction_session_timeout = %lld; "
		 "SET statement_timeout = %lld",
		 (long long)lock, (long long)lease_ms, (long long)(lease_ms * 10));
	s->deadline_ms = lease_ms / 2 > 1000 ? lease_ms / 2 : 1000;
	return apply_tune(s, err);
}

/* A node's session on a server that cannot take its writes: a standby
 * (the old primary, demoted), or default_transaction_read_only on. */
static bool read_only(const store_conn *s)
{
	return s->tune[0] && pg_session_read_only(pq.PQparameterStatus(s->conn, "in_hot_standby"),
						  pq.PQparameterStatus(s->conn,
								       "default_transaction_read_only"));
}

/*
 * Before the first statement of an operation: reconnect when the connection
 * broke (also when the server said goodbye while we were idle, which
 * PQconsumeInput notices), was given up, or cannot write.  libpq connects
 * host by host of a multi-host URL, each within connect_timeout, and with
 * target_session_attrs=read-write passes over standbys.
 */
static int ready(store_conn *s, dbcron_err *err)
{
	/* An idle connection has nothing to read.  A server shutting down sends
	 * a FATAL message and closes: the first read takes the message, the
	 * second sees the end of the stream. */
	if (!s->broken && pq.PQstatus(s->conn) == CONNECTION_OK && pq.PQconsumeInput(s->conn) &&
	    (pq.PQisBusy(s->conn), pq.PQconsumeInput(s->conn)) &&
	    pq.PQstatus(s->conn) == CONNECTION_OK && !read_only(s))
		return DBCRON_OK;
	pq.PQreset(s->conn);
	s->broken = false;
	s->reconnects++;
	memset(s->prepared, 0, sizeof(s->prepared));
	if (pq.PQstatus(s->conn) != CONNECTION_OK) {
		char msg[400];
		scrub(s, pq.PQerrorMessage(s->conn), msg, sizeof(msg));
		return dbcron_err_set(err, DBCRON_ECONN, "cannot reach %s: %s", s->masked, msg);
	}
	int rc = s->tune[0] ? apply_tune(s, err) : DBCRON_OK;
	if (!rc && read_only(s)) {
		s->broken = true;
		rc = dbcron_err_set(err, DBCRON_ECONN,
				    "%s is read-only (a standby, or default_transaction_read_only "
				    "is on): no primary to write to; add the other hosts and "
				    "target_session_attrs=read-write to the URL",
				    s->masked);
	}
	return rc;
}

/* ---- statements ---- */

static void pg_reset(store_conn *s)
{
	pq.PQclear(s->res);
	s->res = NULL;
	s->row = -1;
	s->nrows = 0;
}

static bool tx_control(int id)
{
	return id == ST_BEGIN || id == ST_BEGIN_WRITE || id == ST_COMMIT || id == ST_ROLLBACK;
}

/* The parameters as libpq's texts in vals; how many, or -code. */
static int encode_params(store_conn *s, int id, const store_param *p, int np,
			 const char **vals, dbcron_err *err)
{
	int n = 0;
	for (int i = 0; i < np; i++) {
		int cols = p[i].t == SP_BATCH ? p[i].b->ncols : 1;
		if (n + cols > MAX_PARAMS)
			return -dbcron_err_set(err, DBCRON_EINTERNAL, "%s: too many parameters",
					       store_stmt_what(id));
		for (int c = 0; p[i].t == SP_BATCH && c < cols; c++, n++)
			if (!(vals[n] = array_text(&s->arrays[n], p[i].b, c)))
				return -dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
						       store_stmt_what(id));
		if (p[i].t == SP_BATCH)
			continue;
		if (p[i].t == SP_NULL) {
			vals[n] = NULL;
		} else if (p[i].t == SP_TEXT) {
			vals[n] = p[i].s;
		} else {
			snprintf(s->nums[n], sizeof(s->nums[n]), "%" PRId64, p[i].i);
			vals[n] = s->nums[n];
		}
		n++;
	}
	return n;
}

/* A statement that commits: COMMIT, or one outside a transaction block
 * (autocommit); a warning with its reply makes its outcome unknown. */
static int committed_or_unknown(store_conn *s, int id, PGresult *res, dbcron_err *err)
{
	if (!s->warned)
		return DBCRON_OK;
	pq.PQclear(res);
	s->broken = true;
	return dbcron_err_set(err, DBCRON_ECONN,
			      "%s: outcome unknown: %s answered with a warning (%s); it may be lost "
			      "in a failover",
			      store_stmt_what(id), s->masked, s->warning);
}

static int pg_exec(store_conn *s, int id, const store_param *p, int np, dbcron_err *err)
{
	const char *vals[MAX_PARAMS];
	char name[24];
	int n, rc;
	PGresult *res = NULL;

	pg_reset(s);
	if (id < 0 || id >= ST__COUNT)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "postgresql: statement %d", id);
	PGTransactionStatusType ts = pq.PQtransactionStatus(s->conn);
	if ((s->broken || ts == PQTRANS_IDLE || ts == PQTRANS_UNKNOWN) && (rc = ready(s, err)))
		return rc;
	if ((n = encode_params(s, id, p, np, vals, err)) < 0)
		return -n;
	const char *what = store_stmt_what(id);
	s->commits = id == ST_COMMIT ||
		     (!tx_control(id) && pq.PQtransactionStatus(s->conn) == PQTRANS_IDLE);
	s->warned = false;
	if (tx_control(id)) {
		rc = result_of(s, pq.PQsendQueryParams(s->conn, texts.text[id], 0, NULL, NULL, NULL,
						       NULL, 0),
			       what, &res, err);
	} else {
		snprintf(name, sizeof(name), "dbcron_%d", id);
		if (!s->prepared[id]) {
			if ((rc = result_of(s, pq.PQsendPrepare(s->conn, name, texts.text[id], 0, NULL),
					    what, &res, err)))
				goto out;
			pq.PQclear(res);
			s->prepared[id] = true;
		}
		rc = result_of(s, pq.PQsendQueryPrepared(s->conn, name, n, vals, NULL, NULL, 0), what,
			       &res, err);
	}
	if (!rc && s->commits)
		rc = committed_or_unknown(s, id, res, err);
	if (rc)
		goto out;
	s->res = res;
	s->row = -1;
	s->nrows = pq.PQntuples(res);
out:
	s->commits = false;
	return rc;
}

static int pg_next(store_conn *s, dbcron_err *err)
{
	(void)err;
	if (!s->res || s->row + 1 >= s->nrows)
		return 0;
	s->row++;
	return 1;
}

static bool pg_col_null(store_conn *s, int c)
{
	return pq.PQgetisnull(s->res, s->row, c);
}

static int64_t pg_col_i64(store_conn *s, int c)
{
	if (pq.PQgetisnull(s->res, s->row, c))
		return 0;
	const char *v = pq.PQgetvalue(s->res, s->row, c);
	if (v[0] == 't' || v[0] == 'f')
		return v[0] == 't';
	return strtoll(v, NULL, 10);
}

static const char *pg_col_text(store_conn *s, int c)
{
	return pq.PQgetisnull(s->res, s->row, c) ? NULL : pq.PQgetvalue(s->res, s->row, c);
}

static int64_t pg_changes(store_conn *s)
{
	return s->res ? strtoll(pq.PQcmdTuples(s->res), NULL, 10) : 0;
}

static bool pg_in_tx(store_conn *s)
{
	PGTransactionStatusType ts = pq.PQtransactionStatus(s->conn);
	return !s->broken && (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR);
}

static const char *pg_display(const store_conn *s) { return s->masked; }

static unsigned long pg_reconnects(const store_conn *s) { return s->reconnects; }

/* ---- open, close ---- */

/* A libpq key=value conninfo: "host=... dbname=..." (first word has '='). */
static bool is_conninfo(const char *url)
{
	const char *eq = strchr(url, '=');
	if (!eq || eq == url)
		return false;
	for (const char *p = url; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == ' ' || *p == '\t'))
			return false;
	return true;
}

static bool pg_accepts(const char *url)
{
	return strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0 ||
	       is_conninfo(url);
}

static void pg_close(store_conn *s)
{
	if (!s)
		return;
	pg_reset(s);
	pq.PQfinish(s->conn);
	for (size_t i = 0; i < sizeof(s->arrays) / sizeof(s->arrays[0]); i++)
		store_text_free(&s->arrays[i]);
	for (size_t i = 0; i < s->nsecrets; i++)
		dbcron__free(s->secrets[i]);
	dbcron__free(s);
}

static int pg_open(const char *url, unsigned flags, store_conn **out, dbcron_err *err)
{
	char *perr = NULL;
	int rc;

	*out = NULL;
	if ((rc = dbcron__dynlib_load(&pq_lib, err)))
		return rc;
	if ((rc = store__sql_texts(&texts, sql, array_types, err)))
		return rc;
	store_conn *s = dbcron__calloc(1, sizeof(*s));
	if (!s)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	s->row = -1;
	store_mask_url(url, s->masked, sizeof(s->masked));

	/* libpq ends a URI's user-info at the first '@' before any '/': an
	 * unencoded '@' or '/' in a password would send its tail to libpq as
	 * the host or the database, and libpq's messages quote those. */
	store_span sp[STORE_URL_SPANS_MAX];
	bool ambiguous = false;
	size_t nsp = store_url_secrets(url, sp, STORE_URL_SPANS_MAX, &ambiguous);
	if (ambiguous) {
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "PostgreSQL URL '%s': an '@' or '/' in the user name or password "
				    "must be percent-encoded (%%40, %%2F); as written, part of the "
				    "password would be read as the host or the database",
				    s->masked);
		goto out_close;
	}
	for (size_t i = 0; i < nsp; i++)
		if (!add_secret(s, url + sp[i].lo, sp[i].hi - sp[i].lo, false) ||
		    !add_secret(s, url + sp[i].lo, sp[i].hi - sp[i].lo, true))
			goto out_oom;

	PQconninfoOption *opts = pq.PQconninfoParse(url, &perr);
	if (!opts) {
		/* libpq may quote part of the string: show it only when there
		 * was nothing to mask. */
		bool plain = strcmp(s->masked, url) == 0;
		rc = dbcron_err_set(err, DBCRON_EINVAL, "invalid PostgreSQL connection string '%s'%s%s",
				    s->masked, plain && perr ? ": " : "", plain && perr ? perr : "");
		if (perr)
			pq.PQfreemem(perr);
		goto out_close;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val &&
		    !add_secret(s, o->val, strlen(o->val), false)) {
			pq.PQconninfoFree(opts);
			goto out_oom;
		}
	pq.PQconninfoFree(opts);

	/* Defaults first, then the user's string (it overrides them).  Custom
	 * plans: the batch statements join unnest() of a parameter array, and a
	 * generic plan, blind to the array's size and to how many runs a node
	 * holds, was seen to pick a nested loop over every claimed run for every
	 * element (a second per batch at 20,000 claimed runs).
	 * Failover (docs/cluster.md "Failover"): connect_timeout is per host,
	 * so a frozen or black-holed first host of a multi-host URL costs 5 s
	 * before libpq tries the next; keepalives find an idle connection to
	 * a server that vanished, and tcp_user_timeout one whose data is never
	 * acknowledged, instead of ~15 minutes of TCP retransmission (the
	 * statement deadline, pg_tune, bounds each statement of a node). */
	const char *const kw[] = {"connect_timeout", "client_encoding", "options",
				  "keepalives", "keepalives_idle", "keepalives_interval",
				  "keepalives_count", "tcp_user_timeout", "dbname",
				  "fallback_application_name", NULL};
	const char *const vals[] = {"5", "UTF8",
				    "-c plan_cache_mode=force_custom_plan "
				    "-c default_transaction_isolation=read\\ committed",
				    "1", "5", "2", "3", "10000", url, "dbcron", NULL};
	s->conn = pq.PQconnectdbParams(kw, vals, 1);
	if (!s->conn)
		goto out_oom;
	/* the password libpq used, also from PGPASSWORD or a password file */
	const char *used = pq.PQpass(s->conn);
	if (used && *used && !add_secret(s, used, strlen(used), false))
		goto out_oom;
	if (pq.PQstatus(s->conn) != CONNECTION_OK) {
		char msg[400];
		scrub(s, pq.PQerrorMessage(s->conn), msg, sizeof(msg));
		rc = dbcron_err_set(err, DBCRON_ECONN, "cannot connect to %s: %s", s->masked, msg);
		goto out_close;
	}
	pq.PQsetNoticeReceiver(s->conn, on_notice, s);
	*out = s;
	return DBCRON_OK;
out_oom:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
out_close:
	pg_close(s);
	return rc;
}

/* ---- schema ---- */

static int pg_schema_read(store_conn *s, int *version, dbcron_err *err)
{
	PGresult *res = NULL;
	int rc;
	*version = 0;
	pg_reset(s);
	PGTransactionStatusType ts = pq.PQtransactionStatus(s->conn);
	if (s->broken || ts == PQTRANS_IDLE || ts == PQTRANS_UNKNOWN)
		if ((rc = ready(s, err)))
			return rc;
	if ((rc = cmd(s, "SELECT to_regclass('schema_version') IS NOT NULL", "checking the schema",
		      &res, err)))
		return rc;
	bool exists = pq.PQgetvalue(res, 0, 0)[0] == 't';
	pq.PQclear(res);
	if (!exists)
		return DBCRON_OK;
	if ((rc = cmd(s, "SELECT coalesce(max(version), 0) FROM schema_version",
		      "reading the schema version", &res, err)))
		return rc;
	*version = (int)strtol(pq.PQgetvalue(res, 0, 0), NULL, 10);
	pq.PQclear(res);
	return DBCRON_OK;
}

/*
 * All pending migrations in one transaction under an advisory lock, so two
 * `dbcron init` at once apply each migration exactly once: the second
 * waits, then finds the work done.
 */
static int pg_migrate(store_conn *s, int *from, dbcron_err *err)
{
	int cur = 0, rc;
	char text[256];

	pg_reset(s);
	if ((rc = ready(s, err)) || (rc = cmd(s, "BEGIN", "starting the migration", NULL, err)))
		return rc;
	if ((rc = cmd(s, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")",
		      "migrate: waiting for the schema lock", NULL, err)) ||
	    (rc = cmd(s, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
			 " applied_ms BIGINT NOT NULL)",
		      "migrate: creating schema_version", NULL, err)) ||
	    (rc = pg_schema_read(s, &cur, err)))
		goto out_rollback;
	*from = cur;
	if (cur > DBCRON_PG_SCHEMA_VERSION) {
		rc = store_schema_newer(err, s->masked, cur, DBCRON_PG_SCHEMA_VERSION);
		goto out_rollback;
	}
	for (size_t m = 0; m < sizeof(migrations) / sizeof(migrations[0]); m++) {
		if (migrations[m].version <= cur)
			continue;
		for (const char *const *q = migrations[m].stmts; *q; q++)
			if ((rc = cmd(s, *q, "migrate", NULL, err)))
				goto out_rollback;
		snprintf(text, sizeof(text),
			 "INSERT INTO schema_version (version, applied_ms) VALUES (%d, " DBNOW ")",
			 migrations[m].version);
		if ((rc = cmd(s, text, "migrate: recording the version", NULL, err)))
			goto out_rollback;
	}
	if ((rc = cmd(s, "COMMIT", "committing the migration", NULL, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	if (pg_in_tx(s))
		cmd(s, "ROLLBACK", "rolling the migration back", NULL, NULL);
	return rc;
}

const store_dialect store_pg_dialect = {
	.version = STORE_DIALECT_VERSION,
	.name = "postgresql",
	.caps = STORE_CAP_RETURNING | STORE_CAP_SKIP_LOCKED | STORE_CAP_MULTI_WRITER |
		STORE_CAP_DML_CTE,
	.schema_version = DBCRON_PG_SCHEMA_VERSION,
	.sql = sql,
	.accepts = pg_accepts,
	.open = pg_open,
	.close = pg_close,
	.display = pg_display,
	.exec = pg_exec,
	.next = pg_next,
	.col_null = pg_col_null,
	.col_i64 = pg_col_i64,
	.col_text = pg_col_text,
	.changes = pg_changes,
	.reset = pg_reset,
	.in_tx = pg_in_tx,
	.schema_read = pg_schema_read,
	.migrate = pg_migrate,
	.tune = pg_tune,
	.reconnects = pg_reconnects,
};
