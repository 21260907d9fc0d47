#!/usr/bin/env bash
# `make bench`: every benchmark, figures to stdout.  Starts a private
# PostgreSQL server for the pg figures and a private MariaDB server for the
# mysql ones.  Takes about 40 minutes.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
export DBCRON_BIN="$build/bin/dbcron"
echo "== cron engine"; "$build/bench/bench_cron"
echo "== shell runs (guards in dbcron-guard, then forked)"
DBCRON_GUARD="$build/bin/dbcron-guard" "$build/bench/bench_shell" 2000 0
DBCRON_GUARD=fork "$build/bench/bench_shell" 2000 0
pgdir=$(mktemp -d /tmp/dbcron-pgbench.XXXXXX)
mydir=$(mktemp -d /tmp/dbcron-mybench.XXXXXX)
trap 'bash "$src/scripts/pg-tmp.sh" stop "$pgdir"; bash "$src/scripts/mariadb-tmp.sh" stop "$mydir"' EXIT
DBCRON_TEST_PG=$(bash "$src/scripts/pg-tmp.sh" start "$pgdir"); export DBCRON_TEST_PG
DBCRON_TEST_MYSQL=$(bash "$src/scripts/mariadb-tmp.sh" start "$mydir"); export DBCRON_TEST_MYSQL
for b in sqlite pg mysql; do
  for j in 100 1000 5000; do
    for n in 1 3; do bash "$src/bench/sched.sh" w1 $b $j $n 60; done
  done
  W1_SHELL=1 bash "$src/bench/sched.sh" w1 $b 200 1 60
  bash "$src/bench/sched.sh" w2 $b 100000 1
  [ $b != sqlite ] && bash "$src/bench/sched.sh" w2 $b 100000 3
  [ $b != sqlite ] && bash "$src/bench/sched.sh" w3 $b
done
if [ -x "$build/bench/bench_lock" ]; then echo "== lease locks"; bash "$src/bench/lock.sh" "$build"; fi
echo "== webhook reactions (one node, SQLite, a local receiver)"; bash "$src/bench/react.sh" 10000
