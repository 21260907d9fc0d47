#!/usr/bin/env bash
# Exactly once through PostgreSQL failovers (issue 25): three nodes on a
# pg_auto_failover formation (scripts/pgaf-tmp.sh: a monitor, a primary and
# its synchronous standby, each data node in a network namespace of its
# own), every-second jobs, and the database's faults one after another:
#   switchover  pg_autoctl perform switchover (planned)
#   kill        kill -9 of the primary's postmaster (its keeper restarts it
#               in place: a database restart, no promotion)
#   freeze      every process of the primary (keeper and postgres) stopped
#               with SIGSTOP for $FAILOVER_HOLD s (default 30), then SIGCONT
#   blackhole   the primary's packets dropped both ways for $FAILOVER_HOLD s
#   skew+2      the standby's clock 2 s ahead (libfaketime), then a
#               switchover: the database's clock steps forward 2 s
#   skew-2      a switchover back to the unskewed node: it steps back 2 s
# Jobs: every-second shell jobs rec-* (at least once, the default) and
# amo-* (--node-loss abandon: at most once) append "JOB FIRE_AT_MS ATTEMPT
# NODE" to a file: what really ran.  Counted from that file and from the
# run log, never from dbcron's logs, for the fires of each fault's window
# (from the fault to the next one):
#   duplicate  a fire (job, fire_at) executed twice, for any reason: no
#              dbcron node died, so no retry of a lost run is excused
#   lost       an every-second instant with no run-log row: neither a run
#              nor covered by the missed count of a misfire run (a fire
#              found more than 5 s late is folded into one run by the
#              default misfire policy, fire_once, which records how many
#              it folded: DESIGN.md "Misfire"; folded fires are not lost)
#   abandoned  runs recorded ABANDONED (a node declared another dead);
#              none at all after a planned switchover
#   recovery   seconds from the promotion (the new primary's first report
#              of wait_primary/primary to the monitor; for kill, the
#              restarted postmaster's start) to the first fire started on
#              time (under 1 s late, by the database's clock): at most
#              15 s; and each node starts fires on time again after it
# Skipped (77) only when pg_auto_failover is not installed or the test is
# not root (namespaces) and DBCRON_REQUIRE_FAILOVER is unset; CI sets it.
set -euo pipefail
: "${DBCRON_BIN:?DBCRON_BIN must point at the dbcron binary}"
SRC=${DBCRON_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$(dirname "$0")/nodelib.bash"

need() {
  [ -z "${DBCRON_REQUIRE_FAILOVER:-}" ] || fail "$1 (and DBCRON_REQUIRE_FAILOVER is set)"
  t_skip "$1"
}
{ command -v pg_autoctl >/dev/null && [ -f /usr/lib/postgresql/15/lib/pgautofailover.so ]; } ||
  need "pg_auto_failover is not installed (bash scripts/deps.sh --with-failover)"
[ "$(id -u)" -eq 0 ] || need "not root: the data nodes live in network namespaces"
command -v faketime >/dev/null || need "libfaketime is not installed (package faketime)"

HOLD=${FAILOVER_HOLD:-30}
PGAF=$T/pgaf
pgaf() { bash "$SRC/scripts/pgaf-tmp.sh" "$1" "$PGAF" "${@:2}"; }
_pgaf_exit() {
  if [ "$1" -ne 0 ] && [ "$1" -ne 77 ] || [ "$T_FAILS" -gt 0 ]; then
    pgaf state >&2 2>/dev/null || true
  fi
  # its logs kept with the test's when the test's dir is kept
  cp "$PGAF"/*.log "$T/" 2>/dev/null || true
  pgaf stop >/dev/null 2>&1 || true
}
t_on_exit _pgaf_exit
now_ms() { date +%s%3N; }

t_section "formation"
chmod 755 "$T" # the servers run as postgres
t0=$(now_ms)
pgaf start >"$T/url" || fail "the pg_auto_failover formation did not start"
echo "formation ready in $(( ($(now_ms) - t0) / 1000 )) s: $(cat "$T/url")"
source "$PGAF/env"
export DBCRON_DB=$URL
mon() { psql "$MONITOR_URL" -XAtq -c "$1"; }
dbc init >/dev/null

rec='echo "$DBCRON_JOB $DBCRON_FIRE_AT_MS $DBCRON_ATTEMPT $DBCRON_NODE $(date +%s%3N)" >> '"$T/exec.log"
# overlap allow: every node takes the jobs' fires (with skip, the default,
# a job stays with the node holding its claimed next fire, issue 28 item 2,
# and "all three nodes scheduling" need not happen)
{
  every_jobs rec 8 1s '"overlap": "allow"' "$rec" | sed '$d'
  echo ","
  every_jobs amo 2 1s '"node_loss": "abandon", "overlap": "allow"' "$rec; sleep 0.5" | sed '1d'
} >"$T/jobs.json"
dbc job apply "$T/jobs.json" >/dev/null
# a small claim batch: ten fires a second need all three nodes.  A lease
# of 15 s: a switchover pauses writes for 4-9 s here, and a node that has
# gone 3/4 of its lease unrenewed stops its at-least-once runs
# (docs/cluster.md "Choose the lease above the failover's write pause")
for n in n1 n2 n3; do start_node $n --grace 5s --claim-batch 4 --lease 15s; done

# scheduling MS SKEW: every node has started, at or after MS (this
# machine's clock), a fire under 1 s late, with the database's clock SKEW
# ms ahead of this machine's (from what the jobs wrote)
scheduling() {
  [ -f "$T/exec.log" ] && [ "$(awk -v t="$1" -v s="${2:-0}" \
    'NF == 5 && $5 >= t && $5 - ($2 - s) < 1000 { print $4 }' "$T/exec.log" | sort -u | wc -l)" -eq 3 ]
}
wait_until 120 scheduling "$t0" || fail "the three nodes did not start scheduling"

# promoted_since MS OLD: when (epoch ms) a node other than OLD first
# reported itself promoted to the monitor after MS; nothing before that
promoted_since() {
  mon "select (extract(epoch from eventtime) * 1000)::bigint from pgautofailover.event
       where nodename <> 'node$2' and reportedstate in ('wait_primary', 'primary')
         and eventtime >= to_timestamp($1 / 1000.0) order by eventtime limit 1"
}
promoted() { [ -n "$(promoted_since "$@")" ]; }

# One fault: its name, when it began, the promotion, the clock skew of the
# database after it, in $T/faults.
# settled_primary WHAT: waits for a primary and its standby and prints the
# primary's node number (the monitor's view may change between two reads
# on a loaded machine, so both are read until they agree)
settled_primary() {
  local p _
  for _ in $(seq 1 180); do
    if pgaf ready && p=$(pgaf primary) && [ -n "$p" ]; then echo "$p"; return 0; fi
    t_pause 1
  done
  fail "$1: the formation is not back to a primary and its standby"
}
fault() {
  local name=$1 skew=${2:-0} old promo start sw="" p
  old=$(settled_primary "$name") || fail "$name: no settled primary"
  t_section "$name (primary node$old)"
  start=$(now_ms)
  case $name in
  switchover | skew*)
    pgaf switchover >"$T/switchover.log" 2>&1 &
    sw=$!
    ;;
  kill)
    kill -KILL "$(head -n 1 "$PGAF/node$old/postmaster.pid")"
    ;;
  freeze)
    # twice: a process forked while the first list was stopped
    for _ in 1 2; do
      pgaf pids "$old" >>"$T/frozen"
      for p in $(sort -u "$T/frozen"); do kill -STOP "$p" 2>/dev/null || true; done
    done
    ;;
  blackhole)
    pgaf cut "$old"
    ;;
  esac
  if [ "$name" = kill ]; then
    # the keeper restarts it in place; on a loaded machine the monitor may
    # fail over instead, so the primary is read until one answers: its
    # start, or the fault's time when it started before (a promotion)
    promo=""
    for _ in $(seq 1 240); do
      promo=$(psql "$URL" -XAtqc 'select (extract(epoch from pg_postmaster_start_time()) * 1000)::bigint' 2>/dev/null) &&
        [ -n "$promo" ] && break
      promo=""
      t_pause 0.5
    done
    [ -n "$promo" ] || fail "kill: no primary answered within 120 s"
    [ "$promo" -ge "$start" ] || promo=$start
  else
    wait_until 120 promoted "$start" "$old" || fail "$name: no standby was promoted"
    promo=$(promoted_since "$start" "$old")
  fi
  echo "$name: promoted $(( promo - start )) ms after the fault"
  case $name in
  freeze | blackhole)
    # held from the fault on: the old primary is out for HOLD seconds
    while [ "$(now_ms)" -lt $(( start + HOLD * 1000 )) ]; do t_pause 0.5; done
    if [ "$name" = freeze ]; then
      for p in $(sort -u "$T/frozen"); do kill -CONT "$p" 2>/dev/null || true; done
    else
      pgaf heal "$old"
    fi
    ;;
  esac
  wait_until 120 scheduling "$promo" "$skew" ||
    echo "$name: not every node scheduling again 120 s after the promotion" >&2
  [ -z "$sw" ] || wait "$sw" || echo "$name: pg_autoctl perform switchover failed: $(tail -n 3 "$T/switchover.log")" >&2
  echo "$name $start $promo $skew" >>"$T/faults"
}

fault switchover
fault kill
fault freeze
fault blackhole
# The standby's clock 2 s ahead, and the database moves to it: then back.
p=$(settled_primary "skew") || fail "skew: no settled primary"
pgaf skew "$(( 3 - p ))" +2
fault skew+2 2000
fault skew-2 0
wait_until 180 pgaf ready || true
# the fires due until now run before the nodes stop
t=$(now_ms)
wait_until 60 scheduling "$(( t + 1000 ))" || true
end=$(now_ms)
echo "end $end 0 0" >>"$T/faults"
stop_node n1 && stop_node n2 && stop_node n3

t_section "what ran"
runs_csv >"$T/runs.csv"
echo "runs: $(wc -l <"$T/runs.csv") rows, executions: $(wc -l <"$T/exec.log")"
python3 - "$T/runs.csv" "$T/exec.log" "$T/faults" >"$T/report" <<'PY'
import collections, sys
runs = [l.rstrip("\n").split(",") for l in open(sys.argv[1]) if l.strip()]
execs = [l.split() for l in open(sys.argv[2]) if len(l.split()) == 5]
faults = [l.split() for l in open(sys.argv[3])]
ran = collections.Counter((e[0], int(e[1])) for e in execs)
# every instant of each job from its first fire, covered by attempt-1 rows
# (a misfire run covers the fires it folded: its missed count)
covered, first = collections.defaultdict(set), {}
for r in runs:
    job, fire, attempt = r[0], int(r[1]), int(r[2])
    first[job] = min(first.get(job, fire), fire)
    if attempt == 1:
        for k in range(int(r[8] or 0) + 1):
            covered[job].add(fire + 1000 * k)
for i, (name, start, promo, skew) in enumerate(faults[:-1]):
    lo, hi = int(start), int(faults[i + 1][1])
    promo, skew = int(promo), int(skew)
    # fire times are the database's clock: skew ahead of this machine's
    dlo, dhi = lo + skew, hi + skew
    dups = sum(1 for (j, f), c in ran.items() if c > 1 and dlo <= f < dhi)
    lost = 0
    for job, f0 in first.items():
        f = f0 + ((dlo - f0) // 1000 + 1) * 1000 if dlo > f0 else f0
        while f < dhi - 3000 and f < int(faults[-1][1]) - 3000:
            if f not in covered[job]:
                lost += 1
                print("lost %s %d" % (job, f), file=sys.stderr)
            f += 1000
    aband = sum(1 for r in runs if r[3] == "abandoned" and dlo <= int(r[1]) < dhi)
    # the first fire started after the promotion under 1 s late, and each
    # node's first: from what the jobs wrote, when they started (this
    # machine's clock) against their fire time (the database's, skew ahead)
    ontime = sorted((int(e[4]), e[3]) for e in execs
                    if promo <= int(e[4]) < hi and int(e[4]) - (int(e[1]) - skew) < 1000)
    rec = (ontime[0][0] - promo) / 1000 if ontime else -1
    per_node = {}
    for t, node in ontime:
        per_node.setdefault(node, t)
    rec_all = (max(per_node.values()) - promo) / 1000 if len(per_node) == 3 else -1
    print(name, dups, lost, aband, "%.1f" % rec, "%.1f" % rec_all, len(per_node))
PY
printf '%-11s %4s %4s %9s %9s %9s\n' fault dups lost abandoned recovery all-nodes
while read -r name dups lost aband rec rec_all nodes; do
  printf '%-11s %4s %4s %9s %8ss %8ss\n' "$name" "$dups" "$lost" "$aband" "$rec" "$rec_all"
done <"$T/report"

while read -r name dups lost aband rec rec_all nodes; do
  t_section "$name"
  assert_eq 0 "$dups" "$name: no fire executed twice"
  assert_eq 0 "$lost" "$name: no fire lost"
  [ "$name" != switchover ] || assert_eq 0 "$aband" "$name: a planned switchover abandons nothing"
  assert_eq 3 "$nodes" "$name: every node starts fires on time again"
  if awk -v r="$rec" 'BEGIN { exit !(r >= 0 && r <= 15) }'; then
    pass "$name: fires on time ${rec} s after the promotion"
  else
    _t_fail "$name: fires on time again within 15 s of the promotion" "want: <= 15" "got:  $rec"
  fi
done <"$T/report"

t_section "the run log"
awk -F, '$4 == "succeeded" { print $1 " " $2 }' "$T/runs.csv" | sort -u >"$T/succ"
awk '{ print $1 " " $2 }' "$T/exec.log" | sort -u >"$T/ran"
assert_eq 0 "$(comm -23 "$T/succ" "$T/ran" | wc -l)" "every succeeded run was really executed"
assert_eq 0 "$(awk -F, '$4 == "running"' "$T/runs.csv" | wc -l)" "no run left RUNNING"
t_done
