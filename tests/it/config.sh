#!/usr/bin/env bash
# The configuration file and the precedence of settings (docs/cli.md
# "Configuration"): flag > environment > file > default for the database
# and the node's settings, seen in `config show` and in what the commands
# do; FILE:LINE errors; secrets masked; --db/--db-file/--config before the
# command; an empty --db or DBCRON_DB refused; read-only commands on a
# SQLite path that is not there fail and leave no file.  CONFIG_BACKEND=pg
# (config_pg.sh) runs the database-URL part on PostgreSQL.
set -euo pipefail
source "$DBCRON_TESTLIB"

unset DBCRON_DB DBCRON_DB_FILE DBCRON_CONFIG
BACKEND=${CONFIG_BACKEND:-sqlite}
cd "$T_DIR"

# the line of `config show` for KEY
show_line() { printf '%s\n' "$T_OUT" | grep -E "^$1 " || true; }

if [ "$BACKEND" = pg ]; then
	URL=$(t_pg_fresh_db config)
	URL2=$(t_pg_fresh_db config2)
else
	URL=sqlite:$T_DIR/a.db
	URL2=sqlite:$T_DIR/b.db
fi
"$DBCRON_BIN" init --db "$URL" >/dev/null
"$DBCRON_BIN" init --db "$URL2" >/dev/null
"$DBCRON_BIN" job add in-a --every 1h --handler noop --db "$URL" >/dev/null
"$DBCRON_BIN" job add in-b --every 1h --handler noop --db "$URL2" >/dev/null

# ---------------------------------------------------------------------
t_section "the database URL: file, env, flag, each level above the next"
printf '# the database\ndb = %s\n\nworkers = 3\n' "$URL" >"$T_DIR/a.conf"
export DBCRON_CONFIG=$T_DIR/a.conf
expect_rc 0 job list
assert_contains "$T_OUT" "in-a" "db from the file"
expect_rc 0 config show
assert_contains "$(show_line db)" "$T_DIR/a.conf:2" "config show: db from FILE:LINE"
assert_contains "$(show_line workers)" "3" "config show: workers value"
assert_contains "$(show_line workers)" "$T_DIR/a.conf:4" "config show: workers from FILE:LINE"
assert_match "$(show_line lease)" "3s +default$" "config show: an unset key is the default"
DBCRON_DB=$URL2 expect_rc 0 job list
assert_contains "$T_OUT" "in-b" "DBCRON_DB beats the file"
DBCRON_DB=$URL2 expect_rc 0 config show
assert_contains "$(show_line db)" "env DBCRON_DB" "config show: db from env"
DBCRON_DB=sqlite:$T_DIR/nothere.db expect_rc 0 job list --db "$URL"
assert_contains "$T_OUT" "in-a" "--db beats DBCRON_DB"
DBCRON_DB=sqlite:$T_DIR/nothere.db expect_rc 0 --db "$URL2" job list
assert_contains "$T_OUT" "in-b" "a global --db beats DBCRON_DB"
expect_rc 0 --db "$URL2" config show
assert_contains "$(show_line db)" "flag --db" "config show: db from a flag"
echo "$URL2" >"$T_DIR/url2"
chmod 600 "$T_DIR/url2"
DBCRON_DB=sqlite:$T_DIR/nothere.db expect_rc 0 --db-file "$T_DIR/url2" job list
assert_contains "$T_OUT" "in-b" "a --db-file flag beats DBCRON_DB"
DBCRON_DB_FILE=$T_DIR/url2 expect_rc 0 job list
assert_contains "$T_OUT" "in-b" "DBCRON_DB_FILE beats the file's db"
unset DBCRON_CONFIG

t_section "the URL from a file named by the configuration file"
printf 'db-file = %s\n' "$T_DIR/url2" >"$T_DIR/f.conf"
expect_rc 0 --config "$T_DIR/f.conf" job list
assert_contains "$T_OUT" "in-b" "db-file in the configuration file"
expect_rc 0 --config "$T_DIR/f.conf" config show
assert_contains "$(show_line db-file)" "$T_DIR/url2" "config show names the URL file"
assert_contains "$(show_line db)" "db-file, $T_DIR/f.conf:1" "config show: the URL came by db-file"

t_section "secrets are masked"
if [ "$BACKEND" = pg ]; then
	secret_url="$URL password=s3cr3tzq"
	secret_url_uri="postgresql://dbc:s3cr3tzq@127.0.0.1:1/x"
else
	secret_url="postgresql://dbc:s3cr3tzq@127.0.0.1:1/x"
	secret_url_uri="mysql://dbc:s3cr3tzq@127.0.0.1:1/x"
fi
printf 'db = %s\n' "$secret_url" >"$T_DIR/s.conf"
expect_rc 0 --config "$T_DIR/s.conf" config show
assert_not_contains "$T_OUT" "s3cr3tzq" "config show masks the file's password"
assert_contains "$(show_line db)" "***" "config show shows the mask"
DBCRON_DB=$secret_url_uri expect_rc 0 config show
assert_not_contains "$T_OUT" "s3cr3tzq" "config show masks the env's password"
echo "$secret_url_uri" >"$T_DIR/surl"
expect_rc 0 config show --db-file "$T_DIR/surl"
assert_not_contains "$T_OUT" "s3cr3tzq" "config show masks the URL file's password"

if [ "$BACKEND" = pg ]; then
	t_done
	exit 0
fi

# ---------------------------------------------------------------------
t_section "node settings: flag > file > default, and a node uses them"
cat >"$T_DIR/n.conf" <<EOF
db = $URL
node-id = from-file
workers = 3
lease = 4s
heartbeat = 1s
log-runs = true
claim-strategy = lock-row
EOF
expect_rc 0 --config "$T_DIR/n.conf" config show --db "$URL"
assert_contains "$(show_line node-id)" "from-file" "node-id from the file"
assert_contains "$(show_line lease)" "4s" "lease from the file"
assert_contains "$(show_line log-runs)" "true" "log-runs from the file"
assert_contains "$(show_line preread)" "5s (the lock-row default)" "preread follows the file's strategy"
t_bg "$DBCRON_BIN" --config "$T_DIR/n.conf" node --workers 2 --grace 1s 2>"$T_DIR/node.log"
wait_until 120 bash -c "\"$DBCRON_BIN\" nodes --db '$URL' --format csv | grep -q '^from-file,'" || true
dbc nodes --db "$URL" --format csv
# node,host,pid,state,workers,...
assert_match "$T_OUT" "^from-file,[^,]*,[0-9]+,alive,2," "the node runs with the file's id and the flag's workers"
kill "$T_BG_PID"
wait "$T_BG_PID" 2>/dev/null || true

t_section "the file's errors name FILE:LINE"
# the configuration reader and the option parser, before any database:
# the reference backend only (docs/testing.md, "Twins"); likewise below
if t_reference_backend "$BACKEND"; then
bad() { # WANT-IN-STDERR LINES...
	local want=$1
	shift
	printf '%s\n' "$@" >"$T_DIR/bad.conf"
	expect_rc 2 --config "$T_DIR/bad.conf" config show
	assert_contains "$T_ERR" "$want"
	expect_rc 2 --config "$T_DIR/bad.conf" node
	assert_contains "$T_ERR" "$want" "node refuses it too"
}
bad "bad.conf:2: unknown key 'colour'" "# ok" "colour = red"
bad "bad.conf:3: expected KEY = VALUE" "workers = 2" "" "workers 3"
bad "bad.conf:2: workers: already set at line 1" "workers = 2" "workers = 3"
bad "bad.conf:1: node-id: no value" "node-id ="
bad "bad.conf:2: db and db-file are both set (line 1)" "db = $URL" "db-file = $T_DIR/url2"
bad "bad.conf:2: workers: 'many' is not an integer >= 1" "lease = 5s" "workers = many"
bad "bad.conf:1: lease: duration" "lease = 5x"
bad "bad.conf:1: log-runs: 'maybe' is not true or false" "log-runs = maybe"
bad "bad.conf:1: claim-strategy: 'fast' is not per-row or lock-row" "claim-strategy = fast"
bad "bad.conf:1: expected KEY = VALUE" "= 3"
printf 'workers = many\n' >"$T_DIR/bad.conf"
expect_rc 0 --config "$T_DIR/bad.conf" node --workers 2 --help
expect_rc 2 --config "$T_DIR/bad.conf" node --workers 0
assert_contains "$T_ERR" "--workers: '0' is not an integer >= 1" "a bad flag is named as the flag"

t_section "drop-ins: FILE.d/*.conf in name order, a later key replacing an earlier one"
mkdir -p "$T_DIR/d.conf.d"
printf 'db = %s\nworkers = 3\nlease = 5s\n' "$URL" >"$T_DIR/d.conf"
printf 'workers = 5\n# a comment\nclaim-batch = 7\n' >"$T_DIR/d.conf.d/10-size.conf"
printf 'workers = 6\n' >"$T_DIR/d.conf.d/20-more.conf"
printf 'workers = 99\n' >"$T_DIR/d.conf.d/30-off.conf.disabled" # not *.conf: not read
printf 'db-file = %s\n' "$T_DIR/url2" >"$T_DIR/d.conf.d/40-db.conf"
expect_rc 0 --config "$T_DIR/d.conf" config show
assert_contains "$T_OUT" "drop-in: $T_DIR/d.conf.d/10-size.conf" "config show lists the drop-ins"
assert_match "$(show_line workers)" "^workers +6 +$T_DIR/d.conf.d/20-more.conf:1$" "the last file's value, with its file and line"
assert_match "$(show_line claim-batch)" "^claim-batch +7 +$T_DIR/d.conf.d/10-size.conf:3$" "a key only a drop-in sets"
assert_match "$(show_line lease)" "^lease +5s +$T_DIR/d.conf:3$" "a key only the main file sets"
expect_rc 0 --config "$T_DIR/d.conf" job list
assert_contains "$T_OUT" "in-b" "a drop-in's db-file replaces the main file's db"
printf 'workers = 2\nworkers = 4\n' >"$T_DIR/d.conf.d/50-twice.conf"
expect_rc 2 --config "$T_DIR/d.conf" config show
assert_contains "$T_ERR" "d.conf.d/50-twice.conf:2: workers: already set at line 1" "an error names the drop-in and its line"
rm "$T_DIR/d.conf.d/50-twice.conf"
printf 'workers = none\n' >"$T_DIR/d.conf.d/60-bad.conf"
expect_rc 2 --config "$T_DIR/d.conf" node
assert_contains "$T_ERR" "d.conf.d/60-bad.conf:1: workers: 'none' is not an integer >= 1" "a bad value is named by its drop-in"

t_section "a named configuration file must exist; the default may be missing"
expect_rc 2 --config "$T_DIR/nope.conf" job list --db "$URL"
assert_contains "$T_ERR" "--config $T_DIR/nope.conf: No such file or directory" "also when no key is read from it"
expect_rc 2 --config "$T_DIR/nope.conf" config show
assert_contains "$T_ERR" "--config $T_DIR/nope.conf: No such file or directory"
DBCRON_CONFIG=$T_DIR/nope.conf expect_rc 2 config show
assert_contains "$T_ERR" "DBCRON_CONFIG $T_DIR/nope.conf: No such file or directory"
DBCRON_CONFIG= expect_rc 2 config show
assert_contains "$T_ERR" "DBCRON_CONFIG is set but empty"
expect_rc 2 --config
assert_contains "$T_ERR" "option '--config' needs a value"
if [ ! -e /etc/dbcron/dbcron.conf ]; then
	expect_rc 0 config show
	assert_contains "$T_OUT" "config file: none" "no default file is fine"
	assert_match "$(show_line db)" "sqlite:\./dbcron\.db +default$" "the built-in default URL"
fi
fi

t_section "global options before the command"
expect_rc 0 --db "$URL" job list
assert_contains "$T_OUT" "in-a"
expect_rc 0 --db="$URL" job list
assert_contains "$T_OUT" "in-a" "--db=URL"
expect_rc 0 --db-file "$T_DIR/url2" runs
expect_rc 0 --config "$T_DIR/a.conf" nodes
expect_rc 2 --db "$URL" --db-file "$T_DIR/url2" job list
assert_contains "$T_ERR" "give --db or --db-file, not both"
expect_rc 2 --colour job list
assert_contains "$T_ERR" "unknown option '--colour'"
expect_rc 2 --db "$URL"
assert_contains "$T_ERR" "no command after the options"

if t_reference_backend "$BACKEND"; then
t_section "an empty --db or DBCRON_DB is an error, not ./dbcron.db"
expect_rc 2 job list --db ''
assert_contains "$T_ERR" "--db: empty database URL"
expect_rc 2 --db '' job list
DBCRON_DB= expect_rc 2 job list
assert_contains "$T_ERR" "DBCRON_DB is set but empty"
DBCRON_DB_FILE= expect_rc 2 job list
expect_rc 2 job list --db-file ''
assert_eq "" "$(ls "$T_DIR"/dbcron.db* 2>/dev/null)" "no ./dbcron.db was made"

t_section "read-only commands on a SQLite path that is not there leave no file"
for cmd in "job list" "job show x" "runs" "nodes" "locks" "serve --http 127.0.0.1:0"; do
	# shellcheck disable=SC2086
	expect_rc 1 $cmd --db "sqlite:$T_DIR/missing.db"
	assert_contains "$T_ERR" "SQLite database '$T_DIR/missing.db' does not exist" "$cmd names the path"
	assert_eq "" "$(ls "$T_DIR"/missing.db* 2>/dev/null)" "$cmd made no file"
done
expect_rc 0 config show --db "sqlite:$T_DIR/missing.db"
assert_eq "" "$(ls "$T_DIR"/missing.db* 2>/dev/null)" "config show made no file"
expect_rc 0 init --db "sqlite:$T_DIR/missing.db"
assert_eq "$T_DIR/missing.db" "$(ls "$T_DIR"/missing.db)" "init still makes the file"
expect_rc 0 job list --db "sqlite:$T_DIR/missing.db"
fi

t_done
