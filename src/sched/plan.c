/*
 * The fire planner (store_plan_fn).  Owns a cache of parsed cron
 * expressions and zones keyed by job id, used only by the thread that runs
 * the claim.
 *
 * Invariant 2 (no silent loss) lives here: every instant between the job's
 * next_fire_at and the horizon becomes a SCHEDULED fire, or is accounted
 * for by a MISFIRED row or a run's `missed` count, as the misfire policy
 * says.  Work is bounded: at most PLAN_MAX_FIRES_PER_JOB fires per job per
 * claim (the rest are planned in the next claim) and at most
 * PLAN_MAX_MISSED_COUNT missed instants counted one by one.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "dbcron/cron.h"
#include "model/rules.h"
#include "sched/plan.h"

typedef struct cache_entry {
	int64_t job_id;
	char *spec;
	char *tz_name;
	int64_t seed; /* H's (model_job_cron) */
	dbcron_cron *cron;
	dbcron_tz *tz;
} cache_entry;

struct planner {
	cache_entry *slots; /* open addressing, power-of-two size */
	size_t nslots, used;
	store_fire *fires;
	size_t nfires, cap;
	dbcron_err err; /* why the last job could not be planned */
};

int planner_create(planner **out, dbcron_err *err)
{
	planner *p = dbcron__calloc(1, sizeof(*p));
	if (!p)
		return dbcron_err_set(err, DBCRON_ENOMEM, "planner: out of memory");
	*out = p;
	return DBCRON_OK;
}

static void entry_clear(cache_entry *e)
{
	dbcron__free(e->spec);
	dbcron__free(e->tz_name);
	dbcron_cron_free(e->cron);
	dbcron_tz_free(e->tz);
	memset(e, 0, sizeof(*e));
}

void planner_free(planner *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i].job_id)
			entry_clear(&p->slots[i]);
	dbcron__free(p->slots);
	dbcron__free(p->fires);
	dbcron__free(p);
}

static size_t slot_of(int64_t id, size_t n)
{
	uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 17) & (n - 1);
}

static int rehash(planner *p)
{
	size_t n = p->nslots ? p->nslots * 2 : 64;
	cache_entry *ns = dbcron__calloc(n, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < p->nslots; i++) {
		if (!p->slots[i].job_id)
			continue;
		size_t j = slot_of(p->slots[i].job_id, n);
		while (ns[j].job_id)
			j = (j + 1) & (n - 1);
		ns[j] = p->slots[i];
	}
	dbcron__free(p->slots);
	p->slots = ns;
	p->nslots = n;
	return 0;
}

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Parsed expression for a cron job, refreshed when its spec or zone
 * changed since it was cached. */
static int cached_cron(planner *p, const dbcron_job *job, cache_entry **out)
{
	if (p->used * 2 >= p->nslots && rehash(p))
		return -DBCRON_ENOMEM;
	size_t i = slot_of(job->id, p->nslots);
	while (p->slots[i].job_id && p->slots[i].job_id != job->id)
		i = (i + 1) & (p->nslots - 1);
	cache_entry *e = &p->slots[i];
	if (e->job_id && str_eq(e->spec, job->spec) && str_eq(e->tz_name, job->tz) &&
	    e->seed == job->spread_seed) {
		*out = e;
		return 0;
	}
	if (e->job_id)
		entry_clear(e);
	else
		p->used++;
	e->job_id = job->id;
	e->seed = job->spread_seed;
	e->spec = dbcron__strdup(job->spec ? job->spec : "");
	e->tz_name = dbcron__strdup(job->tz ? job->tz : "");
	if (!e->spec || !e->tz_name ||
	    model_job_cron(job, &e->cron, &p->err) ||
	    dbcron_tz_open(job->tz, &e->tz, &p->err)) {
		entry_clear(e);
		e->job_id = -1; /* tombstone keeps probe chains intact */
		return -DBCRON_EINVAL;
	}
	*out = e;
	return 0;
}

static int planner_next_window(planner *p, const dbcron_job *job, int64_t after_ms,
			       int64_t *next)
{
	if (job->kind != DBCRON_SCHED_CRON)
		return dbcron_job_next_fire(job, after_ms, next, &p->err);
	cache_entry *e;
	int rc = cached_cron(p, job, &e);
	if (rc)
		return rc;
	/* the job's window, as dbcron_job_next_fire keeps it */
	after_ms = model_window_after(job, after_ms);
	int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
	int64_t t;
	if (!dbcron_cron_next(e->cron, e->tz, after_s, &t))
		return 0;
	*next = model_window_clamp(job, t * 1000);
	return *next >= 0;
}

int planner_next(planner *p, const dbcron_job *job, int64_t after_ms, int64_t *next)
{
	int found = planner_next_window(p, job, after_ms, next);
	int64_t resume;
	/* the exclusion calendar, as dbcron_job_next_fire skips it */
	for (int i = 0; found == 1 && model_excluded_day(job, *next, &resume); i++)
		found = i < MODEL_EXCLUDED_MAX ? planner_next_window(p, job, resume, next) : 0;
	return found;
}

static int push_fire(planner *p, int64_t fire_at, int64_t due_at,
		     dbcron_run_state st, int64_t missed, const char *error)
{
	if (dbcron__grow((void **)&p->fires, &p->cap, p->nfires + 1,
			 sizeof(*p->fires)))
		return -1;
	p->fires[p->nfires++] = (store_fire){
		.fire_at = fire_at, .due_at = due_at, .state = st,
		.missed = missed, .error = error,
	};
	return 0;
}

/* Instants of an EVERY job are arithmetic: count them without stepping. */
static int64_t every_count(const dbcron_job *job, int64_t from, int64_t until)
{
	if (until < from)
		return 0;
	return (until - from) / job->interval_ms + 1;
}

/*
 * After counting stopped at PLAN_MAX_MISSED_COUNT (the cron instant cur):
 * the newest `keep` instants before late_limit, which are what catch-up
 * runs, found in a window just before late_limit that doubles until it
 * holds them or reaches back to cur.  Into ring[0..*nout-1], oldest first.
 * Returns < 0 on error.
 */
static int newest_before(planner *p, const dbcron_job *job, int64_t cur, int64_t avg,
			 int64_t late_limit, int64_t *ring, size_t keep, size_t *nout)
{
	int64_t span = avg * (int64_t)keep * 2;
	for (;;) {
		int64_t from = late_limit - span > cur ? late_limit - span : cur + 1;
		size_t m = 0;
		int64_t at = from - 1, nx;
		int rc;
		while ((rc = planner_next(p, job, at, &nx)) > 0 && nx < late_limit) {
			ring[m % keep] = nx;
			m++;
			at = nx;
		}
		if (rc < 0)
			return rc;
		if (m >= keep || from == cur + 1) {
			/* oldest first */
			size_t n = m < keep ? m : keep;
			int64_t *tmp = dbcron__calloc(n ? n : 1, sizeof(*tmp));
			if (!tmp)
				return -DBCRON_ENOMEM;
			for (size_t i = 0; i < n; i++)
				tmp[i] = ring[(m - n + i) % keep];
			memcpy(ring, tmp, n * sizeof(*tmp));
			dbcron__free(tmp);
			*nout = n;
			return 0;
		}
		span *= 2;
	}
}

/* What plan_misfire counted: the first missed instant, how many (a lower
 * bound when capped), and the newest of them in ring (keep slots, or
 * ring[0..nnewest-1] when a catch-up count was capped). */
typedef struct missed {
	int64_t first, count;
	bool capped;
	const int64_t *ring;
	size_t keep, nnewest;
} missed;

/* Write what the job's misfire policy says of the instants m counted:
 * MISFIRED records and the runs to start.  Non-zero: out of memory. */
static int push_misfire(planner *p, const dbcron_job *job, int64_t now_ms, const missed *m)
{
	int64_t first = m->first, count = m->count;
	const int64_t *ring = m->ring;
	size_t keep = m->keep;
	bool capped = m->capped;
	int64_t nkeep = count < (int64_t)keep ? count : (int64_t)keep;
	int rc = 0;
	switch (job->misfire) {
	case DBCRON_MISFIRE_SKIP:
		rc = push_fire(p, first, now_ms, DBCRON_RUN_MISFIRED, count - 1,
			       capped ? "missed at least this many (counting stops at 100000); "
					"misfire policy skip"
				      : "missed; misfire policy skip");
		break;
	case DBCRON_MISFIRE_CATCH_UP:
		if (capped) {
			/* the newest instants run; everything before them is
			 * at least `count` instants */
			rc = push_fire(p, first, now_ms, DBCRON_RUN_MISFIRED, count - 1,
				       "missed beyond max_catchup, at least this many "
				       "(counting stops at 100000)");
			for (size_t i = 0; i < m->nnewest && rc == 0; i++)
				rc = push_fire(p, ring[i], now_ms, DBCRON_RUN_SCHEDULED, 0, NULL);
			break;
		}
		if (nkeep < count)
			rc = push_fire(p, first, now_ms, DBCRON_RUN_MISFIRED,
				       count - nkeep - 1, "missed beyond max_catchup");
		for (int64_t i = count - nkeep; i < count && rc == 0; i++)
			rc = push_fire(p, ring[i % (int64_t)keep], now_ms,
				       DBCRON_RUN_SCHEDULED, 0, NULL);
		break;
	case DBCRON_MISFIRE_FIRE_ONCE:
	default:
		/* the run itself carries the note: its error column says the
		 * count is a lower bound (kept when the run succeeds) */
		rc = push_fire(p, first, now_ms, DBCRON_RUN_SCHEDULED, count - 1,
			       capped ? "missed at least this many before this run (counting "
					"stops at 100000); misfire policy fire_once"
				      : NULL);
		break;
	}
	return rc;
}

/*
 * The job's next_fire_at (*t) is older than the misfire threshold: count the
 * missed instants (bounded), write what the misfire policy says, and move
 * *t to the first instant that is not late (-1: none).  A cron count that
 * hit PLAN_MAX_MISSED_COUNT is a lower bound and says so, and catch-up then
 * still runs the newest instants, not the first ones counted.
 */
static int plan_misfire(planner *p, const dbcron_job *job, int64_t now_ms,
			int64_t late_limit, int64_t *t)
{
	size_t keep = job->misfire == DBCRON_MISFIRE_CATCH_UP ? (size_t)job->max_catchup : 1;
	int64_t *ring = dbcron__calloc(keep, sizeof(*ring));
	if (!ring)
		return DBCRON_ENOMEM;
	int64_t first = *t, count = 0, nx = -1;
	int rc = 0;
	bool capped = false;
	size_t nnewest = 0; /* capped catch-up: ring[0..nnewest-1] */

	if (job->kind == DBCRON_SCHED_EVERY) {
		/* no instant after the window's end is missed */
		int64_t until = late_limit - 1;
		if (job->end_at >= 0 && until > job->end_at)
			until = job->end_at;
		count = every_count(job, first, until);
		if (count < 1)
			count = 1; /* first itself was due */
		int64_t from = count > (int64_t)keep ? count - (int64_t)keep : 0;
		for (int64_t i = from; i < count; i++)
			ring[i % keep] = first + i * job->interval_ms;
		nx = model_window_clamp(job, first + count * job->interval_ms);
	} else if (job->kind == DBCRON_SCHED_CRON) {
		int64_t cur = first;
		for (;;) {
			ring[count % keep] = cur;
			count++;
			rc = planner_next(p, job, cur, &nx);
			if (rc <= 0)
				break;
			if (nx >= late_limit)
				break;
			if (count >= PLAN_MAX_MISSED_COUNT) {
				/* Stop counting one by one; resume at the first
				 * instant that is not late. */
				capped = true;
				if (job->misfire == DBCRON_MISFIRE_CATCH_UP) {
					int64_t avg = (nx - first) / count;
					rc = newest_before(p, job, nx - 1, avg > 0 ? avg : 1,
							   late_limit, ring, keep, &nnewest);
					if (rc < 0)
						break;
				}
				rc = planner_next(p, job, late_limit - 1, &nx);
				break;
			}
			cur = nx;
		}
		if (rc < 0)
			goto out_free_ring;
		if (rc == 0)
			nx = -1;
	} else {
		/* AT and AFTER: a single instant */
		ring[0] = first;
		count = 1;
		nx = -1;
	}

	missed m = {.first = first, .count = count, .capped = capped, .ring = ring, .keep = keep,
		    .nnewest = nnewest};
	rc = push_misfire(p, job, now_ms, &m);
	if (rc)
		rc = -DBCRON_ENOMEM;
	/* An AFTER job's next fire comes from its run's end; when the policy
	 * left no run to end (skip, or max_catchup 0), the MISFIRED record is
	 * that end, or the series would stop here for good. */
	if (job->kind == DBCRON_SCHED_AFTER && (p->nfires == 0 ||
	    p->fires[p->nfires - 1].state != DBCRON_RUN_SCHEDULED))
		nx = model_run_followup(job, 1, DBCRON_RUN_MISFIRED, true, now_ms).job_next_fire_at;
	*t = nx;
out_free_ring:
	dbcron__free(ring);
	return rc < 0 ? -rc : 0;
}

int planner_plan(void *ctx, const dbcron_job *job, int64_t now_ms,
		 int64_t horizon_ms, store_plan *out)
{
	planner *p = ctx;
	int64_t t = job->next_fire_at;
	int rc;

	p->nfires = 0;
	out->fires = NULL;
	out->nfires = 0;
	out->next_fire_at = -1;
	out->error = p->err.msg;
	p->err = (dbcron_err){0};
	dbcron_err_set(&p->err, DBCRON_EINVAL, "job '%s': cannot compute its fires",
		       job->name ? job->name : "");
	if (t < 0)
		return DBCRON_OK;

	int64_t late_limit = now_ms - job->misfire_threshold_ms;
	if (t < late_limit) {
		rc = plan_misfire(p, job, now_ms, late_limit, &t);
		if (rc)
			return rc;
	}

	/* On-time fires up to the horizon. */
	size_t n = 0;
	while (t >= 0 && t <= horizon_ms && n < PLAN_MAX_FIRES_PER_JOB) {
		if (push_fire(p, t, t, DBCRON_RUN_SCHEDULED, 0, NULL))
			return DBCRON_ENOMEM;
		n++;
		if (job->kind == DBCRON_SCHED_AT || job->kind == DBCRON_SCHED_AFTER) {
			t = -1;
			break;
		}
		int64_t nx;
		rc = planner_next(p, job, t, &nx);
		if (rc < 0)
			return -rc;
		t = rc ? nx : -1;
	}
	out->fires = p->fires;
	out->nfires = p->nfires;
	out->next_fire_at = t;
	return DBCRON_OK;
}
