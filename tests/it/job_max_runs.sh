#!/usr/bin/env bash
# --max-runs N (issue 28 item 7) against three nodes claiming at once: a
# job fires exactly N times (counted from what it writes, each instant
# once), then has no next fire; `job show` says how many fired; raising the
# limit with `job set` fires it again up to the new one; bad input is
# refused with nothing written.  SQLite; job_max_runs_pg.sh on PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

t_section "bad input refused"
t_refused "--max-runs: -1 is out of range" job add bad --every 1s --max-runs -1 -- true
t_refused "expected an integer" job add bad --every 1s --max-runs many -- true
pass "a negative or non-numeric limit is refused"

t_section "three nodes, the job fires exactly 4 times"
rec='echo "$DBCRON_FIRE_AT_MS $DBCRON_NODE" >> '"$T/m.log"
dbc job add m --every 200ms --max-runs 4 --overlap allow -- sh -c "$rec" >/dev/null
dbc job add ref --every 200ms --overlap allow -- sh -c 'echo x >> '"$T/ref.log" >/dev/null
assert_contains "$(dbc job show m)" "max-runs:          4 (0 fired)"
assert_eq 4 "$(dbc job show m --format json | grep -o '"at_ms"' | wc -l)" "the preview shows the 4 fires left"
for n in n1 n2 n3; do start_node $n --preread 100ms; done
wait_until 30 sh -c "[ \$(wc -l 2>/dev/null < '$T/m.log' || echo 0) -ge 4 ]" || fail "the job did not fire 4 times"
# the control job goes on for a while: room for a fifth fire to show
ref0=$(wc -l <"$T/ref.log")
wait_until 30 sh -c "[ \$(wc -l < '$T/ref.log') -ge $((ref0 + 8)) ]" || fail "the control job stopped"
assert_eq 4 "$(wc -l <"$T/m.log")" "fires of a job with --max-runs 4"
assert_eq 4 "$(awk '{print $1}' "$T/m.log" | sort -u | wc -l)" "distinct instants"
assert_contains "$(dbc job show m)" "max-runs:          4 (4 fired)"
assert_contains "$(dbc job show m)" "next fire:         -"
pass "4 fires on $(awk '{print $2}' "$T/m.log" | sort -u | wc -l) node(s), then none"

t_section "a higher limit fires it again, up to the new one"
dbc job set m --max-runs 6 >/dev/null
wait_until 30 sh -c "[ \$(wc -l < '$T/m.log') -ge 6 ]" || fail "the job did not fire again"
ref0=$(wc -l <"$T/ref.log")
wait_until 30 sh -c "[ \$(wc -l < '$T/ref.log') -ge $((ref0 + 8)) ]" || fail "the control job stopped"
assert_eq 6 "$(wc -l <"$T/m.log")" "fires after --max-runs 6"
assert_contains "$(dbc job show m)" "max-runs:          6 (6 fired)"
for n in n1 n2 n3; do stop_node $n; done
pass "6 fires in all"
t_done
