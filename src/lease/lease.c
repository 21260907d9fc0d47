/*
 * Lease locks over the store (public API in dbcron/lock.h), on the store of
 * a dbcron_db handle (src/api/ owns it).  Validates input before any
 * statement, so bad input never half-writes a lock row; the atomicity of acquire, and the owner and
 * fence checks of renew and release, are the backends' single statements.
 */
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"
#include "core/text.h"
#include "dbcron/lock.h"
#include "lease/lease.h"
#include "store/store.h"

store *lease__store(dbcron_db *db)
{
	return api__store(db);
}

/* A lock name is stored as the lock row's key and, as "lock:NAME", as the
 * job name of every attempt in the run log, where a server refuses bytes
 * that are not UTF-8 and a name longer than its column: the stored-name
 * rule of job names (core/text.h), no spaces. */
int lease__check_name(const char *name, dbcron_err *err)
{
	_Static_assert(DBCRON__NAME_MAX < sizeof(((dbcron_lease *)0)->name),
		       "a lock name fits dbcron_lease.name");
	return dbcron__name_check("lock name", name, false, err);
}

int lease__bound(dbcron_db *db, int64_t ttl_ms, dbcron_err *err)
{
	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock ttl must be greater than zero");
	return store_tune_for_node(api__store(db), ttl_ms, err);
}

static void copy_str(char *dst, size_t n, const char *src)
{
	size_t l = src ? strlen(src) : 0;
	if (l >= n)
		l = n - 1;
	if (l)
		memcpy(dst, src, l);
	dst[l] = '\0';
}

int dbcron_lock_acquire(dbcron_db *db, const char *name, const char *owner,
			int64_t ttl_ms, dbcron_lease *lease, dbcron_lease *holder,
			dbcron_err *err)
{
	int rc = lease__check_name(name, err);
	if (rc)
		return rc;
	if (!owner || !*owner || strlen(owner) >= sizeof(lease->owner))
		return dbcron_err_set(err, DBCRON_EINVAL, "lock owner must be 1-255 bytes");
	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock ttl must be greater than zero");
	store_lock_row h = {0};
	int64_t fence = 0, until = 0;
	rc = store_lock_acquire(api__store(db), name, owner, ttl_ms, &fence, &until, &h, err);
	if (rc == DBCRON_ELOCKED && holder) {
		memset(holder, 0, sizeof(*holder));
		copy_str(holder->name, sizeof(holder->name), name);
		copy_str(holder->owner, sizeof(holder->owner), h.owner);
		holder->fence = h.fence;
		holder->since_ms = h.since_ms;
		holder->until_ms = h.until_ms;
	}
	store_lock_row_clear(&h);
	if (rc)
		return rc;
	memset(lease, 0, sizeof(*lease));
	copy_str(lease->name, sizeof(lease->name), name);
	copy_str(lease->owner, sizeof(lease->owner), owner);
	lease->fence = fence;
	lease->until_ms = until;
	lease->since_ms = until - ttl_ms;
	return DBCRON_OK;
}

int dbcron_lock_renew(dbcron_db *db, dbcron_lease *lease, int64_t ttl_ms,
		      dbcron_err *err)
{
	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock ttl must be greater than zero");
	int64_t until;
	int rc = store_lock_renew(api__store(db), lease->name, lease->owner, lease->fence,
					 ttl_ms, &until, err);
	if (rc == DBCRON_OK)
		lease->until_ms = until;
	return rc;
}

int dbcron_lock_release(dbcron_db *db, const dbcron_lease *lease, dbcron_err *err)
{
	return store_lock_release(api__store(db), lease->name, lease->owner, lease->fence, err);
}
