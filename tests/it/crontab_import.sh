#!/usr/bin/env bash
# dbcron job import-crontab through the CLI against a real database: the
# printed file applies with job apply, --apply writes the same jobs, a
# second import of the same crontab changes no name, refused lines are
# reported as FILE:LINE with exit 2 and --apply then writes nothing (or
# the others with --partial), and an imported entry run by a real node
# gets the text after its % on stdin.  Runs on SQLite; crontab_import_pg.sh
# runs it on PostgreSQL (CRONTAB_BACKEND=pg).
set -euo pipefail
source "$DBCRON_TESTLIB"

case "${CRONTAB_BACKEND:-sqlite}" in
sqlite)
	URL=sqlite:$T_DIR/t.db
	db_state() { sq_hash "$T_DIR/t.db"; }
	;;
pg)
	[ -n "${DBCRON_TEST_PG:-}" ] || { echo "DBCRON_TEST_PG (a libpq conninfo) is required" >&2; exit 1; }
	URL=$(t_pg_fresh_db dbcron_crontab)
	db_state() {
		pgq "$URL" "select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from jobs x"
	}
	;;
*)
	echo "unknown CRONTAB_BACKEND" >&2
	exit 1
	;;
esac
export DBCRON_DB=$URL

names() { python3 -c 'import json,sys; print(" ".join(sorted(j["name"] for j in json.load(sys.stdin))))'; }
db_names() {
	"$DBCRON_BIN" job list --format json | names
}

OUT=$T_DIR/out.txt
cat >"$T_DIR/good.cron" <<EOF
# a user crontab
SHELL=/bin/sh
GREETING="hello there"
*/5 * * * * echo "\$GREETING" >/dev/null
@daily /usr/local/bin/backup.sh --full
0 2 * * mon-fri cat >$OUT%first line%second \\% line
EOF
cat >"$T_DIR/bad.cron" <<'EOF'
0 3 * * * /usr/bin/true
@reboot /usr/bin/startup
MAILTO=ops@example.org
61 * * * * /bin/minute
* * * * *
0 4 * * * /usr/bin/false
EOF

t_section "init"
expect_rc 0 init

t_section "print, then job apply"
expect_rc 0 job import-crontab "$T_DIR/good.cron"
assert_eq "" "$T_ERR" "nothing on stderr for a clean crontab"
printf '%s\n' "$T_OUT" >"$T_DIR/good.json"
want=$(names <"$T_DIR/good.json")
assert_match "$want" '^crontab-backup\.sh-[0-9a-f]{8} crontab-cat-[0-9a-f]{8} crontab-echo-[0-9a-f]{8}$'
before=$(db_state)
# printing writes nothing, even with a database at hand
assert_eq "$before" "$(db_state)" "printing leaves the database alone"
expect_rc 0 job apply "$T_DIR/good.json"
assert_contains "$T_OUT" "applied: 3 created, 0 updated, 0 deleted"
assert_eq "$want" "$(db_names)" "the printed names are the stored names"

t_section "stdin, and the same names on a second import"
dbc_in "$T_DIR/good.cron" job import-crontab -
assert_eq 0 "$T_RC" "exit status from stdin"
assert_eq "$want" "$(names <<<"$T_OUT")" "same crontab, same names"
expect_rc 0 job import-crontab "$T_DIR/good.cron" --apply
assert_contains "$T_OUT" "applied: 0 created, 0 updated, 0 deleted; 3 unchanged"
assert_eq "$want" "$(db_names)" "--apply: still the same three jobs"

t_section "cron's behaviour carried over"
cat_job=$(tr ' ' '\n' <<<"$want" | grep '^crontab-cat-')
expect_rc 0 job show "$cat_job" --format json
assert_contains "$T_OUT" '"overlap":"allow"'
assert_contains "$T_OUT" '"misfire":"skip"'
assert_contains "$T_OUT" '"retries":0'
assert_contains "$T_OUT" '"PATH=/usr/bin:/bin"'
assert_contains "$T_OUT" '"GREETING=hello there"'

t_section "refused lines: FILE:LINE, exit 2, the others printed"
expect_rc 2 job import-crontab "$T_DIR/bad.cron"
assert_err_contains "$T_DIR/bad.cron:2: @reboot: not expressible"
assert_err_contains "$T_DIR/bad.cron:3: MAILTO=ops@example.org: dbcron mails nothing"
assert_err_contains "$T_DIR/bad.cron:4: key 'cron': '61 * * * *': field 1 (minute)"
assert_err_contains "$T_DIR/bad.cron:5: no command after the time fields"
assert_err_contains "$T_DIR/bad.cron: 2 jobs, 4 lines refused"
assert_eq 2 "$(names <<<"$T_OUT" | wc -w)" "the two good lines are printed"

t_section "--apply with refused lines writes nothing; --partial the others"
before=$(db_state)
expect_rc 2 job import-crontab "$T_DIR/bad.cron" --apply
assert_err_contains "nothing applied (fix the lines above, or --partial to apply the 2 others)"
assert_eq "$before" "$(db_state)" "database unchanged"
expect_rc 2 job import-crontab "$T_DIR/bad.cron" --apply --partial
assert_contains "$T_OUT" "applied: 2 created, 0 updated, 0 deleted"
assert_eq 5 "$(db_names | wc -w)" "3 + 2 jobs"

t_section "usage errors"
expect_rc 2 job import-crontab
assert_err_contains "missing the FILE"
expect_rc 2 job import-crontab "$T_DIR/nosuch"
assert_err_contains "$T_DIR/nosuch: No such file or directory"
expect_rc 2 job import-crontab "$T_DIR/good.cron" --system --user root
assert_err_contains "--user is for a user's crontab"
expect_rc 2 job import-crontab "$T_DIR/good.cron" --partial
assert_err_contains "--partial goes with --apply"
expect_rc 0 job import-crontab --help
assert_contains "$T_OUT" "usage: dbcron job import-crontab"

t_section "the system format: the user column is the job's user"
printf '17 * * * * root cd / && run-parts /etc/cron.hourly\n' >"$T_DIR/system.cron"
expect_rc 0 job import-crontab --system "$T_DIR/system.cron"
assert_contains "$T_OUT" '"user": "root"'
assert_contains "$T_OUT" '"cd / && run-parts /etc/cron.hourly"'

t_section "a real node runs an imported entry: % is stdin"
expect_rc 0 job trigger "$cat_job"
t_bg "$DBCRON_BIN" node --node-id crontab-n1 --quiet
wait_until 120 test -s "$OUT"
assert_eq "$(printf 'first line\nsecond %% line')" "$(cat "$OUT")" "stdin as cron(8) gives it"

t_done
