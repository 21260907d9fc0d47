/*
 * The scheduler node.  Owns three kinds of threads and the fires in flight:
 *
 *   db thread     the only one that talks to the database: heartbeat and
 *                 lease, reaping dead nodes, the claim, batched writes of
 *                 starts and completions, hand-back at shutdown.
 *   timer thread  holds claimed fires in a min-heap and starts each at its
 *                 instant (database clock mapped onto CLOCK_MONOTONIC); it
 *                 never touches the database or waits on a job.
 *   workers       two pools (fast, slow) that run jobs to the end.
 *
 * A fire in flight is a `fire_item`, owned by the node from the claim until
 * its final state is written (or it is handed back / dropped when fenced).
 * All in-memory state is guarded by one mutex, n->mu; pools have their own
 * lock and are never called with n->mu held (no thread holds two locks).
 *
 * Invariants kept here:
 *  3 fencing: every write carries the run's claim token; a node that learns
 *    from its heartbeat that it was declared dead drops every unstarted fire.
 *  4 one clock: fire instants are database time; the node keeps an offset
 *    from CLOCK_MONOTONIC to the database clock, refreshed every heartbeat.
 *    A node starts nothing while its lease is not known to be valid (a node
 *    frozen past its lease wakes up holding fires that others now own).
 *  5 backpressure: a claim asks for no more than the free in-flight budget,
 *    and nothing when the worker queues are full.
 *  6 the claim loop (db thread) never waits on a job.
 *
 * A run's life here: claimed (heap) -> started (pool; RUNNING written in the
 * next batch, or synchronously first for at-most-once jobs) -> finished
 * (final state written in the next batch) -> freed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "dbcron/node.h"
#include "exec/exec.h"
#include "model/rules.h"
#include "sched/plan.h"
#include "sched/timer.h"
#include "store/store.h"

#define SLOW_RUN_MS 500
#define SLOW_RUNS_TO_DEMOTE 10
#define SLOW_WINDOW_MS 60000

typedef struct job_state job_state;

typedef struct fire_item {
	timer_node tn; /* first: the heap holds &item->tn */
	struct dbcron_node *node;
	dbcron_run run;
	dbcron_job job;
	job_state *js;
	bool slow;
	bool pending_start, pending_finish, in_pending;
	dbcron_run_state final_state;
	atomic_llong started_db; /* set by the worker as it starts the job */
	int64_t finished_db;
	exec_cancel cancel;
	exec_result res;
	const char *override_error; /* static text replacing res.error */
	dbcron_run_state cancel_state; /* state recorded when we cancelled it */
	bool no_retry;                 /* replaced runs are not retried */
	struct fire_item *next;      /* pending list / job queue */
	struct fire_item *run_next;  /* job's running list */
} fire_item;

/* Per-job in-memory state: overlap and the slow-pool decision. */
struct job_state {
	int64_t job_id;
	int running;
	fire_item *running_list;
	fire_item *queue_head, *queue_tail;
	int64_t slow_at[SLOW_RUNS_TO_DEMOTE + 1]; /* ring of slow-run times */
	unsigned slow_n;
};

struct dbcron_node {
	dbcron_node_config cfg;
	char *db_url, *node_id, *host;
	char incarnation[33];

	pthread_mutex_t mu;
	pthread_cond_t timer_cv; /* timer thread waits here */
	pthread_cond_t db_cv;    /* db thread waits here */
	bool db_kicked;          /* coalesces wake-ups of the db thread */
	atomic_int stop_requested;
	bool stopping; /* under mu: no more starts */

	timer_heap heap;
	fire_item *pending_head, *pending_tail; /* writes for the db thread */
	fire_item *sync_head, *sync_tail;      /* starts to fence first */
	job_state **jobs; /* open addressing by job id; see js_get() */
	size_t njobs_slots, njobs_used;
	size_t inflight;
	size_t running;

	atomic_llong offset_ms;        /* db_ms = mono_ms + offset */
	int64_t lease_ok_until_mono;   /* under mu */

	pool *fast, *slow;
	store *st;
	planner *plan;

	/* counters for the stop summary and benchmarks */
	uint64_t n_claimed, n_started, n_finished, n_fenced, n_skipped, n_claims;
};

/* ------------------------------------------------------------------ */

void dbcron_node_config_init(dbcron_node_config *c)
{
	memset(c, 0, sizeof(*c));
	c->workers = 8;
	c->slow_workers = 2;
	c->claim_batch = 200;
	c->max_inflight = 5000;
	c->preread_ms = 1500;
	c->claim_interval_ms = 250;
	c->lease_ms = 3000;
	c->heartbeat_ms = 1000;
	c->flush_ms = 50;
	c->grace_ms = 10000;
	c->kill_grace_ms = 2000;
	c->retention_ms = 30LL * 86400 * 1000;
	c->maintenance_ms = 60000;
}

static int64_t db_now(dbcron_node *n)
{
	return dbcron__mono_ms() + atomic_load(&n->offset_ms);
}

static void random_hex(char *out, size_t bytes)
{
	unsigned char b[32];
	if (bytes > sizeof(b))
		bytes = sizeof(b);
	if (getrandom(b, bytes, 0) != (ssize_t)bytes) {
		uint64_t x = (uint64_t)dbcron__mono_us() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < bytes; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (unsigned char)x;
		}
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < bytes; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * bytes] = '\0';
}

/* ---- job states (guarded by mu) ---------------------------------- */

static size_t js_slot(int64_t id, size_t n)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 20) & (n - 1);
}

/*
 * The job's state, created on first use.  States are allocated one by one
 * and never move, because fire items keep a pointer to theirs; the table
 * of pointers grows by rehashing.  They live as long as the node.
 */
static job_state *js_get(dbcron_node *n, int64_t job_id)
{
	if (n->njobs_used * 2 >= n->njobs_slots) {
		size_t ns = n->njobs_slots ? n->njobs_slots * 2 : 256;
		job_state **a = dbcron__calloc(ns, sizeof(*a));
		if (!a)
			return NULL;
		for (size_t i = 0; i < n->njobs_slots; i++) {
			if (!n->jobs[i])
				continue;
			size_t j = js_slot(n->jobs[i]->job_id, ns);
			while (a[j])
				j = (j + 1) & (ns - 1);
			a[j] = n->jobs[i];
		}
		dbcron__free(n->jobs);
		n->jobs = a;
		n->njobs_slots = ns;
	}
	size_t i = js_slot(job_id, n->njobs_slots);
	while (n->jobs[i] && n->jobs[i]->job_id != job_id)
		i = (i + 1) & (n->njobs_slots - 1);
	if (!n->jobs[i]) {
		job_state *js = dbcron__calloc(1, sizeof(*js));
		if (!js)
			return NULL;
		js->job_id = job_id;
		n->jobs[i] = js;
		n->njobs_used++;
	}
	return n->jobs[i];
}

static bool js_is_slow(job_state *js, int64_t now_mono)
{
	unsigned cnt = 0;
	for (unsigned i = 0; i < SLOW_RUNS_TO_DEMOTE + 1; i++)
		if (js->slow_at[i] && now_mono - js->slow_at[i] <= SLOW_WINDOW_MS)
			cnt++;
	return cnt > SLOW_RUNS_TO_DEMOTE;
}

/* ---- items ------------------------------------------------------- */

static void item_free(fire_item *it)
{
	if (!it)
		return;
	dbcron_run_clear(&it->run);
	dbcron_job_clear(&it->job);
	exec_result_clear(&it->res);
	dbcron__free(it);
}

static fire_item *item_new(dbcron_node *n, const store_claimed *c)
{
	fire_item *it = dbcron__calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->node = n;
	it->tn.idx = SIZE_MAX;
	it->run = c->run;
	it->run.job_name = dbcron__strdup(c->run.job_name);
	it->run.node = dbcron__strdup(c->run.node);
	it->run.claim_token = dbcron__strdup(c->run.claim_token);
	it->run.error = it->run.output = NULL;
	dbcron_job_init(&it->job);
	if (!it->run.job_name || !it->run.claim_token ||
	    dbcron_job_copy(&it->job, c->job)) {
		item_free(it);
		return NULL;
	}
	atomic_init(&it->started_db, -1);
	it->finished_db = -1;
	return it;
}

/* Queue an item for the db thread's next batch (mu held). */
static void push_pending(dbcron_node *n, fire_item *it)
{
	if (!it->in_pending) {
		it->in_pending = true;
		it->next = NULL;
		if (n->pending_tail)
			n->pending_tail->next = it;
		else
			n->pending_head = it;
		n->pending_tail = it;
	}
	if (!n->db_kicked) {
		n->db_kicked = true;
		pthread_cond_signal(&n->db_cv);
	}
}

/* End an item without running it (SKIPPED, MISFIRED, cancelled). mu held. */
static void finish_unstarted(dbcron_node *n, fire_item *it, dbcron_run_state st,
			     const char *why)
{
	it->final_state = st;
	it->override_error = why;
	it->finished_db = db_now(n);
	it->pending_finish = true;
	push_pending(n, it);
	if (n->cfg.log_runs || st == DBCRON_RUN_MISFIRED)
		dbcron__log(LOG_INFO, "run.end", "job=%s fire_at=%" PRId64 " attempt=%d state=%s reason=\"%s\"",
			    it->run.job_name, it->run.fire_at, it->run.attempt,
			    dbcron_run_state_name(st), why);
}

static void worker_main(void *arg);
static void running_unlink(job_state *js, fire_item *it);

/* Hand an item to a pool.  Called without mu. */
static void submit(dbcron_node *n, fire_item *it)
{
	pool *p = it->slow ? n->slow : n->fast;
	if (pool_submit(p, worker_main, it) == DBCRON_OK)
		return;
	/* Full despite backpressure (e.g. a burst of queued overlaps): try
	 * again in a millisecond; the fire stays ours. */
	pthread_mutex_lock(&n->mu);
	it->pending_start = false;
	running_unlink(it->js, it);
	n->running--;
	if (timer_push(&n->heap, &it->tn, db_now(n) + 1))
		finish_unstarted(n, it, DBCRON_RUN_FAILED, "out of memory");
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
}

/*
 * Decide what happens to a due item (mu held).  Returns true when it
 * should be submitted to a pool by the caller (after unlocking).
 */
static bool start_or_hold(dbcron_node *n, fire_item *it, int64_t now_db)
{
	job_state *js = it->js;
	int64_t late = now_db - it->run.fire_at;

	if (it->run.attempt == 1 && it->run.missed == 0 &&
	    late > it->job.misfire_threshold_ms &&
	    it->job.misfire == DBCRON_MISFIRE_SKIP && it->run.due_at == it->run.fire_at) {
		/* Held past the threshold (lease lost for a while, database
		 * outage): the misfire policy applies here too. */
		finish_unstarted(n, it, DBCRON_RUN_MISFIRED, "started too late; misfire policy skip");
		return false;
	}
	if (js->running > 0) {
		switch (it->job.overlap) {
		case DBCRON_OVERLAP_ALLOW:
			break;
		case DBCRON_OVERLAP_SKIP:
			if (it->run.due_at > it->run.fire_at)
				goto queue; /* a catch-up or retry is owed, not skipped */
			n->n_skipped++;
			finish_unstarted(n, it, DBCRON_RUN_SKIPPED, "previous run still running");
			return false;
		case DBCRON_OVERLAP_REPLACE:
			for (fire_item *r = js->running_list; r; r = r->run_next) {
				r->override_error = "replaced by a newer fire";
				r->cancel_state = DBCRON_RUN_FAILED;
				r->no_retry = true;
				atomic_store(&r->cancel.requested, 1);
			}
			/* start when the replaced one ends */
			__attribute__((fallthrough));
		case DBCRON_OVERLAP_QUEUE:
		queue:
			it->next = NULL;
			if (js->queue_tail)
				js->queue_tail->next = it;
			else
				js->queue_head = it;
			js->queue_tail = it;
			return false;
		}
	}
	it->slow = js_is_slow(js, dbcron__mono_ms());
	js->running++;
	it->run_next = js->running_list;
	js->running_list = it;
	n->running++;
	if (it->job.node_loss == DBCRON_NODE_LOSS_ABANDON) {
		/* At-most-once: RUNNING must be in the database, fenced,
		 * before the job starts; the db thread submits it. */
		it->next = NULL;
		if (n->sync_tail)
			n->sync_tail->next = it;
		else
			n->sync_head = it;
		n->sync_tail = it;
		if (!n->db_kicked) {
			n->db_kicked = true;
			pthread_cond_signal(&n->db_cv);
		}
		return false;
	}
	/* The start is written with the next batch; the worker fills in the
	 * exact start time (dispatch time until then). */
	atomic_store(&it->started_db, now_db);
	it->pending_start = true;
	push_pending(n, it);
	return true;
}

static void running_unlink(job_state *js, fire_item *it)
{
	for (fire_item **pp = &js->running_list; *pp; pp = &(*pp)->run_next)
		if (*pp == it) {
			*pp = it->run_next;
			break;
		}
	it->run_next = NULL;
	js->running--;
}

static void worker_main(void *arg)
{
	fire_item *it = arg;
	dbcron_node *n = it->node;

	/* RUNNING was queued for the db thread when the timer dispatched
	 * this fire (no lock taken here, on the hot path) */
	int64_t started = db_now(n);
	atomic_store(&it->started_db, started);
	if (n->cfg.log_runs)
		dbcron__log(LOG_INFO, "run.start", "job=%s fire_at=%" PRId64 " attempt=%d run=%" PRId64 " late_ms=%" PRId64 " pool=%s",
			    it->run.job_name, it->run.fire_at, it->run.attempt, it->run.id,
			    started - it->run.fire_at, it->slow ? "slow" : "fast");

	exec_req req = {
		.job = &it->job,
		.run_id = it->run.id,
		.fire_at_ms = it->run.fire_at,
		.attempt = it->run.attempt,
		.node_id = n->node_id,
		.cancel = &it->cancel,
		.kill_grace_ms = n->cfg.kill_grace_ms,
	};
	exec_run(&req, &it->res);
	it->finished_db = db_now(n);
	int64_t took = it->res.mono_end_ms - it->res.mono_start_ms;

	fire_item *next = NULL;
	pthread_mutex_lock(&n->mu);
	job_state *js = it->js;
	running_unlink(js, it);
	n->running--;
	if (took > SLOW_RUN_MS)
		js->slow_at[js->slow_n++ % (SLOW_RUNS_TO_DEMOTE + 1)] = it->res.mono_end_ms;
	it->final_state = it->res.state;
	if (atomic_load(&it->cancel.requested) && it->cancel_state &&
	    it->res.state != DBCRON_RUN_SUCCEEDED)
		it->final_state = it->cancel_state;
	else
		it->override_error = NULL;
	/* Logged before the item is handed to the db thread, which frees it
	 * once its final state is written. */
	if (n->cfg.log_runs || it->final_state != DBCRON_RUN_SUCCEEDED)
		dbcron__log(it->final_state == DBCRON_RUN_SUCCEEDED ? LOG_INFO : LOG_WARN, "run.end",
			    "job=%s fire_at=%" PRId64 " attempt=%d run=%" PRId64 " state=%s took_ms=%" PRId64 "%s%s%s",
			    it->run.job_name, it->run.fire_at, it->run.attempt, it->run.id,
			    dbcron_run_state_name(it->final_state), took,
			    it->res.error || it->override_error ? " error=\"" : "",
			    it->override_error ? it->override_error : it->res.error ? it->res.error : "",
			    it->res.error || it->override_error ? "\"" : "");
	it->pending_finish = true;
	push_pending(n, it);
	/* queue / replace: the next waiting fire of this job starts now */
	if (js->queue_head && !n->stopping) {
		next = js->queue_head;
		js->queue_head = next->next;
		if (!js->queue_head)
			js->queue_tail = NULL;
		if (!start_or_hold(n, next, db_now(n)))
			next = NULL;
	}
	pthread_mutex_unlock(&n->mu);

	if (next)
		submit(n, next);
}

/* ---- timer thread ------------------------------------------------- */

static void abs_deadline(struct timespec *ts, int64_t mono_ms)
{
	ts->tv_sec = mono_ms / 1000;
	ts->tv_nsec = (mono_ms % 1000) * 1000000;
}

static void *timer_main(void *arg)
{
	dbcron_node *n = arg;
	fire_item *batch[256];

	pthread_mutex_lock(&n->mu);
	while (!n->stopping) {
		timer_node *top = timer_peek(&n->heap);
		int64_t now_mono = dbcron__mono_ms();
		int64_t wait_until;
		if (!top) {
			wait_until = now_mono + 1000;
		} else if (now_mono >= n->lease_ok_until_mono) {
			/* No valid lease: start nothing until the db thread
			 * renews it or learns we were fenced. */
			wait_until = now_mono + 20;
		} else {
			int64_t due_mono = top->due - atomic_load(&n->offset_ms);
			if (due_mono > now_mono) {
				wait_until = due_mono;
			} else {
				size_t k = 0;
				int64_t now_db = now_mono + atomic_load(&n->offset_ms);
				while (k < sizeof(batch) / sizeof(batch[0]) &&
				       (top = timer_peek(&n->heap)) && top->due <= now_db) {
					timer_pop(&n->heap);
					fire_item *it = (fire_item *)top;
					if (start_or_hold(n, it, now_db))
						batch[k++] = it;
				}
				pthread_mutex_unlock(&n->mu);
				for (size_t i = 0; i < k; i++)
					submit(n, batch[i]);
				pthread_mutex_lock(&n->mu);
				continue;
			}
		}
		struct timespec ts;
		abs_deadline(&ts, wait_until);
		pthread_cond_timedwait(&n->timer_cv, &n->mu, &ts);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

/* ---- db thread: writes -------------------------------------------- */

/* Write every pending start and completion in one batch.  Items whose final
 * state got written (or refused) are freed. */
static int flush(dbcron_node *n, dbcron_err *err)
{
	pthread_mutex_lock(&n->mu);
	fire_item *list = n->pending_head;
	n->pending_head = n->pending_tail = NULL;
	size_t cnt = 0;
	for (fire_item *it = list; it; it = it->next)
		cnt++;
	if (!cnt) {
		pthread_mutex_unlock(&n->mu);
		return DBCRON_OK;
	}
	store_update *ups = dbcron__calloc(cnt, sizeof(*ups));
	fire_item **items = dbcron__calloc(cnt, sizeof(*items));
	bool *final = dbcron__calloc(cnt, sizeof(*final));
	if (!ups || !items || !final) {
		/* put them back; try again next cycle */
		n->pending_head = list;
		for (n->pending_tail = list; n->pending_tail->next;)
			n->pending_tail = n->pending_tail->next;
		pthread_mutex_unlock(&n->mu);
		dbcron__free(ups);
		dbcron__free(items);
		dbcron__free(final);
		return dbcron_err_set(err, DBCRON_ENOMEM, "flush: out of memory");
	}
	size_t k = 0;
	for (fire_item *it = list, *nx; it; it = nx) {
		nx = it->next;
		it->in_pending = false;
		it->next = NULL;
		store_update *u = &ups[k];
		u->run_id = it->run.id;
		u->job_id = it->run.job_id;
		u->fire_at = it->run.fire_at;
		u->attempt = it->run.attempt;
		u->token = it->run.claim_token;
		u->started_ms = atomic_load(&it->started_db);
		u->finished_ms = -1;
		u->retry_due_at = -1;
		u->job_next_fire_at = -1;
		if (it->pending_finish) {
			dbcron_run_state st = it->final_state;
			u->state = st;
			u->finished_ms = it->finished_db;
			u->has_exit_code = it->res.has_exit_code;
			u->exit_code = it->res.exit_code;
			u->error = it->override_error ? it->override_error : it->res.error;
			u->output = it->res.output;
			model_followup fu = model_run_followup(&it->job, it->run.attempt, st,
							       it->no_retry, it->finished_db);
			u->retry_due_at = fu.retry_due_at;
			u->job_next_fire_at = fu.job_next_fire_at;
			final[k] = true;
		} else if (it->pending_start) {
			u->state = DBCRON_RUN_RUNNING;
		} else {
			continue;
		}
		it->pending_start = it->pending_finish = false;
		items[k++] = it;
	}
	pthread_mutex_unlock(&n->mu);

	int rc = store_apply(n->st, n->node_id, ups, k, err);
	if (rc) {
		/* Keep them for the next try (database away); the lease
		 * decides what happens to the runs meanwhile. */
		pthread_mutex_lock(&n->mu);
		for (size_t i = 0; i < k; i++) {
			if (final[i])
				items[i]->pending_finish = true;
			else
				items[i]->pending_start = true;
			push_pending(n, items[i]);
		}
		n->db_kicked = false;
		pthread_mutex_unlock(&n->mu);
		goto out;
	}
	pthread_mutex_lock(&n->mu);
	for (size_t i = 0; i < k; i++) {
		fire_item *it = items[i];
		if (!ups[i].applied) {
			n->n_fenced++;
			dbcron__log(LOG_WARN, "run.fenced",
				    "job=%s fire_at=%" PRId64 " attempt=%d run=%" PRId64 " state=%s msg=\"write refused: the run is no longer ours\"",
				    it->run.job_name, it->run.fire_at, it->run.attempt, it->run.id,
				    dbcron_run_state_name(ups[i].state));
		}
		if (final[i]) {
			/* nothing else refers to it once its final state is out */
			n->n_finished++;
			n->inflight--;
			item_free(it);
		}
	}
	pthread_mutex_unlock(&n->mu);
out:
	dbcron__free(ups);
	dbcron__free(items);
	dbcron__free(final);
	return rc;
}

/* At-most-once jobs: write RUNNING fenced, start only what went through. */
static void sync_starts(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	fire_item *list = n->sync_head;
	n->sync_head = n->sync_tail = NULL;
	pthread_mutex_unlock(&n->mu);
	for (fire_item *it = list, *nx; it; it = nx) {
		nx = it->next;
		it->next = NULL;
		atomic_store(&it->started_db, db_now(n));
		store_update u = {
			.run_id = it->run.id, .job_id = it->run.job_id,
			.fire_at = it->run.fire_at, .attempt = it->run.attempt,
			.token = it->run.claim_token, .state = DBCRON_RUN_RUNNING,
			.started_ms = atomic_load(&it->started_db), .finished_ms = -1,
			.retry_due_at = -1, .job_next_fire_at = -1,
		};
		dbcron_err err = {0};
		int rc = store_apply(n->st, n->node_id, &u, 1, &err);
		if (rc == DBCRON_OK && u.applied) {
			submit(n, it);
			continue;
		}
		pthread_mutex_lock(&n->mu);
		running_unlink(it->js, it);
		n->running--;
		n->inflight--;
		pthread_mutex_unlock(&n->mu);
		dbcron__log(LOG_WARN, "run.fenced", "job=%s fire_at=%" PRId64 " msg=\"not started: %s\"",
			    it->run.job_name, it->run.fire_at,
			    rc ? err.msg : "the run is no longer ours");
		item_free(it);
	}
}

/* ---- db thread: lease, claim -------------------------------------- */

/* We were declared dead: everything unstarted now belongs to others. */
static void drop_unstarted(dbcron_node *n)
{
	size_t dropped = 0;
	pthread_mutex_lock(&n->mu);
	timer_node *t;
	while ((t = timer_pop(&n->heap))) {
		item_free((fire_item *)t);
		n->inflight--;
		dropped++;
	}
	for (size_t i = 0; i < n->njobs_slots; i++) {
		job_state *js = n->jobs[i];
		if (!js)
			continue;
		for (fire_item *it = js->queue_head, *nx; it; it = nx) {
			nx = it->next;
			item_free(it);
			n->inflight--;
			dropped++;
		}
		js->queue_head = js->queue_tail = NULL;
	}
	pthread_mutex_unlock(&n->mu);
	dbcron__log(LOG_WARN, "node.fenced", "node=%s dropped=%zu msg=\"lease lost; unstarted fires left to other nodes\"",
		    n->node_id, dropped);
}

static int do_register(dbcron_node *n, dbcron_err *err)
{
	random_hex(n->incarnation, 16);
	store_node_info info = {
		.node_id = n->node_id, .incarnation = n->incarnation,
		.host = n->host, .pid = (int)getpid(),
		.workers = n->cfg.workers, .lease_ms = n->cfg.lease_ms,
	};
	int64_t t0 = dbcron__mono_ms();
	int rc = store_node_register(n->st, &info, err);
	if (rc)
		return rc;
	int64_t now;
	rc = store_now_ms(n->st, &now, err);
	if (rc)
		return rc;
	int64_t t1 = dbcron__mono_ms();
	atomic_store(&n->offset_ms, now - (t0 + t1) / 2);
	pthread_mutex_lock(&n->mu);
	n->lease_ok_until_mono = t0 + n->cfg.lease_ms - n->cfg.lease_ms / 4;
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	return DBCRON_OK;
}

static int heartbeat(dbcron_node *n, dbcron_err *err)
{
	int64_t t0 = dbcron__mono_ms(), now;
	int rc = store_node_heartbeat(n->st, n->node_id, n->incarnation,
					    n->cfg.lease_ms, &now, err);
	int64_t t1 = dbcron__mono_ms();
	if (rc == DBCRON_EFENCED) {
		drop_unstarted(n);
		rc = do_register(n, err);
		if (rc == DBCRON_OK)
			dbcron__log(LOG_INFO, "node.rejoin", "node=%s incarnation=%s", n->node_id, n->incarnation);
		return rc;
	}
	if (rc)
		return rc;
	/* The lease counts from when we asked, minus a safety margin for
	 * clock-rate differences; offset from the round trip's midpoint. */
	atomic_store(&n->offset_ms, now - (t0 + t1) / 2);
	pthread_mutex_lock(&n->mu);
	n->lease_ok_until_mono = t0 + n->cfg.lease_ms - n->cfg.lease_ms / 4;
	pthread_mutex_unlock(&n->mu);
	size_t reaped = 0;
	rc = store_reap(n->st, &reaped, err);
	if (rc == DBCRON_OK && reaped)
		dbcron__log(LOG_WARN, "node.takeover", "node=%s runs=%zu msg=\"took over runs of nodes whose lease lapsed\"",
			    n->node_id, reaped);
	return rc;
}

static size_t claim_budget(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	size_t used = n->inflight;
	bool lease_ok = dbcron__mono_ms() < n->lease_ok_until_mono;
	pthread_mutex_unlock(&n->mu);
	if (!lease_ok || n->stopping)
		return 0;
	if (pool_load(n->fast) >= pool_capacity(n->fast))
		return 0;
	size_t max = (size_t)n->cfg.max_inflight;
	size_t free_ = used < max ? max - used : 0;
	return free_ < (size_t)n->cfg.claim_batch ? free_ : (size_t)n->cfg.claim_batch;
}

/* One claim; returns how many fires it took (or -1 on error). */
static long claim(dbcron_node *n, dbcron_err *err)
{
	size_t budget = claim_budget(n);
	if (!budget)
		return 0;
	char token[33];
	random_hex(token, 16);
	store_claim_req req = {
		.node_id = n->node_id, .token = token,
		.horizon_ms_ahead = n->cfg.preread_ms, .max = (int)budget,
		.plan = planner_plan, .plan_ctx = n->plan,
	};
	store_claim_result res = {0};
	int rc = store_claim(n->st, &req, &res, err);
	if (rc)
		return -1;
	n->n_claims++;
	pthread_mutex_lock(&n->mu);
	bool wake = false;
	for (size_t i = 0; i < res.nruns; i++) {
		fire_item *it = item_new(n, &res.runs[i]);
		job_state *js = it ? js_get(n, res.runs[i].run.job_id) : NULL;
		if (!it || !js) {
			/* Leave it claimed: the lease machinery hands it to
			 * another node if we cannot hold it. */
			item_free(it);
			continue;
		}
		it->js = js;
		timer_node *top = timer_peek(&n->heap);
		if (timer_push(&n->heap, &it->tn, it->run.due_at)) {
			item_free(it);
			continue;
		}
		if (!top || it->run.due_at < top->due)
			wake = true;
		n->inflight++;
		n->n_claimed++;
	}
	if (wake)
		pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	long got = (long)res.nruns;
	if (n->cfg.log_runs && (res.nruns || res.nterminal))
		dbcron__log(LOG_DEBUG, "claim", "token=%s runs=%zu terminal=%zu", token, res.nruns, res.nterminal);
	store_claim_result_clear(&res);
	return got;
}

/* Hand every unstarted fire back to the database at once (shutdown). */
static void hand_back(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	size_t cnt = timer_count(&n->heap);
	for (size_t i = 0; i < n->njobs_slots; i++)
		for (fire_item *it = n->jobs[i] ? n->jobs[i]->queue_head : NULL; it; it = it->next)
			cnt++;
	fire_item **items = dbcron__calloc(cnt ? cnt : 1, sizeof(*items));
	int64_t *ids = dbcron__calloc(cnt ? cnt : 1, sizeof(*ids));
	const char **toks = dbcron__calloc(cnt ? cnt : 1, sizeof(*toks));
	size_t k = 0;
	if (items && ids && toks) {
		timer_node *t;
		while ((t = timer_pop(&n->heap)))
			items[k++] = (fire_item *)t;
		for (size_t i = 0; i < n->njobs_slots; i++) {
			if (!n->jobs[i])
				continue;
			for (fire_item *it = n->jobs[i]->queue_head; it; it = it->next)
				items[k++] = it;
			n->jobs[i]->queue_head = n->jobs[i]->queue_tail = NULL;
		}
	}
	pthread_mutex_unlock(&n->mu);
	for (size_t i = 0; i < k; i++) {
		ids[i] = items[i]->run.id;
		toks[i] = items[i]->run.claim_token;
	}
	if (k) {
		dbcron_err err = {0};
		if (store_runs_release(n->st, n->node_id, ids, toks, k, &err))
			dbcron__log(LOG_WARN, "node.release", "msg=\"%s\"", err.msg);
		else
			dbcron__log(LOG_INFO, "node.release", "node=%s runs=%zu", n->node_id, k);
	}
	pthread_mutex_lock(&n->mu);
	for (size_t i = 0; i < k; i++) {
		item_free(items[i]);
		n->inflight--;
	}
	pthread_mutex_unlock(&n->mu);
	dbcron__free(items);
	dbcron__free(ids);
	dbcron__free(toks);
}

static void cancel_running(dbcron_node *n, const char *why)
{
	pthread_mutex_lock(&n->mu);
	for (size_t i = 0; i < n->njobs_slots; i++)
		for (fire_item *r = n->jobs[i] ? n->jobs[i]->running_list : NULL; r; r = r->run_next) {
			r->override_error = why;
			r->cancel_state = DBCRON_RUN_ABANDONED;
			atomic_store(&r->cancel.requested, 1);
		}
	pthread_mutex_unlock(&n->mu);
}

static void wait_db(dbcron_node *n, int64_t until_mono)
{
	struct timespec ts;
	abs_deadline(&ts, until_mono);
	pthread_mutex_lock(&n->mu);
	while (!n->db_kicked && !atomic_load(&n->stop_requested) &&
	       dbcron__mono_ms() < until_mono)
		if (pthread_cond_timedwait(&n->db_cv, &n->mu, &ts) == ETIMEDOUT)
			break;
	n->db_kicked = false;
	pthread_mutex_unlock(&n->mu);
}

/* Database work that failed: log once per distinct message, back off. */
static void db_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff)
{
	dbcron__log(LOG_WARN, "db.error", "node=%s code=%d msg=\"%s\" retry_in_ms=%" PRId64,
		    n->node_id, err->code, err->msg, *backoff);
	wait_db(n, dbcron__mono_ms() + *backoff);
	*backoff = *backoff * 2 > 5000 ? 5000 : *backoff * 2;
}

/*
 * Run-log retention, under the lease lock "dbcron:maintenance" so that one
 * node prunes at a time however many run.  A lock held elsewhere is the
 * normal case and says nothing.
 */
static void maintenance(dbcron_node *n)
{
	if (n->cfg.retention_ms < 0)
		return;
	dbcron_err err = {0};
	store_lock_row holder = {0};
	int64_t fence, until, now, deleted = 0;
	int rc = store_lock_acquire(n->st, "dbcron:maintenance", n->node_id,
					  5 * 60000, &fence, &until, &holder, &err);
	store_lock_row_clear(&holder);
	if (rc)
		return;
	rc = store_now_ms(n->st, &now, &err);
	if (rc == DBCRON_OK)
		rc = store_prune_runs(n->st, now - n->cfg.retention_ms, &deleted, &err);
	if (rc)
		dbcron__log(LOG_WARN, "maintenance", "node=%s msg=\"%s\"", n->node_id, err.msg);
	else if (deleted)
		dbcron__log(LOG_INFO, "maintenance", "node=%s pruned_runs=%" PRId64 " older_than_ms=%" PRId64,
			    n->node_id, deleted, n->cfg.retention_ms);
	store_lock_release(n->st, "dbcron:maintenance", n->node_id, fence, &err);
}

static int run_db_loop(dbcron_node *n)
{
	int64_t next_maint = dbcron__mono_ms() + 2000;
	int64_t next_hb = dbcron__mono_ms() + n->cfg.heartbeat_ms;
	int64_t next_claim = 0, backoff = 100;
	dbcron_err err = {0};

	while (!atomic_load(&n->stop_requested)) {
		int64_t now = dbcron__mono_ms();
		if (now >= next_hb) {
			if (heartbeat(n, &err)) {
				db_trouble(n, &err, &backoff);
				continue;
			}
			next_hb = now + n->cfg.heartbeat_ms;
		}
		sync_starts(n);
		if (flush(n, &err)) {
			db_trouble(n, &err, &backoff);
			continue;
		}
		if (now >= next_claim) {
			long got = claim(n, &err);
			if (got < 0) {
				db_trouble(n, &err, &backoff);
				continue;
			}
			/* a full batch means more may be due: claim again */
			next_claim = got >= n->cfg.claim_batch ? now : now + n->cfg.claim_interval_ms;
		}
		if (now >= next_maint) {
			maintenance(n);
			next_maint = now + n->cfg.maintenance_ms;
		}
		backoff = 100;
		int64_t until = next_hb < next_claim ? next_hb : next_claim;
		pthread_mutex_lock(&n->mu);
		bool pending = n->pending_head != NULL || n->sync_head != NULL;
		pthread_mutex_unlock(&n->mu);
		if (pending && until > now + n->cfg.flush_ms)
			until = now + n->cfg.flush_ms;
		if (until > now)
			wait_db(n, until);
	}
	return DBCRON_OK;
}

static void shutdown_node(dbcron_node *n, pthread_t timer_thread)
{
	pthread_mutex_lock(&n->mu);
	n->stopping = true;
	pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(timer_thread, NULL);
	dbcron__log(LOG_INFO, "node.stopping", "node=%s", n->node_id);
	hand_back(n);

	/* Wait for running jobs up to the grace period, still writing their
	 * outcomes and renewing the lease. */
	dbcron_err err = {0};
	int64_t deadline = dbcron__mono_ms() + n->cfg.grace_ms, next_hb = 0;
	bool cancelled = false;
	for (;;) {
		sync_starts(n);
		flush(n, &err);
		pthread_mutex_lock(&n->mu);
		size_t running = n->running;
		pthread_mutex_unlock(&n->mu);
		if (!running)
			break;
		int64_t now = dbcron__mono_ms();
		if (now >= next_hb) {
			store_node_heartbeat(n->st, n->node_id, n->incarnation,
						   n->cfg.lease_ms, &(int64_t){0}, &err);
			next_hb = now + n->cfg.heartbeat_ms;
		}
		if (!cancelled && now >= deadline) {
			dbcron__log(LOG_WARN, "node.grace_over", "node=%s running=%zu msg=\"stopping running jobs\"",
				    n->node_id, running);
			cancel_running(n, "node shut down before the run ended");
			cancelled = true;
		}
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
	pool_destroy(n->fast, NULL);
	pool_destroy(n->slow, NULL);
	n->fast = n->slow = NULL;
	flush(n, &err);
	if (store_node_stop(n->st, n->node_id, n->incarnation, &err))
		dbcron__log(LOG_WARN, "node.stop", "msg=\"%s\"", err.msg);
	dbcron__log(LOG_INFO, "node.stop",
		    "node=%s claims=%" PRIu64 " claimed=%" PRIu64 " finished=%" PRIu64 " skipped=%" PRIu64 " fenced=%" PRIu64 " statements=%" PRIu64,
		    n->node_id, n->n_claims, n->n_claimed, n->n_finished, n->n_skipped,
		    n->n_fenced, n->st->stmt_count);
}

/* ---- public API ----------------------------------------------------- */

int dbcron_node_create(const dbcron_node_config *cfg, dbcron_node **out,
		       dbcron_err *err)
{
	dbcron_node *n = dbcron__calloc(1, sizeof(*n));
	if (!n)
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory");
	n->cfg = *cfg;
	dbcron_node_config def;
	dbcron_node_config_init(&def);
#define DEF(f) if (n->cfg.f <= 0) n->cfg.f = def.f
	DEF(workers); DEF(slow_workers); DEF(claim_batch); DEF(max_inflight);
	DEF(preread_ms); DEF(claim_interval_ms); DEF(lease_ms); DEF(heartbeat_ms);
	DEF(flush_ms); DEF(kill_grace_ms); DEF(maintenance_ms);
#undef DEF
	if (n->cfg.grace_ms < 0)
		n->cfg.grace_ms = def.grace_ms;
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	n->host = dbcron__strdup(host);
	n->db_url = dbcron__strdup(cfg->db_url ? cfg->db_url : "");
	if (cfg->node_id && *cfg->node_id) {
		n->node_id = dbcron__strdup(cfg->node_id);
	} else {
		char id[300];
		snprintf(id, sizeof(id), "%s-%d", host, (int)getpid());
		n->node_id = dbcron__strdup(id);
	}
	if (!n->host || !n->db_url || !n->node_id) {
		dbcron_node_free(n);
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory");
	}
	n->cfg.db_url = n->db_url;
	n->cfg.node_id = n->node_id;
	pthread_mutex_init(&n->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->timer_cv, &ca);
	pthread_cond_init(&n->db_cv, &ca);
	pthread_condattr_destroy(&ca);
	timer_init(&n->heap);
	*out = n;
	return DBCRON_OK;
}

void dbcron_node_stop(dbcron_node *n)
{
	atomic_store(&n->stop_requested, 1);
	/* The db thread polls stop_requested at least every flush/claim
	 * interval; no lock here so this stays async-signal-safe. */
}

int dbcron_node_run(dbcron_node *n, dbcron_err *err)
{
	int rc = store_open(n->db_url, &n->st, err);
	if (rc)
		return rc;
	rc = store_check_schema(n->st, err);
	if (rc)
		goto out_close;
	rc = planner_create(&n->plan, err);
	if (rc)
		goto out_close;
	size_t qcap = (size_t)n->cfg.max_inflight;
	rc = pool_create("fast", n->cfg.workers, qcap, &n->fast, err);
	if (rc)
		goto out_planner;
	rc = pool_create("slow", n->cfg.slow_workers, qcap, &n->slow, err);
	if (rc)
		goto out_fast;
	rc = do_register(n, err);
	if (rc)
		goto out_slow;
	dbcron__log(LOG_INFO, "node.start",
		    "node=%s incarnation=%s backend=%s workers=%d claim_batch=%d preread_ms=%" PRId64 " lease_ms=%" PRId64,
		    n->node_id, n->incarnation, store_name(n->st), n->cfg.workers,
		    n->cfg.claim_batch, n->cfg.preread_ms, n->cfg.lease_ms);

	pthread_t timer_thread;
	if (pthread_create(&timer_thread, NULL, timer_main, n)) {
		rc = dbcron_err_set(err, DBCRON_EINTERNAL, "node: cannot start the timer thread");
		goto out_slow;
	}
	run_db_loop(n);
	shutdown_node(n, timer_thread);
	rc = DBCRON_OK;
out_slow:
	if (n->slow)
		pool_destroy(n->slow, NULL);
	n->slow = NULL;
out_fast:
	if (n->fast)
		pool_destroy(n->fast, NULL);
	n->fast = NULL;
out_planner:
	planner_free(n->plan);
	n->plan = NULL;
out_close:
	store_close(n->st);
	n->st = NULL;
	return rc;
}

void dbcron_node_free(dbcron_node *n)
{
	if (!n)
		return;
	timer_node *t;
	while ((t = timer_pop(&n->heap)))
		item_free((fire_item *)t);
	timer_free(&n->heap);
	for (fire_item *it = n->pending_head, *nx; it; it = nx) {
		nx = it->next;
		item_free(it);
	}
	for (size_t i = 0; i < n->njobs_slots; i++)
		dbcron__free(n->jobs[i]);
	dbcron__free(n->jobs);
	dbcron__free(n->db_url);
	dbcron__free(n->node_id);
	dbcron__free(n->host);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->timer_cv);
	pthread_cond_destroy(&n->db_cv);
	dbcron__free(n);
}
