#!/usr/bin/env bash
# The HTTP API under load, and what that load does to the scheduler beside it.
#
#   DBCRON_BIN=build/bin/dbcron bash bench/http.sh [JOBS] [RUNS] [REQUESTS] [CONC]
#
# SQLite, one node with --http: JOBS jobs (default 10000; 100 of them fire
# every second on the noop handler, the rest hourly), a run log of RUNS rows
# (default 1000000, inserted with SQL), then ab (apache2-utils) against
# /api/v1/jobs (the first page of 100), a jobs page half-way down by its
# cursor, the largest jobs page (1000), /api/v1/runs?limit=50, a deep runs
# page (a cursor far down the log) and /metrics, REQUESTS requests each at CONC concurrent clients.  The
# every-second jobs' start lateness (run log: started - due) is reported for
# a quiet window and for the window under load.  It reports; it never fails.
set -euo pipefail
BIN=${DBCRON_BIN:-build/bin/dbcron}
JOBS=${1:-10000} RUNS=${2:-1000000} N=${3:-2000} C=${4:-8}
T=$(mktemp -d /tmp/dbcron-bench-http.XXXXXX)
NODE=""
trap '[ -n "$NODE" ] && kill "$NODE" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export DBCRON_DB="sqlite:$T/b.db"
command -v ab >/dev/null || { echo "ab is required (apache2-utils)" >&2; exit 2; }

"$BIN" init >/dev/null
python3 - "$JOBS" >"$T/jobs.json" <<'EOF'
import json, sys
n = int(sys.argv[1])
jobs = [{"name": "fast-%03d" % i, "every": "1s", "handler": "noop"} for i in range(min(100, n))]
jobs += [{"name": "slow-%05d" % i, "every": "1h", "handler": "noop"} for i in range(n - len(jobs))]
print(json.dumps(jobs))
EOF
"$BIN" job apply "$T/jobs.json" >/dev/null
# the run log: finished runs of the hourly jobs, one a second back from now
now=$(($(date +%s) * 1000))
sqlite3 "$T/b.db" <<EOF
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < $RUNS - 1)
INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, started_ms,
                  finished_ms, exit_code, created_ms)
SELECT j.id, j.name, $now - 1000 * (k.i + 1), 1, 3, $now - 1000 * (k.i + 1), 'old',
       $now - 1000 * (k.i + 1) + 2, $now - 1000 * (k.i + 1) + 5, 0, $now
FROM k JOIN jobs j ON j.id = 101 + (k.i % max(1, $JOBS - 100));
EOF
state_ok=$(sqlite3 "$T/b.db" "select count(*) from runs where state = 3")
echo "# $JOBS jobs, $state_ok runs in the log (state 3 = succeeded)"

: >"$T/node.log"
"$BIN" node --node-id bench --http 127.0.0.1:0 --retention forever 2>"$T/node.log" &
NODE=$!
for _ in $(seq 300); do grep -q 'event=http.listen' "$T/node.log" && break; sleep 0.1; done
PORT=$(grep -o 'event=http.listen .*port=[0-9]*' "$T/node.log" | grep -o '[0-9]*$')
sleep 5

lateness() { # FROM_MS TO_MS: p50 p99 max of started - due for the fast jobs
	sqlite3 "$T/b.db" "select started_ms - due_at from runs where job_name like 'fast-%'
		and started_ms is not null and due_at >= $1 and due_at < $2 order by 1" |
		awk '{v[NR] = $1} END { if (!NR) { print "no runs"; exit }
			i = int(NR * 0.99) + 1; if (i > NR) i = NR
			printf "%d runs, p50 %d ms, p99 %d ms, max %d ms\n", NR, v[int(NR * 0.5) + 1], v[i], v[NR] }'
}
ms() { echo $(($(date +%s%N) / 1000000)); }

t0=$(ms)
sleep 10
t1=$(ms)
echo "# quiet 10 s: fast-job start lateness: $(lateness "$t0" "$t1")"

cursor=$(curl -s "http://127.0.0.1:$PORT/api/v1/runs?limit=1000" | python3 -c '
import json, sys; print(json.load(sys.stdin)["next_cursor"])')
deep=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$cursor")
t2=$(ms)
for path in /api/v1/jobs "/api/v1/jobs?cursor=slow-05000" "/api/v1/jobs?limit=1000" \
	"/api/v1/runs?limit=50" "/api/v1/runs?limit=50&cursor=$deep" /metrics; do
	n=$N
	[ "$path" = "/api/v1/jobs?limit=1000" ] && n=$((N / 10)) # 1,000 jobs a response: fewer
	out=$(ab -q -n "$n" -c "$C" "http://127.0.0.1:$PORT$path" 2>&1)
	rps=$(awk '/^Requests per second/ {print $4}' <<<"$out")
	p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	size=$(awk '/^Document Length/ {print $3}' <<<"$out")
	failed=$(awk '/^Failed requests/ {print $3}' <<<"$out")
	printf '%-40s %6s req/s  p50 %4s ms  p99 %4s ms  %8s bytes  %s failed  (%d requests)\n' \
		"${path:0:40}" "$rps" "$p50" "$p99" "$size" "$failed" "$n"
done
t3=$(ms)
# one scraper at a time, as Prometheus scrapes: the time of one scrape
out=$(ab -q -n 200 -c 1 "http://127.0.0.1:$PORT/metrics" 2>&1)
printf '%-40s %6s req/s  p50 %4s ms  p99 %4s ms  (200 requests, 1 client)\n' "/metrics" \
	"$(awk '/^Requests per second/ {print $4}' <<<"$out")" "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
	"$(awk '$1 == "99%" {print $2}' <<<"$out")"
echo "# under load $(((t3 - t2) / 1000)) s: fast-job start lateness: $(lateness "$t2" "$t3")"
