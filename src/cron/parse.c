/*
 * Cron expression parser: text -> struct dbcron_cron.
 *
 * Owns the grammar of both dialects and every rejection message.  The
 * dialect follows from the field count (5 -> Unix/cronie, 6 or 7 ->
 * Quartz; @macros are Unix).  Invariants kept for next.c: every time
 * field set is non-empty, dmask/ymask hold the complete day rule, and
 * `possible` is false exactly when no month shape can ever match, so a
 * never-firing expression answers "none" without searching.
 *
 * Strict where Quartz is sloppy: `*` followed by anything but a step, an
 * empty list element, a step of 0 or larger than the field, names longer
 * than three letters and extra fields are errors, never ignored.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "cron/cron_int.h"
#include "cron/spread.h"

#define MAX_EXPR_LEN 1024
#define MAX_FIELD_ITEMS 100

struct field_def {
	const char *name;
	int lo, hi, stepmax;
};

static const struct field_def quartz_defs[CF_COUNT] = {
	[CF_SEC] = {"second", 0, 59, 59},
	[CF_MIN] = {"minute", 0, 59, 59},
	[CF_HOUR] = {"hour", 0, 23, 23},
	[CF_DOM] = {"day-of-month", 1, 31, 31},
	[CF_MON] = {"month", 1, 12, 12},
	[CF_DOW] = {"day-of-week", 1, 7, 7},
	[CF_YEAR] = {"year", 1970, 2099, 129},
};

static const struct field_def unix_defs[CF_COUNT] = {
	[CF_MIN] = {"minute", 0, 59, 59},
	[CF_HOUR] = {"hour", 0, 23, 23},
	[CF_DOM] = {"day-of-month", 1, 31, 31},
	[CF_MON] = {"month", 1, 12, 12},
	[CF_DOW] = {"day-of-week", 0, 7, 7},
};

static const char *const month_names[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
					    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const day_names[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

static const uint8_t mdays[2][13] = {
	{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
	{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
};
/* Days before month m (index m - 1). */
static const uint16_t cumdays[2][13] = {
	{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365},
	{0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366},
};

struct pctx {
	dbcron_cron_dialect dialect;
	int fieldno;            /* 1-based position in the expression */
	enum cron_field f;
	const struct field_def *def;
	const char *item;       /* current list element, for messages */
	size_t item_len;
	dbcron_err *err;
	bool seeded;            /* H has a value to take (parse_seeded) */
	uint64_t seed;
};

static int perr(const struct pctx *x, const char *fmt, ...) DBCRON_PRINTF(2, 3);

static int perr(const struct pctx *x, const char *fmt, ...)
{
	char why[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return dbcron_err_set(x->err, DBCRON_EPARSE, "field %d (%s): %s",
			      x->fieldno, x->def->name, why);
}

/* Digits only; no sign, at most 5 digits so nothing overflows. */
static int parse_uint(const struct pctx *x, const char **pp, const char *end,
		      const char *what, int *out)
{
	const char *p = *pp;
	int v = 0, n = 0;

	while (p < end && isdigit((unsigned char)*p)) {
		if (++n > 5)
			return perr(x, "number in '%.*s' is too large",
				    (int)x->item_len, x->item);
		v = v * 10 + (*p - '0');
		p++;
	}
	if (n == 0) {
		if (p < end)
			return perr(x, "expected %s at '%.*s' in '%.*s'", what,
				    (int)(end - p), p, (int)x->item_len, x->item);
		return perr(x, "missing %s at the end of '%.*s'", what,
			    (int)x->item_len, x->item);
	}
	*pp = p;
	*out = v;
	return 0;
}

static int name_value(const struct pctx *x, const char *s)
{
	if (x->f == CF_MON) {
		for (int i = 0; i < 12; i++)
			if (strncasecmp(s, month_names[i], 3) == 0)
				return i + 1;
	} else if (x->f == CF_DOW) {
		for (int i = 0; i < 7; i++)
			if (strncasecmp(s, day_names[i], 3) == 0)
				return x->dialect == DBCRON_CRON_QUARTZ ? i + 1 : i;
	}
	return -1;
}

/*
 * A value: a number in the field's range, or (month, day-of-week) a
 * three-letter name.  `l_suffix` lets a trailing L follow a day name
 * ("FRIL", Quartz's last Friday).
 */
static int parse_value(const struct pctx *x, const char **pp, const char *end,
		       bool l_suffix, int *out)
{
	const char *p = *pp;

	if (p < end && isalpha((unsigned char)*p)) {
		const char *q = p;
		while (q < end && isalpha((unsigned char)*q))
			q++;
		size_t n = (size_t)(q - p);
		if (l_suffix && n == 4 && toupper((unsigned char)p[3]) == 'L')
			n = 3;
		int v = -1;
		if (n == 3)
			v = name_value(x, p);
		if (v < 0) {
			if (x->f == CF_MON)
				return perr(x, "'%.*s' is not a month name (use JAN-DEC or 1-12)",
					    (int)(q - p), p);
			if (x->f == CF_DOW)
				return perr(x, "'%.*s' is not a day name (use SUN-SAT or %d-7)",
					    (int)(q - p), p, x->def->lo);
			return perr(x, "unexpected '%.*s' in '%.*s' (names are only allowed in the month and day-of-week fields)",
				    (int)(q - p), p, (int)x->item_len, x->item);
		}
		*pp = p + n;
		*out = v;
		return 0;
	}
	int v, rc = parse_uint(x, &p, end, "a number", &v);
	if (rc)
		return rc;
	if (v < x->def->lo || v > x->def->hi)
		return perr(x, "%d is out of range %d-%d", v, x->def->lo, x->def->hi);
	*pp = p;
	*out = v;
	return 0;
}

static int parse_step(const struct pctx *x, const char **pp, const char *end,
		      struct cron_item *it)
{
	int step, rc;

	(*pp)++; /* the '/' */
	rc = parse_uint(x, pp, end, "a step after '/'", &step);
	if (rc)
		return rc;
	if (step < 1 || step > x->def->stepmax)
		return perr(x, "step %d in '%.*s' is out of range 1-%d", step,
			    (int)x->item_len, x->item, x->def->stepmax);
	it->step = (uint8_t)step;
	return 0;
}

static int trailing(const struct pctx *x, const char *p, const char *end)
{
	if (p == end)
		return 0;
	return perr(x, "unexpected '%.*s' in '%.*s'", (int)(end - p), p,
		    (int)x->item_len, x->item);
}

/* Quartz-only syntax in a Unix expression gets a message that says so. */
static bool quartz_syntax(const char *s, size_t n)
{
	if (memchr(s, '#', n) || memchr(s, '?', n))
		return true;
	if (toupper((unsigned char)s[0]) == 'L' &&
	    (n == 1 || s[1] == '-' || (n == 2 && toupper((unsigned char)s[1]) == 'W')))
		return true;
	char last = (char)toupper((unsigned char)s[n - 1]);
	if (n < 2 || (last != 'L' && last != 'W'))
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int parse_dom_special(const struct pctx *x, const char *p, const char *end,
			     struct cron_item *it, bool *done)
{
	int rc;
	size_t n = (size_t)(end - p);

	*done = false;
	if (toupper((unsigned char)*p) == 'L') {
		int off = 0;
		p++;
		if (p < end && *p == '-') {
			p++;
			rc = parse_uint(x, &p, end, "a day count after 'L-'", &off);
			if (rc)
				return rc;
			if (off > 30)
				return perr(x, "offset %d in '%.*s' is out of range 0-30", off,
					    (int)x->item_len, x->item);
		}
		it->kind = CI_LAST;
		it->arg = (int16_t)off;
		if (p < end && toupper((unsigned char)*p) == 'W') {
			it->w = 1;
			p++;
		}
		*done = true;
		return trailing(x, p, end);
	}
	if (n >= 2 && toupper((unsigned char)end[-1]) == 'W') {
		const char *q = p;
		int v;
		for (; q < end - 1; q++)
			if (!isdigit((unsigned char)*q))
				return perr(x, "'W' needs a single day before it (e.g. 15W), not '%.*s'",
					    (int)x->item_len, x->item);
		q = p;
		rc = parse_value(x, &q, end - 1, false, &v);
		if (rc)
			return rc;
		it->kind = CI_NEAR;
		it->lo = (int16_t)v;
		*done = true;
		return 0;
	}
	if (n == 1 && toupper((unsigned char)*p) == 'W')
		return perr(x, "'W' needs a day before it (e.g. 15W or LW)");
	return 0;
}

static int parse_dow_special(const struct pctx *x, const char *p, const char *end,
			     struct cron_item *it, bool *done)
{
	int rc, v;
	const char *hash = memchr(p, '#', (size_t)(end - p));

	*done = false;
	if (end - p == 1 && toupper((unsigned char)*p) == 'L') {
		/* Quartz: a lone L in day-of-week is 7, Saturday. */
		it->kind = CI_VALUE;
		it->lo = 7;
		it->arg = 1;
		*done = true;
		return 0;
	}
	if (hash) {
		int k;
		rc = parse_value(x, &p, hash, false, &v);
		if (rc)
			return rc;
		if (p != hash)
			return perr(x, "'#' needs a single day before it (e.g. 6#3 or FRI#3), not '%.*s'",
				    (int)x->item_len, x->item);
		p = hash + 1;
		rc = parse_uint(x, &p, end, "a week number after '#'", &k);
		if (rc)
			return rc;
		if (k < 1 || k > 5)
			return perr(x, "week %d in '%.*s' is out of range 1-5", k,
				    (int)x->item_len, x->item);
		it->kind = CI_NTH;
		it->lo = (int16_t)v;
		it->arg = (int16_t)k;
		*done = true;
		return trailing(x, p, end);
	}
	if (end - p >= 2 && toupper((unsigned char)end[-1]) == 'L') {
		const char *q = p;
		rc = parse_value(x, &q, end - 1, true, &v);
		if (rc)
			return rc;
		if (q != end - 1)
			return perr(x, "'L' needs a single day before it (e.g. 6L or FRIL), not '%.*s'",
				    (int)x->item_len, x->item);
		it->kind = CI_LASTWD;
		it->lo = (int16_t)v;
		*done = true;
	}
	return 0;
}

/*
 * H, H(a-b), H/n, H(a-b)/n: a value (or a step's start) chosen by the
 * seed, so that many jobs with one expression spread over the field
 * instead of all firing at its first value.  The value of field f is
 * lo + mix(seed, f) % count; a step starts at lo + mix % n (n at most the
 * count, so the start is in the range) and goes on every n to the end.
 * Day-of-month stays within 1-28 (every month has those days); a 5-field
 * day-of-week within 0-6 (0 and 7 are both Sunday).  The year has no H:
 * a job that fires in one year chosen by its name is no use to anyone.
 */
static int parse_hash(const struct pctx *x, const char *p, const char *end,
		      struct cron_item *it)
{
	int lo = x->def->lo, hi = x->def->hi, rc;

	if (x->f == CF_YEAR)
		return perr(x, "H cannot apply to the year field");
	if (x->f == CF_DOM)
		hi = 28;
	else if (x->f == CF_DOW && x->dialect == DBCRON_CRON_UNIX)
		hi = 6;
	p++;
	if (p < end && *p == '(') {
		const char *close = memchr(p, ')', (size_t)(end - p));
		p++;
		if (!close)
			return perr(x, "'%.*s': H( needs a range and a ')', e.g. H(0-29)",
				    (int)x->item_len, x->item);
		if ((rc = parse_value(x, &p, close, false, &lo)))
			return rc;
		if (p == close || *p != '-')
			return perr(x, "'%.*s': H( needs a range, e.g. H(0-29)",
				    (int)x->item_len, x->item);
		p++;
		if ((rc = parse_value(x, &p, close, false, &hi)) || (rc = trailing(x, p, close)))
			return rc;
		if (lo > hi)
			return perr(x, "range '%.*s' runs backwards", (int)x->item_len, x->item);
		if (x->f == CF_DOM && hi > 28)
			return perr(x, "'%.*s': H in day-of-month stays within 1-28 (every month has those days)",
				    (int)x->item_len, x->item);
		p = close + 1;
	}
	int count = hi - lo + 1;
	uint64_t m = dbcron__spread_mix(x->seed, (int)x->f);
	it->lo = it->hi = (int16_t)(lo + (int)(m % (uint64_t)count));
	it->kind = CI_VALUE;
	it->h = (uint8_t)count;
	if (p < end && *p == '/') {
		if ((rc = parse_step(x, &p, end, it)))
			return rc;
		int n = it->step < count ? it->step : count;
		it->kind = CI_RANGE;
		it->lo = (int16_t)(lo + (int)(m % (uint64_t)n));
		it->hi = (int16_t)hi;
		it->h = (uint8_t)n;
	}
	if ((rc = trailing(x, p, end)))
		return rc;
	/* the syntax is checked first, so a bad H is refused as such */
	if (!x->seeded)
		return dbcron_err_set(x->err, DBCRON_EPARSE,
				      "H needs a job: its value comes from the job's name (cron next --job NAME)");
	return 0;
}

static int parse_item(const struct pctx *x, struct cron_item *it)
{
	const char *p = x->item, *end = x->item + x->item_len;
	bool quartz = x->dialect == DBCRON_CRON_QUARTZ;
	int rc, v;

	memset(it, 0, sizeof(*it));
	it->field = (uint8_t)x->f;
	it->step = 1;
	if (p == end)
		return 0; /* caller reports the empty element */
	if (!quartz && quartz_syntax(p, x->item_len))
		return perr(x, "'%.*s' is Quartz syntax; L, W, # and ? need the 6-field Quartz form",
			    (int)x->item_len, x->item);
	if (*p == '?') {
		if (x->f != CF_DOM && x->f != CF_DOW)
			return perr(x, "'?' is only allowed in day-of-month or day-of-week");
		it->kind = CI_ANY;
		return trailing(x, p + 1, end);
	}
	if (toupper((unsigned char)*p) == 'H')
		return parse_hash(x, p, end, it);
	if (*p == '*') {
		it->kind = CI_STAR;
		it->lo = (int16_t)x->def->lo;
		it->hi = (int16_t)x->def->hi;
		p++;
		if (p < end && *p == '/') {
			rc = parse_step(x, &p, end, it);
			if (rc)
				return rc;
		}
		return trailing(x, p, end);
	}
	if (*p == '/')
		return perr(x, "'%.*s' has no start value (write */N or 0/N)",
			    (int)x->item_len, x->item);
	if (quartz && x->f == CF_DOM) {
		bool done;
		rc = parse_dom_special(x, p, end, it, &done);
		if (rc || done)
			return rc;
	}
	if (quartz && x->f == CF_DOW) {
		bool done;
		rc = parse_dow_special(x, p, end, it, &done);
		if (rc || done)
			return rc;
	}
	rc = parse_value(x, &p, end, false, &v);
	if (rc)
		return rc;
	it->kind = CI_VALUE;
	it->lo = it->hi = (int16_t)v;
	if (p < end && *p == '-') {
		p++;
		rc = parse_value(x, &p, end, false, &v);
		if (rc)
			return rc;
		it->kind = CI_RANGE;
		it->hi = (int16_t)v;
		if (it->lo > it->hi && (!quartz || x->f == CF_YEAR))
			return perr(x, "range '%.*s' runs backwards%s", (int)x->item_len, x->item,
				    quartz ? "" : " (5-field Unix ranges do not wrap around; split it, e.g. 22-23,0-2)");
	}
	if (p < end && *p == '/') {
		if (it->kind == CI_VALUE) {
			if (!quartz)
				return perr(x, "a step needs '*' or a range in 5-field Unix expressions: write '%d-%d/...' instead of '%.*s'",
					    it->lo, x->def->hi, (int)x->item_len, x->item);
			it->kind = CI_FROM;
			it->hi = (int16_t)x->def->hi;
		}
		rc = parse_step(x, &p, end, it);
		if (rc)
			return rc;
	}
	return trailing(x, p, end);
}

/* Is this item one Quartz allows only alone in its field? */
static bool lone_item(const struct cron_item *it)
{
	return it->kind == CI_ANY || it->kind == CI_LAST || it->kind == CI_NEAR ||
	       it->kind == CI_LASTWD || it->kind == CI_NTH ||
	       (it->field == CF_DOW && it->kind == CI_VALUE && it->arg == 1);
}

static int parse_field(struct pctx *x, const char *s, size_t n,
		       struct cron_item *items, size_t *count)
{
	size_t k = 0;
	const char *p = s, *end = s + n;

	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *iend = comma ? comma : end;
		if (k == MAX_FIELD_ITEMS)
			return perr(x, "more than %d list elements", MAX_FIELD_ITEMS);
		x->item = p;
		x->item_len = (size_t)(iend - p);
		if (x->item_len == 0)
			return perr(x, "empty list element in '%.*s'", (int)n, s);
		int rc = parse_item(x, &items[k]);
		if (rc)
			return rc;
		k++;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (k > 1)
		for (size_t i = 0; i < k; i++)
			if (lone_item(&items[i]))
				return perr(x, "'%.*s' cannot be combined with other values in a list",
					    (int)n, s);
	*count = k;
	return 0;
}

/* Quartz's reading of a range that runs past the field's end: 22-2 in
 * hours is 22,23,0,1,2; FRI-MON is 6,7,1,2 (1-based fields never hold 0). */
static void add_range(uint64_t *bits, enum cron_field f, int lo, int hi, int step)
{
	int max = 0;

	if (hi < lo) {
		switch (f) {
		case CF_SEC:
		case CF_MIN:
			max = 60;
			break;
		case CF_HOUR:
			max = 24;
			break;
		case CF_DOM:
			max = 31;
			break;
		case CF_MON:
			max = 12;
			break;
		case CF_DOW:
			max = 7;
			break;
		default:
			return;
		}
		hi += max;
	}
	for (int i = lo; i <= hi; i += step) {
		int v = i;
		if (max) {
			v = i % max;
			if (v == 0 && (f == CF_DOM || f == CF_MON || f == CF_DOW))
				v = max;
		}
		if (f == CF_YEAR) {
			int b = v - 1970;
			bits[b / 64] |= 1ULL << (b % 64);
		} else {
			bits[0] |= 1ULL << v;
		}
	}
}

static int near_weekday(int t, int len, int wd1)
{
	if (t < 1 || t > len)
		return 0;
	int wd = (wd1 + t - 1) % 7;
	if (wd == 6)
		return t == 1 ? 3 : t - 1;
	if (wd == 0)
		return t == len ? t - 2 : t + 1;
	return t;
}

struct day_rules {
	enum cron_dom_rule dom;
	enum cron_dow_rule dow;
	uint32_t dom_bits;   /* DOM_SET: bits 1..31 */
	uint8_t dow_bits;    /* DOW_SET: bit 0 = Sunday */
	int dom_arg, dom_w;  /* DOM_LAST: offset, nearest weekday; DOM_NEAR: day */
	int dow_wd, dow_k;   /* DOW_LASTWD / DOW_NTH: weekday (0 = Sunday), k */
};

static uint32_t dom_days(const struct day_rules *r, int len, int wd1)
{
	int d;

	switch (r->dom) {
	case DOM_SET:
		return r->dom_bits & (uint32_t)((2ULL << len) - 2);
	case DOM_LAST:
		d = len - r->dom_arg;
		if (r->dom_w)
			d = near_weekday(d, len, wd1);
		return d >= 1 ? 1U << d : 0;
	case DOM_NEAR:
		d = near_weekday(r->dom_arg, len, wd1);
		return d ? 1U << d : 0;
	default:
		return 0;
	}
}

static uint32_t dow_days(const struct day_rules *r, int len, int wd1)
{
	uint32_t m = 0;
	int d;

	switch (r->dow) {
	case DOW_SET:
		for (d = 1; d <= len; d++)
			if (r->dow_bits & (1U << ((wd1 + d - 1) % 7)))
				m |= 1U << d;
		return m;
	case DOW_LASTWD:
		d = len - (((wd1 + len - 1) % 7 - r->dow_wd + 7) % 7);
		return 1U << d;
	case DOW_NTH:
		d = 1 + (r->dow_wd - wd1 + 7) % 7 + 7 * (r->dow_k - 1);
		return d <= len ? 1U << d : 0;
	default:
		return 0;
	}
}

static void build(struct dbcron_cron *c, const struct day_rules *r)
{
	bool quartz = c->dialect == DBCRON_CRON_QUARTZ;

	for (int len = 28; len <= 31; len++)
		for (int wd1 = 0; wd1 < 7; wd1++) {
			uint32_t dm = dom_days(r, len, wd1), wm = dow_days(r, len, wd1), m;
			if (quartz)
				m = r->dom == DOM_ANY ? wm : dm;
			else if (c->dom_star || c->dow_star)
				m = dm & wm;
			else
				m = dm | wm;
			c->dmask[len - 28][wd1] = m;
		}
	c->possible = false;
	for (int leap = 0; leap < 2; leap++)
		for (int wdj = 0; wdj < 7; wdj++) {
			uint16_t ym = 0;
			for (int mo = 1; mo <= 12; mo++) {
				if (!(c->mon & (1U << mo)))
					continue;
				int wd1 = (wdj + cumdays[leap][mo - 1]) % 7;
				if (c->dmask[mdays[leap][mo] - 28][wd1])
					ym |= (uint16_t)(1U << mo);
			}
			c->ymask[leap][wdj] = ym;
			if (ym)
				c->possible = true;
		}
}

/* Fold the items of each field into bitsets and day rules. */
static void compile(struct dbcron_cron *c)
{
	struct day_rules r = {DOM_SET, DOW_SET, 0, 0, 0, 0, 0, 0};
	bool quartz = c->dialect == DBCRON_CRON_QUARTZ;
	const struct field_def *defs = quartz ? quartz_defs : unix_defs;
	uint64_t dom = 0, dow = 0, mon = 0;

	c->sec = quartz ? 0 : 1; /* Unix fires at second 0 */
	c->any_year = true;
	for (int f = 0; f < CF_COUNT; f++) {
		for (unsigned i = c->first[f]; i < c->first[f + 1]; i++) {
			const struct cron_item *it = &c->items[i];
			uint64_t *dst = f == CF_SEC ? &c->sec : f == CF_MIN ? &c->min
				      : f == CF_HOUR ? &c->hour : f == CF_DOM ? &dom
				      : f == CF_MON ? &mon : f == CF_DOW ? &dow : c->years;
			switch (it->kind) {
			case CI_STAR:
				if (f == CF_YEAR && it->step == 1)
					break; /* any year, unbounded */
				if (f == CF_YEAR)
					c->any_year = false;
				add_range(dst, f, defs[f].lo, defs[f].hi, it->step);
				break;
			case CI_VALUE:
			case CI_RANGE:
			case CI_FROM:
				if (f == CF_YEAR)
					c->any_year = false;
				add_range(dst, f, it->lo, it->hi, it->step);
				break;
			case CI_ANY:
				if (f == CF_DOM)
					r.dom = DOM_ANY;
				else
					r.dow = DOW_ANY;
				break;
			case CI_LAST:
				r.dom = DOM_LAST;
				r.dom_arg = it->arg;
				r.dom_w = it->w;
				break;
			case CI_NEAR:
				r.dom = DOM_NEAR;
				r.dom_arg = it->lo;
				break;
			case CI_LASTWD:
				r.dow = DOW_LASTWD;
				r.dow_wd = it->lo - 1;
				break;
			case CI_NTH:
				r.dow = DOW_NTH;
				r.dow_wd = it->lo - 1;
				r.dow_k = it->arg;
				break;
			}
		}
	}
	r.dom_bits = (uint32_t)dom;
	for (int v = 0; v <= 7; v++)
		if (dow & (1ULL << v))
			r.dow_bits |= (uint8_t)(1U << (quartz ? (v - 1) % 7 : v % 7));
	c->mon = (uint16_t)mon;
	c->year_min = 1970;
	c->year_max = 2099;
	if (!c->any_year) {
		while (!(c->years[(c->year_min - 1970) / 64] & (1ULL << ((c->year_min - 1970) % 64))))
			c->year_min++;
		while (!(c->years[(c->year_max - 1970) / 64] & (1ULL << ((c->year_max - 1970) % 64))))
			c->year_max--;
	}
	build(c, &r);
}

static const struct {
	const char *name, *expansion;
} macros[] = {
	{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"}, {"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

/*
 * The expression without its surrounding blanks, in [*s, *e): refused when
 * empty, too long, or holding a byte that is neither a blank nor printable
 * ASCII (positions are counted from the start of expr, blanks included).
 */
static int trim_expr(const char *expr, const char **s, const char **e, dbcron_err *err)
{
	const char *b = expr, *end;
	while (*b == ' ' || *b == '\t')
		b++;
	end = b + strlen(b);
	while (end > b && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end == b)
		return dbcron_err_set(err, DBCRON_EPARSE, "empty cron expression");
	if (end - b > MAX_EXPR_LEN)
		return dbcron_err_set(err, DBCRON_EPARSE, "cron expression too long (%zu bytes, at most %d)",
				      (size_t)(end - b), MAX_EXPR_LEN);
	for (const char *p = b; p < end; p++)
		if (*p != ' ' && *p != '\t' && (*p < 0x21 || *p > 0x7e))
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "unexpected byte 0x%02x at position %zu of the cron expression",
					      (unsigned char)*p, (size_t)(p - expr) + 1);
	*s = b;
	*e = end;
	return DBCRON_OK;
}

/* An @macro in [*s, *e) becomes its 5-field expansion; anything else is
 * left as it is.  @reboot and unknown names are refused. */
static int expand_macro(const char **s, const char **e, dbcron_err *err)
{
	size_t len = (size_t)(*e - *s), i;
	if (**s != '@')
		return DBCRON_OK;
	for (i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
		if (strlen(macros[i].name) == len && strncasecmp(macros[i].name, *s, len) == 0)
			break;
	if (i == sizeof(macros) / sizeof(macros[0])) {
		if (len == 7 && strncasecmp(*s, "@reboot", 7) == 0)
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "@reboot is not a schedule; dbcron does not support it");
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "unknown macro '%.*s' (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)",
				      (int)len, *s);
	}
	*s = macros[i].expansion;
	*e = *s + strlen(*s);
	return DBCRON_OK;
}

/* The blank-separated fields of [s, e) into fs/fl (room for 8): 5 (Unix)
 * or 6-7 (Quartz), else refused. */
static int split_fields(const char *s, const char *e, const char *fs[8], size_t fl[8], size_t *nf,
			dbcron_err *err)
{
	*nf = 0;
	for (const char *p = s; p < e;) {
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (p == e)
			break;
		const char *q = p;
		while (q < e && *q != ' ' && *q != '\t')
			q++;
		if (*nf == 8)
			return dbcron_err_set(err, DBCRON_EPARSE,
					      "too many fields: expected 5 (Unix) or 6-7 (Quartz); extra text '%.*s'",
					      (int)(e - p), p);
		fs[*nf] = p;
		fl[(*nf)++] = (size_t)(q - p);
		p = q;
	}
	if (*nf < 5 || *nf > 7)
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "expected 5 fields (Unix: minute hour day-of-month month day-of-week) or 6-7 (Quartz: second minute hour day-of-month month day-of-week [year]), found %zu",
				      *nf);
	return DBCRON_OK;
}

static int parse_expr(const char *expr, bool seeded, uint64_t seed, dbcron_cron **out,
		      dbcron_err *err)
{
	struct cron_item items[CF_COUNT * MAX_FIELD_ITEMS];
	const char *fs[8];
	size_t fl[8], nf = 0, total = 0;
	uint16_t first[CF_COUNT + 1] = {0};
	const char *s = NULL, *e = NULL;
	int rc;

	*out = NULL;
	if (!expr)
		return dbcron_err_set(err, DBCRON_EPARSE, "empty cron expression");
	if ((rc = trim_expr(expr, &s, &e, err)))
		return rc;
	/* the text kept is the one given (trimmed), not a macro's expansion */
	const char *text = s;
	size_t text_len = (size_t)(e - s);
	if ((rc = expand_macro(&s, &e, err)) || (rc = split_fields(s, e, fs, fl, &nf, err)))
		return rc;

	struct pctx x = {0};
	x.dialect = nf == 5 ? DBCRON_CRON_UNIX : DBCRON_CRON_QUARTZ;
	x.err = err;
	x.seeded = seeded;
	x.seed = seed;
	int base = nf == 5 ? CF_MIN : CF_SEC;
	for (int f = 0; f < CF_COUNT; f++) {
		first[f] = (uint16_t)total;
		int idx = f - base;
		if (idx < 0 || (size_t)idx >= nf)
			continue;
		size_t count = 0;
		x.fieldno = idx + 1;
		x.f = (enum cron_field)f;
		x.def = x.dialect == DBCRON_CRON_QUARTZ ? &quartz_defs[f] : &unix_defs[f];
		rc = parse_field(&x, fs[idx], fl[idx], &items[total], &count);
		if (rc)
			return rc;
		total += count;
	}
	first[CF_COUNT] = (uint16_t)total;

	bool dom_any = items[first[CF_DOM]].kind == CI_ANY;
	bool dow_any = items[first[CF_DOW]].kind == CI_ANY;
	if (x.dialect == DBCRON_CRON_QUARTZ && dom_any == dow_any)
		return dbcron_err_set(err, DBCRON_EPARSE,
				      "field 4 (day-of-month) and field 6 (day-of-week): exactly one of them must be '?' in a Quartz expression (%s)",
				      dom_any ? "both are '?'" : "neither is '?'; e.g. '* * ?' or '? * MON'");

	struct dbcron_cron *c = dbcron__calloc(1, sizeof(*c) + total * sizeof(c->items[0]));
	if (!c)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory parsing a cron expression");
	c->text = dbcron__strndup(text, text_len);
	if (!c->text) {
		dbcron__free(c);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory parsing a cron expression");
	}
	c->dialect = x.dialect;
	c->nfields = (uint8_t)nf;
	c->nitems = (uint16_t)total;
	memcpy(c->first, first, sizeof(first));
	memcpy(c->items, items, total * sizeof(items[0]));
	c->wild = fs[CF_MIN - base][0] == '*' || fs[CF_HOUR - base][0] == '*';
	c->dom_star = fs[CF_DOM - base][0] == '*';
	c->dow_star = fs[CF_DOW - base][0] == '*';
	compile(c);
	*out = c;
	return DBCRON_OK;
}

int dbcron_cron_parse(const char *expr, dbcron_cron **out, dbcron_err *err)
{
	return parse_expr(expr, false, 0, out, err);
}

int dbcron_cron_parse_seeded(const char *expr, uint64_t seed, dbcron_cron **out,
			     dbcron_err *err)
{
	return parse_expr(expr, true, seed, out, err);
}

int dbcron__cron_h_slots(const dbcron_cron *c, int *field)
{
	for (int f = 0; f < CF_COUNT; f++)
		for (unsigned i = c->first[f]; i < c->first[f + 1]; i++)
			if (c->items[i].h) {
				*field = f;
				return c->items[i].h;
			}
	return 0;
}

void dbcron_cron_free(dbcron_cron *c)
{
	if (!c)
		return;
	dbcron__free(c->text);
	dbcron__free(c);
}

dbcron_cron_dialect dbcron_cron_get_dialect(const dbcron_cron *c)
{
	return c->dialect;
}
