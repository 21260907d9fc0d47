#!/usr/bin/env bash
# The torture test (torture_pg.sh) on MariaDB: three nodes, kill -9, SIGSTOP,
# server restarts, a table lock past the lease, random injected faults.
exec bash "$(dirname "$0")/torture_pg.sh" mysql
