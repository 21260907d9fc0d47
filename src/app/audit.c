/*
 * The audit trail's read side (the rows are written by the store, in the
 * transaction of each change: store/audit.c): one JSON form of a row for
 * `dbcron audit --format json`, GET /api/v1/audit and the dashboard, and
 * the one reading of --since / ?since=.  Owns nothing past a call.
 */
#include <jansson.h>

#include "app/app.h"
#include "core/timeutil.h"

int app_audit_since(const char *text, int64_t now_ms, int64_t *ms, dbcron_err *err)
{
	dbcron_err e = {0};
	int64_t d;
	if (dbcron__parse_time(text, now_ms, ms, &e) == DBCRON_OK)
		return DBCRON_OK;
	/* "1h": that long before now */
	if (dbcron__parse_duration(text, 1, &d, &e) == DBCRON_OK) {
		*ms = now_ms - d;
		return DBCRON_OK;
	}
	return dbcron_err_set(err, DBCRON_EINVAL,
			      "'%.64s' is neither a time (RFC 3339, epoch seconds, now, now+DUR) "
			      "nor a duration back from now (30m, 7d)",
			      text);
}

json_t *app_audit_row_json(const store_audit_row *r)
{
	char at[64];
	json_t *detail = json_loads(r->detail, 0, NULL);
	if (!detail) /* a row no JSON reader wrote: shown as it is */
		detail = json_string(r->detail);
	json_t *o = json_pack("{sIsIsssssssoso}", "id", (json_int_t)r->id, "at_ms",
			      (json_int_t)r->at_ms, "at",
			      dbcron__format_rfc3339(r->at_ms, 0, 1, at, sizeof(at)) ? at : "",
			      "actor", r->actor, "action", r->action, "job",
			      r->job ? json_string(r->job) : json_null(), "detail",
			      detail ? detail : json_null());
	return o;
}

int app_audit_each(store *s, const store_audit_filter *f, store_audit_cb cb, void *ctx,
		   dbcron_err *err)
{
	return store_audit_list(s, f, cb, ctx, err);
}

struct rows {
	json_t *a;
	bool oom;
};

static int add_row(void *ctx, const store_audit_row *r)
{
	struct rows *rs = ctx;
	json_t *o = app_audit_row_json(r);
	rs->oom = !o || json_array_append_new(rs->a, o);
	return rs->oom;
}

int app_audit_list(store *s, const store_audit_filter *f, json_t **out, dbcron_err *err)
{
	struct rows rs = {json_array(), false};
	*out = NULL;
	if (!rs.a)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	int rc = store_audit_list(s, f, add_row, &rs, err);
	if (!rc && rs.oom)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (!rc && !(*out = json_pack("{so}", "audit", rs.a)))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (rc)
		json_decref(rs.a);
	return rc;
}
