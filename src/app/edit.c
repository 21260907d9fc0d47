/*
 * Export and edit: every job as the definitions `job apply` reads back to
 * the same jobs, and the verbs that change one stored job in place (`job
 * set`, `job rename`).  job set keeps what was not given by reading the
 * stored definition back through the same key table and writing it
 * through apply (app_apply_write), so a set and an apply of the same
 * definition store the same row.
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
#include "core/timeutil.h"
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
 * drops the command and what it runs as, a command drops the handler,
 * either drops an HTTP call and its keys, --http drops the other two;
 * a statement drops the command and what it runs as, a command drops the
 * statement). */
static bool same_group(model_jobdef_id given, model_jobdef_id stored)
{
	model_field_scope sg = model_jobdef_field(model_jobdef_key_of(given))->scope;
	model_field_scope ss = model_jobdef_field(model_jobdef_key_of(stored))->scope;
	bool sched_g = given >= MODEL_JK_CRON && given <= MODEL_JK_NEEDS;
	bool sched_s = stored >= MODEL_JK_CRON && stored <= MODEL_JK_NEEDS;
	/* a new schedule or spread gets a new seed, unless one is given */
	if (stored == MODEL_JK_SPREAD_SEED)
		return sched_g || given == MODEL_JK_SPREAD;
	if (sched_g || sched_s)
		return sched_g && sched_s;
	if (given == MODEL_JK_HANDLER)
		return stored == MODEL_JK_ARG || ss == MODEL_SCOPE_COMMAND ||
		       ss == MODEL_SCOPE_RUNAS || ss == MODEL_SCOPE_HTTP || ss == MODEL_SCOPE_SQL;
	/* an HTTP call replaces a command, a handler or a statement; its
	 * secrets may stay in the env-file they were in */
	if (given == MODEL_JK_HTTP)
		return ss == MODEL_SCOPE_HANDLER || ss == MODEL_SCOPE_COMMAND || ss == MODEL_SCOPE_SQL ||
		       (ss == MODEL_SCOPE_RUNAS && stored != MODEL_JK_ENV_FILE);
	if (given == MODEL_JK_SQL)
		return ss == MODEL_SCOPE_HANDLER || ss == MODEL_SCOPE_COMMAND ||
		       ss == MODEL_SCOPE_RUNAS || ss == MODEL_SCOPE_HTTP;
	if (sg == MODEL_SCOPE_COMMAND)
		return ss == MODEL_SCOPE_HANDLER || ss == MODEL_SCOPE_HTTP || ss == MODEL_SCOPE_SQL;
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
	int tries = 0;
	do
		rc = store_job_rename(s, from, to, err);
	while (dbcron__busy_again(rc, &tries));
	if (rc == DBCRON_ENOTFOUND)
		no_such_job(err, from);
out_clear:
	dbcron_job_clear(&j);
	return rc;
}
