/*
 * Private to src/store/: the protocol's statement runner and the shared
 * row readers, for protocol.c, rows.c and fault.c.
 */
#ifndef DBCRON_STORE_INT_H
#define DBCRON_STORE_INT_H

#include "store/dialect.h"
#include "store/store.h"

/* Run statement id through the fault seam; counts one statement. */
int store__exec(store *s, int id, const store_param *p, int np, dbcron_err *err);
int store__next(store *s, dbcron_err *err);
void store__reset(store *s);

/* The current row's STORE_JOB_COLS from column c0 -> job (initialised
 * here, cleared by the caller; cleared again on failure). */
int store__read_job(store *s, int c0, dbcron_job *job, dbcron_err *err);
/* The current row's STORE_RUN_COLS -> run (zeroed here, cleared by the
 * caller). */
int store__read_run(store *s, dbcron_run *run, dbcron_err *err);

/* argv <-> its stored form, a JSON array of strings.  encode: *out is NULL
 * for a job without argv, else owned by the caller; DBCRON_EINVAL names the
 * argument that is not valid UTF-8.  decode: every element a string. */
int store__argv_encode(const dbcron_job *job, char **out, dbcron_err *err);
int store__argv_decode(const char *text, dbcron_job *job, dbcron_err *err);
/* The job's env ("KEY=VALUE" strings) as the same kind of array; NULL
 * when it has none.  Read back by store__read_job. */
int store__env_encode(const dbcron_job *job, char **out, dbcron_err *err);

/* The fault seam (fault.c): before sending statement id, and after it ran. */
int store__fault_before(store *s, int id, dbcron_err *err);
int store__fault_after(store *s, int id, dbcron_err *err);

#endif
