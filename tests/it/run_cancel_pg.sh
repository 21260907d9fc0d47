#!/usr/bin/env bash
# The cancel checks on PostgreSQL.
exec bash "$(dirname "$0")/run_cancel.sh" pg
