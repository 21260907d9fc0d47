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
 *
 * Zone data is never trusted: a name is looked up under TZDIR (else
 * /usr/share/zoneinfo) by this file, only relative names without ".." are
 * accepted, and the file is checked byte by byte (tzif.c) before GLib is
 * handed its absolute path.  So any zone data, truncated or garbage, gives
 * "zone 'X': ..." with what is wrong, never a crash in GLib or a silent
 * fall-back to UTC.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Zone files are a few KiB; anything this big is not one. */
#define ZONE_FILE_MAX (1u << 20)
#define NAME_HINT "an IANA name such as Europe/Paris, or an offset such as +05:30"

static const char *zone_dir(void)
{
	const char *dir = getenv("TZDIR");
	return dir && *dir ? dir : "/usr/share/zoneinfo";
}

/* Plain offsets (+05:30, -08) go to GLib as they are. */
static bool is_offset(const char *name)
{
	size_t n = strlen(name);
	if (name[0] != '+' && name[0] != '-')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!g_ascii_isdigit(name[i]) && name[i] != ':')
			return false;
	return n >= 3 && n <= 9;
}

/* Names of the tz database only: relative, no "..", no characters that no
 * IANA name has.  GLib itself would read any path, and would take a typo
 * for a POSIX TZ rule. */
static bool is_zone_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 200 || name[0] == '/' || name[n - 1] == '/' || strstr(name, "..") ||
	    strstr(name, "//"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(name[i]) && !strchr("/_-+", name[i]))
			return false;
	return true;
}

/* read(2) until count bytes or the end; -1 on error. */
static ssize_t read_all(int fd, unsigned char *buf, size_t count)
{
	size_t got = 0;
	while (got < count) {
		ssize_t k = read(fd, buf + got, count - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/*
 * Find NAME's TZif file under TZDIR (else /usr/share/zoneinfo), check every
 * byte of it (tzif.c) and leave its absolute, resolved path in path, which
 * is what GLib is given, so GLib reads the file that was checked and
 * never looks up a name on its own.  Symlinks are followed: the tz
 * database is full of them.  The file is read twice (here, then by GLib);
 * tzdata updates replace files by rename, so both reads see one version.
 */
static int zone_file(const char *name, char path[PATH_MAX], dbcron_err *err)
{
	const char *dir = zone_dir();
	char joined[PATH_MAX], why[200];
	struct stat st;
	unsigned char *data = NULL;
	int fd = -1, rc;

	if (!is_zone_name(name))
		return dbcron_err_set(err, DBCRON_ETZ, "unknown time zone '%s' (%s)", name, NAME_HINT);
	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", dir, name) >= sizeof(joined))
		return dbcron_err_set(err, DBCRON_ETZ, "zone '%s': path under %s is too long", name, dir);
	if (!realpath(joined, path)) {
		if (errno == ENOENT || errno == ENOTDIR)
			return dbcron_err_set(err, DBCRON_ETZ, "unknown time zone '%s' (not in %s; %s)",
					      name, dir, NAME_HINT);
		return dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s: %s", name, joined,
				      strerror(errno));
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s: %s", name, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s: %s", name, path, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = dbcron_err_set(err, DBCRON_ETZ,
				    "unknown time zone '%s' (a directory of zones in %s, not a zone; %s)",
				    name, dir, NAME_HINT);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)ZONE_FILE_MAX) {
		rc = dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s is %s", name, path,
				    S_ISREG(st.st_mode) ? "larger than 1 MiB, not a zone file"
							: "not a regular file");
		goto out_close;
	}
	size_t size = (size_t)st.st_size;
	data = dbcron__malloc(size ? size : 1);
	if (!data) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading zone '%s'", name);
		goto out_close;
	}
	ssize_t got = read_all(fd, data, size);
	if (got < 0) {
		rc = dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s: %s", name, path, strerror(errno));
		goto out_free;
	}
	if (!dbcron__tzif_check(data, (size_t)got, why, sizeof(why))) {
		rc = dbcron_err_set(err, DBCRON_ETZ, "zone '%s': %s is not a valid zone file: %s",
				    name, path, why);
		goto out_free;
	}
	rc = DBCRON_OK;
out_free:
	dbcron__free(data);
out_close:
	close(fd);
	return rc;
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
	char path[PATH_MAX];
	GTimeZone *g = NULL;
	dbcron_tz *tz;
	int rc = DBCRON_ENOMEM;

	*out = NULL;
	if (!is_utc(name) && !is_offset(name) && (rc = zone_file(name, path, err)))
		return rc;
	rc = DBCRON_ENOMEM;
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
	g = g_time_zone_new_identifier(is_offset(name) ? name : path);
	if (!g) {
		rc = dbcron_err_set(err, DBCRON_ETZ, is_offset(name) ? "unknown time zone '%s' (%s)"
								    : "zone '%s': GLib cannot read it (%s)",
				    name, is_offset(name) ? NAME_HINT : path);
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
