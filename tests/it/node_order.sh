#!/usr/bin/env bash
# Order is kept (docs/scheduler.md "Order"): runs of one job that are due
# at the same instant start oldest fire first, whatever order the claim's
# UPDATE ... RETURNING gave them in.  That is the shape of a takeover after
# an outage: the reap gives every fire a lost node may have started a new
# attempt due "now", so several attempts of one job share one due time.
# Before, the timer broke such ties by claim order and a queue job ran
# them the wrong way round.  The order comes from what the job writes.
# SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

dbc job add q --every 1h --overlap queue -- sh -c "$RECORD" >/dev/null
jid=$(sql "SELECT id FROM jobs WHERE name = 'q'")
base=$(( $(date +%s) * 1000 - 60000 ))
due=$(( base + 30000 ))
# five owed attempts, inserted newest fire first (ids ascend as fire_at
# descends), all due at one instant and unclaimed
for k in 5 4 3 2 1; do
  sql "INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, missed, created_ms)
       VALUES ($jid, 'q', $((base + k * 1000)), 2, 1, $due, 0, $due)" >/dev/null
done
start_node o1
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/exec.log' || echo 0) -ge 5 ]" || fail "the five runs did not run"
stop_node o1

order=$(awk '{ print $2 - '"$base"' }' "$T/exec.log" | tr '\n' ' ')
assert_eq "1000 2000 3000 4000 5000 " "$order" "the runs due at one instant ran oldest fire first"
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
