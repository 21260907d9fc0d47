/*
 * A node's own counters for /metrics: what this process did (claims, the
 * runs whose outcome it wrote, how long they took, how late they
 * started), so that summing across nodes never counts a run twice.  Every
 * field is an atomic updated with relaxed order by the node's db thread
 * and read by the HTTP thread; a scrape may see one counter a moment
 * ahead of another, never a torn value.  Owned by the node; valid until
 * dbcron_node_free.
 */
#ifndef DBCRON_SCHED_STATS_H
#define DBCRON_SCHED_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "dbcron/job.h"
#include "dbcron/node.h"
#include "store/store.h"

/* Upper bounds in milliseconds (Prometheus "le"), then +Inf. */
#define NODE_HIST_BUCKETS 15
extern const int64_t node_hist_le_ms[NODE_HIST_BUCKETS];

typedef struct node_hist {
	atomic_ullong bucket[NODE_HIST_BUCKETS + 1]; /* not cumulative; last is +Inf */
	atomic_ullong count;
	atomic_llong sum_ms;
} node_hist;

#define NODE_STATE_MAX 16

typedef struct node_stats {
	const char *node_id;
	atomic_ullong claims, claimed;
	node_hist claim_ms;
	atomic_ullong runs[NODE_STATE_MAX]; /* final states written, by dbcron_run_state */
	node_hist run_ms;                    /* started to finished */
	node_hist late_ms;                   /* due to started */
	atomic_ullong fenced;                /* writes refused: the run was no longer ours */
	atomic_llong inflight;
	atomic_llong lease_until_ms;         /* database time; -1 before the first beat */
	atomic_llong busy[2];                /* pool workers running a job: [0] fast, [1] slow */
	atomic_ullong db_errors[STORE_ERR__COUNT]; /* the db thread's failed statements */
} node_stats;

void node_hist_observe(node_hist *h, int64_t ms);

/* The node's counters; NULL before dbcron_node_create succeeded. */
node_stats *dbcron__node_stats(dbcron_node *n);

#endif
