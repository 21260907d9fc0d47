/*
 * The SQL executor's PostgreSQL half (sql_int.h): one connection per run,
 * the job's timeout as the session's statement_timeout, the statement sent
 * with its values as text parameters (one statement: the extended
 * protocol), and the wait for its result in SQL_POLL_MS steps, so that a
 * cancel or the deadline sends PQcancel (the server stops the statement;
 * the run does not wait for it to give up on its own).
 *
 * libpq is loaded on first use (core/dynlib.h), apart from the store's
 * table: this half calls functions the store never needs (PQcancel).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/dynlib.h"
#include "core/timeutil.h"
#include "exec/sql_int.h"

#define SQL_PQ_FUNCS(X)                                                                \
	X(PQclear) X(PQcmdTuples) X(PQconnectdbParams) X(PQconsumeInput)               \
	X(PQerrorMessage) X(PQfinish) X(PQfname) X(PQfreeCancel)             \
	X(PQgetCancel) X(PQcancel) X(PQgetisnull) X(PQgetlength) X(PQgetResult)        \
	X(PQgetvalue) X(PQisBusy) X(PQnfields) X(PQntuples) X(PQresultErrorField)      \
	X(PQresultErrorMessage) X(PQresultStatus) X(PQsendQueryParams) X(PQsocket)     \
	X(PQstatus)
typedef struct sql_libpq {
	SQL_PQ_FUNCS(DBCRON_DYNLIB_MEMBER)
} sql_libpq;
static sql_libpq pq;
#define SQL_PQ_SYM(f) DBCRON_DYNLIB_SYM(sql_libpq, f)
static const dbcron_dynsym pq_syms[] = {SQL_PQ_FUNCS(SQL_PQ_SYM)};
static dbcron_dynlib pq_lib = {.soname = "libpq.so.5", .package = "libpq5",
			       .what = "PostgreSQL", .syms = pq_syms,
			       .nsyms = sizeof(pq_syms) / sizeof(pq_syms[0]), .api = &pq};

/* After a cancel was sent, how long the run waits for the server to end
 * the statement before it drops the connection (the server then ends the
 * session when it notices). */
#define CANCEL_WAIT_MS 5000

/* libpq's text without its trailing newline. */
static void pg_fail(sql_run *r, sql_end end, const char *what, const char *msg)
{
	size_t n = msg ? strlen(msg) : 0;
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		n--;
	sql__fail(r, end, "%s%.*s", what, (int)n, msg ? msg : "");
}

static PGconn *pg_connect(sql_run *r)
{
	char cto[16];
	snprintf(cto, sizeof(cto), "%d", sql__connect_s(r));
	/* the URL's own settings win over these (they come after) */
	const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
	const char *const vals[] = {cto, "dbcron sql job", r->url, NULL};
	PGconn *c = pq.PQconnectdbParams(keys, vals, 1);
	if (!c) {
		sql__fail(r, SQL_END_ERROR, "out of memory connecting");
		return NULL;
	}
	if (pq.PQstatus(c) != CONNECTION_OK) {
		pg_fail(r, SQL_END_ERROR, "cannot connect: ", pq.PQerrorMessage(c));
		pq.PQfinish(c);
		return NULL;
	}
	return c;
}

/* Wait until the result is in, sending a cancel when asked to stop.  0:
 * the result can be read; -1: given up (the reason set). */
static int pg_wait(sql_run *r, PGconn *c)
{
	int64_t cancel_sent = 0;
	while (pq.PQisBusy(c)) {
		sql_end stop = sql__should_stop(r);
		if (stop != SQL_END_OK && !cancel_sent) {
			char buf[256] = "";
			PGcancel *cn = pq.PQgetCancel(c);
			if (!cn || !pq.PQcancel(cn, buf, sizeof(buf)))
				sql__fail(r, stop, "the cancel request failed: %s", buf);
			else
				sql__fail(r, stop, "%s", stop == SQL_END_CANCEL ? "cancelled" : "timed out");
			pq.PQfreeCancel(cn);
			cancel_sent = dbcron__mono_ms();
		}
		if (cancel_sent && dbcron__mono_ms() - cancel_sent > CANCEL_WAIT_MS)
			return -1;
		struct pollfd p = {.fd = pq.PQsocket(c), .events = POLLIN};
		if (poll(&p, 1, SQL_POLL_MS) > 0 && !pq.PQconsumeInput(c)) {
			pg_fail(r, SQL_END_ERROR, "", pq.PQerrorMessage(c));
			return -1;
		}
	}
	return 0;
}

/* The server's own timeout (SQL_SERVER_GRACE_MS), so that the statement
 * ends where it runs even when this node is gone.  Sent and awaited like
 * the statement: a server that stops answering never holds the run past
 * a cancel.  The number is ours, not the job's text. */
static int pg_set_timeout(sql_run *r, PGconn *c)
{
	char set[64];
	int ok = 1;
	if (r->timeout_ms <= 0)
		return 0;
	snprintf(set, sizeof(set), "SET statement_timeout = %lld",
		 (long long)(r->timeout_ms + SQL_SERVER_GRACE_MS));
	if (!pq.PQsendQueryParams(c, set, 0, NULL, NULL, NULL, NULL, 0) || pg_wait(r, c)) {
		pg_fail(r, SQL_END_ERROR, "setting statement_timeout: ", pq.PQerrorMessage(c));
		return -1;
	}
	PGresult *res;
	while ((res = pq.PQgetResult(c))) {
		if (pq.PQresultStatus(res) != PGRES_COMMAND_OK) {
			pg_fail(r, SQL_END_ERROR, "setting statement_timeout: ",
				pq.PQresultErrorMessage(res));
			ok = 0;
		}
		pq.PQclear(res);
	}
	return ok ? 0 : -1;
}

static void pg_rows(sql_run *r, const PGresult *res)
{
	int nf = pq.PQnfields(res), nt = pq.PQntuples(res);
	for (int c = 0; c < nf; c++) {
		const char *nm = pq.PQfname(res, c);
		sql__out_text(r, c ? "\t" : "");
		sql__out_cell(r, nm, strlen(nm));
	}
	sql__out_text(r, "\n");
	for (int t = 0; t < nt && t < SQL_ROWS_SHOWN; t++) {
		for (int c = 0; c < nf; c++) {
			sql__out_text(r, c ? "\t" : "");
			if (pq.PQgetisnull(res, t, c))
				sql__out_text(r, "NULL");
			else
				sql__out_cell(r, pq.PQgetvalue(res, t, c),
					      (size_t)pq.PQgetlength(res, t, c));
		}
		sql__out_text(r, "\n");
	}
	sql__out_rows_end(r, (uint64_t)nt);
}

/* One result of the statement: rows, a count, or why it failed. */
static void pg_result(sql_run *r, PGresult *res)
{
	const char *state;
	switch (pq.PQresultStatus(res)) {
	case PGRES_TUPLES_OK:
		pg_rows(r, res);
		break;
	case PGRES_COMMAND_OK: {
		const char *n = pq.PQcmdTuples(res);
		if (n && *n)
			sql__out_affected(r, strtoull(n, NULL, 10));
		else
			sql__out_text(r, "done\n");
		break;
	}
	default:
		/* 57014: the server's statement_timeout, unless we cancelled
		 * (then the reason is already set and kept) */
		state = pq.PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (state && strcmp(state, "57014") == 0 && r->timeout_ms > 0)
			sql__fail(r, SQL_END_TIMEOUT, "statement_timeout");
		pg_fail(r, SQL_END_ERROR, "", pq.PQresultErrorMessage(res));
	}
}

void sql__run_pg(sql_run *r)
{
	dbcron_err err = {0};
	PGconn *c = NULL;
	PGresult *res;

	if (dbcron__dynlib_load(&pq_lib, &err)) {
		sql__fail(r, SQL_END_ERROR, "%s", err.msg);
		return;
	}
	if (!(c = pg_connect(r)) || pg_set_timeout(r, c))
		goto out_finish;
	if (!pq.PQsendQueryParams(c, r->text, r->nvals, NULL, r->vals, NULL, NULL, 0)) {
		pg_fail(r, SQL_END_ERROR, "", pq.PQerrorMessage(c));
		goto out_finish;
	}
	if (pg_wait(r, c))
		goto out_finish;
	bool first = true;
	while ((res = pq.PQgetResult(c))) {
		ExecStatusType st = pq.PQresultStatus(res);
		if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
			/* it would wait for data from us for ever: the connection
			 * is dropped instead (PQfinish) */
			sql__fail(r, SQL_END_ERROR, "COPY to or from the client is not supported "
				  "(COPY ... TO/FROM a file on the server is)");
			pq.PQclear(res);
			break;
		}
		if (first)
			pg_result(r, res);
		first = false;
		pq.PQclear(res);
	}
out_finish:
	if (c)
		pq.PQfinish(c);
}
