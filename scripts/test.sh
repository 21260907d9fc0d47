#!/usr/bin/env bash
# Run the tests of one build directory side by side: starts the private
# PostgreSQL and MariaDB servers the selected tests need (none for a
# selection that needs none, e.g. -L threads), runs ctest -j, stops the
# servers on any exit, and prints the 15 slowest tests.
#   scripts/test.sh BUILD_DIR [ctest args...]
# DBCRON_TEST_JOBS (default 4) is ctest's -j: the tests mostly wait on
# nodes, servers and child processes, so more run at once than there are
# cores.  docs/testing.md gives the time budget.
set -euo pipefail
build=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
source "$src/scripts/servers.bash"
trap servers_stop EXIT
servers_start "$build" 1 "$@"
cd "$build"
# The durations of an earlier run let ctest start the longest tests first;
# a fresh build dir starts from the kept ones (tests/ctest-costs.txt).
costs=Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ] && [ -f "$src/tests/ctest-costs.txt" ]; then
  mkdir -p Testing/Temporary && cp "$src/tests/ctest-costs.txt" "$costs"
fi
rc=0
# (the listings below read to the end: under pipefail, a head that exits
# early kills sort with SIGPIPE, and make saw exit 141 after a green run)
# each test writes the CPU time it cost here (tests/tools/cputime.sh)
export DBCRON_TEST_CPU_DIR=$PWD/Testing/cpu
rm -rf "$DBCRON_TEST_CPU_DIR" && mkdir -p "$DBCRON_TEST_CPU_DIR"
ctest --output-on-failure -j"${DBCRON_TEST_JOBS:-4}" "$@" || rc=$?
if [ -f Testing/Temporary/LastTest.log ]; then
  echo "The 15 slowest tests of this run (seconds):"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
       /^Test time = / { printf "%8.1f  %s\n", $4, name }' Testing/Temporary/LastTest.log |
    sort -rn | awk 'NR <= 15'
fi
if compgen -G "$DBCRON_TEST_CPU_DIR/*" >/dev/null; then
  # on two cores the budget is CPU time over two, whatever the order
  echo "The 15 tests that cost the most CPU (seconds, user + system, the servers not counted):"
  cat "$DBCRON_TEST_CPU_DIR"/* | sort -rn | awk 'NR <= 15 { printf "%8.1f  %s\n", $1, $2 }'
  cat "$DBCRON_TEST_CPU_DIR"/* | awk '{ s += $1 } END { printf "%8.1f  all %d tests\n", s, NR }'
fi
exit "$rc"
