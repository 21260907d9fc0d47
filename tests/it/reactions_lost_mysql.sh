#!/usr/bin/env bash
# reactions_lost.sh on MariaDB.
exec bash "$(dirname "$0")/reactions_lost.sh" mysql
