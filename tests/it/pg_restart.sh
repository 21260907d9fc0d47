#!/usr/bin/env bash
# Two nodes on PostgreSQL while the server is restarted (pg_ctl restart) and
# then stopped for 5 s:
# the nodes reconnect with backoff, start nothing while they cannot renew
# their lease, and afterwards no fire is lost or executed twice.  Counted
# from the runs table and from the file the jobs append to.
source "$(dirname "$0")/nodelib.bash"
: "${DBCRON_TEST_PGDIR:?DBCRON_TEST_PGDIR (directory of the test server) is required}"
use_backend pg

J=10
every_jobs r $J 1s "" "$RECORD" > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
start_node p1
start_node p2
pg_started() { psql "$DBCRON_DB" -qAt -c "select (extract(epoch from pg_postmaster_start_time()) * 1000)::bigint"; }
# the restart cuts off two nodes at work (their fires running, both
# registered), not two that are still starting
at_work() {
  [ "$(wc -l < "$T/exec.log" 2>/dev/null || echo 0)" -ge $((2 * J)) ] &&
    [ "$("$DBCRON_BIN" nodes --format csv | grep -c ',alive,')" -ge 2 ]
}
wait_until 120 at_work || fail "the nodes did not start: $(dbc nodes --format csv)"
t_restart=$(date +%s%3N)
bash "$DBCRON_SRC/scripts/pg-tmp.sh" restart "$DBCRON_TEST_PGDIR"
echo "restarted PostgreSQL in $(( $(date +%s%3N) - t_restart )) ms"
[ "$(pg_started)" -ge "$t_restart" ] || fail "the server was not restarted"
sleep 6
# a longer outage: fires fall due while nobody can claim them
t_outage=$(date +%s%3N)
bash "$DBCRON_SRC/scripts/pg-tmp.sh" outage "$DBCRON_TEST_PGDIR" 5
echo "PostgreSQL was down for $(( $(date +%s%3N) - t_outage )) ms"
[ "$(pg_started)" -ge "$t_outage" ] || fail "the server was not stopped and started"
sleep 10
end_ms=$(date +%s%3N)
stop_node p1
stop_node p2

runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
check_no_loss "$T/runs.csv" r $J "$end_ms"
after=$(awk -F, -v t="$t_restart" '$4 == "succeeded" && $2 > t + 2000 && $2 < t + 5000' "$T/runs.csv" | wc -l)
assert_ge "$after" 10 "fires ran right after the restart"
after=$(awk -F, -v t="$t_outage" '$4 == "succeeded" && $2 > t + 8000' "$T/runs.csv" | wc -l)
assert_ge "$after" 30 "fires ran again after the 5 s outage"
echo "pg_restart: all checks passed"
