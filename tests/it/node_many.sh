#!/usr/bin/env bash
# Many jobs on one node (more than the node's first hash table holds): every
# fire of 600 every-second cron jobs runs once, none is lost.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite
J=600
{
  echo "["
  for i in $(seq 1 $J); do
    sep=,; [ "$i" -eq $J ] && sep=
    echo "{\"name\": \"m-$i\", \"cron\": \"* * * * * ?\", \"handler\": \"noop\"}$sep"
  done
  echo "]"
} > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
start_node many
sleep 8
end_ms=$(date +%s%3N)
stop_node many
runs_csv > "$T/runs.csv"
check_no_loss "$T/runs.csv" m $J "$end_ms"
assert_eq 0 "$(cut -d, -f1-3 "$T/runs.csv" | sort | uniq -d | wc -l)" "no duplicate fire"
ok=$(awk -F, '$4 == "succeeded"' "$T/runs.csv" | wc -l)
assert_ge "$ok" $((J * 4)) "fires of all $J jobs ran"
echo "node_many: all checks passed"
