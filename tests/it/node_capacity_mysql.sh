#!/usr/bin/env bash
# node_capacity.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_capacity.sh" mysql
