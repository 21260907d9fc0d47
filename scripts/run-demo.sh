#!/usr/bin/env bash
# `make run`: create ./dbcron.db with a few example jobs (idempotent: jobs are
# applied by name) and run one node in the foreground, logging every run.
# Stop it with Ctrl-C.  Runs are in the database: `dbcron runs`.
set -euo pipefail
bin=${1:-build/bin/dbcron}
src=$(cd "$(dirname "$0")/.." && pwd)
export DBCRON_DB=${DBCRON_DB:-sqlite:./dbcron.db}
"$bin" init
"$bin" job apply "$src/examples/jobs.json"
"$bin" job list
echo
echo "starting a node on $DBCRON_DB (Ctrl-C stops it; then try: $bin runs)"
exec "$bin" node --log-runs
