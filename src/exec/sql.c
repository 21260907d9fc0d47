/*
 * The SQL executor (issue 27 item 2): a job's statement on a connection of
 * its own, never the node's scheduling connection.
 *
 * Owns, for one run, the connection it opens (closed when the run ends:
 * a SQL job's run costs one connect, which is small next to a process per
 * run) and the texts it builds.  The database is the one the job's
 * sql_db_file names (a file on the node's host holding a URL, so that a
 * password stays out of the job row), else the scheduler's own
 * (exec_req.db_url).  The run occupies its pool worker; the claim loop
 * never waits on it (invariant 6).
 *
 * Parameters: each ${param.KEY} of the statement is a bound parameter
 * (PostgreSQL $n, SQLite ?n, MariaDB ?), never text spliced into the
 * statement.  A placeholder must name a key the job declares (--params),
 * so an unknown key is refused when the job is written and again when a
 * trigger gives one; a declared key with no value and no default fails
 * the run.  A placeholder inside a quoted string is refused: it would be
 * text, not a parameter.
 *
 * Stopping: the job's timeout is the server's own (PostgreSQL
 * statement_timeout, MariaDB max_statement_time) and the client's
 * deadline; a cancel or the deadline stops the statement on the server
 * (PQcancel, KILL QUERY on a second connection, SQLite's progress
 * handler).  The run watches both at least every SQL_POLL_MS.
 *
 * This file: the executor table entry, validation, placeholders, the
 * output, and the SQLite half; sql_pg.c and sql_my.c are the servers'.
 */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/text.h"
#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/sql_int.h"
#include "model/params.h"
#include "store/dialect.h"
#include "store/store.h"

typedef enum sql_kind { SQL_KIND_NONE, SQL_KIND_SQLITE, SQL_KIND_PG, SQL_KIND_MY } sql_kind;

/* The kind of database a URL names, by the rules the stores accept. */
static sql_kind kind_of(const char *url)
{
	if (strncmp(url, "sqlite:", 7) == 0)
		return url[7] ? SQL_KIND_SQLITE : SQL_KIND_NONE;
	if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0)
		return SQL_KIND_PG;
	if (strncmp(url, "mysql://", 8) == 0 || strncmp(url, "mariadb://", 10) == 0)
		return SQL_KIND_MY;
	/* a libpq key=value conninfo: the first word holds '=' */
	size_t w = strspn(url, "abcdefghijklmnopqrstuvwxyz_");
	return w && url[w] == '=' ? SQL_KIND_PG : SQL_KIND_NONE;
}

/* ---- placeholders ---- */

#define LEAD "${param."

/* A placeholder at s: 1 and its key [*k, *k + *kl) and length *len; 0
 * when s is not one; -1 when it starts like one and is not. */
static int placeholder_at(const char *s, const char **k, size_t *kl, size_t *len)
{
	if (strncmp(s, LEAD, sizeof(LEAD) - 1) != 0)
		return 0;
	const char *a = s + sizeof(LEAD) - 1, *b = strchr(a, '}');
	if (!b || !model_param_key_ok(a, (size_t)(b - a)))
		return -1;
	*k = a;
	*kl = (size_t)(b - a);
	*len = (size_t)(b + 1 - s);
	return 1;
}

typedef int (*placeholder_fn)(void *ctx, const char *key, size_t klen, size_t at, size_t len);

/* The end of a comment at s ("-- " to the line's end, slash-star to
 * star-slash), or s when none starts there. */
static const char *comment_end(const char *s)
{
	if (s[0] == '-' && s[1] == '-')
		return s + strcspn(s, "\n");
	if (s[0] == '/' && s[1] == '*') {
		const char *e = strstr(s + 2, "*/");
		return e ? e + 2 : s + strlen(s);
	}
	return s;
}

/* fn for each placeholder of sql, in order.  Quoted strings and quoted
 * names are skipped ('' and "" inside them toggle twice; a backslash
 * escape is not understood), and so are comments: a placeholder there is
 * left as text. */
static int each_placeholder(const char *job, const char *sql, placeholder_fn fn, void *ctx,
			    dbcron_err *err)
{
	char quote = 0;
	for (size_t i = 0; sql[i]; i++) {
		const char *k = NULL;
		size_t kl = 0, len = 1;
		int f = sql[i] == '$' ? placeholder_at(sql + i, &k, &kl, &len) : 0;
		if (quote) {
			if (sql[i] == quote)
				quote = 0;
			else if (f)
				return dbcron_err_set(err, DBCRON_EINVAL,
						      "job '%s': the placeholder at byte %zu is inside a "
						      "quoted string, where it would be text: write it outside "
						      "the quotes ('a' || ${param.KEY})",
						      job, i + 1);
			continue;
		}
		if (sql[i] == '\'' || sql[i] == '"') {
			quote = sql[i];
			continue;
		}
		const char *ce = comment_end(sql + i);
		if (ce != sql + i) {
			i = (size_t)(ce - sql) - 1;
			continue;
		}
		if (f < 0)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job '%s': malformed placeholder at byte %zu: write "
					      "${param.KEY}, KEY of letters, digits and _",
					      job, i + 1);
		if (f == 0)
			continue;
		int rc = fn(ctx, k, kl, i, len);
		if (rc)
			return rc;
		i += len - 1;
	}
	return DBCRON_OK;
}

/* The placeholders against the job's declaration. */
typedef struct decl_check {
	const char *job, *decl;
	int uses;
	dbcron_err *err;
} decl_check;

static int check_declared(void *ctx, const char *key, size_t klen, size_t at, size_t len)
{
	decl_check *d = ctx;
	(void)at;
	(void)len;
	if (++d->uses > SQL_MAX_VALUES)
		return dbcron_err_set(d->err, DBCRON_EINVAL,
				      "job '%s': more than %d placeholders in the statement", d->job,
				      SQL_MAX_VALUES);
	if (model_params_declares(d->decl, key, klen))
		return DBCRON_OK;
	return dbcron_err_set(d->err, DBCRON_EINVAL,
			      "job '%s': the statement uses ${param.%.*s}, which the job does not "
			      "declare: add it to --params (KEY or KEY=DEFAULT)",
			      d->job, (int)klen, key);
}

/* What a SQL job needs before it can ever run.  The database file is
 * read by the node that runs it (on its host), and by the front ends
 * when the job is written (sql_check_db_file). */
static int sql_validate(const dbcron_job *job, dbcron_err *err)
{
	const char *name = job->name ? job->name : "";
	if (!job->sql || !job->sql[strspn(job->sql, " \t\r\n")])
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': empty statement", name);
	if (job->argc > 0 || (job->handler && job->handler[0]))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': a statement and a command or handler: give one", name);
	if (job->sql_db_file && job->sql_db_file[0] != '/')
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': sql-db-file '%s' is not an absolute path", name,
				      job->sql_db_file);
	decl_check d = {.job = name, .decl = job->params, .err = err};
	return each_placeholder(name, job->sql, check_declared, &d, err);
}

/* How long `job add` waits for the database of a --sql-db-file to answer. */
#define SQL_PROBE_MS 5000

/* The file's database answers: "SELECT 1" through a run of its own (the
 * same connect, the same bound), so that a URL that reaches no database is
 * refused at add (issue 27) instead of failing the first run. */
static int probe(const char *path, dbcron_err *err)
{
	/* borrowed strings: the struct is never cleared */
	dbcron_job j;
	memset(&j, 0, sizeof(j));
	j.name = (char *)"probe";
	j.executor = DBCRON_EXEC_SQL;
	j.sql = (char *)"SELECT 1";
	j.sql_db_file = (char *)path;
	j.timeout_ms = SQL_PROBE_MS;
	exec_req req = {.job = &j};
	exec_result res;
	exec_sql(&req, &res);
	int rc = DBCRON_OK;
	if (res.state != DBCRON_RUN_SUCCEEDED)
		rc = dbcron_err_set(err, DBCRON_EINVAL, "'%s': its database does not answer: %s",
				    path, res.error ? res.error : "no reason given");
	exec_result_clear(&res);
	return rc;
}

int exec_sql_check_db_file(const char *path, dbcron_err *err)
{
	char *url = NULL;
	dbcron_err why = {0};
	int rc = store_url_file_read(path, &url, &why);
	if (rc)
		return dbcron_err_set(err, rc == DBCRON_ENOMEM ? rc : DBCRON_EINVAL, "'%s': %s", path,
				      why.msg);
	if (kind_of(url) == SQL_KIND_NONE)
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "'%s': not a database URL of a supported kind "
				    "(sqlite:PATH, postgresql://..., mysql://...)",
				    path);
	explicit_bzero(url, strlen(url));
	dbcron__free(url);
	return rc ? rc : probe(path, err);
}

/* ---- the run's statement ---- */

/* A growing text; oom set once an append failed (the text is then
 * incomplete and not used). */
typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void sbuf_add(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (dbcron__grow((void **)&b->p, &b->cap, b->len + n + 1, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

typedef struct build {
	sql_run *r;
	sql_kind kind;
	const char *src;
	size_t copied;
	sbuf text;
	/* distinct keys, in order of first use (PostgreSQL, SQLite: one
	 * value per key; MariaDB: one per placeholder) */
	const char *keys[SQL_MAX_VALUES];
	size_t klens[SQL_MAX_VALUES];
	int nkeys;
	dbcron_err *err;
} build;

/* The run's value of key (req->params: "KEY=VALUE"), NULL when none. */
static const char *param_value(const exec_req *req, const char *key, size_t klen)
{
	for (size_t i = 0; req->params && i < req->nparams; i++) {
		const char *kv = req->params[i];
		if (kv && strncmp(kv, key, klen) == 0 && kv[klen] == '=')
			return kv + klen + 1;
	}
	return NULL;
}

static int build_one(void *ctx, const char *key, size_t klen, size_t at, size_t len)
{
	build *b = ctx;
	sql_run *r = b->r;
	char marker[24];
	int idx = -1;

	for (int i = 0; i < b->nkeys && b->kind != SQL_KIND_MY; i++)
		if (b->klens[i] == klen && memcmp(b->keys[i], key, klen) == 0)
			idx = i;
	if (idx < 0) {
		const char *v = param_value(r->req, key, klen);
		if (!v)
			return dbcron_err_set(b->err, DBCRON_EINVAL,
					      "parameter '%.*s' has no value (give it with job trigger "
					      "--param %.*s=VALUE, or a default in the job's --params)",
					      (int)klen, key, (int)klen, key);
		if (b->nkeys >= SQL_MAX_VALUES)
			return dbcron_err_set(b->err, DBCRON_EINVAL,
					      "more than %d placeholders in the statement", SQL_MAX_VALUES);
		idx = b->nkeys++;
		b->keys[idx] = key;
		b->klens[idx] = klen;
		r->vals[idx] = v;
		r->nvals = b->nkeys;
	}
	if (b->kind == SQL_KIND_PG)
		snprintf(marker, sizeof(marker), "$%d", idx + 1);
	else if (b->kind == SQL_KIND_SQLITE)
		snprintf(marker, sizeof(marker), "?%d", idx + 1);
	else
		snprintf(marker, sizeof(marker), "?");
	sbuf_add(&b->text, b->src + b->copied, at - b->copied);
	sbuf_add(&b->text, marker, strlen(marker));
	b->copied = at + len;
	return DBCRON_OK;
}

/* r->text and r->vals from the job's statement, for kind. */
static int build_statement(sql_run *r, sql_kind kind, dbcron_err *err)
{
	const dbcron_job *job = r->req->job;
	build b = {.r = r, .kind = kind, .src = job->sql, .err = err};
	int rc = each_placeholder(job->name ? job->name : "", job->sql, build_one, &b, err);
	if (rc) {
		dbcron__free(b.text.p);
		return rc;
	}
	sbuf_add(&b.text, b.src + b.copied, strlen(b.src + b.copied));
	if (b.text.oom) {
		dbcron__free(b.text.p);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	}
	r->text = b.text.p;
	return DBCRON_OK;
}

/* ---- shared by the dialect halves ---- */

sql_end sql__should_stop(const sql_run *r)
{
	if (r->req->cancel && atomic_load(&r->req->cancel->requested))
		return SQL_END_CANCEL;
	if (r->deadline_ms && dbcron__mono_ms() >= r->deadline_ms)
		return SQL_END_TIMEOUT;
	return SQL_END_OK;
}

void sql__fail(sql_run *r, sql_end end, const char *fmt, ...)
{
	va_list ap;

	if (r->end != SQL_END_OK)
		return;
	r->end = end;
	va_start(ap, fmt);
	dbcron__vtextf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

static void out_add(sql_run *r, const char *s, size_t n)
{
	sbuf b = {r->out, r->out_len, r->out_cap, r->out_oom};
	sbuf_add(&b, s, n);
	r->out = b.p;
	r->out_len = b.len;
	r->out_cap = b.cap;
	r->out_oom = b.oom;
}

void sql__out_text(sql_run *r, const char *s)
{
	out_add(r, s, strlen(s));
}

void sql__out_cell(sql_run *r, const char *s, size_t n)
{
	char cell[SQL_CELL_MAX + 4];
	size_t k = 0;
	for (size_t i = 0; i < n && k < SQL_CELL_MAX; i++)
		cell[k++] = s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
	if (k < n) { /* cut: drop a partial character, mark the cut */
		while (k > 0 && ((unsigned char)cell[k - 1] & 0xc0) == 0x80)
			k--;
		if (k > 0 && ((unsigned char)cell[k - 1] & 0xc0) == 0xc0)
			k--;
		memcpy(cell + k, "...", 3);
		k += 3;
	}
	out_add(r, cell, k);
}

void sql__out_rows_end(sql_run *r, uint64_t rows)
{
	char t[96];
	if (rows > SQL_ROWS_SHOWN)
		snprintf(t, sizeof(t), "(first %d of %llu rows)\n", SQL_ROWS_SHOWN,
			 (unsigned long long)rows);
	else
		snprintf(t, sizeof(t), "(%llu row%s)\n", (unsigned long long)rows, rows == 1 ? "" : "s");
	sql__out_text(r, t);
}

void sql__out_affected(sql_run *r, uint64_t n)
{
	char t[64];
	snprintf(t, sizeof(t), "%llu row%s affected\n", (unsigned long long)n, n == 1 ? "" : "s");
	sql__out_text(r, t);
}

int sql__connect_s(const sql_run *r)
{
	int64_t s = SQL_CONNECT_MAX_S;
	if (r->deadline_ms) {
		int64_t left = (r->deadline_ms - dbcron__mono_ms() + 999) / 1000;
		s = left < s ? left : s;
	}
	return s < 1 ? 1 : (int)s;
}

/* ---- SQLite ---- */

static int lite_progress(void *arg)
{
	return sql__should_stop(arg) != SQL_END_OK;
}

/* A locked database: wait in short steps while neither cancel nor the
 * deadline says stop, at most 10 s without a deadline (as the node's own
 * connection waits). */
static int lite_busy(void *arg, int n)
{
	sql_run *r = arg;
	if (sql__should_stop(r) != SQL_END_OK || (!r->deadline_ms && n >= 2000))
		return 0;
	struct timespec ts = {0, 5 * 1000 * 1000};
	nanosleep(&ts, NULL);
	return 1;
}

/* The file of a sqlite: URL, without the store's "?synchronous=" option. */
static char *lite_path(const char *url)
{
	const char *p = url + 7, *q = strstr(p, "?synchronous=");
	return q ? dbcron__strndup(p, (size_t)(q - p)) : dbcron__strdup(p);
}

static void lite_rows(sql_run *r, sqlite3 *db, sqlite3_stmt *st)
{
	int ncol = sqlite3_column_count(st), rc;
	uint64_t rows = 0;

	for (int c = 0; c < ncol; c++) {
		const char *nm = sqlite3_column_name(st, c);
		sql__out_text(r, c ? "\t" : "");
		sql__out_cell(r, nm ? nm : "", nm ? strlen(nm) : 0);
	}
	if (ncol)
		sql__out_text(r, "\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (++rows > SQL_ROWS_SHOWN)
			continue;
		for (int c = 0; c < ncol; c++) {
			const char *v = (const char *)sqlite3_column_text(st, c);
			sql__out_text(r, c ? "\t" : "");
			if (v)
				sql__out_cell(r, v, (size_t)sqlite3_column_bytes(st, c));
			else
				sql__out_text(r, "NULL");
		}
		sql__out_text(r, "\n");
	}
	sql_end stop = sql__should_stop(r);
	if (rc == SQLITE_INTERRUPT && stop != SQL_END_OK)
		sql__fail(r, stop, "%s", stop == SQL_END_CANCEL ? "cancelled" : "timed out");
	else if (rc != SQLITE_DONE)
		sql__fail(r, SQL_END_ERROR, "%s", sqlite3_errmsg(db));
	else if (ncol)
		sql__out_rows_end(r, rows);
	else
		sql__out_affected(r, (uint64_t)sqlite3_changes64(db));
}

static void run_sqlite(sql_run *r)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	char *path = lite_path(r->url);

	if (!path) {
		sql__fail(r, SQL_END_ERROR, "out of memory");
		return;
	}
	/* the file must be there: a job never creates a database */
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		sql__fail(r, SQL_END_ERROR, "cannot open SQLite database '%s': %s", path,
			  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out_close;
	}
	sqlite3_busy_handler(db, lite_busy, r);
	sqlite3_progress_handler(db, 1000, lite_progress, r);
	if (sqlite3_prepare_v2(db, r->text, -1, &st, &tail) != SQLITE_OK) {
		sql__fail(r, SQL_END_ERROR, "%s", sqlite3_errmsg(db));
		goto out_close;
	}
	if (!st || (tail && tail[strspn(tail, " \t\r\n;")])) {
		sql__fail(r, SQL_END_ERROR, "%s", st ? "more than one statement (a SQL job runs one)"
						     : "no statement");
		goto out_close;
	}
	for (int i = 0; i < r->nvals; i++)
		sqlite3_bind_text(st, i + 1, r->vals[i], -1, SQLITE_STATIC);
	lite_rows(r, db, st);
out_close:
	sqlite3_finalize(st);
	sqlite3_close(db);
	dbcron__free(path);
}

/* ---- the run ---- */

/* res->output: the output with its first and last cap bytes kept, and
 * bytes that are not UTF-8 as '?' (the run log's column is text). */
static void set_output(sql_run *r, exec_result *res, size_t cap)
{
	if (!r->out || r->out_oom || !r->out_len)
		return;
	char *s = r->out;
	size_t n = r->out_len;
	for (size_t i = 0; i < n;) {
		size_t l = dbcron__utf8_seq((const unsigned char *)s + i);
		if (!l) {
			s[i++] = '?';
			continue;
		}
		i += l;
	}
	if (n > 2 * cap) {
		char marker[64];
		int m = snprintf(marker, sizeof(marker), "\n[... %zu bytes omitted ...]\n", n - 2 * cap);
		char *o = dbcron__malloc(2 * cap + (size_t)m + 1);
		if (!o)
			return;
		memcpy(o, s, cap);
		memcpy(o + cap, marker, (size_t)m);
		memcpy(o + cap + (size_t)m, s + n - cap, cap);
		o[2 * cap + (size_t)m] = '\0';
		res->output = o;
		return;
	}
	res->output = r->out;
	r->out = NULL;
}

/* The run's database URL (a new string, wiped and freed by the caller). */
static int resolve_url(const exec_req *req, char **url, dbcron_err *err)
{
	const char *file = req->job->sql_db_file;
	*url = NULL;
	if (file) {
		dbcron_err why = {0};
		int rc = store_url_file_read(file, url, &why);
		return rc ? dbcron_err_set(err, rc, "sql-db-file '%s': %s", file, why.msg) : rc;
	}
	if (!req->db_url || !*req->db_url)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "no database to run the statement on (give --sql-db-file)");
	*url = dbcron__strdup(req->db_url);
	return *url ? DBCRON_OK : dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
}

static void judge(const sql_run *r, exec_result *res)
{
	char d[32];
	switch (r->end) {
	case SQL_END_OK:
		res->state = DBCRON_RUN_SUCCEEDED;
		break;
	case SQL_END_TIMEOUT:
		res->state = DBCRON_RUN_TIMED_OUT;
		dbcron__format_duration(r->timeout_ms, d, sizeof(d));
		if (strcmp(r->why, "timed out") == 0)
			exec__set_error(res, "timed out after %s; statement cancelled on the server", d);
		else
			exec__set_error(res, "timed out after %s: %s", d, r->why);
		break;
	case SQL_END_CANCEL:
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "cancelled%s%s", strcmp(r->why, "cancelled") ? ": " : "",
				strcmp(r->why, "cancelled") ? r->why : "");
		break;
	default:
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "%s: %s", r->shown, r->why);
	}
}

void exec_sql(const exec_req *req, exec_result *res)
{
	sql_run r = {.req = req, .timeout_ms = req->job->timeout_ms};
	dbcron_err err = {0};
	char *url = NULL;

	memset(res, 0, sizeof(*res));
	res->mono_start_ms = dbcron__mono_ms();
	if (r.timeout_ms > 0)
		r.deadline_ms = res->mono_start_ms + r.timeout_ms;
	res->state = DBCRON_RUN_FAILED;
	if (resolve_url(req, &url, &err)) {
		exec__set_error(res, "%s", err.msg);
		goto out_done;
	}
	r.url = url;
	store_mask_url(url, r.shown, sizeof(r.shown));
	sql_kind kind = kind_of(url);
	if (kind == SQL_KIND_NONE) {
		exec__set_error(res, "'%s' is not a database URL of a supported kind", r.shown);
		goto out_done;
	}
	if (build_statement(&r, kind, &err)) {
		exec__set_error(res, "%s", err.msg);
		goto out_done;
	}
	if (kind == SQL_KIND_SQLITE)
		run_sqlite(&r);
	else if (kind == SQL_KIND_PG)
		sql__run_pg(&r);
	else
		sql__run_my(&r);
	judge(&r, res);
	set_output(&r, res, req->capture_bytes ? req->capture_bytes : 1024);
out_done:
	if (url) {
		explicit_bzero(url, strlen(url));
		dbcron__free(url);
	}
	dbcron__free(r.text);
	dbcron__free(r.out);
	res->mono_end_ms = dbcron__mono_ms();
}

/* The statement is stopped on the server, whatever it does (PREEMPT); no
 * process of its own, so no user, directory or environment. */
const exec_ops exec_sql_ops = {
	.version = EXEC_OPS_VERSION,
	.kind = DBCRON_EXEC_SQL,
	.name = "sql",
	.caps = EXEC_CAP_OUTPUT | EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT | EXEC_CAP_PREEMPT,
	.validate = sql_validate,
	.run = exec_sql,
};
