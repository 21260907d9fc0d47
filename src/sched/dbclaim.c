/*
 * The claim, on the db thread: how many fires each pool may take now
 * (the budget), the claim itself, putting what it took on the timer heap,
 * handing back claims in doubt, and when the claim and the flush wait out
 * a burst of fires.
 *
 * Invariants kept here:
 *  5 backpressure: a claim asks for no more than the free in-flight budget,
 *    sized per pool: no more of the slow pool's jobs than it can start, and
 *    none of them while it is saturated (they stay for other nodes); for
 *    nothing while the lease is in doubt, for no fast job while the fast
 *    pool is full;
 *  a claimed run is held in memory or handed back to the pool by its
 *    token, never left SCHEDULED under this live node's name: a claim is
 *    taken all or none, and one whose COMMIT reply was lost is remembered
 *    and released before the next claim.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "sched/dbloop_int.h"
#include "sched/node_int.h"

/*
 * How many fires pool p ([0] fast, [1] slow) of `workers` can start by
 * their fire times: each starts one now, then one per mean run time of the
 * pool within the preread window.  Until a run of the pool has finished the
 * mean is unknown and each worker counts for one, so a node that starts
 * with long jobs leaves the rest of an instant's fires to nodes with idle
 * workers instead of queueing them behind its own (mu held).  Returns
 * SIZE_MAX when runs take no measurable time.
 */
static size_t start_capacity(const dbcron_node *n, int p, int workers)
{
	double w = workers;
	if (!n->runs_timed[p])
		return (size_t)w;
	if (n->run_ms_mean[p] < 0.01)
		return SIZE_MAX;
	double c = w * (1.0 + (double)n->cfg.preread_ms / n->run_ms_mean[p]);
	return c >= (double)SIZE_MAX / 2 ? SIZE_MAX : (size_t)c;
}

/* What the next claim may take, per pool (invariant 5). */
typedef struct claim_budget {
	size_t fast; /* runs of the jobs the fast pool runs */
	size_t slow; /* runs of the jobs in n->slow_ids */
	size_t both; /* runs of the two together */
} claim_budget;

static size_t free_of(size_t can, size_t used)
{
	return can > used ? can - used : 0;
}

/*
 * The claim's budget (db thread).  Each pool is sized apart, from its own
 * workers, mean run time and fires in flight (issue 23 item 5: sized from
 * the fast pool alone, the slow jobs' fires queued behind the slow workers,
 * late or skipped, while the fast workers idled and other nodes could not
 * take them).  The jobs demoted to the slow pool go to n->slow_ids, so that
 * the claim takes no more of their fires than the slow pool can start and
 * none while it is saturated (store/claim.c "Pools" says why a slow job
 * never borrows a fast worker).  --max-inflight and the claim batch bound the two
 * together (b.both): the claim's slow pass goes first and the fast pass
 * gets what it left, so the slow pool's budget never starves the fast jobs.
 * Out of memory listing the slow jobs: nothing is claimed this time.
 */
static claim_budget budget_of(dbcron_node *n)
{
	claim_budget b = {0, 0, 0};
	size_t used_slow = 0;
	bool ok = true;
	pthread_mutex_lock(&n->mu);
	int64_t now = dbcron__mono_ms();
	size_t used = n->inflight;
	bool lease_ok = now < n->lease_ok_until_mono;
	bool stopping = n->stopping;
	size_t can_fast = start_capacity(n, 0, n->cfg.workers);
	size_t can_slow = start_capacity(n, 1, n->cfg.slow_workers);
	n->nslow_ids = 0;
	for (size_t i = 0; ok && i < n->nslow_cand;) {
		job_state *js = inflight_job_find(&n->jobs, n->slow_cand[i]);
		if (!js || !dispatch_job_is_slow(js, now)) {
			/* fast again (or gone): only a new slow run lists it again */
			n->slow_cand[i] = n->slow_cand[--n->nslow_cand];
			continue;
		}
		i++;
		ok = !dbcron__grow((void **)&n->slow_ids, &n->slow_ids_cap, n->nslow_ids + 1,
				   sizeof(*n->slow_ids));
		if (ok) {
			n->slow_ids[n->nslow_ids++] = js->job_id;
			used_slow += js->nfires;
		}
	}
	pthread_mutex_unlock(&n->mu);
	if (!lease_ok || stopping || !ok)
		return b;
	size_t total = free_of((size_t)n->cfg.max_inflight, used);
	if (total > (size_t)n->cfg.claim_batch)
		total = (size_t)n->cfg.claim_batch;
	b.both = total;
	if (n->nslow_ids && pool_load(n->slow) < pool_capacity(n->slow)) {
		b.slow = free_of(can_slow, used_slow);
		if (b.slow > total)
			b.slow = total;
	}
	if (pool_load(n->fast) >= pool_capacity(n->fast))
		return b;
	b.fast = free_of(can_fast, used > used_slow ? used - used_slow : 0);
	if (b.fast > total)
		b.fast = total;
	return b;
}

/* Claims in doubt go back to the pool before the next claim, so the next
 * claim (ours or another node's) takes their runs as it takes any other. */
int dbloop_release_doubtful(dbcron_node *n, dbcron_err *err)
{
	while (n->ndoubt) {
		const char *tok = n->doubt_tokens[n->ndoubt - 1];
		size_t k = 0;
		int rc = store_runs_release_claim(n->st, n->node_id, tok, &k, err);
		if (rc)
			return rc;
		if (k)
			dbcron__log(LOG_WARN, "claim.released", LOG_STR("node", n->node_id),
				    LOG_STR("token", tok), LOG_UINT("runs", k),
				    LOG_STR("msg", "a claim whose reply was lost had committed; its runs "
						   "are claimable again"));
		n->ndoubt--;
	}
	return DBCRON_OK;
}

/* A claim whose runs must go back to the pool (dbloop_release_doubtful): its
 * COMMIT reply was lost, or we could not hold its runs. */
static void remember_doubt(dbcron_node *n, const char *token)
{
	if (n->ndoubt == NODE_MAX_DOUBT) {
		dbcron__log(LOG_WARN, "claim.doubt", LOG_STR("node", n->node_id),
			    LOG_STR("token", n->doubt_tokens[0]),
			    LOG_STR("msg", "too many claims in doubt; the oldest is left to the reap"));
		memmove(n->doubt_tokens[0], n->doubt_tokens[1],
			sizeof(n->doubt_tokens[0]) * (NODE_MAX_DOUBT - 1));
		n->ndoubt--;
	}
	snprintf(n->doubt_tokens[n->ndoubt++], sizeof(n->doubt_tokens[0]), "%s", token);
}

/*
 * All or none: a run we claimed but do not hold (out of memory making its
 * fire or growing the heap) would wait SCHEDULED under our live name until
 * we restart, since the reap takes only dead nodes' runs.  So every fire is
 * made and the heap grown before any goes on it; if any of that fails, the
 * ones made are dropped and the whole claim goes back to the pool by its
 * token, at once or, when that write fails too, through the retry of claims
 * in doubt (dbloop_release_doubtful).  Releasing by token is safe only because we
 * hold none of its runs.
 */
/* last[i]: no run after i of res has run i's job, so its fire may take
 * the job's fields instead of copying them (a job of the claim is
 * res->jobs[c->job - res->jobs]).  NULL when out of memory. */
static bool *last_uses(const store_claim_result *res)
{
	bool *last = dbcron__calloc(res->nruns + res->njobs, 1), *seen = last + res->nruns;
	for (size_t i = res->nruns; last && i-- > 0;) {
		const dbcron_job *j = res->runs[i].job;
		if (!seen[j - res->jobs])
			last[i] = seen[j - res->jobs] = true;
	}
	return last;
}

size_t dbloop_take_claim(dbcron_node *n, store_claim_result *res, const char *token)
{
	size_t k = res->nruns, made = 0;
	if (!k)
		return 0;
	fire **fs = dbcron__calloc(k, sizeof(*fs));
	bool *last = last_uses(res);
	pthread_mutex_lock(&n->mu);
	bool ok = fs && last && timer_reserve(&n->heap, k) == 0;
	for (; ok && made < k; made++) {
		/* The fire shares its job's snapshot while the row is
		 * unchanged, and starts a new one when the job was edited
		 * (the ownership rule is in inflight.h).  The claim is done
		 * with its rows: the fire takes them. */
		store_claimed *c = &res->runs[made];
		dbcron_job *job = &res->jobs[c->job - res->jobs]; /* c->job, writable */
		job_state *js = inflight_job_get(&n->jobs, c->run.job_id);
		if (!js || !(fs[made] = fire_take(n, js, c, job, last[made])))
			ok = false;
	}
	dbcron__free(last);
	if (!ok) {
		for (size_t i = 0; fs && i < k; i++)
			fire_free(fs[i]); /* NEW: never on a list or the heap */
		pthread_mutex_unlock(&n->mu);
		dbcron__free(fs);
		dbcron_err err = {0};
		size_t back = 0;
		int rc = store_runs_release_claim(n->st, n->node_id, token, &back, &err);
		dbcron__log(LOG_WARN, "claim.released", LOG_STR("node", n->node_id),
			    LOG_STR("token", token), LOG_UINT("runs", k),
			    LOG_STR("msg", rc ? "out of memory holding a claim; its hand-back is retried"
					      : "out of memory holding a claim; its runs are claimable again"));
		if (rc)
			remember_doubt(n, token);
		return 0;
	}
	bool wake = false;
	timer_node *top = timer_peek(&n->heap);
	for (size_t i = 0; i < k; i++) {
		fire *f = fs[i];
		f->js->blocked = JOB_OK; /* claimable again: resumed */
		f->gen = n->lease_gen;
		(void)timer_push(&n->heap, &f->tn, fire_start_at(f)); /* reserved */
		fire_set_phase(f, FIRE_CLAIMED);
		if (!top || fire_start_at(f) < top->due)
			wake = true;
		n->inflight++;
		n->n_claimed++;
	}
	if (wake)
		pthread_cond_signal(&n->timer_cv);
	atomic_store_explicit(&n->stats.inflight, (long long)n->inflight, memory_order_relaxed);
	pthread_mutex_unlock(&n->mu);
	dbcron__free(fs);
	return k;
}

/*
 * The db thread waits out a burst.  Where the nodes share the machine with
 * the database server, the server's backends ran the claims of the next
 * second's fires (W1, 5,000 every-second jobs, 3 nodes, PostgreSQL, 2
 * cores: from 0.5 s to 0.95 s of each second) and, on a loaded pass, on
 * into the next burst: in the bad seconds they held both cores from 100 ms
 * before the burst to 12 ms into it, and the burst's fires waited for a
 * core (a trace of every context switch, docs/benchmarks.md "The db
 * thread waits out a burst").  With the claims held back, what was left in
 * the burst was the starts and ends a look every flush_ms happened to send
 * while the burst was starting.  Neither is urgent: a claim takes fires up
 * to preread_ms ahead, and a start or end waits up to flush_ms anyway.
 * So when BURST_MIN fires are due within BURST_SPAN_MS of the first and
 * that first is at most `lead_ms` away, or while the timer starts such a
 * burst, the claim (lead CLAIM_LEAD_MS) and the flush (FLUSH_LEAD_MS) wait
 * until BURST_AFTER_MS past its instant.  The heartbeat and the fenced
 * starts of at-most-once fires (part of the burst) go on.  dbloop_run lets
 * each wait once between two of its claims or flushes, so bursts one after
 * another never starve them: a claim is late by at most CLAIM_LEAD_MS +
 * BURST_AFTER_MS, and so is a fire only that claim would take (a job added
 * a moment before a burst).  A drain (fires already late) waits for none.
 */
#define BURST_MIN 64
#define BURST_SPAN_MS 5

int64_t dbloop_burst_hold(dbcron_node *n, int64_t now_mono, int64_t lead_ms)
{
	int64_t off = atomic_load(&n->offset_ms), until = 0;
	pthread_mutex_lock(&n->mu);
	if (n->burst_until_mono > now_mono)
		until = n->burst_until_mono;
	const timer_node *top = timer_peek(&n->heap);
	if (top && top->due - off > now_mono && top->due - off <= now_mono + lead_ms &&
	    timer_count_due(&n->heap, top->due + BURST_SPAN_MS, BURST_MIN) >= BURST_MIN &&
	    top->due - off + BURST_AFTER_MS > until)
		until = top->due - off + BURST_AFTER_MS;
	pthread_mutex_unlock(&n->mu);
	return until;
}

/* A backlog's batch (its first fire late by BURST_AFTER_MS or more) sets
 * a time already past: it holds nothing. */
void dbloop_burst_started(dbcron_node *n, int64_t due_mono, size_t fires)
{
	if (fires >= BURST_MIN && due_mono + BURST_AFTER_MS > n->burst_until_mono)
		n->burst_until_mono = due_mono + BURST_AFTER_MS;
}

/* One claim; returns how many fires it took (or -1 on error). */
long dbloop_claim(dbcron_node *n, dbcron_err *err)
{
	claim_budget budget = budget_of(n);
	if (!budget.fast && !budget.slow)
		return 0;
	char token[33];
	dbloop_random_hex(token, 16);
	store_claim_req req = {
		.node_id = n->node_id, .token = token,
		.horizon_ms_ahead = n->cfg.preread_ms, .max = (int)budget.fast,
		.plan = planner_plan, .plan_ctx = n->plan,
		.lock_row = n->cfg.claim_strategy == DBCRON_CLAIM_LOCK_ROW,
		.handlers = (const char *const *)n->handlers, .nhandlers = n->nhandlers,
		.slow_jobs = n->slow_ids, .nslow = n->nslow_ids, .slow_max = (int)budget.slow,
		.both_max = (int)budget.both,
	};
	store_claim_result res = {0};
	int64_t t0 = dbcron__mono_ms();
	int rc = store_claim(n->st, &req, &res, err);
	if (rc == DBCRON_ECONN) {
		/* the COMMIT may have landed: runs stamped with this token
		 * would wait under our name for a start that never comes */
		remember_doubt(n, token);
	}
	if (rc)
		return -1;
	int64_t took = dbcron__mono_ms() - t0;
	n->claim_ms_sum += took;
	if (took > n->claim_ms_max)
		n->claim_ms_max = took;
	n->n_claims++;
	atomic_fetch_add_explicit(&n->stats.claims, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&n->stats.claimed, res.nruns, memory_order_relaxed);
	node_hist_observe(&n->stats.claim_ms, took);
	for (size_t i = 0; i < res.naside; i++)
		dbcron__log(LOG_WARN, "job.set_aside", LOG_STR("job", res.aside[i].name),
			    LOG_INT("id", res.aside[i].job_id), LOG_STR("msg", res.aside[i].why));
	dbloop_take_claim(n, &res, token);
	long got = (long)res.nruns;
	if (n->cfg.log_runs && (res.nruns || res.nterminal))
		dbcron__log(LOG_DEBUG, "claim", LOG_STR("token", token), LOG_UINT("runs", res.nruns),
			    LOG_UINT("terminal", res.nterminal));
	store_claim_result_clear(&res);
	return got;
}
