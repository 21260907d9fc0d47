# dbcron lock on one backend (sourced by lock_sqlite.sh / lock_pg.sh):
# mutual exclusion with 2 and 10 contenders, a holder frozen past its ttl,
# a holder killed with SIGKILL, renewal of a long command, exit statuses,
# a lost lease stopping a whole process tree that ignores SIGTERM, signals
# passed on to the command's group, and bad input.  What ran is counted from files the commands write.
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
expect_usage $'bad\xffname' -- true          # not UTF-8: the run log could not hold "lock:NAME"
expect_usage "$(printf 'x%.0s' $(seq 201))" -- true   # longer than a stored name
expect_usage L
expect_usage L --
expect_usage L --bogus -- true
expect_usage L --kill-grace 0s -- true
expect_usage L --kill-grace soon -- true
assert_eq 0 "$(dbc locks --format csv | tail -n +2 | wc -l)" "bad input wrote no lock row"

# --- exit status passes through; env has name and fence -----------------
rc=0; dbc lock st -- sh -c 'echo "$DBCRON_LOCK $DBCRON_LOCK_FENCE" > '"$T/env"'; exit 7' || rc=$?
assert_eq 7 "$rc" "command's exit status passes through"
read -r lname lfence < "$T/env"
assert_eq st "$lname" "DBCRON_LOCK in the environment"
[ "$lfence" -ge 1 ] || fail "DBCRON_LOCK_FENCE: $lfence"
pass "DBCRON_LOCK_FENCE in the environment ($lfence)"

# A command below that must hold its lock until the test has looked holds
# it until the test makes a file (its loop: `until_file FILE`), rather than
# for a fixed time: a slow machine only waits longer, and a fast one does
# not wait for a sleep to run out.  At exit, also after a failed check, every such
# command ends (.end), so none outlives the test holding its output open.
until_file() { echo "until [ -e '$1' ] || [ -e '$T/.end' ] || [ ! -d '$T' ]; do sleep 0.1; done"; }
_lock_end() { touch "$T/.end" 2>/dev/null || true; }
t_on_exit _lock_end

# --- N contenders: exactly one runs ----------------------------------------
# The one that wins holds the lock until every other one has made its
# attempt and ended (or a second one ran, which the checks below report):
# a contender that starts late on a loaded machine still meets the lock held.
contend() {
  local n=$1 name=$2
  : > "$T/ran-$name"
  : > "$T/done-$name"
  local pids=()
  for i in $(seq 1 "$n"); do
    (
      rc=0
      "$DBCRON_BIN" lock "$name" --ttl 30s --owner "c$i" \
        -- sh -c 'echo "$DBCRON_LOCK_OWNER" >> '"$T/ran-$name; $(until_file "$T/go-$name")" \
        >/dev/null 2>&1 || rc=$?
      echo "$rc" >> "$T/done-$name"
      exit "$rc"
    ) &
    pids+=($!)
  done
  wait_until 120 sh -c "[ \$(wc -l < '$T/done-$name') -ge $((n - 1)) ] ||
    [ \$(wc -l < '$T/ran-$name') -ge 2 ]" || true
  touch "$T/go-$name"
  local ok=0 held=0 other=0 rc
  for p in "${pids[@]}"; do
    rc=0; wait "$p" || rc=$?
    case $rc in 0) ok=$((ok + 1)) ;; 75) held=$((held + 1)) ;; *) other=$((other + 1)) ;; esac
  done
  assert_eq 1 "$(wc -l < "$T/ran-$name")" "$n contenders: the command ran exactly once"
  assert_eq "1:$((n - 1)):0" "$ok:$held:$other" "$n contenders: one exit 0, the rest exit 75"
  local skipped
  skipped=$(runs_csv --job "lock:$name" | awk -F, '$4 == "skipped"' | wc -l)
  assert_eq "$((n - 1))" "$skipped" "$n contenders: every refused attempt is a SKIPPED run"
}
contend 2 two
contend 10 ten

# --- held: clear message, exit 75 ---------------------------------------
# Each holder below is waited for in `locks` (or in what its command
# wrote) before it is contended, so a slow start cannot turn into a
# contender that simply wins.
"$DBCRON_BIN" lock busy --ttl 20s --owner holder -- sh -c "$(until_file "$T/busy-go")" >/dev/null 2>&1 &
hp=$!
wait_until 120 sh -c "'$DBCRON_BIN' locks --format csv | grep -q '^busy,holder,.*,held\$'" ||
  fail "holder never took the lock: $(dbc locks --format csv)"
rc=0; msg=$(dbc lock busy --owner other -- true 2>&1) || rc=$?
assert_eq 75 "$rc" "held lock: exit 75"
case "$msg" in *"held by holder until"*) pass "held lock: says who holds it and until when" ;;
*) fail "held lock message: $msg" ;; esac
# --wait: still waiting a second on (without --wait it ends at once, as
# above), and gets the lock once the holder is done
dbc lock busy --owner waiter --wait 60s -- true &
wp=$!
t_pause 1
kill -0 "$wp" 2>/dev/null || fail "--wait did not wait for the held lock"
pass "--wait waits while the lock is held"
touch "$T/busy-go"
rc=0; wait "$wp" || rc=$?
assert_eq 0 "$rc" "--wait acquires after the holder releases"
wait $hp

# --- --held-exit N: the status a held lock gives, for scripts -----------
"$DBCRON_BIN" lock held2 --ttl 60s --owner holder2 -- sleep 300 >/dev/null 2>&1 &
hp=$!
wait_until 120 sh -c "'$DBCRON_BIN' locks --format csv | grep -q '^held2,holder2,.*,held\$'" ||
  fail "holder2 never took the lock: $(dbc locks --format csv)"
rc=0; dbc lock held2 --owner other --held-exit 0 -- true 2>/dev/null || rc=$?
assert_eq 0 "$rc" "--held-exit 0: a held lock exits 0"
rc=0; dbc lock held2 --owner other --held-exit 201 -- true 2>/dev/null || rc=$?
assert_eq 201 "$rc" "--held-exit 201: a held lock exits 201"
# a command's own 75 is not the held lock's status once --held-exit says so
rc=0; dbc lock free2 --held-exit 201 -- sh -c 'exit 75' || rc=$?
assert_eq 75 "$rc" "the command's own 75 passes through"
expect_usage held2 --held-exit 256 -- true
expect_usage held2 --held-exit -1 -- true
expect_usage held2 --held-exit x -- true
kill "$hp"; wait "$hp" 2>/dev/null || true

# --- a command longer than the ttl keeps its lease ----------------------
"$DBCRON_BIN" lock long --ttl 1s --owner long -- sh -c "touch '$T/long-in'; $(until_file "$T/long-go")" >/dev/null 2>&1 &
lp=$!
wait_until 120 test -e "$T/long-in" || fail "long holder never started its command"
sleep 2.5
rc=0; dbc lock long --owner late -- true >/dev/null 2>&1 || rc=$?
assert_eq 75 "$rc" "lease renewed while a command runs past its ttl"
touch "$T/long-go"
wait $lp || fail "long holder failed"

# --- a holder frozen past its ttl ---------------------------------------
: > "$T/frozen"
"$DBCRON_BIN" lock fz --ttl 2s --owner A -- sh -c 'echo "A $DBCRON_LOCK_FENCE" >> '"$T/frozen"'; sleep 8; echo A-end >> '"$T/frozen" \
  >"$T/A.out" 2>&1 &
ap=$!
wait_until 120 grep -q "^A " "$T/frozen" || fail "holder A never started its command"
kill -STOP $ap
sleep 3
"$DBCRON_BIN" lock fz --ttl 20s --owner B -- sh -c 'echo "B $DBCRON_LOCK_FENCE" >> '"$T/frozen; $(until_file "$T/fz-go")" >/dev/null 2>&1 &
bp=$!
wait_until 120 grep -q "^B " "$T/frozen" || fail "holder B never took the expired lock"
kill -CONT $ap
rc=0; wait $ap || rc=$?
assert_eq 76 "$rc" "frozen holder: exit 76 (lease lost)"
grep -q "^A-end" "$T/frozen" && fail "frozen holder's command was not stopped"
pass "frozen holder's command got SIGTERM"
owner=$(dbc locks --format csv | awk -F, '$1 == "fz" { print $2 }')
assert_eq B "$owner" "resumed holder did not release the new holder's lock"
touch "$T/fz-go"
rc=0; wait $bp || rc=$?
assert_eq 0 "$rc" "new holder finished normally"
fa=$(awk '$1 == "A" { print $2 }' "$T/frozen"); fb=$(awk '$1 == "B" { print $2 }' "$T/frozen")
[ "$fb" -gt "$fa" ] || fail "fence did not grow: A=$fa B=$fb"
pass "fencing token grew ($fa -> $fb)"
runs_csv --job lock:fz | grep -q "lease lost" || fail "lost lease not recorded in the run log"
pass "lost lease recorded in the run log"

# --- the command's process group --------------------------------------
# A pid counts as alive while kill -0 reaches it and it is not a zombie
# (an orphan's zombie waits for whatever PID 1 of the container does).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}
any_alive() { local p; for p in "$@"; do alive "$p" && return 0; done; return 1; }
none_alive() { ! any_alive "$@"; }
wait_gone() { # PID SECS: hang guard before a wait (SECS generous: a loaded machine is slow)
  local i=0
  while alive "$1"; do
    sleep 0.1; i=$((i + 1))
    [ $i -lt $(($2 * 10)) ] || {
      # what it waits on, for the next one to read (seen twice, not yet understood)
      echo "# pid $1: $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" >&2
      for t in /proc/"$1"/task/*; do
        echo "#   thread ${t##*/}: $(awk '/^State/ {print $2}' "$t/status" 2>/dev/null) in $(cat "$t/wchan" 2>/dev/null)" >&2
      done
      for f in "$T"/*.out; do echo "# $f: $(tail -c 400 "$f")" >&2; done
      dbc locks >&2 || true
      kill -KILL "$1"; fail "pid $1 still running after $2 s"; }
  done
}
wait_lines() { # FILE N: until FILE has N lines (hang guard 120 s)
  local i=0
  while [ "$(wc -l < "$1")" -lt "$2" ]; do
    sleep 0.05; i=$((i + 1)); [ $i -lt 2400 ] || fail "$1: fewer than $2 lines after 120 s"
  done
}

# Lease lost while the command runs a child that ignores SIGTERM and has
# started a grandchild: SIGTERM to the group, SIGKILL after the grace, and
# nothing of the group survives dbcron lock.  The leader ignores SIGTERM
# too, so only the SIGKILL can end it.
: > "$T/tree"
"$DBCRON_BIN" lock tree --ttl 2s --owner A --kill-grace 1s -- sh -c '
  trap "" TERM
  echo $$ >> "$1"
  (sleep 300 & echo $! >> "$1"; exec sleep 300) &
  echo $! >> "$1"
  while :; do sleep 1; done' sh "$T/tree" >"$T/tree.out" 2>&1 &
tp=$!
wait_lines "$T/tree" 3
mapfile -t tree < "$T/tree"
[ "$(ps -o pgid= -p "${tree[2]}" | tr -d ' ')" = "${tree[0]}" ] || fail "grandchild not in the command's group"
[ "$(ps -o pgid= -p "${tree[0]}" | tr -d ' ')" != "$(ps -o pgid= -p $tp | tr -d ' ')" ] ||
  fail "the command shares dbcron lock's process group"
pass "command in a process group of its own, grandchild in it"
kill -STOP $tp
sleep 3
# A is continued once B holds the lock (B's command says so), and B holds
# it until A is gone.
"$DBCRON_BIN" lock tree --ttl 20s --owner B -- sh -c "touch '$T/tree-B'; $(until_file "$T/tree-go")" >/dev/null 2>&1 &
bp=$!
wait_until 120 test -e "$T/tree-B" || fail "tree: B never took the expired lock"
kill -CONT $tp
wait_gone $tp 120
touch "$T/tree-go"
rc=0; wait $tp || rc=$?
assert_eq 76 "$rc" "tree: lease lost, exit 76"
grep -q "SIGKILL after 1s" "$T/tree.out" || fail "tree: no word of the SIGKILL to come: $(cat "$T/tree.out")"
# dbcron lock reaped the leader before exiting; the rest died of the same
# SIGKILL and only await their reaper.
i=0
until none_alive "${tree[@]}"; do
  sleep 0.1; i=$((i + 1))
  [ $i -lt 300 ] || fail "tree: still alive after dbcron lock exited: $(for p in "${tree[@]}"; do alive "$p" && echo "$p"; done)"
done
pass "tree: leader, child and grandchild (all ignoring SIGTERM) are gone"
runs_csv --job lock:tree | grep -q "lease lost" || fail "tree: lost lease not recorded"
pass "tree: lost lease recorded in the run log"
rc=0; wait $bp || rc=$?
assert_eq 0 "$rc" "tree: the new holder finished normally"

# SIGTERM to dbcron lock reaches the whole group (the background sleep of a
# non-interactive sh would not get it otherwise); the status is the
# command's, 128+15.
: > "$T/sig"
"$DBCRON_BIN" lock sigterm -- sh -c 'echo $$ >> "$1"; sleep 300 & echo $! >> "$1"; wait' sh "$T/sig" \
  >/dev/null 2>&1 &
sp=$!
wait_lines "$T/sig" 2
mapfile -t sig < "$T/sig"
kill -TERM $sp
wait_gone $sp 120
rc=0; wait $sp || rc=$?
assert_eq 143 "$rc" "SIGTERM to dbcron lock: the command's status, 128+15"
i=0
until none_alive "${sig[@]}"; do
  sleep 0.1; i=$((i + 1)); [ $i -lt 50 ] || fail "SIGTERM: the group survived dbcron lock"
done
pass "SIGTERM to dbcron lock: nothing of the group survives"
runs_csv --job lock:sigterm | grep -q "exited with status 143" || fail "SIGTERM: run not recorded"
pass "SIGTERM to dbcron lock: run recorded as exited with status 143"

# SIGINT (Ctrl-C) is passed on too, now that the command is not in the
# terminal's foreground group with us.
: > "$T/int"
"$DBCRON_BIN" lock sigint -- sh -c 'echo $$ >> "$1"; exec sleep 300' sh "$T/int" >/dev/null 2>&1 &
ip=$!
wait_lines "$T/int" 1
kill -INT $ip
wait_gone $ip 120
rc=0; wait $ip || rc=$?
assert_eq 130 "$rc" "SIGINT to dbcron lock: the command's status, 128+2"

# --- a holder killed with SIGKILL: free after the ttl -------------------
"$DBCRON_BIN" lock kk --ttl 2s --owner K -- sh -c 'echo $$ > "$1"; exec sleep 37' sh "$T/kk.pid" >/dev/null 2>&1 &
kp=$!
wait_until 120 test -s "$T/kk.pid" || fail "killed holder: the command never started"
kill -KILL $kp
# its command only, not another test's: tests run side by side
kill -KILL "$(cat "$T/kk.pid")" 2>/dev/null || true
rc=0; dbc lock kk --owner L -- true >/dev/null 2>&1 || rc=$?
assert_eq 75 "$rc" "killed holder: still held until the ttl lapses"
sleep 2.2
rc=0; dbc lock kk --owner L -- true || rc=$?
assert_eq 0 "$rc" "killed holder: lock free after the ttl"
echo "lock ($1): all checks passed"
