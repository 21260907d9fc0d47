#!/usr/bin/env bash
# Run every test of one build directory: starts a private PostgreSQL server
# for the tests labelled pg, runs ctest, and stops the server on any exit.
#   scripts/test.sh BUILD_DIR [ctest args...]
set -euo pipefail
build=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
pgdir=$(mktemp -d /tmp/dbcron-pg.XXXXXX)
trap 'bash "$src/scripts/pg-tmp.sh" stop "$pgdir"' EXIT
DBCRON_TEST_PG=$(bash "$src/scripts/pg-tmp.sh" start "$pgdir")
export DBCRON_TEST_PG DBCRON_TEST_PGDIR=$pgdir
echo "test: PostgreSQL at $DBCRON_TEST_PG" >&2
cd "$build"
ctest --output-on-failure -j2 "$@"
