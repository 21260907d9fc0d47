/*
 * What the files of src/app/ share and no front end sees: apply's two
 * steps (app_apply is the front ends' one call), the job vector's
 * collector and order (a stored-jobs callback and strcmp by name, so a
 * lookup by bsearch agrees with the sort), and the wait for the nodes that
 * pause, delete and a pruning apply make before they return.
 */
#ifndef DBCRON_APP_INT_H
#define DBCRON_APP_INT_H

#include "app/app.h"

typedef app_job_vec job_vec;

/* store_job_cb: a copy of job appended to ctx (a job_vec); on out of
 * memory sets jv->rc and stops the walk. */
int app__collect_job(void *ctx, const dbcron_job *job);
/* qsort/bsearch order of dbcron_job by name (strcmp). */
int app__cmp_job_name(const void *a, const void *b);
/* Waits (at most 10 s) for every live node to see the last change; when
 * one did not confirm, says why in warning (wlen bytes), else leaves it. */
void app__wait_nodes(store *s, char *warning, size_t wlen);

/*
 * A batch of job definitions being applied, in two steps so that
 * app_apply can refuse bad input before it opens a database, and job set
 * can write one definition it built itself: app_apply_check (no store:
 * every entry alone, then names unique) and app_apply_write (resolve
 * against the database's clock and the stored jobs, then one
 * transaction).  Owns its definitions; app_batch_clear frees them.
 */
typedef struct app_batch {
	struct model_jobdef *defs;
	size_t n;
	/* the document's caps (opts tags; names borrowed from it) */
	store_tag_cap *caps;
	size_t ncaps;
	bool has_caps;
} app_batch;

/* Entry i of a batch src (borrowed) into d (initialised, cli false); its
 * name, when it has one, into *name (borrowed from src, else NULL). */
typedef int (*app_entry_read_fn)(const void *src, size_t i, struct model_jobdef *d,
				 const char **name, dbcron_err *err);

/*
 * Entries 0..n of src, each read by read.  Each refused entry is
 * reported through on_err and counted in r->nerr; then the return is
 * DBCRON_EINVAL with err saying how many, and nothing may be written.
 * DBCRON_ENOMEM otherwise.  b is filled either way (app_batch_clear).
 */
int app_apply_check(app_entry_read_fn read, const void *src, size_t n,
		    const app_apply_opts *o, app_entry_err_fn on_err, void *ctx,
		    app_batch *b, app_apply_result *r, dbcron_err *err);
/*
 * Resolve and write a checked batch: entries refused now (against the
 * clock or a stored job) are reported as above, and nothing is written.
 * A dry run stops before writing and sets r->diff (the caller's).  After
 * a prune that deleted jobs it waits for the nodes as app_job_delete does
 * (warning, when set, says which did not confirm).  The batch is consumed.
 */
int app_apply_write(store *s, app_batch *b, const app_apply_opts *o,
		    app_entry_err_fn on_err, void *ctx, app_apply_result *r,
		    char *warning, size_t wlen, dbcron_err *err);
void app_batch_clear(app_batch *b);

/*
 * The seeds of H and --spread (app/spread.c), before the definitions are
 * resolved: a given seed is kept, a stored job's (prevs, sorted by name,
 * may be NULL) is kept while its schedule is the same, and a job whose
 * schedule has H or --spread and no seed gets the least-used one of its
 * schedule, counted over the stored jobs (one read) and the batch.
 */
int app__spread_seeds(store *s, struct model_jobdef *defs, size_t n, const job_vec *prevs,
		      dbcron_err *err);
/* Every job:NAME reaction target of defs[0..n) names a job of the batch
 * or a stored one (react.c); else *bad is the entry at fault and err says
 * which key and which target.  DBCRON_EINVAL, or the store's error. */
/* Each def's --exclude-calendar resolved: its days copied into
 * job.exclude_days (NULL without one).  DBCRON_EINVAL with *bad the
 * entry's index for an unknown calendar (app/calendar.c). */
int app__resolve_calendars(store *s, struct model_jobdef *defs, size_t n, size_t *bad,
			   dbcron_err *err);
/* A document's "tags" (NULL: none) checked into *out (n caps; the names
 * borrowed from tags; the caller frees *out): each {"name", "max_running"}
 * (the listing's "running" and "jobs" ignored), no name twice. */
int app__caps_read(const json_t *tags, store_tag_cap **out, size_t *n, dbcron_err *err);
/* A dry run's {"set": [{"name", "before", "after"}], "delete": [names],
 * "unchanged": [names]} of the caps v[0..n) against the stored ones; NULL
 * on an error (err). */
/* For a dry run (a write checks it in its transaction, store caps.c):
 * each cap of b on a tag some job carries: one of b's, or (without
 * prune, which leaves only b's) a stored one; DBCRON_EINVAL naming it. */
int app__caps_known(store *s, const app_batch *b, bool prune, dbcron_err *err);
json_t *app__caps_diff(store *s, const store_tag_cap *v, size_t n, bool prune, dbcron_err *err);
int app__check_job_targets(store *s, const struct model_jobdef *defs, size_t n, size_t *bad,
			   dbcron_err *err);

#endif
