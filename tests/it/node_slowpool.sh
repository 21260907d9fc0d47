#!/usr/bin/env bash
# Fast and slow pools (seed 004's bulkhead): a job that ran over 500 ms more
# than 10 times in the last minute moves to the slow pool; a quick job stays
# in the fast pool and keeps being claimed.  Pool choice is internal, so
# this reads the node's run.start lines (pool=fast|slow); what ran is
# checked in the run log.  The claim batch (2) is no larger than the slow
# pool's budget: the claim once gave that budget the whole batch, and the
# quick job's fires stayed unclaimed for as long as the other job was slow
# (seen after failovers, issue 25, with --claim-batch 4 on three nodes).
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite
dbc job add slowjob --every 1s --overlap allow --handler sleep --arg 600ms >/dev/null
dbc job add quick --every 1s --handler noop >/dev/null
start_node s1 --log-runs --claim-batch 2
slow_line() { grep -m 1 'run.start job=slowjob .* pool=slow' "$T/node-s1.log"; }
wait_until 60 slow_line >/dev/null || fail "slow job never moved to the slow pool"
pass "a job slower than 500 ms more than 10 times moved to the slow pool"
demoted=$(slow_line | sed 's/.* fire_at=\([0-9]*\) .*/\1/')
# the quick job's next four fires after that are claimed and run
quick_after() {
  [ "$(runs_where quick succeeded | awk -F, -v t="$demoted" '$2 + 0 > t' | wc -l)" -ge 4 ]
}
wait_until 60 quick_after ||
  fail "the quick job's fires after $demoted were not claimed while the other job was slow"
pass "the quick job kept being claimed while the other job was slow"
stop_node s1
first_slow=$(grep -n 'run.start job=slowjob .* pool=slow' "$T/node-s1.log" | head -1 | cut -d: -f1)
fast_before=$(head -n "$first_slow" "$T/node-s1.log" | grep -c 'run.start job=slowjob .* pool=fast')
assert_ge "$fast_before" 11 "it ran in the fast pool until it had been slow more than 10 times"
grep -q 'run.start job=quick .* pool=slow' "$T/node-s1.log" && fail "quick job moved to the slow pool"
pass "a quick job stayed in the fast pool"
assert_ge "$(runs_where slowjob succeeded | wc -l)" 13 "slow job's runs succeeded"
echo "node_slowpool: all checks passed"
