#!/usr/bin/env bash
# job_calendar.sh on PostgreSQL.
exec bash "$(dirname "$0")/job_calendar.sh" pg
