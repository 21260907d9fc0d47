#!/usr/bin/env bash
# Run-log retention: a node prunes finished runs older than --retention,
# under the lease lock dbcron:maintenance (one pruner at a time): while
# anyone else holds that lease, no node prunes.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

dbc job add tick --every 1s --handler noop >/dev/null
start_node r1 --retention forever
three_ran() { [ "$(runs_csv --job tick | awk -F, '$4 == "succeeded"' | wc -l)" -ge 3 ]; }
wait_until 120 three_ran || true
stop_node r1
old=$(runs_csv --job tick | awk -F, '$4 == "succeeded"' | wc -l)
assert_ge "$old" 3 "first node produced runs"
t_cut=$(date +%s%3N)
sleep 3
old_left() { runs_csv --job tick | awk -F, -v t="$t_cut" '$7 != "" && $7 < t' | wc -l; }
before=$(old_left)

# Someone else holds the maintenance lease (here `dbcron lock`, as an
# operator could): a node with a 2 s retention, whose first maintenance
# pass comes 2 s after its start, must leave the old runs alone.
dbc lock dbcron:maintenance --ttl 30s --owner operator -- sleep 8 >/dev/null 2>&1 &
holder=$!
wait_until 120 sh -c "'$DBCRON_BIN' locks --format csv | grep -q '^dbcron:maintenance,operator,.*,held$'" ||
  fail "the operator did not get the maintenance lease: $(dbc locks --format csv)"
start_node r2 --retention 2s
sleep 5
stop_node r2
assert_eq "$before" "$(old_left)" "no run pruned while another owner held dbcron:maintenance"
wait "$holder" || fail "dbcron lock exited with status $?"

# Two nodes with a 2 s retention, the lease free: the old runs go.
start_node r2 --retention 2s
start_node r3 --retention 2s
pruned() { [ "$(old_left)" = 0 ]; }
wait_until 120 pruned || true
stop_node r2
stop_node r3
assert_eq 0 "$(old_left)" "finished runs older than the retention were pruned"
new=$(runs_csv --job tick | awk -F, -v t="$t_cut" '$4 == "succeeded" && $7 >= t' | wc -l)
assert_ge "$new" 1 "recent runs were kept"
dbc locks --format csv | grep -q '^dbcron:maintenance,r[23],' || fail "no maintenance lease taken: $(dbc locks --format csv)"
pass "pruning ran under the dbcron:maintenance lease"
echo "retention: all checks passed"
