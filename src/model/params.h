/*
 * Run parameters (issue 27 item 4): `dbcron job trigger NAME --param
 * KEY=VALUE` and the trigger body's "params".  A run's parameters are a
 * JSON object of strings on its row (runs.params); a shell job sees each
 * as DBCRON_PARAM_KEY, a handler through dbcron_handler_param().  A job may
 * declare the keys it takes, with defaults (the job field --params
 * "KEY[=DEFAULT],..."): then a key it does not declare is refused at the
 * trigger, and a declared default fills in for a key not given (also for
 * the job's scheduled fires).  Without a declaration any valid key is
 * taken.  Parameters are plain data, shown in the run log: not for
 * secrets.  Pure functions: no I/O, no database.
 */
#ifndef DBCRON_MODEL_PARAMS_H
#define DBCRON_MODEL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "dbcron/error.h"

#define MODEL_PARAM_MAX 32         /* parameters a run or a declaration has */
#define MODEL_PARAM_KEY_MAX 64     /* bytes of a key */
#define MODEL_PARAM_VALUE_MAX 4096 /* bytes of a value (or a default) */

/* [A-Za-z_][A-Za-z0-9_]*, 1 to MODEL_PARAM_KEY_MAX bytes (len of k). */
bool model_param_key_ok(const char *k, size_t len);

/* The keys a job: reaction gives the run it triggers (issue 26 item 2,
 * docs/reactions.md): UPSTREAM_JOB, UPSTREAM_RUN_ID, UPSTREAM_STATE.  The
 * prefix is reserved: no declaration names such a key and no trigger
 * gives one (so a run's upstream is the reaction's word), yet a job that
 * declares its keys still takes them from a reaction (they are not
 * checked against the declaration).  A shell job sees them as
 * DBCRON_UPSTREAM_*, not DBCRON_PARAM_UPSTREAM_*. */
#define MODEL_PARAM_UPSTREAM "UPSTREAM_"
bool model_param_reserved(const char *k, size_t len);

/* Does declaration decl (NULL: none) name key[0, klen), with a default or
 * without?  (A SQL job's ${param.KEY} must be declared.) */
bool model_params_declares(const char *decl, const char *key, size_t klen);

/* A declaration "KEY[=DEFAULT],...": each key valid and once, each default
 * bounded, at most MODEL_PARAM_MAX.  DBCRON_EINVAL saying which item. */
int model_params_decl_check(const char *decl, dbcron_err *err);

/*
 * The parameters of a run of job `job` (for messages) triggered with
 * kv[0..n) ("KEY=VALUE" each), against the job's declaration decl (NULL:
 * any valid key): *json a new compact JSON object text with the given
 * values and the declared defaults not given, keys sorted, or NULL when
 * there are none.  DBCRON_EINVAL for a bad or repeated key, a value too
 * long, too many, or a key the declaration does not name ("job 'x' takes
 * no parameter 'K' (it takes: a, b)"); DBCRON_ENOMEM.  *json NULL on error.
 */
int model_params_for_run(const char *job, const char *decl, const char *const *kv, size_t n,
			 char **json, dbcron_err *err);

/* Each parameter a run sees: those on its row (run_json, may be NULL),
 * then the declaration's defaults it lacks.  cb returning non-zero stops
 * (and is returned).  A run_json that does not parse as an object of
 * strings contributes nothing (the store only ever writes ours). */
typedef int (*model_param_cb)(void *ctx, const char *key, const char *value);
int model_params_each(const char *run_json, const char *decl, model_param_cb cb, void *ctx);

#endif
