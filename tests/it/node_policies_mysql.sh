#!/usr/bin/env bash
# node_policies.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/node_policies.sh" mysql
