#!/usr/bin/env bash
# fleet_caps.sh on PostgreSQL.
exec bash "$(dirname "$0")/fleet_caps.sh" pg
