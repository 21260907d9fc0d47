/*
 * What a job's schedule means: dbcron_job_validate() (the one check every
 * path that writes a job passes, so a job in the store is always valid) and
 * dbcron_job_next_fire() (the series of each schedule kind, within the
 * job's window).  Declared in
 * the public dbcron/job.h; here because they need the cron engine and the
 * executor table, which the data layer in src/core/ must not reach.
 */
#include <string.h>

#include "core/text.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "exec/exec.h"
#include "dbcron/job.h"
#include "model/rules.h"
#include "cron/spread.h"

int model_job_cron(const dbcron_job *job, dbcron_cron **out, dbcron_err *err)
{
	if (job->spread_seed >= 0)
		return dbcron_cron_parse_seeded(job->spec, (uint64_t)job->spread_seed, out, err);
	return dbcron_cron_parse(job->spec, out, err);
}

/* The stored-name rule (core/text.h) with the message users know. */
static int valid_name(const char *s)
{
	if (dbcron__name_check("job name", s, false, NULL) != DBCRON_OK)
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f)
			return 0;
	return 1;
}

int dbcron_job_validate(dbcron_job *job, dbcron_err *err)
{
	int rc;
	if (!valid_name(job->name))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job name '%s': must be 1-200 printable characters without spaces "
				      "(bytes of UTF-8)",
				      job->name ? job->name : "");
	const char *n = job->name;
	if (!job->spec || !*job->spec)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': no schedule (give one of --cron, --every, --after, --at)", n);
	dbcron_tz *tz = NULL;
	rc = dbcron_tz_open(job->tz, &tz, err);
	if (rc)
		return rc;
	dbcron_tz_free(tz);
	switch (job->kind) {
	case DBCRON_SCHED_CRON: {
		dbcron_cron *c = NULL;
		rc = model_job_cron(job, &c, err);
		if (rc)
			return rc;
		dbcron_cron_free(c);
		break;
	}
	case DBCRON_SCHED_EVERY:
	case DBCRON_SCHED_AFTER:
		rc = dbcron__parse_duration(job->spec, 0, &job->interval_ms, err);
		if (rc)
			return rc;
		break;
	case DBCRON_SCHED_AT:
		if (job->at_ms < 0)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job '%s': --at time not resolved", n);
		break;
	case DBCRON_SCHED_NEEDS:
		/* names only: which exist and make no cycle is the store's */
		break;
	default:
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown schedule kind", n);
	}
	if (job->spread_ms > 0 && job->kind != DBCRON_SCHED_EVERY)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': --spread is for --every jobs (a cron job spreads with H, "
				      "e.g. 'H * * * *')", n);
	if (job->spread_ms > 0 && job->spread_ms > job->interval_ms) {
		char sp[32];
		dbcron__format_duration(job->spread_ms, sp, sizeof(sp));
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': --spread %s is longer than --every %s", n, sp,
				      job->spec);
	}
	if (job->max_retries < 0 || job->max_retries > 1000)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': retries %d out of range 0-1000", n, job->max_retries);
	if (job->max_catchup < 1 || job->max_catchup > 100000)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': max-catchup %d out of range 1-100000", n, job->max_catchup);
	if (job->retry_base_ms <= 0 || job->retry_cap_ms < job->retry_base_ms)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': retry base must be > 0 and cap >= base", n);
	if (job->timeout_ms < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': negative timeout", n);
	if (job->start_at >= 0 && job->end_at >= 0 && job->end_at < job->start_at) {
		char s[64], e[64];
		dbcron__format_rfc3339(job->start_at, 0, job->start_at % 1000 != 0, s, sizeof(s));
		dbcron__format_rfc3339(job->end_at, 0, job->end_at % 1000 != 0, e, sizeof(e));
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': end-at %s is before start-at %s: the window would "
				      "never open",
				      n, e, s);
	}
	if (job->misfire < DBCRON_MISFIRE_FIRE_ONCE || job->misfire > DBCRON_MISFIRE_CATCH_UP ||
	    job->overlap < DBCRON_OVERLAP_SKIP || job->overlap > DBCRON_OVERLAP_REPLACE ||
	    job->node_loss < DBCRON_NODE_LOSS_RETRY || job->node_loss > DBCRON_NODE_LOSS_ABANDON)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown policy value", n);
	/* What the command part needs is the executor's own rule: a new
	 * executor brings its check with it instead of a case here. */
	if ((rc = exec_validate(job, err)))
		return rc;
	return DBCRON_OK;
}

/* The series alone, without the window. */
static int series_next(const dbcron_job *job, int64_t after_ms, int64_t *next, dbcron_err *err)
{
	switch (job->kind) {
	case DBCRON_SCHED_CRON: {
		dbcron_cron *c = NULL;
		dbcron_tz *tz = NULL;
		int rc = model_job_cron(job, &c, err);
		if (rc)
			return -rc;
		rc = dbcron_tz_open(job->tz, &tz, err);
		if (rc) {
			dbcron_cron_free(c);
			return -rc;
		}
		/* cron has second resolution: the next second strictly after */
		int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
		int64_t t;
		int found = dbcron_cron_next(c, tz, after_s, &t);
		dbcron_cron_free(c);
		dbcron_tz_free(tz);
		if (found)
			*next = t * 1000;
		return found;
	}
	case DBCRON_SCHED_EVERY: {
		int64_t iv = job->interval_ms, a = job->anchor_ms;
		if (after_ms < a) {
			*next = a;
			return 1;
		}
		*next = a + ((after_ms - a) / iv + 1) * iv;
		return 1;
	}
	case DBCRON_SCHED_AFTER:
		*next = after_ms + job->interval_ms;
		return 1;
	case DBCRON_SCHED_AT:
		if (job->at_ms > after_ms) {
			*next = job->at_ms;
			return 1;
		}
		return 0;
	case DBCRON_SCHED_NEEDS:
		return 0; /* its fires are inserted when its needs are met */
	}
	return -dbcron_err_set(err, DBCRON_EINVAL, "unknown schedule kind");
}

static int window_next(const dbcron_job *job, int64_t after_ms, int64_t *next,
		       dbcron_err *err)
{
	/* the window: the first fire at or after start_at, none after end_at */
	int found = series_next(job, model_window_after(job, after_ms), next, err);
	if (found == 1 && (*next = model_window_clamp(job, *next)) < 0)
		found = 0;
	return found;
}

int dbcron_job_next_fire(const dbcron_job *job, int64_t after_ms, int64_t *next,
			 dbcron_err *err)
{
	int found = window_next(job, after_ms, next, err);
	int64_t resume;
	/* the exclusion calendar: on past each excluded day */
	for (int i = 0; found == 1 && model_excluded_day(job, *next, &resume); i++)
		found = i < MODEL_EXCLUDED_MAX ? window_next(job, resume, next, err) : 0;
	return found;
}
