/*
 * The node's histograms: fixed buckets from a millisecond to five minutes,
 * which covers both a claim (milliseconds) and a run (seconds to minutes)
 * without a per-series configuration.  Observing is a few relaxed atomic
 * adds, cheap enough for the db thread's write path.
 */
#include "sched/stats.h"

const int64_t node_hist_le_ms[NODE_HIST_BUCKETS] = {
	1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000,
};

void node_hist_observe(node_hist *h, int64_t ms)
{
	int i = 0;
	if (ms < 0)
		ms = 0;
	while (i < NODE_HIST_BUCKETS && ms > node_hist_le_ms[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ms, ms, memory_order_relaxed);
}
