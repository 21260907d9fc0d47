#!/usr/bin/env bash
# The parameter checks on MariaDB.
exec bash "$(dirname "$0")/run_params.sh" mysql
