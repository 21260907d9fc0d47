#!/usr/bin/env bash
# reactions_lost.sh on PostgreSQL.
exec bash "$(dirname "$0")/reactions_lost.sh" pg
