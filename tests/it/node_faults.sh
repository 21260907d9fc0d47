#!/usr/bin/env bash
# Failed writes through the store's fault seam (DBCRON_TEST_FAULTS, see
# docs/store.md), counted from the run log and from what the jobs write:
#  1. a start write that fails for a while (busy) is retried: an
#     at-most-once job's fires are not stranded SCHEDULED under the live
#     node, none is skipped as "previous run still running" behind a start
#     that was only waiting for its write, and each fire that ran, ran once;
#  2. start writes that never land, then kill -9 of the node: the node ran
#     fires the database still shows SCHEDULED.  The takeover ends them
#     ABANDONED "node lost before its start was written": an at-most-once job
#     never runs such a fire twice, an at-least-once one runs it again as a
#     new attempt (so a duplicate is explained by the run log);
#  3. lost COMMIT replies (the statement committed, the node was told it
#     failed): a claim that landed is released back to the pool instead of
#     leaving its runs SCHEDULED under the live node forever (they never
#     ran), and a final write that landed is not reported as fenced when
#     its retry finds the run already ended.
# Runs on SQLite or, given "pg", on PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
t_need_fault_seam
use_backend "${1:-sqlite}"

rec() { echo 'echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE" >> '"$T/$1.log"; }

# Part 3 runs beside part 2, on a database of its own (DB3) with a node of
# its own, started with part 2: its 12 s window passes while part 2 runs.
# (Not beside part 1, whose check of skips reads start times: the second
# node's load on a busy machine moved one past its bound once.)
DB3=$(t_fresh_url "$BACKEND" dbcron_it3) || fail "no second database"
DBCRON_DB=$DB3 "$DBCRON_BIN" init >/dev/null

# --- 1. a start write busy six times (about 6 s of backoff) ------------
dbc job add amo --every 1s --node-loss abandon --misfire skip -- sh -c "$(rec amo)" >/dev/null
DBCRON_TEST_FAULTS="stmt=runs_apply,kind=busy,nth=1,times=6" start_node f1
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/amo.log' || echo 0) -ge 4 ]" ||
  fail "the at-most-once job did not run after the write faults"
sleep 3
now=$(( $(date +%s%3N) ))
stranded=$(runs_csv --job amo | awk -F, -v now="$now" '$4 == "scheduled" && $5 != "" && $2 < now - 3000' | wc -l)
assert_eq 0 "$stranded" "no fire left SCHEDULED under the live node after failed start writes"
stop_node f1
# A node armed with faults says so loudly, once, at start (a test build in
# a real deployment is seen in its log at once).
assert_eq 1 "$(grep -c 'level=warn event=node.faults_armed .*faults="stmt=runs_apply,kind=busy,nth=1,times=6"' "$T/node-f1.log")" \
  "the node warns at start that its statements will fail on purpose"
# A fire due while the previous one still waits for its fenced start is
# held, not skipped as "still running": nothing was running.
# (On a loaded machine a run may really outlast the second to the next
# fire: a skip is wrong only where the previous fire's run had not started
# by then, or had already ended.)
assert_eq 0 "$(runs_csv --job amo | sort -t, -k2,2n | awk -F, '
    $4 == "skipped" && /previous run still running/ {
      if (!(pstart != "" && pstart <= $2 && (pfin == "" || pfin > $2))) n++
      next }
    $3 == 1 && $6 != "" { pstart = $6; pfin = $7 }
    END { print n + 0 }')" \
  "no fire skipped for a previous run that had not started"
dups=$(awk '{ print $1 "," $2 }' "$T/amo.log" | sort | uniq -d | wc -l)
assert_eq 0 "$dups" "at-most-once: no fire ran twice"
runs_where amo succeeded | cut -d, -f2 | sort > "$T/amo.db"
awk '{ print $2 }' "$T/amo.log" | sort > "$T/amo.ran"
cmp -s "$T/amo.db" "$T/amo.ran" || fail "at-most-once: what ran differs from the run log"
pass "at-most-once: every run that executed is recorded SUCCEEDED"
dbc job delete amo >/dev/null

# --- 2. start writes that never land, then kill -9 ---------------------------
# (part 3's jobs are added right before its node starts, as when it ran
# alone: which COMMITs lose their replies depends on what the node's first
# statements are, and jobs added long before start with fires missed)
for i in 1 2 3; do
  DBCRON_DB=$DB3 dbc job add "lost-$i" --every 1s --misfire skip -- sh -c "$(rec lost)" >/dev/null
done
t0=$(date +%s%3N)
DBCRON_TEST_FAULTS="stmt=commit,kind=reply_lost,nth=4,times=8;stmt=runs_apply,kind=reply_lost,nth=3,times=4" \
  start_node f4 --db "$DB3"
dbc job add once --every 1s --node-loss abandon --misfire skip -- sh -c "$(rec once)" >/dev/null
dbc job add least --every 1s --misfire skip -- sh -c "$(rec least)" >/dev/null
DBCRON_TEST_FAULTS="stmt=runs_apply,kind=conn,nth=1,times=0" start_node f2 --lease 2s
wait_until 120 test -s "$T/least.log" || fail "f2 ran nothing"
sleep 2
kill -KILL "$(pid_of f2)"
ran_by_f2=$(wc -l < "$T/least.log")
start_node f3 --lease 2s
wait_until 120 grep -q " f3$" "$T/least.log" || fail "f3 took nothing over"
sleep 4
stop_node f3

[ -s "$T/once.log" ] && o=$(awk '{ print $1 "," $2 }' "$T/once.log" | sort | uniq -d | wc -l) || o=0
assert_eq 0 "$o" "at-most-once: no fire ran twice after its node died with the start unwritten"
runs_csv > "$T/runs.csv"
awk -F, '$1 == "least" && $4 == "abandoned"' "$T/runs.csv" > "$T/ab.csv"
assert_ge "$(wc -l < "$T/ab.csv")" 1 "the runs f2 held are ended ABANDONED"
grep -q "node lost before its start was written" "$T/ab.csv" ||
  fail "the abandoned runs do not say their start was never written: $(head -3 "$T/ab.csv")"
pass "the abandoned runs say their start was never written"
# f2's executions are explained: each duplicate has its abandoned first attempt
cp "$T/least.log" "$T/exec.log"
check_no_dup_exec "$T/runs.csv"
assert_ge "$ran_by_f2" 1 "f2 ran fires whose starts never landed"

# --- 3. lost COMMIT replies ---------------------------------------------------
# (f4 started at t0 on DB3, part 3's setup above; at least 12 s of it, as
# when it ran alone)
export DBCRON_DB=$DB3
left=$(( t0 + 12000 - $(date +%s%3N) ))
[ "$left" -le 0 ] || sleep "$(awk -v l="$left" 'BEGIN { printf "%.3f", l / 1000 }')"
t1=$(date +%s%3N)
stop_node f4
grep -q 'reply was lost' "$T/node-f4.log" || fail "no reply was lost (the faults did not fire)"
runs_csv > "$T/runs.csv"
stranded=$(awk -F, -v t1="$t1" '$1 ~ /^lost-/ && $4 == "scheduled" && $2 < t1 - 3000' "$T/runs.csv" | wc -l)
assert_eq 0 "$stranded" "no fire left SCHEDULED under the live node after lost COMMIT replies"
# every instant from the first fire to 3 s before the stop has a run
check_no_loss "$T/runs.csv" lost 3 "$t1"
assert_eq 0 "$(grep -c 'event=run.fenced' "$T/node-f4.log" || true)" \
  "a final write that had landed is not reported as fenced"
cp "$T/lost.log" "$T/exec.log"
check_no_dup_exec "$T/runs.csv"
echo "node_faults: all checks passed"
