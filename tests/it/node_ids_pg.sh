#!/usr/bin/env bash
# node_ids.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_ids.sh" pg
