#!/usr/bin/env bash
# reactions.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/reactions.sh" mysql
