#!/usr/bin/env bash
# --format json on the commands that change something or print one result
# (issue 29): init, job add, set, pause, resume, trigger, rename, delete,
# cron check, cron next and config show each print one JSON document that
# says what the database now holds (read back here with SQL), the verbs the
# same shape the HTTP API answers with (app_job_result_json); a word that
# is not a format is refused with exit 2 and nothing written.  The front end
# is the same on every backend, so SQLite alone.
set -euo pipefail
source "$DBCRON_TESTLIB"

URL=$(t_fresh_url sqlite dbcron_clijson)
t_use_db sqlite "$URL"
export DBCRON_DB=$URL
# the one JSON document of the last command, or a failed check
js() { jq -r "$1" <<<"$T_OUT" 2>/dev/null || echo "(not JSON: $T_OUT)"; }

t_section "init"
expect_rc 0 init --format json
assert_eq "$(dbq 'select max(version) from schema_version')" "$(js .schema_version)" \
  "init: schema_version is the database's"
assert_eq 0 "$(js .was)" "init: a new database was at version 0"
assert_eq 0 "$(js '.files | length')" "init: no --group, no file changed"

t_section "job add, set"
expect_rc 0 job add j --every 1h --format json -- true
assert_eq j "$(js .added)" "add: the name"
assert_eq "$(dbq "select next_fire_at from jobs where name = 'j'")" "$(js .next_fire_at_ms)" \
  "add: next_fire_at_ms is the stored next fire"
assert_eq false "$(js .paused)" "add: not paused"
expect_rc 0 job set j --timeout 5s --format json
assert_eq true "$(js .changed)" "set: changed"
assert_eq 5000 "$(dbq "select timeout_ms from jobs where name = 'j'")" "set: the timeout is stored"
expect_rc 0 job set j --timeout 5s --format json
assert_eq false "$(js .changed)" "set: the same value again changes nothing"

t_section "pause, resume, trigger"
expect_rc 0 job pause j --format json
assert_eq "true true" "$(js .paused) $(js .changed)" "pause: paused, changed"
assert_eq 1 "$(dbq "select paused from jobs where name = 'j'")" "pause: stored"
expect_rc 0 job pause j --format json
assert_eq false "$(js .changed)" "pause again: not changed"
expect_rc 0 job resume j --format json
assert_eq "false true" "$(js .paused) $(js .changed)" "resume: active, changed"
assert_eq "$(dbq "select next_fire_at from jobs where name = 'j'")" "$(js .next_fire_at_ms)" \
  "resume: next_fire_at_ms is the stored next fire"
expect_rc 0 job trigger j --format json
run=$(js .run_id)
assert_eq "$(js .fire_at_ms)" "$(dbq "select fire_at from runs where id = $run")" \
  "trigger: run_id names the run made, at fire_at_ms"
assert_eq j "$(js .job)" "trigger: the job"

t_section "rename, delete"
expect_rc 0 job rename j k --format json
assert_eq "j k" "$(js .renamed) $(js .to)" "rename: from and to"
assert_eq 1 "$(dbq "select count(*) from jobs where name = 'k'")" "rename: stored"
expect_rc 0 job delete k --format json
assert_eq k "$(js .deleted)" "delete: the name"
assert_eq 0 "$(dbq "select count(*) from jobs")" "delete: gone"

t_section "a word that is not a format: exit 2, nothing written"
expect_rc 0 job add m --every 1h -- true
t_refused "expected table or json" job pause m --format csv
t_refused "expected table or json" job add n --every 1h --format yaml -- true
t_refused "expected table or json" job rename m n --format csv
t_refused "expected table or json" init --format xml
assert_eq 0 "$(dbq "select paused from jobs where name = 'm'")" "a refused pause paused nothing"

t_section "cron check, cron next, config show"
expect_rc 0 cron check '*/5 * * * *' --format json
assert_eq "true unix" "$(js .valid) $(js .dialect)" "cron check: valid, its dialect"
assert_contains "$(js .description)" "every 5th minute"
expect_rc 2 cron check '61 * * * *' --format json
assert_eq false "$(js .valid)" "cron check: an invalid expression is valid false, exit 2"
assert_contains "$(js .error)" "minute"
expect_rc 0 cron next '0 12 * * *' --tz Europe/Paris --from 2026-07-01T00:00:00Z --count 3 --format json
assert_eq 3 "$(js length)" "cron next: three fires"
assert_eq "2026-07-01T12:00:00+02:00 1782900000 7200" "$(js '.[0] | "\(.at) \(.epoch) \(.offset)"')" \
  "cron next: at, epoch and offset of the first"
expect_rc 0 cron next '0 0 0 1 1 ? 2000' --format json
assert_eq "[]" "$T_OUT" "cron next: no fire is an empty array"
expect_rc 0 config show --format json
assert_eq sqlite "$(js '.settings[] | select(.key == "db") | .value' | cut -d: -f1)" "config show: db"
assert_eq "env DBCRON_DB" "$(js '.settings[] | select(.key == "db") | .from')" "config show: where db came from"
assert_eq 8 "$(js '.settings[] | select(.key == "workers") | .value')" "config show: a default"

t_done
