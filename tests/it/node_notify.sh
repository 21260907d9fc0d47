#!/usr/bin/env bash
# dbcron node under a service manager's notify socket (what systemd gives a
# Type=notify unit): READY=1 comes once the node is registered (its row is
# alive by then), then WATCHDOG=1 at renewed leases.  The socket is a real
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
assert_eq "READY=1 WATCHDOG=1" "$(head -1 "$MSGS")" "the first message"
wait_until 120 sh -c "[ \$(grep -c '^WATCHDOG=1\$' '$MSGS') -ge 3 ]"
assert_eq 1 "$(grep -c READY=1 "$MSGS")" "READY=1 once"
t_done
