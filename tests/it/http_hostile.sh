#!/usr/bin/env bash
# Hostile HTTP clients against a real node (`dbcron node --http`), with
# real sockets (curl, python3): slow clients (slowloris) never stop
# /healthz, /metrics or an authenticated client; a Host that is not a name
# of the server is refused (DNS rebinding); a body is refused on the
# headers, before it is read, when the caller has no admin token; the API
# token file is a secret no job's env-file may be; a trigger of a paused
# job says that its run waits for the resume (docs/http.md).
# No bound here is on speed: each wait is a bounded poll, and the one time
# limit (10 s for an answer while slow clients are connected) is for
# something that does not come at all without the fix.
set -euo pipefail
source "$DBCRON_TESTLIB"

command -v curl >/dev/null || { echo "curl is required (scripts/deps.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is required (scripts/deps.sh)" >&2; exit 1; }
export DBCRON_DB=sqlite:$T_DIR/t.db

# Tokens with '=' make the token file a valid env-file: without the
# secret-file check a job could read every token as its environment.
ADMIN=ADMIN=admin-token-0123456789abcdef
READER=READER=read-token-0123456789abcdef
LEAK=LEAK=leaked-token-0123456789
{
	echo "$ADMIN admin"
	echo "$READER read"
	echo "$LEAK read"
} >"$T_DIR/tokens"
chmod 600 "$T_DIR/tokens"

port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }
# code [CURL ARGS...] PATH: the status of one request (000: no answer)
code() {
	local p=${*: -1}
	curl -s -o "$T_DIR/.body" -w '%{http_code}' --max-time 10 "${@:1:$#-1}" \
		"http://127.0.0.1:$PORT$p" || true
}

t_section "setup"
expect_rc 0 init
expect_rc 0 job add quiet --every 1h -- true
expect_rc 2 node --http-host dbcron.example
assert_err_contains "--http-host needs --http"
expect_rc 2 serve --http 127.0.0.1:0 --http-host 'bad name'
assert_err_contains "'bad name' is not a host name"
expect_rc 2 serve --http 127.0.0.1:0 --http-host 'a.example,,b.example'
assert_err_contains "is not a host name"
t_bg "$DBCRON_BIN" node --node-id n1 --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" \
	--http-host dbcron.example --http-host a.example,B.Example --heartbeat 200ms --lease 2s \
	2>"$T_DIR/node.log"
wait_until 120 has_port "$T_DIR/node.log" || { cat "$T_DIR/node.log"; exit 1; }
PORT=$(port_of "$T_DIR/node.log")

t_section "Host: addresses, localhost and --http-host names only (DNS rebinding)"
for h in "127.0.0.1:$PORT" 127.0.0.1 "[::1]:$PORT" "localhost:$PORT" LocalHost. \
	app.localhost "dbcron.example:$PORT" DBCRON.example. a.example b.example:80 10.1.2.3; do
	assert_eq 200 "$(code -H "Host: $h" /healthz)" "GET /healthz with Host: $h"
done
assert_eq 200 "$(code -H "Host: dbcron.example" -H "Authorization: Bearer $READER" /api/v1/jobs)" \
	"a configured name reads the API"
for h in "evil.example:$PORT" evil.example dbcron.example.evil.example localhost.evil.example \
	"127.0.0.1.evil.example" "[evil]:$PORT" "dbcron.example:x"; do
	assert_eq 403 "$(code -H "Host: $h" /healthz)" "GET /healthz with Host: $h"
done
assert_eq 403 "$(code -H "Host: evil.example" -H "Authorization: Bearer $ADMIN" /api/v1/jobs)" \
	"a foreign name is refused even with a token"
assert_eq forbidden "$(jq -r .error.code "$T_DIR/.body")"
assert_contains "$(jq -r .error.message "$T_DIR/.body")" "--http-host"
# the threat itself: a token-less server, whose reads are open
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 2>"$T_DIR/serve.log"
SERVE=$T_BG_PID
wait_until 120 has_port "$T_DIR/serve.log" || { cat "$T_DIR/serve.log"; exit 1; }
NODE_PORT=$PORT
PORT=$(port_of "$T_DIR/serve.log")
assert_eq 403 "$(code -H "Host: rebound.evil.example:$PORT" /api/v1/jobs)" \
	"a rebound name cannot read a token-less server's jobs"
assert_not_contains "$(cat "$T_DIR/.body")" "quiet" "no job in the refusal"
assert_eq 200 "$(code /api/v1/jobs)" "the server's own address reads them"
kill "$SERVE"
wait "$SERVE" 2>/dev/null || true
PORT=$NODE_PORT

t_section "a body is refused on the headers, before it is read"
# The headers announce 8 MiB and no byte of it is ever sent: the answer
# must come without the body (before, the server waited for it and then
# closed the connection at its idle timeout without an answer).
unread() { # PORT AUTH-HEADER-OR-EMPTY EXTRA-HEADER: the status line
	python3 - "$@" <<'EOF'
import socket, sys
port, auth = int(sys.argv[1]), sys.argv[2]
extra = sys.argv[3].replace("\\r\\n", "\r\n")
s = socket.create_connection(("127.0.0.1", port))
head = "POST /api/v1/apply HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
if auth:
    head += "Authorization: Bearer " + auth + "\r\n"
head += extra + "\r\n\r\n"
s.sendall(head.encode())
s.settimeout(60)
data = b""
try:
    while b"\r\n" not in data:
        got = s.recv(4096)
        if not got:
            break
        data += got
except OSError:
    pass
print(data.split(b"\r\n")[0].decode(errors="replace") or "no answer")
EOF
}
assert_match "$(unread "$PORT" "" "Content-Length: 8388608")" "^HTTP/1.1 401" \
	"no token: 401 before the body"
assert_match "$(unread "$PORT" wrong-token-0123456789abcdef "Content-Length: 8388608")" "^HTTP/1.1 401" \
	"an unknown token: 401 before the body"
assert_match "$(unread "$PORT" "$READER" "Content-Length: 8388608")" "^HTTP/1.1 403" \
	"a read token: 403 before the body"
assert_match "$(unread "$PORT" "" "Transfer-Encoding: chunked")" "^HTTP/1.1 401" \
	"a chunked body without a token: 401 before the body"
assert_match "$(unread "$PORT" "" "Expect: 100-continue\r\nContent-Length: 1000")" "^HTTP/1.1 401" \
	"no 100 Continue for a request without a token"
# an admin's body is read as before
printf '[{"name": "viaapi", "every": "1h", "command": ["true"]}]' >"$T_DIR/apply.json"
assert_eq 200 "$(code -X POST -H "Authorization: Bearer $ADMIN" --data-binary @"$T_DIR/apply.json" \
	/api/v1/apply)" "an admin's body is read"
assert_eq 1 "$(jq -r .created "$T_DIR/.body")"

t_section "slow clients never stop /healthz, /metrics or an authenticated client"
# drip PORT N STATUS-FILE: N connections, each sending one header line every
# 2 s and never ending its request; STATUS-FILE says how many are open and
# how many the server closed.  Runs until killed.
cat >"$T_DIR/drip.py" <<'EOF'
import os, select, socket, sys, time
port, n, status = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    socks.append(s)
closed = set()
while True:
    for s in socks:
        if s in closed:
            continue
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            closed.add(s)
    end = time.monotonic() + 2
    while time.monotonic() < end:
        live = [s for s in socks if s not in closed]
        r = select.select(live, [], [], max(0, end - time.monotonic()))[0] if live else []
        if not live:
            time.sleep(max(0, end - time.monotonic()))
        for s in r:
            try:
                if not s.recv(4096):
                    closed.add(s)
            except OSError:
                closed.add(s)
    with open(status + ".tmp", "w") as f:
        f.write("%d %d\n" % (n, len(closed)))
    os.replace(status + ".tmp", status)
EOF
drip_closed() { awk '{ print $2 }' "$1" 2>/dev/null; }
drip_ready() { [ -s "$1" ]; }
all_served() { # what is checked while the slow clients are connected
	assert_eq 200 "$(code /healthz)" "/healthz $1"
	assert_eq 200 "$(code -H "Authorization: Bearer $READER" /metrics)" "/metrics $1"
	assert_eq 200 "$(code -H "Authorization: Bearer $ADMIN" /api/v1/jobs/quiet)" \
		"an authenticated read $1"
	assert_eq 201 "$(code -X POST -H "Authorization: Bearer $ADMIN" /api/v1/jobs/quiet/trigger)" \
		"an authenticated write $1"
}
# 64 slow clients: as many as held every connection of the server before
t_bg python3 "$T_DIR/drip.py" "$PORT" 64 "$T_DIR/drip1"
DRIP1=$T_BG_PID
wait_until 120 drip_ready "$T_DIR/drip1" || _t_fail "the 64 slow clients did not start"
all_served "while 64 slow clients are connected"
assert_eq 0 "$(drip_closed "$T_DIR/drip1")" "64 slow clients are not many: none was closed"
# An authenticated client's kept-alive connection, asking every 5 s (under
# the 15 s idle timeout), must not be among those closed below.
cat >"$T_DIR/keepalive.py" <<'EOF'
import os, socket, sys, time
port, token, status, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(30)
req = ("GET /api/v1/jobs/quiet HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       "Authorization: Bearer %s\r\n\r\n" % token).encode()
answered = 0
def say(what):
    with open(status + ".tmp", "w") as f:
        f.write(what + "\n")
    os.replace(status + ".tmp", status)
while True:
    try:
        s.sendall(req)
        data = b""
        while b"\r\n\r\n" not in data:
            got = s.recv(65536)
            if not got:
                raise OSError("closed by the server")
            data += got
        head, _, rest = data.partition(b"\r\n\r\n")
        n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0]
        while len(rest) < n:
            got = s.recv(65536)
            if not got:
                raise OSError("closed by the server")
            rest += got
        if not head.startswith(b"HTTP/1.1 200"):
            raise OSError(head.split(b"\r\n")[0].decode())
        answered += 1
    except OSError as e:
        say("lost after %d answers: %s" % (answered, e))
        sys.exit(1)
    say("answered %d" % answered)
    if os.path.exists(stop):
        sys.exit(0)
    time.sleep(5)
EOF
t_bg python3 "$T_DIR/keepalive.py" "$PORT" "$READER" "$T_DIR/keepalive" "$T_DIR/keepalive.stop"
KEEP=$T_BG_PID
wait_until 120 drip_ready "$T_DIR/keepalive" || _t_fail "the kept-alive client did not start"
# 300 more: more than may wait at once (half the 256 connections), so the
# oldest waiting ones are closed as new ones come
t_bg python3 "$T_DIR/drip.py" "$PORT" 300 "$T_DIR/drip2"
DRIP2=$T_BG_PID
wait_until 120 drip_ready "$T_DIR/drip2" || _t_fail "the 300 slow clients did not start"
evicted() { [ $(($(drip_closed "$T_DIR/drip1") + $(drip_closed "$T_DIR/drip2"))) -ge $((364 - 128)) ]; }
wait_until 120 evicted || _t_fail "the server did not close the oldest slow clients" \
	"closed: $(drip_closed "$T_DIR/drip1") of 64 and $(drip_closed "$T_DIR/drip2") of 300"
all_served "while 364 slow clients keep connecting and sending"
# the slow clients that are left are still connected and sending
assert_eq 1 "$([ "$(drip_closed "$T_DIR/drip2")" -lt 300 ] && echo 1 || echo 0)" \
	"some slow clients are still connected (the checks ran among them)"
touch "$T_DIR/keepalive.stop"
wait "$KEEP" 2>/dev/null || true
assert_match "$(cat "$T_DIR/keepalive")" "^answered [0-9]+$" \
	"an authenticated client's kept-alive connection is never pushed out by slow clients"
kill "$DRIP1" "$DRIP2"
wait "$DRIP1" "$DRIP2" 2>/dev/null || true
wait_until 120 curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$PORT/healthz" ||
	_t_fail "not served once the slow clients are gone"

t_section "the token file is a secret: no job's env-file may be it"
expect_rc 0 job add steal --at now --env-file "$T_DIR/tokens" -- sh -c 'echo "got:$LEAK"'
steal_ended() { "$DBCRON_BIN" runs --job steal --format json --limit 0 |
	jq -e '[.[] | select(.state != "scheduled" and .state != "running")] | length > 0' >/dev/null; }
wait_until 120 steal_ended || _t_fail "the job's run did not end"
run=$("$DBCRON_BIN" runs --job steal --format json --limit 0 | jq -c '.[0]')
assert_eq failed "$(jq -r .state <<<"$run")" "a job whose env-file is the token file fails"
assert_contains "$(jq -r .error <<<"$run")" \
	"env-file '$T_DIR/tokens': the node keeps its own API tokens there"
id=$(jq -r .id <<<"$run")
assert_not_contains "$("$DBCRON_BIN" runs show "$id" 2>&1 || true)" "leaked-token" \
	"the token reached no job"

t_section "trigger of a paused job says the run waits for the resume"
expect_rc 0 job add later --every 1h -- true
expect_rc 0 job pause later
assert_eq 201 "$(code -X POST -H "Authorization: Bearer $ADMIN" /api/v1/jobs/later/trigger)"
assert_eq true "$(jq -r .paused "$T_DIR/.body")" "the answer says paused"
assert_contains "$(jq -r .warning "$T_DIR/.body")" "is paused: run"
assert_contains "$(jq -r .warning "$T_DIR/.body")" "waits until it is resumed"
expect_rc 0 job trigger later
assert_contains "$T_OUT" "the job is paused: the run waits until it is resumed"
expect_rc 0 job resume later
assert_eq 201 "$(code -X POST -H "Authorization: Bearer $ADMIN" /api/v1/jobs/later/trigger)"
assert_eq "false null" "$(jq -r '"\(.paused) \(.warning)"' "$T_DIR/.body")" "an active job: no warning"
expect_rc 0 job trigger later
assert_not_contains "$T_OUT" "paused"

t_done
