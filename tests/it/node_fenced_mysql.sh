#!/usr/bin/env bash
# node_fenced.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_fenced.sh" mysql
