/*
 * The database's own things as every front end reaches them: its clock,
 * its schema, the node registry, the lease locks and the run-log rows of
 * `dbcron lock`.  Each is one store call: they live here so that a front
 * end has one road to the store (src/app/) and never calls it itself,
 * which keeps the store's interface free to change behind this file.
 * Rows are handed out typed, as the store reads them; JSON is the front
 * end's codec (app_node_json, app_lock_json).
 */
#include "app/app.h"
#include "store/dialect.h"

int app_now_ms(store *s, int64_t *now, dbcron_err *err)
{
	return store_now_ms(s, now, err);
}

const char *app_db_file(const store *s)
{
	return store_file(s);
}

int app_migrate(store *s, int *from, int *to, dbcron_err *err)
{
	return store_migrate(s, from, to, err);
}

size_t app_mask_url(const char *url, char *buf, size_t len)
{
	return store_mask_url(url, buf, len);
}

int app_nodes_each(store *s, store_node_cb cb, void *ctx, dbcron_err *err)
{
	return store_nodes_list(s, cb, ctx, err);
}

int app_nodes_prune(store *s, int64_t older_ms, int64_t *deleted, dbcron_err *err)
{
	return store_nodes_prune(s, older_ms, deleted, err);
}

int app_locks_each(store *s, store_lock_cb cb, void *ctx, dbcron_err *err)
{
	return store_lock_list(s, cb, ctx, err);
}

int app_log_run(store *s, const dbcron_run *run, dbcron_err *err)
{
	return store_log_run(s, run, err);
}
