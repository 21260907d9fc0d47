/*
 * What a node does with the outbox (issue 26, docs/reactions.md).
 *
 * Two halves, one rule: only the node's db thread touches the database.
 *  - react_step (outbox.c) runs on the db thread, on the node's own store
 *    handle: it writes the ends of finished deliveries, claims due events
 *    (store_events_claim), triggers job:NAME targets itself and hands the
 *    others, with their JSON body built, to the delivery thread;
 *  - the delivery thread (deliver.c) never sees the store: it POSTs
 *    webhooks through one libcurl multi handle (many transfers, one
 *    thread) and runs exec: programs without waiting on them, and hands
 *    each result back through a list under its own mutex, then calls the
 *    kick the node gave it so that the db thread writes it.
 * A node on a multi-host URL (a Galera cluster) thus writes through one
 * member only, and a node whose jobs have no reactions claims nothing
 * but a slow sweep (react_step says when).
 */
#ifndef DBCRON_REACT_REACT_H
#define DBCRON_REACT_REACT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/log.h"
#include "dbcron/error.h"
#include "store/store.h"

typedef struct react_deliverer react_deliverer;

typedef struct react_config {
	const char *node_id;     /* borrowed until react_start returns */
	const char *secret_file; /* NULL: requests are not signed */
	/* called by the delivery thread, with no lock of its own held, when
	 * results wait for the db thread (which then calls react_step) */
	void (*kick)(void *ctx);
	void *kick_ctx;
	const dbcron__log_sink *log; /* the thread's log lines (outlives it) */
} react_config;

/* Starts the delivery thread (the secret is read now: a bad file is an
 * error here, not at the first event).  *out is the caller's: react_stop,
 * then react_finish. */
int react_start(const react_config *cfg, react_deliverer **out, dbcron_err *err);

/*
 * One step of the outbox, on the db thread with its store s: the finished
 * deliveries written, then a claim when one is due (written: this node's
 * flush has just written an outcome with reaction targets; else at the
 * due time of a retry this node scheduled, or the 5 s sweep for events of
 * dead nodes and others' retries) and the delivery thread has room.
 * *wake_mono (monotonic ms) is lowered to when the next step is wanted.
 * An error (the database's) leaves everything to be tried again.
 */
int react_step(react_deliverer *d, store *s, bool written, int64_t *wake_mono,
	       dbcron_err *err);

/* Stops the delivery thread and joins it: transfers and programs in
 * progress get up to cut_ms to end, then are cut (their events go back).
 * NULL is fine. */
void react_stop(react_deliverer *d, int64_t cut_ms);
/* After react_stop, on the db thread: the results written and every event
 * claimed but not delivered handed back (pending now, for any node), then
 * freed.  A write that fails is logged: the node's lease lapse hands the
 * events over instead.  NULL is fine. */
void react_finish(react_deliverer *d, store *s);

/* HMAC-SHA256 of body under key as 64 hex digits into hex (65 bytes). */
void react_sign(const char *key, size_t keylen, const char *body, size_t len, char hex[65]);

#endif
