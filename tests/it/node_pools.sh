#!/usr/bin/env bash
# Claims sized per pool (issue 23 item 5, docs/scheduler.md "Backpressure"):
# a node claims no more of its slow pool's jobs' fires than that pool can
# start, and none while it is saturated, even with fast workers idle, so
# another node runs them.  Node a (4 fast workers, 1 slow) reads 3 s ahead
# and node b 1 s, so a takes every fire first unless it leaves it.  The job
# runs 0.6 s every 500 ms (overlap allow): a demotes it to its slow pool
# after 11 slow runs, and from a's 13th run on, each run on a waits for the
# test's release file, so a's one slow worker stays busy.  From then on a
# may add at most what its slow pool can start in its window (1 + 3000/600
# = 6 fires) to what it held, all due within a few seconds; every later
# fire must be claimed and run by b.  Before the fix a kept claiming them
# (up to its fast pool's 4 x (1 + 3000/600) = 24 fires) and b ran none.
# Counted from the run log and from what the jobs wrote; no time bound is
# asserted.  SQLite or, given "pg" / "mysql", that server.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

script="$RECORD; if [ \"\$DBCRON_NODE\" = a ] && [ \$(grep -c ' a\$' '$T/exec.log') -gt 12 ]; then
  echo \$DBCRON_FIRE_AT_MS >> '$T/hung'; while [ ! -f '$T/release' ]; do sleep 0.1; done
else sleep 0.6; fi"
dbc job add slow --every 500ms --overlap allow -- sh -c "$script" >/dev/null
start_node a --workers 4 --slow-workers 1 --preread 3s
start_node b --workers 4 --preread 1s

wait_until 120 test -s "$T/hung" || fail "node a never reached its 13th run"
hung=$(head -n 1 "$T/hung")
lo=$((hung + 8000)) hi=$((hung + 10000))
# every fire of the window has a row (claimed, by whichever node)
claimed_past() { [ "$(runs_csv --job slow | awk -F, -v hi="$hi" '$2 + 0 >= hi' | wc -l)" -ge 1 ]; }
wait_until 120 claimed_past || fail "no fire at or after $hi was claimed"
runs_csv --job slow > "$T/runs.csv"
by_a=$(awk -F, -v lo="$lo" -v hi="$hi" '$2 + 0 >= lo && $2 + 0 <= hi && $5 == "a"' "$T/runs.csv" | wc -l)
by_b=$(awk -F, -v lo="$lo" -v hi="$hi" '$2 + 0 >= lo && $2 + 0 <= hi && $5 == "b"' "$T/runs.csv" | wc -l)
assert_eq 0 "$by_a" "node a, its slow pool saturated, claimed none of the fires 8-10 s after (b: $by_b)"
assert_eq 5 "$by_b" "node b claimed the five fires 8-10 s after a's slow pool filled"
ran_by_b() { [ "$(awk -v lo="$lo" -v hi="$hi" '$2 >= lo && $2 <= hi && $4 == "b"' "$T/exec.log" | wc -l)" -ge 5 ]; }
wait_until 120 ran_by_b || fail "node b did not run the fires a left"
pass "node b ran the fires node a left"

touch "$T/release"
stop_node a
stop_node b
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
t_done
