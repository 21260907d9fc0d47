#!/usr/bin/env bash
# The cancel checks on MariaDB.
exec bash "$(dirname "$0")/run_cancel.sh" mysql
