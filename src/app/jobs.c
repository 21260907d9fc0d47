/*
 * The job verbs (list, get, pause, resume, delete, trigger) and apply, for
 * the CLI and the HTTP API alike.  Keeps the all-or-nothing promise of
 * apply: every entry is checked before the store is written, and the write
 * is one store call (one transaction), so a refused batch leaves the
 * database as it was.  Times relative to "now" are the database's now.
 * A pause or delete returns once every live node has seen it (or says
 * which did not), so that no node starts a fire it had already claimed.
 */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "app/app.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "model/rules.h"

/* How long pause, delete and a pruning apply wait for the nodes. */
#define NODES_WAIT_MS 10000

typedef app_job_vec job_vec;

static int collect_job(void *ctx, const dbcron_job *job)
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

static int cmp_job_name(const void *a, const void *b)
{
	return strcmp(((const dbcron_job *)a)->name, ((const dbcron_job *)b)->name);
}

int app_jobs_sorted(store *s, job_vec *jv, dbcron_err *err)
{
	int rc = store_job_list(s, collect_job, jv, err);
	if (!rc && jv->rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing jobs");
	if (!rc)
		dbcron__sort(jv->v, jv->n, sizeof(*jv->v), cmp_job_name);
	return rc;
}

/* The stored jobs a batch names, sorted: a write of one job reads one
 * job, not every job (issue 23 item 9). */
static int batch_prev_sorted(store *s, const app_batch *b, job_vec *jv, dbcron_err *err)
{
	const char **names = dbcron__calloc(b->n ? b->n : 1, sizeof(*names));
	if (!names)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->n; i++)
		names[i] = b->defs[i].job.name;
	int rc = store_jobs_named(s, names, b->n, collect_job, jv, err);
	dbcron__free(names);
	if (!rc && jv->rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing jobs");
	if (!rc)
		dbcron__sort(jv->v, jv->n, sizeof(*jv->v), cmp_job_name);
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

static void wait_nodes(store *s, char *warning, size_t wlen)
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
		if (!dbcron_cron_parse(j->spec, &c, &e)) {
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

int app_jobs_page(store *s, const char *cursor, long limit, json_t **out, dbcron_err *err)
{
	app_live live = {0};
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
	if ((rc = store_now_ms(s, &now, err)) || (rc = app_live_load(s, &live, err)))
		return rc;
	if (!(pc.jobs = json_array()) || !(pc.ids = dbcron__calloc((size_t)limit, sizeof(*pc.ids)))) {
		rc = oom(err);
		goto out_free;
	}
	if ((rc = store_job_page(s, cursor, limit + 1, page_job, &pc, err)))
		goto out_free;
	if (pc.failed) {
		rc = oom(err);
		goto out_free;
	}
	if ((rc = page_last_runs(s, &pc, err)))
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

typedef struct run_vec {
	dbcron_run *v;
	size_t n, cap;
	int rc;
} run_vec;

static int collect_run(void *ctx, const dbcron_run *run)
{
	run_vec *rv = ctx;
	/* a job's last runs are shown without their output (app_run_get) */
	if (dbcron__grow((void **)&rv->v, &rv->cap, rv->n + 1, sizeof(dbcron_run)) ||
	    app_run_copy(&rv->v[rv->n], run, false)) {
		rv->rc = DBCRON_ENOMEM;
		return 1;
	}
	rv->n++;
	return 0;
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
	for (int i = 0; i < APP_NEXT_FIRES && t >= 0 && !j->paused; i++) {
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

int app_job_get(store *s, const char *name, size_t nruns, bool words, json_t **out,
		dbcron_err *err)
{
	dbcron_job j;
	run_vec rv = {0};
	app_live live = {0};
	store_run_filter f = {.job = name, .state = 0, .since_ms = -1, .limit = (long)nruns};
	int rc;

	*out = NULL;
	dbcron_job_init(&j);
	rc = store_job_get(s, name, &j, err);
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, name);
	if (rc)
		goto out_clear;
	if ((nruns && (rc = store_runs_list(s, &f, collect_run, &rv, err))) ||
	    (rc = app_live_load(s, &live, err)))
		goto out_clear;
	if (rv.rc || !(*out = with_routing(model_job_json_with_runs(&j, rv.v, rv.n), &live, &j)))
		rc = oom(err);
	else if (words)
		app_job_add_words(*out, &j);
out_clear:
	app_live_clear(&live);
	for (size_t i = 0; i < rv.n; i++)
		dbcron_run_clear(&rv.v[i]);
	dbcron__free(rv.v);
	dbcron_job_clear(&j);
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
	rc = store_job_set_paused(s, name, pause, r->next_fire, err);
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, name);
	if (rc)
		goto out_clear;
	r->changed = true;
	if (pause)
		wait_nodes(s, r->warning, sizeof(r->warning));
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
	memset(r, 0, sizeof(*r));
	int rc = store_job_delete(s, name, err);
	if (rc == DBCRON_ENOTFOUND)
		return no_such_job(err, name);
	if (!rc) {
		r->changed = true;
		wait_nodes(s, r->warning, sizeof(r->warning));
	}
	return rc;
}

int app_job_trigger(store *s, const char *name, app_job_result *r, dbcron_err *err)
{
	memset(r, 0, sizeof(*r));
	int rc = store_job_trigger(s, name, &r->run_id, &r->fire_at, err);
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

/* ----------------------------------------------------------- apply */

static void entry_error(app_entry_err_fn on_err, void *ctx, app_apply_result *r,
			size_t idx, const char *name, const char *fmt, ...)
	DBCRON_PRINTF(6, 7);

static void entry_error(app_entry_err_fn on_err, void *ctx, app_apply_result *r,
			size_t idx, const char *name, const char *fmt, ...)
{
	char msg[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->nerr++;
	if (on_err)
		on_err(ctx, idx, name, msg);
}

static int cmp_def_name(const void *a, const void *b)
{
	const model_jobdef *const *x = a, *const *y = b;
	int c = strcmp((*x)->job.name, (*y)->job.name);
	/* batch order among equal names, so "first at #i" is right */
	return c ? c : (*x < *y ? -1 : *x > *y);
}

static int refused(app_apply_result *r, dbcron_err *err)
{
	return dbcron_err_set(err, DBCRON_EINVAL, "nothing applied (%zu error%s)", r->nerr,
			      r->nerr == 1 ? "" : "s");
}

void app_batch_clear(app_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		model_jobdef_clear(&b->defs[i]);
	dbcron__free(b->defs);
	memset(b, 0, sizeof(*b));
}

int app_apply_check(json_t *entries, const app_apply_opts *o,
		    app_entry_err_fn on_err, void *ctx, app_batch *b,
		    app_apply_result *r, dbcron_err *err)
{
	size_t n = json_array_size(entries);
	model_jobdef **sorted = NULL;
	int rc = DBCRON_ENOMEM;

	memset(b, 0, sizeof(*b));
	memset(r, 0, sizeof(*r));
	b->defs = dbcron__calloc(n ? n : 1, sizeof(*b->defs));
	sorted = dbcron__calloc(n ? n : 1, sizeof(*sorted));
	if (!b->defs || !sorted) {
		oom(err);
		goto out_free;
	}
	/* 1: every entry alone */
	for (size_t i = 0; i < n; i++) {
		dbcron_err e = {0};
		const char *name;
		model_jobdef_init(&b->defs[i], false);
		b->n = i + 1;
		char warn[512];
		if (model_jobdef_from_json(&b->defs[i], json_array_get(entries, i), &name, &e) ||
		    (o->user_check && model_jobdef_check_host(&b->defs[i], &e)) ||
		    model_jobdef_check_handler(&b->defs[i].job, o->strict, warn, sizeof(warn), &e))
			entry_error(on_err, ctx, r, i, name, "%s%s", e.msg,
				    e.code == DBCRON_ENOTFOUND
					    ? " (--no-user-check if it exists only where the nodes run)"
					    : "");
		else if (warn[0] && o->on_warn)
			o->on_warn(ctx, i, name, warn);
	}
	rc = DBCRON_EINVAL;
	if (r->nerr) {
		refused(r, err);
		goto out_free;
	}
	/* 2: names unique within the batch */
	for (size_t i = 0; i < n; i++)
		sorted[i] = &b->defs[i];
	dbcron__sort(sorted, n, sizeof(*sorted), cmp_def_name);
	for (size_t i = 1; i < n; i++)
		if (strcmp(sorted[i]->job.name, sorted[i - 1]->job.name) == 0)
			entry_error(on_err, ctx, r, (size_t)(sorted[i] - b->defs),
				    sorted[i]->job.name, "duplicate name (first at job #%zu)",
				    (size_t)(sorted[i - 1] - b->defs) + 1);
	if (r->nerr) {
		refused(r, err);
		goto out_free;
	}
	rc = DBCRON_OK;
out_free:
	dbcron__free(sorted);
	return rc;
}

static const dbcron_job *find_prev(const job_vec *jv, const char *name)
{
	dbcron_job key = {.name = (char *)name};
	return jv->n ? bsearch(&key, jv->v, jv->n, sizeof(*jv->v), cmp_job_name) : NULL;
}

/*
 * The definition keys in which job differs from prev (both as
 * model_job_def_json, so an AT job compares instants, not texts) appended
 * to fields when it is not NULL; *n counts them.  False when out of
 * memory.
 */
static bool changed_keys(const dbcron_job *prev, const dbcron_job *job, json_t *fields,
			 size_t *n)
{
	json_t *a = model_job_def_json(prev), *b = model_job_def_json(job);
	bool ok = a && b;
	*n = 0;
	/* in the key table's order, so a diff reads the same every time;
	 * "paused" too: when a definition does not give it, job has prev's
	 * (model_jobdef_finish), so only a given, different state counts */
	for (const model_jobdef_key *k = model_jobdef_keys; ok && k->name; k++) {
		if (json_equal(json_object_get(a, k->name), json_object_get(b, k->name)) ||
		    (!json_object_get(a, k->name) && !json_object_get(b, k->name)))
			continue;
		(*n)++;
		if (fields && json_array_append_new(fields, json_string(k->name)))
			ok = false;
	}
	/* a set-aside job given again is planned afresh (store_job_put) */
	if (ok && prev->set_aside) {
		(*n)++;
		if (fields && json_array_append_new(fields, json_string("set_aside")))
			ok = false;
	}
	json_decref(a);
	json_decref(b);
	return ok;
}

/* How many entries of a resolved batch change nothing stored; false when
 * out of memory. */
static bool count_unchanged(const app_batch *b, const job_vec *jv, size_t *unchanged)
{
	*unchanged = 0;
	for (size_t i = 0; i < b->n; i++) {
		const dbcron_job *prev = find_prev(jv, b->defs[i].job.name);
		size_t n;
		if (prev && !changed_keys(prev, &b->defs[i].job, NULL, &n))
			return false;
		if (prev && n == 0)
			(*unchanged)++;
	}
	return true;
}

/* {"create": [names], "update": [names], "delete": [names], "unchanged":
 * [names], "fields": {name: [keys that change]}} of a checked and
 * resolved batch against the stored jobs jv (sorted). */
static int cmp_name_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *apply_diff(const app_batch *b, const job_vec *jv, bool prune)
{
	const char **given = NULL;
	json_t *d = json_pack("{s:[],s:[],s:[],s:[],s:{}}", "create", "update", "delete",
			      "unchanged", "fields");
	if (!d)
		return NULL;
	json_t *cr = json_object_get(d, "create"), *up = json_object_get(d, "update");
	json_t *del = json_object_get(d, "delete"), *same = json_object_get(d, "unchanged");
	json_t *fields = json_object_get(d, "fields");
	for (size_t i = 0; i < b->n; i++) {
		const char *name = b->defs[i].job.name;
		const dbcron_job *prev = find_prev(jv, name);
		json_t *keys = NULL;
		size_t n = 0;
		if (!prev) {
			if (json_array_append_new(cr, json_string(name)))
				goto out_oom;
			continue;
		}
		if (!(keys = json_array()) || !changed_keys(prev, &b->defs[i].job, keys, &n)) {
			json_decref(keys);
			goto out_oom;
		}
		if (n == 0) {
			json_decref(keys);
			if (json_array_append_new(same, json_string(name)))
				goto out_oom;
		} else if (json_object_set_new(fields, name, keys) ||
			   json_array_append_new(up, json_string(name))) {
			goto out_oom;
		}
	}
	/* the given names sorted once, each stored name looked up: n log n
	 * (issue 23 item 16: every stored name against every given one was
	 * quadratic) */
	if (prune && b->n) {
		if (!(given = dbcron__calloc(b->n, sizeof(*given))))
			goto out_oom;
		for (size_t k = 0; k < b->n; k++)
			given[k] = b->defs[k].job.name;
		dbcron__sort(given, b->n, sizeof(*given), cmp_name_ptr);
	}
	for (size_t i = 0; prune && i < jv->n; i++) {
		const char *key = jv->v[i].name;
		bool kept = given && bsearch(&key, given, b->n, sizeof(*given), cmp_name_ptr);
		if (!kept && json_array_append_new(del, json_string(jv->v[i].name)))
			goto out_oom;
	}
	dbcron__free(given);
	return d;
out_oom:
	dbcron__free(given);
	json_decref(d);
	return NULL;
}

typedef struct place_ctx {
	const app_batch *b;
	const app_apply_opts *o;
} place_ctx;

/*
 * store_put_place_fn: the apply rule once more, inside the put's
 * transaction against the row as it is now (read locked), so that a pause,
 * resume, rename or run end that committed after the checks above is not
 * undone (issue 23 item 2).  The one rule for "paused" (apply, PUT, job
 * set alike, model_jobdef_finish): given, it is applied (a resume places
 * the job from now, model_job_first_fire); not given, the stored state is
 * kept.  A job that is gone when UPDATE mode writes is not recreated.
 */
static int place_entry(void *ctx, size_t i, dbcron_job *job, const dbcron_job *prev,
		       int64_t now_ms, dbcron_err *err)
{
	const place_ctx *pc = ctx;
	if (!prev)
		return pc->o->mode == APP_APPLY_UPDATE ? no_such_job(err, job->name) : DBCRON_OK;
	if (!pc->b->defs[i].seen[MODEL_JK_PAUSED])
		job->paused = prev->paused;
	/* a set-aside job starts afresh, as resolved */
	return prev->set_aside ? DBCRON_OK : model_job_first_fire(job, now_ms, prev, err);
}

int app_apply_write(store *s, app_batch *b, const app_apply_opts *o,
		    app_entry_err_fn on_err, void *ctx, app_apply_result *r,
		    char *warning, size_t wlen, dbcron_err *err)
{
	job_vec jv = {0};
	dbcron_job *jobs = NULL;
	int64_t now;
	int rc;

	if (warning && wlen)
		warning[0] = '\0';
	/* 3: resolve against the database's clock and what is stored: every
	 * job only for a pruning dry run (its diff lists what would go) */
	if ((rc = store_now_ms(s, &now, err)) ||
	    (rc = o->prune && o->dry_run ? app_jobs_sorted(s, &jv, err)
					 : batch_prev_sorted(s, b, &jv, err)))
		goto out_free;
	for (size_t i = 0; o->mode == APP_APPLY_UPDATE && i < b->n; i++)
		if (!find_prev(&jv, b->defs[i].job.name)) {
			rc = no_such_job(err, b->defs[i].job.name);
			goto out_free;
		}
	for (size_t i = 0; i < b->n; i++) {
		dbcron_err e = {0};
		if (model_jobdef_finish(&b->defs[i], now, find_prev(&jv, b->defs[i].job.name), &e))
			entry_error(on_err, ctx, r, i, b->defs[i].job.name, "%s", e.msg);
	}
	if (r->nerr) {
		rc = refused(r, err);
		goto out_free;
	}
	if (o->dry_run) {
		if (!(r->diff = apply_diff(b, &jv, o->prune)))
			rc = oom(err);
		goto out_free;
	}
	size_t unchanged;
	bool pauses = false;
	if (!count_unchanged(b, &jv, &unchanged)) {
		rc = oom(err);
		goto out_free;
	}
	for (size_t i = 0; i < b->n && !pauses; i++) {
		const dbcron_job *prev = find_prev(&jv, b->defs[i].job.name);
		pauses = prev && !prev->paused && b->defs[i].job.paused;
	}
	/* 4: one transaction */
	if (!(jobs = dbcron__calloc(b->n ? b->n : 1, sizeof(*jobs)))) {
		rc = oom(err);
		goto out_free;
	}
	for (size_t i = 0; i < b->n; i++) {
		jobs[i] = b->defs[i].job;
		dbcron_job_init(&b->defs[i].job);
	}
	place_ctx pc = {b, o};
	rc = store_job_put_placed(s, jobs, b->n,
				  o->mode == APP_APPLY_CREATE ? STORE_PUT_CREATE : STORE_PUT_UPSERT,
				  o->prune, place_entry, &pc, &r->created, &r->updated, &r->deleted,
				  err);
	for (size_t i = 0; i < b->n; i++)
		dbcron_job_clear(&jobs[i]);
	/* an unchanged job is written again (prune needs every name) but
	 * counted as what it is */
	r->unchanged = rc ? 0 : unchanged < r->updated ? unchanged : r->updated;
	r->updated -= r->unchanged;
	if (!rc && (r->deleted || pauses) && warning)
		wait_nodes(s, warning, wlen);
out_free:
	dbcron__free(jobs);
	app_job_vec_free(&jv);
	return rc;
}

/* ---------------------------------------------------- export and edit */

int app_jobs_export(store *s, json_t **out, dbcron_err *err)
{
	job_vec jv = {0};
	json_t *arr = NULL;
	int rc;

	*out = NULL;
	/* sorted by strcmp here, not by the database's collation, so every
	 * backend exports the same bytes */
	if ((rc = app_jobs_sorted(s, &jv, err)))
		goto out_free;
	rc = DBCRON_ENOMEM;
	if (!(arr = json_array()))
		goto out_oom;
	for (size_t i = 0; i < jv.n; i++)
		if (json_array_append_new(arr, model_job_def_json(&jv.v[i])))
			goto out_oom;
	*out = arr;
	arr = NULL;
	rc = DBCRON_OK;
	goto out_free;
out_oom:
	oom(err);
out_free:
	json_decref(arr);
	app_job_vec_free(&jv);
	return rc;
}

/* The keys that stand for one thing: giving one of a group replaces the
 * stored job's whole group (a new schedule drops the old one; a handler
 * drops the command and what it runs as, a command drops the handler). */
static bool same_group(model_jobdef_id given, model_jobdef_id stored)
{
	bool sched_g = given >= MODEL_JK_CRON && given <= MODEL_JK_AT;
	bool sched_s = stored >= MODEL_JK_CRON && stored <= MODEL_JK_AT;
	if (sched_g || sched_s)
		return sched_g && sched_s;
	if (given == MODEL_JK_HANDLER)
		return stored == MODEL_JK_ARG || stored == MODEL_JK_COMMAND ||
		       (stored >= MODEL_JK_USER && stored <= MODEL_JK_INHERIT_ENV);
	if (given == MODEL_JK_COMMAND)
		return stored == MODEL_JK_HANDLER || stored == MODEL_JK_ARG;
	return false;
}

/* app_entry_err_fn: the one entry's message into ctx (a dbcron_err). */
static void entry_to_err(void *ctx, size_t idx, const char *name, const char *msg)
{
	(void)idx;
	(void)name;
	dbcron_err_set(ctx, DBCRON_EINVAL, "%s", msg);
}

int app_job_set(store *s, const char *name, model_jobdef *over, const app_job_set_opts *o,
		app_job_set_result *r, dbcron_err *err)
{
	dbcron_job prev;
	json_t *base = NULL;
	app_batch b = {0};
	app_apply_opts ao = {.mode = APP_APPLY_UPDATE};
	app_apply_result ar;
	int rc;

	memset(r, 0, sizeof(*r));
	r->next_fire = -1;
	dbcron_job_init(&prev);
	if (over->seen[MODEL_JK_NAME]) {
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "the name is not a field to set: use job rename");
		goto out_clear;
	}
	if ((rc = app_job_find(s, name, &prev, err)))
		goto out_clear;
	/* the stored definition, less every key the caller gives (and the
	 * rest of its group), read into over: what was not given stays */
	if (!(base = model_job_def_json(&prev))) {
		rc = oom(err);
		goto out_clear;
	}
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++)
		for (int g = 0; g < MODEL_JK__COUNT; g++)
			if (over->seen[g] && (g == (int)k->id || same_group((model_jobdef_id)g, k->id)))
				json_object_del(base, k->name);
	const char *jname;
	if ((rc = model_jobdef_from_json(over, base, &jname, err)) ||
	    (o->user_check && (rc = model_jobdef_check_host(over, err))) ||
	    (rc = model_jobdef_check_handler(&over->job, o->strict, r->warning,
					     sizeof(r->warning), err)))
		goto out_clear;
	/* the stored job is the one apply resolves against: an unchanged
	 * schedule keeps its next fire (model_job_first_fire) */
	if (!(b.defs = dbcron__calloc(1, sizeof(*b.defs)))) {
		rc = oom(err);
		goto out_clear;
	}
	b.defs[0] = *over;
	b.n = 1;
	model_jobdef_init(over, over->cli);
	memset(&ar, 0, sizeof(ar));
	dbcron_err why = {0};
	/* a pause waits for the nodes, as job pause does */
	char waited[256];
	rc = app_apply_write(s, &b, &ao, entry_to_err, &why, &ar, waited, sizeof(waited), err);
	if (!rc && waited[0] && !r->warning[0])
		dbcron__textf(r->warning, sizeof(r->warning), "%s", waited);
	if (rc == DBCRON_EINVAL && ar.nerr)
		dbcron_err_set(err, rc, "job '%s': %s; nothing changed", name, why.msg);
	if (rc)
		goto out_clear;
	r->changed = ar.updated > 0;
	dbcron_job_clear(&prev);
	dbcron_job_init(&prev);
	if (!(rc = app_job_find(s, name, &prev, err)))
		r->next_fire = prev.next_fire_at;
out_clear:
	app_batch_clear(&b);
	json_decref(base);
	dbcron_job_clear(&prev);
	return rc;
}

int app_job_rename(store *s, const char *from, const char *to, dbcron_err *err)
{
	dbcron_job j;
	int rc;

	dbcron_job_init(&j);
	/* the new name by the rule every job name meets */
	if ((rc = app_job_find(s, from, &j, err)))
		goto out_clear;
	dbcron__free(j.name);
	if (!(j.name = dbcron__strdup(to))) {
		rc = oom(err);
		goto out_clear;
	}
	dbcron_err e = {0};
	if ((rc = dbcron_job_validate(&j, &e))) {
		dbcron_err_set(err, DBCRON_EINVAL, "new name '%s': %s", to, e.msg);
		goto out_clear;
	}
	rc = store_job_rename(s, from, to, err);
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, from);
out_clear:
	dbcron_job_clear(&j);
	return rc;
}
