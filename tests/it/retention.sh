#!/usr/bin/env bash
# Run-log retention: a node prunes finished runs older than --retention,
# under the lease lock dbcron:maintenance (one node at a time).
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

dbc job add tick --every 1s --handler noop >/dev/null
start_node r1 --retention forever
sleep 5
stop_node r1
old=$(runs_csv --job tick | awk -F, '$4 == "succeeded"' | wc -l)
assert_ge "$old" 3 "first node produced runs"
t_cut=$(date +%s%3N)
sleep 3
# two nodes with a 2 s retention: the old runs go, one pruner at a time
start_node r2 --retention 2s
start_node r3 --retention 2s
sleep 5
stop_node r2
stop_node r3
left_old=$(runs_csv --job tick | awk -F, -v t="$t_cut" '$7 != "" && $7 < t' | wc -l)
assert_eq "$left_old" 0 "finished runs older than the retention were pruned"
new=$(runs_csv --job tick | awk -F, -v t="$t_cut" '$4 == "succeeded" && $7 >= t' | wc -l)
assert_ge "$new" 1 "recent runs were kept"
dbc locks --format csv | grep -q '^dbcron:maintenance,r[23],' || fail "no maintenance lease taken: $(dbc locks --format csv)"
pass "pruning ran under the dbcron:maintenance lease"
echo "retention: all checks passed"
