/*
 * TZif validation (RFC 8536): owns the rule that no byte of a zone file
 * reaches GLib before every count, index and offset in it has been checked
 * against the file's real size.
 *
 * Why: GLib's GTimeZone trusts the file.  It computes where the 64-bit
 * block starts from the counts of the 32-bit header and indexes
 * designations and types without bounds checks, so a truncated or corrupt
 * file under TZDIR made dbcron crash (SIGSEGV inside GLib) or quietly read
 * a zone as UTC.  This file is pure: bytes in, a verdict and a reason out;
 * tz.c finds and reads the file.
 *
 * What is checked, for the version 1 block and, from version 2 on, for the
 * 64-bit block and the footer: the magic and version; that the counts fit
 * the file exactly (nothing missing, nothing after the footer); isutcnt and
 * isstdcnt 0 or typecnt; typecnt and charcnt not 0; every transition type
 * below typecnt; transition and leap-second times strictly ascending;
 * offsets within RFC 8536's range; isdst and the indicators 0 or 1;
 * designation indexes inside the designations, which end with a NUL; the
 * footer one line holding a POSIX TZ rule that GLib's parser accepts.
 * Counts are summed in 64 bits, so no header can make the arithmetic wrap.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cron/cron_int.h"

#define HEADER_LEN 44
/* RFC 8536 section 3.2: utoff SHOULD be in [-89999, 93599] (-25h..26h). */
#define UTOFF_MIN (-89999)
#define UTOFF_MAX 93599

typedef struct counts {
	uint32_t isut, isstd, leap, time, type, chars;
} counts;

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int64_t time_at(const unsigned char *p, int tsize)
{
	return tsize == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
}

static bool bad(char *why, size_t cap, const char *fmt, ...) DBCRON_PRINTF(3, 4);

static bool bad(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (cap)
		vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return false;
}

static uint64_t block_len(const counts *c, int tsize)
{
	return (uint64_t)c->time * (uint64_t)(tsize + 1) + (uint64_t)c->type * 6 + c->chars +
	       (uint64_t)c->leap * (uint64_t)(tsize + 4) + c->isstd + c->isut;
}

/* The header at data[at]; its block must fit in len.  which names it in
 * messages ("version 1", "64-bit"). */
static bool check_header(const unsigned char *data, size_t len, size_t at, const char *which,
			 int tsize, counts *c, char *why, size_t cap)
{
	if (len - at < HEADER_LEN)
		return bad(why, cap, "truncated: the %s header ends at byte %zu, the file at %zu",
			   which, at + HEADER_LEN, len);
	const unsigned char *h = data + at;
	if (memcmp(h, "TZif", 4) != 0)
		return bad(why, cap, "no TZif magic at byte %zu (%s header)", at, which);
	c->isut = be32(h + 20);
	c->isstd = be32(h + 24);
	c->leap = be32(h + 28);
	c->time = be32(h + 32);
	c->type = be32(h + 36);
	c->chars = be32(h + 40);
	if (c->type == 0 || c->chars == 0)
		return bad(why, cap, "%s header: %s count is 0", which,
			   c->type == 0 ? "local time type" : "designation character");
	if ((c->isut && c->isut != c->type) || (c->isstd && c->isstd != c->type))
		return bad(why, cap,
			   "%s header: %" PRIu32 " UT and %" PRIu32 " standard indicators for %" PRIu32
			   " types (each must be 0 or the type count)",
			   which, c->isut, c->isstd, c->type);
	uint64_t need = block_len(c, tsize);
	if (need > len - at - HEADER_LEN)
		return bad(why, cap,
			   "truncated: the %s header's counts need %" PRIu64
			   " bytes of data after byte %zu, the file has %zu",
			   which, need, at + HEADER_LEN, len - at - HEADER_LEN);
	return true;
}

/* The data block after the header at data[at], sizes already checked. */
static bool check_block(const unsigned char *data, size_t at, const char *which, int tsize,
			const counts *c, char *why, size_t cap)
{
	const unsigned char *p = data + at + HEADER_LEN;
	const unsigned char *types = p + (size_t)c->time * (size_t)tsize;
	const unsigned char *ttinfo = types + c->time;
	const unsigned char *chars = ttinfo + (size_t)c->type * 6;
	const unsigned char *leaps = chars + c->chars;
	const unsigned char *isstd = leaps + (size_t)c->leap * (size_t)(tsize + 4);
	const unsigned char *isut = isstd + c->isstd;

	for (uint32_t i = 0; i < c->time; i++) {
		if (i && time_at(p + (size_t)i * (size_t)tsize, tsize) <=
				 time_at(p + (size_t)(i - 1) * (size_t)tsize, tsize))
			return bad(why, cap, "%s data: transition %" PRIu32 " is not after the one before",
				   which, i);
		if (types[i] >= c->type)
			return bad(why, cap,
				   "%s data: transition %" PRIu32 " has type %u, there are %" PRIu32,
				   which, i, types[i], c->type);
	}
	for (uint32_t i = 0; i < c->type; i++) {
		const unsigned char *t = ttinfo + (size_t)i * 6;
		int32_t off = (int32_t)be32(t);
		if (off < UTOFF_MIN || off > UTOFF_MAX)
			return bad(why, cap, "%s data: type %" PRIu32 " has UTC offset %" PRId32
				   " s, outside -89999..93599", which, i, off);
		if (t[4] > 1)
			return bad(why, cap, "%s data: type %" PRIu32 " has isdst %u (0 or 1)", which,
				   i, t[4]);
		if (t[5] >= c->chars)
			return bad(why, cap,
				   "%s data: type %" PRIu32 " names designation byte %u of %" PRIu32,
				   which, i, t[5], c->chars);
	}
	if (chars[c->chars - 1] != '\0')
		return bad(why, cap, "%s data: the designations do not end with a NUL", which);
	for (uint32_t i = 1; i < c->leap; i++)
		if (time_at(leaps + (size_t)i * (size_t)(tsize + 4), tsize) <=
		    time_at(leaps + (size_t)(i - 1) * (size_t)(tsize + 4), tsize))
			return bad(why, cap,
				   "%s data: leap second %" PRIu32 " is not after the one before",
				   which, i);
	for (uint32_t i = 0; i < c->isstd; i++)
		if (isstd[i] > 1 || (c->isut && isut[i] > isstd[i]))
			return bad(why, cap, "%s data: bad standard/UT indicator for type %" PRIu32,
				   which, i);
	for (uint32_t i = 0; i < c->isut; i++)
		if (isut[i] > 1)
			return bad(why, cap, "%s data: bad UT indicator for type %" PRIu32, which, i);
	return true;
}

/* ---- the footer: a POSIX TZ string (RFC 8536 section 3.3) ----
 * std offset [dst [offset] ,start[/time],end[/time]], names alphabetic (3
 * or more) or <quoted> (3 or more of A-Z a-z 0-9 + -).  A dst name without
 * a rule is POSIX but GLib cannot read it, so it is refused here with a
 * reason instead of failing inside GLib.  p walks the text, e its end. */

typedef struct tzs {
	const char *p, *e;
} tzs;

static bool tzs_digits(tzs *t, int maxd, long lo, long hi)
{
	long v = 0;
	int n = 0;
	while (t->p < t->e && *t->p >= '0' && *t->p <= '9' && n < maxd) {
		v = v * 10 + (*t->p++ - '0');
		n++;
	}
	return n > 0 && v >= lo && v <= hi;
}

static bool tzs_name(tzs *t)
{
	const char *s = t->p;
	if (t->p < t->e && *t->p == '<') {
		for (t->p++; t->p < t->e && (isalnum((unsigned char)*t->p) || *t->p == '+' ||
					     *t->p == '-');)
			t->p++;
		if (t->p >= t->e || *t->p != '>' || t->p - s - 1 < 3)
			return false;
		t->p++;
		return true;
	}
	while (t->p < t->e && isalpha((unsigned char)*t->p))
		t->p++;
	return t->p - s >= 3;
}

/* [+-]hh[:mm[:ss]], hours up to max_h */
static bool tzs_hms(tzs *t, long max_h)
{
	if (t->p < t->e && (*t->p == '+' || *t->p == '-'))
		t->p++;
	if (!tzs_digits(t, 3, 0, max_h))
		return false;
	for (int i = 0; i < 2 && t->p < t->e && *t->p == ':'; i++) {
		t->p++;
		if (!tzs_digits(t, 2, 0, 59))
			return false;
	}
	return true;
}

static bool tzs_date(tzs *t)
{
	if (t->p < t->e && *t->p == 'M') {
		t->p++;
		if (!tzs_digits(t, 2, 1, 12) || t->p >= t->e || *t->p++ != '.' ||
		    !tzs_digits(t, 1, 1, 5) || t->p >= t->e || *t->p++ != '.' ||
		    !tzs_digits(t, 1, 0, 6))
			return false;
	} else if (t->p < t->e && *t->p == 'J') {
		t->p++;
		if (!tzs_digits(t, 3, 1, 365))
			return false;
	} else if (!tzs_digits(t, 3, 0, 365)) {
		return false;
	}
	/* RFC 8536 section 3.3.1: transition times may be -167..167 hours */
	if (t->p < t->e && *t->p == '/') {
		t->p++;
		return tzs_hms(t, 167);
	}
	return true;
}

/* NULL when s[0, n) is a TZ string GLib can read, else what is wrong. */
static const char *footer_error(const char *s, size_t n)
{
	tzs t = {s, s + n};
	if (n == 0)
		return NULL; /* no rule for times after the last transition */
	if (!tzs_name(&t))
		return "the standard time name is not 3 or more letters or <quoted>";
	if (!tzs_hms(&t, 24))
		return "the standard time has no valid offset";
	if (t.p == t.e)
		return NULL;
	if (!tzs_name(&t))
		return "the daylight saving time name is not 3 or more letters or <quoted>";
	if (t.p < t.e && *t.p != ',' && !tzs_hms(&t, 24))
		return "the daylight saving offset is not valid";
	if (t.p >= t.e || *t.p++ != ',')
		return "daylight saving time without a rule for when it starts and ends";
	if (!tzs_date(&t) || t.p >= t.e || *t.p++ != ',' || !tzs_date(&t))
		return "the daylight saving rule is not start[/time],end[/time]";
	return t.p == t.e ? NULL : "text after the daylight saving rule";
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

bool dbcron__tzif_check(const unsigned char *data, size_t len, char *why, size_t cap)
{
	counts c;

	if (len < 5 || memcmp(data, "TZif", 4) != 0)
		return bad(why, cap, "not a TZif file (no TZif magic at its start)");
	unsigned char ver = data[4];
	if (ver != 0 && (ver < '2' || ver > '4'))
		return bad(why, cap, "unsupported TZif version byte 0x%02x", ver);
	if (!check_header(data, len, 0, "version 1", 4, &c, why, cap) ||
	    !check_block(data, 0, "version 1", 4, &c, why, cap))
		return false;
	size_t end = HEADER_LEN + (size_t)block_len(&c, 4);
	if (ver == 0) {
		if (end != len)
			return bad(why, cap, "trailing data after the version 1 data (%zu bytes)",
				   len - end);
		return true;
	}
	size_t at = end;
	if (!check_header(data, len, at, "64-bit", 8, &c, why, cap))
		return false;
	if (data[at + 4] != ver)
		return bad(why, cap, "the 64-bit header says version 0x%02x, the first 0x%02x",
			   data[at + 4], ver);
	if (!check_block(data, at, "64-bit", 8, &c, why, cap))
		return false;
	/* The footer: "\n" POSIX-TZ-string "\n", and then the end of the file. */
	size_t f = at + HEADER_LEN + (size_t)block_len(&c, 8);
	if (f >= len || data[f] != '\n')
		return bad(why, cap, "truncated: no footer after the 64-bit data (byte %zu of %zu)",
			   f, len);
	const unsigned char *nl = memchr(data + f + 1, '\n', len - f - 1);
	if (!nl)
		return bad(why, cap, "truncated: the footer has no final newline");
	if ((size_t)(nl - data) + 1 != len)
		return bad(why, cap, "trailing data after the footer (%zu bytes)",
			   len - (size_t)(nl - data) - 1);
	size_t flen = (size_t)(nl - data) - f - 1;
	const char *what = footer_error((const char *)data + f + 1, flen);
	if (what && printable((const char *)data + f + 1, flen))
		return bad(why, cap, "footer '%.*s': %s", (int)(flen > 60 ? 60 : flen),
			   (const char *)data + f + 1, what);
	if (what)
		return bad(why, cap, "footer (not text): %s", what);
	return true;
}
