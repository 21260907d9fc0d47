#!/usr/bin/env bash
# handler_routing.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/handler_routing.sh" mysql
