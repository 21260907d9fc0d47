#!/usr/bin/env bash
# A node's log cannot be forged: jobs named with '"' and '=', and a missing
# command whose name holds a newline and a fake log line, still give one
# well-formed logfmt line per event, and no value adds a key or a line.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"
export LC_ALL=C

forged=$'/nonexistent/dbcron-x\nts=2020-01-01T00:00:00Z level=error event=forged job=evil'
dbc job add 'q"uote=1' --at now+1s --retries 0 -- sh -c 'exit 3' >/dev/null
dbc job add 'k=v' --at now+1s --retries 0 -- true >/dev/null
dbc job add nl --at now+1s --retries 0 -- "$forged" 'arg with "quotes"' >/dev/null

start_node n1 --log-runs
wait_until 120 bash -c '[ "$("$DBCRON_BIN" runs --format csv --limit 0 | grep -Ec ",(succeeded|failed),")" -ge 3 ]' ||
  fail "the three runs did not finish"
stop_node n1
log=$T/node-n1.log

# Every line is "ts=... level=... event=..." then key=value fields, each
# value bare (printable ASCII but = " \) or quoted with only \-escapes and
# no raw control byte.
bare='[]!#-<>-[^-~]+'
quoted='"([^"\\[:cntrl:]]|\\.)*"'
line_re="^ts=[0-9T:.Z-]+ level=(debug|info|warn|error) event=[A-Za-z0-9_.-]+( [A-Za-z0-9_.-]+=($bare|$quoted))*\$"
bad=$(grep -Evc -- "$line_re" "$log" || true)
if [ "$bad" != 0 ]; then
  grep -Ev -- "$line_re" "$log" >&2
  fail "$bad log lines are not well-formed logfmt"
fi
pass "every log line is well-formed ($(wc -l <"$log") lines)"

assert_eq 1 "$(grep -c 'forged' "$log" | tr -d ' ')" "the fake line is inside one value, not a line of its own"
assert_eq 0 "$(grep -c '^ts=2020' "$log" || true)" "no line starts with the forged timestamp"
assert_eq 1 "$(grep -c 'event=forged' "$log" || true)" "event=forged only as escaped text"
end_nl=$(grep -c '^ts=[^ ]* level=warn event=run.end job=nl ' "$log" || true)
assert_eq 1 "$end_nl" "one run.end line for the job whose command holds a newline"
grep -q '^ts=[^ ]* level=warn event=run.end job=nl .* error="[^"]*/nonexistent/dbcron-x\\nts=2020-01-01T00:00:00Z level=error event=forged job=evil' "$log" ||
  fail "the error keeps the newline as \\n inside its quoted value: $(grep 'job=nl' "$log")"
pass "the newline is escaped inside the quoted error"
grep -q 'event=run.start job="q\\"uote=1" fire_at=' "$log" || fail "the job name with a quote is quoted and escaped"
pass "a job name with '\"' and '=' is one quoted value"
grep -q 'event=run.end job="k=v" fire_at=' "$log" || fail "the job name with '=' is quoted"
pass "a job name with '=' cannot pose as a key"
# the fields of each run.end line are exactly the keys the code logs
keys=$(grep 'event=run.end job="q' "$log" | sed -E 's/"([^"\\]|\\.)*"/V/g; s/=[^ ]*//g')
assert_eq "ts level event job fire_at attempt run state took_ms error" "$keys" "run.end carries only its own keys"
echo "node_logfmt: all checks passed"
