#!/usr/bin/env bash
# The row work of a claim protocol's shape, in plain SQL on dbcron's own
# schema (the migrations `dbcron init` runs), one client, batches of 500,
# 100,000 one-shot jobs: what W2 could reach if the node cost nothing
# beyond its statements (issue 30 item 2, docs/benchmarks.md "W2's gap").
#   bench/shapes.sh BACKEND SHAPE
# BACKEND: sqlite, pg (DBCRON_TEST_PG) or mysql (DBCRON_TEST_MYSQL); servers
# with durable commits for a figure that counts (PG_TMP_DURABLE=1
# scripts/pg-tmp.sh, MARIADB_TMP_DURABLE=1 scripts/mariadb-tmp.sh).  SHAPE:
#   now  today's: the claim advances the jobs and inserts their runs in one
#        commit, the run's end (start and finish) is one update of its row;
#   b1   a run row written once: the claim records the fire on the job's own
#        row (claim_node, claim_token, claim_fire_at, columns this script
#        adds), the end inserts the run in its final state.
# Both lock the due jobs as the claim does (FOR UPDATE SKIP LOCKED; on
# MariaDB into a temporary table first, as its limit script; BEGIN IMMEDIATE
# on SQLite) and commit as the node does (SQLite
# with synchronous=NORMAL, as the SQLite limit script).  Prints executions/s
# and, on PostgreSQL, WAL bytes per execution.  It reports; it never fails
# on a figure.
set -euo pipefail
backend=$1 shape=$2 N=100000 B=500
bin=${DBCRON_BIN:-build/bin/dbcron}
T=$(mktemp -d /tmp/dbcron-shapes.XXXXXX)
DB=""
source "$(dirname "$0")/my_client.bash"
cleanup() {
  [ -n "$DB" ] && [ "$backend" = mysql ] && my_client -e "drop database if exists $DB" >/dev/null 2>&1 || true
  [ -n "$DB" ] && [ "$backend" = pg ] && psql "$DBCRON_TEST_PG" -qAt -c "drop database if exists $DB" >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT
case "$shape" in now | b1) ;; *) echo "shape must be now or b1" >&2; exit 2 ;; esac

# the jobs, due one a ms, each column the schema requires
jobs_insert() { # FALSE-LITERAL SERIES-FROM
  echo "INSERT INTO jobs (name, kind, spec, at_ms, misfire, max_catchup, misfire_threshold_ms,
    overlap, node_loss, max_retries, retry_base_ms, retry_cap_ms, executor, handler, paused,
    next_fire_at, created_ms, updated_ms)
    SELECT 'w2-' || x, 3, 'now', 1000000 + x, 0, 100, 5000, 0, 0, 0, 60000, 3600000, 1, 'noop', $1,
    1000000 + x, 1, 1 FROM $2;"
}
# One batch (i) of SHAPE: the claim's transaction, then the run's end.
# NOT-PAUSED: the dialect's "not paused"; LOCK: its row lock clause; BEGIN:
# how its write transaction starts.
batch() { # I NOT-PAUSED LOCK BEGIN
  local i=$1 a=$(($1 * B + 1)) b=$(($1 * B + B))
  local due="SELECT id, next_fire_at FROM jobs WHERE $2 AND next_fire_at IS NOT NULL AND
    next_fire_at <= 2000000 ORDER BY next_fire_at, priority DESC LIMIT $B $3"
  local jobs=jobs pick="WHERE id IN (SELECT id FROM ($due) d)" begin="$4;"
  if [ "$backend" = mysql ]; then # no LIMIT in IN (...): the picked ids in a table, joined
    begin="BEGIN; DELETE FROM c; INSERT INTO c $due;"
    jobs="jobs JOIN c USING (id)" pick=""
  fi
  case $shape in
  now)
    echo "$begin UPDATE $jobs SET next_fire_at = NULL, runs_fired = runs_fired + 0 $pick;
      INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, claim_token,
      missed, created_ms) SELECT x, 'w2-' || x, 1000000 + x, 1, 1, 1000000 + x, 'b1', 't$i', 0,
      2000000 FROM $(series "$a" "$b"); COMMIT;"
    echo "UPDATE runs SET state = 3, started_ms = 2000001, finished_ms = 2000002, exit_code = 0
      WHERE job_id BETWEEN $a AND $b AND attempt = 1 AND claim_token = 't$i' AND node = 'b1' AND state BETWEEN 1 AND 2;"
    ;;
  b1)
    # (claim_fire_at first: MariaDB's SET reads the columns it already set)
    echo "$begin UPDATE $jobs SET claim_fire_at = jobs.next_fire_at, next_fire_at = NULL,
      runs_fired = runs_fired + 0, claim_node = 'b1', claim_token = 't$i' $pick; COMMIT;"
    echo "INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, claim_token,
      started_ms, finished_ms, exit_code, missed, created_ms) SELECT x, 'w2-' || x, 1000000 + x,
      1, 3, 1000000 + x, 'b1', 't$i', 2000001, 2000002, 0, 0, 2000000 FROM $(series "$a" "$b");"
    ;;
  esac
}

case "$backend" in
pg)
  : "${DBCRON_TEST_PG:?bench/shapes.sh pg needs DBCRON_TEST_PG}"
  DB="dbcron_shapes_$$"
  psql "$DBCRON_TEST_PG" -qAt -c "create database $DB" >/dev/null
  url="${DBCRON_TEST_PG/dbname=postgres/dbname=$DB}"
  q() { psql "$url" -X -qAt -v ON_ERROR_STOP=1 "$@"; }
  series() { echo "generate_series($1, $2) x"; }
  DBCRON_DB="$url" "$bin" init >/dev/null
  q -c "$(jobs_insert false "generate_series(1, $N) x")" \
    -c "ALTER TABLE jobs ADD COLUMN claim_node TEXT, ADD COLUMN claim_token TEXT,
        ADD COLUMN claim_fire_at BIGINT" -c "VACUUM ANALYZE" -c "CHECKPOINT"
  for i in $(seq 0 $((N / B - 1))); do batch "$i" "NOT paused" "FOR UPDATE SKIP LOCKED" BEGIN; done >"$T/run.sql"
  l0=$(q -c "select pg_current_wal_lsn()")
  t0=$(date +%s%3N); q -f "$T/run.sql" >/dev/null; t1=$(date +%s%3N)
  l1=$(q -c "select pg_current_wal_lsn()")
  n=$(q -c "select count(*) from runs where state = 3")
  wal=" wal_bytes_per_exec=$(q -c "select pg_wal_lsn_diff('$l1', '$l0')::bigint / greatest($n, 1)")"
  ;;
sqlite)
  db="$T/shapes.db"
  q() { sqlite3 -batch "$db" "$@"; }
  series() { echo "(WITH RECURSIVE s(x) AS (SELECT $1 UNION ALL SELECT x + 1 FROM s WHERE x < $2) SELECT x FROM s)"; }
  DBCRON_DB="sqlite:$db" "$bin" init >/dev/null
  q "$(jobs_insert 0 "$(series 1 "$N")")" \
    "ALTER TABLE jobs ADD COLUMN claim_node TEXT" "ALTER TABLE jobs ADD COLUMN claim_token TEXT" \
    "ALTER TABLE jobs ADD COLUMN claim_fire_at INTEGER" "ANALYZE"
  { echo "PRAGMA synchronous=NORMAL;"
    for i in $(seq 0 $((N / B - 1))); do batch "$i" "paused = 0" "" "BEGIN IMMEDIATE"; done; } >"$T/run.sql"
  t0=$(date +%s%3N); q <"$T/run.sql" >/dev/null; t1=$(date +%s%3N)
  n=$(q "select count(*) from runs where state = 3")
  wal=""
  ;;
mysql)
  : "${DBCRON_TEST_MYSQL:?bench/shapes.sh mysql needs DBCRON_TEST_MYSQL}"
  DB="dbcron_shapes_$$"
  my_client -e "create database $DB"
  q() { my_client -N "$DB" "$@"; }
  series() { echo "(SELECT seq AS x FROM seq_$1_to_$2) s"; }
  DBCRON_DB="${DBCRON_TEST_MYSQL%/*}/$DB" "$bin" init >/dev/null
  # || as in the other dialects: a text concatenation
  pipes="SET SESSION sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT');"
  q -e "$pipes $(jobs_insert 0 "$(series 1 "$N")")
    ALTER TABLE jobs ADD COLUMN claim_node VARCHAR(320), ADD COLUMN claim_token VARCHAR(64),
    ADD COLUMN claim_fire_at BIGINT; ANALYZE TABLE jobs, runs;" >/dev/null
  { echo "$pipes SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"
    echo "CREATE TEMPORARY TABLE c (id BIGINT PRIMARY KEY, nf BIGINT);"
    for i in $(seq 0 $((N / B - 1))); do batch "$i" "paused = 0" "FOR UPDATE SKIP LOCKED" ""; done; } >"$T/run.sql"
  t0=$(date +%s%3N); q <"$T/run.sql" >/dev/null; t1=$(date +%s%3N)
  n=$(q -e "select count(*) from runs where state = 3")
  wal=""
  ;;
*) echo "backend must be sqlite, pg or mysql" >&2; exit 2 ;;
esac
ms=$((t1 - t0))
echo "shape=$shape backend=$backend executions=$n ms=$ms exec_per_s=$((n * 1000 / (ms > 0 ? ms : 1)))$wal"
