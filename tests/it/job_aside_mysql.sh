#!/usr/bin/env bash
# job_aside.sh on MySQL/MariaDB.
exec bash "$(dirname "$0")/job_aside.sh" mysql
