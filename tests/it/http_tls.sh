#!/usr/bin/env bash
# HTTPS (--http-cert, --http-key: libmicrohttpd's GnuTLS): a certificate
# made here with openssl; `dbcron serve` and `dbcron node --http` answer
# over TLS to a client that trusts it, and not in plain HTTP on the same
# port; the flags come together and need --http; a missing file, a file
# that is not PEM and a key that does not match are refused at start,
# naming the file, before anything listens.
set -euo pipefail
source "$DBCRON_TESTLIB"
command -v openssl >/dev/null || t_skip "openssl is not installed"

export DBCRON_DB=sqlite:$T_DIR/t.db
expect_rc 0 init
expect_rc 0 job add tick --every 1h -- true
cert() { # NAME: a self-signed certificate for 127.0.0.1 and localhost
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$T_DIR/$1.key" -out "$T_DIR/$1.pem" 2>/dev/null
	chmod 600 "$T_DIR/$1.key"
}
cert a
cert b
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$1" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of "$1")" ]; }

t_section "dbcron serve over HTTPS"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --http-cert "$T_DIR/a.pem" --http-key "$T_DIR/a.key" \
	2>"$T_DIR/serve.log"
wait_until 120 has_port "$T_DIR/serve.log" || { cat "$T_DIR/serve.log"; fail "serve did not listen"; }
PORT=$(port_of "$T_DIR/serve.log")
assert_contains "$(cat "$T_DIR/serve.log")" "tls=yes" "the listen line says TLS"
got=$(curl -sS --cacert "$T_DIR/a.pem" "https://127.0.0.1:$PORT/api/v1/jobs" 2>&1 || true)
assert_contains "$got" '"tick"' "a client that trusts the certificate reads the jobs"
got=$(curl -sS --cacert "$T_DIR/a.pem" "https://localhost:$PORT/healthz" 2>&1 || true)
assert_eq "ok" "$got" "by the name localhost too"
rc=0
curl -sS --cacert "$T_DIR/b.pem" -o /dev/null "https://127.0.0.1:$PORT/healthz" 2>/dev/null || rc=$?
assert_ne 0 "$rc" "a client that trusts another certificate refuses it"
rc=0
curl -sS -m 10 -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null || rc=$?
assert_ne 0 "$rc" "plain HTTP on the HTTPS port is not served"
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_section "dbcron node --http over HTTPS"
t_bg "$DBCRON_BIN" node --node-id tls1 --http 127.0.0.1:0 --http-cert "$T_DIR/a.pem" \
	--http-key "$T_DIR/a.key" 2>"$T_DIR/node.log"
wait_until 120 has_port "$T_DIR/node.log" || { cat "$T_DIR/node.log"; fail "the node did not listen"; }
PORT=$(port_of "$T_DIR/node.log")
got=$(curl -sS --cacert "$T_DIR/a.pem" "https://127.0.0.1:$PORT/metrics" 2>&1 || true)
assert_contains "$got" "dbcron_build_info" "the node's /metrics over HTTPS"
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_section "refused at start, naming the file"
expect_rc 2 serve --http 127.0.0.1:0 --http-cert "$T_DIR/a.pem"
assert_contains "$T_ERR" "--http-cert and --http-key go together"
expect_rc 2 node --http-cert "$T_DIR/a.pem" --http-key "$T_DIR/a.key"
assert_contains "$T_ERR" "--http-cert needs --http"
expect_rc 2 serve --http 127.0.0.1:0 --http-cert "$T_DIR/none.pem" --http-key "$T_DIR/a.key"
assert_contains "$T_ERR" "--http-cert $T_DIR/none.pem: No such file or directory"
echo "not a certificate" >"$T_DIR/junk.pem"
expect_rc 2 serve --http 127.0.0.1:0 --http-cert "$T_DIR/junk.pem" --http-key "$T_DIR/a.key"
assert_contains "$T_ERR" "--http-cert $T_DIR/junk.pem: not a PEM file"
expect_rc 2 serve --http 127.0.0.1:0 --http-cert "$T_DIR/a.pem" --http-key "$T_DIR/b.key"
assert_contains "$T_ERR" "cannot serve HTTPS with --http-cert $T_DIR/a.pem and --http-key $T_DIR/b.key"
t_done
