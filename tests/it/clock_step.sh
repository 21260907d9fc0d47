#!/usr/bin/env bash
# A forward wall-clock step larger than the lease (an NTP correction, a VM
# resume) makes no job run twice and no node lost (invariant 4).  The step
# is made with libfaketime (Debian's faketime) under the nodes, on the wall
# clock only (CLOCK_MONOTONIC is left alone, as a real step leaves it).
# SQLite: the database clock is the host's, so the step is host-wide: both
# nodes jump 10 minutes at once.  PostgreSQL ("pg"): the database clock is
# the server's; one node's wall clock jumps, the other's does not.
# Executions are counted from what the jobs write.
source "$(dirname "$0")/nodelib.bash"
backend=${1:-sqlite}
use_backend "$backend"
lib=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -n 1)
[ -n "$lib" ] || fail "libfaketime is missing (Debian package faketime; scripts/deps.sh installs it)"
# A sanitizer runtime must come first among preloaded libraries, so
# libfaketime cannot be preloaded into an ASan build: this test runs in the
# plain build (make test) only.
# (ldd's output is read whole first: under pipefail, `ldd | grep -q` fails
# whenever grep stops reading before ldd has written its last line)
if grep -q 'libasan\|libtsan' <<<"$(ldd "$DBCRON_BIN" 2>/dev/null)"; then
  echo "clock_step: skipped under a sanitizer build (libfaketime cannot be preloaded before its runtime)"
  exit 77
fi

echo "+0" > "$T/clock"
# run as `faked CMD &`: the exec keeps $! the node's own pid
faked() {
  LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$T/clock" FAKETIME_NO_CACHE=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 exec "$@"
}
for i in 1 2 3 4; do
  dbc job add "j-$i" --every 1s --misfire skip -- sh -c "$RECORD" >/dev/null
done
dbc job add slow --every 5s --misfire skip -- sh -c "$RECORD; sleep 3" >/dev/null

if [ "$backend" = sqlite ]; then
  faked "$DBCRON_BIN" node --node-id a --lease 3s >"$T/node-a.log" 2>&1 &
else
  "$DBCRON_BIN" node --node-id a --lease 3s >"$T/node-a.log" 2>&1 &
fi
NODE_PIDS+=($!); PID_a=$!
faked "$DBCRON_BIN" node --node-id b --lease 3s >"$T/node-b.log" 2>&1 &
NODE_PIDS+=($!); PID_b=$!
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/exec.log' || echo 0) -ge 10 ]" || fail "the nodes ran nothing"
sleep 2
sql_inc() { sql "SELECT id || ':' || incarnation || ':' || state FROM nodes ORDER BY id" | tr '\n' ' '; }
before=$(sql_inc)

echo "+10m" > "$T/clock"
pass "stepped the wall clock 10 minutes forward (lease 3 s)"
sleep 10
kill -0 "$PID_a" && kill -0 "$PID_b" || fail "a node died after the clock step"

runs_csv > "$T/runs.csv"
assert_eq 0 "$(awk -F, '$4 == "abandoned"' "$T/runs.csv" | wc -l)" "no run abandoned as node lost"
awk '{ print $1 "," $2 }' "$T/exec.log" | sort | uniq -d > "$T/dups"
assert_eq 0 "$(wc -l < "$T/dups")" "no fire executed twice"
after=$(sql_inc)
assert_eq "$before" "$after" "both nodes stayed alive, neither declared dead and rejoined"
assert_ge "$(wc -l < "$T/exec.log")" 20 "jobs kept running across the step"
stop_node a
stop_node b
echo "clock_step: all checks passed"
