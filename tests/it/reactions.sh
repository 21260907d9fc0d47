#!/usr/bin/env bash
# Reactions and the outbox (issue 26 items 1-2) against a real node and a
# webhook receiver the test starts (tests/tools/hook_receiver.py): a fire
# that fails after its retry gives exactly one failure event (counted in
# the events table) and at least one POST carrying its id, signed with
# the node's --notify-secret-file (checked with openssl, a separate HMAC)
# and run through an exec: target with the event on stdin; a receiver
# that answers 503 sees the event again; an on-success job: chain runs the
# downstream once per upstream success (counted from what the jobs
# write); bad targets are refused with the key and the target named, exit
# 2, nothing written.  The node claims an event right after the flush that
# wrote it (delivered within 2.5 s of its outcome, not at the 5 s sweep).
# A node killed with SIGKILL while a receiver holds its request: another
# node delivers the event again (one event row, two requests with the same
# X-Dbcron-Event-Id).  Deliveries run side by side on the one delivery
# thread: two held webhooks and a 3 s program all start within 2 s.  A
# node stopped while a request is held cuts it and
# hands the event back: pending at once, then delivered by another node.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

t_section "bad targets refused, nothing written"
t_refused "--on-failure 'ftp://x': unknown target" job add bad --every 1s --on-failure ftp://x -- true
t_refused "unparseable URL" job add bad --every 1s --on-failure 'http://exa mple/' -- true
t_refused "--on-success 'job:nope': no job named 'nope'" job add bad --every 1s --on-success job:nope -- true
t_refused "an empty target" job add bad --every 1s --on-misfire '' -- true
printf '[{"name":"bad","every":"1s","on_failure":["job:ghost"],"command":["true"]}]\n' >"$T/bad.json"
t_refused "key 'on-failure': 'job:ghost': no job named 'ghost'" job apply "$T/bad.json"
pass "bad targets refused"

t_section "a failing fire: one event, delivered, signed"
mkdir -p "$T/hooks"
python3 "$DBCRON_SRC/tests/tools/hook_receiver.py" "$T/hooks" "$T/port" &
RECV=$!
_recv_stop() { kill "$RECV" 2>/dev/null || true; }
t_on_exit _recv_stop
wait_until 30 test -s "$T/port" || fail "the receiver did not start"
port=$(cat "$T/port")
printf 's3cret-key\n' >"$T/secret"
printf '#!/bin/sh\ncat > "%s/exec.$DBCRON_EVENT_ID.json"\n' "$T" >"$T/sink.sh"
chmod +x "$T/sink.sh"
dbc job add bad --at now --retries 1 --retry-base 100ms \
	--on-failure "http://127.0.0.1:$port/hook" --on-failure "exec:$T/sink.sh" \
	--on-failure "http://127.0.0.1:$port/busy" -- sh -c 'echo boom; exit 3' >/dev/null
assert_contains "$(dbc job show bad)" "on failure:        http://127.0.0.1:$port/hook"
dbc job add down --at 2099-01-01T00:00:00Z -- sh -c "echo \$DBCRON_RUN_ID >> '$T/down.log'" >/dev/null
dbc job add up --every 1s --misfire skip --on-success job:down -- sh -c "echo x >> '$T/up.log'" >/dev/null
start_node n1 --notify-secret-file "$T/secret"
wait_until 60 sh -c "ls '$T/hooks' | grep -q body" || fail "no webhook request arrived"
wait_until 60 sh -c "ls '$T' | grep -q '^exec\.'" || fail "the exec target did not run"
assert_eq 3 "$(sql "SELECT count(*) FROM events WHERE job_name = 'bad'")" "one event per target"
assert_eq 2 "$(sql "SELECT count(*) FROM runs WHERE job_name = 'bad'")" "two attempts"
assert_eq "failure" "$(sql "SELECT DISTINCT CASE kind WHEN 1 THEN 'failure' ELSE 'other' END FROM events WHERE job_name = 'bad'")" "kind"
hook_id=$(sql "SELECT id FROM events WHERE job_name = 'bad' AND target LIKE '%/hook'")
head=$(grep -l "Path: /hook" "$T"/hooks/*.head | head -n1)
assert_contains "$(cat "$head")" "X-Dbcron-Event-Id: $hook_id"
body=${head%.head}.body
assert_contains "$(cat "$body")" '"state":"failed"'
assert_contains "$(cat "$body")" '"exit_code":3'
want=$(openssl dgst -sha256 -hmac 's3cret-key' -r "$body" | cut -d' ' -f1)
assert_contains "$(cat "$head")" "X-Dbcron-Signature: sha256=$want"
pass "the signature verifies with openssl"
exec_id=$(sql "SELECT id FROM events WHERE job_name = 'bad' AND target LIKE 'exec:%'")
assert_contains "$(cat "$T/exec.$exec_id.json")" "\"event_id\":$exec_id"
wait_until 60 sh -c "[ \$(grep -l 'Path: /busy' '$T'/hooks/*.head | wc -l) -ge 2 ]" ||
	fail "a 503 was not retried"
pass "a 503 is delivered again"
assert_eq 1 "$(ls "$T"/hooks/*.head | xargs grep -l 'Path: /hook' | wc -l)" "a 200 is delivered once"
lag=$(sql "SELECT finished_ms - created_ms FROM events WHERE id = $hook_id")
assert_le "$lag" 2500 "delivered this long (ms) after the outcome: claimed after the flush, not at a sweep"
ev=$(dbc events --job bad --format json)
assert_contains "$ev" "{\"id\":$hook_id,\"job\":\"bad\""
assert_contains "$ev" '"kind":"failure"'
assert_eq 1 "$(dbc events --job bad --state delivered --format csv | grep -c '/hook,delivered,1,')" "events --state delivered"
assert_contains "$(dbc events --job bad)" "HTTP 503"
expect_rc 2 events --state bogus
pass "dbcron events shows the deliveries"

t_section "a chain runs the downstream once per upstream success"
wait_until 60 sh -c "[ \$(wc -l < '$T/up.log') -ge 3 ]" || fail "up did not run"
dbc job pause up >/dev/null
ups=$(sql "SELECT count(*) FROM runs WHERE job_name = 'up' AND state = 3")
wait_until 60 sh -c "[ \$(wc -l < '$T/down.log' 2>/dev/null || echo 0) -ge $ups ]" ||
	fail "down ran $(wc -l < "$T/down.log") times for $ups upstream successes"
t_pause 2
assert_eq "$ups" "$(wc -l < "$T/down.log")" "down runs once per upstream success"
assert_eq "$ups" "$(sql "SELECT count(*) FROM events WHERE job_name = 'up' AND state = 3")" "every chain event delivered"
pass "chained once per success"

t_section "deliveries run side by side: two held webhooks and a slow program at once"
printf '#!/bin/sh\ntouch "%s/slow.started"; sleep 3; cat > "%s/slow.done"\n' "$T" "$T" >"$T/slow.sh"
chmod +x "$T/slow.sh"
dbc job add par --at now --retries 0 --on-failure "exec:$T/slow.sh" \
	--on-failure "http://127.0.0.1:$port/par1/hold3" --on-failure "http://127.0.0.1:$port/par2/hold3" \
	-- sh -c 'exit 1' >/dev/null
par_started() { [ -e "$T/slow.started" ] || grep -qs '^Path: /par' "$T"/hooks/*.head; }
wait_until 60 par_started || fail "no delivery of par started"
t0=$(date +%s%3N)
wait_until 30 sh -c "[ -e '$T/slow.started' ] && [ \$(grep -ls '^Path: /par' '$T'/hooks/*.head | wc -l) -ge 2 ]" ||
	fail "the three deliveries of par did not all start"
t1=$(date +%s%3N)
assert_le "$((t1 - t0))" 2000 "all three started within (ms) of the first, none waiting for another's 3 s"
[ ! -e "$T/slow.done" ] || fail "the program ended before the three had all started"
wait_until 30 sh -c "[ \"\$('$DBCRON_BIN' events --job par --state delivered --format csv | grep -c par)\" = 3 ]" ||
	fail "par's three events were not delivered"
assert_contains "$(cat "$T/slow.done")" '"job":"par"'
pass "one delivery thread, deliveries side by side"
stop_node n1

# heads_at PATH: the requests that came to PATH
heads_at() { grep -l "^Path: $1\$" "$T"/hooks/*.head 2>/dev/null || true; }

t_section "a node killed with SIGKILL mid-delivery: another node delivers it"
dbc job add held --at now --retries 0 --on-failure "http://127.0.0.1:$port/kill/hold4" \
	-- sh -c 'exit 1' >/dev/null
start_node k1 --lease 2s --heartbeat 500ms
wait_until 60 sh -c "grep -qs '^Path: /kill/hold4\$' '$T'/hooks/*.head" ||
	fail "the held request did not arrive"
assert_eq 2 "$(sql "SELECT state FROM events WHERE job_name = 'held'")" "delivering while the receiver holds it"
kill -KILL "$(pid_of k1)"
start_node k2 --lease 2s --heartbeat 500ms
wait_until 60 sh -c "[ \$(grep -ls '^Path: /kill/hold4\$' '$T'/hooks/*.head | wc -l) -ge 2 ]" ||
	fail "no other node delivered the event of the killed one"
wait_until 30 sh -c "[ \"\$('$DBCRON_BIN' events --job held --state delivered --format csv | grep -c /kill/)\" = 1 ]" ||
	fail "the event was not marked delivered"
assert_eq 1 "$(sql "SELECT count(*) FROM events WHERE job_name = 'held'")" "one event row for the run, kind and target"
held_id=$(sql "SELECT id FROM events WHERE job_name = 'held'")
ids=$(heads_at /kill/hold4 | xargs grep -h '^X-Dbcron-Event-Id:' | sort -u)
assert_eq "X-Dbcron-Event-Id: $held_id" "$ids" "every delivery carries the same event id"
assert_eq "k2" "$(sql "SELECT node FROM events WHERE id = $held_id")" "delivered by the second node"
pass "a killed node's delivery is handed over"

t_section "a node stopped mid-delivery hands the event back at once"
dbc job add stopped --at now --retries 0 --on-failure "http://127.0.0.1:$port/stop/hold8" \
	-- sh -c 'exit 1' >/dev/null
wait_until 60 sh -c "grep -qs '^Path: /stop/hold8\$' '$T'/hooks/*.head" ||
	fail "the held request did not arrive"
stop_node k2
assert_eq "1|" "$(sql "SELECT state, coalesce(node, '') FROM events WHERE job_name = 'stopped'")" \
	"pending again and no one's as the node stopped"
start_node k3 --lease 2s --heartbeat 500ms
wait_until 60 sh -c "[ \$(grep -ls '^Path: /stop/hold8\$' '$T'/hooks/*.head | wc -l) -ge 2 ]" ||
	fail "the handed-back event was not delivered again"
wait_until 30 sh -c "[ \"\$('$DBCRON_BIN' events --job stopped --state delivered --format csv | grep -c /stop/)\" = 1 ]" ||
	fail "the handed-back event was not marked delivered"
pass "a stopped node's delivery goes back and another node delivers it"
stop_node k3
t_done
