/*
 * Durations, RFC 3339 instants and the two clocks.  Civil-date arithmetic is
 * done here in UTC with plain integers (days since 1970-01-01), so nothing
 * depends on libc's time zone state.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

int64_t dbcron__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void dbcron__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t yy = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yy + (*m <= 2);
}

int64_t dbcron__mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool dbcron__busy_again(int rc, int *tries)
{
	if (rc != DBCRON_EBUSY || *tries >= 3)
		return false;
	struct timespec ts = {0, 20000000L * ++*tries};
	nanosleep(&ts, NULL);
	return true;
}

int64_t dbcron__mono_ms(void)
{
	return dbcron__mono_us() / 1000;
}

int64_t dbcron__wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dbcron__parse_duration(const char *s, int allow_zero, int64_t *ms,
			   dbcron_err *err)
{
	const char *p = s;
	int64_t total = 0;
	int parts = 0;

	if (!s || !*s)
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "duration: empty (expected e.g. 500ms, 30s, 5m, 2h, 1d)");
	while (*p) {
		if (!isdigit((unsigned char)*p))
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "duration '%s': expected a number at '%s' (e.g. 500ms, 30s, 5m, 2h, 1d)",
					      s, p);
		errno = 0;
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || v > (unsigned long long)INT64_MAX / 86400000LL)
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "duration '%s': number too large", s);
		p = end;
		int64_t unit;
		if (strncmp(p, "ms", 2) == 0) {
			unit = 1;
			p += 2;
		} else if (*p == 's') {
			unit = 1000;
			p++;
		} else if (*p == 'm') {
			unit = 60000;
			p++;
		} else if (*p == 'h') {
			unit = 3600000;
			p++;
		} else if (*p == 'd') {
			unit = 86400000;
			p++;
		} else if (*p == '\0') {
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "duration '%s': missing unit (ms, s, m, h or d)", s);
		} else {
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "duration '%s': unknown unit at '%s' (use ms, s, m, h or d)",
					      s, p);
		}
		int64_t add = (int64_t)v * unit;
		if (total > DBCRON_DURATION_MAX - add)
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "duration '%s': too large", s);
		total += add;
		parts++;
	}
	if (total == 0 && !allow_zero)
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "duration '%s': must be greater than zero", s);
	*ms = total;
	return DBCRON_OK;
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int parse_rfc3339(const char *s, int64_t *ms)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, frac_ms = 0;
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
	    *p++ != '-' || digits(&p, 2, &d))
		return -1;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
	    *p++ != ':' || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		p++;
		int n = 0, scale = 100;
		while (isdigit((unsigned char)*p)) {
			if (n < 3)
				frac_ms += (*p - '0') * scale;
			scale /= 10;
			n++;
			p++;
		}
		if (n == 0)
			return -1;
	}
	int off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;
		p++;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) ||
		    oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600 + om * 60);
	} else {
		return -1;
	}
	if (*p)
		return -1;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return -1;
	if (sec == 60)
		sec = 59; /* leap second: clamp, epoch time has none */
	int64_t days = dbcron__days_from_civil(y, (unsigned)mo, (unsigned)d);
	*ms = ((days * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000 + frac_ms;
	return 0;
}

int dbcron__parse_time(const char *s, int64_t now_ms, int64_t *ms,
		       dbcron_err *err)
{
	if (!s || !*s)
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "time: empty (expected RFC 3339, epoch seconds, now or now+DUR)");
	if (strcmp(s, "now") == 0) {
		*ms = now_ms;
		return DBCRON_OK;
	}
	if (strncmp(s, "now+", 4) == 0) {
		int64_t d;
		int rc = dbcron__parse_duration(s + 4, 1, &d, err);
		if (rc)
			return rc;
		*ms = now_ms + d;
		return DBCRON_OK;
	}
	/* now-DUR: a backfill's --from, a window already begun */
	if (strncmp(s, "now-", 4) == 0) {
		int64_t d;
		int rc = dbcron__parse_duration(s + 4, 1, &d, err);
		if (rc)
			return rc;
		*ms = now_ms - d;
		return DBCRON_OK;
	}
	const char *p = s;
	if (*p == '-')
		p++;
	if (*p && strspn(p, "0123456789") == strlen(p)) {
		errno = 0;
		long long v = strtoll(s, NULL, 10);
		if (errno || v > INT64_MAX / 1000 || v < INT64_MIN / 1000)
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "time '%s': epoch seconds out of range", s);
		*ms = (int64_t)v * 1000;
		return DBCRON_OK;
	}
	if (parse_rfc3339(s, ms) == 0)
		return DBCRON_OK;
	return dbcron_err_set(err, DBCRON_EPARSE,
			      "time '%s': not RFC 3339 (2026-01-31T09:00:00Z), epoch seconds, now or now+DUR",
			      s);
}

size_t dbcron__format_rfc3339(int64_t ms, int32_t offset, int with_ms,
			      char *buf, size_t len)
{
	int64_t local = ms + (int64_t)offset * 1000;
	int64_t secs = local >= 0 ? local / 1000 : -((-local + 999) / 1000);
	int msec = (int)(local - secs * 1000);
	int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
	int64_t rem = secs - days * 86400;
	int64_t y;
	unsigned m, d;
	dbcron__civil_from_days(days, &y, &m, &d);
	char tz[16];
	if (offset == 0) {
		snprintf(tz, sizeof(tz), "Z");
	} else {
		int a = offset < 0 ? -offset : offset;
		snprintf(tz, sizeof(tz), "%c%02d:%02d", offset < 0 ? '-' : '+',
			 a / 3600, (a / 60) % 60);
	}
	char frac[8] = "";
	if (with_ms)
		snprintf(frac, sizeof(frac), ".%03d", msec);
	int n = snprintf(buf, len, "%04" PRId64 "-%02u-%02uT%02d:%02d:%02d%s%s",
			 y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
			 (int)(rem % 60), frac, tz);
	return n < 0 ? 0 : (size_t)n;
}

size_t dbcron__format_duration(int64_t ms, char *buf, size_t len)
{
	static const struct {
		int64_t unit;
		const char *name;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	size_t used = 0;
	if (len)
		buf[0] = '\0';
	if (ms == 0)
		return (size_t)snprintf(buf, len, "0s");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ms >= units[i].unit) {
			int n = snprintf(buf + (used < len ? used : len),
					 used < len ? len - used : 0, "%" PRId64 "%s",
					 ms / units[i].unit, units[i].name);
			if (n > 0)
				used += (size_t)n;
			ms %= units[i].unit;
		}
	}
	return used;
}
