#!/usr/bin/env bash
# nodes_prune.sh's checks on PostgreSQL: a fresh database on the server of
# DBCRON_TEST_PG, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# nodes_prune_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
NODES_BACKEND=pg exec bash "$(dirname "$0")/nodes_prune.sh"
