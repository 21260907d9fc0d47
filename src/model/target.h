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

#endif
