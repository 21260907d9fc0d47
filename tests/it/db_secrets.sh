#!/usr/bin/env bash
# Database URLs and their passwords stay out of sight: --db-file and
# DBCRON_DB_FILE work for job add, job list and a node (SQLite, and
# PostgreSQL when DBCRON_TEST_PG is set); a --db value is gone from the
# node's /proc/PID/cmdline before its jobs run (they read it); and no
# message for a password-bearing URL dbcron cannot use shows any piece of
# the password, whatever characters it holds.
set -euo pipefail
source "$DBCRON_TESTLIB"

# Passwords below are made of these pieces, found nowhere else.
PIECES="zq jx vk wy"
assert_no_piece() {
	local text=$1 what=$2 p
	for p in $PIECES; do
		if [[ "$text" == *"$p"* ]]; then
			_t_fail "$what: shows '$p' of the password" "text: $text"
			return
		fi
	done
	_t_pass
}

runs_of() { # JOB [db options...]: succeeded runs of JOB
	local job=$1
	shift
	"$DBCRON_BIN" runs --job "$job" --state succeeded --format csv --limit 0 "$@" | tail -n +2 | grep -c . || true
}

# ---------------------------------------------------------------------
t_section "--db-file and DBCRON_DB_FILE on SQLite"
unset DBCRON_DB DBCRON_DB_FILE
echo "sqlite:$T_DIR/file.db" >"$T_DIR/url"
chmod 600 "$T_DIR/url"
expect_rc 0 init --db-file "$T_DIR/url"
expect_rc 0 job add viafile --every 1s --db-file "$T_DIR/url" -- true
assert_contains "$T_OUT" "added job 'viafile'"
expect_rc 0 job list --db-file "$T_DIR/url"
assert_contains "$T_OUT" "viafile" "job list --db-file"
DBCRON_DB_FILE=$T_DIR/url expect_rc 0 job list
assert_contains "$T_OUT" "viafile" "job list with DBCRON_DB_FILE"
# the same database, through --db: the file named that one
expect_rc 0 job show viafile --db "sqlite:$T_DIR/file.db"
"$DBCRON_BIN" node --node-id f1 --db-file "$T_DIR/url" >"$T_DIR/node-f1.log" 2>&1 &
pid=$!
T_PIDS+=("$pid")
wait_until 120 bash -c "[ \$(\"$DBCRON_BIN\" runs --job viafile --state succeeded --format csv --db-file '$T_DIR/url' | tail -n +2 | grep -c .) -ge 2 ]" || true
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq 0 "$rc" "node --db-file stops cleanly"
n=$(runs_of viafile --db-file "$T_DIR/url")
[ "$n" -ge 2 ] && _t_pass || _t_fail "node --db-file ran the job ($n runs)" "$(tail -n 5 "$T_DIR/node-f1.log")"

t_section "--db-file on PostgreSQL"
if [ -n "${DBCRON_TEST_PG:-}" ]; then
	pgurl=$(t_pg_fresh_db dbcron_secrets)
	printf '%s\n' "$pgurl" >"$T_DIR/pgurl"
	expect_rc 0 init --db-file "$T_DIR/pgurl"
	expect_rc 0 job add pgfile --every 1s --db-file "$T_DIR/pgurl" -- true
	expect_rc 0 job list --db-file "$T_DIR/pgurl"
	assert_contains "$T_OUT" "pgfile" "job list --db-file (PostgreSQL)"
	"$DBCRON_BIN" node --node-id p1 --db-file "$T_DIR/pgurl" >"$T_DIR/node-p1.log" 2>&1 &
	pid=$!
	T_PIDS+=("$pid")
	wait_until 120 bash -c "[ \$(\"$DBCRON_BIN\" runs --job pgfile --state succeeded --format csv --db-file '$T_DIR/pgurl' | tail -n +2 | grep -c .) -ge 2 ]" || true
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_eq 0 "$rc" "node --db-file stops cleanly (PostgreSQL)"
	n=$(runs_of pgfile --db-file "$T_DIR/pgurl")
	[ "$n" -ge 2 ] && _t_pass || _t_fail "node --db-file ran the job on PostgreSQL ($n runs)" "$(tail -n 5 "$T_DIR/node-p1.log")"
else
	echo "# DBCRON_TEST_PG not set: PostgreSQL part not run"
fi

t_section "bad URL files"
expect_rc 2 job list --db-file "$T_DIR/nosuch"
assert_err_contains "dbcron job list: --db-file $T_DIR/nosuch: No such file or directory"
: >"$T_DIR/empty"
expect_rc 2 job list --db-file "$T_DIR/empty"
assert_err_contains "--db-file $T_DIR/empty: empty"
printf 'postgresql://u:zqjx@127.0.0.1:1/db\n# vkwy\n' >"$T_DIR/two"
expect_rc 2 job list --db-file "$T_DIR/two"
assert_err_contains "more than one line"
assert_no_piece "$T_ERR" "a file of two lines"
head -c 70000 /dev/zero | tr '\0' 'a' >"$T_DIR/big"
expect_rc 2 job list --db-file "$T_DIR/big"
assert_err_contains "larger than 64 KiB"
expect_rc 2 job list --db-file "$T_DIR/url" --db "sqlite:$T_DIR/file.db"
assert_err_contains "give --db or --db-file, not both"
DBCRON_DB=sqlite:x.db DBCRON_DB_FILE=$T_DIR/url expect_rc 2 job list
assert_err_contains "DBCRON_DB and DBCRON_DB_FILE are both set"
DBCRON_DB_FILE=$T_DIR/nosuch expect_rc 2 job list
assert_err_contains "DBCRON_DB_FILE $T_DIR/nosuch: No such file or directory"
printf '  postgresql://u:zq%%40jx@127.0.0.1:1/db?connect_timeout=2  \r\n' >"$T_DIR/pw"
expect_rc 1 job list --db-file "$T_DIR/pw"
assert_err_contains "cannot connect to postgresql://u:***@127.0.0.1:1/db" "a file's URL is used trimmed, shown masked"
assert_no_piece "$T_ERR" "a file's password"

t_section "no piece of a password in any message"
forms=(
	'postgresql://u:zq@jx@127.0.0.1:1/db'
	'postgresql://u:zq@jx@vk@127.0.0.1:1/db'
	'postgresql://u:zq/jx@127.0.0.1:1/db'
	'postgresql://u:zq?jx@127.0.0.1:1/db?connect_timeout=2'
	'postgresql://u:zq#jx@127.0.0.1:1/db'
	'postgresql://u:zq:jx@127.0.0.1:1/db'
	'postgresql://u:zq%zzjx@127.0.0.1:1/db'
	'postgres://u:zq&jx=vk@127.0.0.1:1/db'
	'postgresql://u@127.0.0.1:1/db?password=zq@jx'
	'postgresql://u@127.0.0.1:1/db?password=zq&jx'
	'postgresql://u@127.0.0.1:1/db?password=zq=jx'
	'postgresql://u@127.0.0.1:1/db&password=zqjx'
	'host=127.0.0.1 port=1 password=zq@jx'
	"host=127.0.0.1 port=1 password='zq jx'"
	"host=127.0.0.1 port=1 password='zqjx"
	'host=127.0.0.1 port=1 password=zqjx bogus'
)
for u in "${forms[@]}"; do
	for cmd in "job list" "init" "runs" "nodes" "locks"; do
		# shellcheck disable=SC2086
		dbc $cmd --db "$u"
		[ "$T_RC" -ne 0 ] && _t_pass || _t_fail "$cmd --db '$u' succeeded"
		assert_no_piece "$T_ERR$T_OUT" "$cmd --db '$u'"
	done
	dbc node --db "$u"
	assert_ne 0 "$T_RC" "node --db '$u' fails"
	assert_no_piece "$T_ERR" "node --db '$u'"
	dbc lock l1 --db "$u" -- true
	assert_no_piece "$T_ERR" "lock --db '$u'"
done
expect_rc 2 job list --db 'postgresql://u:zq@jx@127.0.0.1:1/db'
assert_err_contains "postgresql://u:***@127.0.0.1:1/db': an '@' or '/' in the user name or password must be percent-encoded"

t_section "a --db value is not in the node's command line"
db="sqlite:$T_DIR/zqjx.db"
expect_rc 0 init --db "$db"
expect_rc 0 job add peek --at now+1s --db "$db" \
	-- sh -c 'tr "\0" " " </proc/$PPID/cmdline >"$0"' "$T_DIR/seen-by-job"
"$DBCRON_BIN" node --node-id c1 --db "$db" >"$T_DIR/node-c1.log" 2>&1 &
pid=$!
T_PIDS+=("$pid")
wait_until 120 test -s "$T_DIR/seen-by-job" || true
own=$(tr '\0' ' ' </proc/$pid/cmdline)
kill -TERM "$pid"
wait "$pid" || true
seen=$(cat "$T_DIR/seen-by-job" 2>/dev/null || true)
assert_contains "$seen" "node --node-id c1 --db ***" "the job read the node's command line"
assert_no_piece "$seen" "the node's command line as its job sees it"
assert_no_piece "$own" "/proc/PID/cmdline of the node"
# dbcron lock: its command is a child too
dbc lock peek --db "$db" -- sh -c 'tr "\0" " " </proc/$PPID/cmdline' 
assert_eq 0 "$T_RC" "lock --db runs its command"
assert_contains "$T_OUT" "--db ***" "the lock's command sees the blanked value"
assert_no_piece "$T_OUT" "dbcron lock's command line"
expect_rc 0 job list --db="$db"
assert_contains "$T_OUT" "peek" "--db=URL works too"

t_done
