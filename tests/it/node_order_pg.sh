#!/usr/bin/env bash
# node_order.sh on PostgreSQL.
exec bash "$(dirname "$0")/node_order.sh" pg
