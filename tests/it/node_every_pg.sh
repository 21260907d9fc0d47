#!/usr/bin/env bash
# node_every.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_every.sh" pg
