#!/usr/bin/env bash
# job_privilege.sh on PostgreSQL.
exec bash "$(dirname "$0")/job_privilege.sh" pg
