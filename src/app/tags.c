/*
 * Tags and their caps (issue 28 item 3): the verbs `dbcron tag` and
 * /api/v1/tags share.  The cap itself is kept by the claim (store/caps.c);
 * here only what an operator may set: a cap on a tag some job carries.
 */
#include <jansson.h>

#include "app/app.h"
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
