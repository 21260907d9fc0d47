#!/usr/bin/env bash
# Fan-in (--needs; issue 26 item 3) against real nodes: a and b every
# second (b half a second after a, so that the order of their successes is
# the order they wrote), c needs a,b.  c runs exactly once per completed
# set: the sets are replayed from the times a and b wrote, c's executions
# are counted from what c wrote, and none is executed twice.  Refusals
# (an unknown needed job, a schedule beside --needs, a cycle by set and by
# apply, the delete and rename of a needed job) exit non-zero with the
# reason and write nothing; delete --force says what it detached.
# SQLite with one node; job_needs_pg.sh and job_needs_mysql.sh run it on
# PostgreSQL and MariaDB with two.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
NODES=1
[ "$BACKEND" = sqlite ] || NODES=2

rec() { echo 'echo "$(date +%s%3N) '"$1"' $DBCRON_FIRE_AT_MS" >> '"$T/$1.log"; }

t_section "refusals, nothing written"
dbc job add a --every 1s -- sh -c "$(rec a)" >/dev/null
sleep 0.5
dbc job add b --every 1s -- sh -c "$(rec b)" >/dev/null
t_refused "no job named 'zz'" job add d --needs a,zz -- true
t_refused "two schedules" job add d --needs a --every 1s -- true
dbc job add c --needs a,b -- sh -c "$(rec c)" >/dev/null
t_refused "needs make a cycle: a -> c -> a" job set a --needs c
printf '[{"name":"x","needs":["y"],"command":["true"]},{"name":"y","needs":["x"],"command":["true"]}]\n' >"$T/cycle.json"
t_refused "x -> y -> x" job apply "$T/cycle.json"
before=$(db_state)
expect_rc 1 job delete a
assert_err_contains "job 'a' is needed by c" "delete of a needed job"
expect_rc 1 job rename a a2
assert_err_contains "needed by c" "rename of a needed job"
assert_eq "$before" "$(db_state)" "database unchanged after the refused delete and rename"
assert_contains "$(dbc job show a)" "needed by:         c"
assert_contains "$(dbc job show c)" "schedule:          needs a,b"
assert_contains "$(dbc job show c --format json)" '"needs":["a","b"]'
assert_contains "$(dbc job show b --format json)" '"needed_by":["c"]'
pass "refused with the reason, nothing written; job show says what needs what"

t_section "c fires once per completed set"
for i in $(seq 1 "$NODES"); do start_node "n$i"; done
wait_until 90 sh -c "[ \$(wc -l 2>/dev/null < '$T/c.log' || echo 0) -ge 5 ]" || fail "c did not fire 5 times"
dbc job pause a >/dev/null
dbc job pause b >/dev/null
# what is in flight ends: no run running, no run of c waiting
settled() { ! runs_csv | awk -F, '$4 == "running" || ($1 == "c" && $4 == "scheduled")' | grep -q .; }
wait_until 60 settled || fail "runs still in flight 60 s after the pause"
sleep 1
wait_until 60 settled || fail "runs still in flight after the pause"
for i in $(seq 1 "$NODES"); do stop_node "n$i"; done

# the sets, replayed in the order a and b wrote
sets=$(sort -n "$T/a.log" "$T/b.log" | awk '{ f[$2] = 1; if (f["a"] && f["b"]) { n++; delete f } } END { print n + 0 }')
execs=$(wc -l < "$T/c.log")
rows=$(count_runs --job c)
echo "a: $(wc -l < "$T/a.log") runs, b: $(wc -l < "$T/b.log"), completed sets: $sets, c rows: $rows, c executed: $execs; c's rows by state: $(runs_csv --job c | cut -d, -f4 | sort | uniq -c | tr -s ' \n' ' ')"
assert_eq "$sets" "$rows" "one fire of c per completed set"
assert_eq "$(runs_where c succeeded | wc -l)" "$execs" "c's executions are its succeeded runs"
assert_eq "$execs" "$(awk '{print $3}' "$T/c.log" | sort -u | wc -l)" "no fire of c executed twice"
assert_ge "$execs" 5 "c executed"
assert_eq "$(wc -l < "$T/a.log")" "$(runs_where a succeeded | wc -l)" "a's writes are its successes"
pass "c ran $execs times for $sets completed sets, none twice"

t_section "delete --force detaches"
expect_rc 0 job delete a --force
assert_contains "$T_OUT" "detached c"
assert_contains "$(dbc job show c)" "needs 'a', which was deleted"
expect_rc 0 job set c --needs b
assert_not_contains "$(dbc job show c)" "set aside"
pass "delete --force sets the dependent aside and says so; new needs clear it"
t_done
