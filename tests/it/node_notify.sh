#!/usr/bin/env bash
# dbcron node under a service manager's notify socket (what systemd gives a
# Type=notify unit): READY=1 comes once the node is registered (its row is
# alive by then), then WATCHDOG=1 with STATUS= at renewed leases, and on
# SIGTERM STOPPING=1 with EXTEND_TIMEOUT_USEC= for what the stop may take.  The socket is a real
# unix datagram socket read by a small python3 listener.
set -euo pipefail
source "$DBCRON_TESTLIB"
export DBCRON_DB=sqlite:$T_DIR/t.db
SOCK=$T_DIR/notify.sock
MSGS=$T_DIR/notify.log

expect_rc 0 init
t_bg python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n")
' "$SOCK" "$MSGS"
wait_until 120 test -S "$SOCK"

t_section "READY=1, then WATCHDOG=1"
NOTIFY_SOCKET=$SOCK t_bg "$DBCRON_BIN" node --node-id notify1 --heartbeat 100ms --lease 1s --quiet
wait_until 120 grep -q READY=1 "$MSGS"
assert_eq "alive" "$(sq "$T_DIR/t.db" "select state from nodes where id = 'notify1'")" \
	"the node is registered when it says READY=1"
assert_match "$(head -1 "$MSGS")" "^READY=1 WATCHDOG=1 STATUS=claimed 0, " "the first message"
wait_until 120 sh -c "[ \$(grep -c '^WATCHDOG=1 STATUS=' '$MSGS') -ge 3 ]"
assert_eq 1 "$(grep -c READY=1 "$MSGS")" "READY=1 once"
assert_match "$(tail -n 1 "$MSGS")" "^WATCHDOG=1 STATUS=claimed [0-9]+, running [0-9]+, in flight [0-9]+$" \
	"STATUS= with what the node claimed and runs"
kill -TERM "$T_BG_PID"
wait "$T_BG_PID" || true
# notify1 says STOPPING=1 too (default --grace): wait for its line, so that
# the one below is notify2's and not notify1's arriving late (the listener
# writes what it reads when it gets to it; CI saw 32000000 here once)
wait_until 120 grep -q STOPPING=1 "$MSGS" || fail "notify1 sent no STOPPING=1"

t_section "STOPPING=1 and the stop timeout extended to what --grace may take"
# a job running when the stop comes, so that the stop waits for it
"$DBCRON_BIN" job add busy --every 1s --handler sleep --arg 20s >/dev/null
NOTIFY_SOCKET=$SOCK t_bg "$DBCRON_BIN" node --node-id notify2 --heartbeat 100ms --lease 1s --grace 3s --quiet
wait_until 120 grep -q "running [1-9]" "$MSGS" || fail "the node never reported a running job"
kill -TERM "$T_BG_PID"
stopping_twice() { [ "$(grep -c STOPPING=1 "$MSGS")" -ge 2 ]; }
wait_until 120 stopping_twice || fail "no STOPPING=1 from notify2 after SIGTERM"
# 2 x --grace (the running jobs, then the last writes) + the kill grace
# (2 s) + 10 s, in microseconds
assert_contains "$(grep STOPPING=1 "$MSGS" | tail -n 1)" "EXTEND_TIMEOUT_USEC=18000000" "EXTEND_TIMEOUT_USEC from --grace"
wait "$T_BG_PID" || true
t_done
