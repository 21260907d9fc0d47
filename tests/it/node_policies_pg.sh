#!/usr/bin/env bash
# The single-node policy checks on PostgreSQL.
exec bash "$(dirname "$0")/node_policies.sh" pg
