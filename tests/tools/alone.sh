#!/usr/bin/env bash
# Runs a test that restarts or stops its database server (the reconnect,
# restart and torture tests) on the second server scripts/test.sh keeps for
# them, so that the restart never cuts off the tests running side by side on
# the shared one; tests/CMakeLists.txt gives them a RESOURCE_LOCK so they
# take that server one at a time.  Without the second server (a test run by
# hand) the test gets the server it was given.
#   tests/tools/alone.sh CMD [ARGS...]
if [ -n "${DBCRON_TEST_PG_ALONE:-}" ]; then
  export DBCRON_TEST_PG=$DBCRON_TEST_PG_ALONE DBCRON_TEST_PGDIR=$DBCRON_TEST_PGDIR_ALONE
fi
if [ -n "${DBCRON_TEST_MYSQL_ALONE:-}" ]; then
  export DBCRON_TEST_MYSQL=$DBCRON_TEST_MYSQL_ALONE DBCRON_TEST_MYSQLDIR=$DBCRON_TEST_MYSQLDIR_ALONE
fi
exec "$@"
