/*
 * The HTTP API's routes (docs/http.md): each parses its path, query and
 * body, checks the caller's role, calls one verb of src/app/ and answers
 * with that verb's JSON, so the API and the CLI cannot disagree on a rule
 * or a form.  Every error is {"error": {"code", "message"}} with a status
 * that says whose fault it was; the message is the one the CLI prints.
 * Reads need the read role (everyone, when no token file is given); writes
 * need an admin token.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "core/timeutil.h"
#include "dbcron/job.h"
#include "core/alloc.h"
#include "model/params.h"
#include "http/http_int.h"

#define API "/api/v1"
#define RUNS_PAGE_DEFAULT 50
#define RUNS_PAGE_MAX 1000
#define JOBS_PAGE_DEFAULT 100
/* A job's own page shows this many of its last runs. */
#define JOB_LAST_RUNS 10

/* Status and code for a verb's error code. */
static void from_err(http_reply *rep, const dbcron_err *err)
{
	unsigned st = MHD_HTTP_INTERNAL_SERVER_ERROR;
	const char *code = "internal";
	switch (err->code) {
	case DBCRON_EINVAL:
	case DBCRON_EPARSE:
	case DBCRON_ETZ:
		st = MHD_HTTP_BAD_REQUEST, code = "invalid";
		break;
	case DBCRON_ENOTFOUND:
		st = MHD_HTTP_NOT_FOUND, code = "not_found";
		break;
	case DBCRON_EEXISTS:
	case DBCRON_ECONSTRAINT:
		st = MHD_HTTP_CONFLICT, code = "conflict";
		break;
	case DBCRON_EDB:
	case DBCRON_EBUSY:
	case DBCRON_ECONN:
	case DBCRON_ETIMEOUT:
	case DBCRON_ESCHEMA:
		st = MHD_HTTP_SERVICE_UNAVAILABLE, code = "unavailable";
		break;
	default:
		break;
	}
	http__error(rep, st, code, "%s", err->msg[0] ? err->msg : dbcron_strerror(err->code));
}

static bool is(const http_call *c, const char *m)
{
	return strcmp(c->method, m) == 0;
}

static const char *arg(const http_call *c, const char *name)
{
	return http__mhd.MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* "1", "true", "yes" and a bare "?prune" are true. */
static bool flag(const http_call *c, const char *name)
{
	const char *v = arg(c, name);
	if (!v)
		return http__mhd.MHD_lookup_connection_value_n(c->conn, MHD_GET_ARGUMENT_KIND, name,
						     strlen(name), NULL, NULL) == MHD_YES;
	return !strcmp(v, "") || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes");
}

static bool may_read(const http_call *c, http_reply *rep)
{
	if (c->role >= HTTP_ROLE_READ)
		return true;
	http__error(rep, MHD_HTTP_UNAUTHORIZED, "unauthorized",
		    c->bad_token ? "the bearer token is not one of --api-token-file's"
				 : "this server needs 'Authorization: Bearer TOKEN'");
	rep->www_auth = true;
	return false;
}

static bool may_write(const http_call *c, http_reply *rep)
{
	if (c->role >= HTTP_ROLE_ADMIN)
		return true;
	if (!c->tokens)
		http__error(rep, MHD_HTTP_FORBIDDEN, "forbidden",
			    "this server is read-only: writes need an admin token (--api-token-file)");
	else if (c->role == HTTP_ROLE_READ)
		http__error(rep, MHD_HTTP_FORBIDDEN, "forbidden", "this token has the read role; writes need admin");
	else
		return may_read(c, rep);
	return false;
}

bool http__may_write(const http_call *c, http_reply *rep)
{
	return may_write(c, rep);
}

static void method_not_allowed(http_reply *rep, const char *allow)
{
	http__error(rep, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
		    "this resource takes %s", allow);
	rep->allow = allow;
}

/* The one rule of a write verb: POST only, by an admin (an answer
 * written otherwise). */
static bool may_post(const http_call *c, http_reply *rep)
{
	if (!is(c, "POST")) {
		method_not_allowed(rep, "POST");
		return false;
	}
	return may_write(c, rep);
}

static void ok(http_reply *rep, unsigned status, json_t *j)
{
	rep->status = status;
	rep->json = j;
}

/* The body as one JSON value; NULL after answering 400 when it is not. */
static json_t *body_json(const http_call *c, http_reply *rep)
{
	json_error_t je;
	if (!c->body_len) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "the request needs a JSON body");
		return NULL;
	}
	json_t *v = json_loadb(c->body, c->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "body:%d:%d: %s", je.line,
			    je.column, je.text);
	return v;
}

/* ------------------------------------------------------------- apply */

/* Entry errors of a batch, as the "details" of the error. */
static void detail(void *ctx, size_t idx, const char *name, const char *msg)
{
	json_t *arr = ctx;
	json_array_append_new(arr, json_pack("{s:I,s:s?,s:s}", "index", (json_int_t)idx, "name",
					     name, "message", msg));
}

/*
 * A definition's error, naming the key at fault as "field" when the message
 * does ("key 'cron': ..."), so a form can show it next to that field.
 */
static void field_error(http_reply *rep, unsigned status, const char *code, const char *msg)
{
	char field[64];
	const char *q;
	http__error(rep, status, code, "%s", msg ? msg : "invalid");
	if (!msg || strncmp(msg, "key '", 5) || !(q = strchr(msg + 5, '\'')) ||
	    (size_t)(q - msg - 5) >= sizeof(field) || !rep->json)
		return;
	memcpy(field, msg + 5, (size_t)(q - msg - 5));
	field[q - msg - 5] = '\0';
	json_object_set_new(json_object_get(rep->json, "error"), "field", json_string(field));
}

/*
 * entries through app_apply; answers with the
 * counts (or the dry run's diff), or 400 with every entry error.  single:
 * a PUT of one job, whose error message is the entry's own.
 */
static void apply(const http_call *c, json_t *entries, const app_apply_opts *o, bool single,
		  http_reply *rep)
{
	app_apply_result r;
	dbcron_err err = {0};
	char warning[512] = "";
	json_t *details = json_array();
	if (!details)
		return;
	int rc = app_apply(c->st, entries, o, detail, details, &r, warning, sizeof(warning), &err);
	if (rc == DBCRON_EINVAL && r.nerr) {
		json_t *d0 = json_array_get(details, 0);
		if (single && d0)
			field_error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				    json_string_value(json_object_get(d0, "message")));
		else
			http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "%s", err.msg);
		if (rep->json)
			json_object_set(json_object_get(rep->json, "error"), "details", details);
	} else if (rc) {
		from_err(rep, &err);
		/* a create (If-None-Match: *) refused: the name is at fault */
		if (rc == DBCRON_EEXISTS && single && rep->json)
			json_object_set_new(json_object_get(rep->json, "error"), "field",
					    json_string("name"));
	} else if (o->dry_run) {
		ok(rep, MHD_HTTP_OK, json_pack("{s:b,s:o}", "dry_run", 1, "diff", r.diff));
		r.diff = NULL;
	} else {
		ok(rep, single && r.created ? MHD_HTTP_CREATED : MHD_HTTP_OK,
		   json_pack("{s:I,s:I,s:I,s:I}", "created", (json_int_t)r.created, "updated",
			     (json_int_t)r.updated, "deleted", (json_int_t)r.deleted, "unchanged",
			     (json_int_t)r.unchanged));
		if (o->tags && rep->json)
			json_object_set_new(rep->json, "caps",
					    json_pack("{s:I,s:I}", "set", (json_int_t)r.caps_set,
						      "deleted", (json_int_t)r.caps_deleted));
		if (warning[0] && rep->json)
			json_object_set_new(rep->json, "warning", json_string(warning));
	}
	json_decref(r.diff);
	json_decref(details);
}

static void route_apply(const http_call *c, http_reply *rep)
{
	if (!may_post(c, rep))
		return;
	json_t *v = body_json(c, rep), *jobs;
	if (!v)
		return;
	dbcron_err err = {0};
	app_apply_opts o = {.prune = flag(c, "prune"), .dry_run = flag(c, "dry_run"),
			    .user_check = false};
	if (app_apply_doc(v, &jobs, &o.tags, &err))
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "%s (a job apply file)", err.msg);
	else
		apply(c, jobs, &o, false, rep);
	json_decref(v);
}

/* -------------------------------------------------------------- jobs */

static void job_put(const http_call *c, const char *name, http_reply *rep)
{
	json_t *v = body_json(c, rep);
	if (!v)
		return;
	json_t *n = json_is_object(v) ? json_object_get(v, "name") : NULL;
	if (!json_is_object(v)) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "expected a JSON job object");
	} else if (n && (!json_is_string(n) || strcmp(json_string_value(n), name))) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
			    "key 'name' says another name than the path's '%s'", name);
	} else {
		json_t *arr = json_array();
		if (!n)
			json_object_set_new(v, "name", json_string(name));
		if (arr && !json_array_append(arr, v)) {
			/* If-None-Match: * is HTTP's "only if it does not exist yet":
			 * a form that creates must not overwrite a job of that name */
			const char *inm = http__mhd.MHD_lookup_connection_value(
				c->conn, MHD_HEADER_KIND, "If-None-Match");
			app_apply_opts o = {.user_check = false,
					    .mode = inm && !strcmp(inm, "*") ? APP_APPLY_CREATE
									    : APP_APPLY_UPSERT};
			apply(c, arr, &o, true, rep);
		}
		json_decref(arr);
	}
	json_decref(v);
}

/* A trigger's optional body {"params": {"KEY": "VALUE", ...}} as
 * "KEY=VALUE" strings in kv (owned, n of them); false after answering 400.
 * A key is checked here, before it is joined to its value, so that no '='
 * in a key can pass for another key; the rest is the model's check. */
static bool trigger_params(const http_call *c, http_reply *rep, char **kv, size_t *n)
{
	*n = 0;
	if (!c->body_len)
		return true;
	json_t *v = body_json(c, rep), *p, *val;
	const char *key;
	bool ok = false;
	if (!v)
		return false;
	p = json_is_object(v) ? json_object_get(v, "params") : NULL;
	if (!json_is_object(v) || json_object_size(v) != (p ? 1u : 0u) || (p && !json_is_object(p))) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
			    "expected {\"params\": {\"KEY\": \"VALUE\", ...}} or no body");
		goto out;
	}
	if (json_object_size(p) > MODEL_PARAM_MAX) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "more than %d parameters",
			    MODEL_PARAM_MAX);
		goto out;
	}
	json_object_foreach(p, key, val)
	{
		if (!model_param_key_ok(key, strlen(key)) || !json_is_string(val)) {
			http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				    "params.%.80s: a key is [A-Za-z_][A-Za-z0-9_]*, a value a string", key);
			goto out;
		}
		size_t len = strlen(key) + json_string_length(val) + 2;
		if (!(kv[*n] = dbcron__malloc(len))) {
			http__error(rep, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
			goto out;
		}
		snprintf(kv[(*n)++], len, "%s=%s", key, json_string_value(val));
	}
	ok = true;
out:
	json_decref(v);
	return ok;
}

static int trigger(const http_call *c, const char *name, app_job_result *r, http_reply *rep,
		   dbcron_err *err, bool *answered)
{
	char *kv[MODEL_PARAM_MAX];
	size_t n = 0;
	int rc = DBCRON_OK;
	*answered = !trigger_params(c, rep, kv, &n);
	if (!*answered)
		rc = app_job_trigger_params(c->st, name, (const char *const *)kv, n, r, err);
	for (size_t i = 0; i < n; i++)
		dbcron__free(kv[i]);
	return rc;
}

static void job_verb(const http_call *c, const char *name, const char *verb, http_reply *rep)
{
	app_job_result r;
	dbcron_err err = {0};
	int rc;
	if (!may_post(c, rep))
		return;
	bool answered = false;
	if (!strcmp(verb, "trigger"))
		rc = trigger(c, name, &r, rep, &err, &answered);
	else if (!strcmp(verb, "pause"))
		rc = app_job_pause(c->st, name, &r, &err);
	else
		rc = app_job_resume(c->st, name, &r, &err);
	if (answered)
		return;
	if (rc)
		return from_err(rep, &err);
	app_verb v = !strcmp(verb, "trigger") ? APP_VERB_TRIGGER
		     : !strcmp(verb, "pause") ? APP_VERB_PAUSE
					      : APP_VERB_RESUME;
	/* 201 for a trigger: a run was made (paused or not) */
	ok(rep, v == APP_VERB_TRIGGER ? MHD_HTTP_CREATED : MHD_HTTP_OK,
	   app_job_result_json(name, v, &r));
}

/* POST /api/v1/jobs/{name}/backfill {"from", "to"[, "dry_run",
 * "max_running", "force"]} (app/backfill.c): 201 with what it made, 200
 * for a dry run, 400 for a bad body or range, nothing written then. */
static void job_backfill(const http_call *c, const char *name, http_reply *rep)
{
	if (!may_post(c, rep))
		return;
	json_t *v = body_json(c, rep);
	if (!v)
		return;
	app_backfill_req q = {.name = name};
	json_int_t cap = 0;
	json_error_t jerr;
	int dry = 0, force = 0;
	if (json_unpack_ex(v, &jerr, JSON_STRICT, "{ss ss s?b s?I s?b}", "from", &q.from, "to",
			   &q.to, "dry_run", &dry, "max_running", &cap, "force", &force)) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
			    "expected {\"from\": TIME, \"to\": TIME[, \"dry_run\": bool, "
			    "\"max_running\": N, \"force\": bool]}: %.120s", jerr.text);
		goto out;
	}
	if (cap < 0 || cap > APP_BACKFILL_CAP_MAX) {
		http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
			    "max_running: expected 1-%d (0: no cap)", APP_BACKFILL_CAP_MAX);
		goto out;
	}
	q.max_running = (int)cap;
	q.dry_run = dry;
	q.force = force;
	app_backfill_result r;
	dbcron_err err = {0};
	if (app_job_backfill(c->st, &q, &r, &err))
		from_err(rep, &err);
	else
		ok(rep, dry ? MHD_HTTP_OK : MHD_HTTP_CREATED, app_backfill_json(name, &r, dry));
	app_backfill_result_clear(&r);
out:
	json_decref(v);
}

static bool parse_count(const char *v, long max, long *out);

/* The "limit" argument into *out (left as the caller's default when
 * absent); false after replying 400 when it is not a whole number from 1
 * to max.  One rule for every listing route. */
static bool arg_limit(const http_call *c, http_reply *rep, long max, long *out)
{
	const char *v = arg(c, "limit");
	if (!v || parse_count(v, max, out))
		return true;
	http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
		    "limit '%.40s': expected a whole number from 1 to %ld", v, max);
	return false;
}

static void route_jobs(const http_call *c, const char *rest, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	if (!*rest) {
		long limit = JOBS_PAGE_DEFAULT;
		const char *v;
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (!may_read(c, rep))
			return;
		if (!arg_limit(c, rep, APP_JOBS_PAGE_MAX, &limit))
			return;
		app_jobs_query q = {.cursor = arg(c, "cursor"), .limit = limit, .match = arg(c, "q")};
		if ((v = arg(c, "strip")) && strcmp(v, "0") &&
		    !parse_count(v, APP_STRIP_MAX, &q.strip))
			return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
					   "strip '%.40s': expected a whole number from 0 to %d", v,
					   APP_STRIP_MAX);
		if (app_jobs_query_page(c->st, &q, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, j);
	}
	/* "/NAME" or "/NAME/VERB"; a name cannot hold '/' here */
	char name[256];
	const char *slash = strchr(rest + 1, '/');
	size_t len = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
	if (rest[0] != '/' || len == 0 || len >= sizeof(name))
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource");
	memcpy(name, rest + 1, len);
	name[len] = '\0';
	if (slash) {
		const char *verb = slash + 1;
		if (!strcmp(verb, "backfill"))
			return job_backfill(c, name, rep);
		if (strcmp(verb, "trigger") && strcmp(verb, "pause") && strcmp(verb, "resume"))
			return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found",
					   "no such resource (a job takes trigger, pause, resume or backfill)");
		return job_verb(c, name, verb, rep);
	}
	if (is(c, "GET")) {
		if (!may_read(c, rep))
			return;
		if (app_job_get(c->st, name, JOB_LAST_RUNS, true, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, j);
	}
	if (is(c, "PUT")) {
		if (may_write(c, rep))
			job_put(c, name, rep);
		return;
	}
	if (is(c, "DELETE")) {
		app_job_result r;
		if (!may_write(c, rep))
			return;
		if (app_job_delete_force(c->st, name, flag(c, "force"), &r, &err))
			return from_err(rep, &err);
		/* ?force=1 on a job others need: "detached" names the dependents */
		return ok(rep, MHD_HTTP_OK, app_job_result_json(name, APP_VERB_DELETE, &r));
	}
	method_not_allowed(rep, "GET, PUT, DELETE");
}

/* -------------------------------------------------------------- runs */

static bool parse_count(const char *v, long max, long *out)
{
	char *end;
	errno = 0;
	long x = v[0] >= '0' && v[0] <= '9' ? strtol(v, &end, 10) : -1;
	if (x < 1 || errno || *end || x > max)
		return false;
	*out = x;
	return true;
}

/* POST /runs/{id}/cancel: 200 with the run and "cancel": done or
 * requested; 404 unknown, 409 already ended (nothing written). */
static void run_cancel(const http_call *c, long long id, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	bool done;
	if (!may_post(c, rep))
		return;
	if (app_run_cancel(c->st, id, &j, &done, &err))
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_OK, j);
}

static void route_runs(const http_call *c, const char *rest, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	if (rest[0] == '/') {
		char *end;
		errno = 0;
		long long id = rest[1] >= '0' && rest[1] <= '9' ? strtoll(rest + 1, &end, 10) : -1;
		if (id >= 0 && !errno && !strcmp(end, "/cancel"))
			return run_cancel(c, id, rep);
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (!may_read(c, rep))
			return;
		if (id < 0 || errno || *end)
			return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found",
					   "runs/%.40s: a run id is a whole number", rest + 1);
		if (app_run_get(c->st, id, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, j);
	}
	if (!is(c, "GET"))
		return method_not_allowed(rep, "GET");
	if (!may_read(c, rep))
		return;
	if (rest[0])
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource");

	store_run_filter f = {.job = arg(c, "job"), .state = 0, .since_ms = -1,
			      .limit = RUNS_PAGE_DEFAULT};
	const char *v;
	if ((v = arg(c, "state")) && *v) {
		f.state = dbcron_run_state_parse(v);
		if (f.state < 0)
			return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
					   "state '%.40s': expected scheduled, running, succeeded, failed, timed_out, skipped, misfired, abandoned or cancelled",
					   v);
	}
	if (!arg_limit(c, rep, RUNS_PAGE_MAX, &f.limit))
		return;
	if (f.job && !*f.job)
		f.job = NULL;
	if ((v = arg(c, "since")) && *v) {
		int64_t now;
		if (dbcron__parse_time(v, 0, &f.since_ms, &err))
			return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "since: %s", err.msg);
		if (store_now_ms(c->st, &now, &err) ||
		    dbcron__parse_time(v, now, &f.since_ms, &err))
			return from_err(rep, &err);
	}
	if (app_runs_page(c->st, &f, arg(c, "cursor"), &j, &err))
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_OK, j);
}

/* ------------------------------------------------------------- audit */

/* GET /api/v1/audit?job=&since=&limit=: the newest limit rows (default
 * RUNS_PAGE_DEFAULT, at most RUNS_PAGE_MAX), oldest first, as `dbcron
 * audit --format json` reads them. */
static void route_audit(const http_call *c, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	if (!is(c, "GET"))
		return method_not_allowed(rep, "GET");
	if (!may_read(c, rep))
		return;
	store_audit_filter f = {.job = arg(c, "job"), .since_ms = -1, .limit = RUNS_PAGE_DEFAULT};
	const char *v;
	if (!arg_limit(c, rep, RUNS_PAGE_MAX, &f.limit))
		return;
	if (f.job && !*f.job)
		f.job = NULL;
	if ((v = arg(c, "since")) && *v) {
		int64_t now;
		if (app_now_ms(c->st, &now, &err))
			return from_err(rep, &err);
		if (app_audit_since(v, now, &f.since_ms, &err))
			return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "since: %s", err.msg);
	}
	if (app_audit_list(c->st, &f, &j, &err))
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_OK, j);
}

/* ------------------------------------------------------------- stats */

#define STATS_MINUTES_DEFAULT 60

/* GET /api/v1/stats?job=&minutes=: the dashboard's charts (app_stats). */
static void route_stats(const http_call *c, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	long minutes = STATS_MINUTES_DEFAULT;
	const char *v, *job = arg(c, "job");
	if (!is(c, "GET"))
		return method_not_allowed(rep, "GET");
	if (!may_read(c, rep))
		return;
	if ((v = arg(c, "minutes")) && !parse_count(v, APP_STATS_MINUTES_MAX, &minutes))
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				   "minutes '%.40s': expected a whole number from 1 to %d", v,
				   APP_STATS_MINUTES_MAX);
	if (job && *job) {
		dbcron_job dj;
		dbcron_job_init(&dj);
		int rc = app_job_find(c->st, job, &dj, &err);
		dbcron_job_clear(&dj);
		if (rc)
			return from_err(rep, &err);
	}
	if (app_stats(c->st, job, minutes, &j, &err))
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_OK, j);
}

/* -------------------------------------------------------------- cron */

#define CRON_COUNT_DEFAULT 5
#define CRON_COUNT_MAX 1000

static int add_fire(void *ctx, int64_t t, int32_t offset)
{
	char buf[64];
	dbcron__format_rfc3339(t * 1000, offset, 0, buf, sizeof(buf));
	return json_array_append_new(ctx, json_pack("{s:s,s:I}", "at", buf, "epoch", (json_int_t)t));
}

/* H's seed for cron/next and cron/check: ?seed=N, or ?job=NAME (that
 * job's stored seed); -1 for none.  False after replying 400 or 404. */
static bool cron_seed(const http_call *c, http_reply *rep, int64_t *seed)
{
	const char *v = arg(c, "seed"), *job = arg(c, "job");
	dbcron_err err = {0};
	*seed = -1;
	if (v && *v) {
		char *end;
		errno = 0;
		long long n = strtoll(v, &end, 10);
		if (errno || end == v || *end || n < 0) {
			http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				    "seed '%.40s': expected a whole number 0 or more", v);
			return false;
		}
		*seed = n;
	}
	if (job && *job) {
		dbcron_job j;
		dbcron_job_init(&j);
		if (app_job_find(c->st, job, &j, &err)) {
			from_err(rep, &err);
			return false;
		}
		*seed = j.spread_seed;
		dbcron_job_clear(&j);
	}
	return true;
}

static void route_cron(const http_call *c, const char *rest, http_reply *rep)
{
	dbcron_err err = {0};
	if (!is(c, "GET"))
		return method_not_allowed(rep, "GET");
	if (!may_read(c, rep))
		return;
	const char *expr = arg(c, "expr"), *tz = arg(c, "tz"), *v;
	if (strcmp(rest, "/next") && strcmp(rest, "/check"))
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource (cron/next or cron/check)");
	if (!expr || !*expr)
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "expr: missing (?expr=...)");
	int64_t seed;
	if (!cron_seed(c, rep, &seed))
		return;
	if (!strcmp(rest, "/check")) {
		const char *dialect;
		char desc[1024];
		if (app_cron_check(expr, seed, &dialect, desc, sizeof(desc), &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, json_pack("{s:s,s:b,s:s,s:s}", "expr", expr, "valid", 1,
						      "dialect", dialect, "description", desc));
	}
	long count = CRON_COUNT_DEFAULT;
	if ((v = arg(c, "count")) && !parse_count(v, CRON_COUNT_MAX, &count))
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				   "count '%.40s': expected a whole number from 1 to %d", v, CRON_COUNT_MAX);
	/* "now" is the database's, as for every scheduling decision */
	int64_t now, from;
	if (store_now_ms(c->st, &now, &err))
		return from_err(rep, &err);
	from = now;
	if ((v = arg(c, "from")) && *v && dbcron__parse_time(v, now, &from, &err))
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid", "from: %s", err.msg);
	json_t *fires = json_array();
	if (!fires)
		return;
	int64_t after = from >= 0 ? from / 1000 : -((-from + 999) / 1000);
	if (app_cron_next(expr, tz && *tz ? tz : NULL, seed, after, count, add_fire, fires, &err)) {
		json_decref(fires);
		from_err(rep, &err);
		/* the form field at fault, for the dashboard's live preview */
		if (rep->json)
			json_object_set_new(json_object_get(rep->json, "error"), "field",
					    json_string(err.code == DBCRON_ETZ ? "tz" : "expr"));
		return;
	}
	ok(rep, MHD_HTTP_OK, json_pack("{s:s,s:s,s:o}", "expr", expr, "tz", tz && *tz ? tz : "UTC",
				       "fires", fires));
}

/* ------------------------------------------------------------ health */

static void route_readyz(const http_call *c, http_reply *rep)
{
	dbcron_err err = {0};
	int64_t now;
	if (store_check_schema(c->st, &err) || store_now_ms(c->st, &now, &err))
		return http__error(rep, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "%s", err.msg);
	ok(rep, MHD_HTTP_OK, json_pack("{s:b,s:I}", "ready", 1, "db_now_ms", (json_int_t)now));
}

static void text(http_reply *rep, unsigned status, const char *t)
{
	rep->status = status;
	rep->text = t;
	rep->text_len = strlen(t);
}

/* The dashboard's files and the OpenAPI document (http_assets.c, made
 * from src/http/assets/ and docs/openapi.json by cmake/embed.cmake): open
 * to everyone, since they hold no data; the page asks the API for
 * everything with the token the user types. */
struct http_asset {
	const char *path;
	const unsigned char *data;
	size_t len;
};
extern const struct http_asset http_assets[];

static bool asset(const char *path, http_reply *rep)
{
	if (!strcmp(path, "/"))
		path = "/index.html";
	for (const struct http_asset *a = http_assets; a->path; a++) {
		if (strcmp(a->path, path))
			continue;
		const char *ext = strrchr(path, '.');
		rep->status = MHD_HTTP_OK;
		rep->text = (const char *)a->data;
		rep->text_len = a->len;
		rep->ctype = !strcmp(ext, ".js")     ? "text/javascript; charset=utf-8"
			     : !strcmp(ext, ".css")  ? "text/css; charset=utf-8"
			     : !strcmp(ext, ".json") ? "application/json"
						     : "text/html; charset=utf-8";
		rep->csp = true;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------- tags */

/* PUT /tags/NAME {"max_running": N}: the cap, made or changed. */
static void tag_put(const http_call *c, const char *name, http_reply *rep)
{
	dbcron_err err = {0};
	json_t *b = body_json(c, rep);
	if (!b)
		return;
	json_t *m = json_object_get(b, "max_running");
	json_int_t n = json_is_integer(m) ? json_integer_value(m) : -1;
	if (!json_is_object(b) || json_object_size(b) != 1 || n < 0 || n > 1000000) {
		json_decref(b);
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				   "expected {\"max_running\": N}, N a whole number from 0 to 1000000");
	}
	json_decref(b);
	if (app_tag_set(c->st, name, (int)n, &err))
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_OK, json_pack("{s:s, s:I}", "name", name, "max_running", n));
}

/* -------------------------------------------------------- calendars */

/* PUT /calendars/NAME {"dates": ["YYYY-MM-DD", ...]}: a new calendar
 * (201); a calendar never changes, so a taken name is 409. */
static void calendar_put(const http_call *c, const char *name, http_reply *rep)
{
	dbcron_err err = {0};
	size_t n = 0;
	json_t *b = body_json(c, rep);
	if (!b)
		return;
	if (!json_is_object(b) || json_object_size(b) != 1 || !json_object_get(b, "dates")) {
		json_decref(b);
		return http__error(rep, MHD_HTTP_BAD_REQUEST, "invalid",
				   "expected {\"dates\": [\"YYYY-MM-DD\", ...]}");
	}
	int rc = app_calendar_add_json(c->st, name, json_object_get(b, "dates"), &n, &err);
	json_decref(b);
	if (rc)
		return from_err(rep, &err);
	ok(rep, MHD_HTTP_CREATED, json_pack("{s:s, s:I}", "name", name, "days", (json_int_t)n));
}

/* GET of one calendar, with its days. */
static void calendar_get(const http_call *c, const char *name, http_reply *rep)
{
	dbcron_err err = {0};
	store_calendar cal;
	if (store_calendar_get(c->st, name, &cal, &err))
		return from_err(rep, &err);
	json_t *j = app_calendar_json(&cal, true);
	store_calendar_clear(&cal);
	ok(rep, MHD_HTTP_OK, j);
}

/* A named collection: GET lists it; a member is read (get, when it has
 * one), put and deleted; the one rule of the tags and the calendars. */
typedef struct coll_ops {
	const char *key; /* the listing's key: {"tags": [...]} */
	int (*list)(store *s, json_t **out, dbcron_err *err);
	void (*get)(const http_call *c, const char *name, http_reply *rep);
	void (*put)(const http_call *c, const char *name, http_reply *rep);
	int (*del)(store *s, const char *name, dbcron_err *err);
	const char *member_methods; /* the Allow of a member */
} coll_ops;

static void route_collection(const http_call *c, const char *rest, const coll_ops *o,
			     http_reply *rep)
{
	dbcron_err err = {0};
	json_t *j;
	if (!*rest) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (!may_read(c, rep))
			return;
		if (o->list(c->st, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, json_pack("{s:o}", o->key, j));
	}
	const char *name = rest + 1;
	if (!*name || strchr(name, '/'))
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource");
	if (o->get && is(c, "GET")) {
		if (may_read(c, rep))
			o->get(c, name, rep);
		return;
	}
	if (is(c, "PUT")) {
		if (may_write(c, rep))
			o->put(c, name, rep);
		return;
	}
	if (is(c, "DELETE")) {
		if (!may_write(c, rep))
			return;
		if (o->del(c->st, name, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, json_pack("{s:s, s:b}", "name", name, "deleted", 1));
	}
	method_not_allowed(rep, o->member_methods);
}

/* GET /tags; PUT and DELETE /tags/NAME (issue 28 item 3). */
static const coll_ops tags_ops = {"tags", app_tags_list, NULL, tag_put, app_tag_delete,
				  "PUT, DELETE"};
/* GET /calendars; GET, PUT and DELETE /calendars/NAME (issue 28 item 7). */
static const coll_ops calendars_ops = {"calendars", app_calendars_list, calendar_get,
				       calendar_put, store_calendar_delete, "GET, PUT, DELETE"};

static void route_all(const http_call *c, http_reply *rep);

/* Every GET that answers 200 with JSON carries an ETag (server.c), so a
 * poller sends If-None-Match and gets 304 when nothing changed. */
void http__route(const http_call *c, http_reply *rep)
{
	route_all(c, rep);
	rep->etag = (is(c, "GET") || is(c, "HEAD")) && rep->status == MHD_HTTP_OK && rep->json;
}

static void route_all(const http_call *c, http_reply *rep)
{
	const char *p = c->path;
	dbcron_err err = {0};
	json_t *j;

	/* HEAD is GET without the body (libmicrohttpd drops it) */
	http_call hc = *c;
	if (is(c, "HEAD"))
		hc.method = "GET";
	c = &hc;

	/* no path tricks: every route is an exact prefix of clean segments */
	if (p[0] != '/' || strstr(p, "/../") || strstr(p, "/./") || strstr(p, "//") ||
	    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")) ||
	    (strlen(p) >= 2 && !strcmp(p + strlen(p) - 2, "/.")))
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource");
	if (!strcmp(p, "/healthz")) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		return text(rep, MHD_HTTP_OK, "ok\n");
	}
	if (!strcmp(p, "/readyz")) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		return route_readyz(c, rep);
	}
	if (!strcmp(p, API "/openapi.json") && !is(c, "GET"))
		return method_not_allowed(rep, "GET");
	if (is(c, "GET") && asset(p, rep))
		return;
	if (!strcmp(p, "/metrics")) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (may_read(c, rep))
			http__metrics(c, rep);
		return;
	}
	if (strncmp(p, API "/", sizeof(API)))
		return http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource: %.200s", p);
	p += sizeof(API) - 1;
	if (!strncmp(p, "/jobs", 5) && (p[5] == '\0' || p[5] == '/'))
		return route_jobs(c, p + 5, rep);
	if (!strncmp(p, "/runs", 5) && (p[5] == '\0' || p[5] == '/'))
		return route_runs(c, p + 5, rep);
	if (!strcmp(p, "/apply"))
		return route_apply(c, rep);
	if (!strncmp(p, "/tags", 5) && (p[5] == '\0' || p[5] == '/'))
		return route_collection(c, p + 5, &tags_ops, rep);
	if (!strncmp(p, "/calendars", 10) && (p[10] == '\0' || p[10] == '/'))
		return route_collection(c, p + 10, &calendars_ops, rep);
	if (!strcmp(p, "/audit"))
		return route_audit(c, rep);
	if (!strcmp(p, "/stats"))
		return route_stats(c, rep);
	if (!strncmp(p, "/cron/", 6))
		return route_cron(c, p + 5, rep);
	if (!strcmp(p, "/events")) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (!may_read(c, rep))
			return;
		long n = 0; /* the listing's own default */
		if (!arg_limit(c, rep, RUNS_PAGE_MAX, &n))
			return;
		if (app_events_list(c->st, arg(c, "job"), arg(c, "state"), n, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, json_pack("{s:o}", "events", j));
	}
	if (!strcmp(p, "/nodes") || !strcmp(p, "/locks")) {
		if (!is(c, "GET"))
			return method_not_allowed(rep, "GET");
		if (!may_read(c, rep))
			return;
		bool nodes = p[1] == 'n';
		if ((nodes ? app_nodes_list : app_locks_list)(c->st, &j, &err))
			return from_err(rep, &err);
		return ok(rep, MHD_HTTP_OK, json_pack("{s:o}", nodes ? "nodes" : "locks", j));
	}
	http__error(rep, MHD_HTTP_NOT_FOUND, "not_found", "no such resource: %.200s", c->path);
}
