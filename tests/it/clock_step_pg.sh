#!/usr/bin/env bash
# clock_step.sh on PostgreSQL.
exec bash "$(dirname "$0")/clock_step.sh" pg
