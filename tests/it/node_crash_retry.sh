#!/usr/bin/env bash
# A job that kills its node before the node could write its start (issue 23,
# "Also": a handler crashing its node within 50 ms) is retried only while
# its retry budget lasts, not from node to node forever.  The fault seam
# refuses every run write of the nodes (busy), so no start is ever written
# whatever the machine's speed; each node the job kills is followed by a
# new one under the same id, whose registration resolves what the dead one
# held.  Attempts are counted from what the job wrote, runs from the
# database.
set -euo pipefail
source "$DBCRON_TESTLIB"
t_need_fault_seam
export DBCRON_DB=sqlite:$T_DIR/t.db
DB=$T_DIR/t.db

expect_rc 0 init
expect_rc 0 job add crash --every 1h --retries 1 -- \
	/bin/sh -c "echo \$DBCRON_ATTEMPT >> $T_DIR/attempts; kill -9 \$(cat $T_DIR/node.pid)"
expect_rc 0 job trigger crash

live_runs() { sq "$DB" "SELECT count(*) FROM runs WHERE job_name = 'crash' AND state IN (1, 2)"; }
start_node() {
	t_bg env DBCRON_TEST_FAULTS="stmt=runs_apply,kind=busy,nth=1,times=0" /bin/sh -c \
		"echo \$\$ > $T_DIR/node.pid; exec '$DBCRON_BIN' node --node-id v --lease 1s --heartbeat 200ms --quiet"
	node=$T_BG_PID
}
node_gone_or_idle() { ! kill -0 "$node" 2>/dev/null || [ "$(live_runs)" = 0 ]; }

t_section "nodes killed by the job, one after another"
for i in 1 2 3 4 5; do
	start_node
	wait_until 120 node_gone_or_idle
	kill -0 "$node" 2>/dev/null && break
	wait "$node" 2>/dev/null || true
done
assert_eq 0 "$(live_runs)" "no attempt of the job is left to run"
assert_eq yes "$(kill -0 "$node" 2>/dev/null && echo yes || echo no)" "the last node survives"
kill -TERM "$node" 2>/dev/null || true
wait "$node" 2>/dev/null || true
assert_eq "1 2" "$(tr '\n' ' ' < "$T_DIR/attempts" | sed 's/ $//')" \
	"attempts run: the first and its one retry (--retries 1)"
assert_eq "1|8|node lost before its start was written
2|8|node lost before its start was written" \
	"$(sq "$DB" "SELECT attempt, state, error FROM runs WHERE job_name = 'crash' ORDER BY attempt")" \
	"both recorded ABANDONED, no third attempt"
t_done
