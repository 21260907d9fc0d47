#!/usr/bin/env bash
# config.sh's database-URL part on PostgreSQL: the URL from the
# configuration file, from a URL file it names, from the environment and
# from flags, each level above the next, and a password never shown.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# config_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
CONFIG_BACKEND=pg exec bash "$(dirname "$0")/config.sh"
