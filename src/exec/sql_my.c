/*
 * The SQL executor's MariaDB half (sql_int.h): one connection per run,
 * the job's timeout as the session's max_statement_time, the statement
 * prepared with its values bound as strings, and its execution and every
 * row fetched through the connector's non-blocking calls, in SQL_POLL_MS
 * steps: a cancel or the deadline sends KILL QUERY on a second
 * connection, and the statement ends with the server's "interrupted".
 * (A SELECT's rows are computed as they are fetched, so the fetch waits
 * the same way as the execution.)
 *
 * The URL is read by the MariaDB store's own parser (store/mysql/
 * hosts.c: hosts tried in order, MYSQL_PWD); libmariadb is loaded on
 * first use with the calls this half needs.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <mysql.h>

#include "core/alloc.h"
#include "core/dynlib.h"
#include "core/timeutil.h"
#include "exec/sql_int.h"
#include "store/mysql/mysql_int.h"
#include "store/store.h"

#define SQL_MY_FUNCS(X)                                                                    \
	X(mysql_close) X(mysql_errno) X(mysql_error) X(mysql_fetch_fields)                 \
	X(mysql_free_result) X(mysql_get_socket) X(mysql_get_timeout_value_ms)             \
	X(mysql_init) X(mysql_num_fields) X(mysql_options) X(mysql_real_connect)           \
	X(mysql_real_query) X(mysql_real_query_cont) X(mysql_real_query_start)             \
	X(mysql_stmt_affected_rows) X(mysql_stmt_bind_param)                               \
	X(mysql_stmt_bind_result) X(mysql_stmt_close) X(mysql_stmt_errno)                  \
	X(mysql_stmt_error) X(mysql_stmt_execute_cont) X(mysql_stmt_execute_start)         \
	X(mysql_stmt_fetch_cont) X(mysql_stmt_fetch_start) X(mysql_stmt_field_count)       \
	X(mysql_stmt_init) X(mysql_stmt_param_count) X(mysql_stmt_prepare_cont)            \
	X(mysql_stmt_prepare_start)                                                        \
	X(mysql_stmt_result_metadata) X(mysql_thread_id)
typedef struct sql_libmariadb {
	SQL_MY_FUNCS(DBCRON_DYNLIB_MEMBER)
} sql_libmariadb;
static sql_libmariadb my;
#define SQL_MY_SYM(f) DBCRON_DYNLIB_SYM(sql_libmariadb, f)
static const dbcron_dynsym my_syms[] = {SQL_MY_FUNCS(SQL_MY_SYM)};
static dbcron_dynlib my_lib = {.soname = "libmariadb.so.3", .package = "libmariadb3",
			       .what = "MariaDB", .syms = my_syms,
			       .nsyms = sizeof(my_syms) / sizeof(my_syms[0]), .api = &my};

/* After KILL QUERY, how long the run waits for the statement to end
 * before it shuts its socket (the pending call then fails at once). */
#define CANCEL_WAIT_MS 5000

/* ER_QUERY_INTERRUPTED, ER_STATEMENT_TIMEOUT (max_statement_time) */
#define MY_ER_INTERRUPTED 1317
#define MY_ER_STATEMENT_TIMEOUT 1969

typedef struct my_run {
	sql_run *r;
	store_conn u; /* what the URL says: hosts, user, password, database */
	MYSQL *db;
	MYSQL_STMT *st;
	int64_t killed; /* monotonic ms of the KILL QUERY, 0: none */
} my_run;

/* A session on the first of the URL's hosts that answers. */
static MYSQL *my_connect(my_run *m, bool nonblock, char *why, size_t len)
{
	unsigned to = (unsigned)sql__connect_s(m->r), no_local = 0;
	for (int i = 0; i < m->u.nhosts; i++) {
		MYSQL *db = my.mysql_init(NULL);
		if (!db) {
			snprintf(why, len, "out of memory");
			return NULL;
		}
		my.mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &to);
		my.mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
		my.mysql_options(db, MYSQL_READ_DEFAULT_GROUP, NULL);
		/* LOAD DATA LOCAL would let the server ask for files of the
		 * node's host */
		my.mysql_options(db, MYSQL_OPT_LOCAL_INFILE, &no_local);
		if (nonblock)
			my.mysql_options(db, MYSQL_OPT_NONBLOCK, 0);
		const my_host *h = &m->u.hosts[i];
		if (my.mysql_real_connect(db, h->name, m->u.user, m->u.pass, m->u.dbname, h->port,
					  m->u.socket, 0))
			return db;
		snprintf(why, len, "cannot connect: %s", my.mysql_error(db));
		my.mysql_close(db);
	}
	return NULL;
}

/* Stop the running statement: KILL QUERY on a second session (the first
 * is busy).  Whether it worked shows in how the statement ends. */
static void my_kill(my_run *m, sql_end stop)
{
	char why[300] = "", kill[64];
	MYSQL *k = my_connect(m, false, why, sizeof(why));
	snprintf(kill, sizeof(kill), "KILL QUERY %lu", my.mysql_thread_id(m->db));
	if (k && my.mysql_real_query(k, kill, strlen(kill)) != 0)
		snprintf(why, sizeof(why), "%s", my.mysql_error(k));
	if (why[0])
		sql__fail(m->r, stop, "KILL QUERY failed: %s", why);
	else
		sql__fail(m->r, stop, "%s", stop == SQL_END_CANCEL ? "cancelled" : "timed out");
	if (k)
		my.mysql_close(k);
	m->killed = dbcron__mono_ms();
}

/* The _cont half of each non-blocking call this file makes. */
typedef int (*my_cont_fn)(my_run *m, int *ret, int status);
static int cont_query(my_run *m, int *ret, int status)
{
	return my.mysql_real_query_cont(ret, m->db, status);
}
static int cont_prepare(my_run *m, int *ret, int status)
{
	return my.mysql_stmt_prepare_cont(ret, m->st, status);
}
static int cont_execute(my_run *m, int *ret, int status)
{
	return my.mysql_stmt_execute_cont(ret, m->st, status);
}
static int cont_fetch(my_run *m, int *ret, int status)
{
	return my.mysql_stmt_fetch_cont(ret, m->st, status);
}

/* Drive one non-blocking call to its end (status from its _start), with
 * a look at cancel and the deadline every SQL_POLL_MS.  Its result in
 * *ret.  Every call after the connect goes this way, so that no step
 * waits on a server that stopped answering past a cancel. */
static void my_drive(my_run *m, int status, my_cont_fn cont, int *ret)
{
	int64_t since = dbcron__mono_ms();
	while (status) {
		sql_end stop = sql__should_stop(m->r);
		if (stop != SQL_END_OK && !m->killed)
			my_kill(m, stop);
		int fd = (int)my.mysql_get_socket(m->db);
		if (m->killed && dbcron__mono_ms() - m->killed > CANCEL_WAIT_MS)
			shutdown(fd, SHUT_RDWR); /* the call fails now */
		struct pollfd p = {.fd = fd};
		p.events = (short)((status & MYSQL_WAIT_READ ? POLLIN : 0) |
				   (status & MYSQL_WAIT_WRITE ? POLLOUT : 0) |
				   (status & MYSQL_WAIT_EXCEPT ? POLLPRI : 0));
		int ev = 0;
		if (poll(&p, 1, SQL_POLL_MS) > 0) {
			ev |= p.revents & (POLLIN | POLLERR | POLLHUP) ? MYSQL_WAIT_READ : 0;
			ev |= p.revents & POLLOUT ? MYSQL_WAIT_WRITE : 0;
			ev |= p.revents & POLLPRI ? MYSQL_WAIT_EXCEPT : 0;
		} else if ((status & MYSQL_WAIT_TIMEOUT) &&
			   dbcron__mono_ms() - since >= my.mysql_get_timeout_value_ms(m->db)) {
			ev = MYSQL_WAIT_TIMEOUT;
		}
		if (!ev)
			continue;
		status = cont(m, ret, ev);
		since = dbcron__mono_ms();
	}
}

/* Why the statement failed: the server's timeout, our own stop (already
 * the reason), or its error. */
static void my_stmt_fail(my_run *m)
{
	unsigned e = my.mysql_stmt_errno(m->st);
	if (e == MY_ER_STATEMENT_TIMEOUT)
		sql__fail(m->r, SQL_END_TIMEOUT, "max_statement_time");
	sql__fail(m->r, SQL_END_ERROR, "%s", my.mysql_stmt_error(m->st));
}

static int my_fetch(my_run *m)
{
	int ret = 1;
	my_drive(m, my.mysql_stmt_fetch_start(&ret, m->st), cont_fetch, &ret);
	return ret;
}

/* The rows, each cell bound as a string of at most SQL_CELL_MAX bytes. */
static void my_rows(my_run *m, unsigned nf)
{
	sql_run *r = m->r;
	MYSQL_RES *meta = my.mysql_stmt_result_metadata(m->st);
	MYSQL_BIND *b = dbcron__calloc(nf, sizeof(*b));
	char *cells = dbcron__malloc((size_t)nf * SQL_CELL_MAX);
	unsigned long *lens = dbcron__calloc(nf, sizeof(*lens));
	my_bool *nulls = dbcron__calloc(nf, sizeof(*nulls));
	uint64_t rows = 0;
	int rc;

	if (!meta || !b || !cells || !lens || !nulls) {
		sql__fail(r, SQL_END_ERROR, "out of memory reading the result");
		goto out_free;
	}
	MYSQL_FIELD *f = my.mysql_fetch_fields(meta);
	for (unsigned c = 0; c < nf; c++) {
		sql__out_text(r, c ? "\t" : "");
		sql__out_cell(r, f[c].name, strlen(f[c].name));
		b[c].buffer_type = MYSQL_TYPE_STRING;
		b[c].buffer = cells + (size_t)c * SQL_CELL_MAX;
		b[c].buffer_length = SQL_CELL_MAX;
		b[c].length = &lens[c];
		b[c].is_null = &nulls[c];
	}
	sql__out_text(r, "\n");
	my.mysql_stmt_bind_result(m->st, b);
	while ((rc = my_fetch(m)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
		if (++rows > SQL_ROWS_SHOWN)
			continue;
		for (unsigned c = 0; c < nf; c++) {
			sql__out_text(r, c ? "\t" : "");
			if (nulls[c])
				sql__out_text(r, "NULL");
			else /* a longer cell is cut by out_cell, reading the buffer only */
				sql__out_cell(r, b[c].buffer, lens[c]);
		}
		sql__out_text(r, "\n");
	}
	if (rc == MYSQL_NO_DATA)
		sql__out_rows_end(r, rows);
	else
		my_stmt_fail(m);
out_free:
	if (meta)
		my.mysql_free_result(meta);
	dbcron__free(b);
	dbcron__free(cells);
	dbcron__free(lens);
	dbcron__free(nulls);
}

/* The server's own timeout (SQL_SERVER_GRACE_MS; MariaDB: MySQL has none for every
 * statement, so a refusal leaves the client's deadline alone). */
static void my_set_timeout(my_run *m)
{
	char set[80];
	if (m->r->timeout_ms <= 0)
		return;
	int64_t ms = m->r->timeout_ms + SQL_SERVER_GRACE_MS;
	int ret = 0;
	snprintf(set, sizeof(set), "SET SESSION max_statement_time = %lld.%03lld",
		 (long long)(ms / 1000), (long long)(ms % 1000));
	my_drive(m, my.mysql_real_query_start(&ret, m->db, set, strlen(set)), cont_query, &ret);
}

static void my_execute(my_run *m)
{
	sql_run *r = m->r;
	MYSQL_BIND b[SQL_MAX_VALUES];
	unsigned long lens[SQL_MAX_VALUES];
	int ret = 1;

	if (!(m->st = my.mysql_stmt_init(m->db))) {
		sql__fail(r, SQL_END_ERROR, "out of memory");
		return;
	}
	my_drive(m, my.mysql_stmt_prepare_start(&ret, m->st, r->text, strlen(r->text)),
		 cont_prepare, &ret);
	if (ret) {
		my_stmt_fail(m);
		return;
	}
	if (my.mysql_stmt_param_count(m->st) != (unsigned long)r->nvals) {
		sql__fail(r, SQL_END_ERROR, "the statement has %lu parameter markers, %d placeholders "
			  "(write ? only as ${param.KEY})",
			  my.mysql_stmt_param_count(m->st), r->nvals);
		return;
	}
	memset(b, 0, sizeof(b));
	for (int i = 0; i < r->nvals; i++) {
		lens[i] = strlen(r->vals[i]);
		b[i].buffer_type = MYSQL_TYPE_STRING;
		b[i].buffer = (void *)r->vals[i];
		b[i].buffer_length = lens[i];
		b[i].length = &lens[i];
	}
	if (r->nvals && my.mysql_stmt_bind_param(m->st, b)) {
		my_stmt_fail(m);
		return;
	}
	my_drive(m, my.mysql_stmt_execute_start(&ret, m->st), cont_execute, &ret);
	if (ret) {
		my_stmt_fail(m);
		return;
	}
	unsigned nf = my.mysql_stmt_field_count(m->st);
	if (nf)
		my_rows(m, nf);
	else
		sql__out_affected(r, (uint64_t)my.mysql_stmt_affected_rows(m->st));
}

void sql__run_my(sql_run *r)
{
	dbcron_err err = {0};
	my_run m = {.r = r};
	char why[300];

	if (dbcron__dynlib_load(&my_lib, &err)) {
		sql__fail(r, SQL_END_ERROR, "%s", err.msg);
		return;
	}
	snprintf(m.u.masked, sizeof(m.u.masked), "%s", r->shown);
	if (my__parse_url(&m.u, r->url, &err)) {
		sql__fail(r, SQL_END_ERROR, "%s", err.msg[0] ? err.msg : "out of memory");
		goto out_free;
	}
	if (!(m.db = my_connect(&m, true, why, sizeof(why)))) {
		sql__fail(r, SQL_END_ERROR, "%s", why);
		goto out_free;
	}
	my_set_timeout(&m);
	my_execute(&m);
out_free:
	if (m.st)
		my.mysql_stmt_close(m.st);
	if (m.db)
		my.mysql_close(m.db);
	my__free_url(&m.u);
}
