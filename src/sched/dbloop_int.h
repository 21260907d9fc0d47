/*
 * What the db thread's files share (dbloop.c, dblease.c, dbclaim.c,
 * dbwrite.c): the db thread alone calls these.  The entry points the rest
 * of the node calls are in node_int.h.
 */
#ifndef DBCRON_SCHED_DBLOOP_INT_H
#define DBCRON_SCHED_DBLOOP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/node_int.h"

/* ---- dbloop.c ---- */
/* 2 * bytes hex digits of randomness (bytes <= 32) and a NUL. */
void dbloop_random_hex(char *out, size_t bytes);
/* Database work that failed: log it and wait (a lost connection 250-500
 * ms, else *backoff, doubled for next time up to 5 s), but never past
 * `cap` (mono ms). */
void dbloop_trouble(dbcron_node *n, const dbcron_err *err, int64_t *backoff, int64_t cap);

/* ---- dblease.c ---- */
/* Renew the lease, see job states and late handlers, reap lapsed nodes;
 * fenced: drop the unstarted fires and rejoin. */
int dbloop_heartbeat(dbcron_node *n, dbcron_err *err);
/* The clock offset from a round trip t0..t1 (mono) that read db_now, and
 * the lease asked for at asked_mono that ends at lease_until_db. */
void dbloop_set_lease(dbcron_node *n, int64_t asked_mono, int64_t t0, int64_t t1, int64_t db_now,
		      int64_t lease_until_db, bool wake_timer);
/* Declared dead: every unstarted fire is dropped (other nodes own them). */
void dbloop_drop_unstarted(dbcron_node *n);

/* ---- dbclaim.c ---- */
/* One claim sized to the budget; how many fires it took, or -1. */
long dbloop_claim(dbcron_node *n, dbcron_err *err);
/* Hand back the claims in doubt before the next claim. */
int dbloop_release_doubtful(dbcron_node *n, dbcron_err *err);
/* Until when (mono ms) a claim (lead_ms CLAIM_LEAD_MS) or a flush
 * (FLUSH_LEAD_MS) waits for a burst of fires about to start or starting,
 * or 0 when it need not (dbclaim.c, "The db thread waits out a burst"). */
#define CLAIM_LEAD_MS 150
#define FLUSH_LEAD_MS 10
#define BURST_AFTER_MS 15
int64_t dbloop_burst_hold(dbcron_node *n, int64_t now_mono, int64_t lead_ms);

/* ---- dbloop.c ---- */
/* Sleep until until_mono (mono ms), a kick or a stop request.  A wait of
 * at most flush_ms marks the db thread as polling: the writes queued
 * meanwhile wake nothing (dbloop_note_write). */
void dbloop_wait(dbcron_node *n, int64_t until_mono);

/* ---- dbwrite.c ---- */
/* Every pending start and end in one batch. */
int dbloop_flush(dbcron_node *n, dbcron_err *err);
/* The fenced starts of at-most-once fires, one write each. */
int dbloop_sync_starts(dbcron_node *n, dbcron_err *err);

#endif
