/*
 * The node's membership, on the db thread: registering under a fresh
 * incarnation (and joining at start-up), the heartbeat that renews the
 * lease and takes the database clock offset, reaping the runs of nodes
 * whose lease lapsed, reading the jobs paused or deleted since the last
 * beat, and writing handlers registered while the node runs.
 *
 * Invariants kept here:
 *  3 fencing: a node that learns from its heartbeat that it was declared
 *    dead drops every unstarted fire (dbloop_drop_unstarted) and rejoins
 *    under a new incarnation, or exits when another process took its id;
 *  4 one clock: the offset to the database clock is taken at every
 *    heartbeat, and the lease is valid from the moment the heartbeat was
 *    asked for, minus a margin (dbloop_set_lease);
 *  a node reaps only leases that ended before its own previous heartbeat
 *    (node_reap_bound), and none until a whole lease (by its own monotonic
 *    clock) after its last failed call or reconnect, so a stall or an
 *    outage that held every node's heartbeat at once (a database restart
 *    or failover) does not make the first one back declare the others
 *    dead.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "exec/exec.h"
#include "sched/dbloop_int.h"
#include "sched/node_int.h"

/* We were declared dead: everything unstarted now belongs to others. */
void dbloop_drop_unstarted(dbcron_node *n)
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
void dbloop_set_lease(dbcron_node *n, int64_t asked_mono, int64_t t0, int64_t t1, int64_t db_now,
		      int64_t lease_until_db, bool wake_timer)
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
	dbloop_random_hex(n->incarnation, 16);
	/* What this process can run, as registered now (later ones are
	 * added by dbloop_heartbeat(): handlers_catch_up). */
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
	dbloop_set_lease(n, t0, t1, dbcron__mono_ms(), now, before + n->cfg.lease_ms, true);
	n->prev_beat_db = before; /* we could write then: the reap bound */
	n->healthy_since_mono = t0;
	n->reconnects_seen = store_reconnects(n->st);
	return DBCRON_OK;
}

/* How long start-up rides out a database that is busy or away (a write
 * lock held elsewhere, a server restarting) before it gives up. */
#define JOIN_PATIENCE_MS 60000

/*
 * Start-up: register, waiting out what a running node rides out too.  A
 * busy database or a lost connection is retried with the db loop's backoff
 * (dbloop_trouble) for up to JOIN_PATIENCE_MS: on SQLite one writer holding the
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
			dbloop_trouble(n, err, &backoff, busy_until);
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
	dbloop_set_lease(n, t0, t0, dbcron__mono_ms(), now, now + n->cfg.lease_ms, false);
	size_t before = n->nhandlers;
	exec_handler_names_free(n->handlers, n->nhandlers);
	n->handlers = names;
	n->nhandlers = nn;
	n->handlers_gen = gen;
	dbcron__log(LOG_INFO, "node.handlers", LOG_STR("node", n->node_id),
		    LOG_UINT("added", nn > before ? nn - before : 0), LOG_UINT("handlers", nn));
	return DBCRON_OK;
}

struct asked {
	int64_t *ids;
	size_t n, cap;
	bool oom;
};

static int asked_one(void *ctx, int64_t id)
{
	struct asked *a = ctx;
	if (dbcron__grow((void **)&a->ids, &a->cap, a->n + 1, sizeof(*a->ids))) {
		a->oom = true;
		return 1;
	}
	a->ids[a->n++] = id;
	return 0;
}

/*
 * dbcron runs cancel reaches the node through the database: at each
 * heartbeat one indexed read of this node's live runs with a request
 * (runs_cancel), so a cancel takes effect within about a heartbeat.  The
 * same call ends the runs handed back after their request.  A request
 * stays on the row until the run's end is written, so one missed here (out
 * of memory, a failed read) is acted on at the next beat.
 */
static int see_cancels(dbcron_node *n, dbcron_err *err)
{
	struct asked a = {0};
	int64_t freed = 0;
	int rc = store_runs_cancel_asked(n->st, n->node_id, asked_one, &a, &freed, err);
	if (rc == DBCRON_OK && a.n) {
		size_t hit = dispatch_cancel_runs(n, a.ids, a.n);
		if (hit)
			dbcron__log(LOG_INFO, "run.cancel", LOG_STR("node", n->node_id),
				    LOG_UINT("runs", hit));
	}
	dbcron__free(a.ids);
	return rc;
}

int dbloop_heartbeat(dbcron_node *n, dbcron_err *err)
{
	int64_t t0 = dbcron__mono_ms(), now, gen = -1;
	int rc = store_node_beat(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
				 n->jobs_gen, &now, &gen, err);
	int64_t t1 = dbcron__mono_ms();
	if (rc == DBCRON_EFENCED) {
		dbloop_drop_unstarted(n);
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
	dbloop_set_lease(n, t0, t0, t1, now, now + n->cfg.lease_ms, false);
	if (gen > n->jobs_gen && (rc = see_jobs(n, err)) == DBCRON_OK) {
		n->jobs_gen = gen;
		/* say so at once: a pause waits for it */
		rc = store_node_beat(n->st, n->node_id, n->incarnation, n->cfg.lease_ms,
				     n->jobs_gen, &now, &gen, err);
	}
	if (rc || (rc = handlers_catch_up(n, err)) || (rc = see_cancels(n, err)))
		return rc;
	/* leases that ended before our previous beat, not just before now,
	 * and none for a lease after we were cut off */
	unsigned long rec = store_reconnects(n->st);
	if (rec != n->reconnects_seen) {
		n->reconnects_seen = rec;
		n->healthy_since_mono = -1;
	}
	int64_t mono = dbcron__mono_ms();
	if (n->healthy_since_mono < 0)
		n->healthy_since_mono = mono;
	int64_t before = node_reap_bound(n->prev_beat_db, n->healthy_since_mono, mono, n->cfg.lease_ms);
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
