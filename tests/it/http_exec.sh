#!/usr/bin/env bash
# HTTP jobs (issue 27 item 1) against a real local server the test starts
# (tests/tools/http_target.py): a call with a secret header from the
# env-file and run parameters in URL, header and body (the secret never in
# the job's row, job show, export or the run's output); a 500 that the
# retry policy retries; a timeout; a slow body; a large body kept head and
# tail; TLS with a test CA made here by openssl (verified, and refused
# without the CA); a cancel that stops the transfer; and bad input refused
# at add with nothing written.  On PostgreSQL (http_exec_pg.sh) the
# claim/run path only.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
BACKEND=${1:-sqlite}
command -v jq >/dev/null || fail "jq is required (scripts/deps.sh)"

state_of() { dbc runs show "$1" --format json | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
newest_run() { runs_csv --job "$1" | tail -n 1 | cut -d, -f11; }
# the state of attempt $2 of job $1's only fire ("" while there is none)
attempt_state() { runs_csv --job "$1" | awk -F, -v a="$2" '$3 == a {print $4}'; }
ended() { case "$(state_of "$1")" in scheduled | running) return 1 ;; esac; }
# start_target DIR PORTFILE [--tls CERT KEY]
start_target() {
	mkdir -p "$1"
	python3 "$DBCRON_SRC/tests/tools/http_target.py" "$@" &
	T_PIDS+=($!)
	wait_until 30 test -s "$2" || fail "the HTTP server did not start"
}

start_target "$T/req" "$T/port"
P=$(cat "$T/port")
U="http://127.0.0.1:$P"

if t_reference_backend "$BACKEND"; then
	t_section "bad input is refused at add, nothing written"
	t_refused "--http 'ftp://x/a': expected an http:// or https:// URL" \
		job add bad --every 1m --http GET ftp://x/a
	t_refused "--http 'http:///a': the URL has no host" job add bad --every 1m --http GET http:///a
	t_refused "--http 'http://a b': a URL has no spaces" job add bad --every 1m --http GET 'http://a b'
	t_refused "--http: unknown method 'FETCH' (expected GET, HEAD, POST" \
		job add bad --every 1m --http FETCH "$U/ok"
	t_refused "--http: expected METHOD URL" job add bad --every 1m --http GET
	t_refused "--http: job 'bad' takes no parameter 'nope' (it takes: who)" \
		job add bad --every 1m --params who --http GET "$U/ok/\${param.nope}"
	t_refused "--body: job 'bad' takes no parameter 'x'" \
		job add bad --every 1m --params who --http POST "$U/ok" --body 'a ${param.x}'
	t_refused '${TOKEN} comes from an env-file: give --env-file' \
		job add bad --every 1m --http GET "$U/ok" --header 'Authorization: Bearer ${TOKEN}'
	t_refused "--header 'no colon': expected 'Name: value'" \
		job add bad --every 1m --http GET "$U/ok" --header 'no colon'
	t_refused "--expect '99x': expected 2xx or status codes" \
		job add bad --every 1m --http GET "$U/ok" --expect 99x
	t_refused "--user is only for a command (an HTTP job runs inside the node)" \
		job add bad --every 1m --http GET "$U/ok" --user nobody
	t_refused "--header is only for --http" job add bad --every 1m --header 'A: b' -- true
	t_refused "both --http and a command after --: give one" \
		job add bad --every 1m --http GET "$U/ok" -- true
	printf '[{"name":"bad","every":"1m","http":"GET %s/${oops"}]\n' "$U" >"$T/bad.json"
	t_refused "key 'http': '\${oops': a placeholder without its '}'" job apply "$T/bad.json"
	assert_eq 0 "$(dbc job list --format json | jq length)" "no job written"

	t_section "job apply keys, job set replacing a command, export round trip"
	long=$(printf 'x%.0s' $(seq 900))
	printf '[{"name":"ap","every":"1h","http":"PUT %s/ok/ap","header":["X-Long: %s","X-B: 2"],"body":"b","expect":"200,204","ca_file":"/etc/ssl/certs/ca-certificates.crt"}]\n' \
		"$U" "$long" >"$T/ap.json"
	dbc job apply "$T/ap.json" >/dev/null || fail "apply of an HTTP job"
	show=$(dbc job show ap)
	assert_contains "$show" "http:              PUT $U/ok/ap"
	assert_contains "$show" "X-B: 2"
	assert_contains "$show" "expect:            200,204"
	dbc job export >"$T/export.json"
	assert_eq "$long" "$(jq -r '.[] | select(.name == "ap") | .header[0]' "$T/export.json" | cut -c9-)" \
		"a 900-byte header read back whole"
	out=$(dbc job apply "$T/export.json")
	assert_contains "$out" "unchanged"
	dbc job add sw --every 1h --user nobody --no-user-check -- true >/dev/null
	dbc job set sw --http GET "$U/ok/sw" >/dev/null || fail "job set --http on a command job"
	show=$(dbc job show sw)
	assert_contains "$show" "http:              GET $U/ok/sw"
	assert_not_contains "$show" "user:" "the command's user went with the command"
	dbc job set sw -- true >/dev/null || fail "job set -- COMMAND on an HTTP job"
	assert_not_contains "$(dbc job show sw)" "http:" "the call went with -- COMMAND"
	dbc job delete ap >/dev/null
	dbc job delete sw >/dev/null
fi

t_section "a call with a secret from the env-file and run parameters"
printf 'TOKEN=s3cret-value\n' >"$T/env"
dbc job add call --at now+1h --params who=nobody --env-file "$T/env" \
	--http POST "$U/ok/\${param.who}" --header 'Authorization: Bearer ${TOKEN}' \
	--header 'X-Who: ${param.who}' --body '{"who":"${param.who}"}' >/dev/null
dbc job add retry --at now+1h --retries 2 --retry-base 1s --http GET "$U/fail-once/r" >/dev/null
dbc job add late --at now+1h --retries 0 --timeout 1s --http GET "$U/slow/30" >/dev/null
dbc job add drip --at now+1h --retries 0 --timeout 20s --http GET "$U/drip/1.5" >/dev/null
dbc job add big --at now+1h --retries 0 --http GET "$U/big/100000" >/dev/null
dbc job add gone --at now+1h --retries 0 --http GET "$U/status/404" >/dev/null
dbc job add stuck --at now+1h --retries 2 --retry-base 1s --http GET "$U/slow/60" >/dev/null
start_node n1 --heartbeat 300ms
dbc job trigger call --param who=ann >/dev/null
run=$(newest_run call)
wait_until 60 ended "$run" || fail "call: did not end"
assert_eq succeeded "$(state_of "$run")" "call: succeeded"
req=$(grep -l "^POST /ok/ann" "$T"/req/*.req | head -1)
[ -n "$req" ] || fail "call: the server saw no POST /ok/ann"
assert_contains "$(cat "$req")" "Authorization: Bearer s3cret-value"
assert_contains "$(cat "$req")" "X-Who: ann"
assert_contains "$(cat "$req")" '{"who":"ann"}'
out=$(dbc runs show "$run" --format json)
assert_contains "$(jq -r .output <<<"$out")" "HTTP/1.1 200 OK"
assert_contains "$(jq -r .output <<<"$out")" "hello from /ok/ann"
for what in "job show call" "job export" "job list --format json" "runs show $run --format json"; do
	# shellcheck disable=SC2086
	assert_not_contains "$(dbc $what)" "s3cret" "the secret is not in: dbcron $what"
done
assert_not_contains "$(sql "SELECT * FROM jobs")" "s3cret" "the secret is not in the job's row"
assert_contains "$(dbc job show call)" 'Authorization: Bearer ${TOKEN}'

t_section "a 500 fails the run, the retry policy retries it"
dbc job trigger retry >/dev/null
retried() { [ "$(attempt_state retry 2)" = succeeded ]; }
wait_until 60 retried || fail "retry: attempt 2 did not succeed"
assert_eq failed "$(attempt_state retry 1)" "retry: attempt 1 failed"
assert_contains "$(runs_csv --job retry | head -1)" "HTTP 500 (expected 2xx)"

t_section "the job's timeout bounds the request; a slow body within it succeeds"
dbc job trigger late >/dev/null
dbc job trigger drip >/dev/null
dbc job trigger big >/dev/null
dbc job trigger gone >/dev/null
late_run=$(newest_run late) drip_run=$(newest_run drip) big_run=$(newest_run big)
gone_run=$(newest_run gone)
for r in "$late_run" "$drip_run" "$big_run" "$gone_run"; do
	wait_until 60 ended "$r" || fail "run $r did not end"
done
assert_eq timed_out "$(state_of "$late_run")" "late: timed out"
assert_contains "$(dbc runs show "$late_run" --format json | jq -r .error)" "timed out after 1s"
took=$(dbc runs show "$late_run" --format json | jq '.finished_ms - .started_ms')
assert_le "$took" 5000 "late: stopped by its 1s timeout (took $took ms), not the server's 30 s"
assert_eq succeeded "$(state_of "$drip_run")" "drip: a body sent over 1.5 s is read to its end"
assert_contains "$(dbc runs show "$drip_run" --format json | jq -r .output)" "drip9"
took=$(dbc runs show "$drip_run" --format json | jq '.finished_ms - .started_ms')
assert_ge "$took" 1300 "drip: the run lasted as long as the body (took $took ms)"
big_out=$(dbc runs show "$big_run" --format json | jq -r .output)
assert_contains "$big_out" "bytes omitted ...]"
assert_contains "$big_out" "ZZZZ"
assert_le "${#big_out}" 2400 "big: the output keeps the first and last KiB (${#big_out} bytes)"
assert_eq failed "$(state_of "$gone_run")" "gone: a 404 is not 2xx"
assert_contains "$(dbc runs show "$gone_run" --format json | jq -r .error)" "HTTP 404 (expected 2xx)"

t_section "cancel stops the transfer; the run ends cancelled, not retried"
dbc job trigger stuck >/dev/null
stuck_run=$(newest_run stuck)
wait_until 60 is_state "$stuck_run" running || fail "stuck: not running"
wait_until 30 sh -c "grep -l '^GET /slow/60' '$T'/req/*.req >/dev/null 2>&1" ||
	fail "stuck: the server did not see the request"
t0=$(date +%s%N)
dbc runs cancel "$stuck_run" >/dev/null
wait_until 30 is_state "$stuck_run" cancelled || fail "stuck: not cancelled"
took=$(( ($(date +%s%N) - t0) / 1000000 ))
assert_le "$took" 3000 "stuck: cancelled within a heartbeat and a poll (took $took ms)"
t_pause 1.5
assert_eq 1 "$(count_runs --job stuck)" "stuck: no retry after a cancel"

t_section "runs that wait on the server do not hold the claim back"
# 300 calls of two seconds each, due at one instant: a transfer does not
# keep a worker, so the claim sizes itself by what starts cost the workers
# (next to nothing), not by the calls' two seconds (8 workers would then
# take them in batches of a dozen: 40 s and more)
at=$(( $(date +%s) + 3 ))
python3 - "$U" "$at" >"$T/slow.json" <<'PY'
import json, sys
u, at = sys.argv[1], sys.argv[2]
print(json.dumps([{"name": "w%03d" % i, "at": at, "retries": 0, "http": "GET %s/slow/2" % u}
                  for i in range(300)]))
PY
dbc job apply "$T/slow.json" >/dev/null
all_ended() { [ "$(runs_csv | awk -F, '$1 ~ /^w[0-9]/ && $4 == "succeeded"' | grep -c .)" -eq 300 ]; }
wait_until 120 all_ended || fail "the 300 slow calls did not all succeed"
span=$(runs_csv | awk -F, '$1 ~ /^w[0-9]/ {print $2, $7}' |
	awk 'NR == 1 || $1 < lo {lo = $1} $2 > hi {hi = $2} END {print hi - lo}')
assert_le "$span" 12000 "300 calls of 2 s due at once ended within 12 s of their instant (${span} ms)"

if t_reference_backend "$BACKEND"; then
	t_section "TLS: verified against the job's CA file, refused without it"
	command -v openssl >/dev/null || fail "openssl is required (scripts/deps.sh)"
	(
		cd "$T" &&
			openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
				-subj "/CN=dbcron test CA" &&
			openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr \
				-subj "/CN=127.0.0.1" &&
			printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
			openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
				-out srv.pem -days 2 -extfile srv.ext
	) >/dev/null 2>&1 || fail "openssl could not make the test CA"
	start_target "$T/treq" "$T/tport" --tls "$T/srv.pem" "$T/srv.key"
	TU="https://127.0.0.1:$(cat "$T/tport")"
	dbc job add tls --at now+1h --retries 0 --ca-file "$T/ca.pem" --http GET "$TU/ok/tls" >/dev/null
	dbc job add untrusted --at now+1h --retries 0 --http GET "$TU/ok/no" >/dev/null
	dbc job trigger tls >/dev/null
	dbc job trigger untrusted >/dev/null
	tls_run=$(newest_run tls) un_run=$(newest_run untrusted)
	wait_until 60 ended "$tls_run" || fail "tls: did not end"
	wait_until 60 ended "$un_run" || fail "untrusted: did not end"
	assert_eq succeeded "$(state_of "$tls_run")" "tls: verified with the test CA"
	assert_contains "$(dbc runs show "$tls_run" --format json | jq -r .output)" "hello from /ok/tls"
	assert_eq failed "$(state_of "$un_run")" "untrusted: refused without the CA"
	assert_contains "$(dbc runs show "$un_run" --format json | jq -r .error)" "certificate"
fi

stop_node n1
t_done
