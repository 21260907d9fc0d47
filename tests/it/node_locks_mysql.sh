#!/usr/bin/env bash
# node_locks.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_locks.sh" mysql
