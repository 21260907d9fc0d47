/*
 * Crontabs as job definitions: the lines of a user crontab (crontab(5))
 * or of the system format (/etc/crontab, /etc/cron.d: a user column after
 * the schedule) turned into `job apply` objects, once, for every front
 * end.  Prints nothing: a line that cannot be expressed is handed to the
 * caller's report function with its line number, and the others go on.
 */
#ifndef DBCRON_MODEL_CRONTAB_H
#define DBCRON_MODEL_CRONTAB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "dbcron/error.h"

typedef struct model_crontab_opts {
	bool system;      /* the system format: a user column after the schedule */
	const char *user; /* user crontabs: every job runs as this user (or NULL) */
} model_crontab_opts;

/* One refused line: line is 1-based, msg says what and why (borrowed for
 * the call). */
typedef void (*model_crontab_report_fn)(void *ctx, size_t line, const char *msg);

/*
 * Parse text[0..len) (it may hold NUL bytes; they refuse their line).
 * *jobs becomes a new JSON array (the caller's) of job objects that
 * model_jobdef_from_json accepts: "name" (crontab-WORD-HASH, from the
 * line's text alone, so the same line has the same name in every run; a
 * repeated line in one file gets -2, -3...), "cron" (the five fields or
 * the @ macro), "command" ([SHELL, "-c", TEXT], or a /bin/sh wrapper
 * that feeds the text after an unescaped % to the command's stdin as
 * cron(8) does), "env" (the VAR=value lines above it, with cron's
 * PATH=/usr/bin:/bin unless PATH was set), "user" (the column, or
 * o->user), "tz" (CRON_TZ), "cwd" (HOME, where cron(8) starts a job),
 * and cron's policies: misfire skip, overlap allow, no retries.
 * *refused counts the lines reported.  Errors: DBCRON_ENOMEM only (bad
 * lines are reports, not errors); *jobs is NULL then.
 */
int model_crontab_parse(const char *text, size_t len, const model_crontab_opts *o,
			json_t **jobs, size_t *refused, model_crontab_report_fn report,
			void *ctx, dbcron_err *err);

#endif
