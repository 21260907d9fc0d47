#!/usr/bin/env bash
# Concurrency caps by tag (issue 28 item 3, docs/scheduler.md "Concurrency
# caps"): three nodes, seven jobs carrying tag "heavy", capped at 2 running
# in the whole cluster.  Six have overlap allow (their fires over the cap
# wait for a slot), one skip (its fires over the cap are recorded SKIPPED).
# The most runs of the tag at once, taken from the start and end instants
# the jobs themselves write, never exceeds 2, and reaches it.  A cap on a
# tag no job carries is refused.  SQLite or, given "pg" / "mysql",
# PostgreSQL / MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

body='s=$(date +%s%3N); sleep 0.8; echo "$DBCRON_JOB $s $(date +%s%3N) $DBCRON_NODE" >> '"$T/spans.log"
for i in 1 2 3 4 5 6; do
  dbc job add "heavy-$i" --every 1s --overlap allow --tag heavy --tag "own-$i" --retries 0 \
    -- sh -c "$body" >/dev/null
done
dbc job add heavy-skip --every 1s --tag heavy --retries 0 -- sh -c "$body" >/dev/null

expect_rc 2 tag set nosuch --max-running 1
assert_err_contains "unknown tag 'nosuch'" "a cap on a tag no job carries is refused"
dbc tag set heavy --max-running 2 >/dev/null
assert_contains "$(dbc tag list --format csv)" "heavy,2," "tag list shows the cap"

for n in n1 n2 n3; do start_node "$n" --grace 2s; done
wait_until 60 sh -c "[ \$(wc -l < '$T/spans.log' 2>/dev/null || echo 0) -ge 14 ]" ||
  fail "the capped jobs did not run 14 times"
pause_jobs heavy-1 heavy-2 heavy-3 heavy-4 heavy-5 heavy-6 heavy-skip
stop_nodes n1 n2 n3

# The most runs of the tag at once (a start at the instant another ended
# is not an overlap).
most=$(awk '{ print $2, 1; print $3, -1 }' "$T/spans.log" | sort -n -k1,1 -k2,2 |
  awk '{ c += $2; if (c > m) m = c } END { print m + 0 }')
echo "runs: $(wc -l < "$T/spans.log") on nodes $(awk '{ print $4 }' "$T/spans.log" | sort -u | tr '\n' ' ')at most $most at once"
assert_le "$most" 2 "tag heavy: never more than its cap of 2 runs at once in the cluster"
assert_eq 2 "$most" "tag heavy: the cap is used (two at once)"
runs_csv > "$T/runs.csv"
skipped=$(awk -F, '$1 == "heavy-skip" && $4 == "skipped"' "$T/runs.csv" | grep -c 'at its cap of 2' || true)
assert_ge "$skipped" 1 "overlap skip: fires over the cap are recorded SKIPPED"
waited=$(awk -F, '$1 ~ /^heavy-[0-9]$/ && $4 == "skipped"' "$T/runs.csv" | grep -c 'at its cap' || true)
assert_eq 0 "$waited" "overlap allow: fires over the cap wait, never skipped"
d=$(awk -F, '$3 == 1 { print $1 "," $2 }' "$T/runs.csv" | sort | uniq -d | wc -l)
assert_eq 0 "$d" "no duplicate (job, fire_at) first attempt"

# Caps in a job apply document ({"jobs", "tags"}), written with its jobs in
# one transaction: a tag only the document's new job carries is known; a
# cap on a tag no job carries refuses the whole document.
cat >"$T/bad.json" <<'EOF'
{"jobs": [{"name": "io-1", "every": "1h", "handler": "noop", "tag": ["io"], "paused": true}],
 "tags": [{"name": "io", "max_running": 3}, {"name": "typo", "max_running": 1}]}
EOF
expect_rc 2 job apply "$T/bad.json"
assert_err_contains "unknown tag 'typo'" "a document's cap on a tag no job carries is refused"
expect_rc 2 job apply "$T/bad.json" --dry-run
assert_err_contains "unknown tag 'typo'" "the dry run refuses it too"
assert_not_contains "$(dbc job list --format json)" "io-1" "and its jobs are not written"
sed 's/, {"name": "typo", "max_running": 1}//' "$T/bad.json" >"$T/doc.json"
expect_rc 0 job apply "$T/doc.json" --dry-run
assert_contains "$T_OUT" "cap       io: none -> 3" "the dry run shows the cap"
expect_rc 0 job apply "$T/doc.json"
assert_contains "$T_OUT" "1 created, 0 updated, 0 deleted; caps: 1 set, 0 deleted"
assert_contains "$(dbc tag list --format csv)" "io,3,0,1" "the cap is stored"
expect_rc 0 audit --format json --limit 1
assert_eq "tag-set io 3" "$(jq -r '.[0] | "\(.action) \(.detail.tag) \(.detail.changes.max_running.after)"' <<<"$T_OUT")"
t_done
