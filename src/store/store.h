/*
 * The store: everything dbcron asks of a database, as one function per
 * operation.  Behind these functions is one claim protocol (the files
 * store_int.h names: guards, the fault seam, every algorithm and message)
 * over thin dialects (sqlite/, pg/, mysql/: connection, SQL text, error
 * classes, migrations; see dialect.h).  Callers never learn which database they have.
 *
 * Invariants the protocol keeps (docs/design.md):
 *  1 no duplicate fire: UNIQUE (job_id, fire_at, attempt) on runs; the
 *    claim inserts first attempts with ON CONFLICT DO NOTHING and only the
 *    rows it really inserted are handed to the caller.
 *  3 fencing: every change to a claimed run is
 *    "... WHERE id = ? AND claim_token = ? AND node = ?"; a refused write
 *    is reported per update, never silently retried.
 *  4 one clock: every timestamp written is the database's clock or a value
 *    the caller derived from it; store_now_ms() reads that clock.
 *  and every state written is checked against the run state machine
 *  (dbcron/run.h) before it reaches the database.
 *
 * Threading: a store handle is used by one thread at a time.  A node opens
 * one handle per thread that needs the database.  Listing callbacks must
 * not use the handle they were called from.
 */
#ifndef DBCRON_STORE_H
#define DBCRON_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

typedef struct store store;

/* What kind of database error a statement met, for counting
 * (store_count_errors): the error codes a dialect's classify() yields. */
typedef enum store_err_class {
	STORE_ERR_BUSY = 0,   /* DBCRON_EBUSY: locked, a deadlock, a serialization failure */
	STORE_ERR_CONN,       /* DBCRON_ECONN: the connection was lost or refused */
	STORE_ERR_CONSTRAINT, /* DBCRON_ECONSTRAINT */
	STORE_ERR_OTHER,      /* anything else a statement returned */
	STORE_ERR__COUNT
} store_err_class;
extern const char *const store_err_class_name[STORE_ERR__COUNT];

struct store_dialect;
struct store_conn;
struct store_faults;
struct store_scratch;

/* The longest actor kept (longer ones are cut at a character). */
#define STORE_ACTOR_MAX 256

/* A handle: one connection and what the protocol keeps with it. */
struct store {
	const struct store_dialect *d;
	struct store_conn *c;
	/* Statements executed through this handle (BEGIN and COMMIT
	 * included), for benchmarks and the statements-per-claim tests. */
	uint64_t stmt_count;
	struct store_faults *faults; /* NULL: no fault injected */
	struct store_scratch *scratch; /* reused batch buffers */
	/* NULL, or where every failed statement of this handle is counted by
	 * class (borrowed; relaxed adds, read by another thread) */
	atomic_ullong *err_counts;
	/* Who this handle's changes are by, for the audit trail (audit.c):
	 * "cli:USER", "http:TOKEN", "lib:PROGRAM"; "" reads as "unknown". */
	char actor[STORE_ACTOR_MAX];
	/* The action the next job put records ("add", "set", "apply"; a
	 * static string, NULL: "put"), set by the app just before the put. */
	const char *put_verb;
	/* The caps the next job put writes too (store_put_tags), NULL: none. */
	struct store_put_caps *put_caps;
	/* An outbox write (events) went out since store_events_written_take()
	 * last looked; a rolled-back one may leave it set (a wasted claim). */
	bool events_written;
};

/* Count this handle's failed statements into counts[STORE_ERR__COUNT]
 * (borrowed: must outlive the handle's use; NULL stops counting). */
void store_count_errors(store *s, atomic_ullong *counts);
/* For a process that owns its SQLite (the dbcron program, not a program
 * embedding libdbcron), called before anything else uses SQLite: its
 * memory statistics off.  Kept, they take one process-wide mutex on every
 * allocation and free inside SQLite, ~7 % of a node's samples draining
 * one-shot jobs (docs/benchmarks.md); nothing in dbcron reads them. */
void store_sqlite_own_process(void);

/* One fire the planner wants written while a job is claimed. */
typedef struct store_fire {
	int64_t fire_at;
	int64_t due_at;
	dbcron_run_state state; /* SCHEDULED (claimed by us), MISFIRED, SKIPPED */
	int64_t missed;
	const char *error; /* reason for MISFIRED/SKIPPED; may be NULL */
} store_fire;

/* What the planner decides for one due job. */
typedef struct store_plan {
	store_fire *fires; /* owned by the planner's ctx; valid until next call */
	size_t nfires;
	int64_t next_fire_at; /* -1: none; job keeps its row */
	const char *error; /* with an error return: why (planner-owned) */
} store_plan;

/*
 * The planner: core code (sched/plan.c) called by the backend, inside the
 * claim transaction, once per due job it locked.  Pure computation, no I/O.
 * now_ms is the database clock read by this claim; horizon_ms is absolute:
 * now_ms + req->horizon_ms_ahead (fires after it belong to a later claim).
 * Returns DBCRON_OK, DBCRON_ENOMEM (aborts the claim), or another error for
 * a job it cannot plan (out->error says why): that job is set aside
 * (jobs.set_aside, next_fire_at NULL) and the claim goes on without it.
 */
typedef int (*store_plan_fn)(void *ctx, const dbcron_job *job, int64_t now_ms,
			     int64_t horizon_ms, store_plan *out);

typedef struct store_claim_req {
	const char *node_id;
	const char *token; /* fresh for this cycle */
	int64_t horizon_ms_ahead; /* pre-read: claim what is due before now+this */
	int max; /* at most this many SCHEDULED runs handed back (backpressure) */
	store_plan_fn plan;
	void *plan_ctx;
	/* XXL-JOB's schedule lock: hold the lock row "dbcron:schedule" for the
	 * whole claim, so claimers take turns (the per-row claim lets them
	 * run side by side) */
	bool lock_row;
	/* Routing: with handlers not NULL, a handler job is claimed only when
	 * its handler is one of handlers[0..nhandlers) (what this process can
	 * run, built-ins included); commands always.  NULL: every job. */
	const char *const *handlers;
	size_t nhandlers;
	/* Pools (issue 23 item 5): the jobs this node runs on its slow pool,
	 * slow_jobs[0..nslow) (ids, borrowed).  The claim takes at most
	 * slow_max runs of those jobs, and max then bounds the runs of every
	 * other job; a slow_max of 0 leaves the slow jobs' fires and runs in
	 * the database for another node.  nslow 0: max bounds every job.
	 * both_max > 0 bounds the two together: the slow jobs' pass goes first
	 * and the other jobs get what it left, never less for the slow pool's
	 * budget alone (0: no joint bound). */
	const int64_t *slow_jobs;
	size_t nslow;
	int slow_max;
	int both_max;
} store_claim_req;

/* A run this node now owns, with a snapshot of its job. */
typedef struct store_claimed {
	dbcron_run run; /* state SCHEDULED, node and claim_token set */
	const dbcron_job *job; /* points into claim_result.jobs */
} store_claimed;

/* A job the claim could not plan or decode. */
typedef struct store_aside {
	int64_t job_id;
	char *name; /* may be NULL when the row did not decode */
	char *why;
} store_aside;

typedef struct store_claim_result {
	int64_t now_ms; /* database clock at the claim */
	store_claimed *runs;
	size_t nruns;
	dbcron_job *jobs; /* the jobs the runs refer to (deduplicated) */
	size_t njobs;
	size_t nterminal; /* MISFIRED/SKIPPED rows written, for stats */
	store_aside *aside; /* jobs this claim set aside, for the log */
	size_t naside;
} store_claim_result;

void store_claim_result_clear(store_claim_result *r);

/* Whether this handle wrote outbox rows (an outcome's, a claim's misfire,
 * a reap's abandoned run) since the last call; clears the flag.  The
 * node's db thread claims events at once when it did. */
bool store_events_written_take(store *s);

/*
 * One change to a run this node owns, applied in a batch.  Fenced by
 * (run_id, token, node).  When applied and retry_due_at >= 0, a new
 * SCHEDULED row with attempt + 1 and due_at = retry_due_at is inserted,
 * unclaimed, so any node may take it.  When applied and job_next_fire_at
 * >= 0 (AFTER jobs), jobs.next_fire_at of job_id is set to it, only if the
 * job's next_fire_at is NULL.
 */
typedef struct store_update {
	int64_t run_id;
	int64_t job_id;
	int64_t fire_at;
	int attempt;
	const char *token;
	dbcron_run_state state; /* RUNNING or a terminal state */
	int64_t started_ms;     /* -1 keep */
	int64_t finished_ms;    /* -1 keep */
	bool has_exit_code;
	int exit_code;
	const char *error;  /* may be NULL */
	const char *output; /* may be NULL */
	int64_t retry_due_at;     /* -1: no retry */
	int64_t job_next_fire_at; /* -1: leave */
	/* the outbox: an event of react_kind (model/target.h) for each of
	 * react_targets (one a line, borrowed; NULL: none), written in the
	 * outcome's transaction when the fence lets the outcome through */
	int react_kind;
	const char *react_targets;
	/* out: true when the fence let it through */
	bool applied;
	/* out: not written because it breaks the run state machine (a bad
	 * state, no token, or a chain of this run's updates in the batch that
	 * leaves a terminal state): a bug of the caller's, dropped so that the
	 * rest of the batch still goes out */
	bool invalid;
} store_update;

typedef struct store_node_info {
	const char *node_id;
	const char *incarnation; /* random per process start */
	const char *host;
	int pid;
	int workers;
	int64_t lease_ms;
	/* the handler names this process can run (built-ins included): a
	 * claim hands the node a handler job only when its name is here */
	const char *const *handlers;
	size_t nhandlers;
} store_node_info;

typedef struct store_node_row {
	char *node_id;
	char *host;
	int pid;
	int workers;
	char *state; /* "alive", "dead", "stopped" */
	int64_t started_ms, heartbeat_ms, lease_until;
	int64_t running; /* RUNNING runs it owns */
} store_node_row;

typedef struct store_run_filter {
	const char *job; /* NULL: all */
	int state;       /* 0: all */
	int64_t since_ms; /* -1: all; compares fire_at */
	long limit;       /* 0: no limit */
	/* Keyset paging: with keyset, only runs strictly after this one in the
	 * listing's newest-first order (fire_at, job_name, attempt, id); the
	 * listing returns the newest `limit` of those (oldest first, as ever). */
	bool keyset;
	int64_t before_fire_at;
	const char *before_job;
	int before_attempt;
	int64_t before_id;
} store_run_filter;

typedef struct store_lock_row {
	char *name;
	char *owner;
	int64_t since_ms, until_ms;
	int64_t fence;
} store_lock_row;

/* Callbacks for listings: return non-zero to stop early.  Rows are only
 * valid during the call. */
typedef int (*store_job_cb)(void *ctx, const dbcron_job *job);
typedef int (*store_run_cb)(void *ctx, const dbcron_run *run);
typedef int (*store_node_cb)(void *ctx, const store_node_row *node);
typedef int (*store_lock_cb)(void *ctx, const store_lock_row *lock);
/* A job's name, next fire (-1 none) and paused flag: what /metrics needs,
 * without decoding the whole definition. */
typedef struct store_job_brief {
	const char *name;
	int64_t next_fire_at;
	bool paused;
} store_job_brief;
typedef int (*store_brief_cb)(void *ctx, const store_job_brief *job);

/* How job_apply writes a batch of definitions (one transaction). */
typedef enum store_put_mode {
	STORE_PUT_CREATE = 1, /* DBCRON_EEXISTS if a name exists; all or none */
	STORE_PUT_UPSERT = 2, /* create or update by name */
} store_put_mode;



/*
 * The operations.  Each returns DBCRON_OK or a code with err filled.
 *
 * store_open: url "sqlite:PATH", "postgresql://..." or a libpq key=value
 *   string; does not create the schema.
 * store_migrate: create or upgrade the schema with numbered migrations;
 *   idempotent; from and to (may be NULL) report the versions.
 * store_check_schema: DBCRON_ESCHEMA when the schema is missing, older or
 *   newer than this binary.
 * store_now_ms: the database clock, epoch ms.
 *
 * Jobs.  store_job_put: validated jobs in one transaction.  New jobs and
 *   jobs whose schedule changed (model_same_schedule) get next_fire_at and
 *   anchor from the caller; others keep theirs, and their paused flag.
 *   prune (UPSERT only) deletes jobs whose names are not in the batch.
 *   Deleting a job keeps its runs; its unclaimed runs end ABANDONED.
 *   A name given twice is DBCRON_EINVAL.  jobs[i].id is set.  A job that
 *   goes from active to paused tells the nodes (as store_job_set_paused).
 * store_job_put_placed: the same, but each job is placed by place() against
 *   its stored row (NULL for a new job) as the put's transaction reads it,
 *   locked (issue 23 item 2): place sets paused and next_fire_at (the
 *   app's rule, model_jobdef_finish), or refuses with an error, which rolls
 *   everything back.  i is the job's index in jobs.
 * store_jobs_named: the stored jobs among names (any order), no lock.
 * store_job_get: DBCRON_ENOTFOUND when absent; out is filled, caller clears.
 * store_job_set_paused: resume sets next_fire_at to the given value.
 * store_job_trigger: a SCHEDULED, unclaimed attempt-1 run with fire_at =
 *   due_at = database now, bumped by 1 ms until unique.
 *
 * Nodes.  store_node_register: upsert the node row as alive with a fresh
 *   lease; DBCRON_EEXISTS while another incarnation of the id holds a live
 *   lease; runs left by an earlier, lapsed incarnation of the same node id
 *   are resolved first as reap does (pg_cron: orphans resolved at start-up).
 * store_node_heartbeat: renew the lease; DBCRON_EFENCED when the row is no
 *   longer ours.  *db_now out.
 * store_node_stop: hand back our unstarted SCHEDULED runs, mark stopped.
 * store_runs_release: hand back specific unstarted runs (fenced by token).
 * store_reap: mark nodes whose lease lapsed dead; their RUNNING runs, and
 *   SCHEDULED ones due before the lease ended (maybe started, the write
 *   lost), end ABANDONED and get what model_lost_followup() says; SCHEDULED
 *   ones due later become unclaimed.  *reaped = runs touched.
 *
 * The claim (docs/design.md "Coordination"): store_claim, then
 * store_apply for batched, fenced state changes (one transaction).
 * store_job_running: is a run of the job RUNNING on a live node other than
 *   except_run_id?
 *
 * Lease locks (seed 002).  store_lock_acquire: insert, or take over only an
 *   expired lease, in one statement; DBCRON_ELOCKED with *holder filled
 *   when someone else holds it.  renew and release are owner- and
 *   fence-checked: DBCRON_EFENCED when no longer ours.
 * store_log_run: append a finished run row (lock attempts, "lock:NAME");
 *   fire_at < 0 means database now; fire_at is bumped by 1 ms until unique;
 *   finished_ms < 0 means now.
 * store_prune_runs: delete terminal runs finished before cutoff.
 */
int store_migrate(store *s, int *from, int *to, dbcron_err *err);
int store_check_schema(store *s, dbcron_err *err);
int store_now_ms(store *s, int64_t *out, dbcron_err *err);
int store_job_put(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune, size_t *created, size_t *updated, size_t *deleted, dbcron_err *err);
typedef int (*store_put_place_fn)(void *ctx, size_t i, dbcron_job *job, const dbcron_job *prev,
				  int64_t now_ms, dbcron_err *err);
int store_job_put_placed(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune,
			 store_put_place_fn place, void *ctx, size_t *created, size_t *updated,
			 size_t *deleted, dbcron_err *err);
int store_job_get(store *s, const char *name, dbcron_job *out, dbcron_err *err);
int store_job_list(store *s, store_job_cb cb, void *ctx, dbcron_err *err);
int store_jobs_named(store *s, const char *const *names, size_t n, store_job_cb cb, void *ctx,
		     dbcron_err *err);
/* At most limit (>= 1) jobs whose names sort after `after` ("" or NULL:
 * from the first), by name in the database's order: a keyset page. */
int store_job_page(store *s, const char *after, long limit, store_job_cb cb, void *ctx,
		   dbcron_err *err);
/* The first limit jobs by name, each with the finish time of its
 * newest-fired succeeded run (-1: none) and what says whether it is
 * overdue (its silence, when it was made, paused). */
typedef struct store_last_ok {
	const char *name;
	int64_t finished_ms, max_silence_ms, created_ms;
	bool paused;
} store_last_ok;
typedef int (*store_last_ok_cb)(void *ctx, const store_last_ok *j);
int store_job_last_success(store *s, long limit, store_last_ok_cb cb, void *ctx,
			   dbcron_err *err);
/* A job's newest run by (fire_at, attempt) that is not SCHEDULED: what a
 * listing shows as its last run (a fire claimed ahead of its instant does
 * not hide the outcome of the one before). */
typedef struct store_last_run {
	int64_t job_id;
	int64_t run_id;
	int state;          /* dbcron_run_state */
	int64_t finished_ms; /* -1 while running */
} store_last_run;
typedef int (*store_last_run_cb)(void *ctx, const store_last_run *r);
/* The last run of each of the n jobs ids (a page of a listing), in one
 * statement whatever n; a job without one gets no call, the order is the
 * database's. */
int store_jobs_last_run(store *s, const int64_t *ids, size_t n, store_last_run_cb cb,
			void *ctx, dbcron_err *err);
/* store_job_page of the jobs whose name holds text (a byte substring,
 * in the database's comparison: MariaDB's collation ignores case). */
int store_job_search(store *s, const char *after, long limit, const char *text,
		     store_job_cb cb, void *ctx, dbcron_err *err);
/* One cell of a job's strip: a run that is not SCHEDULED. */
typedef struct store_strip_run {
	int64_t job_id;
	int64_t run_id;
	int state; /* dbcron_run_state */
	int64_t fire_at;
	int attempt;
} store_strip_run;
typedef int (*store_strip_cb)(void *ctx, const store_strip_run *r);
/* The newest limit (>= 1) runs that are not SCHEDULED of each of the n
 * job ids, in one statement; the order of the rows is the database's. */
int store_jobs_strip(store *s, const int64_t *ids, size_t n, long limit, store_strip_cb cb,
		     void *ctx, dbcron_err *err);
/* Every job's store_job_brief, by name. */
int store_job_briefs(store *s, store_brief_cb cb, void *ctx, dbcron_err *err);
int store_job_set_paused(store *s, const char *name, bool paused, int64_t next_fire_at, dbcron_err *err);
/* A job others need (--needs) is refused (DBCRON_ECONSTRAINT, naming them);
 * store_job_delete_force with force sets them aside and detaches them,
 * their names into detached (may be NULL; "" when none). */
int store_job_delete(store *s, const char *name, dbcron_err *err);
int store_job_delete_force(store *s, const char *name, bool force, char *detached, size_t dlen,
			   dbcron_err *err);

int store_job_trigger(store *s, const char *name, int64_t *run_id, int64_t *fire_at, dbcron_err *err);
/* store_job_trigger with the run's parameters (a JSON object text, NULL:
 * none), written on its row: model/params.h checks them first. */
int store_job_trigger_params(store *s, const char *name, const char *params, int64_t *run_id,
			     int64_t *fire_at, dbcron_err *err);
/* Backfill (issue 28 item 5, store/backfill.c): one unclaimed run of
 * kind backfill per instant of at[0..n) (ascending, each once), due now,
 * none where the instant has a first attempt already.  job_id (> 0) is the
 * id the caller planned for: another job by that name is DBCRON_ENOTFOUND.
 * max_running > 0 caps the job's backfill runs held at once, cluster-wide,
 * checked by the claim.  from_ms, to_ms go to the audit trail only. */
typedef struct store_backfill_req {
	const char *name;
	int64_t job_id;
	const int64_t *at;
	size_t n;
	int max_running;
	bool dry_run; /* write nothing; only fill taken */
	int64_t from_ms, to_ms;
} store_backfill_req;
/* *created: the runs this call made (0 for a dry run); taken (may be NULL,
 * n of them): the instants that have a run (only filled by a dry run). */
int store_job_backfill(store *s, const store_backfill_req *q, int64_t *created, bool *taken,
		       dbcron_err *err);
/* Exclusion calendars (store/calendar.c, issue 28 item 7).  days: sorted
 * "YYYY-MM-DD" lines, checked by the caller.  add: DBCRON_EEXISTS when the
 * name is taken; get and delete: DBCRON_ENOTFOUND; delete: a calendar a job
 * excludes is DBCRON_ECONSTRAINT, naming the jobs. */
typedef struct store_calendar {
	char *name, *days;
	int64_t created_ms;
} store_calendar;
typedef int (*store_calendar_cb)(void *ctx, const store_calendar *c);
int store_calendar_add(store *s, const char *name, const char *days, dbcron_err *err);
/* *out is the caller's to clear (store_calendar_clear) */
int store_calendar_get(store *s, const char *name, store_calendar *out, dbcron_err *err);
void store_calendar_clear(store_calendar *c);
/* every calendar by name, to cb (non-zero: stop); c is only lent */
int store_calendar_list(store *s, store_calendar_cb cb, void *ctx, dbcron_err *err);
int store_calendar_delete(store *s, const char *name, dbcron_err *err);
/* One transaction: the job from is named to, and its runs with it (the
 * run log keeps pointing at the job).  DBCRON_ENOTFOUND for from,
 * DBCRON_EEXISTS when to is taken.  Touches every run row of the job. */
int store_job_rename(store *s, const char *from, const char *to, dbcron_err *err);
int store_node_register(store *s, const store_node_info *n, dbcron_err *err);

/* Every handler name some live node registered (alive, lease not over by
 * the database's clock), sorted, each once: what a handler job needs for a
 * node to claim it. */
typedef int (*store_name_cb)(void *ctx, const char *name);
/* The names of the jobs that need job name (--needs), by name. */
int store_job_needed_by(store *s, const char *name, store_name_cb cb, void *ctx,
			dbcron_err *err);
int store_handlers_live(store *s, store_name_cb cb, void *ctx, dbcron_err *err);
int store_node_heartbeat(store *s, const char *node_id, const char *incarnation, int64_t lease_ms, int64_t *db_now, dbcron_err *err);
/* The node's heartbeat: also reports seen_gen (the jobs generation it has
 * acted on; < 0 leaves it) and reads the current one into *jobs_gen. */
int store_node_beat(store *s, const char *node_id, const char *incarnation, int64_t lease_ms, int64_t seen_gen, int64_t *db_now, int64_t *jobs_gen, dbcron_err *err);
/* Routing: handlers registered after the node did, added to its
 * node_handlers rows (names it has are kept) in one transaction with a
 * heartbeat, so they are written only while this incarnation holds the
 * lease: DBCRON_EFENCED, nothing written, when it does not. */
int store_node_handlers_add(store *s, const char *node_id, const char *incarnation,
			    int64_t lease_ms, const char *const *handlers, size_t n,
			    int64_t *db_now, dbcron_err *err);
/* (id, paused) of each of ids that still exists. */
typedef int (*store_job_state_cb)(void *ctx, int64_t job_id, bool paused);
int store_jobs_state(store *s, const int64_t *ids, size_t n, store_job_state_cb cb, void *ctx, dbcron_err *err);
/* After a pause or delete, until every live node has seen it (see nodes.c). */
int store_nodes_wait_seen(store *s, int64_t timeout_ms, dbcron_err *err);
int store_node_stop(store *s, const char *node_id, const char *incarnation, dbcron_err *err);
int store_runs_release(store *s, const char *node_id, const int64_t *ids, const char *const *tokens, size_t n, dbcron_err *err);
/* A claim whose COMMIT reply was lost may have committed: its SCHEDULED
 * runs (node_id, token) go back to the pool, to be claimed again. */
int store_runs_release_claim(store *s, const char *node_id, const char *token, size_t *released, dbcron_err *err);
int store_reap(store *s, size_t *reaped, dbcron_err *err);
/* reap of leases that ended before `before` (db ms; < 0: the database's
 * now): a node passes its previous successful heartbeat (nodes.c). */
int store_reap_before(store *s, int64_t before, size_t *reaped, dbcron_err *err);
/* A scheduler node's handle: lock and statement waits bounded by the lease
 * (dialect.h tune). */
int store_tune_for_node(store *s, int64_t lease_ms, dbcron_err *err);
/* Live runs held by nodes that are stopped or dead, resolved as reap does. */
int store_reap_orphans(store *s, size_t *resolved, dbcron_err *err);
int store_claim(store *s, const store_claim_req *req, store_claim_result *out, dbcron_err *err);
int store_apply(store *s, const char *node_id, store_update *ups, size_t n, dbcron_err *err);
int store_job_running(store *s, int64_t job_id, int64_t except_run_id, bool *running, dbcron_err *err);
int store_runs_list(store *s, const store_run_filter *f, store_run_cb cb, void *ctx, dbcron_err *err);
/* The runs of job (NULL: every job) fired at or after since_ms, in the
 * database's order, each with only id, job_name, fire_at, state, node,
 * started_ms and finished_ms set (-1 for a NULL time); the strings are the
 * row's, valid during the call.  The charts' one read (app_stats). */
int store_runs_window(store *s, const char *job, int64_t since_ms, store_run_cb cb, void *ctx,
		      dbcron_err *err);
/* One run by id into *run (owned by the caller: dbcron_run_clear);
 * DBCRON_ENOTFOUND when there is none. */
/* At most limit (>= 1) runs with id > after_id (of job, NULL: any), by id:
 * the rows created since a follower last looked. */
int store_runs_after_id(store *s, int64_t after_id, const char *job, long limit,
			store_run_cb cb, void *ctx, dbcron_err *err);
int store_run_get(store *s, int64_t id, dbcron_run *run, dbcron_err *err);
/*
 * Cancel (issue 27 item 3).  store_run_cancel: a SCHEDULED run no node
 * holds ends CANCELLED at once (*done true); a live run some node holds
 * gets a cancel request (its first time kept) that the node acts on at its
 * next heartbeat (*done false).  *run (may be NULL) is the row after the
 * write, owned by the caller.  DBCRON_ENOTFOUND for no such run,
 * DBCRON_EEXISTS "already ended" for a terminal one; neither writes.
 */
int store_run_cancel(store *s, int64_t id, bool *done, dbcron_run *run, dbcron_err *err);
/* The node's poll at its heartbeat: runs handed back after a request end
 * CANCELLED (*freed, may be NULL, counts them), then cb(ctx, run id) for
 * each live run of node_id with a cancel request. */
typedef int (*store_id_cb)(void *ctx, int64_t id);
int store_runs_cancel_asked(store *s, const char *node_id, store_id_cb cb, void *ctx,
			    int64_t *freed, dbcron_err *err);
int store_nodes_list(store *s, store_node_cb cb, void *ctx, dbcron_err *err);
/*
 * Delete the rows of stopped and dead nodes whose last heartbeat is more
 * than older_ms before the database's now and that hold no run still to
 * resolve (SCHEDULED or RUNNING: reap or the orphan sweep resolves those
 * first).  Alive nodes are never touched.  *deleted counts the rows.
 * DBCRON_EINVAL for older_ms < 0.
 */
int store_nodes_prune(store *s, int64_t older_ms, int64_t *deleted, dbcron_err *err);
int store_lock_acquire(store *s, const char *name, const char *owner, int64_t ttl_ms, int64_t *fence, int64_t *until_ms, store_lock_row *holder, dbcron_err *err);
int store_lock_renew(store *s, const char *name, const char *owner, int64_t fence, int64_t ttl_ms, int64_t *until_ms, dbcron_err *err);
int store_lock_release(store *s, const char *name, const char *owner, int64_t fence, dbcron_err *err);
int store_lock_list(store *s, store_lock_cb cb, void *ctx, dbcron_err *err);

/*
 * Concurrency caps (issue 28 item 3, caps.c): a cap per tag.  store_tag_set
 * makes or changes tag name's cap (DBCRON_EINVAL for a bad name or a cap
 * out of 0..MODEL_TAG_CAP_MAX); store_tag_delete drops it (*deleted false
 * when there was none); store_tags_list hands each capped tag, by name,
 * with its live runs and the jobs carrying it; the row's strings are
 * valid during the callback only.
 */
typedef struct store_tag_row {
	char *name;
	int max_running;
	int64_t running, jobs;
} store_tag_row;
typedef int (*store_tag_cb)(void *ctx, const store_tag_row *tag);
int store_tag_set(store *s, const char *name, int max_running, dbcron_err *err);
int store_tag_delete(store *s, const char *name, bool *deleted, dbcron_err *err);
/* How many jobs carry tag name (--tag). */
int store_tag_used(store *s, const char *name, int64_t *jobs, dbcron_err *err);
int store_tags_list(store *s, store_tag_cb cb, void *ctx, dbcron_err *err);

/*
 * Caps written with jobs (a `job apply` document's "tags"): the next
 * store_job_put_placed on s also sets each cap of c->v[0..n) in its
 * transaction, after the jobs, so a tag only the batch's new jobs carry
 * is known, and a cap on a tag no job carries then refuses the whole
 * put; with c->prune it deletes every other cap.  Each cap that changed
 * is an audit row; c->set and c->deleted count them once the put
 * committed.  c is borrowed until that put returns, and is that put's
 * alone.
 */
typedef struct store_tag_cap {
	const char *name;
	int max_running;
} store_tag_cap;
typedef struct store_put_caps {
	const store_tag_cap *v;
	size_t n;
	bool prune;
	size_t set, deleted; /* out */
} store_put_caps;
void store_put_tags(store *s, store_put_caps *c);

/*
 * The outbox (issue 26, docs/reactions.md; events.c).  An event row is
 * written by store_apply in its outcome's transaction; kind and state are
 * model/target.h's numbers.  Strings are owned by the row and valid during
 * the callback only.
 */
typedef struct store_event {
	int64_t id, job_id, run_id;
	char *job_name, *target, *last_error, *node, *claim_token;
	int kind, state, attempts;
	int64_t next_at, created_ms, finished_ms; /* finished_ms -1: not yet */
} store_event;
typedef int (*store_event_cb)(void *ctx, const store_event *ev);

/* The newest limit events (of job, NULL any; in state, 0 any), newest
 * first. */
int store_events_list(store *s, const char *job, int state, long limit, store_event_cb cb,
		      void *ctx, dbcron_err *err);
/* One transaction: at most limit events become DELIVERING for node under
 * token (fresh per claim): pending ones due by the database's now and
 * those claimed by a node that is not alive under its lease (its delivery
 * is handed over); each to cb, with attempts already counting this one. */
int store_events_claim(store *s, const char *node, const char *token, long limit,
		       store_event_cb cb, void *ctx, dbcron_err *err);
/* The events still DELIVERING under token, each to cb: a claim whose
 * reply was lost may have committed them. */
int store_events_claimed(store *s, const char *token, store_event_cb cb, void *ctx,
			 dbcron_err *err);
/* The end of one delivery, fenced on (id, node, token, DELIVERING):
 * state DELIVERED or FAILED (finished now), or PENDING again at next_at
 * (a retry; the claim is let go).  *applied false when it was fenced. */
int store_event_finish(store *s, const store_event *ev, const char *node, int state,
		       int64_t next_at, const char *error, bool *applied, dbcron_err *err);
/* Many ends in one transaction (a commit per batch, not per event), each
 * as store_event_finish; a retry's next_at may instead be retry_in_ms
 * after the database's now.  All or none: on an error none is written. */
typedef struct store_event_end {
	const store_event *ev;
	int state;
	int64_t next_at;     /* PENDING: when; -1: now + retry_in_ms */
	int64_t retry_in_ms; /* with next_at -1; 0: now */
	const char *error;   /* may be NULL */
	bool applied;        /* out: false when fenced */
} store_event_end;
int store_events_finish(store *s, const char *node, store_event_end *ends, size_t n,
			dbcron_err *err);
/* Overdue (issue 26 item 1): one query finds every job silent past its
 * max_silence_ms (no success since its last one, or since it was made)
 * with no event for that silent period yet; when there are some, one
 * transaction writes one event per on_overdue target for the period.  The period is the event's run_id: the last
 * success's run id, or -job id before any; UNIQUE(run_id, kind, target)
 * makes it once per period however many nodes check at once.  *raised:
 * the events written. */
int store_overdue_raise(store *s, size_t *raised, dbcron_err *err);
int store_log_run(store *s, const dbcron_run *run, dbcron_err *err);
int store_prune_runs(store *s, int64_t cutoff_ms, int64_t *deleted, dbcron_err *err);
/* One batch of store_prune_runs: at most `limit` runs, the oldest first,
 * in one short statement (no lock held for the whole log). */
#define STORE_PRUNE_BATCH 5000
int store_prune_runs_some(store *s, int64_t cutoff_ms, int64_t limit, int64_t *deleted, dbcron_err *err);
/*
 * The audit trail (issue 29 item 2, audit.c).  Every change of a job
 * (put, pause, resume, delete, rename, trigger) and a node's stop writes
 * one row per job it changed, in the change's own transaction: a change
 * that rolls back leaves no row, a row never outlives its change.
 * store_set_actor: who the handle's later changes are by (copied, cut to
 * STORE_ACTOR_MAX - 1 bytes at a character; NULL or "": "unknown").
 * A node's stop is always "node:NODE_ID", whoever holds the handle.
 * store_audit_verb: the action the handle's next job puts record (a
 * static string; NULL: "put").
 */
void store_set_actor(store *s, const char *actor);
const char *store_actor(const store *s);
void store_audit_verb(store *s, const char *verb);
/* One row of the trail; valid only during the callback. */
typedef struct store_audit_row {
	int64_t id, at_ms; /* at_ms: the database clock at the change */
	const char *actor, *action;
	const char *job;    /* NULL: a change of no one job */
	const char *detail; /* a JSON object: "changes": {key: {before, after}}, ... */
} store_audit_row;
typedef int (*store_audit_cb)(void *ctx, const store_audit_row *row);
typedef struct store_audit_filter {
	const char *job;  /* NULL: every row */
	int64_t since_ms; /* -1: all; compares at_ms */
	long limit;       /* 0: no limit; else the newest limit rows */
} store_audit_filter;
/* The rows f lets through, oldest first. */
int store_audit_list(store *s, const store_audit_filter *f, store_audit_cb cb, void *ctx,
		     dbcron_err *err);
/* Retention: at most limit audit rows older than cutoff, the oldest first,
 * in one short statement (as store_prune_runs_some). */
int store_prune_audit_some(store *s, int64_t cutoff_ms, int64_t limit, int64_t *deleted,
			   dbcron_err *err);

/* The backend's name: "sqlite", "postgresql". */
const char *store_name(const store *s);
/* The local file that holds the database (SQLite), or NULL (a server).
 * Owned by s. */
const char *store_file(const store *s);
/* How many times the handle connected again since it was opened (0 for a
 * database without a connection: SQLite). */
unsigned long store_reconnects(const store *s);

int store_open(const char *url, store **out, dbcron_err *err);
/* store_open's flags. */
#define STORE_OPEN_NOCREATE 1u /* a SQLite file that is not there is an error, not made */
/* store_open with flags (STORE_OPEN_*); store_open is flags 0. */
int store_open_flags(const char *url, unsigned flags, store **out, dbcron_err *err);

/*
 * The database URL kept in the file at path: one line, at most 64 KiB,
 * blanks around it dropped.  *url is a new string the caller frees (and
 * should wipe: it may hold a password).  Errors say why without the path
 * or any of the content ("more than one line ..."), for the caller to
 * prefix: DBCRON_EIO (with strerror), DBCRON_EINVAL, DBCRON_ENOMEM.  The
 * caller also adds path to the secrets a job is never handed
 * (runas_secret_file_add).
 */
int store_url_file_read(const char *path, char **url, dbcron_err *err);
void store_close(store *s);

/*
 * The fault seam (SQLite's os.c is the model): tests make chosen statements
 * fail on purpose.  It costs one branch per statement, so the binary under
 * test is the binary users run.  A fault matches statement `stmt` (an id of
 * stmt.h, or -1 for any); it fires on the nth match from now (1-based; 0:
 * on every match) and at most `times` times (0: no limit).
 *   BUSY, CONN, CONSTRAINT: the statement is not sent; the call fails with
 *     DBCRON_EBUSY, DBCRON_ECONN, DBCRON_ECONSTRAINT.
 *   REPLY_LOST: the statement runs (a COMMIT commits), then the call fails
 *     with DBCRON_ECONN as when the reply never arrived.
 *   STALL: the statement runs after stall_ms.
 * A fault with a `file` applies only while that file exists (statements
 * made meanwhile are the only ones counted): a test cuts one node off the
 * database at a moment of its choosing, and lets it back, from outside.
 * In a build configured with DBCRON_FAULT_SEAM=ON (the test builds only),
 * DBCRON_TEST_FAULTS in the environment gives every handle opened faults:
 * "stmt=commit,kind=reply_lost,nth=3,times=1;stmt=any,kind=stall,stall=500",
 * "stmt=any,kind=conn,times=0,file=/tmp/t/cut".  Other builds ignore it.
 */
typedef enum store_fault_kind {
	STORE_FAULT_BUSY = 1,
	STORE_FAULT_CONN = 2,
	STORE_FAULT_REPLY_LOST = 3,
	STORE_FAULT_CONSTRAINT = 4,
	STORE_FAULT_STALL = 5,
} store_fault_kind;

typedef struct store_fault {
	int stmt;
	long nth;
	long times;
	store_fault_kind kind;
	int64_t stall_ms;
	char file[160]; /* "": always */
} store_fault;

/* At most 8 faults per handle; DBCRON_EINVAL past that or when f is bad. */
int store_fault_add(store *s, const store_fault *f, dbcron_err *err);
/* Parse the DBCRON_TEST_FAULTS form and add each. */
int store_fault_add_spec(store *s, const char *spec, dbcron_err *err);
void store_fault_clear(store *s);
/* The DBCRON_TEST_FAULTS spec store_open() arms every handle with: NULL in
 * a build without DBCRON_FAULT_SEAM, or when the variable is unset or
 * empty.  Points into the environment. */
const char *store_fault_env(void);
/* How many statements the faults have hit so far. */
long store_fault_hits(const store *s);
void store_lock_row_clear(store_lock_row *r);
void store_node_row_clear(store_node_row *r);

#endif
