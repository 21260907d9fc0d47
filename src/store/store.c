/*
 * Backend selection and the helpers every backend shares.  Owns no state:
 * store_open() picks the ops table from the URL's scheme and hands the URL
 * to it unchanged; the core only ever talks to the table it got back.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "store/store.h"

/* A libpq key=value conninfo: "host=... dbname=..." (first word has '='). */
static bool is_pg_conninfo(const char *url)
{
	const char *eq = strchr(url, '=');
	if (!eq || eq == url)
		return false;
	for (const char *p = url; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == ' ' ||
		      *p == '\t'))
			return false;
	return true;
}

/* An unknown URL may still carry credentials (mysql://u:pw@h): hide the
 * user-info part before it reaches an error message. */
static void redact_url(const char *url, char *buf, size_t n)
{
	const char *sep = strstr(url, "://");
	const char *at = sep ? strchr(sep + 3, '@') : NULL;
	if (!at) {
		snprintf(buf, n, "%s", url);
		return;
	}
	snprintf(buf, n, "%.*s://***%s", (int)(sep - url), url, at);
}

int store_open(const char *url, store **out, dbcron_err *err)
{
	char shown[256];

	const store_ops *ops = NULL;

	*out = NULL;
	if (!url || !*url)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "empty database URL (use sqlite:PATH or postgresql://...)");
	if (strncmp(url, "sqlite:", 7) == 0)
		ops = &store_sqlite_ops;
	else if (strncmp(url, "postgresql://", 13) == 0 ||
		 strncmp(url, "postgres://", 11) == 0 || is_pg_conninfo(url))
		ops = &store_pg_ops;
	if (!ops) {
		redact_url(url, shown, sizeof(shown));
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "unsupported database URL '%s' (use sqlite:PATH or postgresql://...)",
				      shown);
	}
	return ops->open(url, out, err);
}

void store_close(store *s)
{
	if (s)
		s->ops->close(s);
}

void store_claim_result_clear(store_claim_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nruns; i++)
		dbcron_run_clear(&r->runs[i].run);
	for (size_t i = 0; i < r->njobs; i++)
		dbcron_job_clear(&r->jobs[i]);
	dbcron__free(r->runs);
	dbcron__free(r->jobs);
	memset(r, 0, sizeof(*r));
}

void store_lock_row_clear(store_lock_row *r)
{
	if (!r)
		return;
	dbcron__free(r->name);
	dbcron__free(r->owner);
	memset(r, 0, sizeof(*r));
}

void store_node_row_clear(store_node_row *r)
{
	if (!r)
		return;
	dbcron__free(r->node_id);
	dbcron__free(r->host);
	dbcron__free(r->state);
	memset(r, 0, sizeof(*r));
}

/* ---- the operations ---- */

int store_migrate(store *s, int *from, int *to, dbcron_err *err)
{
	return s->ops->migrate(s, from, to, err);
}

int store_check_schema(store *s, dbcron_err *err)
{
	return s->ops->check_schema(s, err);
}

int store_now_ms(store *s, int64_t *out, dbcron_err *err)
{
	return s->ops->now_ms(s, out, err);
}

int store_job_put(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune, size_t *created, size_t *updated, size_t *deleted, dbcron_err *err)
{
	return s->ops->job_put(s, jobs, n, mode, prune, created, updated, deleted, err);
}

int store_job_get(store *s, const char *name, dbcron_job *out, dbcron_err *err)
{
	return s->ops->job_get(s, name, out, err);
}

int store_job_list(store *s, store_job_cb cb, void *ctx, dbcron_err *err)
{
	return s->ops->job_list(s, cb, ctx, err);
}

int store_job_set_paused(store *s, const char *name, bool paused, int64_t next_fire_at, dbcron_err *err)
{
	return s->ops->job_set_paused(s, name, paused, next_fire_at, err);
}

int store_job_delete(store *s, const char *name, dbcron_err *err)
{
	return s->ops->job_delete(s, name, err);
}

int store_job_trigger(store *s, const char *name, int64_t *run_id, int64_t *fire_at, dbcron_err *err)
{
	return s->ops->job_trigger(s, name, run_id, fire_at, err);
}

int store_node_register(store *s, const store_node_info *n, dbcron_err *err)
{
	return s->ops->node_register(s, n, err);
}

int store_node_heartbeat(store *s, const char *node_id, const char *incarnation, int64_t lease_ms, int64_t *db_now, dbcron_err *err)
{
	return s->ops->node_heartbeat(s, node_id, incarnation, lease_ms, db_now, err);
}

int store_node_stop(store *s, const char *node_id, const char *incarnation, dbcron_err *err)
{
	return s->ops->node_stop(s, node_id, incarnation, err);
}

int store_runs_release(store *s, const char *node_id, const int64_t *ids, const char *const *tokens, size_t n, dbcron_err *err)
{
	return s->ops->runs_release(s, node_id, ids, tokens, n, err);
}

int store_reap(store *s, size_t *reaped, dbcron_err *err)
{
	return s->ops->reap(s, reaped, err);
}

int store_claim(store *s, const store_claim_req *req, store_claim_result *out, dbcron_err *err)
{
	return s->ops->claim(s, req, out, err);
}

int store_apply(store *s, const char *node_id, store_update *ups, size_t n, dbcron_err *err)
{
	return s->ops->apply(s, node_id, ups, n, err);
}

int store_job_running(store *s, int64_t job_id, int64_t except_run_id, bool *running, dbcron_err *err)
{
	return s->ops->job_running(s, job_id, except_run_id, running, err);
}

int store_runs_list(store *s, const store_run_filter *f, store_run_cb cb, void *ctx, dbcron_err *err)
{
	return s->ops->runs_list(s, f, cb, ctx, err);
}

int store_nodes_list(store *s, store_node_cb cb, void *ctx, dbcron_err *err)
{
	return s->ops->nodes_list(s, cb, ctx, err);
}

int store_lock_acquire(store *s, const char *name, const char *owner, int64_t ttl_ms, int64_t *fence, int64_t *until_ms, store_lock_row *holder, dbcron_err *err)
{
	return s->ops->lock_acquire(s, name, owner, ttl_ms, fence, until_ms, holder, err);
}

int store_lock_renew(store *s, const char *name, const char *owner, int64_t fence, int64_t ttl_ms, int64_t *until_ms, dbcron_err *err)
{
	return s->ops->lock_renew(s, name, owner, fence, ttl_ms, until_ms, err);
}

int store_lock_release(store *s, const char *name, const char *owner, int64_t fence, dbcron_err *err)
{
	return s->ops->lock_release(s, name, owner, fence, err);
}

int store_lock_list(store *s, store_lock_cb cb, void *ctx, dbcron_err *err)
{
	return s->ops->lock_list(s, cb, ctx, err);
}

int store_log_run(store *s, const dbcron_run *run, dbcron_err *err)
{
	return s->ops->log_run(s, run, err);
}

int store_prune_runs(store *s, int64_t cutoff_ms, int64_t *deleted, dbcron_err *err)
{
	return s->ops->prune_runs(s, cutoff_ms, deleted, err);
}

const char *store_name(const store *s)
{
	return s->ops->name;
}
