/*
 * The scheduler's database as a library: a handle, and every verb the
 * `dbcron` CLI has on it (init, job add/apply/list/show/pause/resume/
 * delete/trigger, runs, nodes, locks).  Each call is the CLI's verb, not a
 * second implementation: the same checks, the same messages, the same one
 * transaction per change.
 *
 * Errors: every function that can fail returns a dbcron_code (DBCRON_OK is
 * 0) and, when err is not NULL, fills err with the code and a message that
 * names the job, key or value at fault.
 *
 * Ownership: a function that hands out memory says how to free it; every
 * string in a filled struct belongs to that struct.  Pointers passed in are
 * borrowed for the call only, unless a function says otherwise.
 *
 * Threads: a dbcron_db is used by one thread at a time (calls on one handle
 * are not serialised for you); open one handle per thread.  Different
 * handles are independent and may be used concurrently.  No call keeps
 * global state, except that applying a job checks handler names against the
 * process's handler registry (dbcron/handler.h) and dbcron_db_open_file
 * adds to the process's secret files (below).
 */
#ifndef DBCRON_DB_H
#define DBCRON_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dbcron_db dbcron_db;

/* ------------------------------------------------------------ handle */

/* Flags of dbcron_db_open_ex / dbcron_db_open_file. */
enum {
	/* Create or upgrade the schema first (what `dbcron init` does);
	 * without it a database without the current schema is refused. */
	DBCRON_DB_INIT = 1u << 0,
};

/*
 * Open a database by URL: sqlite:PATH, postgresql://... (or a libpq
 * conninfo), mysql://...  The schema must exist (`dbcron init`, or
 * DBCRON_DB_INIT).  On success *out is a handle the caller closes with
 * dbcron_db_close(); on failure *out is untouched.  The URL is copied where
 * kept.
 */
DBCRON_API int dbcron_db_open(const char *url, dbcron_db **out, dbcron_err *err);
DBCRON_API int dbcron_db_open_ex(const char *url, unsigned flags, dbcron_db **out,
				 dbcron_err *err);
/*
 * The same with the URL read from a file (one line, at most 64 KiB, blanks
 * around it ignored), so that a password never appears in argv or the
 * environment.  The file is also added to the secrets no shell job of this
 * process is handed (docs/security.md).  Messages name the path, never its
 * content.
 *
 * That list of secret files is process-wide on purpose, the library's one
 * piece of global state besides the handler registry: the URL is a secret
 * of the process, not of one handle or node, and every shell job any node
 * of the process starts is a child of the process that could open the file
 * (same user, same file system), so every node must refuse it.  A list per
 * node would let node B hand a job the file node A's handle read.  Entries
 * are (device, inode) pairs, never removed; a few are kept.
 */
DBCRON_API int dbcron_db_open_file(const char *path, unsigned flags, dbcron_db **out,
				   dbcron_err *err);
/* Closes the connection and frees db.  NULL is accepted. */
DBCRON_API void dbcron_db_close(dbcron_db *db);
/*
 * Who the changes made through db are by, for the audit trail (`dbcron
 * audit`, docs/cli.md): every job write, pause, resume, delete, rename
 * and trigger of this handle records actor.  The default is
 * "lib:PROGRAM" (the program's short name); an embedder that acts for
 * someone names them here, e.g. "lib:billing (user 42)".  actor is
 * copied (at most 255 bytes are kept); NULL or "" restores the default.
 * Not a credential: whoever holds the handle may say anything.
 */
DBCRON_API void dbcron_db_set_actor(dbcron_db *db, const char *actor);
/* The database's clock (epoch ms), which every age and schedule uses. */
DBCRON_API int dbcron_db_now_ms(dbcron_db *db, int64_t *now_ms, dbcron_err *err);

/* ------------------------------------------------------------- apply */

/* One refused entry of a batch: its index (0-based), its name when it had
 * one (else NULL) and what is wrong, naming the key.  Called during the
 * apply call, on its thread; the strings are valid during the call only. */
typedef void (*dbcron_apply_error_fn)(void *ctx, size_t index, const char *name,
				      const char *msg);

typedef struct dbcron_apply_opts {
	bool prune;      /* delete the stored jobs that are not in the batch */
	bool dry_run;    /* say what would change (diff_json), write nothing */
	bool user_check; /* a job's user and group must exist on this host */
	dbcron_apply_error_fn on_error; /* may be NULL */
	void *ctx;                      /* for on_error and on_warning */
	/* A handler job whose handler this process has not registered (nor
	 * built in) is accepted, for the nodes that register it (a claim
	 * routes handler jobs to nodes that have the handler), and reported
	 * through on_warning (may be NULL); with strict it is refused. */
	bool strict;
	dbcron_apply_error_fn on_warning;
} dbcron_apply_opts;

typedef struct dbcron_apply_result {
	size_t created, updated, deleted;
	size_t errors; /* entries refused; then nothing was written */
	/* dry run: {"create": [names], "update": [the stored ones that
	 * change], "delete": [...], "unchanged": [...], "fields": {name: [the
	 * keys that change]}}, a string the result owns
	 * (dbcron_apply_result_clear); else NULL.  updated counts every
	 * stored name given, changed or not. */
	char *diff_json;
	/* a prune that deleted jobs waits (at most 10 s) for every live node
	 * to see it; when one did not confirm, which, else "" */
	char warning[512];
} dbcron_apply_result;

/* prune, dry_run and strict false, user_check true, no callbacks. */
DBCRON_API void dbcron_apply_opts_init(dbcron_apply_opts *o);
/* Frees diff_json and zeroes r.  NULL is accepted. */
DBCRON_API void dbcron_apply_result_clear(dbcron_apply_result *r);

/*
 * Apply a batch all or nothing, as `dbcron job apply FILE`: json is that
 * file's text (a JSON array of job objects, or {"jobs": [...], "tags":
 * [...]} with the tags' caps, written with the jobs; len bytes,
 * or up to its NUL when len is 0).  Creates new names, updates existing
 * ones (an unchanged schedule keeps its series), and with prune deletes the
 * others.  When any entry is refused, each is reported through o->on_error,
 * counted in r->errors, nothing is written, and the return is DBCRON_EINVAL
 * ("nothing applied (2 errors)").  o may be NULL (defaults); r is the
 * caller's and is filled on every path (clear it afterwards).
 */
DBCRON_API int dbcron_apply_json(dbcron_db *db, const char *json, size_t len,
				 const dbcron_apply_opts *o, dbcron_apply_result *r,
				 dbcron_err *err);
/*
 * The same for structs: jobs[0..n) are definitions (dbcron_job_init, then
 * name, kind and spec as the user would write it: cron text, "30s", an
 * RFC 3339 instant; then a command or a handler and any policies).  Each is
 * held to the same per-key rules as its JSON form, with no JSON made on
 * the way, so the two entry points cannot disagree; fields only the store sets (id, next_fire_at, times,
 * set_aside) are ignored.  A struct is the whole definition: its paused
 * field is applied as given.  jobs are borrowed.
 */
DBCRON_API int dbcron_apply(dbcron_db *db, const dbcron_job *jobs, size_t n,
			    const dbcron_apply_opts *o, dbcron_apply_result *r,
			    dbcron_err *err);

/* ------------------------------------------------------------- jobs */

/*
 * Add one job, as `dbcron job add` (user_check on): DBCRON_EEXISTS when the
 * name is taken.  Update one, as applying it alone but DBCRON_ENOTFOUND
 * when there is no such job.  job is read as dbcron_apply reads it.  When
 * stored is not NULL (dbcron_job_init'ed by the caller) it receives the job
 * as stored, next fire included (the caller clears it).
 */
DBCRON_API int dbcron_job_add(dbcron_db *db, const dbcron_job *job, dbcron_job *stored,
			      dbcron_err *err);
DBCRON_API int dbcron_job_update(dbcron_db *db, const dbcron_job *job,
				 dbcron_job *stored, dbcron_err *err);

/* One job by name into *out (the caller's, dbcron_job_init'ed; cleared
 * with dbcron_job_clear).  DBCRON_ENOTFOUND "no job named 'x'". */
DBCRON_API int dbcron_job_get(dbcron_db *db, const char *name, dbcron_job *out,
			      dbcron_err *err);

/* Every job, sorted by name: *jobs is a new array of *n jobs the caller
 * frees with dbcron_job_list_free(*jobs, *n).  An empty list may be NULL. */
DBCRON_API int dbcron_job_list(dbcron_db *db, dbcron_job **jobs, size_t *n,
			       dbcron_err *err);
DBCRON_API void dbcron_job_list_free(dbcron_job *jobs, size_t n);

/* What a verb on one job did. */
typedef struct dbcron_job_result {
	bool changed;      /* pause/resume: false when it already was so */
	int64_t next_fire; /* resume: the new next fire (-1 none) */
	int64_t run_id;    /* trigger: the new run */
	int64_t fire_at;   /* trigger: its fire time */
	/* pause and delete wait (at most 10 s) for every live node to see the
	 * change, so that no node starts a fire it had claimed before; when
	 * one did not confirm, which, else "" */
	char warning[512];
} dbcron_job_result;

/* As `dbcron job pause|resume|delete|trigger NAME`.  r may be NULL.
 * DBCRON_ENOTFOUND "no job named 'x'". */
DBCRON_API int dbcron_job_pause(dbcron_db *db, const char *name, dbcron_job_result *r,
				dbcron_err *err);
DBCRON_API int dbcron_job_resume(dbcron_db *db, const char *name, dbcron_job_result *r,
				 dbcron_err *err);
DBCRON_API int dbcron_job_delete(dbcron_db *db, const char *name, dbcron_job_result *r,
				 dbcron_err *err);
DBCRON_API int dbcron_job_trigger(dbcron_db *db, const char *name, dbcron_job_result *r,
				  dbcron_err *err);

/* ------------------------------------------------------------- runs */

typedef struct dbcron_run_filter {
	const char *job;   /* NULL: every job */
	int state;         /* a dbcron_run_state, or 0: every state */
	int64_t since_ms;  /* fire_at at or after; -1: all */
	long page_size;    /* rows fetched per query; default 100 */
} dbcron_run_filter;

/* Every job, every state, all time, pages of 100. */
DBCRON_API void dbcron_run_filter_init(dbcron_run_filter *f);

typedef struct dbcron_run_iter dbcron_run_iter;

/*
 * Walk the run log newest first (fire_at, then job name, attempt, id), in
 * keyset pages: each page is one query for the rows strictly older than
 * the last row seen, so page N costs what page 1 does and runs written
 * meanwhile shift nothing.  cursor (may be NULL) is a dbcron_runs_cursor()
 * text of an earlier walk, or the HTTP API's next_cursor: the walk starts
 * after that row.  A malformed cursor is DBCRON_EINVAL.  f is copied (its
 * job name too).  The iterator borrows db, which must stay open and not be
 * used by another thread while the iterator is; free it with
 * dbcron_runs_free().  Rows carry no captured output (dbcron_run_get).
 */
DBCRON_API int dbcron_runs_open(dbcron_db *db, const dbcron_run_filter *f,
				const char *cursor, dbcron_run_iter **out,
				dbcron_err *err);
/*
 * The next row: DBCRON_OK with *run set, or DBCRON_OK with *run NULL at the
 * end.  *run belongs to the iterator and is valid until the next call.
 */
DBCRON_API int dbcron_runs_next(dbcron_run_iter *it, const dbcron_run **run,
				dbcron_err *err);
/* Where a new walk would resume: after the last row returned ("" before
 * the first).  Owned by the iterator, valid until the next call. */
DBCRON_API const char *dbcron_runs_cursor(const dbcron_run_iter *it);
DBCRON_API void dbcron_runs_free(dbcron_run_iter *it);

/* One run with its captured output into *out (the caller's, zeroed;
 * dbcron_run_clear).  DBCRON_ENOTFOUND when there is none. */
DBCRON_API int dbcron_run_get(dbcron_db *db, int64_t id, dbcron_run *out,
			      dbcron_err *err);

/* Cancel a run wherever it runs (`dbcron runs cancel`): one no node has
 * claimed ends DBCRON_RUN_CANCELLED now (*done true, may be NULL); a
 * claimed or running one gets a cancel request its node acts on within
 * about a heartbeat (*done false): not started, or stopped (a shell job's
 * process group; a handler through dbcron_handler_should_stop()), and
 * recorded CANCELLED, never retried.  DBCRON_ENOTFOUND for an unknown id,
 * DBCRON_EEXISTS for a run that already ended; neither writes anything. */
DBCRON_API int dbcron_run_cancel(dbcron_db *db, int64_t id, bool *done, dbcron_err *err);

/* ----------------------------------------------------- nodes, locks */

/* A row of the node registry, as `dbcron nodes` shows it. */
typedef struct dbcron_node_info {
	char *node_id;
	char *host;
	int pid;
	int workers;
	char *state; /* "alive", "dead", "stopped" */
	int64_t started_ms, heartbeat_ms, lease_until_ms; /* database clock */
	int64_t running; /* RUNNING runs it owns */
} dbcron_node_info;

/* Every registered node: *nodes is a new array the caller frees with
 * dbcron_nodes_free(*nodes, *n). */
DBCRON_API int dbcron_nodes_list(dbcron_db *db, dbcron_node_info **nodes, size_t *n,
				 dbcron_err *err);
DBCRON_API void dbcron_nodes_free(dbcron_node_info *nodes, size_t n);

/* Every lease lock (dbcron/lock.h), held or expired: *locks is a new
 * array the caller frees with dbcron_locks_free(*locks).  A lease is held
 * while until_ms >= dbcron_db_now_ms(). */
struct dbcron_lease;
DBCRON_API int dbcron_locks_list(dbcron_db *db, struct dbcron_lease **locks, size_t *n,
				 dbcron_err *err);
DBCRON_API void dbcron_locks_free(struct dbcron_lease *locks);

#ifdef __cplusplus
}
#endif
#endif
