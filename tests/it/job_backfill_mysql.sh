#!/usr/bin/env bash
# job_backfill.sh on MariaDB.
exec bash "$(dirname "$0")/job_backfill.sh" mysql
