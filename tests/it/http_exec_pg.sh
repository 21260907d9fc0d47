#!/usr/bin/env bash
# The HTTP executor's claim/run path on PostgreSQL.
exec bash "$(dirname "$0")/http_exec.sh" pg
