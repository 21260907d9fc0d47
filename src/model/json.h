/*
 * Jobs and runs as JSON, once, for every front end: what `job list
 * --format json`, `job show` and `runs --format json` print, and what
 * `job apply` reads, so that an HTTP API produces and accepts exactly the
 * same documents.  A job's keys are the key table's names (jobdef.h), so
 * a listed job reads back as the same definition.
 */
#ifndef DBCRON_MODEL_JSON_H
#define DBCRON_MODEL_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "dbcron/error.h"
#include "dbcron/job.h"
#include "model/jobdef.h"

/*
 * A job as the keys of a definition (every key, defaults included), plus
 * what the store knows: "id", "next_fire_at_ms" and "next_fire" (null when
 * unset).  New reference, the caller's; NULL when out of memory.
 */
json_t *model_job_json(const dbcron_job *job);

/*
 * A job as a definition only: model_job_json without what the store sets
 * (no "id", no next fire), with an AT job's "at" as its absolute instant
 * (RFC 3339, UTC) rather than the text it was given ("now+5m" would name
 * another instant when read back).  What `job export` writes and what
 * apply compares to tell a changed job from an unchanged one: two jobs
 * with equal objects are the same definition.  New reference, the
 * caller's; NULL when out of memory.
 */
json_t *model_job_def_json(const dbcron_job *job);

/* model_job_json plus "last_runs": runs[0..n) as model_run_json.  New
 * reference, the caller's; NULL when out of memory. */
json_t *model_job_json_with_runs(const dbcron_job *job, const dbcron_run *runs,
				 size_t n);

/*
 * A run: id, job, fire_at_ms and fire_at (RFC 3339), attempt, state,
 * due_at_ms, node, started_ms, finished_ms, exit_code, missed, error (null
 * when unset), and output only when the run carries it.  New reference,
 * the caller's; NULL when out of memory.
 */
json_t *model_run_json(const dbcron_run *run);

/*
 * One JSON job object into d (initialised with cli false): every key set
 * through the key table, then model_jobdef_check.  The keys only the store
 * sets ("id", "next_fire_at_ms", "next_fire", "last_runs", "set_aside",
 * and "unrunnable" that the verbs add) are read-only
 * and ignored, so that a listed job applies as it is.  *name is the
 * object's "name" when it is a string, else NULL; it is borrowed from obj.
 * Errors (DBCRON_EINVAL and the setters' codes) name the key.
 */
int model_jobdef_from_json(model_jobdef *d, json_t *obj, const char **name,
			   dbcron_err *err);

#endif
