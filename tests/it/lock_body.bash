# dbcron lock on one backend (sourced by lock_sqlite.sh / lock_pg.sh):
# mutual exclusion with 2 and 10 contenders, a holder frozen past its ttl,
# a holder killed with SIGKILL, renewal of a long command, exit statuses,
# and bad input.  What ran is counted from files the commands write.
source "$(dirname "$0")/nodelib.bash"
use_backend "$1"

# --- bad input: clear error, exit 2, nothing written -------------------
expect_usage() {
  local out rc=0
  out=$("$DBCRON_BIN" lock "$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "lock $*: exit $rc, want 2 ($out)"
  [ -n "$out" ] || fail "lock $*: no message"
  pass "bad input rejected: lock $* -> $out"
}
expect_usage L --ttl 0s -- true
expect_usage L --ttl -1s -- true
expect_usage "" -- true
expect_usage L
expect_usage L --
expect_usage L --bogus -- true
assert_eq "$(dbc locks --format csv | tail -n +2 | wc -l)" 0 "bad input wrote no lock row"

# --- exit status passes through; env has name and fence -----------------
rc=0; dbc lock st -- sh -c 'echo "$DBCRON_LOCK $DBCRON_LOCK_FENCE" > '"$T/env"'; exit 7' || rc=$?
assert_eq "$rc" 7 "command's exit status passes through"
read -r lname lfence < "$T/env"
assert_eq "$lname" st "DBCRON_LOCK in the environment"
[ "$lfence" -ge 1 ] || fail "DBCRON_LOCK_FENCE: $lfence"
pass "DBCRON_LOCK_FENCE in the environment ($lfence)"

# --- N contenders: exactly one runs ----------------------------------------
contend() {
  local n=$1 name=$2
  : > "$T/ran-$name"
  local pids=()
  for i in $(seq 1 "$n"); do
    "$DBCRON_BIN" lock "$name" --ttl 30s --owner "c$i" \
      -- sh -c 'echo "$DBCRON_LOCK_OWNER" >> '"$T/ran-$name"'; sleep 3' >/dev/null 2>&1 &
    pids+=($!)
  done
  local ok=0 held=0 other=0 rc
  for p in "${pids[@]}"; do
    rc=0; wait "$p" || rc=$?
    case $rc in 0) ok=$((ok + 1)) ;; 75) held=$((held + 1)) ;; *) other=$((other + 1)) ;; esac
  done
  assert_eq "$(wc -l < "$T/ran-$name")" 1 "$n contenders: the command ran exactly once"
  assert_eq "$ok:$held:$other" "1:$((n - 1)):0" "$n contenders: one exit 0, the rest exit 75"
  local skipped
  skipped=$(runs_csv --job "lock:$name" | awk -F, '$4 == "skipped"' | wc -l)
  assert_eq "$skipped" "$((n - 1))" "$n contenders: every refused attempt is a SKIPPED run"
}
contend 2 two
contend 10 ten

# --- held: clear message, exit 75 ---------------------------------------
"$DBCRON_BIN" lock busy --ttl 20s --owner holder -- sleep 3 >/dev/null 2>&1 &
hp=$!
sleep 1
rc=0; msg=$(dbc lock busy --owner other -- true 2>&1) || rc=$?
assert_eq "$rc" 75 "held lock: exit 75"
case "$msg" in *"held by holder until"*) pass "held lock: says who holds it and until when" ;;
*) fail "held lock message: $msg" ;; esac
# --wait: gets it once the holder is done
rc=0; dbc lock busy --owner waiter --wait 10s -- true || rc=$?
assert_eq "$rc" 0 "--wait acquires after the holder releases"
wait $hp

# --- a command longer than the ttl keeps its lease ----------------------
"$DBCRON_BIN" lock long --ttl 1s --owner long -- sleep 4 >/dev/null 2>&1 &
lp=$!
sleep 2.5
rc=0; dbc lock long --owner late -- true >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 75 "lease renewed while a command runs past its ttl"
wait $lp || fail "long holder failed"

# --- a holder frozen past its ttl ---------------------------------------
: > "$T/frozen"
"$DBCRON_BIN" lock fz --ttl 2s --owner A -- sh -c 'echo "A $DBCRON_LOCK_FENCE" >> '"$T/frozen"'; sleep 8; echo A-end >> '"$T/frozen" \
  >"$T/A.out" 2>&1 &
ap=$!
sleep 0.7
kill -STOP $ap
sleep 3
"$DBCRON_BIN" lock fz --ttl 20s --owner B -- sh -c 'echo "B $DBCRON_LOCK_FENCE" >> '"$T/frozen"'; sleep 5' >/dev/null 2>&1 &
bp=$!
sleep 1
kill -CONT $ap
rc=0; wait $ap || rc=$?
assert_eq "$rc" 76 "frozen holder: exit 76 (lease lost)"
grep -q "^A-end" "$T/frozen" && fail "frozen holder's command was not stopped"
pass "frozen holder's command got SIGTERM"
owner=$(dbc locks --format csv | awk -F, '$1 == "fz" { print $2 }')
assert_eq "$owner" B "resumed holder did not release the new holder's lock"
rc=0; wait $bp || rc=$?
assert_eq "$rc" 0 "new holder finished normally"
fa=$(awk '$1 == "A" { print $2 }' "$T/frozen"); fb=$(awk '$1 == "B" { print $2 }' "$T/frozen")
[ "$fb" -gt "$fa" ] || fail "fence did not grow: A=$fa B=$fb"
pass "fencing token grew ($fa -> $fb)"
runs_csv --job lock:fz | grep -q "lease lost" || fail "lost lease not recorded in the run log"
pass "lost lease recorded in the run log"

# --- a holder killed with SIGKILL: free after the ttl -------------------
"$DBCRON_BIN" lock kk --ttl 2s --owner K -- sleep 37 >/dev/null 2>&1 &
kp=$!
sleep 1
kill -KILL $kp
pkill -KILL -f "sleep 37" 2>/dev/null || true
rc=0; dbc lock kk --owner L -- true >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 75 "killed holder: still held until the ttl lapses"
sleep 2.2
rc=0; dbc lock kk --owner L -- true || rc=$?
assert_eq "$rc" 0 "killed holder: lock free after the ttl"
echo "lock ($1): all checks passed"
