/*
 * Exclusion calendars (issue 28 item 7): named sets of days, each a row of
 * the calendars table with its days as sorted "YYYY-MM-DD" lines.  A
 * calendar never changes once added, so the copy of its days a job is
 * given when it is written (app/apply.c, jobs.exclude_days) stays true;
 * one that a job excludes cannot be deleted.  Adds and deletes are in
 * the audit trail, in their own transaction.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "store/store_int.h"

/* The trail's row of a calendar's add (its days counted) or delete, in
 * the change's transaction. */
static int audit_calendar(store *s, const char *action, const char *name, const char *days,
			  dbcron_err *err)
{
	store_audit a;
	int64_t ndays = 0;
	for (const char *d = days; d && *d; d++)
		ndays += *d == '\n' || (d[1] == '\0');
	store__audit_begin(s, &a);
	store__audit_add(&a, action, NULL,
			 days ? json_pack("{s:s, s:I}", "calendar", name, "days", (json_int_t)ndays)
			      : json_pack("{s:s}", "calendar", name));
	int rc = store__audit_write(s, &a, NULL, err);
	store__audit_free(&a);
	return rc;
}

int store_calendar_add(store *s, const char *name, const char *days, dbcron_err *err)
{
	int64_t now, n = 0;
	int rc;
	if (!name || !days)
		return dbcron_err_set(err, DBCRON_EINVAL, "calendar_add: a name and days are required");
	if ((rc = store__tx_begin(s, err)))
		return rc;
	store_param p[] = {sp_text(name), sp_text(days), sp_i64(0)};
	if ((rc = store__db_now(s, &now, err)))
		goto out_rollback;
	p[2] = sp_i64(now);
	if ((rc = store__run(s, ST_CALENDAR_INSERT, p, 3, &n, err)))
		goto out_rollback;
	if (n == 0) {
		rc = dbcron_err_set(err, DBCRON_EEXISTS,
				    "calendar '%s' already exists (delete it first to change it)", name);
		goto out_rollback;
	}
	if ((rc = audit_calendar(s, "calendar-add", name, days, err)) ||
	    (rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	return rc;
}

static int calendar_row(store *s, store_calendar *c, dbcron_err *err)
{
	const char *name = s->d->col_text(s->c, 0), *days = s->d->col_text(s->c, 1);
	memset(c, 0, sizeof(*c));
	c->created_ms = store__i64(s, 2);
	if (!(c->name = dbcron__strdup(name ? name : "")) ||
	    !(c->days = dbcron__strdup(days ? days : ""))) {
		store_calendar_clear(c);
		return store__oom(err, "calendars");
	}
	return DBCRON_OK;
}

void store_calendar_clear(store_calendar *c)
{
	dbcron__free(c->name);
	dbcron__free(c->days);
	memset(c, 0, sizeof(*c));
}

int store_calendar_get(store *s, const char *name, store_calendar *out, dbcron_err *err)
{
	store_param p[] = {sp_text(name)};
	memset(out, 0, sizeof(*out));
	int row = store__row(s, ST_CALENDAR_GET, p, 1, err);
	if (row < 0)
		return -row;
	if (row == 0)
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "no calendar named '%s'", name);
	int rc = calendar_row(s, out, err);
	store__reset(s);
	return rc;
}

struct calendar_each {
	store_calendar_cb cb;
	void *ctx;
};

static int calendar_one(store *s, void *arg, bool *stop, dbcron_err *err)
{
	struct calendar_each *e = arg;
	store_calendar c;
	int rc = calendar_row(s, &c, err);
	if (rc)
		return rc;
	*stop = e->cb(e->ctx, &c) != 0;
	store_calendar_clear(&c);
	return DBCRON_OK;
}

int store_calendar_list(store *s, store_calendar_cb cb, void *ctx, dbcron_err *err)
{
	struct calendar_each e = {cb, ctx};
	return store__each_row(s, ST_CALENDAR_LIST, NULL, 0, calendar_one, &e, err);
}

struct users {
	char *buf;
	size_t len, n;
};

static int user_add(void *ctx, const char *name)
{
	struct users *u = ctx;
	size_t used = strlen(u->buf);
	if (u->n++ < 10 && used + strlen(name) + 3 < u->len)
		snprintf(u->buf + used, u->len - used, "%s%s", used ? ", " : "", name);
	return 0;
}

int store_calendar_delete(store *s, const char *name, dbcron_err *err)
{
	char names[400] = "";
	struct users u = {names, sizeof(names), 0};
	int64_t n = 0;
	int rc;
	store_param p[] = {sp_text(name)};
	if ((rc = store__tx_begin(s, err)))
		return rc;
	/* a job that excludes it keeps it: refused, naming them */
	if ((rc = store__each_name(s, ST_CALENDAR_USERS, p, 1, user_add, &u, err)))
		goto out_rollback;
	if (u.n) {
		rc = dbcron_err_set(err, DBCRON_ECONSTRAINT,
				    "calendar '%s' is excluded by %s%s: change their "
				    "--exclude-calendar first",
				    name, names, u.n > 10 ? " and others" : "");
		goto out_rollback;
	}
	if ((rc = store__run(s, ST_CALENDAR_DELETE, p, 1, &n, err)))
		goto out_rollback;
	if (n == 0) {
		rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "no calendar named '%s'", name);
		goto out_rollback;
	}
	if ((rc = audit_calendar(s, "calendar-delete", name, NULL, err)) ||
	    (rc = store__tx_commit(s, err)))
		goto out_rollback;
	return DBCRON_OK;
out_rollback:
	store__tx_rollback(s);
	return rc;
}
