#!/usr/bin/env bash
# A private, throw-away pg_auto_failover formation for the failover test
# (tests/it/failover_pg.sh): a monitor and two data nodes, a primary and a
# synchronous standby, with settings small enough that a failover takes
# seconds, not the production defaults' half a minute.
#   pgaf-tmp.sh start DIR     -> build it in DIR; prints the multi-host URL
#                                postgresql://postgres@A:5432,B:5432/dbcron?target_session_attrs=read-write
#   pgaf-tmp.sh stop DIR      -> stop everything, remove the namespaces and DIR
#   pgaf-tmp.sh primary DIR   -> the number (1, 2) of the node the monitor
#                                has as primary, nothing while there is none
#   pgaf-tmp.sh ready DIR     -> true when one node is primary and the other
#                                its synchronous secondary, both as assigned
#   pgaf-tmp.sh pids DIR N    -> every process of data node N (its keeper
#                                and its postgres), one a line: what SIGSTOP
#                                of "the machine" stops
#   pgaf-tmp.sh cut|heal DIR N -> data node N behind a network black hole
#                                (packets dropped both ways, no error to
#                                anyone), and back
#   pgaf-tmp.sh skew DIR N SECS -> data node N's clock (its postgres and
#                                keeper, through libfaketime) SECS off, e.g.
#                                -2, +2 or +0
#   pgaf-tmp.sh switchover DIR -> pg_autoctl perform switchover (returns
#                                once the old primary is the new standby)
#   pgaf-tmp.sh state DIR     -> pg_autoctl show state
# Each data node runs in a network namespace of its own, joined to the
# others by a bridge in this one (where the monitor and the test's dbcron
# nodes are): detaching a node's veth from the bridge (and a reverse-path
# check on it) is a black hole with nothing to install (no nft, no netem),
# and both data nodes listen on the same port.  Needs root (namespaces); PostgreSQL refuses root, so the
# servers run as the "postgres" user, as in scripts/pg-tmp.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/port.bash"
cmd=${1:?usage: pgaf-tmp.sh start|stop|primary|ready|pids|cut|heal|skew|switchover|state DIR [N] [SECS]}
dir=${2:?DIR missing}
bindir=/usr/lib/postgresql/15/bin
faketime_lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1 || true)
PORT=5432
FT_ENV=()

die() { echo "pgaf-tmp: $*" >&2; exit 1; }

# as_pg [NETNS] CMD...: as the postgres user, with pg_autoctl's files
# (config, state, pid files) kept in DIR instead of its home
as_pg() {
  local ns=$1; shift
  local env=(env XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data"
             XDG_RUNTIME_DIR="$dir/xdg/run" PATH="$bindir:$PATH" PG_CONFIG="$bindir/pg_config")
  if [ -n "$ns" ]; then
    ip netns exec "$ns" runuser -u postgres -- "${env[@]}" "$@"
  else
    runuser -u postgres -- "${env[@]}" "$@"
  fi
}

load() { [ -f "$dir/env" ] || die "no formation in $dir"; source "$dir/env"; }

# the monitor's view: "NODEID NAME REPORTED GOAL" per data node
node_states() {
  psql "$MONITOR_URL" -XAtq -F' ' -c \
    "select nodeid, nodename, reportedstate, goalstate from pgautofailover.node order by nodeid" 2>/dev/null
}

primary_of() {
  node_states | awk '$3 == "primary" && $4 == "primary" { sub(/^node/, "", $2); print $2 }'
}

is_ready() {
  local s
  s=$(node_states) || return 1
  [ "$(echo "$s" | awk '$3 == $4 && $3 == "primary"' | wc -l)" = 1 ] &&
    [ "$(echo "$s" | awk '$3 == $4 && $3 == "secondary"' | wc -l)" = 1 ]
}

# wait_for SECS DESCRIPTION CMD...
wait_for() {
  local secs=$1 what=$2 end
  shift 2
  end=$(( $(date +%s) + secs ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || { echo "pgaf-tmp: $what not within ${secs}s" >&2; return 1; }
    sleep 0.2
  done
}

# run_bg NETNS LOG CMD...: a pg_autoctl service in the background, as a
# session leader whose pid is kept (stop signals its process group; the
# postgres it started is stopped by pg_autoctl, or killed by its pid file)
run_bg() {
  local ns=$1 log=$2; shift 2
  if [ -n "$ns" ]; then
    # a mount namespace too (ip netns exec makes one): a socket directory
    # of its own on PostgreSQL's default path, since both nodes use one port
    setsid ip netns exec "$ns" sh -c 'mount --bind "$0" /run/postgresql && exec "$@"' "$dir/sock-$ns" \
      runuser -u postgres -- env XDG_CONFIG_HOME="$dir/xdg/config" \
      XDG_DATA_HOME="$dir/xdg/data" XDG_RUNTIME_DIR="$dir/xdg/run" PATH="$bindir:$PATH" \
      "${FT_ENV[@]}" "$@" >"$log" 2>&1 </dev/null &
  else
    setsid runuser -u postgres -- env XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data" \
      XDG_RUNTIME_DIR="$dir/xdg/run" PATH="$bindir:$PATH" "$@" >"$log" 2>&1 </dev/null &
  fi
  echo $!
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  command -v pg_autoctl >/dev/null && [ -f "$bindir/../lib/pgautofailover.so" ] ||
    die "pg_auto_failover not installed (apt-get install postgresql-15-auto-failover)"
  mkdir -p "$dir/xdg/config" "$dir/xdg/data" "$dir/xdg/run"
  # PostgreSQL's default socket directory (the monitor's; each data node
  # mounts one of its own there), missing where no server ever ran
  [ -d /run/postgresql ] || install -d -o postgres -g postgres -m 2775 /run/postgresql
  chmod 755 "$dir"
  chown postgres: "$dir"
  chown -R postgres: "$dir/xdg"
  # names and a /24 of our own, so that two formations can live side by side
  local id=$(( (RANDOM % 60000) + 1000 )) net
  net="10.$(( 100 + id % 100 )).$(( id / 100 % 250 ))"
  local br="pgafbr$id" mport=$(private_port)
  cat >"$dir/env" <<ENV
ID=$id
BR=$br
NET=$net
MPORT=$mport
NS1=pgaf${id}n1
NS2=pgaf${id}n2
MONITOR_URL='postgres://autoctl_node@$net.1:$mport/pg_auto_failover?sslmode=disable'
URL='postgresql://postgres@$net.2:$PORT,$net.3:$PORT/dbcron?target_session_attrs=read-write'
ENV
  source "$dir/env"
  ip link add "$BR" type bridge
  ip addr add "$NET.1/24" dev "$BR"
  ip link set "$BR" up
  local n
  for n in 1 2; do
    local ns="pgaf${id}n$n"
    ip netns add "$ns"
    ip link add "pgaf${id}v$n" type veth peer name eth0 netns "$ns"
    ip link set "pgaf${id}v$n" master "$BR" up
    # Detached from the bridge (cut), this end still hands the node's
    # packets to this namespace's IP layer, which takes any packet for one
    # of its addresses: a strict reverse-path check drops them (their
    # source is routed through the bridge), so the black hole is both ways.
    echo 1 >"/proc/sys/net/ipv4/conf/pgaf${id}v$n/rp_filter"
    ip -n "$ns" addr add "$NET.$((n + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    # the clock offset libfaketime reads (at most once a second)
    mkdir -p "$dir/sock-$ns" && chown postgres: "$dir/sock-$ns"
    echo "+0" >"$dir/skew$n"
    chmod 644 "$dir/skew$n"
  done

  # pg_autoctl runs the PostgreSQL programs found beside the pg_ctl it is
  # given: the same ones, but base backups without their final fsync of
  # every file (seconds per standby built; nothing here outlives a crash
  # of the machine).
  mkdir -p "$dir/bin"
  ln -s "$bindir"/* "$dir/bin/"
  rm "$dir/bin/pg_basebackup"
  printf '#!/bin/sh\nexec %s/pg_basebackup --no-sync "$@"\n' "$bindir" >"$dir/bin/pg_basebackup"
  chmod 755 "$dir/bin/pg_basebackup"
  # Both PGDATAs that pg_autoctl adopts made here, side by side, without
  # initdb's fsync either.
  local d
  for d in monitor node1; do
    as_pg "" "$bindir/initdb" -D "$dir/$d" -A trust -U postgres -E UTF8 --no-sync \
      >"$dir/initdb-$d.log" 2>&1 &
  done
  for d in monitor node1; do
    wait -n || { cat "$dir"/initdb-*.log >&2; die "initdb failed"; }
  done
  # Failover in seconds: a health check a second, a node unhealthy after
  # 2 s without one, the standby promoted 3 s after the primary was asked to
  # demote (production: 5 s, 20 s, 30 s).
  cat >>"$dir/monitor/postgresql.auto.conf" <<CONF
fsync = off
shared_buffers = '32MB'
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 3000
pgautofailover.startup_grace_period = 2000
CONF
  # The monitor, in this namespace, on the bridge's address.
  echo "MONITOR_PID=$(run_bg "" "$dir/monitor.log" pg_autoctl create monitor --pgdata "$dir/monitor" \
    --pgctl "$dir/bin/pg_ctl" --pgport "$MPORT" --hostname "$NET.1" --auth trust --no-ssl --run)" >>"$dir/env"
  wait_for 60 "the monitor" psql "$MONITOR_URL" -XAtqc 'select 1 from pgautofailover.formation' \
    >/dev/null 2>&1 || { cat "$dir/monitor.log" >&2; return 1; }

  # The first node's PGDATA made here, which pg_autoctl adopts: its
  # settings and rules reach the standby in the base backup.  pg_autoctl's
  # own file sizes the server for the machine (gigabytes of buffers) and
  # takes an unhurried checkpoint for each base backup (minutes here);
  # postgresql.auto.conf is read last.  Sync replication stays on: that is
  # what the test is about.
  cat >>"$dir/node1/postgresql.auto.conf" <<CONF
fsync = off
shared_buffers = '64MB'
effective_cache_size = '256MB'
maintenance_work_mem = '64MB'
work_mem = '4MB'
checkpoint_completion_target = 0
wal_keep_size = '256MB'
max_connections = 100
wal_sender_timeout = '5s'
wal_receiver_timeout = '5s'
CONF
  # the test's dbcron nodes connect from the bridge's address
  printf 'host all all %s.0/24 trust\nhost replication all %s.0/24 trust\n' "$NET" "$NET" \
    >>"$dir/node1/pg_hba.conf"
  for n in 1 2; do
    FT_ENV=()
    [ -n "$faketime_lib" ] && FT_ENV=(LD_PRELOAD="$faketime_lib" FAKETIME_TIMESTAMP_FILE="$dir/skew$n"
                                       FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
    local pid
    pid=$(run_bg "pgaf${id}n$n" "$dir/node$n.log" pg_autoctl create postgres --pgdata "$dir/node$n" \
      --pgctl "$dir/bin/pg_ctl" \
      --pgport "$PORT" --listen '*' --hostname "$NET.$((n + 1))" --name "node$n" --dbname dbcron \
      --username postgres --monitor "$MONITOR_URL" --auth trust --no-ssl --run)
    echo "NODE${n}_PID=$pid" >>"$dir/env"
    if [ "$n" = 1 ]; then
      wait_for 90 "node1 as the single primary" sh -c \
        "psql '$MONITOR_URL' -XAtqc \"select 1 from pgautofailover.node where nodename = 'node1' and reportedstate = 'single'\" 2>/dev/null | grep -q 1" ||
        { cat "$dir/node1.log" >&2; return 1; }
    fi
  done
  wait_for 120 "a primary and its synchronous standby" is_ready || {
    tail -n 30 "$dir/node1.log" "$dir/node2.log" >&2; return 1; }
  # The keepers in seconds too (set once pg_autoctl create is done with
  # their files): a primary cut off from the monitor and its standby
  # demotes itself after 3 s (production: 20 s).
  for n in 1 2; do
    wait_for 30 "node$n's keeper settings" keeper_settings "$n" ||
      { tail -n 30 "$dir/node$n.log" >&2; return 1; }
  done
  echo "$URL"
}

# keeper_settings N: data node N's keeper timeouts set, reloaded and read
# back.  The keeper writes its own file as it settles, evidently not by an
# atomic rename: CI saw pg_autoctl read it half-written ("Failed to find
# section pg_autoctl"); and a keeper writing what it held before the reload
# would undo a setting.  Hence set, reload, read back, and again if need be.
keeper_settings() {
  local n=$1 cfg=(timeout.network_partition_timeout 3 timeout.prepare_promotion_walreceiver 1
                  timeout.postgresql_restart_failure_timeout 5) i
  for ((i = 0; i < ${#cfg[@]}; i += 2)); do
    as_pg "" pg_autoctl config set --pgdata "$dir/node$n" "${cfg[i]}" "${cfg[i + 1]}" >/dev/null 2>&1 || return 1
  done
  kill -HUP "$(head -n 1 "$dir/xdg/run/pg_autoctl$dir/node$n/pg_autoctl.pid")" || return 1
  sleep 0.5
  for ((i = 0; i < ${#cfg[@]}; i += 2)); do
    [ "$(as_pg "" pg_autoctl config get --pgdata "$dir/node$n" "${cfg[i]}" 2>/dev/null)" = "${cfg[i + 1]}" ] || return 1
  done
}

# the processes of a data node: its pg_autoctl and everything under it
pids_of() {
  local top=$1 all=$1 next p
  next=$top
  while [ -n "$next" ]; do
    local kids=""
    for p in $next; do kids="$kids $(pgrep -P "$p" || true)"; done
    next=$(echo $kids)
    [ -n "$next" ] && all="$all $next"
  done
  echo $all | tr ' ' '\n'
}

stop() {
  [ -f "$dir/env" ] || { rm -rf "$dir"; return 0; }
  source "$dir/env"
  local v pid
  for v in NODE1_PID NODE2_PID MONITOR_PID; do
    pid=${!v:-}
    [ -n "$pid" ] || continue
    # a frozen node first continued, so that it hears the signal
    for p in $(pids_of "$pid"); do kill -CONT "$p" 2>/dev/null || true; done
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for v in NODE1_PID NODE2_PID MONITOR_PID; do
    pid=${!v:-}
    [ -n "$pid" ] || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  # a postgres left behind by a kill -9 of its keeper
  for d in node1 node2 monitor; do
    [ -f "$dir/$d/postmaster.pid" ] && kill -KILL "$(head -n 1 "$dir/$d/postmaster.pid")" 2>/dev/null || true
  done
  ip netns del "$NS1" 2>/dev/null || true
  ip netns del "$NS2" 2>/dev/null || true
  ip link del "$BR" 2>/dev/null || true
  rm -rf "$dir"
}

case "$cmd" in
start) start ;;
stop) stop ;;
primary) load; primary_of ;;
ready) load; is_ready ;;
state) load; as_pg "" pg_autoctl show state --monitor "$MONITOR_URL" ;;
switchover) load; as_pg "" pg_autoctl perform switchover --monitor "$MONITOR_URL" ;;
pids)
  load
  n=${3:?node number}; v="NODE${n}_PID"
  pids_of "${!v}"
  ;;
cut) load; ip link set "pgaf${ID}v${3:?node number}" nomaster ;;
heal) load; ip link set "pgaf${ID}v${3:?node number}" master "$BR" ;;
skew)
  load
  [ -n "$faketime_lib" ] || die "libfaketime not installed (apt-get install faketime)"
  echo "${4:?seconds, e.g. +2}" >"$dir/skew${3:?node number}"
  ;;
*) die "unknown command $cmd" ;;
esac
