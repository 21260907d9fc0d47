#!/usr/bin/env bash
# The audit trail (issue 29 item 2): every kind of change, made through the
# CLI, the HTTP API (with named and unnamed tokens) and the library (the
# examples/ program), read back with `dbcron audit` and GET /api/v1/audit:
# who (actor), what (action, job), and the before and after of the keys
# that changed; no env value or URL password in it; a refused change
# writes no row; a node's stop is its own row; retention prunes old rows.
# Runs on SQLite; audit_pg.sh and audit_mysql.sh run it on PostgreSQL and
# MariaDB (AUDIT_BACKEND=pg|mysql), the library and retention parts on
# SQLite only (t_reference_backend).
set -euo pipefail
source "$DBCRON_TESTLIB"

BACKEND=${AUDIT_BACKEND:-sqlite}
URL=$(t_fresh_url "$BACKEND" dbcron_audit)
export DBCRON_DB=$URL
command -v curl >/dev/null || { echo "curl is required (scripts/deps.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is required (scripts/deps.sh)" >&2; exit 1; }

# trail [ARGS]: the whole trail (or what ARGS select) as a JSON array
trail() { "$DBCRON_BIN" audit --limit 0 --format json "$@"; }
nrows() { trail | jq length; }
# last JQ: JQ of the newest row
last() { trail | jq -r ".[-1] | $1"; }
# row_is ACTOR ACTION JOB: the newest row says that
row_is() {
	assert_eq "$1|$2|$3" "$(last '"\(.actor)|\(.action)|\(.job)"')" "newest row: $1 $2 $3"
}
# change KEY: "before -> after" of KEY in the newest row
change() { last ".detail.changes[\"$1\"] | \"\(.before|tojson) -> \(.after|tojson)\""; }

ME=cli:$(id -un)
expect_rc 0 init
assert_eq 0 "$(nrows)" "a new database has an empty trail"

# ---------------------------------------------------------------------
t_section "the CLI: every kind of change"
expect_rc 0 job add a --every 30s --env TOKEN=s3cret-env -- curl https://bob:s3cret-pw@example.com/x
row_is "$ME" add a
assert_eq 'null -> "30s"' "$(change every)" "add: every from nothing"
assert_eq 'null -> ["TOKEN=***"]' "$(change env)" "add: the env's name, never its value"
expect_rc 0 job set a --every 1m --timeout 10s
row_is "$ME" set a
assert_eq '"30s" -> "1m"' "$(change every)" "set: every before and after"
assert_eq '"0s" -> "10s"' "$(change timeout)" "set: timeout before and after"
assert_eq 2 "$(last '.detail.changes | length')" "set: only the keys that changed"
expect_rc 0 job pause a
row_is "$ME" pause a
assert_eq 'false -> true' "$(change paused)"
expect_rc 0 job resume a
row_is "$ME" resume a
assert_eq 'true -> false' "$(change paused)"
expect_rc 0 job trigger a
row_is "$ME" trigger a
assert_match "$(last .detail.run_id)" '^[0-9]+$' "trigger: the run it made"
expect_rc 0 job rename a b
row_is "$ME" rename b
assert_eq '"a" -> "b"' "$(change name)"
cat >"$T_DIR/jobs.json" <<'EOF'
[{"name": "b", "every": "2m", "command": ["true"]},
 {"name": "c", "cron": "0 * * * *", "command": ["true"]}]
EOF
expect_rc 0 job apply "$T_DIR/jobs.json"
assert_eq "apply|b apply|c" "$(trail | jq -r '.[-2:] | map("\(.action)|\(.job)") | join(" ")')" \
	"apply: one row per job it changed"
assert_eq '"1m" -> "2m"' "$(trail --job b | jq -r '.[-1].detail.changes.every | "\(.before|tojson) -> \(.after|tojson)"')"
expect_rc 0 job add d --needs c -- true
expect_rc 0 job delete c --force
row_is "$ME" delete c
assert_eq '"0 * * * *" -> null' "$(change cron)" "delete: the definition before"
assert_eq d "$(last .detail.detached)" "delete --force: what it detached"
SUDO_USER=alice expect_rc 0 job pause b
row_is "$ME (sudo: alice)" pause b

t_section "what is never in the trail"
all=$(trail)
assert_not_contains "$all" "s3cret-env" "no env value"
assert_not_contains "$all" "s3cret-pw" "no URL password"

t_section "a refused change writes no row"
n=$(nrows)
printf '[{"name": "e", "cron": "61 * * * *", "command": ["true"]}]' >"$T_DIR/bad.json"
expect_rc 2 job apply "$T_DIR/bad.json"
expect_rc 2 job add b --every 1m -- true
expect_rc 2 job rename b d
expect_rc 2 job pause nosuch
assert_eq "$n" "$(nrows)" "no row for an apply, add, rename or pause that failed"

t_section "dbcron audit: filters and the table"
expect_rc 0 audit --job a
assert_contains "$T_OUT" "cli:"
assert_eq 5 "$(trail --job a | jq length)" "--job a: add, set, pause, resume, trigger"
assert_eq 2 "$(trail --limit 2 | jq length)" "--limit"
assert_eq "$(nrows)" "$(trail --since 1h | jq length)" "--since 1h: every row"
assert_eq 0 "$(trail --since now+1h | jq length)" "--since in the future: none"
expect_rc 0 audit --job b
assert_contains "$T_OUT" "every: 1m -> 2m"
expect_rc 2 audit --since yesterday
assert_err_contains "--since"
expect_rc 2 audit --limit -1

# ---------------------------------------------------------------------
t_section "HTTP: the token's name is the actor"
OPS=ops-token-0123456789abcdef
ANON=anon-token-0123456789abcdef
READER=read-token-0123456789abcdef
{
	echo "# the third word names the token in the audit trail"
	echo "$OPS admin ops-bot"
	echo "$ANON admin"
	echo "$READER read"
	# a token listed twice is known by its first line's name
	echo "$OPS read ops-bot-again"
} >"$T_DIR/tokens"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" 2>"$T_DIR/serve.log"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$T_DIR/serve.log" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of)" ]; }
wait_until 120 has_port || { cat "$T_DIR/serve.log"; exit 1; }
PORT=$(port_of)
# req METHOD PATH TOKEN [BODY]: the status into H_CODE, the body H_BODY
req() {
	local args=(-s -X "$1" -o "$T_DIR/.body" -w '%{http_code}' --max-time 60
		-H "Authorization: Bearer $3")
	[ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
	H_CODE=$(curl "${args[@]}" "http://127.0.0.1:$PORT$2" || true)
	H_BODY=$(cat "$T_DIR/.body")
}
req PUT /api/v1/jobs/h "$OPS" '{"every": "1h", "command": ["true"]}'
assert_eq 201 "$H_CODE" "PUT a new job ($H_BODY)"
row_is http:ops-bot apply h
req PUT /api/v1/jobs/h "$OPS" '{"every": "2h", "command": ["true"]}'
row_is http:ops-bot apply h
assert_eq '"1h" -> "2h"' "$(change every)"
for verb in pause resume trigger; do
	req POST "/api/v1/jobs/h/$verb" "$OPS"
	assert_match "$H_CODE" '^20[01]$' "POST $verb ($H_BODY)"
	row_is http:ops-bot "$verb" h
done
req POST /api/v1/apply "$ANON" '[{"name": "h2", "every": "5m", "command": ["true"]}]'
assert_eq 200 "$H_CODE" "POST apply ($H_BODY)"
row_is "http:token#3" apply h2
req DELETE /api/v1/jobs/h2 "$ANON"
assert_eq 200 "$H_CODE" "DELETE ($H_BODY)"
row_is "http:token#3" delete h2
n=$(nrows)
req POST /api/v1/jobs/h/pause "$READER"
assert_eq 403 "$H_CODE" "a read token may not write"
req PUT /api/v1/jobs/h "$OPS" '{"cron": "61 * * * *", "command": ["true"]}'
assert_eq 400 "$H_CODE" "a bad cron is refused"
assert_eq "$n" "$(nrows)" "no row for a refused request"

t_section "GET /api/v1/audit"
req GET "/api/v1/audit?job=h&limit=2" "$READER"
assert_eq 200 "$H_CODE" "GET /api/v1/audit ($H_BODY)"
assert_eq "resume trigger" "$(jq -r '.audit | map(.action) | join(" ")' <<<"$H_BODY")" \
	"job= and limit=: the newest two of h, oldest first"
assert_eq "http:ops-bot" "$(jq -r '.audit[0].actor' <<<"$H_BODY")"
assert_match "$(jq -r '.audit[0].at' <<<"$H_BODY")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "at in RFC 3339"
req GET "/api/v1/audit?since=now%2B1h" "$READER"
assert_eq 0 "$(jq '.audit | length' <<<"$H_BODY")" "since= in the future: none"
req GET "/api/v1/audit?since=bogus" "$READER"
assert_eq 400 "$H_CODE" "a bad since is refused"
req GET "/api/v1/audit?limit=0" "$READER"
assert_eq 400 "$H_CODE" "a bad limit is refused"
kill "$T_BG_PID"
wait "$T_BG_PID" 2>/dev/null || true

if t_reference_backend "$BACKEND"; then
	# -----------------------------------------------------------------
	t_section "the library: lib:PROGRAM, and a node's stop"
	bindir=$(dirname "$DBCRON_BIN")
	prog=dbcron-example-embed
	[ -x "$bindir/$prog" ] || fail "$bindir/$prog was not built"
	"$bindir/$prog" "$DBCRON_DB" "$T_DIR/embed.out" >"$T_DIR/embed.log" 2>&1 &
	epid=$!
	T_PIDS+=("$epid")
	applied() { [ "$(trail | jq '[.[] | select(.actor == "lib:'$prog'")] | length')" -ge 2 ]; }
	node_alive() { "$DBCRON_BIN" nodes --format csv | grep -q ',alive,'; }
	wait_until 120 applied || fail "no library rows: $(trail | jq -c '.[-2:]')"
	wait_until 120 node_alive || fail "the example's node did not start"
	assert_eq "apply" "$(trail | jq -r '[.[] | select(.actor == "lib:'$prog'") | .action] | unique | join(" ")')" \
		"the library's apply, by the program's name"
	kill -TERM "$epid"
	rc=0
	wait "$epid" || rc=$?
	assert_eq 0 "$rc" "the example exits 0"
	row_is "node:$(last '.detail.node')" node-stop null
	assert_match "$(last .actor)" '^node:.+' "a node's stop is the node's"

	# -----------------------------------------------------------------
	t_section "retention prunes the trail with the run log"
	# a retention of 5 s: what is older than the cut goes at the node's
	# first pass (2 s after its start), the pause made after it stays
	# for 5 s, which the wait for the first pass leaves it
	cut=$(($(date +%s%N) / 1000000))
	sleep 5.2
	expect_rc 0 job pause h
	old() { trail | jq "[.[] | select(.at_ms < $cut)] | length"; }
	assert_ge "$(old)" 10 "rows older than the cut"
	"$DBCRON_BIN" node --node-id keeper --retention 5s >"$T_DIR/keeper.log" 2>&1 &
	kpid=$!
	T_PIDS+=("$kpid")
	none_old() { [ "$(old)" = 0 ]; }
	wait_until 120 none_old || fail "old rows left: $(old)"
	kill -TERM "$kpid"
	wait "$kpid" || fail "the node did not stop cleanly"
	assert_eq 1 "$(trail --job h | jq '[.[] | select(.action == "pause")] | length')" \
		"a row newer than the retention stays"
	row_is node:keeper node-stop null
fi

t_done
