/*
 * The statements of the claim protocol: one list, each with the name that
 * error messages use and the invariant it keeps (docs/design.md numbers
 * them).  Every dialect supplies the SQL text for every id (its sql.h,
 * checked by test_store_stmts); the protocol (the files store_int.h names)
 * is the only caller and the fault seam (fault.c) names them by their
 * lower-case id ("apply", "commit").
 *
 * Parameters: in the order given; a batch is a table of rows that the
 * dialect sends as one JSON text, a set of arrays, ...  A statement has at
 * most one batch of several columns, last; one-column batches (a list of
 * ids or names) take one position each, as a scalar does, and a statement
 * may have several.  Columns are named in the comment as [col, col, ...].
 */
#ifndef DBCRON_STORE_STMT_H
#define DBCRON_STORE_STMT_H

#include "model/fields.h"
#include "model/target.h"

/* X(ID, "what it does, for messages", "invariant kept") */
#define STORE_STATEMENTS(X)                                                              \
	X(BEGIN, "starting a transaction", "")                                           \
	/* single-writer dialects take the write lock before the first read */         \
	X(BEGIN_WRITE, "starting a write transaction", "claims read then write; no snapshot upgrade fails halfway") \
	X(COMMIT, "committing", "")                                                      \
	X(ROLLBACK, "rolling back", "")                                                  \
	X(NOW, "reading the database clock", "4 one clock")                             \
	/* schema_read and migrate run the dialect's own DDL; this id names them */     \
	X(SCHEMA, "reading or migrating the schema", "")                               \
	/* (name) -> JOB_COLS */                                                          \
	X(JOB_GET, "reading the job", "")                                                \
	X(JOB_LIST, "listing jobs", "")                                                  \
	/* (after name, limit) -> JOB_COLS of the next jobs by name: a keyset page */   \
	X(JOB_PAGE, "listing a page of jobs", "")                                        \
	/* () -> name, next_fire_at, paused (0/1), by name: /metrics */                 \
	X(JOB_BRIEF, "listing job names and next fires", "")                             \
	/* (limit) -> name, finished_ms of its newest-fired SUCCEEDED run (NULL none), by  \
	 * name, the first limit jobs: /metrics.  Walks UNIQUE(job_id, fire_at, attempt)   \
	 * backwards from each job's newest fire to its first success. */                 \
	X(JOB_LAST_OK, "reading the jobs' last successes", "")                           \
	/* batch [job_id] -> job_id, id, state, finished_ms of each job's newest run    \
	 * (by fire_at, attempt) that is not SCHEDULED, for a page of jobs in one       \
	 * statement: one backward probe of UNIQUE(job_id, fire_at, attempt) per job,   \
	 * however long the log.  A job with no such run has no row. */                 \
	X(JOBS_LAST_RUN, "reading the jobs' last runs", "")                              \
	/* (after name, limit, text) -> JOB_COLS of the next jobs by name whose name    \
	 * holds text: the dashboard's search.  Reads every name after the cursor      \
	 * until a page is full (no index serves a substring); 10,000 names is cheap. */ \
	X(JOB_SEARCH, "searching jobs by name", "")                                      \
	/* batch [job_id], (limit) -> job_id, id, state, fire_at, attempt of each job's  \
	 * newest limit runs (by fire_at, attempt) that are not SCHEDULED: the          \
	 * dashboard's strip of last fires, for a page of jobs in one statement. */     \
	X(JOBS_STRIP, "reading the jobs' last fires", "")                                \
	/* batch [name] -> JOB_COLS of the jobs that exist, row-locked until the    \
	 * transaction ends (FOR UPDATE; SQLite's BEGIN IMMEDIATE already holds     \
	 * the database): job put writes back paused, name and next_fire_at from     \
	 * these rows, so a pause, rename or run end must wait for the put rather    \
	 * than be undone by it (issue 23 item 2).  In name order, so two puts lock  \
	 * alike and cannot deadlock. */                                             \
	X(JOBS_BY_NAMES, "reading jobs by name", "")                                     \
	/* batch [name] -> JOB_COLS of the jobs that exist, no lock: what a        \
	 * one-job write checks against, instead of every job (issue 23 item 9) */  \
	X(JOBS_NAMED, "reading the named jobs", "")                                      \
	/* (now) batch [JOB_PUT_COLS] -> id, name */                                     \
	X(JOBS_INSERT, "adding jobs", "")                                                \
	/* (now) batch [id, JOB_PUT_COLS] */                                             \
	X(JOBS_UPDATE, "updating jobs", "")                                              \
	/* batch [name] -> JOB_COLS of every job not named: what a prune deletes, \
	 * read first for the audit trail (no RETURNING on every dialect) */          \
	X(JOBS_PRUNED, "reading the jobs a prune deletes", "")                           \
	/* batch [name]: delete every job not named */                                   \
	X(JOBS_PRUNE, "pruning jobs", "")                                                \
	/* (now): unclaimed SCHEDULED runs of jobs that no longer exist end ABANDONED */  \
	X(RUNS_CLOSE_ORPHANS, "closing runs of deleted jobs", "2 no silent loss")        \
	/* (name, paused, next_fire_at) */                                               \
	X(JOB_SET_PAUSED, "pausing/resuming the job", "")                                \
	/* batch [id, why]: jobs the claim cannot plan or decode */                      \
	X(JOBS_SET_ASIDE, "setting jobs aside", "one bad job never stops the others")    \
	X(JOB_DELETE, "deleting the job", "")                                            \
	/* (name) -> id */                                                                \
	X(JOB_ID, "looking up the job", "")                                              \
	/* (name, new name, now) */                                                       \
	X(JOB_RENAME, "renaming the job", "")                                            \
	/* (job_id, new name): the run log follows the job it belongs to */              \
	X(RUNS_RENAME, "renaming the job's runs", "")                                    \
	/* (job_id, name, fire_at, now, params|NULL) -> id, nothing on a clash */         \
	X(TRIGGER_INSERT, "triggering the job", "1 no duplicate fire")                   \
	/* (job_id, name, now, max_running|NULL, batch [fire_at]) -> rows inserted:  \
	 * one backfill run per instant, due now, none where (job_id, fire_at, 1)    \
	 * exists (a fire, a trigger or another backfill's) */                       \
	X(BACKFILL_INSERT, "backfilling the job", "1 no duplicate fire")                 \
	/* (job_id, batch [fire_at]) -> fire_at of those that have a run: a dry run */   \
	X(BACKFILL_TAKEN, "reading the instants that have runs", "")                     \
	/* exclusion calendars (calendar.c): (name, days, now) -> rows inserted, 0 when \
	 * the name is taken */                                                          \
	X(CALENDAR_INSERT, "adding the calendar", "")                                    \
	/* (name) -> name, days, created_ms */                                           \
	X(CALENDAR_GET, "reading the calendar", "")                                      \
	/* () -> name, days, created_ms, by name */                                      \
	X(CALENDAR_LIST, "listing calendars", "")                                        \
	/* (name) -> names of the jobs that exclude it, by name */                       \
	X(CALENDAR_USERS, "reading the jobs that use the calendar", "")                  \
	X(CALENDAR_DELETE, "deleting the calendar", "")                                  \
	/* fan-in (needs.c): (job_id) -> need_id of its edges */                             \
	X(NEEDS_OF, "reading the job's needs", "")                                           \
	/* (job_id, need_id): an edge, kept with its done flag when it exists */             \
	X(NEEDS_ADD, "recording the job's needs", "")                                        \
	X(NEEDS_DEL, "dropping one of the job's needs", "")                                  \
	/* (): drop the edges of jobs gone or no longer NEEDS jobs */                        \
	X(NEEDS_TIDY, "tidying the needs", "")                                               \
	/* () -> dependent name of edges whose needed job is gone */                         \
	X(NEEDS_DANGLING, "checking the needs", "a dependent never waits on a job that is gone")\
	/* () -> dependent name, needed name of every edge: the cycle check */               \
	X(NEEDS_EDGES, "reading the needs", "no cycle")                                      \
	/* (name) -> the names of the jobs that need it */                                   \
	X(NEEDED_BY, "reading what needs the job", "")                                       \
	/* (need_id, why): set aside every job that needs it; then its edges go */           \
	X(NEEDS_SET_ASIDE, "setting the dependents aside", "")                               \
	X(NEEDS_DETACH, "detaching the dependents", "")                                      \
	/* batch [succeeded job id] -> id of their dependents, row-locked in id */           \
	/* order (FOR UPDATE; SQLite holds the database): two nodes ending two */            \
	/* needs of one job meet here, one after the other */                                \
	X(FANIN_LOCK, "locking the dependents", "a fan-in fires once per set")               \
	/* batch [succeeded job id]: their edges done */                                     \
	X(FANIN_MARK, "recording the needs met", "a fan-in fires once per set")              \
	/* batch [succeeded job id] -> id, name of their dependents (not set */              \
	/* aside) with every edge done, read current (locking on MySQL) */                   \
	X(FANIN_READY, "finding the dependents due", "a fan-in fires once per set")          \
	/* (job_id): a new set begins */                                                     \
	X(FANIN_RESET, "starting the dependent's next set", "a fan-in fires once per set")   \
	/* (ahead_ms, limit, route, batch [handler], pool, batch [job_id], node) ->    \
	 * now, busy, JOB_COLS (one row of NULL job columns when none); with route 1,  \
	 * a handler job only when its handler is in the batch (what the claiming      \
	 * node can run), or when it is stranded: past its misfire threshold with no   \
	 * live node having the handler.  Pool 0: any job; 1: only jobs not in the    \
	 * second batch (the node's slow pool); 2: only jobs in it (claim.c "Pools").  \
	 * busy: a dialect whose claim holds the whole database (no                    \
	 * STORE_CAP_MULTI_WRITER) gives STORE_OVERLAP_DUE_BUSY, exact there; the      \
	 * others any value, unread (their read may predate a concurrent claim:        \
	 * JOBS_BUSY decides) */                                                       \
	X(CLAIM_DUE_JOBS, "claim: selecting due jobs", "5 backpressure: at most limit, per pool; routing: only what the node can run")  \
	/* (node, token, now) batch [job_id, job_name, fire_at, state, due_at, missed,    \
	 * error] -> id, job_id, job_name, fire_at, state, due_at, missed of the rows      \
	 * really inserted */                                                             \
	X(FIRES_INSERT, "claim: writing fires", "1 no duplicate fire: a fire that exists is not returned") \
	/* batch [id, next_fire_at|NULL, fires claimed as runs (runs_fired += it)] */     \
	X(JOBS_ADVANCE, "claim: advancing jobs", "")                                     \
	/* (node, token, horizon, limit, route, batch [handler], now, pool, batch        \
	 * [job_id]) -> id, job_id, job_name, fire_at, attempt, due_at, missed; routed   \
	 * and pooled as CLAIM_DUE_JOBS, a stranded run being one due past its job's     \
	 * misfire threshold at now */                                                    \
	/* (and params, the run's parameters, last) */                                    \
	/* (and for_node, node_index, node_total after it: an every-node run is  \
	 * taken only by the node it is for, whatever its routing; claim.c) */    \
	X(CLAIM_RUNS, "claim: taking unclaimed runs", "5 backpressure: at most limit, per pool; routing: only what the node can run")   \
	/* Every node (docs/scheduler.md "Every node", claim.c "Fan-out").        \
	 * (now) -> id of every live node: alive, its lease not ended at now */   \
	X(NODES_LIVE, "claim: reading the live nodes", "every node: the set is fixed when the fire is claimed") \
	/* (node, token, index, total): the claim's fresh first attempts of      \
	 * every-node jobs become the claiming node's, at its index of total */   \
	X(FIRES_FAN_MARK, "claim: assigning every-node runs", "1 no duplicate fire: one first attempt per (fire, node)") \
	/* (node, token, now, total, batch [node id]): for each run the mark      \
	 * made (node_total = total, no sibling yet), one SCHEDULED unclaimed     \
	 * run for every other node of the list, at its 0-based position */      \
	X(FIRES_FAN_OUT, "claim: writing every-node runs", "1 no duplicate fire: one first attempt per (fire, node)") \
	/* (now) batch [node, lease_until]: the SCHEDULED every-node runs for    \
	 * those lost nodes end ABANDONED (never moved to another node) */       \
	X(RUNS_ABANDON_PINNED, "reap: abandoning a lost node's every-node runs", "2 no silent loss: ended, never left waiting") \
	/* cluster-wide overlap (issue 28 item 2).  (node) batch [job_id] -> job_id,   \
	 * id, node, state, started_ms of the live runs (claimed SCHEDULED, RUNNING) of those jobs \
	 * that another node holds, by job_id.  Run after the jobs' rows are locked, \
	 * as a statement of its own: it then sees every claim of them committed     \
	 * before the lock (claim.c "Overlap across nodes") */                        \
	X(JOBS_BUSY, "claim: reading the jobs' runs on other nodes", "overlap: a job runs on one node at a time unless its policy allows more") \
	/* batch [job_id] -> id of those jobs this transaction now holds locked       \
	 * (FOR UPDATE SKIP LOCKED; SQLite holds the database): the jobs of the runs  \
	 * CLAIM_RUNS took, whose rows it did not lock */                             \
	X(JOBS_LOCK, "claim: locking the jobs of taken runs", "overlap: a job runs on one node at a time unless its policy allows more") \
	/* concurrency caps (issue 28 item 3, caps.c).  batch [tag] -> name,          \
	 * max_running of those tags that have a cap, no lock */                      \
	X(TAGS_CAPPED, "claim: reading the tags' caps", "")                            \
	/* batch [tag] -> name of those capped tags this transaction now holds      \
	 * (FOR UPDATE SKIP LOCKED, in name order; SQLite holds the database) */      \
	X(TAGS_LOCK, "claim: locking the capped tags", "caps: one claim at a time counts a tag") \
	/* batch [tag] -> name, count of the live runs (claimed SCHEDULED, RUNNING)  \
	 * of the jobs carrying each tag; after TAGS_LOCK, a statement of its own */ \
	X(TAGS_LIVE, "claim: counting the tags' live runs", "caps: at most max_running live runs per tag") \
	/* (name, max_running, now): the tag's cap, made or changed */               \
	X(TAG_SET, "setting the tag's cap", "")                                        \
	/* (name) -> count of the jobs carrying the tag */                            \
	X(TAG_USED, "checking the tag is in use", "")                                  \
	/* (name) -> rows changed */                                                  \
	X(TAG_DELETE, "deleting the tag's cap", "")                                    \
	/* () -> name, max_running, live runs, jobs carrying it, by name */           \
	X(TAGS_LIST, "listing the tags", "")                                           \
	/* () -> name of every capped tag */                                          \
	X(TAGS_NAMES, "listing the capped tags", "")                                   \
	/* batch [id] -> JOB_COLS */                                                      \
	X(JOBS_BY_IDS, "reading jobs by id", "")                                         \
	/* (node) batch [id, token, state, started, finished, has_exit, exit, error,      \
	 * output] -> id of every row changed */                                          \
	X(RUNS_APPLY, "apply: updating runs", "3 fencing: id, token, node and a live state") \
	/* (now) batch [run_id, due_at]: attempt + 1 of that run, unclaimed, with its    \
	 * parameters */                                                                 \
	X(RETRY_INSERT, "scheduling retries", "1 no duplicate fire, per attempt")        \
	/* (now) batch [run_id, kind, target]: the outbox (issue 26), in the outcome's \
	 * transaction; a (run, kind, target) already there is left alone */           \
	X(EVENTS_INSERT, "writing events", "one event per (run, kind, target)")       \
	/* (job or NULL, state or 0, limit) -> EVENT_COLS, newest first */            \
	X(EVENTS_LIST, "listing events", "")                                          \
	/* (node, token, now, limit): pending events due by now, and those a node   \
	 * that is not alive under its lease holds, become DELIVERING under token */ \
	X(EVENTS_CLAIM, "claiming events", "an event is delivered by one live node at a time") \
	/* (token) -> EVENT_COLS of the events that claim took */                     \
	X(EVENTS_CLAIMED, "reading claimed events", "")                               \
	/* (id, node, token, state, next_at, error, now): the end of one delivery,   \
	 * fenced on (id, node, token, DELIVERING) */                                 \
	X(EVENT_FINISH, "ending a delivery", "fencing: a delivery taken away writes nothing") \
	/* (now) -> job id, name, on_overdue, period, since: the jobs silent past \
	 * max_silence_ms with no overdue event for the period yet (OVERDUE_FIND) */ \
	X(OVERDUE_FIND, "finding overdue jobs", "")                                   \
	/* (job_id, job_name, period, target, now): one overdue event; the period   \
	 * (run_id) already there for this target is left alone */                  \
	X(OVERDUE_INSERT, "raising overdue events", "one overdue event per silent period and target") \
	/* batch [job_id, next_fire_at]: only where next_fire_at IS NULL */               \
	X(JOBS_NEXT_IF_NULL, "rescheduling after-jobs", "")                              \
	/* (id, incarnation, host, pid, workers, now, lease_ms) */                        \
	X(NODE_UPSERT, "registering the node", "")                                       \
	/* (id): forget the handlers an earlier process of this node registered */        \
	X(NODE_HANDLERS_CLEAR, "registering the node's handlers", "")                    \
	/* (id) batch [handler] */                                                        \
	X(NODE_HANDLERS_ADD, "registering the node's handlers", "routing: a handler job goes only where its handler is") \
	/* () -> handler: every name some live node (alive, lease not over) registered */ \
	X(HANDLERS_LIVE, "listing the handlers of live nodes", "")                         \
	/* (id, incarnation, lease_ms) -> heartbeat_ms */                                 \
	X(NODE_HEARTBEAT, "heartbeat", "3 fencing: incarnation and liveness")            \
	/* () -> jobs_gen after +1: a pause or delete that nodes must see */             \
	/* () -> jobs_gen */                                                             \
	X(META_GEN, "reading the jobs generation", "")                                  \
	X(GEN_BUMP, "announcing the change to the nodes", "pause and delete are immediate") \
	/* (gen) -> id, ms left on its lease: live nodes that have not seen gen */       \
	X(NODES_LAGGING, "waiting for the nodes to see the change", "pause and delete are immediate") \
	/* batch [id] -> id, paused of the jobs that still exist */                      \
	X(JOBS_STATE, "reading the state of claimed jobs", "pause and delete are immediate") \
	/* (id, incarnation) */                                                           \
	/* (node) -> count of its RUNNING runs */                                        \
	X(NODE_RUNNING, "counting the node's running runs", "4 a node is stopped only when it owns no running run") \
	/* () -> id, lease_until of nodes not alive that still hold live runs, or   \
	 * that SCHEDULED every-node runs are still for */                          \
	X(NODES_ORPHANED, "looking for runs left by stopped or dead nodes", "2 no silent loss") \
	X(NODE_STOP, "stopping the node", "")                                            \
	/* (node): its SCHEDULED runs become unclaimed */                                 \
	X(RUNS_UNCLAIM_NODE, "handing back runs", "2 no silent loss")                    \
	/* (node) batch [id, token] */                                                    \
	X(RUNS_RELEASE, "releasing runs", "3 fencing")                                   \
	/* (node, token): the SCHEDULED runs of one claim back to the pool */             \
	X(RUNS_RELEASE_CLAIM, "releasing a claim in doubt", "2 no silent loss")         \
	/* (before) -> a row when some alive node's lease ended before `before` */                        \
	X(NODES_LAPSED, "looking for lost nodes", "")                                    \
	/* (before) -> id, lease_until of each node marked dead here */                      \
	X(NODES_EXPIRE, "reap: marking lost nodes dead", "one reaper per lost node")      \
	/* (id) -> incarnation, state, lease_until, host, pid (locked for the tx) */     \
	X(NODE_GET, "reading the node row", "7 one process per node id")                \
	/* (now) batch [node, lease_until] -> id, job_id, fire_at, attempt, started_ms   \
	 * of runs ended ABANDONED: RUNNING ones, and SCHEDULED ones due before the      \
	 * lease ended (the node may have started them without its write landing) */    \
	X(RUNS_ABANDON_LOST, "reap: abandoning runs of lost nodes", "2 no silent loss")  \
	/* batch [node, lease_until]: SCHEDULED runs due at or after the lease ended,   \
	 * which the node never started */                                             \
	X(RUNS_UNCLAIM_LOST, "reap: unclaiming runs of lost nodes", "2 no silent loss")  \
	/* (job_id, except_run_id) -> a row when running */                               \
	X(JOB_RUNNING, "checking running runs", "")                                      \
	/* (job|NULL, state|0, since|-1, limit|-1) -> RUN_COLS */                         \
	X(RUNS_LIST, "listing runs", "")                                                 \
	/* (job name or NULL, since) -> id, job_name, fire_at, state, node, started_ms,  \
	 * finished_ms of the runs fired at or after since: the dashboard's charts,      \
	 * without the output and error text RUNS_LIST reads */                          \
	X(RUNS_STATS, "reading the runs of a window", "")                                \
	/* RUNS_LIST of one job (?1 set): served by runs_job_name_fire */                \
	X(RUNS_LIST_JOB, "listing a job's runs", "")                                     \
	/* (after_id, job|NULL, limit) -> RUN_COLS of the runs created after after_id, \
	 * by id: the primary key, so a follower's poll costs what is new */            \
	X(RUNS_AFTER_ID, "listing new runs", "")                                         \
	/* () -> a row once this transaction holds the schedule lock row; none  \
	 * when the row does not exist yet (SCHEDULE_LOCK_INIT makes it) */      \
	X(SCHEDULE_LOCK, "taking the schedule lock", "XXL-JOB's lock row: claimers take turns") \
	X(SCHEDULE_LOCK_INIT, "making the schedule lock row", "")                         \
	/* (id) -> RUN_COLS */                                                           \
	X(RUN_GET, "reading a run", "")                                                  \
	/* cancel (runlog.c, issue 27 item 3).  (id, now) -> rows changed: the run,  \
	 * SCHEDULED and unclaimed, ends CANCELLED at once; a claimed one is left to \
	 * its node (`node IS NULL` is the fence: no node can start it) */          \
	X(RUN_CANCEL_UNCLAIMED, "cancelling the unclaimed run", "3 fencing: only a run no node holds") \
	/* (id, now) -> rows changed: a live run gets its cancel request (the      \
	 * first one's time is kept) */                                             \
	X(RUN_CANCEL_REQUEST, "asking for the run's cancel", "")                        \
	/* (node) -> id of its live runs with a cancel request: each node's poll at \
	 * its heartbeat, served by the runs_cancel index */                        \
	X(RUNS_CANCEL_ASKED, "reading the cancels asked of the node", "")              \
	/* (now) -> rows changed: unclaimed SCHEDULED runs with a request (handed   \
	 * back after it) end CANCELLED; the claim (CLAIM_RUNS) never takes them */ \
	X(RUNS_CANCEL_FREE, "cancelling handed-back runs", "3 fencing: only runs no node holds") \
	/* (now) batch [node, lease_until]: the live runs of lost nodes with a     \
	 * request end CANCELLED, before the reap would retry or hand them back */  \
	X(RUNS_CANCEL_LOST, "reap: cancelling runs of lost nodes", "a cancelled run is never retried") \
	X(NODES_LIST, "listing nodes", "")                                               \
	/* (cutoff) -> rows deleted: stopped and dead nodes whose last heartbeat \
	 * is before cutoff and that hold no SCHEDULED or RUNNING run */           \
	X(NODES_PRUNE, "pruning node rows", "2 no silent loss: a row with runs to resolve stays") \
	/* (name, owner, ttl_ms) -> fence, until_ms; nothing when held */                 \
	X(LOCK_ACQUIRE, "acquiring the lock", "seed 002: only an expired lease is taken") \
	/* (name) -> name, owner, since_ms, until_ms, fence */                            \
	X(LOCK_GET, "reading the lock", "")                                              \
	/* (name, owner, fence, ttl_ms) -> until_ms */                                    \
	X(LOCK_RENEW, "renewing the lock", "3 fencing: owner and fence")                 \
	/* (name, owner, fence) */                                                        \
	X(LOCK_RELEASE, "releasing the lock", "3 fencing: owner and fence")              \
	X(LOCK_LIST, "listing locks", "")                                                \
	/* (job_id, job_name, fire_at, attempt, state, due_at, node, token, started,      \
	 * finished, exit, missed, error, output) -> id, nothing on a clash */           \
	X(LOG_RUN, "logging the run", "1 no duplicate fire")                             \
	/* (cutoff): terminal runs finished before it */                                  \
	X(PRUNE_RUNS, "pruning runs", "only terminal runs, a bounded batch")            \
	/* (actor) batch [action, job|NULL, detail]: at_ms is the database clock  \
	 * (audit.c; always inside the change's own transaction) */                \
	X(AUDIT_INSERT, "writing the audit trail", "a change and its audit row commit together") \
	/* (job|NULL, since|-1, limit|-1) -> id, at_ms, actor, action, job, detail \
	 * of the newest limit rows, oldest first */                               \
	X(AUDIT_LIST, "listing the audit trail", "")                                    \
	/* (cutoff, limit): audit rows older than cutoff, the oldest first */     \
	X(PRUNE_AUDIT, "pruning the audit trail", "a bounded batch")

typedef enum store_stmt {
#define STORE_X_ENUM(id, what, inv) ST_##id,
	STORE_STATEMENTS(STORE_X_ENUM)
#undef STORE_X_ENUM
	ST__COUNT
} store_stmt;

/* "reading the job"; "?" for an unknown id. */
const char *store_stmt_what(int id);
/* "job_get": the id in lower case, as the fault seam spells it. */
const char *store_stmt_id_name(int id);
/* The id of a lower-case name, or -1. */
int store_stmt_by_name(const char *name);

/*
 * The job columns, from the field table (core/job_fields.h): "id" and then
 * each row's column in table order, so one row reader (rows.c) serves
 * every dialect and finds a field at MODEL_COL_<member>.  String literals
 * made by the preprocessor: the SQL stays whole and readable where it is
 * written, and no value is ever spliced into it.
 */
#define STORE_X_SELCOL(m, col, st, key, codec, args, scope, role, dflt, help) ", " #col
#define STORE_JOB_COLS "id" DBCRON_JOB_FIELDS(STORE_X_SELCOL)
#define STORE_NJOBCOLS MODEL_NCOLS
/* A row of NULLs as wide as STORE_JOB_COLS. */
#define STORE_X_NULLCOL(m, col, st, key, codec, args, scope, role, dflt, help) ", NULL"
#define STORE_JOB_NULLS "NULL" DBCRON_JOB_FIELDS(STORE_X_NULLCOL)

/*
 * The columns job_put writes: every row but the store-only ones, in table
 * order.  The statements that write them (JOBS_INSERT, JOBS_UPDATE) number
 * one placeholder per column, which the preprocessor cannot count, so
 * their text carries markers that rows.c expands once per process from the
 * same table (store__sql_expand):
 *   {PUT_COLS}        name, kind, spec, ...
 *   {PUT_VALUES N}    ?N, ?N+1, ...             (one per column)
 *   {PUT_SET N}       name = ?N, kind = ?N+1, ...
 *   {PUT_SET_V}       name = v.name, kind = v.kind, ...
 *   {PUT_ARRAYS N}    $N::text[], $N+1::int[], ... (the dialect's types)
 *   {PUT_JSON N}      name T PATH '$[N]', kind T PATH '$[N+1]', ... (the
 *                     COLUMNS of a JSON_TABLE, T the dialect's types)
 * Only column names and parameter numbers go in: the values stay
 * parameters.
 */
#define STORE_X_PUTIDX_NAME(m) STORE_PC_##m,
#define STORE_X_PUTIDX_DEF(m) STORE_PC_##m,
#define STORE_X_PUTIDX_STATE(m) STORE_PC_##m,
#define STORE_X_PUTIDX_PLACE(m) STORE_PC_##m,
#define STORE_X_PUTIDX_STORE(m)
#define STORE_X_PUTIDX(m, col, st, key, codec, args, scope, role, dflt, help)               \
	STORE_X_PUTIDX_##role(m)
enum { DBCRON_JOB_FIELDS(STORE_X_PUTIDX) STORE_NPUTCOLS };

#define STORE_RUN_COLS                                                     \
	"id, job_id, job_name, fire_at, attempt, state, due_at, node, "    \
	"claim_token, started_ms, finished_ms, exit_code, missed, error, " \
	"output, cancel_requested_at, params, for_node, node_index, node_total, kind"

/*
 * The run states and the executor the statements compare with, as SQL
 * text to splice in: "WHERE state = " SQL_RS_SCHEDULED.  Each number is
 * written once, here, made into its literal by the preprocessor and held
 * to its C enum (dbcron/run.h, dbcron/job.h) at compile time, so the SQL
 * cannot drift from the code.  (The released migrations keep their own
 * literals: they are never edited.)
 */
#define STORE_SQL_TEXT_(n) #n
#define STORE_SQL_TEXT(n) STORE_SQL_TEXT_(n)
#define STORE_RS_SCHEDULED 1
#define STORE_RS_RUNNING 2
#define STORE_RS_SUCCEEDED 3
#define STORE_RS_ABANDONED 8
#define STORE_RS_CANCELLED 9
#define STORE_EXEC_HANDLER 2
_Static_assert(STORE_RS_SCHEDULED == DBCRON_RUN_SCHEDULED, "SQL_RS_SCHEDULED");
_Static_assert(STORE_RS_RUNNING == DBCRON_RUN_RUNNING, "SQL_RS_RUNNING");
_Static_assert(STORE_RS_SUCCEEDED == DBCRON_RUN_SUCCEEDED, "SQL_RS_SUCCEEDED");
_Static_assert(STORE_RS_ABANDONED == DBCRON_RUN_ABANDONED, "SQL_RS_ABANDONED");
_Static_assert(STORE_RS_CANCELLED == DBCRON_RUN_CANCELLED, "SQL_RS_CANCELLED");
_Static_assert(STORE_EXEC_HANDLER == DBCRON_EXEC_HANDLER, "SQL_EXEC_HANDLER");
/* The outbox's numbers (model/target.h) as the SQL writes them. */
#define STORE_EV_PENDING 1
#define STORE_EV_DELIVERING 2
#define STORE_EV_DELIVERED 3
#define STORE_EV_OVERDUE 4
_Static_assert(STORE_EV_PENDING == MODEL_EVENT_PENDING, "SQL_EV_PENDING");
_Static_assert(STORE_EV_DELIVERING == MODEL_EVENT_DELIVERING, "SQL_EV_DELIVERING");
_Static_assert(STORE_EV_DELIVERED == MODEL_EVENT_DELIVERED, "SQL_EV_DELIVERED");
_Static_assert(STORE_EV_OVERDUE == MODEL_REACT_OVERDUE, "SQL_EV_OVERDUE");
#define SQL_EV_PENDING STORE_SQL_TEXT(STORE_EV_PENDING)
#define SQL_EV_DELIVERING STORE_SQL_TEXT(STORE_EV_DELIVERING)
#define SQL_EV_DELIVERED STORE_SQL_TEXT(STORE_EV_DELIVERED)
#define SQL_EV_OVERDUE STORE_SQL_TEXT(STORE_EV_OVERDUE)
/* The events table's columns as store_events reads them (events.c). */
#define STORE_EVENT_COLS                                                          \
	"id, job_id, job_name, run_id, kind, target, state, attempts, next_at, "  \
	"last_error, node, claim_token, created_ms, finished_ms"

#define SQL_RS_SCHEDULED STORE_SQL_TEXT(STORE_RS_SCHEDULED)
#define SQL_RS_RUNNING STORE_SQL_TEXT(STORE_RS_RUNNING)
#define SQL_RS_SUCCEEDED STORE_SQL_TEXT(STORE_RS_SUCCEEDED)
#define SQL_RS_ABANDONED STORE_SQL_TEXT(STORE_RS_ABANDONED)
#define SQL_RS_CANCELLED STORE_SQL_TEXT(STORE_RS_CANCELLED)
/*
 * ST_OVERDUE_FIND, one text for every dialect (NOW: the dialect's first
 * parameter, the database's now): each watched job (max_silence_ms, a
 * target, not paused or set aside) whose last success (or, with none, its
 * creation) is older than its silence, with no overdue event yet for that
 * period (the event's run_id: the last success's id, or -job id).
 */
#define STORE_OVERDUE_FIND(NOW)                                                              \
	"SELECT x.id, x.name, x.on_overdue, coalesce(x.ok, -x.id), coalesce(r.finished_ms, "  \
	"x.created_ms) FROM (SELECT j.id, j.name, j.on_overdue, j.max_silence_ms, "          \
	"j.created_ms, (SELECT max(o.id) FROM runs o WHERE o.job_id = j.id AND o.state = "   \
	SQL_RS_SUCCEEDED ") AS ok FROM jobs j WHERE j.max_silence_ms > 0 AND j.on_overdue "  \
	"IS NOT NULL AND NOT j.paused AND j.set_aside IS NULL) x LEFT JOIN runs r ON r.id = " \
	"x.ok WHERE coalesce(r.finished_ms, x.created_ms) + x.max_silence_ms <= " NOW        \
	" AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run_id = coalesce(x.ok, -x.id) AND " \
	"e.kind = " SQL_EV_OVERDUE ")"
#define SQL_EXEC_HANDLER STORE_SQL_TEXT(STORE_EXEC_HANDLER)
/* The overlap policies the claim compares with (dbcron/job.h). */
#define STORE_OV_SKIP 1
#define STORE_OV_ALLOW 2
#define STORE_OV_REPLACE 4
_Static_assert(STORE_OV_SKIP == DBCRON_OVERLAP_SKIP, "SQL_OV_SKIP");
_Static_assert(STORE_OV_ALLOW == DBCRON_OVERLAP_ALLOW, "SQL_OV_ALLOW");
_Static_assert(STORE_OV_REPLACE == DBCRON_OVERLAP_REPLACE, "SQL_OV_REPLACE");
#define SQL_OV_SKIP STORE_SQL_TEXT(STORE_OV_SKIP)
#define SQL_OV_ALLOW STORE_SQL_TEXT(STORE_OV_ALLOW)
#define SQL_OV_REPLACE STORE_SQL_TEXT(STORE_OV_REPLACE)

/*
 * Overlap across nodes (issue 28 item 2), the same text in every dialect:
 * job J has a live run (claimed SCHEDULED, or RUNNING) that a node other
 * than NODE holds.  Served by runs_job_state (job_id, state).  An
 * every-node job is never busy elsewhere: its overlap is per node
 * (docs/scheduler.md "Every node"; JOB_RUNNING compares for_node).
 */
#define STORE_BUSY_ELSEWHERE(J, NODE)                                                        \
	"(NOT " J ".on_every_node AND EXISTS (SELECT 1 FROM runs b WHERE b.job_id = " J     \
	".id AND b.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND b.node IS NOT NULL " \
	"AND b.node <> " NODE "))"
/* Some node other than NODE holds a live run (of any job): whether any job
 * can be busy elsewhere at all.  For a dialect whose claim holds the whole
 * database (no STORE_CAP_MULTI_WRITER), where a claim's read is current,
 * and the common SQLite case is one node: then no job's runs need a look.
 * One probe of runs_node_state (node, state) per node that ever held a run,
 * found by walking that index from one node to the next (a recursive
 * query, not a scan of the runs, which a stopped node's history would make
 * long); uncorrelated, so a statement evaluates it once. */
#define STORE_OTHERS_LIVE(NODE)                                                              \
	"EXISTS (WITH RECURSIVE o(v) AS (SELECT min(node) FROM runs UNION ALL SELECT (SELECT "  \
	"min(x.node) FROM runs x WHERE x.node > o.v) FROM o WHERE o.v IS NOT NULL) SELECT 1 "   \
	"FROM o WHERE o.v IS NOT NULL AND o.v <> " NODE " AND EXISTS (SELECT 1 FROM runs b "     \
	"WHERE b.node = o.v AND b.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")))"
/* The due-job claim's filter: a job busy elsewhere is taken only when its
 * policy allows overlap, or when its fire is due by NOW and the policy has
 * something to write or ask (skip records SKIPPED, replace asks the other
 * run to stop); queue leaves it due, unseen, until the other run ends. */
#define STORE_OVERLAP_DUE_OK(J, NODE, NOW)                                                   \
	"(" J ".overlap = " SQL_OV_ALLOW " OR (" J ".overlap IN (" SQL_OV_SKIP ", "           \
	SQL_OV_REPLACE ") AND " J ".next_fire_at <= " NOW ") OR NOT "                          \
	STORE_BUSY_ELSEWHERE(J, NODE) ")"
/* The due-job claim's busy column (CLAIM_DUE_JOBS), on a row that
 * STORE_OVERLAP_DUE_OK let through: 1 when the job is busy elsewhere and
 * its policy is not allow, else 0.  Only a skip or replace fire due by NOW
 * passes the filter without its EXISTS read, so only those read it here:
 * a row the filter let through by that read is not busy, and an allow
 * job's runs are never looked at.  One probe of runs_job_state per row at
 * most, in the claim's own statement: where the claim holds the database,
 * the jobs read 0 need no JOBS_BUSY (claim.c "Overlap across nodes").  A
 * CASE, whose condition is read term by term, the later terms only when
 * the earlier hold: a bare AND in a result column reads both sides
 * (SQLite), the EXISTS for every row. */
#define STORE_OVERLAP_DUE_BUSY(J, NODE, NOW)                                                 \
	"(CASE WHEN " J ".overlap IN (" SQL_OV_SKIP ", " SQL_OV_REPLACE ") AND " J                \
	".next_fire_at <= " NOW " AND " STORE_BUSY_ELSEWHERE(J, NODE) " THEN 1 ELSE 0 END)"
/* The unclaimed-run claim's filter: a trigger, retry or hand-back of a job
 * busy elsewhere waits (it is owed, never skipped) unless overlap is
 * allowed. */
#define STORE_OVERLAP_RUN_OK(J, NODE)                                                        \
	"(" J ".overlap = " SQL_OV_ALLOW " OR NOT " STORE_BUSY_ELSEWHERE(J, NODE) ")"

#define STORE_SCHED_NEEDS 5
_Static_assert(STORE_SCHED_NEEDS == DBCRON_SCHED_NEEDS, "SQL_SCHED_NEEDS");
#define SQL_SCHED_NEEDS STORE_SQL_TEXT(STORE_SCHED_NEEDS)

/*
 * The fence of an outcome's write (RUNS_APPLY) on SQLite and PostgreSQL
 * (MariaDB's says why it keeps the range): run row R (a prefix: "runs.", "r." or "") is still live and in
 * a state no later than LIVE (SCHEDULED for a start, RUNNING for an end).
 * A list and a bound, not "BETWEEN SCHEDULED AND LIVE": with the list
 * PostgreSQL reads runs_node_state for the node's live runs only; with the
 * range (state >= 1) it read every run the node had ever written, so each
 * batch cost grew with the node's history (W2 0.6x, issue 30 item 1).
 */
#define STORE_RUN_LIVE_UPTO(R, LIVE)                                                       \
	R "state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND " R "state <= " LIVE

/*
 * Overlap (ST_JOB_RUNNING) of an every-node job is per node: run row R
 * counts against run ID only when both are ordinary runs or both are for
 * the same node (docs/scheduler.md "Every node").  The same text in every
 * dialect.
 */
#define SAME_HOST(R, ID)                                                                 \
	"coalesce(" R ".for_node, '') = coalesce((SELECT x.for_node FROM runs x WHERE x.id = " \
	ID "), '')"

/*
 * Backfill's --max-running (issue 28 item 5), the same text in every
 * dialect that has correlated derived tables: unclaimed run R of a capped
 * backfill may be claimed when fewer than R.max_running backfill runs of
 * its job are held by a node (SCHEDULED or RUNNING) or wait ahead of it
 * (due_at, then id).  Every live backfill run is counted in one of the two
 * in any snapshot, and a claim moves a run from the second to the first,
 * so claims racing on other nodes never hand out more than the cap: the
 * rows a concurrent claim has locked still count as waiting.  The count
 * stops at STORE_BACKFILL_CAP_MAX rows, the largest cap taken, so a
 * waiting run costs a claim at most that many index entries.
 */
#define STORE_RK_BACKFILL 1
#define STORE_BACKFILL_CAP_MAX 100
#define SQL_RK_BACKFILL STORE_SQL_TEXT(STORE_RK_BACKFILL)
#define STORE_BACKFILL_AHEAD(R)                                                              \
	"b.job_id = " R ".job_id AND b.kind = " SQL_RK_BACKFILL " AND b.state IN ("          \
	SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND (b.node IS NOT NULL OR "                  \
	"(b.cancel_requested_at IS NULL AND (b.due_at < " R ".due_at OR (b.due_at = " R      \
	".due_at AND b.id < " R ".id))))"
#define STORE_BACKFILL_FITS(R)                                                               \
	"(" R ".max_running IS NULL OR (SELECT count(*) FROM (SELECT 1 FROM runs b WHERE "  \
	STORE_BACKFILL_AHEAD(R) " LIMIT " STORE_SQL_TEXT(STORE_BACKFILL_CAP_MAX)              \
	") AS ahead) < " R ".max_running)"

/*
 * Routing, the same text in every dialect: handler job J is stranded at N
 * (now) for what is due at AT (its next fire, or an unclaimed run's
 * due_at) when AT is past its misfire threshold and no live node
 * registered its handler; then a node without the handler claims it too,
 * to record it MISFIRED (claim.c says why).
 */
#define STORE_STRANDED(J, AT, N)                                                              \
	"(" J ".executor = " SQL_EXEC_HANDLER " AND " AT " + " J ".misfire_threshold_ms < " N \
	" AND NOT EXISTS (SELECT 1 FROM node_handlers h JOIN nodes n ON n.id = "              \
	"h.node_id WHERE h.handler = " J ".handler AND n.state = 'alive' AND "                \
	"n.lease_until >= " N "))"

#endif
