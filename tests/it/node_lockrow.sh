#!/usr/bin/env bash
# The lock-row claim strategy (XXL-JOB's schedule lock, `--claim-strategy
# lock-row`) keeps the same promises as the per-row claim: three nodes
# taking turns on the lock row, one killed with -9 mid-run, and still no
# fire lost and none executed twice beyond the retries of runs lost with
# their node.  Counted from the run log and from what the jobs write.
# SQLite, or given "pg" / "mysql", PostgreSQL / MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

J=20
every_jobs lr $J 1s "" "$RECORD" > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
for n in l1 l2 l3; do start_node "$n" --claim-strategy lock-row; done
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/exec.log' || echo 0) -ge 40 ]" || fail "the jobs did not run"
kill -KILL "$(pid_of l2)"
# until l2 was found dead and its fires taken over, and the others ran on
l2_dead() { [ "$(sql "SELECT state FROM nodes WHERE id = 'l2'")" = dead ]; }
others_ran() { [ "$(awk '$4 == "l1" || $4 == "l3"' "$T/exec.log" | wc -l)" -ge 100 ]; }
wait_until 120 l2_dead || fail "l2 was never found dead"
wait_until 120 others_ran || true
sleep 3 # the last fires check_no_loss counts
end_ms=$(date +%s%3N)
stop_node l1
stop_node l3
runs_csv > "$T/runs.csv"
check_no_loss "$T/runs.csv" lr $J "$end_ms"
check_no_dup_exec "$T/runs.csv"
assert_ge "$(awk '$4 == "l1" || $4 == "l3"' "$T/exec.log" | wc -l)" 100 "the other nodes ran the jobs"
# SQLite's BEGIN IMMEDIATE already makes claimers take turns: no row there
[ "$BACKEND" = sqlite ] ||
  assert_eq 1 "$(sql "SELECT count(*) FROM locks WHERE name = 'dbcron:schedule'")" "the schedule lock row exists"
echo "node_lockrow: all checks passed"
