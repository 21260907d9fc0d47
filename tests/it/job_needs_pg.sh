#!/usr/bin/env bash
# job_needs.sh on PostgreSQL, with two nodes.
exec bash "$(dirname "$0")/job_needs.sh" pg
