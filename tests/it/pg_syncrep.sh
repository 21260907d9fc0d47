#!/usr/bin/env bash
# Issue 25: a COMMIT whose wait for a synchronous standby is cancelled is
# reported by PostgreSQL as a success with a WARNING ("canceling wait for
# synchronous replication ... committed locally, but might not have been
# replicated"); after a failover it may be gone.  Here the private server
# waits for a standby that does not exist (synchronous_standby_names) and
# every such wait is cancelled (pg_cancel_backend, as a statement_timeout or
# an operator would): no write of the node is confirmed, so the node must
# start no fire (its lease is never renewed, its claims are in doubt), and
# once the standby setting is lifted it schedules again, with no fire
# executed twice or lost.  Counted from what the jobs wrote and the run log.
source "$(dirname "$0")/nodelib.bash"
use_private_pg
pgsql() { psql "$DBCRON_DB" -XAtq "$@"; }
pgsql -c "alter system set synchronous_commit = on" -c "select pg_reload_conf()" >/dev/null

J=3
# what ran, and when (ms, the last field)
REC='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE $(date +%s%3N)" >> '"$T/exec.log"
every_jobs s $J 1s "" "$REC" > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
start_node n --lease 3s
ran_after() { [ "$(awk -v t="$1" '$2 > t' "$T/exec.log" 2>/dev/null | wc -l)" -ge "$2" ]; }
wait_until 30 ran_after 0 6 || fail "the node did not start running fires"

t_broken=$(date +%s%3N)
pgsql -c "alter system set synchronous_standby_names = 'nosuch'" -c "select pg_reload_conf()" >/dev/null
cancel_waits() {
  while :; do
    psql "$DBCRON_DB" -XAtq -c "select pg_cancel_backend(pid) from pg_stat_activity where wait_event = 'SyncRep'" >/dev/null 2>&1 || true
    sleep 0.2
  done
}
t_bg cancel_waits
canceller=$T_BG_PID
said() { grep -q "outcome unknown" "$T/node-n.log"; }
wait_until 15 said || _t_fail "the node did not take a cancelled synchronous commit as an unknown outcome"
sleep 10
t_reset=$(date +%s%3N)
kill "$canceller" 2>/dev/null || true
pgsql -c "alter system reset synchronous_standby_names" -c "select pg_reload_conf()" >/dev/null
# cancel what still waits, so that the node's writes of the last moment land
pgsql -c "select pg_cancel_backend(pid) from pg_stat_activity where wait_event = 'SyncRep'" >/dev/null
t_fixed=$(date +%s%3N)
echo "every commit unconfirmed for $(( t_fixed - t_broken )) ms"
echo "the run log for the fires due meanwhile, by state:"
runs_csv | awk -F, -v a="$t_broken" -v b="$t_fixed" '$2 > a && $2 < b { n[$4]++ } END { for (s in n) print "  " s, n[s] }'
# a fire may start up to 3/4 of a lease after the last confirmed
# heartbeat, just before the break (and its process write a moment
# later); after that, none may start until the standby setting is lifted
late=$(awk -v t=$(( t_broken + 6000 )) -v u="$t_reset" '$5 > t && $5 < u' "$T/exec.log" | wc -l)
assert_eq 0 "$late" "no fire executed while no commit was confirmed"
wait_until 30 ran_after $(( t_fixed + 1000 )) 6 || fail "no fires ran after the standby setting was lifted"
sleep 2
end_ms=$(date +%s%3N)
stop_node n
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
check_no_loss "$T/runs.csv" s $J "$end_ms"
t_done
