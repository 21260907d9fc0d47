/*
 * Job definitions as users write them: the long flags of `job add` and the
 * keys of a `job apply` file (and of any other front end's JSON) are one
 * table, generated from the field table (core/job_fields.h, fields.h), so
 * the two can never disagree.  No printing: every error is a
 * dbcron code with a message that names the flag or key and the value.
 */
#ifndef DBCRON_MODEL_JOBDEF_H
#define DBCRON_MODEL_JOBDEF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

typedef enum model_jobdef_type {
	MODEL_JD_STR = 1, /* free text or a name */
	MODEL_JD_INT,     /* integer */
	MODEL_JD_BOOL,    /* flag without value on the CLI; true/false in JSON */
	MODEL_JD_DUR,     /* duration text: "500ms", "30s", "1h30m" */
	MODEL_JD_ARGV,    /* array of strings (JSON "command"; CLI after "--") */
	MODEL_JD_LIST,    /* array of strings in JSON; a repeatable flag on the CLI */
	MODEL_JD_TIME,    /* an instant: RFC 3339, epoch seconds, now, now+DUR */
} model_jobdef_type;

/* model_jobdef_id: one per key, generated from the field table (fields.h). */
#include "model/fields.h"

typedef struct model_jobdef_key {
	model_jobdef_id id;
	const char *name;  /* long flag / JSON key: "max-catchup" */
	const char *snake; /* accepted JSON variant: "max_catchup" (or NULL) */
	model_jobdef_type type;
} model_jobdef_key;

/* One definition being built.  Owns job's strings; model_jobdef_clear
 * frees them. */
typedef struct model_jobdef {
	dbcron_job job;
	bool cli;                   /* messages name "--every", else "key 'every'" */
	bool seen[MODEL_JK__COUNT]; /* which keys were given */
	/* TIME keys given relative to now ("now+5m"): the offset, resolved
	 * against the database clock by model_jobdef_finish */
	bool relative[MODEL_JK__COUNT];
	int64_t offset[MODEL_JK__COUNT];
} model_jobdef;

/* The key table in model_jobdef_id order, terminated by a NULL name. */
extern const model_jobdef_key model_jobdef_keys[];

/* Old names still accepted (flag and JSON key), shown as the key's own
 * name: "jitter" for retry-jitter.  MODEL_JK_NALIASES entries. */
typedef struct model_jobdef_alias {
	const char *name;
	model_jobdef_id id;
} model_jobdef_alias;
#define MODEL_JK_NALIASES 1
extern const model_jobdef_alias model_jobdef_aliases[MODEL_JK_NALIASES];

void model_jobdef_init(model_jobdef *d, bool cli);
void model_jobdef_clear(model_jobdef *d);
/* "--every", "-- COMMAND" or "key 'every'" into buf (caller's); returns buf. */
const char *model_jobdef_label(const model_jobdef *d, const model_jobdef_key *k,
			       char *buf, size_t len);
/* By long name, snake_case variant or old name; NULL when unknown.  The entry is
 * static. */
const model_jobdef_key *model_jobdef_find(const char *name);
const model_jobdef_key *model_jobdef_key_of(model_jobdef_id id);
/* The field-table row a key sets (the schedule's first row for the four
 * schedule keys); NULL for a bad key. */
const model_field *model_jobdef_field(const model_jobdef_key *k);
/* The key of a schedule kind: MODEL_JK_CRON for cron... */
model_jobdef_id model_sched_key(dbcron_sched_kind kind);
/* `job add --help`'s lines for the keys of one scope (MODEL_SCOPE_ANY:
 * the general options), "  --tz ZONE               IANA ..." each, to f. */
void model_jobdef_help(FILE *f, model_field_scope scope);

/*
 * Set one key.  Text for STR/DUR/INT keys (parsed), or the typed setters
 * below (set_int also takes an ENUM key's value and a UMASK).  Checks the value alone (syntax, zone exists, handler exists) and
 * that the key was not given before; errors say which key and which
 * value, DBCRON_EINVAL/EPARSE/ETZ.  d copies what it keeps.  A LIST key
 * (env) takes one element per call and may be given again; an element
 * whose name is already there is refused.
 */
int model_jobdef_set_text(model_jobdef *d, const model_jobdef_key *k,
			  const char *value, dbcron_err *err);
int model_jobdef_set_int(model_jobdef *d, const model_jobdef_key *k,
			 long long v, dbcron_err *err);
int model_jobdef_set_bool(model_jobdef *d, const model_jobdef_key *k, bool v,
			  dbcron_err *err);
/* A DUR key's milliseconds (held to the range its text is: > 0 unless
 * zero means something, at most DBCRON_DURATION_MAX) or a TIME key's
 * absolute instant (>= 0). */
int model_jobdef_set_ms(model_jobdef *d, const model_jobdef_key *k, int64_t ms,
			dbcron_err *err);
/* The command: copies argv[0..argc). */
int model_jobdef_set_argv(model_jobdef *d, char *const *argv, int argc,
			  dbcron_err *err);

/*
 * A job struct as a definition (the library's dbcron_apply): every key in
 * the job's scope is given, as the JSON codec would write it (json.h), but
 * through the typed setters, so a struct and its JSON object are held to
 * the same per-key rules; then model_jobdef_check.  A handler job's
 * command keys and a command job's handler are not read; an unset zone is
 * "UTC"; the schedule is kind and spec (its text), interval_ms and at_ms
 * are resolved from it.  d is initialised with cli false; j is borrowed.
 * Errors name the key; a job without a name is DBCRON_EINVAL.
 */
int model_jobdef_from_job(model_jobdef *d, const dbcron_job *j, dbcron_err *err);

/*
 * Checks that need the whole definition but no clock: exactly one
 * schedule, a command or a handler (not both), --arg only with --handler,
 * the process keys (user, cwd, env...) only with a command.
 */
int model_jobdef_check(model_jobdef *d, dbcron_err *err);

/*
 * Checks that need this host: the user and group the job names exist
 * here (getpwnam), a SQL job's database file is readable here and holds
 * a URL of a supported kind (exec_sql_check_db_file; no connect).  Front ends call it when the jobs will run on a host
 * like theirs; a node checks again at every run, on its own host.
 * DBCRON_ENOTFOUND "--user 'x': no such user on this host".
 */
int model_jobdef_check_host(const model_jobdef *d, dbcron_err *err);

/*
 * A handler job naming a handler this process does not know (built-ins
 * and dbcron_handler_register'ed ones): accepted, for the nodes that
 * register it (a claim routes the job there), with warn (wlen bytes, the
 * caller's) saying so; with strict, DBCRON_EINVAL "unknown handler 'x'".
 * warn is "" when there is nothing to say.
 */
int model_jobdef_check_handler(const dbcron_job *j, bool strict, char *warn, size_t wlen,
			       dbcron_err *err);

/*
 * Resolve against the database clock and validate (model_jobdef_check,
 * model_job_series, dbcron_job_validate, model_job_first_fire).  prev (may
 * be NULL) is the stored job of the same name: its id and creation time
 * carry over, an unchanged schedule keeps its series (rules.h), and when
 * "paused" was not given its paused state is kept.  Afterwards d->job is
 * a valid job with next_fire_at set.
 */
int model_jobdef_finish(model_jobdef *d, int64_t now_ms, const dbcron_job *prev,
			dbcron_err *err);

/* The schedule as one word and its text, "every 30s"; an AT job shows its
 * resolved instant.  Into buf (caller's); returns buf. */
const char *model_schedule_text(const dbcron_job *job, char *buf, size_t len);

/* RFC 3339 in UTC, with milliseconds only when they are not zero; "-" for
 * unset (-1; dbcron has no times before 1970).  Into buf; returns buf. */
const char *model_time_text(int64_t ms, char *buf, size_t len);

#endif
