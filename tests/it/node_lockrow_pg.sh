#!/usr/bin/env bash
# node_lockrow.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_lockrow.sh" pg
