/*
 * Private to the SQL executor (sql.c, sql_pg.c, sql_my.c): one run's state
 * as the dialect halves see it.  sql.c resolves the database, turns the
 * statement's ${param.KEY} placeholders into the dialect's markers and
 * values, and judges the end; a dialect half connects, sends the
 * statement with its values bound, watches cancel and the deadline while
 * it runs, and writes the rows or the count into the output.
 */
#ifndef DBCRON_EXEC_SQL_INT_H
#define DBCRON_EXEC_SQL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/exec.h"

#define SQL_ROWS_SHOWN 20   /* rows of a result written to the output */
#define SQL_CELL_MAX 256    /* bytes of one cell written, the rest cut */
#define SQL_POLL_MS 50      /* how often a running statement looks at cancel */
#define SQL_MAX_VALUES 64   /* placeholders in one statement */
#define SQL_CONNECT_MAX_S 10 /* a connect gives up after this (or the timeout) */
/* The server's own timeout is the job's plus this: the run's deadline
 * (a cancel on the server) normally comes first and is the one reported;
 * the server's stops the statement when the node is gone.  (MariaDB's
 * SLEEP() stopped by max_statement_time returns a row, not an error.) */
#define SQL_SERVER_GRACE_MS 500

typedef enum sql_end {
	SQL_END_OK,
	SQL_END_ERROR,   /* the statement or the connection failed: why */
	SQL_END_TIMEOUT, /* the deadline passed, or the server's own timeout */
	SQL_END_CANCEL,  /* req->cancel */
} sql_end;

typedef struct sql_run {
	const exec_req *req;
	const char *url;      /* the database it runs on (may hold a password) */
	char shown[256];      /* url masked, for messages */
	char *text;           /* the statement with the dialect's markers */
	const char *vals[SQL_MAX_VALUES]; /* borrowed from req->params */
	int nvals;
	int64_t deadline_ms;  /* monotonic; 0: none */
	int64_t timeout_ms;   /* the job's; 0: none */
	/* the output so far: a header, rows, a count */
	char *out;
	size_t out_len, out_cap;
	bool out_oom;
	sql_end end;
	char why[512];
} sql_run;

/* Why to stop now: SQL_END_CANCEL, SQL_END_TIMEOUT, or SQL_END_OK (go on). */
sql_end sql__should_stop(const sql_run *r);
/* The end and its message (printf-style); the first one set is kept, so a
 * cancel seen before an error stays the reason. */
void sql__fail(sql_run *r, sql_end end, const char *fmt, ...) DBCRON_PRINTF(3, 4);
/* Output: append n bytes of s (a cell: tabs and newlines become spaces,
 * cut at SQL_CELL_MAX); a literal text. */
void sql__out_cell(sql_run *r, const char *s, size_t n);
void sql__out_text(sql_run *r, const char *s);
/* "N rows" after the shown rows ("(first 20 of 31 rows)"), or the count
 * of a statement without rows. */
void sql__out_rows_end(sql_run *r, uint64_t rows);
void sql__out_affected(sql_run *r, uint64_t n);
/* Seconds left for a connect: the deadline's rest, at most
 * SQL_CONNECT_MAX_S, at least 1. */
int sql__connect_s(const sql_run *r);

/* The dialect halves: run r->text on r->url, filling r->end/why/out. */
void sql__run_pg(sql_run *r);
void sql__run_my(sql_run *r);

#endif
