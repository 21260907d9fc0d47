#!/usr/bin/env bash
# A queue job's held fires go on when the one popped next does not start
# (docs/scheduler.md "Overlap"): a fire held past its misfire threshold is
# recorded MISFIRED when its turn comes, and the fires held behind it must
# then be decided too, not wait with nothing running until some later fire
# of the job starts and ends.  A sparse schedule shows it: three fires in
# one minute of the day (a, a+1 s, a+4 s), a run of 5.5 s, threshold 3 s.
# The second fire is 4.5 s late when the first run ends (MISFIRED); the
# third must end (run or misfire) soon after, where before it stayed
# claimed until the next day's fires.  SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

# three fires inside one minute, the first a few seconds from now
while [ $(( $(date -u +%s) % 60 )) -gt 40 ]; do sleep 1; done
a=$(( $(date -u +%s) + 4 ))
s=$(( a % 60 ))
cron="$s,$((s + 1)),$((s + 4)) $(date -u -d "@$a" +'%-M %-H') * * ?"
dbc job add sparse --cron "$cron" --tz UTC --overlap queue --misfire skip --misfire-threshold 3s \
  -- sh -c "$RECORD; sleep 5.5" >/dev/null
start_node h1

f1=$(( a * 1000 )); f2=$(( f1 + 1000 )); f3=$(( f1 + 4000 ))
state_of() { runs_csv --job sparse | awk -F, -v f="$1" '$2 == f && $3 == 1 { print $4 }'; }
final() { case "$(state_of "$1")" in succeeded|misfired) return 0 ;; *) return 1 ;; esac; }
wait_until 120 final "$f1" || fail "the first fire did not run: $(runs_csv --job sparse)"
wait_until 120 final "$f2" || fail "the second fire was not decided: $(runs_csv --job sparse)"
assert_eq misfired "$(state_of "$f2")" "the second fire, held past its threshold, is MISFIRED at its turn"
# the third: 1.5 s late when its turn comes, run now (or, on a slow
# machine, misfired); either way within seconds, not tomorrow
wait_until 120 final "$f3" ||
  fail "the fire held behind a misfired one stayed held with nothing running: $(runs_csv --job sparse)"
pass "the fire held behind a misfired one was decided ($(state_of "$f3"))"
stop_node h1

runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
ran=$(awk '{ print $2 }' "$T/exec.log" | sort | tr '\n' ' ')
want="$f1 "
[ "$(state_of "$f3")" = succeeded ] && want="$f1 $f3 "
assert_eq "$want" "$ran" "what the job wrote matches the run log"
