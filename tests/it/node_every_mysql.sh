#!/usr/bin/env bash
# node_every.sh on MariaDB.
exec bash "$(dirname "$0")/node_every.sh" mysql
