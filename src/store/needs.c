/*
 * Fan-in (issue 26 item 3): a NEEDS job (kind DBCRON_SCHED_NEEDS, its spec
 * the names it needs) fires once each time every job it needs has
 * succeeded since its own previous fire.  The state is one job_needs row
 * per (dependent, needed job) by id, done = 1 once the needed job
 * succeeded since the dependent last fired.
 *
 * Invariants: a fan-in fires once per completed set, whichever nodes end
 * the needed runs and however close together.  The success, the set
 * check, the dependent's run and the reset are one transaction, the one
 * that writes the run's outcome (store_apply), and it first locks the
 * dependents' job rows (FANIN_LOCK, in id order so two batches cannot
 * deadlock; SQLite holds the whole database), so of two transactions
 * ending two needs of one job the second sees the first's mark: exactly
 * one of them finds the set complete.  The edges follow every job write
 * in the write's own transaction: a needed job that does not exist, one
 * that a write deletes, and a cycle are refused with nothing written.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "model/rules.h"
#include "store/store_int.h"

/* The id of the job called name in the caller's transaction; 0 none. */
static int id_of(store *s, const char *name, int64_t *id, dbcron_err *err)
{
	bool found;
	*id = 0;
	return store__job_id_of(s, name, id, &found, err);
}

struct ids {
	int64_t *v;
	size_t n, cap;
};

static int ids_push(struct ids *a, int64_t id)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		int64_t *v = dbcron__realloc(a->v, cap * sizeof(*v));
		if (!v)
			return DBCRON_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
	return DBCRON_OK;
}

static int ids_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	(void)stop;
	return ids_push(arg, store__i64(s, 0)) ? store__oom(err, "needs") : DBCRON_OK;
}

/* One NEEDS job's edges made its spec: missing ones added (done 0), ones
 * it no longer names dropped, kept ones keep their done flag. */
static int edges_of(store *s, const dbcron_job *j, dbcron_err *err)
{
	struct ids old = {0}, now = {0};
	char name[256];
	int64_t id, nid;
	int rc;
	if ((rc = id_of(s, j->name, &id, err)))
		return rc;
	store_param po[] = {sp_i64(id)};
	if ((rc = store__each_row(s, ST_NEEDS_OF, po, 1, ids_one, &old, err)))
		goto out;
	for (const char *p = j->spec; model_needs_next(&p, name, sizeof(name));) {
		if ((rc = id_of(s, name, &nid, err)))
			goto out;
		if (!nid) {
			rc = dbcron_err_set(err, DBCRON_EINVAL,
					    "job '%s' needs '%s': no job named '%s'", j->name, name,
					    name);
			goto out;
		}
		store_param pa[] = {sp_i64(id), sp_i64(nid)};
		if ((rc = ids_push(&now, nid)) ||
		    (rc = store__run(s, ST_NEEDS_ADD, pa, 2, NULL, err)))
			goto out;
	}
	for (size_t i = 0; i < old.n; i++) {
		bool kept = false;
		for (size_t k = 0; !kept && k < now.n; k++)
			kept = now.v[k] == old.v[i];
		store_param pd[] = {sp_i64(id), sp_i64(old.v[i])};
		if (!kept && (rc = store__run(s, ST_NEEDS_DEL, pd, 2, NULL, err)))
			goto out;
	}
out:
	if (rc == DBCRON_ENOMEM)
		rc = store__oom(err, "needs");
	dbcron__free(old.v);
	dbcron__free(now.v);
	return rc;
}

/* ---- the cycle check: every edge by name, a depth-first walk ---- */

struct edge {
	char *from, *to;
};

struct graph {
	struct edge *e;
	size_t n, cap;
	/* names whose every path was walked without a cycle: not again, so
	 * the walk is O(names x edges), not one per path */
	const char **done;
	size_t ndone;
};

static int edge_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct graph *g = arg;
	(void)stop;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct edge *e = dbcron__realloc(g->e, cap * sizeof(*e));
		if (!e)
			return store__oom(err, "needs");
		g->e = e;
		g->cap = cap;
	}
	const char *a = s->d->col_text(s->c, 0), *b = s->d->col_text(s->c, 1);
	struct edge *e = &g->e[g->n];
	e->from = dbcron__strdup(a ? a : "");
	e->to = dbcron__strdup(b ? b : "");
	g->n++;
	return e->from && e->to ? DBCRON_OK : store__oom(err, "needs");
}

static bool walked(const struct graph *g, const char *name)
{
	for (size_t i = 0; i < g->ndone; i++)
		if (strcmp(g->done[i], name) == 0)
			return true;
	return false;
}

/* From name along the path path[0..depth): a back edge to a name on the
 * path is a cycle, reported "a -> b -> a".  Edges are few (NEEDS jobs
 * only); a path is at most one name per edge long. */
static int walk(struct graph *g, const char **path, size_t depth, dbcron_err *err)
{
	const char *at = path[depth - 1];
	for (size_t i = 0; i < g->n; i++) {
		if (strcmp(g->e[i].from, at) != 0 || walked(g, g->e[i].to))
			continue;
		for (size_t k = 0; k < depth; k++) {
			if (strcmp(path[k], g->e[i].to) != 0)
				continue;
			char msg[512] = "";
			size_t len = 0;
			for (size_t m = k; m < depth && len < sizeof(msg); m++)
				len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s -> ", path[m]);
			return dbcron_err_set(err, DBCRON_EINVAL, "needs make a cycle: %s%s", msg,
					      g->e[i].to);
		}
		if (depth > g->n)
			continue;
		path[depth] = g->e[i].to;
		int rc = walk(g, path, depth + 1, err);
		if (rc)
			return rc;
	}
	g->done[g->ndone++] = at;
	return DBCRON_OK;
}

static int check_cycles(store *s, dbcron_err *err)
{
	struct graph g = {0};
	const char **path = NULL;
	int rc = store__each_row(s, ST_NEEDS_EDGES, NULL, 0, edge_one, &g, err);
	if (!rc && g.n &&
	    (!(path = dbcron__calloc(g.n + 2, sizeof(*path))) ||
	     !(g.done = dbcron__calloc(2 * g.n + 2, sizeof(*g.done)))))
		rc = store__oom(err, "needs");
	/* from each dependent no earlier walk finished */
	for (size_t i = 0; !rc && i < g.n; i++) {
		if (walked(&g, g.e[i].from))
			continue;
		path[0] = g.e[i].from;
		rc = walk(&g, path, 1, err);
	}
	for (size_t i = 0; i < g.n; i++) {
		dbcron__free(g.e[i].from);
		dbcron__free(g.e[i].to);
	}
	dbcron__free(g.e);
	dbcron__free(g.done);
	dbcron__free(path);
	return rc;
}

static int first_name(store *s, void *arg, bool *stop, dbcron_err *err)
{
	const char *t = s->d->col_text(s->c, 0);
	*stop = true;
	return dbcron_err_set(err, DBCRON_EINVAL,
			      "job '%s' needs a job this write deletes: change its --needs first "
			      "(or delete with --force, which sets it aside)",
			      t ? t : (const char *)arg);
}

int store__needs_put(store *s, const dbcron_job *jobs, size_t n, dbcron_err *err)
{
	bool any = false;
	int rc;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].kind != DBCRON_SCHED_NEEDS)
			continue;
		any = true;
		if ((rc = edges_of(s, &jobs[i], err)))
			return rc;
	}
	if ((rc = store__run(s, ST_NEEDS_TIDY, NULL, 0, NULL, err)) ||
	    (rc = store__each_row(s, ST_NEEDS_DANGLING, NULL, 0, first_name, "?", err)))
		return rc;
	return any ? check_cycles(s, err) : DBCRON_OK;
}

/* ---- what needs a job; a delete that would strand it ---- */

int store_job_needed_by(store *s, const char *name, store_name_cb cb, void *ctx,
			dbcron_err *err)
{
	store_param p[] = {sp_text(name)};
	return store__each_name(s, ST_NEEDED_BY, p, 1, cb, ctx, err);
}

struct names_text {
	char *buf;
	size_t len, at;
	int n;
};

static int names_add(void *ctx, const char *name)
{
	struct names_text *t = ctx;
	if (t->at < t->len)
		t->at += (size_t)snprintf(t->buf + t->at, t->len - t->at, "%s%s", t->n ? ", " : "",
					  name);
	t->n++;
	return 0;
}

int store__needs_unlink(store *s, const char *name, int64_t id, bool force, char *detached,
			size_t dlen, dbcron_err *err)
{
	char names[512] = "";
	struct names_text t = {names, sizeof(names), 0, 0};
	int rc = store_job_needed_by(s, name, names_add, &t, err);
	if (rc || !t.n)
		return rc;
	if (!force)
		return dbcron_err_set(err, DBCRON_ECONSTRAINT,
				      "job '%s' is needed by %s: change their --needs first%s", name,
				      names,
				      detached ? ", or delete with --force to detach them (set aside "
						 "until their --needs change)"
					       : "");
	char why[320];
	snprintf(why, sizeof(why), "needs '%s', which was deleted: give it new --needs", name);
	store_param pa[] = {sp_i64(id), sp_text(why)};
	store_param pd[] = {sp_i64(id)};
	if ((rc = store__run(s, ST_NEEDS_SET_ASIDE, pa, 2, NULL, err)) ||
	    (rc = store__run(s, ST_NEEDS_DETACH, pd, 1, NULL, err)))
		return rc;
	if (detached && dlen)
		snprintf(detached, dlen, "%s", names);
	return DBCRON_OK;
}

/* ---- the fan-in, inside the outcome's transaction ---- */

int store__needs_fanin(store *s, const int64_t *ok_jobs, size_t n, dbcron_err *err)
{
	int64_t now = 0;
	struct ids deps = {0}, ready = {0};
	char **names = NULL;
	int rc;
	if (!n)
		return DBCRON_OK;
	store_batch *b = store__scratch(s, 3, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, ok_jobs[i]);
	if (b->oom)
		return store__oom(err, "fan-in");
	store_param p[] = {sp_batch(b)};
	/* the common case, no job needs these: one read */
	if ((rc = store__each_row(s, ST_FANIN_LOCK, p, 1, ids_one, &deps, err)) || !deps.n)
		goto out;
	if ((rc = store__run(s, ST_FANIN_MARK, p, 1, NULL, err)) ||
	    (rc = store__exec(s, ST_FANIN_READY, p, 1, err)))
		goto out;
	int row;
	while ((row = store__next(s, err)) == 1) {
		const char *nm = s->d->col_text(s->c, 1);
		char **nn = dbcron__realloc(names, (ready.n + 1) * sizeof(*nn));
		if (!nn) {
			row = -store__oom(err, "fan-in");
			break;
		}
		names = nn;
		names[ready.n] = dbcron__strdup(nm ? nm : "");
		if (!names[ready.n] || ids_push(&ready, store__i64(s, 0))) {
			dbcron__free(names[ready.n]);
			row = -store__oom(err, "fan-in");
			break;
		}
	}
	store__reset(s);
	if (row < 0) {
		rc = -row;
		goto out;
	}
	/* the clock only for a fire: the common batch stays at one read */
	if (ready.n && (rc = store__db_now(s, &now, err)))
		goto out;
	for (size_t i = 0; i < ready.n; i++) {
		int64_t at = now, rid;
		/* a fan-in fire has no parameters of its own (its job's
		 * declared defaults reach it at the run) */
		store_param ip[] = {sp_i64(ready.v[i]), sp_text(names[i]), sp_i64(at), sp_i64(now),
				    sp_text(NULL)};
		store_param pr[] = {sp_i64(ready.v[i])};
		if ((rc = store__insert_bumped(s, ST_TRIGGER_INSERT, ip, 5, 2, -1, &at, &rid, err)) ||
		    (rc = store__run(s, ST_FANIN_RESET, pr, 1, NULL, err)))
			goto out;
	}
out:
	for (size_t i = 0; i < ready.n; i++)
		dbcron__free(names[i]);
	dbcron__free(names);
	dbcron__free(deps.v);
	dbcron__free(ready.v);
	return rc;
}
