#!/usr/bin/env bash
# nodes_prune.sh's checks on MariaDB: a fresh database on the server of
# DBCRON_TEST_MYSQL, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_MYSQL:-}" ]; then
	echo "# nodes_prune_mysql: skipped: DBCRON_TEST_MYSQL not set (scripts/test.sh starts a server)"
	exit 77
fi
NODES_BACKEND=mysql exec bash "$(dirname "$0")/nodes_prune.sh"
