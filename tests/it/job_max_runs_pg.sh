#!/usr/bin/env bash
# job_max_runs.sh on PostgreSQL.
exec bash "$(dirname "$0")/job_max_runs.sh" pg
