#!/usr/bin/env bash
# Every node (issue 28 item 6, docs/scheduler.md "Every node"): three real
# nodes run an --on-every-node job every second; each fire runs exactly once
# on each node that was live when the fire was claimed, with
# DBCRON_NODE_INDEX / DBCRON_NODE_TOTAL as the run log fixed them.  Then
# node b is killed with SIGKILL: a and c go on, every run that was b's
# ends ABANDONED (never retried, never run by another node), and once b's
# lease has lapsed the fires are a's and c's alone (total 2).  What ran is
# counted from what the job writes, one line per execution.  SQLite or,
# given "pg" / "mysql", PostgreSQL / MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

host=$(hostname)
rec='echo "$DBCRON_FIRE_AT_MS $DBCRON_NODE_INDEX $DBCRON_NODE_TOTAL $DBCRON_NODE '"$host"'" >> '"$T/exec.log"
dbc job add e --every 1s --on-every-node -- sh -c "$rec" >/dev/null
dbc job show e | grep -q '^on every node: *yes' || fail "job show does not say every node"

for n in a b c; do start_node "$n" --lease 2s; done
# lines "FIRE INDEX TOTAL NODE HOST"
full() { # TOTAL N: at least N fires of that total ran on each of their nodes
  awk -v t="$1" -v need="$2" '$3 == t { n[$1]++ } END { k = 0; for (f in n) if (n[f] == t) k++; exit k < need }' \
    "$T/exec.log" 2>/dev/null
}
wait_until 60 full 3 2 || fail "no fire ran on all three nodes"
pass "fires run on all three nodes"
kill -KILL "$(pid_of b)"
killed_at=$(date +%s%3N)
# after b's lease lapses the fires are a's and c's: three of them, each on both
wait_until 60 full 2 3 || fail "a and c did not go on alone"
pass "a and c go on once b's lease lapsed"
kill -TERM "$(pid_of a)" "$(pid_of c)"
stop_node a
stop_node c

sql "SELECT fire_at, attempt, coalesce(for_node, ''), node_index, node_total, state, coalesce(node, '') FROM runs WHERE job_name = 'e' ORDER BY fire_at, node_index" | tr '|' ' ' >"$T/runs.txt"
st() { # state name -> number as the run log keeps it
  case $1 in scheduled) echo 1 ;; running) echo 2 ;; succeeded) echo 3 ;; abandoned) echo 8 ;; esac
}

# 0. the views show each node's run of a fire
runs_json=$(dbc runs --job e --limit 0 --format json)
assert_contains "$runs_json" '"for_node":"b"' "runs --format json: the node a run is for"
assert_contains "$runs_json" '"node_total":3' "runs --format json: the fire's number of nodes"
assert_match "$(dbc runs --job e --limit 0)" ' b +1/3 ' "runs: the node column shows node index/total"

# 1. the database: each fire has one first attempt per node of its set,
# indexes 0..total-1 on distinct nodes, and nothing but first attempts
bad=$(awk '$2 != 1 || $5 < 1 { print "not a first every-node run: " $0; next }
  { k = $1; n[k]++; t[k] = $5; if (seen[k, $4]++) print "index twice: " $0; if (nd[k, $3]++) print "node twice: " $0 }
  END { for (k in n) if (n[k] != t[k]) print "fire " k ": " n[k] " runs of " t[k] }' "$T/runs.txt")
assert_eq "" "$bad" "one run per (fire, node of its set), indexes 0..total-1, no retry"

# 2. each succeeded run ran exactly once, on its node, with its index and
# total; nothing ran twice, and nothing ran that is not a succeeded run of
# that node, but for b's run at the kill (it may have started with its end
# lost with b: then it is abandoned, not run again)
awk -v s="$(st succeeded)" '$6 == s { print $1, $4, $5, $3 }' "$T/runs.txt" | sort >"$T/want"
awk -v a="$(st abandoned)" '$6 == a && $3 == "b" { print $1, $4, $5, $3 }' "$T/runs.txt" | sort >"$T/lost"
awk '{ print $1, $2, $3, $4 }' "$T/exec.log" | sort >"$T/got"
assert_eq "" "$(comm -23 "$T/want" "$T/got")" "every succeeded run ran"
assert_eq "" "$(uniq -d "$T/got")" "no (fire, node) ran twice"
assert_eq "" "$(sort -m "$T/want" "$T/lost" | comm -13 - "$T/got")" \
	"nothing ran but the nodes' own runs, with their index and total"
assert_eq "" "$(awk -v h="$host" '$5 != h' "$T/exec.log")" "the job wrote its host"

# 3. b's runs: none succeeded after the kill, none left waiting or running,
# and those after the kill ended abandoned (not moved: check 2 found no
# other node running b's index)
after=$(awk -v k="$killed_at" -v s="$(st succeeded)" '$3 == "b" && $1 > k + 1000 && $6 == s' "$T/runs.txt")
assert_eq "" "$after" "b ran nothing after its kill"
assert_eq "" "$(awk -v a="$(st scheduled)" -v r="$(st running)" '$6 == a || $6 == r' "$T/runs.txt")" \
	"no run left scheduled or running (b's lost, a's and c's stopped)"
nab=$(awk -v k="$killed_at" -v s="$(st abandoned)" '$3 == "b" && $1 > k && $6 == s' "$T/runs.txt" | wc -l)
assert_ge "$nab" 1 "b's runs after the kill ended abandoned"
assert_eq "" "$(awk -v s="$(st abandoned)" '$6 == s && $3 != "b" && $3 != "a" && $3 != "c"' "$T/runs.txt")" \
	"only the nodes' own runs are abandoned"

# 4. no fire was lost on the survivors: every fire from the first full one
# on, up to their stop, has a succeeded run for a and for c
first=$(awk '$3 == 3 { n[$1]++ } END { m = ""; for (f in n) if (n[f] == 3 && (m == "" || f + 0 < m)) m = f + 0; print m }' "$T/exec.log")
lost=$(awk -v f="$first" -v s="$(st succeeded)" '$1 >= f && ($3 == "a" || $3 == "c") { if ($6 == s) ok[$1, $3] = 1; fires[$1] = 1 }
  END { for (x in fires) { if (!((x, "a") in ok)) a++; if (!((x, "c") in ok)) c++ } print a + 0, c + 0 }' "$T/runs.txt")
# the last fire or two may have been claimed as the nodes stopped (abandoned by the stop)
set -- $lost
assert_le "$1" 2 "a ran every fire until its stop (missed: $1)"
assert_le "$2" 2 "c ran every fire until its stop (missed: $2)"
t_done
