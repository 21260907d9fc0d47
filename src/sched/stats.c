/*
 * The node's histograms: fixed buckets from a millisecond to five minutes,
 * which covers both a claim (milliseconds) and a run (seconds to minutes)
 * without a per-series configuration.  Observing is a few relaxed atomic
 * adds, cheap enough for the db thread's write path.
 *
 * And the per-job run counters: a name-sorted array of at most jobs_max
 * names under jobs_mu, which the db thread takes once per finished run (a
 * binary search; an insert only for a name not seen before, while there
 * is room) and a scrape takes while it prints them, so both stay short
 * and the memory bounded.  jobs_mu is a leaf: the db thread counts after
 * it let go of the node's mu.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "sched/stats.h"

void node_stats_init(node_stats *st)
{
	atomic_init(&st->jobs_max, 0);
	pthread_mutex_init(&st->jobs_mu, NULL);
}

void node_stats_free(node_stats *st)
{
	for (size_t i = 0; i < st->njobs; i++)
		dbcron__free(st->jobs[i].name);
	dbcron__free(st->jobs);
	st->jobs = NULL;
	st->njobs = st->jobcap = 0;
	pthread_mutex_destroy(&st->jobs_mu);
}

int node_stats_job_ended(node_stats *st, const char *job, int state)
{
	int rc = DBCRON_OK;
	if (!job || state < 0 || state >= NODE_STATE_MAX)
		return rc;
	pthread_mutex_lock(&st->jobs_mu);
	size_t lo = 0, hi = st->njobs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(st->jobs[mid].name, job);
		if (c == 0) {
			lo = mid;
			goto out_count;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (st->njobs >= atomic_load_explicit(&st->jobs_max, memory_order_relaxed))
		goto out_unlock; /* full: this job is in the node's totals only */
	char *name = dbcron__strdup(job);
	if (!name || dbcron__grow((void **)&st->jobs, &st->jobcap, st->njobs + 1,
				  sizeof(*st->jobs))) {
		dbcron__free(name);
		rc = DBCRON_ENOMEM;
		goto out_unlock;
	}
	memmove(&st->jobs[lo + 1], &st->jobs[lo], (st->njobs - lo) * sizeof(*st->jobs));
	memset(&st->jobs[lo], 0, sizeof(*st->jobs));
	st->jobs[lo].name = name;
	st->njobs++;
out_count:
	st->jobs[lo].runs[state]++;
out_unlock:
	pthread_mutex_unlock(&st->jobs_mu);
	return rc;
}

void node_stats_jobs_each(node_stats *st, size_t max,
			  void (*cb)(void *ctx, const node_job_runs *j), void *ctx)
{
	pthread_mutex_lock(&st->jobs_mu);
	for (size_t i = 0; i < st->njobs && i < max; i++)
		cb(ctx, &st->jobs[i]);
	pthread_mutex_unlock(&st->jobs_mu);
}

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

void node_stats_db_error(node_stats *st, const char *msg)
{
	pthread_mutex_lock(&st->jobs_mu);
	snprintf(st->last_error, sizeof(st->last_error), "%s", msg ? msg : "");
	st->last_error_mono = dbcron__mono_ms();
	pthread_mutex_unlock(&st->jobs_mu);
}

bool node_stats_last_error(node_stats *st, char *buf, size_t len, int64_t *ago_ms)
{
	pthread_mutex_lock(&st->jobs_mu);
	bool have = st->last_error_mono > 0;
	if (have) {
		snprintf(buf, len, "%s", st->last_error);
		*ago_ms = dbcron__mono_ms() - st->last_error_mono;
	}
	pthread_mutex_unlock(&st->jobs_mu);
	return have;
}
