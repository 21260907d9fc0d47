#!/usr/bin/env bash
# job_edit.sh's checks (job set/rename/export, apply --dry-run, runs show,
# the order of runs, runs --follow) on PostgreSQL: fresh databases on the
# server of DBCRON_TEST_PG, dropped at the end.
set -euo pipefail
if [ -z "${DBCRON_TEST_PG:-}" ]; then
	echo "# job_edit_pg: skipped: DBCRON_TEST_PG not set (scripts/test.sh starts a server)"
	exit 77
fi
JOB_EDIT_BACKEND=pg exec bash "$(dirname "$0")/job_edit.sh"
