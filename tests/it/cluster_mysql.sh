#!/usr/bin/env bash
# Three nodes on MySQL/MariaDB with kill -9 and SIGSTOP.
source "$(dirname "$0")/cluster_body.bash" mysql
