/*
 * The renew rule of a held lease, once, for `dbcron lock` (src/cli/cmd_lock.c,
 * which polls it between waits on its child) and dbcron_lock_run (below,
 * which runs it on a thread of its own while the caller's function runs).
 *
 * Owns the rule: renew every ttl/3; after a failed renewal try again every
 * 200 ms; the lease is lost when a renewal is refused (another owner holds
 * it now) or when none has succeeded for a whole ttl by our monotonic clock
 * (counted from when the last successful renewal was asked, so a slow
 * reply never stretches it).  Once lost, the keeper does nothing more.
 *
 * Invariants: a keeper only ever renews with the owner and fence of the
 * lease it was given, so it can never extend a lease someone else holds
 * (the store's renew is fenced); "lost" is final.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/lock.h"
#include "lease/lease.h"

#define RETRY_MS 200

void lease_keeper_init(lease_keeper *k, dbcron_db *db, dbcron_lease *lease, int64_t ttl_ms,
		       int64_t now_mono)
{
	memset(k, 0, sizeof(*k));
	k->db = db;
	k->lease = lease;
	k->ttl_ms = ttl_ms;
	k->renew_every = ttl_ms / 3 > 0 ? ttl_ms / 3 : 1;
	k->valid_until = now_mono + ttl_ms;
	k->next_renew = now_mono + k->renew_every;
}

int64_t lease_keeper_due(const lease_keeper *k)
{
	if (k->state != LEASE_KEPT)
		return INT64_MAX;
	return k->next_renew < k->valid_until ? k->next_renew : k->valid_until;
}

lease_keep_state lease_keeper_tick(lease_keeper *k, int64_t now)
{
	if (k->state != LEASE_KEPT)
		return k->state;
	if (now >= k->next_renew) {
		dbcron_err err = {0};
		int64_t asked = now;
		int rc = dbcron_lock_renew(k->db, k->lease, k->ttl_ms, &err);
		if (rc == DBCRON_OK) {
			k->valid_until = asked + k->ttl_ms;
		} else if (rc == DBCRON_EFENCED || now >= k->valid_until) {
			k->state = LEASE_LOST;
			dbcron__textf(k->why, sizeof(k->why), "%s",
				 rc == DBCRON_EFENCED ? "another owner holds it now" : err.msg);
			return k->state;
		}
		k->next_renew = now + (rc == DBCRON_OK ? k->renew_every : RETRY_MS);
	}
	if (now >= k->valid_until) {
		k->state = LEASE_EXPIRED;
		snprintf(k->why, sizeof(k->why), "expired before it could be renewed");
	}
	return k->state;
}

/* ---- dbcron_lock_run ---- */

struct dbcron_lock_guard {
	lease_keeper k;
	dbcron_lease lease;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool done;         /* mu: fn returned, the thread ends */
	atomic_bool lost;
};

static void abs_deadline(struct timespec *ts, int64_t mono_ms)
{
	ts->tv_sec = mono_ms / 1000;
	ts->tv_nsec = (mono_ms % 1000) * 1000000;
}

/* The renewal thread: the only user of the handle while fn runs. */
static void *keeper_main(void *arg)
{
	dbcron_lock_guard *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->done) {
		int64_t due = lease_keeper_due(&g->k);
		if (due == INT64_MAX) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		if (dbcron__mono_ms() < due) {
			struct timespec ts;
			abs_deadline(&ts, due);
			pthread_cond_timedwait(&g->cv, &g->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&g->mu);
		lease_keep_state st = lease_keeper_tick(&g->k, dbcron__mono_ms());
		if (st != LEASE_KEPT)
			atomic_store(&g->lost, true);
		pthread_mutex_lock(&g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

bool dbcron_lock_lost(const dbcron_lock_guard *g)
{
	return g && atomic_load(&((dbcron_lock_guard *)g)->lost);
}

const dbcron_lease *dbcron_lock_guard_lease(const dbcron_lock_guard *g)
{
	return g ? &g->lease : NULL;
}

int dbcron_lock_run(dbcron_db *db, const char *name, const char *owner, int64_t ttl_ms,
		    dbcron_lock_fn fn, void *ctx, int *fn_rc, dbcron_err *err)
{
	char defowner[300];
	dbcron_lease holder;
	pthread_condattr_t ca;
	pthread_t th;
	int rc;

	if (fn_rc)
		*fn_rc = 0;
	if (!db || !fn)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock run: a handle and a function are required");
	if (!owner) {
		char host[256] = "localhost";
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(defowner, sizeof(defowner), "%s-%d", host, (int)getpid());
		owner = defowner;
	}
	dbcron_lock_guard *g = dbcron__calloc(1, sizeof(*g));
	if (!g)
		return dbcron_err_set(err, DBCRON_ENOMEM, "lock run '%s': out of memory",
				      name ? name : "");
	/* counted from before the acquire: the database's lease starts no
	 * earlier, so ours never outlasts it (cmd_lock.c says the same) */
	int64_t asked = dbcron__mono_ms();
	rc = lease__bound(db, ttl_ms, err);
	if (!rc)
		rc = dbcron_lock_acquire(db, name, owner, ttl_ms, &g->lease, &holder, err);
	if (rc == DBCRON_ELOCKED) {
		char until[64];
		dbcron__format_rfc3339(holder.until_ms, 0, 1, until, sizeof(until));
		rc = dbcron_err_set(err, DBCRON_ELOCKED, "lock '%s' is held by %s until %s (fence %lld)",
				    name, holder.owner, until, (long long)holder.fence);
	}
	if (rc)
		goto out_free;
	lease_keeper_init(&g->k, db, &g->lease, ttl_ms, asked);
	if (pthread_mutex_init(&g->mu, NULL)) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "lock run '%s': cannot make a mutex", name);
		goto out_release;
	}
	if (pthread_condattr_init(&ca)) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "lock run '%s': cannot make a condition", name);
		goto out_mutex;
	}
	int ce = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!ce)
		ce = pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (ce) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "lock run '%s': cannot make a condition", name);
		goto out_mutex;
	}
	if ((errno = pthread_create(&th, NULL, keeper_main, g))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "lock run '%s': cannot start the renewal "
				    "thread: %s", name, strerror(errno));
		goto out_cond;
	}

	int r = fn(g, ctx);
	if (fn_rc)
		*fn_rc = r;

	pthread_mutex_lock(&g->mu);
	g->done = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(th, NULL);
	/* the handle is ours again */
	if (g->k.state != LEASE_KEPT) {
		rc = dbcron_err_set(err, DBCRON_EFENCED, "lock '%s': lease lost while the function ran "
				    "(%s)", name, g->k.why);
	} else if ((rc = dbcron_lock_release(db, &g->lease, err)) == DBCRON_EFENCED) {
		rc = dbcron_err_set(err, DBCRON_EFENCED, "lock '%s': taken over before release; "
				    "nothing released", name);
	}
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	dbcron__free(g);
	return rc;

out_cond:
	pthread_cond_destroy(&g->cv);
out_mutex:
	pthread_mutex_destroy(&g->mu);
out_release:
	dbcron_lock_release(db, &g->lease, NULL);
out_free:
	dbcron__free(g);
	return rc;
}
