#!/usr/bin/env bash
# Webhook reactions (issue 26 item 4): how fast one node delivers them.
#
#   DBCRON_BIN=build/bin/dbcron bash bench/react.sh [N]
#
# SQLite, one node, a local receiver (bench/hook_sink.py, Python, keep-alive).
# N jobs (default 10000) that fail once (`false`, no retry), each with
# --on-failure pointing at the receiver:
#  1. end to end: the node runs the N failures and delivers their N events
#     as they are written; the wall time until all are delivered;
#  2. delivery alone: the same N events set back to pending, a fresh node
#     started, the wall time until all are delivered again (one multi
#     handle, at most 32 out at once);
#  3. the same N bodies POSTed by `xargs -P8 curl` (a process and a
#     connection per event), for comparison.
# Events/s for each.  The receiver shares the machine's cores with the
# node.  It reports; it never fails.
set -euo pipefail
BIN=${DBCRON_BIN:-build/bin/dbcron}
N=${1:-10000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/dbcron-bench-react.XXXXXX)
NODE="" SINK=""
trap '[ -n "$NODE" ] && kill "$NODE" 2>/dev/null; [ -n "$SINK" ] && kill "$SINK" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export DBCRON_DB="sqlite:$T/b.db"
command -v curl >/dev/null || { echo "curl is required" >&2; exit 2; }

ms() { date +%s%3N; }
q() { sqlite3 "$T/b.db" "$1"; }
python3 "$SRC/bench/hook_sink.py" "$T/port" "$T/bodies" &
SINK=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")
URL="http://127.0.0.1:$PORT/hook"

"$BIN" init >/dev/null
python3 - "$N" "$URL" >"$T/jobs.json" <<'PY'
import json, sys
n, url = int(sys.argv[1]), sys.argv[2]
print(json.dumps([{"name": "f-%05d" % i, "at": "now", "retries": 0, "command": ["false"],
                   "on_failure": [url]} for i in range(n)]))
PY
"$BIN" job apply "$T/jobs.json" >/dev/null

# wait_delivered T0: until every event is delivered; prints the ms since T0
wait_delivered() {
  while [ "$(q 'SELECT count(*) FROM events WHERE state = 3')" -lt "$N" ]; do sleep 0.1; done
  echo $(($(ms) - $1))
}
rate() { awk -v n="$N" -v t="$1" 'BEGIN { printf "%.0f", n * 1000 / (t > 0 ? t : 1) }'; }

t0=$(ms)
"$BIN" node --node-id bench --workers 8 --quiet 2>"$T/node.log" &
NODE=$!
t1=$(wait_delivered "$t0")
kill "$NODE"; wait "$NODE" || true; NODE=""
echo "end to end: $N failed runs and their $N webhook events in $t1 ms ($(rate "$t1") events/s)"
got=$(curl -s "http://127.0.0.1:$PORT/dump")
echo "# the receiver got $got requests (at least once: $N or more)"

q "UPDATE events SET state = 1, attempts = 0, next_at = 0, node = NULL, claim_token = NULL, finished_ms = NULL, last_error = NULL"
curl -s "http://127.0.0.1:$PORT/reset" >/dev/null
t0=$(ms)
"$BIN" node --node-id bench2 --workers 8 --quiet 2>"$T/node2.log" &
NODE=$!
t2=$(wait_delivered "$t0")
span=$(q "SELECT max(finished_ms) - min(finished_ms) FROM events")
kill "$NODE"; wait "$NODE" || true; NODE=""
echo "delivery alone (one node, one multi handle): $N events in $t2 ms ($(rate "$t2") events/s; first to last delivery $span ms, $(rate "$span") events/s)"

curl -s "http://127.0.0.1:$PORT/reset" >/dev/null
t0=$(ms)
find "$T/bodies" -name '*.json' | awk -v n="$N" 'NR <= n' |
  xargs -P8 -I{} curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @{} "$URL"
t3=$(($(ms) - t0))
echo "xargs -P8 curl: $(curl -s "http://127.0.0.1:$PORT/count") bodies in $t3 ms ($(rate "$t3") events/s)"
