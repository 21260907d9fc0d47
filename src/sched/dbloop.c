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
 *    sized per pool: no more of the slow pool's jobs than it can start, and
 *    none of them while it is saturated (they stay for other nodes); for
 *    nothing while the lease is in doubt, for no fast job while the fast
 *    pool is full;
 *  6 this thread never waits on a job: it only reads what the workers
 *    queued on the pending and sync lists.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "exec/exec.h"
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
	bool *ours = rc ? NULL : dbcron__calloc(k, sizeof(*ours));
	/* the per-job counts, taken after mu is let go (no two locks), and
	 * only when an HTTP server asked for them */
	bool per_job = !rc && atomic_load_explicit(&n->stats.jobs_max, memory_order_relaxed) > 0;
	char **ended = per_job ? dbcron__calloc(k, sizeof(*ended)) : NULL;
	int *ended_state = per_job ? dbcron__calloc(k, sizeof(*ended_state)) : NULL;
	size_t nended = 0;
	for (size_t i = 0; ours && i < k; i++)
		if (!ups[i].applied && batch[i]->write_doubt && batch[i]->phase == FIRE_WRITING)
			ours[i] = final_write_landed(n, &ups[i]);
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
			if (rc == DBCRON_ECONN)
				f->write_doubt = true;
			fire_list_push(&n->pending, f);
		}
		n->db_kicked = false;
		goto out_unlock;
	}
	for (size_t i = 0; i < k; i++) {
		fire *f = batch[i];
		if (ours && ours[i]) {
			dbcron__log(LOG_INFO, "run.write_confirmed", LOG_STR("job", f->run.job_name),
				    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
				    LOG_INT("run", f->run.id),
				    LOG_STR("state", dbcron_run_state_name(ups[i].state)),
				    LOG_STR("msg", "an earlier try whose reply was lost had written it"));
		} else if (!ups[i].applied) {
			atomic_fetch_add_explicit(&n->stats.fenced, 1, memory_order_relaxed);
			n->n_fenced++;
			dbcron__log(LOG_WARN, "run.fenced", LOG_STR("job", f->run.job_name),
				    LOG_INT("fire_at", f->run.fire_at), LOG_INT("attempt", f->run.attempt),
				    LOG_INT("run", f->run.id),
				    LOG_STR("state", dbcron_run_state_name(ups[i].state)),
				    LOG_STR("msg", "write refused: the run is no longer ours"));
		}
		/* /metrics: what this node wrote (a refused write is not ours).
		 * A run that ended before its start was flushed has one write
		 * carrying both, so lateness counts the first write that has a
		 * start, whichever it is. */
		bool landed = ups[i].applied || (ours && ours[i]);
		if (landed && !f->start_counted && ups[i].started_ms >= 0) {
			f->start_counted = true;
			node_hist_observe(&n->stats.late_ms, ups[i].started_ms - f->run.due_at);
		}
		if (landed && f->phase == FIRE_WRITING) {
			if ((int)ups[i].state >= 0 && ups[i].state < NODE_STATE_MAX)
				atomic_fetch_add_explicit(&n->stats.runs[ups[i].state], 1,
							  memory_order_relaxed);
			if (ended && ended_state && f->run.job_name &&
			    (ended[nended] = dbcron__strdup(f->run.job_name)))
				ended_state[nended++] = (int)ups[i].state;
			if (ups[i].started_ms >= 0)
				node_hist_observe(&n->stats.run_ms,
						  ups[i].finished_ms - ups[i].started_ms);
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
	atomic_store_explicit(&n->stats.inflight, (long long)n->inflight, memory_order_relaxed);
	pthread_mutex_unlock(&n->mu);
	for (size_t i = 0; i < nended; i++) {
		node_stats_job_ended(&n->stats, ended[i], ended_state[i]);
		dbcron__free(ended[i]);
	}
	dbcron__free(ended);
	dbcron__free(ended_state);
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
static int sync_starts(dbcron_node *n, dbcron_err *err)
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

/* ---- lease, clock, claim ---------------------------------------------- */

/* We were declared dead: everything unstarted now belongs to others. */
static void drop_unstarted(dbcron_node *n)
{
	fire_list gone = {0};
	pthread_mutex_lock(&n->mu);
	n->lease_gen++; /* fires in the pools, not yet started, are not ours */
	n->lease_ok_until_mono = 0;
	n->lease_kill_by_mono = 0; /* our running jobs: stopped at once */
	pthread_cond_signal(&n->timer_cv);
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

/*
 * The lease counts from when we asked: the database wrote its end from its
 * own now, which was later.  So by our clock it ends no earlier than
 * asked + lease, and another node takes over only after that (and, by the
 * reap rule, a heartbeat of its own later still).  A quarter of the lease
 * before that end we start nothing more and stop the jobs another node
 * would retry; an eighth before it their SIGKILL has landed
 * (docs/scheduler.md "Leases and fencing").  The offset is taken from the
 * round trip's midpoint.
 */
static void set_clock_and_lease(dbcron_node *n, int64_t asked_mono, int64_t t0, int64_t t1,
				int64_t db_now, int64_t lease_until_db, bool wake_timer)
{
	atomic_store(&n->offset_ms, db_now - (t0 + t1) / 2);
	pthread_mutex_lock(&n->mu);
	n->lease_ok_until_mono = asked_mono + n->cfg.lease_ms - n->cfg.lease_ms / 4;
	n->lease_kill_by_mono = asked_mono + n->cfg.lease_ms - n->cfg.lease_ms / 8;
	n->lease_until_db = lease_until_db;
	atomic_store_explicit(&n->stats.lease_until_ms, lease_until_db, memory_order_relaxed);
	if (wake_timer)
		pthread_cond_signal(&n->timer_cv);
	pthread_mutex_unlock(&n->mu);
}

int dbloop_register(dbcron_node *n, dbcron_err *err)
{
	random_hex(n->incarnation, 16);
	/* What this process can run, as registered now (later ones are
	 * added by heartbeat(): handlers_catch_up). */
	exec_handler_names_free(n->handlers, n->nhandlers);
	n->handlers = NULL;
	n->nhandlers = 0;
	if (exec_handler_names(&n->handlers, &n->nhandlers, &n->handlers_gen))
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory");
	store_node_info info = {
		.node_id = n->node_id, .incarnation = n->incarnation,
		.host = n->host, .pid = (int)getpid(),
		.workers = n->cfg.workers, .lease_ms = n->cfg.lease_ms,
		.handlers = (const char *const *)n->handlers, .nhandlers = n->nhandlers,
	};
	/* The lease is written from the database's now inside register,
	 * which is at least `before`: before + lease is what we may count on. */
	int64_t t0 = dbcron__mono_ms(), before, now;
	int rc = store_now_ms(n->st, &before, err);
	if (!rc)
		rc = store_node_register(n->st, &info, err);
	if (rc)
		return rc;
	int64_t t1 = dbcron__mono_ms();
	rc = store_now_ms(n->st, &now, err);
	if (rc)
		return rc;
	set_clock_and_lease(n, t0, t1, dbcron__mono_ms(), now, before + n->cfg.lease_ms, true);
	n->prev_beat_db = before; /* we could write then: the reap bound */
	n->healthy_since_db = before;
	return DBCRON_OK;
}

/* How long start-up rides out a database that is busy or away (a write
 * lock held elsewhere, a server restarting) before it gives up. */
#define JOIN_PATIENCE_MS 60000

static void db_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff, int64_t cap);

/*
 * Start-up: register, waiting out what a running node rides out too.  A
 * busy database or a lost connection is retried with the db loop's backoff
 * (db_trouble) for up to JOIN_PATIENCE_MS: on SQLite one writer holding the
 * file (a `job apply`, a prune, an operator's open transaction) must not
 * make a node that starts meanwhile exit.  A predecessor under the same id
 * that died (kill -9, then a quick restart) holds a lease for up to its
 * length: that is waited out too; a live one keeps renewing and we give up
 * (docs/cluster.md "Node ids").
 */
int dbloop_join(dbcron_node *n, dbcron_err *err)
{
	int64_t t0 = dbcron__mono_ms(), backoff = 100;
	int64_t id_until = t0 + 2 * n->cfg.lease_ms + 1000, busy_until = t0 + JOIN_PATIENCE_MS;
	for (;;) {
		int rc = dbloop_register(n, err);
		int64_t now = dbcron__mono_ms();
		if (rc == DBCRON_OK || atomic_load(&n->stop_requested))
			return rc;
		if (rc == DBCRON_EEXISTS && now < id_until) {
			struct timespec ts = {0, 250 * 1000000};
			nanosleep(&ts, NULL);
		} else if ((rc == DBCRON_EBUSY || rc == DBCRON_ECONN) && now < busy_until) {
			db_trouble(n, err, &backoff, busy_until);
		} else {
			return rc;
		}
	}
}

/* The answer of store_jobs_state: ids sorted, what each job is now. */
struct seen_jobs {
	const int64_t *ids;
	int *state; /* JOB_DELETED until the job's row answers */
	size_t n;
};

static int seen_job(void *ctx, int64_t id, bool paused)
{
	struct seen_jobs *sj = ctx;
	size_t lo = 0, hi = sj->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sj->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sj->n && sj->ids[lo] == id)
		sj->state[lo] = paused ? JOB_PAUSED : JOB_OK;
	return 0;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
 * The jobs generation moved: some job was paused or deleted.  Read the
 * state of every job this node knows and end the unstarted fires of those
 * paused or gone, before the heartbeat reports the generation as seen (a
 * pause returns only then: store_nodes_wait_seen).  Claims run on this
 * thread too, so no fire arrives meanwhile.
 */
static int see_jobs(dbcron_node *n, dbcron_err *err)
{
	int rc = DBCRON_OK;
	pthread_mutex_lock(&n->mu);
	size_t k = 0;
	for (size_t i = 0; i < n->jobs.nslots; i++)
		k += n->jobs.slots[i] != NULL;
	int64_t *ids = dbcron__calloc(k ? k : 1, sizeof(*ids));
	int *state = dbcron__calloc(k ? k : 1, sizeof(*state));
	size_t m = 0;
	for (size_t i = 0; ids && i < n->jobs.nslots; i++)
		if (n->jobs.slots[i])
			ids[m++] = n->jobs.slots[i]->job_id;
	pthread_mutex_unlock(&n->mu);
	if (!ids || !state) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory reading job states");
		goto out;
	}
	qsort(ids, m, sizeof(*ids), i64_cmp);
	for (size_t i = 0; i < m; i++)
		state[i] = JOB_DELETED;
	struct seen_jobs sj = {ids, state, m};
	if ((rc = store_jobs_state(n->st, ids, m, seen_job, &sj, err)))
		goto out;
	pthread_mutex_lock(&n->mu);
	for (size_t i = 0; i < n->jobs.nslots; i++) {
		job_state *js = n->jobs.slots[i];
		const int64_t *at = js ? bsearch(&js->job_id, ids, m, sizeof(*ids), i64_cmp) : NULL;
		if (at)
			js->blocked = state[at - ids];
	}
	dispatch_block_jobs(n);
	pthread_mutex_unlock(&n->mu);
out:
	dbcron__free(ids);
	dbcron__free(state);
	return rc;
}

/*
 * Handlers registered since the node's names were read (from any thread,
 * dbcron_handler_register): written to node_handlers with a lease renewal,
 * then sent with the claims.  In that order, so that no node records a
 * fire of the job MISFIRED "no live node has registered handler" while
 * this one already runs it, and the rows never name a handler the claims
 * do not take.  A fenced write leaves it to the re-registration.
 */
static int handlers_catch_up(dbcron_node *n, dbcron_err *err)
{
	if (exec_handler_gen() == n->handlers_gen)
		return DBCRON_OK;
	char **names = NULL;
	size_t nn = 0;
	uint64_t gen = 0;
	if (exec_handler_names(&names, &nn, &gen))
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory reading handlers");
	int64_t t0 = dbcron__mono_ms(), now;
	int rc = store_node_handlers_add(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
					 (const char *const *)names, nn, &now, err);
	if (rc) {
		exec_handler_names_free(names, nn);
		return rc == DBCRON_EFENCED ? DBCRON_OK : rc;
	}
	set_clock_and_lease(n, t0, t0, dbcron__mono_ms(), now, now + n->cfg.lease_ms, false);
	size_t before = n->nhandlers;
	exec_handler_names_free(n->handlers, n->nhandlers);
	n->handlers = names;
	n->nhandlers = nn;
	n->handlers_gen = gen;
	dbcron__log(LOG_INFO, "node.handlers", LOG_STR("node", n->node_id),
		    LOG_UINT("added", nn > before ? nn - before : 0), LOG_UINT("handlers", nn));
	return DBCRON_OK;
}

static int heartbeat(dbcron_node *n, dbcron_err *err)
{
	int64_t t0 = dbcron__mono_ms(), now, gen = -1;
	int rc = store_node_beat(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
				 n->jobs_gen, &now, &gen, err);
	int64_t t1 = dbcron__mono_ms();
	if (rc == DBCRON_EFENCED) {
		drop_unstarted(n);
		rc = dbloop_register(n, err);
		if (rc == DBCRON_OK)
			dbcron__log(LOG_INFO, "node.rejoin", LOG_STR("node", n->node_id),
				    LOG_STR("incarnation", n->incarnation));
		if (rc == DBCRON_EEXISTS) {
			/* Another process runs under our id now: two would
			 * fence each other forever.  It stays, we go. */
			dbcron__log(LOG_ERROR, "node.replaced", LOG_STR("node", n->node_id),
				    LOG_STR("msg", err->msg));
			pthread_mutex_lock(&n->mu);
			n->fatal = *err;
			pthread_mutex_unlock(&n->mu);
			atomic_store(&n->stop_requested, 1);
			return DBCRON_OK;
		}
		return rc;
	}
	if (rc)
		return rc;
	/* the heartbeat wrote lease_until = now + lease_ms in one statement */
	set_clock_and_lease(n, t0, t0, t1, now, now + n->cfg.lease_ms, false);
	if (gen > n->jobs_gen && (rc = see_jobs(n, err)) == DBCRON_OK) {
		n->jobs_gen = gen;
		/* say so at once: a pause waits for it */
		rc = store_node_beat(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
				     n->jobs_gen, &now, &gen, err);
	}
	if (rc || (rc = handlers_catch_up(n, err)))
		return rc;
	/* leases that ended before our previous beat, not just before now */
	if (n->healthy_since_db < 0)
		n->healthy_since_db = now;
	int64_t before = node_reap_bound(n->prev_beat_db, n->healthy_since_db, now, n->cfg.lease_ms);
	n->prev_beat_db = now;
	if (before < 0)
		return DBCRON_OK;
	size_t reaped = 0;
	rc = store_reap_before(n->st, before, &reaped, err);
	if (rc == DBCRON_OK && reaped)
		dbcron__log(LOG_WARN, "node.takeover", LOG_STR("node", n->node_id), LOG_UINT("runs", reaped),
			    LOG_STR("msg", "took over runs of nodes whose lease lapsed"));
	return rc;
}

/*
 * How many fires pool p ([0] fast, [1] slow) of `workers` can start by
 * their fire times: each starts one now, then one per mean run time of the
 * pool within the preread window.  Until a run of the pool has finished the
 * mean is unknown and each worker counts for one, so a node that starts
 * with long jobs leaves the rest of an instant's fires to nodes with idle
 * workers instead of queueing them behind its own (mu held).  Returns
 * SIZE_MAX when runs take no measurable time.
 */
static size_t start_capacity(const dbcron_node *n, int p, int workers)
{
	double w = workers;
	if (!n->runs_timed[p])
		return (size_t)w;
	if (n->run_ms_mean[p] < 0.01)
		return SIZE_MAX;
	double c = w * (1.0 + (double)n->cfg.preread_ms / n->run_ms_mean[p]);
	return c >= (double)SIZE_MAX / 2 ? SIZE_MAX : (size_t)c;
}

/* What the next claim may take, per pool (invariant 5). */
typedef struct claim_budget {
	size_t fast; /* runs of the jobs the fast pool runs */
	size_t slow; /* runs of the jobs in n->slow_ids */
} claim_budget;

static size_t free_of(size_t can, size_t used)
{
	return can > used ? can - used : 0;
}

/*
 * The claim's budget (db thread).  Each pool is sized apart, from its own
 * workers, mean run time and fires in flight (issue 23 item 5: sized from
 * the fast pool alone, the slow jobs' fires queued behind the slow workers,
 * late or skipped, while the fast workers idled and other nodes could not
 * take them).  The jobs demoted to the slow pool go to n->slow_ids, so that
 * the claim takes no more of their fires than the slow pool can start and
 * none while it is saturated (store/claim.c "Pools" says why a slow job
 * never borrows a fast worker).  --max-inflight and the claim batch bound the two
 * together; the slow pool's share, a few fires, is taken from them first.
 * Out of memory listing the slow jobs: nothing is claimed this time.
 */
static claim_budget budget_of(dbcron_node *n)
{
	claim_budget b = {0, 0};
	size_t used_slow = 0;
	bool ok = true;
	pthread_mutex_lock(&n->mu);
	int64_t now = dbcron__mono_ms();
	size_t used = n->inflight;
	bool lease_ok = now < n->lease_ok_until_mono;
	bool stopping = n->stopping;
	size_t can_fast = start_capacity(n, 0, n->cfg.workers);
	size_t can_slow = start_capacity(n, 1, n->cfg.slow_workers);
	n->nslow_ids = 0;
	for (size_t i = 0; ok && i < n->jobs.nslots; i++) {
		job_state *js = n->jobs.slots[i];
		if (!js || !dispatch_job_is_slow(js, now))
			continue;
		ok = !dbcron__grow((void **)&n->slow_ids, &n->slow_ids_cap, n->nslow_ids + 1,
				   sizeof(*n->slow_ids));
		if (ok) {
			n->slow_ids[n->nslow_ids++] = js->job_id;
			used_slow += js->nfires;
		}
	}
	pthread_mutex_unlock(&n->mu);
	if (!lease_ok || stopping || !ok)
		return b;
	size_t total = free_of((size_t)n->cfg.max_inflight, used);
	if (total > (size_t)n->cfg.claim_batch)
		total = (size_t)n->cfg.claim_batch;
	if (n->nslow_ids && pool_load(n->slow) < pool_capacity(n->slow)) {
		b.slow = free_of(can_slow, used_slow);
		if (b.slow > total)
			b.slow = total;
	}
	total -= b.slow;
	if (pool_load(n->fast) >= pool_capacity(n->fast))
		return b;
	b.fast = free_of(can_fast, used > used_slow ? used - used_slow : 0);
	if (b.fast > total)
		b.fast = total;
	return b;
}

/* Claims in doubt go back to the pool before the next claim, so the next
 * claim (ours or another node's) takes their runs as it takes any other. */
static int release_doubtful(dbcron_node *n, dbcron_err *err)
{
	while (n->ndoubt) {
		const char *tok = n->doubt_tokens[n->ndoubt - 1];
		size_t k = 0;
		int rc = store_runs_release_claim(n->st, n->node_id, tok, &k, err);
		if (rc)
			return rc;
		if (k)
			dbcron__log(LOG_WARN, "claim.released", LOG_STR("node", n->node_id),
				    LOG_STR("token", tok), LOG_UINT("runs", k),
				    LOG_STR("msg", "a claim whose reply was lost had committed; its runs "
						   "are claimable again"));
		n->ndoubt--;
	}
	return DBCRON_OK;
}

/* A claim whose runs must go back to the pool (release_doubtful): its
 * COMMIT reply was lost, or we could not hold its runs. */
static void remember_doubt(dbcron_node *n, const char *token)
{
	if (n->ndoubt == NODE_MAX_DOUBT) {
		dbcron__log(LOG_WARN, "claim.doubt", LOG_STR("node", n->node_id),
			    LOG_STR("token", n->doubt_tokens[0]),
			    LOG_STR("msg", "too many claims in doubt; the oldest is left to the reap"));
		memmove(n->doubt_tokens[0], n->doubt_tokens[1],
			sizeof(n->doubt_tokens[0]) * (NODE_MAX_DOUBT - 1));
		n->ndoubt--;
	}
	snprintf(n->doubt_tokens[n->ndoubt++], sizeof(n->doubt_tokens[0]), "%s", token);
}

/*
 * All or none: a run we claimed but do not hold (out of memory making its
 * fire or growing the heap) would wait SCHEDULED under our live name until
 * we restart, since the reap takes only dead nodes' runs.  So every fire is
 * made and the heap grown before any goes on it; if any of that fails, the
 * ones made are dropped and the whole claim goes back to the pool by its
 * token, at once or, when that write fails too, through the retry of claims
 * in doubt (release_doubtful).  Releasing by token is safe only because we
 * hold none of its runs.
 */
size_t dbloop_take_claim(dbcron_node *n, const store_claim_result *res, const char *token)
{
	size_t k = res->nruns, made = 0;
	if (!k)
		return 0;
	fire **fs = dbcron__calloc(k, sizeof(*fs));
	pthread_mutex_lock(&n->mu);
	bool ok = fs && timer_reserve(&n->heap, k) == 0;
	for (; ok && made < k; made++) {
		/* The fire shares its job's snapshot while the row is
		 * unchanged, and starts a new one when the job was edited
		 * (the ownership rule is in inflight.h). */
		job_state *js = inflight_job_get(&n->jobs, res->runs[made].run.job_id);
		if (!js || !(fs[made] = fire_new(n, js, &res->runs[made])))
			ok = false;
	}
	if (!ok) {
		for (size_t i = 0; fs && i < k; i++)
			fire_free(fs[i]); /* NEW: never on a list or the heap */
		pthread_mutex_unlock(&n->mu);
		dbcron__free(fs);
		dbcron_err err = {0};
		size_t back = 0;
		int rc = store_runs_release_claim(n->st, n->node_id, token, &back, &err);
		dbcron__log(LOG_WARN, "claim.released", LOG_STR("node", n->node_id),
			    LOG_STR("token", token), LOG_UINT("runs", k),
			    LOG_STR("msg", rc ? "out of memory holding a claim; its hand-back is retried"
					      : "out of memory holding a claim; its runs are claimable again"));
		if (rc)
			remember_doubt(n, token);
		return 0;
	}
	bool wake = false;
	timer_node *top = timer_peek(&n->heap);
	for (size_t i = 0; i < k; i++) {
		fire *f = fs[i];
		f->js->blocked = JOB_OK; /* claimable again: resumed */
		f->gen = n->lease_gen;
		(void)timer_push(&n->heap, &f->tn, f->run.due_at); /* reserved */
		fire_set_phase(f, FIRE_CLAIMED);
		if (!top || f->run.due_at < top->due)
			wake = true;
		n->inflight++;
		n->n_claimed++;
	}
	if (wake)
		pthread_cond_signal(&n->timer_cv);
	atomic_store_explicit(&n->stats.inflight, (long long)n->inflight, memory_order_relaxed);
	pthread_mutex_unlock(&n->mu);
	dbcron__free(fs);
	return k;
}

/* One claim; returns how many fires it took (or -1 on error). */
static long claim(dbcron_node *n, dbcron_err *err)
{
	claim_budget budget = budget_of(n);
	if (!budget.fast && !budget.slow)
		return 0;
	char token[33];
	random_hex(token, 16);
	store_claim_req req = {
		.node_id = n->node_id, .token = token,
		.horizon_ms_ahead = n->cfg.preread_ms, .max = (int)budget.fast,
		.plan = planner_plan, .plan_ctx = n->plan,
		.lock_row = n->cfg.claim_strategy == DBCRON_CLAIM_LOCK_ROW,
		.handlers = (const char *const *)n->handlers, .nhandlers = n->nhandlers,
		.slow_jobs = n->slow_ids, .nslow = n->nslow_ids, .slow_max = (int)budget.slow,
	};
	store_claim_result res = {0};
	int64_t t0 = dbcron__mono_ms();
	int rc = store_claim(n->st, &req, &res, err);
	if (rc == DBCRON_ECONN) {
		/* the COMMIT may have landed: runs stamped with this token
		 * would wait under our name for a start that never comes */
		remember_doubt(n, token);
	}
	if (rc)
		return -1;
	int64_t took = dbcron__mono_ms() - t0;
	n->claim_ms_sum += took;
	if (took > n->claim_ms_max)
		n->claim_ms_max = took;
	n->n_claims++;
	atomic_fetch_add_explicit(&n->stats.claims, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&n->stats.claimed, res.nruns, memory_order_relaxed);
	node_hist_observe(&n->stats.claim_ms, took);
	for (size_t i = 0; i < res.naside; i++)
		dbcron__log(LOG_WARN, "job.set_aside", LOG_STR("job", res.aside[i].name),
			    LOG_INT("id", res.aside[i].job_id), LOG_STR("msg", res.aside[i].why));
	dbloop_take_claim(n, &res, token);
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

/* Database work that failed: log it, back off, but never past `cap` (the
 * next heartbeat, when the heartbeat itself worked: a failing write must
 * not starve the lease, or the node stops starting anything). */
static void db_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff, int64_t cap)
{
	dbcron__log(LOG_WARN, "db.error", LOG_STR("node", n->node_id), LOG_INT("code", err->code),
		    LOG_STR("msg", err->msg), LOG_INT("retry_in_ms", *backoff));
	n->healthy_since_db = -1; /* the others may have failed too: no reaping for a lease */
	int64_t until = dbcron__mono_ms() + *backoff;
	wait_db(n, until < cap ? until : cap);
	*backoff = *backoff * 2 > 5000 ? 5000 : *backoff * 2;
}

/*
 * Under the lease lock "dbcron:maintenance", so that one node does it at a
 * time however many run: runs left by stopped or dead nodes are resolved
 * (store_reap_orphans), and the run log is pruned to the retention.  A lock
 * held elsewhere is the normal case and says nothing.
 */
static bool maintenance(dbcron_node *n)
{
	dbcron_err err = {0};
	store_lock_row holder = {0};
	int64_t fence, until, now, deleted = 0, d = 0;
	bool more = false;
	int rc = store_lock_acquire(n->st, "dbcron:maintenance", n->node_id,
				    5 * 60000, &fence, &until, &holder, &err);
	store_lock_row_clear(&holder);
	if (rc)
		return false;
	size_t orphans = 0;
	if (store_reap_orphans(n->st, &orphans, &err) == DBCRON_OK && orphans)
		dbcron__log(LOG_WARN, "node.takeover", LOG_STR("node", n->node_id),
			    LOG_UINT("runs", orphans),
			    LOG_STR("msg", "resolved runs left by stopped or dead nodes"));
	rc = DBCRON_OK;
	/* Retention in batches, for at most a quarter of the lease per pass
	 * (this is the db thread: the heartbeat waits meanwhile); what is left
	 * goes in the next pass, a second later. */
	if (n->cfg.retention_ms >= 0 && (rc = store_now_ms(n->st, &now, &err)) == DBCRON_OK) {
		int64_t stop_at = dbcron__mono_ms() + n->cfg.lease_ms / 4;
		do {
			rc = store_prune_runs_some(n->st, now - n->cfg.retention_ms,
						   STORE_PRUNE_BATCH, &d, &err);
			deleted += d;
		} while (!rc && d == STORE_PRUNE_BATCH && dbcron__mono_ms() < stop_at);
		more = !rc && d == STORE_PRUNE_BATCH;
	}
	if (rc)
		dbcron__log(LOG_WARN, "maintenance", LOG_STR("node", n->node_id), LOG_STR("msg", err.msg));
	else if (deleted)
		dbcron__log(LOG_INFO, "maintenance", LOG_STR("node", n->node_id),
			    LOG_INT("pruned_runs", deleted), LOG_INT("older_than_ms", n->cfg.retention_ms),
			    LOG_STR("more", more ? "yes" : "no"));
	store_lock_release(n->st, "dbcron:maintenance", n->node_id, fence, &err);
	return more;
}

#define JOB_SWEEP_MS 10000

void dbloop_run(dbcron_node *n)
{
	int64_t next_maint = dbcron__mono_ms() + 2000;
	int64_t next_hb = dbcron__mono_ms() + n->cfg.heartbeat_ms;
	int64_t next_claim = 0, backoff = 100, next_sweep = next_maint;
	dbcron_err err = {0};

	while (!atomic_load(&n->stop_requested)) {
		int64_t now = dbcron__mono_ms();
		if (now >= next_hb) {
			if (heartbeat(n, &err)) {
				db_trouble(n, &err, &backoff, INT64_MAX);
				continue;
			}
			next_hb = now + n->cfg.heartbeat_ms;
			if (n->cfg.alive)
				n->cfg.alive(n->cfg.alive_ctx);
		}
		if (sync_starts(n, &err) || flush(n, &err)) {
			db_trouble(n, &err, &backoff, next_hb);
			continue;
		}
		if (release_doubtful(n, &err)) {
			db_trouble(n, &err, &backoff, next_hb);
			continue;
		}
		if (now >= next_claim) {
			long got = claim(n, &err);
			if (got < 0) {
				db_trouble(n, &err, &backoff, next_hb);
				continue;
			}
			/* a full batch means more may be due: claim again */
			next_claim = got >= n->cfg.claim_batch ? now : now + n->cfg.claim_interval_ms;
		}
		if (now >= next_maint) {
			bool more = maintenance(n);
			next_maint = now + (more ? 1000 : n->cfg.maintenance_ms);
		}
		if (now >= next_sweep) {
			/* a node that ran a million jobs once holds only those
			 * still in flight (and the job ids see_jobs asks about) */
			dispatch_sweep_jobs(n, now);
			next_sweep = now + JOB_SWEEP_MS;
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
		sync_starts(n, &err);
		flush(n, &err);
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
				set_clock_and_lease(n, now, now, dbcron__mono_ms(), db_now,
						    db_now + n->cfg.lease_ms, false);
			else if (rc == DBCRON_EFENCED)
				drop_unstarted(n);
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
		int rc = flush(n, &err);
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
	if (store_node_stop(n->st, n->node_id, n->incarnation, &err))
		dbcron__log(LOG_WARN, "node.stop", LOG_STR("msg", err.msg));
}
