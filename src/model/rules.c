/*
 * The schedule rules of rules.h, once for every caller (the CLI, HTTP, the
 * library, the node and the store protocol): whether two schedules are the
 * same series, the node-loss retry rule, and where a resumed or new job
 * takes its first fire, so that every front end places a job in its
 * series alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "cron/spread.h"
#include "model/rules.h"

const char *model_zone_norm(const char *tz)
{
	return !tz || !*tz || strcmp(tz, "UTC") == 0 ? NULL : tz;
}

static bool same_text(const char *a, const char *b)
{
	if (!a || !*a)
		return !b || !*b;
	return b && strcmp(a, b) == 0;
}

/* The series itself: what keeps an EVERY anchor and an AT instant. */
static bool same_series(const dbcron_job *a, const dbcron_job *b)
{
	/* the seed places H's fires and the spread's phase: a new one is a
	 * new series (for other kinds it is kept and means nothing) */
	return a->kind == b->kind && same_text(a->spec, b->spec) &&
	       same_text(model_zone_norm(a->tz), model_zone_norm(b->tz)) &&
	       a->spread_ms == b->spread_ms &&
	       (a->spread_seed == b->spread_seed ||
		(a->kind != DBCRON_SCHED_CRON && a->spread_ms == 0));
}

bool model_same_schedule(const dbcron_job *a, const dbcron_job *b)
{
	/* a changed --max-runs plans again from now: a job that reached its
	 * old limit (no next fire) fires again under a higher one */
	return same_series(a, b) && a->start_at == b->start_at && a->end_at == b->end_at &&
	       a->max_runs == b->max_runs && same_text(a->exclude_days, b->exclude_days);
}

/* Whether "YYYY-MM-DD" is a line of days (sorted lines of that width). */
static bool day_listed(const char *days, const char *key)
{
	size_t len = strlen(days), lo = 0, hi = (len + 1) / 11;
	if ((len + 1) % 11)
		return strstr(days, key) != NULL; /* not as written: the slow way */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(days + mid * 11, key, 10);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

bool model_excluded_day(const dbcron_job *job, int64_t at, int64_t *resume)
{
	dbcron_tz *tz = NULL;
	dbcron_err e = {0};
	if (!job->exclude_days || !*job->exclude_days || dbcron_tz_open(job->tz, &tz, &e))
		return false; /* a zone that does not open fails the job elsewhere */
	int64_t s = floor_div(at, 1000), y;
	int32_t off = dbcron_tz_offset(tz, s);
	int64_t day = floor_div(s + off, 86400);
	unsigned m, d;
	char key[32];
	dbcron__civil_from_days(day, &y, &m, &d);
	snprintf(key, sizeof(key), "%04lld-%02u-%02u", (long long)y, m, d);
	bool hit = day_listed(job->exclude_days, key);
	if (hit) {
		/* the last ms of that local day, by the offset at the next
		 * day's start (a change of offset at midnight moves it) */
		int64_t next_local = (day + 1) * 86400;
		int32_t off2 = dbcron_tz_offset(tz, next_local - off);
		*resume = (next_local - off2) * 1000 - 1;
		if (*resume < at)
			*resume = at;
	}
	dbcron_tz_free(tz);
	return hit;
}

int64_t model_window_after(const dbcron_job *job, int64_t after_ms)
{
	return job->start_at >= 0 && after_ms < job->start_at - 1 ? job->start_at - 1 : after_ms;
}

int64_t model_window_clamp(const dbcron_job *job, int64_t at)
{
	if (at < 0 || (job->end_at >= 0 && at > job->end_at))
		return -1;
	/* a valid job's start_at is not after its end_at (dbcron_job_validate) */
	if (job->start_at >= 0 && at < job->start_at)
		return job->kind == DBCRON_SCHED_AFTER ? job->start_at : -1;
	return at;
}

int64_t model_backoff_ms(const dbcron_job *job, int attempt)
{
	int64_t d = job->retry_base_ms;
	for (int i = 1; i < attempt && d < job->retry_cap_ms; i++)
		d *= 2;
	if (d > job->retry_cap_ms)
		d = job->retry_cap_ms;
	if (job->retry_jitter && d >= 10)
		d += random() % (d / 10);
	return d;
}

bool model_retry_on_node_loss(const dbcron_job *job, int attempt)
{
	return job->node_loss == DBCRON_NODE_LOSS_RETRY && attempt <= job->max_retries;
}

const char *model_unrunnable_why(const char *handler, char *buf, size_t len)
{
	dbcron__textf(buf, len, "no live node has registered handler '%s'", handler ? handler : "");
	return buf;
}

model_followup model_run_followup(const dbcron_job *job, int attempt,
				  dbcron_run_state end, bool no_retry,
				  int64_t finished_ms)
{
	model_followup f = {.retry_due_at = -1, .job_next_fire_at = -1};
	bool failed = end == DBCRON_RUN_FAILED || end == DBCRON_RUN_TIMED_OUT;
	if (failed && !no_retry && attempt <= job->max_retries)
		f.retry_due_at = finished_ms + model_backoff_ms(job, attempt);
	else if (end == DBCRON_RUN_ABANDONED && !no_retry && model_retry_on_node_loss(job, attempt))
		f.retry_due_at = finished_ms;
	/* past the window's end the job is left without a next fire */
	if (job->kind == DBCRON_SCHED_AFTER && f.retry_due_at < 0)
		f.job_next_fire_at = model_window_clamp(job, finished_ms + job->interval_ms);
	return f;
}

model_followup model_lost_followup(const dbcron_job *job, int attempt, bool start_written,
				   int64_t now_ms)
{
	/* The budget holds whether or not the start was written: a job that
	 * kills its node before the start write (a crashing handler) would
	 * otherwise be retried forever, taking down node after node. */
	(void)start_written;
	return model_run_followup(job, attempt, DBCRON_RUN_ABANDONED, false, now_ms);
}

/* The first fire strictly after after_ms, -1 when the series has ended. */
static int next_or_none(const dbcron_job *job, int64_t after_ms, int64_t *next,
			dbcron_err *err)
{
	int found = dbcron_job_next_fire(job, after_ms, next, err);
	if (found < 0)
		return -found;
	if (!found)
		*next = -1;
	return DBCRON_OK;
}

int model_resume_next_fire(const dbcron_job *job, int64_t now_ms,
			   int64_t *next, dbcron_err *err)
{
	if (job->kind == DBCRON_SCHED_AFTER) {
		*next = model_window_clamp(job, now_ms + job->interval_ms);
		return DBCRON_OK;
	}
	if (job->kind == DBCRON_SCHED_AT) {
		*next = model_window_clamp(job, job->next_fire_at);
		return DBCRON_OK;
	}
	return next_or_none(job, now_ms, next, err);
}

int model_job_series(dbcron_job *job, int64_t now_ms, const dbcron_job *prev,
		     dbcron_err *err)
{
	bool keep = prev && same_series(job, prev);
	if (job->kind == DBCRON_SCHED_AT) {
		if (keep) {
			job->at_ms = prev->at_ms;
			return DBCRON_OK;
		}
		int rc = dbcron__parse_time(job->spec, now_ms, &job->at_ms, err);
		if (rc || !prev || prev->kind != DBCRON_SCHED_AT || prev->at_ms != job->at_ms ||
		    !same_text(model_zone_norm(job->tz), model_zone_norm(prev->tz)))
			return rc;
		/* the stored instant written another way (an export's RFC 3339
		 * for a stored "now+5m"): the same schedule, so the stored text
		 * stays and nothing downstream re-arms a one-shot that fired */
		char *spec = dbcron__strdup(prev->spec ? prev->spec : "");
		if (!spec)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		dbcron__free(job->spec);
		job->spec = spec;
		return DBCRON_OK;
	}
	if (job->kind == DBCRON_SCHED_EVERY && keep)
		job->anchor_ms = prev->anchor_ms;
	else if (job->kind == DBCRON_SCHED_EVERY && job->spread_ms > 0 && job->interval_ms > 0)
		/* --spread: the phase is the seed's offset from the interval's
		 * grid (epoch multiples), not the moment it was defined, so
		 * many jobs' phases are where their seeds put them */
		job->anchor_ms = now_ms - now_ms % job->interval_ms +
				 dbcron__spread_offset_ms(job->spread_seed, job->spread_ms);
	else if (job->kind == DBCRON_SCHED_EVERY)
		job->anchor_ms = now_ms;
	return DBCRON_OK;
}

int model_job_first_fire(dbcron_job *job, int64_t now_ms,
			 const dbcron_job *prev, dbcron_err *err)
{
	if (prev && model_same_schedule(job, prev)) {
		if (prev->paused && !job->paused) {
			/* this definition's series, from where prev stood; a
			 * shallow copy that owns nothing */
			dbcron_job at_prev = *job;
			at_prev.next_fire_at = prev->next_fire_at;
			return model_resume_next_fire(&at_prev, now_ms, &job->next_fire_at, err);
		}
		job->next_fire_at = prev->next_fire_at;
		return DBCRON_OK;
	}
	switch (job->kind) {
	case DBCRON_SCHED_AT:
		job->next_fire_at = model_window_clamp(job, job->at_ms);
		return DBCRON_OK;
	case DBCRON_SCHED_AFTER:
		job->next_fire_at = model_window_clamp(job, now_ms + job->interval_ms);
		return DBCRON_OK;
	default:
		return next_or_none(job, now_ms, &job->next_fire_at, err);
	}
}

bool model_needs_next(const char **pos, char *buf, size_t len)
{
	const char *p = *pos;
	while (p && (*p == ',' || *p == ' '))
		p++;
	if (!p || !*p || !len)
		return false;
	size_t n = strcspn(p, ", ");
	snprintf(buf, len, "%.*s", (int)n, p);
	*pos = p + n;
	return true;
}
