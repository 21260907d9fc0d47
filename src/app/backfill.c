/*
 * Backfill (issue 28 item 5), for every front end: the instants of a job's
 * schedule in [from, to), planned here from the job as stored, then one
 * backfill run each written by the store (store/backfill.c), which keeps
 * invariant 1 with the runs table's unique key.  The checks that refuse a
 * request all come before anything is written.
 */
#include <jansson.h>
#include <string.h>

#include "app/app.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "store/stmt.h"

/* A --force backfill still stops here: 8 bytes an instant in memory, and
 * a run row each. */
#define BACKFILL_FORCE_MAX 10000000

_Static_assert(APP_BACKFILL_CAP_MAX == STORE_BACKFILL_CAP_MAX, "one bound for --max-running");

void app_backfill_result_clear(app_backfill_result *r)
{
	dbcron__free(r->at);
	dbcron__free(r->taken);
	memset(r, 0, sizeof(*r));
}

static int backfill_range(store *s, const app_backfill_req *q, app_backfill_result *r,
			  dbcron_err *err)
{
	int64_t now;
	int rc;
	if (!q->from || !q->to)
		return dbcron_err_set(err, DBCRON_EINVAL, "--from and --to are required");
	if ((rc = store_now_ms(s, &now, err)))
		return rc;
	if ((rc = dbcron__parse_time(q->from, now, &r->from_ms, err)) ||
	    (rc = dbcron__parse_time(q->to, now, &r->to_ms, err)))
		return dbcron_err_set(err, rc, "%s", err->msg);
	if (r->to_ms <= r->from_ms)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "--to (%s) is not after --from (%s)", q->to, q->from);
	/* a later instant is the schedule's own: it fires when it comes */
	if (r->to_ms > now)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "--to (%s) is after now; the schedule fires what "
				      "is to come (give --to now or earlier)", q->to);
	if (q->max_running < 0 || q->max_running > APP_BACKFILL_CAP_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "--max-running %d: expected 1-%d (0 or none: no cap)",
				      q->max_running, APP_BACKFILL_CAP_MAX);
	return DBCRON_OK;
}

/* Every instant of job's schedule (its window applied) in [from, to). */
static int backfill_instants(const dbcron_job *job, const app_backfill_req *q,
			     app_backfill_result *r, dbcron_err *err)
{
	size_t cap = 0, limit = q->force ? BACKFILL_FORCE_MAX : APP_BACKFILL_MAX;
	int64_t at = r->from_ms - 1, next;
	int found;
	if (job->kind != DBCRON_SCHED_CRON && job->kind != DBCRON_SCHED_EVERY)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s' has no schedule instants (--%s): only "
				      "--cron and --every jobs can be backfilled",
				      job->name, dbcron_sched_kind_name(job->kind));
	while ((found = dbcron_job_next_fire(job, at, &next, err)) == 1 && next < r->to_ms) {
		if (r->n == limit)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      q->force ? "more than %zu instants in the range"
						       : "more than %zu instants in the range; "
							 "narrow it or give --force",
					      limit);
		if (dbcron__grow((void **)&r->at, &cap, r->n + 1, sizeof(*r->at)))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in backfill");
		r->at[r->n++] = at = next;
	}
	return found < 0 ? -found : DBCRON_OK;
}

int app_job_backfill(store *s, const app_backfill_req *q, app_backfill_result *r,
		     dbcron_err *err)
{
	dbcron_job job;
	memset(r, 0, sizeof(*r));
	dbcron_job_init(&job);
	int rc = backfill_range(s, q, r, err);
	if (!rc)
		rc = app_job_find(s, q->name, &job, err);
	if (!rc)
		rc = backfill_instants(&job, q, r, err);
	if (!rc && q->dry_run && r->n && !(r->taken = dbcron__calloc(r->n, sizeof(*r->taken))))
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory in backfill");
	if (!rc) {
		store_backfill_req sq = {.name = q->name, .job_id = job.id, .at = r->at, .n = r->n,
					 .max_running = q->max_running, .dry_run = q->dry_run,
					 .from_ms = r->from_ms, .to_ms = r->to_ms};
		rc = store_job_backfill(s, &sq, &r->created, r->taken, err);
	}
	r->paused = job.paused;
	dbcron_job_clear(&job);
	return rc;
}

static json_t *time_json(int64_t ms)
{
	char t[64];
	dbcron__format_rfc3339(ms, 0, ms % 1000 != 0, t, sizeof(t));
	return json_string(t);
}

json_t *app_backfill_json(const char *name, const app_backfill_result *r, bool dry_run)
{
	json_t *o = json_pack("{sssosososIsbsb}", "job", name, "from", time_json(r->from_ms), "to",
			      time_json(r->to_ms), "instants", json_integer((json_int_t)r->n),
			      "created", (json_int_t)r->created, "dry_run", dry_run, "paused",
			      r->paused);
	if (o && !dry_run &&
	    json_object_set_new(o, "skipped", json_integer((json_int_t)r->n - r->created))) {
		json_decref(o);
		return NULL;
	}
	if (!o || !dry_run)
		return o;
	/* a dry run lists what a backfill would make: the instants, each with
	 * whether it already has a run (a real one only counts them) */
	json_t *a = json_array();
	for (size_t i = 0; a && i < r->n; i++) {
		json_t *e = json_pack("{sosb}", "fire_at", time_json(r->at[i]), "has_run",
				      r->taken && r->taken[i]);
		if (!e || json_array_append_new(a, e)) {
			json_decref(a);
			a = NULL;
		}
	}
	if (!a || json_object_set_new(o, "fire_at", a)) {
		json_decref(o);
		return NULL;
	}
	return o;
}
