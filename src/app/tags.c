/*
 * Tags and their caps (issue 28 item 3): the verbs `dbcron tag` and
 * /api/v1/tags share.  The cap itself is kept by the claim (store/caps.c);
 * here only what an operator may set: a cap on a tag some job carries,
 * and the caps of a `job apply` document ("tags": read and checked before
 * anything is written, then written in the jobs' transaction).
 */
#include <jansson.h>
#include <string.h>

#include "app/app.h"
#include "app/app_int.h"
#include "core/alloc.h"
#include "model/jobdef.h"
#include "model/tags.h"

int app_tag_set(store *s, const char *name, int max_running, dbcron_err *err)
{
	/* the store refuses a tag no job carries, in the write's transaction */
	return store_tag_set(s, name, max_running, err);
}

int app_tag_delete(store *s, const char *name, dbcron_err *err)
{
	bool deleted = false;
	int rc = model_tag_check(name, err);
	if (rc || (rc = store_tag_delete(s, name, &deleted, err)))
		return rc;
	return deleted ? DBCRON_OK
		       : dbcron_err_set(err, DBCRON_ENOTFOUND, "tag '%s' has no cap", name);
}

static int add_tag(void *ctx, const store_tag_row *t)
{
	json_t *o = json_pack("{s:s, s:i, s:I, s:I}", "name", t->name, "max_running",
			      t->max_running, "running", (json_int_t)t->running, "jobs",
			      (json_int_t)t->jobs);
	return !o || json_array_append_new(ctx, o);
}

int app_tags_list(store *s, json_t **out, dbcron_err *err)
{
	json_t *a = json_array();
	if (!a)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	int rc = store_tags_list(s, add_tag, a, err);
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return DBCRON_OK;
}

/* ------------------------------------------- caps in an apply document */

static int cap_entry(json_t *e, size_t i, store_tag_cap *c, dbcron_err *err)
{
	const char *k;
	json_t *v, *name = json_object_get(e, "name"), *max = json_object_get(e, "max_running");
	if (!json_is_object(e))
		return dbcron_err_set(err, DBCRON_EINVAL, "tags #%zu: expected an object", i + 1);
	if (!json_is_string(name))
		return dbcron_err_set(err, DBCRON_EINVAL, "tags #%zu: key 'name': expected a string",
				      i + 1);
	c->name = json_string_value(name);
	json_object_foreach(e, k, v) {
		/* the read-only keys of `tag list --format json` and GET /tags */
		if (strcmp(k, "name") && strcmp(k, "max_running") && strcmp(k, "running") &&
		    strcmp(k, "jobs"))
			return dbcron_err_set(err, DBCRON_EINVAL, "tags #%zu ('%s'): unknown key '%s'",
					      i + 1, c->name, k);
	}
	dbcron_err e2 = {0};
	if (model_tag_check(c->name, &e2))
		return dbcron_err_set(err, DBCRON_EINVAL, "tags #%zu: %s", i + 1, e2.msg);
	if (!json_is_integer(max) || json_integer_value(max) < 0 ||
	    json_integer_value(max) > MODEL_TAG_CAP_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "tags #%zu ('%s'): key 'max_running': expected an integer "
				      "0..%d",
				      i + 1, c->name, MODEL_TAG_CAP_MAX);
	c->max_running = (int)json_integer_value(max);
	return DBCRON_OK;
}

int app__caps_read(const json_t *tags, store_tag_cap **out, size_t *n, dbcron_err *err)
{
	size_t k = json_array_size(tags);
	int rc = DBCRON_OK;
	*out = NULL;
	*n = 0;
	if (!tags)
		return DBCRON_OK;
	if (!json_is_array(tags))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "key 'tags': expected an array of {\"name\", \"max_running\"}");
	store_tag_cap *v = dbcron__calloc(k ? k : 1, sizeof(*v));
	if (!v)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < k; i++) {
		if ((rc = cap_entry(json_array_get(tags, i), i, &v[i], err)))
			break;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(v[j].name, v[i].name)) {
				rc = dbcron_err_set(err, DBCRON_EINVAL,
						    "tags #%zu: tag '%s' is given twice (first at #%zu)",
						    i + 1, v[i].name, j + 1);
				break;
			}
	}
	if (rc) {
		dbcron__free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return DBCRON_OK;
}

/* A dry run's "caps": what the document's caps would change. */
json_t *app__caps_diff(store *s, const store_tag_cap *v, size_t n, bool prune, dbcron_err *err)
{
	json_t *now = NULL, *d = json_pack("{s:[], s:[], s:[]}", "set", "delete", "unchanged");
	if (!d || app_tags_list(s, &now, err)) {
		json_decref(d);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *before = json_null(), *t;
		size_t k;
		json_array_foreach(now, k, t)
			if (!strcmp(json_string_value(json_object_get(t, "name")), v[i].name))
				before = json_object_get(t, "max_running");
		if (json_integer_value(before) == v[i].max_running && !json_is_null(before))
			json_array_append_new(json_object_get(d, "unchanged"), json_string(v[i].name));
		else
			json_array_append_new(json_object_get(d, "set"),
					      json_pack("{s:s, s:O, s:i}", "name", v[i].name,
							"before", before, "after", v[i].max_running));
	}
	size_t k;
	json_t *t;
	json_array_foreach(now, k, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		bool kept = false;
		for (size_t i = 0; i < n && !kept; i++)
			kept = !strcmp(v[i].name, name);
		if (prune && !kept)
			json_array_append_new(json_object_get(d, "delete"), json_string(name));
	}
	json_decref(now);
	return d;
}

int app__caps_known(store *s, const app_batch *b, bool prune, dbcron_err *err)
{
	for (size_t i = 0; i < b->ncaps; i++) {
		const char *t = b->caps[i].name;
		bool known = false;
		int64_t jobs = 0;
		for (size_t k = 0; k < b->n && !known; k++)
			known = b->defs[k].job.tags && model_tags_has(b->defs[k].job.tags, t);
		/* under prune only the document's jobs are left */
		if (!known && !prune) {
			int rc = store_tag_used(s, t, &jobs, err);
			if (rc)
				return rc;
			known = jobs > 0;
		}
		if (!known)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "tags #%zu: unknown tag '%s': no job carries it (give "
					      "a job \"tag\": [\"%s\"] first)",
					      i + 1, t, t);
	}
	return DBCRON_OK;
}
