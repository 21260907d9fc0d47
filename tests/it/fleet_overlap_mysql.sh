#!/usr/bin/env bash
# fleet_overlap.sh on MariaDB.
exec bash "$(dirname "$0")/fleet_overlap.sh" mysql
