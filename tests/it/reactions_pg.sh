#!/usr/bin/env bash
# reactions.sh on PostgreSQL.
exec bash "$(dirname "$0")/reactions.sh" pg
