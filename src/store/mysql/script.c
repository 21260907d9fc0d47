/*
 * The MySQL dialect's statement scripts, and the server's errors.
 *
 * MySQL has no UPDATE ... RETURNING, so a statement id may be a short
 * script of parts (sql.h; separated by PART): a part can run once per row
 * of the result before it (EACH, e.g. lock the rows with SELECT ... FOR
 * UPDATE SKIP LOCKED, then update each), only when the part before it
 * changed a row (IF_CHANGED), or hand back the key cell of a batch row it
 * changed (made_row).  A claim stamps its rows with a private token (seed
 * 000's UPDATE ... ORDER BY ... LIMIT), reads them back by that token, then
 * gives them the claim's token.  MariaDB's INSERT ... RETURNING is used
 * where it exists; elsewhere the inserts read back (sql_no_returning).
 * Parameters are positional '?' only: prepare rewrites ?N, ?1NN and ?LN
 * to '?' and keeps the map.
 *
 * Owns each statement's parsed parts and their prepared handles, and the
 * result: every part's rows copied out as they are read, in order, so a
 * later part can run before the caller reads them.  Keeps: a part's
 * parameters come only from the caller's scalars, the current batch row,
 * or the result row an EACH part runs for, each checked in range; a text
 * cell of a batch is cleaned of bytes that are not UTF-8 (dialect.h).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include "core/alloc.h"
#include "store/mysql/mysql_int.h"

/* ---- errors ---- */

/*
 * The session is of no more use: the server went away or did not answer
 * within the read timeout (2006, 2013), ended it, or (Galera) the member
 * cannot take writes any more: 1047 "WSREP has not yet prepared node for
 * application use" (left the primary component, or still joining) and 1180
 * (a COMMIT the member could not complete).  The next operation connects
 * again, to the next host of the URL; a COMMIT that met one of these may
 * have landed (dialect.h: DBCRON_ECONN).  A Galera certification failure
 * comes as a deadlock (1213) and is retried like one.
 */
static bool conn_errno(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_CONNECTION_ERROR ||
	       e == CR_CONN_HOST_ERROR || e == CR_SERVER_LOST_EXTENDED || e == ER_CONNECTION_KILLED ||
	       e == ER_SERVER_SHUTDOWN || e == CR_COMMANDS_OUT_OF_SYNC || e == 4031 /* idle ended */ ||
	       e == ER_UNKNOWN_COM_ERROR || e == ER_ERROR_DURING_COMMIT;
}

static int classify(store_conn *q, unsigned e, const char *what, const char *msg,
		    dbcron_err *err)
{
	if (conn_errno(e)) {
		q->connected = false;
		q->in_tx = false;
		q->rotate = e != 4031; /* our own idleness is no fault of the host's */
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s: %s", what,
				      q->masked, msg);
	}
	switch (e) {
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_LOCK_DEADLOCK:
	case 1969: /* MariaDB: max_statement_time exceeded */
	case 3024: /* MySQL: max_execution_time exceeded */
		return dbcron_err_set(err, DBCRON_EBUSY, "%s: %s", what, msg);
	case ER_DUP_ENTRY:
	case ER_NO_REFERENCED_ROW_2:
	case ER_ROW_IS_REFERENCED_2:
	case ER_BAD_NULL_ERROR:
	case 4025: /* CHECK constraint */
		return dbcron_err_set(err, DBCRON_ECONSTRAINT, "%s: %s", what, msg);
	case ER_OUTOFMEMORY:
	case CR_OUT_OF_MEMORY:
		return dbcron_err_set(err, DBCRON_ENOMEM, "%s: %s", what, msg);
	default:
		return dbcron_err_set(err, DBCRON_EDB, "%s: %s", what, msg);
	}
}

int my__fail_db(store_conn *q, const char *what, dbcron_err *err)
{
	return classify(q, my__lib.mysql_errno(q->db), what, my__lib.mysql_error(q->db), err);
}

static int fail_st(store_conn *q, MYSQL_STMT *st, const char *what, dbcron_err *err)
{
	return classify(q, my__lib.mysql_stmt_errno(st), what, my__lib.mysql_stmt_error(st), err);
}

static void free_parts(stmt *s);

void my__close_stmts(store_conn *q)
{
	for (int i = 0; i < MY_ST__END; i++)
		free_parts(&q->stmts[i]);
}

int my__run_text(store_conn *q, const char *text, const char *what, dbcron_err *err)
{
	if (my__lib.mysql_real_query(q->db, text, (unsigned long)strlen(text)))
		return my__fail_db(q, what, err);
	MYSQL_RES *r = my__lib.mysql_store_result(q->db);
	if (r)
		my__lib.mysql_free_result(r);
	else if (my__lib.mysql_field_count(q->db))
		return my__fail_db(q, what, err);
	return DBCRON_OK;
}

/* Split text into parts and rewrite ?N / ?1NN / ?LN to '?'. */
static int parse_stmt(store_conn *q, int id, const char *text, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	const char *p = text;
	s->nparts = 0;
	while (*p) {
		if (s->nparts == MAX_PARTS)
			return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: too many parts",
					      store_stmt_what(id));
		part *pt = &s->parts[s->nparts++];
		memset(pt, 0, sizeof(*pt));
		for (;;) {
			if (*p == EACH[0])
				pt->each = true;
			else if (*p == IF_CHANGED[0])
				pt->if_changed = true;
			else
				break;
			p++;
		}
		const char *end = strchr(p, PART[0]);
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *t = dbcron__calloc(n + 1, 1);
		if (!t)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory preparing %s",
					      store_stmt_what(id));
		size_t o = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] != '?') {
				t[o++] = p[i];
				continue;
			}
			unsigned char kind = REF_SCALAR;
			size_t j = i + 1;
			if (p[j] == 'L') {
				kind = REF_LIMIT;
				j++;
			}
			int v = 0, digits = 0;
			while (j < n && isdigit((unsigned char)p[j]) && digits < 3)
				v = v * 10 + (p[j++] - '0'), digits++;
			if (!digits || pt->nrefs == MAX_REFS) {
				dbcron__free(t);
				return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: bad placeholder",
						      store_stmt_what(id));
			}
			if (digits == 3 && kind == REF_SCALAR) {
				kind = REF_CELL;
				v -= 100;
			} else {
				v -= 1;
			}
			pt->refs[pt->nrefs].kind = kind;
			pt->refs[pt->nrefs].idx = (unsigned char)v;
			pt->nrefs++;
			t[o++] = '?';
			i = j - 1;
		}
		pt->text = t;
		p += n;
		if (*p == PART[0])
			p++;
	}
	return DBCRON_OK;
}

static void free_parts(stmt *s)
{
	for (int k = 0; k < s->nparts; k++) {
		if (s->parts[k].st)
			my__lib.mysql_stmt_close(s->parts[k].st);
		dbcron__free(s->parts[k].text);
	}
	memset(s, 0, sizeof(*s));
}

int my__prepare(store_conn *q, int id, const char *text, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	if (s->ready)
		return DBCRON_OK;
	int rc;
	if (!s->nparts && (rc = parse_stmt(q, id, text, err))) {
		free_parts(s); /* a half-parsed statement is parsed again next time */
		return rc;
	}
	for (int k = 0; k < s->nparts; k++) {
		part *pt = &s->parts[k];
		if (pt->st)
			continue;
		if (!(pt->st = my__lib.mysql_stmt_init(q->db)))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory preparing %s",
					      store_stmt_what(id));
		if (my__lib.mysql_stmt_prepare(pt->st, pt->text, (unsigned long)strlen(pt->text))) {
			rc = fail_st(q, pt->st, store_stmt_what(id), err);
			my__lib.mysql_stmt_close(pt->st);
			pt->st = NULL;
			return rc;
		}
	}
	s->ready = true;
	return DBCRON_OK;
}

void my__clear_result(store_conn *q)
{
	for (size_t i = 0; i < q->ncells; i++)
		dbcron__free(q->cells[i]);
	q->ncells = q->nrows = 0;
	q->ncols = 0;
	q->row = -1;
}

static int push_cell(store_conn *q, const char *v, size_t n)
{
	if (dbcron__grow((void **)&q->cells, &q->cap, q->ncells + 1, sizeof(*q->cells)))
		return DBCRON_ENOMEM;
	char *c = NULL;
	if (v && !(c = dbcron__strndup(v, n)))
		return DBCRON_ENOMEM;
	q->cells[q->ncells++] = c;
	return DBCRON_OK;
}

/* Bind one text value, replacing bytes that are not UTF-8 when clean (a
 * batch cell, dialect.h: the server would refuse the whole row). */
static void bind_text(store_conn *q, MYSQL_BIND *b, int k, const char *s, bool clean)
{
	if (clean && !(s = store_text_clean(&q->clean[k], s)))
		s = "";
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)s;
	q->lens[k] = (unsigned long)strlen(s);
	b->buffer_length = q->lens[k];
	b->length = &q->lens[k];
}

/* Bind a part's parameters: scalars from p, cells from cells (a batch row
 * or the result row an EACH part runs for; result cells are text). */
static int bind_part(store_conn *q, part *pt, const store_param *p, int np,
		     const store_batch *bt, size_t brow, char *const *rcells, int rcols,
		     MYSQL_BIND *binds, dbcron_err *err, int id)
{
	int nbatch = 0;
	store_text *js;
	memset(binds, 0, sizeof(MYSQL_BIND) * (size_t)pt->nrefs);
	for (int k = 0; k < pt->nrefs; k++) {
		MYSQL_BIND *b = &binds[k];
		int idx = pt->refs[k].idx;
		q->nulls[k] = 0;
		b->is_null = &q->nulls[k];
		if (pt->refs[k].kind == REF_CELL) {
			if (rcells) {
				if (idx >= rcols)
					goto bad;
				if (!rcells[idx]) {
					q->nulls[k] = 1;
					b->buffer_type = MYSQL_TYPE_NULL;
				} else {
					bind_text(q, b, k, rcells[idx], false);
				}
				continue;
			}
			if (!bt || idx >= bt->ncols)
				goto bad;
			const store_cell *c = &bt->cells[brow * (size_t)bt->ncols + (size_t)idx];
			if (c->null) {
				q->nulls[k] = 1;
				b->buffer_type = MYSQL_TYPE_NULL;
			} else if (bt->cols[idx] == BC_I64 || bt->cols[idx] == BC_BOOL) {
				q->ivals[k] = c->i;
				b->buffer_type = MYSQL_TYPE_LONGLONG;
				b->buffer = &q->ivals[k];
			} else {
				bind_text(q, b, k, c->s, true);
			}
			continue;
		}
		if (idx >= np)
			goto bad;
		const store_param *v = &p[idx];
		switch (v->t) {
		case SP_NULL:
			q->nulls[k] = 1;
			b->buffer_type = MYSQL_TYPE_NULL;
			break;
		case SP_I64:
			q->ivals[k] = pt->refs[k].kind == REF_LIMIT && v->i < 0 ? INT64_MAX : v->i;
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &q->ivals[k];
			break;
		case SP_TEXT:
			bind_text(q, b, k, v->s, false);
			break;
		case SP_BATCH:
			if (nbatch == MY_BATCHES)
				return dbcron_err_set(err, DBCRON_EINTERNAL,
						      "mysql: %s: more than %d batch parameters",
						      store_stmt_what(id), MY_BATCHES);
			js = &q->json[nbatch++];
			if (store_batch_json(js, v->b))
				return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
						      store_stmt_what(id));
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = js->p;
			q->lens[k] = (unsigned long)js->len;
			b->buffer_length = q->lens[k];
			b->length = &q->lens[k];
			break;
		}
	}
	return DBCRON_OK;
bad:
	return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: parameter out of range",
			      store_stmt_what(id));
}

/* Read every row of an executed statement into the result. */
static int collect(store_conn *q, MYSQL_STMT *st, int id, dbcron_err *err)
{
	MYSQL_RES *meta = my__lib.mysql_stmt_result_metadata(st);
	if (!meta)
		return DBCRON_OK;
	int nc = (int)my__lib.mysql_num_fields(meta);
	my__lib.mysql_free_result(meta);
	if (q->ncols && q->ncols != nc)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: parts of %d and %d columns",
				      store_stmt_what(id), q->ncols, nc);
	q->ncols = nc;
	enum { CAP = 64 };
	MYSQL_BIND *rb = dbcron__calloc((size_t)nc, sizeof(*rb));
	char (*buf)[CAP] = dbcron__calloc((size_t)nc, CAP);
	unsigned long *len = dbcron__calloc((size_t)nc, sizeof(*len));
	my_bool *isnull = dbcron__calloc((size_t)nc, sizeof(*isnull));
	char *big = NULL;
	int rc = DBCRON_OK;
	if (!rb || !buf || !len || !isnull) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading %s", store_stmt_what(id));
		goto out;
	}
	for (int c = 0; c < nc; c++) {
		rb[c].buffer_type = MYSQL_TYPE_STRING;
		rb[c].buffer = buf[c];
		rb[c].buffer_length = CAP;
		rb[c].length = &len[c];
		rb[c].is_null = &isnull[c];
	}
	if (my__lib.mysql_stmt_bind_result(st, rb)) {
		rc = fail_st(q, st, store_stmt_what(id), err);
		goto out;
	}
	for (;;) {
		int f = my__lib.mysql_stmt_fetch(st);
		if (f == MYSQL_NO_DATA)
			break;
		if (f == 1) {
			rc = fail_st(q, st, store_stmt_what(id), err);
			goto out;
		}
		for (int c = 0; c < nc && !rc; c++) {
			if (isnull[c]) {
				rc = push_cell(q, NULL, 0);
			} else if (len[c] < CAP) {
				rc = push_cell(q, buf[c], len[c]);
			} else {
				char *nb = dbcron__realloc(big, len[c] + 1);
				if (!nb) {
					rc = DBCRON_ENOMEM;
					break;
				}
				big = nb;
				MYSQL_BIND one;
				unsigned long got = 0;
				memset(&one, 0, sizeof(one));
				one.buffer_type = MYSQL_TYPE_STRING;
				one.buffer = big;
				one.buffer_length = len[c] + 1;
				one.length = &got;
				if (my__lib.mysql_stmt_fetch_column(st, &one, (unsigned)c, 0)) {
					rc = fail_st(q, st, store_stmt_what(id), err);
					goto out;
				}
				rc = push_cell(q, big, len[c]);
			}
		}
		if (rc) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading %s",
					    store_stmt_what(id));
			goto out;
		}
		q->nrows++;
	}
out:
	my__lib.mysql_stmt_free_result(st);
	dbcron__free(big);
	dbcron__free(rb);
	dbcron__free(buf);
	dbcron__free(len);
	dbcron__free(isnull);
	return rc;
}

/* Execute one part once; *changed: rows it matched. */
static int run_part(store_conn *q, int id, part *pt, const store_param *p, int np,
		    const store_batch *bt, size_t brow, char *const *rcells, int rcols,
		    int64_t *changed, dbcron_err *err)
{
	MYSQL_BIND binds[MAX_REFS];
	int rc = bind_part(q, pt, p, np, bt, brow, rcells, rcols, binds, err, id);
	if (rc)
		return rc;
	if (pt->nrefs && my__lib.mysql_stmt_bind_param(pt->st, binds))
		return fail_st(q, pt->st, store_stmt_what(id), err);
	if (my__lib.mysql_stmt_execute(pt->st))
		return fail_st(q, pt->st, store_stmt_what(id), err);
	if (my__lib.mysql_stmt_field_count(pt->st)) {
		*changed = 0;
		return collect(q, pt->st, id, err);
	}
	my_ulonglong a = my__lib.mysql_stmt_affected_rows(pt->st);
	*changed = a == (my_ulonglong)-1 ? 0 : (int64_t)a;
	q->changes += *changed;
	return DBCRON_OK;
}

int my__run_parts(store_conn *q, int id, const store_param *p, int np, const store_batch *bt,
		  size_t brow, bool made, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	int64_t changed = 0;
	size_t res_lo = q->nrows; /* the rows the last result part gave */
	size_t res_hi = q->nrows;
	for (int k = 0; k < s->nparts; k++) {
		part *pt = &s->parts[k];
		int rc;
		if (pt->if_changed && changed <= 0)
			continue;
		if (pt->each) {
			/* the rows are copied: running the part appends nothing
			 * (an UPDATE), so indexes stay valid */
			int64_t sum = 0;
			for (size_t r = res_lo; r < res_hi; r++) {
				int64_t ch = 0;
				if ((rc = run_part(q, id, pt, p, np, NULL, 0,
						   &q->cells[r * (size_t)q->ncols], q->ncols, &ch, err)))
					return rc;
				sum += ch;
			}
			changed = sum;
			continue;
		}
		size_t before = q->nrows;
		if ((rc = run_part(q, id, pt, p, np, bt, brow, NULL, 0, &changed, err)))
			return rc;
		if (q->nrows != before || my__lib.mysql_stmt_field_count(pt->st)) {
			res_lo = before;
			res_hi = q->nrows;
		}
	}
	if (made && bt && changed == 1) {
		const store_cell *c = &bt->cells[brow * (size_t)bt->ncols];
		char t[24];
		int n = snprintf(t, sizeof(t), "%" PRId64, c->i);
		if (q->ncols == 0)
			q->ncols = 1;
		if (push_cell(q, t, (size_t)n))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
					      store_stmt_what(id));
		q->nrows++;
	}
	return DBCRON_OK;
}

