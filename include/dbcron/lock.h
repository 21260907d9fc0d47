/*
 * Lease locks: cluster-wide mutual exclusion through the scheduler's
 * database (seed 002, ShedLock-like).  A lease has an owner, an expiry in
 * the database's clock and a fencing token that grows with every
 * acquisition; renew and release are checked against owner and token, so a
 * holder that lost its lease can never free or extend the new holder's.
 */
#ifndef DBCRON_LOCK_H
#define DBCRON_LOCK_H

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

#ifdef __cplusplus
}
#endif
#endif
