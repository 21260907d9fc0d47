#!/usr/bin/env bash
# audit.sh's checks (the trail of the CLI's and the HTTP API's changes) on
# MariaDB: a fresh database on the server of DBCRON_TEST_MYSQL, dropped at
# the end.
set -euo pipefail
AUDIT_BACKEND=mysql exec bash "$(dirname "$0")/audit.sh"
