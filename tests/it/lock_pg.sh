#!/usr/bin/env bash
# dbcron lock on PostgreSQL.
source "$(dirname "$0")/lock_body.bash" pg
