#!/usr/bin/env bash
# node_stop.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_stop.sh" pg
