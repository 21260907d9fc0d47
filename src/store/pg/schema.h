/*
 * PostgreSQL schema, as numbered migrations: migrations[k] upgrades a
 * database at version k to version k + 1; a released entry is never edited,
 * only followed by a new one.  The logical schema is the SQLite dialect's.
 */
#ifndef DBCRON_STORE_PG_SCHEMA_H
#define DBCRON_STORE_PG_SCHEMA_H

/* Highest migration this binary knows. */
#define DBCRON_PG_SCHEMA_VERSION 21

static const char *const migration_1[] = {
	"CREATE TABLE jobs ("
	" id BIGSERIAL PRIMARY KEY,"
	" name TEXT NOT NULL UNIQUE,"
	" kind INTEGER NOT NULL,"
	" spec TEXT NOT NULL,"
	" interval_ms BIGINT NOT NULL DEFAULT 0,"
	" anchor_ms BIGINT NOT NULL DEFAULT 0,"
	" at_ms BIGINT NOT NULL DEFAULT -1,"
	" tz TEXT,"
	" misfire INTEGER NOT NULL,"
	" max_catchup INTEGER NOT NULL,"
	" misfire_threshold_ms BIGINT NOT NULL,"
	" overlap INTEGER NOT NULL,"
	" node_loss INTEGER NOT NULL,"
	" max_retries INTEGER NOT NULL,"
	" retry_base_ms BIGINT NOT NULL,"
	" retry_cap_ms BIGINT NOT NULL,"
	" retry_jitter BOOLEAN NOT NULL DEFAULT false,"
	" timeout_ms BIGINT NOT NULL DEFAULT 0,"
	" executor INTEGER NOT NULL,"
	" argv TEXT,"
	" handler TEXT,"
	" arg TEXT,"
	" paused BOOLEAN NOT NULL DEFAULT false,"
	" next_fire_at BIGINT,"
	" created_ms BIGINT NOT NULL,"
	" updated_ms BIGINT NOT NULL)",
	/* The claim reads due jobs in next_fire_at order: cost grows with
	 * the due jobs, not with all jobs. */
	"CREATE INDEX jobs_due ON jobs (next_fire_at)"
	" WHERE NOT paused AND next_fire_at IS NOT NULL",
	/* job_id has no foreign key: deleting a job keeps its run log, and
	 * lease-lock attempts are logged with job_id 0. */
	"CREATE TABLE runs ("
	" id BIGSERIAL PRIMARY KEY,"
	" job_id BIGINT NOT NULL,"
	" job_name TEXT NOT NULL,"
	" fire_at BIGINT NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" state INTEGER NOT NULL,"
	" due_at BIGINT NOT NULL,"
	" node TEXT,"
	" claim_token TEXT,"
	" started_ms BIGINT,"
	" finished_ms BIGINT,"
	" exit_code INTEGER,"
	" missed BIGINT NOT NULL DEFAULT 0,"
	" error TEXT,"
	" output TEXT,"
	" created_ms BIGINT NOT NULL,"
	" UNIQUE (job_id, fire_at, attempt))", /* invariant 1 */
	"CREATE INDEX runs_unclaimed ON runs (due_at) WHERE state = 1 AND node IS NULL",
	"CREATE INDEX runs_node_state ON runs (node, state)",
	"CREATE INDEX runs_job_state ON runs (job_id, state)",
	"CREATE INDEX runs_fire_at ON runs (fire_at)",
	"CREATE TABLE nodes ("
	" id TEXT PRIMARY KEY,"
	" incarnation TEXT NOT NULL,"
	" host TEXT,"
	" pid INTEGER,"
	" workers INTEGER,"
	" state TEXT NOT NULL CHECK (state IN ('alive', 'dead', 'stopped')),"
	" started_ms BIGINT,"
	" heartbeat_ms BIGINT,"
	" lease_until BIGINT)",
	"CREATE TABLE locks ("
	" name TEXT PRIMARY KEY,"
	" owner TEXT NOT NULL,"
	" since_ms BIGINT NOT NULL,"
	" until_ms BIGINT NOT NULL,"
	" fence BIGINT NOT NULL)",
	NULL,
};

/* 2: a job the scheduler cannot plan or decode is set aside with its
 * reason (next_fire_at NULL keeps it out of the due index) instead of
 * failing every claim. */
static const char *const migration_2[] = {
	"ALTER TABLE jobs ADD COLUMN set_aside TEXT",
	/* A pause or delete returns once every live node has seen it: each
	 * bumps jobs_gen, each heartbeat reports the one its node has acted
	 * on (docs/scheduler.md "Pause and delete"). */
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
	"INSERT INTO meta VALUES ('jobs_gen', 0)",
	"ALTER TABLE nodes ADD COLUMN seen_gen BIGINT NOT NULL DEFAULT 0",
	NULL,
};

/* 3: what a shell job runs as (docs/security.md): its user and group
 * (NULL: the node's), directory (NULL: the user's home), its own variables
 * (a JSON array of "KEY=VALUE"), an env-file on the node's host, a umask
 * (NULL: the node's), and whether it starts from the node's environment. */
static const char *const migration_3[] = {
	"ALTER TABLE jobs ADD COLUMN run_user TEXT, ADD COLUMN run_group TEXT,"
	" ADD COLUMN cwd TEXT, ADD COLUMN env TEXT, ADD COLUMN env_file TEXT,"
	" ADD COLUMN umask INTEGER, ADD COLUMN inherit_env BOOLEAN NOT NULL DEFAULT false",
	NULL,
};

/* 4: the handlers each node registered (built-ins included), so a claim
 * gives a node only the handler jobs it can run.  Rows of a node's earlier
 * process are replaced when it registers again; a dead node's rows stay and
 * count for nothing (nodes.state). */
static const char *const migration_4[] = {
	"CREATE TABLE node_handlers ("
	" node_id TEXT NOT NULL,"
	" handler TEXT NOT NULL,"
	" PRIMARY KEY (node_id, handler))",
	NULL,
};

/* 5: one job's runs (runs --job X, a job's last runs) without reading the
 * whole run log: equality on the name, then the listing's order (issue 23
 * item 10, docs/store.md). */
static const char *const migration_5[] = {
	"CREATE INDEX runs_job_name_fire ON runs (job_name, fire_at, attempt, id)",
	NULL,
};

/* 6: a job's window: no fire before start_at, none after end_at (epoch
 * ms; NULL: open), issue 28 item 7. */
static const char *const migration_6[] = {
	"ALTER TABLE jobs ADD COLUMN start_at BIGINT, ADD COLUMN end_at BIGINT",
	NULL,
};

/* 7: fan-in (issue 26 item 3): one row per (dependent, needed job),
 * done = 1 once the needed job succeeded since the dependent's last fire
 * (store/needs.c). */
static const char *const migration_7[] = {
	"CREATE TABLE job_needs (job_id BIGINT NOT NULL, need_id BIGINT NOT NULL, "
	"done INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (job_id, need_id))",
	"CREATE INDEX job_needs_need ON job_needs (need_id)",
	NULL,
};

/* 8: the audit trail (issue 29 item 2): one row per change, written in
 * the change's own transaction (store/audit.c); at_ms is the database
 * clock, job the job's name then (NULL: no job), detail a JSON object of
 * the changed keys' before and after, secrets masked.  Pruned with the
 * run log's retention (by at_ms). */
static const char *const migration_8[] = {
	"CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, at_ms BIGINT NOT NULL, "
	"actor TEXT NOT NULL, action TEXT NOT NULL, job TEXT, detail TEXT NOT NULL)",
	"CREATE INDEX audit_at ON audit (at_ms)",
	"CREATE INDEX audit_job ON audit (job, id)",
	NULL,
};

/* 9: spread (issue 28 item 1): H's and --spread's stored seed (NULL:
 * none), --spread and --start-jitter in ms (0: none). */
static const char *const migration_9[] = {
	"ALTER TABLE jobs ADD COLUMN start_jitter_ms BIGINT NOT NULL DEFAULT 0, "
	"ADD COLUMN spread_ms BIGINT NOT NULL DEFAULT 0, ADD COLUMN spread_seed BIGINT",
	NULL,
};

/* 10: reactions (issue 26, docs/reactions.md): a job's targets, one a
 * line, and the outbox of events, each written with the outcome that
 * causes it; UNIQUE makes one event per (run, kind, target). */
static const char *const migration_10[] = {
	"ALTER TABLE jobs ADD COLUMN on_failure TEXT, ADD COLUMN on_success TEXT, "
	"ADD COLUMN on_misfire TEXT",
	"CREATE TABLE events ("
	" id BIGSERIAL PRIMARY KEY,"
	" job_id BIGINT NOT NULL,"
	" job_name TEXT NOT NULL,"
	" run_id BIGINT NOT NULL,"
	" kind INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" state INTEGER NOT NULL,"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" next_at BIGINT NOT NULL,"
	" last_error TEXT,"
	" node TEXT,"
	" claim_token TEXT,"
	" created_ms BIGINT NOT NULL,"
	" finished_ms BIGINT,"
	" UNIQUE (run_id, kind, target))",
	"CREATE INDEX events_due ON events (state, next_at)",
	NULL,
};

/* 11: cancel and parameters (issue 27 items 3-4): when a cancel was asked for
 * (epoch ms), the run's parameters (a JSON object) and the keys a job
 * allows (a JSON object of defaults).  The partial index holds only the
 * live runs with a request: each node's poll costs what is asked. */
static const char *const migration_11[] = {
	"ALTER TABLE runs ADD COLUMN cancel_requested_at BIGINT, ADD COLUMN params TEXT",
	"ALTER TABLE jobs ADD COLUMN params TEXT",
	"CREATE INDEX runs_cancel ON runs (node)"
	" WHERE cancel_requested_at IS NOT NULL AND state IN (1, 2)",
	NULL,
};

/* 12: overdue (issue 26 item 1, docs/reactions.md): no success for
 * max_silence_ms (0: never) raises one event per silent period to
 * on_overdue's targets; a job's last success is found through
 * runs_job_state (job_id, state). */
static const char *const migration_12[] = {
	"ALTER TABLE jobs ADD COLUMN max_silence_ms BIGINT NOT NULL DEFAULT 0, "
	"ADD COLUMN on_overdue TEXT",
	NULL,
};

/* 13: HTTP jobs (issue 27 item 1, docs/exec.md): "METHOD URL", the
 * request headers (one a line), the body, the statuses that succeed and
 * a CA file; NULL for every other executor.  Placeholders are kept as
 * written: secrets never reach these columns. */
static const char *const migration_13[] = {
	"ALTER TABLE jobs ADD COLUMN http TEXT, ADD COLUMN http_headers TEXT, "
	"ADD COLUMN http_body TEXT, ADD COLUMN http_expect TEXT, ADD COLUMN http_ca_file TEXT",
	NULL,
};

/* 14: every-node jobs (issue 28 item 6, docs/scheduler.md "Every node"):
 * one run per live node of a fire, each for its node (for_node) with its
 * index and the number of nodes fixed at the claim (node_total 0: an
 * ordinary run, index 0); invariant 1 holds per (fire, node), so UNIQUE
 * takes node_index. */
static const char *const migration_14[] = {
	"ALTER TABLE jobs ADD COLUMN on_every_node BOOLEAN NOT NULL DEFAULT false",
	"ALTER TABLE runs ADD COLUMN for_node TEXT, "
	"ADD COLUMN node_index INTEGER NOT NULL DEFAULT 0, "
	"ADD COLUMN node_total INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE runs DROP CONSTRAINT runs_job_id_fire_at_attempt_key, "
	"ADD CONSTRAINT runs_fire_node UNIQUE (job_id, fire_at, attempt, node_index)",
	/* a lost or stopped node's every-node runs, found by the reap */
	"CREATE INDEX runs_for_node ON runs (for_node, state) WHERE for_node IS NOT NULL",
	NULL,
};

/* 15: SQL jobs (issue 27 item 2, docs/exec.md): the statement and the
 * file naming the database it runs on (NULL: the scheduler's own).  The
 * URL itself stays in the file: it may hold a password. */
static const char *const migration_15[] = {
	"ALTER TABLE jobs ADD COLUMN sql_text TEXT, ADD COLUMN sql_db_file TEXT",
	NULL,
};

/* 16: backfill (issue 28 item 5): a run's kind (1 backfill) and the
 * backfill's --max-running (NULL: no cap), checked by CLAIM_RUNS; an
 * instant's first attempt stays unique by UNIQUE(job_id, fire_at,
 * attempt). */
static const char *const migration_16[] = {
	"ALTER TABLE runs ADD COLUMN kind INTEGER NOT NULL DEFAULT 0, "
	"ADD COLUMN max_running INTEGER",
	NULL,
};

/* 17: --max-runs (issue 28 item 7): the limit (0: none) and the count of
 * the schedule's fires claimed as runs, raised by the claim that writes
 * them (JOBS_ADVANCE). */
static const char *const migration_17[] = {
	"ALTER TABLE jobs ADD COLUMN max_runs INTEGER NOT NULL DEFAULT 0, "
	"ADD COLUMN runs_fired BIGINT NOT NULL DEFAULT 0",
	NULL,
};

/* 18: exclusion calendars (issue 28 item 7): a calendar's days (sorted
 * "YYYY-MM-DD" lines, never changed once added); a job's
 * --exclude-calendar and the days it was given with it. */
static const char *const migration_18[] = {
	"CREATE TABLE calendars (name TEXT PRIMARY KEY, days TEXT NOT NULL, "
	"created_ms BIGINT NOT NULL)",
	"ALTER TABLE jobs ADD COLUMN exclude_calendar TEXT, ADD COLUMN exclude_days TEXT",
	NULL,
};

/* 19: concurrency caps (issue 28 item 3, docs/scheduler.md "Concurrency
 * caps"): a job's tags (one a line) and each tag's cap (its row is what
 * claims lock).  The claim counts a capped tag's live runs through
 * runs_job_state (job_id, state): no index of its own, so runs cost no
 * more to write. */
static const char *const migration_19[] = {
	"ALTER TABLE jobs ADD COLUMN tags TEXT",
	"CREATE TABLE tags (name TEXT PRIMARY KEY, max_running INT NOT NULL, "
	"created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL)",
	NULL,
};

/* 20: priorities (issue 28 item 4, docs/scheduler.md "Priorities"). */
static const char *const migration_20[] = {
	"ALTER TABLE jobs ADD COLUMN priority INT NOT NULL DEFAULT 0",
	/* the claim's order, (next_fire_at, priority DESC), from the index;
	 * it replaces jobs_due (the same prefix and WHERE), so a job's
	 * advance writes one index, as before */
	"CREATE INDEX jobs_due_prio ON jobs (next_fire_at, priority DESC)"
	" WHERE NOT paused AND next_fire_at IS NOT NULL",
	"DROP INDEX jobs_due",
	NULL,
};

/* 21: the overdue check (OVERDUE_FIND, every 5 s on every node's db
 * thread) reads only the jobs with a --max-silence, through this partial
 * index, instead of every job (docs/benchmarks.md "W4"); the jobs without
 * one are not in it, so their writes do not touch it. */
static const char *const migration_21[] = {
	"CREATE INDEX jobs_silent ON jobs (max_silence_ms) WHERE max_silence_ms > 0",
	NULL,
};

static const struct {
	int version;
	const char *const *stmts;
} migrations[] = {
	{1, migration_1},
	{2, migration_2},
	{3, migration_3},
	{4, migration_4},
	{5, migration_5},
	{6, migration_6},
	{7, migration_7},
	{8, migration_8},
	{9, migration_9},
	{10, migration_10},
	{11, migration_11},
	{12, migration_12},
	{13, migration_13},
	{14, migration_14},
	{15, migration_15},
	{16, migration_16},
	{17, migration_17},
	{18, migration_18},
	{19, migration_19},
	{20, migration_20},
	{21, migration_21},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == DBCRON_PG_SCHEMA_VERSION,
	       "one migration per schema version");

#endif
