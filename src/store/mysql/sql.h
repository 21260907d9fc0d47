/*
 * The SQL text of the MySQL / MariaDB dialect: every statement id of
 * stmt.h, each keeping the invariant stmt.h names for it.  A statement may
 * be a short script of parts (mysql_int.h: PART, EACH, IF_CHANGED; script.c
 * runs them) where the server lacks UPDATE ... RETURNING; parameters are
 * ?N (scalar N), ?1NN (cell NN of the current batch row, or of the row an
 * EACH part runs for) and ?LN (scalar N as a LIMIT, negative for none).
 * Included by mysql.c only, as schema.h is.
 */
#ifndef DBCRON_STORE_MYSQL_SQL_H
#define DBCRON_STORE_MYSQL_SQL_H

#include <stdbool.h>

#include "store/mysql/mysql_int.h"
#include "store/stmt.h"

#define R(n) "?1" #n
/* a row of NULLs as wide as STORE_JOB_COLS */
#define NULLS_JOB STORE_JOB_NULLS
/* A one-column list parameter N as a table of values v. */
#define LIST_I64(n) "(SELECT v FROM JSON_TABLE(?" #n ", '$[*]' COLUMNS (v BIGINT PATH '$')) jt)"
/* STORE_BACKFILL_FITS (stmt.h) for the claim's UPDATE of runs itself:
 * MariaDB has no correlated derived table, so the count is not bounded
 * (a waiting run costs a claim the job's live backfill runs ahead of it). */
#define MY_BACKFILL_FITS                                                                     \
	"(runs.max_running IS NULL OR (SELECT count(*) FROM runs b WHERE "                   \
	STORE_BACKFILL_AHEAD("runs") ") < runs.max_running)"
#define LIST_TEXT(n)                                                             \
	"(SELECT v FROM JSON_TABLE(?" #n ", '$[*]' COLUMNS (v VARCHAR(320) CHARACTER " \
	"SET utf8mb4 PATH '$')) jt)"

/* Routing: job row J may run on the claiming node: a command anywhere, a
 * handler (SQL_EXEC_HANDLER) when it is in the node's list parameter N,
 * unless parameter R (route) is 0. */
#define RUNS_HERE(J, R, N)                                                         \
	"(?" #R " = 0 OR " J ".executor <> " SQL_EXEC_HANDLER " OR " J ".handler IN " \
	LIST_TEXT(N) ")"

/* Pools: job id ID is in the claim's pass, parameter P (0: any job; 1: not
 * in the list parameter L, the node's slow pool; 2: in it), claim.c
 * "Pools". */
#define IN_POOL(ID, P, L) "(?" #P " = 0 OR (?" #P " = 2) = (" ID " IN " LIST_I64(L) "))"

/* The live runs (claimed SCHEDULED, RUNNING) of the jobs carrying tag T,
 * counted through runs_job_state; and the jobs carrying it. */
#define TAG_LIVE(T)                                                                       \
	"(SELECT count(*) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.state IN (1, 2) " \
	"AND r.node IS NOT NULL AND LOCATE(CONCAT(CHAR(10), " T ", CHAR(10)), CONCAT(CHAR(10), " \
	"j.tags, CHAR(10))) > 0)"
#define TAG_JOBS(T)                                                                       \
	"(SELECT count(*) FROM jobs j WHERE LOCATE(CONCAT(CHAR(10), " T ", CHAR(10)), "       \
	"CONCAT(CHAR(10), j.tags, CHAR(10))) > 0)"

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
		"r.state = " SQL_RS_SUCCEEDED " ORDER BY r.fire_at DESC, r.attempt DESC LIMIT 1), j.max_silence_ms, "
		"j.created_ms, CASE WHEN j.paused THEN 1 ELSE 0 END FROM jobs j ORDER BY j.name LIMIT ?1",
	/* no LATERAL in MariaDB: a scalar subquery per job (a backward probe of
	 * runs_fire) picks the run, the join reads it */
	[ST_JOBS_LAST_RUN] =
		"SELECT r.job_id, r.id, r.state, r.finished_ms FROM (SELECT (SELECT x.id FROM "
		"runs x WHERE x.job_id = jt.v AND x.state <> " SQL_RS_SCHEDULED " ORDER BY x.fire_at DESC, "
		"x.attempt DESC LIMIT 1) AS rid FROM JSON_TABLE(?1, '$[*]' COLUMNS (v BIGINT "
		"PATH '$')) jt) w JOIN runs r ON r.id = w.rid",
	[ST_JOB_SEARCH] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > ?1 AND "
			  "INSTR(name, ?3) > 0 ORDER BY name LIMIT ?2",
	/* no LATERAL and no LIMIT in an IN subquery in MariaDB: a window over
	 * the page's jobs' runs (read through runs_fire), cut at limit each */
	[ST_JOBS_STRIP] =
		"SELECT t.job_id, t.id, t.state, t.fire_at, t.attempt FROM (SELECT x.job_id, x.id, "
		"x.state, x.fire_at, x.attempt, ROW_NUMBER() OVER (PARTITION BY x.job_id ORDER BY "
		"x.fire_at DESC, x.attempt DESC) AS rn FROM runs x WHERE x.state <> " SQL_RS_SCHEDULED
		" AND x.job_id IN " LIST_I64(1) ") t WHERE t.rn <= ?2",
	[ST_JOBS_NAMED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN " LIST_TEXT(1),
	[ST_JOBS_BY_NAMES] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN " LIST_TEXT(1)
			     " ORDER BY name FOR UPDATE",
	/* The new jobs as one JSON table (?2, the put batch's rows): one
	 * statement for a slice of rows (mysql.c), not one a job, which made
	 * a million-job apply take minutes. */
	[ST_JOBS_INSERT] = "INSERT INTO jobs ({PUT_COLS}, created_ms, updated_ms) SELECT "
			   "{PUT_COLS}, ?1, ?1 FROM JSON_TABLE(?2, '$[*]' COLUMNS ({PUT_JSON 0})) v "
			   "RETURNING id, name",
	/* cells ?100...: one statement a row (STORE_CAP_ROW_BATCH) */
	[ST_JOBS_UPDATE] = "UPDATE jobs SET {PUT_SET 101}, updated_ms = ?1, set_aside = NULL "
			   "WHERE id = " R(00),
	[ST_JOBS_PRUNED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name NOT IN " LIST_TEXT(1),
	[ST_JOBS_PRUNE] = "DELETE FROM jobs WHERE name NOT IN " LIST_TEXT(1),
	[ST_RUNS_CLOSE_ORPHANS] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = ?1, error = 'job deleted' "
		"WHERE state = " SQL_RS_SCHEDULED " AND node IS NULL AND NOT EXISTS "
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
	[ST_NEEDS_OF] = "SELECT need_id FROM job_needs WHERE job_id = ?1",
	[ST_NEEDS_DEL] = "DELETE FROM job_needs WHERE job_id = ?1 AND need_id = ?2",
	[ST_NEEDS_TIDY] = "DELETE FROM job_needs WHERE job_id NOT IN (SELECT id FROM jobs WHERE kind = "
		SQL_SCHED_NEEDS ")",
	[ST_NEEDS_DANGLING] = "SELECT a.name FROM job_needs n JOIN jobs a ON a.id = n.job_id WHERE NOT EXISTS "
		"(SELECT 1 FROM jobs b WHERE b.id = n.need_id) ORDER BY a.name",
	[ST_NEEDS_EDGES] = "SELECT a.name, b.name FROM job_needs n JOIN jobs a ON a.id = n.job_id JOIN jobs b "
		"ON b.id = n.need_id ORDER BY a.name, b.name",
	[ST_NEEDED_BY] = "SELECT a.name FROM job_needs n JOIN jobs a ON a.id = n.job_id JOIN jobs b ON b.id = "
		"n.need_id WHERE b.name = ?1 ORDER BY a.name",
	[ST_NEEDS_SET_ASIDE] = "UPDATE jobs SET set_aside = ?2 WHERE id IN (SELECT job_id FROM job_needs "
		"WHERE need_id = ?1)",
	[ST_NEEDS_DETACH] = "DELETE FROM job_needs WHERE need_id = ?1",
	[ST_FANIN_RESET] = "UPDATE job_needs SET done = 0 WHERE job_id = ?1",
	[ST_NEEDS_ADD] = "INSERT IGNORE INTO job_needs (job_id, need_id, done) VALUES (?1, ?2, 0)",
	[ST_FANIN_LOCK] = "SELECT id FROM jobs WHERE id IN (SELECT job_id FROM job_needs WHERE "
		"need_id IN " LIST_I64(1) ") ORDER BY id FOR UPDATE",
	[ST_FANIN_MARK] = "UPDATE job_needs SET done = 1 WHERE need_id IN " LIST_I64(1),
	[ST_FANIN_READY] =
		"SELECT n.job_id, (SELECT j.name FROM jobs j WHERE j.id = n.job_id) FROM job_needs n "
		"WHERE n.job_id IN (SELECT job_id FROM job_needs WHERE need_id IN " LIST_I64(1) ") AND "
		"n.job_id NOT IN (SELECT id FROM jobs WHERE set_aside IS NOT NULL) GROUP BY n.job_id "
		"HAVING MIN(n.done) = 1 ORDER BY n.job_id FOR UPDATE",
	[ST_TRIGGER_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms, params) VALUES (?1, ?2, ?3, 1, " SQL_RS_SCHEDULED ", ?3, ?4, ?5) RETURNING id",
	[ST_BACKFILL_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, created_ms, "
		"kind, max_running) SELECT ?1, ?2, v, 1, " SQL_RS_SCHEDULED ", ?3, ?3, " SQL_RK_BACKFILL
		", ?4 FROM " "JSON_TABLE(?5, '$[*]' COLUMNS (v BIGINT PATH '$')) jt",
	[ST_CALENDAR_INSERT] = "INSERT IGNORE INTO calendars (name, days, created_ms) VALUES (?1, ?2, ?3)",
	[ST_CALENDAR_GET] = "SELECT name, days, created_ms FROM calendars WHERE name = ?1",
	[ST_CALENDAR_LIST] = "SELECT name, days, created_ms FROM calendars ORDER BY name",
	[ST_CALENDAR_USERS] = "SELECT name FROM jobs WHERE exclude_calendar = ?1 ORDER BY name",
	[ST_CALENDAR_DELETE] = "DELETE FROM calendars WHERE name = ?1",
	[ST_BACKFILL_TAKEN] = "SELECT DISTINCT fire_at FROM runs WHERE job_id = ?1 AND fire_at IN "
			      LIST_I64(2) " ORDER BY fire_at",
	/* One clock reading for the whole claim; a last row of NULLs carries it
	 * when no job is due (the protocol skips rows without a job). */
	/* Overlap across nodes: no filter on runs here (STORE_OVERLAP_DUE_OK,
	 * _RUN_OK): InnoDB locks the rows a locking read's subquery reads, and
	 * other nodes' live runs locked until the claim commits held their
	 * applies back into deadlocks.  The claim's JOBS_BUSY, a plain read
	 * after the lock, is the rule here (claim.c); ?7 (the node) is unused. */
	[ST_CLAIM_DUE_JOBS] =
		"SET @dbcron_now = " DBNOW PART
		"SELECT @dbcron_now, 1, " STORE_JOB_COLS " FROM jobs WHERE paused = 0 AND "
		"next_fire_at IS NOT NULL AND next_fire_at <= @dbcron_now + ?1 AND ("
		RUNS_HERE("jobs", 3, 4) " OR " STORE_STRANDED("jobs", "jobs.next_fire_at", "@dbcron_now") ") AND "
		IN_POOL("jobs.id", 5, 6) " AND (?7 IS NOT NULL)"
		" ORDER BY next_fire_at, priority DESC LIMIT ?2 FOR UPDATE SKIP LOCKED" PART
		"SELECT @dbcron_now, 1, " NULLS_JOB,
	/* One statement per claim whatever its size: the batch is a JSON
	 * table, and IGNORE + RETURNING hands out only rows really inserted
	 * (invariant 1). */
	[ST_FIRES_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, finished_ms, missed, error, created_ms) SELECT v.job_id, "
		"v.job_name, v.fire_at, 1, v.state, v.due_at, CASE WHEN v.state = "
		SQL_RS_SCHEDULED " THEN ?1 END, CASE WHEN v.state = " SQL_RS_SCHEDULED " THEN ?2 "
		"END, CASE WHEN v.state <> " SQL_RS_SCHEDULED " THEN ?3 END, "
		"v.missed, v.error, ?3 FROM JSON_TABLE(?4, '$[*]' COLUMNS (job_id BIGINT PATH "
		"'$[0]', job_name VARCHAR(255) CHARACTER SET utf8mb4 PATH '$[1]', fire_at "
		"BIGINT PATH '$[2]', state INT PATH '$[3]', due_at BIGINT PATH '$[4]', missed "
		"BIGINT PATH '$[5]', error TEXT CHARACTER SET utf8mb4 PATH '$[6]')) v "
		"RETURNING id, job_id, job_name, fire_at, state, due_at, missed",
	[ST_JOBS_ADVANCE] = "UPDATE jobs JOIN JSON_TABLE(?1, '$[*]' COLUMNS (id BIGINT PATH "
			    "'$[0]', n BIGINT PATH '$[1]', f BIGINT PATH '$[2]')) v ON jobs.id = v.id "
			    "SET jobs.next_fire_at = v.n, jobs.runs_fired = jobs.runs_fired + v.f",
	/* Seed 000: stamp due runs with a token private to this statement,
	 * oldest first, read them back by it, then give them the claim's. */
	[ST_CLAIM_RUNS] =
		"UPDATE runs SET node = ?1, claim_token = CONCAT(?2, '~') WHERE state = " SQL_RS_SCHEDULED " AND "
		"node IS NULL AND cancel_requested_at IS NULL AND due_at <= ?3 AND (for_node IS NULL OR "
		"for_node = ?1) AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = "
		"runs.job_id AND j.paused = 0 AND (" RUNS_HERE("j", 5, 6) " OR " STORE_STRANDED("j", "runs.due_at", "?7")
		" OR runs.for_node = ?1) AND " IN_POOL("j.id", 8, 9) ") AND " MY_BACKFILL_FITS
		" ORDER BY due_at LIMIT ?L4" PART
		"SELECT id, job_id, job_name, fire_at, attempt, due_at, missed, params, for_node, "
		"node_index, node_total FROM runs WHERE "
		"node = ?1 AND state = " SQL_RS_SCHEDULED " AND claim_token = CONCAT(?2, '~')" PART
		"UPDATE runs SET claim_token = ?2 WHERE node = ?1 AND state = " SQL_RS_SCHEDULED " AND "
		"claim_token = CONCAT(?2, '~')",
	[ST_NODES_LIVE] = "SELECT id FROM nodes WHERE state = 'alive' AND lease_until >= ?1",
	[ST_FIRES_FAN_MARK] = "UPDATE runs SET for_node = ?1, node_index = ?3, node_total = ?4 WHERE "
		"node = ?1 AND claim_token = ?2 AND state = " SQL_RS_SCHEDULED " AND attempt = 1 AND "
		"node_total = 0 AND job_id IN (SELECT id FROM jobs WHERE on_every_node <> 0)",
	[ST_FIRES_FAN_OUT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, "
		"created_ms, params, for_node, node_index, node_total) SELECT r.job_id, r.job_name, "
		"r.fire_at, 1, " SQL_RS_SCHEDULED ", r.due_at, r.missed, ?3, r.params, n.id, n.k - 1, ?4 "
		"FROM runs r JOIN JSON_TABLE(?5, '$[*]' COLUMNS (k FOR ORDINALITY, id VARCHAR(320) "
		"CHARACTER SET utf8mb4 PATH '$')) n ON n.id <> ?1 WHERE r.node = ?1 AND r.claim_token = "
		"?2 AND r.state = " SQL_RS_SCHEDULED " AND r.attempt = 1 AND r.for_node = ?1 AND "
		"r.node_total = ?4 AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.job_id = r.job_id AND "
		"o.fire_at = r.fire_at AND o.attempt = 1 AND o.id <> r.id)",
	[ST_RUNS_ABANDON_PINNED] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = ?1, error = 'its node stopped or "
		"was lost: an every-node run is not moved to another node' WHERE for_node = " R(00) " AND state = "
		SQL_RS_SCHEDULED,
	[ST_JOBS_BY_IDS] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id IN " LIST_I64(1),
	[ST_TAGS_CAPPED] = "SELECT name, max_running FROM tags WHERE name IN " LIST_TEXT(1)
			   " ORDER BY name",
	[ST_TAGS_LOCK] = "SELECT name FROM tags WHERE name IN " LIST_TEXT(1) " ORDER BY name FOR "
			 "UPDATE SKIP LOCKED",
	[ST_TAGS_LIVE] = "SELECT t.v, " TAG_LIVE("t.v") " FROM JSON_TABLE(?1, '$[*]' COLUMNS (v "
			 "VARCHAR(64) CHARACTER SET utf8mb4 PATH '$')) t",
	[ST_TAG_SET] = "INSERT INTO tags (name, max_running, created_ms, updated_ms) VALUES (?1, ?2, "
		       "?3, ?3) ON DUPLICATE KEY UPDATE max_running = VALUES(max_running), "
		       "updated_ms = VALUES(updated_ms)",
	[ST_TAG_USED] = "SELECT " TAG_JOBS("?1"),
	[ST_TAG_DELETE] = "DELETE FROM tags WHERE name = ?1",
	[ST_TAGS_LIST] = "SELECT t.name, t.max_running, " TAG_LIVE("t.name") ", " TAG_JOBS("t.name")
			 " FROM tags t ORDER BY t.name",
	[ST_TAGS_NAMES] = "SELECT name FROM tags ORDER BY name",
	[ST_JOBS_BUSY] = "SELECT job_id, id, node, state, started_ms FROM runs WHERE job_id IN " LIST_I64(2)
			 " AND state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND node IS NOT NULL "
			 "AND node <> ?1 ORDER BY job_id",
	[ST_JOBS_LOCK] = "SELECT id FROM jobs WHERE id IN " LIST_I64(1) " ORDER BY id FOR UPDATE "
			 "SKIP LOCKED",
	/* Fenced by id, token and node (invariant 3).  "RETURNING id" is the
	 * read-back: a row of ours now in the state we wrote took our write
	 * (or an earlier try of it whose reply was lost). */
	/* The fence as a range, not STORE_RUN_LIVE_UPTO: MariaDB joins the
	 * rows by primary key either way, and with the list InnoDB deadlocked
	 * against concurrent claims in 4 of 6 conformance runs. */
	[ST_RUNS_APPLY] =
		"UPDATE runs r JOIN JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token "
		"VARCHAR(64) PATH '$[1]', state INT PATH '$[2]', started BIGINT PATH '$[3]', "
		"finished BIGINT PATH '$[4]', hx INT PATH '$[5]', xc INT PATH '$[6]', error "
		"MEDIUMTEXT CHARACTER SET utf8mb4 PATH '$[7]', output MEDIUMTEXT CHARACTER SET "
		"utf8mb4 PATH '$[8]', live INT PATH '$[9]')) v ON r.id = v.id SET r.started_ms = coalesce(v.started, "
		"r.started_ms), r.finished_ms = coalesce(v.finished, r.finished_ms), "
		"r.exit_code = CASE WHEN v.hx THEN v.xc ELSE r.exit_code END, r.error = "
		"coalesce(v.error, r.error), r.output = coalesce(v.output, r.output), r.state = "
		"v.state WHERE r.claim_token = v.token AND r.node = ?1 AND r.state BETWEEN " SQL_RS_SCHEDULED " AND v.live"
		PART
		"SELECT r.id FROM runs r JOIN JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH "
		"'$[0]', token VARCHAR(64) PATH '$[1]', state INT PATH '$[2]')) v ON r.id = "
		"v.id WHERE r.claim_token = v.token AND r.node = ?1 AND r.state = v.state",
	[ST_RETRY_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms, params, for_node, node_index, node_total, kind, max_running) SELECT "
		"r.job_id, r.job_name, r.fire_at, r.attempt + 1, " SQL_RS_SCHEDULED ", v.due, ?1, "
		"r.params, r.for_node, r.node_index, r.node_total, r.kind, r.max_running FROM "
		"JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH '$[0]', due BIGINT PATH "
		"'$[1]')) v JOIN runs r ON r.id = v.id WHERE EXISTS (SELECT 1 FROM jobs j "
		"WHERE j.id = r.job_id)",
	[ST_EVENTS_INSERT] =
		"INSERT IGNORE INTO events (job_id, job_name, run_id, kind, target, state, "
		"next_at, created_ms) SELECT r.job_id, r.job_name, r.id, v.kind, v.target, " SQL_EV_PENDING ", ?1, "
		"?1 FROM JSON_TABLE(?2, '$[*]' COLUMNS (id BIGINT PATH '$[0]', kind INT PATH "
		"'$[1]', target VARCHAR(700) CHARACTER SET utf8mb4 PATH '$[2]')) v JOIN runs r ON "
		"r.id = v.id",
	[ST_EVENTS_LIST] = "SELECT " STORE_EVENT_COLS " FROM events WHERE (?1 IS NULL OR "
			   "job_name = ?1) AND (?2 = 0 OR state = ?2) ORDER BY id DESC LIMIT ?L3",
	/* SKIP LOCKED: two nodes claiming at once take disjoint events */
	[ST_EVENTS_CLAIM] =
		"SELECT e.id FROM events e WHERE (e.state = " SQL_EV_PENDING " AND e.next_at <= ?3) OR (e.state "
		"= " SQL_EV_DELIVERING " AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = e.node AND n.state = "
		"'alive' AND n.lease_until >= ?3)) ORDER BY e.next_at, e.id LIMIT ?L4 FOR UPDATE "
		"SKIP LOCKED" PART EACH
		"UPDATE events SET state = " SQL_EV_DELIVERING ", node = ?1, claim_token = ?2, attempts = attempts "
		"+ 1 WHERE id = " R(00),
	[ST_EVENTS_CLAIMED] = "SELECT " STORE_EVENT_COLS " FROM events WHERE claim_token = ?1 "
			      "AND state = " SQL_EV_DELIVERING " ORDER BY id",
	[ST_EVENT_FINISH] =
		"UPDATE events SET state = ?4, next_at = ?5, last_error = ?6, finished_ms = "
		"CASE WHEN ?4 >= " SQL_EV_DELIVERED " THEN ?7 END, node = CASE WHEN ?4 = " SQL_EV_PENDING " THEN NULL ELSE node "
		"END, claim_token = CASE WHEN ?4 = " SQL_EV_PENDING " THEN NULL ELSE claim_token END WHERE id = "
		"?1 AND node = ?2 AND claim_token = ?3 AND state = " SQL_EV_DELIVERING,
	/* the jobs with a silence limit through jobs_overdue (migration 20),
	 * not every job (test_overdue_find_plan) */
	[ST_OVERDUE_FIND] = STORE_OVERDUE_FIND("?1"),
	[ST_OVERDUE_INSERT] =
		"INSERT IGNORE INTO events (job_id, job_name, run_id, kind, target, state, "
		"next_at, created_ms) VALUES (?1, ?2, ?3, " SQL_EV_OVERDUE ", ?4, " SQL_EV_PENDING ", ?5, ?5)",
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
	[ST_NODE_RUNNING] = "SELECT count(*) FROM runs WHERE node = ?1 AND state = " SQL_RS_RUNNING,
	[ST_NODES_ORPHANED] = "SELECT n.id, n.lease_until FROM nodes n WHERE n.state <> 'alive' "
			      "AND (EXISTS (SELECT 1 FROM runs r WHERE r.node = n.id AND "
			      "r.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")) OR EXISTS (SELECT 1 "
			      "FROM runs r WHERE r.for_node = n.id AND r.state = " SQL_RS_SCHEDULED ")) FOR UPDATE SKIP LOCKED",
	[ST_NODE_STOP] = "UPDATE nodes SET state = 'stopped', heartbeat_ms = " DBNOW
			 ", lease_until = " DBNOW " WHERE id = ?1 AND incarnation = ?2 AND "
			 "state = 'alive'",
	[ST_RUNS_UNCLAIM_NODE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = ?1 AND state = " SQL_RS_SCHEDULED,
	[ST_RUNS_RELEASE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE id = "
			    R(00) " AND claim_token = " R(01) " AND node = ?1 AND state = " SQL_RS_SCHEDULED,
	[ST_RUNS_RELEASE_CLAIM] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE node = ?1 "
				  "AND claim_token = ?2 AND state = " SQL_RS_SCHEDULED,
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
		R(00) " AND (state = " SQL_RS_RUNNING " OR (state = " SQL_RS_SCHEDULED
		" AND due_at < " R(01) ")) FOR UPDATE" PART
		/* assignments read the row as updated so far: state goes last */
		EACH "UPDATE runs SET error = CASE WHEN state = " SQL_RS_RUNNING " THEN 'node lost' "
		"ELSE 'node lost before its start was written' END, finished_ms = ?1, state = "
		SQL_RS_ABANDONED " WHERE id = " R(00),
	[ST_RUNS_UNCLAIM_LOST] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = " R(00) " AND state = " SQL_RS_SCHEDULED " AND due_at >= " R(01),
	[ST_JOB_RUNNING] =
		"SELECT 1 FROM runs r JOIN nodes n ON n.id = r.node WHERE r.job_id = ?1 AND "
		"r.state = " SQL_RS_RUNNING " AND r.id <> ?2 AND n.state = 'alive' AND "
		SAME_HOST("r", "?2") " LIMIT 1",
	[ST_SCHEDULE_LOCK] = "SELECT fence FROM locks WHERE name = 'dbcron:schedule' FOR UPDATE",
	[ST_SCHEDULE_LOCK_INIT] = "INSERT IGNORE INTO locks (name, owner, since_ms, until_ms, fence) "
				  "VALUES ('dbcron:schedule', '', 0, 0, 0)",
	[ST_RUN_GET] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id = ?1",
	[ST_RUN_CANCEL_UNCLAIMED] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?2, cancel_requested_at = "
		"coalesce(cancel_requested_at, ?2), error = 'cancelled before it started' WHERE id = ?1 "
		"AND state = " SQL_RS_SCHEDULED " AND node IS NULL",
	[ST_RUN_CANCEL_REQUEST] = "UPDATE runs SET cancel_requested_at = ?2 WHERE id = ?1 AND state IN ("
		SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND cancel_requested_at IS NULL",
	/* runs_node_state (node, state): the node's live runs */
	[ST_RUNS_CANCEL_ASKED] = "SELECT id FROM runs WHERE node = ?1 AND state IN (" SQL_RS_SCHEDULED
		", " SQL_RS_RUNNING ") AND cancel_requested_at IS NOT NULL",
	[ST_RUNS_CANCEL_FREE] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?1, error = 'cancelled before "
		"it started' WHERE state = " SQL_RS_SCHEDULED " AND cancel_requested_at IS NOT NULL AND "
		"node IS NULL",
	[ST_RUNS_CANCEL_LOST] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?1, error = 'cancelled; its "
		"node was lost' WHERE node = " R(00) " AND cancel_requested_at IS NOT NULL AND state IN ("
		SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")",
	[ST_RUNS_AFTER_ID] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id > ?1 AND (?2 IS NULL OR "
		"job_name = ?2) ORDER BY id LIMIT ?L3",
	[ST_RUNS_STATS] = "SELECT id, job_name, fire_at, state, node, started_ms, finished_ms FROM runs WHERE "
			  "(?1 IS NULL OR job_name = ?1) AND fire_at >= ?2",
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
			   "r.node = nodes.id AND r.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING "))",
	[ST_NODES_LIST] =
		"SELECT id, host, pid, workers, state, started_ms, heartbeat_ms, lease_until, "
		"(SELECT count(*) FROM runs r WHERE r.node = nodes.id AND r.state = " SQL_RS_RUNNING ") FROM "
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
			  "NOT IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") ORDER BY fire_at LIMIT ?L2",
	/* one statement for a slice of rows, as JOBS_INSERT (a row a job of a
	 * million-job apply), the ids in the batch's order */
	[ST_AUDIT_INSERT] = "INSERT INTO audit (at_ms, actor, action, job, detail) SELECT " DBNOW
			    ", ?1, v.action, v.job, v.detail FROM JSON_TABLE(?2, '$[*]' COLUMNS (k FOR "
			    "ORDINALITY, action LONGTEXT CHARACTER SET utf8mb4 PATH '$[0]', job LONGTEXT "
			    "CHARACTER SET utf8mb4 PATH '$[1]', detail LONGTEXT CHARACTER SET utf8mb4 "
			    "PATH '$[2]')) v ORDER BY v.k",
	[ST_AUDIT_LIST] = "SELECT * FROM (SELECT id, at_ms, actor, action, job, detail FROM audit "
			  "WHERE (?1 IS NULL OR job = ?1) AND (?2 < 0 OR at_ms >= ?2) ORDER BY id "
			  "DESC LIMIT ?L3) x ORDER BY id",
	[ST_PRUNE_AUDIT] = "DELETE FROM audit WHERE at_ms < ?1 ORDER BY at_ms LIMIT ?L2",
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
		"INSERT INTO jobs ({PUT_COLS}, created_ms, updated_ms) VALUES ({PUT_VALUES 100}, "
		"?1, ?1)" PART IF_CHANGED
		"SELECT LAST_INSERT_ID(), name FROM jobs WHERE id = LAST_INSERT_ID()",
	[ST_TRIGGER_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms, params) VALUES (?1, ?2, ?3, 1, " SQL_RS_SCHEDULED ", ?3, ?4, ?5)" PART IF_CHANGED
		"SELECT LAST_INSERT_ID()",
	[ST_FIRES_INSERT] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, finished_ms, missed, error, created_ms) SELECT v.job_id, "
		"v.job_name, v.fire_at, 1, v.state, v.due_at, CASE WHEN v.state = "
		SQL_RS_SCHEDULED " THEN ?1 END, CONCAT(?2, '~'), CASE WHEN v.state <> "
		SQL_RS_SCHEDULED " THEN ?3 END, "
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
		"v.fire_at AND r.attempt = 1 SET r.claim_token = CASE WHEN r.state = " SQL_RS_SCHEDULED " THEN ?2 "
		"END WHERE r.claim_token = CONCAT(?2, '~')",
	[ST_LOG_RUN] =
		"INSERT IGNORE INTO runs (job_id, job_name, fire_at, attempt, state, due_at, "
		"node, claim_token, started_ms, finished_ms, exit_code, missed, error, "
		"output, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14, " DBNOW ")" PART IF_CHANGED "SELECT LAST_INSERT_ID()",
};

/* The statements whose batch runs row by row (the rest take a batch as
 * JSON). */
static const bool per_row[ST__COUNT] = {
	[ST_JOBS_UPDATE] = true,	  [ST_RUNS_RELEASE] = true,
	[ST_RUNS_ABANDON_LOST] = true, [ST_RUNS_UNCLAIM_LOST] = true, [ST_JOBS_SET_ASIDE] = true,
	[ST_RUNS_ABANDON_PINNED] = true, [ST_RUNS_CANCEL_LOST] = true,
};

/* Their texts in sql_no_returning run row by row too: a multi-row insert
 * has no LAST_INSERT_ID() per row to read the ids back by. */
static const bool per_row_no_returning[ST__COUNT] = {[ST_JOBS_INSERT] = true};

/* The statements whose JSON batch goes in slices of at most MY_SLICE_BYTES
 * of cells (mysql.c), under the server's max_allowed_packet: a put batch's
 * rows and its audit rows carry the jobs' commands and environments, of
 * any length. */
static const bool sliced[ST__COUNT] = {[ST_JOBS_INSERT] = true, [ST_AUDIT_INSERT] = true};

/* A row-by-row UPDATE whose "RETURNING key" is made from the batch row's
 * cell 0 when the row changed (none today: RUNS_APPLY reads back). */
static const bool made_row[ST__COUNT] = {[ST_BEGIN] = false};

#endif
