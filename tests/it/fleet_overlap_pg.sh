#!/usr/bin/env bash
# fleet_overlap.sh on PostgreSQL.
exec bash "$(dirname "$0")/fleet_overlap.sh" pg
