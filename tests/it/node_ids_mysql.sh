#!/usr/bin/env bash
# node_ids.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_ids.sh" mysql
