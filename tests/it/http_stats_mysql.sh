#!/usr/bin/env bash
# http_stats.sh's checks (the dashboard's strip, search, stats, field errors,
# create-only PUT, ETags) on MariaDB: a fresh database on the server of
# DBCRON_TEST_MYSQL, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_MYSQL:-}" ]; then
	echo "# http_stats_mysql: skipped: DBCRON_TEST_MYSQL not set (scripts/test.sh starts a server)"
	exit 77
fi
HTTP_BACKEND=mysql exec bash "$(dirname "$0")/http_stats.sh"
