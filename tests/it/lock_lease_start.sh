#!/usr/bin/env bash
# `dbcron lock` counts its lease from before the acquire statement (issue 23
# item 14): a slow step between the acquire and the spawn (here the database
# clock read before the spawn, stalled 3 s by the fault seam, with a 2 s
# ttl and every renewal refused as busy) must not let the command run past
# the lease the database granted.  The command writes the time every 50 ms;
# nothing it wrote may be later than the lease's end (since_ms + ttl in the
# locks table).  SQLite: one machine, so the command's clock is the
# database's.
set -euo pipefail
source "$DBCRON_TESTLIB"
t_need_fault_seam
export DBCRON_DB=sqlite:$T_DIR/t.db

expect_rc 0 init
t_section "a stalled clock read between acquire and spawn"
rc=0
DBCRON_TEST_FAULTS="stmt=lock_renew,kind=busy,nth=1,times=0;stmt=now,kind=stall,stall=3000,nth=2,times=1" \
	"$DBCRON_BIN" lock L --ttl 2s --kill-grace 1s -- \
	/bin/sh -c "while :; do date +%s%3N >> $T_DIR/alive; sleep 0.05; done" \
	2>"$T_DIR/lock.err" || rc=$?
assert_eq 76 "$rc" "exit status: the lease was lost"
end=$(sq "$T_DIR/t.db" "SELECT since_ms + 2000 FROM locks WHERE name = 'L'")
last=$(tail -n 1 "$T_DIR/alive" 2>/dev/null || echo 0)
assert_eq yes "$([ "$last" -le "$end" ] && echo yes || echo "no: ran until $last, $((last - end)) ms past the lease's end $end")" \
	"the command never ran past the lease"
assert_eq 1 "$(sq "$T_DIR/t.db" "SELECT count(*) FROM runs WHERE job_name = 'lock:L' AND state = 4")" \
	"the attempt is recorded FAILED"
t_done
