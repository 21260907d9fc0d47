#!/usr/bin/env bash
# dbcron job list and job show as a person reads them (issue 12, item 5):
# the next fire in the job's own zone and from now ("in 4m"), the last
# run's state and when it ended, what the job runs; job show's schedule in
# words and next five fires, each as `dbcron cron check` / `cron next --tz`
# say them; a listing longer than one page of the shared jobs page
# (app_jobs_page, also GET /api/v1/jobs) whole and in order.  Runs on
# SQLite; job_list_pg.sh and job_list_mysql.sh run it on PostgreSQL and
# MariaDB (JOB_LIST_BACKEND=pg|mysql).
set -euo pipefail
source "$DBCRON_TESTLIB"

BACKEND=${JOB_LIST_BACKEND:-sqlite}
case "$BACKEND" in
sqlite) URL=sqlite:$T_DIR/t.db ;;
pg)
	[ -n "${DBCRON_TEST_PG:-}" ] || { echo "DBCRON_TEST_PG (a libpq conninfo) is required" >&2; exit 1; }
	URL=$(t_pg_fresh_db dbcron_joblist)
	;;
mysql)
	[ -n "${DBCRON_TEST_MYSQL:-}" ] || { echo "DBCRON_TEST_MYSQL (a mysql:// URL) is required" >&2; exit 1; }
	URL=$(t_my_fresh_db dbcron_joblist)
	;;
*)
	echo "unknown JOB_LIST_BACKEND $BACKEND" >&2
	exit 1
	;;
esac
export DBCRON_DB=$URL
command -v jq >/dev/null || { echo "jq is required (scripts/deps.sh)" >&2; exit 1; }

# row NAME: the table row of job NAME
row() { grep -E "^$1 " <<<"$T_OUT" || true; }
# key NAME FILTER: jq FILTER on job NAME of the JSON listing in $T_OUT
key() { jq -r --arg n "$1" ".[] | select(.name == \$n) | $2" <<<"$T_OUT"; }

expect_rc 0 init
# 1 January is in winter on every year: CET, +01:00
expect_rc 0 job add newyear --cron '0 0 12 1 1 ?' --tz Europe/Berlin -- echo 'hi there'
expect_rc 0 job add soon --every 5m -- true
expect_rc 0 job add ok --every 1h -- true
expect_rc 0 job add bad --every 1h --retries 0 -- false
expect_rc 0 job add held --every 1h -- true
expect_rc 0 job pause held
expect_rc 0 job add hand --every 1h --handler nobody-has-it
# fails until the flag file exists: its newest run differs from its first
expect_rc 0 job add flip --every 1h --retries 0 -- test -e "$T_DIR/flag"

t_section "before any run"
expect_rc 0 job list
assert_match "$(row newyear)" 'Europe/Berlin +no +[0-9]{4}-01-01T12:00:00\+01:00 \(in [0-9]+d\) +- +echo '"'hi there'"'$' \
	"next fire in the job's zone and from now; no last run; the command"
assert_match "$(row soon)" ' \(in [45]m\) ' "every 5m: in 4m or 5m"
assert_match "$(row held)" ' yes +' "paused"
assert_match "$(row hand)" "handler nobody-has-it \(no live node has registered handler 'nobody-has-it'\)$" \
	"a handler job shows its handler, and that no node runs it"
assert_match "$(head -1 <<<"$T_OUT")" '^NAME +SCHEDULE +TZ +PAUSED +NEXT FIRE +LAST RUN +COMMAND$'
expect_rc 0 job list --format json
assert_match "$(key newyear .next_fire_local)" '^[0-9]{4}-01-01T12:00:00\+01:00$'
assert_eq "$(key newyear '.next_fire_at_ms / 1000 | todate')" \
	"$(key newyear '.next_fire_local | sub("\\+01:00$"; "Z") | fromdate | todate' | \
	   xargs -I{} date -u -d '{} -1 hour' +%Y-%m-%dT%H:%M:%SZ)" "the local text is the same instant"
want_words=$("$DBCRON_BIN" cron check '0 0 12 1 1 ?' | sed 's/^valid ([a-z]*): //')
assert_eq "$want_words" "$(key newyear .description)" "description as cron check says it"
assert_eq "every 5m" "$(key soon .description)"
assert_eq null "$(key ok .last_run)"
assert_eq '["echo","hi there"]' "$(key newyear '.command | tojson')" "the definition's keys stay"

t_section "after runs"
expect_rc 0 job trigger ok
expect_rc 0 job trigger bad
expect_rc 0 job trigger flip
t_bg "$DBCRON_BIN" node --node-id lister 2>"$T_DIR/node.log"
NODE=$T_BG_PID
# finished JOB...: each JOB's last run has ended
finished() {
	local n=$#
	"$DBCRON_BIN" job list --format json | jq -e --argjson want "$n" --args \
		'[.[] | select(.name | IN($ARGS.positional[])) | .last_run.finished_at_ms // empty]
		 | length == $want' "$@" >/dev/null
}
wait_until 120 finished ok bad flip || { tail "$T_DIR/node.log"; exit 1; }
expect_rc 0 job list --format json
first_flip=$(key flip .last_run.id)
assert_eq failed "$(key flip .last_run.state)"
touch "$T_DIR/flag"
expect_rc 0 job trigger flip
flip_done() { "$DBCRON_BIN" job list --format json | jq -e '.[] | select(.name == "flip") |
	.last_run.state == "succeeded"' >/dev/null; }
wait_until 120 flip_done || { tail "$T_DIR/node.log"; exit 1; }
kill "$NODE"
wait "$NODE" 2>/dev/null || true
expect_rc 0 job list
assert_match "$(row ok)" ' succeeded ([0-9]+[smh] ago|now) +true$' "last run's state and when it ended"
assert_match "$(row bad)" ' failed ([0-9]+[smh] ago|now) +false$'
expect_rc 0 job list --format json
assert_eq succeeded "$(key ok .last_run.state)"
assert_eq failed "$(key bad .last_run.state)"
assert_eq succeeded "$(key flip .last_run.state)" "the newest run, not the first"
assert_ne "$first_flip" "$(key flip .last_run.id)"
run_ok=$(key ok .last_run.id)
expect_rc 0 runs --job ok --format csv --limit 0
assert_contains "$T_OUT" ",$run_ok," "last_run.id is a run of the job"
# no node runs: the new fire stays SCHEDULED, and the last run is still the one that ended
expect_rc 0 job trigger ok
expect_rc 0 job list --format json
assert_eq "$run_ok" "$(key ok .last_run.id)" "a SCHEDULED fire is not the last run"
assert_eq succeeded "$(key ok .last_run.state)"

t_section "job show"
expect_rc 0 job show newyear
assert_eq "in words:          $want_words" "$(grep '^in words:' <<<"$T_OUT")"
got=$(sed -n '/^next fires:/,/^[a-z]/p' <<<"$T_OUT" | grep -v '^[a-z ]*:  *[^0-9 ]' |
	sed 's/^next fires: *//; s/^ *//' | grep -E '^[0-9]')
want=$("$DBCRON_BIN" cron next --count 5 --tz Europe/Berlin '0 0 12 1 1 ?')
assert_eq "$want" "$got" "job show's next five fires are cron next --tz's"
expect_rc 0 job show newyear --format json
assert_eq "$want_words" "$(jq -r .description <<<"$T_OUT")"
assert_eq 5 "$(jq '.next_fires | length' <<<"$T_OUT")"

t_section "more jobs than one page"
python3 -c 'import json; print(json.dumps([{"name": "p%05d" % i, "every": "1h", "command": ["true"]} for i in range(2345)]))' \
	>"$T_DIR/many.json"
expect_rc 0 job apply "$T_DIR/many.json"
expect_rc 0 job list --format json
assert_eq 2352 "$(jq length <<<"$T_OUT")" "every job, across the pages"
assert_eq "$(jq -r '.[].name' <<<"$T_OUT" | LC_ALL=C sort -u)" "$(jq -r '.[].name' <<<"$T_OUT")" \
	"each once, by name"
expect_rc 0 job list
assert_eq 2353 "$(wc -l <<<"$T_OUT")" "the table: a header and every job"

t_done
