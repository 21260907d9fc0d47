/*
 * Dispatch: the timer thread and the workers' side of a fire.  The timer
 * thread holds CLAIMED fires in a min-heap and, at each one's instant
 * (database clock mapped onto CLOCK_MONOTONIC), decides start or hold by
 * the job's misfire and overlap policies; a fire to run goes to the fast
 * pool, or to the slow pool when its job has been slow lately.  A worker
 * starts it through the executor table (exec_start): a synchronous
 * executor runs it to the end there, an asynchronous one (HTTP) on its own
 * thread; either way run_ended records the outcome for the db thread and
 * starts the next fire its job was holding.
 *
 * Invariants kept here:
 *  4 nothing starts while the lease is not known to be valid (a node
 *    frozen past its lease wakes up holding fires that others now own),
 *    nothing due at or after the lease's end starts (reap counts on it),
 *    and a worker checks again just before it starts the job
 *    (node_may_start); a fire of an older lease never starts;
 *  6 nothing here touches the database or makes the db thread wait: starts
 *    and ends are queued for its next batch (dbloop_queue_write), and
 *    at-most-once starts are handed to it on the sync list;
 *  pools are called only without n->mu (no thread holds two locks).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "model/params.h"
#include "sched/node_int.h"

/* Slow-pool demotion: a job whose runs took over SLOW_RUN_MS more than
 * SLOW_RUNS_TO_DEMOTE times within SLOW_WINDOW_MS runs on the slow pool, so
 * that it cannot hold up the fast pool's on-time starts. */
#define SLOW_RUN_MS 500
#define SLOW_RUNS_TO_DEMOTE 10
#define SLOW_WINDOW_MS 60000
_Static_assert(INFLIGHT_SLOW_RING == SLOW_RUNS_TO_DEMOTE + 1,
	       "the ring keeps one more slow run than the demotion needs");

bool dispatch_job_is_slow(const job_state *js, int64_t now_mono)
{
	unsigned cnt = 0;
	for (unsigned i = 0; i < INFLIGHT_SLOW_RING; i++)
		if (js->slow_at[i] && now_mono - js->slow_at[i] <= SLOW_WINDOW_MS)
			cnt++;
	return cnt > SLOW_RUNS_TO_DEMOTE;
}

/* mu held.  A job turns slow only here, so listing it here keeps every
 * slow job among n->slow_cand (the claim drops the ones no longer slow).
 * held: how long the run kept its worker; end: when it ended. */
static void note_run_time(dbcron_node *n, job_state *js, int64_t held, int64_t end)
{
	if (held <= SLOW_RUN_MS)
		return;
	js->slow_at[js->slow_n++ % INFLIGHT_SLOW_RING] = end;
	if (!dispatch_job_is_slow(js, end))
		return;
	for (size_t i = 0; i < n->nslow_cand; i++)
		if (n->slow_cand[i] == js->job_id)
			return;
	if (!dbcron__grow((void **)&n->slow_cand, &n->slow_cand_cap, n->nslow_cand + 1,
			  sizeof(*n->slow_cand)))
		n->slow_cand[n->nslow_cand++] = js->job_id;
}

/* End a fire without running it (SKIPPED, MISFIRED, FAILED to queue); mu
 * held. */
static void finish_unstarted(dbcron_node *n, fire *f, dbcron_run_state st,
			     const char *why)
{
	f->end_state = st;
	f->end_why = why;
	f->finished_db = node_db_now(n);
	fire_set_phase(f, FIRE_FINISHED);
	dbloop_queue_write(n, f);
	if (n->cfg.log_runs || st == DBCRON_RUN_MISFIRED)
		dbcron__log(LOG_INFO, "run.end", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
			    LOG_STR("state", dbcron_run_state_name(st)), LOG_STR("reason", why));
}

/* Was a run of the job going at `fire_at` (the instant of the fire being
 * decided)?  An at-most-once fire waiting for its fenced RUNNING write
 * (STARTING) has not started, and one that started after fire_at is a
 * backlog run (fires claimed late after an outage start together): in time
 * this fire would have come first, so it waits instead of being skipped. */
static bool ran_at(const job_state *js, int64_t fire_at)
{
	for (fire *r = js->running_list; r; r = r->run_next)
		if (r->phase != FIRE_STARTING && atomic_load(&r->started_db) <= fire_at)
			return true;
	return false;
}

void dispatch_unhold(dbcron_node *n, job_state *js)
{
	if (js->running > 0)
		return;
	for (fire *f; (f = fire_list_pop(&js->held));) {
		fire_set_phase(f, FIRE_CLAIMED);
		if (timer_push(&n->heap, &f->tn, fire_start_at(f)))
			finish_unstarted(n, f, DBCRON_RUN_FAILED, "out of memory");
	}
	pthread_cond_signal(&n->timer_cv);
}

/* A fire of a job paused or deleted since it was claimed (mu held).  An
 * at-most-once fire waiting for its fenced start write (STARTING) whose
 * earlier try lost its reply may be RUNNING: RUNNING may only end, so it ends
 * ABANDONED (no retry: at-most-once), never SKIPPED, and with no start. */
static void end_blocked(dbcron_node *n, fire *f)
{
	if (f->js->blocked == JOB_DELETED) {
		finish_unstarted(n, f, DBCRON_RUN_ABANDONED, "job deleted");
	} else if (f->phase == FIRE_STARTING && f->write_doubt) {
		atomic_store(&f->started_db, -1);
		finish_unstarted(n, f, DBCRON_RUN_ABANDONED,
				 "not started: job paused while its start was being written");
	} else {
		finish_unstarted(n, f, DBCRON_RUN_SKIPPED, "job paused");
	}
}

void dispatch_block_jobs(dbcron_node *n)
{
	fire_list all = {0};
	dispatch_take_unstarted(n, &all);
	for (fire *f; (f = fire_list_pop(&all));) {
		if (f->js->blocked) {
			end_blocked(n, f);
			continue;
		}
		if (f->phase == FIRE_HELD)
			fire_set_phase(f, FIRE_CLAIMED);
		if (timer_push(&n->heap, &f->tn, fire_start_at(f)))
			finish_unstarted(n, f, DBCRON_RUN_FAILED, "out of memory");
	}
	/* At-most-once fires waiting for their fenced start write. */
	fire_list keep = {0};
	for (fire *f; (f = fire_list_pop(&n->sync));) {
		if (!f->js->blocked) {
			fire_list_push(&keep, f);
			continue;
		}
		inflight_running_remove(f->js, f);
		n->running--;
		end_blocked(n, f);
	}
	n->sync = keep;
	pthread_cond_signal(&n->timer_cv);
}

/* mu held.  A run cancelled by request keeps that reason whatever stops
 * it later (a replace, the graceful stop's deadline): it ends CANCELLED and
 * is not retried. */
static void cancel_fire(fire *f, const fire_cancel *why)
{
	if (f->cancel_why != &fire_cancel_user)
		f->cancel_why = why;
	atomic_store(&f->cancel.requested, 1);
}

/*
 * Decide what happens to a due fire, already off the heap or its job's
 * held list (mu held).  Returns true when the caller should hand it to a
 * pool (after unlocking).
 */
static bool start_or_hold(dbcron_node *n, fire *f, int64_t now_db)
{
	job_state *js = f->js;
	const dbcron_job *job = &f->snap->job;
	int64_t late = now_db - f->run.fire_at - f->delay_ms;

	if (js->blocked) {
		end_blocked(n, f);
		return false;
	}
	if (f->run.attempt == 1 && f->run.missed == 0 &&
	    late > job->misfire_threshold_ms &&
	    job->misfire == DBCRON_MISFIRE_SKIP && f->run.due_at == f->run.fire_at) {
		/* Held past the threshold (lease lost for a while, database
		 * outage): the misfire policy applies here too.  Fires held
		 * behind this one waited for a run that will not come: they
		 * are decided now, not when the job next runs. */
		finish_unstarted(n, f, DBCRON_RUN_MISFIRED, "started too late; misfire policy skip");
		dispatch_unhold(n, js);
		return false;
	}
	if (js->running > 0) {
		switch (job->overlap) {
		case DBCRON_OVERLAP_ALLOW:
			break;
		case DBCRON_OVERLAP_SKIP:
			/* A catch-up or retry is owed, not skipped; and so is
			 * a fire no run was going at (ran_at). */
			if (f->run.due_at > f->run.fire_at || !ran_at(js, f->run.fire_at))
				goto hold;
			n->n_skipped++;
			finish_unstarted(n, f, DBCRON_RUN_SKIPPED, "previous run still running");
			return false;
		case DBCRON_OVERLAP_REPLACE:
			for (fire *r = js->running_list; r; r = r->run_next)
				cancel_fire(r, &fire_cancel_replaced);
			/* start when the replaced one ends */
			__attribute__((fallthrough));
		case DBCRON_OVERLAP_QUEUE:
		hold:
			fire_set_phase(f, FIRE_HELD);
			fire_list_push(&js->held, f);
			return false;
		}
	}
	f->slow = dispatch_job_is_slow(js, dbcron__mono_ms());
	inflight_running_add(js, f);
	n->running++;
	if (job->node_loss == DBCRON_NODE_LOSS_ABANDON) {
		/* At-most-once: RUNNING must be in the database, fenced,
		 * before the job starts; the db thread submits it. */
		fire_set_phase(f, FIRE_STARTING);
		fire_list_push(&n->sync, f);
		dbloop_kick(n);
		return false;
	}
	/* The start is written with the next batch; the worker fills in the
	 * exact start time (dispatch time until then). */
	atomic_store(&f->started_db, now_db);
	fire_set_phase(f, FIRE_STARTED);
	dbloop_queue_write(n, f);
	return true;
}

static void worker_main(void *arg);

/* The busy gauge around a run; n and the pool are read before the run,
 * which may end with f freed by the db thread. */
static void worker_busy(void *arg)
{
	fire *f = arg;
	atomic_llong *busy = &f->node->stats.busy[f->slow ? 1 : 0];
	/* pool threads serve this node only; bound per run all the same, as
	 * cheap as a store to a thread-local */
	const dbcron__log_sink *prev = dbcron__log_bind(&f->node->log);
	atomic_fetch_add_explicit(busy, 1, memory_order_relaxed);
	worker_main(f);
	atomic_fetch_sub_explicit(busy, 1, memory_order_relaxed);
	dbcron__log_bind(prev);
}

/* A fire its pool had no room for, full despite backpressure (e.g. a burst
 * of held fires): tried again in a millisecond; it stays ours and its start
 * unwritten. */
static void submit_refused(dbcron_node *n, fire *f)
{
	pthread_mutex_lock(&n->mu);
	if (f->phase == FIRE_STARTED)
		fire_list_unlink(&n->pending, f);
	fire_set_phase(f, FIRE_CLAIMED);
	inflight_running_remove(f->js, f);
	n->running--;
	if (timer_push(&n->heap, &f->tn, node_db_now(n) + 1))
		finish_unstarted(n, f, DBCRON_RUN_FAILED, "out of memory");
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
}

void dispatch_submit(dbcron_node *n, fire *f)
{
	if (pool_submit(f->slow ? n->slow : n->fast, worker_busy, f) != DBCRON_OK)
		submit_refused(n, f);
}

/* The timer's batch of fires let go at one instant (at most TIMER_BATCH,
 * in start order), each pool's share queued under one lock
 * (pool_submit_many), in the same order.  2,048 made W1's bursts cheaper
 * (the timer won the node's mutex back from its workers 8 times less) but
 * held that mutex 8 times longer against the workers and the db thread:
 * W2 on SQLite drained 9 % slower (docs/benchmarks.md "The wake"). */
#define TIMER_BATCH 256
static void submit_share(dbcron_node *n, pool *p, fire **fires, size_t k)
{
	size_t took = pool_submit_many(p, worker_busy, (void *const *)fires, k);
	for (size_t i = took; i < k; i++)
		submit_refused(n, fires[i]);
}

static void submit_batch(dbcron_node *n, fire **batch, size_t k)
{
	fire *slow[TIMER_BATCH];
	size_t nfast = 0, nslow = 0;
	for (size_t i = 0; i < k; i++) {
		if (batch[i]->slow)
			slow[nslow++] = batch[i];
		else
			batch[nfast++] = batch[i];
	}
	submit_share(n, n->fast, batch, nfast);
	submit_share(n, n->slow, slow, nslow);
}

/* The outcome of a fire that ran (mu held). */
static void record_end(fire *f)
{
	const fire_cancel *c = f->cancel_why;
	f->end_state = f->res.state;
	f->end_why = NULL;
	f->no_retry = c && c->no_retry;
	/* a cancelled run ends CANCELLED even when it ran to its end (a
	 * handler that never looked at the flag) */
	if (c && (f->res.state != DBCRON_RUN_SUCCEEDED || c == &fire_cancel_user)) {
		f->end_state = c->state;
		f->end_why = c->why;
	}
}

/* A handed-out fire has ended: its final state goes to the db thread
 * (mu held).  A STARTED fire is still on the pending list: its end
 * replaces the start there, and one write carries both. */
static void hand_end(dbcron_node *n, fire *f)
{
	bool listed = f->phase == FIRE_STARTED;
	fire_set_phase(f, FIRE_FINISHED);
	if (listed)
		dbloop_note_write(n);
	else
		dbloop_queue_write(n, f);
}

static const fire_cancel cancel_unleased = {
	DBCRON_RUN_ABANDONED, "stopped: the node could not renew its lease", false};
static const fire_cancel cancel_lease_lost = {
	DBCRON_RUN_ABANDONED, "not started: the node lost its lease", true};
static const fire_cancel cancel_lease_doubt = {
	DBCRON_RUN_ABANDONED, "not started: the node stopped while its lease was in doubt", false};
static const fire_cancel cancel_paused = {DBCRON_RUN_SKIPPED, "job paused", true};
/* The run state machine lets a RUNNING run only end: a paused fire whose
 * RUNNING write went out (or may have) ends ABANDONED, not SKIPPED. */
static const fire_cancel cancel_paused_queued = {
	DBCRON_RUN_ABANDONED, "not started: job paused while the run waited for a worker", true};
static const fire_cancel cancel_deleted = {DBCRON_RUN_ABANDONED, "job deleted", true};

/*
 * The last check before a job starts: time passed in the pool's queue, so
 * the lease may have lapsed or been lost since the timer let the fire go.
 * Waits (polling: the lease is renewed or lost within a heartbeat) while
 * it is only in doubt.  false: do not start; f->cancel_why says why.
 */
static bool await_lease(dbcron_node *n, fire *f)
{
	pthread_mutex_lock(&n->mu);
	for (;;) {
		if (f->cancel_why == &fire_cancel_user)
			break; /* cancelled while it waited for a worker */
		if (f->js->blocked) {
			f->cancel_why = f->js->blocked == JOB_DELETED ? &cancel_deleted : &cancel_paused;
			break;
		}
		if (node_may_start(n, f, dbcron__mono_ms())) {
			f->launched = true;
			pthread_mutex_unlock(&n->mu);
			return true;
		}
		if (f->gen != n->lease_gen) {
			f->cancel_why = &cancel_lease_lost;
			break;
		}
		if (atomic_load(&f->cancel.requested) || n->stopping) {
			f->cancel_why = &cancel_lease_doubt;
			break;
		}
		struct timespec ts;
		node_abs_deadline(&ts, dbcron__mono_ms() + 20);
		pthread_cond_timedwait(&n->timer_cv, &n->mu, &ts);
	}
	pthread_mutex_unlock(&n->mu);
	return false;
}

/* A handed-out fire that must not start: end it as cancel_why says.  Its
 * writes are refused when the run is no longer ours. */
static void skip_start(dbcron_node *n, fire *f)
{
	pthread_mutex_lock(&n->mu);
	inflight_running_remove(f->js, f);
	n->running--;
	/* STARTED without a doubtful try: RUNNING is not in the database */
	if (f->cancel_why == &cancel_paused && (f->phase != FIRE_STARTED || f->write_doubt))
		f->cancel_why = &cancel_paused_queued;
	atomic_store(&f->started_db, -1); /* it never started: no start time */
	f->end_state = f->cancel_why->state;
	f->end_why = f->cancel_why->why;
	f->no_retry = f->cancel_why->no_retry;
	f->finished_db = node_db_now(n);
	dbcron__log(LOG_WARN, "run.not_started", LOG_STR("job", f->run.job_name),
		    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
		    LOG_INT("run", f->run.id), LOG_STR("reason", f->end_why));
	hand_end(n, f);
	dispatch_unhold(n, f->js);
	pthread_mutex_unlock(&n->mu);
}

/* The parameters a run sees, "KEY=VALUE" each (model/params.h): its own
 * and its job's declared defaults. */
typedef struct run_kv {
	char *v[MODEL_PARAM_MAX];
	size_t n;
	bool oom;
} run_kv;

static int kv_add(void *ctx, const char *key, const char *val)
{
	run_kv *a = ctx;
	if (a->n >= MODEL_PARAM_MAX)
		return 0;
	size_t len = strlen(key) + strlen(val) + 2;
	if (!(a->v[a->n] = dbcron__malloc(len))) {
		a->oom = true;
		return 1;
	}
	snprintf(a->v[a->n++], len, "%s=%s", key, val);
	return 0;
}

static void kv_free(run_kv *a)
{
	for (size_t i = 0; i < a->n; i++)
		dbcron__free(a->v[i]);
}

static void run_ended(void *arg);

/* A worker's part of a fire: the last lease check, then the start through
 * the executor table (exec_start).  A synchronous executor runs the job
 * here and run_ended follows on this thread; one with a start hook (HTTP)
 * takes the run to its own thread and calls run_ended from there, so the
 * worker is free while the run waits.  f is not touched after exec_start:
 * run_ended may already have handed it to the db thread. */
static void worker_main(void *arg)
{
	fire *f = arg;
	dbcron_node *n = f->node;

	if (!await_lease(n, f)) {
		skip_start(n, f);
		return;
	}
	/* RUNNING was queued for the db thread when the timer dispatched
	 * this fire */
	int64_t started = node_db_now(n);
	atomic_store(&f->started_db, started);
	if (n->cfg.log_runs)
		dbcron__log(LOG_INFO, "run.start", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
			    LOG_INT("run", f->run.id), LOG_INT("late_ms", started - f->run.fire_at - f->delay_ms),
			    LOG_STR("pool", f->slow ? "slow" : "fast"));

	exec_req req = {
		.job = &f->snap->job,
		.run_id = f->run.id,
		.fire_at_ms = f->run.fire_at,
		.attempt = f->run.attempt,
		.node_id = n->node_id,
		.node_index = f->run.node_index,
		.node_total = f->run.node_total,
		.cancel = &f->cancel,
		.kill_grace_ms = n->cfg.kill_grace_ms,
		.db_url = n->db_url,
	};
	run_kv kv = {.n = 0};
	model_params_each(f->run.params, f->snap->job.params, kv_add, &kv);
	req.params = (const char *const *)kv.v;
	req.nparams = kv.n;
	if (kv.oom) { /* not run without all of its parameters */
		memset(&f->res, 0, sizeof(f->res));
		f->res.state = DBCRON_RUN_FAILED;
		f->res.mono_start_ms = f->res.mono_end_ms = dbcron__mono_ms();
		exec__set_error(&f->res, "out of memory reading the run's parameters");
		run_ended(f);
	} else {
		exec_start(&req, &f->res, run_ended, f);
	}
	kv_free(&kv);
}

/* The run of f has ended (f->res filled): on the worker that started it,
 * or on an asynchronous executor's thread, whose lines go to the node's
 * log for the while. */
static void run_ended(void *arg)
{
	fire *f = arg;
	dbcron_node *n = f->node;
	const dbcron__log_sink *prev = dbcron__log_bind(&n->log);
	f->finished_db = node_db_now(n);
	int64_t took = f->res.mono_end_ms - f->res.mono_start_ms;
	/* What the run cost its worker, which is what the claim sizes the
	 * pools by and what makes a job slow: all of it, or nothing worth
	 * counting when the executor ran it on its own thread (a transfer of
	 * two seconds must not make the node claim as if a worker waited). */
	int64_t held = exec_holds_worker(&f->snap->job) ? took : 0;

	fire *next = NULL;
	pthread_mutex_lock(&n->mu);
	job_state *js = f->js;
	inflight_running_remove(js, f);
	n->running--;
	note_run_time(n, js, held, f->res.mono_end_ms);
	/* each pool's own mean: the claim sizes each pool from it.  1/16:
	 * follows a change of load within a few dozen runs */
	int p = f->slow ? 1 : 0;
	n->run_ms_mean[p] += ((double)held - n->run_ms_mean[p]) / (n->runs_timed[p] ? 16.0 : 1.0);
	n->runs_timed[p]++;
	record_end(f);
	/* Logged before the fire is handed to the db thread, which frees it
	 * once its final state is written. */
	if (n->cfg.log_runs || f->end_state != DBCRON_RUN_SUCCEEDED)
		dbcron__log(f->end_state == DBCRON_RUN_SUCCEEDED ? LOG_INFO : LOG_WARN, "run.end",
			    LOG_STR("job", f->run.job_name), LOG_INT("fire_at", f->run.fire_at),
			    LOG_INT("attempt", f->run.attempt), LOG_INT("run", f->run.id),
			    LOG_STR("state", dbcron_run_state_name(f->end_state)),
			    LOG_INT("took_ms", took),
			    LOG_STR("error", f->end_why ? f->end_why : f->res.error));
	hand_end(n, f);
	/* queue / replace: the next held fire of this job starts now, or
	 * waits on the heap while the lease is in doubt */
	if (!n->stopping && (next = fire_list_pop(&js->held))) {
		if (!node_may_start(n, next, dbcron__mono_ms())) {
			fire_set_phase(next, FIRE_CLAIMED);
			if (timer_push(&n->heap, &next->tn, fire_start_at(next)))
				finish_unstarted(n, next, DBCRON_RUN_FAILED, "out of memory");
			pthread_cond_signal(&n->timer_cv);
			next = NULL;
		} else if (!start_or_hold(n, next, node_db_now(n))) {
			next = NULL;
		}
	}
	pthread_mutex_unlock(&n->mu);

	if (next)
		dispatch_submit(n, next);
	dbcron__log_bind(prev);
}

void dispatch_sweep_jobs(dbcron_node *n, int64_t now_mono)
{
	pthread_mutex_lock(&n->mu);
	inflight_jobs_sweep(&n->jobs, now_mono, SLOW_WINDOW_MS);
	pthread_mutex_unlock(&n->mu);
}

static bool has_id(const int64_t *ids, size_t k, int64_t id)
{
	for (size_t i = 0; i < k; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * dbcron runs cancel, as the db thread read it (issue 27 item 3; mu not
 * held).  A fire not started ends CANCELLED without starting: the timer
 * thread and the workers decide a start under the same mutex, so a start
 * and the cancel cannot both happen, and the end write is fenced by the
 * claim like any other.  A running one is stopped as a timeout stops it
 * (process group: SIGTERM, the kill grace, SIGKILL; a handler through its
 * context's flag) and ends CANCELLED.  ids is short: what was asked of
 * this node since its last beat.
 */
size_t dispatch_cancel_runs(dbcron_node *n, const int64_t *ids, size_t k)
{
	size_t hit = 0, seen = 0;
	fire_list all = {0}, keep = {0};
	pthread_mutex_lock(&n->mu);
	/* At-most-once fires waiting for their fenced start write: one whose
	 * earlier try lost its reply may be RUNNING, which may end CANCELLED
	 * too; it never started here. */
	for (fire *f; (f = fire_list_pop(&n->sync));) {
		if (!has_id(ids, k, f->run.id)) {
			fire_list_push(&keep, f);
			continue;
		}
		inflight_running_remove(f->js, f);
		n->running--;
		atomic_store(&f->started_db, -1);
		finish_unstarted(n, f, DBCRON_RUN_CANCELLED, "cancelled before it started");
		f->no_retry = true;
		dispatch_unhold(n, f->js);
		hit++, seen++;
	}
	n->sync = keep;
	/* handed to a pool: a queued one ends before it starts (await_lease),
	 * a launched one is stopped */
	for (size_t i = 0; i < n->jobs.nslots; i++)
		for (fire *r = n->jobs.slots[i] ? n->jobs.slots[i]->running_list : NULL; r; r = r->run_next) {
			if (!has_id(ids, k, r->run.id))
				continue;
			seen++;
			if (r->cancel_why != &fire_cancel_user) {
				cancel_fire(r, &fire_cancel_user);
				hit++;
			}
		}
	/* the rest wait on the heap or behind a run of their job; a request
	 * stays asked until the run's end is written, so a long run that
	 * ignores it does not make every beat walk the heap */
	if (seen < k) {
		dispatch_take_unstarted(n, &all);
		for (fire *f; (f = fire_list_pop(&all));) {
			if (has_id(ids, k, f->run.id)) {
				finish_unstarted(n, f, DBCRON_RUN_CANCELLED, "cancelled before it started");
				f->no_retry = true;
				hit++;
				continue;
			}
			if (f->phase == FIRE_HELD)
				fire_set_phase(f, FIRE_CLAIMED);
			if (timer_push(&n->heap, &f->tn, f->run.due_at))
				finish_unstarted(n, f, DBCRON_RUN_FAILED, "out of memory");
		}
	}
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	return hit;
}

void dispatch_cancel_running(dbcron_node *n, const fire_cancel *why)
{
	pthread_mutex_lock(&n->mu);
	for (size_t i = 0; i < n->jobs.nslots; i++)
		for (fire *r = n->jobs.slots[i] ? n->jobs.slots[i]->running_list : NULL; r; r = r->run_next)
			cancel_fire(r, why);
	pthread_mutex_unlock(&n->mu);
}

/*
 * A node that cannot renew its lease may already be dead to the others:
 * once the lease ends in the database, another node reaps it and retries
 * the runs it was executing.  So those jobs must be gone first, as they
 * would be had the node died (their guards) -- but the node is alive and
 * does it itself, through the same stop as a timeout: SIGTERM now, SIGKILL
 * when the kill grace is over or by lease_kill_by_mono, whichever comes
 * first.  Only jobs another node would retry: under --node-loss abandon
 * nobody runs the fire again, so there is nothing to overlap, and stopping
 * would only cut short a run that may still finish (its outcome is written
 * if the run is still ours when the database answers again, and refused
 * if it was taken).  A fire still waiting in a pool's queue has not
 * started and will not while the lease is in doubt (await_lease).
 * Handler jobs are asked to stop; they stop when they look (exec.h).
 */
void dispatch_stop_unleased(dbcron_node *n, int64_t now_mono)
{
	if (!n->running || now_mono < n->lease_ok_until_mono ||
	    n->unleased_for == n->lease_ok_until_mono)
		return;
	n->unleased_for = n->lease_ok_until_mono;
	size_t k = 0;
	for (size_t i = 0; i < n->jobs.nslots; i++) {
		job_state *js = n->jobs.slots[i];
		for (fire *r = js ? js->running_list : NULL; r; r = r->run_next) {
			if (!r->launched || r->snap->job.node_loss != DBCRON_NODE_LOSS_RETRY)
				continue;
			atomic_store(&r->cancel.kill_by_ms, n->lease_kill_by_mono);
			/* one already stopped (replaced, shutdown) keeps its
			 * reason; only its SIGKILL comes sooner */
			if (!atomic_load(&r->cancel.requested))
				cancel_fire(r, &cancel_unleased);
			k++;
		}
	}
	if (k)
		dbcron__log(LOG_WARN, "node.unleased", LOG_STR("node", n->node_id),
			    LOG_UINT("stopping", k),
			    LOG_STR("msg", "lease not renewed: stopping the jobs another node would "
					   "retry before the lease ends"));
}

size_t dispatch_take_unstarted(dbcron_node *n, fire_list *out)
{
	size_t k = 0;
	timer_node *t;
	while ((t = timer_pop(&n->heap))) {
		fire_list_push(out, (fire *)t);
		k++;
	}
	for (size_t i = 0; i < n->jobs.nslots; i++) {
		job_state *js = n->jobs.slots[i];
		fire *f;
		while (js && (f = fire_list_pop(&js->held))) {
			fire_list_push(out, f);
			k++;
		}
	}
	return k;
}

/* ---- the timer thread ------------------------------------------------ */

static void *timer_main(void *arg)
{
	dbcron_node *n = arg;
	fire *batch[TIMER_BATCH];

	dbcron__log_bind(&n->log);
	pthread_mutex_lock(&n->mu);
	while (!n->stopping) {
		timer_node *top = timer_peek(&n->heap);
		int64_t now_mono = dbcron__mono_ms();
		int64_t wait_until;
		/* This thread never waits on the database, so it is the one
		 * that notices a lease running out while the db thread hangs
		 * in a statement. */
		dispatch_stop_unleased(n, now_mono);
		if (!top) {
			wait_until = now_mono + 1000;
		} else if (top->due - atomic_load(&n->offset_ms) <= now_mono &&
			   !node_may_start(n, (fire *)top, now_mono)) {
			/* Due but the lease is in doubt or ends first: start
			 * nothing until the db thread renews it or learns we
			 * were fenced (and drops these fires). */
			wait_until = now_mono + 20;
		} else {
			int64_t due_mono = top->due - atomic_load(&n->offset_ms);
			if (due_mono > now_mono) {
				wait_until = due_mono;
			} else {
				size_t k = 0;
				int64_t now_db = now_mono + atomic_load(&n->offset_ms);
				int64_t first_mono = due_mono;
				while (k < sizeof(batch) / sizeof(batch[0]) &&
				       (top = timer_peek(&n->heap)) && top->due <= now_db &&
				       node_may_start(n, (fire *)top, now_mono)) {
					timer_pop(&n->heap);
					fire *f = (fire *)top;
					if (start_or_hold(n, f, now_db))
						batch[k++] = f;
				}
				dbloop_burst_started(n, first_mono, k);
				pthread_mutex_unlock(&n->mu);
				submit_batch(n, batch, k);
				pthread_mutex_lock(&n->mu);
				continue;
			}
		}
		if (n->running && now_mono < n->lease_ok_until_mono &&
		    n->lease_ok_until_mono < wait_until)
			wait_until = n->lease_ok_until_mono;
		struct timespec ts;
		node_abs_deadline(&ts, wait_until);
		pthread_cond_timedwait(&n->timer_cv, &n->mu, &ts);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

int dispatch_start(dbcron_node *n, dbcron_err *err)
{
	if (pthread_create(&n->timer_thread, NULL, timer_main, n))
		return dbcron_err_set(err, DBCRON_EINTERNAL, "node: cannot start the timer thread");
	n->timer_started = true;
	/* named, as the pools' threads are, for top -H and a trace */
	pthread_setname_np(n->timer_thread, "dbcron-timer");
	return DBCRON_OK;
}

void dispatch_stop(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	n->stopping = true;
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	if (n->timer_started)
		pthread_join(n->timer_thread, NULL);
	n->timer_started = false;
}
