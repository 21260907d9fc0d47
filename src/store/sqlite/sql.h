/*
 * The SQL text of the SQLite dialect: every statement id of stmt.h, each
 * keeping the invariant stmt.h names for it, and which statements run a
 * batch row by row or make their RETURNING rows (sqlite.c says why).
 * Included by sqlite.c only, as schema.h is.
 */
#ifndef DBCRON_STORE_SQLITE_SQL_H
#define DBCRON_STORE_SQLITE_SQL_H

#include <stdbool.h>

#include "store/stmt.h"

/* The database clock in epoch ms ('now' is stable within one step). */
#define NOW_SQL "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
/* The same as an uncorrelated subquery, which a statement computes once, at
 * its first use: NOW_SQL in a row's expression is computed again for every
 * row (and, read a row per step, may move on between rows). */
#define NOW_ONCE "(SELECT " NOW_SQL ")"

/* Routing: job row J may run on the claiming node: a command anywhere, a
 * handler (SQL_EXEC_HANDLER) when it is in the node's list L, unless R
 * (route) is 0. */
#define RUNS_HERE(J, R, L)                                                       \
	"(" R " = 0 OR " J ".executor <> " SQL_EXEC_HANDLER " OR " J ".handler IN (SELECT value FROM "   \
	"json_each(" L ")))"

/* Pools: job id ID is in the claim's pass P (0: any job; 1: not in the
 * list L, the node's slow pool; 2: in it), claim.c "Pools". */
#define IN_POOL(ID, P, L)                                                        \
	"(" P " = 0 OR (" P " = 2) = (" ID " IN (SELECT value FROM json_each(" L "))))"

/* The element of a one-column batch (json_each of [x, y, ...]). */
#define V0 "value"
/* Cell n of the current row of a row-by-row batch; n has two digits. */
#define R(n) "?1" #n
#define ROW_BASE 100

/* The live runs (claimed SCHEDULED, RUNNING) of the jobs carrying tag T
 * (an SQL text expression), counted through runs_job_state.  CROSS JOIN
 * keeps the jobs outside: as a JOIN the planner scanned every run of the
 * log for its live ones (test_sqlite_no_run_log_scan), in every claim of
 * a node with a capped tag. */
#define TAG_LIVE(T)                                                                       \
	"(SELECT count(*) FROM jobs j CROSS JOIN runs r ON r.job_id = j.id AND r.state IN (1, 2) " \
	"WHERE r.node IS NOT NULL AND instr(char(10) || j.tags || char(10), char(10) || " T " || " \
	"char(10)) > 0)"
/* The jobs carrying tag T. */
#define TAG_JOBS(T)                                                                       \
	"(SELECT count(*) FROM jobs j WHERE instr(char(10) || j.tags || char(10), char(10) || " \
	T " || char(10)) > 0)"

static const char *const sql[ST__COUNT] = {
	[ST_BEGIN] = "BEGIN",
	[ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_NOW] = "SELECT " NOW_SQL,
	[ST_SCHEMA] = "-- schema_read(), migrate()",
	[ST_JOB_GET] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name = ?1",
	[ST_JOB_LIST] = "SELECT " STORE_JOB_COLS " FROM jobs ORDER BY name",
	[ST_JOB_PAGE] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > ?1 ORDER BY name LIMIT ?2",
	[ST_JOB_BRIEF] = "SELECT name, next_fire_at, paused FROM jobs ORDER BY name",
	[ST_JOB_LAST_OK] =
		"SELECT j.name, (SELECT r.finished_ms FROM runs r WHERE r.job_id = j.id AND "
		"r.state = " SQL_RS_SUCCEEDED " ORDER BY r.fire_at DESC, r.attempt DESC LIMIT 1), j.max_silence_ms, "
		"j.created_ms, CASE WHEN j.paused THEN 1 ELSE 0 END FROM jobs j ORDER BY j.name LIMIT ?1",
	/* the scalar subquery walks runs' UNIQUE index backwards per job */
	[ST_JOBS_LAST_RUN] =
		"SELECT r.job_id, r.id, r.state, r.finished_ms FROM (SELECT (SELECT x.id FROM "
		"runs x WHERE x.job_id = j." V0 " AND x.state <> " SQL_RS_SCHEDULED " ORDER BY x.fire_at DESC, "
		"x.attempt DESC LIMIT 1) AS rid FROM json_each(?1) j) w JOIN runs r ON r.id = "
		"w.rid",
	[ST_JOB_SEARCH] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > ?1 AND "
			  "instr(name, ?3) > 0 ORDER BY name LIMIT ?2",
	/* a correlated IN with LIMIT: a backward walk of runs' UNIQUE index per job */
	[ST_JOBS_STRIP] =
		"SELECT x.job_id, x.id, x.state, x.fire_at, x.attempt FROM json_each(?1) j JOIN runs x "
		"ON x.id IN (SELECT y.id FROM runs y WHERE y.job_id = j." V0 " AND y.state <> "
		SQL_RS_SCHEDULED " ORDER BY y.fire_at DESC, y.attempt DESC LIMIT ?2)",
	[ST_JOBS_NAMED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN "
			  "(SELECT " V0 " FROM json_each(?1))",
	[ST_JOBS_BY_NAMES] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name IN "
			     "(SELECT " V0 " FROM json_each(?1))",
	/* cells from ROW_BASE; "RETURNING id, name": see inserted_row */
	[ST_JOBS_INSERT] = "INSERT INTO jobs({PUT_COLS}, created_ms, updated_ms) VALUES "
			   "({PUT_VALUES 100}, ?1, ?1)",
	[ST_JOBS_UPDATE] = "UPDATE jobs SET {PUT_SET 101}, updated_ms = ?1, set_aside = NULL "
			   "WHERE id = " R(00),
	[ST_JOBS_PRUNED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name NOT IN (SELECT " V0
			   " FROM json_each(?1))",
	[ST_JOBS_PRUNE] = "DELETE FROM jobs WHERE name NOT IN (SELECT " V0
			  " FROM json_each(?1))",
	[ST_RUNS_CLOSE_ORPHANS] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = ?1, error = 'job deleted' "
		"WHERE state = " SQL_RS_SCHEDULED " AND node IS NULL AND NOT EXISTS "
		"(SELECT 1 FROM jobs WHERE jobs.id = runs.job_id)",
	[ST_JOB_SET_PAUSED] =
		"UPDATE jobs SET paused = ?2, next_fire_at = CASE WHEN ?2 "
		"THEN next_fire_at ELSE ?3 END, set_aside = CASE WHEN ?2 THEN set_aside END, "
		"updated_ms = " NOW_SQL " WHERE name = ?1",
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
	[ST_NEEDS_ADD] = "INSERT OR IGNORE INTO job_needs(job_id, need_id, done) VALUES (?1, ?2, 0)",
	[ST_FANIN_LOCK] = "SELECT id FROM jobs WHERE id IN (SELECT job_id FROM job_needs WHERE "
		"need_id IN " "(SELECT " V0 " FROM json_each(?1))" ") ORDER BY id",
	[ST_FANIN_MARK] = "UPDATE job_needs SET done = 1 WHERE need_id IN " "(SELECT " V0 " FROM json_each(?1))",
	[ST_FANIN_READY] =
		"SELECT n.job_id, (SELECT j.name FROM jobs j WHERE j.id = n.job_id) FROM job_needs n "
		"WHERE n.job_id IN (SELECT job_id FROM job_needs WHERE need_id IN " "(SELECT " V0 " FROM json_each(?1))" ") AND "
		"n.job_id NOT IN (SELECT id FROM jobs WHERE set_aside IS NOT NULL) GROUP BY n.job_id "
		"HAVING MIN(n.done) = 1 ORDER BY n.job_id",
	[ST_TRIGGER_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, "
		"created_ms, params) VALUES (?1, ?2, ?3, 1, " SQL_RS_SCHEDULED ", ?3, ?4, ?5) ON CONFLICT DO NOTHING "
		"RETURNING id",
	/* "WHERE true": SQLite's parser needs it between a SELECT and ON CONFLICT */
	[ST_BACKFILL_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, created_ms, kind, "
		"max_running) SELECT ?1, ?2, " V0 ", 1, " SQL_RS_SCHEDULED ", ?3, ?3, " SQL_RK_BACKFILL
		", ?4 FROM json_each(?5) WHERE true ON CONFLICT DO NOTHING",
	[ST_CALENDAR_INSERT] = "INSERT INTO calendars (name, days, created_ms) VALUES (?1, ?2, ?3) "
			       "ON CONFLICT DO NOTHING",
	[ST_CALENDAR_GET] = "SELECT name, days, created_ms FROM calendars WHERE name = ?1",
	[ST_CALENDAR_LIST] = "SELECT name, days, created_ms FROM calendars ORDER BY name",
	[ST_CALENDAR_USERS] = "SELECT name FROM jobs WHERE exclude_calendar = ?1 ORDER BY name",
	[ST_CALENDAR_DELETE] = "DELETE FROM calendars WHERE name = ?1",
	[ST_BACKFILL_TAKEN] = "SELECT DISTINCT fire_at FROM runs WHERE job_id = ?1 AND fire_at IN "
			      "(SELECT " V0 " FROM json_each(?2)) ORDER BY fire_at",
	/* The partial index jobs_due_prio matches the WHERE literally.  busy is
	 * exact: BEGIN IMMEDIATE holds the database from this read on.  The
	 * jobs' subquery is the outer loop, read as the rows are stepped (a
	 * co-routine): as the inner side of a LEFT JOIN it was copied whole
	 * into a temporary table first, every column of every row.  The jobs'
	 * rows carry the now their filter used (NOW_ONCE); the row of NULLs,
	 * always last, the clock at its own step, no earlier: the claim keeps
	 * the last row's, by which every job read was due.  With no live run on
	 * another node (STORE_OTHERS_LIVE, once per statement), no job's runs
	 * are probed: a node alone pays nothing for overlap across nodes. */
	[ST_CLAIM_DUE_JOBS] =
		"SELECT j.* FROM (SELECT " NOW_ONCE " AS now, (CASE WHEN " STORE_OTHERS_LIVE("?7")
		" THEN " STORE_OVERLAP_DUE_BUSY("jobs", "?7", NOW_ONCE) " ELSE 0 END) AS busy, "
		STORE_JOB_COLS
		" FROM jobs WHERE paused = 0 AND next_fire_at "
		"IS NOT NULL AND next_fire_at <= " NOW_ONCE " + ?1 AND (" RUNS_HERE("jobs", "?3", "?4")
		" OR " STORE_STRANDED("jobs", "jobs.next_fire_at", NOW_ONCE) ") AND " IN_POOL("jobs.id", "?5", "?6")
		" AND (NOT " STORE_OTHERS_LIVE("?7") " OR " STORE_OVERLAP_DUE_OK("jobs", "?7", NOW_ONCE)
		") ORDER BY next_fire_at, priority DESC LIMIT ?2) AS j UNION ALL SELECT " NOW_SQL
		", NULL, " STORE_JOB_NULLS,
	[ST_FIRES_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, node, "
		"claim_token, finished_ms, missed, error, created_ms) VALUES (" R(00) ", "
		R(01) ", " R(02) ", 1, " R(03) ", " R(04) ", CASE WHEN " R(03) " = " SQL_RS_SCHEDULED
		" THEN ?1 END, CASE WHEN " R(03) " = " SQL_RS_SCHEDULED " THEN ?2 END, CASE WHEN "
		R(03) " <> " SQL_RS_SCHEDULED " THEN "
		"?3 END, " R(05) ", " R(06) ", ?3) ON CONFLICT DO NOTHING",
		/* "RETURNING id, job_id, job_name, fire_at, state, due_at,
		 * missed": see made_kind */
	[ST_JOBS_ADVANCE] = "UPDATE jobs SET next_fire_at = " R(01) ", runs_fired = runs_fired + "
			    R(02) " WHERE id = " R(00),
	/* The partial index walks unclaimed runs in due order and stops at the
	 * limit (without statistics the planner would pick (node, state)). */
	[ST_CLAIM_RUNS] =
		"UPDATE runs SET node = ?1, claim_token = ?2 WHERE id IN (SELECT r.id FROM "
		"runs r INDEXED BY runs_unclaimed WHERE r.state = " SQL_RS_SCHEDULED " AND r.node IS NULL AND "
		"r.cancel_requested_at IS NULL AND (r.for_node IS NULL OR r.for_node = ?1) AND "
		"r.due_at <= ?3 AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.job_id AND "
		"j.paused = 0 AND (" RUNS_HERE("j", "?5", "?6") " OR " STORE_STRANDED("j", "r.due_at", "?7")
		" OR r.for_node = ?1) AND "
		IN_POOL("j.id", "?8", "?9") " AND " STORE_OVERLAP_RUN_OK("j", "?1") ") AND "
		STORE_BACKFILL_FITS("r") " "
		"ORDER BY r.due_at LIMIT ?4) RETURNING id, job_id, job_name, fire_at, "
		"attempt, due_at, missed, params, for_node, node_index, node_total",
	[ST_NODES_LIVE] = "SELECT id FROM nodes WHERE state = 'alive' AND lease_until >= ?1",
	[ST_FIRES_FAN_MARK] = "UPDATE runs SET for_node = ?1, node_index = ?3, node_total = ?4 WHERE "
		"node = ?1 AND claim_token = ?2 AND state = " SQL_RS_SCHEDULED " AND attempt = 1 AND "
		"node_total = 0 AND job_id IN (SELECT id FROM jobs WHERE on_every_node <> 0)",
	/* (WHERE before ON CONFLICT: SQLite's upsert after a SELECT needs it) */
	[ST_FIRES_FAN_OUT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, missed, created_ms, "
		"params, for_node, node_index, node_total) SELECT r.job_id, r.job_name, r.fire_at, 1, "
		SQL_RS_SCHEDULED ", r.due_at, r.missed, ?3, r.params, n.value, n.key, ?4 FROM runs r "
		"JOIN json_each(?5) n ON n.value <> ?1 WHERE r.node = ?1 AND r.claim_token = ?2 AND "
		"r.state = " SQL_RS_SCHEDULED " AND r.attempt = 1 AND r.for_node = ?1 AND r.node_total = ?4 "
		"AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.job_id = r.job_id AND o.fire_at = r.fire_at "
		"AND o.attempt = 1 AND o.id <> r.id) ON CONFLICT DO NOTHING",
	[ST_RUNS_ABANDON_PINNED] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = ?1, error = 'its node stopped or "
		"was lost: an every-node run is not moved to another node' WHERE for_node = " R(00) " AND state = "
		SQL_RS_SCHEDULED,
	[ST_JOBS_BY_IDS] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id IN (SELECT " V0
			   " FROM json_each(?1))",
	[ST_TAGS_CAPPED] = "SELECT name, max_running FROM tags WHERE name IN (SELECT " V0
			   " FROM json_each(?1)) ORDER BY name",
	[ST_TAGS_LOCK] = "SELECT name FROM tags WHERE name IN (SELECT " V0
			 " FROM json_each(?1)) ORDER BY name",
	[ST_TAGS_LIVE] = "SELECT t.value, " TAG_LIVE("t.value") " FROM json_each(?1) t",
	[ST_TAG_SET] = "INSERT INTO tags (name, max_running, created_ms, updated_ms) VALUES (?1, "
		       "?2, ?3, ?3) ON CONFLICT (name) DO UPDATE SET max_running = excluded."
		       "max_running, updated_ms = excluded.updated_ms",
	[ST_TAG_USED] = "SELECT " TAG_JOBS("?1"),
	[ST_TAG_DELETE] = "DELETE FROM tags WHERE name = ?1",
	[ST_TAGS_LIST] = "SELECT t.name, t.max_running, " TAG_LIVE("t.name") ", " TAG_JOBS("t.name")
			 " FROM tags t ORDER BY t.name",
	[ST_TAGS_NAMES] = "SELECT name FROM tags ORDER BY name",
	[ST_JOBS_BUSY] = "SELECT job_id, id, node, state, started_ms FROM runs WHERE job_id IN (SELECT " V0
			 " FROM json_each(?2)) AND state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING
			 ") AND node IS NOT NULL AND node <> ?1 ORDER BY job_id",
	/* BEGIN IMMEDIATE already holds the whole database */
	[ST_JOBS_LOCK] = "SELECT id FROM jobs WHERE id IN (SELECT " V0 " FROM json_each(?1))",
	[ST_RUNS_APPLY] =
		"UPDATE runs SET state = " R(02) ", started_ms = coalesce(" R(03) ", "
		"started_ms), finished_ms = coalesce(" R(04) ", finished_ms), exit_code = "
		"CASE WHEN " R(05) " THEN " R(06) " ELSE exit_code END, error = coalesce("
		R(07) ", error), output = coalesce(" R(08) ", output) WHERE id = " R(00)
		" AND claim_token = " R(01) " AND node = ?1 AND " STORE_RUN_LIVE_UPTO("", R(09)),
		/* "RETURNING id": see made_kind */
	[ST_RETRY_INSERT] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, created_ms, params, "
		"for_node, node_index, node_total, kind, max_running) SELECT r.job_id, r.job_name, "
		"r.fire_at, r.attempt + 1, " SQL_RS_SCHEDULED ", " R(01) ", ?1, r.params, r.for_node, "
		"r.node_index, r.node_total, r.kind, r.max_running FROM "
		"runs r WHERE r.id = " R(00) " AND EXISTS (SELECT 1 FROM "
		"jobs j WHERE j.id = r.job_id) ON CONFLICT DO NOTHING",
	[ST_EVENTS_INSERT] =
		"INSERT INTO events(job_id, job_name, run_id, kind, target, state, next_at, "
		"created_ms) SELECT r.job_id, r.job_name, r.id, " R(01) ", " R(02) ", " SQL_EV_PENDING ", ?1, ?1 "
		"FROM runs r WHERE r.id = " R(00) " ON CONFLICT DO NOTHING",
	[ST_EVENTS_LIST] = "SELECT " STORE_EVENT_COLS " FROM events WHERE (?1 IS NULL OR "
			   "job_name = ?1) AND (?2 = 0 OR state = ?2) ORDER BY id DESC LIMIT ?3",
	[ST_EVENTS_CLAIM] =
		"UPDATE events SET state = " SQL_EV_DELIVERING ", node = ?1, claim_token = ?2, attempts = attempts "
		"+ 1 WHERE id IN (SELECT e.id FROM events e WHERE (e.state = " SQL_EV_PENDING " AND e.next_at "
		"<= ?3) OR (e.state = " SQL_EV_DELIVERING " AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = "
		"e.node AND n.state = 'alive' AND n.lease_until >= ?3)) ORDER BY e.next_at, "
		"e.id LIMIT ?4)",
	[ST_EVENTS_CLAIMED] = "SELECT " STORE_EVENT_COLS " FROM events WHERE claim_token = ?1 "
			      "AND state = " SQL_EV_DELIVERING " ORDER BY id",
	[ST_EVENT_FINISH] =
		"UPDATE events SET state = ?4, next_at = ?5, last_error = ?6, finished_ms = "
		"CASE WHEN ?4 >= " SQL_EV_DELIVERED " THEN ?7 END, node = CASE WHEN ?4 = " SQL_EV_PENDING " THEN NULL ELSE node "
		"END, claim_token = CASE WHEN ?4 = " SQL_EV_PENDING " THEN NULL ELSE claim_token END WHERE id = "
		"?1 AND node = ?2 AND claim_token = ?3 AND state = " SQL_EV_DELIVERING,
	[ST_OVERDUE_FIND] = STORE_OVERDUE_FIND("?1"),
	[ST_OVERDUE_INSERT] =
		"INSERT INTO events(job_id, job_name, run_id, kind, target, state, next_at, "
		"created_ms) VALUES (?1, ?2, ?3, " SQL_EV_OVERDUE ", ?4, " SQL_EV_PENDING ", ?5, ?5) ON CONFLICT DO NOTHING",
	[ST_JOBS_NEXT_IF_NULL] = "UPDATE jobs SET next_fire_at = " R(01) " WHERE id = "
				 R(00) " AND next_fire_at IS NULL",
	[ST_NODE_UPSERT] =
		"INSERT INTO nodes(id, incarnation, host, pid, workers, state, started_ms, "
		"heartbeat_ms, lease_until) VALUES (?1, ?2, ?3, ?4, ?5, 'alive', ?6, ?6, "
		"?6 + ?7) ON CONFLICT(id) DO UPDATE SET incarnation = excluded.incarnation, "
		"host = excluded.host, pid = excluded.pid, workers = excluded.workers, "
		"state = 'alive', started_ms = excluded.started_ms, heartbeat_ms = "
		"excluded.heartbeat_ms, lease_until = excluded.lease_until",
	[ST_NODE_HANDLERS_CLEAR] = "DELETE FROM node_handlers WHERE node_id = ?1",
	[ST_NODE_HANDLERS_ADD] = "INSERT OR IGNORE INTO node_handlers(node_id, handler) SELECT ?1, "
				 V0 " FROM json_each(?2)",
	[ST_HANDLERS_LIVE] =
		"SELECT DISTINCT h.handler FROM node_handlers h JOIN nodes n ON n.id = h.node_id "
		"WHERE n.state = 'alive' AND n.lease_until >= " NOW_SQL " ORDER BY h.handler",
	[ST_NODE_HEARTBEAT] =
		"UPDATE nodes SET heartbeat_ms = " NOW_SQL ", lease_until = " NOW_SQL
		" + ?3, seen_gen = CASE WHEN ?4 >= 0 THEN ?4 ELSE seen_gen END WHERE id = ?1 "
		"AND incarnation = ?2 AND state = 'alive' RETURNING heartbeat_ms, (SELECT "
		"value FROM meta WHERE key = 'jobs_gen')",
	[ST_META_GEN] = "SELECT value FROM meta WHERE key = 'jobs_gen'",
	[ST_GEN_BUMP] = "UPDATE meta SET value = value + 1 WHERE key = 'jobs_gen' RETURNING value",
	[ST_NODES_LAGGING] = "SELECT id, lease_until - " NOW_SQL " FROM nodes WHERE state = "
			     "'alive' AND lease_until > " NOW_SQL " AND seen_gen < ?1 ORDER BY id",
	[ST_JOBS_STATE] = "SELECT id, paused FROM jobs WHERE id IN (SELECT " V0
			  " FROM json_each(?1))",
	[ST_NODE_RUNNING] = "SELECT count(*) FROM runs WHERE node = ?1 AND state = " SQL_RS_RUNNING,
	[ST_NODES_ORPHANED] = "SELECT n.id, n.lease_until FROM nodes n WHERE n.state <> 'alive' "
			      "AND (EXISTS (SELECT 1 FROM runs r WHERE r.node = n.id AND "
			      "r.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")) OR EXISTS (SELECT 1 "
			      "FROM runs r WHERE r.for_node = n.id AND r.state = " SQL_RS_SCHEDULED "))",
	[ST_NODE_STOP] = "UPDATE nodes SET state = 'stopped', heartbeat_ms = " NOW_SQL
			 ", lease_until = " NOW_SQL " WHERE id = ?1 AND incarnation = ?2 AND "
			 "state = 'alive'",
	[ST_RUNS_UNCLAIM_NODE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = ?1 AND state = " SQL_RS_SCHEDULED,
	[ST_RUNS_RELEASE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE id = "
			    R(00) " AND claim_token = " R(01) " AND node = ?1 AND state = " SQL_RS_SCHEDULED,
	[ST_NODES_LAPSED] = "SELECT 1 FROM nodes WHERE state = 'alive' AND lease_until < ?1 "
			    "LIMIT 1",
	[ST_NODES_EXPIRE] = "UPDATE nodes SET state = 'dead' WHERE state = 'alive' AND "
			    "lease_until < ?1 RETURNING id, lease_until",
	[ST_NODE_GET] = "SELECT incarnation, state, lease_until, host, pid FROM nodes "
			"WHERE id = ?1",
	[ST_RUNS_ABANDON_LOST] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = ?1, error = CASE WHEN "
		"state = " SQL_RS_RUNNING " THEN 'node lost' ELSE 'node lost before its start was "
		"written' END WHERE node = " R(00) " AND (state = " SQL_RS_RUNNING " OR (state = "
		SQL_RS_SCHEDULED " AND due_at < " R(01) ")) "
		"RETURNING id, job_id, fire_at, attempt, started_ms",
	[ST_RUNS_UNCLAIM_LOST] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE "
				 "node = " R(00) " AND state = " SQL_RS_SCHEDULED " AND due_at >= " R(01),
	[ST_JOB_RUNNING] =
		"SELECT 1 FROM runs r WHERE r.job_id = ?1 AND r.state = " SQL_RS_RUNNING " AND r.id <> ?2 "
		"AND " SAME_HOST("r", "?2") " AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = r.node AND n.state <> "
		"'alive') LIMIT 1",
	[ST_RUNS_RELEASE_CLAIM] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE node = ?1 "
				  "AND claim_token = ?2 AND state = " SQL_RS_SCHEDULED,
	/* BEGIN IMMEDIATE already makes claimers take turns */
	[ST_SCHEDULE_LOCK] = "SELECT 1",
	[ST_SCHEDULE_LOCK_INIT] = "SELECT 1",
	[ST_RUN_GET] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id = ?1",
	[ST_RUN_CANCEL_UNCLAIMED] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?2, cancel_requested_at = "
		"coalesce(cancel_requested_at, ?2), error = 'cancelled before it started' WHERE id = ?1 "
		"AND state = " SQL_RS_SCHEDULED " AND node IS NULL",
	[ST_RUN_CANCEL_REQUEST] = "UPDATE runs SET cancel_requested_at = ?2 WHERE id = ?1 AND state IN ("
		SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND cancel_requested_at IS NULL",
	/* the terms of the partial index runs_cancel, so that it serves */
	[ST_RUNS_CANCEL_ASKED] = "SELECT id FROM runs INDEXED BY runs_cancel WHERE node = ?1 AND "
		"cancel_requested_at IS NOT NULL AND state IN (1, 2)",
	[ST_RUNS_CANCEL_FREE] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?1, error = 'cancelled before "
		"it started' WHERE id IN (SELECT id FROM runs INDEXED BY runs_cancel WHERE node IS NULL AND "
		"cancel_requested_at IS NOT NULL AND state IN (1, 2)) AND state = " SQL_RS_SCHEDULED
		" AND node IS NULL",
	[ST_RUNS_CANCEL_LOST] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = ?1, error = 'cancelled; its "
		"node was lost' WHERE node = " R(00) " AND cancel_requested_at IS NOT NULL AND state IN ("
		SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")",
	[ST_RUNS_AFTER_ID] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id > ?1 AND (?2 IS NULL OR "
		"job_name = ?2) ORDER BY id LIMIT ?3",
	[ST_RUNS_STATS] = "SELECT id, job_name, fire_at, state, node, started_ms, finished_ms FROM runs WHERE "
			  "(?1 IS NULL OR job_name = ?1) AND fire_at >= ?2",
	[ST_RUNS_LIST] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE (?1 IS NULL OR "
		"job_name = ?1) AND (?2 = 0 OR state = ?2) AND (?3 < 0 OR fire_at >= ?3) "
		/* keyset paging: strictly after the cursor row in this order */
		"AND (?5 < 0 OR fire_at < ?5 OR (fire_at = ?5 AND (job_name < ?6 OR (job_name = ?6 AND (attempt < ?7 OR (attempt = ?7 AND id < ?8)))))) "
		"ORDER BY fire_at DESC, job_name DESC, attempt DESC, id DESC LIMIT ?4) "
		"ORDER BY fire_at, job_name, attempt, id",
	/* one job's runs: job_name = ?, so (job_name, fire_at, attempt, id)
	 * serves the filter and the order (issue 23 item 10) */
	[ST_RUNS_LIST_JOB] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE job_name = ?1 "
		" AND (?2 = 0 OR state = ?2) AND (?3 < 0 OR fire_at >= ?3) "
		/* keyset paging: strictly after the cursor row in this order */
		"AND (?5 < 0 OR fire_at < ?5 OR (fire_at = ?5 AND (job_name < ?6 OR (job_name = ?6 AND (attempt < ?7 OR (attempt = ?7 AND id < ?8)))))) "
		"ORDER BY fire_at DESC, job_name DESC, attempt DESC, id DESC LIMIT ?4) "
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
	[ST_LOCK_ACQUIRE] =
		"INSERT INTO locks(name, owner, since_ms, until_ms, fence) VALUES (?1, ?2, "
		NOW_SQL ", " NOW_SQL " + ?3, 1) ON CONFLICT(name) DO UPDATE SET owner = "
		"excluded.owner, since_ms = excluded.since_ms, until_ms = excluded.until_ms, "
		"fence = locks.fence + 1 WHERE locks.until_ms < excluded.since_ms "
		"RETURNING fence, until_ms",
	[ST_LOCK_GET] = "SELECT name, owner, since_ms, until_ms, fence FROM locks WHERE name = ?1",
	[ST_LOCK_RENEW] = "UPDATE locks SET until_ms = " NOW_SQL " + ?4 WHERE name = ?1 AND "
			  "owner = ?2 AND fence = ?3 RETURNING until_ms",
	/* The row stays so that the fence keeps growing. */
	[ST_LOCK_RELEASE] = "UPDATE locks SET until_ms = " NOW_SQL " - 1 WHERE name = ?1 AND "
			    "owner = ?2 AND fence = ?3",
	[ST_LOCK_LIST] = "SELECT name, owner, since_ms, until_ms, fence FROM locks ORDER BY name",
	[ST_LOG_RUN] =
		"INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, node, "
		"claim_token, started_ms, finished_ms, exit_code, missed, error, output, "
		"created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
		"?14, " NOW_SQL ") ON CONFLICT DO NOTHING RETURNING id",
	/* fire_at bounds the scan through its index; a terminal run's fire_at
	 * is at most its finish (pre-read SKIPPED rows: a second later). */
	[ST_PRUNE_RUNS] = "DELETE FROM runs WHERE id IN (SELECT id FROM runs INDEXED BY "
			  "runs_fire_at WHERE fire_at < ?1 AND finished_ms < ?1 AND state NOT IN "
			  "(" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") ORDER BY fire_at LIMIT ?2)",
	[ST_AUDIT_INSERT] = "INSERT INTO audit(at_ms, actor, action, job, detail) VALUES (" NOW_SQL
			    ", ?1, " R(00) ", " R(01) ", " R(02) ")",
	[ST_AUDIT_LIST] = "SELECT * FROM (SELECT id, at_ms, actor, action, job, detail FROM audit "
			  "WHERE (?1 IS NULL OR job = ?1) AND (?2 < 0 OR at_ms >= ?2) ORDER BY id "
			  "DESC LIMIT ?3) ORDER BY id",
	[ST_PRUNE_AUDIT] = "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at_ms < ?1 "
			   "ORDER BY at_ms LIMIT ?2)",
};

/* The statements whose batch runs row by row (the rest take a one-column
 * batch as JSON). */
static const bool per_row[ST__COUNT] = {
	[ST_JOBS_INSERT] = true,   [ST_JOBS_UPDATE] = true,	  [ST_FIRES_INSERT] = true,
	[ST_JOBS_ADVANCE] = true,  [ST_RUNS_APPLY] = true,	  [ST_RETRY_INSERT] = true,
	[ST_JOBS_NEXT_IF_NULL] = true, [ST_RUNS_RELEASE] = true, [ST_EVENTS_INSERT] = true,
	[ST_RUNS_ABANDON_LOST] = true, [ST_RUNS_UNCLAIM_LOST] = true, [ST_JOBS_SET_ASIDE] = true,
	[ST_AUDIT_INSERT] = true, [ST_RUNS_ABANDON_PINNED] = true,
	[ST_RUNS_CANCEL_LOST] = true,
};

/* Run row by row, a RETURNING clause costs SQLite a temporary table per
 * row (a third of `job apply`'s time, a tenth of a queue drain's).  These
 * statements' one row of output per changed row is made instead:
 *   MADE_INSERTED: (sqlite3_last_insert_rowid(), cell 0, cell 1, ...), the
 *     RETURNING list being the new id followed by the inserted cells;
 *   MADE_UPDATED: (cell 0, ...), the RETURNING list being the row's key. */
enum { MADE_NONE, MADE_INSERTED, MADE_UPDATED };
static const unsigned char made_kind[ST__COUNT] = {
	[ST_JOBS_INSERT] = MADE_INSERTED, [ST_FIRES_INSERT] = MADE_INSERTED,
	[ST_RUNS_APPLY] = MADE_UPDATED,
};

#endif
