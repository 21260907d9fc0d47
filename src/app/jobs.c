/*
 * The job verbs that read or flip one thing (list, page, get, pause,
 * resume, delete, trigger), for every front end.  Apply is apply.c's,
 * export, set and rename edit.c's.  Times relative to "now" are the
 * database's now.  A pause or delete returns once every live node has
 * seen it (or says which did not), so that no node starts a fire it had
 * already claimed.
 */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "app/app.h"
#include "app/app_int.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "model/params.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "model/rules.h"

/* How long pause, delete and a pruning apply wait for the nodes. */
#define NODES_WAIT_MS 10000

int app__collect_job(void *ctx, const dbcron_job *job)
{
	job_vec *jv = ctx;
	if (dbcron__grow((void **)&jv->v, &jv->cap, jv->n + 1, sizeof(dbcron_job)) ||
	    dbcron_job_copy(&jv->v[jv->n], job)) {
		jv->rc = DBCRON_ENOMEM;
		return 1;
	}
	jv->n++;
	return 0;
}

void app_job_vec_free(job_vec *jv)
{
	for (size_t i = 0; i < jv->n; i++)
		dbcron_job_clear(&jv->v[i]);
	dbcron__free(jv->v);
	memset(jv, 0, sizeof(*jv));
}

int app__cmp_job_name(const void *a, const void *b)
{
	return strcmp(((const dbcron_job *)a)->name, ((const dbcron_job *)b)->name);
}

int app_jobs_sorted(store *s, job_vec *jv, dbcron_err *err)
{
	int rc = store_job_list(s, app__collect_job, jv, err);
	if (!rc && jv->rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing jobs");
	if (!rc)
		dbcron__sort(jv->v, jv->n, sizeof(*jv->v), app__cmp_job_name);
	return rc;
}

static int oom(dbcron_err *err)
{
	return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
}

static int no_such_job(dbcron_err *err, const char *name)
{
	return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
}

void app__wait_nodes(store *s, char *warning, size_t wlen)
{
	dbcron_err e = {0};
	if (store_nodes_wait_seen(s, NODES_WAIT_MS, &e))
		dbcron__textf(warning, wlen, "%s", e.msg);
}

static int add_live(void *ctx, const char *name)
{
	app_live *l = ctx;
	char *c = dbcron__strdup(name);
	if (!c || dbcron__grow((void **)&l->names, &l->cap, l->n + 1, sizeof(*l->names))) {
		dbcron__free(c);
		l->failed = true;
		return 1;
	}
	l->names[l->n++] = c;
	return 0;
}

void app_live_clear(app_live *l)
{
	for (size_t i = 0; i < l->n; i++)
		dbcron__free(l->names[i]);
	dbcron__free(l->names);
	memset(l, 0, sizeof(*l));
}

int app_live_load(store *s, app_live *l, dbcron_err *err)
{
	memset(l, 0, sizeof(*l));
	int rc = store_handlers_live(s, add_live, l, err);
	if (!rc && l->failed)
		rc = oom(err);
	if (rc)
		app_live_clear(l);
	return rc;
}

const char *app_job_unrunnable(const app_live *l, const dbcron_job *j, char *buf, size_t len)
{
	if (j->executor != DBCRON_EXEC_HANDLER || !j->handler)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->names[i], j->handler) == 0)
			return NULL;
	return model_unrunnable_why(j->handler, buf, len);
}

/* o (a job's JSON, consumed) with "unrunnable" when no live node can run
 * j; NULL when out of memory. */
static json_t *with_routing(json_t *o, const app_live *l, const dbcron_job *j)
{
	char why[400];
	const char *w = app_job_unrunnable(l, j, why, sizeof(why));
	if (o && w && json_object_set_new(o, "unrunnable", json_string(w))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * What a listing adds to a job's definition (model_job_json, unchanged, so
 * that a listed job can be applied back): its schedule in words, its next
 * fire in its own zone, and its last run.  Times stay absolute; a front
 * end says "in 4m" against the page's now_ms (the database's clock).
 */
typedef struct page_ctx {
	json_t *jobs;
	const app_live *live;
	long limit, n;
	bool more, failed;
	char last[256]; /* the page's last name: the next cursor */
	/* (job id, index in jobs) of the page, sorted by id for the last runs */
	struct page_id {
		int64_t id;
		size_t idx;
	} *ids;
} page_ctx;

const char *app_schedule_words(const dbcron_job *j, char *buf, size_t len)
{
	if (j->kind == DBCRON_SCHED_CRON) {
		dbcron_cron *c = NULL;
		dbcron_err e = {0};
		if (!model_job_cron(j, &c, &e)) {
			dbcron_cron_describe(c, buf, len);
			dbcron_cron_free(c);
			return buf;
		}
	}
	return model_schedule_text(j, buf, len);
}

const char *app_local_time(const dbcron_job *j, int64_t ms, char *buf, size_t len)
{
	dbcron_tz *tz = NULL;
	dbcron_err e = {0};
	if (ms < 0 || dbcron_tz_open(j->tz, &tz, &e))
		return NULL;
	dbcron__format_rfc3339(ms, dbcron_tz_offset(tz, ms / 1000), ms % 1000 != 0, buf, len);
	dbcron_tz_free(tz);
	return buf;
}

static json_t *local_time_json(const dbcron_job *j, int64_t ms)
{
	char t[64];
	const char *l = app_local_time(j, ms, t, sizeof(t));
	return l ? json_string(l) : json_null();
}

/* o (consumed) with the listing's keys; NULL when out of memory. */
static json_t *with_listing(json_t *o, const dbcron_job *j)
{
	char buf[512];
	if (!o)
		return NULL;
	if (json_object_set_new(o, "schedule",
				json_string(model_schedule_text(j, buf, sizeof(buf)))) ||
	    json_object_set_new(o, "description",
				json_string(app_schedule_words(j, buf, sizeof(buf)))) ||
	    json_object_set_new(o, "next_fire_local", local_time_json(j, j->next_fire_at)) ||
	    json_object_set_new(o, "last_run", json_null())) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int page_job(void *ctx, const dbcron_job *job)
{
	page_ctx *pc = ctx;
	if (pc->n == pc->limit) {
		pc->more = true; /* the one row past the page: there is a next */
		return 1;
	}
	if (json_array_append_new(pc->jobs, with_listing(with_routing(model_job_json(job),
								       pc->live, job),
							  job))) {
		pc->failed = true;
		return 1;
	}
	pc->ids[pc->n].id = job->id;
	pc->ids[pc->n].idx = (size_t)pc->n;
	dbcron__textf(pc->last, sizeof(pc->last), "%s", job->name);
	pc->n++;
	return 0;
}

static int cmp_page_id(const void *a, const void *b)
{
	const struct page_id *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int page_last_run(void *ctx, const store_last_run *r)
{
	page_ctx *pc = ctx;
	struct page_id key = {.id = r->job_id};
	const struct page_id *at = bsearch(&key, pc->ids, (size_t)pc->n, sizeof(*pc->ids),
					   cmp_page_id);
	if (!at)
		return 0;
	char t[64];
	/* a state this binary does not know reads as null, not as out of memory */
	json_t *lr = json_pack("{s:I,s:s?,s:o,s:o}", "id", (json_int_t)r->run_id, "state",
			       dbcron_run_state_name((dbcron_run_state)r->state), "finished_at_ms",
			       r->finished_ms >= 0 ? json_integer(r->finished_ms) : json_null(),
			       "finished_at",
			       r->finished_ms >= 0
				       ? json_string(model_time_text(r->finished_ms, t, sizeof(t)))
				       : json_null());
	if (!lr || json_object_set_new(json_array_get(pc->jobs, at->idx), "last_run", lr)) {
		pc->failed = true;
		return 1;
	}
	return 0;
}

/* The last run of every job of the page, in one statement. */
static int page_last_runs(store *s, page_ctx *pc, dbcron_err *err)
{
	int64_t *ids = dbcron__calloc(pc->n ? (size_t)pc->n : 1, sizeof(*ids));
	if (!ids)
		return oom(err);
	for (long i = 0; i < pc->n; i++)
		ids[i] = pc->ids[i].id;
	dbcron__sort(pc->ids, (size_t)pc->n, sizeof(*pc->ids), cmp_page_id);
	int rc = store_jobs_last_run(s, ids, (size_t)pc->n, page_last_run, pc, err);
	dbcron__free(ids);
	if (!rc && pc->failed)
		rc = oom(err);
	return rc;
}

/* The shape of a job name (dbcron_job_validate's): 1-200 bytes, no
 * spaces or control characters.  Anything else was not given out here. */
static bool cursor_ok(const char *c)
{
	size_t n = strlen(c);
	if (n == 0 || n > 200)
		return false;
	for (; *c; c++)
		if ((unsigned char)*c < 0x21 || *c == 0x7f)
			return false;
	return true;
}

/* The strip rows of a page, gathered then sorted (job, fire_at, attempt). */
typedef struct strip_vec {
	store_strip_run *v;
	size_t n, cap;
	bool failed;
} strip_vec;

static int strip_collect(void *ctx, const store_strip_run *r)
{
	strip_vec *sv = ctx;
	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 256;
		store_strip_run *v = dbcron__realloc(sv->v, cap * sizeof(*v));
		if (!v) {
			sv->failed = true;
			return 1;
		}
		sv->v = v, sv->cap = cap;
	}
	sv->v[sv->n++] = *r;
	return 0;
}

static int cmp_strip(const void *a, const void *b)
{
	const store_strip_run *x = a, *y = b;
	if (x->job_id != y->job_id)
		return x->job_id < y->job_id ? -1 : 1;
	if (x->fire_at != y->fire_at)
		return x->fire_at < y->fire_at ? -1 : 1;
	return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

/* "strip" on every job of the page: its last n runs that are not
 * SCHEDULED, oldest first, each {"id", "state", "fire_at_ms", "attempt"};
 * one statement for the page.  pc->ids is sorted by id (page_last_runs). */
static int page_strips(store *s, page_ctx *pc, long n, dbcron_err *err)
{
	strip_vec sv = {0};
	int rc;
	int64_t *ids = dbcron__calloc(pc->n ? (size_t)pc->n : 1, sizeof(*ids));
	if (!ids)
		return oom(err);
	for (long i = 0; i < pc->n; i++) {
		ids[i] = pc->ids[i].id;
		json_object_set_new(json_array_get(pc->jobs, (size_t)i), "strip", json_array());
	}
	rc = store_jobs_strip(s, ids, (size_t)pc->n, n, strip_collect, &sv, err);
	if (!rc && sv.failed)
		rc = oom(err);
	if (!rc)
		dbcron__sort(sv.v, sv.n, sizeof(*sv.v), cmp_strip);
	for (size_t i = 0; !rc && i < sv.n; i++) {
		const store_strip_run *r = &sv.v[i];
		struct page_id key = {.id = r->job_id};
		const struct page_id *at = bsearch(&key, pc->ids, (size_t)pc->n, sizeof(*pc->ids),
						   cmp_page_id);
		json_t *arr = at ? json_object_get(json_array_get(pc->jobs, at->idx), "strip") : NULL;
		if (arr && json_array_append_new(
				   arr, json_pack("{s:I,s:s?,s:I,s:i}", "id", (json_int_t)r->run_id,
						  "state",
						  dbcron_run_state_name((dbcron_run_state)r->state),
						  "fire_at_ms", (json_int_t)r->fire_at, "attempt",
						  r->attempt)))
			rc = oom(err);
	}
	dbcron__free(sv.v);
	dbcron__free(ids);
	return rc;
}

int app_jobs_page(store *s, const char *cursor, long limit, json_t **out, dbcron_err *err)
{
	app_jobs_query q = {.cursor = cursor, .limit = limit};
	return app_jobs_query_page(s, &q, out, err);
}

int app_jobs_query_page(store *s, const app_jobs_query *q, json_t **out, dbcron_err *err)
{
	app_live live = {0};
	const char *cursor = q->cursor;
	long limit = q->limit;
	page_ctx pc = {.limit = limit, .live = &live};
	int64_t now;
	int rc;

	*out = NULL;
	if (cursor && *cursor && !cursor_ok(cursor))
		return dbcron_err_set(err, DBCRON_EINVAL, "cursor '%.64s': not one this server gave",
				      cursor);
	if (limit < 1 || limit > APP_JOBS_PAGE_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "limit %ld: expected 1 to %d", limit,
				      APP_JOBS_PAGE_MAX);
	if (q->strip < 0 || q->strip > APP_STRIP_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "strip %ld: expected 0 to %d", q->strip,
				      APP_STRIP_MAX);
	if ((rc = store_now_ms(s, &now, err)) || (rc = app_live_load(s, &live, err)))
		return rc;
	if (!(pc.jobs = json_array()) || !(pc.ids = dbcron__calloc((size_t)limit, sizeof(*pc.ids)))) {
		rc = oom(err);
		goto out_free;
	}
	rc = q->match && *q->match
		     ? store_job_search(s, cursor, limit + 1, q->match, page_job, &pc, err)
		     : store_job_page(s, cursor, limit + 1, page_job, &pc, err);
	if (rc)
		goto out_free;
	if (pc.failed) {
		rc = oom(err);
		goto out_free;
	}
	if ((rc = page_last_runs(s, &pc, err)) ||
	    (q->strip > 0 && (rc = page_strips(s, &pc, q->strip, err))))
		goto out_free;
	*out = json_pack("{s:O,s:o,s:I}", "jobs", pc.jobs, "next_cursor",
			 pc.more ? json_string(pc.last) : json_null(), "now_ms", (json_int_t)now);
	if (!*out)
		rc = oom(err);
out_free:
	json_decref(pc.jobs);
	dbcron__free(pc.ids);
	app_live_clear(&live);
	return rc;
}

/*
 * What a person reads about a job's schedule: "schedule" (its kind and
 * text), "description" (a cron expression in words), and "next_fires":
 * the next APP_NEXT_FIRES instants from the stored next fire, each in UTC
 * and in the job's zone.  Failures leave the keys out: the definition
 * itself is already in the object.
 */
#define APP_NEXT_FIRES 5
void app_job_add_words(json_t *o, const dbcron_job *j)
{
	char buf[512];
	json_object_set_new(o, "schedule", json_string(model_schedule_text(j, buf, sizeof(buf))));
	json_object_set_new(o, "description", json_string(app_schedule_words(j, buf, sizeof(buf))));
	dbcron_tz *tz = NULL;
	dbcron_err e = {0};
	json_t *arr = json_array();
	if (!arr || dbcron_tz_open(j->tz, &tz, &e)) {
		json_decref(arr);
		return;
	}
	int64_t t = j->next_fire_at;
	/* --max-runs: no more than are left of it */
	int64_t left = j->max_runs > 0 ? j->max_runs - j->runs_fired : APP_NEXT_FIRES;
	for (int i = 0; i < APP_NEXT_FIRES && i < left && t >= 0 && !j->paused; i++) {
		char utc[64], local[64];
		dbcron__format_rfc3339(t, 0, 1, utc, sizeof(utc));
		dbcron__format_rfc3339(t, dbcron_tz_offset(tz, t / 1000), 1, local, sizeof(local));
		json_array_append_new(arr, json_pack("{s:I,s:s,s:s}", "at_ms", (json_int_t)t, "utc",
						     utc, "local", local));
		/* an AFTER job's later fires depend on its runs: only the next */
		if (j->kind == DBCRON_SCHED_AFTER || dbcron_job_next_fire(j, t, &t, &e) != 1)
			break;
	}
	dbcron_tz_free(tz);
	json_object_set_new(o, "next_fires", arr);
}

void app_job_view_clear(app_job_view *v)
{
	dbcron_job_clear(&v->job);
	app_run_vec_free(&v->runs);
	v->unrunnable = NULL;
}

/* store_name_cb: one more name into the view's needed_by. */
static int needed_by_add(void *ctx, const char *name)
{
	app_job_view *v = ctx;
	size_t l = strlen(v->needed_by);
	snprintf(v->needed_by + l, sizeof(v->needed_by) - l, "%s%s", l ? ", " : "", name);
	return 0;
}

int app_job_view_get(store *s, const char *name, size_t nruns, app_job_view *v,
		     dbcron_err *err)
{
	app_live live = {0};
	store_run_filter f = {.job = name, .state = 0, .since_ms = -1, .limit = (long)nruns};
	int rc;

	memset(v, 0, sizeof(*v));
	dbcron_job_init(&v->job);
	if ((rc = app_job_find(s, name, &v->job, err)))
		goto out_clear;
	/* a job's last runs are shown without their output (app_run_get) */
	if ((nruns && (rc = store_runs_list(s, &f, app_run_collect, &v->runs, err))) ||
	    (rc = app_live_load(s, &live, err)))
		goto out_clear;
	if (v->runs.rc) {
		rc = oom(err);
		goto out_clear;
	}
	v->unrunnable = app_job_unrunnable(&live, &v->job, v->why, sizeof(v->why));
	rc = store_job_needed_by(s, name, needed_by_add, v, err);
out_clear:
	app_live_clear(&live);
	if (rc)
		app_job_view_clear(v);
	return rc;
}

int app_job_get(store *s, const char *name, size_t nruns, bool words, json_t **out,
		dbcron_err *err)
{
	app_job_view v;
	int rc;

	*out = NULL;
	if ((rc = app_job_view_get(s, name, nruns, &v, err)))
		return rc;
	/* the view through the JSON codec: the definition with its runs, and
	 * "unrunnable" when no live node can run it */
	json_t *o = model_job_json_with_runs(&v.job, v.runs.v, v.runs.n);
	if (o && v.unrunnable && json_object_set_new(o, "unrunnable", json_string(v.unrunnable))) {
		json_decref(o);
		o = NULL;
	}
	/* what needs it, as the names a needs key takes */
	json_t *nb = o ? json_array() : NULL;
	char name_buf[256];
	for (const char *p = v.needed_by; nb && model_needs_next(&p, name_buf, sizeof(name_buf));)
		json_array_append_new(nb, json_string(name_buf));
	if (o && (!nb || json_object_set_new(o, "needed_by", nb))) {
		json_decref(o);
		o = NULL;
	}
	if (!o)
		rc = oom(err);
	else if (words)
		app_job_add_words(o, &v.job);
	*out = o;
	app_job_view_clear(&v);
	return rc;
}

int app_job_find(store *s, const char *name, dbcron_job *j, dbcron_err *err)
{
	int rc = store_job_get(s, name, j, err);
	return rc == DBCRON_ENOTFOUND ? no_such_job(err, name) : rc;
}

static int set_paused(store *s, const char *name, bool pause, app_job_result *r,
		      dbcron_err *err)
{
	dbcron_job j;
	int64_t now;
	int rc;

	memset(r, 0, sizeof(*r));
	r->next_fire = -1;
	dbcron_job_init(&j);
	rc = store_job_get(s, name, &j, err);
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, name);
	if (rc)
		goto out_clear;
	r->next_fire = j.next_fire_at;
	/* resume also clears a set-aside job, so it is a change then */
	if (j.paused == pause && (pause || !j.set_aside))
		goto out_clear;
	/* a pause leaves the next fire as stored; a resume recomputes it
	 * from the database's now (rules.h) */
	if (!pause && ((rc = store_now_ms(s, &now, err)) ||
		       (rc = model_resume_next_fire(&j, now, &r->next_fire, err))))
		goto out_clear;
	/* a node's claim may deadlock with the edit on MariaDB: rolled back
	 * whole, it is tried again (so are a delete and a rename) */
	int tries = 0;
	do
		rc = store_job_set_paused(s, name, pause, r->next_fire, err);
	while (dbcron__busy_again(rc, &tries));
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, name);
	if (rc)
		goto out_clear;
	r->changed = true;
	if (pause)
		app__wait_nodes(s, r->warning, sizeof(r->warning));
out_clear:
	dbcron_job_clear(&j);
	return rc;
}

int app_job_pause(store *s, const char *name, app_job_result *r, dbcron_err *err)
{
	return set_paused(s, name, true, r, err);
}

int app_job_resume(store *s, const char *name, app_job_result *r, dbcron_err *err)
{
	return set_paused(s, name, false, r, err);
}

int app_job_delete(store *s, const char *name, app_job_result *r, dbcron_err *err)
{
	return app_job_delete_force(s, name, false, r, err);
}

int app_job_delete_force(store *s, const char *name, bool force, app_job_result *r,
			 dbcron_err *err)
{
	memset(r, 0, sizeof(*r));
	int rc, tries = 0;
	do
		rc = store_job_delete_force(s, name, force, r->detached, sizeof(r->detached), err);
	while (dbcron__busy_again(rc, &tries));
	if (rc == DBCRON_ENOTFOUND)
		return no_such_job(err, name);
	if (!rc) {
		r->changed = true;
		app__wait_nodes(s, r->warning, sizeof(r->warning));
	}
	return rc;
}

int app_job_trigger(store *s, const char *name, app_job_result *r, dbcron_err *err)
{
	return app_job_trigger_params(s, name, NULL, 0, r, err);
}

int app_job_trigger_params(store *s, const char *name, const char *const *kv, size_t n,
			   app_job_result *r, dbcron_err *err)
{
	memset(r, 0, sizeof(*r));
	dbcron_job decl;
	char *params = NULL;
	dbcron_job_init(&decl);
	/* the declaration as it is now: one edited between this read and the
	 * insert is the one the trigger raced, as any edit racing a trigger */
	int rc = store_job_get(s, name, &decl, err);
	if (!rc)
		rc = model_params_for_run(name, decl.params, kv, n, &params, err);
	dbcron_job_clear(&decl);
	if (!rc)
		rc = store_job_trigger_params(s, name, params, &r->run_id, &r->fire_at, err);
	dbcron__free(params);
	if (rc == DBCRON_ENOTFOUND)
		return no_such_job(err, name);
	r->changed = rc == DBCRON_OK;
	if (rc)
		return rc;
	/* No node claims a run of a paused job, so the caller must be told the
	 * run waits for a resume.  Read after the trigger committed: a pause
	 * or resume in between is the state the run will meet.  The run is
	 * written whatever this read says, so its failure is only not said. */
	dbcron_job j;
	dbcron_err ignored = {0};
	dbcron_job_init(&j);
	if (store_job_get(s, name, &j, &ignored) == DBCRON_OK)
		r->paused = j.paused;
	dbcron_job_clear(&j);
	return rc;
}

json_t *app_job_result_json(const char *name, app_verb verb, const app_job_result *r)
{
	json_t *o;
	char warn[600] = "";
	switch (verb) {
	case APP_VERB_TRIGGER:
		o = json_pack("{s:s,s:I,s:I,s:b}", "job", name, "run_id", (json_int_t)r->run_id,
			      "fire_at_ms", (json_int_t)r->fire_at, "paused", r->paused);
		/* the run exists all the same: it only waits */
		if (r->paused)
			snprintf(warn, sizeof(warn),
				 "job '%s' is paused: run %" PRId64 " waits until it is resumed", name,
				 r->run_id);
		break;
	case APP_VERB_DELETE:
		o = json_pack("{s:s}", "deleted", name);
		if (o && r->detached[0] && json_object_set_new(o, "detached", json_string(r->detached))) {
			json_decref(o);
			return NULL;
		}
		break;
	default:
		o = json_pack("{s:s,s:b,s:b,s:o}", "job", name, "paused", verb == APP_VERB_PAUSE,
			      "changed", r->changed, "next_fire_at_ms",
			      r->next_fire >= 0 ? json_integer(r->next_fire) : json_null());
	}
	if (!warn[0] && r->warning[0])
		snprintf(warn, sizeof(warn), "%s", r->warning);
	if (o && warn[0] && json_object_set_new(o, "warning", json_string(warn))) {
		json_decref(o);
		return NULL;
	}
	return o;
}
