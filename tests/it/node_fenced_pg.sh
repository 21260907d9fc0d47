#!/usr/bin/env bash
# node_fenced.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_fenced.sh" pg
