#!/usr/bin/env bash
# node_capacity.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_capacity.sh" pg
