#!/usr/bin/env bash
# crontab_import.sh's checks on PostgreSQL: a fresh database on the server
# of DBCRON_TEST_PG, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# crontab_import_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
CRONTAB_BACKEND=pg exec bash "$(dirname "$0")/crontab_import.sh"
