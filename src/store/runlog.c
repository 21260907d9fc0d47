/*
 * The run log: the runs a caller made and ran itself, written whole
 * (store_log_run), the run listings, and retention's prune.
 *
 * Invariants: a logged run is a new run in a state the run state machine
 * lets a run be born in; a fire time already taken moves 1 ms on rather
 * than clash (invariant 1); prune deletes only finished runs older than
 * the cutoff, in batches, never a live one (the statement's rule).
 */
#include "store/store_int.h"

int store_log_run(store *s, const dbcron_run *run, dbcron_err *err)
{
	int64_t now, id;
	int rc;
	if (!run || !run->job_name)
		return dbcron_err_set(err, DBCRON_EINVAL, "log_run: a run with a job name is required");
	if (!dbcron_run_transition_ok(DBCRON_RUN_NONE, run->state))
		return dbcron_err_set(err, DBCRON_EINTERNAL, "log_run: a new run cannot be %s",
				      dbcron_run_state_name(run->state));
	if ((rc = store__db_now(s, &now, err)))
		return rc;
	int64_t at = run->fire_at >= 0 ? run->fire_at : now;
	store_param p[] = {
		sp_i64(run->job_id), sp_text(run->job_name), sp_i64(at), sp_i64(run->attempt > 0 ? run->attempt : 1),
		sp_i64(run->state), sp_i64(run->due_at >= 0 ? run->due_at : at), sp_text(run->node),
		sp_text(run->claim_token), sp_i64n(run->started_ms),
		sp_i64(run->finished_ms >= 0 ? run->finished_ms : now),
		run->has_exit_code ? sp_i64(run->exit_code) : sp_i64n(-1),
		sp_i64(run->missed > 0 ? run->missed : 0), sp_text(run->error), sp_text(run->output),
	};
	/* due_at follows fire_at only when the caller left it unset. */
	return store__insert_bumped(s, ST_LOG_RUN, p, 14, 2, run->due_at >= 0 ? -1 : 5, &at, &id, err);
}

int store_prune_runs_some(store *s, int64_t cutoff_ms, int64_t limit, int64_t *deleted,
			  dbcron_err *err)
{
	int64_t n = 0;
	if (limit <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "prune: a batch size is required");
	store_param p[] = {sp_i64(cutoff_ms), sp_i64(limit)};
	int rc = store__run(s, ST_PRUNE_RUNS, p, 2, &n, err);
	if (deleted)
		*deleted = rc ? 0 : n;
	return rc;
}

int store_prune_runs(store *s, int64_t cutoff_ms, int64_t *deleted, dbcron_err *err)
{
	int64_t total = 0, n;
	int rc;
	do {
		if ((rc = store_prune_runs_some(s, cutoff_ms, STORE_PRUNE_BATCH, &n, err)))
			break;
		total += n;
	} while (n == STORE_PRUNE_BATCH);
	if (deleted)
		*deleted = total;
	return rc;
}

struct run_each {
	store_run_cb cb;
	void *ctx;
};

static int run_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct run_each *e = arg;
	dbcron_run run;
	int rc = store__read_run(s, &run, err);
	if (rc)
		return rc;
	*stop = e->cb(e->ctx, &run) != 0;
	dbcron_run_clear(&run);
	return DBCRON_OK;
}

static int window_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct run_each *e = arg;
	const char *job = s->d->col_text(s->c, 1), *node = s->d->col_text(s->c, 4);
	(void)err;
	/* the row's own text, valid during the call: nothing is copied */
	dbcron_run run = {.id = store__i64(s, 0), .job_name = (char *)job,
			  .fire_at = store__i64(s, 2), .state = (dbcron_run_state)store__i64(s, 3),
			  .node = (char *)node, .started_ms = store__i64n(s, 5),
			  .finished_ms = store__i64n(s, 6)};
	*stop = e->cb(e->ctx, &run) != 0;
	return DBCRON_OK;
}

int store_runs_window(store *s, const char *job, int64_t since_ms, store_run_cb cb, void *ctx,
		      dbcron_err *err)
{
	store_param p[] = {sp_text(job), sp_i64(since_ms)};
	struct run_each e = {cb, ctx};
	return store__each_row(s, ST_RUNS_STATS, p, 2, window_one, &e, err);
}

int store_runs_list(store *s, const store_run_filter *f, store_run_cb cb, void *ctx,
		    dbcron_err *err)
{
	store_param p[] = {sp_text(f ? f->job : NULL), sp_i64(f ? f->state : 0),
			   sp_i64(f && f->since_ms >= 0 ? f->since_ms : -1),
			   sp_i64(f && f->limit > 0 ? (int64_t)f->limit : -1),
			   sp_i64(f && f->keyset ? f->before_fire_at : -1),
			   sp_text(f && f->before_job ? f->before_job : ""),
			   sp_i64(f ? f->before_attempt : 0),
			   sp_i64(f ? f->before_id : 0)};
	struct run_each e = {cb, ctx};
	/* a statement of its own for one job: "?1 IS NULL OR job_name = ?1"
	 * keeps SQLite (and a generic plan) from the job's index */
	return store__each_row(s, f && f->job ? ST_RUNS_LIST_JOB : ST_RUNS_LIST, p, 8, run_one, &e, err);
}

int store_runs_after_id(store *s, int64_t after_id, const char *job, long limit,
			store_run_cb cb, void *ctx, dbcron_err *err)
{
	store_param p[] = {sp_i64(after_id), sp_text(job), sp_i64(limit > 0 ? limit : 1)};
	struct run_each e = {cb, ctx};
	return store__each_row(s, ST_RUNS_AFTER_ID, p, 3, run_one, &e, err);
}

/*
 * Cancel: the two writes are fenced by the row's own state, so a run that
 * a node claimed between them is left to that node (it polls the request
 * at its heartbeat) and one that ended meanwhile is refused by the read
 * that follows.  Nothing is written for a run that is gone or ended.
 */
/* The cancel's write and its audit row, one transaction: "done" when it
 * ended the run, "requested" when its node is to stop it; no row when it
 * changed nothing (asked before, or the run had ended). */
static int cancel_write(store *s, int64_t id, bool *done, bool *changed, dbcron_err *err)
{
	int64_t now = 0, n = 0;
	store_audit a;
	dbcron_run r;
	int rc;
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	store_param p[] = {sp_i64(id), sp_i64(now)};
	if ((rc = store__run(s, ST_RUN_CANCEL_UNCLAIMED, p, 2, &n, err)))
		goto out_rollback;
	*done = n > 0;
	if (!n && (rc = store__run(s, ST_RUN_CANCEL_REQUEST, p, 2, &n, err)))
		goto out_rollback;
	*changed = n > 0;
	if (n) {
		if ((rc = store_run_get(s, id, &r, err)))
			goto out_rollback;
		store__audit_add(&a, "cancel", r.job_name,
				 json_pack("{sIss}", "run_id", (json_int_t)id, "cancel",
					   *done ? "done" : "requested"));
		dbcron_run_clear(&r);
		if ((rc = store__audit_write(s, &a, NULL, err)))
			goto out_rollback;
	}
	rc = store__tx_commit(s, err);
	if (rc)
		goto out_rollback;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	return rc;
}

int store_run_cancel(store *s, int64_t id, bool *done, dbcron_run *run, dbcron_err *err)
{
	dbcron_run r;
	bool changed = false;
	int rc;
	*done = false;
	if ((rc = cancel_write(s, id, done, &changed, err)) || (rc = store_run_get(s, id, &r, err)))
		return rc;
	/* ended by this call (done), or already asked and still going */
	if (!*done && dbcron_run_state_terminal(r.state)) {
		rc = dbcron_err_set(err, DBCRON_EEXISTS, "run %lld already ended (%s): nothing to cancel",
				    (long long)id, dbcron_run_state_name(r.state));
		dbcron_run_clear(&r);
		return rc;
	}
	if (run)
		*run = r;
	else
		dbcron_run_clear(&r);
	return DBCRON_OK;
}

struct id_each {
	store_id_cb cb;
	void *ctx;
};

static int id_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct id_each *e = arg;
	(void)err;
	*stop = e->cb(e->ctx, store__i64(s, 0)) != 0;
	return DBCRON_OK;
}

int store_runs_cancel_asked(store *s, const char *node_id, store_id_cb cb, void *ctx,
			    int64_t *freed, dbcron_err *err)
{
	int64_t now, n = 0;
	int rc;
	if ((rc = store__db_now(s, &now, err)))
		return rc;
	store_param fp[] = {sp_i64(now)};
	if ((rc = store__run(s, ST_RUNS_CANCEL_FREE, fp, 1, &n, err)))
		return rc;
	if (freed)
		*freed = n;
	store_param p[] = {sp_text(node_id)};
	struct id_each e = {cb, ctx};
	return store__each_row(s, ST_RUNS_CANCEL_ASKED, p, 1, id_one, &e, err);
}

int store_run_get(store *s, int64_t id, dbcron_run *run, dbcron_err *err)
{
	store_param p[] = {sp_i64(id)};
	int row = store__row(s, ST_RUN_GET, p, 1, err);
	if (row < 0)
		return -row;
	if (row == 0)
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "run %lld not found", (long long)id);
	int rc = store__read_run(s, run, err);
	store__reset(s);
	return rc;
}
