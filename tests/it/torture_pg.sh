#!/usr/bin/env bash
# The torture test (docs/cluster.md "Torture test"): three nodes on
# PostgreSQL (or, given "mysql", MariaDB: torture_mysql.sh) under a random
# schedule of faults for TORTURE_SECONDS (default
# 60; the long run is a documented command): kill -9 and restart of a node
# (each start with a new random set of injected faults through the store's
# fault seam: write errors, lost COMMIT replies, stalls), SIGSTOP past the
# lease, a server restart, a lock held on the nodes table past the lease.
# Afterwards, counted only from what the jobs wrote and from the run log:
# no fire of an every-second job lost, no fire executed twice unless its
# first attempt is ABANDONED (at-least-once after a node loss), and the
# at-most-once job never executed twice at all.
source "$(dirname "$0")/nodelib.bash"
t_need_fault_seam
backend=${1:-pg}
case "$backend" in
pg) : "${DBCRON_TEST_PGDIR:?DBCRON_TEST_PGDIR (directory of the test server) is required}"
    server_restart() { bash "$DBCRON_SRC/scripts/pg-tmp.sh" restart "$DBCRON_TEST_PGDIR"; }
    lock_nodes() { psql "$DBCRON_DB" -qAt -c "BEGIN; LOCK TABLE nodes IN EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;"; } ;;
mysql) : "${DBCRON_TEST_MYSQLDIR:?DBCRON_TEST_MYSQLDIR (directory of the test server) is required}"
    server_restart() { bash "$DBCRON_SRC/scripts/mariadb-tmp.sh" restart "$DBCRON_TEST_MYSQLDIR"; }
    lock_nodes() { my_client "$MYDB" -e "LOCK TABLES nodes WRITE; DO SLEEP(4); UNLOCK TABLES;"; } ;;
*) fail "torture: backend pg or mysql" ;;
esac
use_backend "$backend"
secs=${TORTURE_SECONDS:-60}
seed=${TORTURE_SEED:-$RANDOM}
RANDOM=$seed
echo "torture: ${secs}s, seed $seed (TORTURE_SEED=$seed repeats the schedule)"

J=6
every_jobs t $J 1s '"misfire": "skip"' "$RECORD" > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
dbc job add slow --every 3s --misfire skip -- sh -c "$RECORD; sleep 2" >/dev/null
amo='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS" >> '"$T/amo.log"
dbc job add amo --every 1s --node-loss abandon --misfire skip -- sh -c "$amo" >/dev/null

spec() {
  local specs=(
    ""
    "stmt=runs_apply,kind=busy,nth=$((RANDOM % 20 + 1)),times=$((RANDOM % 4 + 1))"
    "stmt=commit,kind=reply_lost,nth=$((RANDOM % 30 + 1)),times=$((RANDOM % 3 + 1))"
    "stmt=any,kind=conn,nth=$((RANDOM % 80 + 1)),times=1"
    "stmt=fires_insert,kind=busy,nth=$((RANDOM % 10 + 1)),times=2"
    "stmt=node_heartbeat,kind=stall,stall=$((RANDOM % 1500 + 200)),nth=$((RANDOM % 8 + 1)),times=2"
    # from some point on no write of runs lands, until the node is killed
    "stmt=runs_apply,kind=conn,nth=$((RANDOM % 20 + 5)),times=0"
  )
  echo "${specs[$((RANDOM % ${#specs[@]}))]}"
}
declare -A specs=()
launch() {
  local name=$1 s; s=${2-$(spec)}
  specs[$name]=$s
  echo "start $name faults=[$s]" >> "$T/schedule"
  DBCRON_TEST_FAULTS="$s" "$DBCRON_BIN" node --node-id "$name" --lease 3s \
    >>"$T/node-$name.log" 2>&1 &
  NODE_PIDS+=($!)
  eval "PID_$name=$!"
}
for n in n1 n2 n3; do launch "$n"; done
sleep 3

declare -A faults=()
end=$(( $(date +%s) + secs ))
while [ "$(date +%s)" -lt "$end" ]; do
  node="n$((RANDOM % 3 + 1))"
  pid=$(pid_of "$node")
  case $((RANDOM % 6)) in
  0|1)
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "kill -9 $node" >> "$T/schedule"
    launch "$node"; faults[kill]=$((${faults[kill]:-0} + 1)) ;;
  2)
    kill -STOP "$pid" 2>/dev/null || true
    echo "SIGSTOP $node" >> "$T/schedule"
    sleep $((RANDOM % 3 + 4))
    kill -CONT "$pid" 2>/dev/null || true
    faults[stop]=$((${faults[stop]:-0} + 1)) ;;
  3)
    echo "server restart" >> "$T/schedule"
    server_restart >/dev/null
    faults[restart]=$((${faults[restart]:-0} + 1)) ;;
  4)
    echo "lock nodes 4s" >> "$T/schedule"
    lock_nodes >/dev/null 2>&1 || true
    faults[lock]=$((${faults[lock]:-0} + 1)) ;;
  5) ;;
  esac
  sleep $((RANDOM % 3 + 1))
done

# A node whose writes never land now is killed (as an operator would) and
# comes back without faults; then a quiet period, then a graceful stop.
for n in n1 n2 n3; do
  if [[ "${specs[$n]}" == *times=0* ]]; then
    kill -KILL "$(pid_of "$n")" 2>/dev/null || true
    wait "$(pid_of "$n")" 2>/dev/null || true
    echo "kill -9 $n (its writes never land)" >> "$T/schedule"
    launch "$n" ""
  fi
  kill -0 "$(pid_of "$n")" 2>/dev/null || launch "$n" ""
done
sleep 8
end_ms=$(date +%s%3N)
for n in n1 n2 n3; do stop_node "$n"; done

summary=""
for k in "${!faults[@]}"; do summary="$summary $k=${faults[$k]}"; done
runs_csv > "$T/runs.csv"
echo "torture: faults:$summary; executions $(wc -l < "$T/exec.log"), at-most-once $(wc -l < "$T/amo.log" 2>/dev/null || echo 0)"
check_no_loss "$T/runs.csv" t $J "$end_ms"
check_no_dup_exec "$T/runs.csv"
[ -s "$T/amo.log" ] && d=$(awk '{ print $1 "," $2 }' "$T/amo.log" | sort | uniq -d | wc -l) || d=0
assert_eq 0 "$d" "the at-most-once job never executed a fire twice"
echo "torture: all checks passed"
