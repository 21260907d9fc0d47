/*
 * Time zones: the system tz database through GLib's GTimeZone, flattened
 * once at open into a sorted table of offset changes (struct dbcron_tz).
 *
 * GLib answers "which interval holds t" with a linear scan, so asking it
 * for every fire would cost more than the fire search itself.  Instead we
 * find every interval border between 1900 and 2200 by bisection (GLib's
 * interval index never decreases with time) and keep only borders where
 * the offset really changes.  Before 1900 and after 2200 the first and
 * last offsets hold.  The table is immutable, so a dbcron_tz is safe to
 * share between threads.
 *
 * Building a table costs milliseconds for a zone with DST, and callers open
 * the zone of every job they touch (validation, the next fire, the
 * planner), so zones are interned: the first open of a name builds its
 * table, later opens return the same one, and tables live as long as the
 * process (there are a few hundred zone names at most).
 */
#include <glib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "cron/cron_int.h"

#define PROBE_FROM (-2208988800LL) /* 1900-01-01 */
#define PROBE_TO (7258118400LL)    /* 2200-01-01 */

struct tvec {
	int64_t *at;
	int32_t *off;
	size_t n, cap_at, cap_off;
	bool oom;
};

static void push(struct tvec *v, int64_t at, int32_t off)
{
	if (v->oom)
		return;
	if (dbcron__grow((void **)&v->at, &v->cap_at, v->n + 1, sizeof(*v->at)) ||
	    dbcron__grow((void **)&v->off, &v->cap_off, v->n + 2, sizeof(*v->off))) {
		v->oom = true;
		return;
	}
	if (v->off[v->n] == off)
		return; /* a new interval with the same offset (name or DST flag) */
	v->at[v->n] = at;
	v->off[++v->n] = off;
}

/* Borders t in (lo, hi] where the interval index changes; ilo, ihi are the
 * indexes at lo and hi.  Depth is at most log2(hi - lo) < 64. */
static void borders(GTimeZone *g, struct tvec *v, int64_t lo, int ilo, int64_t hi, int ihi)
{
	if (ilo == ihi || v->oom)
		return;
	if (hi - lo == 1) {
		push(v, hi, g_time_zone_get_offset(g, ihi));
		return;
	}
	int64_t mid = lo + (hi - lo) / 2;
	int im = g_time_zone_find_interval(g, G_TIME_TYPE_UNIVERSAL, mid);
	borders(g, v, lo, ilo, mid, im);
	borders(g, v, mid, im, hi, ihi);
}

/* Only names the tz database holds (a TZif file under TZDIR) or plain
 * offsets (+05:30, -08): GLib would otherwise read arbitrary paths or
 * treat a typo as a POSIX TZ rule. */
static bool known_name(const char *name)
{
	size_t n = strlen(name);

	if (n > 200 || name[0] == '/' || strstr(name, ".."))
		return false;
	if (name[0] == '+' || name[0] == '-') {
		for (size_t i = 1; i < n; i++)
			if (!g_ascii_isdigit(name[i]) && name[i] != ':')
				return false;
		return n >= 3;
	}
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(name[i]) && !strchr("/_-+", name[i]))
			return false;
	const char *dir = getenv("TZDIR");
	char path[512], magic[4];
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t got = fread(magic, 1, 4, f);
	fclose(f);
	return got == 4 && memcmp(magic, "TZif", 4) == 0;
}

static bool is_utc(const char *name)
{
	return !name || !*name || strcmp(name, "UTC") == 0 || strcmp(name, "Z") == 0 ||
	       strcmp(name, "Etc/UTC") == 0;
}

static void tz_destroy(dbcron_tz *tz);

static int tz_build(const char *name, dbcron_tz **out, dbcron_err *err)
{
	struct tvec v = {0};
	GTimeZone *g = NULL;
	dbcron_tz *tz;
	int rc = DBCRON_ENOMEM;

	*out = NULL;
	if (!is_utc(name) && !known_name(name))
		return dbcron_err_set(err, DBCRON_ETZ, "unknown time zone '%s'", name);
	tz = dbcron__calloc(1, sizeof(*tz));
	if (!tz)
		goto out_oom;
	tz->name = dbcron__strdup(is_utc(name) ? "UTC" : name);
	if (!tz->name)
		goto out_free_tz;
	if (is_utc(name)) {
		tz->off = dbcron__calloc(1, sizeof(*tz->off));
		if (!tz->off)
			goto out_free_tz;
		*out = tz;
		return DBCRON_OK;
	}
	g = g_time_zone_new_identifier(name);
	if (!g) {
		rc = dbcron_err_set(err, DBCRON_ETZ, "unknown time zone '%s'", name);
		goto out_free_tz;
	}
	int ilo = g_time_zone_find_interval(g, G_TIME_TYPE_UNIVERSAL, PROBE_FROM);
	int ihi = g_time_zone_find_interval(g, G_TIME_TYPE_UNIVERSAL, PROBE_TO);
	if (dbcron__grow((void **)&v.off, &v.cap_off, 1, sizeof(*v.off)))
		goto out_free_g;
	v.off[0] = g_time_zone_get_offset(g, ilo);
	borders(g, &v, PROBE_FROM, ilo, PROBE_TO, ihi);
	if (v.oom)
		goto out_free_g;
	g_time_zone_unref(g);
	tz->n = (uint32_t)v.n;
	tz->at = v.at;
	tz->off = v.off;
	*out = tz;
	return DBCRON_OK;

out_free_g:
	g_time_zone_unref(g);
	dbcron__free(v.at);
	dbcron__free(v.off);
out_free_tz:
	tz_destroy(tz);
out_oom:
	if (rc == DBCRON_ENOMEM)
		dbcron_err_set(err, DBCRON_ENOMEM, "out of memory opening time zone '%s'",
			       name ? name : "UTC");
	return rc;
}

static void tz_destroy(dbcron_tz *tz)
{
	if (!tz)
		return;
	dbcron__free(tz->name);
	dbcron__free(tz->at);
	dbcron__free(tz->off);
	dbcron__free(tz);
}

static pthread_mutex_t interned_mu = PTHREAD_MUTEX_INITIALIZER;
static dbcron_tz *interned; /* list through ->next; never shrinks */

static dbcron_tz *interned_find(const char *key)
{
	for (dbcron_tz *t = interned; t; t = t->next)
		if (strcmp(t->name, key) == 0)
			return t;
	return NULL;
}

int dbcron_tz_open(const char *name, dbcron_tz **out, dbcron_err *err)
{
	const char *key = is_utc(name) ? "UTC" : name;
	*out = NULL;
	pthread_mutex_lock(&interned_mu);
	dbcron_tz *tz = interned_find(key);
	pthread_mutex_unlock(&interned_mu);
	if (tz) {
		*out = tz;
		return DBCRON_OK;
	}
	/* Built without the lock held; a racing open of the same name keeps
	 * whichever table was interned first. */
	int rc = tz_build(name, &tz, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&interned_mu);
	dbcron_tz *won = interned_find(key);
	if (!won) {
		tz->next = interned;
		interned = tz;
		won = tz;
		tz = NULL;
	}
	pthread_mutex_unlock(&interned_mu);
	tz_destroy(tz);
	*out = won;
	return DBCRON_OK;
}

void dbcron_tz_free(dbcron_tz *tz)
{
	(void)tz; /* interned: lives as long as the process */
}

const char *dbcron_tz_name(const dbcron_tz *tz)
{
	return tz ? tz->name : "UTC";
}

uint32_t dbcron__tz_interval(const dbcron_tz *tz, int64_t t)
{
	uint32_t lo = 0, hi = tz->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (tz->at[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int32_t dbcron_tz_offset(const dbcron_tz *tz, int64_t t)
{
	if (!tz)
		return 0;
	return tz->off[dbcron__tz_interval(tz, t)];
}
