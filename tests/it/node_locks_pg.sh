#!/usr/bin/env bash
# node_locks.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_locks.sh" pg
