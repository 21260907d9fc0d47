#!/usr/bin/env bash
# What the dashboard asks of the API beyond the listing (issue 29 item 1),
# with real requests against a real `dbcron serve`, each answer checked
# against the run log as `dbcron runs` reads it: GET /api/v1/jobs?strip=N
# (each job's last N runs that are not scheduled) and ?q= (name search),
# GET /api/v1/stats (runs per minute by state, lateness p50/p99, the node
# timeline), the error's "field" (cron/next, PUT), PUT with If-None-Match: *
# (create only), and ETag / If-None-Match (304) on GETs.  Runs on SQLite;
# http_stats_pg.sh and http_stats_mysql.sh run it on PostgreSQL and MariaDB
# (HTTP_BACKEND=pg|mysql), whose strip and search statements differ.
set -euo pipefail
source "$DBCRON_TESTLIB"
command -v curl >/dev/null || { echo "curl is required (scripts/deps.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is required (scripts/deps.sh)" >&2; exit 1; }
case "${HTTP_BACKEND:-sqlite}" in
sqlite) DBCRON_DB=sqlite:$T_DIR/t.db ;;
pg) DBCRON_DB=$(t_pg_fresh_db dbcron_stats) ;;
mysql) DBCRON_DB=$(t_my_fresh_db dbcron_stats) ;;
*) echo "unknown HTTP_BACKEND $HTTP_BACKEND" >&2; exit 1 ;;
esac
export DBCRON_DB
ADMIN=admin-token-0123456789abcdef
echo "$ADMIN admin" >"$T_DIR/tokens"

# req METHOD PATH [BODY-FILE [HEADER]]: H_CODE, H_BODY, H_HEAD
req() {
	local m=$1 p=$2 body=${3:-} hdr=${4:-}
	local args=(-s -X "$m" -o "$T_DIR/.body" -D "$T_DIR/.head" -w '%{http_code}' --max-time 60
		-H "Authorization: Bearer $ADMIN")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "@$body")
	[ -n "$hdr" ] && args+=(-H "$hdr")
	rm -f "$T_DIR/.body"
	H_CODE=$(curl "${args[@]}" "http://127.0.0.1:$PORT$p" || true)
	H_BODY=$(cat "$T_DIR/.body" 2>/dev/null || true)
	H_HEAD=$(tr -d '\r' <"$T_DIR/.head")
}
listen_port() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }

expect_rc 0 init
expect_rc 0 job add alpha --every 1s -- echo alpha
expect_rc 0 job add alphabet --every 1s -- false
expect_rc 0 job add beta --every 1h -- echo beta

t_section "runs to look at: a node runs alpha and alphabet for a few seconds"
t_bg "$DBCRON_BIN" node --node-id statnode 2>"$T_DIR/node.log"
NODE=$T_BG_PID
enough() {
	[ "$("$DBCRON_BIN" runs --job alpha --state succeeded --format json --limit 0 | jq length)" -ge 4 ] &&
		[ "$("$DBCRON_BIN" runs --job alphabet --state failed --format json --limit 0 | jq length)" -ge 2 ]
}
wait_until 120 enough || { cat "$T_DIR/node.log"; exit 1; }
kill -TERM "$NODE"
wait "$NODE" 2>/dev/null || true
# the run log is still from here on: every answer is compared with it
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" 2>"$T_DIR/serve.log"
has_port() { [ -n "$(listen_port "$T_DIR/serve.log")" ]; }
wait_until 120 has_port || { cat "$T_DIR/serve.log"; exit 1; }
PORT=$(listen_port "$T_DIR/serve.log")
"$DBCRON_BIN" runs --format json --limit 0 >"$T_DIR/runs.json"

t_section "strip: each job's last N runs that are not scheduled, oldest first"
req GET '/api/v1/jobs?strip=3'
assert_eq 200 "$H_CODE" "jobs?strip=3 ($H_BODY)"
for j in alpha alphabet beta; do
	GOT=$(jq -c --arg j "$j" '.jobs[] | select(.name == $j) | [.strip[] | [.id, .state, .fire_at_ms, .attempt]]' <<<"$H_BODY")
	WANT=$(jq -c --arg j "$j" '[.[] | select(.job == $j and .state != "scheduled")]
		| sort_by(.fire_at_ms, .attempt) | .[-3:] | [.[] | [.id, .state, .fire_at_ms, .attempt]]' "$T_DIR/runs.json")
	assert_eq "$WANT" "$GOT" "$j's strip against the run log"
done
assert_eq 3 "$(jq '[.jobs[] | select(.name == "alpha") | .strip[]] | length' <<<"$H_BODY")" "alpha's strip is full"
req GET '/api/v1/jobs'
assert_eq 0 "$(jq '[.jobs[] | select(has("strip"))] | length' <<<"$H_BODY")" "no strip unless asked"
for bad in 201 abc -1; do
	req GET "/api/v1/jobs?strip=$bad"
	assert_eq 400 "$H_CODE" "strip=$bad is refused"
done

t_section "q: the jobs whose name holds the text, paged"
req GET '/api/v1/jobs?q=alpha'
assert_eq '["alpha","alphabet"]' "$(jq -c '[.jobs[].name]' <<<"$H_BODY")" "q=alpha"
req GET '/api/v1/jobs?q=ph&limit=1'
assert_eq '["alpha"] "alpha"' "$(jq -c '[.jobs[].name]' <<<"$H_BODY") $(jq -c .next_cursor <<<"$H_BODY")" "q=ph, first page of one"
req GET '/api/v1/jobs?q=ph&limit=1&cursor=alpha'
assert_eq '["alphabet"] null' "$(jq -c '[.jobs[].name]' <<<"$H_BODY") $(jq -c .next_cursor <<<"$H_BODY")" "q=ph, second and last page"
req GET '/api/v1/jobs?q=zzz'
assert_eq '[]' "$(jq -c '[.jobs[].name]' <<<"$H_BODY")" "q=zzz finds nothing"

t_section "stats: per minute by state, lateness p50/p99, the timeline, against the run log"
for job in "" alpha; do
	req GET "/api/v1/stats?minutes=10${job:+&job=$job}"
	assert_eq 200 "$H_CODE" "stats ${job:-of the cluster} ($H_BODY)"
	echo "$H_BODY" >"$T_DIR/stats.json"
	RC=0
	OUT=$(python3 - "$T_DIR/stats.json" "$T_DIR/runs.json" "$job" <<'PY' 2>&1) || RC=$?
import json, math, sys
st, runs, job = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
frm, n = st["from_ms"], st["minutes"]
want = [{"at_ms": frm + i * 60000} for i in range(n)]
late = [[] for _ in range(n)]
tl = []
for r in runs:
    if job and r["job"] != job:
        continue
    m = (r["fire_at_ms"] - frm) // 60000
    if m < 0 or m >= n:
        continue
    want[m][r["state"]] = want[m].get(r["state"], 0) + 1
    if r["started_ms"]:
        late[m].append(r["started_ms"] - r["fire_at_ms"])
        tl.append((r["id"], r["node"], r["job"]))
for m, v in enumerate(late):
    v.sort()
    if v:
        want[m]["lateness_p50_ms"] = v[math.ceil(len(v) * 0.5) - 1]
        want[m]["lateness_p99_ms"] = v[math.ceil(len(v) * 0.99) - 1]
bad = []
if st["per_minute"] != want:
    bad.append("per_minute: got %s want %s" % (st["per_minute"], want))
got_tl = sorted((r["run_id"], r["node"], r["job"]) for r in st["timeline"])
if got_tl != sorted(tl):
    bad.append("timeline: got %s want %s" % (got_tl, sorted(tl)))
if not tl or any(r[1] != "statnode" for r in tl):
    bad.append("no runs of statnode in the window: %s" % tl)
if job and st["job"] != job:
    bad.append("job: %s" % st["job"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	assert_eq 0 "$RC" "stats ${job:-of the cluster} match the run log: $OUT"
done
req GET '/api/v1/stats?job=nosuch'
assert_eq 404 "$H_CODE" "stats of a job that does not exist"
for bad in 0 1441 x; do
	req GET "/api/v1/stats?minutes=$bad"
	assert_eq 400 "$H_CODE" "minutes=$bad is refused"
done

t_section "errors name their field"
req GET '/api/v1/cron/next?expr=61+*+*+*+*'
assert_eq '400 "expr"' "$H_CODE $(jq -c .error.field <<<"$H_BODY")" "cron/next of an invalid expression"
req GET '/api/v1/cron/next?expr=*+*+*+*+*&tz=Mars/Olympus'
assert_eq '400 "tz"' "$H_CODE $(jq -c .error.field <<<"$H_BODY")" "cron/next in an unknown zone"
BEFORE=$("$DBCRON_BIN" job list --format json | jq -c '[.[] | del(.next_fire_at_ms, .next_fire, .next_fire_local, .last_run)]')
echo '{"cron": "61 * * * *", "command": ["true"]}' >"$T_DIR/bad.json"
req PUT /api/v1/jobs/gamma "$T_DIR/bad.json"
assert_eq '400 "cron"' "$H_CODE $(jq -c .error.field <<<"$H_BODY")" "PUT of an invalid cron"
assert_contains "$H_BODY" "61 is out of range" "the parser's message"

t_section "If-None-Match: * creates only"
echo '{"every": "1m", "command": ["echo", "overwritten"]}' >"$T_DIR/dup.json"
req PUT /api/v1/jobs/beta "$T_DIR/dup.json" 'If-None-Match: *'
assert_eq '409 "name"' "$H_CODE $(jq -c .error.field <<<"$H_BODY")" "a create of a taken name"
AFTER=$("$DBCRON_BIN" job list --format json | jq -c '[.[] | del(.next_fire_at_ms, .next_fire, .next_fire_local, .last_run)]')
assert_eq "$BEFORE" "$AFTER" "the refused writes changed no job"
req PUT /api/v1/jobs/gamma "$T_DIR/dup.json" 'If-None-Match: *'
assert_eq 201 "$H_CODE" "a create of a new name ($H_BODY)"
dbc job show gamma --format json
assert_eq '["echo","overwritten"]' "$(jq -c .command <<<"$T_OUT")" "gamma as created"
req PUT /api/v1/jobs/beta "$T_DIR/dup.json"
assert_eq 200 "$H_CODE" "without the header a PUT still replaces"

t_section "ETag and If-None-Match"
req GET /api/v1/jobs
ETAG=$(sed -n 's/^ETag: //Ip' <<<"$H_HEAD")
assert_match "$ETAG" '^"[0-9a-f]{16}"$'
req GET /api/v1/jobs "" "If-None-Match: $ETAG"
assert_eq "304 " "$H_CODE $H_BODY" "the same listing is not sent again"
req GET /api/v1/jobs "" 'If-None-Match: "0000000000000000"'
assert_eq 200 "$H_CODE" "another validator gets the body"
expect_rc 0 job pause beta
req GET /api/v1/jobs "" "If-None-Match: $ETAG"
assert_eq 200 "$H_CODE" "a changed listing is sent"
assert_ne "$ETAG" "$(sed -n 's/^ETag: //Ip' <<<"$H_HEAD")" "with a new ETag"
req PUT /api/v1/jobs/beta "$T_DIR/dup.json"
assert_eq "" "$(sed -n 's/^ETag: //Ip' <<<"$H_HEAD")" "no ETag on a write"

t_done
