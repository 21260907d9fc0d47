#!/usr/bin/env bash
# Run every test of one build directory: starts a private PostgreSQL server
# for the tests labelled pg and a private MariaDB server for those labelled
# mysql, runs ctest, and stops both on any exit.
#   scripts/test.sh BUILD_DIR [ctest args...]
set -euo pipefail
build=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
pgdir=$(mktemp -d /tmp/dbcron-pg.XXXXXX)
mydir=$(mktemp -d /tmp/dbcron-my.XXXXXX)
trap 'bash "$src/scripts/pg-tmp.sh" stop "$pgdir"; bash "$src/scripts/mariadb-tmp.sh" stop "$mydir"' EXIT
DBCRON_TEST_PG=$(bash "$src/scripts/pg-tmp.sh" start "$pgdir")
export DBCRON_TEST_PG DBCRON_TEST_PGDIR=$pgdir
echo "test: PostgreSQL at $DBCRON_TEST_PG" >&2
DBCRON_TEST_MYSQL=$(bash "$src/scripts/mariadb-tmp.sh" start "$mydir")
export DBCRON_TEST_MYSQL DBCRON_TEST_MYSQLDIR=$mydir
echo "test: MariaDB at $DBCRON_TEST_MYSQL" >&2
cd "$build"
ctest --output-on-failure -j2 "$@"
