/*
 * Lease locks (seed 002): a named lease with an owner and a fencing token
 * (`dbcron lock`, the maintenance lease, a library caller's locks).
 *
 * Invariants, kept by the statements (stmt.h) and checked by the
 * conformance tests: a lock is taken only when free or expired; each take
 * raises its fence; renew and release match (name, owner, fence), so a
 * stale holder under the same owner name neither extends nor frees the
 * current lease; a release frees at once; every time is the database's.
 */
#include <string.h>

#include "core/alloc.h"
#include "store/store_int.h"

static int read_lock(store *s, store_lock_row *r, dbcron_err *err)
{
	const char *name = s->d->col_text(s->c, 0), *owner = s->d->col_text(s->c, 1);
	memset(r, 0, sizeof(*r));
	r->since_ms = store__i64(s, 2);
	r->until_ms = store__i64(s, 3);
	r->fence = store__i64(s, 4);
	if (!(r->name = dbcron__strdup(name ? name : "")) ||
	    !(r->owner = dbcron__strdup(owner ? owner : ""))) {
		store_lock_row_clear(r);
		return store__oom(err, "reading a lock");
	}
	return DBCRON_OK;
}

static int lock_args(const char *op, const char *name, const char *owner, int64_t ttl_ms,
		     dbcron_err *err)
{
	if (!name || !*name || !owner || !*owner)
		return dbcron_err_set(err, DBCRON_EINVAL, "%s: a lock name and an owner are required", op);
	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "%s: the lease must be positive", op);
	return DBCRON_OK;
}

int store_lock_acquire(store *s, const char *name, const char *owner, int64_t ttl_ms,
		       int64_t *fence, int64_t *until_ms, store_lock_row *holder,
		       dbcron_err *err)
{
	int rc = lock_args("lock acquire", name, owner, ttl_ms, err), row;
	if (holder)
		memset(holder, 0, sizeof(*holder));
	if (rc)
		return rc;
	store_param p[] = {sp_text(name), sp_text(owner), sp_i64(ttl_ms)};
	row = store__row(s, ST_LOCK_ACQUIRE, p, 3, err);
	if (row < 0)
		return -row;
	if (row) {
		if (fence)
			*fence = store__i64(s, 0);
		if (until_ms)
			*until_ms = store__i64(s, 1);
		store__reset(s);
		return DBCRON_OK;
	}
	/* Held: say by whom and until when.  The holder may have released in
	 * between; then report it as just released rather than retrying. */
	store_param gp[] = {sp_text(name)};
	store_lock_row h;
	memset(&h, 0, sizeof(h));
	row = store__row(s, ST_LOCK_GET, gp, 1, err);
	if (row < 0)
		return -row;
	if (row) {
		rc = read_lock(s, &h, err);
		store__reset(s);
		if (rc)
			return rc;
	}
	rc = dbcron_err_set(err, DBCRON_ELOCKED, "lock '%s' is held by '%s' until %lld (fence %lld)",
			    name, h.owner ? h.owner : "?", (long long)h.until_ms,
			    (long long)h.fence);
	if (holder)
		*holder = h;
	else
		store_lock_row_clear(&h);
	return rc;
}

int store_lock_renew(store *s, const char *name, const char *owner, int64_t fence,
		     int64_t ttl_ms, int64_t *until_ms, dbcron_err *err)
{
	int rc = lock_args("lock renew", name, owner, ttl_ms, err);
	if (rc)
		return rc;
	store_param p[] = {sp_text(name), sp_text(owner), sp_i64(fence), sp_i64(ttl_ms)};
	int row = store__row(s, ST_LOCK_RENEW, p, 4, err);
	if (row < 0)
		return -row;
	if (row == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': lease lost (taken over by another owner)", name);
	if (until_ms)
		*until_ms = store__i64(s, 0);
	store__reset(s);
	return DBCRON_OK;
}

int store_lock_release(store *s, const char *name, const char *owner, int64_t fence,
		       dbcron_err *err)
{
	int64_t n = 0;
	int rc = lock_args("lock release", name, owner, 1, err);
	if (rc)
		return rc;
	store_param p[] = {sp_text(name), sp_text(owner), sp_i64(fence)};
	if ((rc = store__run(s, ST_LOCK_RELEASE, p, 3, &n, err)))
		return rc;
	if (n == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': not released, '%s' (fence %lld) no longer holds it",
				      name, owner, (long long)fence);
	return DBCRON_OK;
}

struct lock_each {
	store_lock_cb cb;
	void *ctx;
};

static int lock_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct lock_each *e = arg;
	store_lock_row r;
	int rc = read_lock(s, &r, err);
	if (rc)
		return rc;
	*stop = e->cb(e->ctx, &r) != 0;
	store_lock_row_clear(&r);
	return DBCRON_OK;
}

int store_lock_list(store *s, store_lock_cb cb, void *ctx, dbcron_err *err)
{
	struct lock_each e = {cb, ctx};
	return store__each_row(s, ST_LOCK_LIST, NULL, 0, lock_one, &e, err);
}
