/*
 * Backfill (issue 28 item 5): one run per fire instant the caller lists,
 * written as unclaimed SCHEDULED runs of kind backfill, due now, which the
 * nodes' claims pick up as they pick up a trigger's.
 *
 * Invariant 1 holds by the runs table's UNIQUE(job_id, fire_at, attempt):
 * an instant that has a first attempt (a fire, a trigger, another
 * backfill's, even one racing in another transaction) gets nothing, so two
 * backfills of one range make each instant once between them.  The cap
 * (--max-running) is written on each row and checked by the claim
 * (STORE_BACKFILL_FITS in stmt.h), never by a lock held across runs.
 */
#include <string.h>

#include "store/store_int.h"

/* Instants per statement: one batch is one JSON text or array, kept well
 * under every dialect's packet and parameter limits. */
#define BACKFILL_CHUNK 1000

static int backfill_taken(store *s, int64_t job_id, const int64_t *at, size_t n, bool *taken,
			  dbcron_err *err)
{
	size_t k = 0; /* at[] ascending, and so are the rows: one merge */
	store_batch *b = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, at[i]);
	if (b->oom)
		return store__oom(err, "backfill");
	store_param p[] = {sp_i64(job_id), sp_batch(b)};
	int rc = store__exec(s, ST_BACKFILL_TAKEN, p, 2, err), row;
	if (rc)
		return rc;
	while ((row = store__next(s, err)) == 1) {
		int64_t t = store__i64(s, 0);
		while (k < n && at[k] < t)
			k++;
		if (k < n && at[k] == t)
			taken[k] = true;
	}
	store__reset(s);
	return row < 0 ? -row : DBCRON_OK;
}

static int backfill_chunk(store *s, int64_t job_id, const char *name, int64_t now,
			  int max_running, const int64_t *at, size_t n, bool dry_run, bool *taken,
			  int64_t *created, dbcron_err *err)
{
	if (dry_run)
		return taken ? backfill_taken(s, job_id, at, n, taken, err) : DBCRON_OK;
	store_batch *b = store__scratch(s, 0, 1, store__ids_cols);
	for (size_t i = 0; i < n; i++)
		store_batch_i64(b, at[i]);
	if (b->oom)
		return store__oom(err, "backfill");
	int64_t made = 0;
	store_param p[] = {sp_i64(job_id), sp_text(name), sp_i64(now),
			   sp_i64n(max_running > 0 ? max_running : -1), sp_batch(b)};
	int rc = store__run(s, ST_BACKFILL_INSERT, p, 5, &made, err);
	*created += made;
	return rc;
}

int store_job_backfill(store *s, const store_backfill_req *q, int64_t *created, bool *taken,
		       dbcron_err *err)
{
	int64_t now, job_id = 0, made = 0;
	store_audit a;
	bool found;
	int rc;
	if (!q || !q->name || (q->n && !q->at))
		return dbcron_err_set(err, DBCRON_EINVAL, "job_backfill: a name and instants are required");
	if (taken)
		memset(taken, 0, q->n * sizeof(*taken));
	store__audit_begin(s, &a);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__db_now(s, &now, err)) ||
	    (rc = store__job_id_of(s, q->name, &job_id, &found, err)))
		goto out_rollback;
	if (!found || (q->job_id > 0 && job_id != q->job_id)) {
		/* gone, or deleted and added again since the caller planned */
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no job named '%s'", q->name);
		goto out_rollback;
	}
	for (size_t i = 0; i < q->n; i += BACKFILL_CHUNK) {
		size_t m = q->n - i < BACKFILL_CHUNK ? q->n - i : BACKFILL_CHUNK;
		if ((rc = backfill_chunk(s, job_id, q->name, now, q->max_running, q->at + i, m,
					 q->dry_run, taken ? taken + i : NULL, &made, err)))
			goto out_rollback;
	}
	if (q->dry_run) {
		store__tx_rollback(s); /* read only */
		goto out_free;
	}
	store__audit_add(&a, "backfill", q->name,
			 json_pack("{sIsIsIsIsI}", "from_ms", (json_int_t)q->from_ms, "to_ms",
				   (json_int_t)q->to_ms, "instants", (json_int_t)q->n, "created",
				   (json_int_t)made, "max_running", (json_int_t)q->max_running));
	if ((rc = store__audit_write(s, &a, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
out_free:
	store__audit_free(&a);
	if (created)
		*created = rc ? 0 : made;
	return rc;
}
