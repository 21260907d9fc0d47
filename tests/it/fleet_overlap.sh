#!/usr/bin/env bash
# Overlap across nodes (issue 28 item 2, docs/scheduler.md "Overlap across
# nodes"): jobs whose runs last longer than their period start on node n1,
# whose three workers they fill (so n1 claims nothing more); then n2 and n3
# join and meet every later fire of those jobs.  A job with overlap skip,
# queue or replace never has two runs at once anywhere in the cluster: skip
# records the fires meanwhile SKIPPED, queue runs them after, replace stops
# n1's run through the cancel path; a trigger of a busy job waits too.
# The control job with overlap allow overlaps (so the measure can see one).
# What ran when comes from what the jobs write (start and end instants),
# never from dbcron's logs.  SQLite or, given "pg" / "mysql", PostgreSQL /
# MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

# Each run appends "JOB START_MS END_MS NODE" when it ends, also when it is
# stopped (replace, the stop at the end): the trap writes the end it reached.
body='s=$(date +%s%3N); trap '"'"'echo "$DBCRON_JOB $s $(date +%s%3N) $DBCRON_NODE" >> '"$T/spans.log"'; exit 1'"'"' TERM; sleep SECS & wait; echo "$DBCRON_JOB $s $(date +%s%3N) $DBCRON_NODE" >> '"$T/spans.log"
job() { # NAME EVERY POLICY SECS
  dbc job add "$1" --every "$2" --overlap "$3" --retries 0 -- sh -c "${body//SECS/$4}" >/dev/null
}
running_on() { # JOB NODE: its run is RUNNING on NODE
  runs_csv --job "$1" --state running | awk -F, -v n="$2" '$5 == n { f = 1 } END { exit !f }'
}
spans() { grep -c "^$1 " "$T/spans.log" 2>/dev/null || echo 0; }

start_node n1 --workers 3 --grace 1s --heartbeat 500ms --lease 2s
job ov-skip 1s skip 5
job ov-queue 1s queue 3
job ov-replace 2s replace 60
for j in ov-skip ov-queue ov-replace; do
  wait_until 60 running_on "$j" n1 || fail "$j did not start on n1"
done
for n in n2 n3; do start_node "$n" --grace 1s --heartbeat 500ms --lease 2s; done
job ov-allow 1s allow 2.5
dbc job trigger ov-queue >/dev/null # waits for n1's run, as the fires do

skipped_on_n1() { runs_csv --job ov-skip --state skipped | grep -c 'still running on node n1' || true; }
# (checked below: with the rule broken, the fires run instead)
wait_until 30 sh -c "\"\$DBCRON_BIN\" runs --format csv --limit 0 --job ov-skip --state skipped |
  grep -q 'still running on node n1'" || true
wait_until 30 sh -c "\"\$DBCRON_BIN\" runs --format csv --limit 0 --job ov-replace --state cancelled |
  grep -q ',n1,'" || true
wait_until 60 sh -c "[ \$(grep -c '^ov-replace ' '$T/spans.log' 2>/dev/null || echo 0) -ge 1 ] &&
  [ \$(grep -c '^ov-queue ' '$T/spans.log' 2>/dev/null || echo 0) -ge 4 ] &&
  [ \$(grep -c '^ov-allow ' '$T/spans.log' 2>/dev/null || echo 0) -ge 3 ]" ||
  fail "the jobs did not run often enough"
wait_until 30 sh -c "\"\$DBCRON_BIN\" runs --format csv --limit 0 --job ov-replace --state running |
  grep -q ,n[123]," || true
pause_jobs ov-skip ov-queue ov-replace ov-allow
stop_nodes n1 n2 n3

# The most runs of JOB at once, from its spans (a start at the instant
# another ended is not an overlap).
max_at_once() {
  awk -v j="$1" '$1 == j { print $2, 1; print $3, -1 }' "$T/spans.log" | sort -n -k1,1 -k2,2 |
    awk '{ c += $2; if (c > m) m = c } END { print m + 0 }'
}
nodes_of() { awk -v j="$1" '$1 == j { print $4 }' "$T/spans.log" | sort -u | tr '\n' ' '; }
for j in ov-skip ov-queue ov-replace ov-allow; do
  echo "$j: $(spans "$j") runs on nodes $(nodes_of "$j")at most $(max_at_once "$j") at once"
done
assert_eq 1 "$(max_at_once ov-skip)" "overlap skip: never two runs at once in the cluster"
assert_eq 1 "$(max_at_once ov-queue)" "overlap queue: never two runs at once in the cluster"
assert_eq 1 "$(max_at_once ov-replace)" "overlap replace: never two runs at once in the cluster"
assert_ge "$(max_at_once ov-allow)" 2 "overlap allow (the control): runs overlap"
assert_ge "$(spans ov-replace)" 2 "overlap replace: a run started after the one it replaced"
assert_ge "$(skipped_on_n1)" 1 "overlap skip: n2 and n3 record the fires SKIPPED while n1 runs the job"
replaced=$(runs_csv --job ov-replace --state cancelled | grep -c ',n1,' || true)
assert_ge "$replaced" 1 "overlap replace: the run on n1 is cancelled for the new fire"

runs_csv > "$T/runs.csv"
# (the fires held when the jobs are paused at the end end SKIPPED "job paused")
queued=$(awk -F, '$1 == "ov-queue" && $4 == "skipped"' "$T/runs.csv" | grep -c 'still running' || true)
assert_eq 0 "$queued" "overlap queue: no fire skipped"
d=$(awk -F, '$3 == 1 { print $1 "," $2 }' "$T/runs.csv" | sort | uniq -d | wc -l)
assert_eq 0 "$d" "no duplicate (job, fire_at) first attempt"
t_done
