/*
 * The db thread: the only thread that talks to the database.  It renews the
 * node's lease and keeps the database clock offset, reaps dead nodes,
 * claims due fires sized to the free capacity, writes starts and ends in
 * batches, fences at-most-once starts, prunes the run log under the
 * maintenance lease, and hands unstarted fires back at shutdown.
 *
 * Invariants kept here:
 *  3 fencing: every write carries the run's claim token; a node that
 *    learns from its heartbeat that it was declared dead drops every
 *    unstarted fire (and rejoins under a new incarnation);
 *  4 one clock: the offset from CLOCK_MONOTONIC to the database clock is
 *    taken at every heartbeat, and the lease is valid from the moment the
 *    heartbeat was asked for, minus a margin;
 *  5 backpressure: a claim asks for no more than the free in-flight budget,
 *    and for nothing while the fast pool is full or the lease in doubt;
 *  6 this thread never waits on a job: it only reads what the workers
 *    queued on the pending and sync lists.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "model/rules.h"
#include "sched/node_int.h"

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

void dbloop_kick(dbcron_node *n)
{
	if (!n->db_kicked) {
		n->db_kicked = true;
		pthread_cond_signal(&n->db_cv);
	}
}

void dbloop_queue_write(dbcron_node *n, fire *f)
{
	fire_list_push(&n->pending, f);
	dbloop_kick(n);
}

/* ---- writes -------------------------------------------------------- */

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
 * Write every pending start and end in one batch.  A STARTED fire becomes
 * RUNNING as its start is taken, a FINISHED one WRITING; a fire whose final
 * state went out (or was refused by the fence) is freed.
 */
static int flush(dbcron_node *n, dbcron_err *err)
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
		} else {
			fire_set_phase(f, FIRE_RUNNING); /* from STARTED */
			u->state = DBCRON_RUN_RUNNING;
		}
		batch[k++] = f;
	}
	pthread_mutex_unlock(&n->mu);

	int rc = store_apply(n->st, n->node_id, ups, k, err);
	pthread_mutex_lock(&n->mu);
	if (rc) {
		/* Keep them for the next try (database away); the lease
		 * decides what happens to the runs meanwhile.  A start whose
		 * fire ended or went back to the heap since needs no retry. */
		for (size_t i = 0; i < k; i++) {
			fire *f = batch[i];
			if (f->phase == FIRE_WRITING)
				fire_set_phase(f, FIRE_FINISHED);
			else if (f->phase == FIRE_RUNNING)
				fire_set_phase(f, FIRE_STARTED);
			else
				continue;
			fire_list_push(&n->pending, f);
		}
		n->db_kicked = false;
		goto out_unlock;
	}
	for (size_t i = 0; i < k; i++) {
		fire *f = batch[i];
		if (!ups[i].applied) {
			n->n_fenced++;
			dbcron__log(LOG_WARN, "run.fenced", LOG_STR("job", f->run.job_name),
				    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
				    LOG_INT("run", f->run.id),
				    LOG_STR("state", dbcron_run_state_name(ups[i].state)),
				    LOG_STR("msg", "write refused: the run is no longer ours"));
		}
		if (f->phase == FIRE_WRITING) {
			/* nothing else refers to it once its final state is out */
			fire_set_phase(f, FIRE_WRITTEN);
			n->n_finished++;
			n->inflight--;
			fire_free(f);
		}
	}
out_unlock:
	pthread_mutex_unlock(&n->mu);
	dbcron__free(ups);
	dbcron__free(batch);
	return rc;
}

/* At-most-once jobs: write RUNNING fenced, start only what went through. */
static void sync_starts(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	fire *list = fire_list_take(&n->sync);
	pthread_mutex_unlock(&n->mu);
	for (fire *f = list, *nx; f; f = nx) {
		nx = f->next;
		f->prev = f->next = NULL;
		atomic_store(&f->started_db, node_db_now(n));
		store_update u;
		fill_update(&u, f);
		u.state = DBCRON_RUN_RUNNING;
		dbcron_err err = {0};
		int rc = store_apply(n->st, n->node_id, &u, 1, &err);
		pthread_mutex_lock(&n->mu);
		if (rc == DBCRON_OK && u.applied) {
			fire_set_phase(f, FIRE_RUNNING);
			pthread_mutex_unlock(&n->mu);
			dispatch_submit(n, f);
			continue;
		}
		inflight_running_remove(f->js, f);
		n->running--;
		n->inflight--;
		char msg[sizeof(err.msg) + 16];
		snprintf(msg, sizeof(msg), "not started: %s", rc ? err.msg : "the run is no longer ours");
		dbcron__log(LOG_WARN, "run.fenced", LOG_STR("job", f->run.job_name),
			    LOG_INT("fire_at", f->run.fire_at), LOG_STR("msg", msg));
		fire_set_phase(f, FIRE_RELEASED);
		fire_free(f);
		pthread_mutex_unlock(&n->mu);
	}
}

/* ---- lease, clock, claim ---------------------------------------------- */

/* We were declared dead: everything unstarted now belongs to others. */
static void drop_unstarted(dbcron_node *n)
{
	fire_list gone = {0};
	pthread_mutex_lock(&n->mu);
	size_t dropped = dispatch_take_unstarted(n, &gone);
	for (fire *f; (f = fire_list_pop(&gone));) {
		fire_set_phase(f, FIRE_RELEASED);
		fire_free(f);
		n->inflight--;
	}
	pthread_mutex_unlock(&n->mu);
	dbcron__log(LOG_WARN, "node.fenced", LOG_STR("node", n->node_id), LOG_UINT("dropped", dropped),
		    LOG_STR("msg", "lease lost; unstarted fires left to other nodes"));
}

/* The lease counts from when we asked, minus a safety margin for
 * clock-rate differences; the offset from the round trip's midpoint. */
static void set_clock_and_lease(dbcron_node *n, int64_t t0, int64_t t1,
				int64_t db_now, bool wake_timer)
{
	atomic_store(&n->offset_ms, db_now - (t0 + t1) / 2);
	pthread_mutex_lock(&n->mu);
	n->lease_ok_until_mono = t0 + n->cfg.lease_ms - n->cfg.lease_ms / 4;
	if (wake_timer)
		pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
}

int dbloop_register(dbcron_node *n, dbcron_err *err)
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
	set_clock_and_lease(n, t0, dbcron__mono_ms(), now, true);
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
		rc = dbloop_register(n, err);
		if (rc == DBCRON_OK)
			dbcron__log(LOG_INFO, "node.rejoin", LOG_STR("node", n->node_id),
				    LOG_STR("incarnation", n->incarnation));
		return rc;
	}
	if (rc)
		return rc;
	set_clock_and_lease(n, t0, t1, now, false);
	size_t reaped = 0;
	rc = store_reap(n->st, &reaped, err);
	if (rc == DBCRON_OK && reaped)
		dbcron__log(LOG_WARN, "node.takeover", LOG_STR("node", n->node_id), LOG_UINT("runs", reaped),
			    LOG_STR("msg", "took over runs of nodes whose lease lapsed"));
	return rc;
}

static size_t claim_budget(dbcron_node *n)
{
	pthread_mutex_lock(&n->mu);
	size_t used = n->inflight;
	bool lease_ok = dbcron__mono_ms() < n->lease_ok_until_mono;
	bool stopping = n->stopping;
	pthread_mutex_unlock(&n->mu);
	if (!lease_ok || stopping)
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
		/* The fire shares its job's snapshot while the row is
		 * unchanged, and starts a new one when the job was edited
		 * (the ownership rule is in inflight.h). */
		job_state *js = inflight_job_get(&n->jobs, res.runs[i].run.job_id);
		fire *f = js ? fire_new(n, js, &res.runs[i]) : NULL;
		if (!f)
			continue; /* left claimed: the lease machinery hands it
				   * to another node if we cannot hold it */
		timer_node *top = timer_peek(&n->heap);
		if (timer_push(&n->heap, &f->tn, f->run.due_at)) {
			fire_free(f);
			continue;
		}
		fire_set_phase(f, FIRE_CLAIMED);
		if (!top || f->run.due_at < top->due)
			wake = true;
		n->inflight++;
		n->n_claimed++;
	}
	if (wake)
		pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
	long got = (long)res.nruns;
	if (n->cfg.log_runs && (res.nruns || res.nterminal))
		dbcron__log(LOG_DEBUG, "claim", LOG_STR("token", token), LOG_UINT("runs", res.nruns),
			    LOG_UINT("terminal", res.nterminal));
	store_claim_result_clear(&res);
	return got;
}

/* ---- waiting, trouble, maintenance --------------------------------------- */

static void wait_db(dbcron_node *n, int64_t until_mono)
{
	struct timespec ts;
	node_abs_deadline(&ts, until_mono);
	pthread_mutex_lock(&n->mu);
	while (!n->db_kicked && !atomic_load(&n->stop_requested) &&
	       dbcron__mono_ms() < until_mono)
		if (pthread_cond_timedwait(&n->db_cv, &n->mu, &ts) == ETIMEDOUT)
			break;
	n->db_kicked = false;
	pthread_mutex_unlock(&n->mu);
}

/* Database work that failed: log it, back off. */
static void db_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff)
{
	dbcron__log(LOG_WARN, "db.error", LOG_STR("node", n->node_id), LOG_INT("code", err->code),
		    LOG_STR("msg", err->msg), LOG_INT("retry_in_ms", *backoff));
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
		dbcron__log(LOG_WARN, "maintenance", LOG_STR("node", n->node_id), LOG_STR("msg", err.msg));
	else if (deleted)
		dbcron__log(LOG_INFO, "maintenance", LOG_STR("node", n->node_id),
			    LOG_INT("pruned_runs", deleted), LOG_INT("older_than_ms", n->cfg.retention_ms));
	store_lock_release(n->st, "dbcron:maintenance", n->node_id, fence, &err);
}

void dbloop_run(dbcron_node *n)
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
		bool pending = !fire_list_empty(&n->pending) || !fire_list_empty(&n->sync);
		pthread_mutex_unlock(&n->mu);
		if (pending && until > now + n->cfg.flush_ms)
			until = now + n->cfg.flush_ms;
		if (until > now)
			wait_db(n, until);
	}
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
		if (store_runs_release(n->st, n->node_id, ids, toks, k, &err))
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
			dbcron__log(LOG_WARN, "node.grace_over", LOG_STR("node", n->node_id),
				    LOG_UINT("running", running), LOG_STR("msg", "stopping running jobs"));
			dispatch_cancel_running(n, &fire_cancel_shutdown);
			cancelled = true;
		}
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
}

void dbloop_finish(dbcron_node *n)
{
	dbcron_err err = {0};
	flush(n, &err);
	if (store_node_stop(n->st, n->node_id, n->incarnation, &err))
		dbcron__log(LOG_WARN, "node.stop", LOG_STR("msg", err.msg));
}
