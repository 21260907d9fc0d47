#!/usr/bin/env bash
# dbcron lock on MySQL/MariaDB.
source "$(dirname "$0")/lock_body.bash" mysql
