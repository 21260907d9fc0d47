# Helpers for the node integration tests (sourced).  Everything a check
# counts comes from the database (`dbcron runs --format csv`) or from files
# the jobs themselves write, never from dbcron's logs.
set -euo pipefail

: "${DBCRON_BIN:?DBCRON_BIN must point at the dbcron binary}"
T=$(mktemp -d /tmp/dbcron-it.XXXXXX)
NODE_PIDS=()
PGDB=""

cleanup() {
  local rc=$?
  for p in "${NODE_PIDS[@]:-}"; do
    [ -n "$p" ] && kill -CONT "$p" 2>/dev/null || true
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ -n "$PGDB" ]; then
    psql "$DBCRON_TEST_PG" -qAt -c "drop database if exists $PGDB with (force)" >/dev/null 2>&1 || true
  fi
  if [ $rc -ne 0 ]; then
    echo "--- FAILED (rc=$rc); node logs:" >&2
    for f in "$T"/node*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }; done
  fi
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }
assert_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; pass "$3"; }
assert_ge() { [ "$1" -ge "$2" ] || fail "$3: expected >= $2, got $1"; pass "$3 ($1 >= $2)"; }
assert_le() { [ "$1" -le "$2" ] || fail "$3: expected <= $2, got $1"; pass "$3 ($1 <= $2)"; }

# use_backend sqlite|pg: sets DBCRON_DB to a fresh database.
use_backend() {
  case "$1" in
  sqlite) export DBCRON_DB="sqlite:$T/dbcron.db" ;;
  pg)
    : "${DBCRON_TEST_PG:?DBCRON_TEST_PG (a libpq conninfo) is required for PostgreSQL tests}"
    PGDB="dbcron_it_$$_$RANDOM"
    psql "$DBCRON_TEST_PG" -qAt -c "create database $PGDB" >/dev/null
    export DBCRON_DB="${DBCRON_TEST_PG/dbname=postgres/dbname=$PGDB}"
    ;;
  *) fail "unknown backend $1" ;;
  esac
  "$DBCRON_BIN" init >/dev/null
}

dbc() { "$DBCRON_BIN" "$@"; }

# start_node NAME [flags...]: a node in the background, log in $T/node-NAME.log
start_node() {
  local name=$1; shift
  "$DBCRON_BIN" node --node-id "$name" "$@" >"$T/node-$name.log" 2>&1 &
  NODE_PIDS+=($!)
  eval "PID_${name//-/_}=$!"
}
pid_of() { local v="PID_${1//-/_}"; echo "${!v}"; }

# stop_node NAME: SIGTERM and wait (graceful stop must finish)
stop_node() {
  local pid; pid=$(pid_of "$1")
  kill -TERM "$pid" 2>/dev/null || true
  local i=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1; i=$((i + 1))
    [ $i -lt 600 ] || fail "node $1 did not stop within 60 s of SIGTERM"
  done
  local rc=0
  wait "$pid" 2>/dev/null || rc=$?
  # a graceful stop exits 0; anything else (a sanitizer report, a crash) fails
  [ "$rc" -eq 0 ] || fail "node $1 exited with status $rc after SIGTERM"
}

# The run log as csv without header: job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code,...
runs_csv() { dbc runs --format csv --limit 0 "$@" | tail -n +2; }
count_runs() { runs_csv "$@" | grep -c . || true; }
# sql-free field access: column N of the runs csv for job J
runs_where() { local job=$1 state=$2; runs_csv --job "$job" | awk -F, -v s="$state" '$4 == s' ; }

# wait_for SECONDS CMD...: poll until CMD succeeds
wait_for() {
  local secs=$1; shift
  local end=$(( $(date +%s) + secs ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.2
  done
}
