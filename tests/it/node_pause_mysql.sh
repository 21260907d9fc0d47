#!/usr/bin/env bash
# node_pause.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_pause.sh" mysql
