/*
 * Job put: the definitions of many jobs written in one transaction (`job
 * add`, `job apply`, the library's and HTTP's writes), in chunks of
 * PUT_CHUNK rows, with the rule that keeps a schedule's place.  The one
 * file that writes a job's columns (put_cols, put_row, both from the field
 * table) and skips the rows the one change rule (model_job_diff) finds
 * unchanged.
 *
 * Invariants: all or nothing, whatever the number of chunks; a constant
 * number of statements per chunk, never one per job; re-applying an
 * unchanged schedule neither moves nor repeats a fire (the existing row is
 * read locked, so what is kept is never an older value); an unchanged row
 * is not rewritten; a name given twice in one batch is refused; a put that
 * loses a deadlock is rolled back whole and tried again, never half-kept.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/sort.h"
#include "core/timeutil.h"
#include "model/fields.h"
#include "model/rules.h"
#include "store/store_int.h"

/* Rows per job_put statement: 100,000 jobs are 20 statements and one
 * parameter stays a few MiB. */
#define PUT_CHUNK 5000

/* The batch column type of each storage kind, and the put batch's
 * columns: id (JOBS_UPDATE only), then the put rows of the field table. */
#define BCOL_TEXT BC_TEXT
#define BCOL_HANDLER BC_TEXT
#define BCOL_ARGV BC_TEXT
#define BCOL_ENV BC_TEXT
#define BCOL_INT BC_I64
#define BCOL_INTN BC_I64
#define BCOL_I64 BC_I64
#define BCOL_I64N BC_I64
#define BCOL_BOOL BC_BOOL
#define PUT_BCOL_NAME(t) t,
#define PUT_BCOL_DEF(t) t,
#define PUT_BCOL_STATE(t) t,
#define PUT_BCOL_PLACE(t) t,
#define PUT_BCOL_STORE(t)
#define PUT_BCOL(m, col, st, key, codec, args, scope, role, dflt, help) PUT_BCOL_##role(BCOL_##st)

static const store_bcol put_cols[STORE_NPUTCOLS + 1] = {
	BC_I64,
	DBCRON_JOB_FIELDS(PUT_BCOL)
};

/* A job's arrays in their stored form (rows.c's codec), owned. */
typedef struct put_enc {
	char *argv;
	char *env;
} put_enc;

static int put_encode(const dbcron_job *j, put_enc *e, dbcron_err *err)
{
	int rc = store__argv_encode(j, &e->argv, err);
	return rc ? rc : store__env_encode(j, &e->env, err);
}

static void put_enc_free(put_enc *e)
{
	dbcron__free(e->argv);
	dbcron__free(e->env);
	e->argv = e->env = NULL;
}

/* The put columns of one job, in the order of put_cols. */
static void put_row(store_batch *b, const dbcron_job *j, const put_enc *e)
{
	for (int i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		const void *p = model_field_cptr(j, f);
		if (f->role == MODEL_ROLE_STORE)
			continue; /* written by the store alone */
		switch (f->store) {
		case MODEL_FS_TEXT:
			store_batch_text(b, *(char *const *)p);
			break;
		case MODEL_FS_HANDLER:
			store_batch_text(b, j->executor == DBCRON_EXEC_HANDLER ? *(char *const *)p
									: NULL);
			break;
		case MODEL_FS_ARGV:
			store_batch_text(b, e->argv);
			break;
		case MODEL_FS_ENV:
			store_batch_text(b, e->env);
			break;
		case MODEL_FS_INT:
			store_batch_i64(b, *(const int *)p);
			break;
		case MODEL_FS_INTN:
			store_batch_i64n(b, *(const int *)p);
			break;
		case MODEL_FS_I64:
			store_batch_i64(b, *(const int64_t *)p);
			break;
		case MODEL_FS_I64N:
			store_batch_i64n(b, *(const int64_t *)p);
			break;
		case MODEL_FS_BOOL:
			store_batch_bool(b, *(const bool *)p);
			break;
		}
	}
}

static int job_name_cmp(const void *a, const void *b)
{
	const dbcron_job *x = a, *y = b;
	return strcmp(x->name, y->name);
}

struct name_idx {
	const char *name;
	size_t i;
};

static int name_idx_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_idx *)a)->name, ((const struct name_idx *)b)->name);
}

/* The existing rows of the chunk's names, sorted by name. */
static int read_existing(store *s, dbcron_job *jobs, size_t n, dbcron_job **out,
			 size_t *nout, dbcron_err *err)
{
	store_batch *names = store__scratch(s, 0, 1, store__names_cols);
	size_t cap = 0;
	int rc, row;

	*out = NULL;
	*nout = 0;
	for (size_t i = 0; i < n; i++)
		store_batch_text(names, jobs[i].name);
	if (names->oom)
		return store__oom(err, "job put");
	store_param p[] = {sp_batch(names)};
	if ((rc = store__exec(s, ST_JOBS_BY_NAMES, p, 1, err)))
		return rc;
	while ((row = store__next(s, err)) == 1) {
		if (dbcron__grow((void **)out, &cap, *nout + 1, sizeof(**out))) {
			rc = store__oom(err, "job put");
			break;
		}
		if ((rc = store__read_job_lenient(s, &(*out)[*nout], err)))
			break;
		(*nout)++;
	}
	store__reset(s);
	if (row < 0)
		rc = -row;
	if (!rc)
		dbcron__sort(*out, *nout, sizeof(**out), job_name_cmp);
	return rc;
}

/* What one job_put carries through its chunks. */
typedef struct put_ctx {
	store_put_mode mode;
	store_put_place_fn place; /* NULL: the store's keep rule */
	void *place_ctx;
	size_t at;   /* the chunk's first index in the caller's jobs */
	bool paused; /* a job went from active to paused */
	bool needs;  /* a NEEDS job written, or one that was (needs.c) */
	store_audit audit; /* a row per job added or changed (audit.c) */
	const char *verb;  /* the rows' action */
} put_ctx;

/* A job a prune is about to delete: its row in the trail, every key to
 * nothing, as a deleted job's (read before the DELETE: not every dialect
 * returns what it deleted). */
static int pruned_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	put_ctx *pc = arg;
	dbcron_job job;
	int rc = store__read_job_lenient(s, &job, err);
	if (rc)
		return rc;
	*stop = false;
	store__audit_job(&pc->audit, pc->verb, job.name, &job, NULL,
			 json_pack("{sb}", "pruned", 1));
	dbcron_job_clear(&job);
	return DBCRON_OK;
}

/* Insert the chunk's new jobs (ins; their names and indexes in order) and
 * give each its id and created_ms. */
static int put_insert(store *s, dbcron_job *jobs, store_batch *ins, struct name_idx *order,
		      size_t nins, int64_t now, dbcron_err *err)
{
	int rc, row;
	/* Ids come back with their names: match them by name. */
	dbcron__sort(order, nins, sizeof(*order), name_idx_cmp);
	store_param p[] = {sp_i64(now), sp_batch(ins)};
	if ((rc = store__exec(s, ST_JOBS_INSERT, p, 2, err)))
		return rc;
	size_t got = 0;
	while ((row = store__next(s, err)) == 1) {
		const char *name = s->d->col_text(s->c, 1);
		size_t lo = 0, hi = nins;
		while (name && lo < hi) {
			size_t mid = (lo + hi) / 2;
			int c = strcmp(order[mid].name, name);
			if (c == 0) {
				jobs[order[mid].i].id = store__i64(s, 0);
				jobs[order[mid].i].created_ms = now;
				got++;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	store__reset(s);
	if (row < 0)
		return -row;
	if (got != nins)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "%s: %zu of %zu ids came back",
				      store_stmt_what(ST_JOBS_INSERT), got, nins);
	return DBCRON_OK;
}

/* One chunk of job_put: existing rows in one locked read, then one insert
 * of the new jobs and one update of the changed ones. */
static int put_chunk(store *s, dbcron_job *jobs, const put_enc *enc, size_t n, int64_t now,
		     put_ctx *pc, size_t *nc, size_t *nu, dbcron_err *err)
{
	store_put_mode mode = pc->mode;
	dbcron_job *old = NULL;
	size_t nold = 0, nins = 0;
	struct name_idx *order = NULL;
	int rc;

	if ((rc = read_existing(s, jobs, n, &old, &nold, err)))
		goto out_free;
	store_batch *ins = store__scratch(s, 1, STORE_NPUTCOLS, put_cols + 1);
	store_batch *upd = store__scratch(s, 2, STORE_NPUTCOLS + 1, put_cols);
	order = dbcron__calloc(n ? n : 1, sizeof(*order));
	if (!order) {
		rc = store__oom(err, "job put");
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		dbcron_job *j = &jobs[i];
		dbcron_job *prev = nold ? bsearch(j, old, nold, sizeof(*old), job_name_cmp) : NULL;
		pc->needs |= j->kind == DBCRON_SCHED_NEEDS || (prev && prev->kind == DBCRON_SCHED_NEEDS);
		if (!prev && pc->place &&
		    (rc = pc->place(pc->place_ctx, pc->at + i, j, NULL, now, err)))
			goto out_free;
		if (!prev) {
			store__audit_job(&pc->audit, pc->verb, j->name, NULL, j, NULL);
			put_row(ins, j, &enc[i]);
			order[nins++] = (struct name_idx){j->name, i};
			continue;
		}
		if (mode == STORE_PUT_CREATE) {
			rc = dbcron_err_set(err, DBCRON_EEXISTS, "job '%s' already exists", j->name);
			goto out_free;
		}
		/* Re-applying a file must not move or repeat fires: an unchanged
		 * schedule keeps its place.  A set-aside job has no place to
		 * keep: it starts afresh.  prev is the row as it is now (read
		 * locked), so what is kept is never an older value. */
		if (!prev->set_aside && model_same_schedule(j, prev)) {
			j->next_fire_at = prev->next_fire_at;
			j->anchor_ms = prev->anchor_ms;
			j->at_ms = prev->at_ms;
		}
		if (!pc->place)
			j->paused = prev->paused;
		else if ((rc = pc->place(pc->place_ctx, pc->at + i, j, prev, now, err)))
			goto out_free;
		pc->paused |= j->paused && !prev->paused;
		j->id = prev->id;
		j->created_ms = prev->created_ms;
		(*nu)++;
		/* Unchanged rows are not rewritten: applying a 100,000-job file
		 * again leaves no dead rows behind.  The one rule of what a
		 * change is (model_job_diff), with the schedule's place too. */
		if (!prev->set_aside &&
		    model_job_diff(j, prev, MODEL_ROLE_DEF | MODEL_ROLE_STATE | MODEL_ROLE_PLACE,
				   NULL, NULL) == 0)
			continue;
		/* the trail says what a user changed: a schedule's place moved
		 * by the rules alone is no change of theirs */
		if (prev->set_aside ||
		    model_job_diff(j, prev, MODEL_ROLE_DEF | MODEL_ROLE_STATE, NULL, NULL))
			store__audit_job(&pc->audit, pc->verb, j->name, prev, j, NULL);
		store_batch_i64(upd, j->id);
		put_row(upd, j, &enc[i]);
	}
	if (ins->oom || upd->oom) {
		rc = store__oom(err, "job put");
		goto out_free;
	}
	if (store_batch_rows(upd)) {
		store_param p[] = {sp_i64(now), sp_batch(upd)};
		if ((rc = store__run(s, ST_JOBS_UPDATE, p, 2, NULL, err)))
			goto out_free;
	}
	if (nins) {
		if ((rc = put_insert(s, jobs, ins, order, nins, now, err)))
			goto out_free;
		*nc += nins;
	}
	for (size_t i = 0; i < n; i++)
		jobs[i].updated_ms = now;
out_free:
	for (size_t i = 0; i < nold; i++)
		dbcron_job_clear(&old[i]);
	dbcron__free(old);
	dbcron__free(order);
	return rc;
}

static int ptr_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name twice in one batch would make "the" job ambiguous. */
static int check_names(dbcron_job *jobs, size_t n, dbcron_err *err)
{
	const char **names = dbcron__calloc(n ? n : 1, sizeof(*names));
	int rc = DBCRON_OK;
	if (!names)
		return store__oom(err, "job put");
	for (size_t i = 0; i < n; i++)
		names[i] = jobs[i].name;
	dbcron__sort(names, n, sizeof(*names), ptr_name_cmp);
	for (size_t i = 1; i < n; i++)
		if (strcmp(names[i], names[i - 1]) == 0) {
			rc = dbcron_err_set(err, DBCRON_EINVAL, "job '%s' is given twice", names[i]);
			break;
		}
	dbcron__free(names);
	return rc;
}

int store_job_put(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune,
		  size_t *created, size_t *updated, size_t *deleted, dbcron_err *err)
{
	return store_job_put_placed(s, jobs, n, mode, prune, NULL, NULL, created, updated,
				    deleted, err);
}

/* One try of a put: its transaction, begun and committed or rolled back
 * here.  pc arrives fresh (its flags and audit rows are this try's); the
 * counts are written only when it commits. */
static int put_tx(store *s, dbcron_job *jobs, put_enc *enc, size_t n, bool prune,
		  put_ctx *pc, store_put_caps *caps, size_t *created, size_t *updated,
		  size_t *deleted, dbcron_err *err)
{
	size_t nc = 0, nu = 0;
	int64_t nd = 0, now;
	int rc;

	store__audit_begin(s, &pc->audit);
	if ((rc = store__tx_begin(s, err)))
		goto out_free;
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	for (size_t at = 0; at < n; at += PUT_CHUNK) {
		size_t k = n - at < PUT_CHUNK ? n - at : PUT_CHUNK;
		pc->at = at;
		if ((rc = put_chunk(s, jobs + at, enc + at, k, now, pc, &nc, &nu, err)))
			goto out_rollback;
	}
	/* a pause tells the nodes, as store_job_set_paused does */
	if (pc->paused && (rc = store__run(s, ST_GEN_BUMP, NULL, 0, NULL, err)))
		goto out_rollback;
	if (prune) {
		store_batch *names = store__scratch(s, 0, 1, store__names_cols);
		for (size_t i = 0; i < n; i++)
			store_batch_text(names, jobs[i].name);
		if (names->oom) {
			rc = store__oom(err, "job put");
			goto out_rollback;
		}
		store_param p[] = {sp_batch(names)};
		store_param pn[] = {sp_i64(now)};
		if ((rc = store__each_row(s, ST_JOBS_PRUNED, p, 1, pruned_one, pc, err)) ||
		    (rc = store__run(s, ST_JOBS_PRUNE, p, 1, &nd, err)) ||
		    (nd && (rc = store__run(s, ST_RUNS_CLOSE_ORPHANS, pn, 1, NULL, err))) ||
		    (nd && (rc = store__run(s, ST_GEN_BUMP, NULL, 0, NULL, err))))
			goto out_rollback;
	}
	/* the fan-in edges of what was written and pruned (needs.c); a
	 * write without NEEDS jobs, before or after, has none to follow */
	if (((pc->needs || nd) && (rc = store__needs_put(s, jobs, n, err))) ||
	    (caps && (rc = store__caps_put(s, &pc->audit, caps, err))) ||
	    (rc = store__audit_write(s, &pc->audit, NULL, err)) || (rc = store__tx_commit(s, err)))
		goto out_rollback;
	if (created)
		*created = nc;
	if (updated)
		*updated = nu;
	if (deleted)
		*deleted = (size_t)nd;
	goto out_free;
out_rollback:
	store__tx_rollback(s);
	if (caps)
		caps->set = caps->deleted = 0;
out_free:
	store__audit_free(&pc->audit);
	return rc;
}

int store_job_put_placed(store *s, dbcron_job *jobs, size_t n, store_put_mode mode, bool prune,
			 store_put_place_fn place, void *place_ctx, size_t *created,
			 size_t *updated, size_t *deleted, dbcron_err *err)
{
	const char *verb = s->put_verb ? s->put_verb : "put";
	store_put_caps *caps = s->put_caps;
	s->put_verb = NULL; /* this put's alone: never a later caller's */
	s->put_caps = NULL;
	put_enc *enc = NULL;
	int rc;

	if (created)
		*created = 0;
	if (updated)
		*updated = 0;
	if (deleted)
		*deleted = 0;
	if (mode != STORE_PUT_CREATE && mode != STORE_PUT_UPSERT)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_put: bad mode %d", (int)mode);
	if (prune && mode != STORE_PUT_UPSERT)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_put: prune needs upsert mode");
	if (n && !jobs)
		return dbcron_err_set(err, DBCRON_EINVAL, "job_put: no jobs");
	for (size_t i = 0; i < n; i++)
		if (!jobs[i].name || !*jobs[i].name || !jobs[i].spec)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job_put: job %zu has no name or schedule", i + 1);
	if ((rc = check_names(jobs, n, err)))
		return rc;
	enc = dbcron__calloc(n ? n : 1, sizeof(*enc));
	if (!enc)
		return store__oom(err, "job put");
	for (size_t i = 0; i < n; i++)
		if ((rc = put_encode(&jobs[i], &enc[i], err)))
			goto out_free;
	/* A write that lost a deadlock to a node's claim (MariaDB) was rolled
	 * back whole: it is tried again, reading the stored rows afresh, as an
	 * operator's pause or rename is (dbcron__busy_again). */
	int tries = 0;
	do {
		put_ctx pc = {.mode = mode, .place = place, .place_ctx = place_ctx, .verb = verb};
		rc = put_tx(s, jobs, enc, n, prune, &pc, caps, created, updated, deleted, err);
	} while (dbcron__busy_again(rc, &tries));
out_free:
	for (size_t i = 0; i < n; i++)
		put_enc_free(&enc[i]);
	dbcron__free(enc);
	return rc;
}
