#!/usr/bin/env bash
# The parameter checks on PostgreSQL.
exec bash "$(dirname "$0")/run_params.sh" pg
