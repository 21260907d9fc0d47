/*
 * The store interface: everything dbcron asks of a database, as a versioned
 * const table of function pointers (SQLite's sqlite3_io_methods is the
 * model).  One table per backend (sqlite.c, pg.c, later mysql.c); the core
 * never asks which backend it has, only what the table can do (caps).
 *
 * Invariants the backends keep (DESIGN.md):
 *  1 no duplicate fire: UNIQUE (job_id, fire_at, attempt) on runs; the
 *    claim inserts first attempts with ON CONFLICT DO NOTHING and only the
 *    rows it really inserted are handed to the caller.
 *  3 fencing: every change to a claimed run is
 *    "... WHERE id = ? AND claim_token = ? AND node = ?"; a refused write
 *    is reported per update, never silently retried.
 *  4 one clock: every timestamp written is the database's clock or a value
 *    the caller derived from it; now_ms() reads that clock.
 *
 * Threading: a store handle is used by one thread at a time.  A node opens
 * one handle per thread that needs the database.
 */
#ifndef DBCRON_STORE_H
#define DBCRON_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

#define STORE_OPS_VERSION 1

/* Capability bits. */
#define STORE_CAP_SKIP_LOCKED 0x1u  /* concurrent claimers do not block */
#define STORE_CAP_RETURNING 0x2u
#define STORE_CAP_MULTI_WRITER 0x4u /* writers run in parallel (not SQLite) */

typedef struct store store;

/* Common header every backend's handle starts with. */
struct store {
	const struct store_ops *ops;
	/* Statements executed through this handle, for benchmarks. */
	uint64_t stmt_count;
};

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
} store_plan;

/*
 * The planner: core code (sched/plan.c) called by the backend, inside the
 * claim transaction, once per due job it locked.  Pure computation, no I/O.
 * now_ms is the database clock read by this claim; horizon_ms is absolute:
 * now_ms + req->horizon_ms_ahead (fires after it belong to a later claim).
 * Returns DBCRON_OK or an error that aborts the whole claim.
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
} store_claim_req;

/* A run this node now owns, with a snapshot of its job. */
typedef struct store_claimed {
	dbcron_run run; /* state SCHEDULED, node and claim_token set */
	const dbcron_job *job; /* points into claim_result.jobs */
} store_claimed;

typedef struct store_claim_result {
	int64_t now_ms; /* database clock at the claim */
	store_claimed *runs;
	size_t nruns;
	dbcron_job *jobs; /* the jobs the runs refer to (deduplicated) */
	size_t njobs;
	size_t nterminal; /* MISFIRED/SKIPPED rows written, for stats */
} store_claim_result;

void store_claim_result_clear(store_claim_result *r);

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
	/* out: true when the fence let it through */
	bool applied;
} store_update;

typedef struct store_node_info {
	const char *node_id;
	const char *incarnation; /* random per process start */
	const char *host;
	int pid;
	int workers;
	int64_t lease_ms;
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

/* How job_apply writes a batch of definitions (one transaction). */
typedef enum store_put_mode {
	STORE_PUT_CREATE = 1, /* DBCRON_EEXISTS if a name exists; all or none */
	STORE_PUT_UPSERT = 2, /* create or update by name */
} store_put_mode;

typedef struct store_ops {
	int version; /* STORE_OPS_VERSION */
	const char *name; /* "sqlite", "postgresql" */
	unsigned caps;

	/* url: "sqlite:PATH" or "postgresql://..." / key=value.  Does not
	 * create the schema. */
	int (*open)(const char *url, store **out, dbcron_err *err);
	void (*close)(store *s);
	/* Create or upgrade the schema with numbered migrations; idempotent.
	 * from and to (may be NULL) report the versions. */
	int (*migrate)(store *s, int *from, int *to, dbcron_err *err);
	/* DBCRON_ESCHEMA / DBCRON_EDB when the schema is missing or newer. */
	int (*check_schema)(store *s, dbcron_err *err);
	/* The database clock, epoch ms. */
	int (*now_ms)(store *s, int64_t *out, dbcron_err *err);

	/* ---- jobs ---- */
	/* Validated jobs, in one transaction.  New and changed jobs get
	 * next_fire_at from the caller (job->next_fire_at).  prune (UPSERT
	 * only) deletes jobs whose names are not in the batch.  Deleting a job
	 * keeps its runs. */
	int (*job_put)(store *s, dbcron_job *jobs, size_t n, store_put_mode mode,
		       bool prune, size_t *created, size_t *updated,
		       size_t *deleted, dbcron_err *err);
	/* DBCRON_ENOTFOUND when absent.  out is filled; caller clears it. */
	int (*job_get)(store *s, const char *name, dbcron_job *out,
		       dbcron_err *err);
	int (*job_list)(store *s, store_job_cb cb, void *ctx, dbcron_err *err);
	/* Pause/resume; resume sets next_fire_at to the given value. */
	int (*job_set_paused)(store *s, const char *name, bool paused,
			      int64_t next_fire_at, dbcron_err *err);
	int (*job_delete)(store *s, const char *name, dbcron_err *err);
	/* Manual trigger: a SCHEDULED, unclaimed attempt-1 run with fire_at =
	 * due_at = database now (bumped by 1 ms until unique). *run_id out. */
	int (*job_trigger)(store *s, const char *name, int64_t *run_id,
			   int64_t *fire_at, dbcron_err *err);

	/* ---- nodes ---- */
	/* Upsert the node row as alive with a fresh lease.  Runs left by an
	 * earlier incarnation of the same node id are resolved first as reap
	 * does (pg_cron: orphans are resolved at start-up). */
	int (*node_register)(store *s, const store_node_info *n,
			     dbcron_err *err);
	/* Renew the lease: DBCRON_EFENCED when the row is no longer ours
	 * (another node declared us dead).  *db_now out. */
	int (*node_heartbeat)(store *s, const char *node_id,
			      const char *incarnation, int64_t lease_ms,
			      int64_t *db_now, dbcron_err *err);
	/* Orderly stop: hand back our unstarted SCHEDULED runs (unclaim) and
	 * mark the node stopped. */
	int (*node_stop)(store *s, const char *node_id, const char *incarnation,
			 dbcron_err *err);
	/* Hand back specific unstarted runs (fenced by token). */
	int (*runs_release)(store *s, const char *node_id, const int64_t *ids,
			    const char *const *tokens, size_t n,
			    dbcron_err *err);
	/* Take over from nodes whose lease lapsed: mark them dead; their
	 * SCHEDULED runs become unclaimed; their RUNNING runs end ABANDONED
	 * (error "node lost") and, when the job's node_loss is retry and
	 * attempts remain, a new attempt is scheduled now.  *reaped = number of
	 * runs touched. */
	int (*reap)(store *s, size_t *reaped, dbcron_err *err);

	/* ---- the claim (DESIGN.md "Coordination") ---- */
	int (*claim)(store *s, const store_claim_req *req,
		     store_claim_result *out, dbcron_err *err);
	/* Batched state changes, one transaction; each fenced. */
	int (*apply)(store *s, const char *node_id, store_update *ups, size_t n,
		     dbcron_err *err);
	/* Is any run of job in RUNNING state on any live node other than the
	 * given run?  (overlap policy across nodes) */
	int (*job_running)(store *s, int64_t job_id, int64_t except_run_id,
			   bool *running, dbcron_err *err);

	/* ---- views ---- */
	int (*runs_list)(store *s, const store_run_filter *f, store_run_cb cb,
			 void *ctx, dbcron_err *err);
	int (*nodes_list)(store *s, store_node_cb cb, void *ctx,
			  dbcron_err *err);

	/* ---- lease locks (seed 002) ---- */
	/* Insert, or take over only an expired lease, in one statement.
	 * DBCRON_ELOCKED with *holder filled when someone else holds it. */
	int (*lock_acquire)(store *s, const char *name, const char *owner,
			    int64_t ttl_ms, int64_t *fence, int64_t *until_ms,
			    store_lock_row *holder, dbcron_err *err);
	/* Owner- and fence-checked; DBCRON_EFENCED when no longer ours. */
	int (*lock_renew)(store *s, const char *name, const char *owner,
			  int64_t fence, int64_t ttl_ms, int64_t *until_ms,
			  dbcron_err *err);
	int (*lock_release)(store *s, const char *name, const char *owner,
			    int64_t fence, dbcron_err *err);
	int (*lock_list)(store *s, store_lock_cb cb, void *ctx,
			 dbcron_err *err);
	/* Append a finished run row for a lock attempt (job name "lock:NAME")
	 * so that every attempt, skipped too, is in the run log.  job_id is
	 * run->job_id (0 for lock attempts); fire_at < 0 means database now;
	 * fire_at is bumped by 1 ms until (job_id, fire_at, attempt) is
	 * unique; finished_ms < 0 means now. */
	int (*log_run)(store *s, const dbcron_run *run, dbcron_err *err);
	/* Maintenance: delete terminal runs finished before cutoff. */
	int (*prune_runs)(store *s, int64_t cutoff_ms, int64_t *deleted,
			  dbcron_err *err);
} store_ops;

/*
 * The store operations.  Callers outside src/store/ use only these; each is
 * documented at its member of store_ops above.
 */
int store_migrate(store *s, int *from, int *to, dbcron_err *err);
int store_check_schema(store *s, dbcron_err *err);
int store_now_ms(store *s, int64_t *out, dbcron_err *err);
int store_job_put(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune, size_t *created, size_t *updated, size_t *deleted, dbcron_err *err);
int store_job_get(store *s, const char *name, dbcron_job *out, dbcron_err *err);
int store_job_list(store *s, store_job_cb cb, void *ctx, dbcron_err *err);
int store_job_set_paused(store *s, const char *name, bool paused, int64_t next_fire_at, dbcron_err *err);
int store_job_delete(store *s, const char *name, dbcron_err *err);
int store_job_trigger(store *s, const char *name, int64_t *run_id, int64_t *fire_at, dbcron_err *err);
int store_node_register(store *s, const store_node_info *n, dbcron_err *err);
int store_node_heartbeat(store *s, const char *node_id, const char *incarnation, int64_t lease_ms, int64_t *db_now, dbcron_err *err);
int store_node_stop(store *s, const char *node_id, const char *incarnation, dbcron_err *err);
int store_runs_release(store *s, const char *node_id, const int64_t *ids, const char *const *tokens, size_t n, dbcron_err *err);
int store_reap(store *s, size_t *reaped, dbcron_err *err);
int store_claim(store *s, const store_claim_req *req, store_claim_result *out, dbcron_err *err);
int store_apply(store *s, const char *node_id, store_update *ups, size_t n, dbcron_err *err);
int store_job_running(store *s, int64_t job_id, int64_t except_run_id, bool *running, dbcron_err *err);
int store_runs_list(store *s, const store_run_filter *f, store_run_cb cb, void *ctx, dbcron_err *err);
int store_nodes_list(store *s, store_node_cb cb, void *ctx, dbcron_err *err);
int store_lock_acquire(store *s, const char *name, const char *owner, int64_t ttl_ms, int64_t *fence, int64_t *until_ms, store_lock_row *holder, dbcron_err *err);
int store_lock_renew(store *s, const char *name, const char *owner, int64_t fence, int64_t ttl_ms, int64_t *until_ms, dbcron_err *err);
int store_lock_release(store *s, const char *name, const char *owner, int64_t fence, dbcron_err *err);
int store_lock_list(store *s, store_lock_cb cb, void *ctx, dbcron_err *err);
int store_log_run(store *s, const dbcron_run *run, dbcron_err *err);
int store_prune_runs(store *s, int64_t cutoff_ms, int64_t *deleted, dbcron_err *err);
/* The backend's name: "sqlite", "postgresql". */
const char *store_name(const store *s);

/* Pick the backend from the URL scheme and open it. */
int store_open(const char *url, store **out, dbcron_err *err);
void store_close(store *s);
void store_lock_row_clear(store_lock_row *r);
void store_node_row_clear(store_node_row *r);

/* Backends. */
extern const store_ops store_sqlite_ops;
extern const store_ops store_pg_ops;

#endif
