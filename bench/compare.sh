#!/usr/bin/env bash
# `make bench-compare`: the whole comparison of issue 30 in one session.
# Starts a private PostgreSQL and a private MariaDB with durable commits
# (fsync and synchronous commit on, InnoDB's redo flushed at each commit),
# runs the limit scripts of bench/limits (the floor of row work per
# execution, plain SQL, no scheduler) and W2 with as many clients as nodes
# on all three backends, then W1 on PostgreSQL, and prints the ratio table;
# beside it, bench/shapes.sh's row work of the claim's shapes on dbcron's
# own schema (1 client).
#   bench/compare.sh [BUILD]
# COMPARE_REPEAT=N runs each figure N times and keeps the median (default 1);
# COMPARE_W1="1000 5000" the W1 job counts (3 nodes, 60 s; "" for none).
# SQLite: the limit script commits with synchronous=NORMAL, so W2 runs with
# SQLITE_SYNC=normal to do the same durability work; the default (FULL) is
# printed beside it.  It reports; it never fails on a figure.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
export DBCRON_BIN="$build/bin/dbcron"
reps=${COMPARE_REPEAT:-1}
w1_jobs=${COMPARE_W1-1000 5000}
T=$(mktemp -d /tmp/dbcron-compare.XXXXXX)
# the servers' own directories: as root they run as postgres and mysql
pgdir=$(mktemp -d /tmp/dbcron-cmppg.XXXXXX) mydir=$(mktemp -d /tmp/dbcron-cmpmy.XXXXXX)
cleanup() {
  bash "$src/scripts/pg-tmp.sh" stop "$pgdir" 2>/dev/null || true
  bash "$src/scripts/mariadb-tmp.sh" stop "$mydir" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
DBCRON_TEST_PG=$(PG_TMP_DURABLE=1 bash "$src/scripts/pg-tmp.sh" start "$pgdir")
DBCRON_TEST_MYSQL=$(MARIADB_TMP_DURABLE=1 bash "$src/scripts/mariadb-tmp.sh" start "$mydir")
export DBCRON_TEST_PG DBCRON_TEST_MYSQL
pg_port=${DBCRON_TEST_PG#*port=}; pg_port=${pg_port%% *}
my_port=${DBCRON_TEST_MYSQL##*:}; my_port=${my_port%%/*}
psql "$DBCRON_TEST_PG" -qAt -c "create database scratch" >/dev/null
mariadb --no-defaults -uroot -h127.0.0.1 -P"$my_port" -e "create database scratch"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
# the last number before "/s" in a limit script's line
per_s() { grep -o '= [0-9]*/s' | tr -dc '0-9'; }
limit() { # BACKEND CLIENTS -> executions/s
  case $1 in
  pg) LIMIT_PG="-h $pgdir -p $pg_port -U postgres -d scratch" bash "$src/bench/limits/pg_limit3.sh" "$2" | per_s ;;
  mysql) LIMIT_MARIA="-uroot -h127.0.0.1 -P$my_port scratch" bash "$src/bench/limits/maria_limit3.sh" "$2" | per_s ;;
  sqlite)
    local db=$T/limit.db t0 t1 n
    rm -f "$db"*
    sed -n '1,/^\.timer on/p' "$src/bench/limits/sqlite_limit.sql" | grep -v '^\.timer' | sqlite3 "$db" >/dev/null
    t0=$(date +%s%3N)
    n=$({ echo "PRAGMA synchronous=NORMAL;"; sed '1,/^\.timer on/d' "$src/bench/limits/sqlite_limit.sql" |
          grep -v "^SELECT strftime"; } | sqlite3 "$db" | awk -F'|' '$1 == "end" { print $2 }')
    t1=$(date +%s%3N)
    echo $(( n * 1000 / (t1 - t0) )) ;;
  esac
}
w2() { # BACKEND NODES [ENV...] -> executions/s
  local b=$1 n=$2; shift 2
  env "$@" bash "$src/bench/sched.sh" w2 "$b" 100000 "$n" | tee -a "$T/w2.log" | grep -o 'exec_per_s=[0-9]*' | cut -d= -f2
}
rep() { local i; for i in $(seq 1 "$reps"); do "$@"; done | median; }
shape() { # BACKEND SHAPE -> executions/s of bench/shapes.sh
  bash "$src/bench/shapes.sh" "$1" "$2" | grep -o 'exec_per_s=[0-9]*' | cut -d= -f2
}

rows=() shapes=()
for cfg in "sqlite 1" "pg 1" "pg 3" "mysql 1" "mysql 3"; do
  set -- $cfg
  l=$(rep limit "$1" "$2")
  if [ "$1" = sqlite ]; then
    w=$(rep w2 "$1" "$2" SQLITE_SYNC=normal)
    full=$(rep w2 "$1" "$2")
    extra=" (synchronous=FULL: $full/s)"
  else
    w=$(rep w2 "$1" "$2"); extra=""
  fi
  ratio=$(awk -v w="$w" -v l="$l" 'BEGIN { printf "%.2f", l ? w / l : 0 }')
  rows+=("| W2 100k one-shot, $1, $2 node(s) / $2 client(s) | ${l}/s | ${w}/s$extra | ${ratio}x |")
  echo "${rows[-1]}" >&2
  # one client: the row work of today's claim shape and of a run written once
  if [ "$2" = 1 ]; then
    now=$(rep shape "$1" now) b1=$(rep shape "$1" b1)
    shapes+=("| $1 | ${l}/s | ${now}/s | ${b1}/s | ${w}/s |")
  fi
done
echo
echo "Durable commits; $reps run(s) each, median; $(nproc) cores; $(date -u +%F)."
echo
echo "| workload | limit script | dbcron | ratio |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "The row work alone, 1 client (bench/shapes.sh): today's shape, a run written once (b1)"
echo
echo "| backend | limit script | today's shape | b1 | W2, 1 node |"
echo "|---|---|---|---|---|"
printf '%s\n' "${shapes[@]}"
for j in $w1_jobs; do
  echo
  bash "$src/bench/sched.sh" w1 pg "$j" 3 60
done
