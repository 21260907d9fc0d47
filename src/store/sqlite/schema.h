/*
 * SQLite schema, as numbered migrations.  Entry i (1-based) upgrades a
 * database at version i - 1 to version i; a released entry is never
 * edited, only followed by a new one.  The logical schema is the same as
 * the PostgreSQL dialect's (times are epoch ms; state, kind and policy columns hold the enums
 * of include/dbcron/job.h).
 */
#ifndef DBCRON_STORE_SQLITE_SCHEMA_H_
#define DBCRON_STORE_SQLITE_SCHEMA_H_

static const char *const sqlite_migrations[] = {
	NULL, /* version 0: empty database */
	/* 1: jobs, the run log, nodes and lease locks. */
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY,"
	" name TEXT NOT NULL UNIQUE,"
	" kind INTEGER NOT NULL,"
	" spec TEXT NOT NULL,"
	" interval_ms INTEGER NOT NULL DEFAULT 0,"
	" anchor_ms INTEGER NOT NULL DEFAULT 0,"
	" at_ms INTEGER NOT NULL DEFAULT -1,"
	" tz TEXT,"
	" misfire INTEGER NOT NULL,"
	" max_catchup INTEGER NOT NULL,"
	" misfire_threshold_ms INTEGER NOT NULL,"
	" overlap INTEGER NOT NULL,"
	" node_loss INTEGER NOT NULL,"
	" max_retries INTEGER NOT NULL,"
	" retry_base_ms INTEGER NOT NULL,"
	" retry_cap_ms INTEGER NOT NULL,"
	" retry_jitter INTEGER NOT NULL DEFAULT 0,"
	" timeout_ms INTEGER NOT NULL DEFAULT 0,"
	" executor INTEGER NOT NULL,"
	" argv TEXT,"
	" handler TEXT,"
	" arg TEXT,"
	" paused INTEGER NOT NULL DEFAULT 0,"
	" next_fire_at INTEGER,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);\n"
	/* The claim reads due jobs in fire order: its cost follows the number
	 * of due fires, not the number of jobs. */
	"CREATE INDEX jobs_due ON jobs(next_fire_at)"
	" WHERE paused = 0 AND next_fire_at IS NOT NULL;\n"
	/* No foreign key to jobs: deleting a job keeps its history, and lock
	 * attempts are logged with job_id 0.  UNIQUE is invariant 1. */
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL,"
	" job_name TEXT NOT NULL,"
	" fire_at INTEGER NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" state INTEGER NOT NULL,"
	" due_at INTEGER NOT NULL,"
	" node TEXT,"
	" claim_token TEXT,"
	" started_ms INTEGER,"
	" finished_ms INTEGER,"
	" exit_code INTEGER,"
	" missed INTEGER NOT NULL DEFAULT 0,"
	" error TEXT,"
	" output TEXT,"
	" created_ms INTEGER NOT NULL,"
	" UNIQUE (job_id, fire_at, attempt));\n"
	"CREATE INDEX runs_unclaimed ON runs(due_at)"
	" WHERE state = 1 AND node IS NULL;\n"
	"CREATE INDEX runs_node_state ON runs(node, state);\n"
	"CREATE INDEX runs_job_state ON runs(job_id, state);\n"
	"CREATE INDEX runs_fire_at ON runs(fire_at);\n"
	"CREATE TABLE nodes ("
	" id TEXT PRIMARY KEY,"
	" incarnation TEXT NOT NULL,"
	" host TEXT,"
	" pid INTEGER,"
	" workers INTEGER,"
	" state TEXT NOT NULL CHECK (state IN ('alive', 'dead', 'stopped')),"
	" started_ms INTEGER NOT NULL,"
	" heartbeat_ms INTEGER NOT NULL,"
	" lease_until INTEGER NOT NULL);\n"
	"CREATE TABLE locks ("
	" name TEXT PRIMARY KEY,"
	" owner TEXT NOT NULL,"
	" since_ms INTEGER NOT NULL,"
	" until_ms INTEGER NOT NULL,"
	" fence INTEGER NOT NULL);\n",
	/* 2: job ids are never reused.  Without AUTOINCREMENT SQLite hands the
	 * id of a deleted newest job to the next one, and runs of the deleted
	 * job left anywhere would then name the new job's row.  The sequence
	 * starts past every id the run log has seen. */
	"CREATE TABLE jobs_v2 ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" name TEXT NOT NULL UNIQUE,"
	" kind INTEGER NOT NULL,"
	" spec TEXT NOT NULL,"
	" interval_ms INTEGER NOT NULL DEFAULT 0,"
	" anchor_ms INTEGER NOT NULL DEFAULT 0,"
	" at_ms INTEGER NOT NULL DEFAULT -1,"
	" tz TEXT,"
	" misfire INTEGER NOT NULL,"
	" max_catchup INTEGER NOT NULL,"
	" misfire_threshold_ms INTEGER NOT NULL,"
	" overlap INTEGER NOT NULL,"
	" node_loss INTEGER NOT NULL,"
	" max_retries INTEGER NOT NULL,"
	" retry_base_ms INTEGER NOT NULL,"
	" retry_cap_ms INTEGER NOT NULL,"
	" retry_jitter INTEGER NOT NULL DEFAULT 0,"
	" timeout_ms INTEGER NOT NULL DEFAULT 0,"
	" executor INTEGER NOT NULL,"
	" argv TEXT,"
	" handler TEXT,"
	" arg TEXT,"
	" paused INTEGER NOT NULL DEFAULT 0,"
	" next_fire_at INTEGER,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);\n"
	"INSERT INTO jobs_v2 SELECT * FROM jobs;\n"
	"DROP TABLE jobs;\n"
	"ALTER TABLE jobs_v2 RENAME TO jobs;\n"
	"CREATE INDEX jobs_due ON jobs(next_fire_at)"
	" WHERE paused = 0 AND next_fire_at IS NOT NULL;\n"
	"DELETE FROM sqlite_sequence WHERE name = 'jobs';\n"
	"INSERT INTO sqlite_sequence(name, seq) SELECT 'jobs', max("
	"(SELECT coalesce(max(id), 0) FROM jobs), "
	"(SELECT coalesce(max(job_id), 0) FROM runs));\n",
	/* 3: a job the scheduler cannot plan or decode is set aside with its
	 * reason (next_fire_at NULL keeps it out of the due index) instead of
	 * failing every claim. */
	"ALTER TABLE jobs ADD COLUMN set_aside TEXT;\n"
	/* A pause or delete returns once every live node has seen it: each
	 * bumps jobs_gen, each heartbeat reports the one its node has acted
	 * on (docs/scheduler.md "Pause and delete"). */
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);\n"
	"INSERT INTO meta VALUES ('jobs_gen', 0);\n"
	"ALTER TABLE nodes ADD COLUMN seen_gen INTEGER NOT NULL DEFAULT 0;\n",
	/* 4: what a shell job runs as (docs/security.md): its user and group
	 * (NULL: the node's), directory (NULL: the user's home), its own
	 * variables (a JSON array of "KEY=VALUE"), an env-file on the node's
	 * host, a umask (NULL: the node's), and whether it starts from the
	 * node's environment. */
	"ALTER TABLE jobs ADD COLUMN run_user TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN run_group TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN cwd TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN env TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN env_file TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN umask INTEGER;\n"
	"ALTER TABLE jobs ADD COLUMN inherit_env INTEGER NOT NULL DEFAULT 0;\n",
	/* 5: the handlers each node registered (built-ins included), so a
	 * claim gives a node only the handler jobs it can run.  Rows of a
	 * node's earlier process are replaced when it registers again; a dead
	 * node's rows stay and count for nothing (nodes.state). */
	"CREATE TABLE node_handlers ("
	" node_id TEXT NOT NULL,"
	" handler TEXT NOT NULL,"
	" PRIMARY KEY (node_id, handler));\n",
	/* 6: one job's runs (runs --job X, a job's last runs) without reading
	 * the whole run log: equality on the name, then the listing's order
	 * (issue 23 item 10, docs/store.md). */
	"CREATE INDEX runs_job_name_fire ON runs(job_name, fire_at, attempt, id);\n",
	/* 7: a job's window: no fire before start_at, none after end_at (epoch
	 * ms; NULL: open), issue 28 item 7. */
	"ALTER TABLE jobs ADD COLUMN start_at INTEGER;\n"
	"ALTER TABLE jobs ADD COLUMN end_at INTEGER;\n",
	/* 8: fan-in (issue 26 item 3): one row per (dependent, needed job),
	 * done = 1 once the needed job succeeded since the dependent's last
	 * fire (store/needs.c). */
	"CREATE TABLE job_needs ("
	" job_id INTEGER NOT NULL,"
	" need_id INTEGER NOT NULL,"
	" done INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (job_id, need_id));\n"
	"CREATE INDEX job_needs_need ON job_needs(need_id);\n",
	/* 9: the audit trail (issue 29 item 2): one row per change, written
	 * in the change's own transaction (store/audit.c); at_ms is the
	 * database clock, job the job's name then (NULL: no job), detail a
	 * JSON object of the changed keys' before and after, secrets masked.
	 * Pruned with the run log's retention (by at_ms). */
	"CREATE TABLE audit ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" at_ms INTEGER NOT NULL,"
	" actor TEXT NOT NULL,"
	" action TEXT NOT NULL,"
	" job TEXT,"
	" detail TEXT NOT NULL);\n"
	"CREATE INDEX audit_at ON audit(at_ms);\n"
	"CREATE INDEX audit_job ON audit(job, id);\n",
	/* 10: spread (issue 28 item 1): H's and --spread's stored seed (NULL:
	 * none), --spread and --start-jitter in ms (0: none). */
	"ALTER TABLE jobs ADD COLUMN start_jitter_ms INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE jobs ADD COLUMN spread_ms INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE jobs ADD COLUMN spread_seed INTEGER;\n",
	/* 11: reactions (issue 26, docs/reactions.md): a job's targets, one a
	 * line, and the outbox of events, each written with the outcome that
	 * causes it; UNIQUE makes one event per (run, kind, target). */
	"ALTER TABLE jobs ADD COLUMN on_failure TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN on_success TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN on_misfire TEXT;\n"
	"CREATE TABLE events ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL,"
	" job_name TEXT NOT NULL,"
	" run_id INTEGER NOT NULL,"
	" kind INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" state INTEGER NOT NULL,"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" next_at INTEGER NOT NULL,"
	" last_error TEXT,"
	" node TEXT,"
	" claim_token TEXT,"
	" created_ms INTEGER NOT NULL,"
	" finished_ms INTEGER,"
	" UNIQUE (run_id, kind, target));\n"
	"CREATE INDEX events_due ON events(state, next_at);\n",
	/* 12: cancel and parameters (issue 27 items 3-4): when a cancel was asked
	 * for (epoch ms; the node holding the run stops it, docs/scheduler.md
	 * "Cancel"), the run's parameters (a JSON object) and the keys a job
	 * allows (a JSON object of defaults).  The index holds only the live
	 * runs with a request, so each node's poll for its own costs what is
	 * asked, not the size of the run log. */
	"ALTER TABLE runs ADD COLUMN cancel_requested_at INTEGER;\n"
	"ALTER TABLE runs ADD COLUMN params TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN params TEXT;\n"
	"CREATE INDEX runs_cancel ON runs(node)"
	" WHERE cancel_requested_at IS NOT NULL AND state IN (1, 2);\n",
	/* 13: overdue (issue 26 item 1, docs/reactions.md): no success for
	 * max_silence_ms (0: never) raises one event per silent period to
	 * on_overdue's targets.  No index of its own: the check finds a
	 * job's last success through runs_job_state (job_id, state). */
	"ALTER TABLE jobs ADD COLUMN max_silence_ms INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE jobs ADD COLUMN on_overdue TEXT;\n",
	/* 14: HTTP jobs (issue 27 item 1, docs/exec.md): "METHOD URL", the
	 * request headers (one a line), the body, the statuses that succeed
	 * and a CA file; NULL for every other executor.  Placeholders are
	 * kept as written: secrets never reach these columns. */
	"ALTER TABLE jobs ADD COLUMN http TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN http_headers TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN http_body TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN http_expect TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN http_ca_file TEXT;\n",
	/* 15: every-node jobs (issue 28 item 6, docs/scheduler.md "Every
	 * node"): the claim of a fire writes one run per live node, each for
	 * its node (for_node) with its index and the number of nodes fixed at
	 * the claim (node_total 0: an ordinary run, index 0).  Invariant 1
	 * then holds per (fire, node): UNIQUE takes node_index, and SQLite
	 * cannot change a table's constraint in place, so runs is rebuilt
	 * (ids kept: INTEGER PRIMARY KEY). */
	"ALTER TABLE jobs ADD COLUMN on_every_node INTEGER NOT NULL DEFAULT 0;\n"
	"CREATE TABLE runs_v2 ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL,"
	" job_name TEXT NOT NULL,"
	" fire_at INTEGER NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" state INTEGER NOT NULL,"
	" due_at INTEGER NOT NULL,"
	" node TEXT,"
	" claim_token TEXT,"
	" started_ms INTEGER,"
	" finished_ms INTEGER,"
	" exit_code INTEGER,"
	" missed INTEGER NOT NULL DEFAULT 0,"
	" error TEXT,"
	" output TEXT,"
	" created_ms INTEGER NOT NULL,"
	" cancel_requested_at INTEGER,"
	" params TEXT,"
	" for_node TEXT,"
	" node_index INTEGER NOT NULL DEFAULT 0,"
	" node_total INTEGER NOT NULL DEFAULT 0,"
	" UNIQUE (job_id, fire_at, attempt, node_index));\n"
	"INSERT INTO runs_v2(id, job_id, job_name, fire_at, attempt, state, due_at, node, "
	"claim_token, started_ms, finished_ms, exit_code, missed, error, output, created_ms, "
	"cancel_requested_at, params) SELECT id, job_id, job_name, fire_at, attempt, state, "
	"due_at, node, claim_token, started_ms, finished_ms, exit_code, missed, error, output, "
	"created_ms, cancel_requested_at, params FROM runs;\n"
	"DROP TABLE runs;\n"
	"ALTER TABLE runs_v2 RENAME TO runs;\n"
	"CREATE INDEX runs_unclaimed ON runs(due_at) WHERE state = 1 AND node IS NULL;\n"
	"CREATE INDEX runs_node_state ON runs(node, state);\n"
	"CREATE INDEX runs_job_state ON runs(job_id, state);\n"
	"CREATE INDEX runs_fire_at ON runs(fire_at);\n"
	"CREATE INDEX runs_job_name_fire ON runs(job_name, fire_at, attempt, id);\n"
	"CREATE INDEX runs_cancel ON runs(node)"
	" WHERE cancel_requested_at IS NOT NULL AND state IN (1, 2);\n"
	/* a lost or stopped node's every-node runs, found by the reap */
	"CREATE INDEX runs_for_node ON runs(for_node, state) WHERE for_node IS NOT NULL;\n",
	/* 16: SQL jobs (issue 27 item 2, docs/exec.md): the statement and the
	 * file naming the database it runs on (NULL: the scheduler's own).
	 * The URL itself stays in the file: it may hold a password. */
	"ALTER TABLE jobs ADD COLUMN sql_text TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN sql_db_file TEXT;\n",
	/* 17: backfill (issue 28 item 5, docs/scheduler.md "Backfill"): a
	 * run's kind (0 a fire, a trigger or their retries; 1 backfill) and a
	 * backfill's --max-running (NULL: no cap), which the claim checks
	 * (CLAIM_RUNS).  One instant's first attempt stays unique by
	 * UNIQUE(job_id, fire_at, attempt): two backfills of one range, or a
	 * backfill and the schedule, make it once. */
	"ALTER TABLE runs ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE runs ADD COLUMN max_running INTEGER;\n",
	/* 18: --max-runs (issue 28 item 7): the limit (0: none) and the count
	 * of the schedule's fires claimed as runs, which the claim raises in
	 * the transaction that writes them (JOBS_ADVANCE). */
	"ALTER TABLE jobs ADD COLUMN max_runs INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE jobs ADD COLUMN runs_fired INTEGER NOT NULL DEFAULT 0;\n",
	/* 19: exclusion calendars (issue 28 item 7): a calendar's days, sorted
	 * "YYYY-MM-DD" lines, never changed once added (delete and add again);
	 * a job's --exclude-calendar and the days it was given with it, which
	 * its planner reads with the job. */
	"CREATE TABLE calendars ("
	" name TEXT PRIMARY KEY,"
	" days TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL);\n"
	"ALTER TABLE jobs ADD COLUMN exclude_calendar TEXT;\n"
	"ALTER TABLE jobs ADD COLUMN exclude_days TEXT;\n",
	/* 20: concurrency caps (issue 28 item 3, docs/scheduler.md
	 * "Concurrency caps"): a job's tags (one a line) and each tag's cap.
	 * The claim counts a capped tag's live runs through runs_job_state
	 * (job_id, state): no index of its own, so runs cost no more to
	 * write. */
	"ALTER TABLE jobs ADD COLUMN tags TEXT;\n"
	"CREATE TABLE tags ("
	" name TEXT PRIMARY KEY,"
	" max_running INTEGER NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);\n",
	/* 21: priorities (issue 28 item 4, docs/scheduler.md "Priorities"):
	 * the claim reads due jobs by (next_fire_at, priority DESC), which
	 * this index gives in order; it replaces jobs_due (the same prefix
	 * and WHERE), so a job's advance writes one index, as before. */
	"ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;\n"
	"CREATE INDEX jobs_due_prio ON jobs(next_fire_at, priority DESC)"
	" WHERE paused = 0 AND next_fire_at IS NOT NULL;\n"
	"DROP INDEX jobs_due;\n",
	/* 22: the overdue check (OVERDUE_FIND, every 5 s on every node's db
	 * thread) reads only the jobs with a --max-silence, through this
	 * partial index, instead of every job (docs/benchmarks.md "W4"); the
	 * jobs without one are not in it, so their writes do not touch it. */
	"CREATE INDEX jobs_silent ON jobs(max_silence_ms) WHERE max_silence_ms > 0;\n",
};

#define SQLITE_SCHEMA_VERSION \
	((int)(sizeof(sqlite_migrations) / sizeof(sqlite_migrations[0])) - 1)

#endif
