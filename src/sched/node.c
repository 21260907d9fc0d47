/*
 * The scheduler node's lifecycle: configuration and its defaults, creation,
 * dbcron_node_run (open the store, start the pools and the timer thread,
 * register, run the db loop in the caller's thread), the stop request and
 * the graceful stop, and teardown.  The work itself is split by concern:
 *
 *   dbloop.c    the db thread (the only code that talks to the database
 *               while the node runs): its loop, backoff, maintenance
 *   dblease.c   the db thread's lease: register, heartbeat, reap, job
 *               states, handlers registered late
 *   dbclaim.c   the db thread's claim: budget per pool, claims in doubt
 *   dbwrite.c   the db thread's writes: batched starts and ends, fenced
 *               starts, the graceful stop's hand-back, drain and finish
 *   dispatch.c  the timer thread and the workers: start or hold, the pools
 *   inflight.c  the in-flight table: fires and their phases, job states,
 *               job snapshots
 *
 * node_int.h states the threading rules all of them keep.  Kept here:
 * dbcron_node_stop takes no lock (async-signal-safe); the graceful stop
 * hands back before it waits, and writes every outcome it waited for
 * before the node row is marked stopped.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "exec/runas.h"
#include "react/react.h"
#include "sched/node_int.h"

void dbcron_node_config_init(dbcron_node_config *c)
{
	memset(c, 0, sizeof(*c));
	c->workers = 8;
	c->slow_workers = 2;
	c->claim_batch = 200;
	c->max_inflight = 5000;
	c->preread_ms = 1500;
	c->claim_interval_ms = 250;
	c->lease_ms = 3000;
	c->heartbeat_ms = 1000;
	c->flush_ms = 50;
	c->grace_ms = 10000;
	c->kill_grace_ms = 2000;
	c->retention_ms = 30LL * 86400 * 1000;
	c->maintenance_ms = 60000;
	c->claim_strategy = DBCRON_CLAIM_PER_ROW;
	c->log_level = DBCRON_LOG_DEFAULT;
}

_Static_assert((int)DBCRON_LOG_DEBUG == (int)LOG_DEBUG && (int)DBCRON_LOG_INFO == (int)LOG_INFO &&
		       (int)DBCRON_LOG_WARN == (int)LOG_WARN &&
		       (int)DBCRON_LOG_ERROR == (int)LOG_ERROR,
	       "the public log levels are the logger's");

/* ---- public API ----------------------------------------------------- */

int dbcron_node_create(const dbcron_node_config *cfg, dbcron_node **out,
		       dbcron_err *err)
{
	bool has_url = cfg->db_url && *cfg->db_url, has_file = cfg->db_file && *cfg->db_file;
	if (has_url == has_file)
		return dbcron_err_set(err, DBCRON_EINVAL, "node: give db_url or db_file, %s",
				      has_url ? "not both" : "one of them");
	if (cfg->log_level < DBCRON_LOG_DEFAULT || cfg->log_level > DBCRON_LOG_OFF)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "node: log_level %d is not one of DBCRON_LOG_DEFAULT (-1) to "
				      "DBCRON_LOG_OFF (4)", cfg->log_level);
	dbcron_node *n = dbcron__calloc(1, sizeof(*n));
	if (!n)
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory");
	node_stats_init(&n->stats);
	n->cfg = *cfg;
	n->cfg.db_file = NULL;
	n->prev_beat_db = -1;
	n->healthy_since_mono = -1;
	n->unleased_for = -1;
	n->log = (dbcron__log_sink){.level = cfg->log_level, .fn = cfg->log, .ctx = cfg->log_ctx};
	dbcron_node_config def;
	dbcron_node_config_init(&def);
	/* the schedule lock is taken once per claim, so a claim reads ahead
	 * further (XXL-JOB pre-reads 5 s) */
	if (n->cfg.claim_strategy == DBCRON_CLAIM_LOCK_ROW && n->cfg.preread_ms <= 0)
		n->cfg.preread_ms = 5000;
#define DEF(f) if (n->cfg.f <= 0) n->cfg.f = def.f
	DEF(workers); DEF(slow_workers); DEF(claim_batch); DEF(max_inflight);
	DEF(preread_ms); DEF(claim_interval_ms); DEF(lease_ms); DEF(heartbeat_ms);
	DEF(flush_ms); DEF(kill_grace_ms); DEF(maintenance_ms);
#undef DEF
	if (n->cfg.grace_ms < 0)
		n->cfg.grace_ms = def.grace_ms;
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	n->host = dbcron__strdup(host);
	if (has_file) {
		dbcron_err e = {0};
		int rc = store_url_file_read(cfg->db_file, &n->db_url, &e);
		if (rc) {
			dbcron_node_free(n);
			return dbcron_err_set(err, rc, "node: %s: %s", cfg->db_file, e.msg);
		}
		/* no shell job of this node is handed the file */
		runas_secret_file_add(cfg->db_file);
	} else {
		n->db_url = dbcron__strdup(cfg->db_url);
	}
	if (cfg->notify_secret_file && *cfg->notify_secret_file)
		runas_secret_file_add_as(cfg->notify_secret_file, "notify secret file");
	if (cfg->node_id && *cfg->node_id) {
		n->node_id = dbcron__strdup(cfg->node_id);
	} else {
		char id[300];
		snprintf(id, sizeof(id), "%s-%d", host, (int)getpid());
		n->node_id = dbcron__strdup(id);
	}
	if (!n->host || !n->db_url || !n->node_id) {
		dbcron_node_free(n);
		return dbcron_err_set(err, DBCRON_ENOMEM, "node: out of memory");
	}
	n->cfg.db_url = n->db_url;
	n->cfg.node_id = n->node_id;
	n->stats.node_id = n->node_id;
	atomic_store(&n->stats.lease_until_ms, -1);
	pthread_mutex_init(&n->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->timer_cv, &ca);
	pthread_cond_init(&n->db_cv, &ca);
	pthread_condattr_destroy(&ca);
	timer_init(&n->heap);
	*out = n;
	return DBCRON_OK;
}

void dbcron_node_stop(dbcron_node *n)
{
	atomic_store(&n->stop_requested, 1);
	/* The db thread polls stop_requested at least every flush/claim
	 * interval; no lock here so this stays async-signal-safe. */
}

void dbcron_node_stop_now(dbcron_node *n)
{
	atomic_store(&n->stop_now, 1);
	atomic_store(&n->stop_requested, 1);
}

/* After the db loop: nothing new starts, every fire ends or goes back. */
static void graceful_stop(dbcron_node *n)
{
	dispatch_stop(n);
	dbcron__log(LOG_INFO, "node.stopping", LOG_STR("node", n->node_id));
	dbloop_hand_back(n);
	dbloop_drain(n);
	pool_destroy(n->fast, NULL);
	pool_destroy(n->slow, NULL);
	n->fast = n->slow = NULL;
	dbloop_finish(n);
	dbcron__log(LOG_INFO, "node.stop", LOG_STR("node", n->node_id),
		    LOG_UINT("claims", n->n_claims), LOG_UINT("claimed", n->n_claimed),
		    LOG_UINT("finished", n->n_finished), LOG_UINT("skipped", n->n_skipped),
		    LOG_UINT("fenced", n->n_fenced), LOG_UINT("statements", n->st->stmt_count),
		    LOG_INT("claim_ms", n->claim_ms_sum),
		    LOG_INT("claim_ms_max", n->claim_ms_max), LOG_UINT("job_states", n->jobs.used));
}

static int node_run(dbcron_node *n, dbcron_err *err);

/* How long deliveries in progress may go on once the node stops: 2 s,
 * and at most a quarter of the lease, since the db thread waits for them
 * without renewing it (the heartbeat resumes in graceful_stop). */
static int64_t react_cut_ms(const dbcron_node *n)
{
	if (atomic_load(&n->stop_now))
		return 0;
	return n->cfg.lease_ms / 4 < 2000 ? n->cfg.lease_ms / 4 : 2000;
}

/* The delivery thread has results for the db thread. */
static void react_kicked(void *ctx)
{
	dbcron_node *n = ctx;
	pthread_mutex_lock(&n->mu);
	dbloop_kick(n);
	pthread_mutex_unlock(&n->mu);
}

/* The caller's thread is the node's db thread while it runs: its lines go
 * to the node's sink until the node returns. */
int dbcron_node_run(dbcron_node *n, dbcron_err *err)
{
	const dbcron__log_sink *prev = dbcron__log_bind(&n->log);
	int rc = node_run(n, err);
	dbcron__log_bind(prev);
	return rc;
}

static int node_run(dbcron_node *n, dbcron_err *err)
{
	int rc = store_open(n->db_url, &n->st, err);
	if (rc)
		return rc;
	store_count_errors(n->st, n->stats.db_errors);
	/* Loud, so that a test build that reached a real deployment is seen
	 * at once in its log rather than through odd failures. */
	const char *faults = store_fault_env();
	if (faults)
		dbcron__log(LOG_WARN, "node.faults_armed", LOG_STR("node", n->node_id),
			    LOG_STR("faults", faults),
			    LOG_STR("warning", "test build: statements will fail on purpose"));
	rc = store_check_schema(n->st, err);
	if (rc)
		goto out_close;
	rc = store_tune_for_node(n->st, n->cfg.lease_ms, err);
	if (rc)
		goto out_close;
	rc = planner_create(&n->plan, err);
	if (rc)
		goto out_close;
	size_t qcap = (size_t)n->cfg.max_inflight;
	rc = pool_create("fast", n->cfg.workers, qcap, &n->fast, err);
	if (rc)
		goto out_planner;
	rc = pool_create("slow", n->cfg.slow_workers, qcap, &n->slow, err);
	if (rc)
		goto out_fast;
	rc = dbloop_join(n, err);
	if (rc)
		goto out_slow;
	dbcron__log(LOG_INFO, "node.start", LOG_STR("node", n->node_id),
		    LOG_STR("incarnation", n->incarnation), LOG_STR("backend", store_name(n->st)),
		    LOG_INT("workers", n->cfg.workers), LOG_INT("claim_batch", n->cfg.claim_batch),
		    LOG_INT("preread_ms", n->cfg.preread_ms), LOG_INT("lease_ms", n->cfg.lease_ms));

	rc = dispatch_start(n, err);
	if (rc)
		goto out_slow;
	react_config rcfg = {.node_id = n->node_id, .secret_file = n->cfg.notify_secret_file,
			     .kick = react_kicked, .kick_ctx = n, .log = &n->log};
	if ((rc = react_start(&rcfg, &n->react, err))) {
		dbcron_node_stop_now(n);
		graceful_stop(n);
		goto out_slow;
	}
	if (n->cfg.alive)
		n->cfg.alive(n->cfg.alive_ctx);
	dbloop_run(n);
	/* the deliveries first, so that what was claimed and not delivered
	 * goes back (pending now) before the node is marked stopped */
	react_stop(n->react, react_cut_ms(n));
	react_finish(n->react, n->st);
	n->react = NULL;
	graceful_stop(n);
	rc = DBCRON_OK;
	pthread_mutex_lock(&n->mu);
	if (n->fatal.code) {
		rc = n->fatal.code;
		if (err)
			*err = n->fatal;
	}
	pthread_mutex_unlock(&n->mu);
out_slow:
	if (n->slow)
		pool_destroy(n->slow, NULL);
	n->slow = NULL;
out_fast:
	if (n->fast)
		pool_destroy(n->fast, NULL);
	n->fast = NULL;
out_planner:
	planner_free(n->plan);
	n->plan = NULL;
out_close:
	store_close(n->st);
	n->st = NULL;
	return rc;
}

static void discard_list(fire_list *l)
{
	for (fire *f; (f = fire_list_pop(l));)
		fire_discard(f);
}

void dbcron_node_free(dbcron_node *n)
{
	if (!n)
		return;
	/* Fires first: they hold snapshots that point into the job states. */
	timer_node *t;
	while ((t = timer_pop(&n->heap)))
		fire_discard((fire *)t);
	timer_free(&n->heap);
	discard_list(&n->pending);
	discard_list(&n->sync);
	for (size_t i = 0; i < n->jobs.nslots; i++)
		if (n->jobs.slots[i])
			discard_list(&n->jobs.slots[i]->held);
	inflight_jobs_free(&n->jobs);
	exec_handler_names_free(n->handlers, n->nhandlers);
	dbcron__free(n->slow_ids);
	dbcron__free(n->slow_cand);
	dbcron__free(n->db_url);
	dbcron__free(n->node_id);
	dbcron__free(n->host);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->timer_cv);
	pthread_cond_destroy(&n->db_cv);
	node_stats_free(&n->stats);
	dbcron__free(n);
}

node_stats *dbcron__node_stats(dbcron_node *n)
{
	return n ? &n->stats : NULL;
}
