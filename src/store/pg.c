/*
 * The PostgreSQL backend (libpq): store_pg_ops.
 *
 * Owns one PGconn per handle, the statements prepared on it, and the
 * PostgreSQL schema with its numbered migrations.  docs/store.md has the
 * claim protocol in prose; each statement below names the invariant it
 * keeps (store.h numbers them):
 *
 *  1 no duplicate fire   runs UNIQUE (job_id, fire_at, attempt); fires are
 *                        inserted ON CONFLICT DO NOTHING and only rows the
 *                        insert RETURNed are handed to the node.
 *  3 fencing             every write to a claimed run matches its id,
 *                        claim_token and node (and a live state).
 *  4 one clock           every timestamp is DBNOW below or derived from it.
 *  5 backpressure        the claim stops at req->max SCHEDULED runs.
 *
 * Statement shape: the number of statements per call is O(1), never per
 * row.  Many rows travel as array parameters and come apart with unnest().
 * Every statement is parameterised and prepared once per connection.
 *
 * Connection loss: a call that meets a broken connection returns
 * DBCRON_ECONN; the next call reconnects (PQreset) before it does anything,
 * and the prepared statements are made again on the new connection.  A
 * call is never silently retried: a write whose reply was lost may have
 * committed.
 *
 * Passwords: the connection string is kept only inside libpq; messages
 * name the database by its masked form (dbcron__pg_mask_url) and server
 * messages are scrubbed of the password before they reach a dbcron_err.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "store/pg.h"
#include "store/store.h"

/* The database clock (invariant 4): epoch milliseconds.  clock_timestamp()
 * rather than now(): now() is frozen at transaction start. */
#define DBNOW "((extract(epoch from clock_timestamp()) * 1000)::bigint)"

/* Serialises concurrent `dbcron init` (pg_advisory_xact_lock key). */
#define MIGRATE_LOCK_KEY "4419240577205112"

/* Rows per job_put statement: big enough that 100,000 jobs are 20
 * statements, small enough that one parameter stays a few MiB. */
#define PUT_CHUNK 5000

/* ------------------------------------------------------------------ */
/* Schema                                                              */
/* ------------------------------------------------------------------ */

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

static const struct {
	int version;
	const char *const *stmts;
} migrations[] = {
	{1, migration_1},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == DBCRON_PG_SCHEMA_VERSION,
	       "one migration per schema version");

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

#define JOB_COLS(p)                                                           \
	p "id, " p "name, " p "kind, " p "spec, " p "interval_ms, " p         \
	"anchor_ms, " p "at_ms, " p "tz, " p "misfire, " p "max_catchup, " p  \
	"misfire_threshold_ms, " p "overlap, " p "node_loss, " p              \
	"max_retries, " p "retry_base_ms, " p "retry_cap_ms, " p              \
	"retry_jitter, " p "timeout_ms, " p "executor, " p "argv, " p         \
	"handler, " p "arg, " p "paused, " p "next_fire_at, " p "created_ms, " \
	p "updated_ms"
#define NJOBCOLS 26

#define RUN_COLS(p)                                                        \
	p "id, " p "job_id, " p "job_name, " p "fire_at, " p "attempt, " p \
	"state, " p "due_at, " p "node, " p "claim_token, " p              \
	"started_ms, " p "finished_ms, " p "exit_code, " p "missed, " p    \
	"error, " p "output"
#define NRUNCOLS 15

/* The definition columns job_put writes, in its unnest() order. */
#define PUT_COLS                                                          \
	"name, kind, spec, interval_ms, anchor_ms, at_ms, tz, misfire, "  \
	"max_catchup, misfire_threshold_ms, overlap, node_loss, "         \
	"max_retries, retry_base_ms, retry_cap_ms, retry_jitter, "        \
	"timeout_ms, executor, argv, handler, arg, paused, next_fire_at"
#define NPUTCOLS 23
#define PUT_UNNEST                                                          \
	"unnest($1::text[], $2::int[], $3::text[], $4::bigint[], "          \
	"$5::bigint[], $6::bigint[], $7::text[], $8::int[], $9::int[], "    \
	"$10::bigint[], $11::int[], $12::int[], $13::int[], $14::bigint[], " \
	"$15::bigint[], $16::bool[], $17::bigint[], $18::int[], $19::text[], " \
	"$20::text[], $21::text[], $22::bool[], $23::bigint[])"
#define PUT_INSERT                                                       \
	"WITH c AS (SELECT " DBNOW " AS now) "                           \
	"INSERT INTO jobs AS j (" PUT_COLS ", created_ms, updated_ms) "  \
	"SELECT v.*, c.now, c.now FROM " PUT_UNNEST " v CROSS JOIN c"

/* A job keeps its place in its series when its schedule did not change. */
#define SAME_SCHEDULE                                            \
	"(j.kind = EXCLUDED.kind AND j.spec = EXCLUDED.spec AND" \
	" j.tz IS NOT DISTINCT FROM EXCLUDED.tz)"

/*
 * Resolving the runs of lost nodes, shared by reap and node_register.  Needs
 * CTEs c(now) and d(id) (the lost node ids) before it.  Their SCHEDULED runs
 * go back to unclaimed (anyone may claim them again: invariant 2); their
 * RUNNING runs end ABANDONED and, by the job's node-loss policy, get a new
 * unclaimed attempt due now; an AFTER job whose run so ended for good is
 * rescheduled, since no completion will do it.  Rows are changed only if
 * still in the state read, so a concurrent completion wins cleanly.
 */
#define RETRY_ON_LOSS(j, a) \
	"(" j ".node_loss = 1 AND " a ".attempt <= " j ".max_retries)"
#define RESOLVE_CTES                                                              \
	", u AS (UPDATE runs SET node = NULL, claim_token = NULL"                 \
	" WHERE state = 1 AND node IN (SELECT id FROM d) RETURNING id)"           \
	", a AS (UPDATE runs SET state = 8, error = 'node lost',"                 \
	" finished_ms = (SELECT now FROM c)"                                      \
	" WHERE state = 2 AND node IN (SELECT id FROM d)"                         \
	" RETURNING job_id, job_name, fire_at, attempt)"                          \
	", r AS (INSERT INTO runs (job_id, job_name, fire_at, attempt, state,"    \
	" due_at, missed, created_ms)"                                            \
	" SELECT a.job_id, a.job_name, a.fire_at, a.attempt + 1, 1, c.now, 0, c.now" \
	" FROM a JOIN jobs jb ON jb.id = a.job_id CROSS JOIN c"                   \
	" WHERE " RETRY_ON_LOSS("jb", "a")                                        \
	" ON CONFLICT DO NOTHING RETURNING job_id)"                               \
	", f AS (UPDATE jobs SET next_fire_at = c.now + jobs.interval_ms"         \
	" FROM a CROSS JOIN c WHERE jobs.id = a.job_id AND jobs.kind = 3"          \
	" AND jobs.next_fire_at IS NULL AND NOT " RETRY_ON_LOSS("jobs", "a")      \
	" RETURNING jobs.id)"                                                     \
	" SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM a),"            \
	" (SELECT count(*) FROM d), (SELECT now FROM c)"

enum {
	S_NOW,
	S_SCHEMA_EXISTS,
	S_SCHEMA_MAX,
	S_CLAIM_JOBS,
	S_INSERT_FIRES,
	S_ADVANCE_JOBS,
	S_CLAIM_RUNS,
	S_APPLY,
	S_RETRY,
	S_AFTER_NEXT,
	S_REAP,
	S_REGISTER,
	S_HEARTBEAT,
	S_NODE_STOP,
	S_RELEASE,
	S_JOB_RUNNING,
	S_JOB_EXISTING,
	S_JOB_INSERT,
	S_JOB_IDS,
	S_JOB_UPSERT,
	S_JOB_PRUNE,
	S_JOB_GET,
	S_JOB_LIST,
	S_JOB_PAUSE,
	S_JOB_DELETE,
	S_TRIGGER_FIND,
	S_TRIGGER_INSERT,
	S_RUNS_LIST,
	S_NODES_LIST,
	S_LOCK_ACQUIRE,
	S_LOCK_HOLDER,
	S_LOCK_RENEW,
	S_LOCK_RELEASE,
	S_LOCK_LIST,
	S_LOG_RUN,
	S_PRUNE_RUNS,
	S__COUNT
};

static const struct {
	const char *what; /* names the step in error messages */
	const char *sql;
} stmts[S__COUNT] = {
	[S_NOW] = {"reading the database clock", "SELECT " DBNOW},
	[S_SCHEMA_EXISTS] = {"checking the schema",
			     "SELECT to_regclass('schema_version') IS NOT NULL"},
	[S_SCHEMA_MAX] = {"reading the schema version",
			  "SELECT coalesce(max(version), 0) FROM schema_version"},

	/* claim 1/4: lock due jobs; SKIP LOCKED lets concurrent claimers
	 * take disjoint jobs without waiting (invariant 5: LIMIT max). */
	[S_CLAIM_JOBS] = {"claim: selecting due jobs",
		"WITH c AS (SELECT " DBNOW " AS now) "
		"SELECT c.now, " JOB_COLS("j.") " FROM c LEFT JOIN LATERAL ("
		"SELECT * FROM jobs WHERE NOT paused AND next_fire_at IS NOT NULL"
		" AND next_fire_at <= c.now + $1::bigint"
		" ORDER BY next_fire_at LIMIT $2::int FOR UPDATE SKIP LOCKED) j ON true"},
	/* claim 2/4: all planned fires in one insert.  Invariant 1: a fire
	 * that exists already is not inserted and so not returned, and only
	 * returned SCHEDULED rows are claimed. */
	[S_INSERT_FIRES] = {"claim: writing fires",
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at,"
		" node, claim_token, finished_ms, missed, error, created_ms) "
		"SELECT v.job_id, v.job_name, v.fire_at, 1, v.state, v.due_at,"
		" CASE WHEN v.state = 1 THEN $8::text END,"
		" CASE WHEN v.state = 1 THEN $9::text END,"
		" CASE WHEN v.state = 1 THEN NULL ELSE $10::bigint END,"
		" v.missed, v.error, $10::bigint "
		"FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::int[],"
		" $5::bigint[], $6::bigint[], $7::text[])"
		" v(job_id, job_name, fire_at, state, due_at, missed, error) "
		"ON CONFLICT DO NOTHING RETURNING id, job_id, fire_at, state, due_at, missed"},
	/* claim 3/4: advance the locked jobs in the same transaction. */
	[S_ADVANCE_JOBS] = {"claim: advancing jobs",
		"UPDATE jobs SET next_fire_at = v.n"
		" FROM unnest($1::bigint[], $2::bigint[]) v(id, n) WHERE jobs.id = v.id"},
	/* claim 4/4: unclaimed runs (retries, triggers, runs of lost nodes),
	 * stamped with our node and token, their jobs joined in. */
	[S_CLAIM_RUNS] = {"claim: taking unclaimed runs",
		"WITH u AS (UPDATE runs SET node = $1::text, claim_token = $2::text"
		" WHERE id IN (SELECT r.id FROM runs r WHERE r.state = 1"
		" AND r.node IS NULL AND r.due_at <= $3::bigint"
		" AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = r.job_id)"
		" ORDER BY r.due_at LIMIT $4::int FOR UPDATE OF r SKIP LOCKED)"
		" AND state = 1 AND node IS NULL RETURNING " RUN_COLS("runs.") ") "
		"SELECT u.*, " JOB_COLS("j.") " FROM u JOIN jobs j ON j.id = u.job_id"},

	/* apply: fenced by id, token, node and a live state (invariant 3). */
	[S_APPLY] = {"apply: updating runs",
		"UPDATE runs SET state = v.state,"
		" started_ms = coalesce(v.started, runs.started_ms),"
		" finished_ms = coalesce(v.finished, runs.finished_ms),"
		" exit_code = coalesce(v.exit, runs.exit_code),"
		" error = coalesce(v.error, runs.error),"
		" output = coalesce(v.output, runs.output) "
		"FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[],"
		" $5::bigint[], $6::int[], $7::text[], $8::text[])"
		" v(id, token, state, started, finished, exit, error, output) "
		"WHERE runs.id = v.id AND runs.claim_token = v.token"
		" AND runs.node = $9::text AND runs.state IN (1, 2) RETURNING runs.id"},
	/* A retry is a new unclaimed row any node may take; invariant 1
	 * holds per attempt. */
	[S_RETRY] = {"apply: scheduling retries",
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at,"
		" missed, created_ms) "
		"SELECT r.job_id, r.job_name, r.fire_at, r.attempt + 1, 1, v.due, 0, " DBNOW
		" FROM unnest($1::bigint[], $2::bigint[]) v(id, due) JOIN runs r ON r.id = v.id"
		" ON CONFLICT DO NOTHING"},
	[S_AFTER_NEXT] = {"apply: rescheduling after-jobs",
		"UPDATE jobs SET next_fire_at = v.n"
		" FROM unnest($1::bigint[], $2::bigint[]) v(id, n)"
		" WHERE jobs.id = v.id AND jobs.next_fire_at IS NULL"},

	/* reap: the nodes row is the mutex.  A reaper marks a node dead only
	 * while it is still alive and unlocked, so of two concurrent reapers
	 * exactly one resolves each node's runs. */
	[S_REAP] = {"reap",
		"WITH c AS (SELECT " DBNOW " AS now), "
		"d AS (UPDATE nodes SET state = 'dead' WHERE id IN ("
		"SELECT id FROM nodes WHERE state = 'alive'"
		" AND lease_until < (SELECT now FROM c) FOR UPDATE SKIP LOCKED)"
		" AND state = 'alive' RETURNING id)" RESOLVE_CTES},
	/* register: orphans of an earlier incarnation are resolved before
	 * the row says alive again, in the same statement. */
	[S_REGISTER] = {"registering the node",
		"WITH c AS (SELECT " DBNOW " AS now), d AS (SELECT $1::text AS id), "
		"nd AS (INSERT INTO nodes (id, incarnation, host, pid, workers, state,"
		" started_ms, heartbeat_ms, lease_until)"
		" SELECT $1::text, $2::text, $3::text, $4::int, $5::int, 'alive',"
		" c.now, c.now, c.now + $6::bigint FROM c"
		" ON CONFLICT (id) DO UPDATE SET incarnation = EXCLUDED.incarnation,"
		" host = EXCLUDED.host, pid = EXCLUDED.pid, workers = EXCLUDED.workers,"
		" state = 'alive', started_ms = EXCLUDED.started_ms,"
		" heartbeat_ms = EXCLUDED.heartbeat_ms, lease_until = EXCLUDED.lease_until"
		" RETURNING id)" RESOLVE_CTES},
	/* heartbeat: fenced by incarnation and liveness, so a node declared
	 * dead learns it here. */
	[S_HEARTBEAT] = {"heartbeat",
		"WITH c AS (SELECT " DBNOW " AS now) "
		"UPDATE nodes SET heartbeat_ms = c.now, lease_until = c.now + $3::bigint"
		" FROM c WHERE id = $1::text AND incarnation = $2::text AND state = 'alive'"
		" RETURNING c.now"},
	[S_NODE_STOP] = {"stopping the node",
		"WITH c AS (SELECT " DBNOW " AS now), "
		"n AS (UPDATE nodes SET state = 'stopped', heartbeat_ms = c.now,"
		" lease_until = c.now FROM c WHERE id = $1::text"
		" AND incarnation = $2::text AND state = 'alive' RETURNING id), "
		"u AS (UPDATE runs SET node = NULL, claim_token = NULL"
		" WHERE state = 1 AND node IN (SELECT id FROM n) RETURNING id) "
		"SELECT (SELECT count(*) FROM n), (SELECT count(*) FROM u)"},
	[S_RELEASE] = {"releasing runs",
		"UPDATE runs SET node = NULL, claim_token = NULL"
		" FROM unnest($2::bigint[], $3::text[]) v(id, token)"
		" WHERE runs.id = v.id AND runs.claim_token = v.token"
		" AND runs.node = $1::text AND runs.state = 1"},
	[S_JOB_RUNNING] = {"checking running runs",
		"SELECT EXISTS (SELECT 1 FROM runs r JOIN nodes n ON n.id = r.node"
		" WHERE r.job_id = $1::bigint AND r.state = 2 AND r.id <> $2::bigint"
		" AND n.state = 'alive')"},

	[S_JOB_EXISTING] = {"checking job names",
		"SELECT j.name FROM jobs j JOIN unnest($1::text[]) u(n) ON u.n = j.name"
		" ORDER BY j.name LIMIT 1"},
	[S_JOB_INSERT] = {"adding jobs", PUT_INSERT " RETURNING true, j.id, j.name"},
	[S_JOB_IDS] = {"reading job ids",
		"SELECT false, j.id, j.name FROM jobs j JOIN unnest($1::text[]) u(n) ON u.n = j.name"},
	/* Unchanged definitions are not rewritten (no dead tuples when a
	 * 100,000-job file is applied again); pause state stays as the
	 * operator set it. */
	[S_JOB_UPSERT] = {"writing jobs",
		PUT_INSERT " ON CONFLICT (name) DO UPDATE SET"
		" kind = EXCLUDED.kind, spec = EXCLUDED.spec,"
		" interval_ms = EXCLUDED.interval_ms,"
		" anchor_ms = CASE WHEN " SAME_SCHEDULE " THEN j.anchor_ms ELSE EXCLUDED.anchor_ms END,"
		" at_ms = CASE WHEN " SAME_SCHEDULE " THEN j.at_ms ELSE EXCLUDED.at_ms END,"
		" tz = EXCLUDED.tz, misfire = EXCLUDED.misfire,"
		" max_catchup = EXCLUDED.max_catchup,"
		" misfire_threshold_ms = EXCLUDED.misfire_threshold_ms,"
		" overlap = EXCLUDED.overlap, node_loss = EXCLUDED.node_loss,"
		" max_retries = EXCLUDED.max_retries, retry_base_ms = EXCLUDED.retry_base_ms,"
		" retry_cap_ms = EXCLUDED.retry_cap_ms, retry_jitter = EXCLUDED.retry_jitter,"
		" timeout_ms = EXCLUDED.timeout_ms, executor = EXCLUDED.executor,"
		" argv = EXCLUDED.argv, handler = EXCLUDED.handler, arg = EXCLUDED.arg,"
		" next_fire_at = CASE WHEN " SAME_SCHEDULE " THEN j.next_fire_at"
		" ELSE EXCLUDED.next_fire_at END,"
		" updated_ms = EXCLUDED.updated_ms"
		" WHERE (j.kind, j.spec, j.interval_ms, j.tz, j.misfire, j.max_catchup,"
		" j.misfire_threshold_ms, j.overlap, j.node_loss, j.max_retries,"
		" j.retry_base_ms, j.retry_cap_ms, j.retry_jitter, j.timeout_ms,"
		" j.executor, j.argv, j.handler, j.arg) IS DISTINCT FROM"
		" (EXCLUDED.kind, EXCLUDED.spec, EXCLUDED.interval_ms, EXCLUDED.tz,"
		" EXCLUDED.misfire, EXCLUDED.max_catchup, EXCLUDED.misfire_threshold_ms,"
		" EXCLUDED.overlap, EXCLUDED.node_loss, EXCLUDED.max_retries,"
		" EXCLUDED.retry_base_ms, EXCLUDED.retry_cap_ms, EXCLUDED.retry_jitter,"
		" EXCLUDED.timeout_ms, EXCLUDED.executor, EXCLUDED.argv, EXCLUDED.handler,"
		" EXCLUDED.arg)"
		" RETURNING (j.xmax = 0), j.id, j.name"},
	/* Deleting keeps the run log.  Unclaimed runs of a deleted job would
	 * wait forever: they end ABANDONED 'job deleted', so the fire is
	 * accounted for (invariant 2), as in the SQLite backend. */
	[S_JOB_PRUNE] = {"pruning jobs",
		"WITH c AS (SELECT " DBNOW " AS now), "
		"d AS (DELETE FROM jobs j WHERE NOT EXISTS ("
		"SELECT 1 FROM unnest($1::text[]) u(n) WHERE u.n = j.name) RETURNING id), "
		"s AS (UPDATE runs SET state = 8, error = 'job deleted',"
		" finished_ms = (SELECT now FROM c)"
		" WHERE state = 1 AND node IS NULL AND job_id IN (SELECT id FROM d)) "
		"SELECT count(*) FROM d"},
	[S_JOB_GET] = {"reading the job",
		"SELECT " JOB_COLS("") " FROM jobs WHERE name = $1::text"},
	[S_JOB_LIST] = {"listing jobs",
		"SELECT " JOB_COLS("") " FROM jobs ORDER BY name"},
	[S_JOB_PAUSE] = {"pausing/resuming the job",
		"UPDATE jobs SET paused = $2::bool,"
		" next_fire_at = CASE WHEN $2::bool THEN next_fire_at ELSE $3::bigint END,"
		" updated_ms = " DBNOW " WHERE name = $1::text"},
	[S_JOB_DELETE] = {"deleting the job",
		"WITH c AS (SELECT " DBNOW " AS now), "
		"d AS (DELETE FROM jobs WHERE name = $1::text RETURNING id), "
		"s AS (UPDATE runs SET state = 8, error = 'job deleted',"
		" finished_ms = (SELECT now FROM c)"
		" WHERE state = 1 AND node IS NULL AND job_id IN (SELECT id FROM d)) "
		"SELECT count(*) FROM d"},
	[S_TRIGGER_FIND] = {"triggering the job",
		"SELECT id, name, " DBNOW " FROM jobs WHERE name = $1::text"},
	/* invariant 1: a clash with an existing fire is not written; the
	 * caller moves 1 ms on. */
	[S_TRIGGER_INSERT] = {"triggering the job",
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at,"
		" missed, created_ms) VALUES ($1::bigint, $2::text, $3::bigint, 1, 1,"
		" $3::bigint, 0, $4::bigint) ON CONFLICT DO NOTHING RETURNING id"},
	[S_RUNS_LIST] = {"listing runs",
		"SELECT * FROM (SELECT " RUN_COLS("") " FROM runs"
		" WHERE ($1::text IS NULL OR job_name = $1::text)"
		" AND ($2::int = 0 OR state = $2::int)"
		" AND ($3::bigint < 0 OR fire_at >= $3::bigint)"
		" ORDER BY fire_at DESC, job_name DESC, attempt DESC, id DESC"
		" LIMIT $4::bigint) x ORDER BY fire_at, job_name, attempt, id"},
	[S_NODES_LIST] = {"listing nodes",
		"SELECT n.id, n.host, n.pid, n.workers, n.state, n.started_ms,"
		" n.heartbeat_ms, n.lease_until, (SELECT count(*) FROM runs r"
		" WHERE r.node = n.id AND r.state = 2) FROM nodes n ORDER BY n.id"},
	/* Seed 002: insert, or take over only an expired lease, in one
	 * statement; every take-over bumps the fence.  The second branch
	 * reads the holder from the same snapshot when nothing was won. */
	[S_LOCK_ACQUIRE] = {"acquiring the lock",
		"WITH c AS (SELECT " DBNOW " AS now), "
		"ins AS (INSERT INTO locks AS l (name, owner, since_ms, until_ms, fence)"
		" SELECT $1::text, $2::text, c.now, c.now + $3::bigint, 1 FROM c"
		" ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner,"
		" since_ms = EXCLUDED.since_ms, until_ms = EXCLUDED.until_ms,"
		" fence = l.fence + 1 WHERE l.until_ms < EXCLUDED.since_ms"
		" RETURNING name, owner, since_ms, until_ms, fence) "
		"SELECT true, * FROM ins UNION ALL "
		"SELECT false, name, owner, since_ms, until_ms, fence FROM locks"
		" WHERE name = $1::text AND NOT EXISTS (SELECT 1 FROM ins)"},
	[S_LOCK_HOLDER] = {"reading the lock",
		"SELECT false, name, owner, since_ms, until_ms, fence FROM locks"
		" WHERE name = $1::text"},
	/* Owner and fence: a holder whose lease was taken over cannot renew
	 * or release the new holder's lease (seed 002, invariant 3). */
	[S_LOCK_RENEW] = {"renewing the lock",
		"WITH c AS (SELECT " DBNOW " AS now) "
		"UPDATE locks SET until_ms = c.now + $4::bigint FROM c"
		" WHERE name = $1::text AND owner = $2::text AND fence = $3::bigint"
		" RETURNING until_ms"},
	/* Release keeps the row so the fence keeps growing. */
	[S_LOCK_RELEASE] = {"releasing the lock",
		"UPDATE locks SET until_ms = " DBNOW " - 1"
		" WHERE name = $1::text AND owner = $2::text AND fence = $3::bigint"},
	[S_LOCK_LIST] = {"listing locks",
		"SELECT name, owner, since_ms, until_ms, fence FROM locks ORDER BY name"},
	[S_LOG_RUN] = {"logging the run",
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at,"
		" node, claim_token, started_ms, finished_ms, exit_code, missed, error,"
		" output, created_ms) VALUES ($1::bigint, $2::text, $3::bigint, $4::int,"
		" $5::int, $6::bigint, $7::text, $8::text, $9::bigint, $10::bigint,"
		" $11::int, $12::bigint, $13::text, $14::text, " DBNOW ")"
		" ON CONFLICT DO NOTHING RETURNING id"},
	[S_PRUNE_RUNS] = {"pruning runs",
		"DELETE FROM runs WHERE state NOT IN (1, 2) AND finished_ms < $1::bigint"},
};

/* ------------------------------------------------------------------ */
/* Text and array parameters                                           */
/* ------------------------------------------------------------------ */

typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (dbcron__grow((void **)&b->p, &b->cap, b->len + n + 1, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_putc(sbuf *b, char c) { sb_putn(b, &c, 1); }

static void sb_free(sbuf *b)
{
	dbcron__free(b->p);
	memset(b, 0, sizeof(*b));
}

/* One array parameter in PostgreSQL's text form: {1,NULL,"a\"b"}. */
typedef struct arr {
	sbuf b;
	size_t n;
} arr;

static void arr_sep(arr *a) { sb_putc(&a->b, a->n++ ? ',' : '{'); }

static void arr_null(arr *a)
{
	arr_sep(a);
	sb_puts(&a->b, "NULL");
}

static void arr_i64(arr *a, int64_t v)
{
	char num[24];
	int k = snprintf(num, sizeof(num), "%" PRId64, v);
	arr_sep(a);
	sb_putn(&a->b, num, (size_t)k);
}

/* v < 0 stands for "unset" in dbcron's structs: SQL NULL. */
static void arr_i64n(arr *a, int64_t v)
{
	if (v < 0)
		arr_null(a);
	else
		arr_i64(a, v);
}

static void arr_bool(arr *a, bool v)
{
	arr_sep(a);
	sb_putc(&a->b, v ? 't' : 'f');
}

/* Length of the valid UTF-8 sequence at s, 0 when invalid. */
static size_t utf8_seq(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

/*
 * A text element, quoted.  clean: captured output may be any bytes, but
 * the server rejects invalid UTF-8 (and would fail the whole batch), so
 * such bytes become '?'.
 */
static void arr_text_x(arr *a, const char *s, bool clean)
{
	if (!s) {
		arr_null(a);
		return;
	}
	arr_sep(a);
	sb_putc(&a->b, '"');
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = clean ? utf8_seq(p) : 1;
		if (n == 0) {
			sb_putc(&a->b, '?');
			p++;
			continue;
		}
		if (*p == '"' || *p == '\\')
			sb_putc(&a->b, '\\');
		sb_putn(&a->b, (const char *)p, n);
		p += n;
	}
	sb_putc(&a->b, '"');
}

static void arr_text(arr *a, const char *s) { arr_text_x(a, s, false); }

/* The finished literal, or NULL when memory ran out. */
static const char *arr_done(arr *a)
{
	if (a->n == 0)
		sb_putc(&a->b, '{');
	sb_putc(&a->b, '}');
	return a->b.oom ? NULL : a->b.p;
}

static void arrs_free(arr *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_free(&a[i].b);
}

/* ------------------------------------------------------------------ */
/* Masking passwords                                                   */
/* ------------------------------------------------------------------ */

typedef struct mwriter {
	char *buf;
	size_t len, pos;
} mwriter;

static void mw_putn(mwriter *w, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, w->pos++)
		if (w->len && w->pos < w->len - 1)
			w->buf[w->pos] = s[i];
}

static void mw_end(mwriter *w)
{
	if (w->len)
		w->buf[w->pos < w->len ? w->pos : w->len - 1] = '\0';
}

size_t dbcron__pg_mask_url(const char *url, char *buf, size_t len)
{
	mwriter w = {buf, len, 0};
	const char *p = url ? url : "";
	const char *sep = strstr(p, "://");

	if (strncmp(p, "postgresql://", 13) == 0 || strncmp(p, "postgres://", 11) == 0) {
		const char *auth = sep + 3;
		const char *end = auth + strcspn(auth, "/?#");
		const char *at = NULL;
		for (const char *q = auth; q < end; q++)
			if (*q == '@')
				at = q;
		mw_putn(&w, p, (size_t)(auth - p));
		if (at) {
			const char *colon = memchr(auth, ':', (size_t)(at - auth));
			if (colon) {
				mw_putn(&w, auth, (size_t)(colon + 1 - auth));
				mw_putn(&w, "***", 3);
			} else {
				mw_putn(&w, auth, (size_t)(at - auth));
			}
			auth = at;
		}
		const char *q = strchr(end, '?');
		if (!q) {
			mw_putn(&w, auth, strlen(auth));
			mw_end(&w);
			return w.pos;
		}
		mw_putn(&w, auth, (size_t)(q + 1 - auth));
		for (q = q + 1; *q;) {
			size_t n = strcspn(q, "&#");
			if (n >= 9 && strncmp(q, "password=", 9) == 0)
				mw_putn(&w, "password=***", 12);
			else
				mw_putn(&w, q, n);
			q += n;
			if (*q)
				mw_putn(&w, q++, 1);
		}
		mw_end(&w);
		return w.pos;
	}

	/* key = value pairs; values may be 'quoted' with \-escapes. */
	while (*p) {
		const char *k = p;
		while (*p && isspace((unsigned char)*p))
			p++;
		mw_putn(&w, k, (size_t)(p - k));
		k = p;
		while (*p && *p != '=' && !isspace((unsigned char)*p))
			p++;
		bool is_pw = (size_t)(p - k) == 8 && strncmp(k, "password", 8) == 0;
		mw_putn(&w, k, (size_t)(p - k));
		k = p;
		while (*p && (isspace((unsigned char)*p) || *p == '='))
			p++;
		mw_putn(&w, k, (size_t)(p - k));
		k = p;
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++)
				if (*p == '\\' && p[1])
					p++;
			if (*p)
				p++;
		} else {
			while (*p && !isspace((unsigned char)*p))
				p++;
		}
		if (is_pw)
			mw_putn(&w, "***", 3);
		else
			mw_putn(&w, k, (size_t)(p - k));
	}
	mw_end(&w);
	return w.pos;
}

/* ------------------------------------------------------------------ */
/* The handle, errors, execution                                       */
/* ------------------------------------------------------------------ */

typedef struct pg_store {
	store base;
	PGconn *conn;
	char masked[256];
	char *password; /* scrubbed from server messages; may be NULL */
	bool prepared[S__COUNT];
} pg_store;

/* One line of server text, without the password, newlines folded. */
static void scrub(const pg_store *s, const char *msg, char *out, size_t len)
{
	size_t o = 0, pwl = s->password ? strlen(s->password) : 0;
	for (const char *p = msg ? msg : ""; *p && o + 1 < len;) {
		if (pwl && strncmp(p, s->password, pwl) == 0) {
			for (const char *m = "***"; *m && o + 1 < len; m++)
				out[o++] = *m;
			p += pwl;
			continue;
		}
		char c = *p++;
		if (c == '\n' || c == '\t' || c == '\r') {
			if (o && out[o - 1] != ' ' && *p)
				out[o++] = ' ';
			continue;
		}
		out[o++] = c;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

static bool sqlstate_is(const PGresult *res, const char *code)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return st && strncmp(st, code, strlen(code)) == 0;
}

/* Classifies a failure: a lost server is DBCRON_ECONN (the node backs off
 * and the next call reconnects); everything else DBCRON_EDB. */
static int pg_fail(pg_store *s, const PGresult *res, const char *what,
		   dbcron_err *err)
{
	char msg[400];
	const char *text = res ? PQresultErrorMessage(res) : NULL;
	if (!text || !*text)
		text = PQerrorMessage(s->conn);
	scrub(s, text, msg, sizeof(msg));
	if (PQstatus(s->conn) == CONNECTION_BAD || sqlstate_is(res, "08") ||
	    sqlstate_is(res, "57P"))
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s: %s",
				      what, s->masked, msg);
	return dbcron_err_set(err, DBCRON_EDB, "%s: %s", what, msg);
}

static void quiet_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* A statement without parameters (BEGIN, COMMIT, DDL). */
static int pq_cmd(pg_store *s, const char *sql, const char *what, dbcron_err *err)
{
	s->base.stmt_count++;
	PGresult *res = PQexecParams(s->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	int rc = DBCRON_OK;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = pg_fail(s, res, what, err);
	PQclear(res);
	return rc;
}

static void pq_rollback(pg_store *s)
{
	if (PQstatus(s->conn) != CONNECTION_OK ||
	    PQtransactionStatus(s->conn) == PQTRANS_IDLE)
		return;
	s->base.stmt_count++;
	PQclear(PQexecParams(s->conn, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0));
}

/*
 * Runs prepared statement id (prepared on first use on this connection).
 * On success *out holds the result for the caller to PQclear.
 */
static int pq_exec(pg_store *s, int id, int n, const char *const *vals,
		   PGresult **out, dbcron_err *err)
{
	char name[24];
	PGresult *res;
	int rc;

	*out = NULL;
	snprintf(name, sizeof(name), "dbcron_%d", id);
	if (!s->prepared[id]) {
		res = PQprepare(s->conn, name, stmts[id].sql, 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			rc = pg_fail(s, res, stmts[id].what, err);
			PQclear(res);
			return rc;
		}
		PQclear(res);
		s->prepared[id] = true;
	}
	s->base.stmt_count++;
	res = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = pg_fail(s, res, stmts[id].what, err);
		PQclear(res);
		return rc;
	}
	*out = res;
	return DBCRON_OK;
}

/* pq_exec for statements whose result only matters as a row count. */
static int pq_exec_count(pg_store *s, int id, int n, const char *const *vals,
			 int64_t *count, dbcron_err *err)
{
	PGresult *res;
	int rc = pq_exec(s, id, n, vals, &res, err);
	if (rc)
		return rc;
	if (count)
		*count = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	return DBCRON_OK;
}

/*
 * Called first by every operation: reconnects when the connection broke
 * (also when the server said goodbye while we were idle, which
 * PQconsumeInput notices), and ends a transaction an earlier failure may
 * have left open.
 */
static int pg_ready(pg_store *s, dbcron_err *err)
{
	/* An idle connection has nothing to read.  A server shutting down
	 * sends a FATAL message and closes: the first read takes the
	 * message, the second sees the end of the stream. */
	if (PQstatus(s->conn) == CONNECTION_OK && PQconsumeInput(s->conn) &&
	    (PQisBusy(s->conn), PQconsumeInput(s->conn)) &&
	    PQstatus(s->conn) == CONNECTION_OK) {
		pq_rollback(s);
		return DBCRON_OK;
	}
	PQreset(s->conn);
	memset(s->prepared, 0, sizeof(s->prepared));
	if (PQstatus(s->conn) != CONNECTION_OK) {
		char msg[400];
		scrub(s, PQerrorMessage(s->conn), msg, sizeof(msg));
		return dbcron_err_set(err, DBCRON_ECONN, "cannot reach %s: %s",
				      s->masked, msg);
	}
	return DBCRON_OK;
}

static int pg_begin(pg_store *s, dbcron_err *err)
{
	int rc = pg_ready(s, err);
	return rc ? rc : pq_cmd(s, "BEGIN", "starting a transaction", err);
}

static int pg_commit(pg_store *s, dbcron_err *err)
{
	return pq_cmd(s, "COMMIT", "committing", err);
}

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */

static int64_t g_i64(const PGresult *r, int row, int col, int64_t def)
{
	if (PQgetisnull(r, row, col))
		return def;
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static int g_int(const PGresult *r, int row, int col, int def)
{
	return (int)g_i64(r, row, col, def);
}

static bool g_bool(const PGresult *r, int row, int col)
{
	return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}

/* Borrowed: valid while r lives.  NULL for SQL NULL. */
static char *g_ref(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* Owned copy (dbcron__strdup); *oom set when memory ran out. */
static char *g_dup(const PGresult *r, int row, int col, bool *oom)
{
	char *v = g_ref(r, row, col);
	if (!v)
		return NULL;
	char *d = dbcron__strdup(v);
	if (!d)
		*oom = true;
	return d;
}

/* argv as a JSON array of strings; *out NULL when there is none. */
static int argv_to_json(const dbcron_job *j, char **out)
{
	*out = NULL;
	if (!j->argv || j->argc <= 0)
		return DBCRON_OK;
	json_t *a = json_array();
	if (!a)
		return DBCRON_ENOMEM;
	for (int i = 0; i < j->argc; i++) {
		if (json_array_append_new(a, json_string(j->argv[i] ? j->argv[i] : ""))) {
			json_decref(a);
			return DBCRON_ENOMEM;
		}
	}
	size_t n = json_dumpb(a, NULL, 0, JSON_COMPACT);
	char *buf = n ? dbcron__malloc(n + 1) : NULL;
	if (!buf) {
		json_decref(a);
		return DBCRON_ENOMEM;
	}
	json_dumpb(a, buf, n, JSON_COMPACT);
	buf[n] = '\0';
	json_decref(a);
	*out = buf;
	return DBCRON_OK;
}

static int argv_from_json(const char *text, dbcron_job *j, dbcron_err *err)
{
	json_error_t jerr;
	json_t *a = json_loads(text, 0, &jerr);
	if (!a || !json_is_array(a)) {
		json_decref(a);
		return dbcron_err_set(err, DBCRON_EDB, "job '%s': stored argv is not a JSON array",
				      j->name ? j->name : "?");
	}
	size_t n = json_array_size(a);
	j->argv = dbcron__calloc(n + 1, sizeof(char *));
	if (!j->argv) {
		json_decref(a);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
	}
	for (size_t i = 0; i < n; i++) {
		const char *v = json_string_value(json_array_get(a, i));
		j->argv[i] = dbcron__strdup(v ? v : "");
		if (!j->argv[i]) {
			json_decref(a);
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
		}
		j->argc = (int)i + 1;
	}
	json_decref(a);
	return DBCRON_OK;
}

/* Fills job (initialised by the caller) from JOB_COLS starting at c. */
static int row_job(const PGresult *r, int row, int c, dbcron_job *j, dbcron_err *err)
{
	bool oom = false;
	j->id = g_i64(r, row, c + 0, 0);
	j->name = g_dup(r, row, c + 1, &oom);
	j->kind = (dbcron_sched_kind)g_int(r, row, c + 2, 0);
	j->spec = g_dup(r, row, c + 3, &oom);
	j->interval_ms = g_i64(r, row, c + 4, 0);
	j->anchor_ms = g_i64(r, row, c + 5, 0);
	j->at_ms = g_i64(r, row, c + 6, -1);
	j->tz = g_dup(r, row, c + 7, &oom);
	j->misfire = (dbcron_misfire)g_int(r, row, c + 8, 1);
	j->max_catchup = g_int(r, row, c + 9, 100);
	j->misfire_threshold_ms = g_i64(r, row, c + 10, 5000);
	j->overlap = (dbcron_overlap)g_int(r, row, c + 11, 1);
	j->node_loss = (dbcron_node_loss)g_int(r, row, c + 12, 1);
	j->max_retries = g_int(r, row, c + 13, 0);
	j->retry_base_ms = g_i64(r, row, c + 14, 60000);
	j->retry_cap_ms = g_i64(r, row, c + 15, 3600000);
	j->retry_jitter = g_bool(r, row, c + 16);
	j->timeout_ms = g_i64(r, row, c + 17, 0);
	j->executor = (dbcron_executor)g_int(r, row, c + 18, 1);
	j->handler = g_dup(r, row, c + 20, &oom);
	j->arg = g_dup(r, row, c + 21, &oom);
	j->paused = g_bool(r, row, c + 22);
	j->next_fire_at = g_i64(r, row, c + 23, -1);
	j->created_ms = g_i64(r, row, c + 24, -1);
	j->updated_ms = g_i64(r, row, c + 25, -1);
	if (oom)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
	const char *argv = g_ref(r, row, c + 19);
	return argv ? argv_from_json(argv, j, err) : DBCRON_OK;
}

/* Points run's strings into r (borrowed; do not dbcron_run_clear). */
static void row_run_ref(const PGresult *r, int row, int c, dbcron_run *run)
{
	run->id = g_i64(r, row, c + 0, 0);
	run->job_id = g_i64(r, row, c + 1, 0);
	run->job_name = g_ref(r, row, c + 2);
	run->fire_at = g_i64(r, row, c + 3, -1);
	run->attempt = g_int(r, row, c + 4, 1);
	run->state = (dbcron_run_state)g_int(r, row, c + 5, 0);
	run->due_at = g_i64(r, row, c + 6, -1);
	run->node = g_ref(r, row, c + 7);
	run->claim_token = g_ref(r, row, c + 8);
	run->started_ms = g_i64(r, row, c + 9, -1);
	run->finished_ms = g_i64(r, row, c + 10, -1);
	run->has_exit_code = !PQgetisnull(r, row, c + 11);
	run->exit_code = g_int(r, row, c + 11, 0);
	run->missed = g_i64(r, row, c + 12, 0);
	run->error = g_ref(r, row, c + 13);
	run->output = g_ref(r, row, c + 14);
}

/* ------------------------------------------------------------------ */
/* id -> index map (open addressing; ids are > 0)                      */
/* ------------------------------------------------------------------ */

typedef struct idmap {
	int64_t *keys;
	size_t *vals;
	size_t cap, n;
} idmap;

static void idmap_free(idmap *m)
{
	dbcron__free(m->keys);
	dbcron__free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t idmap_slot(const idmap *m, int64_t key)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 17) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static bool idmap_get(const idmap *m, int64_t key, size_t *val)
{
	if (!m->cap)
		return false;
	size_t i = idmap_slot(m, key);
	if (!m->keys[i])
		return false;
	*val = m->vals[i];
	return true;
}

static int idmap_put(idmap *m, int64_t key, size_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		idmap big = {0};
		big.cap = m->cap ? m->cap * 2 : 64;
		big.keys = dbcron__calloc(big.cap, sizeof(int64_t));
		big.vals = dbcron__calloc(big.cap, sizeof(size_t));
		if (!big.keys || !big.vals) {
			idmap_free(&big);
			return DBCRON_ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i]) {
				size_t j = idmap_slot(&big, m->keys[i]);
				big.keys[j] = m->keys[i];
				big.vals[j] = m->vals[i];
				big.n++;
			}
		idmap_free(m);
		*m = big;
	}
	size_t i = idmap_slot(m, key);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return DBCRON_OK;
}

/* ------------------------------------------------------------------ */
/* open / close / schema                                               */
/* ------------------------------------------------------------------ */

static void pg_close(store *st)
{
	pg_store *s = (pg_store *)st;
	if (!s)
		return;
	PQfinish(s->conn);
	dbcron__free(s->password);
	dbcron__free(s);
}

static int pg_open(const char *url, store **out, dbcron_err *err)
{
	pg_store *s;
	char *perr = NULL;
	int rc;

	*out = NULL;
	s = dbcron__calloc(1, sizeof(*s));
	if (!s)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	s->base.ops = &store_pg_ops;
	dbcron__pg_mask_url(url, s->masked, sizeof(s->masked));

	PQconninfoOption *opts = PQconninfoParse(url, &perr);
	if (!opts) {
		/* libpq may quote part of the string: show it only when
		 * there was nothing to mask. */
		bool plain = strcmp(s->masked, url) == 0;
		rc = dbcron_err_set(err, DBCRON_EINVAL, "invalid PostgreSQL connection string '%s'%s%s",
				    s->masked, plain && perr ? ": " : "", plain && perr ? perr : "");
		if (perr)
			PQfreemem(perr);
		goto out_free_store;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val) {
			s->password = dbcron__strdup(o->val);
			if (!s->password) {
				PQconninfoFree(opts);
				rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
				goto out_free_store;
			}
		}
	PQconninfoFree(opts);

	/* Defaults first, then the user's string (it overrides them).  Custom
	 * plans: the batch statements join unnest() of a parameter array, and a
	 * generic plan, blind to the array's size and to how many runs a node
	 * holds, was seen to pick a nested loop over every claimed run for
	 * every element (a second per batch at 20,000 claimed runs). */
	const char *const kw[] = {"connect_timeout", "client_encoding", "options",
				  "dbname", "fallback_application_name", NULL};
	const char *const vals[] = {"10", "UTF8", "-c plan_cache_mode=force_custom_plan",
				    url, "dbcron", NULL};
	s->conn = PQconnectdbParams(kw, vals, 1);
	if (!s->conn) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
		goto out_free_store;
	}
	if (PQstatus(s->conn) != CONNECTION_OK) {
		char msg[400];
		scrub(s, PQerrorMessage(s->conn), msg, sizeof(msg));
		rc = dbcron_err_set(err, DBCRON_ECONN, "cannot connect to %s: %s", s->masked, msg);
		goto out_free_store;
	}
	PQsetNoticeProcessor(s->conn, quiet_notices, NULL);
	*out = &s->base;
	return DBCRON_OK;

out_free_store:
	pg_close(&s->base);
	return rc;
}

static int read_version(pg_store *s, int *version, bool *exists, dbcron_err *err)
{
	PGresult *res;
	int rc = pq_exec(s, S_SCHEMA_EXISTS, 0, NULL, &res, err);
	if (rc)
		return rc;
	*exists = g_bool(res, 0, 0);
	PQclear(res);
	*version = 0;
	if (!*exists)
		return DBCRON_OK;
	rc = pq_exec(s, S_SCHEMA_MAX, 0, NULL, &res, err);
	if (rc)
		return rc;
	*version = g_int(res, 0, 0, 0);
	PQclear(res);
	return DBCRON_OK;
}

/*
 * All pending migrations in one transaction under an advisory lock, so two
 * `dbcron init` at once apply each migration exactly once: the second waits,
 * then finds the work done.
 */
static int pg_migrate(store *st, int *from, int *to, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	int cur = 0, rc;
	bool exists;

	if ((rc = pg_begin(s, err)))
		return rc;
	if ((rc = pq_cmd(s, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")",
			 "migrate: waiting for the schema lock", err)) ||
	    (rc = pq_cmd(s, "CREATE TABLE IF NOT EXISTS schema_version ("
			 " version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)",
			 "migrate: creating schema_version", err)) ||
	    (rc = read_version(s, &cur, &exists, err)))
		goto out_rollback;
	if (from)
		*from = cur;
	if (cur > DBCRON_PG_SCHEMA_VERSION) {
		rc = dbcron_err_set(err, DBCRON_ESCHEMA,
				    "database schema version %d is newer than this binary (%d); upgrade dbcron",
				    cur, DBCRON_PG_SCHEMA_VERSION);
		goto out_rollback;
	}
	for (size_t m = 0; m < sizeof(migrations) / sizeof(migrations[0]); m++) {
		if (migrations[m].version <= cur)
			continue;
		for (const char *const *q = migrations[m].stmts; *q; q++)
			if ((rc = pq_cmd(s, *q, "migrate", err)))
				goto out_rollback;
		char sql[128];
		snprintf(sql, sizeof(sql),
			 "INSERT INTO schema_version (version, applied_ms) VALUES (%d, " DBNOW ")",
			 migrations[m].version);
		if ((rc = pq_cmd(s, sql, "migrate: recording the version", err)))
			goto out_rollback;
	}
	if ((rc = pg_commit(s, err)))
		goto out_rollback;
	if (to)
		*to = DBCRON_PG_SCHEMA_VERSION;
	return DBCRON_OK;

out_rollback:
	pq_rollback(s);
	return rc;
}

static int pg_check_schema(store *st, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	int v, rc;
	bool exists;

	if ((rc = pg_ready(s, err)) || (rc = read_version(s, &v, &exists, err)))
		return rc;
	if (!exists || v == 0)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database has no dbcron schema; run `dbcron init --db ...`");
	if (v > DBCRON_PG_SCHEMA_VERSION)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database schema version %d is newer than this binary (%d); upgrade dbcron",
				      v, DBCRON_PG_SCHEMA_VERSION);
	if (v < DBCRON_PG_SCHEMA_VERSION)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database schema version %d is older than this binary (%d); run `dbcron init --db ...`",
				      v, DBCRON_PG_SCHEMA_VERSION);
	return DBCRON_OK;
}

static int pg_now_ms(store *st, int64_t *out, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	int rc;
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_NOW, 0, NULL, &res, err)))
		return rc;
	*out = g_i64(res, 0, 0, 0);
	PQclear(res);
	return DBCRON_OK;
}

/* ------------------------------------------------------------------ */
/* Jobs                                                                */
/* ------------------------------------------------------------------ */

static int cmp_name(const void *a, const void *b)
{
	const dbcron_job *x = *(const dbcron_job *const *)a;
	const dbcron_job *y = *(const dbcron_job *const *)b;
	return strcmp(x->name, y->name);
}

/* The first name that occurs twice in the batch, or NULL. */
static int find_dup_name(dbcron_job *jobs, size_t n, const char **dup)
{
	*dup = NULL;
	if (n < 2)
		return DBCRON_OK;
	dbcron_job **v = dbcron__malloc(n * sizeof(*v));
	if (!v)
		return DBCRON_ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = &jobs[i];
	dbcron__sort(v, n, sizeof(*v), cmp_name);
	for (size_t i = 1; i < n && !*dup; i++)
		if (strcmp(v[i - 1]->name, v[i]->name) == 0)
			*dup = v[i]->name;
	dbcron__free(v);
	return DBCRON_OK;
}

/* All names of the batch as one text[] literal. */
static int names_param(dbcron_job *jobs, size_t n, arr *a)
{
	memset(a, 0, sizeof(*a));
	for (size_t i = 0; i < n; i++)
		arr_text(a, jobs[i].name);
	return arr_done(a) ? DBCRON_OK : DBCRON_ENOMEM;
}

static int cmp_key_name(const void *key, const void *elem)
{
	const char *k = key;
	const dbcron_job *j = *(const dbcron_job *const *)elem;
	return strcmp(k, j->name);
}

/* Copies ids from rows (_, id, name) into the jobs of the same name. */
static int set_ids(const PGresult *res, dbcron_job *jobs, size_t n, dbcron_err *err)
{
	if (PQntuples(res) == 0)
		return DBCRON_OK;
	dbcron_job **v = dbcron__malloc(n * sizeof(*v));
	if (!v)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing jobs");
	for (size_t i = 0; i < n; i++)
		v[i] = &jobs[i];
	dbcron__sort(v, n, sizeof(*v), cmp_name);
	for (int r = 0; r < PQntuples(res); r++) {
		dbcron_job **hit = bsearch(PQgetvalue(res, r, 2), v, n, sizeof(*v), cmp_key_name);
		if (hit)
			(*hit)->id = g_i64(res, r, 1, 0);
	}
	dbcron__free(v);
	return DBCRON_OK;
}

/* Writes jobs[0..n) with one insert or upsert. */
static int put_chunk(pg_store *s, dbcron_job *jobs, size_t n, store_put_mode mode,
		     size_t *created, size_t *updated, dbcron_err *err)
{
	arr a[NPUTCOLS];
	const char *vals[NPUTCOLS];
	PGresult *res = NULL;
	int rc = DBCRON_OK;

	memset(a, 0, sizeof(a));
	for (size_t i = 0; i < n && rc == DBCRON_OK; i++) {
		const dbcron_job *j = &jobs[i];
		char *argv = NULL;
		if (j->executor == DBCRON_EXEC_SHELL && (rc = argv_to_json(j, &argv)))
			break;
		arr_text(&a[0], j->name);
		arr_i64(&a[1], j->kind);
		arr_text(&a[2], j->spec);
		arr_i64(&a[3], j->interval_ms);
		arr_i64(&a[4], j->anchor_ms);
		arr_i64(&a[5], j->at_ms);
		arr_text(&a[6], j->tz);
		arr_i64(&a[7], j->misfire);
		arr_i64(&a[8], j->max_catchup);
		arr_i64(&a[9], j->misfire_threshold_ms);
		arr_i64(&a[10], j->overlap);
		arr_i64(&a[11], j->node_loss);
		arr_i64(&a[12], j->max_retries);
		arr_i64(&a[13], j->retry_base_ms);
		arr_i64(&a[14], j->retry_cap_ms);
		arr_bool(&a[15], j->retry_jitter);
		arr_i64(&a[16], j->timeout_ms);
		arr_i64(&a[17], j->executor);
		arr_text(&a[18], argv);
		arr_text(&a[19], j->executor == DBCRON_EXEC_HANDLER ? j->handler : NULL);
		arr_text(&a[20], j->arg);
		arr_bool(&a[21], j->paused);
		arr_i64n(&a[22], j->next_fire_at);
		dbcron__free(argv);
	}
	if (rc) {
		rc = dbcron_err_set(err, rc, "out of memory writing jobs");
		goto out_free_arrays;
	}
	for (int k = 0; k < NPUTCOLS; k++)
		if (!(vals[k] = arr_done(&a[k]))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing jobs");
			goto out_free_arrays;
		}
	rc = pq_exec(s, mode == STORE_PUT_CREATE ? S_JOB_INSERT : S_JOB_UPSERT,
		     NPUTCOLS, vals, &res, err);
	if (rc)
		goto out_free_arrays;
	/* "updated" counts every existing name in the batch, as the SQLite
	 * backend does; unchanged rows are counted but not rewritten. */
	size_t fresh = 0;
	for (int r = 0; r < PQntuples(res); r++)
		if (mode == STORE_PUT_CREATE || g_bool(res, r, 0))
			fresh++;
	*created += fresh;
	if (mode == STORE_PUT_UPSERT)
		*updated += n - fresh;
	if ((rc = set_ids(res, jobs, n, err)))
		goto out_free_arrays;
	if ((size_t)PQntuples(res) < n) {
		/* Unchanged jobs were not returned: their ids in one more
		 * statement. */
		PQclear(res);
		res = NULL;
		if ((rc = pq_exec(s, S_JOB_IDS, 1, vals, &res, err)) ||
		    (rc = set_ids(res, jobs, n, err)))
			goto out_free_arrays;
	}
out_free_arrays:
	PQclear(res);
	arrs_free(a, NPUTCOLS);
	return rc;
}

static int pg_job_put(store *st, dbcron_job *jobs, size_t n, store_put_mode mode,
		      bool prune, size_t *created, size_t *updated, size_t *deleted,
		      dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	size_t c = 0, u = 0;
	int64_t d = 0;
	const char *dup;
	arr names = {0};
	PGresult *res;
	int rc;

	if (created)
		*created = 0;
	if (updated)
		*updated = 0;
	if (deleted)
		*deleted = 0;
	for (size_t i = 0; i < n; i++)
		if (!jobs[i].name)
			return dbcron_err_set(err, DBCRON_EINVAL, "job %zu has no name", i + 1);
	if (find_dup_name(jobs, n, &dup))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory checking job names");
	if (dup)
		return dbcron_err_set(err, mode == STORE_PUT_CREATE ? DBCRON_EEXISTS : DBCRON_EINVAL,
				      "job '%s' appears twice in the batch", dup);
	if ((rc = pg_begin(s, err)))
		return rc;
	if (mode == STORE_PUT_CREATE && n > 0) {
		/* All or none: name the first clash before writing anything. */
		if (names_param(jobs, n, &names)) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory checking job names");
			goto out_rollback;
		}
		const char *v[1] = {names.b.p};
		if ((rc = pq_exec(s, S_JOB_EXISTING, 1, v, &res, err)))
			goto out_rollback;
		if (PQntuples(res) > 0) {
			rc = dbcron_err_set(err, DBCRON_EEXISTS, "job '%s' already exists",
					    PQgetvalue(res, 0, 0));
			PQclear(res);
			goto out_rollback;
		}
		PQclear(res);
		sb_free(&names.b);
	}
	for (size_t off = 0; off < n; off += PUT_CHUNK) {
		size_t k = n - off < PUT_CHUNK ? n - off : PUT_CHUNK;
		if ((rc = put_chunk(s, jobs + off, k, mode, &c, &u, err))) {
			/* A concurrent writer created the name since our check. */
			if (rc == DBCRON_EDB && strstr(err ? err->msg : "", "duplicate key"))
				rc = err->code = DBCRON_EEXISTS;
			goto out_rollback;
		}
	}
	if (prune && mode == STORE_PUT_UPSERT) {
		if (names_param(jobs, n, &names)) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory pruning jobs");
			goto out_rollback;
		}
		const char *v[1] = {names.b.p};
		if ((rc = pq_exec(s, S_JOB_PRUNE, 1, v, &res, err)))
			goto out_rollback;
		d = g_i64(res, 0, 0, 0);
		PQclear(res);
	}
	if ((rc = pg_commit(s, err)))
		goto out_rollback;
	sb_free(&names.b);
	if (created)
		*created = c;
	if (updated)
		*updated = u;
	if (deleted)
		*deleted = (size_t)d;
	return DBCRON_OK;

out_rollback:
	pq_rollback(s);
	sb_free(&names.b);
	return rc;
}

static int pg_job_get(store *st, const char *name, dbcron_job *out, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	const char *v[1] = {name};
	int rc;

	dbcron_job_init(out);
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_JOB_GET, 1, v, &res, err)))
		return rc;
	if (PQntuples(res) == 0)
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
	else if ((rc = row_job(res, 0, 0, out, err)))
		dbcron_job_clear(out);
	PQclear(res);
	return rc;
}

static int pg_job_list(store *st, store_job_cb cb, void *ctx, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_JOB_LIST, 0, NULL, &res, err)))
		return rc;
	for (int r = 0; r < PQntuples(res); r++) {
		dbcron_job j;
		dbcron_job_init(&j);
		rc = row_job(res, r, 0, &j, err);
		int stop = rc ? 0 : cb(ctx, &j);
		dbcron_job_clear(&j);
		if (rc || stop)
			break;
	}
	PQclear(res);
	return rc;
}

static int pg_job_set_paused(store *st, const char *name, bool paused,
			     int64_t next_fire_at, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	char nf[24];
	int64_t n;
	int rc;

	snprintf(nf, sizeof(nf), "%" PRId64, next_fire_at);
	const char *v[3] = {name, paused ? "t" : "f", next_fire_at >= 0 ? nf : NULL};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec_count(s, S_JOB_PAUSE, 3, v, &n, err)))
		return rc;
	return n ? DBCRON_OK : dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
}

static int pg_job_delete(store *st, const char *name, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	const char *v[1] = {name};
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_JOB_DELETE, 1, v, &res, err)))
		return rc;
	int64_t n = g_i64(res, 0, 0, 0);
	PQclear(res);
	return n ? DBCRON_OK : dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
}

static int pg_job_trigger(store *st, const char *name, int64_t *run_id,
			  int64_t *fire_at, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	const char *v[4] = {name};
	char id[24], at[24], now_s[24];
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_TRIGGER_FIND, 1, v, &res, err)))
		return rc;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
	}
	int64_t now = g_i64(res, 0, 2, 0);
	snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	snprintf(now_s, sizeof(now_s), "%" PRId64, now);
	/* Each try is its own statement: a clash costs one round trip and
	 * writes nothing (invariant 1). */
	for (int64_t k = 0; k < 10000; k++) {
		snprintf(at, sizeof(at), "%" PRId64, now + k);
		const char *iv[4] = {id, name, at, now_s};
		if ((rc = pq_exec(s, S_TRIGGER_INSERT, 4, iv, &res, err)))
			return rc;
		if (PQntuples(res) == 1) {
			if (run_id)
				*run_id = g_i64(res, 0, 0, 0);
			if (fire_at)
				*fire_at = now + k;
			PQclear(res);
			return DBCRON_OK;
		}
		PQclear(res);
	}
	return dbcron_err_set(err, DBCRON_EBUSY, "job '%s': no free fire instant near now", name);
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */
/* ------------------------------------------------------------------ */

static int pg_node_register(store *st, const store_node_info *n, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	char pid[16], workers[16], lease[24];
	int rc;

	snprintf(pid, sizeof(pid), "%d", n->pid);
	snprintf(workers, sizeof(workers), "%d", n->workers);
	snprintf(lease, sizeof(lease), "%" PRId64, n->lease_ms);
	const char *v[6] = {n->node_id, n->incarnation, n->host, pid, workers, lease};
	if ((rc = pg_ready(s, err)))
		return rc;
	return pq_exec_count(s, S_REGISTER, 6, v, NULL, err);
}

static int pg_node_heartbeat(store *st, const char *node_id, const char *incarnation,
			     int64_t lease_ms, int64_t *db_now, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char lease[24];
	int rc;

	snprintf(lease, sizeof(lease), "%" PRId64, lease_ms);
	const char *v[3] = {node_id, incarnation, lease};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_HEARTBEAT, 3, v, &res, err)))
		return rc;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "node '%s': the registry no longer lists this process as alive (declared dead or replaced)",
				      node_id);
	}
	if (db_now)
		*db_now = g_i64(res, 0, 0, 0);
	PQclear(res);
	return DBCRON_OK;
}

static int pg_node_stop(store *st, const char *node_id, const char *incarnation,
			dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	const char *v[2] = {node_id, incarnation};
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_NODE_STOP, 2, v, &res, err)))
		return rc;
	int64_t n = g_i64(res, 0, 0, 0);
	PQclear(res);
	if (!n)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "node '%s': not alive under this incarnation; nothing handed back",
				      node_id);
	return DBCRON_OK;
}

static int pg_runs_release(store *st, const char *node_id, const int64_t *ids,
			   const char *const *tokens, size_t n, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	arr a[2];
	int rc;

	if (n == 0)
		return DBCRON_OK;
	memset(a, 0, sizeof(a));
	for (size_t i = 0; i < n; i++) {
		arr_i64(&a[0], ids[i]);
		arr_text(&a[1], tokens[i]);
	}
	const char *v[3] = {node_id, arr_done(&a[0]), arr_done(&a[1])};
	if (!v[1] || !v[2])
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory releasing runs");
	else if (!(rc = pg_ready(s, err)))
		rc = pq_exec_count(s, S_RELEASE, 3, v, NULL, err);
	arrs_free(a, 2);
	return rc;
}

static int pg_reap(store *st, size_t *reaped, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	int rc;

	if (reaped)
		*reaped = 0;
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_REAP, 0, NULL, &res, err)))
		return rc;
	if (reaped)
		*reaped = (size_t)g_i64(res, 0, 0, 0);
	PQclear(res);
	return DBCRON_OK;
}

/* ------------------------------------------------------------------ */
/* The claim                                                           */
/* ------------------------------------------------------------------ */

typedef struct claim_state {
	store_claim_result *out;
	size_t jobs_cap, runs_cap;
	size_t *run_job; /* index into out->jobs per run, fixed up at the end */
	size_t run_job_cap;
	idmap out_jobs; /* job id -> index in out->jobs */
} claim_state;

/* Moves *job into out->jobs unless its id is there already (then clears
 * it).  *idx: its index in out->jobs. */
static int cs_add_job(claim_state *cs, dbcron_job *job, size_t *idx)
{
	store_claim_result *out = cs->out;
	if (idmap_get(&cs->out_jobs, job->id, idx)) {
		dbcron_job_clear(job);
		return DBCRON_OK;
	}
	if (dbcron__grow((void **)&out->jobs, &cs->jobs_cap, out->njobs + 1, sizeof(dbcron_job)) ||
	    idmap_put(&cs->out_jobs, job->id, out->njobs))
		return DBCRON_ENOMEM;
	*idx = out->njobs;
	out->jobs[out->njobs++] = *job;
	dbcron_job_init(job);
	return DBCRON_OK;
}

static int cs_add_run(claim_state *cs, const dbcron_run *run, size_t job_idx)
{
	store_claim_result *out = cs->out;
	if (dbcron__grow((void **)&out->runs, &cs->runs_cap, out->nruns + 1, sizeof(store_claimed)) ||
	    dbcron__grow((void **)&cs->run_job, &cs->run_job_cap, out->nruns + 1, sizeof(size_t)))
		return DBCRON_ENOMEM;
	memset(&out->runs[out->nruns], 0, sizeof(store_claimed));
	out->runs[out->nruns].run = *run;
	cs->run_job[out->nruns++] = job_idx;
	return DBCRON_OK;
}

/* A claimed run from RETURNING columns (all copied). */
static int claimed_run(dbcron_run *run, const dbcron_job *job, int64_t id, int64_t fire_at,
		       int64_t due_at, int64_t missed, const char *node, const char *token)
{
	memset(run, 0, sizeof(*run));
	run->id = id;
	run->job_id = job->id;
	run->fire_at = fire_at;
	run->attempt = 1;
	run->state = DBCRON_RUN_SCHEDULED;
	run->due_at = due_at;
	run->started_ms = run->finished_ms = -1;
	run->missed = missed;
	run->job_name = dbcron__strdup(job->name);
	run->node = dbcron__strdup(node);
	run->claim_token = dbcron__strdup(token);
	if (!run->job_name || !run->node || !run->claim_token) {
		dbcron_run_clear(run);
		return DBCRON_ENOMEM;
	}
	return DBCRON_OK;
}

/* Runs the planner over the locked jobs and writes fires and next fires:
 * two statements whatever the number of jobs. */
static int claim_due_jobs(pg_store *s, const store_claim_req *req, claim_state *cs,
			  dbcron_job *locked, size_t nlocked, int64_t now, dbcron_err *err)
{
	arr f[7], adv[2];
	idmap by_id = {0};
	PGresult *res = NULL;
	char now_s[24];
	size_t nfires = 0;
	int rc = DBCRON_OK;

	memset(f, 0, sizeof(f));
	memset(adv, 0, sizeof(adv));
	for (size_t i = 0; i < nlocked; i++) {
		store_plan plan = {NULL, 0, -1};
		dbcron_job *j = &locked[i];
		if ((rc = req->plan(req->plan_ctx, j, now, now + req->horizon_ms_ahead, &plan))) {
			if (err && err->code != rc)
				dbcron_err_set(err, rc, "claim: planning job '%s' failed", j->name);
			goto out_free;
		}
		for (size_t k = 0; k < plan.nfires; k++) {
			const store_fire *fi = &plan.fires[k];
			arr_i64(&f[0], j->id);
			arr_text(&f[1], j->name);
			arr_i64(&f[2], fi->fire_at);
			arr_i64(&f[3], fi->state);
			arr_i64(&f[4], fi->due_at);
			arr_i64(&f[5], fi->missed);
			arr_text_x(&f[6], fi->error, true);
			nfires++;
		}
		arr_i64(&adv[0], j->id);
		arr_i64n(&adv[1], plan.next_fire_at);
		j->next_fire_at = plan.next_fire_at;
		if ((rc = idmap_put(&by_id, j->id, i)))
			goto out_nomem;
	}

	if (nfires) {
		const char *v[10];
		for (int k = 0; k < 7; k++)
			if (!(v[k] = arr_done(&f[k])))
				goto out_nomem;
		snprintf(now_s, sizeof(now_s), "%" PRId64, now);
		v[7] = req->node_id;
		v[8] = req->token;
		v[9] = now_s;
		if ((rc = pq_exec(s, S_INSERT_FIRES, 10, v, &res, err)))
			goto out_free;
		/* Only what the insert returned is ours (invariant 1). */
		for (int r = 0; r < PQntuples(res); r++) {
			size_t li, ji;
			dbcron_run run;
			if (g_int(res, r, 3, 0) != DBCRON_RUN_SCHEDULED) {
				cs->out->nterminal++;
				continue;
			}
			int64_t job_id = g_i64(res, r, 1, 0);
			if (!idmap_get(&by_id, job_id, &li))
				continue;
			/* The first run of a job moves the job into out. */
			if (!idmap_get(&cs->out_jobs, job_id, &ji) &&
			    (rc = cs_add_job(cs, &locked[li], &ji)))
				goto out_nomem;
			if ((rc = claimed_run(&run, &cs->out->jobs[ji], g_i64(res, r, 0, 0),
					      g_i64(res, r, 2, 0), g_i64(res, r, 4, 0),
					      g_i64(res, r, 5, 0), req->node_id, req->token)) ||
			    (rc = cs_add_run(cs, &run, ji))) {
				dbcron_run_clear(&run);
				goto out_nomem;
			}
		}
		PQclear(res);
		res = NULL;
	}
	if (nlocked) {
		const char *v[2] = {arr_done(&adv[0]), arr_done(&adv[1])};
		if (!v[0] || !v[1])
			goto out_nomem;
		if ((rc = pq_exec_count(s, S_ADVANCE_JOBS, 2, v, NULL, err)))
			goto out_free;
	}
	goto out_free;

out_nomem:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "claim: out of memory");
out_free:
	PQclear(res);
	arrs_free(f, 7);
	arrs_free(adv, 2);
	idmap_free(&by_id);
	return rc;
}

/* Unclaimed SCHEDULED runs (retries, triggers, runs of lost nodes), up to
 * budget, with their jobs: one statement. */
static int claim_unclaimed(pg_store *s, const store_claim_req *req, claim_state *cs,
			   int64_t horizon, int budget, dbcron_err *err)
{
	PGresult *res;
	char hz[24], lim[16];
	int rc;

	snprintf(hz, sizeof(hz), "%" PRId64, horizon);
	snprintf(lim, sizeof(lim), "%d", budget);
	const char *v[4] = {req->node_id, req->token, hz, lim};
	if ((rc = pq_exec(s, S_CLAIM_RUNS, 4, v, &res, err)))
		return rc;
	for (int r = 0; r < PQntuples(res) && rc == DBCRON_OK; r++) {
		dbcron_job job;
		dbcron_run ref, run;
		size_t ji;
		dbcron_job_init(&job);
		if ((rc = row_job(res, r, NRUNCOLS, &job, err))) {
			dbcron_job_clear(&job);
			break;
		}
		if ((rc = cs_add_job(cs, &job, &ji))) {
			dbcron_job_clear(&job);
			break;
		}
		row_run_ref(res, r, 0, &ref);
		run = ref;
		run.job_name = dbcron__strdup(ref.job_name ? ref.job_name : "");
		run.node = dbcron__strdup(req->node_id);
		run.claim_token = dbcron__strdup(req->token);
		run.error = ref.error ? dbcron__strdup(ref.error) : NULL;
		run.output = ref.output ? dbcron__strdup(ref.output) : NULL;
		if (!run.job_name || !run.node || !run.claim_token ||
		    (ref.error && !run.error) || (ref.output && !run.output) ||
		    cs_add_run(cs, &run, ji)) {
			dbcron_run_clear(&run);
			rc = DBCRON_ENOMEM;
		}
	}
	PQclear(res);
	if (rc == DBCRON_ENOMEM)
		dbcron_err_set(err, rc, "claim: out of memory");
	return rc;
}

static int pg_claim(store *st, const store_claim_req *req, store_claim_result *out,
		    dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	claim_state cs = {0};
	dbcron_job *locked = NULL;
	size_t nlocked = 0;
	PGresult *res = NULL;
	char ahead[24], lim[16];
	int rc;

	memset(out, 0, sizeof(*out));
	cs.out = out;
	int max = req->max > 0 ? req->max : 0;
	if ((rc = pg_begin(s, err)))
		return rc;

	snprintf(ahead, sizeof(ahead), "%" PRId64, req->horizon_ms_ahead);
	snprintf(lim, sizeof(lim), "%d", max);
	const char *v[2] = {ahead, lim};
	if ((rc = pq_exec(s, S_CLAIM_JOBS, 2, v, &res, err)))
		goto out_rollback;
	int64_t now = g_i64(res, 0, 0, 0);
	out->now_ms = now;
	int rows = PQntuples(res);
	if (rows > 0 && !PQgetisnull(res, 0, 1)) {
		locked = dbcron__calloc((size_t)rows, sizeof(*locked));
		if (!locked) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "claim: out of memory");
			goto out_rollback;
		}
		for (int r = 0; r < rows; r++) {
			dbcron_job_init(&locked[r]);
			nlocked = (size_t)r + 1;
			if ((rc = row_job(res, r, 1, &locked[r], err)))
				goto out_rollback;
		}
	}
	PQclear(res);
	res = NULL;

	if (nlocked && (rc = claim_due_jobs(s, req, &cs, locked, nlocked, now, err)))
		goto out_rollback;
	if (out->nruns < (size_t)max &&
	    (rc = claim_unclaimed(s, req, &cs, now + req->horizon_ms_ahead,
				  max - (int)out->nruns, err)))
		goto out_rollback;
	if ((rc = pg_commit(s, err)))
		goto out_rollback;
	for (size_t i = 0; i < out->nruns; i++)
		out->runs[i].job = &out->jobs[cs.run_job[i]];
	goto out_free;

out_rollback:
	PQclear(res);
	pq_rollback(s);
	store_claim_result_clear(out);
out_free:
	for (size_t i = 0; i < nlocked; i++)
		dbcron_job_clear(&locked[i]);
	dbcron__free(locked);
	dbcron__free(cs.run_job);
	idmap_free(&cs.out_jobs);
	return rc;
}

/* ------------------------------------------------------------------ */
/* apply                                                               */
/* ------------------------------------------------------------------ */

/* One fenced UPDATE for the updates of one round (a run id appears at
 * most once per round, since UPDATE ... FROM applies one source row per
 * target row). */
static int apply_round(pg_store *s, const char *node_id, store_update *ups, size_t n,
		       const int *round, int rd, dbcron_err *err)
{
	arr a[8];
	idmap at = {0};
	PGresult *res = NULL;
	const char *v[9];
	int rc = DBCRON_OK;

	memset(a, 0, sizeof(a));
	for (size_t i = 0; i < n; i++) {
		const store_update *u = &ups[i];
		if (round[i] != rd)
			continue;
		arr_i64(&a[0], u->run_id);
		arr_text(&a[1], u->token);
		arr_i64(&a[2], u->state);
		arr_i64n(&a[3], u->started_ms);
		arr_i64n(&a[4], u->finished_ms);
		if (u->has_exit_code)
			arr_i64(&a[5], u->exit_code);
		else
			arr_null(&a[5]);
		arr_text_x(&a[6], u->error, true);
		arr_text_x(&a[7], u->output, true);
		if (idmap_put(&at, u->run_id, i))
			goto out_nomem;
	}
	for (int k = 0; k < 8; k++)
		if (!(v[k] = arr_done(&a[k])))
			goto out_nomem;
	v[8] = node_id;
	if ((rc = pq_exec(s, S_APPLY, 9, v, &res, err)))
		goto out_free;
	for (int r = 0; r < PQntuples(res); r++) {
		size_t i;
		if (idmap_get(&at, g_i64(res, r, 0, 0), &i))
			ups[i].applied = true;
	}
	goto out_free;
out_nomem:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "apply: out of memory");
out_free:
	PQclear(res);
	arrs_free(a, 8);
	idmap_free(&at);
	return rc;
}

/* Two parallel bigint arrays from the applied updates that ask for it. */
static int apply_pairs(pg_store *s, int id, store_update *ups, size_t n, bool retry,
		       dbcron_err *err)
{
	arr a[2];
	size_t cnt = 0;
	int rc = DBCRON_OK;

	memset(a, 0, sizeof(a));
	for (size_t i = 0; i < n; i++) {
		const store_update *u = &ups[i];
		int64_t val = retry ? u->retry_due_at : u->job_next_fire_at;
		if (!u->applied || val < 0)
			continue;
		arr_i64(&a[0], retry ? u->run_id : u->job_id);
		arr_i64(&a[1], val);
		cnt++;
	}
	if (cnt) {
		const char *v[2] = {arr_done(&a[0]), arr_done(&a[1])};
		if (!v[0] || !v[1])
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "apply: out of memory");
		else
			rc = pq_exec_count(s, id, 2, v, NULL, err);
	}
	arrs_free(a, 2);
	return rc;
}

static int pg_apply(store *st, const char *node_id, store_update *ups, size_t n,
		    dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	idmap seen = {0};
	int *round = NULL, rounds = 0, rc;

	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
	if (n == 0)
		return DBCRON_OK;
	round = dbcron__calloc(n, sizeof(int));
	if (!round)
		return dbcron_err_set(err, DBCRON_ENOMEM, "apply: out of memory");
	/* Usually one round; a run started and finished within one batch
	 * takes two, in batch order. */
	for (size_t i = 0; i < n; i++) {
		size_t c = 0;
		idmap_get(&seen, ups[i].run_id, &c);
		round[i] = (int)c;
		if (idmap_put(&seen, ups[i].run_id, c + 1)) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "apply: out of memory");
			goto out_free;
		}
		if ((int)c + 1 > rounds)
			rounds = (int)c + 1;
	}
	if ((rc = pg_begin(s, err)))
		goto out_free;
	for (int rd = 0; rd < rounds; rd++)
		if ((rc = apply_round(s, node_id, ups, n, round, rd, err)))
			goto out_rollback;
	if ((rc = apply_pairs(s, S_RETRY, ups, n, true, err)) ||
	    (rc = apply_pairs(s, S_AFTER_NEXT, ups, n, false, err)) ||
	    (rc = pg_commit(s, err)))
		goto out_rollback;
	goto out_free;

out_rollback:
	pq_rollback(s);
	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
out_free:
	idmap_free(&seen);
	dbcron__free(round);
	return rc;
}

static int pg_job_running(store *st, int64_t job_id, int64_t except_run_id, bool *running,
			  dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char a[24], b[24];
	int rc;

	snprintf(a, sizeof(a), "%" PRId64, job_id);
	snprintf(b, sizeof(b), "%" PRId64, except_run_id);
	const char *v[2] = {a, b};
	*running = false;
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_JOB_RUNNING, 2, v, &res, err)))
		return rc;
	*running = g_bool(res, 0, 0);
	PQclear(res);
	return DBCRON_OK;
}

/* ------------------------------------------------------------------ */
/* Views                                                               */
/* ------------------------------------------------------------------ */

static int pg_runs_list(store *st, const store_run_filter *f, store_run_cb cb, void *ctx,
			dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char state[16], since[24], limit[24];
	int rc;

	snprintf(state, sizeof(state), "%d", f ? f->state : 0);
	snprintf(since, sizeof(since), "%" PRId64, f ? f->since_ms : -1);
	snprintf(limit, sizeof(limit), "%ld", f ? f->limit : 0);
	const char *v[4] = {f ? f->job : NULL, state, since,
			    f && f->limit > 0 ? limit : NULL};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_RUNS_LIST, 4, v, &res, err)))
		return rc;
	for (int r = 0; r < PQntuples(res); r++) {
		dbcron_run run;
		memset(&run, 0, sizeof(run));
		row_run_ref(res, r, 0, &run);
		if (cb(ctx, &run))
			break;
	}
	PQclear(res);
	return DBCRON_OK;
}

static int pg_nodes_list(store *st, store_node_cb cb, void *ctx, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_NODES_LIST, 0, NULL, &res, err)))
		return rc;
	for (int r = 0; r < PQntuples(res); r++) {
		store_node_row row = {
			.node_id = g_ref(res, r, 0),
			.host = g_ref(res, r, 1),
			.pid = g_int(res, r, 2, 0),
			.workers = g_int(res, r, 3, 0),
			.state = g_ref(res, r, 4),
			.started_ms = g_i64(res, r, 5, -1),
			.heartbeat_ms = g_i64(res, r, 6, -1),
			.lease_until = g_i64(res, r, 7, -1),
			.running = g_i64(res, r, 8, 0),
		};
		if (cb(ctx, &row))
			break;
	}
	PQclear(res);
	return DBCRON_OK;
}

/* ------------------------------------------------------------------ */
/* Lease locks (seed 002)                                              */
/* ------------------------------------------------------------------ */

/* Columns (got, name, owner, since_ms, until_ms, fence) -> owned copy. */
static int lock_row_dup(const PGresult *res, int r, store_lock_row *row)
{
	bool oom = false;
	row->name = g_dup(res, r, 1, &oom);
	row->owner = g_dup(res, r, 2, &oom);
	row->since_ms = g_i64(res, r, 3, -1);
	row->until_ms = g_i64(res, r, 4, -1);
	row->fence = g_i64(res, r, 5, 0);
	return oom ? DBCRON_ENOMEM : DBCRON_OK;
}

static int pg_lock_acquire(store *st, const char *name, const char *owner, int64_t ttl_ms,
			   int64_t *fence, int64_t *until_ms, store_lock_row *holder,
			   dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char ttl[24];
	int rc;

	if (!name || !*name || !owner || !*owner || ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "lock: name and owner must be non-empty and the lease positive");
	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	const char *v[3] = {name, owner, ttl};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_LOCK_ACQUIRE, 3, v, &res, err)))
		return rc;
	if (PQntuples(res) > 0 && g_bool(res, 0, 0)) {
		if (fence)
			*fence = g_i64(res, 0, 5, 0);
		if (until_ms)
			*until_ms = g_i64(res, 0, 4, -1);
		PQclear(res);
		return DBCRON_OK;
	}
	if (PQntuples(res) == 0) {
		/* The row was created concurrently, after our snapshot. */
		PQclear(res);
		if ((rc = pq_exec(s, S_LOCK_HOLDER, 1, v, &res, err)))
			return rc;
	}
	store_lock_row h = {0};
	if (PQntuples(res) > 0 && lock_row_dup(res, 0, &h)) {
		store_lock_row_clear(&h);
		PQclear(res);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading lock '%s'", name);
	}
	PQclear(res);
	rc = dbcron_err_set(err, DBCRON_ELOCKED, "lock '%s' is held by '%s' (fence %" PRId64 ")",
			    name, h.owner ? h.owner : "?", h.fence);
	if (holder)
		*holder = h;
	else
		store_lock_row_clear(&h);
	return rc;
}

static int pg_lock_renew(store *st, const char *name, const char *owner, int64_t fence,
			 int64_t ttl_ms, int64_t *until_ms, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char f[24], ttl[24];
	int rc;

	if (ttl_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "lock '%s': the lease must be positive", name);
	snprintf(f, sizeof(f), "%" PRId64, fence);
	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	const char *v[4] = {name, owner, f, ttl};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_LOCK_RENEW, 4, v, &res, err)))
		return rc;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': no longer held by '%s' with fence %" PRId64,
				      name, owner, fence);
	}
	if (until_ms)
		*until_ms = g_i64(res, 0, 0, -1);
	PQclear(res);
	return DBCRON_OK;
}

static int pg_lock_release(store *st, const char *name, const char *owner, int64_t fence,
			   dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	char f[24];
	int64_t n;
	int rc;

	snprintf(f, sizeof(f), "%" PRId64, fence);
	const char *v[3] = {name, owner, f};
	if ((rc = pg_ready(s, err)) || (rc = pq_exec_count(s, S_LOCK_RELEASE, 3, v, &n, err)))
		return rc;
	if (!n)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "lock '%s': not held by '%s' with fence %" PRId64 "; left as it is",
				      name, owner, fence);
	return DBCRON_OK;
}

static int pg_lock_list(store *st, store_lock_cb cb, void *ctx, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	int rc;

	if ((rc = pg_ready(s, err)) || (rc = pq_exec(s, S_LOCK_LIST, 0, NULL, &res, err)))
		return rc;
	for (int r = 0; r < PQntuples(res); r++) {
		store_lock_row row = {
			.name = g_ref(res, r, 0),
			.owner = g_ref(res, r, 1),
			.since_ms = g_i64(res, r, 2, -1),
			.until_ms = g_i64(res, r, 3, -1),
			.fence = g_i64(res, r, 4, 0),
		};
		if (cb(ctx, &row))
			break;
	}
	PQclear(res);
	return DBCRON_OK;
}

static int pg_log_run(store *st, const dbcron_run *run, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	PGresult *res;
	char num[9][24];
	int rc;

	if ((rc = pg_ready(s, err)))
		return rc;
	snprintf(num[0], 24, "%" PRId64, run->job_id);
	snprintf(num[2], 24, "%d", run->attempt > 0 ? run->attempt : 1);
	snprintf(num[3], 24, "%d", (int)run->state);
	snprintf(num[5], 24, "%" PRId64, run->started_ms);
	snprintf(num[6], 24, "%" PRId64, run->finished_ms);
	snprintf(num[7], 24, "%d", run->exit_code);
	snprintf(num[8], 24, "%" PRId64, run->missed);
	/* Lock attempts share job_id 0: attempts of two locks in the same
	 * millisecond are told apart by moving fire_at on. */
	for (int64_t k = 0; k < 1000; k++) {
		snprintf(num[1], 24, "%" PRId64, run->fire_at + k);
		snprintf(num[4], 24, "%" PRId64, run->due_at >= 0 ? run->due_at : run->fire_at + k);
		const char *v[14] = {
			num[0], run->job_name, num[1], num[2], num[3], num[4],
			run->node, run->claim_token,
			run->started_ms >= 0 ? num[5] : NULL,
			run->finished_ms >= 0 ? num[6] : NULL,
			run->has_exit_code ? num[7] : NULL, num[8],
			run->error, run->output,
		};
		if ((rc = pq_exec(s, S_LOG_RUN, 14, v, &res, err)))
			return rc;
		int got = PQntuples(res);
		PQclear(res);
		if (got)
			return DBCRON_OK;
	}
	return dbcron_err_set(err, DBCRON_EBUSY, "run log: no free instant for '%s'",
			      run->job_name ? run->job_name : "?");
}

static int pg_prune_runs(store *st, int64_t cutoff_ms, int64_t *deleted, dbcron_err *err)
{
	pg_store *s = (pg_store *)st;
	char c[24];
	int rc;

	snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
	const char *v[1] = {c};
	if ((rc = pg_ready(s, err)))
		return rc;
	return pq_exec_count(s, S_PRUNE_RUNS, 1, v, deleted, err);
}

const store_ops store_pg_ops = {
	.version = STORE_OPS_VERSION,
	.name = "postgresql",
	.caps = STORE_CAP_SKIP_LOCKED | STORE_CAP_RETURNING | STORE_CAP_MULTI_WRITER,
	.open = pg_open,
	.close = pg_close,
	.migrate = pg_migrate,
	.check_schema = pg_check_schema,
	.now_ms = pg_now_ms,
	.job_put = pg_job_put,
	.job_get = pg_job_get,
	.job_list = pg_job_list,
	.job_set_paused = pg_job_set_paused,
	.job_delete = pg_job_delete,
	.job_trigger = pg_job_trigger,
	.node_register = pg_node_register,
	.node_heartbeat = pg_node_heartbeat,
	.node_stop = pg_node_stop,
	.runs_release = pg_runs_release,
	.reap = pg_reap,
	.claim = pg_claim,
	.apply = pg_apply,
	.job_running = pg_job_running,
	.runs_list = pg_runs_list,
	.nodes_list = pg_nodes_list,
	.lock_acquire = pg_lock_acquire,
	.lock_renew = pg_lock_renew,
	.lock_release = pg_lock_release,
	.lock_list = pg_lock_list,
	.log_run = pg_log_run,
	.prune_runs = pg_prune_runs,
};
