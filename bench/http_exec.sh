#!/usr/bin/env bash
# HTTP jobs (issue 27 item 1): how fast one node runs N HTTP jobs due at
# the same instant, with how many threads and how much memory.
#
#   DBCRON_BIN=build/bin/dbcron bash bench/http_exec.sh [N]
#
# SQLite, one node (8 workers), a local server (tests/tools/http_target.py,
# Python, one thread per connection, nothing recorded).  N jobs (default
# 10000), each `--http GET` of a URL of its own, all `--at` one instant a
# few seconds ahead; the node starts before it.  Reported:
#  1. dbcron: runs/s from the instant to the last run's end (runs table),
#     and the node's thread count and RSS, sampled every 100 ms from
#     /proc while the runs go (the most seen);
#  2. the same N URLs fetched by `xargs -P8 curl` (a process and a
#     connection per request), for comparison.
# The server shares the machine's cores with the node (and, on a shared
# machine, with whatever else runs).  It reports; it never fails.
set -euo pipefail
BIN=${DBCRON_BIN:-build/bin/dbcron}
N=${1:-10000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/dbcron-bench-http.XXXXXX)
NODE="" SRV=""
trap '[ -n "$NODE" ] && kill "$NODE" 2>/dev/null; [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export DBCRON_DB="sqlite:$T/b.db"
command -v curl >/dev/null || { echo "curl is required" >&2; exit 2; }

ms() { date +%s%3N; }
q() { sqlite3 "$T/b.db" "$1"; }
rate() { awk -v n="$N" -v t="$1" 'BEGIN { printf "%.0f", n * 1000 / (t > 0 ? t : 1) }'; }

python3 "$SRC/tests/tools/http_target.py" - "$T/port" &
SRV=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$T/port")/ok"

"$BIN" init >/dev/null
# one instant for all, far enough ahead for the apply and the node's start
due=$(( $(date +%s) + 15 + N / 1000 ))
python3 - "$N" "$URL" "$due" >"$T/jobs.json" <<'PY'
import json, sys
n, url, due = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print(json.dumps([{"name": "h-%05d" % i, "at": str(due), "retries": 0,
                   "http": "GET %s/%05d" % (url, i)} for i in range(n)]))
PY
"$BIN" job apply "$T/jobs.json" >/dev/null
"$BIN" node --node-id bench --workers 8 --quiet 2>"$T/node.log" &
NODE=$!

# sample the node until every run has ended: the most threads and RSS seen
threads=0 rss=0
while [ "$(q 'SELECT count(*) FROM runs WHERE state >= 3')" -lt "$N" ]; do
  if [ "$(date +%s)" -ge "$due" ]; then
    th=$(awk '/^Threads:/ {print $2}' "/proc/$NODE/status")
    rs=$(awk '/^VmRSS:/ {print $2}' "/proc/$NODE/status")
    [ "$th" -gt "$threads" ] && threads=$th
    [ "$rs" -gt "$rss" ] && rss=$rs
  fi
  sleep 0.1
done
idle_threads=$(awk '/^Threads:/ {print $2}' "/proc/$NODE/status")
span=$(q "SELECT max(finished_ms) - min(fire_at) FROM runs")
ok=$(q "SELECT count(*) FROM runs WHERE state = 3")
kill "$NODE"; wait "$NODE" || true; NODE=""
echo "dbcron: $N HTTP jobs due at one instant, $ok succeeded, last ended $span ms after it ($(rate "$span") runs/s); node threads at most $threads ($idle_threads after), RSS at most $((rss / 1024)) MiB"

python3 - "$N" "$URL" >"$T/urls" <<'PY'
import sys
n, url = int(sys.argv[1]), sys.argv[2]
print("\n".join("%s/%05d" % (url, i) for i in range(n)))
PY
t0=$(ms)
xargs -P8 -n1 curl -s -o /dev/null <"$T/urls"
t1=$(($(ms) - t0))
echo "xargs -P8 curl: $N requests in $t1 ms ($(rate "$t1") requests/s)"
