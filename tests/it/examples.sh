#!/usr/bin/env bash
# The programs of examples/ (docs/library.md), built against libdbcron.so
# and the public headers only, run as a user runs them: each registers its
# handler, applies its jobs and runs a node on a fresh SQLite file until
# SIGTERM.  Checked from what the handler wrote and what the run log holds:
# both jobs ran, each fire once, on its schedule, every line written is a
# SUCCEEDED run (a graceful stop records what finished), and the program
# exits 0 after its last words.
source "$(dirname "$0")/nodelib.bash"

bindir=$(dirname "$DBCRON_BIN")

# lines JOB: the lines job JOB wrote to $out.
lines() { awk -v j="$1" '$1 == j' "$out" 2>/dev/null | wc -l; }
enough() { [ "$(lines tick)" -ge 3 ] && [ "$(lines cron-tick)" -ge 2 ]; }

run_example() {
  local prog=$1 arg=$2 expect_stdout=$3
  [ -x "$bindir/$prog" ] || fail "$bindir/$prog was not built"
  # a fresh file without a schema: the program creates it (DBCRON_DB_INIT)
  BACKEND=sqlite
  export DBCRON_DB="sqlite:$T/$prog.db"
  out=$T/$prog.out
  "$bindir/$prog" "$DBCRON_DB" "$out" > "$T/node-$prog.log" 2>&1 &
  local pid=$!
  NODE_PIDS+=("$pid")
  wait_until 120 enough || fail "$prog: after 120 s, tick wrote $(lines tick) lines, cron-tick $(lines cron-tick)"
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  assert_eq 0 "$rc" "$prog exits 0 after SIGTERM"
  grep -q "^libdbcron 0" "$T/node-$prog.log" || fail "$prog: no version line"
  grep -q "$expect_stdout" "$T/node-$prog.log" || fail "$prog: no '$expect_stdout' after the stop"
  pass "$prog: reported after the stop ('$expect_stdout')"

  # each fire once: no fire_at twice for a job
  assert_eq 0 "$(awk '{print $1, $2}' "$out" | sort | uniq -d | wc -l)" "$prog: no fire written twice"
  # on schedule: cron-tick on even seconds, tick one anchored series
  assert_eq 0 "$(awk '$1 == "cron-tick" && $2 % 2000 != 0' "$out" | wc -l)" \
    "$prog: cron-tick fires on even seconds"
  assert_eq 1 "$(awk '$1 == "tick" {print $2 % 1000}' "$out" | sort -u | wc -l)" \
    "$prog: tick fires one second apart on its anchor"
  assert_eq 0 "$(awk '$1 == "tick" && $4 != "'"$arg"'"' "$out" | wc -l)" "$prog: the job's arg ('$arg ...') reached the handler"

  # every line is a SUCCEEDED run in the database, and no run succeeded
  # without its line
  local job
  for job in tick cron-tick; do
    local db
    db=$(dbc runs --job "$job" --format csv | awk -F, 'NR > 1 && $4 == "succeeded"' | wc -l)
    assert_eq "$(lines "$job")" "$db" "$prog: $job's succeeded runs in the run log = its lines"
  done
}

run_example dbcron-example-embed "every" "^run [0-9]*: tick at [0-9]* succeeded$"
if [ -e "$bindir/dbcron-example-embedxx" ]; then
  run_example dbcron-example-embedxx "from" "^job tick: next fire at [0-9]* ms$"
else
  echo "no C++ compiler at build time: the C++ example was not built"
fi
