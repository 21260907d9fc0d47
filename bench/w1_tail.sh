#!/usr/bin/env bash
# Where W1's lateness comes from (issue 30 item 3), from the runs a W1 run
# kept (W1_RUNS_OUT=FILE bench/sched.sh w1 ...):
#   bench/w1_tail.sh FILE
# Every second each node starts its share of the jobs due at that instant.
# The first start of a node's burst says how late the node woke (the timer,
# the claim having handed it the fires ahead); the last start, how long the
# node took to get through its burst; the gap over the burst's size, what one
# fire costs the node from wake to start.  Reports; never fails on a figure.
set -euo pipefail
f=${1:?usage: bench/w1_tail.sh RUNS_CSV}
python3 - "$f" <<'PY'
import csv, sys
from collections import defaultdict
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] if v else 0
burst = defaultdict(list)  # (fire_at, node) -> lateness of each start
late = []
for r in csv.reader(open(sys.argv[1])):
    if r[3] != "succeeded" or not r[5]:
        continue
    d = int(r[5]) - int(r[1])
    late.append(d)
    burst[(int(r[1]), r[4])].append(d)
first, last, per_fire, sizes = [], [], [], []
rank_late = defaultdict(int)  # where in its burst a run over the p99 sits, by tenth
p99 = pct(late, 99)
for ds in burst.values():
    ds.sort()
    first.append(ds[0]); last.append(ds[-1]); sizes.append(len(ds))
    if len(ds) > 1:
        per_fire.append((ds[-1] - ds[0]) * 1000.0 / (len(ds) - 1))
    for i, d in enumerate(ds):
        if d >= p99:
            rank_late[min(9, i * 10 // len(ds))] += 1
print(f"runs={len(late)} bursts={len(burst)} burst_size p50={pct(sizes, 50)} max={max(sizes)}")
print(f"lateness_ms p50={pct(late, 50)} p99={p99} max={max(late)}")
print(f"first_start_ms (the node's wake) p50={pct(first, 50)} p99={pct(first, 99)} max={max(first)}")
print(f"last_start_ms (the burst done) p50={pct(last, 50)} p99={pct(last, 99)} max={max(last)}")
print(f"per_fire_us (last - first over the burst) p50={pct(per_fire, 50):.1f} p99={pct(per_fire, 99):.1f}")
over = sum(rank_late.values())
print("runs at or over the p99 by tenth of their burst: " +
      " ".join(f"{k}:{rank_late[k] * 100 // over if over else 0}%" for k in range(10)))
PY
