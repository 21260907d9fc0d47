#!/usr/bin/env bash
# job_edit.sh's checks on MySQL/MariaDB: fresh databases on the server of
# DBCRON_TEST_MYSQL, dropped at the end.
set -euo pipefail
JOB_EDIT_BACKEND=mysql exec bash "$(dirname "$0")/job_edit.sh"
