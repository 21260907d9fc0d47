/*
 * The dashboard's charts (GET /api/v1/stats): runs per minute by outcome,
 * start lateness per minute (p50 and p99) and the node timeline, over the
 * last minutes, for one job or the cluster.  All of it from one read of the
 * run log (store_runs_window: the runs fired in the window, without their output), computed here:
 * the run log is the one source, so the charts say what `dbcron runs`
 * says.  Lateness is started - fire_at of each run that started; a minute
 * is the minute its fire_at falls in (the database's clock).
 */
#include <jansson.h>
#include <string.h>

#include "app/app.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "dbcron/job.h"

#define MINUTE_MS 60000

/* (minute, lateness) of every started run, sorted for the percentiles. */
struct late {
	long minute;
	int64_t ms;
};

typedef struct stats_ctx {
	int64_t from_ms;
	long minutes;
	json_t *per_minute; /* one object a minute, by state name */
	json_t *timeline;
	struct late *late;
	size_t nlate, cap;
	bool failed;
} stats_ctx;

static int count_run(void *ctx, const dbcron_run *r)
{
	stats_ctx *sc = ctx;
	if (r->fire_at < sc->from_ms)
		return 0;
	long m = (long)((r->fire_at - sc->from_ms) / MINUTE_MS);
	if (m >= sc->minutes)
		return 0; /* claimed ahead of a fire after this minute */
	json_t *o = json_array_get(sc->per_minute, (size_t)m);
	const char *st = dbcron_run_state_name(r->state);
	if (o && st)
		json_object_set_new(o, st, json_integer(json_integer_value(json_object_get(o, st)) + 1));
	if (r->started_ms <= 0)
		return 0;
	if (sc->nlate == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 256;
		struct late *v = dbcron__realloc(sc->late, cap * sizeof(*v));
		if (!v) {
			sc->failed = true;
			return 1;
		}
		sc->late = v, sc->cap = cap;
	}
	sc->late[sc->nlate++] = (struct late){m, r->started_ms - r->fire_at};
	/* which node ran what, and when: the timeline's bars */
	if (json_array_append_new(
		    sc->timeline,
		    json_pack("{s:I,s:s?,s:s?,s:s?,s:I,s:o}", "run_id", (json_int_t)r->id, "job",
			      r->job_name, "node", r->node, "state", st, "started_ms",
			      (json_int_t)r->started_ms, "finished_ms",
			      r->finished_ms > 0 ? json_integer(r->finished_ms) : json_null())))
		sc->failed = true;
	return sc->failed;
}

static int cmp_late(const void *a, const void *b)
{
	const struct late *x = a, *y = b;
	if (x->minute != y->minute)
		return x->minute < y->minute ? -1 : 1;
	return (x->ms > y->ms) - (x->ms < y->ms);
}

/* Nearest rank: the smallest value with at least p% of the n at or below it. */
static int64_t rank(const struct late *v, size_t n, int p)
{
	size_t k = (n * (size_t)p + 99) / 100;
	return v[k ? k - 1 : 0].ms;
}

static void add_percentiles(stats_ctx *sc)
{
	dbcron__sort(sc->late, sc->nlate, sizeof(*sc->late), cmp_late);
	for (size_t i = 0, j; i < sc->nlate; i = j) {
		for (j = i; j < sc->nlate && sc->late[j].minute == sc->late[i].minute; j++)
			;
		json_t *o = json_array_get(sc->per_minute, (size_t)sc->late[i].minute);
		json_object_set_new(o, "lateness_p50_ms", json_integer(rank(sc->late + i, j - i, 50)));
		json_object_set_new(o, "lateness_p99_ms", json_integer(rank(sc->late + i, j - i, 99)));
	}
}

int app_stats(store *s, const char *job, long minutes, json_t **out, dbcron_err *err)
{
	stats_ctx sc = {.minutes = minutes};
	int64_t now;
	int rc;

	*out = NULL;
	if (minutes < 1 || minutes > APP_STATS_MINUTES_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "minutes %ld: expected 1 to %d", minutes,
				      APP_STATS_MINUTES_MAX);
	if ((rc = store_now_ms(s, &now, err)))
		return rc;
	/* whole minutes, the last one the current */
	sc.from_ms = (now / MINUTE_MS + 1 - minutes) * MINUTE_MS;
	if (!(sc.per_minute = json_array()) || !(sc.timeline = json_array()))
		goto out_oom;
	for (long m = 0; m < minutes; m++)
		if (json_array_append_new(sc.per_minute,
					  json_pack("{s:I}", "at_ms", (json_int_t)(sc.from_ms + m * MINUTE_MS))))
			goto out_oom;
	store_run_filter f = {.job = job && *job ? job : NULL};
	if ((rc = store_runs_window(s, f.job, sc.from_ms, count_run, &sc, err)))
		goto out_free;
	if (sc.failed)
		goto out_oom;
	add_percentiles(&sc);
	*out = json_pack("{s:o,s:i,s:I,s:I,s:O,s:O}", "job", f.job ? json_string(f.job) : json_null(),
			 "minutes", (int)minutes, "from_ms", (json_int_t)sc.from_ms, "now_ms",
			 (json_int_t)now, "per_minute", sc.per_minute, "timeline", sc.timeline);
	if (*out)
		goto out_free;
out_oom:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "stats: out of memory");
out_free:
	json_decref(sc.per_minute);
	json_decref(sc.timeline);
	dbcron__free(sc.late);
	return rc;
}
