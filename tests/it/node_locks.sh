#!/usr/bin/env bash
# A write lock held longer than the lease (a big apply, an operator's open
# transaction) stalls every heartbeat at once; afterwards no healthy node
# may be declared dead (docs/scheduler.md "Leases and fencing"): both nodes
# keep their incarnation, no running run is abandoned as "node lost", and
# no fire runs twice.  SQLite (a BEGIN IMMEDIATE held 5 s) or, given "pg",
# PostgreSQL (the nodes table locked 5 s), or, given "mysql", MariaDB (LOCK
# TABLES nodes WRITE for 5 s).
source "$(dirname "$0")/nodelib.bash"
backend=${1:-sqlite}
use_backend "$backend"

# one long run that is going through the whole lock: due a second after it
# is added (an every-10s job's first fire waited ten)
dbc job add slow --at now+1s -- sh -c "$RECORD; sleep 7" >/dev/null
for i in 1 2 3; do
  dbc job add "tick-$i" --every 1s --misfire skip -- sh -c "$RECORD" >/dev/null
done
start_node a --lease 3s
start_node b --lease 3s
wait_until 120 grep -qs '^slow ' "$T/exec.log" ||
  fail "the slow job did not start"
sleep 1
before=$(sql "SELECT id || ':' || incarnation FROM nodes ORDER BY id" | tr '\n' ' ')

case "$backend" in
sqlite)
  python3 - "${DBCRON_DB#sqlite:}" <<'PY'
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN IMMEDIATE")
time.sleep(5)
c.execute("COMMIT")
PY
  ;;
pg) psql "$DBCRON_DB" -qAt -c "BEGIN; LOCK TABLE nodes IN EXCLUSIVE MODE; SELECT pg_sleep(5); COMMIT;" >/dev/null ;;
mysql) my_client "$MYDB" -e "LOCK TABLES nodes WRITE; DO SLEEP(5); UNLOCK TABLES;" >/dev/null ;;
esac
pass "held the write lock for 5 s (lease 3 s)"
sleep 5

after=$(sql "SELECT id || ':' || incarnation FROM nodes ORDER BY id" | tr '\n' ' ')
assert_eq "$before" "$after" "no node was declared dead and rejoined"
assert_eq 0 "$(sql "SELECT count(*) FROM runs WHERE error LIKE 'node lost%'")" \
  "no run was abandoned as node lost"
assert_eq 0 "$(sql "SELECT count(*) FROM nodes WHERE state <> 'alive'")" "both nodes are alive"
stop_node a
stop_node b
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
echo "node_locks: all checks passed"
