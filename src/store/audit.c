/*
 * The audit trail (issue 29 item 2): who changed what, when, written by
 * the store in the same transaction as the change, so that the trail and
 * the jobs can never disagree (a change that rolls back leaves no row).
 * Owns: the handle's actor and put verb, the rows a change collects
 * (struct store_audit: the batch and the texts it borrows), the one
 * secrets rule (store__audit_redact) and the generic before/after of a
 * job (store__audit_job: the keys model_job_diff finds, valued by the
 * definition's JSON, so a new field is in the trail with no code here).
 *
 * Invariants: one statement per change however many rows (the batch);
 * at_ms is the database clock (the statement's own); an env value, a
 * URL's password or a "password=" value never reaches the table.
 */
#include <string.h>

#include "core/alloc.h"
#include "model/fields.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "store/store_int.h"

static const store_bcol audit_cols[3] = {BC_TEXT, BC_TEXT, BC_TEXT};

void store_set_actor(store *s, const char *actor)
{
	size_t n = actor ? strlen(actor) : 0;
	if (n >= sizeof(s->actor)) {
		n = sizeof(s->actor) - 1;
		/* cut at a character, never inside one */
		while (n && ((unsigned char)actor[n] & 0xC0) == 0x80)
			n--;
	}
	if (n)
		memcpy(s->actor, actor, n);
	s->actor[n] = '\0';
}

const char *store_actor(const store *s)
{
	return s->actor[0] ? s->actor : "unknown";
}

void store_audit_verb(store *s, const char *verb)
{
	s->put_verb = verb;
}

void store__audit_begin(store *s, store_audit *a)
{
	memset(a, 0, sizeof(*a));
	a->b = store__scratch(s, 5, 3, audit_cols);
}

/* A text the batch borrows until the statement ran. */
static const char *keep(store_audit *a, char *owned)
{
	if (!owned || dbcron__grow((void **)&a->owned, &a->cap, a->n + 1, sizeof(*a->owned))) {
		dbcron__free(owned);
		a->oom = true;
		return NULL;
	}
	a->owned[a->n++] = owned;
	return owned;
}

void store__audit_add(store_audit *a, const char *action, const char *job, json_t *detail)
{
	if (!detail)
		detail = json_object();
	char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
	json_decref(detail);
	/* jansson allocates with malloc: the kept copy is ours */
	const char *d = text ? keep(a, dbcron__strdup(text)) : NULL;
	free(text);
	const char *j = job ? keep(a, dbcron__strdup(job)) : NULL;
	if (!d || (job && !j)) {
		a->oom = true;
		return;
	}
	store_batch_text(a->b, action);
	store_batch_text(a->b, j);
	store_batch_text(a->b, d);
}

/* ---- the one secrets rule ---- */

/* The masker finds a secret only in a URI or in key=value text
 * (store_url_secrets): anything else is kept as it is, unparsed. */
static bool may_hide(const char *v)
{
	return strstr(v, "://") || strchr(v, '=');
}

static json_t *masked_string(const char *v)
{
	char small[512];
	size_t need = store_mask_url(v, small, sizeof(small));
	if (need < sizeof(small))
		return json_string(small);
	char *big = dbcron__malloc(need + 1);
	if (!big)
		return NULL;
	store_mask_url(v, big, need + 1);
	json_t *out = json_string(big);
	dbcron__free(big);
	return out;
}

/* Every string of v (an array's elements too) through the URL masker. */
static void mask_value(json_t *v, bool env)
{
	size_t i;
	json_t *e;
	if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			if (!json_is_string(e))
				continue;
			const char *t = json_string_value(e);
			const char *eq = env ? strchr(t, '=') : NULL;
			if (!env && !may_hide(t))
				continue;
			json_t *m;
			if (eq) {
				/* KEY=VALUE: the name stays, the value never */
				size_t k = (size_t)(eq - t);
				char *kv = dbcron__malloc(k + 5);
				if (!kv) {
					json_array_set_new(v, i, json_string("***"));
					continue;
				}
				memcpy(kv, t, k);
				memcpy(kv + k, "=***", 5);
				m = json_string(kv);
				dbcron__free(kv);
			} else {
				m = env ? json_string("***") : masked_string(t);
			}
			json_array_set_new(v, i, m ? m : json_string("***"));
		}
	}
}

void store__audit_redact(json_t *def)
{
	const char *key;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(def, tmp, key, v) {
		bool env = strcmp(key, "env") == 0;
		if (json_is_array(v)) {
			mask_value(v, env);
		} else if (json_is_string(v) && may_hide(json_string_value(v))) {
			json_t *m = masked_string(json_string_value(v));
			json_object_set_new(def, key, m ? m : json_string("***"));
		}
	}
}

/* ---- a job's before and after ---- */

struct diff_ctx {
	json_t *changes, *before, *after;
};

static void change(json_t *changes, const char *key, json_t *before, json_t *after)
{
	json_t *c = json_object();
	if (!c)
		return;
	json_object_set(c, "before", before ? before : json_null());
	json_object_set(c, "after", after ? after : json_null());
	json_object_set_new(changes, key, c);
}

static void diff_one(void *ctx, const model_field *f, model_jobdef_id key)
{
	struct diff_ctx *d = ctx;
	const model_jobdef_key *k = model_jobdef_key_of(key);
	(void)f;
	if (!k) /* a member without a key of its own (executor): its keys say it */
		return;
	change(d->changes, k->name, json_object_get(d->before, k->name),
	       json_object_get(d->after, k->name));
}

static json_t *def_json(const dbcron_job *j)
{
	json_t *o = j ? model_job_def_json(j) : NULL;
	if (o)
		store__audit_redact(o);
	return o;
}

void store__audit_job(store_audit *a, const char *action, const char *job,
		      const dbcron_job *before, const dbcron_job *after, json_t *extra)
{
	json_t *detail = json_object(), *changes = json_object();
	struct diff_ctx d = {changes, def_json(before), def_json(after)};
	if (!detail || !changes || (before && !d.before) || (after && !d.after)) {
		a->oom = true;
		goto out_free;
	}
	if (before && after) {
		model_job_diff(after, before, MODEL_ROLE_DEF | MODEL_ROLE_STATE, diff_one, &d);
		if (before->set_aside && !after->set_aside) {
			json_t *why = json_string(before->set_aside);
			change(changes, "set_aside", why, NULL);
			json_decref(why);
		}
	} else {
		/* a new job (every key from nothing) or a deleted one (to nothing) */
		const char *key;
		json_t *v;
		json_object_foreach(before ? d.before : d.after, key, v)
			change(changes, key, before ? v : NULL, before ? NULL : v);
	}
	json_object_set(detail, "changes", changes);
	if (extra)
		json_object_update(detail, extra);
	store__audit_add(a, action, job, detail);
	detail = NULL;
out_free:
	json_decref(extra);
	json_decref(detail);
	json_decref(changes);
	json_decref(d.before);
	json_decref(d.after);
}

int store__audit_write(store *s, store_audit *a, const char *actor, dbcron_err *err)
{
	if (a->oom || a->b->oom)
		return store__oom(err, "the audit trail");
	if (!store_batch_rows(a->b))
		return DBCRON_OK;
	store_param p[] = {sp_text(actor ? actor : store_actor(s)), sp_batch(a->b)};
	return store__run(s, ST_AUDIT_INSERT, p, 2, NULL, err);
}

void store__audit_free(store_audit *a)
{
	for (size_t i = 0; i < a->n; i++)
		dbcron__free(a->owned[i]);
	dbcron__free(a->owned);
	a->owned = NULL;
	a->n = a->cap = 0;
}

/* ---- the read side and retention ---- */

struct audit_each {
	store_audit_cb cb;
	void *ctx;
};

static int audit_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct audit_each *e = arg;
	(void)err;
	const char *actor = s->d->col_text(s->c, 2), *action = s->d->col_text(s->c, 3);
	const char *detail = s->d->col_text(s->c, 5);
	store_audit_row r = {.id = store__i64(s, 0), .at_ms = store__i64(s, 1),
			     .actor = actor ? actor : "", .action = action ? action : "",
			     .job = s->d->col_null(s->c, 4) ? NULL : s->d->col_text(s->c, 4),
			     .detail = detail ? detail : "{}"};
	*stop = e->cb(e->ctx, &r) != 0;
	return DBCRON_OK;
}

int store_audit_list(store *s, const store_audit_filter *f, store_audit_cb cb, void *ctx,
		     dbcron_err *err)
{
	store_param p[] = {sp_text(f ? f->job : NULL),
			   sp_i64(f && f->since_ms >= 0 ? f->since_ms : -1),
			   sp_i64(f && f->limit > 0 ? (int64_t)f->limit : -1)};
	struct audit_each e = {cb, ctx};
	return store__each_row(s, ST_AUDIT_LIST, p, 3, audit_one, &e, err);
}

int store_prune_audit_some(store *s, int64_t cutoff_ms, int64_t limit, int64_t *deleted,
			   dbcron_err *err)
{
	int64_t n = 0;
	if (limit <= 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "prune: a batch size is required");
	store_param p[] = {sp_i64(cutoff_ms), sp_i64(limit)};
	int rc = store__run(s, ST_PRUNE_AUDIT, p, 2, &n, err);
	if (deleted)
		*deleted = rc ? 0 : n;
	return rc;
}
