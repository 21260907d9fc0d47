#!/usr/bin/env bash
# Three nodes on one SQLite file with kill -9 and SIGSTOP.
source "$(dirname "$0")/cluster_body.bash" sqlite
