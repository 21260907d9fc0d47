#!/usr/bin/env bash
# http_stats.sh's checks (the dashboard's strip, search, stats, field errors,
# create-only PUT, ETags) on PostgreSQL: a fresh database on the server of
# DBCRON_TEST_PG, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# http_stats_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
HTTP_BACKEND=pg exec bash "$(dirname "$0")/http_stats.sh"
