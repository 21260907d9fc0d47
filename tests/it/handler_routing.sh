#!/usr/bin/env bash
# Handler routing (issue 15): a claim gives a node only the fires it can
# run.  Two node processes share the database: "plain" (`dbcron node`,
# built-in handlers only) and the C example of examples/ (it registers
# "append-line").  Job "mine" names append-line: `job add` takes it with a
# warning; while plain is alone it claims the shell job's fires but neither
# mine's due fires nor its triggered run (mine's misfire threshold is an
# hour: they wait); once the example runs, it runs them all.  Job "orphan"
# names a handler no process has: past its 1 s threshold its fires end
# MISFIRED with the reason, and so does a run of it triggered while plain
# runs (claimed by plain, once).  Checked from the run log, node_handlers
# and what the jobs wrote.  SQLite or, given "pg", PostgreSQL, "mysql",
# MySQL/MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
example=$(dirname "$DBCRON_BIN")/dbcron-example-embed
[ -x "$example" ] || fail "$example was not built"
out=$T/handler.out
shlog=$T/sh.log

"$DBCRON_BIN" job add mine --every 1s --handler append-line --arg mine --misfire-threshold 1h \
  >/dev/null 2>"$T/add.err" ||
  fail "job add of a handler no local process knows: $(cat "$T/add.err")"
grep -q "warning: handler 'append-line' is not built in" "$T/add.err" || fail "job add said: $(cat "$T/add.err")"
pass "job add takes a handler only embedding programs have, with a warning"
dbc job add orphan --every 1s --handler nobody-has-it --misfire-threshold 1s >/dev/null 2>&1
dbc job add sh --every 1s -- sh -c 'echo "$DBCRON_FIRE_AT_MS $DBCRON_NODE" >> '"$shlog" >/dev/null

lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
start_node plain
wait_until 120 sh -c "[ \$(wc -l < '$shlog' 2>/dev/null || echo 0) -ge 3 ]" || fail "plain ran no shell job"
assert_eq "noop sleep " \
  "$(sql "select handler from node_handlers where node_id = 'plain' order by handler" | tr '\n' ' ')" \
  "plain registered its handlers: the built-ins"
run_id=$(dbc job trigger mine | sed -E 's/.* run ([0-9]+) at .*/\1/')
orphan_run=$(dbc job trigger orphan | sed -E 's/.* run ([0-9]+) at .*/\1/')
[ -n "$orphan_run" ] || fail "job trigger orphan gave no run id"
orphan_why="no live node has registered handler 'nobody-has-it'"
orphan_lit="'$(printf %s "$orphan_why" | sed "s/'/''/g")'" # as an SQL literal
# counted from the database: the run itself, MISFIRED, with the reason
orphan_done() {
  [ "$(sql "select count(*) from runs where id = $orphan_run and state = 7 and node = 'plain' and error = $orphan_lit")" = 1 ]
}
wait_until 120 orphan_done ||
  fail "triggered run $orphan_run of orphan: $(sql "select state, node, error from runs where id = $orphan_run")"
pass "a triggered run of a job no live node can run ends MISFIRED with the reason past its threshold"
# plain goes on claiming: three more shell fires after the trigger
n0=$(lines "$shlog")
wait_until 120 sh -c "[ \$(wc -l < '$shlog') -ge $((n0 + 3)) ]" || fail "plain stopped claiming"
assert_eq "scheduled/ " "$(runs_csv --job mine | awk -F, '{print $4 "/" $5}' | tr '\n' ' ')" \
  "while only plain runs, mine has just its triggered run, unclaimed"
[ -f "$out" ] && fail "something ran append-line without the example"
why="no live node has registered handler 'append-line'"
dbc job list | grep -q "^mine .*($why)$" || fail "job list does not say: $why"
dbc job list | grep "^sh " | grep -q "no live node" && fail "job list says a command cannot run"
dbc job show mine | grep -q "^runs on: *$why" || fail "job show does not say: $why"
dbc job list --format json | grep '"name":"mine"' | grep -q "\"unrunnable\":\"$why\"" ||
  fail "job list --format json has no unrunnable for mine"
pass "job list, job show and the JSON say that no live node can run mine"

"$example" "$DBCRON_DB" "$out" >"$T/node-example.log" 2>&1 &
ex=$!
NODE_PIDS+=("$ex")
done_run() { runs_csv --job mine | awk -F, -v id="$run_id" '$11 == id && $4 == "succeeded"' | grep -q .; }
wait_until 120 sh -c "[ \$(awk '\$1 == \"mine\"' '$out' 2>/dev/null | wc -l) -ge 3 ]" ||
  fail "the example ran mine $(awk '$1 == "mine"' "$out" 2>/dev/null | wc -l) times in 120 s"
wait_until 120 done_run || fail "the triggered run $run_id did not succeed"
pass "the node with the handler runs mine, its triggered run included"
dbc job list | grep "^mine " | grep -q "no live node" && fail "job list still says no live node runs mine"
pass "with the example alive, job list has nothing to say about mine"
kill -TERM "$ex"
rc=0
wait "$ex" || rc=$?
assert_eq 0 "$rc" "the example stops cleanly"
stop_node plain

ex_node=$(runs_csv --job mine | awk -F, -v id="$run_id" '$11 == id {print $5}')
[ -n "$ex_node" ] && [ "$ex_node" != plain ] || fail "the triggered run ran on '$ex_node'"
assert_eq 0 "$(runs_csv | awk -F, '$5 == "plain" && $1 != "sh" && $4 != "misfired"' | wc -l)" \
  "plain claimed no run of a handler job it lacks (mine, tick, cron-tick), but to end it MISFIRED"
# (a fire claimed just before the stop is handed back: unclaimed, no node)
assert_eq 0 "$(runs_csv --job mine | awk -F, -v n="$ex_node" '$5 != "" && $5 != n' | wc -l)" \
  "every run of mine is the example's"
assert_eq 0 "$(runs_csv --job mine | awk -F, '$4 == "failed"' | wc -l)" "no run of mine failed"
assert_eq "$(awk '$1 == "mine"' "$out" | wc -l)" "$(runs_where mine succeeded | wc -l)" \
  "mine's succeeded runs = the lines its handler wrote"
assert_ge "$(runs_csv --job sh | awk -F, '$5 == "plain"' | wc -l)" 3 "plain ran the shell job"
assert_ge "$(runs_where orphan misfired | wc -l)" 1 "orphan's fires past its threshold end MISFIRED"
assert_eq 0 "$(runs_csv --job orphan | awk -F, '$4 != "misfired"' | wc -l)" "and nothing else"
assert_eq 0 "$(sql "select count(*) from runs r join jobs j on j.id = r.job_id where j.name = 'orphan' and (r.state <> 7 or r.error <> $orphan_lit)")" \
  "each with the reason, naming the handler"
