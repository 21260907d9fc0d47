#!/usr/bin/env bash
# dbcron runs cancel and POST /api/v1/runs/{id}/cancel (issue 27 item 3)
# against a real node: a running shell job whose process group holds a
# child that ignores SIGTERM is stopped whole (SIGTERM, then SIGKILL after
# the kill grace) and ends cancelled, never retried; a run that is claimed
# but not started never starts; one nobody claimed ends at once; a run
# that already ended, or an unknown id, is refused with nothing written;
# a node killed -9 while holding a run with a cancel request leaves it
# cancelled by the reap, not retried.  Executions are counted from what
# the jobs write.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
command -v curl >/dev/null || fail "curl is required (scripts/deps.sh)"
command -v jq >/dev/null || fail "jq is required (scripts/deps.sh)"

ADMIN=admin-token-0123456789abcdef
echo "$ADMIN admin" >"$T/tokens"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }
# post PATH: HTTP status into H_CODE, the body into H_BODY
post() {
  H_CODE=$(curl -s -X POST -o "$T/.body" -w '%{http_code}' --max-time 30 \
    -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT$1" || true)
  H_BODY=$(cat "$T/.body")
}
state_of() { dbc runs show "$1" --format json | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
lines() { [ -f "$1" ] && grep -c . "$1" || echo 0; }
# the run id of the newest run of job $1
newest_run() { runs_csv --job "$1" | tail -n 1 | cut -d, -f11; }
# the job's shell writes a line per start and its process group id, then
# leaves a child that ignores SIGTERM (only SIGKILL ends it)
cmd_for() {
  echo "${2:-} echo start >> $T/$1.starts; ps -o pgid= \$\$ | tr -d ' ' > $T/$1.pgid;" \
    "sh -c 'trap \"\" TERM; sleep 60' & sleep 60"
}
group_gone() { ! pgrep -g "$(cat "$T/$1.pgid")" >/dev/null; }
db_state() { runs_csv | sha256sum; }

# sl's own shell ignores SIGTERM too: only the SIGKILL after the kill
# grace (2 s) ends it
dbc job add sl --at now+1h --retries 2 --retry-base 1s -- sh -c "$(cmd_for sl "trap '' TERM;")" >/dev/null
dbc job add web --at now+1h --retries 2 --retry-base 1s -- sh -c "$(cmd_for web)" >/dev/null
dbc job add lost --at now+1h --retries 2 --retry-base 1s -- sh -c "$(cmd_for lost)" >/dev/null
dbc job add idle --at now+1h -- sh -c "echo start >> $T/idle.starts" >/dev/null
dbc job add soon --at now+1h -- sh -c "echo start >> $T/soon.starts" >/dev/null

t_section "a run nobody claimed ends cancelled at once"
dbc job pause idle >/dev/null
dbc job trigger idle >/dev/null
idle_run=$(newest_run idle)
out=$(dbc runs cancel "$idle_run")
assert_contains "$out" "cancelled (it had not started)"
assert_eq cancelled "$(state_of "$idle_run")" "unclaimed run: cancelled by the request"

start_node n1 --heartbeat 300ms --http 127.0.0.1:0 --api-token-file "$T/tokens"
wait_until 60 has_port "$T/node-n1.log" || fail "node n1 did not listen"
PORT=$(port_of "$T/node-n1.log")

t_section "the CLI stops a running shell job's whole process group"
dbc job trigger sl >/dev/null
wait_until 60 test -s "$T/sl.pgid" || fail "sl did not start"
sl_run=$(newest_run sl)
wait_until 30 is_state "$sl_run" running || fail "sl: not running"
pgrep -g "$(cat "$T/sl.pgid")" >/dev/null || fail "sl: its process group is not there"
out=$(dbc runs cancel "$sl_run")
assert_contains "$out" "cancel requested; node n1"
t0=$(date +%s%N)
wait_until 30 is_state "$sl_run" cancelled || fail "sl: not cancelled"
took=$(( ($(date +%s%N) - t0) / 1000000 ))
# a heartbeat (300 ms) to see it, the kill grace (2 s) for the child that
# ignores SIGTERM
assert_ge "$took" 1500 "sl: the SIGTERM-proof group waited for the kill grace (took $took ms)"
assert_le "$took" 4500 "sl: cancelled within a heartbeat and the kill grace (took $took ms)"
wait_until 10 group_gone sl || fail "sl: the process group outlived the cancel"
pass "sl: the process group is gone, SIGTERM-proof child included"
assert_eq cancelled "$(dbc runs show "$sl_run" --format json | jq -r .error)" "sl: error says cancelled"

t_section "the API stops a running job"
dbc job trigger web >/dev/null
wait_until 60 test -s "$T/web.pgid" || fail "web did not start"
web_run=$(newest_run web)
wait_until 30 is_state "$web_run" running || fail "web: not running"
post "/api/v1/runs/$web_run/cancel"
assert_eq 200 "$H_CODE" "POST cancel of a running run (body: $H_BODY)"
assert_eq requested "$(jq -r .cancel <<<"$H_BODY")"
wait_until 30 is_state "$web_run" cancelled || fail "web: not cancelled"
wait_until 10 group_gone web || fail "web: the process group outlived the cancel"
pass "web: cancelled through the API, process group gone"

t_section "a handler sees the cancel through its context"
dbc job add hs --at now+1h --handler sleep --arg 60s --retries 2 --retry-base 1s >/dev/null
dbc job trigger hs >/dev/null
hs_run=$(newest_run hs)
wait_until 30 is_state "$hs_run" running || fail "hs: not running"
post "/api/v1/runs/$hs_run/cancel"
assert_eq 200 "$H_CODE" "POST cancel of a running handler (body: $H_BODY)"
wait_until 30 is_state "$hs_run" cancelled || fail "hs: not cancelled"
pass "hs: the sleep handler stopped on the cancel and ended cancelled"

t_section "the node counts what it cancelled in /metrics"
H_CODE=$(curl -s -o "$T/.metrics" -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
  "http://127.0.0.1:$PORT/metrics" || true)
assert_eq 200 "$H_CODE" "GET /metrics"
assert_contains "$(cat "$T/.metrics")" 'dbcron_runs_total{node="n1",state="cancelled"} 3'

t_section "a claimed run that has not started never starts"
# due in 3 s: the node claims it within its pre-read window (1.5 s) and
# holds it on its timer until then
dbc job set soon --at now+3s >/dev/null
claimed() { runs_csv --job soon | awk -F, '$4 == "scheduled" && $5 == "n1"' | grep -q .; }
wait_until 30 claimed || fail "soon: never claimed by n1"
soon_run=$(newest_run soon)
out=$(dbc runs cancel "$soon_run")
assert_contains "$out" "cancel requested"
wait_until 30 is_state "$soon_run" cancelled || fail "soon: not cancelled"
assert_eq "cancelled before it started" "$(dbc runs show "$soon_run" --format json | jq -r .error)"
t_pause 3.5 # past its instant: it must not start anyway
assert_eq 0 "$(lines "$T/soon.starts")" "soon: never started"

t_section "a run that already ended, or an unknown id: refused, nothing written"
before=$(db_state)
expect_rc 1 runs cancel "$sl_run"
assert_err_contains "already ended (cancelled)"
expect_rc 1 runs cancel 999999
assert_err_contains "no run with id 999999"
post "/api/v1/runs/$web_run/cancel"
assert_eq 409 "$H_CODE" "POST cancel of an ended run (body: $H_BODY)"
post "/api/v1/runs/999999/cancel"
assert_eq 404 "$H_CODE" "POST cancel of an unknown run (body: $H_BODY)"
assert_eq "$before" "$(db_state)" "the refused cancels wrote nothing"

t_section "each cancel is in the audit trail with who asked, the refused ones are not"
trail=$(dbc audit --format json --limit 0)
# "JOB RUN HOW ACTOR" of each cancel row, in order
cancels=$(jq -r '.[] | select(.action == "cancel") | "\(.job) \(.detail.run_id) \(.detail.cancel) \(.actor)"' <<<"$trail")
me=$(id -un)
assert_contains "$cancels" "idle $idle_run done cli:$me"
assert_contains "$cancels" "sl $sl_run requested cli:$me"
assert_contains "$cancels" "web $web_run requested http:"
assert_contains "$cancels" "hs $hs_run requested http:"
assert_contains "$cancels" "soon $soon_run requested cli:$me"
assert_eq 5 "$(grep -c . <<<"$cancels")" "five cancels, five rows: none for the refused ones (got: $cancels)"

t_section "a node killed -9 while holding a run with a cancel request"
dbc job trigger lost >/dev/null
wait_until 60 test -s "$T/lost.pgid" || fail "lost did not start"
lost_run=$(newest_run lost)
wait_until 30 is_state "$lost_run" running || fail "lost: not running"
kill -KILL "$(pid_of n1)"
dbc runs cancel "$lost_run" >/dev/null # n1 is still alive in the database
start_node n2 --heartbeat 300ms
wait_until 60 is_state "$lost_run" cancelled || fail "lost: the reap did not cancel it"
assert_eq "cancelled; its node was lost" "$(dbc runs show "$lost_run" --format json | jq -r .error)"

t_section "cancelled runs are never retried"
# retries are due 1 s after a failure: by now (seconds later) one would
# have been claimed and run by n2
t_pause 1.5
for j in sl web lost; do
  assert_eq 1 "$(lines "$T/$j.starts")" "$j: started once"
  assert_eq 1 "$(count_runs --job "$j")" "$j: one run, no retry"
done
assert_eq 1 "$(count_runs --job hs)" "hs: one run, no retry"
stop_node n2
t_done
