#!/usr/bin/env bash
# node_stop.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_stop.sh" mysql
