/*
 * Exclusion calendars (issue 28 item 7), for every front end: a file of
 * days read and checked before anything is written, the calendars listed,
 * shown and deleted, and a job's --exclude-calendar resolved to the days
 * the job is written with (jobs.exclude_days), which every planner reads.
 * The days come from a file (the CLI) or a JSON array (HTTP), through one
 * check (day_ok) and one sorted, distinct text (days_text); a calendar's
 * JSON is one shape for `calendar list|show --format json` and the API.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "app/app_int.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "core/timeutil.h"
#include "model/jobdef.h"

#define CALENDAR_NAME_MAX 200
#define CALENDAR_DAYS_MAX 100000

static bool calendar_name_ok(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	return len > 0 && len <= CALENDAR_NAME_MAX &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
		       len;
}

/* A real day "YYYY-MM-DD" (and nothing else), written back into out. */
static bool day_ok(const char *s, char out[11])
{
	int y, m, d, n = 0;
	if (strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 ||
	    s[4] != '-' || s[7] != '-' || y < 1970 || m < 1 || m > 12 || d < 1)
		return false;
	int64_t z = dbcron__days_from_civil(y, (unsigned)m, (unsigned)d), yy;
	unsigned mm, dd;
	dbcron__civil_from_days(z, &yy, &mm, &dd);
	if (yy != y || (int)mm != m || (int)dd != d)
		return false; /* 2026-02-30 */
	memcpy(out, s, 10);
	out[10] = '\0';
	return true;
}

static int day_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The days of one line, appended to *days (11 bytes each); 1 for a line
 * with none, 0 for a day, -1 (err set) for a bad line. */
static int read_line(char *line, const char *path, int lineno, char (**days)[11], size_t *n,
		     size_t *cap, dbcron_err *err)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	char *p = line + strspn(line, " \t\r\n");
	size_t len = strlen(p);
	while (len && strchr(" \t\r\n", p[len - 1]))
		p[--len] = '\0';
	if (!len)
		return 1;
	if (*n == CALENDAR_DAYS_MAX) {
		dbcron_err_set(err, DBCRON_EINVAL, "%s:%d: more than %d days", path, lineno,
			       CALENDAR_DAYS_MAX);
		return -1;
	}
	if (dbcron__grow((void **)days, cap, *n + 1, sizeof(**days))) {
		dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading %s", path);
		return -1;
	}
	if (!day_ok(p, (*days)[*n])) {
		dbcron_err_set(err, DBCRON_EINVAL, "%s:%d: '%.40s' is not a day (YYYY-MM-DD)", path,
			       lineno, p);
		return -1;
	}
	(*n)++;
	return 0;
}

/* days[0..n) sorted (in place), as distinct "YYYY-MM-DD" lines (owned). */
static int days_text(char (*days)[11], size_t n, char **out, size_t *ndays, dbcron_err *err)
{
	dbcron__sort(days, n, sizeof(*days), day_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || strcmp(days[i], days[k - 1]))
			memcpy(days[k++], days[i], sizeof(*days));
	if (!(*out = dbcron__malloc(k ? k * 11 : 1)))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading the days");
	(*out)[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		memcpy(*out + i * 11, days[i], 10);
		(*out)[i * 11 + 10] = i + 1 < k ? '\n' : '\0';
	}
	*ndays = k;
	return DBCRON_OK;
}

/* The sorted, distinct days of file path as "YYYY-MM-DD" lines (owned). */
static int read_days(const char *path, char **out, size_t *ndays, dbcron_err *err)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char (*days)[11] = NULL, line[512];
	size_t n = 0, cap = 0;
	int lineno = 0, rc = DBCRON_OK;
	if (!f)
		return dbcron_err_set(err, DBCRON_EIO, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (read_line(line, path, lineno, &days, &n, &cap, err) < 0) {
			rc = err->code ? err->code : DBCRON_EINVAL;
			goto out_close;
		}
	}
	if (ferror(f)) {
		rc = dbcron_err_set(err, DBCRON_EIO, "%s: read error", path);
		goto out_close;
	}
	rc = days_text(days, n, out, ndays, err);
out_close:
	if (f != stdin)
		fclose(f);
	dbcron__free(days);
	return rc;
}

static int name_check(const char *name, dbcron_err *err)
{
	return calendar_name_ok(name) ? DBCRON_OK
				      : dbcron_err_set(err, DBCRON_EINVAL,
						       "calendar name '%.80s': 1-%d of A-Z a-z 0-9 _ . -",
						       name ? name : "", CALENDAR_NAME_MAX);
}

/* The days text (owned by the call) written as calendar name. */
static int add_days(store *s, const char *name, char *days, const char *from, size_t ndays,
		    dbcron_err *err)
{
	int rc = ndays ? store_calendar_add(s, name, days, err)
		       : dbcron_err_set(err, DBCRON_EINVAL, "%s: no days", from);
	dbcron__free(days);
	return rc;
}

int app_calendar_add(store *s, const char *name, const char *path, size_t *ndays,
		     dbcron_err *err)
{
	char *days = NULL;
	int rc = name_check(name, err);
	if (rc || (rc = read_days(path, &days, ndays, err)))
		return rc;
	return add_days(s, name, days, path, *ndays, err);
}

int app_calendar_add_json(store *s, const char *name, const json_t *dates, size_t *ndays,
			  dbcron_err *err)
{
	size_t n = json_array_size(dates);
	char(*days)[11] = NULL, *text = NULL;
	int rc = name_check(name, err);
	if (rc)
		return rc;
	if (!json_is_array(dates))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "\"dates\": expected an array of \"YYYY-MM-DD\" strings");
	if (n > CALENDAR_DAYS_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "\"dates\": more than %d days",
				      CALENDAR_DAYS_MAX);
	if (!(days = dbcron__calloc(n ? n : 1, sizeof(*days))))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		const char *d = json_string_value(json_array_get(dates, i));
		if (!d || !day_ok(d, days[i]))
			rc = dbcron_err_set(err, DBCRON_EINVAL,
					    "\"dates\"[%zu]: not a day (YYYY-MM-DD)", i);
	}
	if (!rc && !(rc = days_text(days, n, &text, ndays, err)))
		rc = add_days(s, name, text, "\"dates\"", *ndays, err);
	dbcron__free(days);
	return rc;
}

json_t *app_calendar_json(const store_calendar *c, bool with_days)
{
	char t[64];
	json_t *days = with_days ? json_array() : json_integer((json_int_t)app_calendar_ndays(c->days));
	for (const char *p = c->days; with_days && days && *p; p += p[10] ? 11 : 10)
		json_array_append_new(days, json_stringn(p, 10));
	return days ? json_pack("{s:s, s:o, s:s}", "name", c->name, "days", days, "created",
				model_time_text(c->created_ms, t, sizeof(t)))
		    : NULL;
}

static int list_add(void *ctx, const store_calendar *c)
{
	json_t *o = app_calendar_json(c, false);
	return !o || json_array_append_new(ctx, o);
}

int app_calendars_list(store *s, json_t **out, dbcron_err *err)
{
	json_t *a = json_array();
	int rc = a ? store_calendar_list(s, list_add, a, err)
		   : dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return DBCRON_OK;
}

size_t app_calendar_ndays(const char *days)
{
	size_t len = days ? strlen(days) : 0;
	return len ? (len + 1) / 11 : 0;
}

int app__resolve_calendars(store *s, struct model_jobdef *defs, size_t n, size_t *bad,
			   dbcron_err *err)
{
	for (size_t i = 0; i < n; i++) {
		dbcron_job *j = &defs[i].job;
		dbcron__free(j->exclude_days);
		j->exclude_days = NULL;
		if (j->exclude_calendar && !*j->exclude_calendar) {
			/* --exclude-calendar '': none */
			dbcron__free(j->exclude_calendar);
			j->exclude_calendar = NULL;
		}
		if (!j->exclude_calendar)
			continue;
		store_calendar c;
		int rc = store_calendar_get(s, j->exclude_calendar, &c, err);
		if (rc == DBCRON_ENOTFOUND) {
			*bad = i;
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "--exclude-calendar: no calendar named '%s' (dbcron "
					      "calendar add %s --dates FILE)",
					      j->exclude_calendar, j->exclude_calendar);
		}
		if (rc)
			return rc;
		j->exclude_days = c.days; /* taken */
		c.days = NULL;
		store_calendar_clear(&c);
	}
	return DBCRON_OK;
}
