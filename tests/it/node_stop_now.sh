#!/usr/bin/env bash
# A second SIGTERM or SIGINT forces the stop: the first starts the graceful
# stop, which waits --grace (here far longer than the test) for a running
# job; the second stops the job's process group at once, the run is
# recorded ABANDONED ("node shut down before the run ended", retried
# elsewhere under node-loss retry) and the node exits 0, marked stopped.
set -euo pipefail
source "$DBCRON_TESTLIB"
export DBCRON_DB=sqlite:$T_DIR/t.db

expect_rc 0 init
for sig in TERM INT; do
	t_section "second SIG$sig"
	PIDF=$T_DIR/pid-$sig
	expect_rc 0 job add "long-$sig" --at now -- /bin/sh -c "echo \$\$ > $PIDF; exec sleep 300"
	# setsid: SIGINT from a shell's background job would be ignored
	t_bg setsid "$DBCRON_BIN" node --node-id "n-$sig" --grace 1h --quiet
	node=$T_BG_PID
	wait_until 120 test -s "$PIDF"
	job=$(cat "$PIDF")
	kill -"$sig" "$node"
	# the graceful stop waits for the job: both still there
	sleep 1
	kill -0 "$node" 2>/dev/null && assert_eq 0 0 || assert_eq "node alive" "node gone" "the first SIG$sig waits for the job"
	kill -0 "$job" 2>/dev/null && assert_eq 0 0 || assert_eq "job alive" "job gone" "the job runs on after the first SIG$sig"
	kill -"$sig" "$node"
	rc=0
	# an hour's grace: a node still here after a minute did not force
	wait_until 120 sh -c "! kill -0 $node 2>/dev/null" || rc=$?
	assert_eq 0 "$rc" "the node exits soon after the second SIG$sig"
	rc=0
	wait "$node" || rc=$?
	assert_eq 0 "$rc" "exit status after the forced stop"
	wait_until 120 sh -c "! kill -0 $job 2>/dev/null"
	expect_rc 0 runs --job "long-$sig" --format csv
	assert_match "$T_OUT" "^long-$sig,[0-9]+,1,abandoned,n-$sig,.*node shut down before the run ended"
	expect_rc 0 nodes --format csv
	assert_match "$T_OUT" "^n-$sig,[^,]*,[0-9]+,stopped,"
done
t_done
