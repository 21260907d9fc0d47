# Sourced by the benchmarks that talk to MariaDB (sched.sh, shapes.sh).
# my_client ARGS...: the mariadb client on the server of DBCRON_TEST_MYSQL
# (mysql://user@host:port/db), no defaults files read.
my_client() {
  local u=${DBCRON_TEST_MYSQL#*://} user host port
  user=${u%%@*}; u=${u#*@}; host=${u%%/*}; port=${host##*:}; host=${host%:*}
  mariadb --no-defaults -u"$user" -h"$host" -P"$port" "$@"
}
