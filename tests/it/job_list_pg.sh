#!/usr/bin/env bash
# job_list.sh on PostgreSQL: a fresh database on the server of DBCRON_TEST_PG.
set -euo pipefail
JOB_LIST_BACKEND=pg exec bash "$(dirname "$0")/job_list.sh"
