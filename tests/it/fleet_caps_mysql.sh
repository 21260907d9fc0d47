#!/usr/bin/env bash
# fleet_caps.sh on MariaDB.
exec bash "$(dirname "$0")/fleet_caps.sh" mysql
