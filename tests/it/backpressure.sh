#!/usr/bin/env bash
# Invariant 5 (backpressure) on SQLite: a node with one worker and an
# in-flight budget of 2 claims no more than it can hold, and the other node
# takes the rest; no fire is lost.  Concurrency is computed from the run
# log's start and finish times, executions from the file the jobs write.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

J=12
{
  echo "["
  for i in $(seq 1 $J); do
    sep=,; [ "$i" -eq $J ] && sep=
    echo "{\"name\": \"bp-$i\", \"every\": \"1s\", \"overlap\": \"allow\", \"command\": [\"sh\", \"-c\", \"echo \\\"\$DBCRON_JOB \$DBCRON_FIRE_AT_MS\\\" >> $T/exec.log; sleep 0.4\"]}$sep"
  done
  echo "]"
} > "$T/jobs.json"
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
lost=0
for i in $(seq 1 $J); do
  awk -F, -v j="bp-$i" -v end="$end_ms" '
    $1 == j && $3 == 1 { for (k = 0; k <= $9; k++) seen[sprintf("%.0f", $2 + 1000 * k)] = 1
                         if (min == "" || $2 + 0 < min) min = $2 + 0 }
    END { n = 0; for (t = min; t < end - 3000; t += 1000) if (!(sprintf("%.0f", t) in seen)) { printf "%s lost fire %.0f\n", j, t; n++ }
          exit n > 0 }' "$T/runs.csv" >&2 || lost=$((lost + 1))
done
assert_eq "$lost" 0 "no lost fire"
dups=$(awk '{ print $1 "," $2 }' "$T/exec.log" | sort | uniq -d | wc -l)
assert_eq "$dups" 0 "no duplicate execution"
echo "backpressure: all checks passed"
