#!/usr/bin/env bash
# dbcron nodes --prune OLDER against real nodes: a stopped node and a dead
# one (killed, then reaped by another node) are deleted once older than
# OLDER; an alive row (a killed node nobody has reaped yet) and a dead
# node still holding a RUNNING run stay.  Runs on SQLite;
# nodes_prune_pg.sh and nodes_prune_mysql.sh run it on PostgreSQL and
# MariaDB (NODES_BACKEND=pg|mysql).
set -euo pipefail
source "$DBCRON_TESTLIB"

case "${NODES_BACKEND:-sqlite}" in
sqlite)
	URL=sqlite:$T_DIR/t.db
	dbq() { sq "$T_DIR/t.db" "$1"; }
	;;
pg)
	[ -n "${DBCRON_TEST_PG:-}" ] || { echo "DBCRON_TEST_PG (a libpq conninfo) is required" >&2; exit 1; }
	URL=$(t_pg_fresh_db dbcron_nprune)
	dbq() { pgq "$URL" "$1"; }
	;;
mysql)
	[ -n "${DBCRON_TEST_MYSQL:-}" ] || { echo "DBCRON_TEST_MYSQL (a mysql:// URL) is required" >&2; exit 1; }
	URL=$(t_my_fresh_db dbcron_nprune)
	dbq() { myq "${URL##*/}" "$1"; }
	;;
*)
	echo "unknown NODES_BACKEND" >&2
	exit 1
	;;
esac
export DBCRON_DB=$URL
FAST=(--lease 1s --heartbeat 200ms --quiet)

node_state() { dbq "select state from nodes where id = '$1'"; }
is_state() { [ "$(node_state "$1")" = "$2" ]; }
ids() { dbq "select id from nodes order by id" | tr '\n' ' '; }

expect_rc 0 init

t_section "a stopped node, a dead node, an unreaped one, a dead one with a run"
t_bg "$DBCRON_BIN" node --node-id stopped1 "${FAST[@]}"
wait_until 120 is_state stopped1 alive
kill -TERM "$T_BG_PID"
wait "$T_BG_PID" || true
assert_eq stopped "$(node_state stopped1)" "stopped1 is stopped"

t_bg "$DBCRON_BIN" node --node-id dead1 "${FAST[@]}"
wait_until 120 is_state dead1 alive
kill -KILL "$T_BG_PID"
t_bg "$DBCRON_BIN" node --node-id reaper "${FAST[@]}"
reaper=$T_BG_PID
wait_until 120 is_state dead1 dead
kill -TERM "$reaper"
wait "$reaper" || true

# a node dies in the middle of a run and nobody is left to reap it: its
# row says alive; marked dead here by hand it still holds a RUNNING run
expect_rc 0 job add long --at now -- /bin/sh -c "echo \$\$ > $T_DIR/long.pid; exec sleep 300"
t_bg "$DBCRON_BIN" node --node-id busy1 "${FAST[@]}"
wait_until 120 test -s "$T_DIR/long.pid"
# the start is written a moment after the command started: kill the node
# only once the database says RUNNING (under ASan in CI the kill came first)
busy_running() { [ "$(dbq "select count(*) from runs where node = 'busy1' and state = 2")" = 1 ]; }
wait_until 120 busy_running || fail "busy1's run never showed RUNNING in the database"
kill -KILL "$T_BG_PID"
kill -KILL "$(cat "$T_DIR/long.pid")" 2>/dev/null || true
t_bg "$DBCRON_BIN" node --node-id unreaped1 "${FAST[@]}"
wait_until 120 is_state unreaped1 alive
kill -KILL "$T_BG_PID"
dbq "update nodes set state = 'dead' where id = 'busy1'" >/dev/null
assert_eq "busy1 dead1 reaper stopped1 unreaped1 " "$(ids)" "five node rows"
assert_eq 1 "$(dbq "select count(*) from runs where node = 'busy1' and state = 2")" "busy1 holds a RUNNING run"

t_section "younger than OLDER: nothing goes"
expect_rc 0 nodes --prune 1h
assert_eq "pruned 0 node rows (stopped or dead, last heartbeat over 1h ago, no runs to resolve)" "$T_OUT"
assert_eq "busy1 dead1 reaper stopped1 unreaped1 " "$(ids)" "all five stay"

t_section "older: stopped and dead rows without runs to resolve go"
expect_rc 0 nodes --prune 0s
assert_eq "pruned 3 node rows (stopped or dead, last heartbeat over 0s ago, no runs to resolve)" "$T_OUT"
assert_eq "busy1 unreaped1 " "$(ids)" "the dead node with a RUNNING run and the alive row stay"
# the finished runs keep the node's name
expect_rc 0 runs --format csv
expect_rc 0 nodes --format csv
assert_match "$T_OUT" "^busy1,"

t_section "bad input"
expect_rc 2 nodes --prune soon
assert_err_contains "dbcron nodes: --prune:"
expect_rc 2 nodes --prune 1h --format csv
assert_err_contains "--prune prints a count, not a --format"
expect_rc 2 nodes --prune
assert_err_contains "needs a value"
assert_eq "busy1 unreaped1 " "$(ids)" "nothing deleted by a refused command"
t_done
