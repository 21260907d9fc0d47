#!/usr/bin/env bash
# The database away for longer than the lease, on PostgreSQL (outage_body.bash).
source "$(dirname "$0")/outage_body.bash" pg
