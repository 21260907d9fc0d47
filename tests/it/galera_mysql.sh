#!/usr/bin/env bash
# Two nodes on a three-member MariaDB Galera cluster (scripts/galera-tmp.sh),
# through a URL that lists the three members.  One node's session ended by
# the server: that node alone moves to the next member, and must come back
# (one writer member at a time).  Then the member the nodes write through is
# killed (kill -9), and, with it back (so that a quorum remains), the member
# they moved to is frozen (SIGSTOP, 20 s).  After each, the nodes write
# through another member within seconds and fires are on time again well
# before the thaw.  At the end no fire ran twice and none was lost (counted
# from the file the jobs append to and from the run log), both nodes renew
# their leases again, and each fault's recovery time (until after the last
# late fire) is printed.  Skipped when galera-4 or rsync is missing, unless
# DBCRON_REQUIRE_FAILOVER is set.
source "$(dirname "$0")/nodelib.bash"

if [ ! -f /usr/lib/galera/libgalera_smm.so ] || ! command -v rsync >/dev/null; then
  [ -z "${DBCRON_REQUIRE_FAILOVER:-}" ] || fail "galera-4 or rsync is missing (scripts/deps.sh)"
  t_skip "galera-4 (/usr/lib/galera/libgalera_smm.so) or rsync is not installed"
fi

# not under $T: the servers run as the mysql user, who cannot enter it
G=$(mktemp -d "${TMPDIR:-/tmp}/dbcron-galera.XXXXXX")
galera() { bash "$DBCRON_SRC/scripts/galera-tmp.sh" "$@"; }
_galera_exit() { galera stop "$G" >/dev/null 2>&1 || true; }
t_on_exit _galera_exit

t_section "cluster"
DBCRON_DB=$(galera start "$G")
export DBCRON_DB
echo "galera: $DBCRON_DB"
# member 1 (killed, then back before the freeze; never the frozen one)
g1() { mariadb --no-defaults -uroot --socket="$G/m1/sock" -N -B dbcron -e "$1"; }
dbc init >/dev/null
# a fire's line: job, fire time, attempt, node, and when it ran
J=6
every_jobs r $J 1s "" \
  'echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE $(date +%s%3N)" >> '"$T/exec.log" \
  > "$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
start_node m1
start_node m2
ran_since() { [ -f "$T/exec.log" ] && awk -v t="$1" '$2 >= t' "$T/exec.log" | grep -q .; }
wait_until 60 ran_since 0 || fail "no fire ran"

# the members the nodes are connected to, from each live member's process
# list (not from what dbcron records): "g2", or "g2 g3" while they differ
writer() {
  local i n out=""
  for i in 1 2 3; do
    n=$(timeout 3 mariadb --no-defaults -uroot --socket="$G/m$i/sock" -N -B -e \
      "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = 'dbcron' AND ID <> CONNECTION_ID()" \
      2>/dev/null) || n=0
    [ "${n:-0}" -gt 0 ] && out="$out g$i"
  done
  echo $out
}
writer_is() { [ "$(writer)" = "g$1" ]; }
writers_are() { [ "$(writer)" = "$1" ]; }
# recovery_ms FROM TO: ms from FROM until fires ran on time again: after
# the last fire due in (FROM, TO] that some job ran late (1 s or more after
# its time) or not at all; 0 when none was late
recovery_ms() {
  awk -v from="$1" -v to="$2" -v jobs=$J '
    $5 - $2 < 1000 { ok[$2]++ } { g = $2 % 1000 }
    END { last = ""
          for (t = from - from % 1000 + g; t <= to; t += 1000)
            if (t > from && ok[t] < jobs) last = t
          print last == "" ? 0 : last + 1000 - from }' "$T/exec.log"
}
# on_time_since T: the last 3 s of fires, all due after T, ran on time
on_time_since() {
  local now; now=$(date +%s%3N)
  [ $((now - 4200)) -ge "$1" ] && [ "$(recovery_ms $((now - 4200)) $((now - 1200)))" = 0 ]
}
# the member every node writes through, once all agree: "" while they do not
writer_now() { local w; w=$(writer); case "$w" in g[123]) echo "$w" ;; esac; }
moved_off() { local w; w=$(writer_now) && [ -n "$w" ] && [ "$w" != "g$1" ]; }

t_section "one writer member"
wait_until 30 writer_is 1 ||
  fail "the nodes do not write through member 1 (the URL's first): $(writer)"
# one node's session ended by the server: that node alone moves to member
# 2; seeing the other node on member 1, both stop claiming, and the one
# that moved comes back to the first host of its URL
my1() { mariadb --no-defaults -uroot --socket="$G/m1/sock" -N -B -e "$1"; }
t_split=$(date +%s%3N)
my1 "KILL $(my1 "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = 'dbcron' AND ID <> CONNECTION_ID() LIMIT 1")"
wait_until 20 writers_are "g1 g2" || fail "no node moved to member 2 alone: $(writer)"
wait_until 60 writer_is 1 || fail "the node on member 2 did not come back to member 1: $(writer)"
pass "a node that moved to another member alone came back to the URL's first"
wait_until 30 on_time_since "$t_split" || fail "fires not on time again after the split"
rec_split=$(recovery_ms "$t_split" "$(( $(date +%s%3N) - 1200 ))")
echo "fires on time again after the split: $rec_split ms"

t_section "kill -9 of the writer member"
t_kill=$(date +%s%3N)
galera kill "$G" 1
wait_until 90 moved_off 1 || fail "the nodes did not move to one other member: $(writer)"
pass "both nodes write through one other member"
wait_until 90 on_time_since "$t_kill" || fail "fires not on time again within 90 s of the kill"
# writer_now reads the members' process lists: "" for a moment while a
# session is being made again, so read until all agree
writer_settled() {
  local _
  for _ in $(seq 1 240); do
    w=$(writer_now)
    [ -n "$w" ] && return 0
    sleep 0.25
  done
  fail "$1: the nodes do not agree on one member: $(writer)"
}
writer_settled "after the kill"
echo "writer member after the kill: $w"
t_kill_end=$(date +%s%3N)
rec_kill=$(recovery_ms "$t_kill" "$((t_kill_end - 1200))")
# member 1 back, so that the freeze of any one member leaves a quorum (a
# full state transfer: its donor takes no writes meanwhile, and fires wait)
galera restart "$G" 1
t_back=$(date +%s%3N)

t_section "SIGSTOP of the writer member for 20 s"
wait_until 60 on_time_since "$t_back" || fail "fires not on time before the freeze"
rec_back=$(recovery_ms "$t_kill_end" "$(( $(date +%s%3N) - 1200 ))")
writer_settled "before the freeze"
m=${w#g}
t_stop=$(date +%s%3N)
kill -STOP "$(galera pid "$G" "$m")"
sleep 20
kill -CONT "$(galera pid "$G" "$m")"
t_cont=$(date +%s%3N)
wait_until 60 on_time_since "$t_cont" || fail "fires not on time again within 60 s of the thaw"
sleep 3
# both nodes hold a lease renewed after the thaw (a node claims only then;
# which one takes a second's fires is a race, so fires alone cannot tell)
beat=$(g1 "SELECT count(*) FROM nodes WHERE state = 'alive' AND heartbeat_ms > $t_cont + 2000")
assert_eq 2 "$beat" "both nodes renew their leases again after the thaw"
end_ms=$(date +%s%3N)
stop_node m1
stop_node m2
rec_stop=$(recovery_ms "$t_stop" "$((end_ms - 1500))")
echo "recovery after kill -9 of the writer member: $rec_kill ms"
echo "late fires while member 1 rejoined (state transfer): until $rec_back ms after it began"
echo "recovery after SIGSTOP (20 s) of the writer member: $rec_stop ms"
assert_le "$rec_stop" 15000 "fires on time again within 15 s of the freeze, not at the thaw"

t_section "counts"
runs_csv > "$T/runs.csv"
check_no_dup_exec "$T/runs.csv"
dups=$(awk '{ print $1, $2 }' "$T/exec.log" | sort | uniq -d | wc -l)
assert_eq 0 "$dups" "no fire executed twice (not even a retry of an abandoned run)"
check_no_loss "$T/runs.csv" r $J "$end_ms"
echo "galera_mysql: recovery split=${rec_split} ms kill=${rec_kill} ms stop=${rec_stop} ms"
t_done
