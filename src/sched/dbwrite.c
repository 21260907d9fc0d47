/*
 * The run writes, on the db thread: every start and end the workers queued
 * on the pending list goes out in one batch (dbloop_flush), at-most-once
 * starts are written fenced before their job may start (dbloop_sync_starts),
 * and the graceful stop's last writes: unstarted fires handed back, running
 * ones waited for (then cancelled), outcomes flushed, the node marked
 * stopped.
 *
 * Invariants kept here:
 *  3 fencing: every write carries the run's claim token; a refused write
 *    means the run is no longer ours (logged run.fenced), except a final
 *    write whose earlier try may have landed, which is read back first;
 *  6 this thread never waits on a job: it only reads what the workers
 *    queued on the pending and sync lists;
 *  a write that failed is kept and tried again, never dropped: a node is
 *    marked stopped only when nothing of it is left unwritten.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/log.h"
#include "model/rules.h"
#include "model/target.h"
#include "sched/dbloop_int.h"
#include "sched/node_int.h"

static void fill_update(store_update *u, const fire *f)
{
	memset(u, 0, sizeof(*u));
	u->run_id = f->run.id;
	u->job_id = f->run.job_id;
	u->fire_at = f->run.fire_at;
	u->attempt = f->run.attempt;
	u->token = f->run.claim_token;
	u->started_ms = atomic_load(&f->started_db);
	u->finished_ms = -1;
	u->retry_due_at = -1;
	u->job_next_fire_at = -1;
}

/*
 * A final write refused after an earlier try of it failed ambiguously: did
 * that try land?  The row then holds our outcome under our claim, and the
 * refusal is not a fence (the log must not say the run was taken from us).
 * A failed read says no: the fenced line is the cautious report.
 */
static bool final_write_landed(dbcron_node *n, const store_update *u)
{
	dbcron_run r;
	dbcron_err e = {0};
	memset(&r, 0, sizeof(r));
	if (store_run_get(n->st, u->run_id, &r, &e))
		return false;
	bool ours = r.state == u->state && r.node && strcmp(r.node, n->node_id) == 0 &&
		    r.claim_token && strcmp(r.claim_token, u->token) == 0;
	dbcron_run_clear(&r);
	return ours;
}

/*
 * The pending list as one batch of updates (mu held).  A STARTED fire
 * becomes RUNNING as its start is taken, a FINISHED one WRITING, its
 * update carrying the outcome and what follows it (a retry, the job's next
 * fire).  Returns how many; ups and batch hold room for every pending fire.
 */
static size_t take_pending(dbcron_node *n, store_update *ups, fire **batch)
{
	size_t k = 0;
	for (fire *f = fire_list_take(&n->pending), *nx; f; f = nx) {
		nx = f->next;
		f->prev = f->next = NULL;
		store_update *u = &ups[k];
		fill_update(u, f);
		if (f->phase == FIRE_FINISHED) {
			fire_set_phase(f, FIRE_WRITING);
			u->state = f->end_state;
			u->finished_ms = f->finished_db;
			u->has_exit_code = f->res.has_exit_code;
			u->exit_code = f->res.exit_code;
			u->error = f->end_why ? f->end_why : f->res.error;
			u->output = f->res.output;
			model_followup fu = model_run_followup(&f->snap->job, f->run.attempt,
							       f->end_state, f->no_retry,
							       f->finished_db);
			u->retry_due_at = fu.retry_due_at;
			u->job_next_fire_at = fu.job_next_fire_at;
			u->react_kind = model_react_kind_of(f->end_state, fu.retry_due_at >= 0);
			u->react_targets = model_react_targets(&f->snap->job, u->react_kind);
		} else {
			fire_set_phase(f, FIRE_RUNNING); /* from STARTED */
			u->state = DBCRON_RUN_RUNNING;
		}
		batch[k++] = f;
	}
	return k;
}

/*
 * The batch was not written (mu held): keep its fires for the next try
 * (database away); the lease decides what happens to the runs meanwhile.
 * A start whose fire ended or went back to the heap since needs no retry.
 */
static void keep_for_retry(dbcron_node *n, fire **batch, size_t k, int rc)
{
	for (size_t i = 0; i < k; i++) {
		fire *f = batch[i];
		if (f->phase == FIRE_WRITING)
			fire_set_phase(f, FIRE_FINISHED);
		else if (f->phase == FIRE_RUNNING)
			fire_set_phase(f, FIRE_STARTED);
		else
			continue;
		if (rc == DBCRON_ECONN)
			f->write_doubt = true;
		fire_list_push(&n->pending, f);
	}
	n->db_kicked = false;
}

/* The jobs whose runs this batch ended, for the per-job counts of
 * /metrics: taken under mu, handed over after it is let go (no two locks). */
typedef struct ended_jobs {
	char **name;
	int *state;
	size_t n;
} ended_jobs;

/*
 * One fire of a batch that went through (mu held): a refusal is logged as
 * fenced unless `confirmed` (an earlier try whose reply was lost had
 * written it), what landed is counted, and a fire whose final state is out
 * is freed.
 */
static void settle(dbcron_node *n, fire *f, const store_update *u, bool confirmed,
		   ended_jobs *ended)
{
	if (confirmed) {
		dbcron__log(LOG_INFO, "run.write_confirmed", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
			    LOG_INT("run", f->run.id), LOG_STR("state", dbcron_run_state_name(u->state)),
			    LOG_STR("msg", "an earlier try whose reply was lost had written it"));
	} else if (u->invalid) {
		/* a bug, not a fence: said as one, and the node goes on */
		dbcron__log(LOG_ERROR, "run.write_dropped", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
			    LOG_INT("run", f->run.id), LOG_STR("state", dbcron_run_state_name(u->state)),
			    LOG_STR("msg", "write dropped: it breaks the run state machine"));
	} else if (!u->applied) {
		atomic_fetch_add_explicit(&n->stats.fenced, 1, memory_order_relaxed);
		n->n_fenced++;
		dbcron__log(LOG_WARN, "run.fenced", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
			    LOG_INT("run", f->run.id), LOG_STR("state", dbcron_run_state_name(u->state)),
			    LOG_STR("msg", "write refused: the run is no longer ours"));
	}
	/* /metrics: what this node wrote (a refused write is not ours).  A
	 * run that ended before its start was flushed has one write carrying
	 * both, so lateness counts the first write that has a start,
	 * whichever it is. */
	bool landed = u->applied || confirmed;
	if (landed && !f->start_counted && u->started_ms >= 0) {
		f->start_counted = true;
		node_hist_observe(&n->stats.late_ms, u->started_ms - fire_start_at(f));
	}
	if (landed && f->phase == FIRE_WRITING) {
		if ((int)u->state >= 0 && u->state < NODE_STATE_MAX)
			atomic_fetch_add_explicit(&n->stats.runs[u->state], 1, memory_order_relaxed);
		if (ended->name && ended->state && f->run.job_name &&
		    (ended->name[ended->n] = dbcron__strdup(f->run.job_name)))
			ended->state[ended->n++] = (int)u->state;
		if (u->started_ms >= 0)
			node_hist_observe(&n->stats.run_ms, u->finished_ms - u->started_ms);
	}
	if (f->phase == FIRE_WRITING) {
		/* nothing else refers to it once its final state is out */
		fire_set_phase(f, FIRE_WRITTEN);
		n->n_finished++;
		n->inflight--;
		fire_free(f);
	}
}

/*
 * Write every pending start and end in one batch (take_pending); a fire
 * whose final state went out (or was refused by the fence) is freed
 * (settle), a batch that failed is kept for the next try (keep_for_retry).
 */
int dbloop_flush(dbcron_node *n, dbcron_err *err)
{
	pthread_mutex_lock(&n->mu);
	size_t cnt = 0;
	for (fire *f = n->pending.head; f; f = f->next)
		cnt++;
	if (!cnt) {
		pthread_mutex_unlock(&n->mu);
		return DBCRON_OK;
	}
	store_update *ups = dbcron__calloc(cnt, sizeof(*ups));
	fire **batch = dbcron__calloc(cnt, sizeof(*batch));
	if (!ups || !batch) {
		/* the fires stay pending; try again next cycle */
		pthread_mutex_unlock(&n->mu);
		dbcron__free(ups);
		dbcron__free(batch);
		return dbcron_err_set(err, DBCRON_ENOMEM, "flush: out of memory");
	}
	size_t k = take_pending(n, ups, batch);
	pthread_mutex_unlock(&n->mu);

	int rc = store_apply(n->st, n->node_id, ups, k, err);
	bool *ours = rc ? NULL : dbcron__calloc(k, sizeof(*ours));
	/* the per-job counts only when an HTTP server asked for them */
	bool per_job = !rc && atomic_load_explicit(&n->stats.jobs_max, memory_order_relaxed) > 0;
	ended_jobs ended = {
		.name = per_job ? dbcron__calloc(k, sizeof(*ended.name)) : NULL,
		.state = per_job ? dbcron__calloc(k, sizeof(*ended.state)) : NULL,
	};
	for (size_t i = 0; ours && i < k; i++)
		if (!ups[i].applied && batch[i]->write_doubt && batch[i]->phase == FIRE_WRITING)
			ours[i] = final_write_landed(n, &ups[i]);
	/* the outbox rows went out with these outcomes: the db loop claims
	 * them at once instead of polling for them (react.h) */
	for (size_t i = 0; !rc && i < k; i++)
		if (ups[i].applied && ups[i].react_targets)
			n->events_due = true;
	pthread_mutex_lock(&n->mu);
	if (rc)
		keep_for_retry(n, batch, k, rc);
	else
		for (size_t i = 0; i < k; i++)
			settle(n, batch[i], &ups[i], ours && ours[i], &ended);
	atomic_store_explicit(&n->stats.inflight, (long long)n->inflight, memory_order_relaxed);
	pthread_mutex_unlock(&n->mu);
	for (size_t i = 0; i < ended.n; i++) {
		node_stats_job_ended(&n->stats, ended.name[i], ended.state[i]);
		dbcron__free(ended.name[i]);
	}
	dbcron__free(ended.name);
	dbcron__free(ended.state);
	dbcron__free(ours);
	dbcron__free(ups);
	dbcron__free(batch);
	return rc;
}

/* A STARTING fire that will never start (mu held). */
static void sync_release(dbcron_node *n, fire *f, const char *why)
{
	inflight_running_remove(f->js, f);
	n->running--;
	n->inflight--;
	dispatch_unhold(n, f->js);
	dbcron__log(LOG_WARN, "run.fenced", LOG_STR("job", f->run.job_name),
		    LOG_INT("fire_at", f->run.fire_at), LOG_STR("msg", "not started"),
		    LOG_STR("reason", why));
	fire_set_phase(f, FIRE_RELEASED);
	fire_free(f);
}

/*
 * At-most-once jobs: write RUNNING fenced, start only what went through.
 * A write that failed (busy, connection, a lost reply) is tried again on
 * the next cycle with the db loop's backoff: the run is still ours, and
 * forgetting it would strand it SCHEDULED under a live node.  Only a
 * refusal (the run is no longer ours) or a lost lease lets it go.
 */
int dbloop_sync_starts(dbcron_node *n, dbcron_err *err)
{
	pthread_mutex_lock(&n->mu);
	fire *list = fire_list_take(&n->sync);
	pthread_mutex_unlock(&n->mu);
	int failed = DBCRON_OK;
	for (fire *f = list, *nx; f; f = nx) {
		nx = f->next;
		f->prev = f->next = NULL;
		pthread_mutex_lock(&n->mu);
		if (f->gen != n->lease_gen) {
			sync_release(n, f, "the node lost its lease");
			pthread_mutex_unlock(&n->mu);
			continue;
		}
		bool may = !failed && node_may_start(n, f, dbcron__mono_ms());
		if (!may) {
			/* lease in doubt or the database away: later */
			fire_list_push(&n->sync, f);
			pthread_mutex_unlock(&n->mu);
			continue;
		}
		pthread_mutex_unlock(&n->mu);
		atomic_store(&f->started_db, node_db_now(n));
		store_update u;
		fill_update(&u, f);
		u.state = DBCRON_RUN_RUNNING;
		int rc = store_apply(n->st, n->node_id, &u, 1, err);
		pthread_mutex_lock(&n->mu);
		if (rc) {
			/* a lost reply: RUNNING may be written (end_blocked) */
			if (rc == DBCRON_ECONN)
				f->write_doubt = true;
			fire_list_push(&n->sync, f);
			failed = rc;
			pthread_mutex_unlock(&n->mu);
			continue;
		}
		if (u.applied) {
			fire_set_phase(f, FIRE_RUNNING);
			pthread_mutex_unlock(&n->mu);
			dispatch_submit(n, f);
			continue;
		}
		sync_release(n, f, "the run is no longer ours");
		pthread_mutex_unlock(&n->mu);
	}
	return failed;
}

/* ---- graceful stop -------------------------------------------------------- */

void dbloop_hand_back(dbcron_node *n)
{
	fire_list back = {0};
	pthread_mutex_lock(&n->mu);
	size_t k = dispatch_take_unstarted(n, &back);
	pthread_mutex_unlock(&n->mu);
	if (!k)
		return;
	/* The timer thread is gone and no worker starts a held fire while
	 * stopping: nothing else can reach these fires now. */
	int64_t *ids = dbcron__calloc(k, sizeof(*ids));
	const char **toks = dbcron__calloc(k, sizeof(*toks));
	if (ids && toks) {
		size_t i = 0;
		for (fire *f = back.head; f; f = f->next, i++) {
			ids[i] = f->run.id;
			toks[i] = f->run.claim_token;
		}
		dbcron_err err = {0};
		/* nodes stopping together may deadlock on MariaDB (CI's
		 * it_node_every_mysql): the runs are handed back now, not at the
		 * end of our lease */
		int rc, tries = 0;
		do
			rc = store_runs_release(n->st, n->node_id, ids, toks, k, &err);
		while (dbcron__busy_again(rc, &tries));
		if (rc)
			dbcron__log(LOG_WARN, "node.release", LOG_STR("msg", err.msg));
		else
			dbcron__log(LOG_INFO, "node.release", LOG_STR("node", n->node_id), LOG_UINT("runs", k));
	} else {
		/* node_stop still hands back every unstarted run of ours */
		dbcron__log(LOG_WARN, "node.release", LOG_STR("msg", "out of memory"));
	}
	pthread_mutex_lock(&n->mu);
	for (fire *f; (f = fire_list_pop(&back));) {
		fire_set_phase(f, FIRE_RELEASED);
		fire_free(f);
		n->inflight--;
	}
	pthread_mutex_unlock(&n->mu);
	dbcron__free(ids);
	dbcron__free(toks);
}

void dbloop_drain(dbcron_node *n)
{
	dbcron_err err = {0};
	int64_t deadline = dbcron__mono_ms() + n->cfg.grace_ms, next_hb = 0;
	bool cancelled = false;
	for (;;) {
		dbloop_sync_starts(n, &err);
		dbloop_flush(n, &err);
		pthread_mutex_lock(&n->mu);
		size_t running = n->running;
		pthread_mutex_unlock(&n->mu);
		if (!running)
			break;
		int64_t now = dbcron__mono_ms(), db_now;
		if (now >= next_hb) {
			/* the timer thread is gone: the lease's lapse is
			 * watched here while we wait */
			int rc = store_node_heartbeat(n->st, n->node_id, n->incarnation,
						      n->cfg.lease_ms, &db_now, &err);
			if (rc == DBCRON_OK)
				dbloop_set_lease(n, now, now, dbcron__mono_ms(), db_now,
						    db_now + n->cfg.lease_ms, false);
			else if (rc == DBCRON_EFENCED)
				dbloop_drop_unstarted(n);
			next_hb = now + n->cfg.heartbeat_ms;
		}
		pthread_mutex_lock(&n->mu);
		dispatch_stop_unleased(n, dbcron__mono_ms());
		pthread_mutex_unlock(&n->mu);
		bool now_please = atomic_load(&n->stop_now);
		if (!cancelled && (now >= deadline || now_please)) {
			dbcron__log(LOG_WARN, now_please ? "node.stop_now" : "node.grace_over",
				    LOG_STR("node", n->node_id), LOG_UINT("running", running),
				    LOG_STR("msg", "stopping running jobs"));
			dispatch_cancel_running(n, &fire_cancel_shutdown);
			cancelled = true;
		}
		if (cancelled) {
			/* At-most-once fires whose start never got written
			 * did not start: node_stop hands their runs back. */
			pthread_mutex_lock(&n->mu);
			for (fire *f; (f = fire_list_pop(&n->sync));)
				sync_release(n, f, "the node stopped before its start was written");
			pthread_mutex_unlock(&n->mu);
		}
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/*
 * The last writes, then the stop.  Outcomes that cannot be written are
 * tried again, with backoff and the lease renewed, for up to --grace; a
 * node is marked stopped only when nothing of it is left unwritten (a
 * stopped node is not reaped).  Past that it exits alive: its lease lapses
 * and reap gives its runs to the node-loss policy.
 */
void dbloop_finish(dbcron_node *n)
{
	dbcron_err err = {0};
	int64_t deadline = dbcron__mono_ms() + n->cfg.grace_ms, backoff = 100;
	for (;;) {
		int rc = dbloop_flush(n, &err);
		pthread_mutex_lock(&n->mu);
		bool left = !fire_list_empty(&n->pending) || !fire_list_empty(&n->sync);
		size_t npending = 0;
		for (fire *f = n->pending.head; f; f = f->next)
			npending++;
		pthread_mutex_unlock(&n->mu);
		if (!rc && !left)
			break;
		if (dbcron__mono_ms() + backoff >= deadline || atomic_load(&n->stop_now)) {
			dbcron__log(LOG_ERROR, "node.stop", LOG_STR("node", n->node_id),
				    LOG_UINT("unwritten", npending),
				    LOG_STR("error", rc ? err.msg : "writes left"),
				    LOG_STR("msg", "not marked stopped: when the lease lapses "
						   "another node resolves these runs"));
			return;
		}
		struct timespec ts = {(time_t)(backoff / 1000), (long)(backoff % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
		store_node_heartbeat(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
				     &(int64_t){0}, &err);
	}
	int rc, tries = 0;
	do
		rc = store_node_stop(n->st, n->node_id, n->incarnation, &err);
	while (dbcron__busy_again(rc, &tries));
	if (rc)
		dbcron__log(LOG_WARN, "node.stop", LOG_STR("msg", err.msg));
}
