#!/usr/bin/env bash
# job_backfill.sh on PostgreSQL.
exec bash "$(dirname "$0")/job_backfill.sh" pg
