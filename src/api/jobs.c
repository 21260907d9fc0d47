/*
 * The job verbs of the library (dbcron/db.h) as thin wrappers over
 * src/app/: a JSON text goes to app_apply, a struct to app_apply_jobs,
 * which reads it through the same per-key rules (model_jobdef_from_job)
 * with no JSON on the way: so a struct, a JSON file and a `job add`
 * command line are held to one set of rules, kept in src/model/.
 * Owns nothing beyond a call: every result handed out is the caller's.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "api/api.h"
#include "app/app.h"
#include "core/alloc.h"

void dbcron_apply_opts_init(dbcron_apply_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->user_check = true;
}

void dbcron_apply_result_clear(dbcron_apply_result *r)
{
	if (!r)
		return;
	dbcron__free(r->diff_json);
	memset(r, 0, sizeof(*r));
}

/* The caller's on_error, and for one-job verbs the first message, so that
 * err says what was wrong with the job rather than "1 error". */
typedef struct entry_ctx {
	const dbcron_apply_opts *o;
	char first[sizeof(((dbcron_err *)0)->msg)];
} entry_ctx;

static void on_entry(void *ctx, size_t idx, const char *name, const char *msg)
{
	entry_ctx *ec = ctx;
	if (!ec->first[0])
		dbcron__textf(ec->first, sizeof(ec->first), "%s", msg);
	if (ec->o->on_error)
		ec->o->on_error(ec->o->ctx, idx, name, msg);
}

static void on_warning(void *ctx, size_t idx, const char *name, const char *msg)
{
	entry_ctx *ec = ctx;
	ec->o->on_warning(ec->o->ctx, idx, name, msg);
}

/* A copy of the diff as a string the result owns. */
static int diff_text(json_t *diff, dbcron_apply_result *r, dbcron_err *err)
{
	char *t = json_dumps(diff, JSON_COMPACT);
	if (t)
		r->diff_json = dbcron__strdup(t);
	free(t); /* jansson's allocation */
	if (!r->diff_json)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	return DBCRON_OK;
}

/* A batch for app/: a JSON array (borrowed) and a document's "tags"
 * (borrowed, NULL: none), or job structs. */
typedef struct batch {
	json_t *entries, *tags;
	const dbcron_job *jobs;
	size_t n;
} batch;

/* app_apply on b; the one-job verbs pass single, which puts the entry's
 * own message in err. */
static int apply_entries(dbcron_db *db, const batch *b, const dbcron_apply_opts *o,
			 app_apply_mode mode, bool single, dbcron_apply_result *r,
			 dbcron_err *err)
{
	dbcron_apply_opts defaults;
	app_apply_result ar = {0};
	entry_ctx ec = {0};
	int rc;

	if (!o) {
		dbcron_apply_opts_init(&defaults);
		o = &defaults;
	}
	ec.o = o;
	app_apply_opts ao = {.mode = mode, .prune = o->prune, .dry_run = o->dry_run,
			     .user_check = o->user_check, .strict = o->strict,
			     .on_warn = o->on_warning ? on_warning : NULL, .tags = b->tags};
	rc = b->entries ? app_apply(api__store(db), b->entries, &ao, on_entry, &ec, &ar,
				    r->warning, sizeof(r->warning), err)
			: app_apply_jobs(api__store(db), b->jobs, b->n, &ao, on_entry, &ec, &ar,
					 r->warning, sizeof(r->warning), err);
	r->created = ar.created;
	/* the library's "updated" counts every stored name given, changed or
	 * not (dbcron/db.h), which programs already rely on */
	r->updated = ar.updated + ar.unchanged;
	r->deleted = ar.deleted;
	r->errors = ar.nerr;
	if (!rc && ar.diff)
		rc = diff_text(ar.diff, r, err);
	if (rc == DBCRON_EINVAL && single && ec.first[0])
		dbcron_err_set(err, rc, "%s", ec.first);
	json_decref(ar.diff);
	return rc;
}

int dbcron_apply_json(dbcron_db *db, const char *json, size_t len,
		      const dbcron_apply_opts *o, dbcron_apply_result *r, dbcron_err *err)
{
	json_error_t jerr;
	memset(r, 0, sizeof(*r));
	if (!json)
		return dbcron_err_set(err, DBCRON_EINVAL, "no JSON given");
	json_t *root = json_loadb(json, len ? len : strlen(json), JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return dbcron_err_set(err, DBCRON_EPARSE, "line %d, column %d: %s", jerr.line,
				      jerr.column, jerr.text);
	batch b = {0};
	int rc = app_apply_doc(root, &b.entries, &b.tags, err);
	if (!rc)
		rc = apply_entries(db, &b, o, APP_APPLY_UPSERT, false, r, err);
	json_decref(root);
	return rc;
}

static int apply_structs(dbcron_db *db, const dbcron_job *jobs, size_t n,
			 const dbcron_apply_opts *o, app_apply_mode mode, bool single,
			 dbcron_apply_result *r, dbcron_err *err)
{
	memset(r, 0, sizeof(*r));
	if (n && !jobs)
		return dbcron_err_set(err, DBCRON_EINVAL, "no jobs given");
	batch b = {.jobs = jobs, .n = n};
	return apply_entries(db, &b, o, mode, single, r, err);
}

int dbcron_apply(dbcron_db *db, const dbcron_job *jobs, size_t n, const dbcron_apply_opts *o,
		 dbcron_apply_result *r, dbcron_err *err)
{
	return apply_structs(db, jobs, n, o, APP_APPLY_UPSERT, false, r, err);
}

static int put_one(dbcron_db *db, const dbcron_job *job, app_apply_mode mode,
		   dbcron_job *stored, dbcron_err *err)
{
	dbcron_apply_result r;
	if (!job || !job->name)
		return dbcron_err_set(err, DBCRON_EINVAL, "a job needs a name");
	int rc = apply_structs(db, job, 1, NULL, mode, true, &r, err);
	if (rc == DBCRON_EEXISTS)
		dbcron_err_set(err, rc, "job '%s' already exists", job->name);
	if (!rc && stored) {
		dbcron_job_clear(stored);
		rc = app_job_find(api__store(db), job->name, stored, err);
	}
	dbcron_apply_result_clear(&r);
	return rc;
}

int dbcron_job_add(dbcron_db *db, const dbcron_job *job, dbcron_job *stored, dbcron_err *err)
{
	return put_one(db, job, APP_APPLY_CREATE, stored, err);
}

int dbcron_job_update(dbcron_db *db, const dbcron_job *job, dbcron_job *stored,
		      dbcron_err *err)
{
	return put_one(db, job, APP_APPLY_UPDATE, stored, err);
}

int dbcron_job_get(dbcron_db *db, const char *name, dbcron_job *out, dbcron_err *err)
{
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "no job name given");
	return app_job_find(api__store(db), name, out, err);
}

int dbcron_job_list(dbcron_db *db, dbcron_job **jobs, size_t *n, dbcron_err *err)
{
	app_job_vec jv = {0};
	*jobs = NULL;
	*n = 0;
	int rc = app_jobs_sorted(api__store(db), &jv, err);
	if (rc) {
		app_job_vec_free(&jv);
		return rc;
	}
	/* the vector's array is the caller's now */
	*jobs = jv.v;
	*n = jv.n;
	return DBCRON_OK;
}

void dbcron_job_list_free(dbcron_job *jobs, size_t n)
{
	app_job_vec jv = {.v = jobs, .n = n, .cap = n};
	app_job_vec_free(&jv);
}

typedef int (*job_verb)(store *, const char *, app_job_result *, dbcron_err *);

static int by_name(dbcron_db *db, const char *name, job_verb verb, dbcron_job_result *r,
		   dbcron_err *err)
{
	app_job_result ar;
	_Static_assert(sizeof(ar.warning) == sizeof(r->warning), "one warning size");
	if (!name)
		return dbcron_err_set(err, DBCRON_EINVAL, "no job name given");
	int rc = verb(api__store(db), name, &ar, err);
	if (r) {
		r->changed = ar.changed;
		r->next_fire = ar.next_fire;
		r->run_id = ar.run_id;
		r->fire_at = ar.fire_at;
		memcpy(r->warning, ar.warning, sizeof(r->warning));
	}
	return rc;
}

int dbcron_job_pause(dbcron_db *db, const char *name, dbcron_job_result *r, dbcron_err *err)
{
	return by_name(db, name, app_job_pause, r, err);
}

int dbcron_job_resume(dbcron_db *db, const char *name, dbcron_job_result *r, dbcron_err *err)
{
	return by_name(db, name, app_job_resume, r, err);
}

int dbcron_job_delete(dbcron_db *db, const char *name, dbcron_job_result *r, dbcron_err *err)
{
	return by_name(db, name, app_job_delete, r, err);
}

int dbcron_job_trigger(dbcron_db *db, const char *name, dbcron_job_result *r, dbcron_err *err)
{
	return by_name(db, name, app_job_trigger, r, err);
}
