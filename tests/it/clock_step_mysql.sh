#!/usr/bin/env bash
# clock_step.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/clock_step.sh" mysql
