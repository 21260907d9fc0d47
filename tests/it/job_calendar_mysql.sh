#!/usr/bin/env bash
# job_calendar.sh on MariaDB.
exec bash "$(dirname "$0")/job_calendar.sh" mysql
