#!/usr/bin/env bash
# One bad job never stops the others (docs/scheduler.md "Jobs set aside"):
# a job in a zone this host's tz database lacks, and a job whose row no
# longer decodes, are set aside with their reason, shown by `job list` and
# `job show`, logged by the node, and every other job keeps running.  A put
# of the job clears the mark.  SQLite or, given "pg", PostgreSQL.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

# A zone only one host has: the job is added where TZDIR holds it.
mkdir -p "$T/zones/Test"
cp /usr/share/zoneinfo/Europe/Berlin "$T/zones/Test/Zone"
TZDIR="$T/zones" dbc job add zoned --cron '* * * * * ?' --tz Test/Zone -- true >/dev/null
dbc job add broken --every 1s -- true >/dev/null
dbc job add good --every 1s --misfire skip -- sh -c "$RECORD" >/dev/null

# A row that no longer decodes: its command is not a JSON array any more.
sql "UPDATE jobs SET argv = '{not json' WHERE name = 'broken'" >/dev/null

start_node a
wait_until 120 sh -c "[ \$(wc -l 2>/dev/null < '$T/exec.log' || echo 0) -ge 4 ]" ||
  fail "the good job did not keep running beside the bad ones"
pass "the good job runs beside a job it cannot plan and one it cannot decode"

dbc job show zoned > "$T/zoned.txt"
grep -q "set aside: .*cannot plan: .*Test/Zone" "$T/zoned.txt" ||
  fail "job show does not say why zoned was set aside: $(cat "$T/zoned.txt")"
dbc job show broken > "$T/broken.txt" 2>&1 || true
dbc job list > "$T/list.txt"
grep -E "^zoned .*set aside" "$T/list.txt" >/dev/null || fail "job list does not mark zoned: $(cat "$T/list.txt")"
pass "job show and job list say the job is set aside, and why"
dbc job list --format json | grep -q '"set_aside": *"cannot decode its row' ||
  fail "job list --format json does not carry the decode reason: $(dbc job list --format json | head -c 600)"
pass "the undecodable job is set aside with its reason"
grep -q "event=job.set_aside job=zoned" "$T/node-a.log" || fail "the node did not log the set-aside zoned job"
pass "the node logs each job it sets aside"

# Fixing the job (a put through job apply) clears the mark; it runs again.
cat > "$T/fix.json" <<JSON
[{"name": "zoned", "cron": "* * * * * ?", "tz": "Europe/Berlin",
  "command": ["sh", "-c", "echo zoned >> $T/zoned.log"]}]
JSON
dbc job apply "$T/fix.json" >/dev/null
dbc job show zoned | grep -q "set aside" && fail "the fixed job is still set aside"
wait_until 120 test -s "$T/zoned.log" || fail "the fixed job does not run"
pass "a put of the job clears the mark and it runs"
stop_node a
echo "job_aside: all checks passed"
