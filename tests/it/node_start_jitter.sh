#!/usr/bin/env bash
# --start-jitter DUR (docs/cron.md): a node starts each fire's run after a
# random delay in [0, DUR), chosen per fire; the run's fire_at stays the
# scheduled instant, and the delay is not lateness: under misfire skip with
# a threshold shorter than the delays, no jittered fire is MISFIRED.  A job
# without it starts on time beside it.  Times from the run log (started_ms
# - fire_at_ms), never from the node's log.  SQLite: the delay is the
# node's, not the store's.
source "$(dirname "$0")/nodelib.bash"
use_backend sqlite

dbc job add jit --every 1s --start-jitter 700ms --overlap allow --misfire skip \
  --misfire-threshold 150ms -- true >/dev/null
dbc job add plain --every 1s --overlap allow --misfire skip --misfire-threshold 150ms \
  -- true >/dev/null
start_node s1 --preread 3s
ended() { [ "$(runs_csv --job "$1" | grep -Ec ',(succeeded|misfired|failed),')" -ge "$2" ]; }
wait_until 120 ended jit 12 || fail "jit: fewer than 12 ended runs: $(runs_csv --job jit | head -3)"
wait_until 120 ended plain 12 || fail "plain: fewer than 12 ended runs"
stop_node s1

# job,fire_at_ms,attempt,state,node,started_ms,...: "state delay" lines
delays() { runs_csv --job "$1" | awk -F, '$4 != "scheduled" { print $4, ($6 == "" ? "-" : $6 - $2) }'; }
J=$(delays jit)
P=$(delays plain)
assert_eq 0 "$(grep -vc '^succeeded ' <<<"$J" || true)" "every jittered fire ran, none MISFIRED (the delay is not lateness)"
assert_eq 0 "$(grep -vc '^succeeded ' <<<"$P" || true)" "every plain fire ran"
max_j=$(awk '{ print $2 }' <<<"$J" | sort -n | tail -1)
min_j=$(awk '{ print $2 }' <<<"$J" | sort -n | head -1)
big=$(awk '$2 >= 150' <<<"$J" | grep -c . || true)
echo "# jit: delays $min_j-$max_j ms over $(wc -l <<<"$J") runs, $big of them >= 150 ms"
assert_ge "$min_j" 0 "no jittered run starts before its fire"
assert_le "$max_j" 1200 "a jittered run starts within its delay (700 ms) and some slack"
assert_ge "$big" 3 "the delays are spread over [0, 700 ms), not all at 0"
assert_ge "$(awk '{ print $2 }' <<<"$J" | sort -u | wc -l)" 5 "the delays differ from fire to fire"
max_p=$(awk '{ print $2 }' <<<"$P" | sort -n | tail -1)
assert_le "$max_p" 150 "the job without --start-jitter starts on time"
# fire_at stays on the series: every fire_at is the anchor plus whole seconds
anchor=$(dbq "select anchor_ms from jobs where name = 'jit'")
assert_eq 0 "$(runs_csv --job jit | awk -F, -v a="$anchor" '($2 - a) % 1000 != 0' | grep -c . || true)" \
  "fire_at is the scheduled instant"
t_done
