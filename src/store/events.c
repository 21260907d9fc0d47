/*
 * The outbox's reads and claims (issue 26): listing events, claiming them
 * for delivery and ending a delivery.  The rows are written by store_apply
 * (apply.c) in the transaction of the outcome that causes them.
 *
 * Invariants, kept by the statements (stmt.h): UNIQUE(run_id, kind,
 * target) makes one event per run, kind and target however often an
 * outcome is written; a claim takes an event only when it is pending and
 * due, or held by a node that is no longer alive under its lease, and
 * concurrent claimers take disjoint events (SKIP LOCKED, or SQLite's one
 * writer); the end of a delivery is fenced on (id, node, token,
 * DELIVERING), so a node whose event was handed over writes nothing.
 */
#include <string.h>

#include "core/alloc.h"
#include "model/target.h"
#include "store/store_int.h"

static void event_clear(store_event *e)
{
	dbcron__free(e->job_name);
	dbcron__free(e->target);
	dbcron__free(e->last_error);
	dbcron__free(e->node);
	dbcron__free(e->claim_token);
	memset(e, 0, sizeof(*e));
}

static char *dup_text(store *s, int c, bool *oom)
{
	const char *t = s->d->col_text(s->c, c);
	char *d = t ? dbcron__strdup(t) : NULL;
	if (t && !d)
		*oom = true;
	return d;
}

/* STORE_EVENT_COLS of the current row. */
static int read_event(store *s, store_event *e, dbcron_err *err)
{
	bool oom = false;
	memset(e, 0, sizeof(*e));
	e->id = store__i64(s, 0);
	e->job_id = store__i64(s, 1);
	e->job_name = dup_text(s, 2, &oom);
	e->run_id = store__i64(s, 3);
	e->kind = (int)store__i64(s, 4);
	e->target = dup_text(s, 5, &oom);
	e->state = (int)store__i64(s, 6);
	e->attempts = (int)store__i64(s, 7);
	e->next_at = store__i64(s, 8);
	e->last_error = dup_text(s, 9, &oom);
	e->node = dup_text(s, 10, &oom);
	e->claim_token = dup_text(s, 11, &oom);
	e->created_ms = store__i64(s, 12);
	e->finished_ms = s->d->col_null(s->c, 13) ? -1 : store__i64(s, 13);
	if (oom) {
		event_clear(e);
		return store__oom(err, "reading an event");
	}
	return DBCRON_OK;
}

struct event_each {
	store_event_cb cb;
	void *ctx;
};

static int event_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct event_each *ee = arg;
	store_event e;
	int rc = read_event(s, &e, err);
	if (rc)
		return rc;
	*stop = ee->cb(ee->ctx, &e) != 0;
	event_clear(&e);
	return DBCRON_OK;
}

int store_events_list(store *s, const char *job, int state, long limit, store_event_cb cb,
		      void *ctx, dbcron_err *err)
{
	struct event_each ee = {cb, ctx};
	store_param p[] = {sp_text(job), sp_i64(state), sp_i64(limit > 0 ? limit : 100)};
	return store__each_row(s, ST_EVENTS_LIST, p, 3, event_one, &ee, err);
}

int store_events_claim(store *s, const char *node, const char *token, long limit,
		       store_event_cb cb, void *ctx, dbcron_err *err)
{
	struct event_each ee = {cb, ctx};
	int64_t now;
	int rc;
	if (!node || !token || limit <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "claiming events: no node, token or limit");
	if ((rc = store__tx_begin(s, err)))
		return rc;
	store_param p[] = {sp_text(node), sp_text(token), sp_i64(0), sp_i64(limit)};
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	p[2] = sp_i64(now);
	if ((rc = store__run(s, ST_EVENTS_CLAIM, p, 4, NULL, err)) ||
	    (rc = store__tx_commit(s, err)))
		goto out_rollback;
	/* read after the commit: the rows are ours under the token */
	store_param q[] = {sp_text(token)};
	return store__each_row(s, ST_EVENTS_CLAIMED, q, 1, event_one, &ee, err);
out_rollback:
	store__tx_rollback(s);
	return rc;
}

int store_events_claimed(store *s, const char *token, store_event_cb cb, void *ctx,
			 dbcron_err *err)
{
	struct event_each ee = {cb, ctx};
	store_param q[] = {sp_text(token)};
	return store__each_row(s, ST_EVENTS_CLAIMED, q, 1, event_one, &ee, err);
}

/* One end, in the caller's transaction, at the database's now. */
static int finish_one(store *s, const char *node, store_event_end *e, int64_t now,
		      dbcron_err *err)
{
	int64_t changes = 0, next_at = now;
	if (e->state != MODEL_EVENT_PENDING && e->state != MODEL_EVENT_DELIVERED &&
	    e->state != MODEL_EVENT_FAILED)
		return dbcron_err_set(err, DBCRON_EINVAL, "ending a delivery: bad state %d",
				      e->state);
	if (e->next_at >= 0)
		next_at = e->next_at;
	else if (e->retry_in_ms > 0)
		next_at = now + e->retry_in_ms;
	store_param p[] = {sp_i64(e->ev->id),  sp_text(node),	 sp_text(e->ev->claim_token),
			   sp_i64(e->state),   sp_i64(next_at), sp_text(e->error),
			   sp_i64(now)};
	int rc = store__run(s, ST_EVENT_FINISH, p, 7, &changes, err);
	e->applied = !rc && changes > 0;
	return rc;
}

int store_events_finish(store *s, const char *node, store_event_end *ends, size_t n,
			dbcron_err *err)
{
	int64_t now;
	int rc;
	for (size_t i = 0; i < n; i++)
		ends[i].applied = false;
	if (!n)
		return DBCRON_OK;
	if ((rc = store__tx_begin(s, err)))
		return rc;
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	for (size_t i = 0; i < n; i++)
		if ((rc = finish_one(s, node, &ends[i], now, err)))
			goto out_rollback;
	if ((rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	for (size_t i = 0; i < n; i++)
		ends[i].applied = false;
	return rc;
}

int store_event_finish(store *s, const store_event *ev, const char *node, int state,
		       int64_t next_at, const char *error, bool *applied, dbcron_err *err)
{
	store_event_end e = {.ev = ev, .state = state, .next_at = next_at, .error = error};
	int rc = store_events_finish(s, node, &e, 1, err);
	*applied = e.applied;
	return rc;
}

/* ---- overdue ---- */

typedef struct overdue_job {
	int64_t id, period;
	char *name, *targets;
} overdue_job;

typedef struct overdue_list {
	overdue_job *v;
	size_t n, cap;
} overdue_list;

static int overdue_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	overdue_list *l = arg;
	bool oom = false;
	*stop = false;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		overdue_job *v = dbcron__realloc(l->v, cap * sizeof(*v));
		if (!v)
			return store__oom(err, "finding overdue jobs");
		l->v = v, l->cap = cap;
	}
	overdue_job *o = &l->v[l->n];
	o->id = store__i64(s, 0);
	o->name = dup_text(s, 1, &oom);
	o->targets = dup_text(s, 2, &oom);
	o->period = store__i64(s, 3);
	l->n++; /* freed with the list even when a copy failed */
	return oom ? store__oom(err, "finding overdue jobs") : DBCRON_OK;
}

/* The jobs are read whole before the first insert: one statement's rows
 * are not interleaved with another's on the same connection.  The read
 * is outside a transaction, so the usual check (nothing overdue) takes no
 * write lock (SQLite's is the whole file); a period raised meanwhile by
 * another node is left alone by the insert (UNIQUE), so nothing is
 * raised twice. */
int store_overdue_raise(store *s, size_t *raised, dbcron_err *err)
{
	overdue_list l = {0};
	int64_t now, changes;
	int rc;
	*raised = 0;
	if ((rc = store_now_ms(s, &now, err)))
		return rc;
	store_param p[] = {sp_i64(now)};
	if ((rc = store__each_row(s, ST_OVERDUE_FIND, p, 1, overdue_one, &l, err)) || !l.n)
		goto out_free;
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	for (size_t i = 0; i < l.n && !rc; i++) {
		const char *list = l.v[i].targets, *t;
		size_t len;
		while (!rc && (t = model_targets_next(&list, &len))) {
			char *one = dbcron__strndup(t, len);
			if (!one) {
				rc = store__oom(err, "raising overdue events");
				break;
			}
			store_param q[] = {sp_i64(l.v[i].id), sp_text(l.v[i].name),
					   sp_i64(l.v[i].period), sp_text(one), sp_i64(now)};
			changes = 0;
			rc = store__run(s, ST_OVERDUE_INSERT, q, 5, &changes, err);
			*raised += changes > 0 ? (size_t)changes : 0;
			dbcron__free(one);
		}
	}
	if (!rc)
		rc = store__tx_commit(s, err);
	if (rc)
		store__tx_rollback(s);
out_free:
	for (size_t i = 0; i < l.n; i++) {
		dbcron__free(l.v[i].name);
		dbcron__free(l.v[i].targets);
	}
	dbcron__free(l.v);
	return rc;
}
