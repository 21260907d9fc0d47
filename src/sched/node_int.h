/*
 * The node's private header: the node struct that node.c (lifecycle),
 * the db thread (dbloop.c, dblease.c, dbclaim.c, dbwrite.c) and dispatch.c
 * (the timer thread and the workers) share, and the few calls between them.
 *
 * Threading rules, kept by every file of the node:
 *  - one mutex, mu, guards every field below marked "mu" and the whole
 *    in-flight table (sched/inflight.h);
 *  - pools have their own lock and are never called with mu held, so no
 *    thread ever holds two locks;
 *  - only the db thread (the thread that called dbcron_node_run) touches
 *    the store; the timer thread and the workers hand it work through the
 *    pending and sync lists and wake it with dbloop_kick();
 *  - the db thread never waits on a job (invariant 6).
 */
#ifndef DBCRON_SCHED_NODE_INT_H
#define DBCRON_SCHED_NODE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "dbcron/node.h"
#include "exec/exec.h"
#include "sched/inflight.h"
#include "sched/stats.h"
#include "sched/plan.h"
#include "sched/timer.h"
#include "store/store.h"

#define NODE_MAX_DOUBT 32 /* claims in doubt remembered at once */

struct dbcron_node {
	/* set up by dbcron_node_create, read-only afterwards */
	dbcron_node_config cfg;
	dbcron__log_sink log; /* bound on each of the node's threads */
	char *db_url, *node_id, *host;
	char incarnation[33]; /* db thread; read by no one else */
	/* The handlers this process can run (built-ins included), as of
	 * registry generation handlers_gen: recorded in node_handlers and sent
	 * with every claim, which routes handler jobs by them; re-read at a
	 * heartbeat that finds the registry moved.  db thread only. */
	char **handlers;
	size_t nhandlers;
	uint64_t handlers_gen;

	pthread_mutex_t mu;
	pthread_cond_t timer_cv; /* the timer thread waits here */
	pthread_cond_t db_cv;    /* the db thread waits here */
	bool db_kicked;          /* mu: coalesces wake-ups of the db thread */
	bool db_polling;         /* mu: the db thread looks again within flush_ms */
	atomic_int stop_requested; /* async-signal-safe stop request */
	atomic_int stop_now;       /* dbcron_node_stop_now: no grace */
	bool stopping;             /* mu: no more starts */
	pthread_t timer_thread;
	bool timer_started;
	struct react_deliverer *react; /* the outbox (react.h): its db half is
					* stepped by the db thread, its delivery
					* thread kicks the db thread */
	bool events_due;               /* db thread: a flush wrote an outcome
					* with reaction targets: claim now */

	/* mu: the in-flight table */
	timer_heap heap;    /* CLAIMED fires */
	fire_list pending;  /* STARTED and FINISHED fires: writes to batch */
	fire_list sync;     /* STARTING fires: starts to fence first */
	inflight_jobs jobs; /* per-job state */
	size_t inflight;    /* fires claimed and not yet freed */
	size_t running;     /* fires on some job's running list */

	node_stats stats;            /* atomics: for /metrics (stats.h) */
	atomic_llong offset_ms;      /* db_ms = mono_ms + offset */
	int64_t lease_ok_until_mono; /* mu: starts stop, running jobs are
				      * stopped (dispatch_stop_unleased) */
	int64_t lease_kill_by_mono;  /* mu: their SIGKILL lands by then */
	int64_t burst_until_mono;    /* mu: the timer is starting a burst;
				      * the db thread waits it out
				      * (dbloop_burst_hold) */
	int64_t unleased_for;        /* mu: the lease_ok_until_mono whose
				      * lapse stopped the jobs, -1 none */
	int64_t lease_until_db;      /* mu: the lease's end as written (at most) */
	int64_t prev_beat_db;        /* db thread: the last successful heartbeat's
				      * database time, -1 before the first */
	int64_t healthy_since_mono;  /* db thread: monotonic time of the first
				      * heartbeat since the last failed database
				      * call or reconnect, -1 while they fail */
	unsigned long reconnects_seen; /* db thread: store_reconnects() as of
					* the last heartbeat */
	uint64_t lease_gen;          /* mu: +1 each time the node learns it was
				      * fenced; a fire of an older one is not ours */
	dbcron_err fatal;            /* mu: why the node stopped by itself */
	int64_t jobs_gen;            /* db thread: the jobs generation acted on
				      * (pauses and deletes; reported in each
				      * heartbeat) */

	/* mu: mean run time of each pool's recent runs (an EWMA), for the
	 * claim's start capacity, [0] fast, [1] slow; runs_timed[p] == 0
	 * until one of its runs finished */
	double run_ms_mean[2];
	uint64_t runs_timed[2];
	/* db thread: the jobs demoted to the slow pool as of the last claim
	 * (their ids, for the claim to size apart: store/claim.c "Pools") */
	int64_t *slow_ids;
	size_t nslow_ids, slow_ids_cap;
	/* mu: the jobs that were slow at their latest slow run, a superset of
	 * the slow ones; the claim checks these instead of every job state
	 * (that scan, under mu, cost ~9 % of a node's CPU draining 100,000
	 * one-shot jobs).  Out of memory, a job may be missing: the claim then
	 * sizes its fires with the fast pool's, and it still runs on the slow
	 * pool (dispatch decides each fire's pool itself). */
	int64_t *slow_cand;
	size_t nslow_cand, slow_cand_cap;

	pool *fast, *slow;
	store *st;      /* db thread only */
	planner *plan;  /* db thread only (the claim calls it) */

	/* counters for the stop summary and benchmarks */
	/* db thread: tokens of claims that failed in a way that may have
	 * committed (a lost COMMIT reply); their runs are ours in the
	 * database but not in memory until released back to the pool */
	char doubt_tokens[NODE_MAX_DOUBT][33];
	size_t ndoubt;

	uint64_t n_claims, n_claimed;        /* db thread */
	int64_t claim_ms_sum, claim_ms_max;  /* db thread: store_claim's time */
	uint64_t n_finished, n_fenced;       /* db thread, under mu */
	uint64_t n_skipped;                  /* mu */
};

/* The database clock as this node sees it (invariant 4). */
static inline int64_t node_db_now(dbcron_node *n)
{
	return dbcron__mono_ms() + atomic_load(&n->offset_ms);
}

/*
 * May this fire start (or be skipped, misfired...) now?  mu held.  Only
 * while the lease is known valid, only a fire due before the lease's end
 * in the database, and only one claimed under the current lease.  Reap
 * relies on the second rule: a SCHEDULED run due at or after its lost
 * node's lease_until was never started, one due before may have been
 * (docs/scheduler.md "Leases").
 */
static inline bool node_may_start(const dbcron_node *n, const fire *f, int64_t now_mono)
{
	return now_mono < n->lease_ok_until_mono && f->run.due_at < n->lease_until_db &&
	       f->gen == n->lease_gen;
}

static inline void node_abs_deadline(struct timespec *ts, int64_t mono_ms)
{
	ts->tv_sec = mono_ms / 1000;
	ts->tv_nsec = (mono_ms % 1000) * 1000000;
}

/* ---- the db thread: dbloop.c, dblease.c, dbclaim.c, dbwrite.c ---- */
/* Register (again) under a fresh incarnation; sets the clock offset and
 * the lease. */
int dbloop_register(dbcron_node *n, dbcron_err *err);
/* Start-up: dbloop_register, waiting out a busy or unreachable database and
 * a dead predecessor's lease, within bounds. */
int dbloop_join(dbcron_node *n, dbcron_err *err);
/* Heartbeat, claim, flush and maintenance until a stop is requested. */
void dbloop_run(dbcron_node *n);
/* The graceful stop, once the timer thread is gone.  hand_back: every
 * unstarted fire back to the database in one statement.  drain: wait up to
 * grace_ms for running fires, writing their outcomes and renewing the
 * lease, then cancel them and wait for the end.  finish (the pools are
 * gone): the last writes, and the node row marked stopped. */
void dbloop_hand_back(dbcron_node *n);
void dbloop_drain(dbcron_node *n);
void dbloop_finish(dbcron_node *n);
/* The runs of claim `token` onto the timer heap, all or none (out of
 * memory: none, and the claim goes back to the pool); returns how many
 * are held.  Called without mu; the fires take res's rows (fire_take),
 * the caller clears what is left. */
size_t dbloop_take_claim(dbcron_node *n, store_claim_result *res, const char *token);
/* Put f on the pending list for the next batch (mu held; wakes the db
 * thread as dbloop_note_write says). */
void dbloop_queue_write(dbcron_node *n, fire *f);
/* A write is pending for the next batch (mu held): wakes the db thread
 * unless it looks again within flush_ms anyway. */
void dbloop_note_write(dbcron_node *n);
/* Wake the db thread (mu held). */
void dbloop_kick(dbcron_node *n);
/* The timer is starting `fires` fires due at due_mono: when they are a
 * burst it just reached (not a backlog), the db thread holds its claims and
 * flushes until shortly after (dbclaim.c, "The db thread waits out a
 * burst"; mu held). */
void dbloop_burst_started(dbcron_node *n, int64_t due_mono, size_t fires);

/* ---- dispatch.c: the timer thread and the workers ---- */
int dispatch_start(dbcron_node *n, dbcron_err *err);
/* Stop starting fires and join the timer thread. */
void dispatch_stop(dbcron_node *n);
/* Hand a STARTED or RUNNING fire to its pool; called without mu.  A full
 * pool puts it back on the heap. */
void dispatch_submit(dbcron_node *n, fire *f);
/* Ask every running fire to stop, recorded as `why` says (takes mu). */
void dispatch_cancel_running(dbcron_node *n, const fire_cancel *why);
/* End or stop the fires of these run ids (dbcron runs cancel); mu not
 * held.  Returns how many it newly ended or stopped. */
size_t dispatch_cancel_runs(dbcron_node *n, const int64_t *ids, size_t k);
/* The lease is no longer known valid at now_mono: stop every job this node
 * is executing that another node would retry (mu held; once per lapse). */
void dispatch_stop_unleased(dbcron_node *n, int64_t now_mono);
/* Move every CLAIMED and HELD fire (the timer heap, the jobs' held lists)
 * onto out, phases unchanged; returns how many (mu held). */
size_t dispatch_take_unstarted(dbcron_node *n, fire_list *out);
/* After some jobs' blocked state was set (mu held): their unstarted fires,
 * on the heap, held or waiting for a fenced start, end without running
 * (SKIPPED "job paused", ABANDONED "job deleted"). */
void dispatch_block_jobs(dbcron_node *n);
/* A fire left its job's running list without running (mu held): with none
 * left, the fires held behind it go back to the timer. */
void dispatch_unhold(dbcron_node *n, job_state *js);
/* Does js's job run on the slow pool now: over 500 ms more than 10 times
 * within the last minute (mu held)? */
bool dispatch_job_is_slow(const job_state *js, int64_t now_mono);
/* Free the states of jobs with nothing in flight whose slow runs no longer
 * count (db thread, takes mu). */
void dispatch_sweep_jobs(dbcron_node *n, int64_t now_mono);

/*
 * The reap bound of a heartbeat (dblease.c): leases that ended before it
 * are taken over, or -1 for none.  prev_beat is database time;
 * healthy_since and now are the node's monotonic clock (the database
 * clock changes owner at a failover: a skew between the old primary and
 * the new one must not pass for a lease of good writes).  A lease that ended
 * before our previous beat belongs to a node that could have renewed it
 * when we could write, unless the database was unwritable for all of us (a
 * write lock held past the lease).  After such a stall the first writers
 * come back a few hundred milliseconds apart, and one that beat twice in
 * that time would declare the others dead: so nothing is reaped until we
 * have written without a failure for a whole lease, which every live node
 * renews within.  The same after a reconnect (a restart, a failover, a
 * session given up at its deadline), even one no call saw fail: when we
 * were cut off, so perhaps was everyone.
 */
static inline int64_t node_reap_bound(int64_t prev_beat, int64_t healthy_since, int64_t now,
				      int64_t lease_ms)
{
	if (prev_beat < 0 || healthy_since < 0 || now - healthy_since < lease_ms)
		return -1;
	return prev_beat;
}

#endif
