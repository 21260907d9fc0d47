#!/usr/bin/env bash
# The HTTP API (docs/http.md) with real requests against a real node
# (`dbcron node --http`) and a real `dbcron serve`: every endpoint, every
# auth case, bad JSON, oversized bodies, unknown routes, path tricks, slow
# and idle clients, and that a refused write leaves the database as it was.
# Runs on SQLite; http_api_pg.sh and http_api_mysql.sh run the same checks on
# PostgreSQL and MariaDB (HTTP_BACKEND=pg|mysql).
set -euo pipefail
source "$DBCRON_TESTLIB"
t_need_fault_seam

BACKEND=${HTTP_BACKEND:-sqlite}
case "$BACKEND" in
sqlite) URL=sqlite:$T_DIR/t.db ;;
pg)
	[ -n "${DBCRON_TEST_PG:-}" ] || { echo "DBCRON_TEST_PG (a libpq conninfo) is required" >&2; exit 1; }
	URL=$(t_pg_fresh_db dbcron_http)
	;;
mysql)
	[ -n "${DBCRON_TEST_MYSQL:-}" ] || { echo "DBCRON_TEST_MYSQL (a mysql:// URL) is required" >&2; exit 1; }
	URL=$(t_my_fresh_db dbcron_http)
	;;
*)
	echo "unknown HTTP_BACKEND $BACKEND" >&2
	exit 1
	;;
esac
# What a write would change while the node goes on ticking: every job's
# definition (not its next fire, which the node moves, nor its last run)
# and every run of the jobs other than "tick".
db_state() {
	{
		"$DBCRON_BIN" job list --format json |
			jq -c '[.[] | del(.next_fire_at_ms, .next_fire, .next_fire_local, .last_run)]'
		"$DBCRON_BIN" runs --format csv --limit 0 | grep -v '^tick,' || true
	} | sha256sum | cut -d' ' -f1
}
export DBCRON_DB=$URL
command -v curl >/dev/null || { echo "curl is required (scripts/deps.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is required (scripts/deps.sh)" >&2; exit 1; }

ADMIN=admin-token-0123456789abcdef
READER=read-token-0123456789abcdef
{
	echo "# comments and blank lines are ignored"
	echo
	echo "$ADMIN admin"
	echo "sha256:$(printf %s "$READER" | sha256sum | cut -d' ' -f1) read"
} >"$T_DIR/tokens"

# req METHOD PATH [TOKEN [BODY-FILE]]: H_CODE, H_BODY, H_HEAD
req() {
	local m=$1 p=$2 tok=${3:-} body=${4:-}
	local args=(-s --path-as-is -X "$m" -o "$T_DIR/.body" -D "$T_DIR/.head" -w '%{http_code}'
		--max-time 60)
	[ -n "$tok" ] && args+=(-H "Authorization: Bearer $tok")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "@$body")
	H_CODE=$(curl "${args[@]}" "http://127.0.0.1:$PORT$p" || true)
	H_BODY=$(cat "$T_DIR/.body")
	H_HEAD=$(cat "$T_DIR/.head")
}
# expect CODE METHOD PATH [TOKEN [BODY-FILE]]
expect() {
	local want=$1
	shift
	req "$@"
	assert_eq "$want" "$H_CODE" "status of $1 $2 (body: $H_BODY)"
}
jget() { jq -r "$1" <<<"$H_BODY"; }
err_code() { jget '.error.code'; }
body() { printf '%s' "$1" >"$T_DIR/.req"; echo "$T_DIR/.req"; }

port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }

# ---------------------------------------------------------------------
t_section "setup"
expect_rc 0 init
expect_rc 0 job add tick --every 1s -- echo tick-output
expect_rc 0 job add quiet --every 1h -- true

t_section "startup refusals"
# the HTTP layer alone, the same on every backend: the reference one only
# (docs/testing.md, "Twins"); likewise below
if t_reference_backend "$BACKEND"; then
expect_rc 2 node --api-token-file "$T_DIR/tokens"
assert_err_contains "--api-token-file needs --http"
expect_rc 2 serve --http 0.0.0.0:0
assert_err_contains "is not a loopback address"
expect_rc 2 serve --http nonsense
assert_err_contains "--http 'nonsense': expected ADDR:PORT"
printf 'short admin\n' >"$T_DIR/badtok"
expect_rc 2 serve --http 127.0.0.1:0 --api-token-file "$T_DIR/badtok"
assert_err_contains "badtok:1: a token needs at least 16 characters"
printf '%s root\n' "$ADMIN" >"$T_DIR/badrole"
expect_rc 2 serve --http 127.0.0.1:0 --api-token-file "$T_DIR/badrole"
assert_err_contains "badrole:1: role 'root' is not read or admin"
expect_rc 1 serve --http 127.0.0.1:0 --api-token-file "$T_DIR/missing"
assert_err_contains "missing: No such file"
fi

t_section "a node serving the API"
# one heartbeat is refused as busy (the fault seam), for dbcron_db_errors_total
t_bg env DBCRON_TEST_FAULTS='stmt=node_heartbeat,kind=busy,nth=3,times=1' \
	"$DBCRON_BIN" node --node-id n1 --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" \
	--heartbeat 200ms --lease 2s 2>"$T_DIR/node.log"
NODE_PID=$T_BG_PID
wait_until 120 has_port "$T_DIR/node.log" || { cat "$T_DIR/node.log"; exit 1; }
PORT=$(port_of "$T_DIR/node.log")

t_section "health"
expect 200 GET /healthz
assert_eq "ok" "$H_BODY"
expect 200 GET /readyz
assert_eq "true" "$(jget .ready)"
expect 405 POST /healthz "$ADMIN"

t_section "auth"
expect 401 GET /api/v1/jobs
assert_eq unauthorized "$(err_code)"
assert_match "$H_HEAD" '^WWW-Authenticate: Bearer'
expect 401 GET /api/v1/jobs wrong-token-0123456789abcdef
assert_contains "$(jget .error.message)" "not one of --api-token-file's"
H_CODE=$(curl -s -o /dev/null -w '%{http_code}' -u "admin:$ADMIN" "http://127.0.0.1:$PORT/api/v1/jobs")
assert_eq 401 "$H_CODE" "Basic auth is not accepted"
H_CODE=$(curl -s -o /dev/null -w '%{http_code}' -b "token=$ADMIN" "http://127.0.0.1:$PORT/api/v1/jobs")
assert_eq 401 "$H_CODE" "a cookie is not a credential"
expect 401 GET "/api/v1/jobs?token=$ADMIN"
expect 200 GET /api/v1/jobs "$READER"
expect 200 GET /api/v1/jobs "$ADMIN"
before=$(db_state)
expect 403 POST /api/v1/jobs/quiet/trigger "$READER"
assert_eq forbidden "$(err_code)"
expect 403 DELETE /api/v1/jobs/quiet "$READER"
expect 403 PUT /api/v1/jobs/x "$READER" "$(body '{"every":"1s","command":["true"]}')"
expect 403 POST /api/v1/apply "$READER" "$(body '[]')"
expect 401 POST /api/v1/jobs/quiet/pause
assert_eq "$before" "$(db_state)" "refused writes wrote nothing"

t_section "GET /api/v1/jobs and /jobs/NAME"
expect 200 GET /api/v1/jobs "$READER"
assert_eq "quiet tick" "$(jget '[.jobs[].name] | join(" ")')"
assert_eq "1s" "$(jget '.jobs[] | select(.name == "tick") | .every')"
# the API's job form is the CLI's
expect_rc 0 job list --format json
MOVING='.next_fire_at_ms, .next_fire, .next_fire_local, .last_run'
assert_eq "$(jq -c "[.[] | del($MOVING)]" <<<"$T_OUT")" \
	"$(jget "[.jobs[] | del($MOVING)] | tostring")" "same JSON as job list"
wait_until 120 bash -c "[ \$(curl -s -H 'Authorization: Bearer $READER' \
	'http://127.0.0.1:$PORT/api/v1/runs?job=tick&state=succeeded' | jq '.runs | length') -ge 2 ]"
expect 200 GET /api/v1/jobs/tick "$READER"
assert_eq tick "$(jget .name)"
assert_match "$(jget '.last_runs | length')" '^([2-9]|10)$'
expect 404 GET /api/v1/jobs/nope "$READER"
assert_eq not_found "$(err_code)"
assert_eq "no job named 'nope'" "$(jget .error.message)"
expect 405 POST /api/v1/jobs "$ADMIN"
assert_match "$H_HEAD" '^Allow: GET'

t_section "PUT /api/v1/jobs/NAME"
expect 201 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"1h","command":["echo","made"]}')"
assert_eq 1 "$(jget .created)"
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"name":"made","every":"2h","command":["echo","made"]}')"
assert_eq 1 "$(jget .updated)"
expect_rc 0 job show made --format json
assert_eq 2h "$(jq -r .every <<<"$T_OUT")" "the PUT is in the database"
# issue 23 item 11: "paused" in a PUT of a stored job is applied (one rule
# with job apply and job set, docs/cli.md), not answered "unchanged"
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"],"paused":true}')"
assert_eq "1 0" "$(jget '"\(.updated) \(.unchanged)"')" "a PUT that pauses is an update"
expect_rc 0 job show made --format json
assert_eq true "$(jq -r .paused <<<"$T_OUT")" "PUT paused: true pauses the stored job"
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"]}')"
expect_rc 0 job show made --format json
assert_eq true "$(jq -r .paused <<<"$T_OUT")" "a PUT without paused keeps the state"
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"],"paused":false}')"
expect_rc 0 job show made --format json
assert_eq false "$(jq -r .paused <<<"$T_OUT")" "PUT paused: false resumes it"
# the window (issue 28 item 7) through HTTP JSON, by the keys job apply takes
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"],"start_at":"2031-05-05T00:00:00Z","end-at":"2031-06-01T00:00:00Z"}')"
expect 200 GET /api/v1/jobs/made "$READER"
assert_eq "2031-05-05T00:00:00Z 2031-06-01T00:00:00Z" "$(jget '"\(."start-at") \(."end-at")"')" "GET shows the window"
# the every series' first instant at or after the start: within 2h of it
assert_match "$(jget .next_fire)" '^2031-05-05T0[01]:'

before=$(db_state)
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"],"start-at":"2031-05-05T00:00:00Z","end-at":"2031-01-01T00:00:00Z"}')"
assert_contains "$(jget .error.message)" "end-at 2031-01-01T00:00:00Z is before start-at 2031-05-05T00:00:00Z"
assert_eq "$before" "$(db_state)" "a window that never opens changes nothing"
expect 200 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"2h","command":["echo","made"]}')"
before=$(db_state)
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"name":"other","every":"1h","command":["true"]}')"
assert_contains "$(jget .error.message)" "another name than the path's 'made'"
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"1h", "command":')"
assert_eq invalid "$(err_code)"
assert_match "$(jget .error.message)" '^body:1:[0-9]+: '
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '[1]')"
assert_eq "expected a JSON job object" "$(jget .error.message)"
expect 400 PUT /api/v1/jobs/made "$ADMIN"
assert_eq "the request needs a JSON body" "$(jget .error.message)"
# the same field-level message as job apply prints
printf '[{"name":"made","every":"soon","command":["true"]}]' >"$T_DIR/bad.json"
expect_rc 2 job apply "$T_DIR/bad.json"
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"soon","command":["true"]}')"
msg=$(jget .error.message)
assert_contains "$msg" "key 'every'"
assert_contains "$T_ERR" "job #1 ('made'): $msg" "the CLI says the same"
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"1s","cron":"* * * * *","command":["true"]}')"
expect 400 PUT /api/v1/jobs/made "$ADMIN" "$(body '{"every":"1s","bogus_key":1,"command":["true"]}')"
assert_contains "$(jget .error.message)" "bogus_key"
assert_eq "$before" "$(db_state)" "refused PUTs wrote nothing"

t_section "a job's schedule in words and its next fires in its zone"
expect 201 PUT /api/v1/jobs/noon "$ADMIN" "$(body '{"cron":"0 0 12 * * ?","tz":"Europe/Berlin","command":["true"]}')"
expect 200 GET /api/v1/jobs/noon "$READER"
assert_eq "cron 0 0 12 * * ?" "$(jget .schedule)"
assert_match "$(jget .description)" '12'
assert_eq 5 "$(jget '.next_fires | length')"
assert_eq "$(jget .next_fire_at_ms)" "$(jget '.next_fires[0].at_ms')" "the first is the stored next fire"
NOON=$H_BODY
assert_eq true "$(jget '[.next_fires[].at_ms] | . == (sort | unique)')" "increasing"
assert_eq "" "$(jget '.next_fires[].local' | grep -Ev 'T12:00:00(\.000)?\+0[12]:00$' || true)" \
	"noon in Berlin, with Berlin's offset"
assert_eq "" "$(jget '.next_fires[].utc' | grep -Ev 'T1[01]:00:00(\.000)?Z$' || true)" "and in UTC"
# the listing says the same, with the last run, for every job of the page;
# tick fires every second, so any one listing may catch a run of it still
# running: the checks read the first listing whose last run of tick ended
tick_ended() {
	req GET /api/v1/jobs "$READER"
	[ "$H_CODE" = 200 ] && [ "$(jget '.jobs[] | select(.name == "tick") | .last_run.state')" = succeeded ]
}
wait_until 120 tick_ended
assert_eq 200 "$H_CODE" "status of GET /api/v1/jobs (body: $H_BODY)"
noon() { jget ".jobs[] | select(.name == \"noon\") | $1"; }
assert_eq "$(noon .description)" "$(jq -r .description <<<"$NOON")" "words as the job's own page"
assert_eq "$(noon .next_fire_local)" "$(jq -r '.next_fires[0].local | sub("\\.000"; "")' <<<"$NOON")" \
	"next fire in Berlin, as the job's page says it"
assert_eq "cron 0 0 12 * * ?" "$(noon .schedule)"
assert_eq null "$(noon .last_run)" "no run yet"
assert_eq '["true"]' "$(noon '.command | tojson')"
assert_eq false "$(noon .paused)"
assert_match "$(jget .now_ms)" '^[0-9]{13}$' "the database's now, for relative times"
assert_eq succeeded "$(jget '.jobs[] | select(.name == "tick") | .last_run.state')"
assert_match "$(jget '.jobs[] | select(.name == "tick") | .last_run.finished_at')" 'Z$'
TICK_LAST=$(jget '.jobs[] | select(.name == "tick") | .last_run.id')
expect 200 GET "/api/v1/runs/$TICK_LAST" "$READER"
assert_eq tick "$(jget .job)" "last_run.id is a run of tick"
expect 200 DELETE /api/v1/jobs/noon "$ADMIN"

t_section "cron next and check: the CLI's answers"
expect_rc 0 cron next '0 0 12 ? * MON-FRI' --tz America/New_York --from 1767225600 --count 4
expect 200 GET "/api/v1/cron/next?expr=0+0+12+%3F+*+MON-FRI&tz=America/New_York&from=1767225600&count=4" "$READER"
assert_eq "$T_OUT" "$(jget '.fires[].at')" "the same fires as dbcron cron next"
expect_rc 0 cron check '*/5 * * * *'
expect 200 GET "/api/v1/cron/check?expr=*/5+*+*+*+*" "$READER"
assert_eq "$T_OUT" "valid ($(jget .dialect)): $(jget .description)" "the same words as dbcron cron check"
expect_rc 2 cron check '0 0 32 * * ?'
expect 400 GET "/api/v1/cron/check?expr=0+0+32+*+*+%3F" "$READER"
assert_eq "$T_ERR" "dbcron: $(jget .error.message)" "the same error as the CLI"
expect 400 GET "/api/v1/cron/next?expr=*+*+*+*+*&tz=Mars/Olympus" "$READER"
assert_contains "$(jget .error.message)" "Mars/Olympus"
expect 400 GET "/api/v1/cron/next?expr=*+*+*+*+*&count=0" "$READER"
expect 400 GET "/api/v1/cron/next" "$READER"
expect 404 GET "/api/v1/cron/later?expr=*+*+*+*+*" "$READER"
# H: a seed given, or a stored job's (docs/cron.md), as the CLI's
expect_rc 0 cron next 'H H(8-17) * * *' --seed 12345 --from 1767225600 --count 3
expect 200 GET "/api/v1/cron/next?expr=H+H(8-17)+*+*+*&seed=12345&from=1767225600&count=3" "$READER"
assert_eq "$T_OUT" "$(jget '.fires[].at')" "H with ?seed: the fires of cron next --seed"
expect_rc 0 job add hjob --cron 'H * * * *' -- true
expect_rc 0 cron next --job hjob --from 1767225600 --count 2
expect 200 GET "/api/v1/cron/next?expr=H+*+*+*+*&job=hjob&from=1767225600&count=2" "$READER"
assert_eq "$T_OUT" "$(jget '.fires[].at')" "H with ?job: the fires of cron next --job"
expect 200 GET "/api/v1/cron/check?expr=H+*+*+*+*&job=hjob" "$READER"
assert_contains "$(jget .description)" "(H)"
expect 400 GET "/api/v1/cron/check?expr=H+*+*+*+*" "$READER"
assert_contains "$(jget .error.message)" "H needs a job"
expect 400 GET "/api/v1/cron/next?expr=H+*+*+*+*&seed=-1" "$READER"
expect 404 GET "/api/v1/cron/next?expr=H+*+*+*+*&job=nope" "$READER"
expect_rc 0 job delete hjob
expect 401 GET "/api/v1/cron/check?expr=*+*+*+*+*"

t_section "pause, resume, trigger, delete"
expect 200 POST /api/v1/jobs/quiet/pause "$ADMIN"
assert_eq "true true" "$(jget '"\(.paused) \(.changed)"')"
expect_rc 0 job show quiet --format json
assert_eq true "$(jq -r .paused <<<"$T_OUT")" "paused in the database"
expect 200 POST /api/v1/jobs/quiet/pause "$ADMIN"
assert_eq false "$(jget .changed)" "a second pause changes nothing"
expect 200 POST /api/v1/jobs/quiet/resume "$ADMIN"
assert_eq "false true" "$(jget '"\(.paused) \(.changed)"')"
assert_match "$(jget .next_fire_at_ms)" '^[0-9]+$'
expect 201 POST /api/v1/jobs/quiet/trigger "$ADMIN"
RUN=$(jget .run_id)
assert_match "$RUN" '^[0-9]+$'
wait_until 120 bash -c "curl -s -H 'Authorization: Bearer $READER' \
	http://127.0.0.1:$PORT/api/v1/runs/$RUN | jq -e '.state == \"succeeded\"' >/dev/null" ||
	_t_fail "triggered run $RUN did not succeed"
expect 404 POST /api/v1/jobs/nope/trigger "$ADMIN"

t_section "backfill"
# a range of the past, three hourly instants; the job is deleted after
expect_rc 0 job add bfapi --cron '0 * * * *' --end-at 2026-01-05T05:00:00Z -- true
body '{"from":"2026-01-05T00:00:00Z","to":"2026-01-05T03:00:00Z","dry_run":true}' >/dev/null
expect 200 POST /api/v1/jobs/bfapi/backfill "$ADMIN" "$T_DIR/.req"
assert_eq "3 0 2026-01-05T02:00:00Z" "$(jget '"\(.instants) \(.created) \(.fire_at[2].fire_at)"')"
body '{"from":"2026-01-05T00:00:00Z","to":"2026-01-05T03:00:00Z","max_running":1}' >/dev/null
expect 403 POST /api/v1/jobs/bfapi/backfill "$READER" "$T_DIR/.req"
expect 201 POST /api/v1/jobs/bfapi/backfill "$ADMIN" "$T_DIR/.req"
assert_eq "3 3 0" "$(jget '"\(.instants) \(.created) \(.skipped)"')"
expect 201 POST /api/v1/jobs/bfapi/backfill "$ADMIN" "$T_DIR/.req"
assert_eq "0 3" "$(jget '"\(.created) \(.skipped)"')" "a second backfill makes none"
expect 404 POST /api/v1/jobs/nope/backfill "$ADMIN" "$T_DIR/.req"
expect 200 GET "/api/v1/runs?job=bfapi" "$READER"
assert_eq "backfill backfill backfill" "$(jget '[.runs[].kind] | join(" ")')"
body '{"from":"2026-01-05T03:00:00Z","to":"2026-01-05T00:00:00Z"}' >/dev/null
expect 400 POST /api/v1/jobs/bfapi/backfill "$ADMIN" "$T_DIR/.req"
assert_contains "$(jget .error.message)" "is not after --from"
body '{"from":"2026-01-05T00:00:00Z"}' >/dev/null
expect 400 POST /api/v1/jobs/bfapi/backfill "$ADMIN" "$T_DIR/.req"
expect 405 GET /api/v1/jobs/bfapi/backfill "$ADMIN"
expect_rc 0 job delete bfapi
expect 404 POST /api/v1/jobs/quiet/explode "$ADMIN"
expect 405 GET /api/v1/jobs/quiet/trigger "$ADMIN"
expect 200 DELETE /api/v1/jobs/made "$ADMIN"
assert_eq made "$(jget .deleted)"
expect 404 GET /api/v1/jobs/made "$ADMIN"
expect 404 DELETE /api/v1/jobs/made "$ADMIN"

t_section "runs"
TICK_RUN=$(curl -s -H "Authorization: Bearer $READER" \
	"http://127.0.0.1:$PORT/api/v1/runs?job=tick&state=succeeded&limit=1" | jq -r '.runs[0].id')
expect 200 GET "/api/v1/runs/$TICK_RUN" "$READER"
assert_eq "tick-output" "$(jget .output | tr -d '\n')" "a run's captured output"
assert_eq tick "$(jget .job)"
assert_eq "$TICK_RUN" "$(jget '[.attempts[].id] | join(" ")')" "one attempt, itself"
# a fire that fails and is retried: every attempt lists the whole chain
expect 201 PUT /api/v1/jobs/flaky "$ADMIN" "$(body '{"every":"1h","retries":2,"retry-base":"1s","retry-cap":"1s","command":["false"]}')"
expect 201 POST /api/v1/jobs/flaky/trigger "$ADMIN"
FLAKY_FIRE=$(jget .fire_at_ms)
three_attempts() { [ "$("$DBCRON_BIN" runs --job flaky --state failed --format json --limit 0 |
	jq --argjson f "$FLAKY_FIRE" '[.[] | select(.fire_at_ms == $f)] | length')" = 3 ]; }
wait_until 120 three_attempts || _t_fail "flaky did not fail three times"
want=$("$DBCRON_BIN" runs --job flaky --format json --limit 0 |
	jq -r --argjson f "$FLAKY_FIRE" '[.[] | select(.fire_at_ms == $f)] | sort_by(.attempt) | map("\(.attempt):\(.id)") | join(" ")')
for id in $("$DBCRON_BIN" runs --job flaky --format json --limit 0 | jq -r '.[].id'); do
	expect 200 GET "/api/v1/runs/$id" "$READER"
	assert_eq "$want" "$(jget '.attempts | map("\(.attempt):\(.id)") | join(" ")')" "run $id: its fire's attempts"
done
expect 200 DELETE /api/v1/jobs/flaky "$ADMIN"
expect 404 GET /api/v1/runs/999999999 "$READER"
expect 404 GET /api/v1/runs/abc "$READER"
expect 400 GET "/api/v1/runs?state=bogus" "$READER"
assert_contains "$(jget .error.message)" "state 'bogus'"
expect 400 GET "/api/v1/runs?limit=0" "$READER"
expect 400 GET "/api/v1/runs?limit=1001" "$READER"
# every listing route checks limit by one rule, with one message
for r in events audit; do
	expect 400 GET "/api/v1/$r?limit=0" "$READER"
	assert_contains "$(jget .error.message)" "expected a whole number from 1 to 1000"
	expect 400 GET "/api/v1/$r?limit=12x" "$READER"
	expect 200 GET "/api/v1/$r?limit=5" "$READER"
done
expect 400 GET "/api/v1/runs?cursor=garbage" "$READER"
expect 400 GET "/api/v1/runs?since=yesterday-ish" "$READER"
expect 200 GET "/api/v1/runs?since=$(($(date +%s) - 3600))&job=quiet" "$READER"
assert_eq "$RUN" "$(jget '.runs[0].id')" "since and job filter"
# keyset pages: stop the ticking first so the log holds still
expect 200 POST /api/v1/jobs/tick/pause "$ADMIN"
wait_until 120 bash -c "[ -z \"\$('$DBCRON_BIN' runs --format csv --limit 0 --state running | tail -n +2)\" ]"
expect_rc 0 runs --format csv --limit 0
want=$(tail -n +2 <<<"$T_OUT" | awk -F, '{print $11}' | sort -n | tr '\n' ' ')
got="" cursor="" pages=0
while :; do
	req GET "/api/v1/runs?limit=3${cursor:+&cursor=$(jq -rn --arg c "$cursor" '$c|@uri')}" "$READER"
	[ "$H_CODE" = 200 ] || { _t_fail "page $pages: $H_CODE $H_BODY"; break; }
	got+="$(jget '.runs[].id') "
	cursor=$(jget '.next_cursor // empty')
	pages=$((pages + 1))
	[ -n "$cursor" ] && [ "$pages" -lt 1000 ] || break
done
assert_eq "$want" "$(tr ' ' '\n' <<<"$got" | grep . | sort -n | tr '\n' ' ')" "pages hold every run once"
assert_match "$pages" '^([2-9]|[0-9]{2,})$'
req GET "/api/v1/runs?limit=3" "$READER"
assert_eq "$(jget '[.runs[].fire_at_ms] | sort | reverse | tostring')" \
	"$(jget '[.runs[].fire_at_ms] | tostring')" "a page is newest first"

t_section "metrics against the run log"
expect 401 GET /metrics
expect 200 GET /metrics "$READER"
assert_match "$H_HEAD" '^Content-Type: text/plain; version=0.0.4'
metric() { curl -s -H "Authorization: Bearer $READER" "http://127.0.0.1:$PORT/metrics" |
	awk -v k="$1" '$1 == k {print $2}'; }
log_count() { "$DBCRON_BIN" runs --format csv --limit 0 | awk -F, -v s="$1" '$4 == s && $5 == "n1"' | wc -l; }
# the counters move just after the run log does: wait for them to agree
# (the histograms hold every run n1 ended: the succeeded and flaky's failed ones)
metrics_agree() {
	local n all
	n=$(log_count succeeded)
	all=$((n + $(log_count failed)))
	[ "$n" -gt 0 ] &&
		[ "$(metric 'dbcron_runs_total{node="n1",state="succeeded"}')" = "$n" ] &&
		[ "$(metric 'dbcron_run_duration_seconds_count{node="n1"}')" = "$all" ] &&
		[ "$(metric 'dbcron_start_lateness_seconds_count{node="n1"}')" = "$all" ]
}
if wait_until 120 metrics_agree; then _t_pass; else
	_t_fail "metrics disagree with the run log" "log: $(log_count succeeded) succeeded" \
		"metrics: $(metric 'dbcron_runs_total{node="n1",state="succeeded"}') runs," \
		"$(metric 'dbcron_run_duration_seconds_count{node="n1"}') durations," \
		"$(metric 'dbcron_start_lateness_seconds_count{node="n1"}') latenesses"
fi
assert_eq "$(log_count failed)" "$(metric 'dbcron_runs_total{node="n1",state="failed"}')" "failed runs"
req GET /metrics "$READER"
# histogram buckets are cumulative and end at the count
for h in run_duration start_lateness claim_duration; do
	got=$(awk -v p="dbcron_${h}_seconds_bucket" 'index($1, p) == 1 {
		if ($2 < last) bad = 1; last = $2 } END { print bad ? "decreasing" : last }' <<<"$H_BODY")
	assert_eq "$(awk -v k="dbcron_${h}_seconds_count{node=\"n1\"}" '$1 == k {print $2}' <<<"$H_BODY")" \
		"$got" "$h buckets are cumulative up to the count"
done
assert_eq 1 "$(awk '$1 == "dbcron_job_paused{job=\"tick\"}" {print $2}' <<<"$H_BODY")" "tick is paused"
sample() { awk -v k="$1" '$1 == k {print $2}' <<<"$H_BODY"; }
# the process's own series, against what the kernel says of the node
assert_eq 1 "$(sample "dbcron_build_info{version=\"$("$DBCRON_BIN" --version | awk '{print $2}')\"}")" \
	"build info carries the binary's version"
assert_match "$(sample process_cpu_seconds_total)" '^[0-9]+\.[0-9]+$' "process CPU seconds"
rss_kb=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$NODE_PID/status")
assert_eq 1 "$(awk -v m="$(sample process_resident_memory_bytes)" -v k="$rss_kb" \
	'BEGIN { print (m > k * 1024 / 2 && m < k * 1024 * 2) ? 1 : 0 }')" \
	"resident memory near the kernel's VmRSS ($rss_kb kB)"
fds=$(find "/proc/$NODE_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
assert_eq 1 "$(awk -v m="$(sample process_open_fds)" -v k="$fds" 'BEGIN { print (m >= 3 && m <= k + 8 && m >= k - 8) ? 1 : 0 }')" \
	"open fds near /proc's count ($fds)"
started=$(awk -v hz="$(getconf CLK_TCK)" -v bt="$(awk '$1 == "btime" {print $2}' /proc/stat)" \
	'{ sub(/.*\) /, ""); split($0, a, " "); printf "%d", bt + a[20] / hz }' "/proc/$NODE_PID/stat")
assert_eq 1 "$(awk -v m="$(sample process_start_time_seconds)" -v k="$started" 'BEGIN { print (m - k < 2 && k - m < 2) ? 1 : 0 }')" \
	"process start time is the node's ($started)"
assert_match "$(sample 'dbcron_db_errors_total{node="n1",class="busy"}')" '^[1-9][0-9]*$' \
	"the refused heartbeat is counted as busy"
for k in connection constraint other; do
	assert_match "$(sample "dbcron_db_errors_total{node=\"n1\",class=\"$k\"}")" '^[0-9]+$' "db errors: $k"
done
# last success, from the database: quiet's triggered run
ok_ms=$("$DBCRON_BIN" runs --job quiet --state succeeded --format json --limit 0 |
	jq 'max_by(.fire_at_ms * 1000 + .attempt) | .finished_ms')
assert_match "$ok_ms" '^[0-9]+$' "quiet has a success in the log"
assert_eq "$ok_ms" "$(awk '$1 == "dbcron_job_last_success_timestamp_seconds{job=\"quiet\"}" {
	printf "%d", $2 * 1000 + 0.5 }' <<<"$H_BODY")" "quiet's last success, from the run log"
# per job and state, against the run log (flaky is deleted: its counts stay)
job_log() { "$DBCRON_BIN" runs --job "$1" --format csv --limit 0 | awk -F, -v s="$2" '$4 == s && $5 == "n1"' | wc -l; }
for js in tick:succeeded quiet:succeeded; do
	assert_eq "$(job_log "${js%%:*}" "${js#*:}")" \
		"$(sample "dbcron_job_runs_total{node=\"n1\",job=\"${js%%:*}\",state=\"${js#*:}\"}")" "runs of $js"
done
assert_eq 3 "$(sample 'dbcron_job_runs_total{node="n1",job="flaky",state="failed"}')" "flaky's three failures"
for st in succeeded failed; do
	assert_eq "$(sample "dbcron_runs_total{node=\"n1\",state=\"$st\"}")" \
		"$(awk -v s="state=\"$st\"}" 'index($1, "dbcron_job_runs_total{") == 1 && index($1, s) { t += $2 } END { print t + 0 }' <<<"$H_BODY")" \
		"the per-job $st runs add up to the node's"
done
# nothing runs now (tick paused, no run RUNNING): no worker is busy
assert_eq "0 0" "$(sample 'dbcron_busy_workers{node="n1",pool="fast"}') $(sample 'dbcron_busy_workers{node="n1",pool="slow"}')" \
	"busy workers when nothing runs"
assert_eq 2 "$(awk '$1 == "dbcron_jobs" {print $2}' <<<"$H_BODY")"
next_ms=$("$DBCRON_BIN" job show quiet --format json | jq .next_fire_at_ms)
assert_eq "$next_ms" "$(awk '$1 == "dbcron_job_next_fire_timestamp_seconds{job=\"quiet\"}" {
	printf "%d", $2 * 1000 + 0.5 }' <<<"$H_BODY")" "next fire from the database"
assert_eq "" "$(grep -v '^#' <<<"$H_BODY" | grep -Ev '^[a-z_]+(\{[^}]*\})? [0-9.+-e]+$' || true)" \
	"every sample line parses"

t_section "apply"
expect 200 GET /api/v1/jobs "$READER"
jq '.jobs + [{"name":"fresh","every":"1h","command":["true"]}] | map(select(.name != "quiet"))
	| map(if .name == "tick" then .retries = 7 else . end)' \
	<<<"$H_BODY" >"$T_DIR/apply.json"
before=$(db_state)
expect 200 POST "/api/v1/apply?prune=1&dry_run=1" "$ADMIN" "$T_DIR/apply.json"
assert_eq '{"create":["fresh"],"update":["tick"],"delete":["quiet"],"unchanged":[],"fields":{"tick":["retries"]}}' \
	"$(jget '.diff | tostring')" "the diff names the fields that change"
assert_eq "$before" "$(db_state)" "a dry run writes nothing"
printf '[{"name":"a","every":"1h","command":["true"]},{"name":"a","every":"2h","command":["true"]},{"name":"b","every":"never"}]' \
	>"$T_DIR/bad_apply.json"
expect 400 POST /api/v1/apply "$ADMIN" "$T_DIR/bad_apply.json"
assert_eq "nothing applied (1 error)" "$(jget .error.message)" "entry errors are all reported"
assert_eq 2 "$(jget '.error.details[0].index')"
expect 400 POST /api/v1/apply "$ADMIN" "$(body '{"name":"x"}')"
assert_contains "$(jget .error.message)" "expected a JSON array"
assert_eq "$before" "$(db_state)" "refused applies wrote nothing"
expect 200 POST "/api/v1/apply?prune=1" "$ADMIN" "$T_DIR/apply.json"
assert_eq "1 1 1 0" "$(jget '"\(.created) \(.updated) \(.deleted) \(.unchanged)"')"
expect_rc 0 job list --format json
assert_eq "fresh tick" "$(jq -r '[.[].name] | join(" ")' <<<"$T_OUT")"
assert_eq true "$(jq -r '.[] | select(.name == "tick") | .paused' <<<"$T_OUT")" "apply keeps the paused state"
# a document with caps (issue 28 item 3): its "tags" with its jobs, in one
# transaction; a cap on a tag no job carries refuses all of it
before=$(db_state)
expect 400 POST /api/v1/apply "$ADMIN" \
	"$(body '{"jobs": [{"name":"capped","every":"1h","command":["true"],"tag":["batch"]}], "tags": [{"name":"batch","max_running":2},{"name":"typo","max_running":1}]}')"
assert_contains "$(jget .error.message)" "unknown tag 'typo'"
assert_eq "$before" "$(db_state)" "a refused document wrote nothing"
jq '{jobs: map(if .name == "fresh" then .tag = ["batch"] else . end),
	tags: [{name: "batch", max_running: 2}]}' "$T_DIR/apply.json" >"$T_DIR/doc.json"
expect 200 POST "/api/v1/apply?prune=1" "$ADMIN" "$T_DIR/doc.json"
assert_eq "0 1 1 0" "$(jget '"\(.created) \(.updated) \(.caps.set) \(.caps.deleted)"')" \
	"the document's cap is set with its jobs"
expect 200 GET /api/v1/tags "$READER"
assert_eq "batch 2 1" "$(jget '.tags[] | "\(.name) \(.max_running) \(.jobs)"')"

t_section "calendars"
# the days checked all before anything is written; a calendar never
# changes; one a job excludes is not deleted; reads need only read
expect 403 PUT /api/v1/calendars/hol "$READER" "$(body '{"dates":["2031-12-25"]}')"
expect 400 PUT /api/v1/calendars/hol "$ADMIN" "$(body '{"dates":["2031-12-25","2031-02-30"]}')"
assert_contains "$(jget .error.message)" '"dates"[1]: not a day'
expect 400 PUT /api/v1/calendars/hol "$ADMIN" "$(body '{"days":["2031-12-25"]}')"
expect 404 GET /api/v1/calendars/hol "$READER"
expect 201 PUT /api/v1/calendars/hol "$ADMIN" "$(body '{"dates":["2031-12-26","2031-12-25","2031-12-26"]}')"
assert_eq "hol 2" "$(jget '"\(.name) \(.days)"')" "the distinct days"
expect 409 PUT /api/v1/calendars/hol "$ADMIN" "$(body '{"dates":["2031-01-01"]}')"
expect 200 GET /api/v1/calendars/hol "$READER"
assert_eq "2031-12-25 2031-12-26" "$(jget '.days | join(" ")')" "sorted, once each"
expect 200 GET /api/v1/calendars "$READER"
assert_eq "hol 2" "$(jget '.calendars[] | "\(.name) \(.days)"')"
expect_rc 0 job add hols --cron '0 9 * * *' --exclude-calendar hol -- true
expect 409 DELETE /api/v1/calendars/hol "$ADMIN"
assert_contains "$(jget .error.message)" "hols"
expect_rc 0 job delete hols
expect 200 DELETE /api/v1/calendars/hol "$ADMIN"
expect 404 DELETE /api/v1/calendars/hol "$ADMIN"
expect_rc 0 audit --format json --limit 0
assert_eq "calendar-add calendar-delete" "$(jq -r '[.[] | select(.action | startswith("calendar")) | .action] | join(" ")' <<<"$T_OUT")" \
	"both changes are in the audit trail"

t_section "nodes and locks"
expect 200 GET /api/v1/nodes "$READER"
assert_eq "n1 alive" "$(jget '.nodes[] | select(.node == "n1") | "\(.node) \(.state)"')"
expect 200 GET /api/v1/locks "$READER"
assert_eq array "$(jget '.locks | type')"
expect 405 DELETE /api/v1/nodes "$ADMIN"

t_section "unknown routes and path tricks"
if t_reference_backend "$BACKEND"; then
expect 200 GET / "$READER"
assert_match "$H_HEAD" "^Content-Security-Policy: default-src .self."
expect 200 GET /app.js
expect 404 GET /app.jsx
expect 404 GET /api/v1 "$READER"
expect 404 GET /api/v2/jobs "$READER"
expect 404 GET /api/v1/jobsx "$READER"
expect 404 GET /api/v1/jobs/../nodes "$READER"
expect 404 GET /api/v1//jobs "$READER"
expect 404 GET /api/v1/jobs/./tick "$READER"
expect 404 GET /api/v1/jobs/tick/.. "$READER"
expect 404 GET /api/v1/jobs/%2e%2e "$READER"
# %2F is a slash once decoded: a job name cannot hold one in a path
expect 405 GET /api/v1/jobs/tick%2Fpause "$READER"
expect 404 GET /api/v1/jobs/tick%00x "$READER"
expect 404 GET "/api/v1/jobs/$(head -c 300 /dev/zero | tr '\0' a)" "$READER"
assert_eq not_found "$(err_code)"

t_section "oversized and slow clients"
head -c $((9 << 20)) /dev/zero | tr '\0' ' ' >"$T_DIR/big.json"
before=$(db_state)
expect 413 POST /api/v1/apply "$ADMIN" "$T_DIR/big.json"
assert_eq too_large "$(err_code)"
# a chunked body gives no length up front: refused when it passes the limit
code=$(head -c $((9 << 20)) /dev/zero | tr '\0' ' ' | curl -s -o /dev/null -w '%{http_code}' \
	-X POST -H "Authorization: Bearer $ADMIN" -H 'Transfer-Encoding: chunked' --data-binary @- \
	"http://127.0.0.1:$PORT/api/v1/apply" || true)
assert_eq 413 "$code" "a chunked body over the limit"
assert_eq "$before" "$(db_state)" "oversized bodies wrote nothing"
# a client that sends half a request and stalls holds its own connection
# only: others are served meanwhile, and the server closes it when idle
python3 - "$PORT" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
s.settimeout(120)
t = time.monotonic()
try:
    data = s.recv(100)
except OSError:
    data = b""
# closed (or answered with an error) by the server, not by our timeout
sys.exit(0 if time.monotonic() - t < 110 else 1)
EOF
SLOW=$!
sleep 0.5
expect 200 GET /api/v1/jobs "$READER"
if wait "$SLOW"; then _t_pass; else _t_fail "an idle half request was not closed by the server"; fi
# more idle connections than may wait for a request (half of the 256):
# while 200 are held, a new request is served, and the server has closed
# the oldest idle ones to let it in (tests/it/http_hostile.sh: slow ones)
python3 - "$PORT" <<'EOF'
import socket, sys
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(60)
try:
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    served = s.recv(100).startswith(b"HTTP/1.1 200")
except OSError:
    served = False
for h in held:
    h.close()
print("served past the limit" if served else "not served past the limit")
sys.exit(0 if served else 1)
EOF
assert_eq 0 "$?" "a request is served while more idle connections are held than may wait"
wait_until 120 curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" || true
expect 200 GET /healthz
fi

t_section "the node kept scheduling"
expect 200 POST /api/v1/jobs/tick/resume "$ADMIN"
n0=$("$DBCRON_BIN" runs --job tick --state succeeded --format csv --limit 0 | tail -n +2 | wc -l)
wait_until 120 bash -c "[ \$('$DBCRON_BIN' runs --job tick --state succeeded --format csv --limit 0 | tail -n +2 | wc -l) -gt $n0 ]" ||
	_t_fail "tick did not run after resume"
kill "$NODE_PID"
wait "$NODE_PID" || true

t_section "serve without a token file: reads open, writes refused"
if t_reference_backend "$BACKEND"; then
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 2>"$T_DIR/serve.log"
wait_until 120 has_port "$T_DIR/serve.log" || { cat "$T_DIR/serve.log"; exit 1; }
PORT=$(port_of "$T_DIR/serve.log")
expect 200 GET /api/v1/jobs
assert_eq "fresh tick" "$(jget '[.jobs[].name] | join(" ")')"
before=$(db_state)
expect 403 POST /api/v1/jobs/fresh/trigger
assert_contains "$(jget .error.message)" "read-only"
expect 403 POST /api/v1/jobs/fresh/trigger "$ADMIN"
expect 403 DELETE /api/v1/jobs/fresh
assert_eq "$before" "$(db_state)" "a read-only server wrote nothing"
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_section "a slow request holds one thread: the others are served meanwhile"
# The pause's wait for the nodes is stalled for a minute (the fault seam,
# on the statement that reads the jobs generation after the pause has
# committed): once the job shows paused in the database and the pause has
# not been answered, that request is provably inside the server.  A server
# answering one request at a time would answer nothing else until it ends.
t_bg env DBCRON_TEST_FAULTS='stmt=meta_gen,kind=stall,stall=60000' \
	"$DBCRON_BIN" serve --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" 2>"$T_DIR/serve3.log"
SLOW_SERVE=$T_BG_PID
wait_until 120 has_port "$T_DIR/serve3.log" || { cat "$T_DIR/serve3.log"; exit 1; }
PORT=$(port_of "$T_DIR/serve3.log")
: >"$T_DIR/slow.out"
curl -s -X POST -H "Authorization: Bearer $ADMIN" --max-time 300 -o "$T_DIR/slow.out" \
	"http://127.0.0.1:$PORT/api/v1/jobs/fresh/pause" &
SLOW_REQ=$!
fresh_paused() { "$DBCRON_BIN" job show fresh --format json | jq -e .paused >/dev/null; }
wait_until 120 fresh_paused || _t_fail "the stalled pause never committed"
in_progress() { kill -0 "$SLOW_REQ" 2>/dev/null && [ ! -s "$T_DIR/slow.out" ]; }
assert_eq 0 "$(in_progress && echo 0 || echo 1)" "the pause is still being answered"
for p in /healthz /metrics /api/v1/nodes "/api/v1/jobs/fresh"; do
	H_CODE=$(curl -s -o /dev/null -w '%{http_code}' --max-time 300 \
		-H "Authorization: Bearer $READER" "http://127.0.0.1:$PORT$p" || true)
	assert_eq 200 "$H_CODE" "GET $p during the slow request"
done
assert_eq 0 "$(in_progress && echo 0 || echo 1)" \
	"the others were answered while the pause was still in the server"
kill "$SLOW_REQ" 2>/dev/null || true
wait "$SLOW_REQ" 2>/dev/null || true
# the stalled thread would hold a graceful stop for its minute
kill -9 "$SLOW_SERVE"
wait "$SLOW_SERVE" 2>/dev/null || true
expect_rc 0 job resume fresh

t_section "serve --metrics-max-jobs caps the per-job series"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --metrics-max-jobs 1 2>"$T_DIR/serve2.log"
wait_until 120 has_port "$T_DIR/serve2.log" || { cat "$T_DIR/serve2.log"; exit 1; }
PORT=$(port_of "$T_DIR/serve2.log")
expect 200 GET /metrics
assert_eq 1 "$(grep -c '^dbcron_job_paused{' <<<"$H_BODY")" "one job's series"
assert_eq 1 "$(awk '$1 == "dbcron_metrics_jobs_omitted" {print $2}' <<<"$H_BODY")"
assert_not_contains "$H_BODY" "dbcron_runs_total" "serve has no node counters"
assert_not_contains "$H_BODY" "dbcron_job_runs_total" "nor per-job run counters"
kill "$T_BG_PID"
fi

t_section "GET /api/v1/jobs pages by name"
# names that need escaping in a query string, and one that sorts first
jq -n '[range(0; 25) | {name: ("p-\(. | tostring | if length < 2 then "0" + . else . end)"),
	every: "1h", command: ["true"], paused: true}] +
	[{name: "p+plus", every: "1h", command: ["true"]}, {name: "p%25&x=y", every: "1h", command: ["true"]},
	 {name: "A-first", every: "1h", command: ["true"]}]' >"$T_DIR/many.json"
expect_rc 0 job apply "$T_DIR/many.json"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 2>"$T_DIR/serve4.log"
wait_until 120 has_port "$T_DIR/serve4.log" || { cat "$T_DIR/serve4.log"; exit 1; }
PORT=$(port_of "$T_DIR/serve4.log")
expect_rc 0 job list --format json
want=$(jq -r '.[].name' <<<"$T_OUT" | sort | tr '\n' ' ')
assert_eq 30 "$(wc -w <<<"$want")" "thirty jobs to page through"
got="" cursor="" pages=0 over=0
while :; do
	req GET "/api/v1/jobs?limit=4${cursor:+&cursor=$(jq -rn --arg c "$cursor" '$c|@uri')}"
	[ "$H_CODE" = 200 ] || { _t_fail "jobs page $pages: $H_CODE $H_BODY"; break; }
	[ "$(jget '.jobs | length')" -le 4 ] || over=1
	got+="$(jget '.jobs[].name') "
	cursor=$(jget '.next_cursor // empty')
	pages=$((pages + 1))
	[ -n "$cursor" ] && [ "$pages" -lt 100 ] || break
done
assert_eq "$want" "$(tr ' ' '\n' <<<"$got" | grep . | sort | tr '\n' ' ')" "job pages hold every job once"
assert_eq 8 "$pages" "30 jobs in pages of 4, the last one short and with no next cursor"
assert_eq 0 "$over" "no page is over the limit"
expect 200 GET "/api/v1/jobs"
assert_eq "30 null" "$(jget '"\(.jobs | length) \(.next_cursor)"')" "the default page holds 30"
expect 200 GET "/api/v1/jobs?limit=2"
assert_eq "A-first fresh" "$(jget '[.jobs[].name] | join(" ")')" "a page is in name order"
assert_eq fresh "$(jget .next_cursor)" "the next cursor is the page's last name"
expect 200 GET "/api/v1/jobs?limit=1&cursor=p-07x"
assert_eq "p-08" "$(jget '.jobs[0].name')" "a cursor need not name a job that exists"
expect 200 GET "/api/v1/jobs?limit=1000"
for q in limit=0 limit=1001 limit=-1 limit=abc "limit=2&cursor=a%20b" "cursor=%01" \
	"cursor=$(head -c 201 /dev/zero | tr '\0' a)"; do
	expect 400 GET "/api/v1/jobs?$q"
	assert_eq invalid "$(err_code)" "jobs?$q: the error shape"
done
assert_contains "$(curl -s "http://127.0.0.1:$PORT/api/v1/jobs?limit=0" | jq -r .error.message)" \
	"limit '0': expected a whole number from 1 to 1000"
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_done
