#!/usr/bin/env bash
# node_order.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_order.sh" mysql
