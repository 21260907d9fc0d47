/*
 * Next fire time: bitsets -> the first matching instant after a given one.
 *
 * The search runs in local wall time (seconds since 1970 as if the zone
 * were UTC) and skips field by field, year -> month -> day -> hour ->
 * minute -> second, jumping to the next set bit and resetting the finer
 * fields, as cronie's cronnext does: never a loop over seconds.  A year
 * costs one table lookup (ymask), a month another (dmask), so the worst
 * case, 401 years with no match, is a few thousand cheap steps.  The 400
 * year Gregorian cycle makes 401 years an exact bound, not a guess: any
 * (month, day, weekday) pattern that exists recurs within it.
 *
 * Wall time is mapped back to UTC one offset interval at a time, and the
 * DST rules of cronie's daemon (docs/cron.md) are applied at interval
 * borders: a fixed time in a gap fires once at the gap's end, a fixed time
 * in a repeated hour fires on its first pass only, and a job whose minute
 * or hour field starts with '*' (c->wild) follows the clock.
 */
#include <stdint.h>

#include "core/timeutil.h"
#include "cron/cron_int.h"

#define NONE INT64_MAX
/* The calendar we answer for: 0001-01-01 .. 9999-12-31 (UTC-ish). */
#define T_MIN (-62135596800LL)
#define T_MAX (253402300800LL)

static const uint8_t mdays[2][13] = {
	{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
	{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
};
static const uint16_t cumdays[2][13] = {
	{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365},
	{0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366},
};

static inline int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static inline int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* 0 = Sunday; 1970-01-01 was a Thursday. */
static inline int weekday(int64_t days)
{
	int64_t w = (days + 4) % 7;
	return (int)(w < 0 ? w + 7 : w);
}

static int64_t next_year(const dbcron_cron *c, int64_t y)
{
	if (y < c->year_min)
		return c->year_min;
	for (; y <= c->year_max; y++) {
		int b = (int)(y - 1970);
		uint64_t w = c->years[b / 64] >> (b % 64);
		if (w)
			return y + __builtin_ctzll(w);
		y += 63 - b % 64;
	}
	return -1;
}

/*
 * First matching wall time >= w.  Returns NONE when there is none before
 * year 10000 or within 401 years; may return any value >= limit when there
 * is none before limit (callers only compare).
 */
static int64_t match_from(const dbcron_cron *c, int64_t w, int64_t limit)
{
	int64_t days = floordiv(w, 86400), y, ystop;
	int sod = (int)(w - days * 86400);
	unsigned um, ud;
	int m, d, h = sod / 3600, mi = sod / 60 % 60, s = sod % 60;

	if (!c->possible)
		return NONE;
	dbcron__civil_from_days(days, &y, &um, &ud);
	m = (int)um;
	d = (int)ud;
	ystop = y + 401;
	for (;;) {
		if (!c->any_year) {
			int64_t ny = next_year(c, y);
			if (ny < 0)
				return NONE;
			if (ny != y) {
				y = ny;
				m = d = 1;
				h = mi = s = 0;
			}
		}
		if (y > 9999 || y > ystop)
			return NONE;
		int leap = is_leap(y);
		int64_t jan1 = dbcron__days_from_civil(y, 1, 1);
		int wdj = weekday(jan1);
		unsigned mm = (unsigned)c->ymask[leap][wdj] >> m << m;
		if (!mm) {
			y++;
			m = d = 1;
			h = mi = s = 0;
			continue;
		}
		int m2 = __builtin_ctz(mm);
		if (m2 != m) {
			m = m2;
			d = 1;
			h = mi = s = 0;
		}
		int64_t first = jan1 + cumdays[leap][m - 1];
		if (first * 86400 >= limit)
			return limit;
		int len = mdays[leap][m];
		int wd1 = (wdj + cumdays[leap][m - 1]) % 7;
		uint64_t dm = (uint64_t)c->dmask[len - 28][wd1] >> d << d;
		if (!dm) {
			if (++m > 12) {
				y++;
				m = 1;
			}
			d = 1;
			h = mi = s = 0;
			continue;
		}
		int d2 = __builtin_ctzll(dm);
		if (d2 != d) {
			d = d2;
			h = mi = s = 0;
		}
		uint64_t hm = c->hour >> h << h;
		if (!hm) {
			d++;
			h = mi = s = 0;
			continue;
		}
		int h2 = __builtin_ctzll(hm);
		if (h2 != h) {
			h = h2;
			mi = s = 0;
		}
		uint64_t mim = c->min >> mi << mi;
		if (!mim) {
			h++;
			mi = s = 0;
			continue;
		}
		int mi2 = __builtin_ctzll(mim);
		if (mi2 != mi) {
			mi = mi2;
			s = 0;
		}
		uint64_t sm = c->sec >> s << s;
		if (!sm) {
			mi++;
			s = 0;
			continue;
		}
		s = __builtin_ctzll(sm);
		return (first + d - 1) * 86400 + h * 3600 + mi * 60 + s;
	}
}

int dbcron_cron_next(const dbcron_cron *c, const dbcron_tz *tz, int64_t after,
		     int64_t *next)
{
	if (after >= T_MAX)
		return 0;
	if (after < T_MIN)
		after = T_MIN - 1;
	if (!tz || tz->n == 0) {
		int32_t o = tz ? tz->off[0] : 0;
		int64_t w = match_from(c, after + o + 1, NONE);
		if (w == NONE || w - o >= T_MAX)
			return 0;
		*next = w - o;
		return 1;
	}

	const int64_t *at = tz->at;
	const int32_t *off = tz->off;
	uint32_t n = tz->n, k = dbcron__tz_interval(tz, after);
	int64_t lo = after + off[k] + 1;
	/* A fixed time whose wall clock repeats fired on the first pass. */
	if (!c->wild && k > 0 && off[k - 1] > off[k] && lo < at[k - 1] + off[k - 1])
		lo = at[k - 1] + off[k - 1];
	int64_t wlo = lo, w = match_from(c, lo, NONE);

	for (;;) {
		if (w == NONE)
			return 0;
		if (k == n || w < at[k] + off[k]) {
			if (w - off[k] >= T_MAX)
				return 0;
			*next = w - off[k];
			return 1;
		}
		/* w lies past this interval.  A spring-forward gap hides the
		 * wall times [at[k] + off[k], at[k] + off[k + 1]): a fixed
		 * job due in there fires once, when the gap ends. */
		if (!c->wild && off[k + 1] > off[k] && w < at[k] + off[k + 1]) {
			*next = at[k];
			return 1;
		}
		k++;
		lo = at[k - 1] + off[k];
		if (!c->wild && off[k - 1] > off[k])
			lo = at[k - 1] + off[k - 1];
		if (lo < wlo) {
			/* A fall-back repeats wall times already searched:
			 * look again, but only up to what we have. */
			int64_t w2 = match_from(c, lo, wlo);
			if (w2 < wlo)
				w = w2;
			wlo = lo;
		} else if (w < lo) {
			wlo = lo;
			w = match_from(c, lo, NONE);
		}
	}
}
