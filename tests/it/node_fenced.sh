#!/usr/bin/env bash
# A fenced node starts nothing it had claimed (docs/scheduler.md "Leases and
# fencing"): node a has one worker, busy with a slow job, so fires of another
# job wait in its pool's queue; a is frozen (SIGSTOP) past its lease, b takes
# over, a is continued.  No fire a had claimed before the freeze may start on
# a after it is continued, and no fire runs twice without an ABANDONED first
# attempt in the run log.  Executions come from what the jobs write.
# SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

rec='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE $(date +%s%3N)" >> '"$T/exec.log"
dbc job add blocker --every 2s --misfire skip --overlap allow -- sh -c "$rec; sleep 1.8" >/dev/null
dbc job add q --every 1s --misfire skip --overlap allow -- sh -c "$rec" >/dev/null

start_node a --workers 1 --lease 3s
wait_until 120 sh -c "grep -q '^q .* a ' '$T/exec.log' 2>/dev/null" || fail "a ran nothing"
sleep 3
# On SQLite a process frozen inside a write transaction keeps the file
# locked for every node, so nobody could take over until it runs again (a
# node started then exits "database is locked"): freeze a between its
# transactions, seen by taking and dropping the write lock from outside.
frozen_between() {
  kill -STOP "$(pid_of a)"
  [ "$BACKEND" != sqlite ] && return 0
  sqlite3 -cmd ".timeout 300" "${DBCRON_DB#sqlite:}" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1 && return 0
  kill -CONT "$(pid_of a)"
  sleep 0.1
  return 1
}
wait_until 120 frozen_between || fail "could not freeze a between its transactions"
pass "froze a"
start_node b --lease 3s
wait_until 120 sh -c "grep -q ' b [0-9]*$' '$T/exec.log' 2>/dev/null" || fail "b took nothing over"
sleep 4
cont_at=$(date +%s%3N)
kill -CONT "$(pid_of a)"
pass "continued a"
sleep 6
stop_node a
stop_node b

# On a after it was continued: only fires claimed after its rejoin, whose
# instants are at or after the moment it was continued.
stale=$(awk -v c="$cont_at" '$4 == "a" && $5 >= c && $2 < c - 1000' "$T/exec.log" | wc -l)
assert_eq 0 "$stale" "a started none of the fires it had claimed before it was fenced"
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
echo "node_fenced: all checks passed"
