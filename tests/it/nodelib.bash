# Helpers for the node integration tests (sourced), on top of lib.bash:
# nodes started, frozen and killed, the run log read as csv.  Everything a
# check counts comes from the database (`dbcron runs --format csv`) or from
# files the jobs themselves write, never from dbcron's logs.
set -euo pipefail

: "${DBCRON_BIN:?DBCRON_BIN must point at the dbcron binary}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T=$T_DIR
NODE_PIDS=()

# At exit, before lib.bash's cleanup: no node outlives its test (a frozen
# one is continued first so that SIGKILL reaches it at once), and a failed
# test shows the tail of each node's log.
_node_exit() {
  local rc=$1 p f
  for p in "${NODE_PIDS[@]:-}"; do
    [ -n "$p" ] && kill -CONT "$p" 2>/dev/null || true
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
  done
  # the nodes only: a bare wait would also wait for a helper the test
  # started (a receiver, a server) that a later exit function stops
  for p in "${NODE_PIDS[@]:-}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
  if { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; } || [ "$T_FAILS" -gt 0 ]; then
    echo "--- FAILED (rc=$rc); node logs:" >&2
    for f in "$T"/node*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }; done
  fi
}
t_on_exit _node_exit

my_client() {
  local u=${DBCRON_TEST_MYSQL#*://} user host port
  user=${u%%@*}; u=${u#*@}; host=${u%%/*}; port=${host##*:}; host=${host%:*}
  mariadb --no-defaults -u"$user" -h"$host" -P"$port" "$@"
}

# use_backend sqlite|pg|mysql: sets DBCRON_DB to a fresh database (dropped
# at exit), BACKEND, and PGDB or MYDB to the database's name.
use_backend() {
  BACKEND=$1
  DBCRON_DB=$(t_fresh_url "$1" dbcron_it) || fail "no database for backend $1"
  export DBCRON_DB
  # the database's own name, for the server's client
  case "$1" in
  pg) PGDB=${DBCRON_DB##*dbname=} ;;
  mysql) MYDB=${DBCRON_DB##*/} ;;
  esac
  t_use_db "$1" "$DBCRON_DB"
  "$DBCRON_BIN" init >/dev/null
}

# use_private_pg: a PostgreSQL server of the test's own (scripts/pg-tmp.sh),
# for the tests that freeze, stop or reconfigure their server, which the
# shared one must never see; DBCRON_DB points at it, with the schema, and
# PGDIR is its pg-tmp.sh directory.  Stopped (thawed first) at exit.
use_private_pg() {
  PGDIR=$(mktemp -d "/tmp/dbcron-pgpriv.XXXXXX")
  chmod 755 "$PGDIR" # the server runs as its own user
  t_on_exit _private_pg_stop
  DBCRON_DB=$(bash "$DBCRON_SRC/scripts/pg-tmp.sh" start "$PGDIR/srv") || fail "cannot start a private PostgreSQL"
  PGPORT_PRIV=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$DBCRON_DB")
  BACKEND=pg PGDB=postgres
  export DBCRON_DB
  t_use_db pg "$DBCRON_DB"
  "$DBCRON_BIN" init >/dev/null
}
_private_pg_stop() {
  [ -n "${PGDIR:-}" ] || return 0
  pg_thaw
  bash "$DBCRON_SRC/scripts/pg-tmp.sh" stop "$PGDIR/srv" || true
  rm -rf "$PGDIR"
}
# use_private_mysql: the same with a MariaDB server of the test's own
# (scripts/mariadb-tmp.sh); MYDIR is its directory.
use_private_mysql() {
  MYDIR=$(mktemp -d "/tmp/dbcron-mypriv.XXXXXX")
  chmod 755 "$MYDIR" # the server runs as its own user
  t_on_exit _private_mysql_stop
  local url
  url=$(bash "$DBCRON_SRC/scripts/mariadb-tmp.sh" start "$MYDIR/srv") || fail "cannot start a private MariaDB"
  mariadb --no-defaults -uroot --socket="$MYDIR/srv/sock" -e "CREATE DATABASE dbcron_it" ||
    fail "cannot create the test database"
  DBCRON_DB=${url%/*}/dbcron_it
  BACKEND=mysql MYDB=dbcron_it
  export DBCRON_DB
  t_use_db mysql "$DBCRON_DB"
  "$DBCRON_BIN" init >/dev/null
}
_private_mysql_stop() {
  [ -n "${MYDIR:-}" ] || return 0
  bash "$DBCRON_SRC/scripts/mariadb-tmp.sh" stop "$MYDIR/srv" || true
  rm -rf "$MYDIR"
}
# db_outage SECS: the private server (use_private_pg / use_private_mysql)
# stopped, SECS seconds, started again on the same port.
db_outage() {
  case $BACKEND in
  pg) bash "$DBCRON_SRC/scripts/pg-tmp.sh" outage "$PGDIR/srv" "$1" ;;
  mysql) bash "$DBCRON_SRC/scripts/mariadb-tmp.sh" outage "$MYDIR/srv" "$1" ;;
  *) fail "db_outage: no private server" ;;
  esac
}
# pg_freeze / pg_thaw: SIGSTOP / SIGCONT the private server's postmaster and
# every process it started (the postmaster first: it forks no more).
pg_server_pids() {
  local pm
  pm=$(head -n 1 "$PGDIR/srv/data/postmaster.pid" 2>/dev/null) || return 0
  echo "$pm"
  pgrep -P "$pm" || true
}
pg_freeze() { local p; for p in $(pg_server_pids); do kill -STOP "$p" 2>/dev/null || true; done; }
pg_thaw() { local p; for p in $(pg_server_pids); do kill -CONT "$p" 2>/dev/null || true; done; }

# Node tests print what dbcron prints: dbc runs the binary, output on stdout.
dbc() { "$DBCRON_BIN" "$@"; }

# sql QUERY: run it on the test database, rows on stdout ('|' between
# columns). For setting up states no command can make, and for reading what
# none shows.
sql() { dbq "$1"; }

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
  kill -TERM "$(pid_of "$1")" 2>/dev/null || true
  _stop_wait "$1"
}
# stop_nodes NAME...: SIGTERM to all at once, then wait for each as
# stop_node does (their graces run side by side, not one after another)
stop_nodes() {
  local n
  for n in "$@"; do kill -TERM "$(pid_of "$n")" 2>/dev/null || true; done
  for n in "$@"; do _stop_wait "$n"; done
}
_stop_wait() {
  local pid; pid=$(pid_of "$1")
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

# pause_jobs NAME...: `job pause` of each, side by side (one waits about a
# second for the nodes' claims when they are busy), each checked
pause_jobs() {
  local j p pids=()
  for j in "$@"; do dbc job pause "$j" >/dev/null & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || fail "job pause failed"; done
}

# The run log as csv without header: job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code,...
runs_csv() { dbc runs --format csv --limit 0 "$@" | tail -n +2; }
count_runs() { runs_csv "$@" | grep -c . || true; }
# sql-free field access: column N of the runs csv for job J
runs_where() { local job=$1 state=$2; runs_csv --job "$job" | awk -F, -v s="$state" '$4 == s' ; }

# every_jobs PREFIX N EVERY KEYS SCRIPT: a JSON array of N jobs PREFIX-1..N
# running `sh -c SCRIPT` on an `every` schedule; KEYS is extra JSON
# ("overlap": "allow", ...) or empty.  SCRIPT may use the DBCRON_* env.
every_jobs() {
  local prefix=$1 n=$2 every=$3 keys=$4 script=$5
  local esc=${script//\\/\\\\}; esc=${esc//\"/\\\"}
  echo "["
  for i in $(seq 1 "$n"); do
    local sep=,; [ "$i" -eq "$n" ] && sep=
    echo "{\"name\": \"$prefix-$i\", \"every\": \"$every\", ${keys:+$keys, }\"command\": [\"sh\", \"-c\", \"$esc\"]}$sep"
  done
  echo "]"
}

# The jobs append "JOB FIRE_AT_MS ..." to this file: what really ran.
RECORD='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE" >> '"$T/exec.log"

# check_no_loss RUNS_CSV PREFIX N END_MS: every 1 s instant of jobs
# PREFIX-1..N, from each one's first fire to 3 s before END_MS, is a row of
# the run log (a run, or a misfire row whose `missed` count covers it).
# One pass over the file for all N jobs (node_many has 600: an awk each
# cost seconds).
check_no_loss() {
  local csv=$1 prefix=$2 n=$3 end=$4 lost
  lost=$(awk -F, -v p="$prefix" -v n="$n" -v end="$end" '
    BEGIN { for (i = 1; i <= n; i++) want[p "-" i] = 1 }
    ($1 in want) && $3 == 1 {
      for (k = 0; k <= $9; k++) seen[$1, sprintf("%.0f", $2 + 1000 * k)] = 1
      if (!($1 in min) || $2 + 0 < min[$1]) min[$1] = $2 + 0 }
    END {
      bad = 0
      for (i = 1; i <= n; i++) {
        j = p "-" i; l = 0
        if (!(j in min)) { printf "%s has no run at all\n", j > "/dev/stderr"; bad++; continue }
        for (t = min[j]; t < end - 3000; t += 1000)
          if (!((j, sprintf("%.0f", t)) in seen)) { printf "%s lost fire %.0f\n", j, t > "/dev/stderr"; l++ }
        if (l) bad++
      }
      print bad }' "$csv")
  assert_eq "$lost" 0 "no lost fire ($prefix-1..$n)"
}

# check_no_dup_exec RUNS_CSV: no fire executed twice according to
# $T/exec.log, except where the run log shows the first attempt was lost
# with its node (abandoned, retried: at-least-once).
check_no_dup_exec() {
  local csv=$1 unexplained=0 key
  awk '{ print $1 "," $2 }' "$T/exec.log" | sort | uniq -d > "$T/dup_exec"
  while IFS= read -r key; do
    if ! grep -q "^$key,[0-9]*,abandoned" "$csv"; then
      echo "duplicate execution without node loss: $key" >&2
      unexplained=$((unexplained + 1))
    fi
  done < "$T/dup_exec"
  assert_eq "$unexplained" 0 "no duplicate execution (beyond retries of runs lost with their node)"
}
