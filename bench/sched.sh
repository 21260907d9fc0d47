#!/usr/bin/env bash
# Scheduler benchmarks.  They report; they never fail on a figure.
#   bench/sched.sh w1 BACKEND JOBS NODES SECONDS   every-second storm
#   bench/sched.sh w2 BACKEND JOBS NODES           queue drain of one-shot jobs
#   bench/sched.sh w3 BACKEND                      failover: kill -9 one of three nodes
#   bench/sched.sh w4 BACKEND JOBS PER_MIN MINUTES a large table: JOBS daily cron
#                                                  jobs, PER_MIN of them due each minute;
#                                                  the node's RSS and claim time;
#                                                  W4_LEAD (default 90 s): the first
#                                                  fires' distance from the start,
#                                                  longer than the apply takes
# W2_REACT=1 gives every W2 job an --on-failure webhook (to a closed local
# port; the jobs succeed, so none is raised): the cost of carrying a
# reaction through the claim and the outcome batch write (issue 26 item 4).
# W1_RUNS_OUT=FILE keeps W1's steady-state runs (the CSV of `dbcron runs`)
# for bench/w1_tail.sh, which splits the lateness into its parts.
# W1_SHELL=1 makes the W1 jobs shell jobs running `true` instead of the noop
# handler (the cost of spawning a process per run); W1_FLAGS adds node flags
# to W1, BENCH_NODE_FLAGS to every mode (e.g. "--claim-strategy lock-row").
# BACKEND is sqlite, pg or mysql (pg needs DBCRON_TEST_PG, mysql
# DBCRON_TEST_MYSQL, see bench/run.sh).
# Figures come from the runs table (dbcron runs --format csv) and the nodes'
# own statement counters (the node.stop log line); CPU per execution from
# /proc: the nodes' (node_cpu_us_per_exec) and, for W1 and W2 on a server
# running on this machine, the database server's (db_cpu_us_per_exec).
set -euo pipefail
bin=${DBCRON_BIN:-build/bin/dbcron}
mode=$1 backend=$2
T=$(mktemp -d /tmp/dbcron-bench.XXXXXX)
PIDS=()
PGDB=""
MYDB=""
source "$(dirname "$0")/my_client.bash"
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$PGDB" ] && psql "$DBCRON_TEST_PG" -qAt -c "drop database if exists $PGDB with (force)" >/dev/null 2>&1 || true
  [ -n "$MYDB" ] && my_client -e "drop database if exists $MYDB" >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT

case "$backend" in
# SQLITE_SYNC=normal: the URL option that turns off syncing the WAL at each
# commit (docs/store.md "Durability"), to measure what the default costs
sqlite) export DBCRON_DB="sqlite:$T/bench.db${SQLITE_SYNC:+?synchronous=$SQLITE_SYNC}" ;;
pg) PGDB="dbcron_bench_$$"; psql "$DBCRON_TEST_PG" -qAt -c "create database $PGDB" >/dev/null
    export DBCRON_DB="${DBCRON_TEST_PG/dbname=postgres/dbname=$PGDB}" ;;
mysql) MYDB="dbcron_bench_$$"; my_client -e "create database $MYDB"
    export DBCRON_DB="${DBCRON_TEST_MYSQL%/*}/$MYDB" ;;
*) echo "backend must be sqlite, pg or mysql" >&2; exit 2 ;;
esac
"$bin" init >/dev/null

start_nodes() {
  local n=$1; shift
  for i in $(seq 1 "$n"); do
    # shellcheck disable=SC2086 # BENCH_NODE_FLAGS: extra flags for every mode
    "$bin" node --node-id "b$i" "$@" ${BENCH_NODE_FLAGS:-} 2>"$T/node$i.log" &
    PIDS+=($!)
  done
}
stop_nodes() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
# After a bulk apply, before the drain: what the limit scripts do after
# their load (VACUUM ANALYZE), plus a checkpoint, so that the drain is not
# measured against autovacuum of the fresh rows or a checkpoint the load's
# WAL set off (with durable commits every page the drain touches first after
# a checkpoint is logged in full)
settle() {
  case "$backend" in
  pg) psql "$DBCRON_DB" -qAt -c "vacuum analyze" -c "checkpoint" >/dev/null ;;
  mysql) my_client "$MYDB" -e "analyze table jobs, runs" >/dev/null ;;
  esac
}
# CPU seconds (user + system) the nodes have used so far, read before they stop
nodes_cpu() {
  local p tck; tck=$(getconf CLK_TCK)
  for p in "${PIDS[@]}"; do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || true; done |
    awk -v t="$tck" '{ s += $1 } END { printf "%.3f", s / t }'
}
# CPU seconds (user + system) the database server has used so far: its main
# process with what its ended children used, plus every live child (a
# PostgreSQL backend per connection; MariaDB is one process).  Empty for
# SQLite (the store runs inside the nodes) or a server not on this machine.
db_server_pid() {
  local f
  case "$backend" in
  pg) f="$(psql "$DBCRON_DB" -qAt -c "show data_directory" 2>/dev/null)/postmaster.pid" ;;
  mysql) f=$(my_client -N -e "select @@pid_file" 2>/dev/null) ;;
  *) return 0 ;;
  esac
  [ -r "$f" ] && head -1 "$f" || true
}
db_cpu() {
  local p=$1 tck c; [ -n "$p" ] && [ -r "/proc/$p/stat" ] || return 0
  tck=$(getconf CLK_TCK)
  { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat"
    for c in $(cat "/proc/$p/task/$p/children" 2>/dev/null); do
      awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true
    done; } | awk -v t="$tck" '{ s += $1 } END { printf "%.3f", s / t }'
}
# microseconds per execution of the CPU seconds from $1 to $2 over $3 executions
us_per_exec() { awk -v a="$1" -v b="$2" -v e="$3" 'BEGIN { printf "%.1f", e ? (b - a) * 1e6 / e : 0 }'; }
# the server's WAL position (PostgreSQL only; empty elsewhere): what a run of
# the benchmark writes to the log, a figure the machine's load does not move
wal_lsn() { [ "$backend" = pg ] && psql "$DBCRON_DB" -qAt -c "select pg_current_wal_lsn()" || true; }
wal_bytes() { psql "$DBCRON_DB" -qAt -c "select pg_wal_lsn_diff('$2', '$1')::bigint"; }
# buffer pages the server touched in the bench database (hit or read)
pg_blocks() {
  [ "$backend" = pg ] || return 0
  psql "$DBCRON_DB" -qAt -c "select pg_stat_force_next_flush()" >/dev/null 2>&1 || true
  psql "$DBCRON_DB" -qAt -c "select blks_hit + blks_read from pg_stat_database where datname = current_database()"
}
# Succeeded runs so far, by a count in the database: polling with `dbcron
# runs --limit 0` read every run each second and, on two cores, took CPU
# from the drain it was measuring (0.65 s a poll at 100,000 runs on
# PostgreSQL, 40 % of the server's statement time in W2)
succeeded_count() {
  local q="select count(*) from runs where state = 3"
  case "$backend" in
  sqlite) local f=${DBCRON_DB#sqlite:}; sqlite3 "${f%%\?*}" "$q" 2>/dev/null || echo 0 ;;
  pg) psql "$DBCRON_DB" -qAt -c "$q" ;;
  mysql) my_client -N "$MYDB" -e "$q" ;;
  esac
}
statements() { cat "$T"/node*.log | { grep -o 'statements=[0-9]*' || true; } | cut -d= -f2 | awk '{s += $1} END {print s + 0}'; }
percentiles() { # stdin: one number per line
  sort -n | awk '{a[NR] = $1} END { if (NR == 0) { print "n/a n/a n/a"; exit }
    p50 = a[int((NR - 1) * 0.50) + 1]; p99 = a[int((NR - 1) * 0.99) + 1]; print p50, p99, a[NR] }'
}

case "$mode" in
w1)
  J=$3 N=$4 D=$5
  python3 - "$J" "${W1_SHELL:-0}" > "$T/jobs.json" <<'PY'
import json, sys
what = {"command": ["true"]} if sys.argv[2] == "1" else {"handler": "noop"}
print(json.dumps([{"name": f"w1-{i}", "cron": "* * * * * ?", **what} for i in range(int(sys.argv[1]))]))
PY
  "$bin" job apply "$T/jobs.json" >/dev/null
  start_nodes "$N" ${W1_FLAGS:-}
  t0=$(date +%s%3N)
  dbpid=$(db_server_pid) dcpu0=$(db_cpu "$dbpid") lsn0=$(wal_lsn)
  sleep "$D"
  t1=$(date +%s%3N)
  cpu=$(nodes_cpu) dcpu1=$(db_cpu "$dbpid") lsn1=$(wal_lsn)
  sleep 2
  stop_nodes
  "$bin" runs --format csv --limit 0 | tail -n +2 > "$T/runs.csv"
  # steady state: fires from 5 s after start to 3 s before the end
  lo=$(( (t0 / 1000 + 5) * 1000 )); hi=$(( (t1 / 1000 - 3) * 1000 ))
  secs=$(( (hi - lo) / 1000 ))
  expected=$(( J * secs ))
  awk -F, -v lo="$lo" -v hi="$hi" '$2 >= lo && $2 < hi' "$T/runs.csv" > "$T/win.csv"
  executed=$(awk -F, '$4 == "succeeded"' "$T/win.csv" | wc -l)
  dups=$(awk -F, '$3 == 1 { print $1 "," $2 }' "$T/win.csv" | sort | uniq -d | wc -l)
  other=$(awk -F, '$4 != "succeeded"' "$T/win.csv" | cut -d, -f4 | sort | uniq -c | tr '\n' ' ')
  read -r p50 p99 max < <(awk -F, '$6 != "" { print $6 - $2 }' "$T/win.csv" | percentiles)
  [ -n "${W1_RUNS_OUT:-}" ] && cp "$T/win.csv" "$W1_RUNS_OUT"
  total=$(awk -F, '$4 == "succeeded"' "$T/runs.csv" | wc -l)
  st=$(statements)
  spe=$(awk -v s="$st" -v e="$total" 'BEGIN { printf "%.3f", e ? s / e : 0 }')
  # CPU and WAL per execution over the whole run (start to t1): the runs
  # of fires in that span, against the nodes' and the server's CPU
  nrun=$(awk -F, -v a="$t0" -v b="$t1" '$4 == "succeeded" && $2 >= a && $2 < b' "$T/runs.csv" | wc -l)
  cost=" node_cpu_us_per_exec=$(us_per_exec 0 "$cpu" "$nrun")"
  [ -n "$dcpu0" ] && cost="$cost db_cpu_us_per_exec=$(us_per_exec "$dcpu0" "$dcpu1" "$nrun")"
  [ -n "$lsn0" ] && cost="$cost wal_bytes_per_exec=$(( $(wal_bytes "$lsn0" "$lsn1") / (nrun > 0 ? nrun : 1) ))"
  echo "W1 backend=$backend exec=$([ "${W1_SHELL:-0}" = 1 ] && echo shell || echo noop) jobs=$J nodes=$N window=${secs}s expected=$expected executed=$executed duplicates=$dups misses=$((expected - executed)) other_states=[${other}] lateness_ms p50=$p50 p99=$p99 max=$max statements_per_exec=$spe$cost"
  ;;
w2)
  J=$3 N=$4
  python3 - "$J" "${W2_REACT:-0}" > "$T/jobs.json" <<'PY'
import json, sys
react = {"on_failure": ["http://127.0.0.1:9/hook"]} if sys.argv[2] == "1" else {}
print(json.dumps([{"name": f"w2-{i}", "at": "now", "handler": "noop", **react} for i in range(int(sys.argv[1]))]))
PY
  a0=$(date +%s%3N)
  "$bin" job apply "$T/jobs.json" >/dev/null
  a1=$(date +%s%3N)
  settle
  lsn0=$(wal_lsn) blk0=$(pg_blocks) dbpid=$(db_server_pid); dcpu0=$(db_cpu "$dbpid")
  start_nodes "$N" --claim-batch 1000 --max-inflight 20000
  # wait until every job has a finished run
  for _ in $(seq 1 600); do
    done_=$(succeeded_count)
    [ "$done_" -ge "$J" ] && break
    sleep 1
  done
  cpu=$(nodes_cpu) dcpu1=$(db_cpu "$dbpid") lsn1=$(wal_lsn) blk1=$(pg_blocks)
  stop_nodes
  "$bin" runs --format csv --limit 0 | tail -n +2 > "$T/runs.csv"
  read -r first last n < <(awk -F, '$4 == "succeeded" { if (f == "" || $6 < f) f = $6; if ($7 > l) l = $7; n++ } END { print f, l, n }' "$T/runs.csv")
  drain=$(( last - first ))
  rate=$(awk -v n="$n" -v d="$drain" 'BEGIN { printf "%.0f", (d > 0 ? n * 1000 / d : 0) }')
  st=$(statements)
  spe=$(awk -v s="$st" -v e="$n" 'BEGIN { printf "%.3f", e ? s / e : 0 }')
  cpe=$(us_per_exec 0 "$cpu" "$n")
  wal=""
  [ -n "$dcpu0" ] && wal=" db_cpu_us_per_exec=$(us_per_exec "$dcpu0" "$dcpu1" "$n")"
  [ -n "$lsn0" ] && wal="$wal wal_bytes_per_exec=$(( $(wal_bytes "$lsn0" "$lsn1") / (n > 0 ? n : 1) )) blocks_per_exec=$(( (blk1 - blk0) / (n > 0 ? n : 1) ))"
  echo "W2 backend=$backend react=$([ "${W2_REACT:-0}" = 1 ] && echo on-failure || echo none) jobs=$J nodes=$N apply_ms=$((a1 - a0)) executed=$n drain_ms=$drain exec_per_s=$rate statements_per_exec=$spe node_cpu_us_per_exec=$cpe$wal"
  ;;
w3)
  python3 - > "$T/jobs.json" <<'PY'
import json
print(json.dumps([{"name": f"w3-{i}", "every": "1s", "handler": "noop"} for i in range(100)]))
PY
  "$bin" job apply "$T/jobs.json" >/dev/null
  start_nodes 3
  sleep 20
  # kill the node holding the most claimed, unstarted fires right now
  "$bin" runs --state scheduled --format csv --limit 0 | tail -n +2 > "$T/held.csv"
  victim=$(awk -F, '$5 != "" { c[$5]++ } END { for (n in c) if (c[n] > m) { m = c[n]; v = n } print v }' "$T/held.csv")
  [ -n "$victim" ] || victim=b1
  vi=$(( ${victim#b} - 1 ))
  kill -KILL "${PIDS[$vi]}"
  tk=$(date +%s%3N)
  awk -F, -v v="$victim" '$5 == v { print $1 "," $2 }' "$T/held.csv" | sort > "$T/victim_fires"
  sleep 20
  unset "PIDS[$vi]"
  PIDS=("${PIDS[@]}")
  stop_nodes
  "$bin" runs --format csv --limit 0 | tail -n +2 > "$T/runs.csv"
  # takeover: how late the fires the victim held were started elsewhere
  held=$(wc -l < "$T/victim_fires")
  # a fire the victim held that was due before its lease ended is retried
  # as attempt 2 (it may have run); one due later is taken as attempt 1:
  # the takeover is the first start of the fire on another node
  read -r tp50 tp99 tmax < <(awk -F, -v v="$victim" 'NR == FNR { want[$0] = 1; next }
    ($1 "," $2) in want && $5 != v && $6 != "" { k = $1 "," $2; d = $6 - $2; if (!(k in first) || d < first[k]) first[k] = d }
    END { for (k in first) print first[k] }' "$T/victim_fires" "$T/runs.csv" | percentiles)
  read -r p50 p99 max < <(awk -F, -v k="$tk" '$2 >= k && $6 != "" { print $6 - $2 }' "$T/runs.csv" | percentiles)
  dups=$(awk -F, '$3 == 1 { print $1 "," $2 }' "$T/runs.csv" | sort | uniq -d | wc -l)
  # misses: instants of each job without a row, up to 5 s before the end
  misses=$(awk -F, '$3 == 1 { seen[$1 "," $2] = 1; if (!($1 in mn) || $2 < mn[$1]) mn[$1] = $2; if ($2 > mx[$1]) mx[$1] = $2 }
    END { m = 0; for (j in mn) for (t = mn[j]; t < mx[j] - 5000; t += 1000) if (!((j "," sprintf("%.0f", t)) in seen)) m++; print m }' "$T/runs.csv")
  echo "W3 backend=$backend jobs=100 nodes=3 killed=$victim at 20s holding=$held fires; takeover (start lateness of those fires) ms p50=$tp50 max=$tmax; all fires after the kill: lateness ms p50=$p50 p99=$p99 max=$max duplicates=$dups misses=$misses"
  ;;
w4)
  J=$3 R=$4 M=$5
  # job i fires daily at S + (i / R) minutes + its share of that minute, so
  # R distinct jobs are due each minute from S on and every fire is a job
  # the node has not run before (its per-job state is new each time)
  S=$(( $(date +%s) + ${W4_LEAD:-90} ))
  python3 - "$J" "$R" "$S" > "$T/jobs.json" <<'PY'
import json, sys
J, R, S = (int(a) for a in sys.argv[1:4])
out = []
for i in range(J):
    t = (S + (i // R) * 60 + (i % R) * 60 // R) % 86400
    out.append({"name": f"w4-{i}", "cron": f"{t % 60} {t // 60 % 60} {t // 3600} * * ?", "tz": "UTC", "handler": "noop"})
print(json.dumps(out))
PY
  a0=$(date +%s%3N)
  "$bin" job apply --max-bytes $((512 << 20)) "$T/jobs.json" >/dev/null
  a1=$(date +%s%3N)
  [ "$(date +%s)" -lt "$S" ] || { echo "w4: job apply took $((a1 - a0)) ms, past the start; raise W4_LEAD (${W4_LEAD:-90} s)" >&2; exit 1; }
  start_nodes 1
  end=$(( S + M * 60 + 2 ))
  peak=0 rss_at_start=""
  while [ "$(date +%s)" -lt "$end" ]; do
    r=$(ps -o rss= -p "${PIDS[0]}" 2>/dev/null | tr -d ' ')
    [ -n "$r" ] || break
    [ -n "$rss_at_start" ] || { [ "$(date +%s)" -ge "$S" ] && rss_at_start=$r; }
    [ "$r" -gt "$peak" ] && peak=$r
    sleep 1
  done
  stop_nodes
  "$bin" runs --format csv --limit 0 | tail -n +2 > "$T/runs.csv"
  lo=$(( S * 1000 )); hi=$(( (S + M * 60 - 5) * 1000 ))
  expected=$(python3 -c "import sys; J,R,W=map(int,sys.argv[1:]); print(sum(1 for i in range(J) if (i//R)*60+(i%R)*60//R < W))" "$J" "$R" "$((M * 60 - 5))")
  awk -F, -v lo="$lo" -v hi="$hi" '$2 >= lo && $2 < hi' "$T/runs.csv" > "$T/win.csv"
  executed=$(awk -F, '$4 == "succeeded"' "$T/win.csv" | wc -l)
  dups=$(awk -F, '$3 == 1 { print $1 "," $2 }' "$T/win.csv" | sort | uniq -d | wc -l)
  read -r p50 p99 max < <(awk -F, '$6 != "" { print $6 - $2 }' "$T/win.csv" | percentiles)
  log=$(grep 'node.stop' "$T/node1.log" | tail -1)
  field() { echo "$log" | grep -o "$1=[0-9]*" | cut -d= -f2; }
  claims=$(field claims) cms=$(field claim_ms)
  cmean=$(awk -v s="$cms" -v c="$claims" 'BEGIN { printf "%.2f", c ? s / c : 0 }')
  echo "W4 backend=$backend jobs=$J due_per_min=$R minutes=$M apply_ms=$((a1 - a0)) expected=$expected executed=$executed duplicates=$dups misses=$((expected - executed)) lateness_ms p50=$p50 p99=$p99 max=$max claims=$claims claim_ms_mean=$cmean claim_ms_max=$(field claim_ms_max) job_states_at_stop=$(field job_states) rss_kib_at_start=${rss_at_start:-n/a} rss_kib_peak=$peak"
  ;;
*) echo "mode must be w1, w2, w3 or w4" >&2; exit 2 ;;
esac
