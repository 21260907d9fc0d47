#!/usr/bin/env bash
# SQL jobs (issue 27 item 2, docs/exec.md) against a real node and real
# databases: a statement on the scheduler's own database inserts one row
# per fire; ${param.KEY} values are bound (a value with quotes and a
# semicolon stays text); the output is the rows affected or a header and
# the rows; a failing statement fails and is retried; --timeout ends a
# statement that sleeps TIMED_OUT and stops it on the server; runs cancel
# stops a long statement on the server and ends the run cancelled
# promptly, while the node keeps firing other jobs; --sql-db-file runs on
# another database; bad definitions are refused with nothing written.
# BACKEND (sqlite, pg, mysql) is both the scheduler's database and the
# one the statements run on.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
command -v jq >/dev/null || fail "jq is required (scripts/deps.sh)"

state_of() { dbc runs show "$1" --format json | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
field_of() { dbc runs show "$1" --format json | jq -r ".$2"; }
# JSON, not csv: a server's error spans lines
runs_json() { dbc runs --job "$1" --format json --limit 0; }
newest_run() { runs_json "$1" | jq -r 'max_by(.id).id'; }
newest_in() { runs_json "$1" | jq -r --arg s "$2" 'map(select(.state == $s)) | max_by(.id).id'; }
n_state() { runs_json "$1" | jq --arg s "$2" 'map(select(.state == $s)) | length'; }
n_runs() { runs_json "$1" | jq length; }
has_runs() { [ "$(n_state "$1" "$2")" -ge "$3" ]; }

# A statement that runs until stopped, and one that sleeps $1 seconds.
case $BACKEND in
sqlite)
  LONG='WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c'
  SLEEPY=$LONG ;;
pg)
  LONG='SELECT pg_sleep(60)'
  SLEEPY='SELECT pg_sleep(30)' ;;
mysql)
  LONG='SELECT SLEEP(60)'
  SLEEPY='SELECT SLEEP(30)' ;;
esac
# the statement still on the server (PostgreSQL, MariaDB): 0 once stopped
on_server() {
  case $BACKEND in
  pg) sql "SELECT count(*) FROM pg_stat_activity WHERE query = '$1' AND pid <> pg_backend_pid()" ;;
  mysql) sql "SELECT count(*) FROM information_schema.processlist WHERE info = '$1'" ;;
  *) echo 0 ;;
  esac
}
gone_from_server() { [ "$(on_server "$1")" = 0 ]; }

sql "CREATE TABLE hits (who VARCHAR(200), n INT)"

if t_reference_backend "$BACKEND"; then
  t_section "bad SQL jobs are refused at add, nothing written"
  echo "sqlite:$T/nowhere.db" >"$T/other.url"
  echo "not a url" >"$T/junk.url"
  t_refused "empty statement" job add e --every 1s --sql '  '
  t_refused "--sql with a command" job add e --every 1s --sql 'SELECT 1' -- true
  t_refused "--sql with --handler" job add e --every 1s --sql 'SELECT 1' --handler noop
  t_refused "which the job does not declare" job add e --every 1s --sql 'SELECT ${param.x}'
  t_refused "which the job does not declare" job add e --every 1s --sql 'SELECT ${param.x}' --params y
  t_refused "inside a quoted string" job add e --every 1s --sql "SELECT '\${param.x}'" --params x
  t_refused "malformed placeholder" job add e --every 1s --sql 'SELECT ${param.x-y}' --params x
  t_refused "No such file" job add e --every 1s --sql 'SELECT 1' --sql-db-file "$T/missing.url"
  t_refused "not a database URL" job add e --every 1s --sql 'SELECT 1' --sql-db-file "$T/junk.url"
  # a URL that reaches no database: a SQLite file that is not there, a
  # closed port
  t_refused "its database does not answer" job add e --every 1s --sql 'SELECT 1' \
    --sql-db-file "$T/other.url"
  echo "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2" >"$T/closed.url"
  t_refused "its database does not answer" job add e --every 1s --sql 'SELECT 1' \
    --sql-db-file "$T/closed.url"
  t_refused "expected an absolute path" job add e --every 1s --sql 'SELECT 1' --sql-db-file rel.url
  t_refused "--sql-db-file is only for --sql" job add e --every 1s --sql-db-file "$T/other.url" -- true
  t_refused "--user is only for a command" job add e --every 1s --sql 'SELECT 1' --user root

  t_section "job set and job apply switch between a command and a statement"
  export_of() { dbc job export | jq -c --arg n "$1" '.[] | select(.name == $n) | {command, sql, handler}'; }
  dbc job add sw --at now+1h -- true >/dev/null
  dbc job set sw --sql 'SELECT 1' >/dev/null
  assert_eq '{"command":null,"sql":"SELECT 1","handler":null}' "$(export_of sw)" "set --sql drops the command"
  dbc job set sw -- echo hi >/dev/null
  assert_eq '{"command":["echo","hi"],"sql":null,"handler":null}' "$(export_of sw)" "set -- COMMAND drops the statement"
  echo '[{"name": "ap", "every": "1h", "sql": "SELECT ${param.k}", "params": "k=1"}]' >"$T/ap.json"
  dbc job apply "$T/ap.json" >/dev/null
  assert_eq '{"command":null,"sql":"SELECT ${param.k}","handler":null}' "$(export_of ap)" "job apply takes a sql job"
  echo '[{"name": "ap2", "every": "1h", "sql": "SELECT ${param.k}"}]' >"$T/ap2.json"
  t_refused "which the job does not declare" job apply "$T/ap2.json"
  dbc job delete sw >/dev/null
  dbc job delete ap >/dev/null
fi

t_section "one row per fire on the scheduler's database, parameters bound"
dbc job add ins --every 1s --retries 0 --params who=sched \
  --sql 'INSERT INTO hits (who, n) VALUES (${param.who}, 1)' >/dev/null
dbc job add tricky --at now+1h --retries 0 --params who \
  --sql 'INSERT INTO hits (who, n) VALUES (${param.who}, 2)' >/dev/null
dbc job add sel --at now+1h --retries 0 --sql 'SELECT who, n FROM hits WHERE n = 2' >/dev/null
dbc job add bad --at now+1h --retries 1 --retry-base 1s --sql 'INSERT INTO no_such_table VALUES (1)' >/dev/null
dbc job add slow --at now+1h --retries 0 --timeout 1s --sql "$SLEEPY" >/dev/null
dbc job add hang --at now+1h --retries 2 --retry-base 1s --sql "$LONG" >/dev/null
# trigger refuses a key the job does not declare
t_refused "takes no parameter" job trigger tricky --param whom=x

start_node n1 --heartbeat 300ms
wait_until 60 has_runs ins succeeded 3 || fail "ins: three runs did not succeed"
WEIRD="o'neil\"); DROP TABLE hits; --"
dbc job trigger tricky --param "who=$WEIRD" >/dev/null
wait_until 60 has_runs tricky succeeded 1 || fail "tricky: did not succeed ($(field_of "$(newest_run tricky)" error))"
assert_eq "$WEIRD" "$(sql "SELECT who FROM hits WHERE n = 2")" "the parameter is bound as text, quotes and all"
out=$(field_of "$(newest_in ins succeeded)" output)
assert_eq "1 row affected" "$out" "ins: the output is the count"

t_section "a SELECT's output is a header and its rows"
dbc job trigger sel >/dev/null
wait_until 60 has_runs sel succeeded 1 || fail "sel: did not succeed"
out=$(field_of "$(newest_run sel)" output)
assert_eq "$(printf 'who\tn\n%s\t2\n(1 row)' "$WEIRD")" "$out" "sel: header, the row, the count"

t_section "a failing statement fails and is retried"
dbc job trigger bad >/dev/null
wait_until 60 has_runs bad failed 2 || fail "bad: not failed twice"
assert_contains "$(field_of "$(newest_run bad)" error)" "no_such_table"
assert_eq 2 "$(n_runs bad)" "bad: the first try and one retry"
if t_reference_backend "$BACKEND"; then
  # --no-user-check: the file is only read where the job runs, and missing
  # there it fails the run, naming the file
  dbc job add nf --at now+1h --retries 0 --sql 'SELECT 1' --sql-db-file "$T/missing.url" \
    --no-user-check >/dev/null || fail "nf: refused with --no-user-check"
  dbc job trigger nf >/dev/null
  wait_until 60 has_runs nf failed 1 || fail "nf: did not fail"
  assert_contains "$(field_of "$(newest_run nf)" error)" "sql-db-file '$T/missing.url': No such file"
fi

t_section "--timeout ends the statement TIMED_OUT and stops it on the server"
t0=$(date +%s%N)
dbc job trigger slow >/dev/null
wait_until 60 has_runs slow timed_out 1 || fail "slow: not timed out"
took=$(( ($(date +%s%N) - t0) / 1000000 ))
assert_le "$took" 8000 "slow: timed out soon after its 1 s (took $took ms)"
assert_contains "$(field_of "$(newest_run slow)" error)" "timed out after 1s"
wait_until 10 gone_from_server "$SLEEPY" || fail "slow: the statement still runs on the server"
pass "slow: nothing left on the server"

t_section "runs cancel stops a long statement on the server; other jobs keep firing"
dbc job trigger hang >/dev/null
hang_run=$(newest_run hang)
wait_until 60 is_state "$hang_run" running || fail "hang: not running"
before=$(n_state ins succeeded)
wait_until 30 has_runs ins succeeded $((before + 2)) || fail "ins stopped firing while hang ran"
pass "ins fired on while the statement ran"
t0=$(date +%s%N)
dbc runs cancel "$hang_run" >/dev/null
wait_until 30 is_state "$hang_run" cancelled || fail "hang: not cancelled"
took=$(( ($(date +%s%N) - t0) / 1000000 ))
# a heartbeat (300 ms) to see the request, a poll (50 ms) to act on it
assert_le "$took" 5000 "hang: cancelled promptly (took $took ms)"
wait_until 10 gone_from_server "$LONG" || fail "hang: the statement still runs on the server"
pass "hang: nothing left on the server"
t_pause 1.5 # a retry would be due by now
assert_eq 1 "$(n_runs hang)" "hang: cancelled, never retried"

t_section "--sql-db-file runs the statement on another database"
OTHER=$(t_fresh_url "$BACKEND" other) || fail "no second database"
echo "$OTHER" >"$T/other.url"
t_use_db "$BACKEND" "$OTHER"
sql "CREATE TABLE far (v VARCHAR(20))"
t_use_db "$BACKEND" "$DBCRON_DB"
dbc job add far --at now+1h --retries 0 --params v=x --sql-db-file "$T/other.url" \
  --sql 'INSERT INTO far (v) VALUES (${param.v})' >/dev/null
dbc job trigger far --param v=there >/dev/null
wait_until 60 has_runs far succeeded 1 || fail "far: did not succeed ($(field_of "$(newest_run far)" error))"
t_use_db "$BACKEND" "$OTHER"
assert_eq there "$(sql "SELECT v FROM far")" "far: the row is in the other database"
t_use_db "$BACKEND" "$DBCRON_DB"
assert_not_contains "$(dbc job show far)" "$OTHER" "job show names the file, never the URL"

stop_node n1
fires=$(n_state ins succeeded)
assert_eq "$fires" "$(sql "SELECT count(*) FROM hits WHERE n = 1")" "ins: one row per succeeded fire"
assert_eq 0 "$(n_state ins failed)" "ins: no failed fire"
t_done
