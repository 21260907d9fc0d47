#!/usr/bin/env bash
# dbcron lock on SQLite.
source "$(dirname "$0")/lock_body.bash" sqlite
