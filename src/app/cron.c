/*
 * `cron next` and `cron check` for every front end: parse, open the zone,
 * walk the fires, describe.  No database and no clock of its own: the
 * caller says from when.  The rules themselves are src/cron/'s.
 */
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "dbcron/cron.h"

static int parse(const char *expr, int64_t seed, dbcron_cron **c, dbcron_err *err)
{
	return seed >= 0 ? dbcron_cron_parse_seeded(expr, (uint64_t)seed, c, err)
			 : dbcron_cron_parse(expr, c, err);
}

int app_job_next(const dbcron_job *j, int64_t after_ms, long count, app_fire_fn cb, void *ctx,
		 dbcron_err *err)
{
	dbcron_tz *tz = NULL;
	int rc = dbcron_tz_open(j->tz, &tz, err);
	if (rc)
		return rc;
	if (j->max_runs > 0 && count > j->max_runs - j->runs_fired)
		count = j->max_runs - j->runs_fired;
	for (long k = 0; k < count; k++) {
		int64_t t;
		int found = dbcron_job_next_fire(j, after_ms, &t, err);
		if (found < 0) {
			rc = -found;
			break;
		}
		if (!found || cb(ctx, t / 1000, dbcron_tz_offset(tz, t / 1000)))
			break;
		after_ms = t;
	}
	dbcron_tz_free(tz);
	return rc;
}

int app_cron_next(const char *expr, const char *zone, int64_t seed, int64_t after_s, long count,
		  app_fire_fn cb, void *ctx, dbcron_err *err)
{
	dbcron_cron *c = NULL;
	dbcron_tz *tz = NULL;
	int rc = parse(expr, seed, &c, err);
	if (rc)
		return rc;
	if ((rc = dbcron_tz_open(zone, &tz, err)))
		goto out_free_cron;
	for (long k = 0; k < count; k++) {
		int64_t t;
		if (!dbcron_cron_next(c, tz, after_s, &t))
			break;
		if (cb(ctx, t, dbcron_tz_offset(tz, t)))
			break;
		after_s = t;
	}
	dbcron_tz_free(tz);
out_free_cron:
	dbcron_cron_free(c);
	return rc;
}

int app_cron_check(const char *expr, int64_t seed, const char **dialect, char *desc, size_t len,
		   dbcron_err *err)
{
	dbcron_cron *c = NULL;
	int rc = parse(expr, seed, &c, err);
	if (rc)
		return rc;
	dbcron_cron_describe(c, desc, len);
	*dialect = dbcron_cron_get_dialect(c) == DBCRON_CRON_QUARTZ ? "quartz" : "unix";
	dbcron_cron_free(c);
	return DBCRON_OK;
}
