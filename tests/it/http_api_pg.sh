#!/usr/bin/env bash
# http_api.sh's checks (every endpoint and auth case, bad and oversized
# input, database unchanged after each refusal) on PostgreSQL: a fresh database
# is created on the server of DBCRON_TEST_PG and dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# http_api_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
HTTP_BACKEND=pg exec bash "$(dirname "$0")/http_api.sh"
