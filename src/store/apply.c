/*
 * Apply: the outcomes of claimed runs (started, ended, with their output),
 * a node's batch of them in one statement, with the retries and next fires
 * they ask for.
 *
 * Invariants: fencing (invariant 3, store_int.h): each change is matched
 * on (id, token, node) and a refused one comes back not applied; the run
 * state machine holds in the database too (the `live` cell); several
 * updates of one run in a batch are merged in order into one row and the
 * chain checked first; retries, next fires and events (the outbox) land
 * in the same transaction as the outcome that asked for them.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "model/target.h"
#include "store/store_int.h"

static const store_bcol event_cols[3] = {BC_I64, BC_I64, BC_TEXT};

void store__outbox_begin(store *s, store_outbox *o, int slot)
{
	memset(o, 0, sizeof(*o));
	o->b = store__scratch(s, slot, 3, event_cols);
}

/* A batch borrows its text, so each target is copied into o->owned
 * (freed by store__outbox_free). */
void store__outbox_add(store_outbox *o, int64_t run_id, int kind, const char *targets)
{
	const char *list = targets, *t;
	size_t len;
	while (kind && !o->oom && (t = model_targets_next(&list, &len))) {
		char *one = dbcron__strndup(t, len);
		if (!one || dbcron__grow((void **)&o->owned, &o->cap, o->n + 1, sizeof(char *))) {
			dbcron__free(one);
			o->oom = true;
			return;
		}
		o->owned[o->n++] = one;
		store_batch_i64(o->b, run_id);
		store_batch_i64(o->b, kind);
		store_batch_text(o->b, one);
	}
}

int store__outbox_write(store *s, store_outbox *o, int64_t now, dbcron_err *err)
{
	if (o->oom || o->b->oom)
		return store__oom(err, "writing events");
	if (!store_batch_rows(o->b))
		return DBCRON_OK;
	int rc = now < 0 ? store__db_now(s, &now, err) : DBCRON_OK;
	store_param p[] = {sp_i64(now), sp_batch(o->b)};
	if (!rc && !(rc = store__run(s, ST_EVENTS_INSERT, p, 2, NULL, err)))
		s->events_written = true;
	return rc;
}

void store__outbox_free(store_outbox *o)
{
	for (size_t i = 0; i < o->n; i++)
		dbcron__free(o->owned[i]);
	dbcron__free(o->owned);
	memset(o, 0, sizeof(*o));
}

bool store_events_written_take(store *s)
{
	bool w = s->events_written;
	s->events_written = false;
	return w;
}

/* ST_RUNS_APPLY's row: the run, its fence, what it becomes, and `live`,
 * the last live state (SCHEDULED 1, RUNNING 2) it may be found in, so that
 * the run state machine holds in the database too: a write that a RUNNING
 * row may not take (SKIPPED, MISFIRED) applies only to a SCHEDULED row. */
const store_bcol store__apply_cols[] = {BC_I64, BC_TEXT, BC_I64, BC_I64, BC_I64,
				       BC_BOOL, BC_I64, BC_TEXT_CLEAN, BC_TEXT_CLEAN, BC_I64};

/* The `live` cell for a write of state `to` (RUNNING again is the retry of
 * a start write that may have landed). */
int64_t store__apply_live(dbcron_run_state to)
{
	return to == DBCRON_RUN_RUNNING || dbcron_run_transition_ok(DBCRON_RUN_RUNNING, to)
		       ? DBCRON_RUN_RUNNING
		       : DBCRON_RUN_SCHEDULED;
}

struct apply_slot {
	int64_t run_id;
	size_t pos; /* index into ups */
};

static int apply_slot_cmp(const void *a, const void *b)
{
	const struct apply_slot *x = a, *y = b;
	if (x->run_id != y->run_id)
		return x->run_id < y->run_id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The retries, next fires, events and fan-ins the applied updates ask
 * for: the events in the outcome's transaction (the outbox), so an outcome
 * that lands has its events and one that is fenced has none; likewise a
 * success marks the jobs that need its job (needs.c). */
static int apply_followups(store *s, store_update *ups, size_t n, dbcron_err *err)
{
	store_batch *retry = store__scratch(s, 1, 2, store__pair_cols);
	store_batch *next = store__scratch(s, 2, 2, store__pair_cols);
	store_outbox ev;
	store__outbox_begin(s, &ev, 3);
	size_t nok = 0;
	int64_t now = -1, *ok = NULL;
	int rc = DBCRON_OK;
	for (size_t i = 0; i < n; i++) {
		const store_update *u = &ups[i];
		if (!u->applied)
			continue;
		if (u->state == DBCRON_RUN_SUCCEEDED) {
			if (!ok && !(ok = dbcron__calloc(n, sizeof(*ok))))
				ev.oom = true;
			else
				ok[nok++] = u->job_id;
		}
		if (u->react_targets)
			store__outbox_add(&ev, u->run_id, u->react_kind, u->react_targets);
		if (u->retry_due_at >= 0) {
			store_batch_i64(retry, u->run_id);
			store_batch_i64(retry, u->retry_due_at);
		}
		if (u->job_next_fire_at >= 0) {
			store_batch_i64(next, u->job_id);
			store_batch_i64(next, u->job_next_fire_at);
		}
	}
	if (retry->oom || next->oom || ev.oom)
		rc = store__oom(err, "apply");
	if (!rc && store_batch_rows(ev.b) && !(rc = store__db_now(s, &now, err)))
		rc = store__outbox_write(s, &ev, now, err);
	store__outbox_free(&ev);
	if (!rc && store_batch_rows(retry) && now < 0)
		rc = store__db_now(s, &now, err);
	if (!rc && store_batch_rows(retry)) {
		store_param p[] = {sp_i64(now), sp_batch(retry)};
		rc = store__run(s, ST_RETRY_INSERT, p, 2, NULL, err);
	}
	if (!rc && store_batch_rows(next)) {
		store_param p[] = {sp_batch(next)};
		rc = store__run(s, ST_JOBS_NEXT_IF_NULL, p, 1, NULL, err);
	}
	/* in the outcome's transaction: a fan-in fires once per set (after
	 * the events: it reuses their scratch slot) */
	if (!rc && nok)
		rc = store__needs_fanin(s, ok, nok, err);
	dbcron__free(ok);
	return rc;
}

/* Does the chain of one run's updates slots[i..j) break the run state
 * machine (an update invalid alone, or one that cannot follow the last)? */
static bool chain_broken(const store_update *ups, const struct apply_slot *slots, size_t i,
			 size_t j)
{
	int prev = 0;
	for (; i < j; i++) {
		const store_update *v = &ups[slots[i].pos];
		if (v->invalid || (prev && !dbcron_run_transition_ok(prev, v->state)))
			return true;
		prev = v->state;
	}
	return false;
}

/* The updates in slot order (by run), each run's merged into one row of b.
 * A run whose chain breaks the run state machine is left out, its updates
 * marked invalid: one bad run must not hold up every other write of the
 * node (the batch would be refused and tried again forever). */
static void apply_merge(store_update *ups, const struct apply_slot *slots, size_t n,
			store_batch *b)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		const store_update *u = &ups[slots[i].pos];
		int64_t sm = -1, fm = -1;
		bool hx = false;
		int xc = 0;
		const char *er = NULL, *ou = NULL, *tok = u->token;
		dbcron_run_state stt = u->state;
		while (j < n && slots[j].run_id == u->run_id)
			j++;
		if (chain_broken(ups, slots, i, j)) {
			for (; i < j; i++)
				ups[slots[i].pos].invalid = true;
			continue;
		}
		for (j = i; j < n && slots[j].run_id == u->run_id; j++) {
			const store_update *v = &ups[slots[j].pos];
			stt = v->state;
			tok = v->token;
			if (v->started_ms >= 0)
				sm = v->started_ms;
			if (v->finished_ms >= 0)
				fm = v->finished_ms;
			if (v->has_exit_code) {
				hx = true;
				xc = v->exit_code;
			}
			if (v->error)
				er = v->error;
			if (v->output)
				ou = v->output;
		}
		store_batch_i64(b, u->run_id);
		store_batch_text(b, tok);
		store_batch_i64(b, stt);
		store_batch_i64n(b, sm);
		store_batch_i64n(b, fm);
		store_batch_bool(b, hx);
		store_batch_i64(b, xc);
		store_batch_text(b, er);
		store_batch_text(b, ou);
		store_batch_i64(b, store__apply_live(stt));
		i = j;
	}
}

/*
 * Several updates of one run in a batch (RUNNING, then its end) are merged
 * in order into one row: an UPDATE joined to a batch applies only one of a
 * row's matches, at random.  The merged chain is checked against the run
 * state machine from the live states the statement fences on.
 */
int store_apply(store *s, const char *node_id, store_update *ups, size_t n, dbcron_err *err)
{
	struct apply_slot *slots = NULL;
	bool extra = false;
	int rc, row;

	if (n && (!ups || !node_id))
		return dbcron_err_set(err, DBCRON_EINVAL, "apply: no node or no updates");
	for (size_t i = 0; i < n; i++) {
		ups[i].applied = false;
		/* A run leaves SCHEDULED or RUNNING here; a hand-back is
		 * store_runs_release(). */
		int st = ups[i].state;
		ups[i].invalid = !ups[i].token || st == DBCRON_RUN_SCHEDULED ||
				 !(dbcron_run_transition_ok(DBCRON_RUN_SCHEDULED, st) ||
				   dbcron_run_transition_ok(DBCRON_RUN_RUNNING, st));
		/* a success may complete a fan-in (needs.c); an outcome may
		 * have events (the outbox) */
		if (!ups[i].invalid && (ups[i].retry_due_at >= 0 || ups[i].job_next_fire_at >= 0 ||
					ups[i].state == DBCRON_RUN_SUCCEEDED ||
					(ups[i].react_kind && ups[i].react_targets)))
			extra = true;
	}
	if (n == 0)
		return DBCRON_OK;
	slots = dbcron__calloc(n, sizeof(*slots));
	if (!slots)
		return store__oom(err, "apply");
	for (size_t i = 0; i < n; i++) {
		slots[i].run_id = ups[i].run_id;
		slots[i].pos = i;
	}
	dbcron__sort(slots, n, sizeof(*slots), apply_slot_cmp);

	store_batch *b = store__scratch(s, 0, STORE_APPLY_NCOLS, store__apply_cols);
	apply_merge(ups, slots, n, b);
	if (b->oom) {
		rc = store__oom(err, "apply");
		goto out_free;
	}
	if (!store_batch_rows(b)) {
		rc = DBCRON_OK; /* every update was invalid */
		goto out_free;
	}
	/* Without retries or next fires the UPDATE is the whole transaction,
	 * unless the dialect runs a batch row by row. */
	bool own_tx = extra || (s->d->caps & STORE_CAP_ROW_BATCH);
	if (own_tx && (rc = store__tx_begin(s, err)))
		goto out_free;
	store_param p[] = {sp_text(node_id), sp_batch(b)};
	if ((rc = store__exec(s, ST_RUNS_APPLY, p, 2, err)))
		goto out_rollback;
	while ((row = store__next(s, err)) == 1) {
		int64_t id = store__i64(s, 0);
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (slots[mid].run_id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < n && slots[lo].run_id == id; lo++)
			ups[slots[lo].pos].applied = true;
	}
	store__reset(s);
	if (row < 0) {
		rc = -row;
		goto out_rollback;
	}
	if ((extra && (rc = apply_followups(s, ups, n, err))) ||
	    (own_tx && (rc = store__tx_commit(s, err))))
		goto out_rollback;
	dbcron__free(slots);
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
out_free:
	dbcron__free(slots);
	return rc;
}

int store_job_running(store *s, int64_t job_id, int64_t except_run_id, bool *running,
		      dbcron_err *err)
{
	*running = false;
	store_param p[] = {sp_i64(job_id), sp_i64(except_run_id)};
	int row = store__row(s, ST_JOB_RUNNING, p, 2, err);
	if (row < 0)
		return -row;
	*running = row == 1;
	if (row)
		store__reset(s);
	return DBCRON_OK;
}
