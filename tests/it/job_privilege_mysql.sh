#!/usr/bin/env bash
# job_privilege.sh on MySQL/MariaDB (the node logs in with MYSQL_PWD).
exec bash "$(dirname "$0")/job_privilege.sh" mysql
