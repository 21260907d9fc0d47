#!/usr/bin/env bash
# A node cut off from the database stops the jobs another node will retry
# before that node can start them (docs/scheduler.md "Leases and fencing").
# Node a runs three long jobs: `coop` stops on SIGTERM, `deaf` ignores it
# (only the SIGKILL ends it), both under --node-loss retry; `amo` is
# at-most-once (--node-loss abandon).  Then every statement of node a fails
# from outside (the fault seam, switched on by a file), node b takes the
# runs over, and attempt 2 of each retried job looks, as it starts, whether
# anything of attempt 1 is still alive.  What counts comes from what the
# jobs wrote and from the run log; the waits are hang guards.  Last, a gets
# the database back: it rejoins, and its late writes change nothing.
# SQLite (this is about processes and the lease, not the dialect) or, given
# "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
t_need_fault_seam
use_backend "${1:-sqlite}"

CUT=$T/cut-a # while it exists, every statement of node a fails
HANG=120

# $1: file prefix, $2: 1 to ignore SIGTERM.  Attempt 1 writes its pids and
# runs until stopped; a later attempt checks those pids and ends at once.
cat > "$T/job.sh" <<'SH'
f=$1 deaf=$2
mark() { echo "$1 $DBCRON_ATTEMPT $$ $DBCRON_NODE $(date +%s%N)" >> "$f.marks"; }
if [ "$DBCRON_ATTEMPT" -gt 1 ]; then
  v=clean
  for p in $(cat "$f.pids.1"); do
    if kill -0 "$p" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null; then
      v="overlap:$p"
    fi
  done
  echo "$v" > "$f.verdict.tmp" && mv "$f.verdict.tmp" "$f.verdict"
  mark start
  exit 0
fi
if [ "$deaf" = 1 ]; then
  trap '' TERM
else
  trap 'mark end; exit 143' TERM
fi
sleep 300 &
printf '%s\n%s\n' $$ $! > "$f.pids.tmp" && mv "$f.pids.tmp" "$f.pids.$DBCRON_ATTEMPT"
mark start
wait
mark end
SH

dbc job add coop --at now+2s -- sh "$T/job.sh" "$T/coop" 0 >/dev/null
dbc job add deaf --at now+2s -- sh "$T/job.sh" "$T/deaf" 1 >/dev/null
dbc job add amo --at now+2s --node-loss abandon -- sh "$T/job.sh" "$T/amo" 0 >/dev/null

# The shortest lease that stays honest on a loaded machine: a starts
# nothing 1.5 s after its last renewal and its retried jobs are gone by
# 1.75 s; the lease ends at 2 s, b takes over a heartbeat after that.
DBCRON_TEST_FAULTS="stmt=any,kind=conn,times=0,file=$CUT" start_node a --lease 2s --heartbeat 1s --grace 1s
for j in coop deaf amo; do
  wait_until "$HANG" test -s "$T/$j.pids.1" || fail "$j did not start on a"
done
pass "coop, deaf and amo run on a"
start_node b --lease 2s --heartbeat 1s
wait_until "$HANG" sh -c "'$DBCRON_BIN' nodes --format csv | grep -q '^b,.*,alive,'" ||
  fail "b did not register"
inc_a=$(sql "SELECT incarnation FROM nodes WHERE id = 'a'")

touch "$CUT"
pass "cut node a off the database"
for j in coop deaf; do
  wait_until "$HANG" test -s "$T/$j.verdict" || fail "$j: attempt 2 never started"
done
assert_eq clean "$(cat "$T/coop.verdict")" "coop: attempt 1 was gone when attempt 2 started"
assert_eq clean "$(cat "$T/deaf.verdict")" "deaf (ignores SIGTERM): attempt 1 was gone when attempt 2 started"
for j in coop deaf; do
  assert_eq b "$(awk '$1 == "start" && $2 == 2 { print $4 }' "$T/$j.marks")" "$j: attempt 2 ran on b"
done
# coop saw its SIGTERM and wrote when, on the same host clock as attempt 2.
end1=$(awk '$1 == "end" && $2 == 1 { print $5 }' "$T/coop.marks")
start2=$(awk '$1 == "start" && $2 == 2 { print $5 }' "$T/coop.marks")
[ -n "$end1" ] || fail "coop: attempt 1 never saw SIGTERM"
[ "$end1" -lt "$start2" ] || fail "coop: attempt 1 ended at $end1 ns, after attempt 2 started at $start2 ns"
pass "coop: attempt 1 ended before attempt 2 started"
# At-most-once: nobody runs it again, so a keeps it running.
amo_pid=$(head -n 1 "$T/amo.pids.1")
kill -0 "$amo_pid" 2>/dev/null || fail "amo (--node-loss abandon) was stopped, but nothing retries it"
pass "amo (--node-loss abandon) still runs on a"
wait_until "$HANG" sh -c "[ \"\$('$DBCRON_BIN' runs --job amo --format csv --limit 0 | awk -F, 'NR > 1 { print \$4 }')\" = abandoned ]" ||
  fail "amo: attempt 1 never recorded abandoned"

# The database comes back for a: it was taken over, so it rejoins under a
# new incarnation; its writes of the runs it no longer owns are refused.
rm -f "$CUT"
wait_until "$HANG" sh -c "[ \"\$('$DBCRON_BIN' nodes --format csv | awk -F, '\$1 == \"a\" { print \$4 }')\" = alive ]" ||
  fail "a did not come back"
stop_node a
stop_node b
assert_ne "$inc_a" "$(sql "SELECT incarnation FROM nodes WHERE id = 'a'")" "a rejoined under a new incarnation"

runs_csv > "$T/runs.csv"
for j in coop deaf; do
  assert_eq "1 2" "$(awk -F, -v j="$j" '$1 == j { print $3 }' "$T/runs.csv" | sort -n | tr '\n' ' ' | sed 's/ $//')" \
    "$j: exactly one run per attempt number"
  assert_eq "abandoned,a" "$(awk -F, -v j="$j" '$1 == j && $3 == 1 { print $4 "," $5 }' "$T/runs.csv")" \
    "$j: attempt 1 abandoned on a"
  assert_eq "succeeded,b" "$(awk -F, -v j="$j" '$1 == j && $3 == 2 { print $4 "," $5 }' "$T/runs.csv")" \
    "$j: attempt 2 succeeded on b"
done
assert_eq "1" "$(awk -F, '$1 == "amo" { print $3 }' "$T/runs.csv" | tr '\n' ' ' | sed 's/ $//')" \
  "amo: one attempt, not retried"
# The reap's record stands: a's own late outcome was refused by the fence.
assert_eq 3 "$(sql "SELECT count(*) FROM runs WHERE attempt = 1 AND error LIKE 'node lost%'")" \
  "attempt 1 of each job keeps the reap's record"
echo "node_partition: all checks passed"
