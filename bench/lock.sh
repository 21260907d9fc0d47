#!/usr/bin/env bash
# Lease lock benchmark on SQLite and, when DBCRON_TEST_PG is set, PostgreSQL.
set -euo pipefail
build=${1:-build}
T=$(mktemp -d /tmp/dbcron-lockbench.XXXXXX)
trap 'rm -rf "$T"; [ -n "${PGDB:-}" ] && psql "$DBCRON_TEST_PG" -qAt -c "drop database if exists $PGDB with (force)" >/dev/null 2>&1 || true' EXIT
echo "-- sqlite"
"$build/bin/dbcron" init --db "sqlite:$T/l.db" >/dev/null
"$build/bench/bench_lock" "sqlite:$T/l.db" "${SECONDS_PER_CASE:-10}"
if [ -n "${DBCRON_TEST_PG:-}" ]; then
  echo "-- postgresql"
  PGDB="dbcron_lockbench_$$"
  psql "$DBCRON_TEST_PG" -qAt -c "create database $PGDB" >/dev/null
  url="${DBCRON_TEST_PG/dbname=postgres/dbname=$PGDB}"
  "$build/bin/dbcron" init --db "$url" >/dev/null
  "$build/bench/bench_lock" "$url" "${SECONDS_PER_CASE:-10}"
fi
