#!/usr/bin/env bash
# Issue 25: the database away for longer than the lease with three nodes
# running every-second jobs, at-least-once and at-most-once (node_loss
# abandon): the server is stopped for 6 s (lease 3 s) and started again.
# Every node was cut off, so none may declare the others dead when it comes
# back: no fire that ran is run again (counted from what the jobs wrote) and
# no at-most-once run is abandoned (from the run log), and no fire is lost.
# On its own server: the outage would cut off every test beside it.
source "$(dirname "$0")/nodelib.bash"
use_private_pg

J=6 M=3
every_jobs l $J 1s "" "$RECORD" > "$T/least.json"
every_jobs m $M 1s '"node_loss": "abandon"' "$RECORD; sleep 0.5" > "$T/most.json"
dbc job apply "$T/least.json" >/dev/null
dbc job apply "$T/most.json" >/dev/null
for n in a b c; do start_node $n --lease 3s; done
ran_after() { [ "$(awk -v t="$1" '$2 > t' "$T/exec.log" 2>/dev/null | wc -l)" -ge "$2" ]; }
wait_until 30 ran_after 0 30 || fail "the nodes did not start running fires"
sleep 2

t_out=$(date +%s%3N)
bash "$DBCRON_SRC/scripts/pg-tmp.sh" outage "$PGDIR/srv" 6
t_back=$(date +%s%3N)
echo "PostgreSQL was away for $(( t_back - t_out )) ms"
wait_until 30 ran_after $(( t_back + 1000 )) 30 || fail "no fires ran after the outage"
sleep 6
end_ms=$(date +%s%3N)
for n in a b c; do stop_node $n; done

runs_csv > "$T/runs.csv"
awk '{ print $1 "," $2 }' "$T/exec.log" | sort | uniq -d > "$T/twice"
assert_eq 0 "$(wc -l < "$T/twice")" "no fire executed twice ($(head -n 3 "$T/twice" | tr '\n' ' '))"
assert_eq 0 "$(awk -F, '$4 == "abandoned"' "$T/runs.csv" | wc -l)" "no run abandoned"
check_no_loss "$T/runs.csv" l $J "$end_ms"
check_no_loss "$T/runs.csv" m $M "$end_ms"
t_done
