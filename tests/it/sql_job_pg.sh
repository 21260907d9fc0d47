#!/usr/bin/env bash
# The SQL job checks on PostgreSQL.
exec bash "$(dirname "$0")/sql_job.sh" pg
