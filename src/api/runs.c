/*
 * The read side of the library (dbcron/db.h): the run log as a keyset
 * iterator over app_runs_fetch (one query per page, the cursor rule of
 * src/app/), one run with its output, and the node and lock registries as
 * arrays the caller owns.  The iterator owns its page and its copy of the
 * filter; it borrows the handle.  Rows handed out never carry a claim
 * token: that is the fencing secret of the node that owns the run.
 */
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "api/api.h"
#include "app/app.h"
#include "core/alloc.h"
#include "dbcron/lock.h"

#define DEFAULT_PAGE 100

void dbcron_run_filter_init(dbcron_run_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->since_ms = -1;
	f->page_size = DEFAULT_PAGE;
}

struct dbcron_run_iter {
	dbcron_db *db;
	char *job; /* the filter's job name, our copy */
	int state;
	int64_t since_ms;
	long page_size;
	dbcron_run *page; /* oldest first, as fetched; served from the end */
	size_t n, cap, next; /* next: rows of the page not yet served */
	bool last_page;      /* the page was short: nothing behind it */
	bool failed;         /* out of memory while collecting */
	dbcron_run cur;      /* the row last served */
	char *cursor;        /* resumes after cur; "" before the first row */
};

static void page_clear(dbcron_run_iter *it)
{
	for (size_t i = 0; i < it->n; i++)
		dbcron_run_clear(&it->page[i]);
	it->n = it->next = 0;
}

static int collect(void *ctx, const dbcron_run *r)
{
	dbcron_run_iter *it = ctx;
	if (dbcron__grow((void **)&it->page, &it->cap, it->n + 1, sizeof(*it->page)) ||
	    app_run_copy(&it->page[it->n], r, false)) {
		it->failed = true;
		return 1;
	}
	it->n++;
	return 0;
}

static int fetch(dbcron_run_iter *it, dbcron_err *err)
{
	store_run_filter f = {.job = it->job, .state = it->state, .since_ms = it->since_ms,
			      .limit = it->page_size};
	page_clear(it);
	int rc = app_runs_fetch(api__store(it->db), &f, it->cursor, collect, it, err);
	if (!rc && it->failed)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading runs");
	if (rc) {
		page_clear(it);
		it->failed = false;
		return rc;
	}
	it->next = it->n;
	it->last_page = it->n < (size_t)it->page_size;
	return DBCRON_OK;
}

void dbcron_runs_free(dbcron_run_iter *it)
{
	if (!it)
		return;
	page_clear(it);
	dbcron__free(it->page);
	dbcron_run_clear(&it->cur);
	dbcron__free(it->cursor);
	dbcron__free(it->job);
	dbcron__free(it);
}

int dbcron_runs_open(dbcron_db *db, const dbcron_run_filter *f, const char *cursor,
		     dbcron_run_iter **out, dbcron_err *err)
{
	dbcron_run_filter dflt;
	int rc = DBCRON_ENOMEM;
	if (!f) {
		dbcron_run_filter_init(&dflt);
		f = &dflt;
	}
	if (f->page_size < 0 || f->page_size > 100000)
		return dbcron_err_set(err, DBCRON_EINVAL, "page_size %ld: give 1-100000 (0: %d)",
				      f->page_size, DEFAULT_PAGE);
	dbcron_run_iter *it = dbcron__calloc(1, sizeof(*it));
	if (!it)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	it->db = db;
	it->state = f->state;
	it->since_ms = f->since_ms;
	it->page_size = f->page_size ? f->page_size : DEFAULT_PAGE;
	if ((f->job && !(it->job = dbcron__strdup(f->job))) ||
	    !(it->cursor = dbcron__strdup(cursor ? cursor : ""))) {
		dbcron_err_set(err, rc, "out of memory");
		goto out_free;
	}
	/* the first page now, so that a bad cursor or filter fails here */
	if ((rc = fetch(it, err)))
		goto out_free;
	*out = it;
	return DBCRON_OK;
out_free:
	dbcron_runs_free(it);
	return rc;
}

int dbcron_runs_next(dbcron_run_iter *it, const dbcron_run **run, dbcron_err *err)
{
	int rc;
	*run = NULL;
	if (it->next == 0) {
		if (it->last_page)
			return DBCRON_OK;
		if ((rc = fetch(it, err)))
			return rc;
		if (it->next == 0)
			return DBCRON_OK;
	}
	dbcron_run *r = &it->page[--it->next];
	size_t len = strlen(r->job_name ? r->job_name : "") + 80;
	char *c = dbcron__malloc(len);
	if (!c || !app_run_cursor(r, c, len)) {
		dbcron__free(c);
		it->next++;
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading runs");
	}
	dbcron__free(it->cursor);
	it->cursor = c;
	/* the row moves out of the page: the page slot is left empty */
	dbcron_run_clear(&it->cur);
	it->cur = *r;
	memset(r, 0, sizeof(*r));
	*run = &it->cur;
	return DBCRON_OK;
}

const char *dbcron_runs_cursor(const dbcron_run_iter *it)
{
	return it->cursor;
}

int dbcron_run_get(dbcron_db *db, int64_t id, dbcron_run *out, dbcron_err *err)
{
	dbcron_run r;
	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	int rc = store_run_get(api__store(db), id, &r, err);
	if (rc == DBCRON_ENOTFOUND)
		dbcron_err_set(err, rc, "no run with id %lld", (long long)id);
	if (!rc && app_run_copy(out, &r, true))
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading run %lld",
				    (long long)id);
	dbcron_run_clear(&r);
	return rc;
}

/* ----------------------------------------------------- nodes, locks */

typedef struct node_vec {
	dbcron_node_info *v;
	size_t n, cap;
	bool failed;
} node_vec;

static char *dup_or_null(const char *s, bool *failed)
{
	char *d = s ? dbcron__strdup(s) : NULL;
	if (s && !d)
		*failed = true;
	return d;
}

static int add_node(void *ctx, const store_node_row *nr)
{
	node_vec *nv = ctx;
	if (dbcron__grow((void **)&nv->v, &nv->cap, nv->n + 1, sizeof(*nv->v))) {
		nv->failed = true;
		return 1;
	}
	dbcron_node_info *o = &nv->v[nv->n++];
	memset(o, 0, sizeof(*o));
	o->node_id = dup_or_null(nr->node_id, &nv->failed);
	o->host = dup_or_null(nr->host, &nv->failed);
	o->state = dup_or_null(nr->state, &nv->failed);
	o->pid = nr->pid;
	o->workers = nr->workers;
	o->started_ms = nr->started_ms;
	o->heartbeat_ms = nr->heartbeat_ms;
	o->lease_until_ms = nr->lease_until;
	o->running = nr->running;
	return nv->failed;
}

void dbcron_nodes_free(dbcron_node_info *nodes, size_t n)
{
	for (size_t i = 0; nodes && i < n; i++) {
		dbcron__free(nodes[i].node_id);
		dbcron__free(nodes[i].host);
		dbcron__free(nodes[i].state);
	}
	dbcron__free(nodes);
}

int dbcron_nodes_list(dbcron_db *db, dbcron_node_info **nodes, size_t *n, dbcron_err *err)
{
	node_vec nv = {0};
	*nodes = NULL;
	*n = 0;
	int rc = store_nodes_list(api__store(db), add_node, &nv, err);
	if (!rc && nv.failed)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing nodes");
	if (rc) {
		dbcron_nodes_free(nv.v, nv.n);
		return rc;
	}
	*nodes = nv.v;
	*n = nv.n;
	return DBCRON_OK;
}

typedef struct lock_vec {
	dbcron_lease *v;
	size_t n, cap;
	bool failed;
} lock_vec;

static void copy_text(char *dst, size_t cap, const char *src)
{
	dbcron__textf(dst, cap, "%s", src ? src : "");
}

static int add_lock(void *ctx, const store_lock_row *l)
{
	lock_vec *lv = ctx;
	if (dbcron__grow((void **)&lv->v, &lv->cap, lv->n + 1, sizeof(*lv->v))) {
		lv->failed = true;
		return 1;
	}
	dbcron_lease *o = &lv->v[lv->n++];
	memset(o, 0, sizeof(*o));
	/* lock names and owners are at most 255 bytes (lease.c refuses more) */
	copy_text(o->name, sizeof(o->name), l->name);
	copy_text(o->owner, sizeof(o->owner), l->owner);
	o->fence = l->fence;
	o->since_ms = l->since_ms;
	o->until_ms = l->until_ms;
	return 0;
}

void dbcron_locks_free(dbcron_lease *locks)
{
	dbcron__free(locks);
}

int dbcron_locks_list(dbcron_db *db, dbcron_lease **locks, size_t *n, dbcron_err *err)
{
	lock_vec lv = {0};
	*locks = NULL;
	*n = 0;
	int rc = store_lock_list(api__store(db), add_lock, &lv, err);
	if (!rc && lv.failed)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing locks");
	if (rc) {
		dbcron__free(lv.v);
		return rc;
	}
	*locks = lv.v;
	*n = lv.n;
	return DBCRON_OK;
}

int dbcron_run_cancel(dbcron_db *db, int64_t id, bool *done, dbcron_err *err)
{
	bool d = false;
	int rc = store_run_cancel(api__store(db), id, &d, NULL, err);
	if (done)
		*done = rc == DBCRON_OK && d;
	return rc;
}
