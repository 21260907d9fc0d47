#!/usr/bin/env bash
# fleet_priority.sh on PostgreSQL.
exec bash "$(dirname "$0")/fleet_priority.sh" pg
