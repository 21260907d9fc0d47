/*
 * Between the delivery loop (deliver.c) and the three ways out
 * (outlets.c): each delivers one claimed event and says whether it went
 * through, may go through later, or never will, with why in buf.
 */
#ifndef DBCRON_REACT_REACT_INT_H
#define DBCRON_REACT_REACT_INT_H

#include <stddef.h>

#include "react/react.h"
#include "store/store.h"

/* Attempts before an event that keeps failing ends FAILED. */
#define REACT_MAX_ATTEMPTS 5

typedef enum react_outcome {
	REACT_DELIVERED,
	REACT_RETRY,  /* may pass: connection, timeout, HTTP 5xx, exec failure */
	REACT_FAILED, /* will not pass: HTTP 4xx, a job that is gone */
} react_outcome;

/* job:NAME: a triggered run of that job (store_job_trigger). */
react_outcome react_trigger(store *s, const store_event *ev, char *buf, size_t len);
/* The event JSON (docs/reactions.md), owned by the caller; NULL when out
 * of memory.  Reads the run the event is about. */
char *react_event_body(store *s, const store_event *ev, const char *node_id);
/* http(s)://: POST body with X-Dbcron-Event-Id and, with a secret,
 * X-Dbcron-Signature: sha256=HEX. */
react_outcome react_post(const store_event *ev, const char *body, const char *secret,
			 size_t secret_len, char *buf, size_t len);
/* exec:PATH [ARGS]: the program (words split at spaces) with body on its
 * stdin, a clean environment, at most 30 s. */
react_outcome react_exec(const store_event *ev, const char *body, char *buf, size_t len);

#endif
