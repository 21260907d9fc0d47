/*
 * The SQL text of the PostgreSQL dialect: every statement id of stmt.h,
 * each keeping the invariant stmt.h names for it.  Included by pg.c only,
 * as schema.h is.
 */
#ifndef DBCRON_STORE_PG_SQL_H
#define DBCRON_STORE_PG_SQL_H

#include "store/stmt.h"

/* The database clock (invariant 4): epoch milliseconds.  clock_timestamp()
 * rather than now(): now() is frozen at transaction start. */
#define DBNOW "((extract(epoch from clock_timestamp()) * 1000)::bigint)"


/* Routing: job row J may run on the claiming node: a command anywhere, a
 * handler (SQL_EXEC_HANDLER) when it is in the node's list L, unless R
 * (route) is 0. */
#define RUNS_HERE(J, R, L)                                                       \
	"(" R " = 0 OR " J ".executor <> " SQL_EXEC_HANDLER " OR " J ".handler = ANY (" L "))"

/* The live runs (claimed SCHEDULED, RUNNING) of the jobs carrying tag T,
 * counted through runs_job_state; and the jobs carrying it. */
#define TAG_LIVE(T)                                                                       \
	"(SELECT count(*) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.state IN (1, 2) " \
	"AND r.node IS NOT NULL AND " T " = ANY (string_to_array(j.tags, E'\\n')))"
#define TAG_JOBS(T) "(SELECT count(*) FROM jobs j WHERE " T " = ANY (string_to_array(j.tags, E'\\n')))"

/* Pools: job id ID is in the claim's pass P (0: any job; 1: not in the
 * list L, the node's slow pool; 2: in it), claim.c "Pools". */
#define IN_POOL(ID, P, L) "(" P " = 0 OR (" P " = 2) = (" ID " = ANY (" L ")))"

/* The run log's listing after its job filter: state, since, and keyset
 * paging strictly after the cursor row ($5..$8) in the listing's order,
 * the newest $4 (all when < 0) returned oldest first. */
#define RUNS_LIST_TAIL                                                           \
	" AND ($2::int = 0 OR state = $2::int) AND ($3::bigint < 0 OR fire_at >= "  \
	"$3::bigint) AND ($5::bigint < 0 OR fire_at < $5::bigint OR (fire_at = "    \
	"$5::bigint AND (job_name < $6::text OR (job_name = $6::text AND (attempt " \
	"< $7::int OR (attempt = $7::int AND id < $8::bigint)))))) ORDER BY "       \
	"fire_at DESC, job_name DESC, attempt DESC, id DESC LIMIT CASE WHEN "       \
	"$4::bigint < 0 THEN NULL ELSE $4::bigint END) x ORDER BY fire_at, "        \
	"job_name, attempt, id"

static const char *const sql[ST__COUNT] = {
	[ST_BEGIN] = "BEGIN",
	[ST_BEGIN_WRITE] = "BEGIN",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_NOW] = "SELECT " DBNOW,
	[ST_SCHEMA] = "-- schema_read(), migrate()",
	[ST_JOB_GET] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name = $1::text",
	[ST_JOB_LIST] = "SELECT " STORE_JOB_COLS " FROM jobs ORDER BY name",
	[ST_JOB_PAGE] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > $1::text ORDER BY name "
			"LIMIT $2::bigint",
	[ST_JOB_BRIEF] = "SELECT name, next_fire_at, paused::int FROM jobs ORDER BY name",
	[ST_JOB_LAST_OK] =
		"SELECT j.name, (SELECT r.finished_ms FROM runs r WHERE r.job_id = j.id AND "
		"r.state = " SQL_RS_SUCCEEDED " ORDER BY r.fire_at DESC, r.attempt DESC LIMIT 1), j.max_silence_ms, "
		"j.created_ms, CASE WHEN j.paused THEN 1 ELSE 0 END FROM jobs j ORDER BY j.name LIMIT $1::bigint",
	/* one LATERAL probe of runs' UNIQUE index, backwards, per job */
	[ST_JOBS_LAST_RUN] =
		"SELECT v.id, r.id, r.state, r.finished_ms FROM unnest($1::bigint[]) v(id) "
		"CROSS JOIN LATERAL (SELECT x.id, x.state, x.finished_ms FROM runs x WHERE "
		"x.job_id = v.id AND x.state <> " SQL_RS_SCHEDULED " ORDER BY x.fire_at DESC, x.attempt DESC "
		"LIMIT 1) r",
	[ST_JOB_SEARCH] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name > $1::text AND "
			  "strpos(name, $3::text) > 0 ORDER BY name LIMIT $2::bigint",
	/* one LATERAL walk of runs' UNIQUE index, backwards, per job */
	[ST_JOBS_STRIP] =
		"SELECT v.id, r.id, r.state, r.fire_at, r.attempt FROM unnest($1::bigint[]) v(id) "
		"CROSS JOIN LATERAL (SELECT y.id, y.state, y.fire_at, y.attempt FROM runs y WHERE "
		"y.job_id = v.id AND y.state <> " SQL_RS_SCHEDULED " ORDER BY y.fire_at DESC, "
		"y.attempt DESC LIMIT $2::bigint) r",
	[ST_JOBS_NAMED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name = ANY ($1::text[])",
	[ST_JOBS_BY_NAMES] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE name = ANY ($1::text[]) "
			     "ORDER BY name FOR UPDATE",
	/* one array a column ({PUT_ARRAYS}: pg.c's types), joined by unnest */
	[ST_JOBS_INSERT] = "INSERT INTO jobs ({PUT_COLS}, created_ms, updated_ms) SELECT v.*, "
			   "$1::bigint, $1::bigint FROM unnest({PUT_ARRAYS 2}) v RETURNING id, name",
	[ST_JOBS_UPDATE] = "UPDATE jobs j SET {PUT_SET_V}, updated_ms = $1::bigint, set_aside = "
			   "NULL FROM unnest($2::bigint[], {PUT_ARRAYS 3}) v(id, {PUT_COLS}) "
			   "WHERE j.id = v.id",
	[ST_JOBS_PRUNED] = "SELECT " STORE_JOB_COLS " FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM "
			   "unnest($1::text[]) u(n) WHERE u.n = j.name)",
	[ST_JOBS_PRUNE] = "DELETE FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM "
			  "unnest($1::text[]) u(n) WHERE u.n = j.name)",
	[ST_RUNS_CLOSE_ORPHANS] =
		"UPDATE runs r SET state = " SQL_RS_ABANDONED ", error = 'job deleted', finished_ms = $1::bigint "
		"WHERE state = " SQL_RS_SCHEDULED " AND node IS NULL AND NOT EXISTS "
		"(SELECT 1 FROM jobs j WHERE j.id = r.job_id)",
	[ST_JOB_SET_PAUSED] =
		"UPDATE jobs SET paused = $2::int::bool, next_fire_at = CASE WHEN "
		"$2::int::bool THEN next_fire_at ELSE $3::bigint END, set_aside = CASE WHEN "
		"$2::int::bool THEN set_aside END, updated_ms = " DBNOW " WHERE name = $1::text",
	[ST_JOBS_SET_ASIDE] =
		"UPDATE jobs SET set_aside = v.why, next_fire_at = NULL FROM unnest("
		"$1::bigint[], $2::text[]) v(id, why) WHERE jobs.id = v.id",
	[ST_JOB_DELETE] = "DELETE FROM jobs WHERE name = $1::text",
	[ST_JOB_ID] = "SELECT id FROM jobs WHERE name = $1::text",
	[ST_JOB_RENAME] = "UPDATE jobs SET name = $2::text, updated_ms = $3::bigint WHERE name = $1::text",
	[ST_RUNS_RENAME] = "UPDATE runs SET job_name = $2::text WHERE job_id = $1::bigint",
	[ST_NEEDS_OF] = "SELECT need_id FROM job_needs WHERE job_id = $1::bigint",
	[ST_NEEDS_DEL] = "DELETE FROM job_needs WHERE job_id = $1::bigint AND need_id = $2::bigint",
	[ST_NEEDS_TIDY] = "DELETE FROM job_needs WHERE job_id NOT IN (SELECT id FROM jobs WHERE kind = "
		SQL_SCHED_NEEDS ")",
	[ST_NEEDS_DANGLING] = "SELECT a.name FROM job_needs n JOIN jobs a ON a.id = n.job_id WHERE NOT EXISTS "
		"(SELECT 1 FROM jobs b WHERE b.id = n.need_id) ORDER BY a.name",
	[ST_NEEDS_EDGES] = "SELECT a.name, b.name FROM job_needs n JOIN jobs a ON a.id = n.job_id JOIN jobs b "
		"ON b.id = n.need_id ORDER BY a.name, b.name",
	[ST_NEEDED_BY] = "SELECT a.name FROM job_needs n JOIN jobs a ON a.id = n.job_id JOIN jobs b ON b.id = "
		"n.need_id WHERE b.name = $1::text ORDER BY a.name",
	[ST_NEEDS_SET_ASIDE] = "UPDATE jobs SET set_aside = $2::text WHERE id IN (SELECT job_id FROM job_needs "
		"WHERE need_id = $1::bigint)",
	[ST_NEEDS_DETACH] = "DELETE FROM job_needs WHERE need_id = $1::bigint",
	[ST_FANIN_RESET] = "UPDATE job_needs SET done = 0 WHERE job_id = $1::bigint",
	[ST_NEEDS_ADD] = "INSERT INTO job_needs (job_id, need_id, done) VALUES ($1::bigint, $2::bigint, 0) "
		"ON CONFLICT DO NOTHING",
	[ST_FANIN_LOCK] = "SELECT id FROM jobs WHERE id IN (SELECT job_id FROM job_needs WHERE "
		"need_id IN (SELECT unnest($1::bigint[]))) ORDER BY id FOR UPDATE",
	[ST_FANIN_MARK] = "UPDATE job_needs SET done = 1 WHERE need_id IN (SELECT unnest($1::bigint[]))",
	[ST_FANIN_READY] =
		"SELECT n.job_id, (SELECT j.name FROM jobs j WHERE j.id = n.job_id) FROM job_needs n "
		"WHERE n.job_id IN (SELECT job_id FROM job_needs WHERE need_id IN (SELECT unnest($1::bigint[]))) AND "
		"n.job_id NOT IN (SELECT id FROM jobs WHERE set_aside IS NOT NULL) GROUP BY n.job_id "
		"HAVING MIN(n.done) = 1 ORDER BY n.job_id",
	[ST_TRIGGER_INSERT] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, "
		"created_ms, params) VALUES ($1::bigint, $2::text, $3::bigint, 1, " SQL_RS_SCHEDULED ", $3::bigint, 0, "
		"$4::bigint, $5::text) ON CONFLICT DO NOTHING RETURNING id",
	[ST_BACKFILL_INSERT] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, created_ms, "
		"kind, max_running) SELECT $1::bigint, $2::text, v, 1, " SQL_RS_SCHEDULED ", $3::bigint, 0, "
		"$3::bigint, " SQL_RK_BACKFILL ", $4::int FROM unnest($5::bigint[]) v ON CONFLICT DO NOTHING",
	[ST_CALENDAR_INSERT] = "INSERT INTO calendars (name, days, created_ms) VALUES ($1::text, "
			       "$2::text, $3::bigint) ON CONFLICT DO NOTHING",
	[ST_CALENDAR_GET] = "SELECT name, days, created_ms FROM calendars WHERE name = $1::text",
	[ST_CALENDAR_LIST] = "SELECT name, days, created_ms FROM calendars ORDER BY name",
	[ST_CALENDAR_USERS] = "SELECT name FROM jobs WHERE exclude_calendar = $1::text ORDER BY name",
	[ST_CALENDAR_DELETE] = "DELETE FROM calendars WHERE name = $1::text",
	[ST_BACKFILL_TAKEN] = "SELECT DISTINCT fire_at FROM runs WHERE job_id = $1::bigint AND "
			      "fire_at = ANY ($2::bigint[]) ORDER BY fire_at",
	/* SKIP LOCKED lets concurrent claimers take disjoint jobs without
	 * waiting (invariant 5: LIMIT). */
	[ST_CLAIM_DUE_JOBS] =
		"WITH c AS (SELECT " DBNOW " AS now) SELECT c.now, j.* FROM c LEFT JOIN "
		"LATERAL (SELECT 1 AS busy, " STORE_JOB_COLS " FROM jobs WHERE NOT paused AND "
		"next_fire_at IS NOT NULL AND next_fire_at <= c.now + $1::bigint AND ("
		RUNS_HERE("jobs", "$3::int", "$4::text[]") " OR " STORE_STRANDED("jobs", "jobs.next_fire_at", "c.now")
		") AND " IN_POOL("jobs.id", "$5::int", "$6::bigint[]")
		" AND " STORE_OVERLAP_DUE_OK("jobs", "$7::text", "c.now")
		" ORDER BY next_fire_at, priority DESC LIMIT $2::int FOR UPDATE "
		"OF jobs SKIP LOCKED) j ON true",
	[ST_FIRES_INSERT] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, "
		"claim_token, finished_ms, missed, error, created_ms) SELECT v.job_id, "
		"v.job_name, v.fire_at, 1, v.state, v.due_at, CASE WHEN v.state = "
		SQL_RS_SCHEDULED " THEN $1::text END, CASE WHEN v.state = " SQL_RS_SCHEDULED
		" THEN $2::text END, CASE WHEN v.state = " SQL_RS_SCHEDULED " "
		"THEN NULL ELSE $3::bigint END, v.missed, v.error, $3::bigint FROM "
		"unnest($4::bigint[], $5::text[], $6::bigint[], $7::int[], $8::bigint[], "
		"$9::bigint[], $10::text[]) v(job_id, job_name, fire_at, state, due_at, "
		"missed, error) ON CONFLICT DO NOTHING RETURNING id, job_id, job_name, "
		"fire_at, state, due_at, missed",
	[ST_JOBS_ADVANCE] = "UPDATE jobs SET next_fire_at = v.n, runs_fired = runs_fired + v.f FROM "
			    "unnest($1::bigint[], $2::bigint[], $3::bigint[]) v(id, n, f) WHERE "
			    "jobs.id = v.id",
	/* Backpressure: at most $4 runs.  The pick is a MATERIALIZED CTE, run
	 * once: as "WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)"
	 * the planner may rescan the subquery for each row of runs, and each
	 * rescan skips the rows the last one locked, so one claim could take
	 * every unclaimed run (conf_test_concurrent_claimers saw 11 of 7). */
	[ST_CLAIM_RUNS] =
		"WITH c AS MATERIALIZED (SELECT r.id FROM runs r WHERE r.state = " SQL_RS_SCHEDULED " AND "
		"r.node IS NULL AND r.cancel_requested_at IS NULL AND r.due_at <= $3::bigint AND "
		"(r.for_node IS NULL OR r.for_node = $1::text) AND EXISTS (SELECT 1 FROM jobs "
		"WHERE jobs.id = r.job_id AND NOT jobs.paused AND ("
		RUNS_HERE("jobs", "$5::int", "$6::text[]") " OR "
		STORE_STRANDED("jobs", "r.due_at", "$7::bigint") " OR r.for_node = $1::text) AND "
		IN_POOL("jobs.id", "$8::int", "$9::bigint[]") " AND "
		STORE_OVERLAP_RUN_OK("jobs", "$1::text") ") AND " STORE_BACKFILL_FITS("r")
		" ORDER BY r.due_at LIMIT $4::int FOR UPDATE OF r SKIP LOCKED) UPDATE runs SET node = "
		"$1::text, claim_token = $2::text FROM c WHERE runs.id = c.id AND "
		"runs.state = " SQL_RS_SCHEDULED " AND runs.node IS NULL RETURNING runs.id, runs.job_id, "
		"runs.job_name, runs.fire_at, runs.attempt, runs.due_at, runs.missed, runs.params, "
		"runs.for_node, runs.node_index, runs.node_total",
	[ST_NODES_LIVE] = "SELECT id FROM nodes WHERE state = 'alive' AND lease_until >= $1::bigint",
	[ST_FIRES_FAN_MARK] =
		"UPDATE runs SET for_node = $1::text, node_index = $3::int, node_total = $4::int WHERE "
		"node = $1::text AND claim_token = $2::text AND state = " SQL_RS_SCHEDULED " AND attempt = 1 "
		"AND node_total = 0 AND job_id IN (SELECT id FROM jobs WHERE on_every_node)",
	[ST_FIRES_FAN_OUT] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, created_ms, "
		"params, for_node, node_index, node_total) SELECT r.job_id, r.job_name, r.fire_at, 1, "
		SQL_RS_SCHEDULED ", r.due_at, r.missed, $3::bigint, r.params, n.id, n.k - 1, $4::int FROM "
		"runs r JOIN unnest($5::text[]) WITH ORDINALITY n(id, k) ON n.id <> $1::text WHERE "
		"r.node = $1::text AND r.claim_token = $2::text AND r.state = " SQL_RS_SCHEDULED " AND "
		"r.attempt = 1 AND r.for_node = $1::text AND r.node_total = $4::int AND NOT EXISTS "
		"(SELECT 1 FROM runs o WHERE o.job_id = r.job_id AND o.fire_at = r.fire_at AND "
		"o.attempt = 1 AND o.id <> r.id) ON CONFLICT DO NOTHING",
	[ST_RUNS_ABANDON_PINNED] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", finished_ms = $1::bigint, error = 'its node "
		"stopped or was lost: an every-node run is not moved to another node' FROM unnest($2::text[], "
		"$3::bigint[]) v(node, lease_until) WHERE runs.for_node = v.node AND runs.state = "
		SQL_RS_SCHEDULED,
	[ST_JOBS_BY_IDS] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id = ANY ($1::bigint[])",
	[ST_TAGS_CAPPED] = "SELECT name, max_running FROM tags WHERE name = ANY ($1::text[]) "
			   "ORDER BY name",
	[ST_TAGS_LOCK] = "SELECT name FROM tags WHERE name = ANY ($1::text[]) ORDER BY name FOR "
			 "UPDATE SKIP LOCKED",
	[ST_TAGS_LIVE] = "SELECT t.name, " TAG_LIVE("t.name") " FROM unnest($1::text[]) t(name)",
	[ST_TAG_SET] = "INSERT INTO tags (name, max_running, created_ms, updated_ms) VALUES "
		       "($1::text, $2::int, $3::bigint, $3::bigint) ON CONFLICT (name) DO UPDATE SET "
		       "max_running = excluded.max_running, updated_ms = excluded.updated_ms",
	[ST_TAG_USED] = "SELECT " TAG_JOBS("$1::text"),
	[ST_TAG_DELETE] = "DELETE FROM tags WHERE name = $1::text",
	[ST_TAGS_LIST] = "SELECT t.name, t.max_running, " TAG_LIVE("t.name") ", " TAG_JOBS("t.name")
			 " FROM tags t ORDER BY t.name",
	[ST_TAGS_NAMES] = "SELECT name FROM tags ORDER BY name",
	[ST_JOBS_BUSY] = "SELECT job_id, id, node, state, started_ms FROM runs WHERE job_id = ANY ($2::bigint[]) "
			 "AND state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND node IS NOT NULL "
			 "AND node <> $1::text ORDER BY job_id",
	[ST_JOBS_LOCK] = "SELECT id FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id FOR UPDATE "
			 "SKIP LOCKED",
	[ST_RUNS_APPLY] =
		"UPDATE runs SET state = v.state, started_ms = coalesce(v.started, "
		"runs.started_ms), finished_ms = coalesce(v.finished, runs.finished_ms), "
		"exit_code = CASE WHEN v.hx THEN v.exit ELSE runs.exit_code END, error = "
		"coalesce(v.error, runs.error), output = coalesce(v.output, runs.output) FROM "
		"unnest($2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::bigint[], "
		"$7::bool[], $8::int[], $9::text[], $10::text[], $11::int[]) v(id, token, state, "
		"started, finished, hx, exit, error, output, live) WHERE runs.id = v.id AND "
		"runs.claim_token = v.token AND runs.node = $1::text AND "
		STORE_RUN_LIVE_UPTO("runs.", "v.live") " RETURNING runs.id",
	[ST_RETRY_INSERT] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, "
		"created_ms, params, for_node, node_index, node_total, kind, max_running) SELECT "
		"r.job_id, r.job_name, r.fire_at, r.attempt + 1, " SQL_RS_SCHEDULED ", v.due, 0, "
		"$1::bigint, r.params, r.for_node, r.node_index, r.node_total, r.kind, r.max_running "
		"FROM unnest($2::bigint[], $3::bigint[]) v(id, due) JOIN runs r "
		"ON r.id = v.id WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.job_id) "
		"ON CONFLICT DO NOTHING",
	[ST_EVENTS_INSERT] =
		"INSERT INTO events (job_id, job_name, run_id, kind, target, state, next_at, "
		"created_ms) SELECT r.job_id, r.job_name, r.id, v.kind, v.target, " SQL_EV_PENDING ", $1::bigint, "
		"$1::bigint FROM unnest($2::bigint[], $3::int[], $4::text[]) v(id, kind, target) "
		"JOIN runs r ON r.id = v.id ON CONFLICT DO NOTHING",
	[ST_EVENTS_LIST] = "SELECT " STORE_EVENT_COLS " FROM events WHERE ($1::text IS NULL "
			   "OR job_name = $1::text) AND ($2::int = 0 OR state = $2::int) ORDER BY "
			   "id DESC LIMIT $3::bigint",
	/* SKIP LOCKED: two nodes claiming at once take disjoint events */
	[ST_EVENTS_CLAIM] =
		"UPDATE events SET state = " SQL_EV_DELIVERING ", node = $1::text, claim_token = $2::text, "
		"attempts = attempts + 1 WHERE id IN (SELECT e.id FROM events e WHERE (e.state = "
		SQL_EV_PENDING " AND e.next_at <= $3::bigint) OR (e.state = " SQL_EV_DELIVERING " AND NOT EXISTS (SELECT 1 FROM "
		"nodes n WHERE n.id = e.node AND n.state = 'alive' AND n.lease_until >= "
		"$3::bigint)) ORDER BY e.next_at, e.id LIMIT $4::bigint FOR UPDATE SKIP LOCKED)",
	[ST_EVENTS_CLAIMED] = "SELECT " STORE_EVENT_COLS " FROM events WHERE claim_token = "
			      "$1::text AND state = " SQL_EV_DELIVERING " ORDER BY id",
	[ST_EVENT_FINISH] =
		"UPDATE events SET state = $4::int, next_at = $5::bigint, last_error = $6::text, "
		"finished_ms = CASE WHEN $4::int >= " SQL_EV_DELIVERED " THEN $7::bigint END, node = CASE WHEN "
		"$4::int = " SQL_EV_PENDING " THEN NULL ELSE node END, claim_token = CASE WHEN $4::int = " SQL_EV_PENDING " THEN "
		"NULL ELSE claim_token END WHERE id = $1::bigint AND node = $2::text AND "
		"claim_token = $3::text AND state = " SQL_EV_DELIVERING,
	[ST_OVERDUE_FIND] = STORE_OVERDUE_FIND("$1::bigint"),
	[ST_OVERDUE_INSERT] =
		"INSERT INTO events (job_id, job_name, run_id, kind, target, state, next_at, "
		"created_ms) VALUES ($1::bigint, $2::text, $3::bigint, " SQL_EV_OVERDUE ", $4::text, " SQL_EV_PENDING ", $5::bigint, "
		"$5::bigint) ON CONFLICT DO NOTHING",
	[ST_JOBS_NEXT_IF_NULL] =
		"UPDATE jobs SET next_fire_at = v.n FROM unnest($1::bigint[], $2::bigint[]) "
		"v(id, n) WHERE jobs.id = v.id AND jobs.next_fire_at IS NULL",
	[ST_NODE_UPSERT] =
		"INSERT INTO nodes (id, incarnation, host, pid, workers, state, started_ms, "
		"heartbeat_ms, lease_until) VALUES ($1::text, $2::text, $3::text, $4::int, "
		"$5::int, 'alive', $6::bigint, $6::bigint, $6::bigint + $7::bigint) ON "
		"CONFLICT (id) DO UPDATE SET incarnation = EXCLUDED.incarnation, host = "
		"EXCLUDED.host, pid = EXCLUDED.pid, workers = EXCLUDED.workers, state = "
		"'alive', started_ms = EXCLUDED.started_ms, heartbeat_ms = "
		"EXCLUDED.heartbeat_ms, lease_until = EXCLUDED.lease_until",
	[ST_NODE_HANDLERS_CLEAR] = "DELETE FROM node_handlers WHERE node_id = $1::text",
	[ST_NODE_HANDLERS_ADD] = "INSERT INTO node_handlers (node_id, handler) SELECT $1::text, "
				 "u.h FROM unnest($2::text[]) u(h) ON CONFLICT DO NOTHING",
	[ST_HANDLERS_LIVE] =
		"SELECT DISTINCT h.handler FROM node_handlers h JOIN nodes n ON n.id = h.node_id "
		"WHERE n.state = 'alive' AND n.lease_until >= " DBNOW " ORDER BY h.handler",
	[ST_NODE_HEARTBEAT] =
		"WITH c AS (SELECT " DBNOW " AS now) UPDATE nodes SET heartbeat_ms = c.now, "
		"lease_until = c.now + $3::bigint, seen_gen = CASE WHEN $4::bigint >= 0 THEN "
		"$4::bigint ELSE seen_gen END FROM c WHERE id = $1::text AND incarnation = "
		"$2::text AND state = 'alive' RETURNING c.now, (SELECT value FROM meta WHERE "
		"key = 'jobs_gen')",
	[ST_META_GEN] = "SELECT value FROM meta WHERE key = 'jobs_gen'",
	[ST_GEN_BUMP] = "UPDATE meta SET value = value + 1 WHERE key = 'jobs_gen' RETURNING value",
	[ST_NODES_LAGGING] = "SELECT id, lease_until - " DBNOW " FROM nodes WHERE state = "
			     "'alive' AND lease_until > " DBNOW " AND seen_gen < $1::bigint ORDER BY id",
	[ST_JOBS_STATE] = "SELECT id, paused::int FROM jobs WHERE id = ANY ($1::bigint[])",
	[ST_NODE_RUNNING] = "SELECT count(*) FROM runs WHERE node = $1::text AND state = " SQL_RS_RUNNING,
	[ST_NODES_ORPHANED] = "SELECT n.id, n.lease_until FROM nodes n WHERE n.state <> 'alive' "
			      "AND (EXISTS (SELECT 1 FROM runs r WHERE r.node = n.id AND "
			      "r.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")) OR EXISTS (SELECT 1 "
			      "FROM runs r WHERE r.for_node = n.id AND r.state = " SQL_RS_SCHEDULED ")) FOR UPDATE OF n SKIP LOCKED",
	[ST_NODE_STOP] = "UPDATE nodes SET state = 'stopped', heartbeat_ms = " DBNOW
			 ", lease_until = " DBNOW " WHERE id = $1::text AND incarnation = "
			 "$2::text AND state = 'alive'",
	[ST_RUNS_UNCLAIM_NODE] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE node "
				 "= $1::text AND state = " SQL_RS_SCHEDULED,
	[ST_RUNS_RELEASE] =
		"UPDATE runs SET node = NULL, claim_token = NULL FROM unnest($2::bigint[], "
		"$3::text[]) v(id, token) WHERE runs.id = v.id AND runs.claim_token = v.token "
		"AND runs.node = $1::text AND runs.state = " SQL_RS_SCHEDULED,
	[ST_NODES_LAPSED] = "SELECT 1 FROM nodes WHERE state = 'alive' AND lease_until < "
			    "$1::bigint LIMIT 1",
	/* The nodes row is the mutex: of two concurrent reapers exactly one
	 * marks each node dead and resolves its runs. */
	[ST_NODES_EXPIRE] =
		"UPDATE nodes SET state = 'dead' WHERE id IN (SELECT id FROM nodes WHERE "
		"state = 'alive' AND lease_until < $1::bigint FOR UPDATE SKIP LOCKED) AND "
		"state = 'alive' RETURNING id, lease_until",
	[ST_NODE_GET] = "SELECT incarnation, state, lease_until, host, pid FROM nodes "
			"WHERE id = $1::text FOR UPDATE",
	/* One statement for both live states: a run moving SCHEDULED ->
	 * RUNNING meanwhile is matched either way (READ COMMITTED re-checks
	 * the row after the lock wait). */
	[ST_RUNS_ABANDON_LOST] =
		"UPDATE runs SET state = " SQL_RS_ABANDONED ", error = CASE WHEN runs.state = "
		SQL_RS_RUNNING " THEN 'node lost' ELSE 'node lost before its start was written' "
		"END, finished_ms = $1::bigint FROM unnest($2::text[], $3::bigint[]) v(node, "
		"lease_until) WHERE runs.node = v.node AND (runs.state = " SQL_RS_RUNNING
		" OR (runs.state = " SQL_RS_SCHEDULED " AND runs.due_at < "
		"v.lease_until)) RETURNING runs.id, runs.job_id, runs.fire_at, runs.attempt, "
		"runs.started_ms",
	[ST_RUNS_UNCLAIM_LOST] =
		"UPDATE runs SET node = NULL, claim_token = NULL FROM unnest($1::text[], "
		"$2::bigint[]) v(node, lease_until) WHERE runs.node = v.node AND runs.state = "
		SQL_RS_SCHEDULED " AND runs.due_at >= v.lease_until",
	[ST_JOB_RUNNING] =
		"SELECT 1 FROM runs r JOIN nodes n ON n.id = r.node WHERE r.job_id = "
		"$1::bigint AND r.state = " SQL_RS_RUNNING " AND r.id <> $2::bigint AND n.state = 'alive' "
		"AND " SAME_HOST("r", "$2::bigint") " LIMIT 1",
	[ST_RUNS_RELEASE_CLAIM] = "UPDATE runs SET node = NULL, claim_token = NULL WHERE node = "
				  "$1::text AND claim_token = $2::text AND state = " SQL_RS_SCHEDULED,
	[ST_SCHEDULE_LOCK] = "SELECT fence FROM locks WHERE name = 'dbcron:schedule' FOR UPDATE",
	[ST_SCHEDULE_LOCK_INIT] = "INSERT INTO locks (name, owner, since_ms, until_ms, fence) VALUES "
				  "('dbcron:schedule', '', 0, 0, 0) ON CONFLICT DO NOTHING",
	[ST_RUN_GET] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id = $1::bigint",
	[ST_RUN_CANCEL_UNCLAIMED] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = $2::bigint, "
		"cancel_requested_at = coalesce(cancel_requested_at, $2::bigint), error = 'cancelled "
		"before it started' WHERE id = $1::bigint AND state = " SQL_RS_SCHEDULED " AND node IS NULL",
	[ST_RUN_CANCEL_REQUEST] = "UPDATE runs SET cancel_requested_at = $2::bigint WHERE id = "
		"$1::bigint AND state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") AND "
		"cancel_requested_at IS NULL",
	/* the terms of the partial index runs_cancel, so that it serves */
	[ST_RUNS_CANCEL_ASKED] = "SELECT id FROM runs WHERE node = $1::text AND "
		"cancel_requested_at IS NOT NULL AND state IN (1, 2)",
	[ST_RUNS_CANCEL_FREE] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = $1::bigint, error = "
		"'cancelled before it started' WHERE node IS NULL AND cancel_requested_at IS NOT NULL "
		"AND state IN (1, 2) AND state = " SQL_RS_SCHEDULED,
	[ST_RUNS_CANCEL_LOST] =
		"UPDATE runs SET state = " SQL_RS_CANCELLED ", finished_ms = $1::bigint, error = "
		"'cancelled; its node was lost' FROM unnest($2::text[], $3::bigint[]) v(node, "
		"lease_until) WHERE runs.node = v.node AND runs.cancel_requested_at IS NOT NULL AND "
		"runs.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ")",
	[ST_RUNS_AFTER_ID] = "SELECT " STORE_RUN_COLS " FROM runs WHERE id > $1::bigint AND "
		"($2::text IS NULL OR job_name = $2::text) ORDER BY id LIMIT $3::bigint",
	[ST_RUNS_STATS] = "SELECT id, job_name, fire_at, state, node, started_ms, finished_ms FROM runs WHERE "
			  "($1::text IS NULL OR job_name = $1::text) AND fire_at >= $2::bigint",
	[ST_RUNS_LIST] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE ($1::text IS NULL "
		"OR job_name = $1::text)" RUNS_LIST_TAIL,
	/* one job's runs: job_name = ?, so (job_name, fire_at, attempt, id)
	 * serves the filter and the order (issue 23 item 10) */
	[ST_RUNS_LIST_JOB] =
		"SELECT * FROM (SELECT " STORE_RUN_COLS " FROM runs WHERE job_name = $1::text"
		RUNS_LIST_TAIL,
	/* reap and the orphan sweep resolve what a stopped or dead node held;
	 * until they have, its row stays */
	[ST_NODES_PRUNE] = "DELETE FROM nodes WHERE state IN ('stopped', 'dead') AND "
			   "heartbeat_ms < $1::bigint AND NOT EXISTS (SELECT 1 FROM runs r WHERE "
			   "r.node = nodes.id AND r.state IN (" SQL_RS_SCHEDULED ", " SQL_RS_RUNNING "))",
	[ST_NODES_LIST] =
		"SELECT n.id, n.host, n.pid, n.workers, n.state, n.started_ms, n.heartbeat_ms, "
		"n.lease_until, (SELECT count(*) FROM runs r WHERE r.node = n.id AND r.state = "
		SQL_RS_RUNNING ") FROM nodes n ORDER BY n.id",
	/* Seed 002: insert, or take over only an expired lease, in one
	 * statement; every take-over bumps the fence. */
	[ST_LOCK_ACQUIRE] =
		"WITH c AS (SELECT " DBNOW " AS now) INSERT INTO locks AS l (name, owner, "
		"since_ms, until_ms, fence) SELECT $1::text, $2::text, c.now, c.now + "
		"$3::bigint, 1 FROM c ON CONFLICT (name) DO UPDATE SET owner = "
		"EXCLUDED.owner, since_ms = EXCLUDED.since_ms, until_ms = EXCLUDED.until_ms, "
		"fence = l.fence + 1 WHERE l.until_ms < EXCLUDED.since_ms RETURNING fence, "
		"until_ms",
	[ST_LOCK_GET] = "SELECT name, owner, since_ms, until_ms, fence FROM locks WHERE "
			"name = $1::text",
	[ST_LOCK_RENEW] =
		"WITH c AS (SELECT " DBNOW " AS now) UPDATE locks SET until_ms = c.now + "
		"$4::bigint FROM c WHERE name = $1::text AND owner = $2::text AND fence = "
		"$3::bigint RETURNING until_ms",
	/* Release keeps the row so the fence keeps growing. */
	[ST_LOCK_RELEASE] = "UPDATE locks SET until_ms = " DBNOW " - 1 WHERE name = $1::text "
			    "AND owner = $2::text AND fence = $3::bigint",
	[ST_LOCK_LIST] = "SELECT name, owner, since_ms, until_ms, fence FROM locks ORDER BY name",
	[ST_LOG_RUN] =
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, "
		"claim_token, started_ms, finished_ms, exit_code, missed, error, output, "
		"created_ms) VALUES ($1::bigint, $2::text, $3::bigint, $4::int, $5::int, "
		"$6::bigint, $7::text, $8::text, $9::bigint, $10::bigint, $11::int, "
		"$12::bigint, $13::text, $14::text, " DBNOW ") ON CONFLICT DO NOTHING "
		"RETURNING id",
	/* The oldest first through runs_fire_at, a bounded batch a statement:
	 * each holds its locks for a moment, never the whole log. */
	[ST_PRUNE_RUNS] = "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE fire_at < "
			  "$1::bigint AND finished_ms < $1::bigint AND state NOT IN ("
			  SQL_RS_SCHEDULED ", " SQL_RS_RUNNING ") "
			  "ORDER BY fire_at LIMIT $2::int)",
	[ST_AUDIT_INSERT] = "INSERT INTO audit (at_ms, actor, action, job, detail) SELECT " DBNOW
			    ", $1::text, v.action, v.job, v.detail FROM unnest($2::text[], "
			    "$3::text[], $4::text[]) WITH ORDINALITY v(action, job, detail, k) "
			    "ORDER BY v.k",
	[ST_AUDIT_LIST] = "SELECT * FROM (SELECT id, at_ms, actor, action, job, detail FROM audit "
			  "WHERE ($1::text IS NULL OR job = $1::text) AND ($2::bigint < 0 OR at_ms >= "
			  "$2::bigint) ORDER BY id DESC LIMIT CASE WHEN $3::bigint < 0 THEN NULL ELSE "
			  "$3::bigint END) x ORDER BY id",
	[ST_PRUNE_AUDIT] = "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at_ms < "
			   "$1::bigint ORDER BY at_ms LIMIT $2::int)",
};

#endif
