#!/usr/bin/env bash
# handler_routing.sh on PostgreSQL.
exec bash "$(dirname "$0")/handler_routing.sh" pg
