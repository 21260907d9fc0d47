#!/usr/bin/env bash
# Fast and slow pools (seed 004's bulkhead): a job that ran over 500 ms more
# than 10 times in the last minute moves to the slow pool; a quick job stays
# in the fast pool.  Pool choice is internal, so this reads the node's
# run.start lines (pool=fast|slow); what ran is checked in the run log.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite
dbc job add slowjob --every 1s --overlap allow --handler sleep --arg 600ms >/dev/null
dbc job add quick --every 1s --handler noop >/dev/null
start_node s1 --log-runs
sleep 16
stop_node s1
grep -q 'run.start job=slowjob .* pool=slow' "$T/node-s1.log" || fail "slow job never moved to the slow pool"
pass "a job slower than 500 ms more than 10 times moved to the slow pool"
first_slow=$(grep -n 'run.start job=slowjob .* pool=slow' "$T/node-s1.log" | head -1 | cut -d: -f1)
fast_before=$(head -n "$first_slow" "$T/node-s1.log" | grep -c 'run.start job=slowjob .* pool=fast')
assert_ge "$fast_before" 11 "it ran in the fast pool until it had been slow more than 10 times"
grep -q 'run.start job=quick .* pool=slow' "$T/node-s1.log" && fail "quick job moved to the slow pool"
pass "a quick job stayed in the fast pool"
assert_ge "$(runs_where slowjob succeeded | wc -l)" 13 "slow job's runs succeeded"
echo "node_slowpool: all checks passed"
