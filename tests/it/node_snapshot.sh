#!/usr/bin/env bash
# One node on SQLite: the fires of a job share one snapshot of it, and a job
# edited while the node runs is picked up at the next claim (fires claimed
# before keep the version they were claimed with); at-most-once jobs start
# only after their fenced RUNNING write.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

dbc job add amo --every 1s --node-loss abandon --misfire skip \
  -- sh -c 'echo "$DBCRON_FIRE_AT_MS" >> '"$T/amo.log" >/dev/null
dbc job add edit --every 1s --misfire skip \
  -- sh -c 'echo "v1 $DBCRON_FIRE_AT_MS" >> '"$T/edit.log" >/dev/null

start_node n1
sleep 5
cat > "$T/edit.json" <<JSON
[{"name": "edit", "every": "1s", "misfire": "skip",
  "command": ["sh", "-c", "echo \"v2 \$DBCRON_FIRE_AT_MS\" >> $T/edit.log"]}]
JSON
dbc job apply "$T/edit.json" >/dev/null
sleep 5
stop_node n1

# --- at-most-once: every fire started once, and recorded ----------------
assert_ge "$(runs_where amo succeeded | wc -l)" 5 "at-most-once: fires ran"
runs_where amo succeeded | cut -d, -f2 | sort > "$T/amo.db"
sort "$T/amo.log" > "$T/amo.ran"
cmp -s "$T/amo.db" "$T/amo.ran" || fail "at-most-once: executions differ from the run log"
pass "at-most-once: every succeeded run executed exactly once"

# --- an edit reaches the fires claimed after it, and only those ------------
assert_ge "$(grep -c '^v1 ' "$T/edit.log")" 3 "edit: the first version ran"
assert_ge "$(grep -c '^v2 ' "$T/edit.log")" 2 "edit: the edited version ran"
sort -k2n "$T/edit.log" | awk '$1 == "v2" { seen = 1 } $1 == "v1" && seen { exit 1 }' ||
  fail "edit: a fire after the edited version ran the old command: $(sort -k2n "$T/edit.log" | tr '\n' ' ')"
pass "edit: versions in fire order, old then new"
assert_eq 0 "$(runs_csv --job edit | awk -F, '$4 != "succeeded" && $4 != "scheduled"' | wc -l)" "edit: every run that started succeeded"
echo "node_snapshot: all checks passed"
