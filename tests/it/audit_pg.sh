#!/usr/bin/env bash
# audit.sh's checks (the trail of the CLI's and the HTTP API's changes) on
# PostgreSQL: a fresh database on the server of DBCRON_TEST_PG, dropped at
# the end.
set -euo pipefail
AUDIT_BACKEND=pg exec bash "$(dirname "$0")/audit.sh"
