# Private database servers for the tests, started once for a whole run
# (sourced by scripts/test.sh and scripts/mutate.sh):
#   servers_start BUILD ALONE [CTEST SELECTION ARGS...]
#     starts, side by side, the servers that the selected tests of BUILD need
#     and exports DBCRON_TEST_PG(DIR) and DBCRON_TEST_MYSQL(DIR); with
#     ALONE=1 also the second server of each kind on which the tests that
#     restart theirs run one at a time (DBCRON_TEST_*_ALONE, see
#     tests/tools/alone.sh).  A selection that needs no server starts none.
#   servers_stop
# Every server is a throw-away one in its own /tmp directory, on a private
# loopback port (scripts/pg-tmp.sh, scripts/mariadb-tmp.sh).

SERVERS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVERS_DIRS=()

_servers_count() { (cd "$1" && shift && ctest -N "$@" | sed -n 's/^Total Tests: //p'); }

# _servers_one KIND VAR: start one server of KIND (pg, my) in a new dir,
# in the background; its connection string lands in DIR/conn.
_servers_one() {
  local kind=$1 var=$2 dir script
  dir=$(mktemp -d "/tmp/dbcron-$kind.XXXXXX")
  chmod 755 "$dir" # the server runs as its own user (postgres, mysql)
  [ "$kind" = pg ] && script=pg-tmp.sh || script=mariadb-tmp.sh
  SERVERS_DIRS+=("$kind:$dir")
  printf '%s\n' "$var" > "$dir.var"
  (bash "$SERVERS_SRC/scripts/$script" start "$dir/srv" > "$dir/conn") &
}

servers_start() {
  local build=$1 alone=$2 pids=() d kind dir var
  shift 2
  if [ "$(_servers_count "$build" -L pg "$@")" -gt 0 ]; then
    _servers_one pg DBCRON_TEST_PG
    [ "$alone" = 1 ] && [ "$(_servers_count "$build" -L pg_alone "$@")" -gt 0 ] &&
      _servers_one pg DBCRON_TEST_PG_ALONE
  fi
  if [ "$(_servers_count "$build" -L mysql "$@")" -gt 0 ]; then
    _servers_one my DBCRON_TEST_MYSQL
    [ "$alone" = 1 ] && [ "$(_servers_count "$build" -L mysql_alone "$@")" -gt 0 ] &&
      _servers_one my DBCRON_TEST_MYSQL_ALONE
  fi
  wait
  for d in "${SERVERS_DIRS[@]}"; do
    kind=${d%%:*} dir=${d#*:}
    var=$(cat "$dir.var")
    [ -s "$dir/conn" ] || { echo "servers: the $kind server for $var did not start" >&2; return 1; }
    export "$var=$(cat "$dir/conn")"
    # DBCRON_TEST_PG -> DBCRON_TEST_PGDIR, DBCRON_TEST_PG_ALONE -> DBCRON_TEST_PGDIR_ALONE
    case "$var" in
    *_ALONE) export "${var%_ALONE}DIR_ALONE=$dir/srv" ;;
    *) export "${var}DIR=$dir/srv" ;;
    esac
    echo "test: $var=${!var}" >&2
  done
}

servers_stop() {
  local d kind dir
  for d in "${SERVERS_DIRS[@]}"; do
    kind=${d%%:*} dir=${d#*:}
    if [ "$kind" = pg ]; then
      bash "$SERVERS_SRC/scripts/pg-tmp.sh" stop "$dir/srv" &
    else
      bash "$SERVERS_SRC/scripts/mariadb-tmp.sh" stop "$dir/srv" &
    fi
  done
  wait
  for d in "${SERVERS_DIRS[@]}"; do rm -rf "${d#*:}" "${d#*:}.var"; done
  SERVERS_DIRS=()
}
