/*
 * Jobs and runs <-> JSON (json.h): the job and run objects every front end
 * prints, and the job reader of `job apply` and HTTP.  Invariants kept: a
 * job object's definition keys are spelled by the key table, so
 * model_jobdef_from_json reads back what model_job_json wrote; every
 * object is built whole or not at all (a failed insert is out of memory,
 * and the caller gets NULL rather than an object with keys missing).
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "model/json.h"
#include "model/rules.h"
#include "model/target.h"

/* Adds v (stolen, may be NULL) to o; *bad stays set after any failure. */
static void put(json_t *o, const char *key, json_t *v, bool *bad)
{
	/* json_object_set_new releases v on failure and refuses NULL */
	if (json_object_set_new(o, key, v))
		*bad = true;
}

static void put_key(json_t *o, model_jobdef_id id, json_t *v, bool *bad)
{
	put(o, model_jobdef_key_of(id)->name, v, bad);
}

static json_t *finished(json_t *o, bool bad)
{
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *duration_json(int64_t ms)
{
	char b[64];
	dbcron__format_duration(ms, b, sizeof(b));
	return json_string(b);
}

static json_t *ms_json(int64_t ms)
{
	return ms >= 0 ? json_integer(ms) : json_null();
}

static json_t *str_json(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *time_json(int64_t ms)
{
	char t[64];
	return ms >= 0 ? json_string(model_time_text(ms, t, sizeof(t))) : json_null();
}

static json_t *strv_json(char *const *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++) {
		if (json_array_append_new(a, json_string(v[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* A NEEDS job's names as an array. */
static json_t *needs_json(const char *spec)
{
	json_t *a = json_array();
	char name[256];
	for (const char *p = spec; a && model_needs_next(&p, name, sizeof(name));) {
		if (json_array_append_new(a, json_string(name))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* A reaction list (one target a line) as an array of strings. */
static json_t *targets_json(const char *list)
{
	json_t *a = json_array();
	const char *t;
	size_t n;
	while (a && (t = model_targets_next(&list, &n)))
		if (json_array_append_new(a, json_stringn(t, n))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* One keyed row's value by its codec into *v (NULL when out of memory);
 * false when the row is not written (an optional value that is unset). */
static bool field_json(const dbcron_job *j, const model_field *f, json_t **v)
{
	const void *p = model_field_cptr(j, f);
	const char *text = f->store == MODEL_FS_TEXT || f->store == MODEL_FS_HANDLER
				   ? *(char *const *)p : NULL;
	char m[16];
	switch (f->codec) {
	case MODEL_FC_NAME:
		*v = json_string(text);
		break;
	case MODEL_FC_SCHED:
		*v = j->kind == DBCRON_SCHED_NEEDS ? needs_json(j->spec)
						   : json_string(j->spec ? j->spec : "");
		break;
	case MODEL_FC_TZ:
		*v = json_string(text ? text : "UTC");
		break;
	case MODEL_FC_ENUM:
		*v = json_string(f->args.name(*(const int *)p));
		break;
	case MODEL_FC_INT:
		if (f->args.omit && *(const int *)p == 0)
			return false;
		*v = json_integer(*(const int *)p);
		break;
	case MODEL_FC_DUR:
		if (f->args.omit && *(const int64_t *)p == 0)
			return false;
		*v = duration_json(*(const int64_t *)p);
		break;
	case MODEL_FC_SEED:
		if (*(const int64_t *)p < 0)
			return false;
		*v = json_integer(*(const int64_t *)p);
		break;
	case MODEL_FC_BOOL:
		if (f->args.omit && !*(const bool *)p)
			return false;
		*v = json_boolean(*(const bool *)p);
		break;
	case MODEL_FC_HANDLER:
	case MODEL_FC_SQL:
		*v = json_string(text ? text : "");
		break;
	case MODEL_FC_ARGV:
		*v = strv_json(j->argv, j->argc);
		break;
	case MODEL_FC_ENV:
		*v = strv_json(j->env, j->envc);
		break;
	case MODEL_FC_TARGET:
	case MODEL_FC_HEADER:
	case MODEL_FC_TAGS:
		if (!text)
			return false;
		*v = targets_json(text);
		break;
	case MODEL_FC_UMASK:
		if (j->umask < 0)
			return false;
		snprintf(m, sizeof(m), "%03o", (unsigned)j->umask & 0777);
		*v = json_string(m);
		break;
	case MODEL_FC_TIME:
		if (*(const int64_t *)p < 0)
			return false;
		*v = time_json(*(const int64_t *)p);
		break;
	default:
		if (!text)
			return false;
		*v = json_string(text);
		break;
	}
	return true;
}

json_t *model_job_json(const dbcron_job *j)
{
	json_t *o = json_object();
	bool bad = false, sched = false;
	if (!o)
		return NULL;
	/* every keyed row of the field table, in its order; the schedule's
	 * rows are one key, the kind's */
	for (size_t i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		model_jobdef_id key = f->key;
		json_t *v = NULL;
		if (f->codec == MODEL_FC_SCHED) {
			if (sched)
				continue;
			sched = true;
			key = model_sched_key(j->kind);
		}
		if (key == MODEL_JK__NONE || !model_field_in_scope(j, f) || !field_json(j, f, &v))
			continue;
		put_key(o, key, v, &bad);
	}
	put(o, "id", json_integer(j->id), &bad);
	put(o, "next_fire_at_ms", ms_json(j->next_fire_at), &bad);
	put(o, "next_fire", time_json(j->next_fire_at), &bad);
	if (j->set_aside)
		put(o, "set_aside", json_string(j->set_aside), &bad);
	return finished(o, bad);
}

json_t *model_job_def_json(const dbcron_job *j)
{
	static const char *const store_keys[] = {"id", "next_fire_at_ms", "next_fire",
						 "set_aside"};
	json_t *o = model_job_json(j);
	bool bad = !o;
	for (size_t i = 0; o && i < sizeof(store_keys) / sizeof(store_keys[0]); i++)
		json_object_del(o, store_keys[i]);
	if (o && j->kind == DBCRON_SCHED_AT && j->at_ms >= 0)
		put_key(o, MODEL_JK_AT, time_json(j->at_ms), &bad);
	return finished(o, bad);
}

json_t *model_run_json(const dbcron_run *r)
{
	json_t *o = json_object();
	char t[64];
	bool bad = false;
	if (!o)
		return NULL;
	put(o, "id", json_integer(r->id), &bad);
	put(o, "job", str_json(r->job_name), &bad);
	put(o, "fire_at_ms", ms_json(r->fire_at), &bad);
	/* "-" when unset, as the run log always printed it */
	put(o, "fire_at", json_string(model_time_text(r->fire_at, t, sizeof(t))), &bad);
	put(o, "attempt", json_integer(r->attempt), &bad);
	put(o, "state", json_string(dbcron_run_state_name(r->state)), &bad);
	put(o, "due_at_ms", ms_json(r->due_at), &bad);
	put(o, "node", str_json(r->node), &bad);
	put(o, "started_ms", ms_json(r->started_ms), &bad);
	put(o, "finished_ms", ms_json(r->finished_ms), &bad);
	put(o, "exit_code", r->has_exit_code ? json_integer(r->exit_code) : json_null(), &bad);
	put(o, "missed", json_integer(r->missed), &bad);
	put(o, "error", str_json(r->error), &bad);
	if (r->output)
		put(o, "output", json_string(r->output), &bad);
	/* only when set: a run nobody cancelled reads as it always did */
	if (r->cancel_requested_ms > 0)
		put(o, "cancel_requested_ms", json_integer(r->cancel_requested_ms), &bad);
	/* an every-node run (docs/scheduler.md "Every node"): its node, its
	 * index among the fire's nodes and their number */
	if (r->node_total > 0) {
		put(o, "for_node", str_json(r->for_node), &bad);
		put(o, "node_index", json_integer(r->node_index), &bad);
		put(o, "node_total", json_integer(r->node_total), &bad);
	}
	/* only for a backfill's run: the others read as they always did */
	if (r->backfill)
		put(o, "kind", json_string("backfill"), &bad);
	if (r->params) {
		json_t *pj = json_loads(r->params, JSON_DECODE_ANY, NULL);
		put(o, "params", pj && json_is_object(pj) ? pj : json_string(r->params), &bad);
		if (pj && !json_is_object(pj))
			json_decref(pj);
	}
	return finished(o, bad);
}

json_t *model_job_json_with_runs(const dbcron_job *job, const dbcron_run *runs,
				 size_t n)
{
	json_t *o = model_job_json(job);
	json_t *a = json_array();
	bool bad = !o || !a;
	for (size_t i = 0; !bad && i < n; i++)
		bad = json_array_append_new(a, model_run_json(&runs[i])) != 0;
	if (bad) {
		json_decref(a);
		json_decref(o);
		return NULL;
	}
	put(o, "last_runs", a, &bad);
	return finished(o, bad);
}

/* ------------------------------------------------------------ reading */

/* What the store sets; a listed job carries them, a definition ignores them. */
static bool read_only_key(const char *key)
{
	static const char *const keys[] = {"id",       "next_fire_at_ms", "next_fire",
					   "last_runs", "set_aside",       "unrunnable",
					   /* the listing's (app_jobs_page) and job show's */
					   "schedule", "description", "next_fire_local",
					   "last_run", "next_fires"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i], key) == 0)
			return true;
	return false;
}

static const char *type_word(model_jobdef_type t)
{
	switch (t) {
	case MODEL_JD_INT:
		return "an integer";
	case MODEL_JD_BOOL:
		return "true or false";
	case MODEL_JD_DUR:
		return "a duration string such as \"30s\"";
	case MODEL_JD_ARGV:
		return "a non-empty array of strings";
	case MODEL_JD_LIST:
		return "an array of strings";
	case MODEL_JD_TIME:
		return "a time string such as \"2026-01-31T09:00:00Z\"";
	default:
		return "a string";
	}
}

/* A JSON array of strings as the command; *ok false when it is not one. */
static int set_command(model_jobdef *d, json_t *val, bool *ok, dbcron_err *err)
{
	size_t n = json_array_size(val), i;
	*ok = json_is_array(val) && n > 0 && n < 100000;
	for (i = 0; *ok && i < n; i++)
		*ok = json_is_string(json_array_get(val, i));
	if (!*ok)
		return DBCRON_EINVAL;
	/* borrowed words; model_jobdef_set_argv copies them */
	char **words = dbcron__calloc(n, sizeof(char *));
	if (!words)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		words[i] = (char *)json_string_value(json_array_get(val, i));
	int rc = model_jobdef_set_argv(d, words, (int)n, err);
	dbcron__free(words);
	return rc;
}

/* One key's value by the table's type; *ok false on a type mismatch. */
static int set_value(model_jobdef *d, const model_jobdef_key *k, json_t *val,
		     bool *ok, dbcron_err *err)
{
	switch (k->type) {
	case MODEL_JD_INT:
		*ok = json_is_integer(val);
		return *ok ? model_jobdef_set_int(d, k, json_integer_value(val), err)
			   : DBCRON_EINVAL;
	case MODEL_JD_BOOL:
		*ok = json_is_boolean(val);
		return *ok ? model_jobdef_set_bool(d, k, json_is_true(val), err)
			   : DBCRON_EINVAL;
	case MODEL_JD_ARGV:
		return set_command(d, val, ok, err);
	case MODEL_JD_LIST: {
		size_t n = json_array_size(val);
		*ok = json_is_array(val);
		for (size_t i = 0; *ok && i < n; i++)
			*ok = json_is_string(json_array_get(val, i));
		if (!*ok)
			return DBCRON_EINVAL;
		for (size_t i = 0; i < n; i++) {
			int rc = model_jobdef_set_text(d, k, json_string_value(json_array_get(val, i)),
						       err);
			if (rc)
				return rc;
		}
		return DBCRON_OK;
	}
	default:
		*ok = json_is_string(val);
		return *ok ? model_jobdef_set_text(d, k, json_string_value(val), err)
			   : DBCRON_EINVAL;
	}
}

int model_jobdef_from_json(model_jobdef *d, json_t *obj, const char **name,
			   dbcron_err *err)
{
	const char *key;
	json_t *val;

	*name = NULL;
	if (!json_is_object(obj))
		return dbcron_err_set(err, DBCRON_EINVAL, "expected an object {\"name\": ..., ...}");
	json_t *jn = json_object_get(obj, "name");
	if (!jn)
		return dbcron_err_set(err, DBCRON_EINVAL, "missing key 'name'");
	if (!json_is_string(jn))
		return dbcron_err_set(err, DBCRON_EINVAL, "key 'name': expected a string");
	*name = json_string_value(jn);
	json_object_foreach(obj, key, val) {
		if (read_only_key(key))
			continue;
		const model_jobdef_key *k = model_jobdef_find(key);
		if (!k)
			return dbcron_err_set(err, DBCRON_EINVAL, "unknown key '%s'", key);
		bool ok = true;
		int rc = set_value(d, k, val, &ok, err);
		if (!ok)
			return dbcron_err_set(err, DBCRON_EINVAL, "key '%s': expected %s", key,
					      type_word(k->type));
		if (rc)
			return rc;
	}
	return model_jobdef_check(d, err);
}
