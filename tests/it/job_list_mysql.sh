#!/usr/bin/env bash
# job_list.sh on MySQL/MariaDB: a fresh database on the server of
# DBCRON_TEST_MYSQL.
set -euo pipefail
JOB_LIST_BACKEND=mysql exec bash "$(dirname "$0")/job_list.sh"
