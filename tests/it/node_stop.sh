#!/usr/bin/env bash
# Graceful stop under failed writes (docs/scheduler.md "Graceful stop"): a
# node whose final writes fail retries them for --grace and, if they still
# fail, exits without marking itself stopped, so that when its lease lapses
# another node resolves the run by its node-loss policy instead of leaving
# it RUNNING forever.  And the safety net: live runs held by a node that is
# already stopped are resolved by the maintenance pass.  SQLite or, given
# "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
t_need_fault_seam
backend=${1:-sqlite}
use_backend "$backend"

dbc job add long --at now -- sh -c 'echo "$DBCRON_ATTEMPT $DBCRON_NODE" >> '"$T/long.log"'; sleep 3' >/dev/null
# Every write after the first (the start) fails: the outcome cannot land.
DBCRON_TEST_FAULTS="stmt=runs_apply,kind=conn,nth=2,times=0" start_node n1 --lease 2s --grace 2s
wait_until 120 test -s "$T/long.log" || fail "n1 did not start the job"
wait_until 120 sh -c "[ \"\$('$DBCRON_BIN' runs --job long --format csv | awk -F, 'NR > 1 { print \$4 }')\" = running ]" ||
  fail "the start of the job was not written"
stop_node n1
assert_eq "alive" "$(sql "SELECT state FROM nodes WHERE id = 'n1'")" \
  "a node whose outcome could not be written is not marked stopped"
grep -q "event=node.stop .*unwritten=1" "$T/node-n1.log" || fail "n1 did not say what it left unwritten"
pass "n1 says it left one outcome unwritten"

# The safety net: a stopped node that still holds a RUNNING run (checked
# below, once n2's first maintenance pass has run).
dbc job add orph --at 2099-01-01T00:00:00Z -- true >/dev/null
jid=$(sql "SELECT id FROM jobs WHERE name = 'orph'")
sql "INSERT INTO nodes (id, incarnation, host, pid, workers, state, started_ms, heartbeat_ms, lease_until) VALUES ('ghost', 'g', 'h', 1, 1, 'stopped', 1000, 1000, 1000)" >/dev/null
sql "INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, claim_token, started_ms, created_ms) VALUES ($jid, 'orph', 1000, 1, 2, 1000, 'ghost', 'x', 1000, 1000)" >/dev/null
start_node n2 --lease 2s
wait_until 120 grep -q "^2 n2$" "$T/long.log" || fail "n2 did not take the run over"
runs_csv --job long > "$T/long.csv"
grep -q '^long,[0-9]*,1,abandoned,n1' "$T/long.csv" || fail "attempt 1 is not ABANDONED: $(cat "$T/long.csv")"
pass "the run n1 could not finish ends ABANDONED and runs again elsewhere"

wait_until 120 sh -c "'$DBCRON_BIN' runs --job orph --format csv | grep -q '^orph,1000,1,abandoned'" ||
  fail "the RUNNING run of a stopped node was not resolved: $(dbc runs --job orph --format csv)"
pass "a live run left by a stopped node is resolved by maintenance"
stop_node n2

# Grace over: a node asked to stop waits --grace for its running jobs, then
# stops them (ABANDONED, and retried elsewhere under --node-loss retry) and
# exits; it does not wait for the job to end by itself.
dbc job add stuck --at now -- sh -c 'echo $$ > '"$T/stuck.pid"'; exec sleep 300' >/dev/null
start_node n3 --grace 1s
wait_until 120 test -s "$T/stuck.pid" || fail "n3 did not start 'stuck'"
kill -TERM "$(pid_of n3)"
wait_until 120 sh -c "! kill -0 $(pid_of n3) 2>/dev/null" ||
  fail "n3 (--grace 1s) did not stop within 20 s of SIGTERM while a job ran"
stop_node n3
runs_csv --job stuck > "$T/stuck.csv"
grep -q '^stuck,[0-9]*,1,abandoned,n3,.*node shut down before the run ended' "$T/stuck.csv" ||
  fail "the run stopped at the end of the grace is not ABANDONED: $(cat "$T/stuck.csv")"
pass "a job still running when the grace is over is stopped and recorded ABANDONED"
assert_eq 1 "$(awk -F, '$3 == 2 && $4 == "scheduled" && $5 == ""' "$T/stuck.csv" | wc -l)" \
  "its retry waits for another node (node-loss retry)"
if kill -0 "$(cat "$T/stuck.pid")" 2>/dev/null; then fail "the stopped job's process is still running"; fi
pass "the stopped job's process is gone"

# A stop's last writes that meet a lock conflict (two nodes stopping at
# one moment deadlocked them on MariaDB in CI) are tried again: the claimed,
# unstarted runs are handed back and the node is marked stopped now, not
# left to the end of its lease.
dbc job add tick --every 1s -- true >/dev/null
DBCRON_TEST_FAULTS="stmt=runs_release,kind=busy,nth=1,times=1;stmt=runs_unclaim_node,kind=busy,nth=1,times=1" \
  start_node n4 --lease 60s
wait_until 120 sh -c "'$DBCRON_BIN' runs --job tick --state scheduled --format csv | grep -q ',n4,'" ||
  fail "n4 holds no claimed run of 'tick'"
stop_node n4
assert_eq "stopped" "$(sql "SELECT state FROM nodes WHERE id = 'n4'")" \
  "a node whose last writes met a lock conflict once is marked stopped"
assert_eq 0 "$(sql "SELECT count(*) FROM runs WHERE node = 'n4' AND state = 1")" \
  "its claimed, unstarted runs are handed back"
echo "node_stop: all checks passed"
