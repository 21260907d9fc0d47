#!/usr/bin/env bash
# One node on SQLite: retries with backoff, timeouts that kill the whole
# process group, output capture, missing commands, the three overlap
# policies that matter, the three misfire policies, and a graceful stop.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

# --- misfire: jobs whose fires pile up while no node runs -------------
dbc job add mf-once --every 1s --misfire fire_once --misfire-threshold 1s -- true >/dev/null
dbc job add mf-skip --every 1s --misfire skip --misfire-threshold 1s -- true >/dev/null
dbc job add mf-catch --every 1s --misfire catch_up --max-catchup 3 --misfire-threshold 1s \
  -- sh -c 'echo "$DBCRON_FIRE_AT_MS" >> '"$T/catch.log" >/dev/null
# Eight seconds of fires that piled up while no node ran, made at once: the
# series moved 8 s into the past, on its own grid (anchor and next fire).
sql "UPDATE jobs SET anchor_ms = anchor_ms - 8000, next_fire_at = next_fire_at - 8000 WHERE name LIKE 'mf-%'" >/dev/null

# --- the rest start a second from now ---------------------------------
dbc job add retry --at now+1s --retries 2 --retry-base 1s -- false >/dev/null
dbc job add tmo --at now+1s --timeout 1s --retries 0 \
  -- sh -c 'sh -c "trap \"\" TERM; echo \$\$ > '"$T"'/gc.pid; sleep 60" & sleep 60' >/dev/null
dbc job add nocmd --at now+1s --retries 0 -- /nonexistent/dbcron-test-cmd >/dev/null
dbc job add chatty --at now+1s \
  -- sh -c 'echo BEGIN; head -c 200000 /dev/zero | tr "\0" x; echo; echo END' >/dev/null
dbc job add ov-skip --every 1s --overlap skip --misfire skip \
  -- sh -c 'echo "start $DBCRON_FIRE_AT_MS" >> '"$T/ovskip.log"'; sleep 2.5; echo end >> '"$T/ovskip.log" >/dev/null
dbc job add ov-queue --every 1s --overlap queue --misfire skip \
  -- sh -c 'echo start >> '"$T/ovqueue.log"'; sleep 1.3; echo end >> '"$T/ovqueue.log" >/dev/null
dbc job add ov-replace --every 2s --overlap replace --retries 0 --misfire skip -- sleep 30 >/dev/null
dbc job add env --at now+1s \
  -- sh -c 'echo "$DBCRON_JOB|$DBCRON_ATTEMPT|$DBCRON_NODE|$DBCRON_RUN_ID|$DBCRON_FIRE_AT_MS" > '"$T/env.out" >/dev/null

start_node n1 --grace 2s
# Until everything the checks below read has happened (the bound is a hang
# guard: a slow machine only takes longer).
n_of() { runs_where "$1" "$2" | wc -l; }
lines_of() { [ -f "$1" ] && grep -c "$2" "$1" || echo 0; }
all_done() {
  [ "$(n_of retry failed)" -ge 3 ] && [ "$(n_of tmo timed_out)" -ge 1 ] &&
    [ "$(n_of nocmd failed)" -ge 1 ] && [ "$(n_of chatty succeeded)" -ge 1 ] && [ -s "$T/env.out" ] &&
    [ "$(n_of ov-skip skipped)" -ge 2 ] && [ "$(lines_of "$T/ovqueue.log" end)" -ge 4 ] &&
    [ "$(runs_csv --job ov-replace | grep -c "replaced by a newer fire")" -ge 2 ] &&
    [ "$(n_of mf-catch succeeded)" -ge 3 ] && [ "$(n_of mf-once succeeded)" -ge 1 ]
}
wait_until 180 all_done || fail "the jobs did not get through their policies within 180 s"
stop_node n1

# --- retries: three attempts, backoff base 1 s then 2 s ----------------
assert_eq 3 "$(runs_where retry failed | wc -l)" "retry: 3 failed attempts (1 + 2 retries)"
attempts=$(runs_csv --job retry | cut -d, -f3 | sort -n | tr '\n' ' ')
assert_eq "1 2 3 " "$attempts" "retry: attempts numbered 1..3 for one fire"
assert_eq 1 "$(runs_csv --job retry | cut -d, -f2 | sort -u | wc -l)" "retry: all attempts share the fire instant"
# started(n+1) - finished(n) >= backoff (base * 2^(n-1)) and not absurdly later
runs_csv --job retry | sort -t, -k3n | awk -F, '
  NR > 1 { gap = $6 - prevfin; want = 1000 * 2^(NR - 2);
           if (gap < want) { print "attempt " $3 " started " gap " ms after the previous ended, backoff is " want; exit 1 }
           if (gap > want + 3000) { print "attempt " $3 " started " gap " ms after, backoff " want " (too late)"; exit 1 } }
  { prevfin = $7 }' || fail "retry: backoff not respected"
pass "retry: backoff 1 s, 2 s between attempts"
runs_csv --job retry | awk -F, '$8 != 1 { exit 1 }' || fail "retry: exit code 1 recorded"
pass "retry: exit code recorded"

# --- timeout: TIMED_OUT and the whole process group gone ----------------
assert_eq 1 "$(runs_where tmo timed_out | wc -l)" "timeout: run recorded timed_out"
[ -s "$T/gc.pid" ] || fail "timeout: grandchild never started"
gc=$(cat "$T/gc.pid")
if kill -0 "$gc" 2>/dev/null; then fail "timeout: grandchild $gc (ignores SIGTERM) still alive"; fi
pass "timeout: grandchild that ignores SIGTERM was killed with its group"

# --- a command that does not exist ------------------------------------
row=$(dbc runs --job nocmd --format csv --limit 0 | tail -n +2)
case "$row" in
*failed*"cannot execute"*) pass "missing command: failed with a clear error" ;;
*) fail "missing command: got '$row'" ;;
esac

# --- output capture: head and tail kept, middle omitted -----------------
out=$(dbc runs --job chatty --format json --limit 0)
case "$out" in *BEGIN*omitted*END*) pass "capture: first and last KiB kept, middle omitted" ;;
*) fail "capture: output not head+tail: ${out:0:300}" ;; esac
len=${#out}
assert_le "$len" 6000 "capture: stored output bounded"

# --- environment ---------------------------------------------------------
IFS='|' read -r ejob eatt enode erun efire < "$T/env.out"
assert_eq env "$ejob" "env: DBCRON_JOB"
assert_eq 1 "$eatt" "env: DBCRON_ATTEMPT"
assert_eq n1 "$enode" "env: DBCRON_NODE"
[ "$erun" -gt 0 ] && [ "$efire" -gt 1000000000000 ] || fail "env: run id / fire time: $erun $efire"
pass "env: DBCRON_RUN_ID and DBCRON_FIRE_AT_MS"

# --- overlap skip: skipped rows, and never two at once -----------------
assert_ge "$(runs_where ov-skip skipped | wc -l)" 2 "overlap skip: SKIPPED recorded"
awk '/^start/ { if (open) { print "overlap"; exit 1 } open = 1 } /^end/ { open = 0 }' "$T/ovskip.log" ||
  fail "overlap skip: two runs overlapped"
pass "overlap skip: runs never overlapped"

# --- overlap queue: nothing skipped, never two at once -----------------
assert_eq 0 "$(runs_where ov-queue skipped | wc -l)" "overlap queue: nothing skipped"
awk '/^start/ { if (open) exit 1; open = 1 } /^end/ { open = 0 }' "$T/ovqueue.log" ||
  fail "overlap queue: two runs overlapped"
assert_ge "$(grep -c start "$T/ovqueue.log")" 4 "overlap queue: queued fires ran one after another"

# --- overlap replace: the older run is stopped ---------------------------
replaced=$(runs_csv --job ov-replace | grep -c "replaced by a newer fire" || true)
assert_ge "$replaced" 2 "overlap replace: older runs stopped and recorded"

# --- misfire policies ------------------------------------------------------
once=$(runs_csv --job mf-once | awk -F, '$3 == 1 && $9 > 0' | wc -l)
assert_eq 1 "$once" "misfire fire_once: one run stands for the missed fires"
assert_eq 0 "$(runs_where mf-once misfired | wc -l)" "misfire fire_once: no misfired rows"
# One MISFIRED row stands for the piled-up fires, with their count; on a
# busy machine a later fire may also start over the threshold late and be
# recorded MISFIRED on its own (missed 0: "started too late").
assert_eq 1 "$(runs_where mf-skip misfired | awk -F, '$9 >= 1' | wc -l)" \
  "misfire skip: one MISFIRED record stands for the missed fires, with their count"
assert_eq 1 "$(runs_where mf-catch misfired | wc -l)" "catch_up: older missed fires recorded MISFIRED"
# The missed fires are those more than the threshold (1 s) old at the
# planner's now, which the MISFIRED row keeps as its finished time: of
# them, the newest max-catchup ran.  (A fire that merely started late on a
# busy machine is not one of them.)
tplan=$(runs_where mf-catch misfired | cut -d, -f7)
caught=$(runs_where mf-catch succeeded | awk -F, -v t="$tplan" '$2 < t - 1000' | wc -l)
assert_eq 3 "$caught" "catch_up: max-catchup (3) missed fires ran late"
runs_where mf-catch succeeded | cut -d, -f2 | sort > "$T/catch.db"
sort "$T/catch.log" > "$T/catch.ran"
cmp -s "$T/catch.db" "$T/catch.ran" || fail "catch_up: executions recorded by the job differ from the run log"
pass "catch_up: every succeeded run executed exactly once"
# no silent loss: every instant from the first fire to the last is accounted for
for j in mf-once mf-skip mf-catch; do
  runs_csv --job "$j" | awk -F, '$3 == 1 { n += 1 + $9; if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 }
    END { want = (max - min) / 1000 + 1; if (n != want) { print "accounted " n " of " want; exit 1 } }' ||
    fail "misfire $j: instants not all accounted for"
  pass "misfire $j: every instant is a run or a misfire record"
done

# --- graceful stop ------------------------------------------------------
assert_eq 0 "$(runs_csv | awk -F, '$4 == "running" || ($4 == "scheduled" && $5 != "")' | wc -l)" \
  "stop: nothing left running or claimed"
dbc nodes --format csv | grep -q "n1,.*stopped" || fail "stop: node not marked stopped: $(dbc nodes --format csv)"
pass "stop: node marked stopped"
echo "node_policies: all checks passed"
