#!/usr/bin/env bash
# job_cli.sh's checks (every command, bad input of every kind, database
# unchanged after each rejection) on PostgreSQL: a fresh database is created
# on the server of DBCRON_TEST_PG and dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# job_cli_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
JOB_CLI_BACKEND=pg exec bash "$(dirname "$0")/job_cli.sh"
