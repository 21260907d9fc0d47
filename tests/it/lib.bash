# Shared helpers for dbcron's integration tests (tests/it/*.sh).
#
#   set -euo pipefail
#   source "$DBCRON_TESTLIB"
#
# What it gives you:
#   $T_DIR                  a private temp dir, removed at exit (kept when
#                           DBCRON_TEST_KEEP=1 or when a check failed and
#                           DBCRON_TEST_KEEP_FAILED=1)
#   t_section TEXT          names the checks that follow (shown on failure)
#   dbc ARGS...             run $DBCRON_BIN; sets T_OUT, T_ERR, T_RC, never
#                           trips set -e
#   expect_rc N ARGS...     dbc ARGS and check the exit status is N
#   assert_eq WANT GOT [MSG]        both sides printed on failure
#   assert_ne A B [MSG]
#   assert_contains HAYSTACK NEEDLE [MSG]   fixed string
#   assert_match HAYSTACK REGEX [MSG]       extended regex (grep -E)
#   assert_ok [MSG] / assert_err_contains NEEDLE [MSG]  on the last dbc
#   sq DBFILE SQL           sqlite3 query, one row per line, '|' between
#   sq_hash DBFILE          sha256 of the full .dump (data and schema)
#   pgq CONNINFO SQL        psql query, unaligned, tuples only
#   t_pg_fresh_db PREFIX    create a new database on $DBCRON_TEST_PG and
#                           print a conninfo for it (dropped at exit)
#   t_bg CMD...             start in the background; killed at exit; sets T_BG_PID
#   wait_until SECS CMD...  poll CMD until it succeeds; SECS is a hang guard,
#                           never a speed requirement: give it generously
#   assert_ge N MIN [MSG] / assert_le N MAX [MSG]   integers
#   pass MSG / fail MSG     a passed check, printed; a failed one that stops
#                           the test at once (for "nothing after this means
#                           anything")
#   t_on_exit FN            FN RC runs first at exit (nodelib.bash kills its
#                           nodes and prints their logs there)
#   t_reference_backend B   true when B is the backend whose run covers the
#                           dialect-independent parts of a test (sqlite);
#                           twins skip those parts (docs/testing.md)
#   t_skip REASON           end the test as skipped (exit 77, ctest's skip)
#   t_done                  print the summary; exit 1 if any check failed
# Failed checks do not stop the script: they are counted, and the exit trap
# makes the test fail.  A command failing outside a check stops it (set -e).
# This is the one shell library of the integration tests: nodelib.bash adds
# the node helpers on top of it, and every assert takes WANT before GOT.

: "${DBCRON_BIN:?DBCRON_BIN must point at the dbcron binary}"

T_NAME=$(basename "${0%.sh}")
T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dbcron-it-$T_NAME.XXXXXX")

# The suite is bound by process starts on two cores (docs/testing.md), so
# the tools a test calls often are called directly: Debian's python3 rather
# than a version manager's shim first on PATH (a dozen shell scripts per
# call), and the psql binary rather than Debian's Perl wrapper around it.
# Links in a directory put first on PATH, not shell functions: a function
# run in the background (t_bg python3 ...) is a subshell whose kill leaves
# its child running, holding the test's output open, and ctest waits.
mkdir "$T_DIR/.bin"
[ -x /usr/bin/python3 ] && ln -s /usr/bin/python3 "$T_DIR/.bin/python3"
for _t_p in /usr/lib/postgresql/*/bin/psql; do
	[ -x "$_t_p" ] && ln -sfn "$_t_p" "$T_DIR/.bin/psql" # version order: the newest wins
done
unset _t_p
PATH=$T_DIR/.bin:$PATH
# wait_until's pause between polls, without starting /usr/bin/sleep: a read
# with a timeout on a FIFO this shell holds open at both ends never gets data.
mkfifo "$T_DIR/.pause"
exec {T_PAUSE_FD}<>"$T_DIR/.pause"
t_pause() { local _t_none; read -r -t "$1" -u "$T_PAUSE_FD" _t_none || true; }
T_CHECKS=0
T_FAILS=0
T_SECTION=""
T_PIDS=()
T_PG_DBS=()
T_MY_DBS=()
T_DONE=0
T_EXIT_FNS=()

t_on_exit() { T_EXIT_FNS+=("$1"); }

_t_cleanup() {
	local rc=$?
	local pid fn
	for fn in "${T_EXIT_FNS[@]}"; do
		"$fn" "$rc" || true
	done
	for pid in "${T_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${T_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	local db kind
	if [ -f "$T_DIR/.fresh_dbs" ]; then
		while read -r kind db; do
			if [ "$kind" = pg ]; then T_PG_DBS+=("$db"); else T_MY_DBS+=("$db"); fi
		done <"$T_DIR/.fresh_dbs"
	fi
	for db in "${T_PG_DBS[@]}"; do
		psql "$DBCRON_TEST_PG" -XAtq -c "drop database if exists \"$db\" with (force)" \
			>/dev/null 2>&1 || true
	done
	for db in "${T_MY_DBS[@]}"; do
		myq "" "drop database if exists $db" >/dev/null 2>&1 || true
	done
	if [ "${DBCRON_TEST_KEEP:-0}" = 1 ] ||
		{ [ "$T_FAILS" -gt 0 ] && [ "${DBCRON_TEST_KEEP_FAILED:-0}" = 1 ]; }; then
		echo "# kept $T_DIR" >&2
	else
		rm -rf "$T_DIR"
	fi
	if [ "$T_FAILS" -gt 0 ]; then
		echo "# $T_NAME: $T_FAILS of $T_CHECKS checks FAILED" >&2
		exit 1
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "# $T_NAME: stopped with status $rc (section: ${T_SECTION:-none}) after $T_CHECKS checks" >&2
	fi
	exit "$rc"
}
trap _t_cleanup EXIT

t_section() {
	T_SECTION=$*
	echo "## $*"
}

_t_pass() {
	T_CHECKS=$((T_CHECKS + 1))
	[ -z "${1:-}" ] || echo "ok - $1"
}
_t_fail() {
	T_CHECKS=$((T_CHECKS + 1))
	T_FAILS=$((T_FAILS + 1))
	{
		echo "FAIL [${T_SECTION}] $1"
		shift
		local line
		for line in "$@"; do
			echo "    $line"
		done
		if [ -n "${T_LAST_CMD:-}" ]; then
			echo "    last command: $T_LAST_CMD (status ${T_RC:-?})"
			echo "    stdout: ${T_OUT:-}" | head -n 20
			echo "    stderr: ${T_ERR:-}" | head -n 20
		fi
	} >&2
}

pass() { _t_pass "$1"; }

fail() {
	_t_fail "$1"
	exit 1
}

# Run dbcron without letting set -e stop the script.  nodelib.bash
# redefines dbc (output on stdout); expect_rc and t_refused keep this one.
dbc() { _t_dbc "$@"; }
_t_dbc() {
	local out="$T_DIR/.out" err="$T_DIR/.err"
	T_LAST_CMD="dbcron $*"
	T_RC=0
	"$DBCRON_BIN" "$@" >"$out" 2>"$err" || T_RC=$?
	T_OUT=$(cat "$out")
	T_ERR=$(cat "$err")
}

# Same, with stdin from a file (or - for the caller's stdin).
dbc_in() {
	local input=$1
	shift
	local out="$T_DIR/.out" err="$T_DIR/.err"
	T_LAST_CMD="dbcron $* < $input"
	T_RC=0
	"$DBCRON_BIN" "$@" <"$input" >"$out" 2>"$err" || T_RC=$?
	T_OUT=$(cat "$out")
	T_ERR=$(cat "$err")
}

expect_rc() {
	local want=$1
	shift
	_t_dbc "$@"
	if [ "$T_RC" = "$want" ]; then
		_t_pass
	else
		_t_fail "exit status of: dbcron $*" "want: $want" "got:  $T_RC"
	fi
}

assert_eq() {
	if [ "$1" == "$2" ]; then
		_t_pass "${3:-}"
	else
		_t_fail "${3:-values differ}" "want: $1" "got:  $2"
	fi
}

assert_ne() {
	if [ "$1" != "$2" ]; then
		_t_pass
	else
		_t_fail "${3:-values should differ}" "both: $1"
	fi
}

assert_contains() {
	if [[ "$1" == *"$2"* ]]; then
		_t_pass
	else
		_t_fail "${3:-text does not contain the expected part}" "want part: $2" "in text:   $1"
	fi
}

assert_not_contains() {
	if [[ "$1" != *"$2"* ]]; then
		_t_pass
	else
		_t_fail "${3:-text contains what it should not}" "unwanted: $2" "in text:  $1"
	fi
}

assert_ge() {
	if [ "$1" -ge "$2" ]; then
		_t_pass "${3:+$3 ($1 >= $2)}"
	else
		_t_fail "${3:-value too small}" "want: >= $2" "got:  $1"
	fi
}

assert_le() {
	if [ "$1" -le "$2" ]; then
		_t_pass "${3:+$3 ($1 <= $2)}"
	else
		_t_fail "${3:-value too large}" "want: <= $2" "got:  $1"
	fi
}

# A here-string, not `printf | grep -q`: grep -q stops reading at the first
# match, and under pipefail the writer's SIGPIPE then fails the check.
assert_match() {
	if grep -Eq -- "$2" <<<"$1"; then
		_t_pass
	else
		_t_fail "${3:-text does not match}" "regex: $2" "text:  $1"
	fi
}

assert_ok() {
	if [ "$T_RC" = 0 ]; then
		_t_pass
	else
		_t_fail "${1:-command failed}" "want status 0, got $T_RC"
	fi
}

assert_err_contains() {
	assert_contains "$T_ERR" "$1" "${2:-stderr of the last command}"
}

# With a busy timeout: a node's writes, or the recovery of a WAL index
# after a node was killed, hold the file's lock for a moment, and a read
# that meets it must wait, not fail ("database is locked").
sq() {
	sqlite3 -batch -noheader -cmd ".timeout 60000" "$1" "$2"
}

sq_hash() {
	sqlite3 -batch -cmd ".timeout 60000" "$1" .dump | sha256sum | cut -d' ' -f1
}

pgq() {
	psql "$1" -XAtq -v ON_ERROR_STOP=1 -c "$2"
}

# myq DB SQL: a query on the server of $DBCRON_TEST_MYSQL (a dbcron URL
# mysql://user@host:port/db), rows '|'-separated as pgq prints them.
myq() {
	local u=${DBCRON_TEST_MYSQL#*://} user host port
	user=${u%%@*}; u=${u#*@}; host=${u%%/*}; port=${host##*:}; host=${host%:*}
	mariadb --no-defaults -u"$user" -h"$host" -P"$port" -N -B ${1:+"$1"} -e "$2" | tr '\t' '|'
}

# A fresh database on the server of $DBCRON_TEST_MYSQL; prints its URL.
t_my_fresh_db() {
	: "${DBCRON_TEST_MYSQL:?DBCRON_TEST_MYSQL is not set}"
	local name="$1_$$_$RANDOM"
	myq "" "create database $name" >/dev/null
	# a file, not only the array: callers run this in $(...), whose
	# array the cleanup would never see
	echo "mysql $name" >>"$T_DIR/.fresh_dbs"
	T_MY_DBS+=("$name")
	echo "${DBCRON_TEST_MYSQL%/*}/$name"
}

# A fresh database on the server of $DBCRON_TEST_PG; prints its conninfo.
t_pg_fresh_db() {
	: "${DBCRON_TEST_PG:?DBCRON_TEST_PG is not set}"
	local name
	name="$1_$$_$RANDOM"
	case "$DBCRON_TEST_PG" in
	postgres://* | postgresql://*)
		echo "t_pg_fresh_db: DBCRON_TEST_PG must be a key=value conninfo" >&2
		return 1
		;;
	esac
	psql "$DBCRON_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "create database \"$name\"" >/dev/null
	echo "pg $name" >>"$T_DIR/.fresh_dbs"
	T_PG_DBS+=("$name")
	# a later dbname= overrides the earlier one in a key=value conninfo
	echo "$DBCRON_TEST_PG dbname=$name"
}

# t_fresh_url BACKEND NAME: the URL of a new, empty database on BACKEND
# (sqlite: the file $T_DIR/NAME.db; pg and mysql: on the server
# scripts/test.sh started, whose absence is a failure, not a skip).
t_fresh_url() {
	case "$1" in
	sqlite) echo "sqlite:$T_DIR/$2.db" ;;
	pg)
		[ -n "${DBCRON_TEST_PG:-}" ] || { echo "DBCRON_TEST_PG (a libpq conninfo) is required" >&2; return 1; }
		t_pg_fresh_db "$2" ;;
	mysql)
		[ -n "${DBCRON_TEST_MYSQL:-}" ] || { echo "DBCRON_TEST_MYSQL (a mysql:// URL) is required" >&2; return 1; }
		t_my_fresh_db "$2" ;;
	*) echo "unknown backend '$1' (sqlite, pg or mysql)" >&2; return 1 ;;
	esac
}

# t_use_db BACKEND URL: defines `dbq SQL` (rows '|'-separated, NULL as
# empty, || concatenating on every dialect) and `db_state` (one hash of
# the jobs, runs, nodes and locks tables, to show nothing was written).
t_use_db() {
	T_DB_BACKEND=$1 T_DB_URL=$2
	case "$1" in
	sqlite)
		dbq() { sq "${T_DB_URL#sqlite:}" "$1"; }
		db_state() { sq_hash "${T_DB_URL#sqlite:}"; }
		;;
	pg)
		dbq() { pgq "$T_DB_URL" "$1"; }
		# one psql for the four tables: it runs around every refused command
		db_state() {
			local t q=()
			for t in jobs runs nodes locks; do
				q+=(-c "select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from $t x")
			done
			psql "$T_DB_URL" -XAtq -v ON_ERROR_STOP=1 "${q[@]}" | sha256sum | cut -d' ' -f1
		}
		;;
	mysql)
		dbq() {
			myq "${T_DB_URL##*/}" "SET SESSION sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT'); $1" |
				sed 's/\bNULL\b//g'
		}
		db_state() { myq "${T_DB_URL##*/}" "CHECKSUM TABLE jobs, runs, nodes, locks" | sha256sum | cut -d' ' -f1; }
		;;
	esac
}

# t_refused NEEDLE ARGS...: dbcron ARGS exits 2 with NEEDLE on stderr and
# the database of t_use_db is exactly as it was (db_state before, after).
t_refused() {
	local needle=$1
	shift
	local before
	before=$(db_state)
	expect_rc 2 "$@"
	assert_err_contains "$needle" "stderr of: dbcron $*"
	assert_eq "$before" "$(db_state)" "database unchanged after: dbcron $*"
}

t_bg() {
	"$@" &
	T_BG_PID=$!
	T_PIDS+=("$T_BG_PID")
}

wait_until() {
	local secs=$1
	shift
	local deadline=$((SECONDS + secs))
	# Polls come quickly at first and then every 0.3 s: a condition that
	# takes seconds (a lease lapsing) costs a few dozen probes, not a
	# hundred, and each probe is often a database client.
	local pause=0.05
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			# said, because a wait that gives up costs its whole deadline
			# and a caller's `|| true` would hide that
			echo "# wait_until: gave up after ${secs} s: $*" >&2
			return 1
		fi
		t_pause "$pause"
		case $pause in
		0.05) pause=0.1 ;;
		0.1) pause=0.2 ;;
		*) pause=0.3 ;;
		esac
	done
}

t_skip() {
	echo "# $T_NAME: skipped: $*"
	exit 77
}

# A test that arms the store's fault seam through DBCRON_TEST_FAULTS: a
# build configured without DBCRON_FAULT_SEAM ignores the variable (as
# release and package builds must), so there the test cannot run.
t_need_fault_seam() {
	[ "${DBCRON_FAULT_SEAM_BUILT:-1}" = 1 ] ||
		t_skip "this build ignores DBCRON_TEST_FAULTS (configure with -DDBCRON_FAULT_SEAM=ON)"
}

# The parts of a test whose behaviour does not depend on the SQL dialect
# (argument parsing, output formats, process handling) run on the reference
# backend only; its PostgreSQL and MariaDB twins run the rest.
# DBCRON_TEST_ALL_PARTS=1 runs every part on every backend.
t_reference_backend() {
	[ "$1" = sqlite ] || [ "${DBCRON_TEST_ALL_PARTS:-0}" = 1 ]
}

t_done() {
	T_DONE=1
	echo "# $T_NAME: $((T_CHECKS - T_FAILS)) of $T_CHECKS checks passed"
}
