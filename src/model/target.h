/*
 * Reaction targets (issue 26, docs/reactions.md): what a job names in
 * --on-failure, --on-success and --on-misfire.  A job keeps each list as
 * one text, one target a line (dbcron_job.on_failure...), so the store
 * needs no new storage kind; these functions are the only readers of
 * that form.  Syntax only: whether a job:NAME exists is the app layer's
 * question (it needs the store).
 */
#ifndef DBCRON_MODEL_TARGET_H
#define DBCRON_MODEL_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

typedef enum model_target_kind {
	MODEL_TARGET_JOB = 1, /* job:NAME: trigger that job */
	MODEL_TARGET_HTTP,    /* http:// or https://: POST the event */
	MODEL_TARGET_EXEC,    /* exec:PATH [ARGS]: the event on its stdin */
} model_target_kind;

/* The longest target dbcron takes: the MariaDB outbox keys on it. */
#define MODEL_TARGET_MAX 700

/* t checked alone: DBCRON_EINVAL with a message saying what is wrong
 * ("'job:': no job name"); *kind set when it is fine (may be NULL). */
int model_target_check(const char *t, model_target_kind *kind, dbcron_err *err);

/* The next target of a list from *pos (advanced past it): its start and
 * its length in *len; NULL when there is none left.  Not terminated. */
const char *model_targets_next(const char **pos, size_t *len);

/* Whether list (may be NULL) holds the target t[0..len). */
bool model_targets_has(const char *list, const char *t, size_t len);

/* What an event reacts to, and where its delivery stands: the numbers the
 * events table holds (kind, state). */
typedef enum model_react_kind {
	MODEL_REACT_FAILURE = 1, /* failed, timed out or abandoned, no retry left */
	MODEL_REACT_SUCCESS = 2,
	MODEL_REACT_MISFIRE = 3,
	MODEL_REACT_OVERDUE = 4, /* no success for max_silence_ms (no run: run_id <= 0) */
} model_react_kind;

typedef enum model_event_state {
	MODEL_EVENT_PENDING = 1,
	MODEL_EVENT_DELIVERING = 2, /* claimed by a node (claim token) */
	MODEL_EVENT_DELIVERED = 3,
	MODEL_EVENT_FAILED = 4, /* retries spent; last_error says why */
} model_event_state;

/* The kind of event a run's end raises, 0 for none: a failure only when
 * it is the fire's final outcome (no retry follows), never a skip. */
int model_react_kind_of(dbcron_run_state end, bool retry_follows);
/* j's targets for that kind (one a line; NULL: none). */
const char *model_react_targets(const dbcron_job *j, int kind);
/* "failure", "success", "misfire"; "pending"... ("?" when unknown); and
 * back (-1 when unknown). */
const char *model_react_kind_name(int kind);
const char *model_event_state_name(int state);
int model_event_state_parse(const char *s);

#endif
