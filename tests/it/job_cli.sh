#!/usr/bin/env bash
# dbcron init / job ... / runs / nodes against a real database: every
# command, and bad input of every kind, each with its exit status, a message
# on stderr that names the problem, and the database left exactly as it was.
# Runs on SQLite; job_cli_pg.sh and job_cli_mysql.sh run the same checks on
# PostgreSQL and MariaDB (JOB_CLI_BACKEND=pg|mysql).
set -euo pipefail
source "$DBCRON_TESTLIB"

BACKEND=${JOB_CLI_BACKEND:-sqlite}
URL=$(t_fresh_url "$BACKEND" dbcron_jobcli)
t_use_db "$BACKEND" "$URL"
export DBCRON_DB=$URL

# bad NEEDLE ARGS...: refused as bad input, nothing written (t_refused).
bad() { t_refused "$@"; }

# bad_apply NEEDLE FILE [ARGS...]
bad_apply() {
	local needle=$1 file=$2
	shift 2
	bad "$needle" job apply "$file" "$@"
}

job_col() { dbq "select $2 from jobs where name = '$1'"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---------------------------------------------------------------------
t_section "init"
expect_rc 0 init
assert_match "$T_OUT" '^schema at version [0-9]+ \(was 0\)$'
version=$(sed -E 's/^schema at version ([0-9]+).*/\1/' <<<"$T_OUT")
expect_rc 0 init --db "$URL"
assert_eq "schema at version $version (was $version)" "$T_OUT" "init is idempotent"
expect_rc 0 init --help
assert_contains "$T_OUT" "usage: dbcron init"
bad "unknown option '--bogus'" init --bogus
bad "unexpected argument" init extra

if [ "$BACKEND" = sqlite ]; then
	t_section "commands on a database without schema"
	expect_rc 1 job list --db "sqlite:$T_DIR/empty.db"
	assert_ne "" "$T_ERR" "a message says why"
	bad "unsupported database URL" job list --db "nosuch://x"
fi

# ---------------------------------------------------------------------
t_section "job add: every kind of schedule"
t0=$(now_ms)
expect_rc 0 job add every30 --every 30s -- echo hello "two words"
assert_match "$T_OUT" "^added job 'every30', next fire [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"
t1=$(now_ms)
anchor=$(job_col every30 anchor_ms)
next=$(job_col every30 next_fire_at)
assert_eq "$((anchor + 30000))" "$next" "EVERY: first fire = anchor + interval"
# the database clock and ours are the same machine here: anchor is "now"
assert_match "$(( anchor >= t0 - 2000 && anchor <= t1 + 2000 ))" '^1$' "anchor is now (t0=$t0 anchor=$anchor t1=$t1)"
assert_eq "30000" "$(job_col every30 interval_ms)"

expect_rc 0 job add after5 --after 5m --handler noop
t1=$(now_ms)
next=$(job_col after5 next_fire_at)
assert_match "$(( next >= t0 + 300000 - 2000 && next <= t1 + 300000 + 2000 ))" '^1$' "AFTER: now + 5m (next=$next)"

expect_rc 0 job add at-future --at now+1h --handler sleep --arg 250ms
next=$(job_col at-future next_fire_at)
assert_eq "$next" "$(job_col at-future at_ms)" "AT: next fire = the instant"
assert_eq "250ms" "$(job_col at-future arg)"

expect_rc 0 job add at-past --at 2020-01-01T00:00:00Z -- true
assert_eq "1577836800000" "$(job_col at-past next_fire_at)" "a past instant is kept and fires at once"
assert_contains "$T_OUT" "next fire 2020-01-01T00:00:00Z"

expect_rc 0 job add at-epoch --at 4102444800 -- true
assert_eq "4102444800000" "$(job_col at-epoch at_ms)" "epoch seconds"
expect_rc 0 job add at-offset --at 2030-06-01T12:00:00.250+02:00 -- true
assert_eq "1906538400250" "$(job_col at-offset at_ms)" "RFC 3339 with offset and fraction"

t_section "job add: every option lands in its column"
expect_rc 0 job add full --every 1h30m --tz UTC --misfire catch_up --max-catchup 7 \
	--misfire-threshold 2s --overlap queue --node-loss abandon --retries 5 \
	--retry-base 10s --retry-cap 5m --jitter --timeout 1m --paused -- /bin/sh -c 'exit 3'
assert_contains "$T_OUT" "(paused)"
assert_eq "5400000|3|7|2000|3|2|5|10000|300000|60000|1" \
	"$(dbq "select interval_ms, misfire, max_catchup, misfire_threshold_ms, overlap, node_loss, max_retries, retry_base_ms, retry_cap_ms, timeout_ms, case when paused then 1 else 0 end from jobs where name = 'full'")"
assert_eq "1" "$(dbq "select case when retry_jitter then 1 else 0 end from jobs where name = 'full'")"
expect_rc 0 job add defaults --every 1s --handler noop
assert_eq "1|1|100|5000|1|1|3|60000|3600000|0|0" \
	"$(dbq "select kind - 1, misfire, max_catchup, misfire_threshold_ms, overlap, node_loss, max_retries, retry_base_ms, retry_cap_ms, timeout_ms, case when paused then 1 else 0 end from jobs where name = 'defaults'")" \
	"defaults (kind every = 2)"
expect_rc 0 job add order-free --handler noop --every 2s
expect_rc 0 job add zero-timeout --every 2s --timeout 0s --misfire-threshold 0s --handler noop
expect_rc 0 job add snake --every 2s -- printf '%s\n' -- --not-an-option
assert_ok "words after -- are the command's, even -- and --x"
expect_rc 0 job add --help
assert_contains "$T_OUT" "usage: dbcron job add NAME"

# ---------------------------------------------------------------------
t_section "job add: bad input"
# the database's own refusal, on every backend
bad "already exists" job add every30 --every 1m -- true
# the parser's refusals, before any database is opened: the same on every
# backend, so on the reference one only (docs/testing.md, "Twins")
if t_reference_backend "$BACKEND"; then
bad "unknown option '--bogus'" job add x --every 1s --bogus -- true
bad "unknown option '-x'" job add x --every 1s -x -- true
# a flag given a value is named, not printed as its option code
bad "option '--paused' takes no value" job add x --every 1s --paused=yes -- true
bad "needs a value" job add x --handler noop --every
bad "no schedule" job add x -- true
bad "two schedules" job add x --every 1s --after 1s -- true
# bytes that are not UTF-8 in a command would break every later read
bad "command argument 2 is not valid UTF-8" job add x --every 1s -- printf $'bad \xff byte'
bad "two schedules" job add x --at now --every 1s -- true
bad "--every: duration '5x'" job add x --every 5x -- true
bad "must be greater than zero" job add x --every 0s -- true
bad "--every: duration '-1s'" job add x --every -1s -- true
bad "--after: duration" job add x --after '' -- true
bad "missing unit" job add x --every 5 -- true
bad "--timeout: duration '5x'" job add x --every 1s --timeout 5x -- true
bad "--retry-base" job add x --every 1s --retry-base 0s -- true
bad "--misfire-threshold" job add x --every 1s --misfire-threshold soon -- true
bad "--retries 'abc': expected an integer" job add x --every 1s --retries abc -- true
bad "--retries: -1 is out of range" job add x --every 1s --retries -1 -- true
bad "--retries: 5000 is out of range" job add x --every 1s --retries 5000 -- true
bad "--max-catchup: 0 is out of range" job add x --every 1s --max-catchup 0 -- true
bad "--misfire 'sometimes': expected fire_once, skip or catch_up" job add x --every 1s --misfire sometimes -- true
bad "--overlap 'never'" job add x --every 1s --overlap never -- true
bad "--node-loss 'x'" job add x --every 1s --node-loss x -- true
bad "--at: time 'tomorrow'" job add x --at tomorrow -- true
bad "--at: time '2026-02-30T00:00:00Z'" job add x --at 2026-02-30T00:00:00Z -- true
bad "retry base must be > 0 and cap >= base" job add x --every 1s --retry-base 2h --retry-cap 1h -- true
bad "unknown handler 'nosuch'" job add x --every 1s --handler nosuch --strict
bad "empty handler name" job add x --every 1s --handler ''
bad "no command" job add x --every 1s
bad "no command" job add x --every 1s --
bad "empty string" job add x --every 1s -- ''
bad "both --handler and a command" job add x --every 1s --handler noop -- true
bad "--arg is only for --handler" job add x --every 1s --arg 1 -- true
bad "missing the job NAME" job add --every 1s -- true
bad "unexpected argument 'y'" job add x y --every 1s -- true
bad "--every: given twice" job add x --every 1s --every 2s -- true
bad "must be 1-200 printable characters" job add 'a b' --every 1s -- true
bad "must be 1-200 printable characters" job add "$(printf 'n%.0s' {1..201})" --every 1s -- true
fi

t_section "job add: cron and zones"
expect_rc 0 job add cron5 --cron '0 */5 * * * ?' --tz Europe/Paris -- true
next=$(job_col cron5 next_fire_at)
assert_eq "0" "$((next % 300000))" "next fire on a 5-minute boundary"
assert_match "$(( next > $(now_ms) - 2000 ))" '^1$' "next fire after now"
bad "field" job add x --cron '61 * * * *' -- true
bad "--cron" job add x --cron '* * *' -- true
bad "unknown time zone 'Mars/Olympus'" job add x --every 1s --tz Mars/Olympus -- true
bad "--tz" job add x --cron '0 0 * * *' --tz Nowhere -- true

# ---------------------------------------------------------------------
t_section "job list / show"
expect_rc 0 job list
assert_match "$T_OUT" '^NAME +SCHEDULE +TZ +PAUSED +NEXT FIRE +LAST RUN +COMMAND$'
assert_match "$T_OUT" '^every30 +every 30s +UTC +no +[0-9]{4}-'
assert_match "$T_OUT" '^full +every 1h30m +UTC +yes '
expect_rc 0 job list --format json
assert_eq "ok" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); j={x["name"]:x for x in d}; print("ok" if j["full"]["retries"]==5 and j["full"]["every"]=="1h30m" and j["full"]["paused"] is True and j["every30"]["command"]==["echo","hello","two words"] and j["at-future"]["handler"]=="sleep" else d)' <<<"$T_OUT")" "json list"
bad "--format 'xml'" job list --format xml
bad "unexpected argument" job list extra
expect_rc 0 job show full
assert_match "$T_OUT" '^name: +full$'
assert_match "$T_OUT" '^misfire: +catch_up \(threshold 2s, max catch-up 7\)$'
assert_match "$T_OUT" "^command: +/bin/sh -c 'exit 3'$"
assert_match "$T_OUT" '^retries: +5 \(backoff 10s doubling up to 5m, with jitter\)$'
assert_match "$T_OUT" '^last runs: +none$'
expect_rc 0 job show full --format json
assert_eq "5" "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["retries"])' <<<"$T_OUT")"
bad "no job named 'nosuch'" job show nosuch
bad "missing the job NAME" job show

# ---------------------------------------------------------------------
t_section "pause / resume / delete / trigger"
expect_rc 0 job pause every30
assert_eq "paused job 'every30'" "$T_OUT"
assert_eq "1" "$(job_col every30 'case when paused then 1 else 0 end')"
expect_rc 0 job pause every30
assert_contains "$T_OUT" "already paused"
before=$(now_ms)
expect_rc 0 job resume every30
assert_contains "$T_OUT" "resumed job 'every30', next fire"
assert_eq "0" "$(job_col every30 'case when paused then 1 else 0 end')"
next=$(job_col every30 next_fire_at)
anchor=$(job_col every30 anchor_ms)
assert_eq "0" "$(( (next - anchor) % 30000 ))" "resume stays on the anchored series"
assert_match "$(( next > before - 2000 ))" '^1$' "resume: next fire from now"
expect_rc 0 job add oneshot --at now+1s --handler noop
at=$(job_col oneshot at_ms)
expect_rc 0 job pause oneshot
sleep 1.2
expect_rc 0 job resume oneshot
assert_eq "$at" "$(job_col oneshot next_fire_at)" "a one-shot paused past its time fires at once on resume"
expect_rc 0 job pause after5
before=$(now_ms)
expect_rc 0 job resume after5
next=$(job_col after5 next_fire_at)
assert_match "$(( next >= before + 300000 - 2000 && next <= $(now_ms) + 300000 + 2000 ))" '^1$' "AFTER resume: now + interval (next=$next)"
bad "no job named 'nosuch'" job pause nosuch
bad "no job named 'nosuch'" job resume nosuch
bad "no job named 'nosuch'" job delete nosuch
bad "no job named 'nosuch'" job trigger nosuch
bad "unknown command 'frobnicate'" job frobnicate x
expect_rc 0 job trigger every30
assert_match "$T_OUT" "^triggered job 'every30': run [0-9]+ at "
run_id=$(sed -E 's/.*run ([0-9]+) at.*/\1/' <<<"$T_OUT")
assert_eq "1|1" "$(dbq "select state, attempt from runs where id = $run_id")" "a scheduled first attempt"
expect_rc 0 job trigger every30
run2=$(sed -E 's/.*run ([0-9]+) at.*/\1/' <<<"$T_OUT")
assert_ne "$run_id" "$run2" "two triggers, two runs"
expect_rc 0 job delete snake
assert_eq "deleted job 'snake'" "$T_OUT"
assert_eq "0" "$(dbq "select count(*) from jobs where name = 'snake'")"
expect_rc 0 job show every30
assert_match "$T_OUT" "^ +$run2 +[0-9]{4}-"
expect_rc 0 job --help
bad "usage: dbcron job" job

# ---------------------------------------------------------------------
t_section "job apply"
cat >"$T_DIR/a.json" <<'EOF'
[
  {"name": "ap-every", "every": "10s", "command": ["echo", "a b"], "retries": 2},
  {"name": "ap-at", "at": "now+10m", "handler": "noop"},
  {"name": "ap-snake", "after": "1m", "handler": "sleep", "arg": "1s",
   "max_catchup": 3, "misfire_threshold": "1s", "node_loss": "abandon",
   "retry_base": "1s", "retry_cap": "2s", "jitter": true, "paused": false,
   "tz": "UTC", "misfire": "skip", "overlap": "allow", "timeout": "30s"}
]
EOF
jobs_before=$(dbq "select count(*) from jobs")
expect_rc 0 job apply "$T_DIR/a.json"
assert_eq "applied: 3 created, 0 updated, 0 deleted" "$T_OUT"
assert_eq "$((jobs_before + 3))" "$(dbq "select count(*) from jobs")"
assert_eq "3|1000|2|2|1000|2000|30000" "$(dbq "select max_catchup, misfire_threshold_ms, node_loss, misfire, retry_base_ms, retry_cap_ms, timeout_ms from jobs where name = 'ap-snake'")" "snake_case keys"
snap_every=$(dbq "select anchor_ms, next_fire_at from jobs where name = 'ap-every'")
snap_at=$(dbq "select at_ms, next_fire_at from jobs where name = 'ap-at'")
sleep 1.1
expect_rc 0 job apply "$T_DIR/a.json"
assert_eq "applied: 0 created, 0 updated, 0 deleted; 3 unchanged" "$T_OUT" "a re-apply changes nothing"
assert_eq "$snap_every" "$(dbq "select anchor_ms, next_fire_at from jobs where name = 'ap-every'")" "re-apply keeps anchor and next_fire_at"
assert_eq "$snap_at" "$(dbq "select at_ms, next_fire_at from jobs where name = 'ap-at'")" "re-apply keeps a resolved now+10m"

expect_rc 0 job pause ap-every
expect_rc 0 job apply "$T_DIR/a.json"
assert_eq "1" "$(job_col ap-every 'case when paused then 1 else 0 end')" "no \"paused\" key keeps the paused state"

sed 's/"every": "10s"/"every": "20s"/' "$T_DIR/a.json" >"$T_DIR/b.json"
expect_rc 0 job apply "$T_DIR/b.json"
assert_eq "applied: 0 created, 1 updated, 0 deleted; 2 unchanged" "$T_OUT"
assert_eq "20000" "$(job_col ap-every interval_ms)" "a changed schedule is updated"
next=$(job_col ap-every next_fire_at)
anchor=$(job_col ap-every anchor_ms)
assert_eq "20000" "$((next - anchor))" "a changed schedule starts a new series"

# A cron job whose only change is its zone starts a new series: its next
# fire moves to the new zone.  09:00 in Tokyo (UTC+9, no daylight saving)
# is 00:00 UTC, so the time of day of next_fire_at tells the zones apart.
printf '[{"name": "ap-zone", "cron": "0 0 9 * * ?", "tz": "UTC", "handler": "noop"}]' >"$T_DIR/z1.json"
sed 's#"UTC"#"Asia/Tokyo"#' "$T_DIR/z1.json" >"$T_DIR/z2.json"
expect_rc 0 job apply "$T_DIR/z1.json"
assert_eq "32400" "$(( $(job_col ap-zone next_fire_at) / 1000 % 86400 ))" "cron 09:00 in UTC: next fire at 09:00 UTC"
expect_rc 0 job apply "$T_DIR/z2.json"
assert_eq "applied: 0 created, 1 updated, 0 deleted" "$T_OUT"
assert_eq "Asia/Tokyo" "$(job_col ap-zone tz)"
assert_eq "0" "$(( $(job_col ap-zone next_fire_at) / 1000 % 86400 ))" \
	"a change of zone alone moves the next fire to the new zone (09:00 in Tokyo is 00:00 UTC)"
expect_rc 0 job apply "$T_DIR/z1.json"
assert_eq "32400" "$(( $(job_col ap-zone next_fire_at) / 1000 % 86400 ))" "and back to UTC"

printf '[{"name": "ap-stdin", "every": "1m", "handler": "noop"}]' >"$T_DIR/c.json"
dbc_in "$T_DIR/c.json" job apply -
assert_ok "apply from stdin"
assert_eq "applied: 1 created, 0 updated, 0 deleted" "$T_OUT"

t_section "job apply --prune"
total=$(dbq "select count(*) from jobs")
expect_rc 0 job apply "$T_DIR/a.json" --prune
assert_match "$T_OUT" "^applied: 0 created, [0-9]+ updated, $((total - 3)) deleted(; [0-9]+ unchanged)?$"
assert_eq "ap-at ap-every ap-snake" "$(dbq "select name from jobs order by name" | tr '\n' ' ' | sed 's/ $//')"
assert_match "$(dbq "select count(*) from runs where job_name = 'every30'")" '^[1-9]' "runs of a deleted job are kept"
expect_rc 0 job add keep-me --every 1m --handler noop
echo '[]' >"$T_DIR/empty.json"
expect_rc 0 job apply "$T_DIR/empty.json"
assert_eq "applied: 0 created, 0 updated, 0 deleted" "$T_OUT" "empty file without --prune touches nothing"

t_section "job list --format json feeds job apply"
expect_rc 0 job list --format json
python3 -c '
import json, sys
d = json.load(sys.stdin)
for j in d:
    for k in ("id", "next_fire_at_ms", "next_fire"):
        del j[k]
print(json.dumps(d))' <<<"$T_OUT" >"$T_DIR/roundtrip.json"
snap=$(dbq "select name, anchor_ms, at_ms, next_fire_at, case when paused then 1 else 0 end, max_retries, timeout_ms from jobs order by name")
n=$(dbq "select count(*) from jobs")
expect_rc 0 job apply "$T_DIR/roundtrip.json"
assert_eq "applied: 0 created, 0 updated, 0 deleted; $n unchanged" "$T_OUT"
assert_eq "$snap" "$(dbq "select name, anchor_ms, at_ms, next_fire_at, case when paused then 1 else 0 end, max_retries, timeout_ms from jobs order by name")" "a listed definition re-applied moves nothing"
expect_rc 0 job list --format json
printf '%s\n' "$T_OUT" >"$T_DIR/listed.json"
expect_rc 0 job apply "$T_DIR/listed.json"
assert_eq "applied: 0 created, 0 updated, 0 deleted; $n unchanged" "$T_OUT" "the listing applies as it is (its store keys are read-only)"
assert_eq "$snap" "$(dbq "select name, anchor_ms, at_ms, next_fire_at, case when paused then 1 else 0 end, max_retries, timeout_ms from jobs order by name")" "an unedited listing re-applied moves nothing"

t_section "job apply: bad files"
# refused while the file is read and checked, before the database: the
# reference backend only (docs/testing.md, "Twins")
if t_reference_backend "$BACKEND"; then
bad_apply "$T_DIR/nosuch.json: No such file or directory" "$T_DIR/nosuch.json"
bad_apply "Is a directory" "$T_DIR"
if [ "$(id -u)" -ne 0 ]; then
	cp "$T_DIR/a.json" "$T_DIR/secret.json"
	chmod 000 "$T_DIR/secret.json"
	bad_apply "Permission denied" "$T_DIR/secret.json"
fi
printf '[{"name": "x", "every": "1s",\n "handler": "noop"' >"$T_DIR/bad.json"
bad_apply "bad.json:2:" "$T_DIR/bad.json"
printf '' >"$T_DIR/bad.json"
bad_apply "bad.json:" "$T_DIR/bad.json"
echo '{"name": "x"}' >"$T_DIR/bad.json"
bad_apply "expected a JSON array" "$T_DIR/bad.json"
echo '[42]' >"$T_DIR/bad.json"
bad_apply "job #1: expected an object" "$T_DIR/bad.json"
echo '[{"every": "1s", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "job #1: missing key 'name'" "$T_DIR/bad.json"
echo '[{"name": 7, "every": "1s", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "key 'name': expected a string" "$T_DIR/bad.json"
cat >"$T_DIR/bad.json" <<'EOF'
[{"name": "g1", "every": "1s", "handler": "noop"},
 {"name": "g2", "every": "1s", "handler": "noop"},
 {"name": "g3", "every": "1s", "handler": "noop", "retries": "3"}]
EOF
bad_apply "bad.json: job #3 ('g3'): key 'retries': expected an integer" "$T_DIR/bad.json" --prune
assert_err_contains "nothing applied (1 error)"
assert_eq "0" "$(dbq "select count(*) from jobs where name like 'g_'")" "good entries beside a bad one are not written"
echo '[{"name": "x", "every": "1s", "handler": "noop", "colour": "red"}]' >"$T_DIR/bad.json"
bad_apply "job #1 ('x'): unknown key 'colour'" "$T_DIR/bad.json"
echo '[{"name": "x", "every": 5, "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "key 'every': expected a duration string" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "handler": "noop", "jitter": "yes"}]' >"$T_DIR/bad.json"
bad_apply "key 'jitter': expected true or false" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "command": "echo hi"}]' >"$T_DIR/bad.json"
bad_apply "key 'command': expected a non-empty array of strings" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "command": ["echo", 1]}]' >"$T_DIR/bad.json"
bad_apply "key 'command': expected a non-empty array of strings" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "5x", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "job #1 ('x'): key 'every': duration '5x'" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "0s", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "must be greater than zero" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "handler": "nosuch"}]' >"$T_DIR/bad.json"
bad_apply "job #1 ('x'): unknown handler 'nosuch'" "$T_DIR/bad.json" --strict
echo '[{"name": "x", "every": "1s"}]' >"$T_DIR/bad.json"
bad_apply "job #1 ('x'): no command" "$T_DIR/bad.json"
echo '[{"name": "x", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "no schedule" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "at": "now", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "two schedules" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "retries": 2, "retries": 3, "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "duplicate object key" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "max-catchup": 2, "max_catchup": 3, "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "key 'max-catchup': given twice" "$T_DIR/bad.json"
echo '[{"name": "x", "every": "1s", "handler": "noop"}, {"name": "y", "every": "1s", "handler": "noop"}, {"name": "x", "every": "2s", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "job #3 ('x'): duplicate name (first at job #1)" "$T_DIR/bad.json"
echo '[{"name": "a b", "every": "1s", "handler": "noop"}]' >"$T_DIR/bad.json"
bad_apply "must be 1-200 printable characters" "$T_DIR/bad.json"
python3 -c 'import json; print(json.dumps([{"name": "e%d" % i, "every": "%dx" % i, "handler": "noop"} for i in range(30)]))' >"$T_DIR/bad.json"
bad_apply "10 more errors not shown" "$T_DIR/bad.json"
assert_err_contains "nothing applied (30 errors)"
bad "missing the FILE" job apply
bad "unknown option '--force'" job apply "$T_DIR/a.json" --force
fi

t_section "job apply: a larger file in one transaction"
python3 -c 'import json; print(json.dumps([{"name": "bulk-%05d" % i, "every": "%ds" % (i % 300 + 1), "handler": "noop"} for i in range(2000)]))' >"$T_DIR/bulk.json"
expect_rc 0 job apply "$T_DIR/bulk.json"
assert_eq "applied: 2000 created, 0 updated, 0 deleted" "$T_OUT"
assert_eq "2000" "$(dbq "select count(*) from jobs where name like 'bulk-%'")"
expect_rc 0 job apply "$T_DIR/a.json" --prune
assert_eq "0" "$(dbq "select count(*) from jobs where name like 'bulk-%'")"

t_section "job apply: bounded input"
# limits on the input, before the database: the reference backend only
if t_reference_backend "$BACKEND"; then
# bulk.json is about 110 KB: over a 64K limit, under 1M
bad "bulk.json: larger than the limit of 64 KiB (--max-bytes N raises it); nothing applied" \
	job apply "$T_DIR/bulk.json" --max-bytes 64K
bad "<stdin>: larger than the limit of 1000 bytes (--max-bytes N raises it)" \
	job apply - --max-bytes 1000 <"$T_DIR/bulk.json"
before=$(db_state)
dbc_in "$T_DIR/bulk.json" job apply - --max-bytes 1000
assert_eq 2 "$T_RC" "stdin over --max-bytes: exit 2"
assert_err_contains "<stdin>: larger than the limit of 1000 bytes"
assert_eq "$before" "$(db_state)" "stdin over --max-bytes: database unchanged"
# the default limit, 64 MiB: a sparse file is refused by its size, an
# endless stream after 64 MiB (so at most that much memory)
truncate -s 65M "$T_DIR/huge.json"
bad "huge.json: larger than the limit of 64 MiB (--max-bytes N raises it); nothing applied" \
	job apply "$T_DIR/huge.json"
bad "/dev/zero: larger than the limit of 64 MiB" job apply /dev/zero
# an endless, well-formed array on stdin (it grew to 1.8 GB before the
# limit); timeout turns a regression into a failure, not a hang
endless() {
	printf '['
	yes '{"name": "x", "every": "1s", "handler": "noop"},' || true
}
before=$(db_state)
set +e
endless | timeout 120 "$DBCRON_BIN" job apply - >/dev/null 2>"$T_DIR/endless.err"
endless_rc=${PIPESTATUS[1]}
set -e
assert_eq 2 "$endless_rc" "endless array on stdin: exit 2"
assert_contains "$(cat "$T_DIR/endless.err")" "<stdin>: larger than the limit of 64 MiB (--max-bytes N raises it); nothing applied" \
	"endless array on stdin: the message"
assert_eq "$before" "$(db_state)" "endless array on stdin: database unchanged"
bad "bulk.json: 2000 jobs, more than the limit of 1999 (--max-jobs N raises it); nothing applied" \
	job apply "$T_DIR/bulk.json" --max-jobs 1999
bad "--max-bytes '0': expected a whole number" job apply "$T_DIR/bulk.json" --max-bytes 0
bad "--max-bytes '12X': expected a whole number" job apply "$T_DIR/bulk.json" --max-bytes 12X
bad "--max-jobs '1K': expected a whole number" job apply "$T_DIR/bulk.json" --max-jobs 1K
bad "unknown option '--max-bytes'" job list --max-bytes 10
# raised limits apply the same file
expect_rc 0 job apply "$T_DIR/bulk.json" --max-bytes 1M --max-jobs 2000
assert_eq "applied: 2000 created, 0 updated, 0 deleted" "$T_OUT" "--max-bytes/--max-jobs raise the limits"
expect_rc 0 job apply "$T_DIR/a.json" --prune --max-bytes 1M
expect_rc 0 job apply --help
assert_contains "$T_OUT" "--max-bytes N" "--help names --max-bytes"
assert_contains "$T_OUT" "--max-jobs N" "--help names --max-jobs"
fi

# ---------------------------------------------------------------------
t_section "runs"
expect_rc 0 job add r1 --every 1h -- true
expect_rc 0 job add r2 --every 1h --handler noop
for i in 1 2 3; do
	expect_rc 0 job trigger r1
done
for i in $(seq 1 60); do
	"$DBCRON_BIN" job trigger r2 >/dev/null
done
r1_first=$(dbq "select min(id) from runs where job_name = 'r1'")
dbq "update runs set state = 3, node = 'n1', started_ms = fire_at + 5, finished_ms = fire_at + 105, exit_code = 0 where id = $r1_first"
dbq "update runs set state = 4, node = 'n,2', started_ms = fire_at + 1, finished_ms = fire_at + 2, exit_code = 7, error = 'said \"no\", twice', missed = 2 where id = $((r1_first + 1))"

expect_rc 0 runs --format csv --job r1
assert_eq "job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code" \
	"$(head -n 1 <<<"$T_OUT" | cut -d, -f1-8)" "csv header: the contract columns first, in order"
assert_eq "job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code,missed,error,run_id,due_at_ms,for_node,node_index,node_total" \
	"$(head -n 1 <<<"$T_OUT")" "csv header"
assert_eq "4" "$(wc -l <<<"$T_OUT")" "header and 3 runs"
fire=$(dbq "select fire_at from runs where id = $r1_first")
assert_contains "$T_OUT" "r1,$fire,1,succeeded,n1,$((fire + 5)),$((fire + 105)),0,0,,$r1_first,$fire"
fire2=$(dbq "select fire_at from runs where id = $((r1_first + 1))")
assert_contains "$T_OUT" "r1,$fire2,1,failed,\"n,2\",$((fire2 + 1)),$((fire2 + 2)),7,2,\"said \"\"no\"\", twice\",$((r1_first + 1)),"
fire3=$(dbq "select fire_at from runs where id = $((r1_first + 2))")
assert_contains "$T_OUT" "r1,$fire3,1,scheduled,,,,,0,,$((r1_first + 2)),$fire3" "unset times and codes are empty"
assert_eq "ok" "$(python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
print("ok" if len(rows) == 4 and all(len(r) == 15 for r in rows) and any(r[4] == "n,2" and r[9] == "said \"no\", twice" for r in rows) else rows)' <<<"$T_OUT")" "csv parses back (RFC 4180 quoting)"

expect_rc 0 runs --format csv
assert_eq "51" "$(wc -l <<<"$T_OUT")" "default limit 50"
expect_rc 0 runs --format csv --limit 0
assert_eq "$(( $(dbq "select count(*) from runs") + 1 ))" "$(wc -l <<<"$T_OUT")" "--limit 0: every run"
expect_rc 0 runs --format csv --limit 5 --job r2
assert_eq "6" "$(wc -l <<<"$T_OUT")"
expect_rc 0 runs --format csv --state failed --limit 0
assert_eq "2" "$(wc -l <<<"$T_OUT")" "--state failed"
expect_rc 0 runs --format csv --state SUCCEEDED
assert_eq "2" "$(wc -l <<<"$T_OUT")" "--state is case-insensitive"
expect_rc 0 runs --format csv --since now+1h --limit 0
assert_eq "1" "$(wc -l <<<"$T_OUT")" "--since in the future: none"
expect_rc 0 runs --format csv --since 2020-01-01T00:00:00Z --limit 0 --job r1
assert_eq "4" "$(wc -l <<<"$T_OUT")"
expect_rc 0 runs --job r1
assert_match "$T_OUT" '^RUN +JOB +FIRE AT +TRY +STATE +NODE +STARTED +TOOK +EXIT +ERROR$'
assert_match "$T_OUT" "^$r1_first +r1 +[0-9]{4}-[0-9-]+T[0-9:.]+Z +1 +succeeded +n1 +[0-9-]+T[0-9:.]+Z +100ms +0 *$"
assert_contains "$T_OUT" 'said "no", twice (2 missed)'
expect_rc 0 runs --format json --job r1 --limit 0
assert_eq "3 failed 7 2" "$(python3 -c '
import json, sys
d = json.load(sys.stdin)
f = [r for r in d if r["state"] == "failed"][0]
print(len(d), f["state"], f["exit_code"], f["missed"])' <<<"$T_OUT")"
expect_rc 0 runs --job nosuch
assert_eq "no runs" "$T_OUT"
expect_rc 0 runs --job nosuch --format json
assert_eq "[]" "$T_OUT"
bad "--state 'done'" runs --state done
bad "--limit '-1'" runs --limit -1
bad "--limit 'ten'" runs --limit ten
bad "--format 'yaml'" runs --format yaml
bad "--since: time 'yesterday'" runs --since yesterday
bad "unknown option '--jobs'" runs --jobs r1
bad "unexpected argument" runs r1

# Line breaks reach the error column through argv[0] ("cannot execute
# '...'") and handler messages: RFC 4180 quotes a field holding CR or LF,
# so each run stays one csv record and the text comes back byte for byte.
case "$BACKEND" in
sqlite) CR="char(13)" LF="char(10)" ;;
pg) CR="chr(13)" LF="chr(10)" ;;
mysql) CR="CHAR(13 USING utf8mb4)" LF="CHAR(10 USING utf8mb4)" ;;
esac
expect_rc 0 job add r3 --every 1h -- true
for i in 1 2 3; do
	expect_rc 0 job trigger r3
done
r3_first=$(dbq "select min(id) from runs where job_name = 'r3'")
dbq "update runs set state = 4, error = 'cannot execute ''/opt/a' || $LF || 'b'': No such file or directory' where id = $r3_first"
dbq "update runs set state = 4, error = 'handler said' || $CR || 'no' where id = $((r3_first + 1))"
dbq "update runs set state = 4, error = 'one' || $CR || $LF || 'two, three' where id = $((r3_first + 2))"
expect_rc 0 runs --format csv --job r3
assert_eq "ok" "$(python3 -c '
import csv, io, sys
rows = list(csv.reader(io.open(sys.argv[1], newline="")))
want = ["cannot execute \x27/opt/a\nb\x27: No such file or directory", "handler said\rno", "one\r\ntwo, three"]
print("ok" if len(rows) == 4 and all(len(r) == 15 for r in rows) and [r[9] for r in rows[1:]] == want else rows)' "$T_DIR/.out")" \
	"csv: fields with CR, LF and CR LF are quoted, one record per run (RFC 4180)"
expect_rc 0 runs --format json --job r3
assert_eq "ok" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("ok" if [r["error"] for r in d] == ["cannot execute \x27/opt/a\nb\x27: No such file or directory", "handler said\rno", "one\r\ntwo, three"] else d)' "$T_DIR/.out")" \
	"json: the same errors, escaped"

# ---------------------------------------------------------------------
t_section "nodes"
expect_rc 0 nodes
assert_eq "no nodes" "$T_OUT"
expect_rc 0 nodes --format json
assert_eq "[]" "$T_OUT"
dbq "insert into nodes (id, incarnation, host, pid, workers, state, started_ms, heartbeat_ms, lease_until) values ('node-a', 'i1', 'h1', 4242, 8, 'alive', 1000, $(( $(now_ms) - 3000 )), $(( $(now_ms) + 7000 )))"
expect_rc 0 nodes
assert_match "$T_OUT" '^NODE +HOST +PID +STATE +WORKERS +RUNNING +LAST HEARTBEAT +AGE +LEASE UNTIL$'
assert_match "$T_OUT" '^node-a +h1 +4242 +alive +8 +0 +[0-9]{4}-[0-9-]+T[0-9:.]+Z +[34]s ago +[0-9]{4}-'
expect_rc 0 nodes --format csv
assert_eq "node,host,pid,state,workers,running,started_ms,heartbeat_ms,lease_until_ms,heartbeat_age_ms" "$(head -n 1 <<<"$T_OUT")"
assert_match "$(tail -n 1 <<<"$T_OUT")" '^node-a,h1,4242,alive,8,0,1000,[0-9]+,[0-9]+,[0-9]+$'
expect_rc 0 nodes --format json
assert_eq "node-a 8" "$(python3 -c 'import json,sys; n=json.load(sys.stdin)[0]; print(n["node"], n["workers"])' <<<"$T_OUT")"
bad "--format 'xml'" nodes --format xml
bad "unknown option" nodes --all

t_done
