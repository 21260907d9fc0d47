/*
 * The claim: a node's one transaction that takes its due jobs (locked;
 * SKIP LOCKED where the database has it), plans their fires through the
 * node's planner, writes them, advances the jobs, and takes the unclaimed
 * runs (retries, triggers, hand-backs) within what is left of its budget;
 * with routing (issue 15), pools (issue 23 item 5) and the jobs set aside
 * whose rows no longer decode.
 *
 * Invariants (store_int.h): 1 only rows the fire insert returned are
 * handed out; overlap across nodes (issue 28 item 2, "Overlap across
 * nodes" below): a job another node holds a live run of is handed out
 * only when its policy allows overlap; 3 the runs closed here (a deleted job's, a stranded one's)
 * are written under the claim's own token; 5 at most req->max runs, and of
 * the node's slow jobs at most req->slow_max.  Two statements per pass
 * whatever the number of jobs (and one for the events of the fires and
 * runs it ended MISFIRED, when their jobs have --on-misfire targets).
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "core/text.h"
#include "model/rules.h"
#include "model/target.h"
#include "store/store_int.h"

int store__job_id_cmp(const void *a, const void *b)
{
	const dbcron_job *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int claimed_cmp(const void *a, const void *b)
{
	const store_claimed *x = a, *y = b;
	if (x->run.due_at != y->run.due_at)
		return x->run.due_at < y->run.due_at ? -1 : 1;
	if (x->run.job_id != y->run.job_id)
		return x->run.job_id < y->run.job_id ? -1 : 1;
	return x->run.attempt - y->run.attempt;
}

/* Priorities (issue 28 item 4): due jobs already due at the claim's now
 * (waiting for a slot, a worker, a node) go highest priority first, then
 * oldest; the ones ahead of now keep their instants' order, higher
 * priority first within one instant. */
static int due_now_cmp(const void *a, const void *b)
{
	const dbcron_job *x = a, *y = b;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->next_fire_at != y->next_fire_at)
		return x->next_fire_at < y->next_fire_at ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int due_ahead_cmp(const void *a, const void *b)
{
	const dbcron_job *x = a, *y = b;
	if (x->next_fire_at != y->next_fire_at)
		return x->next_fire_at < y->next_fire_at ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The due jobs jobs[0..n), read in next_fire_at order, in the order the
 * claim plans them (due_now_cmp, due_ahead_cmp). */
static void priority_order(dbcron_job *jobs, size_t n, int64_t now)
{
	size_t k = 0;
	while (k < n && jobs[k].next_fire_at <= now)
		k++;
	dbcron__sort(jobs, k, sizeof(*jobs), due_now_cmp);
	dbcron__sort(jobs + k, n - k, sizeof(*jobs), due_ahead_cmp);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

const dbcron_job *store__find_job(const store_claim_result *r, int64_t id)
{
	dbcron_job key;
	key.id = id;
	return r->njobs ? bsearch(&key, r->jobs, r->njobs, sizeof(*r->jobs), store__job_id_cmp) : NULL;
}

/* A claimed run from the current row: id, job_id, job_name, fire_at, then
 * attempt (or 1 when attempt_col < 0), due_at, missed at the columns given. */
static int add_claimed(store *s, store_claim_result *out, size_t *cap, int attempt_col,
		       int due_col, int missed_col, int params_col, const store_claim_req *req)
{
	if (dbcron__grow((void **)&out->runs, cap, out->nruns + 1, sizeof(*out->runs)))
		return DBCRON_ENOMEM;
	store_claimed *c = &out->runs[out->nruns];
	memset(c, 0, sizeof(*c));
	dbcron_run *r = &c->run;
	r->id = store__i64(s, 0);
	r->job_id = store__i64(s, 1);
	r->fire_at = store__i64(s, 3);
	r->attempt = attempt_col < 0 ? 1 : (int)store__i64(s, attempt_col);
	r->state = DBCRON_RUN_SCHEDULED;
	r->due_at = store__i64(s, due_col);
	r->missed = store__i64(s, missed_col);
	r->started_ms = r->finished_ms = -1;
	out->nruns++;
	const char *name = s->d->col_text(s->c, 2);
	if (!(r->job_name = dbcron__strdup(name ? name : "")) ||
	    !(r->node = dbcron__strdup(req->node_id)) ||
	    !(r->claim_token = dbcron__strdup(req->token)))
		return DBCRON_ENOMEM;
	const char *params = params_col < 0 ? NULL : s->d->col_text(s->c, params_col);
	if (params && !(r->params = dbcron__strdup(params)))
		return DBCRON_ENOMEM;
	return DBCRON_OK;
}

/* Note job (id, name) as set aside for `why`; the claim writes it. */
static int add_aside(store_claim_result *out, int64_t id, const char *name, const char *why,
		     dbcron_err *err)
{
	size_t cap = out->naside; /* grown one at a time: a rare path */
	if (dbcron__grow((void **)&out->aside, &cap, out->naside + 1, sizeof(*out->aside)))
		return store__oom(err, "claim");
	store_aside *a = &out->aside[out->naside];
	a->job_id = id;
	a->name = name ? dbcron__strdup(name) : NULL;
	a->why = dbcron__strdup(why && *why ? why : "unknown reason");
	if ((name && !a->name) || !a->why) {
		dbcron__free(a->name);
		dbcron__free(a->why);
		return store__oom(err, "claim");
	}
	out->naside++;
	return DBCRON_OK;
}

/* Ids of the due jobs CLAIM_DUE_JOBS read busy elsewhere (its busy column). */
typedef struct claim_ids {
	int64_t *v;
	size_t n, cap;
} claim_ids;

/* The jobs of a claim's read; a row that does not decode is set aside
 * rather than failing the claim for every other job.  With busy, column
 * c0 - 1 is CLAIM_DUE_JOBS' busy column: the ids of the rows where it is
 * not 0 are appended. */
static int read_jobs(store *s, int c0, store_claim_result *out, size_t *cap, int64_t *now,
		     claim_ids *busy, dbcron_err *err)
{
	int row, rc = DBCRON_OK;
	while ((row = store__next(s, err)) == 1) {
		if (now)
			*now = store__i64(s, 0);
		if (s->d->col_null(s->c, c0))
			continue;
		if (dbcron__grow((void **)&out->jobs, cap, out->njobs + 1, sizeof(*out->jobs))) {
			rc = store__oom(err, "claim");
			break;
		}
		if (busy && store__i64(s, c0 - 1) != 0) {
			if (dbcron__grow((void **)&busy->v, &busy->cap, busy->n + 1,
					 sizeof(*busy->v))) {
				rc = store__oom(err, "claim");
				break;
			}
			busy->v[busy->n++] = store__i64(s, c0);
		}
		dbcron_err why = {0};
		rc = store__read_job(s, c0, &out->jobs[out->njobs], &why);
		if (rc == DBCRON_ENOMEM) {
			*err = why;
			break;
		}
		if (rc) {
			char text[600];
			dbcron__textf(text, sizeof(text), "cannot decode its row: %s", why.msg);
			if ((rc = add_aside(out, store__i64(s, c0), s->d->col_text(s->c, c0 + 1), text,
					    err)))
				break;
			continue;
		}
		out->njobs++;
	}
	store__reset(s);
	return row < 0 ? -row : rc;
}

int store__read_jobs_into(store *s, int c0, store_claim_result *out, size_t *cap,
			  int64_t *now, dbcron_err *err)
{
	return read_jobs(s, c0, out, cap, now, NULL, err);
}

static const store_bcol aside_cols[] = {BC_I64, BC_TEXT};

/* Write the claim's set-aside jobs (in its transaction). */
static int write_aside(store *s, const store_claim_result *out, dbcron_err *err)
{
	if (!out->naside)
		return DBCRON_OK;
	store_batch *b = store__scratch(s, 2, 2, aside_cols);
	for (size_t i = 0; i < out->naside; i++) {
		store_batch_i64(b, out->aside[i].job_id);
		store_batch_text(b, out->aside[i].why);
	}
	if (b->oom)
		return store__oom(err, "claim");
	store_param p[] = {sp_batch(b)};
	return store__run(s, ST_JOBS_SET_ASIDE, p, 1, NULL, err);
}

static const store_aside *find_aside(const store_claim_result *out, int64_t job_id)
{
	for (size_t i = 0; i < out->naside; i++)
		if (out->aside[i].job_id == job_id)
			return &out->aside[i];
	return NULL;
}

static const store_bcol fire_cols[] = {BC_I64, BC_TEXT, BC_I64, BC_I64, BC_I64, BC_I64, BC_TEXT};
static const store_bcol advance_cols[] = {BC_I64, BC_I64};
/* JOBS_ADVANCE's: [id, next_fire_at, fires claimed as runs] */
static const store_bcol advance_fired_cols[] = {BC_I64, BC_I64, BC_I64};

/*
 * Routing (issue 15): the handler names the claiming node can run, as the
 * batch parameter of both claim statements, which take a handler job only
 * when its name is in it (commands always).  Scratch slot 4, its own.
 * NULL when out of memory.
 */
static const store_batch *routing(store *s, const store_claim_req *req)
{
	store_batch *b = store__scratch(s, 4, 1, store__names_cols);
	for (size_t i = 0; req->handlers && i < req->nhandlers; i++)
		store_batch_text(b, req->handlers[i]);
	return b->oom ? NULL : b;
}

/* Whether the claiming node can run job j (the rule both claim statements
 * apply in SQL, for the jobs they hand back). */
static bool runs_here(const store_claim_req *req, const dbcron_job *j)
{
	if (!req->handlers || j->executor != DBCRON_EXEC_HANDLER)
		return true;
	for (size_t i = 0; i < req->nhandlers; i++)
		if (j->handler && strcmp(req->handlers[i], j->handler) == 0)
			return true;
	return false;
}

/* Texts a batch borrows until its statement ran (routing's reasons, one
 * per stranded job), and the runs the claim ended MISFIRED, as pairs
 * [run id, job id], for their events; freed together. */
typedef struct claim_texts {
	char **v;
	size_t n, cap;
	int64_t *mis;
	size_t nmis, miscap;
} claim_texts;

/* Note run_id (of job_id) as ended MISFIRED by this claim. */
static int claim_misfired(claim_texts *t, int64_t run_id, int64_t job_id, dbcron_err *err)
{
	if (dbcron__grow((void **)&t->mis, &t->miscap, 2 * (t->nmis + 1), sizeof(*t->mis)))
		return store__oom(err, "claim");
	t->mis[2 * t->nmis] = run_id;
	t->mis[2 * t->nmis + 1] = job_id;
	t->nmis++;
	return DBCRON_OK;
}

static const char *claim_text_keep(claim_texts *t, const char *text)
{
	char *copy = dbcron__strdup(text);
	if (!copy || dbcron__grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v))) {
		dbcron__free(copy);
		return NULL;
	}
	return t->v[t->n++] = copy;
}

static void claim_texts_free(claim_texts *t)
{
	for (size_t i = 0; i < t->n; i++)
		dbcron__free(t->v[i]);
	dbcron__free(t->v);
	dbcron__free(t->mis);
	memset(t, 0, sizeof(*t));
}

/* Routing's MISFIRED reason for job j, kept in t; NULL when out of memory. */
static const char *stranded_why(claim_texts *t, const dbcron_job *j)
{
	char why[400];
	return claim_text_keep(t, model_unrunnable_why(j->handler, why, sizeof(why)));
}

/*
 * Pools (issue 23 item 5).  A node runs the jobs it has demoted (slow
 * lately) on its slow pool, whose few workers can start only so many of
 * their fires on time.  A claim sized from the fast pool alone would
 * queue the slow jobs' fires behind the slow workers, to start late or be
 * skipped, while the fast workers idled and no other node could take
 * them.  So the claim runs in passes over the same two statements, each
 * pass taking one pool's jobs up to that pool's limit:
 *
 *   POOL_ANY       every job, up to max (a node with no slow job: one pass);
 *   POOL_NOT_SLOW  the jobs not in slow_jobs, up to max;
 *   POOL_SLOW      the jobs in slow_jobs, up to slow_max (no pass at 0).
 *
 * What a pass leaves (beyond its limit, or a slow job when slow_max is 0)
 * stays due in the database, unlocked once the claim commits, for the next
 * claim of any node.  A demoted job never borrows an idle fast worker: the
 * fast pool's budget counts on fast runs, and fires claimed ahead for it
 * would start late behind a long run; another node (where the job is not
 * slow, or whose slow pool is free) is where the surplus belongs, and on a
 * node alone the fires wait for its slow pool, as late fires meeting their
 * misfire policy, not as skips.  The statements take the pool as
 * (pool, batch [job_id]).
 */
enum { POOL_ANY = 0, POOL_NOT_SLOW = 1, POOL_SLOW = 2 };

typedef struct claim_pass {
	int pool;               /* POOL_* */
	int limit;              /* at most this many runs (SCHEDULED handed out) */
	const store_batch *ids; /* the slow jobs, for both statements */
} claim_pass;

/* The passes of req (at most two), in order: the slow pool's first, so
 * that under a joint bound (both_max) the fast pool's pass gets what the
 * slow one really took, a few fires, and not what it might have taken:
 * a claim batch no larger than the slow pool's budget once gave the fast
 * jobs nothing, on every node, for as long as a job stayed slow.
 * Scratch slot 5, its own.  Returns how many, or -1 when out of memory. */
static int claim_passes(store *s, const store_claim_req *req, claim_pass out[2])
{
	store_batch *ids = store__scratch(s, 5, 1, store__ids_cols);
	for (size_t i = 0; req->slow_jobs && i < req->nslow; i++)
		store_batch_i64(ids, req->slow_jobs[i]);
	if (ids->oom)
		return -1;
	bool pools = store_batch_rows(ids) > 0;
	int n = 0;
	if (pools && req->slow_max > 0)
		out[n++] = (claim_pass){POOL_SLOW, req->slow_max, ids};
	out[n++] = (claim_pass){pools ? POOL_NOT_SLOW : POOL_ANY, req->max, ids};
	return n;
}

/*
 * Overlap across nodes (issue 28 item 2).  A node's own overlap policy
 * (dispatch.c) sees only the runs it holds; across nodes the claim keeps
 * it: a job whose live run (claimed SCHEDULED or RUNNING) another node
 * holds is not handed out unless its policy is allow.  The claim statements
 * leave most such jobs out in SQL (STORE_OVERLAP_DUE_OK, _RUN_OK), but that
 * read may be older than the lock it took (PostgreSQL rechecks only the
 * locked row), so the claim reads them again with JOBS_BUSY, a statement
 * of its own after the lock: every claim that wrote a live run of the job
 * held the same row lock until it committed, so this read sees it.  Then:
 *
 *   skip     a plain fire due by now, at whose instant the other run was
 *            RUNNING, is written SKIPPED ("previous run still running on
 *            node N"); a later fire, a catch-up or a retry, and a fire
 *            whose other run is only claimed or started after its instant
 *            (a backlog) wait, as dispatch.c's skip does;
 *   queue    the job is left due, unchanged: its fires wait until the other
 *            run ends, then follow the misfire policy;
 *   replace  the other node's RUNNING runs get a cancel request (the cancel
 *            path, cancel_requested_at) and the job waits as queue does;
 *
 * and an unclaimed run (trigger, retry, hand-back) of a busy job is handed
 * back in the same transaction: it is owed, so it waits.  Where the claim
 * holds the whole database (no STORE_CAP_MULTI_WRITER: SQLite) its read is
 * current, and CLAIM_DUE_JOBS' busy column says which due jobs JOBS_BUSY
 * must read (due_busy): usually none.  The jobs of the
 * runs CLAIM_RUNS took are locked first (JOBS_LOCK, SKIP LOCKED): a run
 * whose job another claim holds is handed back too.  Scratch slot 3.
 */
typedef struct busy_run {
	int64_t job_id, run_id, started_ms;
	char *node;
	int state;
} busy_run;

typedef struct claim_busy {
	busy_run *v;
	size_t n, cap;
} claim_busy;

/* Skip across nodes: fires due by now at or after since are SKIPPED with
 * why (NULL: none). */
typedef struct busy_skip {
	const char *why;
	int64_t since;
} busy_skip;

static void claim_busy_free(claim_busy *b)
{
	for (size_t i = 0; i < b->n; i++)
		dbcron__free(b->v[i].node);
	dbcron__free(b->v);
	memset(b, 0, sizeof(*b));
}

/* The first live run on another node of job id, or NULL. */
static const busy_run *find_busy(const claim_busy *b, int64_t job_id)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].job_id == job_id)
			return &b->v[i];
	return NULL;
}

/* The live runs on other nodes of the jobs in ids (locked by this
 * transaction), appended to b. */
static int read_busy(store *s, const store_claim_req *req, const store_batch *ids,
		     claim_busy *b, dbcron_err *err)
{
	if (!store_batch_rows(ids))
		return DBCRON_OK;
	store_param p[] = {sp_text(req->node_id), sp_batch(ids)};
	int rc, row;
	if ((rc = store__exec(s, ST_JOBS_BUSY, p, 2, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		if (dbcron__grow((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v))) {
			store__reset(s);
			return store__oom(err, "claim");
		}
		const char *node = s->d->col_text(s->c, 2);
		busy_run *r = &b->v[b->n];
		r->job_id = store__i64(s, 0);
		r->run_id = store__i64(s, 1);
		r->state = (int)store__i64(s, 3);
		r->started_ms = store__i64n(s, 4);
		if (!(r->node = dbcron__strdup(node ? node : ""))) {
			store__reset(s);
			return store__oom(err, "claim");
		}
		b->n++;
	}
	store__reset(s);
	return row < 0 ? -row : DBCRON_OK;
}

/* The due jobs out->jobs[first..] whose policy is not allow, read with
 * read_busy.  Where claims run side by side, all of them: CLAIM_DUE_JOBS'
 * read may predate another claim's commit.  Where the claim holds the
 * database (no STORE_CAP_MULTI_WRITER) that read is current, so only the
 * jobs it read busy (hint, sorted): none in the common case, and then no
 * statement (a W2 drain's claim read every job's runs a second time). */
static int due_busy(store *s, const store_claim_req *req, const store_claim_result *out,
		    size_t first, const claim_ids *hint, claim_busy *b, dbcron_err *err)
{
	bool current = !(s->d->caps & STORE_CAP_MULTI_WRITER);
	store_batch *ids = store__scratch(s, 3, 1, store__ids_cols);
	for (size_t i = first; i < out->njobs; i++) {
		const dbcron_job *j = &out->jobs[i];
		if (j->overlap == DBCRON_OVERLAP_ALLOW ||
		    (current && !(hint->n && bsearch(&j->id, hint->v, hint->n, sizeof(*hint->v),
						     i64_cmp))))
			continue;
		store_batch_i64(ids, j->id);
	}
	if (ids->oom)
		return store__oom(err, "claim");
	return read_busy(s, req, ids, b, err);
}

/* Replace: ask the other node's RUNNING runs of job_id to stop (each
 * request is kept once made; asking again changes nothing). */
static int ask_replace(store *s, const claim_busy *b, int64_t job_id, int64_t now,
		       dbcron_err *err)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].job_id != job_id || b->v[i].state != DBCRON_RUN_RUNNING)
			continue;
		store_param p[] = {sp_i64(b->v[i].run_id), sp_i64(now)};
		int rc = store__run(s, ST_RUN_CANCEL_REQUEST, p, 2, NULL, err);
		if (rc)
			return rc;
	}
	return DBCRON_OK;
}

/* Skip: the earliest start of job_id's RUNNING runs on other nodes, or
 * NULL when none is running there (only claimed). */
static const busy_run *first_running(const claim_busy *b, int64_t job_id)
{
	const busy_run *first = NULL;
	for (size_t i = 0; i < b->n; i++) {
		const busy_run *r = &b->v[i];
		if (r->job_id == job_id && r->state == DBCRON_RUN_RUNNING && r->started_ms >= 0 &&
		    (!first || r->started_ms < first->started_ms))
			first = r;
	}
	return first;
}

/* What the due pass does with job j given the runs on other nodes: plan it
 * as usual (skip->why NULL); *wait set to leave it due and unplanned; or
 * skip: the SKIPPED reason (kept in t) for its plain fires due by now
 * from skip->since, the start of the run they overlap. */
static int busy_policy(store *s, const claim_busy *b, const dbcron_job *j, int64_t now,
		       claim_texts *t, busy_skip *skip, bool *wait, dbcron_err *err)
{
	skip->why = NULL;
	*wait = false;
	/* an every-node job's overlap is per node (JOB_RUNNING), never across */
	const busy_run *r = j->overlap == DBCRON_OVERLAP_ALLOW || j->on_every_node
				    ? NULL
				    : find_busy(b, j->id);
	if (!r)
		return DBCRON_OK;
	if (j->overlap == DBCRON_OVERLAP_SKIP) {
		if (!(r = first_running(b, j->id))) {
			*wait = true; /* claimed there, not started: this fire may come first */
			return DBCRON_OK;
		}
		char why[400];
		dbcron__textf(why, sizeof(why), "previous run still running on node %s", r->node);
		if (!(skip->why = claim_text_keep(t, why)))
			return store__oom(err, "claim");
		skip->since = r->started_ms;
		return DBCRON_OK;
	}
	*wait = true;
	return j->overlap == DBCRON_OVERLAP_REPLACE ? ask_replace(s, b, j->id, now, err)
						     : DBCRON_OK;
}

/* What a pass's due jobs share while they are planned (plan_due_jobs). */
typedef struct plan_env {
	const store_claim_req *req;
	const claim_pass *pass;
	int64_t now, horizon;
	store_batch *fires;
	int scheduled; /* SCHEDULED fires written so far, at most pass->limit */
	claim_texts *texts;
	store_claim_result *out;
	store_caps *caps;
} plan_env;

/*
 * Caps (issue 28 item 3, caps.c): a SCHEDULED fire of job j needs a slot of
 * each of its capped tags.  Without one it waits, in the database, for a
 * later claim (due-time order: the claim reads due jobs in next_fire_at
 * order), unless the job's overlap policy is skip and it is a plain fire
 * due by now: that one is SKIPPED, "tag T is at its cap of N running".
 * A tag another claim holds has no slot for us, but is not known to be
 * full: its fires wait.  false: the fire waits (*rc set on failure).
 */
static bool cap_gate(plan_env *e, const dbcron_job *j, const store_fire *f,
		     dbcron_run_state *state, const char **error, int *rc, dbcron_err *err)
{
	const store_cap *k = store__caps_full(e->caps, j);
	*rc = DBCRON_OK;
	if (!k)
		return true;
	if (j->overlap != DBCRON_OVERLAP_SKIP || !k->locked || f->fire_at > e->now ||
	    (f->due_at >= 0 && f->due_at != f->fire_at))
		return false;
	char why[200];
	dbcron__textf(why, sizeof(why), "tag %s is at its cap of %d running", k->name, k->max);
	if (!(*error = claim_text_keep(e->texts, why))) {
		*rc = store__oom(err, "claim");
		return false;
	}
	*state = DBCRON_RUN_SKIPPED;
	return true;
}

/* The planner could not plan job j (rc): set aside with why, cleared and
 * marked id -1 for the caller to drop. */
static int plan_aside(plan_env *e, dbcron_job *j, const store_plan *plan, int rc,
		      dbcron_err *err)
{
	if (rc == DBCRON_ENOMEM)
		return store__oom(err, "claim");
	char text[600];
	dbcron__textf(text, sizeof(text), "cannot plan: %s",
		      plan->error && *plan->error ? plan->error : dbcron_strerror(rc));
	if ((rc = add_aside(e->out, j->id, j->name, text, err)))
		return rc;
	dbcron_job_clear(j);
	j->id = -1; /* dropped by the caller */
	return DBCRON_OK;
}

/* Job j of a pass planned: its fires (MISFIRED by routing when the node
 * cannot run it and it is stranded; SKIPPED by skip when it is busy on
 * another node under overlap skip) into fires, at most what is left of
 * the pass's limit SCHEDULED (and of its --max-runs), and its next fire
 * into j->next_fire_at.  A job the planner cannot plan is set aside,
 * cleared and marked id -1 for the caller to drop. */
static int plan_job(plan_env *e, dbcron_job *j, const busy_skip *skip, dbcron_err *err)
{
	store_plan plan = {.fires = NULL, .nfires = 0, .next_fire_at = -1};
	const store_claim_req *req = e->req;
	int64_t now = e->now;
	int rc;
	if ((rc = req->plan(req->plan_ctx, j, now, e->horizon, &plan)))
		return plan_aside(e, j, &plan, rc, err);
	/* Routing: a job the node cannot run comes back only when no
	 * live node has its handler and its next fire is past the
	 * misfire threshold (the claim statement's "stranded" rule):
	 * every fire due by now is recorded MISFIRED with that reason,
	 * instead of waiting unseen; later ones wait for a node. */
	bool stranded = !runs_here(req, j);
	const char *why = NULL;
	bool ran_none = true; /* every fire written ended unrun */
	dbcron_run_state forced = 0; /* the last state routing, overlap or a cap gave */
	/* --max-runs: what is left of it (the job row is locked by this claim,
	 * so no other claim counts the same fires) */
	int64_t left = j->max_runs > 0 ? j->max_runs - j->runs_fired : INT64_MAX;
	for (size_t k = 0; k < plan.nfires; k++) {
		const store_fire *f = &plan.fires[k];
		dbcron_run_state state = f->state;
		const char *error = f->error;
		if (stranded && state == DBCRON_RUN_SCHEDULED) {
			if (f->fire_at > now) {
				plan.next_fire_at = f->fire_at;
				break;
			}
			state = forced = DBCRON_RUN_MISFIRED;
			if (!why && !(why = stranded_why(e->texts, j)))
				return store__oom(err, "claim");
			error = why;
		}
		/* Busy on another node, policy skip: a plain fire due by
		 * now while the other run was going is skipped; a later
		 * one, a catch-up (due after its instant) or a fire before
		 * the other run started waits, as dispatch.c's skip does. */
		if (skip->why && state == DBCRON_RUN_SCHEDULED) {
			if (f->fire_at > now || f->fire_at < skip->since ||
			    (f->due_at >= 0 && f->due_at != f->fire_at)) {
				plan.next_fire_at = f->fire_at;
				break;
			}
			state = forced = DBCRON_RUN_SKIPPED;
			error = skip->why;
		}
		if (state == DBCRON_RUN_SCHEDULED) {
			if (!cap_gate(e, j, f, &state, &error, &rc, err)) {
				if (rc)
					return rc;
				plan.next_fire_at = f->fire_at;
				break;
			}
			if (state != DBCRON_RUN_SCHEDULED)
				forced = state;
		}
		/* A claim never returns more than its bound: one job's
		 * catch-up may owe many fires; the rest wait for the
		 * next claim, from the first one left out. */
		if (state == DBCRON_RUN_SCHEDULED && e->scheduled >= e->pass->limit) {
			plan.next_fire_at = f->fire_at;
			break;
		}
		if (state == DBCRON_RUN_SCHEDULED && left <= 0) {
			plan.next_fire_at = -1; /* --max-runs reached: no further fire */
			break;
		}
		if (state != DBCRON_RUN_SCHEDULED && state != DBCRON_RUN_MISFIRED &&
		    state != DBCRON_RUN_SKIPPED)
			return dbcron_err_set(err, DBCRON_EINTERNAL,
					      "planner gave job '%s' a fire in state %d",
					      j->name, (int)state);
		store_batch_i64(e->fires, j->id);
		store_batch_text(e->fires, j->name);
		store_batch_i64(e->fires, f->fire_at);
		store_batch_i64(e->fires, state);
		store_batch_i64(e->fires, f->due_at >= 0 ? f->due_at : f->fire_at);
		store_batch_i64(e->fires, f->missed > 0 ? f->missed : 0);
		store_batch_text(e->fires, error);
		if (state == DBCRON_RUN_SCHEDULED) {
			e->scheduled++;
			left--;
			store__caps_take(e->caps, j);
		}
		ran_none = state != DBCRON_RUN_SCHEDULED;
	}
	/* An AFTER job fires next from its run's end: a fire routing
	 * ended MISFIRED, or overlap or a cap SKIPPED, is that end (as
	 * close_stranded says for runs), or its series would stop here for
	 * good. */
	if (forced && ran_none && plan.next_fire_at < 0)
		plan.next_fire_at = model_run_followup(j, 1, forced, true, now).job_next_fire_at;
	j->next_fire_at = plan.next_fire_at;
	return DBCRON_OK;
}

/* JOBS_ADVANCE's rows: each planned job's next fire and, for a job with
 * --max-runs, how many of its fires the insert really made runs of
 * (out->runs[first_run..]: a fire whose row existed is not counted). */
static void advance_rows(const store_claim_result *out, size_t first_job, size_t first_run,
			 store_batch *next)
{
	for (size_t i = first_job; i < out->njobs; i++) {
		const dbcron_job *j = &out->jobs[i];
		int64_t fired = 0;
		for (size_t k = first_run; j->max_runs > 0 && k < out->nruns; k++)
			fired += out->runs[k].run.job_id == j->id;
		store_batch_i64(next, j->id);
		store_batch_i64n(next, j->next_fire_at);
		store_batch_i64(next, fired);
	}
}

/* The due jobs of the pass, locked (CLAIM_DUE_JOBS), appended to
 * out->jobs; out->now_ms the database's clock; *hint the ids of those it
 * read busy elsewhere, sorted (caller frees), where that read is current
 * (due_busy says when). */
static int read_due_jobs(store *s, const store_claim_req *req, const claim_pass *pass,
			 store_claim_result *out, size_t *jobs_cap, claim_ids *hint,
			 dbcron_err *err)
{
	int64_t now = -1;
	int rc;
	const store_batch *here = routing(s, req);
	if (!here)
		return store__oom(err, "claim");
	store_param dp[] = {sp_i64(req->horizon_ms_ahead > 0 ? req->horizon_ms_ahead : 0),
			    sp_i64(pass->limit), sp_i64(req->handlers != NULL), sp_batch(here),
			    sp_i64(pass->pool), sp_batch(pass->ids), sp_text(req->node_id)};
	if ((rc = store__exec(s, ST_CLAIM_DUE_JOBS, dp, 7, err)) ||
	    (rc = read_jobs(s, 2, out, jobs_cap, &now,
			    s->d->caps & STORE_CAP_MULTI_WRITER ? NULL : hint, err)))
		return rc;
	if (now < 0)
		return dbcron_err_set(err, DBCRON_EDB, "%s: no clock row",
				      store_stmt_what(ST_CLAIM_DUE_JOBS));
	out->now_ms = now;
	dbcron__sort(hint->v, hint->n, sizeof(*hint->v), i64_cmp);
	return DBCRON_OK;
}

/* Due jobs of the pass, locked; their fires planned and written; the jobs
 * advanced. */
static int plan_due_jobs(store *s, const store_claim_req *req, const claim_pass *pass,
			 store_claim_result *out, size_t *runs_cap, size_t *jobs_cap,
			 claim_texts *texts, store_caps *caps, dbcron_err *err)
{
	int rc, row;
	size_t first = out->njobs, nplanned = first;
	claim_ids hint = {0};
	claim_busy busy = {0};
	rc = read_due_jobs(s, req, pass, out, jobs_cap, &hint, err);
	if (!rc && out->njobs > first) {
		priority_order(out->jobs + first, out->njobs - first, out->now_ms);
		rc = due_busy(s, req, out, first, &hint, &busy, err);
	}
	dbcron__free(hint.v);
	if (rc || out->njobs == first ||
	    (rc = store__caps_load(s, caps, out->jobs + first, out->njobs - first, err)))
		goto out_busy;

	int64_t now = out->now_ms;
	plan_env e = {.req = req, .pass = pass, .now = now,
		      .horizon = now + (req->horizon_ms_ahead > 0 ? req->horizon_ms_ahead : 0),
		      .fires = store__scratch(s, 0, 7, fire_cols), .texts = texts, .out = out,
		      .caps = caps};
	size_t i = first, first_run = out->nruns;
	for (; i < out->njobs && e.scheduled < pass->limit; i++) {
		dbcron_job *j = &out->jobs[i];
		busy_skip skip;
		bool wait;
		if ((rc = busy_policy(s, &busy, j, now, texts, &skip, &wait, err)))
			goto out_busy;
		if (wait) {
			dbcron_job_clear(j);
			j->id = -1; /* left due, unplanned: dropped below */
			continue;
		}
		if ((rc = plan_job(&e, j, &skip, err)))
			goto out_busy;
	}
	claim_busy_free(&busy);
	/* Jobs beyond the budget stay due for the next claim; set-aside ones
	 * leave the list. */
	for (size_t k = i; k < out->njobs; k++)
		dbcron_job_clear(&out->jobs[k]);
	for (size_t k = first; k < i; k++)
		if (out->jobs[k].id >= 0)
			out->jobs[nplanned++] = out->jobs[k];
	out->njobs = nplanned;
	if (e.fires->oom)
		return store__oom(err, "claim");

	if (store_batch_rows(e.fires)) {
		store_param fp[] = {sp_text(req->node_id), sp_text(req->token), sp_i64(now),
				    sp_batch(e.fires)};
		if ((rc = store__exec(s, ST_FIRES_INSERT, fp, 4, err)))
			return rc;
		while ((row = store__next(s, err)) == 1) {
			int64_t state = store__i64(s, 4);
			if (state == DBCRON_RUN_MISFIRED &&
			    (rc = claim_misfired(texts, store__i64(s, 0), store__i64(s, 1), err))) {
				store__reset(s);
				return rc;
			}
			if (state != DBCRON_RUN_SCHEDULED) {
				out->nterminal++;
				continue;
			}
			if ((rc = add_claimed(s, out, runs_cap, -1, 5, 6, -1, req))) {
				store__reset(s);
				return store__oom(err, "claim");
			}
		}
		store__reset(s);
		if (row < 0)
			return -row;
	}
	store_batch *next = store__scratch(s, 1, 3, advance_fired_cols);
	advance_rows(out, first, first_run, next);
	if (next->oom)
		return store__oom(err, "claim");
	store_param ap[] = {sp_batch(next)};
	return store__run(s, ST_JOBS_ADVANCE, ap, 1, NULL, err);
out_busy:
	claim_busy_free(&busy);
	return rc;
}

/* Unclaimed SCHEDULED runs (retries, triggers, hand-backs, takeovers) of
 * the pass's jobs with what is left of its budget, and the jobs they need. */
static int claim_unclaimed(store *s, const store_claim_req *req, const claim_pass *pass,
			   int budget, store_claim_result *out, size_t *runs_cap,
			   size_t *jobs_cap, dbcron_err *err)
{
	size_t first = out->nruns, nneed = 0;
	int64_t *need = NULL;
	int rc, row;

	int64_t horizon = out->now_ms + (req->horizon_ms_ahead > 0 ? req->horizon_ms_ahead : 0);
	const store_batch *here = routing(s, req);
	if (!here)
		return store__oom(err, "claim");
	store_param p[] = {sp_text(req->node_id), sp_text(req->token), sp_i64(horizon),
			   sp_i64(budget), sp_i64(req->handlers != NULL), sp_batch(here),
			   sp_i64(out->now_ms), sp_i64(pass->pool), sp_batch(pass->ids)};
	if ((rc = store__exec(s, ST_CLAIM_RUNS, p, 9, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		if ((rc = add_claimed(s, out, runs_cap, 4, 5, 6, 7, req))) {
			store__reset(s);
			return store__oom(err, "claim");
		}
		/* an every-node run (a retry, a hand-back) keeps its node */
		dbcron_run *r = &out->runs[out->nruns - 1].run;
		r->node_index = (int)store__i64(s, 9);
		r->node_total = (int)store__i64(s, 10);
		const char *for_node = s->d->col_text(s->c, 8);
		if (for_node && !(r->for_node = dbcron__strdup(for_node))) {
			store__reset(s);
			return store__oom(err, "claim");
		}
	}
	store__reset(s);
	if (row < 0)
		return -row;
	if (out->nruns == first)
		return DBCRON_OK;

	/* Jobs not already loaded by the due-job pass. */
	dbcron__sort(out->jobs, out->njobs, sizeof(*out->jobs), store__job_id_cmp);
	need = dbcron__calloc(out->nruns - first, sizeof(*need));
	if (!need)
		return store__oom(err, "claim");
	for (size_t i = first; i < out->nruns; i++)
		if (!store__find_job(out, out->runs[i].run.job_id))
			need[nneed++] = out->runs[i].run.job_id;
	dbcron__sort(need, nneed, sizeof(*need), i64_cmp);
	store_batch *ids = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < nneed; i++)
		if (i == 0 || need[i] != need[i - 1])
			store_batch_i64(ids, need[i]);
	dbcron__free(need);
	if (!nneed)
		return DBCRON_OK;
	if (ids->oom)
		return store__oom(err, "claim");
	store_param jp[] = {sp_batch(ids)};
	if ((rc = store__exec(s, ST_JOBS_BY_IDS, jp, 1, err)))
		return rc;
	return store__read_jobs_into(s, 0, out, jobs_cap, NULL, err);
}

/* The ids of the jobs this transaction locked of those in ids, into
 * *locked (sorted, caller frees). */
static int lock_jobs(store *s, const store_batch *ids, int64_t **locked, size_t *nlocked,
		     dbcron_err *err)
{
	size_t cap = 0;
	int rc, row;
	store_param p[] = {sp_batch(ids)};
	if ((rc = store__exec(s, ST_JOBS_LOCK, p, 1, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		if (dbcron__grow((void **)locked, &cap, *nlocked + 1, sizeof(**locked))) {
			store__reset(s);
			return store__oom(err, "claim");
		}
		(*locked)[(*nlocked)++] = store__i64(s, 0);
	}
	store__reset(s);
	if (row < 0)
		return -row;
	dbcron__sort(*locked, *nlocked, sizeof(**locked), i64_cmp);
	return DBCRON_OK;
}

/* Whether a run CLAIM_RUNS took of job j must go back: j's policy is not
 * allow and its job row is held by another claim or the job is busy on
 * another node ("Overlap across nodes"). */
static bool held_back(const dbcron_job *j, const int64_t *locked,
		      size_t nlocked, const claim_busy *b)
{
	if (!j || j->overlap == DBCRON_OVERLAP_ALLOW || j->on_every_node)
		return false;
	if (!nlocked || !bsearch(&j->id, locked, nlocked, sizeof(*locked), i64_cmp))
		return true;
	return find_busy(b, j->id) != NULL;
}

/* The jobs of the runs CLAIM_RUNS took (out->runs[first..]) whose policy
 * is not allow: locked (those another claim holds are not in *locked),
 * then their runs on other nodes read into busy. */
static int runs_busy(store *s, const store_claim_req *req, const store_claim_result *out,
		     size_t first, int64_t **locked, size_t *nlocked, claim_busy *busy,
		     dbcron_err *err)
{
	store_batch *ids = store__scratch(s, 3, 1, store__ids_cols);
	for (size_t i = first; i < out->nruns; i++) {
		const dbcron_job *j = store__find_job(out, out->runs[i].run.job_id);
		if (j && j->overlap != DBCRON_OVERLAP_ALLOW)
			store_batch_i64(ids, j->id); /* repeats are harmless */
	}
	if (ids->oom)
		return store__oom(err, "claim");
	if (!store_batch_rows(ids))
		return DBCRON_OK;
	int rc = lock_jobs(s, ids, locked, nlocked, err);
	if (rc)
		return rc;
	store_batch *lk = store__scratch(s, 3, 1, store__ids_cols);
	for (size_t i = 0; i < *nlocked; i++)
		store_batch_i64(lk, (*locked)[i]);
	if (lk->oom)
		return store__oom(err, "claim");
	return read_busy(s, req, lk, busy, err);
}

/*
 * The runs CLAIM_RUNS took (out->runs[first..]) go back to the pool in
 * this transaction when their job is busy on another node ("Overlap
 * across nodes") or a capped tag of it has no slot left (caps.c), in due
 * order: the earlier run takes the slot.
 */
static int hold_back(store *s, const store_claim_req *req, store_claim_result *out,
		     size_t first, store_caps *caps, dbcron_err *err)
{
	static const store_bcol release_cols[] = {BC_I64, BC_TEXT};
	int64_t *locked = NULL;
	size_t nlocked = 0, nback = 0;
	claim_busy busy = {0};
	bool *back = NULL;
	int rc = DBCRON_OK;

	if (out->nruns == first)
		return DBCRON_OK;
	dbcron__sort(out->jobs, out->njobs, sizeof(*out->jobs), store__job_id_cmp);
	dbcron__sort(out->runs + first, out->nruns - first, sizeof(*out->runs), claimed_cmp);
	if (!(back = dbcron__calloc(out->nruns - first, sizeof(*back)))) {
		rc = store__oom(err, "claim");
		goto out_free;
	}
	if ((rc = runs_busy(s, req, out, first, &locked, &nlocked, &busy, err)) ||
	    (rc = store__caps_load(s, caps, out->jobs, out->njobs, err)))
		goto out_free;
	store_batch *b = store__scratch(s, 0, 2, release_cols);
	for (size_t i = first; i < out->nruns; i++) {
		store_claimed *c = &out->runs[i];
		const dbcron_job *j = store__find_job(out, c->run.job_id);
		if (!j)
			continue; /* close_jobless ends it */
		if (!held_back(j, locked, nlocked, &busy) && !store__caps_full(caps, j)) {
			store__caps_take(caps, j);
			continue;
		}
		back[i - first] = true;
		store_batch_i64(b, c->run.id);
		store_batch_text(b, c->run.claim_token);
		nback++;
	}
	if (!nback)
		goto out_free;
	if (b->oom) {
		rc = store__oom(err, "claim");
		goto out_free;
	}
	store_param p[] = {sp_text(req->node_id), sp_batch(b)};
	if ((rc = store__run(s, ST_RUNS_RELEASE, p, 2, NULL, err)))
		goto out_free;
	size_t k = first;
	for (size_t i = first; i < out->nruns; i++) {
		if (back[i - first])
			dbcron_run_clear(&out->runs[i].run);
		else
			out->runs[k++] = out->runs[i];
	}
	out->nruns = k;
out_free:
	dbcron__free(back);
	claim_busy_free(&busy);
	dbcron__free(locked);
	return rc;
}

/*
 * A run whose job was deleted after the run was claimed (a concurrent
 * delete between our two statements, on a multi-writer database) cannot
 * run: it ends ABANDONED "job deleted" under our token, in the claim's
 * transaction, and is not handed out.
 */
static int close_jobless(store *s, const char *node_id, store_claim_result *out,
			 dbcron_err *err)
{
	store_batch *b = store__scratch(s, 0, STORE_APPLY_NCOLS, store__apply_cols);
	for (size_t i = 0; i < out->nruns; i++) {
		store_claimed *c = &out->runs[i];
		if ((c->job = store__find_job(out, c->run.job_id)))
			continue;
		store_batch_i64(b, c->run.id);
		store_batch_text(b, c->run.claim_token);
		store_batch_i64(b, DBCRON_RUN_ABANDONED);
		store_batch_i64n(b, -1);
		store_batch_i64(b, out->now_ms);
		store_batch_bool(b, false);
		store_batch_i64(b, 0);
		const store_aside *a = find_aside(out, c->run.job_id);
		store_batch_text(b, a ? a->why : "job deleted");
		store_batch_text(b, NULL);
		store_batch_i64(b, store__apply_live(DBCRON_RUN_ABANDONED));
	}
	if (!store_batch_rows(b))
		return DBCRON_OK;
	if (b->oom)
		return store__oom(err, "claim");
	store_param p[] = {sp_text(node_id), sp_batch(b)};
	int rc = store__run(s, ST_RUNS_APPLY, p, 2, NULL, err);
	if (rc)
		return rc;
	size_t k = 0;
	for (size_t i = 0; i < out->nruns; i++) {
		if (out->runs[i].job)
			out->runs[k++] = out->runs[i];
		else
			dbcron_run_clear(&out->runs[i].run);
	}
	out->nruns = k;
	return DBCRON_OK;
}

/*
 * Routing: an unclaimed run (a trigger, a retry, a hand-back) of a handler
 * job that this node cannot run comes back from the claim statement only
 * when it is stranded: due past the job's misfire threshold with no live
 * node having the handler.  It ends MISFIRED with the reason under our
 * token, in the claim's transaction, and is not handed out: the claim is
 * how the run changed hands, so two nodes can never both end it, and the
 * fenced update is the only write.  An AFTER job then fires next as its
 * run's end says (model_run_followup), so its series does not stop here.
 */
static int close_stranded(store *s, const store_claim_req *req, store_claim_result *out,
			  claim_texts *texts, dbcron_err *err)
{
	store_batch *b = store__scratch(s, 0, STORE_APPLY_NCOLS, store__apply_cols);
	store_batch *next = store__scratch(s, 1, 2, advance_cols);
	size_t nclosed = 0;
	for (size_t i = 0; i < out->nruns; i++) {
		store_claimed *c = &out->runs[i];
		if (runs_here(req, c->job))
			continue;
		const char *why = stranded_why(texts, c->job);
		if (!why)
			return store__oom(err, "claim");
		int rc = claim_misfired(texts, c->run.id, c->job->id, err);
		if (rc)
			return rc;
		store_batch_i64(b, c->run.id);
		store_batch_text(b, c->run.claim_token);
		store_batch_i64(b, DBCRON_RUN_MISFIRED);
		store_batch_i64n(b, -1);
		store_batch_i64(b, out->now_ms);
		store_batch_bool(b, false);
		store_batch_i64(b, 0);
		store_batch_text(b, why);
		store_batch_text(b, NULL);
		store_batch_i64(b, store__apply_live(DBCRON_RUN_MISFIRED));
		model_followup f = model_run_followup(c->job, c->run.attempt, DBCRON_RUN_MISFIRED,
						      true, out->now_ms);
		if (f.job_next_fire_at >= 0) {
			store_batch_i64(next, c->job->id);
			store_batch_i64(next, f.job_next_fire_at);
		}
		nclosed++;
	}
	if (!nclosed)
		return DBCRON_OK;
	if (b->oom || next->oom)
		return store__oom(err, "claim");
	store_param p[] = {sp_text(req->node_id), sp_batch(b)};
	int rc = store__run(s, ST_RUNS_APPLY, p, 2, NULL, err);
	store_param np[] = {sp_batch(next)};
	if (!rc && store_batch_rows(next))
		rc = store__run(s, ST_JOBS_NEXT_IF_NULL, np, 1, NULL, err);
	if (rc)
		return rc;
	size_t k = 0;
	for (size_t i = 0; i < out->nruns; i++) {
		if (runs_here(req, out->runs[i].job))
			out->runs[k++] = out->runs[i];
		else
			dbcron_run_clear(&out->runs[i].run);
	}
	out->nruns = k;
	out->nterminal += nclosed;
	return DBCRON_OK;
}

/*
 * Fan-out (issue 28 item 6, docs/scheduler.md "Every node").  A first
 * attempt of an every-node job that this claim took (a fire it wrote, a
 * trigger it took) stands for the whole fire: the node set is fixed here,
 * as the live nodes at the claim's now (alive, lease not ended) plus the
 * claiming node, in id order.  The claimed row becomes this node's, at its
 * index; every other node gets its own unclaimed row (for_node, index,
 * total), which only it may claim (CLAIM_RUNS).  All in the claim's
 * transaction: the fire's identity per node is in the database before any
 * of it runs, so a node killed mid-fire costs only its own run (ended by
 * the reap, RUNS_ABANDON_PINNED), never a second run of another's.  Three
 * statements, only in a claim that took such a run.
 */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The live nodes at now and `me`, sorted, into *ids (n of them, owned). */
static int live_nodes(store *s, const char *me, int64_t now, char ***ids, size_t *n,
		      dbcron_err *err)
{
	size_t cap = 0;
	bool have_me = false;
	int row, rc = DBCRON_OK;
	store_param p[] = {sp_i64(now)};
	*ids = NULL;
	*n = 0;
	if ((rc = store__exec(s, ST_NODES_LIVE, p, 1, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		const char *id = s->d->col_text(s->c, 0);
		if (!id)
			continue;
		have_me = have_me || strcmp(id, me) == 0;
		char *copy = dbcron__strdup(id);
		if (!copy || dbcron__grow((void **)ids, &cap, *n + 2, sizeof(**ids))) {
			dbcron__free(copy);
			rc = store__oom(err, "claim");
			break;
		}
		(*ids)[(*n)++] = copy;
	}
	store__reset(s);
	if (!rc && row < 0)
		rc = -row;
	if (!rc && !have_me) {
		if (dbcron__grow((void **)ids, &cap, *n + 1, sizeof(**ids)) ||
		    !((*ids)[*n] = dbcron__strdup(me)))
			rc = store__oom(err, "claim");
		else
			(*n)++;
	}
	if (!rc)
		dbcron__sort(*ids, *n, sizeof(**ids), str_cmp);
	return rc;
}

static bool fans_out(const store_claimed *c)
{
	return c->job && c->job->on_every_node && c->run.attempt == 1 && c->run.node_total == 0 &&
	       c->run.state == DBCRON_RUN_SCHEDULED;
}

static int fan_out(store *s, const store_claim_req *req, store_claim_result *out,
		   dbcron_err *err)
{
	size_t i, n = 0;
	char **ids = NULL;
	int rc;
	for (i = 0; i < out->nruns && !fans_out(&out->runs[i]); i++)
		;
	if (i == out->nruns)
		return DBCRON_OK;
	if ((rc = live_nodes(s, req->node_id, out->now_ms, &ids, &n, err)))
		goto out_free;
	int me = 0;
	while (strcmp(ids[me], req->node_id) != 0)
		me++;
	store_batch *list = store__scratch(s, 0, 1, store__names_cols);
	for (i = 0; i < n; i++)
		store_batch_text(list, ids[i]);
	if (list->oom) {
		rc = store__oom(err, "claim");
		goto out_free;
	}
	store_param mp[] = {sp_text(req->node_id), sp_text(req->token), sp_i64(me),
			    sp_i64((int64_t)n)};
	store_param fp[] = {sp_text(req->node_id), sp_text(req->token), sp_i64(out->now_ms),
			    sp_i64((int64_t)n), sp_batch(list)};
	if ((rc = store__run(s, ST_FIRES_FAN_MARK, mp, 4, NULL, err)) ||
	    (rc = store__run(s, ST_FIRES_FAN_OUT, fp, 5, NULL, err)))
		goto out_free;
	for (i = 0; i < out->nruns; i++) {
		dbcron_run *r = &out->runs[i].run;
		if (!fans_out(&out->runs[i]))
			continue;
		if (!(r->for_node = dbcron__strdup(req->node_id))) {
			rc = store__oom(err, "claim");
			goto out_free;
		}
		r->node_index = me;
		r->node_total = (int)n;
	}
out_free:
	for (i = 0; i < n; i++)
		dbcron__free(ids[i]);
	dbcron__free(ids);
	return rc;
}

/*
 * The misfire events (issue 26) of the fires and runs this claim ended
 * MISFIRED (the planner's misfire policy, routing's stranded ones), in
 * the claim's transaction: the rows are the claim's own (a fire the insert
 * returned, a run under our token), so the outcome and its events commit
 * together, once.  out->jobs is sorted.  Scratch slot 3, its own.
 */
static int write_misfire_events(store *s, const store_claim_result *out,
				const claim_texts *t, dbcron_err *err)
{
	if (!t->nmis)
		return DBCRON_OK;
	store_outbox o;
	store__outbox_begin(s, &o, 3);
	for (size_t i = 0; i < t->nmis; i++) {
		const dbcron_job *j = store__find_job(out, t->mis[2 * i + 1]);
		if (j && j->on_misfire)
			store__outbox_add(&o, t->mis[2 * i], MODEL_REACT_MISFIRE, j->on_misfire);
	}
	int rc = store__outbox_write(s, &o, out->now_ms, err);
	store__outbox_free(&o);
	return rc;
}

/* Hold the schedule lock row until this transaction ends (made on first
 * use: a database from before the strategy has no such row). */
static int schedule_lock(store *s, dbcron_err *err)
{
	int row = store__row(s, ST_SCHEDULE_LOCK, NULL, 0, err);
	if (row == 0) {
		int rc = store__run(s, ST_SCHEDULE_LOCK_INIT, NULL, 0, NULL, err);
		if (rc)
			return rc;
		row = store__row(s, ST_SCHEDULE_LOCK, NULL, 0, err);
	}
	if (row < 0)
		return -row;
	store__reset(s);
	return row ? DBCRON_OK : dbcron_err_set(err, DBCRON_EINTERNAL, "claim: no schedule lock row");
}

int store_claim(store *s, const store_claim_req *req, store_claim_result *out,
		dbcron_err *err)
{
	size_t runs_cap = 0, jobs_cap = 0;
	claim_texts texts = {0};
	store_caps caps = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req || !req->node_id || !req->token || !req->plan)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "claim: node, token and planner are required");
	if ((rc = store__tx_begin(s, err)))
		return rc;
	if (req->lock_row && (rc = schedule_lock(s, err)))
		goto out_rollback;
	claim_pass passes[2];
	int npasses = claim_passes(s, req, passes);
	if (npasses < 0) {
		rc = store__oom(err, "claim");
		goto out_rollback;
	}
	bool have_now = false;
	for (int k = 0; k < npasses; k++) {
		claim_pass *pass = &passes[k];
		if (req->both_max > 0 && pass->limit > req->both_max - (int)out->nruns)
			pass->limit = req->both_max - (int)out->nruns;
		if (pass->limit <= 0)
			continue;
		size_t before = out->nruns;
		if ((rc = plan_due_jobs(s, req, pass, out, &runs_cap, &jobs_cap, &texts, &caps,
					err)))
			goto out_rollback;
		have_now = true;
		int budget = pass->limit - (int)(out->nruns - before);
		size_t taken = out->nruns;
		if (budget > 0 &&
		    ((rc = claim_unclaimed(s, req, pass, budget, out, &runs_cap, &jobs_cap, err)) ||
		     (rc = hold_back(s, req, out, taken, &caps, err))))
			goto out_rollback;
	}
	if (!have_now && (rc = store__db_now(s, &out->now_ms, err)))
		goto out_rollback;
	dbcron__sort(out->jobs, out->njobs, sizeof(*out->jobs), store__job_id_cmp);
	if ((rc = write_aside(s, out, err)) || (rc = close_jobless(s, req->node_id, out, err)) ||
	    (rc = close_stranded(s, req, out, &texts, err)) || (rc = fan_out(s, req, out, err)) ||
	    (rc = write_misfire_events(s, out, &texts, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	claim_texts_free(&texts);
	store__caps_free(&caps);
	dbcron__sort(out->runs, out->nruns, sizeof(*out->runs), claimed_cmp);
	for (size_t i = 0; i < out->nruns; i++)
		out->runs[i].job = store__find_job(out, out->runs[i].run.job_id);
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	claim_texts_free(&texts);
	store__caps_free(&caps);
	store_claim_result_clear(out);
	return rc;
}
