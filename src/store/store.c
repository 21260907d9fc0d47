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
