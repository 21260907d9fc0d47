#!/usr/bin/env bash
# Invariant 5 (backpressure) on SQLite: a node with one worker and an
# in-flight budget of 2 claims no more than it can hold, and the other node
# takes the rest; no fire is lost.  Concurrency is computed from the run
# log's start and finish times, executions from the file the jobs write.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

J=12
every_jobs bp $J 1s '"overlap": "allow"' "$RECORD; sleep 0.4" > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
start_node small --workers 1 --slow-workers 1 --max-inflight 2
start_node big --workers 16
sleep 12
end_ms=$(date +%s%3N)
stop_node small
stop_node big

runs_csv > "$T/runs.csv"
small=$(awk -F, '$5 == "small" && $4 == "succeeded"' "$T/runs.csv" | wc -l)
big=$(awk -F, '$5 == "big" && $4 == "succeeded"' "$T/runs.csv" | wc -l)
echo "runs: small=$small big=$big"
# most concurrent runs on the small node, from the run log
maxc=$(awk -F, '$5 == "small" && $6 != "" && $7 != "" { print $6, 1; print $7, -1 }' "$T/runs.csv" |
  sort -k1,1n -k2,2n | awk '{ c += $2; if (c > m) m = c } END { print m + 0 }')
assert_le "$maxc" 2 "small node never ran more than its in-flight budget"
assert_ge "$big" $((small * 2)) "the big node took most of the work"
check_no_loss "$T/runs.csv" bp $J "$end_ms"
check_no_dup_exec "$T/runs.csv"
echo "backpressure: all checks passed"
