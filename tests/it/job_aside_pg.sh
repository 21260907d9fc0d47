#!/usr/bin/env bash
# job_aside.sh on PostgreSQL.
exec bash "$(dirname "$0")/job_aside.sh" pg
