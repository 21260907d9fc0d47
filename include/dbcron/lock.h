/*
 * Lease locks: cluster-wide mutual exclusion through the scheduler's
 * database (seed 002, ShedLock-like).  A lease has an owner, an expiry in
 * the database's clock and a fencing token that grows with every
 * acquisition; renew and release are checked against owner and token, so a
 * holder that lost its lease can never free or extend the new holder's.
 */
#ifndef DBCRON_LOCK_H
#define DBCRON_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "dbcron/db.h"
#include "dbcron/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The handle (dbcron_db_open) is described in dbcron/db.h. */

/* Filled by the calls below (and dbcron_locks_list); plain data, nothing
 * to free. */
typedef struct dbcron_lease {
	char name[256];
	char owner[256];
	int64_t fence;    /* grows with every acquisition of this name */
	int64_t since_ms; /* database clock */
	int64_t until_ms;
} dbcron_lease;

/*
 * Acquire name for owner for ttl_ms, in one statement: a free or expired
 * lease is taken, a live one is not.  DBCRON_ELOCKED when another owner
 * holds it; then *holder (may be NULL) describes the holder.
 */
DBCRON_API int dbcron_lock_acquire(dbcron_db *db, const char *name,
				   const char *owner, int64_t ttl_ms,
				   dbcron_lease *lease, dbcron_lease *holder,
				   dbcron_err *err);
/* Extend lease by ttl_ms from now.  DBCRON_EFENCED when it is no longer
 * ours (someone acquired it since). */
DBCRON_API int dbcron_lock_renew(dbcron_db *db, dbcron_lease *lease,
				 int64_t ttl_ms, dbcron_err *err);
/* Release; DBCRON_EFENCED (nothing changed) when it is no longer ours. */
DBCRON_API int dbcron_lock_release(dbcron_db *db, const dbcron_lease *lease,
				   dbcron_err *err);

/*
 * Run fn(guard, ctx) under the lease lock name, as `dbcron lock NAME --
 * CMD` runs a command: acquire for ttl_ms (owner NULL: "<host>-<pid>"),
 * renew on a thread of the library's own every ttl_ms/3 while fn runs on
 * the calling thread, release after it returns.  The lease is lost when a
 * renewal is refused (another owner holds it) or none succeeded for a whole
 * ttl_ms; from then on dbcron_lock_lost(guard) is true, and fn, which
 * cannot be stopped from outside, should return soon.
 *
 * While fn runs the renewal thread uses db: fn must not use that handle
 * (open another), and from the acquire on every statement of db is bounded
 * by the lease (half of ttl_ms on PostgreSQL, the lease's timeouts on
 * MariaDB, SQLite's busy wait), so a frozen server makes a renewal fail
 * instead of hang; the bound stays on the handle.  fn's return value goes to *fn_rc (may be NULL; 0 when
 * fn did not run).  Returns DBCRON_OK when fn ran with the lease held
 * throughout and it was released; DBCRON_ELOCKED, fn not run, when another
 * owner holds it (the message names the holder and its expiry);
 * DBCRON_EFENCED after fn ran when the lease was lost meanwhile or taken
 * over before the release; DBCRON_EINVAL, DBCRON_ENOMEM and the database's
 * codes otherwise.  Unlike `dbcron lock`, nothing is written to the run log.
 */
typedef struct dbcron_lock_guard dbcron_lock_guard;
typedef int (*dbcron_lock_fn)(const dbcron_lock_guard *guard, void *ctx);
DBCRON_API int dbcron_lock_run(dbcron_db *db, const char *name, const char *owner,
			       int64_t ttl_ms, dbcron_lock_fn fn, void *ctx, int *fn_rc,
			       dbcron_err *err);
/* True once the lease fn runs under was lost; safe from any thread during
 * fn.  guard is the one fn was called with, valid during that call only. */
DBCRON_API bool dbcron_lock_lost(const dbcron_lock_guard *guard);
/* The lease fn runs under (name, owner, fence); valid during fn. */
DBCRON_API const dbcron_lease *dbcron_lock_guard_lease(const dbcron_lock_guard *guard);

#ifdef __cplusplus
}
#endif
#endif
