#!/usr/bin/env bash
# A node's job processes die with the node (SQLite is enough: this is about
# processes, not the store).  A job starts a tree -- the shell, a background
# sleep, a subshell with a sleep of its own -- and writes every pid to a
# file; then its `dbcron node` is killed with SIGKILL and every process of
# the tree, and of the job's process group, must be gone within a hang guard.
# The same for `dbcron lock NAME -- sh -c ...` killed with SIGKILL.  A tree
# that ignores SIGTERM proves the SIGKILL after the grace.  With two nodes,
# the node-loss retry (attempt 2, on the surviving node) checks from inside
# that nothing of attempt 1 is still running when it starts.  Every case
# runs twice: guards in the dbcron-guard program, then forked from dbcron.
# No fixed sleeps decide anything: every wait polls for a state and the
# time limits are hang guards.
source "$(dirname "$0")/nodelib.bash"
IT_SECRET="env-only-$$-$RANDOM" # in the job's environment (its --env), nowhere else
use_backend sqlite

HANG_GUARD=${HANG_GUARD:-30}   # seconds; a working guard needs about the kill grace
FAILS=0

# Leftovers of a failed case are killed at exit, so a regression does not
# leave sleep 300 trees behind.
kill_leftovers() {
  local f p
  for f in "$T"/tree*; do
    [ -f "$f" ] || continue
    while read -r p; do
      case $p in '' | *[!0-9]*) continue ;; esac
      kill -KILL "$p" 2>/dev/null || true
    done < "$f"
  done
}
trap 'rc=$?; set +e; kill_leftovers; (exit $rc); cleanup' EXIT

# A pid counts as alive while kill -0 reaches it and it is not a zombie
# (an orphan's zombie waits for whatever PID 1 of the container does).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}
# Live members of process group $1 (pid and command), zombies left out.
group_members() {
  ps -eo pid=,pgid=,stat=,args= | awk -v g="$1" '$2 == g && $3 !~ /^Z/ { print }'
}
tree_alive() { # FILE: pids of the tree still alive, and live members of its group
  local p
  while read -r p; do alive "$p" && echo "pid $p"; done < "$1"
  group_members "$(head -n 1 "$1")"
}
wait_lines() { # FILE N: until FILE has N lines
  local i=0
  while [ "$(cat "$1" 2>/dev/null | wc -l)" -lt "$2" ]; do
    sleep 0.05; i=$((i + 1))
    [ $i -lt $((HANG_GUARD * 20)) ] || fail "$1: fewer than $2 lines after ${HANG_GUARD}s"
  done
}
# check_gone WHAT FILE: poll until nothing of the tree in FILE is alive.
# Counts a failure (and kills the survivors) instead of stopping, so that
# one run shows every case that is broken.
check_gone() {
  local what=$1 file=$2 end=$((SECONDS + HANG_GUARD)) left
  while left=$(tree_alive "$file"); [ -n "$left" ]; do
    if [ "$SECONDS" -ge "$end" ]; then
      echo "FAIL: $what: still running ${HANG_GUARD}s after the kill:" >&2
      echo "$left" | sed 's/^/    /' >&2
      FAILS=$((FAILS + 1))
      kill_leftovers
      return 1
    fi
    sleep 0.05
  done
  pass "$what: every process of the tree and of its group is gone"
}
now_ms() { date +%s%3N; }
# soft_eq GOT WANT MSG: like assert_eq, but counted in FAILS and the test goes on.
soft_eq() {
  if [ "$1" = "$2" ]; then
    pass "$3"
  else
    echo "FAIL: $3: expected '$2', got '$1'" >&2
    FAILS=$((FAILS + 1))
  fi
}
t_section() { echo "## $*"; }

# The tree: $$ (the group leader), a background sleep, a subshell whose
# own background sleep is a grandchild of the job; one pid per line in $f.
TREE='echo $$ >> "$f"
sleep 300 & echo $! >> "$f"
(sleep 300 & echo $! >> "$f"; exec sleep 300) & echo $! >> "$f"'
# Everything in it ignores SIGTERM (children inherit the ignored signal).
TREE_DEAF='f=$1
trap "" TERM
'"$TREE"'
while :; do sleep 1; done'

LOCK_TREE='f=$1
'"$TREE"'
wait'

# The guard of the job whose group is $1: "helper" when it is the
# dbcron-guard program, "fork" when it is a fork of dbcron.  A guard of
# its own is a member of the group; a shared one (a supervisor,
# docs/exec.md) is a dbcron-guard child of the job's parent, the node.
guard_kind() {
  local g node
  g=$(ps -eo pid=,pgid=,comm= | awk -v g="$1" '$2 == g && $3 == "dbcron-guard" { print $1; exit }')
  if [ -z "$g" ]; then
    node=$(ps -o ppid= -p "$1" | tr -d ' ')
    g=$(ps -eo pid=,ppid=,comm= | awk -v p="$node" '$2 == p && $3 == "dbcron-guard" { print $1; exit }')
  fi
  [ -n "$g" ] || { echo none; return; }
  case "$(readlink "/proc/$g/exe")" in
  */dbcron-guard) echo helper ;;
  */dbcron) echo fork ;;
  *) echo "other:$(readlink "/proc/$g/exe")" ;;
  esac
}

# cases MODE: every case once, with guards in the dbcron-guard program
# (MODE helper: the one next to the dbcron binary) or forked from dbcron
# (MODE fork: DBCRON_GUARD=fork, what a program without the helper gets).
cases() {
  local m=$1 victim survivor verdict lp t0
  if [ "$m" = fork ]; then export DBCRON_GUARD=fork; else unset DBCRON_GUARD; fi

  # --- a node killed with SIGKILL; the retry on the other node ----------
  # Attempt 1 writes its tree to tree-a-M.1; attempt 2 first looks whether
  # any of those pids is still alive and writes the verdict to retry-M.
  t_section "$m: node killed"
  dbc job add "death-$m" --at now+1s --env "IT_SECRET=$IT_SECRET" -- sh -c '
    f="$1.$DBCRON_ATTEMPT"
    if [ "$DBCRON_ATTEMPT" -gt 1 ]; then
      v=clean
      for p in $(cat "$1.1"); do
        if kill -0 "$p" 2>/dev/null && ! grep -q "^State:[[:space:]]*Z" "/proc/$p/status" 2>/dev/null; then
          v="overlap:$p"
        fi
      done
      echo "$v" > "$2"
    fi
    echo "$DBCRON_NODE" > "$f.node"
    '"$TREE"'
    wait' sh "$T/tree-a-$m" "$T/retry-$m" >/dev/null
  start_node "a1-$m" --grace 1s
  start_node "a2-$m" --grace 1s
  wait_lines "$T/tree-a-$m.1" 4
  victim=$(cat "$T/tree-a-$m.1.node")
  survivor="a1-$m"; [ "$victim" = "a1-$m" ] && survivor="a2-$m"
  for p in $(cat "$T/tree-a-$m.1"); do alive "$p" || fail "$m: tree pid $p not running before the kill"; done
  [ "$(ps -o pgid= -p "$(sed -n 2p "$T/tree-a-$m.1")" | tr -d ' ')" = "$(head -n 1 "$T/tree-a-$m.1")" ] ||
    fail "$m: the job's shell does not lead the tree's process group"
  pass "$m: tree of 4 running on $victim, in the job's own group"
  # The job's environment (which may hold secrets) is in no process's
  # argv, which every user can read: not the guard's either.
  leaked=""
  for f in /proc/[0-9]*/cmdline; do
    c=$(tr '\0' ' ' < "$f" 2>/dev/null) || continue
    [[ "$c" == *"$IT_SECRET"* ]] && leaked="$leaked ${f#/proc/}"
  done
  assert_eq "" "$leaked" "$m: the job's environment is in no process's command line"
  tr '\0' '\n' < "/proc/$(head -n 1 "$T/tree-a-$m.1")/environ" | grep -qx "IT_SECRET=$IT_SECRET" ||
    fail "$m: the job's --env is not in its environment (the check above proves nothing)"
  soft_eq "$(guard_kind "$(head -n 1 "$T/tree-a-$m.1")")" "$m" "$m: the job's guard is the one this mode uses"
  kill -KILL "$(pid_of "$victim")"
  check_gone "$m: node killed with SIGKILL" "$T/tree-a-$m.1" || true
  # The survivor takes the run over once the victim's lease lapses.
  wait_until "$HANG_GUARD" test -s "$T/retry-$m" || fail "$m: attempt 2 never started on $survivor"
  soft_eq "$(cat "$T/retry-$m")" clean "$m: nothing of attempt 1 was running when attempt 2 started"
  assert_eq "$survivor" "$(cat "$T/tree-a-$m.2.node")" "$m: attempt 2 ran on the surviving node"
  wait_lines "$T/tree-a-$m.2" 4
  stop_node "$survivor"
  check_gone "$m: graceful stop of the survivor" "$T/tree-a-$m.2" || true
  runs_csv --job "death-$m" | awk -F, '$3 == 1' | grep -q abandoned || fail "$m: attempt 1 not recorded abandoned"
  pass "$m: attempt 1 recorded abandoned"

  # --- a tree that ignores SIGTERM: only the SIGKILL after the grace ends it
  t_section "$m: node killed, tree deaf to SIGTERM"
  dbc job add "deaf-$m" --at now+1s -- sh -c "$TREE_DEAF" sh "$T/tree-b-$m" >/dev/null
  start_node "b-$m"
  wait_lines "$T/tree-b-$m" 4
  t0=$(now_ms)
  kill -KILL "$(pid_of "b-$m")"
  if check_gone "$m: node killed, tree ignoring SIGTERM" "$T/tree-b-$m"; then
    # Nothing in the tree dies of SIGTERM, so it cannot be gone before the
    # node's kill grace (2 s by default) has passed since the kill.
    assert_ge "$(($(now_ms) - t0))" 1900 "$m: the tree outlived SIGTERM until the SIGKILL (ms)"
  fi

  # --- dbcron lock killed with SIGKILL ------------------------------------
  t_section "$m: dbcron lock killed"
  "$DBCRON_BIN" lock "ld1-$m" --ttl 30s --kill-grace 1s -- sh -c "$LOCK_TREE" sh "$T/tree-c-$m" \
    >"$T/lock-c-$m.out" 2>&1 &
  lp=$!
  NODE_PIDS+=("$lp")
  wait_lines "$T/tree-c-$m" 4
  [ "$(ps -o pgid= -p "$(head -n 1 "$T/tree-c-$m")" | tr -d ' ')" != "$(ps -o pgid= -p "$lp" | tr -d ' ')" ] ||
    fail "$m: the command shares dbcron lock's process group"
  kill -KILL "$lp"
  check_gone "$m: dbcron lock killed with SIGKILL" "$T/tree-c-$m" || true

  "$DBCRON_BIN" lock "ld2-$m" --ttl 30s --kill-grace 1s -- sh -c "$TREE_DEAF" sh "$T/tree-d-$m" \
    >"$T/lock-d-$m.out" 2>&1 &
  lp=$!
  NODE_PIDS+=("$lp")
  wait_lines "$T/tree-d-$m" 4
  t0=$(now_ms)
  kill -KILL "$lp"
  if check_gone "$m: dbcron lock killed, tree ignoring SIGTERM" "$T/tree-d-$m"; then
    assert_ge "$(($(now_ms) - t0))" 900 "$m: the tree outlived SIGTERM until the SIGKILL after --kill-grace 1s (ms)"
  fi
}

cases helper
cases fork

[ "$FAILS" -eq 0 ] || fail "$FAILS check(s) failed"
echo "node_death: all checks passed"
