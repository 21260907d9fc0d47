/* Internal side of the lease locks: the CLI and the node's maintenance use
 * the store behind a dbcron_db and share the name check. */
#ifndef DBCRON_LEASE_H
#define DBCRON_LEASE_H

#include "dbcron/lock.h"
#include "store/store.h"

store *lease__store(dbcron_db *db);
int lease__check_name(const char *name, dbcron_err *err);
/* Bounds every statement of db's handle by the lease (store_tune_for_node:
 * a client-side deadline of half the ttl where the backend has one, lock
 * waits a third), so that a renewal on a frozen or unreachable server
 * fails and the keeper sees the lease lost, instead of waiting in the
 * driver while another owner takes the lock.  Before the acquire. */
int lease__bound(dbcron_db *db, int64_t ttl_ms, dbcron_err *err);

/*
 * The renew rule of a held lease (keeper.c): renew every ttl/3, retry every
 * 200 ms after a failure, lost when a renewal is refused or none succeeded
 * for a whole ttl.  Used by one thread at a time, with the handle it was
 * given; the lease is renewed in place.
 */
typedef enum lease_keep_state {
	LEASE_KEPT,    /* held, as far as we know */
	LEASE_LOST,    /* a renewal was refused (or failed past the ttl): why */
	LEASE_EXPIRED, /* no renewal succeeded within the ttl */
} lease_keep_state;

typedef struct lease_keeper {
	dbcron_db *db;
	dbcron_lease *lease;
	int64_t ttl_ms, renew_every;
	int64_t valid_until, next_renew; /* monotonic ms */
	lease_keep_state state;
	char why[520]; /* room for a dbcron_err message */
} lease_keeper;

/* Just acquired at now_mono (monotonic ms) for ttl_ms. */
void lease_keeper_init(lease_keeper *k, dbcron_db *db, dbcron_lease *lease, int64_t ttl_ms,
		       int64_t now_mono);
/* When the keeper next has something to do (monotonic ms); INT64_MAX once
 * the lease is lost. */
int64_t lease_keeper_due(const lease_keeper *k);
/* Renew if due; the state after (final once not LEASE_KEPT). */
lease_keep_state lease_keeper_tick(lease_keeper *k, int64_t now_mono);

#endif
