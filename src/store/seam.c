/*
 * The seam between the protocol and a dialect.  Every statement the store
 * runs passes store__exec() here once, so the fault seam (fault.c), the
 * statement count, the cleaning of scalar text that is not UTF-8 and the
 * counting of failed statements by class are in one place for every
 * operation.  On it, the few shapes every operation is written in: run a
 * statement for its changes, step one row, hand rows to a callback, a
 * transaction, the database clock, the handle's reused batches, and the
 * insert that moves a taken fire time 1 ms on.
 *
 * Invariants kept here: one statement's result is open at a time (each
 * helper resets what it opened, on every path); which error wins when a
 * step and a row both fail is decided once (store__each_row); a
 * transaction that reads and then writes takes the write lock first on a
 * single-writer database; a failed statement, an injected one too, is
 * counted once.
 */
#include <string.h>

#include "store/store_int.h"

/* A manual trigger or a logged run whose fire time is taken moves 1 ms on,
 * for at most a second of distinct instants. */
#define BUMP_TRIES 1000

const char *const store_err_class_name[STORE_ERR__COUNT] = {
	[STORE_ERR_BUSY] = "busy",
	[STORE_ERR_CONN] = "connection",
	[STORE_ERR_CONSTRAINT] = "constraint",
	[STORE_ERR_OTHER] = "other",
};

void store_count_errors(store *s, atomic_ullong *counts)
{
	s->err_counts = counts;
}

/* Every failure of a statement passes here once (an injected one too:
 * the caller meets it as it would a real one). */
static void count_error(store *s, int rc)
{
	if (!s->err_counts || rc == DBCRON_OK)
		return;
	store_err_class k = rc == DBCRON_EBUSY	      ? STORE_ERR_BUSY
			    : rc == DBCRON_ECONN       ? STORE_ERR_CONN
			    : rc == DBCRON_ECONSTRAINT ? STORE_ERR_CONSTRAINT
						       : STORE_ERR_OTHER;
	atomic_fetch_add_explicit(&s->err_counts[k], 1, memory_order_relaxed);
}

/*
 * Every text sent to the database is UTF-8 (issue 23 item 1): PostgreSQL
 * and MariaDB refuse a statement with invalid bytes, and one job's text
 * must not fail a statement that carries others' work.  Batch cells are
 * cleaned by the dialects (dialect.h); scalar texts here, once for every
 * dialect: a parameter that is not UTF-8 is sent as a copy with '?' for the
 * bad bytes, kept in the handle's scratch until the next statement (a row
 * batch reads its parameters as it runs).  Valid text costs one scan.
 * *oom is set when out of memory.
 */
static const store_param *clean_params(store *s, const store_param *p, int np,
				       store_param *copy, bool *oom)
{
	*oom = false;
	int used = 0;
	const store_param *out = p;
	for (int i = 0; i < np; i++) {
		if (p[i].t != SP_TEXT || !p[i].s || store_utf8_valid(p[i].s))
			continue;
		/* past these bounds (no statement comes near them) the text
		 * goes as given and the server says what it thinks */
		if (np > STORE_MAX_PARAMS || used == STORE_CLEAN_PARAMS)
			break;
		if (out == p) {
			memcpy(copy, p, sizeof(*p) * (size_t)np);
			out = copy;
		}
		if (!(copy[i].s = store_text_clean(&s->scratch->clean[used++], p[i].s))) {
			*oom = true;
			return p;
		}
	}
	return out;
}

int store__exec(store *s, int id, const store_param *p, int np, dbcron_err *err)
{
	int rc;
	store_param copy[STORE_MAX_PARAMS];
	bool no_mem;
	s->stmt_count++;
	p = clean_params(s, p, np, copy, &no_mem);
	if (no_mem) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s", store_stmt_what(id));
		goto out;
	}
	if (s->faults && (rc = store__fault_before(s, id, err)))
		goto out;
	rc = s->d->exec(s->c, id, p, np, err);
	if (!rc && s->faults && (rc = store__fault_after(s, id, err)))
		s->d->reset(s->c);
out:
	count_error(s, rc);
	return rc;
}

int store__next(store *s, dbcron_err *err)
{
	int row = s->d->next(s->c, err);
	if (row < 0)
		count_error(s, -row);
	return row;
}

void store__reset(store *s)
{
	s->d->reset(s->c);
}

int store__run(store *s, int id, const store_param *p, int np, int64_t *changes,
	       dbcron_err *err)
{
	int rc = store__exec(s, id, p, np, err), row;
	if (rc)
		return rc;
	while ((row = store__next(s, err)) == 1)
		;
	if (row < 0) {
		store__reset(s);
		return -row;
	}
	if (changes)
		*changes = s->d->changes(s->c);
	store__reset(s);
	return DBCRON_OK;
}

int store__row(store *s, int id, const store_param *p, int np, dbcron_err *err)
{
	int rc = store__exec(s, id, p, np, err);
	if (rc)
		return -rc;
	int row = store__next(s, err);
	if (row <= 0)
		store__reset(s);
	return row;
}

/* The loop, the reset and which error wins (a failed step over a failed
 * row) are here once for every listing. */
int store__each_row(store *s, int id, const store_param *p, int np, store__row_fn one,
		    void *arg, dbcron_err *err)
{
	int rc = store__exec(s, id, p, np, err), row = 0;
	bool stop = false;
	if (rc)
		return rc;
	while (!stop && (row = store__next(s, err)) == 1)
		if ((rc = one(s, arg, &stop, err)))
			break;
	store__reset(s);
	return row < 0 ? -row : rc;
}

struct name_each {
	store_name_cb cb;
	void *ctx;
};

static int name_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct name_each *e = arg;
	const char *name = s->d->col_text(s->c, 0);
	(void)err;
	*stop = name && e->cb(e->ctx, name) != 0;
	return DBCRON_OK;
}

int store__each_name(store *s, int id, const store_param *p, int np, store_name_cb cb,
		     void *ctx, dbcron_err *err)
{
	struct name_each e = {cb, ctx};
	return store__each_row(s, id, p, np, name_one, &e, err);
}

/* Single-writer dialects take the write lock before the first read, so a
 * transaction that reads and then writes never fails halfway. */
int store__tx_begin(store *s, dbcron_err *err)
{
	return store__run(s, s->d->caps & STORE_CAP_MULTI_WRITER ? ST_BEGIN : ST_BEGIN_WRITE,
		      NULL, 0, NULL, err);
}

int store__tx_commit(store *s, dbcron_err *err)
{
	return store__run(s, ST_COMMIT, NULL, 0, NULL, err);
}

void store__tx_rollback(store *s)
{
	store__reset(s);
	if (s->d->in_tx(s->c))
		store__run(s, ST_ROLLBACK, NULL, 0, NULL, NULL);
}

int store__db_now(store *s, int64_t *now, dbcron_err *err)
{
	int row = store__row(s, ST_NOW, NULL, 0, err);
	if (row <= 0)
		return row < 0 ? -row
			       : dbcron_err_set(err, DBCRON_EDB, "%s: no row", store_stmt_what(ST_NOW));
	*now = store__i64(s, 0);
	store__reset(s);
	return DBCRON_OK;
}

store_batch *store__scratch(store *s, int k, int ncols, const store_bcol *cols)
{
	store_batch *b = &s->scratch->b[k];
	store_batch_reset(b, ncols, cols);
	return b;
}

int store__oom(dbcron_err *err, const char *where)
{
	return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s", where);
}

int store__insert_bumped(store *s, int id, store_param *p, int np, int fire_idx, int due_idx,
			 int64_t *fire_at, int64_t *new_id, dbcron_err *err)
{
	int64_t first = *fire_at;
	for (int tries = 0; tries < BUMP_TRIES; tries++, (*fire_at)++) {
		p[fire_idx] = sp_i64(*fire_at);
		if (due_idx >= 0)
			p[due_idx] = sp_i64(*fire_at);
		int row = store__row(s, id, p, np, err);
		if (row < 0)
			return -row;
		if (row) {
			*new_id = store__i64(s, 0);
			store__reset(s);
			return DBCRON_OK;
		}
	}
	return dbcron_err_set(err, DBCRON_EBUSY,
			      "%s: every fire time from %lld to %lld is taken; try again",
			      store_stmt_what(id), (long long)first, (long long)*fire_at - 1);
}

const store_bcol store__names_cols[1] = {BC_TEXT};
const store_bcol store__ids_cols[1] = {BC_I64};
const store_bcol store__pair_cols[2] = {BC_I64, BC_I64};
