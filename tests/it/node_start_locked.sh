#!/usr/bin/env bash
# A node that starts while another process holds the SQLite file's write
# lock waits for it, as a running node does, instead of exiting
# (docs/cluster.md "Locks and timeouts").  The lock is held from before the
# node starts for four times the node's busy timeout (half its 2 s lease),
# so the node's first writes fail busy; once the lock is let go the node
# must register and run a job.  SQLite only: one writer for the whole file
# is SQLite's own.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

dbc job add tick --every 1s -- sh -c "$RECORD" >/dev/null
python3 - "${DBCRON_DB#sqlite:}" "$T/held" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(4)
c.execute("COMMIT")
PY
holder=$!
wait_until 120 test -e "$T/held" || fail "could not take the write lock"
start_node n1 --lease 2s --heartbeat 1s
pass "n1 started while the database was locked"
wait "$holder" || fail "the lock holder failed"
pass "held the write lock for 4 s against a 1 s busy timeout"
# Registered (the nodes row) and working (a job ran), or gone.
registered() {
  [ "$("$DBCRON_BIN" nodes --format csv | awk -F, '$1 == "n1" { print $4 }')" = alive ] &&
    grep -qs '^tick ' "$T/exec.log"
}
gone_or_registered() { ! kill -0 "$(pid_of n1)" 2>/dev/null || registered; }
wait_until 120 gone_or_registered || fail "n1 never registered and ran a job"
kill -0 "$(pid_of n1)" 2>/dev/null || fail "n1 exited instead of waiting for the lock"
pass "n1 registered and ran a job after the lock was released"
stop_node n1
echo "node_start_locked: all checks passed"
