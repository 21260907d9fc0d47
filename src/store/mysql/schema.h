/*
 * MySQL / MariaDB schema, as numbered migrations: migrations[k] upgrades a
 * database at version k to version k + 1; a released entry is never edited,
 * only followed by a new one.  The logical schema is the SQLite and
 * PostgreSQL dialects' at their current versions, plus galera_writers
 * (migration 5), which only this dialect needs.
 *
 * InnoDB, utf8mb4 with the binary collation (names compare as bytes, as on
 * the other dialects).  There are no partial indexes: the due indexes lead
 * with the columns the claim's WHERE fixes, so a range on the time column
 * follows.  DDL commits on its own here, so a migration is not one
 * transaction: each records its version when done and an interrupted one is
 * re-run from its start (every statement is guarded by IF NOT EXISTS).
 */
#ifndef DBCRON_STORE_MYSQL_SCHEMA_H
#define DBCRON_STORE_MYSQL_SCHEMA_H

/* Highest migration this binary knows. */
#define DBCRON_MY_SCHEMA_VERSION 20

#define MY_TABLE_OPTS " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

static const char *const my_migration_1[] = {
	"CREATE TABLE IF NOT EXISTS jobs ("
	" id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" name VARCHAR(255) NOT NULL,"
	" kind INT NOT NULL,"
	" spec TEXT NOT NULL,"
	" interval_ms BIGINT NOT NULL DEFAULT 0,"
	" anchor_ms BIGINT NOT NULL DEFAULT 0,"
	" at_ms BIGINT NOT NULL DEFAULT -1,"
	" tz VARCHAR(255),"
	" misfire INT NOT NULL,"
	" max_catchup INT NOT NULL,"
	" misfire_threshold_ms BIGINT NOT NULL,"
	" overlap INT NOT NULL,"
	" node_loss INT NOT NULL,"
	" max_retries INT NOT NULL,"
	" retry_base_ms BIGINT NOT NULL,"
	" retry_cap_ms BIGINT NOT NULL,"
	" retry_jitter BOOLEAN NOT NULL DEFAULT FALSE,"
	" timeout_ms BIGINT NOT NULL DEFAULT 0,"
	" executor INT NOT NULL,"
	" argv MEDIUMTEXT,"
	" handler TEXT,"
	" arg MEDIUMTEXT,"
	" paused BOOLEAN NOT NULL DEFAULT FALSE,"
	" next_fire_at BIGINT,"
	" created_ms BIGINT NOT NULL,"
	" updated_ms BIGINT NOT NULL,"
	" set_aside TEXT,"
	/* what a shell job runs as (docs/security.md) */
	" run_user VARCHAR(255),"
	" run_group VARCHAR(255),"
	" cwd TEXT,"
	" env MEDIUMTEXT,"
	" env_file TEXT,"
	" umask INT,"
	" inherit_env BOOLEAN NOT NULL DEFAULT FALSE,"
	" UNIQUE KEY jobs_name (name),"
	/* the claim reads due jobs in next_fire_at order */
	" KEY jobs_due (paused, next_fire_at))" MY_TABLE_OPTS,
	/* job_id has no foreign key: deleting a job keeps its run log, and
	 * lease-lock attempts are logged with job_id 0.  AUTO_INCREMENT is
	 * persistent in InnoDB (MariaDB 10.2.4+, MySQL 8): ids are not reused. */
	"CREATE TABLE IF NOT EXISTS runs ("
	" id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" job_id BIGINT NOT NULL,"
	" job_name VARCHAR(255) NOT NULL,"
	" fire_at BIGINT NOT NULL,"
	" attempt INT NOT NULL,"
	" state INT NOT NULL,"
	" due_at BIGINT NOT NULL,"
	" node VARCHAR(320),"
	" claim_token VARCHAR(64),"
	" started_ms BIGINT,"
	" finished_ms BIGINT,"
	" exit_code INT,"
	" missed BIGINT NOT NULL DEFAULT 0,"
	" error TEXT,"
	" output MEDIUMTEXT,"
	" created_ms BIGINT NOT NULL,"
	" UNIQUE KEY runs_fire (job_id, fire_at, attempt)," /* invariant 1 */
	" KEY runs_unclaimed (state, node, due_at),"
	" KEY runs_node_state (node, state),"
	" KEY runs_job_state (job_id, state),"
	" KEY runs_fire_at (fire_at))" MY_TABLE_OPTS,
	"CREATE TABLE IF NOT EXISTS nodes ("
	" id VARCHAR(320) NOT NULL PRIMARY KEY,"
	" incarnation VARCHAR(64) NOT NULL,"
	" host VARCHAR(255),"
	" pid INT,"
	" workers INT,"
	" state VARCHAR(16) NOT NULL CHECK (state IN ('alive', 'dead', 'stopped')),"
	" started_ms BIGINT,"
	" heartbeat_ms BIGINT,"
	" lease_until BIGINT,"
	" seen_gen BIGINT NOT NULL DEFAULT 0)" MY_TABLE_OPTS,
	"CREATE TABLE IF NOT EXISTS locks ("
	" name VARCHAR(255) NOT NULL PRIMARY KEY,"
	" owner VARCHAR(320) NOT NULL,"
	" since_ms BIGINT NOT NULL,"
	" until_ms BIGINT NOT NULL,"
	" fence BIGINT NOT NULL)" MY_TABLE_OPTS,
	/* A pause or delete returns once every live node has seen it
	 * (docs/scheduler.md "Pause and delete"). */
	"CREATE TABLE IF NOT EXISTS meta (`key` VARCHAR(64) NOT NULL PRIMARY KEY,"
	" value BIGINT NOT NULL)" MY_TABLE_OPTS,
	"INSERT IGNORE INTO meta VALUES ('jobs_gen', 0)",
	NULL,
};

/* 2: the handlers each node registered (built-ins included), so a claim
 * gives a node only the handler jobs it can run.  Rows of a node's earlier
 * process are replaced when it registers again; a dead node's rows stay and
 * count for nothing (nodes.state). */
static const char *const my_migration_2[] = {
	"CREATE TABLE IF NOT EXISTS node_handlers ("
	" node_id VARCHAR(320) NOT NULL,"
	" handler VARCHAR(320) NOT NULL,"
	" PRIMARY KEY (node_id, handler))" MY_TABLE_OPTS,
	NULL,
};

/* 3: one job's runs (runs --job X, a job's last runs) without reading the
 * whole run log: equality on the name, then the listing's order (issue 23
 * item 10, docs/store.md). */
static const char *const my_migration_3[] = {
	"CREATE INDEX IF NOT EXISTS runs_job_name_fire ON runs (job_name, fire_at, attempt, id)",
	NULL,
};

/* 4: a job's window: no fire before start_at, none after end_at (epoch
 * ms; NULL: open), issue 28 item 7. */
static const char *const my_migration_4[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS start_at BIGINT NULL, "
	"ADD COLUMN IF NOT EXISTS end_at BIGINT NULL",
	NULL,
};

/* 5: MariaDB Galera, the member each node writes through (galera.c):
 * one writer member at a time.  This dialect's own; empty elsewhere. */
static const char *const my_migration_5[] = {
	"CREATE TABLE IF NOT EXISTS galera_writers ("
	" node VARCHAR(320) NOT NULL PRIMARY KEY,"
	" member VARCHAR(255) NOT NULL,"
	" seen_ms BIGINT NOT NULL)" MY_TABLE_OPTS,
	NULL,
};

/* 6: fan-in (issue 26 item 3): one row per (dependent, needed job),
 * done = 1 once the needed job succeeded since the dependent's last fire
 * (store/needs.c). */
static const char *const my_migration_6[] = {
	"CREATE TABLE IF NOT EXISTS job_needs (job_id BIGINT NOT NULL, need_id BIGINT NOT NULL, "
	"done INT NOT NULL DEFAULT 0, PRIMARY KEY (job_id, need_id), "
	"KEY job_needs_need (need_id))" MY_TABLE_OPTS,
	NULL,
};

/* 7: the audit trail (issue 29 item 2): one row per change, written in
 * the change's own transaction (store/audit.c); at_ms is the database
 * clock, job the job's name then (NULL: no job), detail a JSON object of
 * the changed keys' before and after, secrets masked.  Pruned with the
 * run log's retention (by at_ms). */
static const char *const my_migration_7[] = {
	"CREATE TABLE IF NOT EXISTS audit ("
	" id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" at_ms BIGINT NOT NULL,"
	" actor VARCHAR(320) NOT NULL,"
	" action VARCHAR(32) NOT NULL,"
	" job VARCHAR(255) NULL,"
	" detail MEDIUMTEXT NOT NULL,"
	" KEY audit_at (at_ms),"
	" KEY audit_job (job, id))" MY_TABLE_OPTS,
	NULL,
};

/* 8: spread (issue 28 item 1): H's and --spread's stored seed (NULL:
 * none), --spread and --start-jitter in ms (0: none). */
static const char *const my_migration_8[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS start_jitter_ms BIGINT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS spread_ms BIGINT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS spread_seed BIGINT NULL",
	NULL,
};

/* 9: reactions (issue 26, docs/reactions.md): a job's targets, one a
 * line, and the outbox of events, each written with the outcome that
 * causes it; UNIQUE makes one event per (run, kind, target), which is why
 * a target is at most 700 characters (the index's 3072 bytes). */
static const char *const my_migration_9[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS on_failure TEXT NULL, "
	"ADD COLUMN IF NOT EXISTS on_success TEXT NULL, "
	"ADD COLUMN IF NOT EXISTS on_misfire TEXT NULL",
	"CREATE TABLE IF NOT EXISTS events ("
	" id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" job_id BIGINT NOT NULL,"
	" job_name VARCHAR(255) NOT NULL,"
	" run_id BIGINT NOT NULL,"
	" kind INT NOT NULL,"
	" target VARCHAR(700) NOT NULL,"
	" state INT NOT NULL,"
	" attempts INT NOT NULL DEFAULT 0,"
	" next_at BIGINT NOT NULL,"
	" last_error TEXT NULL,"
	" node VARCHAR(320) NULL,"
	" claim_token VARCHAR(64) NULL,"
	" created_ms BIGINT NOT NULL,"
	" finished_ms BIGINT NULL,"
	" UNIQUE KEY events_once (run_id, kind, target),"
	" KEY events_due (state, next_at))" MY_TABLE_OPTS,
	NULL,
};

/* 10: cancel and parameters (issue 27 items 3-4): when a cancel was asked for
 * (epoch ms), the run's parameters (a JSON object) and the keys a job
 * allows (a JSON object of defaults).  No index of its own: MariaDB has
 * no partial index, and one on (state, cancel_requested_at) matched the
 * claim's "state = 1 AND cancel_requested_at IS NULL" better than
 * runs_unclaimed, so concurrent claims locked each other's rows and
 * deadlocked (conf_test_concurrent_claimers).  A node's poll reads its own
 * live runs through runs_node_state (node, state) instead; the handed-back
 * ones through runs_unclaimed. */
static const char *const my_migration_10[] = {
	"ALTER TABLE runs ADD COLUMN IF NOT EXISTS cancel_requested_at BIGINT NULL, "
	"ADD COLUMN IF NOT EXISTS params MEDIUMTEXT NULL",
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS params MEDIUMTEXT NULL",
	NULL,
};

/* 11: overdue (issue 26 item 1, docs/reactions.md): no success for
 * max_silence_ms (0: never) raises one event per silent period to
 * on_overdue's targets; a job's last success is found through
 * runs_job_state (job_id, state). */
static const char *const my_migration_11[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS max_silence_ms BIGINT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS on_overdue TEXT NULL",
	NULL,
};

/* 12: HTTP jobs (issue 27 item 1, docs/exec.md): "METHOD URL", the
 * request headers (one a line), the body, the statuses that succeed and
 * a CA file; NULL for every other executor.  Placeholders are kept as
 * written: secrets never reach these columns. */
static const char *const my_migration_12[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS http MEDIUMTEXT NULL, "
	"ADD COLUMN IF NOT EXISTS http_headers MEDIUMTEXT NULL, "
	"ADD COLUMN IF NOT EXISTS http_body MEDIUMTEXT NULL, "
	"ADD COLUMN IF NOT EXISTS http_expect TEXT NULL, "
	"ADD COLUMN IF NOT EXISTS http_ca_file TEXT NULL",
	NULL,
};

/* 13: every-node jobs (issue 28 item 6, docs/scheduler.md "Every node"):
 * one run per live node of a fire, each for its node (for_node) with its
 * index and the number of nodes fixed at the claim (node_total 0: an
 * ordinary run, index 0); invariant 1 holds per (fire, node), so the
 * unique key takes node_index (the new key is added before the old one
 * goes: the table is never without one). */
static const char *const my_migration_13[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS on_every_node BOOLEAN NOT NULL DEFAULT 0",
	"ALTER TABLE runs ADD COLUMN IF NOT EXISTS for_node VARCHAR(320) NULL, "
	"ADD COLUMN IF NOT EXISTS node_index INT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS node_total INT NOT NULL DEFAULT 0",
	"ALTER TABLE runs ADD UNIQUE KEY IF NOT EXISTS runs_fire_node "
	"(job_id, fire_at, attempt, node_index)",
	"ALTER TABLE runs DROP KEY IF EXISTS runs_fire",
	/* a lost or stopped node's every-node runs, found by the reap */
	"CREATE INDEX IF NOT EXISTS runs_for_node ON runs (for_node)",
	NULL,
};

/* 14: SQL jobs (issue 27 item 2, docs/exec.md): the statement and the
 * file naming the database it runs on (NULL: the scheduler's own).  The
 * URL itself stays in the file: it may hold a password. */
static const char *const my_migration_14[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS sql_text MEDIUMTEXT NULL, "
	"ADD COLUMN IF NOT EXISTS sql_db_file TEXT NULL",
	NULL,
};

/* 15: backfill (issue 28 item 5): a run's kind (1 backfill) and the
 * backfill's --max-running (NULL: no cap), checked by CLAIM_RUNS; an
 * instant's first attempt stays unique by UNIQUE(job_id, fire_at,
 * attempt). */
static const char *const my_migration_15[] = {
	"ALTER TABLE runs ADD COLUMN IF NOT EXISTS kind INT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS max_running INT NULL",
	NULL,
};

/* 16: --max-runs (issue 28 item 7): the limit (0: none) and the count of
 * the schedule's fires claimed as runs, raised by the claim that writes
 * them (JOBS_ADVANCE). */
static const char *const my_migration_16[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS max_runs INT NOT NULL DEFAULT 0, "
	"ADD COLUMN IF NOT EXISTS runs_fired BIGINT NOT NULL DEFAULT 0",
	NULL,
};

/* 17: exclusion calendars (issue 28 item 7): a calendar's days (sorted
 * "YYYY-MM-DD" lines, never changed once added); a job's
 * --exclude-calendar and the days it was given with it. */
static const char *const my_migration_17[] = {
	"CREATE TABLE IF NOT EXISTS calendars (name VARCHAR(200) CHARACTER SET utf8mb4 "
	"COLLATE utf8mb4_bin PRIMARY KEY, days MEDIUMTEXT NOT NULL, created_ms BIGINT NOT NULL) "
	"ENGINE=InnoDB",
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS exclude_calendar TEXT NULL, "
	"ADD COLUMN IF NOT EXISTS exclude_days MEDIUMTEXT NULL",
	NULL,
};

/* 18: concurrency caps (issue 28 item 3, docs/scheduler.md "Concurrency
 * caps"): a job's tags (one a line) and each tag's cap (its row is what
 * claims lock).  The claim counts a capped tag's live runs through
 * runs_job_state (job_id, state): no index of its own. */
static const char *const my_migration_18[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS tags TEXT NULL",
	"CREATE TABLE IF NOT EXISTS tags (name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE "
	"utf8mb4_bin PRIMARY KEY, max_running INT NOT NULL, created_ms BIGINT NOT NULL, "
	"updated_ms BIGINT NOT NULL) ENGINE=InnoDB",
	NULL,
};

/* 19: priorities (issue 28 item 4, docs/scheduler.md "Priorities"). */
static const char *const my_migration_19[] = {
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS priority INT NOT NULL DEFAULT 0",
	/* the claim's order, (next_fire_at, priority DESC), from the index;
	 * it replaces jobs_due (the same prefix), so a job's advance writes
	 * one index, as before */
	"ALTER TABLE jobs DROP INDEX IF EXISTS jobs_due, ADD INDEX IF NOT EXISTS jobs_due_prio "
	"(paused, next_fire_at, priority DESC)",
	NULL,
};

/* 20: the overdue check (OVERDUE_FIND, every 5 s on every node's db
 * thread) reads only the jobs with a --max-silence through this index: it
 * read every job, 4 to 11 s a check at a million jobs, and the node's
 * claims waited behind it (docs/benchmarks.md "W4").  No partial index on
 * MariaDB: the jobs without one are the key 0, which the range skips. */
static const char *const my_migration_20[] = {
	"ALTER TABLE jobs ADD INDEX IF NOT EXISTS jobs_silent (max_silence_ms)",
	NULL,
};

static const struct {
	int version;
	const char *const *stmts;
} my_migrations[] = {
	{1, my_migration_1},
	{2, my_migration_2},
	{3, my_migration_3},
	{4, my_migration_4},
	{5, my_migration_5},
	{6, my_migration_6},
	{7, my_migration_7},
	{8, my_migration_8},
	{9, my_migration_9},
	{10, my_migration_10},
	{11, my_migration_11},
	{12, my_migration_12},
	{13, my_migration_13},
	{14, my_migration_14},
	{15, my_migration_15},
	{16, my_migration_16},
	{17, my_migration_17},
	{18, my_migration_18},
	{19, my_migration_19},
	{20, my_migration_20},
};

_Static_assert(sizeof(my_migrations) / sizeof(my_migrations[0]) == DBCRON_MY_SCHEMA_VERSION,
	       "one migration per schema version");

#endif
