/*
 * The read-only verbs: pages of the run log, one run with its output, the
 * node registry and the lease locks, as the JSON every front end shows.
 * Run pages are keyset-paged (a cursor names the last row shown, never an
 * offset), so page N of a million-run log costs what page 1 does, and a
 * run added meanwhile does not shift the pages.  Ages are taken against
 * the database's clock, like every scheduling decision.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "model/jobdef.h"
#include "model/json.h"

static int oom(dbcron_err *err)
{
	return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
}

static char *dup_or_null(const char *s, bool *failed)
{
	if (!s)
		return NULL;
	char *d = dbcron__strdup(s);
	if (!d)
		*failed = true;
	return d;
}

int app_run_copy(dbcron_run *dst, const dbcron_run *src, bool with_output)
{
	bool failed = false;
	*dst = *src;
	dst->claim_token = NULL;
	dst->job_name = dup_or_null(src->job_name, &failed);
	dst->node = dup_or_null(src->node, &failed);
	dst->error = dup_or_null(src->error, &failed);
	dst->output = with_output ? dup_or_null(src->output, &failed) : NULL;
	dst->params = dup_or_null(src->params, &failed);
	dst->for_node = dup_or_null(src->for_node, &failed);
	if (failed) {
		dbcron_run_clear(dst);
		return DBCRON_ENOMEM;
	}
	return DBCRON_OK;
}

/* ------------------------------------------------------------ runs */

int app_run_collect(void *ctx, const dbcron_run *run)
{
	app_run_vec *rv = ctx;
	/* the token and the output are not shown in lists */
	if (dbcron__grow((void **)&rv->v, &rv->cap, rv->n + 1, sizeof(dbcron_run)) ||
	    app_run_copy(&rv->v[rv->n], run, false)) {
		rv->rc = DBCRON_ENOMEM;
		return 1;
	}
	rv->n++;
	return 0;
}

void app_run_vec_free(app_run_vec *rv)
{
	for (size_t i = 0; i < rv->n; i++)
		dbcron_run_clear(&rv->v[i]);
	dbcron__free(rv->v);
	memset(rv, 0, sizeof(*rv));
}

/*
 * The cursor is the last row of a page: "FIRE_AT.ATTEMPT.ID.JOB" (the job
 * name last, so it may hold any character).  It is not secret and not
 * signed: a forged one only selects a different page of what the caller
 * may read anyway.
 */
static int parse_cursor(const char *c, store_run_filter *f, dbcron_err *err)
{
	long long v[3];
	const char *p = c;
	for (int i = 0; i < 3; i++) {
		char *end;
		errno = 0;
		v[i] = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
		if (v[i] < 0 || errno || *end != '.')
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "cursor '%.64s': not one this server gave", c);
		p = end + 1;
	}
	if (v[1] > 1000000000)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "cursor '%.64s': not one this server gave", c);
	f->keyset = true;
	f->before_fire_at = v[0];
	f->before_attempt = (int)v[1];
	f->before_id = v[2];
	f->before_job = p;
	return DBCRON_OK;
}

typedef struct page_ctx {
	json_t *runs;
	dbcron_run first; /* the oldest row seen: the next cursor */
	size_t n;
	bool failed;
} page_ctx;

static int page_run(void *ctx, const dbcron_run *r)
{
	page_ctx *pc = ctx;
	if (pc->n == 0) {
		pc->first = *r;
		pc->first.job_name = dup_or_null(r->job_name, &pc->failed);
		pc->first.node = pc->first.claim_token = pc->first.error = pc->first.output = NULL;
		pc->first.params = NULL;
	}
	/* the listing comes oldest first; a page is shown newest first */
	json_t *o = model_run_json(r);
	if (!o || json_array_insert_new(pc->runs, 0, o)) {
		pc->failed = true;
		return 1;
	}
	pc->n++;
	return 0;
}

int app_runs_fetch(store *s, const store_run_filter *f, const char *cursor,
		   store_run_cb cb, void *ctx, dbcron_err *err)
{
	store_run_filter flt = *f;
	int rc;
	if (cursor && *cursor && (rc = parse_cursor(cursor, &flt, err)))
		return rc;
	return store_runs_list(s, &flt, cb, ctx, err);
}

bool app_run_cursor(const dbcron_run *r, char *buf, size_t len)
{
	int w = snprintf(buf, len, "%" PRId64 ".%d.%" PRId64 ".%s", r->fire_at, r->attempt,
			 r->id, r->job_name ? r->job_name : "");
	return w >= 0 && (size_t)w < len;
}

int app_runs_page(store *s, const store_run_filter *f, const char *cursor,
		  json_t **out, dbcron_err *err)
{
	page_ctx pc = {0};
	json_t *page = NULL;
	int rc;

	*out = NULL;
	if (!(pc.runs = json_array()))
		return oom(err);
	rc = app_runs_fetch(s, f, cursor, page_run, &pc, err);
	if (rc)
		goto out_free;
	rc = DBCRON_ENOMEM;
	if (pc.failed)
		goto out_oom;
	json_t *next = json_null();
	/* a full page may have more behind it; a short one is the last */
	if (f->limit > 0 && pc.n == (size_t)f->limit) {
		size_t len = strlen(pc.first.job_name ? pc.first.job_name : "") + 80;
		char *c = dbcron__malloc(len);
		next = c && app_run_cursor(&pc.first, c, len) ? json_string(c) : NULL;
		dbcron__free(c);
	}
	page = json_pack("{s:o,s:o?}", "runs", pc.runs, "next_cursor", next);
	pc.runs = NULL;
	if (!page)
		goto out_oom;
	*out = page;
	rc = DBCRON_OK;
	goto out_free;
out_oom:
	oom(err);
out_free:
	json_decref(pc.runs);
	dbcron__free(pc.first.job_name);
	return rc;
}

/* At most this many attempts of one fire are listed with a run. */
#define RUN_ATTEMPTS_MAX 100

typedef struct chain_ctx {
	app_run_vec *rv;
	int64_t fire_at;
	int node_index;
} chain_ctx;

static int chain_run(void *ctx, const dbcron_run *r)
{
	chain_ctx *cc = ctx;
	app_run_vec *rv = cc->rv;
	if (r->fire_at != cc->fire_at)
		return 0; /* an older fire of the job */
	if (r->node_index != cc->node_index)
		return 0; /* every node: another node's run of the fire */
	/* as the listing gave it, output and all: the attempts are shown as
	 * the run log holds them */
	if (dbcron__grow((void **)&rv->v, &rv->cap, rv->n + 1, sizeof(dbcron_run)) ||
	    app_run_copy(&rv->v[rv->n], r, true)) {
		rv->rc = DBCRON_ENOMEM;
		return 1;
	}
	rv->n++;
	return 0;
}

/*
 * Every attempt of r's fire, first attempt first: a keyset page of the
 * job's runs just below (fire_at, job, any attempt), so the attempts are
 * the newest rows of it and one indexed statement finds them, however
 * long the log.
 */
static int attempt_chain(store *s, const dbcron_run *r, app_run_vec *rv, dbcron_err *err)
{
	chain_ctx cc = {.rv = rv, .fire_at = r->fire_at, .node_index = r->node_index};
	store_run_filter f = {.job = r->job_name, .state = 0, .since_ms = -1,
			      .limit = RUN_ATTEMPTS_MAX, .keyset = true,
			      .before_fire_at = r->fire_at, .before_job = r->job_name,
			      .before_attempt = INT_MAX, .before_id = INT64_MAX};
	int rc = store_runs_list(s, &f, chain_run, &cc, err);
	if (!rc && rv->rc)
		rc = oom(err);
	return rc;
}

void app_run_view_clear(app_run_view *v)
{
	dbcron_run_clear(&v->run);
	app_run_vec_free(&v->attempts);
	v->chained = false;
}

int app_run_view_get(store *s, int64_t id, app_run_view *v, dbcron_err *err)
{
	memset(v, 0, sizeof(*v));
	int rc = store_run_get(s, id, &v->run, err);
	if (rc)
		return rc;
	/* a run with no job name has no fire to chain */
	v->chained = v->run.job_name != NULL;
	if (v->chained && (rc = attempt_chain(s, &v->run, &v->attempts, err)))
		app_run_view_clear(v);
	return rc;
}

json_t *app_run_view_json(const app_run_view *v)
{
	json_t *o = model_run_json(&v->run), *chain = NULL;
	if (!o || !v->chained)
		return o;
	if (!(chain = json_array()))
		goto out_oom;
	for (size_t i = 0; i < v->attempts.n; i++)
		if (json_array_append_new(chain, model_run_json(&v->attempts.v[i])))
			goto out_oom;
	if (json_object_set_new(o, "attempts", chain))
		goto out_oom_set; /* the set released chain */
	return o;
out_oom:
	json_decref(chain);
out_oom_set:
	json_decref(o);
	return NULL;
}

int app_run_get(store *s, int64_t id, json_t **out, dbcron_err *err)
{
	app_run_view v;
	int rc;

	*out = NULL;
	if ((rc = app_run_view_get(s, id, &v, err)))
		return rc;
	if (!(*out = app_run_view_json(&v)))
		rc = oom(err);
	app_run_view_clear(&v);
	return rc;
}

int app_run_cancel(store *s, int64_t id, json_t **out, bool *done, dbcron_err *err)
{
	int rc;
	*out = NULL;
	if ((rc = store_run_cancel(s, id, done, NULL, err)) || (rc = app_run_get(s, id, out, err)))
		return rc;
	if (json_object_set_new(*out, "cancel", json_string(*done ? "done" : "requested"))) {
		json_decref(*out);
		*out = NULL;
		return oom(err);
	}
	return DBCRON_OK;
}

/* ------------------------------------------------- nodes and locks */

static json_t *ms_json(int64_t ms)
{
	return ms >= 0 ? json_integer(ms) : json_null();
}

static json_t *str_json(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_t *app_node_json(const store_node_row *nr, int64_t now_ms)
{
	char hb[64];
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bad |= json_object_set_new(o, "node", str_json(nr->node_id));
	bad |= json_object_set_new(o, "host", str_json(nr->host));
	bad |= json_object_set_new(o, "pid", json_integer(nr->pid));
	bad |= json_object_set_new(o, "state", str_json(nr->state));
	bad |= json_object_set_new(o, "workers", json_integer(nr->workers));
	bad |= json_object_set_new(o, "running", json_integer(nr->running));
	bad |= json_object_set_new(o, "started_ms", ms_json(nr->started_ms));
	bad |= json_object_set_new(o, "heartbeat_ms", ms_json(nr->heartbeat_ms));
	bad |= json_object_set_new(o, "heartbeat",
				   json_string(model_time_text(nr->heartbeat_ms, hb, sizeof(hb))));
	bad |= json_object_set_new(o, "heartbeat_age_ms",
				   nr->heartbeat_ms >= 0 ? json_integer(now_ms - nr->heartbeat_ms)
							 : json_null());
	bad |= json_object_set_new(o, "lease_until_ms", ms_json(nr->lease_until));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *app_lock_json(const store_lock_row *l, int64_t now_ms)
{
	return json_pack("{s:s?,s:s?,s:I,s:I,s:I,s:s}", "name", l->name, "owner", l->owner,
			 "since_ms", (json_int_t)l->since_ms, "until_ms", (json_int_t)l->until_ms,
			 "fence", (json_int_t)l->fence, "state",
			 l->until_ms >= now_ms ? "held" : "free");
}

typedef struct list_ctx {
	json_t *arr;
	int64_t now;
	bool failed;
} list_ctx;

static int add_node(void *ctx, const store_node_row *nr)
{
	list_ctx *lc = ctx;
	if (json_array_append_new(lc->arr, app_node_json(nr, lc->now))) {
		lc->failed = true;
		return 1;
	}
	return 0;
}

static int add_lock(void *ctx, const store_lock_row *l)
{
	list_ctx *lc = ctx;
	if (json_array_append_new(lc->arr, app_lock_json(l, lc->now))) {
		lc->failed = true;
		return 1;
	}
	return 0;
}

static int list_of(store *s, bool nodes, json_t **out, dbcron_err *err)
{
	list_ctx lc = {0};
	int rc;
	*out = NULL;
	if ((rc = store_now_ms(s, &lc.now, err)))
		return rc;
	if (!(lc.arr = json_array()))
		return oom(err);
	rc = nodes ? store_nodes_list(s, add_node, &lc, err)
		   : store_lock_list(s, add_lock, &lc, err);
	if (!rc && lc.failed)
		rc = oom(err);
	if (rc) {
		json_decref(lc.arr);
		return rc;
	}
	*out = lc.arr;
	return DBCRON_OK;
}

int app_nodes_list(store *s, json_t **out, dbcron_err *err)
{
	return list_of(s, true, out, err);
}

int app_locks_list(store *s, json_t **out, dbcron_err *err)
{
	return list_of(s, false, out, err);
}

/* ---------------------------------------------------------- follow */

/* At most this many new rows are read by one statement of a poll. */
#define FOLLOW_BATCH 500

static int run_key_cmp(const dbcron_run *a, const dbcron_run *b)
{
	if (a->finished_ms != b->finished_ms)
		return a->finished_ms < b->finished_ms ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_finished(const void *a, const void *b)
{
	return run_key_cmp(a, b);
}

static bool follow_match(const app_follow *fw, const dbcron_run *r)
{
	return (!fw->state || (int)r->state == fw->state) &&
	       (fw->since_ms < 0 || r->fire_at >= fw->since_ms);
}

static int add_pending(app_follow *fw, int64_t id)
{
	for (size_t i = 0; i < fw->npending; i++)
		if (fw->pending[i] == id)
			return DBCRON_OK;
	if (dbcron__grow((void **)&fw->pending, &fw->cap, fw->npending + 1, sizeof(*fw->pending)))
		return DBCRON_ENOMEM;
	fw->pending[fw->npending++] = id;
	return DBCRON_OK;
}

/* What one poll found: the runs to hand out, copied, sorted at the end. */
typedef struct follow_found {
	app_follow *fw;
	dbcron_run *v;
	size_t n, cap, read;
	int64_t max_id;
	int rc;
} follow_found;

static int found_add(follow_found *ff, const dbcron_run *r)
{
	if (dbcron__grow((void **)&ff->v, &ff->cap, ff->n + 1, sizeof(*ff->v)) ||
	    app_run_copy(&ff->v[ff->n], r, true))
		return DBCRON_ENOMEM;
	ff->n++;
	return DBCRON_OK;
}

/* A row seen for the first time: handed out when it has ended (and ended
 * since the follower started), else watched until it does. */
static int follow_new(void *ctx, const dbcron_run *r)
{
	follow_found *ff = ctx;
	app_follow *fw = ff->fw;
	ff->read++;
	if (r->id > ff->max_id)
		ff->max_id = r->id;
	if (!dbcron_run_state_terminal(r->state))
		ff->rc = add_pending(fw, r->id);
	/* a new row that ended without a finish time is shown rather than
	 * lost: it cannot be told from one that ended before the start */
	else if ((r->finished_ms >= fw->start_ms || r->finished_ms < 0) && follow_match(fw, r))
		ff->rc = found_add(ff, r);
	return ff->rc != DBCRON_OK;
}

int app_follow_start(store *s, app_follow *fw, const store_run_filter *f, dbcron_err *err)
{
	int rc;
	memset(fw, 0, sizeof(*fw));
	fw->job = f->job;
	fw->state = f->state;
	fw->since_ms = f->since_ms;
	if (fw->state && !dbcron_run_state_terminal(fw->state))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "--state %s: a follower prints runs as they end; give an end state",
				      dbcron_run_state_name(fw->state));
	if ((rc = store_now_ms(s, &fw->start_ms, err)))
		return rc;
	/* the runs that have yet to end: the only old rows a poll re-reads */
	follow_found ff = {.fw = fw};
	for (int st = DBCRON_RUN_SCHEDULED; st <= DBCRON_RUN_RUNNING; st++) {
		store_run_filter pf = {.job = f->job, .state = st, .since_ms = -1, .limit = 0};
		if ((rc = store_runs_list(s, &pf, follow_new, &ff, err)))
			goto out_free;
		if (ff.rc) {
			rc = oom(err);
			goto out_free;
		}
	}
	if (ff.max_id > fw->last_id)
		fw->last_id = ff.max_id;
out_free:
	for (size_t i = 0; i < ff.n; i++)
		dbcron_run_clear(&ff.v[i]);
	dbcron__free(ff.v);
	if (rc)
		app_follow_clear(fw);
	return rc;
}

int app_follow_poll(store *s, app_follow *fw, store_run_cb cb, void *ctx, dbcron_err *err)
{
	follow_found ff = {.fw = fw, .max_id = fw->last_id};
	int rc = DBCRON_OK;

	/* 1: the watched runs that have ended since the last poll */
	for (size_t i = 0; i < fw->npending;) {
		dbcron_run r;
		memset(&r, 0, sizeof(r));
		rc = store_run_get(s, fw->pending[i], &r, err);
		if (rc == DBCRON_ENOTFOUND) {
			rc = DBCRON_OK; /* pruned meanwhile */
		} else if (rc) {
			goto out_free;
		} else if (!dbcron_run_state_terminal(r.state)) {
			dbcron_run_clear(&r);
			i++;
			continue;
		} else if (follow_match(fw, &r) && (rc = found_add(&ff, &r))) {
			dbcron_run_clear(&r);
			rc = oom(err);
			goto out_free;
		}
		dbcron_run_clear(&r);
		fw->pending[i] = fw->pending[--fw->npending];
	}
	/* 2: the rows created since, by id (the primary key) */
	do {
		ff.read = 0;
		if ((rc = store_runs_after_id(s, ff.max_id, fw->job, FOLLOW_BATCH, follow_new, &ff,
					      err)))
			goto out_free;
		if (ff.rc) {
			rc = oom(err);
			goto out_free;
		}
	} while (ff.read == FOLLOW_BATCH);
	fw->last_id = ff.max_id;
	/* in the order they ended */
	dbcron__sort(ff.v, ff.n, sizeof(*ff.v), cmp_finished);
	for (size_t i = 0; i < ff.n; i++)
		if (cb(ctx, &ff.v[i]))
			break;
out_free:
	for (size_t i = 0; i < ff.n; i++)
		dbcron_run_clear(&ff.v[i]);
	dbcron__free(ff.v);
	return rc;
}

int app_follow_seen(app_follow *fw, const dbcron_run *r)
{
	if (r->id > fw->last_id)
		fw->last_id = r->id;
	if (!dbcron_run_state_terminal(r->state))
		return add_pending(fw, r->id);
	for (size_t i = 0; i < fw->npending; i++)
		if (fw->pending[i] == r->id)
			fw->pending[i] = fw->pending[--fw->npending];
	return DBCRON_OK;
}

void app_follow_clear(app_follow *fw)
{
	dbcron__free(fw->pending);
	memset(fw, 0, sizeof(*fw));
}
