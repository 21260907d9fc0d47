/*
 * The db thread: the only thread that talks to the database.  This file is
 * its loop and what the loop alone uses: waiting for work or a kick,
 * backing off when the database is in trouble, and maintenance under the
 * maintenance lease.  Each concern the loop runs has its file:
 *   dblease.c   register, join, heartbeat, reap, job states, late handlers
 *   dbclaim.c   the claim budget, the claim, claims in doubt
 *   dbwrite.c   start and end writes, fenced starts, the graceful stop
 * (dbloop_int.h is what they share).
 *
 * Invariants kept here:
 *  the lease comes first: a heartbeat is due at its time whatever else
 *    failed, since backing off for a failed write never waits past the next
 *    heartbeat (a failing write must not starve the lease);
 *  6 this thread never waits on a job: it waits only on db_cv, which the
 *    timer thread and the workers signal through dbloop_kick();
 *  the outbox's database work is a step of this loop too (react_step),
 *    on this thread's connection: a node writes through one connection
 *    only (one member of a Galera cluster), and its delivery thread only
 *    talks to the network;
 *  retention and the orphan pass run under the "dbcron:maintenance" lease,
 *    one node at a time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "react/react.h"
#include "sched/dbloop_int.h"
#include "sched/node_int.h"

void dbloop_random_hex(char *out, size_t bytes)
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

/*
 * A start or an end waits for the db thread's next look when that look is
 * at most flush_ms away (it is while the node holds claimed fires, below):
 * woken here, at the first start of a burst, the db thread wrote the
 * first few starts at once, so the thread, its statement and the database
 * server took the CPU at the very instant the burst's fires were starting
 * (W1, 5,000 jobs, 3 nodes on 2 cores; docs/benchmarks.md "The wake").
 * A node with nothing in flight sleeps until its next heartbeat or claim,
 * and is woken.
 */
void dbloop_note_write(dbcron_node *n)
{
	if (!n->db_polling)
		dbloop_kick(n);
}

void dbloop_queue_write(dbcron_node *n, fire *f)
{
	fire_list_push(&n->pending, f);
	dbloop_note_write(n);
}

/* ---- waiting, trouble, maintenance ------------------------------------ */

void dbloop_wait(dbcron_node *n, int64_t until_mono)
{
	struct timespec ts;
	node_abs_deadline(&ts, until_mono);
	pthread_mutex_lock(&n->mu);
	n->db_polling = until_mono <= dbcron__mono_ms() + n->cfg.flush_ms;
	while (!n->db_kicked && !atomic_load(&n->stop_requested) &&
	       dbcron__mono_ms() < until_mono)
		if (pthread_cond_timedwait(&n->db_cv, &n->mu, &ts) == ETIMEDOUT)
			break;
	n->db_kicked = false;
	pthread_mutex_unlock(&n->mu);
}

/* A lost database is tried again every 250-500 ms. */
#define RECONNECT_MS 250

static int64_t jitter_ms(int64_t max)
{
	uint16_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint16_t)dbcron__mono_us();
	return (int64_t)r % (max + 1);
}

/*
 * Database work that failed: log it, back off, but never past `cap` (the
 * next heartbeat, when the heartbeat itself worked: a failing write must
 * not starve the lease, or the node stops starting anything).  A lost
 * connection is tried again at a fixed short pace with jitter, not a
 * doubling delay: after a restart or a failover every node comes back
 * within half a second of the server, together, instead of 1-5 s apart
 * (issue 25); a connection attempt costs the server little.  Other
 * failures (a lock, a bad statement) back off doubling up to 5 s.
 */
void dbloop_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff, int64_t cap)
{
	bool conn = err->code == DBCRON_ECONN;
	int64_t wait = conn ? RECONNECT_MS + jitter_ms(RECONNECT_MS) : *backoff;
	dbcron__log(LOG_WARN, "db.error", LOG_STR("node", n->node_id), LOG_INT("code", err->code),
		    LOG_STR("msg", err->msg), LOG_INT("retry_in_ms", wait));
	node_stats_db_error(&n->stats, err->msg);
	n->healthy_since_mono = -1; /* the others may have failed too: no reaping for a lease */
	int64_t until = dbcron__mono_ms() + wait;
	dbloop_wait(n, until < cap ? until : cap);
	if (!conn)
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
	int64_t fence, until, now, deleted = 0, audited = 0, d = 0;
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
		/* the audit trail keeps what the run log keeps: a batch a
		 * pass once the run log is done (a full one asks for more) */
		if (!rc && !more) {
			rc = store_prune_audit_some(n->st, now - n->cfg.retention_ms,
						    STORE_PRUNE_BATCH, &d, &err);
			audited = rc ? 0 : d;
			more = !rc && d == STORE_PRUNE_BATCH;
		}
	}
	if (rc)
		dbcron__log(LOG_WARN, "maintenance", LOG_STR("node", n->node_id), LOG_STR("msg", err.msg));
	else if (deleted || audited)
		dbcron__log(LOG_INFO, "maintenance", LOG_STR("node", n->node_id),
			    LOG_INT("pruned_runs", deleted), LOG_INT("pruned_audit", audited),
			    LOG_INT("older_than_ms", n->cfg.retention_ms),
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
	/* a claim, and a flush, waits out one burst at most */
	bool may_hold = true, may_hold_flush = true;
	dbcron_err err = {0};

	while (!atomic_load(&n->stop_requested)) {
		int64_t now = dbcron__mono_ms();
		if (now >= next_hb) {
			if (dbloop_heartbeat(n, &err)) {
				dbloop_trouble(n, &err, &backoff, INT64_MAX);
				continue;
			}
			next_hb = now + n->cfg.heartbeat_ms;
			if (n->cfg.alive)
				n->cfg.alive(n->cfg.alive_ctx);
		}
		if (dbloop_sync_starts(n, &err)) {
			dbloop_trouble(n, &err, &backoff, next_hb);
			continue;
		}
		int64_t flush_hold = may_hold_flush ? dbloop_burst_hold(n, now, FLUSH_LEAD_MS) : 0;
		if (flush_hold > now) {
			may_hold_flush = false;
		} else if (dbloop_flush(n, &err)) {
			dbloop_trouble(n, &err, &backoff, next_hb);
			continue;
		} else {
			may_hold_flush = true;
		}
		if (dbloop_release_doubtful(n, &err)) {
			dbloop_trouble(n, &err, &backoff, next_hb);
			continue;
		}
		int64_t hold = now >= next_claim && may_hold ? dbloop_burst_hold(n, now, CLAIM_LEAD_MS) : 0;
		if (hold > now) {
			next_claim = hold;
			may_hold = false;
		} else if (now >= next_claim) {
			long got = dbloop_claim(n, &err);
			if (got < 0) {
				dbloop_trouble(n, &err, &backoff, next_hb);
				continue;
			}
			/* a full batch means more may be due: claim again.  The
			 * poll drifts by up to a quarter of its period, so that
			 * nodes do not lock into a phase where one always polls
			 * just before the others and takes every fire (pg_frozen
			 * saw one node run nothing for 20 s after a thaw). */
			may_hold = true;
			int64_t every = n->cfg.claim_interval_ms;
			next_claim = got >= n->cfg.claim_batch ? now
							       : now + every - jitter_ms(every / 4);
		}
		int64_t events_at = INT64_MAX;
		/* events written by this node (its flush, a claim's misfires,
		 * a reap's abandoned runs): claimed at once */
		bool written = store_events_written_take(n->st) || n->events_due;
		n->events_due = false;
		if (n->react && react_step(n->react, n->st, written, &events_at, &err)) {
			dbloop_trouble(n, &err, &backoff, next_hb);
			continue;
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
		if (events_at < until)
			until = events_at;
		/* writes waiting, or fires in flight whose starts and ends
		 * will be: look again within flush_ms (dbloop_note_write) */
		pthread_mutex_lock(&n->mu);
		bool look_soon = !fire_list_empty(&n->pending) || !fire_list_empty(&n->sync) ||
				 n->inflight > 0;
		pthread_mutex_unlock(&n->mu);
		if (look_soon && until > now + n->cfg.flush_ms)
			until = now + n->cfg.flush_ms;
		if (flush_hold > now && flush_hold < until)
			until = flush_hold;
		if (until > now)
			dbloop_wait(n, until);
	}
}
