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

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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
	/* The db thread's last failed statement, for systemd's STATUS= (under
	 * jobs_mu; last_error_mono 0 before the first) */
	char last_error[200];
	int64_t last_error_mono;
	/* Final states written, per job: an array sorted by name under jobs_mu
	 * (a leaf lock: nothing else is taken while it is held).  A name stays
	 * once seen, deleted jobs included, so the array holds at most
	 * jobs_max names: the first jobs_max this node ran.  0 (no HTTP server
	 * asked for them) keeps none, and the db thread copies no names: a
	 * node draining a million one-shot jobs pays nothing and keeps nothing
	 * per job. */
	atomic_size_t jobs_max;
	pthread_mutex_t jobs_mu;
	struct node_job_runs *jobs;
	size_t njobs, jobcap;
} node_stats;

typedef struct node_job_runs {
	char *name;
	unsigned long long runs[NODE_STATE_MAX];
} node_job_runs;

void node_stats_init(node_stats *st);
void node_stats_free(node_stats *st);
/* The db thread wrote a final state of a run of job (copied when new).
 * DBCRON_ENOMEM: not counted. */
int node_stats_job_ended(node_stats *st, const char *job, int state);
/* The first max jobs by name (strcmp), under jobs_mu: cb must not block
 * or take a lock. */
void node_stats_jobs_each(node_stats *st, size_t max,
			  void (*cb)(void *ctx, const node_job_runs *j), void *ctx);

void node_hist_observe(node_hist *h, int64_t ms);
/* Note msg as the last database error (db thread). */
void node_stats_db_error(node_stats *st, const char *msg);
/* The last database error and how long ago (ms), or false when none. */
bool node_stats_last_error(node_stats *st, char *buf, size_t len, int64_t *ago_ms);

/* The node's counters; NULL before dbcron_node_create succeeded. */
node_stats *dbcron__node_stats(dbcron_node *n);

#endif
