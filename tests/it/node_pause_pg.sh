#!/usr/bin/env bash
# node_pause.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_pause.sh" pg
