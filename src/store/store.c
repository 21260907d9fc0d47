/*
 * The store handle: the table of dialects and the one a URL picks, opening
 * and closing a handle (its connection, reused batches and fault list), the
 * schema check and migration, and freeing what the store hands out.  The
 * operations themselves are in the files named in store_int.h.
 *
 * Invariants: a handle opens only over a dialect of this build's table
 * version that has RETURNING (the protocol reads claimed rows back from
 * it); no statement runs on a database whose schema is not this binary's
 * (store_check_schema), and the schema is only ever moved forward.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "store/store_int.h"

static const store_dialect *const dialects[] = {
	&store_sqlite_dialect,
	&store_pg_dialect,
	&store_mysql_dialect,
};

int store_open(const char *url, store **out, dbcron_err *err)
{
	return store_open_flags(url, 0, out, err);
}

int store_open_flags(const char *url, unsigned flags, store **out, dbcron_err *err)
{
	char shown[256];
	const store_dialect *d = NULL;
	store *s = NULL;
	int rc;

	*out = NULL;
	if (!url || !*url)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "empty database URL (use sqlite:PATH or postgresql://...)");
	for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]) && !d; i++)
		if (dialects[i]->accepts(url))
			d = dialects[i];
	if (!d) {
		store_mask_url(url, shown, sizeof(shown));
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "unsupported database URL '%s' (use sqlite:PATH or postgresql://...)",
				      shown);
	}
	/* The protocol reads claimed rows back from RETURNING; a dialect
	 * without it needs the read-back-by-token path first. */
	if (d->version != STORE_DIALECT_VERSION || !(d->caps & STORE_CAP_RETURNING))
		return dbcron_err_set(err, DBCRON_EUNSUPPORTED,
				      "database dialect %s is not supported by this build", d->name);
	s = dbcron__calloc(1, sizeof(*s));
	if (!s || !(s->scratch = dbcron__calloc(1, sizeof(*s->scratch)))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening the database");
		goto out_close;
	}
	s->d = d;
	if ((rc = d->open(url, flags, &s->c, err)))
		goto out_close;
	const char *spec = store_fault_env();
	if (spec && (rc = store_fault_add_spec(s, spec, err)))
		goto out_close;
	*out = s;
	return DBCRON_OK;
out_close:
	store_close(s);
	return rc;
}

void store_close(store *s)
{
	if (!s)
		return;
	if (s->c)
		s->d->close(s->c);
	if (s->scratch) {
		for (size_t i = 0; i < sizeof(s->scratch->b) / sizeof(s->scratch->b[0]); i++)
			store_batch_free(&s->scratch->b[i]);
		for (size_t i = 0; i < STORE_CLEAN_PARAMS; i++)
			store_text_free(&s->scratch->clean[i]);
	}
	dbcron__free(s->scratch);
	store_fault_clear(s);
	dbcron__free(s);
}

const char *store_name(const store *s)
{
	return s->d->name;
}

const char *store_file(const store *s)
{
	return s->d->file ? s->d->file(s->c) : NULL;
}

unsigned long store_reconnects(const store *s)
{
	return s->d->reconnects ? s->d->reconnects(s->c) : 0;
}

int store_migrate(store *s, int *from, int *to, dbcron_err *err)
{
	int f = 0, rc;
	store__reset(s);
	if (s->faults && (rc = store__fault_before(s, ST_SCHEMA, err)))
		return rc;
	rc = s->d->migrate(s->c, &f, err);
	if (from)
		*from = f;
	if (!rc && to)
		*to = s->d->schema_version;
	return rc;
}

int store_check_schema(store *s, dbcron_err *err)
{
	const char *url = s->d->display(s->c);
	int v = 0, mine = s->d->schema_version, rc;
	store__reset(s);
	if (s->faults && (rc = store__fault_before(s, ST_SCHEMA, err)))
		return rc;
	rc = s->d->schema_read(s->c, &v, err);
	if (rc)
		return rc;
	if (v == 0)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database has no dbcron schema; run `dbcron init --db %s`", url);
	if (v > mine)
		return store_schema_newer(err, url, v, mine);
	if (v < mine)
		return dbcron_err_set(err, DBCRON_ESCHEMA,
				      "database %s has schema version %d, older than this binary's %d; "
				      "run `dbcron init --db %s`",
				      url, v, mine, url);
	return DBCRON_OK;
}

int store_now_ms(store *s, int64_t *out, dbcron_err *err)
{
	return store__db_now(s, out, err);
}

void store_claim_result_clear(store_claim_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nruns; i++)
		dbcron_run_clear(&r->runs[i].run);
	for (size_t i = 0; i < r->njobs; i++)
		dbcron_job_clear(&r->jobs[i]);
	for (size_t i = 0; i < r->naside; i++) {
		dbcron__free(r->aside[i].name);
		dbcron__free(r->aside[i].why);
	}
	dbcron__free(r->runs);
	dbcron__free(r->jobs);
	dbcron__free(r->aside);
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
