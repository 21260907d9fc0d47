#!/usr/bin/env bash
# Reactions to the outcomes no flush writes (issue 26): a fire the claim
# ends MISFIRED (policy skip, found past its threshold) and a run the reap
# of a dead node ends ABANDONED.  Each gives exactly one event, written in
# that claim's or that reap's transaction, and one delivery to a receiver
# the test starts (tests/tools/hook_receiver.py) carrying its id.  The
# killed node (SIGKILL while its job runs) is reaped by a second node,
# which delivers the failure event with state abandoned.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

mkdir -p "$T/hooks"
python3 "$DBCRON_SRC/tests/tools/hook_receiver.py" "$T/hooks" "$T/port" &
RECV=$!
_recv_stop() { kill "$RECV" 2>/dev/null || true; }
t_on_exit _recv_stop
wait_until 30 test -s "$T/port" || fail "the receiver did not start"
port=$(cat "$T/port")
# heads_at PATH: the requests that came to PATH
heads_at() { grep -l "^Path: $1\$" "$T"/hooks/*.head 2>/dev/null || true; }
# one_delivery JOB PATH: the job's one event delivered, once, with its id
one_delivery() {
	wait_until 60 sh -c "[ \"\$('$DBCRON_BIN' events --job $1 --state delivered --format csv | grep -c '$2')\" = 1 ]" ||
		fail "the event of $1 was not delivered: $(dbc events --job "$1")"
	assert_eq 1 "$(sql "SELECT count(*) FROM events WHERE job_name = '$1'")" "one event for $1"
	local id; id=$(sql "SELECT id FROM events WHERE job_name = '$1'")
	assert_eq 1 "$(heads_at "$2" | wc -l)" "one request to $2"
	assert_contains "$(cat "$(heads_at "$2")")" "X-Dbcron-Event-Id: $id"
}

t_section "a misfire the claim records: one event, delivered"
dbc job add late --at now --misfire skip --misfire-threshold 500ms \
	--on-misfire "http://127.0.0.1:$port/misfire" -- true >/dev/null
t_pause 1 # no node runs while the fire goes past its threshold
start_node n1 --lease 2s --heartbeat 500ms
one_delivery late /misfire
assert_eq 7 "$(sql "SELECT state FROM runs WHERE job_name = 'late'")" "the fire ended MISFIRED"
body=$(heads_at /misfire | sed 's/\.head$/.body/')
assert_contains "$(cat "$body")" '"kind":"misfire"'
assert_contains "$(cat "$body")" '"state":"misfired"'
pass "one misfire event, delivered once"

t_section "a node killed with SIGKILL while its job runs: one failure event after the reap"
dbc job add doomed --at now --retries 0 --on-failure "http://127.0.0.1:$port/abandoned" \
	-- sleep 60 >/dev/null
# started: RUNNING (2) in the database, not just claimed
doomed_running() { [ "$(sql "SELECT state FROM runs WHERE job_name = 'doomed'")" = 2 ]; }
wait_until 60 doomed_running || fail "doomed did not start: $(dbc runs --job doomed)"
assert_eq 0 "$(sql "SELECT count(*) FROM events WHERE job_name = 'doomed'")" "no event while it runs"
kill -KILL "$(pid_of n1)"
start_node n2 --lease 2s --heartbeat 500ms
one_delivery doomed /abandoned
assert_eq 8 "$(sql "SELECT state FROM runs WHERE job_name = 'doomed'")" "the run ended ABANDONED"
body=$(heads_at /abandoned | sed 's/\.head$/.body/')
assert_contains "$(cat "$body")" '"kind":"failure"'
assert_contains "$(cat "$body")" '"state":"abandoned"'
assert_contains "$(cat "$body")" '"node":"n1"'
pass "one failure event with state abandoned, delivered once"
stop_node n2
t_done
