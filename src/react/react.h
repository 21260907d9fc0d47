/*
 * What a node does with the outbox (issue 26, docs/reactions.md): one
 * delivery thread per node, with its own store handle, claims pending
 * events (store_events_claim) and delivers each: job:NAME by triggering
 * that job, http(s):// by POSTing the event JSON, exec:PATH by running the
 * program with the event JSON on its stdin.  The thread is the deliverer's
 * alone; react_stop joins it.
 */
#ifndef DBCRON_REACT_REACT_H
#define DBCRON_REACT_REACT_H

#include <stdint.h>

#include "core/log.h"
#include "dbcron/error.h"

typedef struct react_deliverer react_deliverer;

typedef struct react_config {
	const char *db_url;      /* borrowed until react_start returns */
	const char *node_id;     /* ditto */
	const char *secret_file; /* NULL: requests are not signed */
	int64_t poll_ms;         /* between claims when there was nothing; default 250 */
	const dbcron__log_sink *log; /* the thread's log lines (outlives the thread) */
} react_config;

/* Starts the thread (the secret is read now: a bad file is an error
 * here, not at the first event).  *out is the caller's (react_stop). */
int react_start(const react_config *cfg, react_deliverer **out, dbcron_err *err);
/* Stops after the delivery in progress, joins, frees; NULL is fine. */
void react_stop(react_deliverer *d);

/* HMAC-SHA256 of body under key as 64 hex digits into hex (65 bytes). */
void react_sign(const char *key, size_t keylen, const char *body, size_t len, char hex[65]);

#endif
