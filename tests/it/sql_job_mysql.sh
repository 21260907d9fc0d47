#!/usr/bin/env bash
# The SQL job checks on MariaDB.
exec bash "$(dirname "$0")/sql_job.sh" mysql
