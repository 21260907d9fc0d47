#!/usr/bin/env bash
# One process per node id (invariant 3, docs/cluster.md "Node ids"): a second
# `dbcron node` under an id whose lease is alive is refused with a clear
# error and changes nothing, while the first keeps running its jobs without
# a single "node lost"; after the first is killed with -9, a restart under
# the same id waits out the dead lease and takes over.  Runs on SQLite or,
# given "pg", on PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

dbc job add tick --every 1s --misfire skip -- sh -c "$RECORD" >/dev/null

start_node same --lease 2s
wait_until 120 grep -q "event=node.start" "$T/node-same.log" || fail "the first node did not start"
wait_until 120 test -s "$T/exec.log" || fail "the first node ran nothing"

# The second process under the same id: refused, non-zero, says why.
rc=0
timeout 60 "$DBCRON_BIN" node --node-id same --lease 2s >"$T/node-second.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a second node under a live id was not refused (exit $rc)"
grep -q "node id 'same' is in use by a live node" "$T/node-second.log" ||
  fail "the refusal does not say why: $(cat "$T/node-second.log")"
pass "a second process under a live node id is refused (exit $rc)"

sleep 2
assert_eq 0 "$(runs_csv | awk -F, '$4 == "abandoned"' | wc -l)" "the first node lost no run to the second"
kill -0 "$(pid_of same)" || fail "the first node died"
pass "the first node keeps running"

# kill -9, then restart under the same id at once: it waits for the dead
# lease to lapse, then registers and runs.
kill -KILL "$(pid_of same)"
before=$(wc -l < "$T/exec.log")
start_node same --lease 2s
wait_until 120 sh -c "[ \$(wc -l < '$T/exec.log') -gt $((before + 2)) ]" ||
  fail "the restarted node under the same id ran nothing"
pass "a restart under the id of a killed node takes over once its lease lapsed"
stop_node same

runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
echo "node_ids: all checks passed"
