#!/usr/bin/env bash
# Overdue (issue 26 item 1, docs/reactions.md) against two real nodes and
# a webhook receiver (tests/tools/hook_receiver.py): a job that has not
# succeeded for --max-silence raises exactly one overdue event per silent
# period to its --on-overdue target, even with two nodes checking; a
# success ends the period (the next silence raises one more); a job that
# keeps succeeding raises none.  The event body says since when and how
# long the job has been silent; /metrics shows dbcron_job_overdue.  A
# job: target's run gets its upstream in DBCRON_UPSTREAM_JOB, _RUN_ID and
# _STATE (a declared --params job too); UPSTREAM_* keys are refused from
# anyone else.  An exec: target runs as the job's --user (root's node), and
# a node that is not root fails the event saying why it could not switch.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

t_section "bad --max-silence refused"
t_refused "max-silence" job add bad --every 1h --max-silence soon -- true
pass "a bad duration is refused"

t_section "one overdue event per silent period, two nodes"
mkdir -p "$T/hooks"
python3 "$DBCRON_SRC/tests/tools/hook_receiver.py" "$T/hooks" "$T/port" &
RECV=$!
_recv_stop() { kill "$RECV" 2>/dev/null || true; }
t_on_exit _recv_stop
wait_until 30 test -s "$T/port" || fail "the receiver did not start"
port=$(cat "$T/port")
dbc job add quiet --every 1h --max-silence 2s --on-overdue "http://127.0.0.1:$port/quiet" \
	-- true >/dev/null
dbc job add busy --every 1s --max-silence 3s --on-overdue "http://127.0.0.1:$port/busy" \
	-- true >/dev/null
assert_contains "$(dbc job show quiet)" "on overdue:        http://127.0.0.1:$port/quiet"
assert_contains "$(dbc job show quiet)" "max silence:       2s"
start_node n1 --http 127.0.0.1:0
start_node n2
wait_until 20 sh -c "grep -ls 'Path: /quiet' '$T'/hooks/*.head | grep -q ." ||
	fail "no overdue event was delivered"
# two more sweeps of each node (5 s apart): still the one event
t_pause 6
assert_eq 1 "$(sql "SELECT count(*) FROM events WHERE job_name = 'quiet' AND kind = 4")" \
	"one overdue event for the silent period, two nodes checking"
assert_eq 1 "$(grep -l 'Path: /quiet' "$T"/hooks/*.head | wc -l)" "delivered once"
body=$(grep -l 'Path: /quiet' "$T"/hooks/*.head | head -n1)
body=$(cat "${body%.head}.body")
assert_contains "$body" '"kind":"overdue"'
assert_contains "$body" '"run_id":null'
assert_match "$body" '"silent_seconds":[2-9]'
assert_contains "$(dbc events --job quiet --format csv)" ",quiet,,overdue,http://127.0.0.1:$port/quiet,"
assert_contains "$(dbc events --job quiet --format json)" '"run_id":null,"kind":"overdue"'
assert_eq 0 "$(sql "SELECT count(*) FROM events WHERE job_name = 'busy'")" \
	"a job that keeps succeeding is never overdue"
pass "one event per silent period"

t_section "the overdue gauge"
mport=$(grep -o 'event=http.listen .*port=[0-9]*' "$T/node-n1.log" | grep -o '[0-9]*$' | head -1)
metrics=$(curl -s "http://127.0.0.1:$mport/metrics")
assert_contains "$metrics" 'dbcron_job_overdue{job="quiet"} 1'
assert_contains "$metrics" 'dbcron_job_overdue{job="busy"} 0'
assert_match "$metrics" 'dbcron_job_last_success_age_seconds\{job="busy"\} [0-9]'
assert_not_contains "$metrics" 'dbcron_job_last_success_age_seconds{job="quiet"}'
pass "dbcron_job_overdue and the age of the last success"

t_section "a success ends the period"
dbc job trigger quiet >/dev/null
wait_until 20 sh -c "[ \$(grep -l 'Path: /quiet' '$T'/hooks/*.head | wc -l) -ge 2 ]" ||
	fail "no overdue event after the success"
t_pause 6
assert_eq 2 "$(sql "SELECT count(*) FROM events WHERE job_name = 'quiet' AND kind = 4")" \
	"one more event for the next silent period"
ok=$(sql "SELECT max(id) FROM runs WHERE job_name = 'quiet' AND state = 3")
assert_eq "$ok" "$(sql "SELECT max(run_id) FROM events WHERE job_name = 'quiet' AND kind = 4")" \
	"the period is the last success"
pass "a success ends the period"

t_section "a job: target passes its upstream"
# the nodes write meanwhile: the refusal's exit and message, not t_refused's unchanged database
expect_rc 2 job add bad --every 1h --params UPSTREAM_JOB -- true
assert_err_contains "UPSTREAM_* keys are reserved"
dbc job add down --at 2099-01-01T00:00:00Z --params x=1 -- sh -c \
	"echo \"\$DBCRON_UPSTREAM_JOB \$DBCRON_UPSTREAM_RUN_ID \$DBCRON_UPSTREAM_STATE \$DBCRON_PARAM_x\" >> '$T/down.log'" >/dev/null
expect_rc 2 job trigger down --param UPSTREAM_JOB=fake
assert_err_contains "UPSTREAM_JOB': UPSTREAM_* keys are set by job: reactions only"
assert_eq 0 "$(sql "SELECT count(*) FROM runs WHERE job_name = 'down'")" "no run of down written"
dbc job add up-ok --at now --on-success job:down -- true >/dev/null
dbc job add up-bad --at now+1s --retries 0 --on-failure job:down -- false >/dev/null
wait_until 30 sh -c "[ \$(wc -l < '$T/down.log' 2>/dev/null || echo 0) -ge 2 ]" ||
	fail "the downstream did not run twice"
ok_id=$(sql "SELECT id FROM runs WHERE job_name = 'up-ok'")
bad_id=$(sql "SELECT id FROM runs WHERE job_name = 'up-bad'")
assert_contains "$(cat "$T/down.log")" "up-ok $ok_id succeeded 1"
assert_contains "$(cat "$T/down.log")" "up-bad $bad_id failed 1"
pass "the downstream sees DBCRON_UPSTREAM_JOB, _RUN_ID and _STATE, and its declared defaults"

t_section "an exec: target runs as the job's --user"
if [ "$(id -u)" = 0 ]; then
	chmod o+x "$T"
	mkdir -p "$T/nb" && chmod 777 "$T/nb"
	printf '#!/bin/sh\n{ id -un; echo "$HOME $USER $DBCRON_EVENT_KIND"; cat; } > "%s/nb/as.$DBCRON_EVENT_ID"\n' "$T" >"$T/nb/who.sh"
	chmod 755 "$T/nb/who.sh"
	dbc job add as-nobody --at now --retries 0 --user nobody \
		--on-failure "exec:$T/nb/who.sh" -- false >/dev/null
	wait_until 30 sh -c "ls '$T/nb' | grep -q '^as\.'" || fail "the exec target did not run"
	out=$(cat "$T"/nb/as.*)
	assert_eq nobody "$(printf '%s\n' "$out" | head -n1)" "id -un of the exec target"
	assert_contains "$out" "nobody failure"
	assert_contains "$out" '"job":"as-nobody"'
	_delivered() { [ "$(sql "SELECT state FROM events WHERE job_name = 'as-nobody'")" = 3 ]; }
	wait_until 10 _delivered || fail "the event was not delivered"
	assert_eq "root:root" "$(stat -c %U:%G "$T/nb/who.sh")" "the program's file is root's"
	pass "the exec target ran as nobody, with the event on stdin"
else
	echo "# not root: the --user exec target is not checked here"
fi
stop_node n1
stop_node n2

t_section "a node that is not root says why it could not switch"
if [ "$(id -u)" = 0 ] && [ "$BACKEND" = sqlite ]; then
	dbc job add as-daemon --at now --retries 0 --user daemon \
		--on-failure "exec:$T/nb/who.sh" -- true >/dev/null
	chmod 777 "$T_DIR" && chmod 666 "${DBCRON_DB#sqlite:}"*
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$DBCRON_BIN" node --node-id n3 >"$T/node-n3.log" 2>&1 &
	PID_n3=$!
	NODE_PIDS+=("$PID_n3")
	# the database is read as root only once n3 has it open: a root
	# reader first made the -wal and -shm files root's, and n3 could not
	# write ("attempt to write a readonly database", a loaded make test)
	wait_until 20 grep -q 'event=node.start' "$T/node-n3.log" || fail "n3 did not start"
	_failed() { [ "$(sql "SELECT state FROM events WHERE job_name = 'as-daemon'")" = 4 ]; }
	wait_until 20 _failed || fail "the event did not fail"
	why=$(sql "SELECT last_error FROM events WHERE job_name = 'as-daemon'")
	assert_contains "$why" "as user 'daemon'"
	assert_contains "$why" "only root (or CAP_SETUID and CAP_SETGID) can switch users"
	assert_eq 1 "$(ls "$T/nb" | grep -c '^as\.')" "the program did not run (only nobody's earlier one)"
	stop_node n3
	pass "the event's last_error says why"
fi
