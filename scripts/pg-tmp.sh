#!/usr/bin/env bash
# A private, throw-away PostgreSQL server for tests and benchmarks:
#   pg-tmp.sh start DIR   -> initdb into DIR, listen on a socket in DIR and a
#                            private loopback port; prints the conninfo
#   pg-tmp.sh stop DIR    -> stop it and remove DIR
#   pg-tmp.sh restart DIR -> pg_ctl restart (used by the outage tests)
#   pg-tmp.sh outage DIR SECS -> stop the server, wait SECS, start it again
# As root the server runs as the "postgres" user (PostgreSQL refuses root).
# PG_TMP_DURABLE=1 keeps fsync and synchronous commits on (the settings a
# benchmark figure that counts is measured with: bench/compare.sh); tests
# run without them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/port.bash"
cmd=$1 dir=$2
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bindir/initdb" ] || { echo "pg-tmp: PostgreSQL server binaries not found" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  port=$(private_port)
  as_pg "$bindir/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 256MB
shared_preload_libraries = 'pg_stat_statements'
CONF
  if [ "${PG_TMP_DURABLE:-0}" != 1 ]; then
    printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$dir/data/postgresql.conf"
  fi
  # a random private port; another one if it was taken (servers started
  # side by side)
  for try in 1 2 3 4 5; do
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null && break
    [ "$try" -lt 5 ] || { cat "$dir/server.log" >&2; exit 1; }
    old=$port port=$(private_port)
    sed -i "s/^port = $old\$/port = $port/" "$dir/data/postgresql.conf"
  done
  echo "host=$dir port=$port user=postgres dbname=postgres"
  ;;
restart)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -m fast restart >/dev/null
  ;;
outage)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null
  sleep "${3:-5}"
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  ;;
stop)
  if [ -d "$dir/data" ]; then
    as_pg "$bindir/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*) echo "usage: pg-tmp.sh start|stop|restart|outage DIR [SECS]" >&2; exit 2 ;;
esac
