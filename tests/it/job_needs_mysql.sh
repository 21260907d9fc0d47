#!/usr/bin/env bash
# job_needs.sh on MariaDB, with two nodes.
exec bash "$(dirname "$0")/job_needs.sh" mysql
