/*
 * Nodes: register (one process per node id), the heartbeat that is every
 * node's fence, the handlers a node can run, a graceful stop and the
 * hand-back of claimed runs, waiting until every node saw a change, the
 * reap of lost nodes and its safety net, and the node listing.
 *
 * Invariants: no silent loss (invariant 2, store_int.h): a lost node's
 * runs go back to the pool when they cannot have started, and end
 * ABANDONED with what model_lost_followup() says when they may have; a
 * run of a deleted job left unclaimed ends ABANDONED "job deleted"; a node
 * reaps only leases that ended before its own previous heartbeat, so a
 * stall of the whole database declares nobody dead.
 */
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "core/text.h"
#include "model/rules.h"
#include "model/target.h"
#include "store/store_int.h"

static const store_bcol lost_cols[] = {BC_TEXT, BC_I64}; /* node, its lease_until */

/*
 * Unclaimed SCHEDULED runs of deleted jobs end ABANDONED "job deleted" at
 * now: no claim can take them (it needs the job), so a run handed back to
 * the pool after its job was deleted (a lost node's pre-claimed fires, a
 * graceful stop or a hand-back racing the delete) would otherwise wait
 * SCHEDULED forever.  Fenced by `node IS NULL`: a run some node holds is
 * left to that node (it ends it itself) or to its reap.  In the caller's
 * transaction; *closed (may be NULL) counts them.
 */
static int close_deleted(store *s, int64_t now, int64_t *closed, dbcron_err *err)
{
	store_param p[] = {sp_i64(now)};
	return store__run(s, ST_RUNS_CLOSE_ORPHANS, p, 1, closed, err);
}

struct abandoned {
	int64_t run_id, job_id;
	int attempt;
	bool start_written;
};

/* RUNS_ABANDON_LOST's rows (run, job, -, attempt, start written) into
 * *ab, *nab of them (owned by the caller). */
static int read_abandoned(store *s, struct abandoned **ab, size_t *nab, dbcron_err *err)
{
	size_t cap = 0;
	int rc = DBCRON_OK, row;
	while ((row = store__next(s, err)) == 1) {
		if (dbcron__grow((void **)ab, &cap, *nab + 1, sizeof(**ab))) {
			rc = store__oom(err, "reap");
			break;
		}
		(*ab)[(*nab)++] = (struct abandoned){store__i64(s, 0), store__i64(s, 1),
						     (int)store__i64(s, 3),
						     !s->d->col_null(s->c, 4)};
	}
	store__reset(s);
	return rc ? rc : row < 0 ? -row : DBCRON_OK;
}

/*
 * The runs of the nodes in `nodes` (a batch of [id, lease_until]) are
 * lost.  A node starts a fire only while its lease lasts and only if the
 * fire is due before the lease's end (docs/scheduler.md "Leases"), and it
 * writes RUNNING after the start, in a batch.  So a SCHEDULED run due at or
 * after lease_until never started: it goes back to the pool.  A RUNNING
 * run, and a SCHEDULED one due before lease_until (it may have started
 * with its write lost), end ABANDONED and get what model_lost_followup()
 * says, and when that is no retry, its --on-failure events (an abandoned
 * run is a final failure).  Inside the caller's transaction.  A run whose
 * completion landed first is terminal and left alone.
 */
static int resolve_lost(store *s, const store_batch *nodes, int64_t now, size_t *touched,
			dbcron_err *err)
{
	struct abandoned *ab = NULL;
	size_t nab = 0;
	int64_t unclaimed = 0;
	store_claim_result jobs;
	size_t jobs_cap = 0;
	store_outbox ev = {0};
	int rc;

	memset(&jobs, 0, sizeof(jobs));
	store_param p[] = {sp_i64(now), sp_batch(nodes)};
	/* A run someone asked to cancel ends CANCELLED whatever else the reap
	 * would do with it: never retried, never handed back (issue 27). */
	int64_t cancelled = 0;
	if ((rc = store__run(s, ST_RUNS_CANCEL_LOST, p, 2, &cancelled, err)))
		return rc;
	if ((rc = store__exec(s, ST_RUNS_ABANDON_LOST, p, 2, err)) ||
	    (rc = read_abandoned(s, &ab, &nab, err)))
		goto out_free;
	store_param up[] = {sp_batch(nodes)};
	/* An every-node run is that node's own (docs/scheduler.md "Every
	 * node"): one left SCHEDULED ends ABANDONED, claimed or not, rather
	 * than going back to a pool no other node may take it from.  Then
	 * (the abandons ran first, so what is left SCHEDULED is unstarted)
	 * the rest go back; those of jobs deleted meanwhile cannot be claimed
	 * again */
	int64_t pinned = 0;
	if ((rc = store__run(s, ST_RUNS_ABANDON_PINNED, p, 2, &pinned, err)) ||
	    (rc = store__run(s, ST_RUNS_UNCLAIM_LOST, up, 1, &unclaimed, err)) ||
	    (unclaimed && (rc = close_deleted(s, now, NULL, err))))
		goto out_free;
	if (nab) {
		store_batch *ids = store__scratch(s, 1, 1, store__ids_cols);
		for (size_t i = 0; i < nab; i++)
			store_batch_i64(ids, ab[i].job_id);
		if (ids->oom) {
			rc = store__oom(err, "reap");
			goto out_free;
		}
		store_param jp[] = {sp_batch(ids)};
		if ((rc = store__exec(s, ST_JOBS_BY_IDS, jp, 1, err)) ||
		    (rc = store__read_jobs_into(s, 0, &jobs, &jobs_cap, NULL, err)))
			goto out_free;
		dbcron__sort(jobs.jobs, jobs.njobs, sizeof(*jobs.jobs), store__job_id_cmp);
		store_batch *retry = store__scratch(s, 2, 2, store__pair_cols);
		store_batch *next = store__scratch(s, 3, 2, store__pair_cols);
		store__outbox_begin(s, &ev, 4);
		for (size_t i = 0; i < nab; i++) {
			const dbcron_job *j = store__find_job(&jobs, ab[i].job_id);
			if (!j) /* deleted: nothing to retry, nobody to tell */
				continue;
			model_followup f = model_lost_followup(j, ab[i].attempt, ab[i].start_written,
							       now);
			/* every-node work is per host: its retry would wait for
			 * the lost node alone, so there is none */
			bool again = f.retry_due_at >= 0 && !j->on_every_node;
			/* abandoned with no retry following is a final failure:
			 * its event in the reap's transaction (issue 26) */
			int kind = model_react_kind_of(DBCRON_RUN_ABANDONED, again);
			store__outbox_add(&ev, ab[i].run_id, kind, model_react_targets(j, kind));
			if (again) {
				store_batch_i64(retry, ab[i].run_id);
				store_batch_i64(retry, f.retry_due_at);
			}
			if (f.job_next_fire_at >= 0) {
				store_batch_i64(next, j->id);
				store_batch_i64(next, f.job_next_fire_at);
			}
		}
		if (retry->oom || next->oom) {
			rc = store__oom(err, "reap");
			goto out_free;
		}
		store_param rp[] = {sp_i64(now), sp_batch(retry)};
		store_param np[] = {sp_batch(next)};
		if ((store_batch_rows(retry) && (rc = store__run(s, ST_RETRY_INSERT, rp, 2, NULL, err))) ||
		    (store_batch_rows(next) &&
		     (rc = store__run(s, ST_JOBS_NEXT_IF_NULL, np, 1, NULL, err))) ||
		    (rc = store__outbox_write(s, &ev, now, err)))
			goto out_free;
	}
	if (touched)
		*touched = nab + (size_t)unclaimed + (size_t)cancelled + (size_t)pinned;
out_free:
	store__outbox_free(&ev);
	store_claim_result_clear(&jobs);
	dbcron__free(ab);
	return rc;
}

int store_node_register(store *s, const store_node_info *n, dbcron_err *err)
{
	int64_t now;
	int rc, row;

	if (!n || !n->node_id || !*n->node_id || !n->incarnation || n->lease_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "node_register: node id, incarnation and a lease are required");
	if ((rc = dbcron__name_check("node id", n->node_id, true, err)))
		return rc;
	if ((rc = store__tx_begin(s, err)))
		return rc;
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	/* One process per node id: two would fence each other every
	 * heartbeat and reap each other's running work.  A live lease of
	 * another incarnation refuses; a lapsed one is a predecessor that
	 * died, and what it still holds is resolved as reap would (pg_cron
	 * resolves orphans at start-up). */
	store_param gp[] = {sp_text(n->node_id)};
	int64_t lease_until = now;
	row = store__row(s, ST_NODE_GET, gp, 1, err);
	if (row < 0) {
		rc = -row;
		goto out_rollback;
	}
	if (row) {
		const char *inc = s->d->col_text(s->c, 0), *state = s->d->col_text(s->c, 1);
		lease_until = store__i64(s, 2);
		if (state && strcmp(state, "alive") == 0 && lease_until >= now &&
		    (!inc || strcmp(inc, n->incarnation) != 0)) {
			const char *host = s->d->col_text(s->c, 3);
			rc = dbcron_err_set(err, DBCRON_EEXISTS,
					    "node id '%s' is in use by a live node (host %s, pid %lld; "
					    "its lease runs %lld ms more): give each node its own "
					    "--node-id",
					    n->node_id, host ? host : "?", (long long)store__i64(s, 4),
					    (long long)(lease_until - now));
			store__reset(s);
			goto out_rollback;
		}
		store__reset(s);
	}
	store_batch *nodes = store__scratch(s, 0, 2, lost_cols);
	store_batch_text(nodes, n->node_id);
	store_batch_i64(nodes, lease_until);
	if (nodes->oom) {
		rc = store__oom(err, "node register");
		goto out_rollback;
	}
	if ((rc = resolve_lost(s, nodes, now, NULL, err)))
		goto out_rollback;
	store_param p[] = {sp_text(n->node_id), sp_text(n->incarnation), sp_text(n->host),
			   sp_i64(n->pid), sp_i64(n->workers), sp_i64(now), sp_i64(n->lease_ms)};
	if ((rc = store__run(s, ST_NODE_UPSERT, p, 7, NULL, err)))
		goto out_rollback;
	/* Routing: what this process can run replaces what an earlier one
	 * of the same node id could, in the transaction that makes it alive. */
	store_param hp[] = {sp_text(n->node_id)};
	if ((rc = store__run(s, ST_NODE_HANDLERS_CLEAR, hp, 1, NULL, err)))
		goto out_rollback;
	if (n->nhandlers) {
		store_batch *names = store__scratch(s, 1, 1, store__names_cols);
		for (size_t i = 0; i < n->nhandlers; i++)
			store_batch_text(names, n->handlers[i]);
		if (names->oom) {
			rc = store__oom(err, "node register");
			goto out_rollback;
		}
		store_param ap[] = {sp_text(n->node_id), sp_batch(names)};
		if ((rc = store__run(s, ST_NODE_HANDLERS_ADD, ap, 2, NULL, err)))
			goto out_rollback;
	}
	if ((rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	return rc;
}

int store_node_heartbeat(store *s, const char *node_id, const char *incarnation,
			 int64_t lease_ms, int64_t *db_now_out, dbcron_err *err)
{
	return store_node_beat(s, node_id, incarnation, lease_ms, -1, db_now_out, NULL, err);
}

int store_node_beat(store *s, const char *node_id, const char *incarnation, int64_t lease_ms,
		    int64_t seen_gen, int64_t *db_now_out, int64_t *jobs_gen, dbcron_err *err)
{
	if (!node_id || !incarnation || lease_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "heartbeat: node id, incarnation and a lease are required");
	store_param p[] = {sp_text(node_id), sp_text(incarnation), sp_i64(lease_ms),
			   sp_i64(seen_gen)};
	int row = store__row(s, ST_NODE_HEARTBEAT, p, 4, err);
	if (row < 0)
		return -row;
	if (row == 0)
		return dbcron_err_set(err, DBCRON_EFENCED,
				      "node '%s': lease lost (declared dead or replaced by "
				      "another process); its runs belong to others now",
				      node_id);
	if (db_now_out)
		*db_now_out = store__i64(s, 0);
	if (jobs_gen)
		*jobs_gen = store__i64(s, 1);
	store__reset(s);
	return DBCRON_OK;
}

int store_node_handlers_add(store *s, const char *node_id, const char *incarnation,
			    int64_t lease_ms, const char *const *handlers, size_t n,
			    int64_t *db_now_out, dbcron_err *err)
{
	int rc;

	if (!node_id || !incarnation || lease_ms <= 0 || (n && !handlers))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "node handlers: node id, incarnation and a lease are required");
	store_batch *names = store__scratch(s, 1, 1, store__names_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_text(names, handlers[i]);
	if (names->oom)
		return store__oom(err, "node handlers");
	if ((rc = store__tx_begin(s, err)))
		return rc;
	/* the beat first: it is the fence (and, where rows lock, it holds
	 * the node's row until the names are in) */
	if ((rc = store_node_beat(s, node_id, incarnation, lease_ms, -1, db_now_out, NULL, err)))
		goto out_rollback;
	store_param ap[] = {sp_text(node_id), sp_batch(names)};
	if (n && (rc = store__run(s, ST_NODE_HANDLERS_ADD, ap, 2, NULL, err)))
		goto out_rollback;
	if ((rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	return rc;
}

/*
 * After a pause or delete: wait until every node with a live lease has
 * reported (in its heartbeat) the jobs generation that change made, so
 * none of them starts a fire it had claimed before.  A node whose lease
 * lapses meanwhile starts nothing anyway.  DBCRON_ETIMEOUT names a node
 * that did neither within timeout_ms.
 */
int store_nodes_wait_seen(store *s, int64_t timeout_ms, dbcron_err *err)
{
	int64_t gen = 0;
	int row = store__row(s, ST_META_GEN, NULL, 0, err);
	if (row < 0)
		return -row;
	if (row) {
		gen = store__i64(s, 0);
		store__reset(s);
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		store_param p[] = {sp_i64(gen)};
		row = store__row(s, ST_NODES_LAGGING, p, 1, err);
		if (row < 0)
			return -row;
		if (row == 0)
			return DBCRON_OK;
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int64_t waited = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (waited >= timeout_ms) {
			const char *id = s->d->col_text(s->c, 0);
			int rc = dbcron_err_set(err, DBCRON_ETIMEOUT,
						"node '%s' has not confirmed the change within %lld ms "
						"(its lease runs %lld ms more): it may still start fires "
						"of the job it had claimed",
						id ? id : "?", (long long)waited, (long long)store__i64(s, 1));
			store__reset(s);
			return rc;
		}
		store__reset(s);
		struct timespec ts = {0, 50 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* A stopping node's every-node runs end ABANDONED: they are its own and
 * no other node may take them (docs/scheduler.md "Every node"). */
static int abandon_pinned(store *s, const char *node_id, int64_t now, dbcron_err *err)
{
	store_batch *nodes = store__scratch(s, 0, 2, lost_cols);
	store_batch_text(nodes, node_id);
	store_batch_i64(nodes, now);
	if (nodes->oom)
		return store__oom(err, "node stop");
	store_param p[] = {sp_i64(now), sp_batch(nodes)};
	return store__run(s, ST_RUNS_ABANDON_PINNED, p, 2, NULL, err);
}

int store_node_stop(store *s, const char *node_id, const char *incarnation, dbcron_err *err)
{
	int64_t n = 0;
	int rc;
	if (!node_id || !incarnation)
		return dbcron_err_set(err, DBCRON_EINVAL, "node_stop: node id and incarnation are required");
	if ((rc = store__tx_begin(s, err)))
		return rc;
	store_param p[] = {sp_text(node_id), sp_text(incarnation)};
	/* Stopped nodes are not reaped: one that still owns a RUNNING run
	 * (an outcome it could not write) stays alive, and when its lease
	 * lapses reap resolves the run. */
	int row = store__row(s, ST_NODE_RUNNING, p, 1, err);
	if (row < 0) {
		rc = -row;
		goto out_rollback;
	}
	int64_t running = row ? store__i64(s, 0) : 0;
	if (row)
		store__reset(s);
	if (running > 0) {
		rc = dbcron_err_set(err, DBCRON_EBUSY,
				    "node '%s' still owns %lld running run(s): left to lapse, "
				    "so that another node resolves them",
				    node_id, (long long)running);
		goto out_rollback;
	}
	if ((rc = store__run(s, ST_NODE_STOP, p, 2, &n, err)))
		goto out_rollback;
	if (n == 0) {
		/* Reaped already: its runs were resolved by another node. */
		rc = dbcron_err_set(err, DBCRON_EFENCED,
				    "node '%s': lease lost before the stop; nothing handed back",
				    node_id);
		goto out_rollback;
	}
	int64_t now, unclaimed = 0;
	if ((rc = store__run(s, ST_RUNS_UNCLAIM_NODE, p, 1, &unclaimed, err)) ||
	    (rc = store__db_now(s, &now, err)) ||
	    (unclaimed && (rc = close_deleted(s, now, NULL, err))) ||
	    (rc = abandon_pinned(s, node_id, now, err)))
		goto out_rollback;
	/* the node's own change, whoever holds the handle */
	char actor[STORE_ACTOR_MAX];
	dbcron__textf(actor, sizeof(actor), "node:%s", node_id);
	store_audit a;
	store__audit_begin(s, &a);
	store__audit_add(&a, "node-stop", NULL,
			 json_pack("{sssI}", "node", node_id, "handed_back", (json_int_t)unclaimed));
	rc = store__audit_write(s, &a, actor, err);
	store__audit_free(&a);
	if (rc || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	return rc;
}

int store_runs_release(store *s, const char *node_id, const int64_t *ids,
		       const char *const *tokens, size_t n, dbcron_err *err)
{
	static const store_bcol cols[] = {BC_I64, BC_TEXT};
	if (n == 0)
		return DBCRON_OK;
	if (!node_id || !ids || !tokens)
		return dbcron_err_set(err, DBCRON_EINVAL, "release: node, ids and tokens are required");
	store_batch *b = store__scratch(s, 0, 2, cols);
	for (size_t i = 0; i < n; i++) {
		store_batch_i64(b, ids[i]);
		store_batch_text(b, tokens[i]);
	}
	if (b->oom)
		return store__oom(err, "release");
	store_param p[] = {sp_text(node_id), sp_batch(b)};
	int64_t now, released = 0;
	int rc;
	/* a run of a job deleted since it was claimed ends here */
	if ((rc = store__tx_begin(s, err)) || (rc = store__run(s, ST_RUNS_RELEASE, p, 2, &released, err)) ||
	    (released && ((rc = store__db_now(s, &now, err)) || (rc = close_deleted(s, now, NULL, err)))) ||
	    (rc = store__tx_commit(s, err)))
		store__tx_rollback(s);
	return rc;
}

int store_runs_release_claim(store *s, const char *node_id, const char *token, size_t *released,
			     dbcron_err *err)
{
	if (!node_id || !token)
		return dbcron_err_set(err, DBCRON_EINVAL, "release: node and token are required");
	store_param p[] = {sp_text(node_id), sp_text(token)};
	int64_t ch = 0, now;
	int rc;
	/* a run of a job deleted since it was claimed ends here */
	if ((rc = store__tx_begin(s, err)) || (rc = store__run(s, ST_RUNS_RELEASE_CLAIM, p, 2, &ch, err)) ||
	    (ch && ((rc = store__db_now(s, &now, err)) || (rc = close_deleted(s, now, NULL, err)))) ||
	    (rc = store__tx_commit(s, err))) {
		store__tx_rollback(s);
		ch = 0;
	}
	if (released)
		*released = (size_t)ch;
	return rc;
}

/* The rows (id, lease_until) of lost nodes under the cursor, into the
 * batch for resolve_lost(); the names are owned by *names (free_names). */
static int read_lost(store *s, store_batch *nodes, char ***names_out, size_t *nn_out,
		     dbcron_err *err)
{
	char **names = NULL;
	int64_t *leases = NULL;
	size_t nn = 0, cap = 0, lcap = 0;
	int rc = DBCRON_OK, row;
	while ((row = store__next(s, err)) == 1) {
		const char *id = s->d->col_text(s->c, 0);
		if (dbcron__grow((void **)&names, &cap, nn + 1, sizeof(*names)) ||
		    dbcron__grow((void **)&leases, &lcap, nn + 1, sizeof(*leases)) ||
		    !(names[nn] = dbcron__strdup(id ? id : ""))) {
			rc = store__oom(err, "reap");
			break;
		}
		leases[nn++] = store__i64(s, 1);
	}
	store__reset(s);
	if (row < 0)
		rc = -row;
	for (size_t i = 0; i < nn; i++) {
		store_batch_text(nodes, names[i]);
		store_batch_i64(nodes, leases[i]);
	}
	dbcron__free(leases);
	if (!rc && nodes->oom)
		rc = store__oom(err, "reap");
	*names_out = names;
	*nn_out = nn;
	return rc;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dbcron__free(names[i]);
	dbcron__free(names);
}

/* The lost nodes under the cursor (id, lease_until) resolved, and the
 * caller's transaction committed; on error the caller rolls back. */
static int resolve_listed(store *s, int64_t now, size_t *touched, dbcron_err *err)
{
	char **names = NULL;
	size_t nn = 0;
	store_batch *nodes = store__scratch(s, 0, 2, lost_cols);
	int rc = read_lost(s, nodes, &names, &nn, err);
	if (!rc && nn)
		rc = resolve_lost(s, nodes, now, touched, err);
	if (!rc)
		rc = store__tx_commit(s, err);
	free_names(names, nn);
	return rc;
}

/*
 * The safety net of reap: live runs held by nodes that are not alive (a
 * stop or a reap that happened before this rule, a row edited by hand)
 * are resolved as a lost node's are, with that node's lease_until; and
 * unclaimed runs of deleted jobs, however they got there, end ABANDONED
 * "job deleted" (close_deleted).
 */
int store_reap_orphans(store *s, size_t *resolved, dbcron_err *err)
{
	int64_t now, closed = 0;
	size_t n = 0;
	int rc;
	if (resolved)
		*resolved = 0;
	if ((rc = store__tx_begin(s, err)))
		return rc;
	if ((rc = store__db_now(s, &now, err)) || (rc = close_deleted(s, now, &closed, err)) ||
	    (rc = store__exec(s, ST_NODES_ORPHANED, NULL, 0, err)))
		goto out_rollback;
	if ((rc = resolve_listed(s, now, &n, err)) == DBCRON_OK) {
		if (resolved)
			*resolved = n + (size_t)closed;
		return DBCRON_OK;
	}
out_rollback:
	store__tx_rollback(s);
	if (resolved)
		*resolved = 0;
	return rc;
}

int store_reap(store *s, size_t *reaped, dbcron_err *err)
{
	return store_reap_before(s, -1, reaped, err);
}

int store_tune_for_node(store *s, int64_t lease_ms, dbcron_err *err)
{
	if (lease_ms <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "tune: a lease is required");
	return s->d->tune ? s->d->tune(s->c, lease_ms, err) : DBCRON_OK;
}

/*
 * A lease that ended is a lost node only if the database could be written
 * meanwhile: a write lock held for longer than the lease (a big apply, an
 * operator's open transaction, a node frozen inside one) stalls every
 * heartbeat at once, and the first writer afterwards must not declare the
 * others dead.  So a node reaps only leases that ended before its own
 * previous successful heartbeat (`before`): it could write then, and so
 * could they.  A real death is seen one heartbeat later than the lease.
 */
int store_reap_before(store *s, int64_t before, size_t *reaped, dbcron_err *err)
{
	int64_t now;
	int rc, row;

	if (reaped)
		*reaped = 0;
	if (before < 0 && (rc = store__db_now(s, &before, err)))
		return rc;
	/* The common case, nobody lost, is one read and no transaction. */
	store_param lp[] = {sp_i64(before)};
	row = store__row(s, ST_NODES_LAPSED, lp, 1, err);
	if (row <= 0)
		return row < 0 ? -row : DBCRON_OK;
	store__reset(s);
	if ((rc = store__tx_begin(s, err)))
		return rc;
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	store_param p[] = {sp_i64(before < now ? before : now)};
	if ((rc = store__exec(s, ST_NODES_EXPIRE, p, 1, err)))
		goto out_rollback;
	if ((rc = resolve_listed(s, now, reaped, err)) == DBCRON_OK)
		return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	if (reaped)
		*reaped = 0;
	return rc;
}

struct node_each {
	store_node_cb cb;
	void *ctx;
};

static int node_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct node_each *e = arg;
	store_node_row r;
	memset(&r, 0, sizeof(r));
	const char *id = s->d->col_text(s->c, 0), *host = s->d->col_text(s->c, 1),
		   *state = s->d->col_text(s->c, 4);
	r.pid = (int)store__i64(s, 2);
	r.workers = (int)store__i64(s, 3);
	r.started_ms = store__i64n(s, 5);
	r.heartbeat_ms = store__i64n(s, 6);
	r.lease_until = store__i64n(s, 7);
	r.running = store__i64(s, 8);
	if ((id && !(r.node_id = dbcron__strdup(id))) ||
	    (host && !(r.host = dbcron__strdup(host))) ||
	    (state && !(r.state = dbcron__strdup(state)))) {
		store_node_row_clear(&r);
		return store__oom(err, "listing nodes");
	}
	*stop = e->cb(e->ctx, &r) != 0;
	store_node_row_clear(&r);
	return DBCRON_OK;
}

int store_nodes_list(store *s, store_node_cb cb, void *ctx, dbcron_err *err)
{
	struct node_each e = {cb, ctx};
	return store__each_row(s, ST_NODES_LIST, NULL, 0, node_one, &e, err);
}

int store_nodes_prune(store *s, int64_t older_ms, int64_t *deleted, dbcron_err *err)
{
	int64_t now = 0, n = 0;
	int rc;
	if (deleted)
		*deleted = 0;
	if (older_ms < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "prune nodes: the age must not be negative");
	/* the cutoff on the database's clock (invariant 4), like every age */
	if ((rc = store_now_ms(s, &now, err)))
		return rc;
	store_param p[] = {sp_i64(now - older_ms)};
	rc = store__run(s, ST_NODES_PRUNE, p, 1, &n, err);
	if (deleted)
		*deleted = rc ? 0 : n;
	return rc;
}

int store_handlers_live(store *s, store_name_cb cb, void *ctx, dbcron_err *err)
{
	return store__each_name(s, ST_HANDLERS_LIVE, NULL, 0, cb, ctx, err);
}
