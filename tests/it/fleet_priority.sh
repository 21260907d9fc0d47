#!/usr/bin/env bash
# Priorities (issue 28 item 4, docs/scheduler.md "Priorities"): three
# nodes of one worker each.  Six jobs due at one instant, three of
# priority 10 and three of 0: the three that start first are the priority
# 10 ones.  Then four jobs of a tag capped at 1, due at one instant with
# priorities 1 to 4: they wait for the slot and start highest first.  The
# order comes from the start instants the jobs write.  SQLite or, given
# "pg" / "mysql", PostgreSQL / MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

rec() { echo "s=\$(date +%s%3N); sleep $1; echo \"\$DBCRON_JOB \$s\" >> '$T/$2'"; }
for n in n1 n2 n3; do start_node "$n" --workers 1; done
wait_until 60 sh -c "[ \$(\"\$DBCRON_BIN\" nodes 2>/dev/null | grep -c alive) -ge 3 ]" ||
  fail "nodes did not start"

# far enough ahead that all six exist before a node reads them (claims
# read a pre-read window ahead)
at=$(( $(date +%s) + 5 ))
for i in 1 2 3; do
  dbc job add "lo-$i" --at "$at" -- sh -c "$(rec 1.5 starts.log)" >/dev/null
  dbc job add "hi-$i" --at "$at" --priority 10 -- sh -c "$(rec 1.5 starts.log)" >/dev/null
done
assert_contains "$(dbc job show hi-1 --format json)" '"priority":10' "job show has the priority"
wait_until 60 sh -c "[ \$(wc -l < '$T/starts.log' 2>/dev/null || echo 0) -ge 6 ]" ||
  fail "the six jobs did not all start"
first=$(sort -n -k2,2 "$T/starts.log" | head -3 | awk '{ print $1 }' | sort | tr '\n' ' ')
echo "started first: $first"
assert_eq "hi-1 hi-2 hi-3 " "$first" "of fires due at one instant, the higher priority start first"

# the cap first (a paused job carries the tag), so that no node can claim
# the four fires before it holds
dbc job add cap-seed --every 1h --paused --tag p -- true >/dev/null
dbc tag set p --max-running 1 >/dev/null
at=$(( $(date +%s) + 3 ))
for p in 1 2 3 4; do
  dbc job add "cap-$p" --at "$at" --priority "$p" --tag p --overlap queue \
    -- sh -c "$(rec 0.3 cap.log)" >/dev/null
done
wait_until 60 sh -c "[ \$(wc -l < '$T/cap.log' 2>/dev/null || echo 0) -ge 4 ]" ||
  fail "the four capped jobs did not all start"
order=$(sort -n -k2,2 "$T/cap.log" | awk '{ print $1 }' | tr '\n' ' ')
echo "capped, in start order: $order"
assert_eq "cap-4 cap-3 cap-2 cap-1 " "$order" "fires waiting for a cap start highest priority first"
stop_nodes n1 n2 n3
t_done
