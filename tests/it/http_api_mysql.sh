#!/usr/bin/env bash
# http_api.sh's checks (every endpoint and auth case, bad and oversized
# input, database unchanged after each refusal) on MariaDB: a fresh database
# is created on the server of DBCRON_TEST_MYSQL and dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_MYSQL:-}" ]; then
	echo "# http_api_mysql: skipped: DBCRON_TEST_MYSQL not set (scripts/test.sh starts a server)"
	exit 77
fi
HTTP_BACKEND=mysql exec bash "$(dirname "$0")/http_api.sh"
