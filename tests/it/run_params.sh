#!/usr/bin/env bash
# Run parameters (issue 27 item 4) against a real node: `job trigger
# --param` and the API's trigger body reach a shell job as
# DBCRON_PARAM_KEY; a job's --params declaration refuses other keys with
# nothing written and fills in its defaults (also for a scheduled fire);
# bad keys, long values and too many are refused; the run log shows a
# run's parameters (runs show, GET /api/v1/runs/{id}); a retry keeps them.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
command -v curl >/dev/null || fail "curl is required (scripts/deps.sh)"
command -v jq >/dev/null || fail "jq is required (scripts/deps.sh)"

ADMIN=admin-token-0123456789abcdef
echo "$ADMIN admin" >"$T/tokens"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }
# trigger_http NAME BODY: the HTTP status into H_CODE, the body into H_BODY
trigger_http() {
  H_CODE=$(curl -s -X POST -o "$T/.body" -w '%{http_code}' --max-time 30 \
    -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    ${2:+--data-binary "$2"} "http://127.0.0.1:$PORT/api/v1/jobs/$1/trigger" || true)
  H_BODY=$(cat "$T/.body")
}
lines() { [ -f "$1" ] && grep -c . "$1" || echo 0; }
db_state() { { dbc job export; runs_csv; } | sha256sum; }
params_of() { dbc runs show "$1" --format json | jq -c .params; }

# free: any key; decl: only X and region (region defaults to eu); it fails
# once with X=retry so that its retry shows the parameters kept
dbc job add free --at now+1h -- sh -c 'echo "$DBCRON_PARAM_X|${DBCRON_PARAM_y_2:-}" >> '"$T/free.out" >/dev/null
dbc job add decl --at now+1h --params 'X,region=eu' --retries 1 --retry-base 1s -- \
  sh -c 'echo "$DBCRON_PARAM_X|$DBCRON_PARAM_region" >> '"$T/decl.out"'; [ "$DBCRON_PARAM_X" != retry ] || [ "$DBCRON_ATTEMPT" = 2 ]' >/dev/null
assert_contains "$(dbc job show decl)" "params:            X,region=eu"
assert_eq '"X,region=eu"' "$(dbc job export | jq -c '.[] | select(.name == "decl") | .params')" "export carries --params"

t_section "refused at the trigger, nothing written"
before=$(db_state)
expect_rc 2 job trigger decl --param other=1
assert_err_contains "job 'decl' takes no parameter 'other' (it takes: X, region)"
expect_rc 2 job trigger free --param 1x=2
assert_err_contains "a key is [A-Za-z_][A-Za-z0-9_]*"
expect_rc 2 job trigger free --param novalue
assert_err_contains "expected KEY=VALUE"
expect_rc 2 job trigger free --param "X=$(head -c 4097 /dev/zero | tr '\0' v)"
assert_err_contains "over 4096 bytes"
expect_rc 2 job trigger free --param X=1 --param X=2
assert_err_contains "given twice"
many=(); for i in $(seq 1 33); do many+=(--param "k$i=v"); done
expect_rc 2 job trigger free "${many[@]}"
assert_err_contains "more than 32 parameters"
expect_rc 2 job add bad --at now+1h --params 'a,a' -- true
assert_err_contains "declared twice"
expect_rc 2 job pause free --param X=1
assert_eq "$before" "$(db_state)" "the refused triggers and add wrote nothing"

t_section "the CLI's parameters reach the shell job and the run log"
dbc job trigger free --param X='a b=c' --param y_2=two >/dev/null
free_run=$(runs_csv --job free | tail -n 1 | cut -d, -f11)
assert_eq '{"X":"a b=c","y_2":"two"}' "$(params_of "$free_run")" "runs show: the run's parameters"
assert_contains "$(dbc runs show "$free_run")" 'params:    {"X":"a b=c","y_2":"two"}'
dbc job trigger decl --param X=cli >/dev/null
decl_run=$(runs_csv --job decl | tail -n 1 | cut -d, -f11)
assert_eq '{"X":"cli","region":"eu"}' "$(params_of "$decl_run")" "the declared default is recorded"

start_node n1 --heartbeat 300ms --http 127.0.0.1:0 --api-token-file "$T/tokens"
wait_until 60 has_port "$T/node-n1.log" || fail "node n1 did not listen"
PORT=$(port_of "$T/node-n1.log")
wait_until 60 test -s "$T/free.out" || fail "free did not run"
assert_eq "a b=c|two" "$(cat "$T/free.out")" "free: DBCRON_PARAM_X and DBCRON_PARAM_y_2"

t_section "the API's trigger body"
trigger_http decl '{"params":{"X":"retry","region":"us"}}'
assert_eq 201 "$H_CODE" "trigger with params (body: $H_BODY)"
http_run=$(jq -r .run_id <<<"$H_BODY")
trigger_http decl '{"params":{"other":"1"}}'
assert_eq 400 "$H_CODE" "an undeclared key (body: $H_BODY)"
assert_contains "$H_BODY" "takes no parameter 'other'"
trigger_http free '{"params":{"a=b":"1"}}'
assert_eq 400 "$H_CODE" "a key with '=' (body: $H_BODY)"
trigger_http free '{"params":{"X":1}}'
assert_eq 400 "$H_CODE" "a value that is not a string (body: $H_BODY)"
trigger_http free '{"other":{}}'
assert_eq 400 "$H_CODE" "a body that is not {params} (body: $H_BODY)"
H_CODE=$(curl -s -o "$T/.body" -w "%{http_code}" -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT/api/v1/runs/$http_run")
assert_eq '{"X":"retry","region":"us"}' "$(jq -c .params "$T/.body")" "GET run: its parameters"

t_section "what the declared job ran with, a retry included"
# cli's run, then the API's (fails once: its retry keeps its parameters)
wait_until 60 sh -c "[ \$(grep -c . '$T/decl.out' 2>/dev/null || echo 0) -ge 3 ]" || fail "decl did not run 3 times"
assert_eq "cli|eu retry|us retry|us " "$(tr '\n' ' ' <"$T/decl.out")" "decl: given values, the default, the retry's"
assert_eq '{"X":"retry","region":"us"}' \
  "$(dbc runs --job decl --format json --limit 0 | jq -c '[.[] | select(.attempt == 2)][0].params')" \
  "the retry row carries the parameters"
curl -s -o "$T/.body" -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT/api/v1/runs?job=decl"
# newest first: the retry, its first attempt, cli's run
assert_eq '{"X":"retry","region":"us"}|{"X":"retry","region":"us"}|{"X":"cli","region":"eu"}' \
  "$(jq -r '[.runs[] | .params | tojson] | join("|")' "$T/.body")" "GET runs: the page shows each run's parameters"

t_section "a scheduled fire gets the declared defaults"
dbc job set decl --at now+1s >/dev/null
wait_until 60 sh -c "[ \$(grep -c . '$T/decl.out') -ge 4 ]" || fail "decl's scheduled fire did not run"
assert_eq "|eu" "$(tail -n 1 "$T/decl.out")" "decl: a scheduled fire sees region's default"
assert_eq 1 "$(lines "$T/free.out")" "free: ran for its one valid trigger only"
stop_node n1
t_done
