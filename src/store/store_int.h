/*
 * Private to src/store/: what the store's files share.  The store is one
 * claim protocol over thin dialects (dialect.h): every algorithm (the
 * claim, batched apply, reaping lost nodes, node registration and stop, job
 * put with the keep-the-schedule rule, the bump-until-unique loops, lease
 * locks, the run log, every guard and message) is written once here, by
 * concern, and a dialect only runs statements by id; nothing asks which
 * database it is, only what the dialect can do (caps).
 *
 * The rooms, each with what it owns and keeps at its top:
 *   seam.c    every statement through one door: the fault seam (fault.c),
 *             counting, transactions, the clock, rows to callbacks
 *   store.c   the handle: dialect table, open/close, schema
 *   rows.c    rows <-> jobs and runs, the argv codec, batches, names, and
 *             what the dialects share (they call only rows.c and url.c)
 *   url.c     the database URL: password masking, the URL file
 *   jobput.c  job definitions written (the keep-the-schedule rule)
 *   jobs.c    one job read or changed, the job listings
 *   claim.c   the claim          apply.c   run outcomes (fenced)
 *   nodes.c   register, heartbeat, stop, hand-back, reap
 *   locks.c   lease locks        runlog.c  logged runs, run listings, prune
 * The arrows go one way: every operation file calls seam.c and rows.c;
 * nodes.c reads job rows through claim.c's reader; claim.c writes through
 * apply.c's row shape; nothing calls back into an operation file.
 *
 * Invariants every file keeps (docs/design.md):
 *  1 no duplicate fire: fires, retries, triggers and logged runs are
 *    inserted ON CONFLICT DO NOTHING and only rows the insert returned are
 *    handed out; a clash on a trigger or a logged run moves 1 ms on.
 *  2 no silent loss: runs of lost nodes go back to the pool or end
 *    ABANDONED with a retry by model_run_followup(); runs of deleted jobs
 *    end ABANDONED "job deleted".
 *  3 fencing: every change to a claimed run is matched on (id, token,
 *    node) by the statement; refused changes come back as not applied.
 *  4 one clock: every time comes from the database (ST_NOW or a statement's
 *    own clock) or from the caller, who read it there.
 *  5 backpressure: the claim hands out at most req->max runs, and of the
 *    jobs the node runs on its slow pool at most req->slow_max.
 *  Every state written is checked against the run state machine
 *  (dbcron_run_transition_ok) first; a write that would leave a terminal
 *  state is refused as DBCRON_EINTERNAL before anything is sent.
 *
 * Statement count per call is constant, never per row: rows travel as one
 * batch parameter per statement.
 */
#ifndef DBCRON_STORE_INT_H
#define DBCRON_STORE_INT_H

#include <jansson.h>

#include "store/dialect.h"
#include "store/store.h"

#define STORE_CLEAN_PARAMS 8
#define STORE_MAX_PARAMS 48

/* What a handle keeps between statements (seam.c; store.c makes it). */
struct store_scratch {
	store_batch b[6];
	/* cleaned copies of scalar text parameters (store__exec) */
	store_text clean[STORE_CLEAN_PARAMS];
};

/* ---- seam.c: every statement ---- */

/* Run statement id through the fault seam; counts one statement. */
int store__exec(store *s, int id, const store_param *p, int np, dbcron_err *err);
int store__next(store *s, dbcron_err *err);
void store__reset(store *s);
/* A statement whose rows do not matter; *changes (may be NULL) out. */
int store__run(store *s, int id, const store_param *p, int np, int64_t *changes,
	       dbcron_err *err);
/* Run and step once: 1 a row is current (caller resets), 0 none, < 0. */
int store__row(store *s, int id, const store_param *p, int np, dbcron_err *err);
/* The listings: one() reads the current row, hands it to the caller's
 * callback and frees it, setting *stop when the callback asked to stop. */
typedef int (*store__row_fn)(store *s, void *arg, bool *stop, dbcron_err *err);
int store__each_row(store *s, int id, const store_param *p, int np, store__row_fn one,
		    void *arg, dbcron_err *err);
/* The id of the job called name, inside the caller's transaction; *found
 * false (and *id untouched) when there is none (jobs.c). */
int store__job_id_of(store *s, const char *name, int64_t *id, bool *found, dbcron_err *err);
/* The same for a listing of names (column 0), handed to cb until it
 * returns non-zero. */
int store__each_name(store *s, int id, const store_param *p, int np, store_name_cb cb,
		     void *ctx, dbcron_err *err);
/* Column c of the current row; NULL reads as 0 (store__i64) or -1. */
static inline int64_t store__i64(store *s, int c) { return s->d->col_i64(s->c, c); }
static inline int64_t store__i64n(store *s, int c)
{
	return s->d->col_null(s->c, c) ? -1 : s->d->col_i64(s->c, c);
}
int store__tx_begin(store *s, dbcron_err *err);
int store__tx_commit(store *s, dbcron_err *err);
/* Ends the open statement and rolls back an open transaction. */
void store__tx_rollback(store *s);
/* The database clock, epoch ms (invariant 4). */
int store__db_now(store *s, int64_t *now, dbcron_err *err);
/* The handle's reused batch k (< 6), emptied for ncols of cols. */
store_batch *store__scratch(store *s, int k, int ncols, const store_bcol *cols);
/* DBCRON_ENOMEM, "out of memory in <where>". */
int store__oom(dbcron_err *err, const char *where);
/* Run insert statement id (returning the new id) with p[fire_idx] (and
 * p[due_idx] when >= 0) set to *fire_at, moving 1 ms on while the fire time
 * is taken.  Invariant 1 is the statement's ON CONFLICT DO NOTHING. */
int store__insert_bumped(store *s, int id, store_param *p, int np, int fire_idx, int due_idx,
			 int64_t *fire_at, int64_t *new_id, dbcron_err *err);
/* Batch column lists several statements share: names, ids, id pairs. */
extern const store_bcol store__names_cols[1];
extern const store_bcol store__ids_cols[1];
extern const store_bcol store__pair_cols[2];

/* ---- caps.c: the claim's slots per capped tag (issue 28 item 3) ---- */

typedef struct store_cap {
	char name[65];  /* MODEL_TAG_MAX + 1 */
	int max;        /* max_running; -1: the tag has no cap */
	int free;       /* slots left for this claim */
	bool locked;    /* this claim holds the tag's row */
} store_cap;

typedef struct store_caps {
	store_cap *v;
	size_t n, cap;
} store_caps;

/* The tags of jobs[0..n) not yet in c: read, the capped ones locked
 * (SKIP LOCKED) and counted, inside the claim's transaction. */
int store__caps_load(store *s, store_caps *c, const dbcron_job *jobs, size_t n,
		     dbcron_err *err);
/* A capped tag of j with no slot left for this claim (one another claim
 * holds has none), or NULL: j may have one more live run. */
const store_cap *store__caps_full(const store_caps *c, const dbcron_job *j);
/* One run of j handed out: a slot of each of its capped tags taken. */
void store__caps_take(store_caps *c, const dbcron_job *j);
void store__caps_free(store_caps *c);

/* ---- rows.c: rows, the argv codec ---- */


/* The current row's STORE_JOB_COLS from column c0 -> job (initialised
 * here, cleared by the caller; cleared again on failure). */
int store__read_job(store *s, int c0, dbcron_job *job, dbcron_err *err);
/* The same from column 0 for the operator's views and a put over the row:
 * a row that does not decode comes back set aside (only ENOMEM fails). */
int store__read_job_lenient(store *s, dbcron_job *job, dbcron_err *err);
/* The current row's STORE_RUN_COLS -> run (zeroed here, cleared by the
 * caller). */
int store__read_run(store *s, dbcron_run *run, dbcron_err *err);

/* argv <-> its stored form, a JSON array of strings.  encode: *out is NULL
 * for a job without argv, else owned by the caller; DBCRON_EINVAL names the
 * argument that is not valid UTF-8.  decode: every element a string. */
/* ---- needs.c: fan-in, inside the caller's transaction ---- */

/* After a job write: the edges of the NEEDS jobs written, edges of jobs
 * gone dropped; an unknown needed job, one the write deleted, a cycle:
 * an error (the caller rolls back). */
int store__needs_put(store *s, const dbcron_job *jobs, size_t n, dbcron_err *err);
/* Before job name (id) is deleted or renamed: DBCRON_ECONSTRAINT naming what
 * needs it, or with force those set aside and detached, their names into
 * detached (NULL: a rename, which has no force). */
int store__needs_unlink(store *s, const char *name, int64_t id, bool force, char *detached,
			size_t dlen, dbcron_err *err);
/* The jobs of ok_jobs had a run end SUCCEEDED: mark their dependents'
 * needs and fire (a SCHEDULED run at now) each whose set is complete. */
int store__needs_fanin(store *s, const int64_t *ok_jobs, size_t n, dbcron_err *err);

int store__argv_encode(const dbcron_job *job, char **out, dbcron_err *err);
int store__argv_decode(const char *text, dbcron_job *job, dbcron_err *err);
/* The job's env ("KEY=VALUE" strings) as the same kind of array; NULL
 * when it has none.  Read back by store__read_job. */
int store__env_encode(const dbcron_job *job, char **out, dbcron_err *err);

/* ---- audit.c: the audit trail, inside the caller's transaction ----
 * A change collects its rows (begin, then add or job), writes them all in
 * one statement (write) before its COMMIT, and frees what they borrowed
 * (free, on every path).  The rows live in the handle's scratch batch 5:
 * nothing a change calls between begin and write uses batch 5. */
typedef struct store_audit {
	store_batch *b;  /* [action, job, detail] */
	char **owned;    /* the texts b borrows */
	size_t n, cap;
	bool oom;
} store_audit;
void store__audit_begin(store *s, store_audit *a);
/* One row: detail is stolen (NULL: {}); out of memory is a->oom, which
 * write reports. */
void store__audit_add(store_audit *a, const char *action, const char *job, json_t *detail);
/* The row of a job written, from before (NULL: a new job) to after (NULL:
 * deleted): "changes" holds each key of the definition that differs
 * (model_job_diff; every key of a new or deleted job) as {"before": ..,
 * "after": ..}, secrets masked (store__audit_redact); extra (stolen, may
 * be NULL) adds its keys to the detail. */
void store__audit_job(store_audit *a, const char *action, const char *job,
		      const dbcron_job *before, const dbcron_job *after, json_t *extra);
/* The one secrets rule of the trail: a definition's JSON with every env
 * value replaced by "***" (the names stay) and every other string passed
 * through the URL masker (store_mask_url: the passwords of URLs and
 * conninfo, "password=" values).  Changes def in place. */
void store__audit_redact(json_t *def);
/* The rows as one statement, by actor (NULL: the handle's); none when
 * there are no rows; DBCRON_ENOMEM when a row could not be made. */
int store__audit_write(store *s, store_audit *a, const char *actor, dbcron_err *err);
void store__audit_free(store_audit *a);
/* tag name's cap set to max_running in the caller's transaction, with its
 * audit row into a (caps.c): refused for a tag no job carries. */
int store__tag_set_in(store *s, store_audit *a, const char *name, int max_running,
		      bool *changed, dbcron_err *err);
/* The caps of a put (store_put_tags) written in its transaction. */
int store__caps_put(store *s, store_audit *a, store_put_caps *c, dbcron_err *err);

/* ---- fault.c: the fault seam, before sending statement id and after ---- */
int store__fault_before(store *s, int id, dbcron_err *err);
int store__fault_after(store *s, int id, dbcron_err *err);

/* ---- claim.c: read by nodes.c's reap too ---- */

/* Every job row of the current statement (JOB_COLS from column c0; rows
 * whose id column is NULL are skipped) into out->jobs, a row that does not
 * decode set aside; *now (may be NULL) from column 0 of the last row.
 * Resets. */
int store__read_jobs_into(store *s, int c0, store_claim_result *out, size_t *cap,
			  int64_t *now, dbcron_err *err);
/* out->jobs sorted by id (store__job_id_cmp): the job of that id or NULL. */
const dbcron_job *store__find_job(const store_claim_result *r, int64_t id);
int store__job_id_cmp(const void *a, const void *b);

/* ---- apply.c: the outbox's rows, written by the claim and the reap too ----
 * An outcome's events (issue 26) go out in the outcome's transaction:
 * begin on a scratch slot the caller leaves alone until write, add one
 * row per target of a run's kind (kind 0 or targets NULL: none), write
 * before the COMMIT (ST_EVENTS_INSERT; UNIQUE(run_id, kind, target)
 * makes a repeat write nothing), free on every path. */
typedef struct store_outbox {
	store_batch *b; /* [run_id, kind, target] */
	char **owned;   /* the targets b borrows */
	size_t n, cap;
	bool oom;
} store_outbox;
void store__outbox_begin(store *s, store_outbox *o, int slot);
void store__outbox_add(store_outbox *o, int64_t run_id, int kind, const char *targets);
/* at now (< 0: the database's); out of memory reported here */
int store__outbox_write(store *s, store_outbox *o, int64_t now, dbcron_err *err);
void store__outbox_free(store_outbox *o);

/* ---- apply.c: the row of ST_RUNS_APPLY, written by the claim too ---- */

/* The run, its fence, what it becomes, and the last live state it may be
 * found in (apply.c); the definition's count must match. */
#define STORE_APPLY_NCOLS 10
extern const store_bcol store__apply_cols[STORE_APPLY_NCOLS];
/* The `live` cell for a write of state `to`. */
int64_t store__apply_live(dbcron_run_state to);

#endif
