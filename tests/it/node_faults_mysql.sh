#!/usr/bin/env bash
# node_faults.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_faults.sh" mysql
