#!/usr/bin/env bash
# A private, throw-away MariaDB server for tests and benchmarks:
#   mariadb-tmp.sh start DIR   -> mariadb-install-db into DIR, listen on a socket
#                                 in DIR and a private loopback port; prints a
#                                 dbcron URL of the server (database "mysql")
#   mariadb-tmp.sh stop DIR    -> stop it and remove DIR
#   mariadb-tmp.sh restart DIR -> stop and start it again (the outage tests)
#   mariadb-tmp.sh outage DIR SECS -> stop the server, wait SECS, start it again
# Never the system service: no defaults files are read, and as root the
# server runs as the "mysql" user.  MARIADB_TMP_DURABLE=1 flushes the redo
# log at every commit (benchmark figures that count: bench/compare.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/port.bash"
cmd=$1 dir=$2
for b in mariadbd mysqld; do
  for d in /usr/sbin /usr/bin /usr/libexec; do [ -x "$d/$b" ] && { server="$d/$b"; break 2; }; done
done
: "${server:?mariadb-tmp: MariaDB server binary not found (install mariadb-server)}"
install_db=$(command -v mariadb-install-db || command -v mysql_install_db)

as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(--user=mysql)

run_server() {
  local port flush=0
  port=$(cat "$dir/port")
  [ "${MARIADB_TMP_DURABLE:-0}" = 1 ] && flush=1
  "$server" --no-defaults --datadir="$dir/data" --socket="$dir/sock" --port="$port" \
    --bind-address=127.0.0.1 --pid-file="$dir/pid" --log-error="$dir/server.log" --tmpdir="$dir/tmp" \
    --skip-name-resolve --innodb-flush-log-at-trx-commit=$flush --sync-binlog=0 \
    --innodb-buffer-pool-size=256M --max-connections=300 --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_bin "${as_user[@]}" >/dev/null 2>&1 &
  local spid=$!
  for _ in $(seq 1 600); do
    [ -S "$dir/sock" ] && mariadb --no-defaults -uroot --socket="$dir/sock" -e 'SELECT 1' >/dev/null 2>&1 && return 0
    # gone already (its port taken by another server started at the same time)
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/server.log" >&2
  return 1
}

stop_server() {
  [ -f "$dir/pid" ] || return 0
  local pid
  pid=$(cat "$dir/pid" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case "$cmd" in
start)
  mkdir -p "$dir"
  private_port > "$dir/port"
  # a temp dir of its own: two servers set up at once in one /tmp clash
  mkdir -p "$dir/tmp"
  [ "$(id -u)" -eq 0 ] && chown mysql: "$dir" "$dir/tmp"
  TMPDIR=$dir/tmp "$install_db" --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
    --skip-test-db "${as_user[@]}" >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
  # a random private port; another one if it was taken
  for try in 1 2 3 4 5; do
    run_server 2>"$dir/start.err" && break
    [ "$try" -lt 5 ] || { cat "$dir/start.err" >&2; exit 1; }
    private_port > "$dir/port"
  done
  echo "mysql://root@127.0.0.1:$(cat "$dir/port")/mysql"
  ;;
restart)
  stop_server
  run_server
  ;;
outage)
  stop_server
  sleep "${3:-5}"
  run_server
  ;;
stop)
  stop_server
  rm -rf "$dir"
  ;;
*) echo "usage: mariadb-tmp.sh start|stop|restart|outage DIR [SECS]" >&2; exit 2 ;;
esac
