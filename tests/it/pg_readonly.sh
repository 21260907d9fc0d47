#!/usr/bin/env bash
# Issue 25: a primary that stops being one.  A node reaches two servers of
# its own through one multi-host URL with target_session_attrs=read-write;
# the first is made read-only under it (ALTER SYSTEM SET
# default_transaction_read_only, pg_reload_conf(): what a demoted primary
# looks like to its sessions).  The node must not retry on that session: it
# reconnects, libpq passes over the read-only server, and the node
# schedules on the other one.  Counted from the second server's run log.
source "$(dirname "$0")/nodelib.bash"
use_private_pg
A=$DBCRON_DB
B=$(bash "$DBCRON_SRC/scripts/pg-tmp.sh" start "$PGDIR/srv2") || fail "cannot start the second server"
_second_stop() { bash "$DBCRON_SRC/scripts/pg-tmp.sh" stop "$PGDIR/srv2" || true; }
t_on_exit _second_stop
portB=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$B")
DBCRON_DB=$B "$DBCRON_BIN" init >/dev/null
# The second server stands for a promoted standby, which would hold the
# first one's rows; being empty, it must at least not reuse their ids, or
# the node's writes for its runs in flight would land on other runs there.
psql "$B" -XAtq -c "select setval(pg_get_serial_sequence('runs', 'id'), 1000000)" >/dev/null

J=3
every_jobs r $J 1s "" "$RECORD" > "$T/jobs.json"
DBCRON_DB=$A "$DBCRON_BIN" job apply "$T/jobs.json" >/dev/null
DBCRON_DB=$B "$DBCRON_BIN" job apply "$T/jobs.json" >/dev/null
# the password masker and libpq both see the multi-host form
export DBCRON_DB="postgresql://postgres:nosecret@127.0.0.1:$PGPORT_PRIV,127.0.0.1:$portB/postgres?target_session_attrs=read-write"
start_node n --lease 3s
runs_of() { DBCRON_DB=$1 "$DBCRON_BIN" runs --format csv --limit 0 | tail -n +2; }
ran_on() { [ "$(runs_of "$1" | awk -F, -v t="$2" '$4 == "succeeded" && $5 == "n" && $2 > t' | wc -l)" -ge "$3" ]; }
wait_until 30 ran_on "$A" 0 3 || fail "the node did not schedule on the first server"
assert_eq "$(psql "$B" -XAtq -c "select count(*) from runs")" 0 "nothing on the second server yet"

t_ro=$(date +%s%3N)
psql "$A" -XAtq -c "alter system set default_transaction_read_only = on" -c "select pg_reload_conf()" >/dev/null
# the bound is a hang guard (ASan slows the node); the time is printed
wait_until 60 ran_on "$B" 0 3 || _t_fail "the node did not move to the read-write server within 60 s"
echo "fires ran on the second server $(( $(date +%s%3N) - t_ro )) ms after the first became read-only"
assert_not_contains "$(cat "$T/node-n.log")" "nosecret" "the password is masked in the node's log"
stop_node n
t_done
