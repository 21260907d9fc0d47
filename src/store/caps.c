/*
 * Concurrency caps by tag (issue 28 item 3, docs/scheduler.md
 * "Concurrency caps"): the tags table (a cap per tag) and the claim's
 * count of a tag's slots.
 *
 * Invariant kept: at no instant has a capped tag more live runs (claimed
 * SCHEDULED or RUNNING, on any node) than its max_running.  Every claim
 * that hands out a run of a capped tag's job first holds the tag's row
 * (TAGS_LOCK, FOR UPDATE SKIP LOCKED), then counts the tag's live runs in
 * a statement of its own (TAGS_LIVE: it sees every claim of the tag that
 * committed before the lock), then hands out at most the slots left, in
 * the claim's transaction.  A tag another claim holds has no slot for this
 * claim (it never waits for a lock, so no two claims can deadlock on
 * tags); its fires wait for a later claim.  A run only ends, so a count
 * can only be high, never low, when it is used.  No lock is held across
 * runs.
 * A cap's change is in the audit trail, in the transaction that makes it.
 */
#include <jansson.h>
#include <string.h>

#include "core/alloc.h"
#include "model/tags.h"
#include "model/target.h"
#include "store/store_int.h"

/* ---- the tags table ---- */

/* The cap tag name has now, read in the caller's transaction; *max -1:
 * none. */
static int cap_now(store *s, const char *name, int *max, dbcron_err *err)
{
	store_batch *b = store__scratch(s, 3, 1, store__names_cols);
	store_batch_text(b, name);
	if (b->oom)
		return store__oom(err, "tag");
	store_param p[] = {sp_batch(b)};
	int row = store__row(s, ST_TAGS_CAPPED, p, 1, err);
	if (row < 0)
		return -row;
	*max = row ? (int)store__i64(s, 1) : -1;
	store__reset(s);
	return DBCRON_OK;
}

static int tag_jobs(store *s, const char *name, int64_t *jobs, dbcron_err *err)
{
	store_param p[] = {sp_text(name)};
	int row = store__row(s, ST_TAG_USED, p, 1, err);
	if (row < 0)
		return -row;
	*jobs = row ? store__i64(s, 0) : 0;
	store__reset(s);
	return DBCRON_OK;
}

static json_t *cap_json(int max)
{
	return max < 0 ? json_null() : json_integer(max);
}

/* In the caller's transaction, so that the job that carries the tag is
 * still there when the cap is written (a cap on a tag no job carries
 * would cap nothing: a typo); an unchanged cap writes nothing. */
int store__tag_set_in(store *s, store_audit *a, const char *name, int max_running,
		      bool *changed, dbcron_err *err)
{
	int64_t now, jobs = 0;
	int before = -1, rc = model_tag_check(name, err);
	*changed = false;
	if (rc)
		return rc;
	if (max_running < 0 || max_running > MODEL_TAG_CAP_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "tag '%s': max_running must be 0..%d",
				      name, MODEL_TAG_CAP_MAX);
	if ((rc = tag_jobs(s, name, &jobs, err)))
		return rc;
	if (jobs == 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "unknown tag '%s': no job carries it (give a job --tag %s first)",
				      name, name);
	if ((rc = cap_now(s, name, &before, err)) || before == max_running ||
	    (rc = store__db_now(s, &now, err)))
		return rc;
	store_param p[] = {sp_text(name), sp_i64(max_running), sp_i64(now)};
	if ((rc = store__run(s, ST_TAG_SET, p, 3, NULL, err)))
		return rc;
	*changed = true;
	store__audit_add(a, "tag-set", NULL,
			 json_pack("{s:s, s:{s:{s:o, s:i}}}", "tag", name, "changes", "max_running",
				   "before", cap_json(before), "after", max_running));
	return DBCRON_OK;
}

int store_tag_set(store *s, const char *name, int max_running, dbcron_err *err)
{
	store_audit a;
	bool changed;
	int rc;
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__tag_set_in(s, &a, name, max_running, &changed, err)) ||
	    (rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	return rc;
}

int store_tag_used(store *s, const char *name, int64_t *jobs, dbcron_err *err)
{
	return tag_jobs(s, name, jobs, err);
}

/* tag name's cap deleted in the caller's transaction, with its audit row
 * (*deleted false when it had none). */
static int tag_delete_in(store *s, store_audit *a, const char *name, bool *deleted,
			 dbcron_err *err)
{
	int before = -1, rc;
	store_param p[] = {sp_text(name)};
	*deleted = false;
	if ((rc = cap_now(s, name, &before, err)) || before < 0 ||
	    (rc = store__run(s, ST_TAG_DELETE, p, 1, NULL, err)))
		return rc;
	*deleted = true;
	store__audit_add(a, "tag-delete", NULL,
			 json_pack("{s:s, s:{s:{s:i, s:n}}}", "tag", name, "changes", "max_running",
				   "before", before, "after"));
	return DBCRON_OK;
}

int store_tag_delete(store *s, const char *name, bool *deleted, dbcron_err *err)
{
	store_audit a;
	bool gone = false;
	int rc;
	if (deleted)
		*deleted = false;
	if ((rc = model_tag_check(name, err)))
		return rc;
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = tag_delete_in(s, &a, name, &gone, err)) ||
	    (rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err))) {
		store__tx_rollback(s);
		goto out_free;
	}
	if (deleted)
		*deleted = gone;
out_free:
	store__audit_free(&a);
	return rc;
}

void store_put_tags(store *s, store_put_caps *c)
{
	s->put_caps = c;
}

/* The capped tags' names, for a prune; a walk cut short by out of memory
 * says so (oom), never a shorter list. */
struct cap_names {
	char **v;
	size_t n, cap;
	bool oom;
};

static int cap_name(void *ctx, const char *name)
{
	struct cap_names *c = ctx;
	if (dbcron__grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v)) ||
	    !(c->v[c->n] = dbcron__strdup(name)))
		return c->oom = true;
	c->n++;
	return 0;
}

static int prune_caps(store *s, store_audit *a, store_put_caps *c, dbcron_err *err)
{
	struct cap_names names = {0};
	int rc = store__each_name(s, ST_TAGS_NAMES, NULL, 0, cap_name, &names, err);
	if (!rc && names.oom)
		rc = store__oom(err, "tags");
	for (size_t i = 0; !rc && i < names.n; i++) {
		bool kept = false, gone;
		for (size_t k = 0; k < c->n && !kept; k++)
			kept = strcmp(c->v[k].name, names.v[i]) == 0;
		if (!kept && !(rc = tag_delete_in(s, a, names.v[i], &gone, err)))
			c->deleted += gone;
	}
	for (size_t i = 0; i < names.n; i++)
		dbcron__free(names.v[i]);
	dbcron__free(names.v);
	return rc;
}

int store__caps_put(store *s, store_audit *a, store_put_caps *c, dbcron_err *err)
{
	int rc = DBCRON_OK;
	c->set = c->deleted = 0;
	for (size_t i = 0; !rc && i < c->n; i++) {
		bool changed;
		if (!(rc = store__tag_set_in(s, a, c->v[i].name, c->v[i].max_running, &changed,
					     err)))
			c->set += changed;
	}
	if (!rc && c->prune)
		rc = prune_caps(s, a, c, err);
	if (rc)
		c->set = c->deleted = 0;
	return rc;
}

struct tag_each {
	store_tag_cb cb;
	void *ctx;
};

static int tag_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct tag_each *e = arg;
	store_tag_row r;
	const char *name = s->d->col_text(s->c, 0);
	memset(&r, 0, sizeof(r));
	if (!(r.name = dbcron__strdup(name ? name : "")))
		return store__oom(err, "tag list");
	r.max_running = (int)store__i64(s, 1);
	r.running = store__i64(s, 2);
	r.jobs = store__i64(s, 3);
	*stop = e->cb(e->ctx, &r) != 0;
	dbcron__free(r.name);
	return DBCRON_OK;
}

int store_tags_list(store *s, store_tag_cb cb, void *ctx, dbcron_err *err)
{
	struct tag_each e = {cb, ctx};
	return store__each_row(s, ST_TAGS_LIST, NULL, 0, tag_one, &e, err);
}

/* ---- the claim's slots ---- */

void store__caps_free(store_caps *c)
{
	dbcron__free(c->v);
	memset(c, 0, sizeof(c[0]));
}

static store_cap *find_cap(const store_caps *c, const char *name, size_t len)
{
	for (size_t i = 0; i < c->n; i++)
		if (strlen(c->v[i].name) == len && memcmp(c->v[i].name, name, len) == 0)
			return &c->v[i];
	return NULL;
}

/* The tags of jobs[0..n) not yet known to c, added uncapped, into the
 * batch b; how many. */
static size_t new_tags(store_caps *c, const dbcron_job *jobs, size_t n, store_batch *b,
		       dbcron_err *err, int *rc)
{
	size_t added = 0;
	*rc = DBCRON_OK;
	for (size_t i = 0; i < n; i++) {
		const char *list = jobs[i].tags, *t;
		size_t len;
		while ((t = model_targets_next(&list, &len))) {
			if (len > MODEL_TAG_MAX || find_cap(c, t, len))
				continue;
			if (dbcron__grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v))) {
				*rc = store__oom(err, "claim");
				return added;
			}
			store_cap *k = &c->v[c->n++];
			memset(k, 0, sizeof(*k));
			memcpy(k->name, t, len);
			k->max = -1;
			store_batch_text(b, k->name);
			added++;
		}
	}
	return added;
}

/* Rows of statement id over batch b: column 0 a tag of c, handed to
 * one() with the row current. */
static int each_tag_row(store *s, store_caps *c, int id, const store_batch *b,
			void (*one)(store *, store_cap *), dbcron_err *err)
{
	store_param p[] = {sp_batch(b)};
	int rc, row;
	if ((rc = store__exec(s, id, p, 1, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		const char *name = s->d->col_text(s->c, 0);
		store_cap *k = name ? find_cap(c, name, strlen(name)) : NULL;
		if (k)
			one(s, k);
	}
	store__reset(s);
	return row < 0 ? -row : DBCRON_OK;
}

static void set_max(store *s, store_cap *k) { k->max = (int)store__i64(s, 1); }
static void set_locked(store *s, store_cap *k)
{
	(void)s;
	k->locked = true;
}
static void set_live(store *s, store_cap *k)
{
	int64_t live = store__i64(s, 1);
	k->free = live >= k->max ? 0 : k->max - (int)live;
}

int store__caps_load(store *s, store_caps *c, const dbcron_job *jobs, size_t n,
		     dbcron_err *err)
{
	int rc;
	size_t first = c->n;
	store_batch *b = store__scratch(s, 3, 1, store__names_cols);
	if (!new_tags(c, jobs, n, b, err, &rc) || rc)
		return rc;
	if (b->oom)
		return store__oom(err, "claim");
	if ((rc = each_tag_row(s, c, ST_TAGS_CAPPED, b, set_max, err)))
		return rc;
	/* only the capped ones are locked and counted */
	b = store__scratch(s, 3, 1, store__names_cols);
	for (size_t i = first; i < c->n; i++)
		if (c->v[i].max >= 0)
			store_batch_text(b, c->v[i].name);
	if (b->oom)
		return store__oom(err, "claim");
	if (!store_batch_rows(b))
		return DBCRON_OK;
	if ((rc = each_tag_row(s, c, ST_TAGS_LOCK, b, set_locked, err)))
		return rc;
	b = store__scratch(s, 3, 1, store__names_cols);
	for (size_t i = first; i < c->n; i++)
		if (c->v[i].locked)
			store_batch_text(b, c->v[i].name);
	if (b->oom)
		return store__oom(err, "claim");
	if (!store_batch_rows(b))
		return DBCRON_OK;
	return each_tag_row(s, c, ST_TAGS_LIVE, b, set_live, err);
}

const store_cap *store__caps_full(const store_caps *c, const dbcron_job *j)
{
	const char *list = j->tags, *t;
	size_t len;
	while ((t = model_targets_next(&list, &len))) {
		const store_cap *k = find_cap(c, t, len);
		if (k && k->max >= 0 && (!k->locked || k->free <= 0))
			return k;
	}
	return NULL;
}

void store__caps_take(store_caps *c, const dbcron_job *j)
{
	const char *list = j->tags, *t;
	size_t len;
	while ((t = model_targets_next(&list, &len))) {
		store_cap *k = find_cap(c, t, len);
		if (k && k->max >= 0 && k->free > 0)
			k->free--;
	}
}
