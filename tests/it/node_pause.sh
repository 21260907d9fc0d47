#!/usr/bin/env bash
# Pause and delete are immediate (docs/scheduler.md "Pause and delete"): a
# node claims fires seconds ahead (--preread), yet no fire whose instant is
# after `job pause` or `job delete` returned is executed; the fires it had
# claimed end SKIPPED "job paused" / ABANDONED "job deleted", none is left
# SCHEDULED; a resumed job runs again.  Executions are counted from what the
# jobs write.  SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

rec() { echo 'echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS" >> '"$T/$1.log"; }
dbc job add p --every 1s --misfire skip -- sh -c "$(rec p)" >/dev/null
dbc job add d --every 1s --misfire skip -- sh -c "$(rec d)" >/dev/null
dbc job add steady --every 1s --misfire skip -- sh -c "$(rec steady)" >/dev/null

start_node n1 --preread 4s
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/p.log' || echo 0) -ge 2 ]" || fail "p did not run"

dbc job pause p >/dev/null
paused_at=$(date +%s%3N)
dbc job delete d >/dev/null
deleted_at=$(date +%s%3N)
sleep 6

late_p=$(awk -v t="$paused_at" '$2 > t' "$T/p.log" | wc -l)
assert_eq 0 "$late_p" "no fire of a paused job after the pause returned was executed"
late_d=$(awk -v t="$deleted_at" '$2 > t' "$T/d.log" | wc -l)
assert_eq 0 "$late_d" "no fire of a deleted job after the delete returned was executed"
assert_ge "$(awk -v t="$deleted_at" '$2 > t' "$T/steady.log" | wc -l)" 3 "the other job kept running"

runs_csv > "$T/runs.csv"
assert_eq 0 "$(awk -F, '$4 == "scheduled" && ($1 == "p" || $1 == "d")' "$T/runs.csv" | wc -l)" \
  "no run of the paused or deleted job is left SCHEDULED"
assert_ge "$(awk -F, '$1 == "p" && $4 == "skipped"' "$T/runs.csv" | wc -l)" 1 \
  "fires claimed before the pause are recorded SKIPPED"
grep -q '^p,.*job paused' "$T/runs.csv" || fail "the skipped fires do not say why"
assert_ge "$(awk -F, '$1 == "d" && $4 == "abandoned"' "$T/runs.csv" | wc -l)" 1 \
  "fires claimed before the delete are recorded ABANDONED"
grep -q '^d,.*job deleted' "$T/runs.csv" || fail "the abandoned fires do not say why"

before=$(wc -l < "$T/p.log")
dbc job resume p >/dev/null
wait_until 120 sh -c "[ \$(wc -l < '$T/p.log') -gt $before ]" || fail "the resumed job does not run"
pass "a resumed job runs again"
stop_node n1
echo "node_pause: all checks passed"
