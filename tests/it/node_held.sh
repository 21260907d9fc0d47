#!/usr/bin/env bash
# Fires a node could not start on time (docs/scheduler.md "Policies as
# implemented").  A write lock held longer than the lease (an operator's
# open transaction, a big apply) stalls the node's heartbeat, so its lease
# is in doubt and it starts nothing, and stalls its claims, until the lock
# goes.  Afterwards:
#  1. a fire held past its misfire threshold is recorded MISFIRED "started
#     too late" under misfire skip, not run late;
#  2. the fires held together through the lock are a backlog: under overlap
#     skip they wait for each other, none is SKIPPED (no run was going at
#     their instants);
#  3. the catch-up fires of a job whose previous run is still going are owed:
#     under overlap skip they wait for that run and run after it.
# States and times come from the run log, executions from what the jobs
# write.  SQLite (the lock is a BEGIN IMMEDIATE held by another process).
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite
# Part 3 runs beside parts 1 and 2, on a database file of its own (DB3)
# with a node of its own: each holds the write lock of its own file, so
# neither stalls the other, and the test waits for both windows at once.
DB3=sqlite:$T/held3.db
DBCRON_DB=$DB3 "$DBCRON_BIN" init >/dev/null

# hold_lock DB SECS: an open write transaction on the database for SECS.
hold_lock() {
  python3 - "${1#sqlite:}" "$2" <<'PY'
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN IMMEDIATE")
time.sleep(float(sys.argv[2]))
c.execute("COMMIT")
PY
}
now_ms() { date +%s%3N; }
rec='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $(date +%s%3N)" >> '"$T/exec.log"
claimed() { [ -n "$(runs_csv --job "$1" | awk -F, -v n="$2" '$4 == "scheduled" && $5 == n')" ]; }

# --- 3, started first: owed catch-up fires behind a long run ------------
# 'owe' runs every 2 s; its first run lasts 12 s.  The lock stops the
# claims for 5 s: its next fires are found late (threshold 1 s) and planned
# as catch-up fires, owed, while the first run is still going.
DBCRON_DB=$DB3 dbc job add owe --every 2s --overlap skip --misfire catch_up --misfire-threshold 1s \
  -- sh -c "$rec; [ -e '$T/owe.long' ] || { touch '$T/owe.long'; sleep 12; }" >/dev/null
# A lease that outlasts the lock: a node that cannot renew its lease for
# three quarters of it stops its running jobs (docs/scheduler.md "Leases and
# fencing"), and the long run must go on here.
start_node h2 --db "$DB3" --lease 10s

# --- 1 and 2: fires held through the lock ------------------------------
# Lease 3 s, pre-read 10 s: 'late', due 9 s ahead, is claimed before the
# lock and falls due after the lease went into doubt (at most 2.25 s after
# the last heartbeat), so the node holds it until the lock is gone, 12 s on.
# (Due 9 s ahead leaves more than 6 s for the claim to be seen and the lock
# taken on a slow machine: with 5 s, a sanitizer build under load took the
# lock after 'late' had run.)
dbc job add tick --every 1s --overlap skip --misfire skip --misfire-threshold 30s \
  -- sh -c "$rec" >/dev/null
start_node h1 --lease 3s --preread 10s

wait_until 120 test -e "$T/owe.long" || fail "h2 did not start 'owe'"
hold_lock "$DB3" 5 &
lock3=$!

wait_until 120 sh -c "grep -q '^tick ' '$T/exec.log' 2>/dev/null" || fail "h1 ran nothing"
dbc job add late --at now+9s --misfire skip --misfire-threshold 1s -- sh -c "$rec" >/dev/null
wait_until 120 claimed late h1 || fail "h1 did not claim the fire of 'late'"
lock_from=$(now_ms)
hold_lock "$DBCRON_DB" 12
lock_to=$(now_ms)
pass "held the write lock for 12 s (lease 3 s), 'late' claimed and due in it"
wait "$lock3" || fail "3: the write lock of part 3 failed"
pass "held the write lock for 5 s during the long run of 'owe'"
wait_until 120 sh -c "'$DBCRON_BIN' runs --job late --format csv | grep -Eq ',(misfired|succeeded|failed),'" ||
  fail "'late' did not end: $(dbc runs --job late --format csv)"
sleep 2
stop_node h1

row=$(runs_csv --job late)
case "$row" in
*",misfired,"*"started too late; misfire policy skip"*) pass "1: a fire held past its threshold is MISFIRED at start (misfire skip)" ;;
*) fail "1: 'late': $row" ;;
esac
grep -q '^late ' "$T/exec.log" && fail "1: 'late' ran although it was recorded misfired"
pass "1: 'late' never ran"
# The node resumed at its first start after the lock; every tick instant
# before that was held (nothing started between the lease going into doubt
# and the resume), so no run was going at it.
resume=$(runs_csv | awk -F, -v t="$lock_to" '$6 != "" && $6 >= t { print $6 }' | sort -n | head -n 1)
[ -n "$resume" ] || fail "2: nothing started after the lock"
held=$(runs_csv --job tick | awk -F, -v a="$lock_from" -v r="$resume" '$2 > a + 3000 && $2 < r' | wc -l)
assert_ge "$held" 2 "2: tick fires were held through the lock"
skipped=$(runs_csv --job tick | awk -F, -v r="$resume" '$4 == "skipped" && $2 < r' | wc -l)
assert_eq 0 "$skipped" "2: no held tick fire was SKIPPED (they waited for each other)"
ran=$(runs_csv --job tick | awk -F, -v a="$lock_from" -v r="$resume" '$2 > a + 3000 && $2 < r && $4 == "succeeded"' | wc -l)
assert_eq "$held" "$ran" "2: every held tick fire ran"
runs_csv > "$T/runs.csv"

# --- 3: the end of the owed catch-up fires -------------------------------
export DBCRON_DB=$DB3
wait_until 120 sh -c "'$DBCRON_BIN' runs --job owe --format csv | awk -F, '\$12 > \$2 && (\$4 == \"succeeded\" || \$4 == \"skipped\")' | grep -q ." ||
  fail "3: no catch-up fire of 'owe' ended: $(dbc runs --job owe --format csv --limit 0)"
sleep 1
stop_node h2

runs_csv --job owe > "$T/owe.csv"
long_end=$(awk -F, '$4 == "succeeded" && $6 != "" && $7 - $6 >= 10000 { print $7 }' "$T/owe.csv" | head -n 1)
[ -n "$long_end" ] || fail "3: the long run of 'owe' is not in the run log: $(cat "$T/owe.csv")"
owed=$(awk -F, -v e="$long_end" '$3 == 1 && $12 > $2 && $2 < e' "$T/owe.csv" | wc -l)
assert_ge "$owed" 1 "3: catch-up fires were planned while the long run was going"
assert_eq 0 "$(awk -F, '$12 > $2 && $4 == "skipped"' "$T/owe.csv" | wc -l)" \
  "3: no catch-up fire was SKIPPED behind the running run"
early=$(awk -F, -v e="$long_end" '$12 > $2 && $4 == "succeeded" && $6 < e' "$T/owe.csv" | wc -l)
assert_eq 0 "$early" "3: the catch-up fires started after the long run ended (never two at once)"
# both databases' run logs against what the jobs wrote
runs_csv >> "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
echo "node_held: all checks passed"
