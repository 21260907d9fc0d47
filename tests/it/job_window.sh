#!/usr/bin/env bash
# A job's window (--start-at, --end-at; issue 28 item 7) against a real
# node: a job whose window opens a few seconds from now does not fire
# before it opens and fires once it has; a job whose window closed in the
# past never fires while a control job beside it does; an end before the
# start is refused with both named, exit 2, nothing written.  The flags,
# the `job apply` keys and `job show` (its next fires) carry the window.
# Executions are counted from what the jobs write.  SQLite.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

rec() { echo 'echo "$DBCRON_FIRE_AT_MS $(date +%s%3N)" >> '"$T/$1.log"; }

t_section "bad order refused, nothing written"
t_refused "end-at 2029-01-01T00:00:00Z is before start-at 2030-01-01T00:00:00Z" \
	job add bad --every 1s --start-at 2030-01-01T00:00:00Z --end-at 2029-01-01T00:00:00Z -- true
t_refused "--start-at" job add bad --every 1s --start-at yesterday -- true
printf '[{"name":"bad","every":"1s","start_at":"2030-01-01T00:00:00Z","end_at":"2029-01-01T00:00:00Z","command":["true"]}]\n' >"$T/bad.json"
t_refused "is before start-at" job apply "$T/bad.json"

t_section "flags, keys and job show"
expect_rc 0 job add --help
assert_contains "$T_OUT" "--start-at TIME"
assert_contains "$T_OUT" "--end-at TIME"
dbc job add shown --cron '0 * * * *' --start-at 2031-05-05T00:00:00Z --end-at 2031-05-05T02:30:00Z -- true >/dev/null
show=$(dbc job show shown)
assert_contains "$show" "start-at:          2031-05-05T00:00:00Z"
assert_contains "$show" "end-at:            2031-05-05T02:30:00Z"
assert_contains "$show" "next fire:         2031-05-05T00:00:00Z"
# the preview stops at the window's end: 00:00, 01:00, 02:00 and no more
assert_eq 3 "$(dbc job show shown --format json | grep -o '"at_ms"' | wc -l)" "next fires end with the window"
dbc job set shown --end-at 2030-01-01T00:00:00Z >/dev/null 2>&1 && fail "job set accepted an end before the start"
dbc job set shown --start-at 2020-01-01T00:00:00Z --end-at 2020-06-01T00:00:00Z >/dev/null
assert_contains "$(dbc job show shown)" "next fire:         -"
printf '[{"name":"shown","cron":"0 * * * *","start_at":"2031-05-05T00:00:00Z","command":["true"]}]\n' >"$T/ok.json"
dbc job apply "$T/ok.json" >/dev/null
assert_contains "$(dbc job show shown --format json)" '"start-at":"2031-05-05T00:00:00Z"'
assert_not_contains "$(dbc job show shown --format json)" '"end-at"'
pass "flags, apply keys, job show and JSON carry the window"

t_section "a node honours the window"
dbc job add ref --every 1s --misfire skip -- sh -c "$(rec ref)" >/dev/null
dbc job add past --every 1s --misfire skip --end-at 2020-01-01T00:00:00Z -- sh -c "$(rec past)" >/dev/null
dbc job add future --every 1s --misfire skip --start-at now+5s -- sh -c "$(rec future)" >/dev/null
start_ms=$(dbc job show future --format json | sed -E 's/.*"start-at":"([^"]*)".*/\1/')
start_ms=$(($(date -d "$start_ms" +%s%3N)))
start_node n1
wait_until 60 sh -c "[ \$(wc -l 2>/dev/null < '$T/ref.log' || echo 0) -ge 2 ]" || fail "the control job did not run"
wait_until 60 test -s "$T/future.log" || fail "the job did not fire after its start"
first=$(head -n1 "$T/future.log")
assert_ge "${first% *}" "$start_ms" "the first fire instant is at or after start_at"
assert_ge "${first#* }" "$start_ms" "the first run started at or after start_at"
wait_until 60 sh -c "[ \$(wc -l < '$T/future.log') -ge 2 ]" || fail "the job did not go on firing"
assert_ge "$(wc -l < "$T/ref.log")" 4 "the control job kept running meanwhile"
[ -e "$T/past.log" ] && fail "a job whose window ended in the past fired"
pass "a job whose window ended in the past never fires"
assert_contains "$(dbc job show past)" "next fire:         -"
stop_node n1
t_done
