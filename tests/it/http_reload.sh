#!/usr/bin/env bash
# SIGHUP reads the API token file again (`systemctl reload dbcron-node`):
# dbcron serve and dbcron node --http answer the new tokens and refuse the
# removed ones, without a restart; a file that no longer reads leaves the
# tokens in use and says why; the node keeps scheduling through it.
set -euo pipefail
source "$DBCRON_TESTLIB"

export DBCRON_DB=sqlite:$T_DIR/t.db
expect_rc 0 init
expect_rc 0 job add tick --every 1s -- true
A=aaaaaaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbbbbbb
tokens() { printf '%s admin\n' "$@" >"$T_DIR/tokens.new" && chmod 600 "$T_DIR/tokens.new" &&
	mv "$T_DIR/tokens.new" "$T_DIR/tokens"; }
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "http://127.0.0.1:$1/api/v1/jobs"; }
answers() { [ "$(code "$1" "$2")" = "$3" ]; }

check_reload() { # NAME LOG PID
	local port
	port=$(port_of "$2")
	assert_eq 200 "$(code "$port" "$A")" "$1: token A"
	assert_eq 401 "$(code "$port" "$B")" "$1: token B, not in the file yet"
	tokens "$B"
	kill -HUP "$3"
	wait_until 60 answers "$port" "$B" 200 || fail "$1: token B not accepted after SIGHUP"
	assert_eq 401 "$(code "$port" "$A")" "$1: token A, removed, refused after SIGHUP"
	echo "not a token file" >"$T_DIR/tokens"
	kill -HUP "$3"
	wait_until 60 grep -q "tokens in use are kept" "$2" || fail "$1: a bad token file on SIGHUP was not reported"
	assert_eq 200 "$(code "$port" "$B")" "$1: a bad file leaves the tokens in use"
	kill -0 "$3" || fail "$1: the process did not survive SIGHUP"
}

t_section "dbcron serve"
tokens "$A"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" 2>"$T_DIR/serve.log"
wait_until 120 has_port "$T_DIR/serve.log" || { cat "$T_DIR/serve.log"; fail "serve did not listen"; }
check_reload serve "$T_DIR/serve.log" "$T_BG_PID"
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_section "dbcron node --http"
tokens "$A"
t_bg "$DBCRON_BIN" node --node-id hup1 --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" \
	2>"$T_DIR/node.log"
NODE=$T_BG_PID
wait_until 120 has_port "$T_DIR/node.log" || { cat "$T_DIR/node.log"; fail "the node did not listen"; }
check_reload node "$T_DIR/node.log" "$NODE"
n0=$("$DBCRON_BIN" runs --job tick --state succeeded --format csv --limit 0 | tail -n +2 | wc -l)
more_runs() { [ "$("$DBCRON_BIN" runs --job tick --state succeeded --format csv --limit 0 | tail -n +2 | wc -l)" -gt "$n0" ]; }
wait_until 120 more_runs || fail "the node stopped scheduling after SIGHUP"
pass "the node kept scheduling"
kill -TERM "$NODE"
wait "$NODE" || true
t_done
