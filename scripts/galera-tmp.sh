#!/usr/bin/env bash
# A private, throw-away three-member MariaDB Galera cluster for tests:
#   galera-tmp.sh start DIR     -> three mariadbd with wsrep on loopback ports
#                                  (member 1 bootstraps, 2 and 3 join); prints a dbcron URL listing the three
#                                  (database "dbcron")
#   galera-tmp.sh stop DIR      -> stop all three and remove DIR
#   galera-tmp.sh kill DIR I    -> kill -9 member I (1..3)
#   galera-tmp.sh restart DIR I -> start member I again (it rejoins) and wait
#                                  until it is synced
#   galera-tmp.sh pid DIR I     -> member I's server pid
#   galera-tmp.sh port DIR I    -> member I's SQL port
# Small group-communication timeouts, so that a dead or frozen member is
# evicted within seconds.  Never the system service: no defaults files are
# read, and as root the servers run as the "mysql" user.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/port.bash"
cmd=$1 dir=$2
provider=/usr/lib/galera/libgalera_smm.so
[ -f "$provider" ] || { echo "galera-tmp: $provider not found (install galera-4)" >&2; exit 3; }
server=$(command -v mariadbd || echo /usr/sbin/mariadbd)
[ -x "$server" ] || { echo "galera-tmp: mariadbd not found (install mariadb-server)" >&2; exit 3; }
install_db=$(command -v mariadb-install-db || command -v mysql_install_db)
command -v rsync >/dev/null || { echo "galera-tmp: rsync not found (the state transfer uses it)" >&2; exit 3; }
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(--user=mysql)
# the SST script is found on PATH, as the server runs it
export PATH=/usr/bin:/usr/sbin:/bin:/sbin:$PATH

# member I's ports: SQL, group communication, IST, SST
sqlp() { echo $(( $(cat "$dir/base") + 10 * $1 )); }
gcp() { echo $(( $(cat "$dir/base") + 10 * $1 + 1 )); }

run_member() {
  local i=$1 new=${2:-} m=$dir/m$1 b start=()
  b=$(cat "$dir/base")
  local gcomm="gcomm://127.0.0.1:$((b + 11)),127.0.0.1:$((b + 21)),127.0.0.1:$((b + 31))"
  [ -n "$new" ] && gcomm="gcomm://"
  local opts="gmcast.listen_addr=tcp://127.0.0.1:$(gcp "$i"); ist.recv_addr=127.0.0.1:$((b + 10 * i + 2))"
  opts+="; gcache.size=16M; gcache.page_size=16M; evs.keepalive_period=PT0.5S"
  opts+="; evs.suspect_timeout=PT3S; evs.inactive_timeout=PT5S; evs.inactive_check_period=PT0.5S"
  opts+="; evs.install_timeout=PT5S; evs.join_retrans_period=PT0.5S; pc.announce_timeout=PT1S"
  rm -f "$m/sock" "$m/pid"
  [ -s "$m/position" ] && start=(--wsrep-start-position="$(cat "$m/position")")
  "$server" --no-defaults --datadir="$m/data" --socket="$m/sock" --port="$(sqlp "$i")" \
    --bind-address=127.0.0.1 --pid-file="$m/pid" --log-error="$m/server.log" --tmpdir="$m/tmp" \
    --skip-name-resolve --innodb-flush-log-at-trx-commit=0 --sync-binlog=0 \
    --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --max-connections=200 --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_bin --binlog-format=ROW --default-storage-engine=InnoDB \
    --innodb-autoinc-lock-mode=2 --wsrep-on=ON --wsrep-provider="$provider" \
    --wsrep-cluster-name=dbcron_test --wsrep-cluster-address="$gcomm" \
    --wsrep-node-name="g$i" --wsrep-node-address="127.0.0.1:$(gcp "$i")" \
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$((b + 10 * i + 3))" \
    --wsrep-provider-options="$opts" --wsrep-slave-threads=2 "${start[@]}" "${as_user[@]}" \
    >/dev/null 2>&1 &
  echo $! > "$m/spid"
}

# status I NAME: a status variable of member I ("" when it does not answer)
status() {
  mariadb --no-defaults -uroot --socket="$dir/m$1/sock" -N -B -e "SHOW STATUS LIKE '$2'" \
    2>/dev/null | cut -f2 || true
}

# wait_synced I: member I answers and is a synced member of the cluster
wait_synced() {
  local m=$dir/m$1 st
  for _ in $(seq 1 900); do
    st=$(status "$1" wsrep_local_state_comment)
    [ "$st" = Synced ] && return 0
    kill -0 "$(cat "$m/spid")" 2>/dev/null || break
    sleep 0.1
  done
  echo "galera-tmp: member $1 did not become synced" >&2
  tail -n 30 "$m/server.log" >&2 || true
  return 1
}

stop_member() {
  local m=$dir/m$1 pid
  [ -f "$m/spid" ] || return 0
  pid=$(cat "$m/spid")
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$m/spid"
}

case "$cmd" in
start)
  mkdir -p "$dir"
  echo $(( $(private_port 40) / 10 * 10 )) > "$dir/base"
  for i in 1 2 3; do
    mkdir -p "$dir/m$i/tmp" "$dir/m$i/data"
    [ "$(id -u)" -eq 0 ] && chown -R mysql: "$dir/m$i"
  done
  [ "$(id -u)" -eq 0 ] && chown mysql: "$dir"
  TMPDIR=$dir/m1/tmp "$install_db" --no-defaults --datadir="$dir/m1/data" \
    --auth-root-authentication-method=normal --skip-test-db "${as_user[@]}" \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
  # Member 1 founds the cluster and is stopped cleanly; its data directory,
  # copied, is the other two's: they join with an incremental transfer of
  # a few write sets, not a full copy.
  run_member 1 new
  wait_synced 1
  mariadb --no-defaults -uroot --socket="$dir/m1/sock" -e "CREATE DATABASE dbcron"
  stop_member 1
  rm -f "$dir/m1/data/gvwstate.dat"
  for i in 2 3; do cp -a "$dir/m1/data/." "$dir/m$i/data/"; done
  sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$dir/m1/data/grastate.dat"
  run_member 1 new
  wait_synced 1
  for i in 2 3; do run_member "$i"; done
  for i in 2 3; do wait_synced "$i"; done
  echo "mysql://root@127.0.0.1:$(sqlp 1),127.0.0.1:$(sqlp 2),127.0.0.1:$(sqlp 3)/dbcron"
  ;;
kill)
  kill -KILL "$(cat "$dir/m$3/spid")"
  ;;
restart)
  stop_member "$3"
  # A member killed with kill -9 does not know its position: read it back
  # from InnoDB first (what galera_recovery does), so that it rejoins with
  # the write sets it missed (IST) rather than a full copy, during which
  # its donor would take no writes.
  m=$dir/m$3
  : > "$m/recover.log"
  [ "$(id -u)" -eq 0 ] && chown mysql: "$m/recover.log"
  "$server" --no-defaults --datadir="$m/data" --tmpdir="$m/tmp" --log-error="$m/recover.log" \
    --innodb-log-file-size=16M --binlog-format=ROW --wsrep-on=ON --wsrep-provider="$provider" \
    --wsrep-cluster-address=gcomm:// --wsrep-recover "${as_user[@]}" >/dev/null 2>&1 || true
  { sed -n 's/.*WSREP: Recovered position: *//p' "$m/recover.log" || true; } | tail -n 1 > "$m/position"
  run_member "$3"
  rm -f "$m/position"
  wait_synced "$3"
  ;;
pid) cat "$dir/m$3/spid" ;;
port) sqlp "$3" ;;
stop)
  for i in 3 2 1; do stop_member "$i"; done
  rm -rf "$dir"
  ;;
*) echo "usage: galera-tmp.sh start|stop DIR, or kill|restart|pid|port DIR I" >&2; exit 2 ;;
esac
