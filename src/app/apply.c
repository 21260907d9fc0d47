/*
 * Apply: a batch of job definitions checked and written as one, for every
 * front end (`job apply`, POST /api/v1/apply, PUT of one job, the
 * library's dbcron_apply and dbcron_job_add, whose structs are read as
 * structs) and for `job set`.  Keeps the all-or-nothing promise: every
 * entry is checked alone, then names unique, then resolved against the
 * database's clock and the stored jobs, before the store is written; the
 * write is one store call (one transaction), so a refused batch leaves
 * the database as it was.  Times relative to "now" are the database's
 * now.  A pruning apply that deleted jobs, or one that pauses a job,
 * returns once every live node has seen it (or says which did not).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "app/app.h"
#include "app/app_int.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "model/rules.h"

static int oom(dbcron_err *err)
{
	return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
}

static int no_such_job(dbcron_err *err, const char *name)
{
	return dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", name);
}

/* The stored jobs a batch names, sorted: a write of one job reads one
 * job, not every job. */
static int batch_prev_sorted(store *s, const app_batch *b, job_vec *jv, dbcron_err *err)
{
	const char **names = dbcron__calloc(b->n ? b->n : 1, sizeof(*names));
	if (!names)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->n; i++)
		names[i] = b->defs[i].job.name;
	int rc = store_jobs_named(s, names, b->n, app__collect_job, jv, err);
	dbcron__free(names);
	if (!rc && jv->rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing jobs");
	if (!rc)
		dbcron__sort(jv->v, jv->n, sizeof(*jv->v), app__cmp_job_name);
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
	dbcron__free(b->caps);
	memset(b, 0, sizeof(*b));
}

int app_apply_doc(json_t *root, json_t **jobs, json_t **tags, dbcron_err *err)
{
	const char *k;
	json_t *v;
	*jobs = *tags = NULL;
	if (json_is_array(root)) {
		*jobs = root;
		return DBCRON_OK;
	}
#define DOC_WANTED "expected a JSON array of job objects, or an object with \"jobs\" and \"tags\""
	if (!json_is_object(root))
		return dbcron_err_set(err, DBCRON_EINVAL, DOC_WANTED);
	json_object_foreach(root, k, v) {
		if (strcmp(k, "jobs") && strcmp(k, "tags"))
			return dbcron_err_set(err, DBCRON_EINVAL, DOC_WANTED " (not '%s')", k);
	}
	if (!json_is_array(*jobs = json_object_get(root, "jobs")))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "key 'jobs': expected an array of job objects");
	*tags = json_object_get(root, "tags");
	return DBCRON_OK;
}

int app_apply_check(app_entry_read_fn read, const void *src, size_t n,
		    const app_apply_opts *o, app_entry_err_fn on_err, void *ctx,
		    app_batch *b, app_apply_result *r, dbcron_err *err)
{
	model_jobdef **sorted = NULL;
	int rc = DBCRON_ENOMEM;

	memset(b, 0, sizeof(*b));
	memset(r, 0, sizeof(*r));
	/* the caps first: a bad one is the document's error, not an entry's */
	if ((rc = app__caps_read(o->tags, &b->caps, &b->ncaps, err)))
		return rc;
	b->has_caps = o->tags != NULL;
	rc = DBCRON_ENOMEM;
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
		if (read(src, i, &b->defs[i], &name, &e) ||
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
	return jv->n ? bsearch(&key, jv->v, jv->n, sizeof(*jv->v), app__cmp_job_name) : NULL;
}

/* model_diff_fn: the key of a changed field, once, into a changed_ctx. */
typedef struct changed_ctx {
	json_t *fields;
	size_t n;
	bool ok;
} changed_ctx;

static void changed_key(void *ctx, const model_field *f, model_jobdef_id key)
{
	changed_ctx *c = ctx;
	(void)f;
	/* a field without a key (the executor) changes with one that has */
	if (key == MODEL_JK__NONE)
		return;
	c->n++;
	const char *name = model_jobdef_key_of(key)->name;
	if (c->fields && json_array_append_new(c->fields, json_string(name)))
		c->ok = false;
}

/*
 * The definition keys in which job differs from prev, by the one rule
 * (model_job_diff, in the key table's order, so a diff reads the same
 * every time), appended to fields when it is not NULL; *n counts them.
 * "paused" too: when a definition does not give it, job has prev's
 * (model_jobdef_finish), so only a given, different state counts.  False
 * when out of memory.
 */
static bool changed_keys(const dbcron_job *prev, const dbcron_job *job, json_t *fields,
			 size_t *n)
{
	changed_ctx c = {.fields = fields, .ok = true};
	model_job_diff(prev, job, MODEL_ROLE_DEF | MODEL_ROLE_STATE, changed_key, &c);
	/* a set-aside job given again is planned afresh (store_job_put) */
	if (c.ok && prev->set_aside) {
		c.n++;
		if (fields && json_array_append_new(fields, json_string("set_aside")))
			c.ok = false;
	}
	*n = c.n;
	return c.ok;
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
	/* the given names sorted once, each stored name looked up: n log n,
	 * where every stored name against every given one would be
	 * quadratic */
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
 * undone.  The one rule for "paused" (apply, PUT, job
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

/* Whether the batch pauses a stored job that runs (the write then waits
 * for the nodes). */
static bool pauses_any(const app_batch *b, const job_vec *jv)
{
	for (size_t i = 0; i < b->n; i++) {
		const dbcron_job *prev = find_prev(jv, b->defs[i].job.name);
		if (prev && !prev->paused && b->defs[i].job.paused)
			return true;
	}
	return false;
}

/* A dry run's r->diff: the jobs', and the caps' when b has them. */
static int dry_run_diff(store *s, const app_batch *b, const job_vec *jv, bool prune,
			app_apply_result *r, dbcron_err *err)
{
	json_t *caps = NULL;
	if (b->has_caps && !(caps = app__caps_diff(s, b->caps, b->ncaps, prune, err)))
		return err->code ? err->code : oom(err);
	if (!(r->diff = apply_diff(b, jv, prune))) {
		json_decref(caps);
		return oom(err);
	}
	return caps && json_object_set_new(r->diff, "caps", caps) ? oom(err) : DBCRON_OK;
}

/* Each entry resolved against the stored jobs (jv) and checked: its
 * calendar, its plan from now, the jobs it names.  An entry's fault goes to
 * on_err (r->nerr counts them); only a failure to look is returned. */
static int finish_entries(store *s, app_batch *b, const job_vec *jv, int64_t now,
			  app_entry_err_fn on_err, void *ctx, app_apply_result *r,
			  dbcron_err *err)
{
	size_t bad_cal, bad;
	dbcron_err ce = {0}, te = {0};
	int rc = app__resolve_calendars(s, b->defs, b->n, &bad_cal, &ce);
	if (rc && rc != DBCRON_EINVAL) {
		*err = ce;
		return rc;
	}
	if (rc)
		entry_error(on_err, ctx, r, bad_cal, b->defs[bad_cal].job.name, "%s", ce.msg);
	for (size_t i = 0; i < b->n; i++) {
		dbcron_err e = {0};
		if (model_jobdef_finish(&b->defs[i], now, find_prev(jv, b->defs[i].job.name), &e))
			entry_error(on_err, ctx, r, i, b->defs[i].job.name, "%s", e.msg);
	}
	if (r->nerr || !(rc = app__check_job_targets(s, b->defs, b->n, &bad, &te)))
		return DBCRON_OK;
	if (rc != DBCRON_EINVAL) {
		*err = te;
		return rc;
	}
	entry_error(on_err, ctx, r, bad, b->defs[bad].job.name, "%s", te.msg);
	return DBCRON_OK;
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
	if ((rc = app__spread_seeds(s, b->defs, b->n, &jv, err)) ||
	    (rc = finish_entries(s, b, &jv, now, on_err, ctx, r, err)))
		goto out_free;
	if (r->nerr) {
		rc = refused(r, err);
		goto out_free;
	}
	if (o->dry_run) {
		/* a write finds an unknown tag in its own transaction (the
		 * store's cap write); a dry run writes nothing, so it looks */
		if (!(rc = app__caps_known(s, b, o->prune, err)))
			rc = dry_run_diff(s, b, &jv, o->prune, r, err);
		goto out_free;
	}
	size_t unchanged;
	bool pauses = pauses_any(b, &jv);
	if (!count_unchanged(b, &jv, &unchanged)) {
		rc = oom(err);
		goto out_free;
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
	/* the audit trail's action: what the caller asked for */
	store_audit_verb(s, o->mode == APP_APPLY_CREATE	  ? "add"
			    : o->mode == APP_APPLY_UPDATE ? "set"
							  : "apply");
	store_put_caps caps = {.v = b->caps, .n = b->ncaps, .prune = o->prune};
	if (b->has_caps)
		store_put_tags(s, &caps);
	rc = store_job_put_placed(s, jobs, b->n,
				  o->mode == APP_APPLY_CREATE ? STORE_PUT_CREATE : STORE_PUT_UPSERT,
				  o->prune, place_entry, &pc, &r->created, &r->updated, &r->deleted,
				  err);
	for (size_t i = 0; i < b->n; i++)
		dbcron_job_clear(&jobs[i]);
	/* an unchanged job is written again (prune needs every name) but
	 * counted as what it is */
	r->unchanged = rc ? 0 : unchanged < r->updated ? unchanged : r->updated;
	r->caps_set = caps.set;
	r->caps_deleted = caps.deleted;
	r->updated -= r->unchanged;
	if (!rc && (r->deleted || pauses) && warning)
		app__wait_nodes(s, warning, wlen);
out_free:
	dbcron__free(jobs);
	app_job_vec_free(&jv);
	return rc;
}

/* app_entry_read_fn of a `job apply` array. */
static int read_json(const void *src, size_t i, model_jobdef *d, const char **name,
		     dbcron_err *err)
{
	return model_jobdef_from_json(d, json_array_get((const json_t *)src, i), name, err);
}

/* app_entry_read_fn of an array of job structs: no JSON on the way. */
static int read_struct(const void *src, size_t i, model_jobdef *d, const char **name,
		       dbcron_err *err)
{
	const dbcron_job *j = (const dbcron_job *)src + i;
	*name = j->name;
	return model_jobdef_from_job(d, j, err);
}

/* app_apply and app_apply_jobs: the batch read by read, then written. */
static int apply_read(store *s, app_entry_read_fn read, const void *src, size_t n,
		      const app_apply_opts *o, app_entry_err_fn on_err, void *ctx,
		      app_apply_result *r, char *warning, size_t wlen, dbcron_err *err)
{
	app_batch b = {0};
	int rc;

	if (warning && wlen)
		warning[0] = '\0';
	if ((rc = app_apply_check(read, src, n, o, on_err, ctx, &b, r, err)))
		goto out_clear;
	if (!s && (rc = o->open(ctx, &s)))
		goto out_clear;
	rc = app_apply_write(s, &b, o, on_err, ctx, r, warning, wlen, err);
out_clear:
	app_batch_clear(&b);
	return rc;
}

int app_apply(store *s, json_t *entries, const app_apply_opts *o, app_entry_err_fn on_err,
	      void *ctx, app_apply_result *r, char *warning, size_t wlen, dbcron_err *err)
{
	return apply_read(s, read_json, entries, json_array_size(entries), o, on_err, ctx, r,
			  warning, wlen, err);
}

int app_apply_jobs(store *s, const dbcron_job *jobs, size_t n, const app_apply_opts *o,
		   app_entry_err_fn on_err, void *ctx, app_apply_result *r, char *warning,
		   size_t wlen, dbcron_err *err)
{
	return apply_read(s, read_struct, jobs, n, o, on_err, ctx, r, warning, wlen, err);
}

int app_job_add(store *s, model_jobdef *d, dbcron_err *err)
{
	size_t created = 0, updated = 0, deleted = 0;
	int64_t now;
	int rc;

	/* no stored job to resolve against: a name that is taken is the
	 * put's refusal (DBCRON_EEXISTS), inside its transaction */
	size_t bad;
	if ((rc = store_now_ms(s, &now, err)) || (rc = app__spread_seeds(s, d, 1, NULL, err)) ||
	    (rc = app__resolve_calendars(s, d, 1, &bad, err)) ||
	    (rc = model_jobdef_finish(d, now, NULL, err)) ||
	    (rc = app__check_job_targets(s, d, 1, &bad, err)))
		return rc;
	store_audit_verb(s, "add");
	return store_job_put(s, &d->job, 1, STORE_PUT_CREATE, false, &created, &updated,
			     &deleted, err);
}
