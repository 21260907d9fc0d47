#!/usr/bin/env bash
# A fire that waited in the pool's queue, with its RUNNING already written,
# and then found its job paused (issue 23 item 15): it must not run, and a
# RUNNING run may only end (run state machine), so it ends ABANDONED with
# the reason, not SKIPPED; no retry is made for it.  One worker, held busy by
# a job that waits for a file, keeps the fire queued for as long as the test
# needs: no timing assumption.
set -euo pipefail
source "$DBCRON_TESTLIB"
export DBCRON_DB=sqlite:$T_DIR/t.db
DB=$T_DIR/t.db

expect_rc 0 init
# one quick run first: until a run has ended the node claims no more
# than its workers (backpressure), and the fire must be claimed to queue
expect_rc 0 job add warm --at now -- true
expect_rc 0 job add queued --every 1h -- /bin/sh -c "echo ran >> $T_DIR/queued.log"
t_bg "$DBCRON_BIN" node --node-id q1 --workers 1 --heartbeat 200ms --lease 2s --quiet
node=$T_BG_PID

state_of() { sq "$DB" "SELECT state FROM runs WHERE job_name = '$1' ORDER BY id DESC LIMIT 1"; }
t_section "the fire waits in the queue with RUNNING written"
wait_until 120 sh -c "[ \"\$(sqlite3 '$DB' \"SELECT state FROM runs WHERE job_name = 'warm'\")\" = 3 ]"
expect_rc 0 job add blocker --at now -- /bin/sh -c "while [ ! -e $T_DIR/go ]; do sleep 0.05; done"
wait_until 120 sh -c "[ \"\$(sqlite3 '$DB' \"SELECT state FROM runs WHERE job_name = 'blocker'\")\" = 2 ]"
assert_eq 2 "$(state_of blocker)" "the blocker runs on the only worker"
expect_rc 0 job trigger queued
wait_until 120 sh -c "[ \"\$(sqlite3 '$DB' \"SELECT state FROM runs WHERE job_name = 'queued'\")\" = 2 ]"
assert_eq 2 "$(state_of queued)" "the queued fire's RUNNING is written before it starts"

t_section "paused while queued"
expect_rc 0 job pause queued
touch "$T_DIR/go"
wait_until 120 sh -c "[ \"\$(sqlite3 '$DB' \"SELECT count(*) FROM runs WHERE job_name = 'queued' AND state > 2\")\" = 1 ]"
assert_eq "8|job paused" \
	"$(sq "$DB" "SELECT state, CASE WHEN error LIKE '%job paused%' THEN 'job paused' ELSE error END FROM runs WHERE job_name = 'queued'")" \
	"ended ABANDONED (RUNNING may not become SKIPPED), saying why"
assert_eq 1 "$(sq "$DB" "SELECT count(*) FROM runs WHERE job_name = 'queued'")" "no retry of a fire of a paused job"
assert_eq 3 "$(state_of blocker)" "the blocker succeeded"
kill -TERM "$node"
wait "$node" || true
assert_eq 0 "$(cat "$T_DIR/queued.log" 2>/dev/null | wc -l)" "the paused job did not run"
t_done
