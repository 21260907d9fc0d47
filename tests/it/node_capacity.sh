#!/usr/bin/env bash
# A node claims only what its free workers can start by the fire time
# (docs/scheduler.md "Backpressure"): two nodes of one worker each and six
# 2-second jobs due at one instant share the six, instead of one node
# queueing all six behind its single worker while the other idles (the
# last one started 10 s late; shared, 4 s).  Who ran what comes from what
# the jobs write.  SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

start_node c1 --workers 1
start_node c2 --workers 1
wait_until 120 sh -c "[ \$(\"\$DBCRON_BIN\" nodes 2>/dev/null | grep -c alive) -ge 2 ]" || fail "nodes did not start"

at=$(( $(date +%s) + 4 ))
for i in 1 2 3 4 5 6; do
  dbc job add "long$i" --at "$at" -- sh -c "$RECORD; sleep 2" >/dev/null
done
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/exec.log' || echo 0) -ge 6 ]" || fail "the six jobs did not all run"
stop_node c1
stop_node c2

c1=$(awk '$4 == "c1"' "$T/exec.log" | wc -l)
c2=$(awk '$4 == "c2"' "$T/exec.log" | wc -l)
assert_eq 6 "$((c1 + c2))" "each of the six ran once"
assert_ge "$c1" 2 "node c1 ran its share (c1=$c1 c2=$c2)"
assert_ge "$c2" 2 "node c2 ran its share (c1=$c1 c2=$c2)"
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
