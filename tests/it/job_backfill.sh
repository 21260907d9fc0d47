#!/usr/bin/env bash
# Backfill (issue 28 item 5) against real nodes: two `job backfill` of the
# same range run at once make each instant of the range once between them
# (the created counts add up to the instants, the run log holds each once,
# marked backfill); two nodes run every one of them exactly once with
# DBCRON_FIRE_AT(_MS) set to its instant, never more than --max-running at
# a time (the overlap measured from the start and end times the runs
# write); a second backfill of the range makes nothing; --dry-run writes
# nothing; bad input is refused with nothing written.  SQLite by default,
# PostgreSQL and MariaDB by job_backfill_pg.sh and job_backfill_mysql.sh.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

t_section "bad input refused, nothing written"
dbc job add once --at 2030-01-01T00:00:00Z -- true >/dev/null
dbc job add minutely --cron '* * * * *' --end-at now -- true >/dev/null
t_refused "is not after --from" job backfill minutely --from now-1h --to now-2h
t_refused "is after now" job backfill minutely --from now-1h --to now+1h
t_refused "has no schedule instants" job backfill once --from now-1h --to now
t_refused "narrow it or give --force" job backfill minutely --from 2000-01-01T00:00:00Z --to now
t_refused "--max-running '0'" job backfill minutely --from now-1h --to now --max-running 0
t_refused "--from and --to are required" job backfill minutely --from now-1h
expect_rc 2 job backfill nosuch --from now-1h --to now
assert_err_contains "no job named 'nosuch'" "an unknown job"
pass "bad ranges, a job without instants, a bad cap and an unknown job are refused"

t_section "a dry run lists the instants and writes nothing"
# a fixed range: 12:00 to 12:30 excluded, one instant a minute
from=2026-01-05T12:00:00Z to=2026-01-05T12:30:00Z
before=$(db_state)
out=$(dbc job backfill minutely --from $from --to $to --dry-run)
assert_eq "$before" "$(db_state)" "database unchanged by a dry run"
assert_eq 30 "$(grep -c '^2026-01-05T12:[0-2][0-9]:00Z$' <<<"$out")" "30 instants listed"
assert_contains "$out" "2026-01-05T12:29:00Z"
assert_not_contains "$out" "2026-01-05T12:30:00Z"
pass "the dry run lists [from, to) and writes nothing"

t_section "two backfills at once make each instant once"
rec='s=$(date +%s%3N); sleep 0.3; echo "$DBCRON_FIRE_AT_MS $DBCRON_FIRE_AT $s $(date +%s%3N)" >> '"$T/bf.log"
dbc job add bf --cron '* * * * *' --end-at now --overlap allow -- sh -c "$rec" >/dev/null
dbc job backfill bf --from $from --to $to --max-running 2 --format json >"$T/a.json" &
a=$!
dbc job backfill bf --from $from --to $to --max-running 2 --format json >"$T/b.json" &
b=$!
wait $a || fail "the first backfill failed"
wait $b || fail "the second backfill failed"
ca=$(sed -E 's/.*"created":([0-9]+).*/\1/' "$T/a.json")
cb=$(sed -E 's/.*"created":([0-9]+).*/\1/' "$T/b.json")
assert_eq 30 $((ca + cb)) "created by the two backfills together ($ca + $cb)"
assert_eq 30 "$(runs_csv --job bf | grep -c .)" "runs of the job in the log"
assert_eq 30 "$(dbc runs --job bf --limit 0 | grep -c '(backfill)')" "runs marked backfill"
assert_contains "$(dbc runs --job bf --format json --limit 1)" '"kind":"backfill"'
again=$(dbc job backfill bf --from $from --to $to --format json)
assert_contains "$again" '"created":0'
assert_contains "$again" '"skipped":30'
pass "30 instants, 30 runs, each once; a third backfill makes none"

t_section "the nodes run each instant once, at most 2 at a time"
start_node n1 --workers 4
start_node n2 --workers 4
wait_until 60 sh -c "[ \$(wc -l 2>/dev/null < '$T/bf.log' || echo 0) -ge 30 ]" ||
	fail "not every backfill run ran: $(wc -l <"$T/bf.log" 2>/dev/null || echo 0) of 30"
succeeded() { [ "$(dbc runs --job bf --state succeeded --limit 0 --format csv | tail -n +2 | grep -c .)" -ge 30 ]; }
wait_until 20 succeeded || fail "not every backfill run succeeded"
t_pause 1
assert_eq 30 "$(wc -l <"$T/bf.log")" "executions (none twice)"
assert_eq 30 "$(awk '{print $1}' "$T/bf.log" | sort -u | wc -l)" "distinct instants executed"
# each instant of the range, by DBCRON_FIRE_AT_MS and by DBCRON_FIRE_AT
first=$(date -d $from +%s%3N)
want=$(for i in $(seq 0 29); do echo $((first + i * 60000)); done)
assert_eq "$want" "$(awk '{print $1}' "$T/bf.log" | sort -n)" "the instants executed are the range's"
assert_eq 1 "$(grep -c ' 2026-01-05T12:07:00Z ' "$T/bf.log")" "DBCRON_FIRE_AT is the instant"
# the most runs at once, from their own start and end times
peak=$(awk '{print $3, 1; print $4, -1}' "$T/bf.log" | sort -k1,1n -k2,2n |
	awk '{n += $2; if (n > m) m = n} END {print m}')
assert_le "$peak" 2 "most backfill runs at once (--max-running 2)"
assert_ge "$peak" 2 "the cap was reached (two nodes, overlap allow)"
stop_node n1
stop_node n2
pass "30 executions, each instant once, peak $peak at once"
t_done
