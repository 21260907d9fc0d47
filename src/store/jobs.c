/*
 * One job at a time, and the job listings: get, the listings (pages,
 * briefs, last runs and successes, paused state by id), pause, delete,
 * rename and a manual trigger.  Writing definitions is jobput.c.
 *
 * Invariants: a pause, delete or rename bumps the jobs generation in its
 * own transaction, so a node learns of it at its next heartbeat
 * (store_nodes_wait_seen waits for that); a delete ends the job's unclaimed
 * runs ABANDONED (invariant 2, store_int.h); a trigger whose fire time is
 * taken moves 1 ms on, never a second first attempt (invariant 1); a row
 * that no longer decodes is listed set aside, never fails the listing.
 */
#include <string.h>

#include "store/store_int.h"

int store_job_get(store *s, const char *name, dbcron_job *out, dbcron_err *err)
{
	dbcron_job_init(out);
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_get: no name");
	store_param p[] = {sp_text(name)};
	int row = store__row(s, ST_JOB_GET, p, 1, err);
	if (row < 0)
		return -row;
	if (row == 0)
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
	int rc = store__read_job_lenient(s, out, err);
	store__reset(s);
	return rc;
}

struct job_each {
	store_job_cb cb;
	void *ctx;
};

static int job_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct job_each *e = arg;
	dbcron_job job;
	int rc = store__read_job_lenient(s, &job, err);
	if (rc)
		return rc;
	*stop = e->cb(e->ctx, &job) != 0;
	dbcron_job_clear(&job);
	return DBCRON_OK;
}

int store_jobs_named(store *s, const char *const *names, size_t n, store_job_cb cb, void *ctx,
		     dbcron_err *err)
{
	store_batch *b = store__scratch(s, 0, 1, store__names_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_text(b, names[i]);
	if (b->oom)
		return store__oom(err, "reading jobs");
	store_param p[] = {sp_batch(b)};
	struct job_each e = {cb, ctx};
	return store__each_row(s, ST_JOBS_NAMED, p, 1, job_one, &e, err);
}

int store_job_list(store *s, store_job_cb cb, void *ctx, dbcron_err *err)
{
	struct job_each e = {cb, ctx};
	return store__each_row(s, ST_JOB_LIST, NULL, 0, job_one, &e, err);
}

int store_job_page(store *s, const char *after, long limit, store_job_cb cb, void *ctx,
		   dbcron_err *err)
{
	struct job_each e = {cb, ctx};
	if (limit < 1)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_page: limit %ld", limit);
	store_param p[] = {sp_text(after ? after : ""), sp_i64(limit)};
	return store__each_row(s, ST_JOB_PAGE, p, 2, job_one, &e, err);
}

int store_job_search(store *s, const char *after, long limit, const char *text,
		     store_job_cb cb, void *ctx, dbcron_err *err)
{
	struct job_each e = {cb, ctx};
	if (limit < 1 || !text)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_search: limit %ld", limit);
	store_param p[] = {sp_text(after ? after : ""), sp_i64(limit), sp_text(text)};
	return store__each_row(s, ST_JOB_SEARCH, p, 3, job_one, &e, err);
}

struct last_ok_each {
	store_last_ok_cb cb;
	void *ctx;
};

static int last_ok_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct last_ok_each *e = arg;
	const char *name = s->d->col_text(s->c, 0);
	store_last_ok j = {.name = name ? name : "", .finished_ms = store__i64n(s, 1),
			   .max_silence_ms = store__i64(s, 2), .created_ms = store__i64(s, 3),
			   .paused = store__i64(s, 4) != 0};
	*stop = e->cb(e->ctx, &j) != 0;
	return DBCRON_OK;
}

int store_job_last_success(store *s, long limit, store_last_ok_cb cb, void *ctx,
			   dbcron_err *err)
{
	struct last_ok_each e = {cb, ctx};
	store_param p[] = {sp_i64(limit)};
	return store__each_row(s, ST_JOB_LAST_OK, p, 1, last_ok_one, &e, err);
}

struct last_run_each {
	store_last_run_cb cb;
	void *ctx;
};

static int last_run_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct last_run_each *e = arg;
	(void)err;
	store_last_run r = {.job_id = store__i64(s, 0), .run_id = store__i64(s, 1),
			    .state = (int)store__i64(s, 2), .finished_ms = store__i64n(s, 3)};
	*stop = e->cb(e->ctx, &r) != 0;
	return DBCRON_OK;
}

int store_jobs_last_run(store *s, const int64_t *ids, size_t n, store_last_run_cb cb,
			void *ctx, dbcron_err *err)
{
	if (n == 0)
		return DBCRON_OK;
	if (!ids || !cb)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "jobs_last_run: ids and a callback are required");
	store_batch *b = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, ids[i]);
	if (b->oom)
		return store__oom(err, "jobs' last runs");
	store_param p[] = {sp_batch(b)};
	struct last_run_each e = {cb, ctx};
	return store__each_row(s, ST_JOBS_LAST_RUN, p, 1, last_run_one, &e, err);
}

struct strip_each {
	store_strip_cb cb;
	void *ctx;
};

static int strip_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct strip_each *e = arg;
	(void)err;
	store_strip_run r = {.job_id = store__i64(s, 0), .run_id = store__i64(s, 1),
			     .state = (int)store__i64(s, 2), .fire_at = store__i64(s, 3),
			     .attempt = (int)store__i64(s, 4)};
	*stop = e->cb(e->ctx, &r) != 0;
	return DBCRON_OK;
}

int store_jobs_strip(store *s, const int64_t *ids, size_t n, long limit, store_strip_cb cb,
		     void *ctx, dbcron_err *err)
{
	if (n == 0)
		return DBCRON_OK;
	if (!ids || !cb || limit < 1)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "jobs_strip: ids, a callback and a limit are required");
	store_batch *b = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, ids[i]);
	if (b->oom)
		return store__oom(err, "jobs' last fires");
	store_param p[] = {sp_batch(b), sp_i64(limit)};
	struct strip_each e = {cb, ctx};
	return store__each_row(s, ST_JOBS_STRIP, p, 2, strip_one, &e, err);
}

struct brief_each {
	store_brief_cb cb;
	void *ctx;
};

static int brief_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct brief_each *e = arg;
	store_job_brief b = {.name = s->d->col_text(s->c, 0), .next_fire_at = store__i64n(s, 1),
			     .paused = store__i64(s, 2) != 0};
	if (!b.name)
		b.name = "";
	*stop = e->cb(e->ctx, &b) != 0;
	return DBCRON_OK;
}

int store_job_briefs(store *s, store_brief_cb cb, void *ctx, dbcron_err *err)
{
	struct brief_each e = {cb, ctx};
	return store__each_row(s, ST_JOB_BRIEF, NULL, 0, brief_one, &e, err);
}

/* The job called name as it is inside the caller's transaction, for the
 * trail's before; *found false when there is none. */
static int job_now(store *s, const char *name, dbcron_job *out, bool *found, dbcron_err *err)
{
	store_param p[] = {sp_text(name)};
	dbcron_job_init(out);
	int row = store__row(s, ST_JOB_GET, p, 1, err);
	if (row < 0)
		return -row;
	if (!(*found = row > 0))
		return DBCRON_OK;
	int rc = store__read_job_lenient(s, out, err);
	store__reset(s);
	return rc;
}

int store_job_set_paused(store *s, const char *name, bool paused, int64_t next_fire_at,
			 dbcron_err *err)
{
	store_audit a;
	dbcron_job prev;
	bool found;
	int rc;
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_set_paused: no name");
	store__audit_begin(s, &a);
	dbcron_job_init(&prev);
	/* A pause tells the nodes (GEN_BUMP): fires they claimed before it
	 * must not start (store_nodes_wait_seen). */
	store_param p[] = {sp_text(name), sp_i64(paused), sp_i64n(next_fire_at)};
	if ((rc = store__tx_begin(s, err)) || (rc = job_now(s, name, &prev, &found, err)))
		goto out_rollback;
	if (!found) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
		goto out_rollback;
	}
	if ((rc = store__run(s, ST_JOB_SET_PAUSED, p, 3, NULL, err)))
		goto out_rollback;
	store__audit_add(&a, paused ? "pause" : "resume", name,
			 json_pack("{s{s{sbsb}}}", "changes", "paused", "before", prev.paused,
				   "after", paused));
	if ((paused && (rc = store__run(s, ST_GEN_BUMP, NULL, 0, NULL, err))) ||
	    (rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	dbcron_job_clear(&prev);
	return rc;
}

int store_job_delete(store *s, const char *name, dbcron_err *err)
{
	return store_job_delete_force(s, name, false, NULL, 0, err);
}

int store_job_delete_force(store *s, const char *name, bool force, char *detached, size_t dlen,
			   dbcron_err *err)
{
	int64_t now, n = 0, id = 0;
	dbcron_job prev;
	store_audit a;
	bool found;
	int rc;
	if (detached && dlen)
		detached[0] = '\0';
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_delete: no name");
	store__audit_begin(s, &a);
	dbcron_job_init(&prev);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	store_param p[] = {sp_text(name)};
	/* the whole definition, for the trail's before */
	if ((rc = store__db_now(s, &now, err)) || (rc = job_now(s, name, &prev, &found, err)))
		goto out_rollback;
	id = prev.id;
	/* what needs it, before it goes (needs.c) */
	char none[1] = "";
	if ((found && (rc = store__needs_unlink(s, name, id, force, detached ? detached : none,
						 detached ? dlen : sizeof(none), err))) ||
	    (rc = store__run(s, ST_JOB_DELETE, p, 1, &n, err)))
		goto out_rollback;
	if (n == 0) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
		goto out_rollback;
	}
	/* with force, what it detached from its dependents */
	const char *gone = detached ? detached : none;
	store__audit_job(&a, "delete", name, &prev, NULL,
			 *gone ? json_pack("{ss}", "detached", gone) : NULL);
	store_param pn[] = {sp_i64(now)};
	if ((rc = store__run(s, ST_RUNS_CLOSE_ORPHANS, pn, 1, NULL, err)) ||
	    (rc = store__run(s, ST_NEEDS_TIDY, NULL, 0, NULL, err)) ||
	    (rc = store__run(s, ST_GEN_BUMP, NULL, 0, NULL, err)) ||
	    (rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	dbcron_job_clear(&prev);
	return rc;
}

int store__job_id_of(store *s, const char *name, int64_t *id, bool *found, dbcron_err *err)
{
	store_param p[] = {sp_text(name)};
	int row = store__row(s, ST_JOB_ID, p, 1, err);
	if (row < 0)
		return -row;
	if ((*found = row > 0))
		*id = store__i64(s, 0);
	store__reset(s);
	return DBCRON_OK;
}

int store_job_rename(store *s, const char *from, const char *to, dbcron_err *err)
{
	int64_t now, id = 0, n = 0;
	store_audit a;
	bool found;
	int rc;
	if (!from || !to)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_rename: no name");
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__db_now(s, &now, err)) || (rc = store__job_id_of(s, to, &id, &found, err)))
		goto out_rollback;
	if (found) {
		rc = dbcron_err_set(err, DBCRON_EEXISTS, "job '%s' already exists", to);
		goto out_rollback;
	}
	if ((rc = store__job_id_of(s, from, &id, &found, err)))
		goto out_rollback;
	if (!found) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", from);
		goto out_rollback;
	}
	/* a dependent names it in its --needs: refused, never left naming a
	 * job that is gone */
	if ((rc = store__needs_unlink(s, from, id, false, NULL, 0, err)))
		goto out_rollback;
	store_param pr[] = {sp_text(from), sp_text(to), sp_i64(now)};
	store_param pj[] = {sp_i64(id), sp_text(to)};
	if ((rc = store__run(s, ST_JOB_RENAME, pr, 3, &n, err)))
		goto out_rollback;
	if (n != 1) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", from);
		goto out_rollback;
	}
	/* the row is the job's under its new name: what --job NEW finds */
	store__audit_add(&a, "rename", to,
			 json_pack("{s{s{ssss}}}", "changes", "name", "before", from, "after", to));
	/* nodes holding the job by id see the new name at their next read */
	if ((rc = store__run(s, ST_RUNS_RENAME, pj, 2, NULL, err)) ||
	    (rc = store__run(s, ST_GEN_BUMP, NULL, 0, NULL, err)) ||
	    (rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	return rc;
}

int store_job_trigger(store *s, const char *name, int64_t *run_id, int64_t *fire_at,
		      dbcron_err *err)
{
	return store_job_trigger_params(s, name, NULL, run_id, fire_at, err);
}

int store_job_trigger_params(store *s, const char *name, const char *params, int64_t *run_id,
			     int64_t *fire_at, dbcron_err *err)
{
	int64_t now, job_id = 0, rid = 0;
	store_audit a;
	bool found;
	int rc;
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_trigger: no name");
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__db_now(s, &now, err)) || (rc = store__job_id_of(s, name, &job_id, &found, err)))
		goto out_rollback;
	if (!found) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
		goto out_rollback;
	}
	int64_t at = now;
	store_param ip[] = {sp_i64(job_id), sp_text(name), sp_i64(at), sp_i64(now), sp_text(params)};
	if ((rc = store__insert_bumped(s, ST_TRIGGER_INSERT, ip, 5, 2, -1, &at, &rid, err)))
		goto out_rollback;
	store__audit_add(&a, "trigger", name,
			 json_pack("{sIsI}", "run_id", (json_int_t)rid, "fire_at_ms", (json_int_t)at));
	if ((rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	if (run_id)
		*run_id = rid;
	if (fire_at)
		*fire_at = at;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	return rc;
}

struct jobs_state_each {
	store_job_state_cb cb;
	void *ctx;
};

static int jobs_state_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct jobs_state_each *e = arg;
	(void)err;
	*stop = e->cb(e->ctx, store__i64(s, 0), store__i64(s, 1) != 0) != 0;
	return DBCRON_OK;
}

int store_jobs_state(store *s, const int64_t *ids, size_t n, store_job_state_cb cb, void *ctx,
		     dbcron_err *err)
{
	if (n == 0)
		return DBCRON_OK;
	if (!ids || !cb)
		return dbcron_err_set(err, DBCRON_EINVAL, "jobs_state: ids and a callback are required");
	store_batch *b = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, ids[i]);
	if (b->oom)
		return store__oom(err, "jobs state");
	store_param p[] = {sp_batch(b)};
	struct jobs_state_each e = {cb, ctx};
	return store__each_row(s, ST_JOBS_STATE, p, 1, jobs_state_one, &e, err);
}
