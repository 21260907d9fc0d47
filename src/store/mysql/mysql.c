/*
 * The MySQL / MariaDB dialect of the claim protocol (dialect.h), over
 * MariaDB Connector/C with server-side prepared statements.
 *
 * Owns one MYSQL connection per handle, the statements prepared on it, and
 * the schema (schema.h).  What the server lacks, the dialect supplies, so
 * that the protocol stays the one protocol:
 *
 * - No UPDATE ... RETURNING.  A statement id may be a short script of parts
 *   (separated by PART below): a part can run once per row of the result
 *   before it (EACH, e.g. lock the rows with SELECT ... FOR UPDATE SKIP
 *   LOCKED, then update each), only when the part before it changed a row
 *   (IF_CHANGED), or hand back the key cell of a batch row it changed
 *   (made_row).  A claim stamps its rows with a private token (seed 000's
 *   UPDATE ... ORDER BY ... LIMIT), reads them back by that token, then
 *   gives them the claim's token.  MariaDB's INSERT ... RETURNING is used
 *   where it exists; elsewhere the inserts read back (sql_no_returning).
 * - Parameters are positional '?' only: the SQL below says ?N (scalar N),
 *   ?1NN (cell NN of the current batch row, or of the row an EACH part runs
 *   for) and ?LN (scalar N as a LIMIT, where a negative value means none);
 *   prepare() rewrites them to '?' and keeps the map.
 * - A batch on the claim and write paths travels as one JSON array read
 *   with JSON_TABLE, so a claim or a flush is a constant number of
 *   statements whatever its size.  The job put batches (23 cells a row, not
 *   on a hot path) run once per row (STORE_CAP_ROW_BATCH: the protocol
 *   wraps them in a transaction).
 *
 * Results are copied out of the connection as they are read (every part's
 * rows, in order), so a later part can run before the caller reads them.
 *
 * Sessions: READ COMMITTED, UTC and strict SQL mode are set at every
 * connect; a node's waits are bounded by its lease (tune).  Database time
 * is the server's NOW(3) as epoch ms, never the client's clock.
 *
 * Connection loss: a statement that meets a broken connection fails with
 * DBCRON_ECONN; the next operation outside a transaction reconnects and
 * prepares again.  A statement is never silently retried: a write whose
 * reply was lost may have committed.  The password lives in the driver and
 * in this handle only; messages name the database by its masked URL.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "core/alloc.h"
#include "store/dialect.h"
#include "store/mysql/schema.h"
#include "store/stmt.h"

/* The database clock (invariant 4) in epoch ms.  NOW(3) is fixed for one
 * statement; sessions run in UTC. */
#define DBNOW "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)"
#define R(n) "?1" #n
#define PART "\x1f"
#define EACH "\x03"       /* prefix: once per row of the result before it */
#define IF_CHANGED "\x02" /* prefix: only if the part before changed a row */
/* a row of NULLs as wide as STORE_JOB_COLS */
#define NULLS_JOB "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, " "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, " "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
_Static_assert(STORE_NJOBCOLS == 34, "NULLS_JOB is as wide as the job columns");
/* A one-column list parameter N as a table of values v. */
#define LIST_I64(n) "(SELECT v FROM JSON_TABLE(?" #n ", '$[*]' COLUMNS (v BIGINT PATH '$')) jt)"
#define LIST_TEXT(n)                                                             \
	"(SELECT v FROM JSON_TABLE(?" #n ", '$[*]' COLUMNS (v VARCHAR(320) CHARACTER " \
	"SET utf8mb4 PATH '$')) jt)"

/* Routing: job row J may run on the claiming node: a command anywhere, a
 * handler (executor 2) when it is in the node's list parameter N, unless
 * parameter R (route) is 0. */
#define RUNS_HERE(J, R, N) "(?" #R " = 0 OR " J ".executor <> 2 OR " J ".handler IN " LIST_TEXT(N) ")"

/* Pools: job id ID is in the claim's pass, parameter P (0: any job; 1: not
 * in the list parameter L, the node's slow pool; 2: in it), protocol.c
 * "Pools". */
#define IN_POOL(ID, P, L) "(?" #P " = 0 OR (?" #P " = 2) = (" ID " IN " LIST_I64(L) "))"

/* Routing: handler job J is stranded at N (now) for what is due at AT (its
 * next fire, or an unclaimed run's due_at) when AT is past its misfire
 * threshold and no live node registered its handler; then a node without
 * the handler claims it too, to record it MISFIRED (protocol.c says why). */
#define STRANDED(J, AT, N)                                                       \
	"(" J ".executor = 2 AND " AT " + " J ".misfire_threshold_ms < " N          \
	" AND NOT EXISTS (SELECT 1 FROM node_handlers h JOIN nodes n ON n.id = "    \
	"h.node_id WHERE h.handler = " J ".handler AND n.state = 'alive' AND "      \
	"n.lease_until >= " N "))"

static const char *const sql[ST__COUNT] = {
	[ST_BEGIN] = "START TRANSACTION",
	[ST_BEGIN_WRITE] = "START TRANSACTION",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_NOW] = "SELECT " DBNOW,
	[ST_SCHEMA] = "SELECT 1 /* schema_read(), migrate() */",
	[ST_JOB_GET] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name = ?1",
	[ST_JOB_LIST] = "SELECT " STORE_JOB_COLS " FROM jobs ORDER BY name",
	[ST_JOB_PAGE] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > ?1 ORDER BY name LIMIT ?2",
	[ST_JOB_BRIEF] = "SELECT name, next_fire_at, paused FROM jobs ORDER BY name",
	[ST_JOB_LAST_OK] =
		"SELECT j.name, (SELECT r.finished_ms FROM runs r WHERE r.job_id = j.id AND "
		"r.state = 3 ORDER BY r.fire_at DESC, r.attempt DESC LIMIT 1) FROM jobs j "
		"ORDER BY j.name LIMIT ?1",
	/* no LATERAL in MariaDB: a scalar subquery per job (a backward probe of
	 * runs_fire) picks the run, the join reads it */
	[ST_JOBS_LAST_RUN] =
		"SELECT r.job_id, r.id, r.state, r.finished_ms FROM (SELECT (SELECT x.id FROM "
		"runs x WHERE x.job_id = jt.v AND x.state <> 1 ORDER BY x.fire_at DESC, "
		"x.attempt DESC LIMIT 1) AS rid FROM JSON_TABLE(?1, '$[*]' COLUMNS (v BIGINT "
		"PATH '$')) jt) w JOIN runs r ON r.id = w.rid",
	[ST_JOBS_NAMED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN " LIST_TEXT(1),
	[ST_JOBS_BY_NAMES] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN " LIST_TEXT(1)
			     " ORDER BY name FOR UPDATE",
	[ST_JOBS_INSERT] =
		"INSERT INTO jobs (" STORE_JOB_PUT_COLS ", created_ms, updated_ms) VALUES ("
		R(00) ", " R(01) ", " R(02) ", " R(03) ", " R(04) ", " R(05) ", " R(06) ", "
		R(07) ", " R(08) ", " R(09) ", " R(10) ", " R(11) ", " R(12) ", " R(13) ", "
		R(14) ", " R(15) ", " R(16) ", " R(17) ", " R(18) ", " R(19) ", " R(20) ", "
		R(21) ", " R(22) ", " R(23) ", " R(24) ", " R(25) ", " R(26) ", " R(27) ", "
		R(28) ", " R(29) ", ?1, ?1) RETURNING id, name",
	[ST_JOBS_UPDATE] =
		"UPDATE jobs SET name = " R(01) ", kind = " R(02) ", spec = " R(03)
		", interval_ms = " R(04) ", anchor_ms = " R(05) ", at_ms = " R(06)
		", tz = " R(07) ", misfire = " R(08) ", max_catchup = " R(09)
		", misfire_threshold_ms = " R(10) ", overlap = " R(11)
		", node_loss = " R(12) ", max_retries = " R(13)
		", retry_base_ms = " R(14) ", retry_cap_ms = " R(15)
		", retry_jitter = " R(16) ", timeout_ms = " R(17)
		", executor = " R(18) ", argv = " R(19) ", handler = " R(20)
		", arg = " R(21) ", paused = " R(22) ", next_fire_at = " R(23)
		", run_user = " R(24) ", run_group = " R(25) ", cwd = " R(26)
		", env = " R(27) ", env_file = " R(28) ", umask = " R(29)
		", inherit_env = " R(30)
		", updated_ms = ?1, set_aside = NULL WHERE id = " R(00),
	[ST_JOBS_PRUNE] = "DELETE FROM jobs WHERE name NOT IN " LIST_TEXT(1),
	[ST_RUNS_CLOSE_ORPHANS] =
		"UPDATE runs SET state = 8, finished_ms = ?1, error = 'job deleted' "
		"WHERE state = 1 AND node IS NULL AND NOT EXISTS "
		"(SELECT 1 FROM jobs WHERE jobs.id = runs.job_id)",
	[ST_JOB_SET_PAUSED] =
		"UPDATE jobs SET paused = ?2, next_fire_at = CASE WHEN ?2 "
		"THEN next_fire_at ELSE ?3 END, set_aside = CASE WHEN ?2 THEN set_aside END, "
		"updated_ms = " DBNOW " WHERE name = ?1",
	[ST_JOBS_SET_ASIDE] = "UPDATE jobs SET set_aside = " R(01) ", next_fire_at = NULL "
			      "WHERE id = " R(00),
	[ST_JOB_DELETE] = "DELETE FROM jobs WHERE name = ?1",
	[ST_JOB_ID] = "SELECT id FROM jobs WHERE name = ?1",
	[ST_JOB_RENAME] = "UPDATE jobs SET name = ?2, updated_ms = ?3 WHERE name = ?1",
	[ST_RUNS_RENAME] = "UPDATE runs SET job_name = ?2 WHERE job_id = ?1",
	[ST_TRIGGER_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms) VALUES (?1, ?2, ?3, 1, 1, ?3, ?4) RETURNING id",
	/* One clock reading for the whole claim; a last row of NULLs carries it
	 * when no job is due (the protocol skips rows without a job). */
	[ST_CLAIM_DUE_JOBS] =
		"SET @dbcron_now = " DBNOW PART
		"SELECT @dbcron_now, " STORE_JOB_COLS " FROM jobs WHERE paused = 0 AND "
		"next_fire_at IS NOT NULL AND next_fire_at <= @dbcron_now + ?1 AND ("
		RUNS_HERE("jobs", 3, 4) " OR " STRANDED("jobs", "jobs.next_fire_at", "@dbcron_now") ") AND "
		IN_POOL("jobs.id", 5, 6) " ORDER BY next_fire_at LIMIT ?2 FOR UPDATE SKIP LOCKED" PART
		"SELECT @dbcron_now, " NULLS_JOB,
	/* One statement per claim whatever its size: the batch is a JSON
	 * table, and IGNORE + RETURNING hands out only rows really inserted
	 * (invariant 1). */
	[ST_FIRES_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, finished_ms, missed, error, created_ms) SELECT v.job_id, "
		"v.job_name, v.fire_at, 1, v.state, v.due_at, CASE WHEN v.state = 1 THEN ?1 "
		"END, CASE WHEN v.state = 1 THEN ?2 END, CASE WHEN v.state <> 1 THEN ?3 END, "
		"v.missed, v.error, ?3 FROM JSON_TABLE(?4, '$[*]' COLUMNS (job_id BIGINT PATH "
		"'$[0]', job_name VARCHAR(255) CHARACTER SET utf8mb4 PATH '$[1]', fire_at "
		"BIGINT PATH '$[2]', state INT PATH '$[3]', due_at BIGINT PATH '$[4]', missed "
		"BIGINT PATH '$[5]', error TEXT CHARACTER SET utf8mb4 PATH '$[6]')) v "
		"RETURNING id, job_id, job_name, fire_at, state, due_at, missed",
	[ST_JOBS_ADVANCE] = "UPDATE jobs JOIN JSON_TABLE(?1, '$[*]' COLUMNS (id BIGINT PATH "
			    "'$[0]', n BIGINT PATH '$[1]')) v ON jobs.id = v.id SET "
			    "jobs.next_fire_at = v.n",
	/* Seed 000: stamp due runs with a token private to this statement,
	 * oldest first, read them back by it, then give them the claim's. */
	[ST_CLAIM_RUNS] =
		"UPDATE runs SET node = ?1, claim_token = CONCAT(?2, '~') WHERE state = 1 AND "
		"node IS NULL AND due_at <= ?3 AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = "
		"runs.job_id AND j.paused = 0 AND (" RUNS_HERE("j", 5, 6) " OR " STRANDED("j", "runs.due_at", "?7")
		") AND " IN_POOL("j.id", 8, 9) ") ORDER BY due_at LIMIT ?L4" PART
		"SELECT id, job_id, job_name, fire_at, attempt, due_at, missed FROM runs WHERE "
		"node = ?1 AND state = 1 AND claim_token = CONCAT(?2, '~')" PART
		"UPDATE runs SET claim_token = ?2 WHERE node = ?1 AND state = 1 AND "
		"claim_token = CONCAT(?2, '~')",
	[ST_JOBS_BY_IDS] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id IN " LIST_I64(1),
	/* Fenced by id, token and node (invariant 3).  "RETURNING id" is the
	 * read-back: a row of ours now in the state we wrote took our write
	 * (or an earlier try of it whose reply was lost). */
	[ST_RUNS_APPLY] =
		"UPDATE runs r JOIN JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token "
		"VARCHAR(64) PATH '$[1]', state INT PATH '$[2]', started BIGINT PATH '$[3]', "
		"finished BIGINT PATH '$[4]', hx INT PATH '$[5]', xc INT PATH '$[6]', error "
		"MEDIUMTEXT CHARACTER SET utf8mb4 PATH '$[7]', output MEDIUMTEXT CHARACTER SET "
		"utf8mb4 PATH '$[8]', live INT PATH '$[9]')) v ON r.id = v.id SET r.started_ms = coalesce(v.started, "
		"r.started_ms), r.finished_ms = coalesce(v.finished, r.finished_ms), "
		"r.exit_code = CASE WHEN v.hx THEN v.xc ELSE r.exit_code END, r.error = "
		"coalesce(v.error, r.error), r.output = coalesce(v.output, r.output), r.state = "
		"v.state WHERE r.claim_token = v.token AND r.node = ?1 AND r.state BETWEEN 1 AND "
		"v.live" PART
		"SELECT r.id FROM runs r JOIN JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH "
		"'$[0]', token VARCHAR(64) PATH '$[1]', state INT PATH '$[2]')) v ON r.id = "
		"v.id WHERE r.claim_token = v.token AND r.node = ?1 AND r.state = v.state",
	[ST_RETRY_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms) SELECT r.job_id, r.job_name, r.fire_at, r.attempt + 1, 1, v.due, "
		"?1 FROM JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH '$[0]', due BIGINT PATH "
		"'$[1]')) v JOIN runs r ON r.id = v.id WHERE EXISTS (SELECT 1 FROM jobs j "
		"WHERE j.id = r.job_id)",
	[ST_JOBS_NEXT_IF_NULL] = "UPDATE jobs JOIN JSON_TABLE(?1, '$[*]' COLUMNS (id BIGINT "
				 "PATH '$[0]', n BIGINT PATH '$[1]')) v ON jobs.id = v.id SET "
				 "jobs.next_fire_at = v.n WHERE jobs.next_fire_at IS NULL",
	[ST_NODE_UPSERT] =
		"INSERT INTO nodes (id, incarnation, host, pid, workers, state, started_ms, "
		"heartbeat_ms, lease_until) VALUES (?1, ?2, ?3, ?4, ?5, 'alive', ?6, ?6, "
		"?6 + ?7) ON DUPLICATE KEY UPDATE incarnation = VALUES(incarnation), host = "
		"VALUES(host), pid = VALUES(pid), workers = VALUES(workers), state = 'alive', "
		"started_ms = VALUES(started_ms), heartbeat_ms = VALUES(heartbeat_ms), "
		"lease_until = VALUES(lease_until)",
	[ST_NODE_HANDLERS_CLEAR] = "DELETE FROM node_handlers WHERE node_id = ?1",
	[ST_NODE_HANDLERS_ADD] = "INSERT IGNORE INTO node_handlers (node_id, handler) SELECT ?1, v "
				 "FROM " LIST_TEXT(2) " AS l",
	[ST_HANDLERS_LIVE] =
		"SELECT DISTINCT h.handler FROM node_handlers h JOIN nodes n ON n.id = h.node_id "
		"WHERE n.state = 'alive' AND n.lease_until >= " DBNOW " ORDER BY h.handler",
	[ST_NODE_HEARTBEAT] =
		"SET @dbcron_now = " DBNOW PART
		"UPDATE nodes SET heartbeat_ms = @dbcron_now, lease_until = @dbcron_now + ?3, "
		"seen_gen = CASE WHEN ?4 >= 0 THEN ?4 ELSE seen_gen END WHERE id = ?1 AND "
		"incarnation = ?2 AND state = 'alive'" PART IF_CHANGED
		"SELECT @dbcron_now, (SELECT value FROM meta WHERE `key` = 'jobs_gen')",
	[ST_META_GEN] = "SELECT value FROM meta WHERE `key` = 'jobs_gen'",
	/* LAST_INSERT_ID(expr) hands this connection the value it wrote */
	[ST_GEN_BUMP] = "UPDATE meta SET value = LAST_INSERT_ID(value + 1) WHERE `key` = "
			"'jobs_gen'" PART IF_CHANGED "SELECT LAST_INSERT_ID()",
	[ST_NODES_LAGGING] = "SELECT id, lease_until - " DBNOW " FROM nodes WHERE state = "
			     "'alive' AND lease_until > " DBNOW " AND seen_gen < ?1 ORDER BY id",
	[ST_JOBS_STATE] = "SELECT id, paused FROM jobs WHERE id IN " LIST_I64(1),
	[ST_NODE_RUNNING] = "SELECT count(*) FROM runs WHERE node = ?1 AND state = 2",
	[ST_NODES_ORPHANED] = "SELECT n.id, n.lease_until FROM nodes n WHERE n.state <> 'alive' "
			      "AND EXISTS (SELECT 1 FROM runs r WHERE r.node = n.id AND "
			      "r.state IN (1, 2)) FOR UPDATE SKIP LOCKED",
	[ST_NODE_STOP] = "UPDATE nodes SET state = 'stopped', heartbeat_ms = " DBNOW
			 ", lease_until = " DBNOW " WHERE id = ?1 AND incarnation = ?2 AND "
			 "state = 'alive'",
	[ST_RUNS_UNCLAIM_NODE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = ?1 AND state = 1",
	[ST_RUNS_RELEASE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE id = "
			    R(00) " AND claim_token = " R(01) " AND node = ?1 AND state = 1",
	[ST_RUNS_RELEASE_CLAIM] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE node = ?1 "
				  "AND claim_token = ?2 AND state = 1",
	[ST_NODES_LAPSED] = "SELECT 1 FROM nodes WHERE state = 'alive' AND lease_until < ?1 "
			    "LIMIT 1",
	/* The nodes row is the mutex: of two concurrent reapers exactly one
	 * locks each node, marks it dead and resolves its runs. */
	[ST_NODES_EXPIRE] = "SELECT id, lease_until FROM nodes WHERE state = 'alive' AND "
			    "lease_until < ?1 FOR UPDATE SKIP LOCKED" PART EACH
			    "UPDATE nodes SET state = 'dead' WHERE id = " R(00),
	[ST_NODE_GET] = "SELECT incarnation, state, lease_until, host, pid FROM nodes "
			"WHERE id = ?1 FOR UPDATE",
	/* Rows locked first: a run moving SCHEDULED -> RUNNING meanwhile is
	 * read after the lock wait, in its new state, and matched either way. */
	[ST_RUNS_ABANDON_LOST] =
		"SELECT id, job_id, fire_at, attempt, started_ms FROM runs WHERE node = "
		R(00) " AND (state = 2 OR (state = 1 AND due_at < " R(01) ")) FOR UPDATE" PART
		/* assignments read the row as updated so far: state goes last */
		EACH "UPDATE runs SET error = CASE WHEN state = 2 THEN 'node lost' ELSE 'node "
		"lost before its start was written' END, finished_ms = ?1, state = 8 WHERE "
		"id = " R(00),
	[ST_RUNS_UNCLAIM_LOST] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = " R(00) " AND state = 1 AND due_at >= " R(01),
	[ST_JOB_RUNNING] =
		"SELECT 1 FROM runs r JOIN nodes n ON n.id = r.node WHERE r.job_id = ?1 AND "
		"r.state = 2 AND r.id <> ?2 AND n.state = 'alive' LIMIT 1",
	[ST_SCHEDULE_LOCK] = "SELECT fence FROM locks WHERE name = 'dbcron:schedule' FOR UPDATE",
	[ST_SCHEDULE_LOCK_INIT] = "INSERT IGNORE INTO locks (name, owner, since_ms, until_ms, fence) "
				  "VALUES ('dbcron:schedule', '', 0, 0, 0)",
	[ST_RUN_GET] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id = ?1",
	[ST_RUNS_AFTER_ID] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id > ?1 AND (?2 IS NULL OR "
		"job_name = ?2) ORDER BY id LIMIT ?L3",
	[ST_RUNS_LIST] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE (?1 IS NULL OR "
		"job_name = ?1) AND (?2 = 0 OR state = ?2) AND (?3 < 0 OR fire_at >= ?3) "
		/* keyset paging: strictly after the cursor row in this order */
		"AND (?5 < 0 OR fire_at < ?5 OR (fire_at = ?5 AND (job_name < ?6 OR (job_name = ?6 AND (attempt < ?7 OR (attempt = ?7 AND id < ?8)))))) "
		"ORDER BY fire_at DESC, job_name DESC, attempt DESC, id DESC LIMIT ?L4) x "
		"ORDER BY fire_at, job_name, attempt, id",
	/* one job's runs: job_name = ?, so (job_name, fire_at, attempt, id)
	 * serves the filter and the order (issue 23 item 10) */
	[ST_RUNS_LIST_JOB] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE job_name = ?1 "
		" AND (?2 = 0 OR state = ?2) AND (?3 < 0 OR fire_at >= ?3) "
		/* keyset paging: strictly after the cursor row in this order */
		"AND (?5 < 0 OR fire_at < ?5 OR (fire_at = ?5 AND (job_name < ?6 OR (job_name = ?6 AND (attempt < ?7 OR (attempt = ?7 AND id < ?8)))))) "
		"ORDER BY fire_at DESC, job_name DESC, attempt DESC, id DESC LIMIT ?L4) x "
		"ORDER BY fire_at, job_name, attempt, id",
	/* reap and the orphan sweep resolve what a stopped or dead node held;
	 * until they have, its row stays */
	[ST_NODES_PRUNE] = "DELETE FROM nodes WHERE state IN ('stopped', 'dead') AND "
			   "heartbeat_ms < ?1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE "
			   "r.node = nodes.id AND r.state IN (1, 2))",
	[ST_NODES_LIST] =
		"SELECT id, host, pid, workers, state, started_ms, heartbeat_ms, lease_until, "
		"(SELECT count(*) FROM runs r WHERE r.node = nodes.id AND r.state = 2) FROM "
		"nodes ORDER BY id",
	/* Seed 002: insert, or take over only an expired lease, in one
	 * statement; a take-over bumps the fence.  The assignments read the
	 * row as updated so far, so until_ms, which the test reads, goes last.
	 * The read-back finds the row only when this call took it. */
	[ST_LOCK_ACQUIRE] =
		"SET @dbcron_now = " DBNOW PART
		"INSERT INTO locks (name, owner, since_ms, until_ms, fence) VALUES (?1, ?2, "
		"@dbcron_now, @dbcron_now + ?3, 1) ON DUPLICATE KEY UPDATE fence = IF(until_ms "
		"< @dbcron_now, fence + 1, fence), owner = IF(until_ms < @dbcron_now, "
		"VALUES(owner), owner), since_ms = IF(until_ms < @dbcron_now, @dbcron_now, "
		"since_ms), until_ms = IF(until_ms < @dbcron_now, @dbcron_now + ?3, until_ms)"
		PART "SELECT fence, until_ms FROM locks WHERE name = ?1 AND owner = ?2 AND "
		"since_ms = @dbcron_now",
	[ST_LOCK_GET] = "SELECT name, owner, since_ms, until_ms, fence FROM locks WHERE name = ?1",
	[ST_LOCK_RENEW] = "SET @dbcron_now = " DBNOW PART
			  "UPDATE locks SET until_ms = @dbcron_now + ?4 WHERE name = ?1 AND "
			  "owner = ?2 AND fence = ?3" PART IF_CHANGED "SELECT @dbcron_now + ?4",
	/* The row stays so that the fence keeps growing. */
	[ST_LOCK_RELEASE] = "UPDATE locks SET until_ms = " DBNOW " - 1 WHERE name = ?1 AND "
			    "owner = ?2 AND fence = ?3",
	[ST_LOCK_LIST] = "SELECT name, owner, since_ms, until_ms, fence FROM locks ORDER BY name",
	[ST_LOG_RUN] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, started_ms, finished_ms, exit_code, missed, error, "
		"output, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14, " DBNOW ") RETURNING id",
	/* The oldest first through runs_fire_at, a bounded batch a statement. */
	[ST_PRUNE_RUNS] = "DELETE FROM runs WHERE fire_at < ?1 AND finished_ms < ?1 AND state "
			  "NOT IN (1, 2) ORDER BY fire_at LIMIT ?L2",
};

/* Where the server has no INSERT ... RETURNING (MySQL; MariaDB before
 * 10.5, or any server under insert_returning=0): the same statements read
 * back what they inserted.  A single-row insert hands back its id through
 * LAST_INSERT_ID(), only when a row went in (IGNORE met no duplicate).
 * The claim's batch insert stamps the rows it really inserts with a token
 * private to the statement, as ST_CLAIM_RUNS does, reads them back by it
 * through the unique (job_id, fire_at, attempt) index, then gives the
 * SCHEDULED ones the claim's token: still a constant three statements per
 * claim, and only rows this claim inserted are handed out (invariant 1). */
static const char *const sql_no_returning[ST__COUNT] = {
	[ST_JOBS_INSERT] =
		"INSERT INTO jobs (" STORE_JOB_PUT_COLS ", created_ms, updated_ms) VALUES ("
		R(00) ", " R(01) ", " R(02) ", " R(03) ", " R(04) ", " R(05) ", " R(06) ", "
		R(07) ", " R(08) ", " R(09) ", " R(10) ", " R(11) ", " R(12) ", " R(13) ", "
		R(14) ", " R(15) ", " R(16) ", " R(17) ", " R(18) ", " R(19) ", " R(20) ", "
		R(21) ", " R(22) ", " R(23) ", " R(24) ", " R(25) ", " R(26) ", " R(27) ", "
		R(28) ", " R(29) ", ?1, ?1)" PART IF_CHANGED
		"SELECT LAST_INSERT_ID(), name FROM jobs WHERE id = LAST_INSERT_ID()",
	[ST_TRIGGER_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms) VALUES (?1, ?2, ?3, 1, 1, ?3, ?4)" PART IF_CHANGED
		"SELECT LAST_INSERT_ID()",
	[ST_FIRES_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, finished_ms, missed, error, created_ms) SELECT v.job_id, "
		"v.job_name, v.fire_at, 1, v.state, v.due_at, CASE WHEN v.state = 1 THEN ?1 "
		"END, CONCAT(?2, '~'), CASE WHEN v.state <> 1 THEN ?3 END, "
		"v.missed, v.error, ?3 FROM JSON_TABLE(?4, '$[*]' COLUMNS (job_id BIGINT PATH "
		"'$[0]', job_name VARCHAR(255) CHARACTER SET utf8mb4 PATH '$[1]', fire_at "
		"BIGINT PATH '$[2]', state INT PATH '$[3]', due_at BIGINT PATH '$[4]', missed "
		"BIGINT PATH '$[5]', error TEXT CHARACTER SET utf8mb4 PATH '$[6]')) v" PART
		"SELECT r.id, r.job_id, r.job_name, r.fire_at, r.state, r.due_at, r.missed FROM "
		"JSON_TABLE(?4, '$[*]' COLUMNS (job_id BIGINT PATH '$[0]', fire_at BIGINT PATH "
		"'$[2]')) v JOIN runs r ON r.job_id = v.job_id AND r.fire_at = v.fire_at AND "
		"r.attempt = 1 WHERE r.claim_token = CONCAT(?2, '~')" PART
		"UPDATE runs r JOIN JSON_TABLE(?4, '$[*]' COLUMNS (job_id BIGINT PATH '$[0]', "
		"fire_at BIGINT PATH '$[2]')) v ON r.job_id = v.job_id AND r.fire_at = "
		"v.fire_at AND r.attempt = 1 SET r.claim_token = CASE WHEN r.state = 1 THEN ?2 "
		"END WHERE r.claim_token = CONCAT(?2, '~')",
	[ST_LOG_RUN] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, started_ms, finished_ms, exit_code, missed, error, "
		"output, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14, " DBNOW ")" PART IF_CHANGED "SELECT LAST_INSERT_ID()",
};

/* The statements whose batch runs row by row (the rest take a one-column
 * batch as JSON). */
static const bool per_row[ST__COUNT] = {
	[ST_JOBS_INSERT] = true,   [ST_JOBS_UPDATE] = true,	  [ST_RUNS_RELEASE] = true,
	[ST_RUNS_ABANDON_LOST] = true, [ST_RUNS_UNCLAIM_LOST] = true, [ST_JOBS_SET_ASIDE] = true,
};

/* A row-by-row UPDATE whose "RETURNING key" is made from the batch row's
 * cell 0 when the row changed (none today: RUNS_APPLY reads back). */
static const bool made_row[ST__COUNT] = {[ST_BEGIN] = false};

#define MAX_PARTS 4
#define MAX_REFS 48
#define MY_BATCHES 2 /* batch parameters one part may bind */

enum ref_kind { REF_SCALAR, REF_CELL, REF_LIMIT };

typedef struct part {
	MYSQL_STMT *st;
	char *text; /* with '?' only */
	bool each, if_changed;
	int nrefs;
	struct {
		unsigned char kind;
		unsigned char idx; /* 0-based */
	} refs[MAX_REFS];
} part;

typedef struct stmt {
	bool ready;
	int nparts;
	part parts[MAX_PARTS];
} stmt;

struct store_conn {
	MYSQL *db;
	char masked[256];
	/* what the URL said, for reconnects */
	char *host, *user, *pass, *dbname, *socket;
	unsigned port;
	bool connected, in_tx, mariadb;
	/* the server has INSERT ... RETURNING and the URL did not turn it off */
	bool insert_returning, no_returning_asked;
	char tune[256]; /* SET for a node's session, "" for none */
	stmt stmts[ST__COUNT];
	/* the current result, copied out: rows of ncols cells (NULL: NULL) */
	char **cells;
	size_t ncells, cap, nrows;
	int ncols;
	long row; /* -1 before the first */
	int64_t changes;
	/* per execute */
	/* the JSON of each batch parameter of a part, in the order bound: a
	 * claim statement has two lists (handlers, the slow pool's jobs) */
	store_text json[MY_BATCHES];
	/* a text cell with bad bytes replaced, one per bound parameter: two
	 * cells of one row may both need it */
	store_text clean[MAX_REFS];
	int64_t ivals[MAX_REFS];
	unsigned long lens[MAX_REFS];
	my_bool nulls[MAX_REFS];
};

/* ---- errors ---- */

static bool conn_errno(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_CONNECTION_ERROR ||
	       e == CR_CONN_HOST_ERROR || e == CR_SERVER_LOST_EXTENDED || e == ER_CONNECTION_KILLED ||
	       e == ER_SERVER_SHUTDOWN || e == CR_COMMANDS_OUT_OF_SYNC || e == 4031 /* idle ended */;
}

static int classify(store_conn *q, unsigned e, const char *what, const char *msg,
		    dbcron_err *err)
{
	if (conn_errno(e)) {
		q->connected = false;
		q->in_tx = false;
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s: %s", what,
				      q->masked, msg);
	}
	switch (e) {
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_LOCK_DEADLOCK:
	case 1969: /* MariaDB: max_statement_time exceeded */
	case 3024: /* MySQL: max_execution_time exceeded */
		return dbcron_err_set(err, DBCRON_EBUSY, "%s: %s", what, msg);
	case ER_DUP_ENTRY:
	case ER_NO_REFERENCED_ROW_2:
	case ER_ROW_IS_REFERENCED_2:
	case ER_BAD_NULL_ERROR:
	case 4025: /* CHECK constraint */
		return dbcron_err_set(err, DBCRON_ECONSTRAINT, "%s: %s", what, msg);
	case ER_OUTOFMEMORY:
	case CR_OUT_OF_MEMORY:
		return dbcron_err_set(err, DBCRON_ENOMEM, "%s: %s", what, msg);
	default:
		return dbcron_err_set(err, DBCRON_EDB, "%s: %s", what, msg);
	}
}

static int fail_db(store_conn *q, const char *what, dbcron_err *err)
{
	return classify(q, mysql_errno(q->db), what, mysql_error(q->db), err);
}

static int fail_st(store_conn *q, MYSQL_STMT *st, const char *what, dbcron_err *err)
{
	return classify(q, mysql_stmt_errno(st), what, mysql_stmt_error(st), err);
}

/* ---- connection ---- */

static void free_parts(stmt *s);

static void close_stmts(store_conn *q)
{
	for (int i = 0; i < ST__COUNT; i++)
		free_parts(&q->stmts[i]);
}

static int run_text(store_conn *q, const char *text, const char *what, dbcron_err *err)
{
	if (mysql_real_query(q->db, text, (unsigned long)strlen(text)))
		return fail_db(q, what, err);
	MYSQL_RES *r = mysql_store_result(q->db);
	if (r)
		mysql_free_result(r);
	else if (mysql_field_count(q->db))
		return fail_db(q, what, err);
	return DBCRON_OK;
}

static int connect_db(store_conn *q, dbcron_err *err)
{
	if (q->db)
		mysql_close(q->db);
	close_stmts(q);
	q->connected = q->in_tx = false;
	if (!(q->db = mysql_init(NULL)))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory connecting to %s", q->masked);
	unsigned timeout = 10;
	my_bool off = 0;
	mysql_options(q->db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(q->db, MYSQL_OPT_RECONNECT, &off);
	mysql_options(q->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(q->db, MYSQL_READ_DEFAULT_GROUP, NULL);
	/* Every session alike: READ COMMITTED as the claim protocol assumes,
	 * UTC for UNIX_TIMESTAMP(), and strict mode so that a bad value is an
	 * error, not a warning. */
	mysql_options(q->db, MYSQL_INIT_COMMAND, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	mysql_options(q->db, MYSQL_INIT_COMMAND,
		      "SET SESSION time_zone = '+00:00', sql_mode = "
		      "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO'");
	/* matched, not changed, rows: a renew to the same instant still counts */
	if (!mysql_real_connect(q->db, q->host, q->user, q->pass, q->dbname, q->port, q->socket,
				CLIENT_FOUND_ROWS)) {
		int rc = dbcron_err_set(err, DBCRON_ECONN, "cannot connect to %s: %s", q->masked,
					mysql_error(q->db));
		mysql_close(q->db);
		q->db = NULL;
		return rc;
	}
	const char *info = mysql_get_server_info(q->db);
	unsigned long ver = mysql_get_server_version(q->db);
	q->mariadb = info && strstr(info, "MariaDB");
	/* FOR UPDATE SKIP LOCKED and JSON_TABLE: MariaDB 10.6, MySQL 8.0.4.
	 * INSERT ... RETURNING only on MariaDB (10.5); elsewhere the inserts
	 * read back (sql_no_returning). */
	if (q->mariadb ? ver < 100600 : ver < 80004) {
		int rc = dbcron_err_set(err, DBCRON_EINVAL,
					"%s runs %s %s: dbcron needs MariaDB 10.6 or MySQL 8.0.4 or "
					"later (FOR UPDATE SKIP LOCKED, JSON_TABLE)",
					q->masked, q->mariadb ? "MariaDB" : "MySQL", info ? info : "?");
		mysql_close(q->db);
		q->db = NULL;
		return rc;
	}
	q->insert_returning = q->mariadb && !q->no_returning_asked;
	q->connected = true;
	if (q->tune[0])
		return run_text(q, q->tune, "setting session timeouts", err);
	return DBCRON_OK;
}

/* Before the first statement of an operation: reconnect after a loss. */
static int ready(store_conn *q, dbcron_err *err)
{
	if (q->connected && q->db)
		return DBCRON_OK;
	return connect_db(q, err);
}

/* ---- statements ---- */

/* Split sql[id] into parts and rewrite ?N / ?1NN / ?LN to '?'. */
static int parse_stmt(store_conn *q, int id, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	const char *p = !q->insert_returning && sql_no_returning[id] ? sql_no_returning[id] : sql[id];
	s->nparts = 0;
	while (*p) {
		if (s->nparts == MAX_PARTS)
			return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: too many parts",
					      store_stmt_what(id));
		part *pt = &s->parts[s->nparts++];
		memset(pt, 0, sizeof(*pt));
		for (;;) {
			if (*p == EACH[0])
				pt->each = true;
			else if (*p == IF_CHANGED[0])
				pt->if_changed = true;
			else
				break;
			p++;
		}
		const char *end = strchr(p, PART[0]);
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *t = dbcron__calloc(n + 1, 1);
		if (!t)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory preparing %s",
					      store_stmt_what(id));
		size_t o = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] != '?') {
				t[o++] = p[i];
				continue;
			}
			unsigned char kind = REF_SCALAR;
			size_t j = i + 1;
			if (p[j] == 'L') {
				kind = REF_LIMIT;
				j++;
			}
			int v = 0, digits = 0;
			while (j < n && isdigit((unsigned char)p[j]) && digits < 3)
				v = v * 10 + (p[j++] - '0'), digits++;
			if (!digits || pt->nrefs == MAX_REFS) {
				dbcron__free(t);
				return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: bad placeholder",
						      store_stmt_what(id));
			}
			if (digits == 3 && kind == REF_SCALAR) {
				kind = REF_CELL;
				v -= 100;
			} else {
				v -= 1;
			}
			pt->refs[pt->nrefs].kind = kind;
			pt->refs[pt->nrefs].idx = (unsigned char)v;
			pt->nrefs++;
			t[o++] = '?';
			i = j - 1;
		}
		pt->text = t;
		p += n;
		if (*p == PART[0])
			p++;
	}
	return DBCRON_OK;
}

static void free_parts(stmt *s)
{
	for (int k = 0; k < s->nparts; k++) {
		if (s->parts[k].st)
			mysql_stmt_close(s->parts[k].st);
		dbcron__free(s->parts[k].text);
	}
	memset(s, 0, sizeof(*s));
}

static int prepare(store_conn *q, int id, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	if (s->ready)
		return DBCRON_OK;
	int rc;
	if (!s->nparts && (rc = parse_stmt(q, id, err))) {
		free_parts(s); /* a half-parsed statement is parsed again next time */
		return rc;
	}
	for (int k = 0; k < s->nparts; k++) {
		part *pt = &s->parts[k];
		if (pt->st)
			continue;
		if (!(pt->st = mysql_stmt_init(q->db)))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory preparing %s",
					      store_stmt_what(id));
		if (mysql_stmt_prepare(pt->st, pt->text, (unsigned long)strlen(pt->text))) {
			rc = fail_st(q, pt->st, store_stmt_what(id), err);
			mysql_stmt_close(pt->st);
			pt->st = NULL;
			return rc;
		}
	}
	s->ready = true;
	return DBCRON_OK;
}

static void clear_result(store_conn *q)
{
	for (size_t i = 0; i < q->ncells; i++)
		dbcron__free(q->cells[i]);
	q->ncells = q->nrows = 0;
	q->ncols = 0;
	q->row = -1;
}

static int push_cell(store_conn *q, const char *v, size_t n)
{
	if (dbcron__grow((void **)&q->cells, &q->cap, q->ncells + 1, sizeof(*q->cells)))
		return DBCRON_ENOMEM;
	char *c = NULL;
	if (v && !(c = dbcron__strndup(v, n)))
		return DBCRON_ENOMEM;
	q->cells[q->ncells++] = c;
	return DBCRON_OK;
}

/* Bind one text value, replacing bytes that are not UTF-8 when clean (a
 * batch cell, dialect.h: the server would refuse the whole row). */
static void bind_text(store_conn *q, MYSQL_BIND *b, int k, const char *s, bool clean)
{
	if (clean && !(s = store_text_clean(&q->clean[k], s)))
		s = "";
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)s;
	q->lens[k] = (unsigned long)strlen(s);
	b->buffer_length = q->lens[k];
	b->length = &q->lens[k];
}

/* Bind a part's parameters: scalars from p, cells from cells (a batch row
 * or the result row an EACH part runs for; result cells are text). */
static int bind_part(store_conn *q, part *pt, const store_param *p, int np,
		     const store_batch *bt, size_t brow, char *const *rcells, int rcols,
		     MYSQL_BIND *binds, dbcron_err *err, int id)
{
	int nbatch = 0;
	store_text *js;
	memset(binds, 0, sizeof(MYSQL_BIND) * (size_t)pt->nrefs);
	for (int k = 0; k < pt->nrefs; k++) {
		MYSQL_BIND *b = &binds[k];
		int idx = pt->refs[k].idx;
		q->nulls[k] = 0;
		b->is_null = &q->nulls[k];
		if (pt->refs[k].kind == REF_CELL) {
			if (rcells) {
				if (idx >= rcols)
					goto bad;
				if (!rcells[idx]) {
					q->nulls[k] = 1;
					b->buffer_type = MYSQL_TYPE_NULL;
				} else {
					bind_text(q, b, k, rcells[idx], false);
				}
				continue;
			}
			if (!bt || idx >= bt->ncols)
				goto bad;
			const store_cell *c = &bt->cells[brow * (size_t)bt->ncols + (size_t)idx];
			if (c->null) {
				q->nulls[k] = 1;
				b->buffer_type = MYSQL_TYPE_NULL;
			} else if (bt->cols[idx] == BC_I64 || bt->cols[idx] == BC_BOOL) {
				q->ivals[k] = c->i;
				b->buffer_type = MYSQL_TYPE_LONGLONG;
				b->buffer = &q->ivals[k];
			} else {
				bind_text(q, b, k, c->s, true);
			}
			continue;
		}
		if (idx >= np)
			goto bad;
		const store_param *v = &p[idx];
		switch (v->t) {
		case SP_NULL:
			q->nulls[k] = 1;
			b->buffer_type = MYSQL_TYPE_NULL;
			break;
		case SP_I64:
			q->ivals[k] = pt->refs[k].kind == REF_LIMIT && v->i < 0 ? INT64_MAX : v->i;
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &q->ivals[k];
			break;
		case SP_TEXT:
			bind_text(q, b, k, v->s, false);
			break;
		case SP_BATCH:
			if (nbatch == MY_BATCHES)
				return dbcron_err_set(err, DBCRON_EINTERNAL,
						      "mysql: %s: more than %d batch parameters",
						      store_stmt_what(id), MY_BATCHES);
			js = &q->json[nbatch++];
			if (store_batch_json(js, v->b))
				return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
						      store_stmt_what(id));
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = js->p;
			q->lens[k] = (unsigned long)js->len;
			b->buffer_length = q->lens[k];
			b->length = &q->lens[k];
			break;
		}
	}
	return DBCRON_OK;
bad:
	return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: parameter out of range",
			      store_stmt_what(id));
}

/* Read every row of an executed statement into the result. */
static int collect(store_conn *q, MYSQL_STMT *st, int id, dbcron_err *err)
{
	MYSQL_RES *meta = mysql_stmt_result_metadata(st);
	if (!meta)
		return DBCRON_OK;
	int nc = (int)mysql_num_fields(meta);
	mysql_free_result(meta);
	if (q->ncols && q->ncols != nc)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: %s: parts of %d and %d columns",
				      store_stmt_what(id), q->ncols, nc);
	q->ncols = nc;
	enum { CAP = 64 };
	MYSQL_BIND *rb = dbcron__calloc((size_t)nc, sizeof(*rb));
	char (*buf)[CAP] = dbcron__calloc((size_t)nc, CAP);
	unsigned long *len = dbcron__calloc((size_t)nc, sizeof(*len));
	my_bool *isnull = dbcron__calloc((size_t)nc, sizeof(*isnull));
	char *big = NULL;
	int rc = DBCRON_OK;
	if (!rb || !buf || !len || !isnull) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading %s", store_stmt_what(id));
		goto out;
	}
	for (int c = 0; c < nc; c++) {
		rb[c].buffer_type = MYSQL_TYPE_STRING;
		rb[c].buffer = buf[c];
		rb[c].buffer_length = CAP;
		rb[c].length = &len[c];
		rb[c].is_null = &isnull[c];
	}
	if (mysql_stmt_bind_result(st, rb)) {
		rc = fail_st(q, st, store_stmt_what(id), err);
		goto out;
	}
	for (;;) {
		int f = mysql_stmt_fetch(st);
		if (f == MYSQL_NO_DATA)
			break;
		if (f == 1) {
			rc = fail_st(q, st, store_stmt_what(id), err);
			goto out;
		}
		for (int c = 0; c < nc && !rc; c++) {
			if (isnull[c]) {
				rc = push_cell(q, NULL, 0);
			} else if (len[c] < CAP) {
				rc = push_cell(q, buf[c], len[c]);
			} else {
				char *nb = dbcron__realloc(big, len[c] + 1);
				if (!nb) {
					rc = DBCRON_ENOMEM;
					break;
				}
				big = nb;
				MYSQL_BIND one;
				unsigned long got = 0;
				memset(&one, 0, sizeof(one));
				one.buffer_type = MYSQL_TYPE_STRING;
				one.buffer = big;
				one.buffer_length = len[c] + 1;
				one.length = &got;
				if (mysql_stmt_fetch_column(st, &one, (unsigned)c, 0)) {
					rc = fail_st(q, st, store_stmt_what(id), err);
					goto out;
				}
				rc = push_cell(q, big, len[c]);
			}
		}
		if (rc) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading %s",
					    store_stmt_what(id));
			goto out;
		}
		q->nrows++;
	}
out:
	mysql_stmt_free_result(st);
	dbcron__free(big);
	dbcron__free(rb);
	dbcron__free(buf);
	dbcron__free(len);
	dbcron__free(isnull);
	return rc;
}

/* Execute one part once; *changed: rows it matched. */
static int run_part(store_conn *q, int id, part *pt, const store_param *p, int np,
		    const store_batch *bt, size_t brow, char *const *rcells, int rcols,
		    int64_t *changed, dbcron_err *err)
{
	MYSQL_BIND binds[MAX_REFS];
	int rc = bind_part(q, pt, p, np, bt, brow, rcells, rcols, binds, err, id);
	if (rc)
		return rc;
	if (pt->nrefs && mysql_stmt_bind_param(pt->st, binds))
		return fail_st(q, pt->st, store_stmt_what(id), err);
	if (mysql_stmt_execute(pt->st))
		return fail_st(q, pt->st, store_stmt_what(id), err);
	if (mysql_stmt_field_count(pt->st)) {
		*changed = 0;
		return collect(q, pt->st, id, err);
	}
	my_ulonglong a = mysql_stmt_affected_rows(pt->st);
	*changed = a == (my_ulonglong)-1 ? 0 : (int64_t)a;
	q->changes += *changed;
	return DBCRON_OK;
}

/* All parts of the statement for one batch row (brow; none when bt is
 * NULL). */
static int run_parts(store_conn *q, int id, const store_param *p, int np,
		     const store_batch *bt, size_t brow, dbcron_err *err)
{
	stmt *s = &q->stmts[id];
	int64_t changed = 0;
	size_t res_lo = q->nrows; /* the rows the last result part gave */
	size_t res_hi = q->nrows;
	for (int k = 0; k < s->nparts; k++) {
		part *pt = &s->parts[k];
		int rc;
		if (pt->if_changed && changed <= 0)
			continue;
		if (pt->each) {
			/* the rows are copied: running the part appends nothing
			 * (an UPDATE), so indexes stay valid */
			int64_t sum = 0;
			for (size_t r = res_lo; r < res_hi; r++) {
				int64_t ch = 0;
				if ((rc = run_part(q, id, pt, p, np, NULL, 0,
						   &q->cells[r * (size_t)q->ncols], q->ncols, &ch, err)))
					return rc;
				sum += ch;
			}
			changed = sum;
			continue;
		}
		size_t before = q->nrows;
		if ((rc = run_part(q, id, pt, p, np, bt, brow, NULL, 0, &changed, err)))
			return rc;
		if (q->nrows != before || mysql_stmt_field_count(pt->st)) {
			res_lo = before;
			res_hi = q->nrows;
		}
	}
	if (made_row[id] && bt && changed == 1) {
		const store_cell *c = &bt->cells[brow * (size_t)bt->ncols];
		char t[24];
		int n = snprintf(t, sizeof(t), "%" PRId64, c->i);
		if (q->ncols == 0)
			q->ncols = 1;
		if (push_cell(q, t, (size_t)n))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s",
					      store_stmt_what(id));
		q->nrows++;
	}
	return DBCRON_OK;
}

static bool tx_control(int id)
{
	return id == ST_BEGIN || id == ST_BEGIN_WRITE || id == ST_COMMIT || id == ST_ROLLBACK;
}

static void my_reset(store_conn *q) { clear_result(q); }

static int my_exec(store_conn *q, int id, const store_param *p, int np, dbcron_err *err)
{
	int rc;
	clear_result(q);
	q->changes = 0;
	if (id < 0 || id >= ST__COUNT)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "mysql: statement %d", id);
	if (id == ST_ROLLBACK && !q->connected) {
		q->in_tx = false; /* the server rolled it back with the session */
		return DBCRON_OK;
	}
	if (!q->in_tx && (rc = ready(q, err)))
		return rc;
	if (!q->connected)
		return dbcron_err_set(err, DBCRON_ECONN, "%s: lost the connection to %s",
				      store_stmt_what(id), q->masked);
	if (tx_control(id)) {
		rc = run_text(q, sql[id], store_stmt_what(id), err);
		if (id == ST_BEGIN || id == ST_BEGIN_WRITE)
			q->in_tx = rc == DBCRON_OK;
		else
			q->in_tx = false;
		return rc;
	}
	if ((rc = prepare(q, id, err)))
		return rc;
	const store_batch *bt = NULL;
	for (int i = 0; i < np; i++)
		if (p[i].t == SP_BATCH && per_row[id])
			bt = p[i].b;
	if (bt && bt->oom)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in %s", store_stmt_what(id));
	if (bt) {
		size_t rows = store_batch_rows(bt);
		for (size_t r = 0; r < rows; r++)
			if ((rc = run_parts(q, id, p, np, bt, r, err)))
				goto fail;
	} else if ((rc = run_parts(q, id, p, np, NULL, 0, err))) {
		goto fail;
	}
	q->row = -1;
	return DBCRON_OK;
fail:
	clear_result(q);
	return rc;
}

static int my_next(store_conn *q, dbcron_err *err)
{
	(void)err;
	if ((size_t)(q->row + 1) >= q->nrows)
		return 0;
	q->row++;
	return 1;
}

static const char *cell(store_conn *q, int c)
{
	if (q->row < 0 || c >= q->ncols)
		return NULL;
	return q->cells[(size_t)q->row * (size_t)q->ncols + (size_t)c];
}

static bool my_col_null(store_conn *q, int c) { return cell(q, c) == NULL; }

static int64_t my_col_i64(store_conn *q, int c)
{
	const char *v = cell(q, c);
	return v ? strtoll(v, NULL, 10) : 0;
}

static const char *my_col_text(store_conn *q, int c) { return cell(q, c); }

static int64_t my_changes(store_conn *q) { return q->changes; }

static bool my_in_tx(store_conn *q) { return q->in_tx; }

static const char *my_display(const store_conn *q) { return q->masked; }

/*
 * Waits bounded by the lease: a row or table lock held elsewhere fails our
 * statement after a third of it (retried) instead of stalling the
 * heartbeat; a runaway statement is ended after ten leases; and (MariaDB)
 * a session idle inside a transaction for a lease is ended by the server,
 * freeing what it locked.  Whole seconds: the server counts in seconds.
 */
static int my_tune(store_conn *q, int64_t lease_ms, dbcron_err *err)
{
	long lock_s = (long)((lease_ms / 3 + 999) / 1000);
	long idle_s = (long)((lease_ms + 999) / 1000);
	if (lock_s < 1)
		lock_s = 1;
	if (q->mariadb)
		snprintf(q->tune, sizeof(q->tune),
			 "SET SESSION innodb_lock_wait_timeout = %ld, lock_wait_timeout = %ld, "
			 "max_statement_time = %.3f, idle_transaction_timeout = %ld",
			 lock_s, lock_s, (double)lease_ms * 10 / 1000.0, idle_s);
	else
		snprintf(q->tune, sizeof(q->tune),
			 "SET SESSION innodb_lock_wait_timeout = %ld, lock_wait_timeout = %ld, "
			 "max_execution_time = %lld",
			 lock_s, lock_s, (long long)(lease_ms * 10));
	int rc = ready(q, err);
	return rc ? rc : run_text(q, q->tune, "setting session timeouts", err);
}

/* ---- URL ---- */

static bool my_accepts(const char *url)
{
	return strncmp(url, "mysql://", 8) == 0 || strncmp(url, "mariadb://", 10) == 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* A percent-decoded copy of s[0, n); NULL on out of memory. */
static char *decoded(const char *s, size_t n)
{
	char *o = dbcron__calloc(n + 1, 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n + 1 && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			o[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	return o;
}

/*
 * mysql://[user[:password]@][host][:port][/database][?socket=PATH]
 * (mariadb:// alike).  The user-info ends at the last '@' before the path,
 * so an '@' in a password needs no encoding; a host of "localhost" or a
 * socket= parameter means the unix socket.  Without a password in the URL,
 * MYSQL_PWD from the environment is used, as the mysql client does.
 */
static int parse_url(store_conn *q, const char *url, dbcron_err *err)
{
	const char *p = strstr(url, "://") + 3;
	const char *path = strchr(p, '/');
	const char *qm = strchr(p, '?');
	const char *auth_end = path ? path : (qm ? qm : p + strlen(p));
	const char *at = NULL;
	for (const char *c = p; c < auth_end; c++)
		if (*c == '@')
			at = c;
	const char *hp = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);
		if (!(q->user = decoded(p, ul)))
			return DBCRON_ENOMEM;
		if (colon && !(q->pass = decoded(colon + 1, (size_t)(at - colon - 1))))
			return DBCRON_ENOMEM;
		hp = at + 1;
	}
	const char *hend = auth_end;
	const char *pc = NULL;
	for (const char *c = hp; c < hend; c++)
		if (*c == ':')
			pc = c;
	size_t hl = (size_t)((pc ? pc : hend) - hp);
	if (hl && !(q->host = decoded(hp, hl)))
		return DBCRON_ENOMEM;
	if (pc) {
		char *e;
		long port = strtol(pc + 1, &e, 10);
		if (e != hend || port <= 0 || port > 65535)
			return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': bad port", q->masked);
		q->port = (unsigned)port;
	}
	if (path) {
		const char *dend = qm && qm > path ? qm : path + strlen(path);
		if (dend > path + 1 && !(q->dbname = decoded(path + 1, (size_t)(dend - path - 1))))
			return DBCRON_ENOMEM;
	}
	for (const char *kv = qm ? qm + 1 : NULL; kv && *kv;) {
		const char *amp = strchr(kv, '&');
		size_t n = amp ? (size_t)(amp - kv) : strlen(kv);
		if (n > 7 && strncmp(kv, "socket=", 7) == 0) {
			if (!(q->socket = decoded(kv + 7, n - 7)))
				return DBCRON_ENOMEM;
		} else if (n == 18 && strncmp(kv, "insert_returning=0", 18) == 0) {
			q->no_returning_asked = true;
		} else if (n == 18 && strncmp(kv, "insert_returning=1", 18) == 0) {
			q->no_returning_asked = false;
		} else {
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "MySQL URL '%s': unknown parameter '%.*s' (known: socket, "
					      "insert_returning=0|1)",
					      q->masked, (int)n, kv);
		}
		kv = amp ? amp + 1 : NULL;
	}
	if (!q->dbname)
		return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': no database (mysql://user@host/DB)",
				      q->masked);
	if (!q->pass) {
		const char *env = getenv("MYSQL_PWD");
		if (env && *env && !(q->pass = dbcron__strdup(env)))
			return DBCRON_ENOMEM;
	}
	return DBCRON_OK;
}

static void my_close(store_conn *q)
{
	if (!q)
		return;
	clear_result(q);
	dbcron__free(q->cells);
	close_stmts(q);
	if (q->db)
		mysql_close(q->db);
	if (q->pass)
		memset(q->pass, 0, strlen(q->pass));
	dbcron__free(q->host);
	dbcron__free(q->user);
	dbcron__free(q->pass);
	dbcron__free(q->dbname);
	dbcron__free(q->socket);
	for (int k = 0; k < MY_BATCHES; k++)
		store_text_free(&q->json[k]);
	for (int k = 0; k < MAX_REFS; k++)
		store_text_free(&q->clean[k]);
	dbcron__free(q);
}

static int my_open(const char *url, unsigned flags, store_conn **out, dbcron_err *err)
{
	*out = NULL;
	store_conn *q = dbcron__calloc(1, sizeof(*q));
	if (!q)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	q->row = -1;
	store_mask_url(url, q->masked, sizeof(q->masked));
	int rc = parse_url(q, url, err);
	if (rc == DBCRON_ENOMEM)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
	if (!rc)
		rc = connect_db(q, err);
	if (rc) {
		my_close(q);
		return rc;
	}
	*out = q;
	return DBCRON_OK;
}

/* ---- schema ---- */

static int one_int(store_conn *q, const char *text, const char *what, long *v, dbcron_err *err)
{
	*v = 0;
	if (mysql_real_query(q->db, text, (unsigned long)strlen(text)))
		return fail_db(q, what, err);
	MYSQL_RES *r = mysql_store_result(q->db);
	if (!r)
		return fail_db(q, what, err);
	MYSQL_ROW row = mysql_fetch_row(r);
	if (row && row[0])
		*v = strtol(row[0], NULL, 10);
	mysql_free_result(r);
	return DBCRON_OK;
}

static int my_schema_read(store_conn *q, int *version, dbcron_err *err)
{
	long exists = 0, v = 0;
	int rc;
	*version = 0;
	clear_result(q);
	if ((rc = ready(q, err)) ||
	    (rc = one_int(q,
			  "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
			  "DATABASE() AND table_name = 'schema_version'",
			  "checking the schema", &exists, err)))
		return rc;
	if (!exists)
		return DBCRON_OK;
	if ((rc = one_int(q, "SELECT coalesce(max(version), 0) FROM schema_version",
			  "reading the schema version", &v, err)))
		return rc;
	*version = (int)v;
	return DBCRON_OK;
}

/*
 * Pending migrations under a named lock, so that two `dbcron init` at once
 * apply each exactly once: the second waits, then finds the work done.
 * DDL commits implicitly here; each migration records its version when its
 * statements are done (schema.h: they can be run again).
 */
static int my_migrate(store_conn *q, int *from, dbcron_err *err)
{
	int cur = 0, rc;
	long got = 0;
	char text[256];
	clear_result(q);
	if ((rc = ready(q, err)) ||
	    (rc = one_int(q, "SELECT GET_LOCK('dbcron_migrate', 60)", "migrate: waiting for the schema lock",
			  &got, err)))
		return rc;
	if (got != 1)
		return dbcron_err_set(err, DBCRON_EBUSY, "migrate: the schema lock of %s is held", q->masked);
	if ((rc = run_text(q, "CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL PRIMARY KEY,"
			      " applied_ms BIGINT NOT NULL)" MY_TABLE_OPTS,
			   "migrate: creating schema_version", err)) ||
	    (rc = my_schema_read(q, &cur, err)))
		goto out;
	*from = cur;
	if (cur > DBCRON_MY_SCHEMA_VERSION) {
		rc = store_schema_newer(err, q->masked, cur, DBCRON_MY_SCHEMA_VERSION);
		goto out;
	}
	for (size_t m = 0; m < sizeof(my_migrations) / sizeof(my_migrations[0]); m++) {
		if (my_migrations[m].version <= cur)
			continue;
		for (const char *const *s = my_migrations[m].stmts; *s; s++)
			if ((rc = run_text(q, *s, "migrate", err)))
				goto out;
		snprintf(text, sizeof(text),
			 "INSERT INTO schema_version (version, applied_ms) VALUES (%d, " DBNOW ")",
			 my_migrations[m].version);
		if ((rc = run_text(q, text, "migrate: recording the version", err)))
			goto out;
	}
out:
	if (q->connected) {
		dbcron_err ignore = {0};
		run_text(q, "DO RELEASE_LOCK('dbcron_migrate')", "migrate: releasing the lock", &ignore);
	}
	return rc;
}

const store_dialect store_mysql_dialect = {
	.version = STORE_DIALECT_VERSION,
	.name = "mysql",
	.caps = STORE_CAP_RETURNING | STORE_CAP_SKIP_LOCKED | STORE_CAP_MULTI_WRITER |
		STORE_CAP_ROW_BATCH,
	.schema_version = DBCRON_MY_SCHEMA_VERSION,
	.sql = sql,
	.accepts = my_accepts,
	.open = my_open,
	.close = my_close,
	.display = my_display,
	.exec = my_exec,
	.next = my_next,
	.col_null = my_col_null,
	.col_i64 = my_col_i64,
	.col_text = my_col_text,
	.changes = my_changes,
	.reset = my_reset,
	.in_tx = my_in_tx,
	.schema_read = my_schema_read,
	.migrate = my_migrate,
	.tune = my_tune,
};
