#!/usr/bin/env bash
# job_cli.sh's checks on MySQL/MariaDB: a fresh database on the server of
# DBCRON_TEST_MYSQL, dropped at the end.
set -euo pipefail
JOB_CLI_BACKEND=mysql exec bash "$(dirname "$0")/job_cli.sh"
