# Three nodes on one database (sourced by cluster_sqlite.sh / cluster_pg.sh).
# Node n1 is killed with SIGKILL, n2 is frozen with SIGSTOP past its lease
# and continued.  Checks invariants 1 (no duplicate fire), 2 (no loss),
# 3 (the frozen node starts nothing it no longer owns, and its late writes
# are refused) and 5 (nobody hoards): duplicates and losses are counted from
# the runs table and from the file the jobs append to, never from dbcron's
# own logs.  On PostgreSQL the nodes table is locked for 2 s as n2 is
# continued, so that n2 cannot learn it was fenced before its timer thread
# has looked at the fires it holds: what n2 then starts shows whether its
# lease check works, not which of its threads ran first.
source "$(dirname "$0")/nodelib.bash"
use_backend "$1"

J=20
# The instant jobs also write their run id and when they started.
rec='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE $DBCRON_RUN_ID $(date +%s%3N)" >> '"$T/exec.log"
{
  every_jobs rec $J 1s "" "$rec" | sed '$d'
  echo ","
  every_jobs long 4 4s '"overlap": "allow"' "sleep 2.5; $RECORD" | sed '1d'
} > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null

# Each step waits for what the next one needs, read from the database: n1
# starts alone, so that it runs the long jobs, and is killed running one,
# right after n2 and n3 have joined; n2 is frozen once n1 was declared dead (the survivors
# resolved what it held, in the same transaction) and it holds fires ahead,
# and continued once n2 was declared dead in turn (lease 3 s: n3 took over
# its fires, and every fire n2 held is past due).
node_state() { "$DBCRON_BIN" nodes --format csv | awk -F, -v n="$1" '$1 == n { print $4 }'; }
is_dead() { [ "$(node_state "$1")" = dead ]; }
are_alive() { local n; for n in "$@"; do [ "$(node_state "$n")" = alive ] || return 1; done; }
long_on_n1() { runs_csv --state running | awk -F, '$1 ~ /^long-/ && $5 == "n1" { f = 1 } END { exit !f }'; }
start_node n1 --grace 5s
wait_until 120 long_on_n1 || fail "n1 ran no long job"
for n in n2 n3; do start_node $n --grace 5s; done
wait_until 120 are_alive n2 n3 || fail "n2 and n3 did not join: $(dbc nodes --format csv)"
kill -KILL "$(pid_of n1)"
t_kill=$(date +%s%3N)
echo "killed n1 at $(date +%T.%N)"
wait_until 120 is_dead n1 || fail "n1 not declared dead: $(dbc nodes --format csv)"
# n2 is frozen while it holds claimed fires that are not due yet: they fall
# due while it is frozen, and what it does with them once continued is the
# check of its lease (a node polls at its own phase, so which survivor holds
# the next fires at a given instant is chance)
n2_holds() {
  runs_csv --state scheduled | awk -F, -v now="$(date +%s%3N)" '$5 == "n2" && $2 > now + 200 { f = 1 } END { exit !f }'
}
wait_until 120 n2_holds || fail "n2 claimed no fires ahead"
kill -STOP "$(pid_of n2)"
echo "froze n2 at $(date +%T.%N)"
if [ "$1" = sqlite ]; then
  # lease 3 s: n3 must take over n2's fires; but a node frozen inside a
  # write transaction holds the file's write lock, and then nobody can
  # declare it dead until it is continued: a fixed window
  sleep 7
else
  wait_until 120 is_dead n2 || fail "n2 not declared dead while frozen: $(dbc nodes --format csv)"
fi
if [ "$1" = pg ]; then
  # The locker says when it holds the lock (a file it makes while holding
  # it): a poll of pg_locks could miss the whole 2 s on a loaded machine.
  printf '%s\n' 'BEGIN;' 'LOCK TABLE nodes IN EXCLUSIVE MODE;' "\\! touch $T/nodes-locked" \
    'SELECT pg_sleep(2);' 'COMMIT;' | psql "$T_DB_URL" -XAtq -v ON_ERROR_STOP=1 >/dev/null &
  locker=$!
  wait_until 120 test -e "$T/nodes-locked" || fail "could not lock the nodes table"
fi
kill -CONT "$(pid_of n2)"
t_cont=$(date +%s%3N)
echo "continued n2 at $(date +%T.%N)"
[ "$1" = pg ] && { wait "$locker" || fail "the lock of the nodes table failed"; }
sleep 8
end_ms=$(( $(date +%s%3N) ))
stop_nodes n2 n3

runs_csv > "$T/runs.csv"
echo "runs: $(wc -l < "$T/runs.csv") rows, executions recorded by jobs: $(wc -l < "$T/exec.log")"

# Invariant 1, from the database: at most one row per (job, fire, attempt)
dups=$(cut -d, -f1-3 "$T/runs.csv" | sort | uniq -d | wc -l)
assert_eq 0 "$dups" "no duplicate (job, fire_at, attempt) rows"

# Duplicate executions, from what the jobs recorded.
check_no_dup_exec "$T/runs.csv"

# Invariant 3 from the node's side: a node starts only runs it owns, and
# none after the reap resolved it.  (An execution the run log explains as
# abandoned and retried passes check_no_dup_exec; this one does not: the
# frozen node must not start, once continued, the fires it held.)
dbc runs --format json --limit 0 > "$T/runs.json"
stale=$(python3 - "$T/runs.json" "$T/exec.log" <<'PY'
import json, sys
runs = {r["id"]: r for r in json.load(open(sys.argv[1]))}
bad = 0
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) != 6:
        continue  # the long jobs write when they end, not their run
    job, fire, attempt, node, rid, at = f
    r = runs.get(int(rid))
    if r is None or r["node"] != node or (
            r["state"] == "abandoned" and r["finished_ms"] is not None and int(at) > r["finished_ms"]):
        print("started a run it did not own: %s (run log: %s)" % (line.strip(), r), file=sys.stderr)
        bad += 1
print(bad)
PY
)
assert_eq 0 "$stale" "no node started a run it no longer owned (the continued one included)"

# Invariant 2: every fire instant of every rec job from its first fire to
# 3 s before the end is in the run log, and every succeeded run really ran.
check_no_loss "$T/runs.csv" rec $J "$end_ms"
awk -F, '$4 == "succeeded" && $1 ~ /^rec-/ { print $1 " " $2 }' "$T/runs.csv" | sort -u > "$T/succ"
awk '{ print $1 " " $2 }' "$T/exec.log" | sort -u > "$T/ran"
missing=$(comm -23 "$T/succ" "$T/ran" | wc -l)
assert_eq 0 "$missing" "every succeeded run was really executed"

# The killed node is declared dead; its running long job was resolved.
dbc nodes --format csv | grep -q "^n1,.*dead" || fail "n1 not marked dead: $(dbc nodes --format csv)"
pass "killed node marked dead"
# Which survivor wins each claim is a race (and on SQLite a node frozen
# inside a write transaction holds the file's write lock, stalling everyone
# until it is continued), so count the survivors together.
after_kill=$(awk -F, -v t="$t_kill" '$2 > t && ($5 == "n2" || $5 == "n3") && $4 == "succeeded"' "$T/runs.csv" | wc -l)
assert_ge "$after_kill" 20 "fires kept running on the survivors after the kill"
after_cont=$(awk -F, -v t="$t_cont" '$2 > t + 1000 && $4 == "succeeded"' "$T/runs.csv" | wc -l)
assert_ge "$after_cont" 20 "fires ran after the frozen node was continued"
left=$(awk -F, '$4 == "running"' "$T/runs.csv" | wc -l)
assert_eq 0 "$left" "no run left RUNNING after the survivors stopped"
echo "cluster ($1): all checks passed"
