#!/usr/bin/env bash
# node_lockrow.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_lockrow.sh" mysql
