#!/usr/bin/env bash
# node_faults.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_faults.sh" pg
