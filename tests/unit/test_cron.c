/*
 * Cron engine: table-driven cases for both dialects, time zones and the
 * three DST rules, parse errors and descriptions.  Expected instants are
 * worked out from the calendar and from the Quartz / cronie rules (see
 * docs/cron.md), never copied from dbcron's own output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"

#define MAXF 8

struct fire_case {
	const char *expr;
	const char *zone;
	const char *from;
	const char *fires[MAXF]; /* RFC 3339; the list ends at NULL; empty = never */
};

static int64_t ts(const char *s)
{
	int64_t ms = 0;
	dbcron_err err = {0};
	if (dbcron__parse_time(s, 0, &ms, &err) != 0)
		fail_msg("bad time literal in test: %s (%s)", s, err.msg);
	return ms / 1000;
}

static void run_cases(const struct fire_case *cs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct fire_case *k = &cs[i];
		dbcron_cron *c = NULL;
		dbcron_tz *tz = NULL;
		dbcron_err err = {0};
		if (dbcron_cron_parse(k->expr, &c, &err) != DBCRON_OK)
			fail_msg("parse '%s': %s", k->expr, err.msg);
		if (dbcron_tz_open(k->zone, &tz, &err) != DBCRON_OK)
			fail_msg("zone '%s': %s", k->zone ? k->zone : "(null)", err.msg);
		int64_t after = ts(k->from);
		for (int j = 0; j <= MAXF; j++) {
			int64_t got = 0;
			int r = dbcron_cron_next(c, tz, after, &got);
			if (j == MAXF || !k->fires[j]) {
				if (j == 0 && r != 0) {
					char b[64];
					dbcron__format_rfc3339(got * 1000, 0, 0, b, sizeof(b));
					fail_msg("'%s' in %s from %s: expected no fire, got %s",
						 k->expr, k->zone ? k->zone : "UTC", k->from, b);
				}
				break;
			}
			int64_t want = ts(k->fires[j]);
			if (r != 1 || got != want) {
				char b[64] = "none";
				if (r == 1)
					dbcron__format_rfc3339(got * 1000, dbcron_tz_offset(tz, got), 0, b,
							       sizeof(b));
				fail_msg("'%s' in %s from %s, fire #%d: expected %s, got %s", k->expr,
					 k->zone ? k->zone : "UTC", k->from, j + 1, k->fires[j], b);
			}
			after = got;
		}
		dbcron_tz_free(tz);
		dbcron_cron_free(c);
	}
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

static void test_quartz_basics(void **state)
{
	(void)state;
	static const struct fire_case cases[] = {
		{"0 */5 * * * ?", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-01T00:05:00Z", "2025-01-01T00:10:00Z"}},
		/* 2025-01-03 is a Friday */
		{"0 0 12 ? * MON-FRI", "UTC", "2025-01-03T12:00:00Z",
		 {"2025-01-06T12:00:00Z", "2025-01-07T12:00:00Z"}},
		{"0 15 10 L * ?", "UTC", "2024-01-31T10:15:00Z",
		 {"2024-02-29T10:15:00Z", "2024-03-31T10:15:00Z", "2024-04-30T10:15:00Z"}},
		/* strictly after: a fire exactly at `from` is not returned */
		{"0 0 0 * * ?", "", "2025-01-01T00:00:00Z", {"2025-01-02T00:00:00Z"}},
		{"0 0 0 * * ?", "", "2024-12-31T23:59:59Z", {"2025-01-01T00:00:00Z"}},
		/* year wrap */
		{"59 59 23 31 12 ?", NULL, "2024-12-31T23:59:59Z", {"2025-12-31T23:59:59Z"}},
		{"0 0 0 1 1 ?", NULL, "2024-06-15T00:00:00Z",
		 {"2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"}},
		/* month ends: the 31st only where it exists */
		{"0 0 0 31 * ?", NULL, "2025-01-31T00:00:00Z",
		 {"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z", "2025-07-31T00:00:00Z",
		  "2025-08-31T00:00:00Z", "2025-10-31T00:00:00Z"}},
		{"0 0 0 30 * ?", NULL, "2024-01-30T00:00:00Z", {"2024-03-30T00:00:00Z"}},
		/* leap years: every 4 years, 2100 is not one */
		{"0 0 0 29 2 ?", NULL, "2024-03-01T00:00:00Z",
		 {"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 0 29 2 ?", NULL, "2096-03-01T00:00:00Z", {"2104-02-29T00:00:00Z"}},
		{"0 0 0 29 2 ?", NULL, "1999-01-01T00:00:00Z",
		 {"2000-02-29T00:00:00Z", "2004-02-29T00:00:00Z"}},
		/* steps that do not divide the range restart at the range start */
		{"*/7 * * * * ?", NULL, "2025-01-01T00:00:56Z",
		 {"2025-01-01T00:01:00Z", "2025-01-01T00:01:07Z"}},
		{"0 0 */5 * * ?", NULL, "2025-01-01T20:00:00Z",
		 {"2025-01-02T00:00:00Z", "2025-01-02T05:00:00Z"}},
		{"0 0 0 */10 * ?", NULL, "2025-01-21T00:00:00Z",
		 {"2025-01-31T00:00:00Z", "2025-02-01T00:00:00Z", "2025-02-11T00:00:00Z",
		  "2025-02-21T00:00:00Z", "2025-03-01T00:00:00Z"}},
		{"10-50/7 0 0 * * ?", NULL, "2025-01-01T00:00:38Z",
		 {"2025-01-01T00:00:45Z", "2025-01-02T00:00:10Z"}},
		/* 5/20 = from 5 every 20 */
		{"0 5/20 * * * ?", NULL, "2025-01-01T00:45:00Z",
		 {"2025-01-01T01:05:00Z", "2025-01-01T01:25:00Z"}},
		/* wrap-around ranges (Quartz): hours 22-2, FRI-MON, NOV-FEB */
		{"0 0 22-2 * * ?", NULL, "2025-01-01T02:00:00Z",
		 {"2025-01-01T22:00:00Z", "2025-01-01T23:00:00Z", "2025-01-02T00:00:00Z",
		  "2025-01-02T01:00:00Z", "2025-01-02T02:00:00Z", "2025-01-02T22:00:00Z"}},
		{"0 0 0 ? * FRI-MON", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-03T00:00:00Z", "2025-01-04T00:00:00Z", "2025-01-05T00:00:00Z",
		  "2025-01-06T00:00:00Z", "2025-01-10T00:00:00Z"}},
		{"0 0 0 1 NOV-FEB ?", NULL, "2025-02-01T00:00:00Z",
		 {"2025-11-01T00:00:00Z", "2025-12-01T00:00:00Z", "2026-01-01T00:00:00Z",
		  "2026-02-01T00:00:00Z", "2026-11-01T00:00:00Z"}},
		{"0 0 0 28-2 2 ?", NULL, "2025-01-01T00:00:00Z",
		 {"2025-02-01T00:00:00Z", "2025-02-02T00:00:00Z", "2025-02-28T00:00:00Z",
		  "2026-02-01T00:00:00Z"}},
		/* names, case-insensitive; Quartz 1 = SUN .. 7 = SAT */
		{"0 0 0 ? jan mon", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-06T00:00:00Z", "2025-01-13T00:00:00Z"}},
		{"0 0 0 ? * 1", NULL, "2025-01-01T00:00:00Z", {"2025-01-05T00:00:00Z"}},
		{"0 0 0 ? * 7", NULL, "2025-01-01T00:00:00Z", {"2025-01-04T00:00:00Z"}},
		{"0 0 0 ? * */2", NULL, "2025-01-01T00:00:00Z", /* SUN,TUE,THU,SAT */
		 {"2025-01-02T00:00:00Z", "2025-01-04T00:00:00Z", "2025-01-05T00:00:00Z",
		  "2025-01-07T00:00:00Z"}},
		/* a step after a name is honoured: MON/3 = MON,THU */
		{"0 0 0 ? * MON/3", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-02T00:00:00Z", "2025-01-06T00:00:00Z", "2025-01-09T00:00:00Z"}},
		{"0 0 0 ? * MON-FRI/2", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-03T00:00:00Z", "2025-01-06T00:00:00Z", "2025-01-08T00:00:00Z"}},
		/* year field */
		{"0 0 0 1 1 ? 2030", NULL, "2025-05-05T00:00:00Z", {"2030-01-01T00:00:00Z"}},
		{"0 0 0 1 1 ? 2030", NULL, "2030-01-01T00:00:00Z", {NULL}},
		{"0 0 0 1 1 ? 2020", NULL, "2025-05-05T00:00:00Z", {NULL}},
		{"0 0 0 1 1 ? 2030/5", NULL, "2025-05-05T00:00:00Z",
		 {"2030-01-01T00:00:00Z", "2035-01-01T00:00:00Z"}},
		{"0 0 0 1 1 ? *", NULL, "2199-05-05T00:00:00Z", {"2200-01-01T00:00:00Z"}},
		{"0 0 12 1 1 ? 2099", NULL, "2099-01-01T11:59:59Z", {"2099-01-01T12:00:00Z", NULL}},
	};
	RUN(cases);
}

static void test_quartz_specials(void **state)
{
	(void)state;
	static const struct fire_case cases[] = {
		/* 1W: 2025-02-01 is a Saturday -> Monday the 3rd (never back
		 * into January) */
		{"0 0 0 1W * ?", NULL, "2025-01-15T00:00:00Z",
		 {"2025-02-03T00:00:00Z", "2025-03-03T00:00:00Z", "2025-04-01T00:00:00Z"}},
		/* 31W: 2025-08-31 is a Sunday -> Friday the 29th; months
		 * without a 31st have no fire (April, June) */
		{"0 0 0 31W * ?", NULL, "2025-03-31T00:00:00Z",
		 {"2025-05-30T00:00:00Z", "2025-07-31T00:00:00Z", "2025-08-29T00:00:00Z",
		  "2025-10-31T00:00:00Z"}},
		{"0 0 0 31W 4 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 30W 2 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		/* 15W: Saturday 2025-02-15 -> Friday 14th; Sunday 2025-06-15
		 * -> Monday 16th */
		{"0 0 0 15W 2,6 ?", NULL, "2025-01-01T00:00:00Z",
		 {"2025-02-14T00:00:00Z", "2025-06-16T00:00:00Z"}},
		/* LW: 2025-05-31 Saturday -> 30th; 2025-08-31 Sunday -> 29th */
		{"0 0 0 LW 5,8 ?", NULL, "2025-01-01T00:00:00Z",
		 {"2025-05-30T00:00:00Z", "2025-08-29T00:00:00Z"}},
		/* L-n */
		{"0 0 0 L-2 * ?", NULL, "2024-02-01T00:00:00Z",
		 {"2024-02-27T00:00:00Z", "2024-03-29T00:00:00Z", "2024-04-28T00:00:00Z"}},
		/* L-30 exists only in 31-day months (day 1) */
		{"0 0 0 L-30 * ?", NULL, "2025-01-02T00:00:00Z",
		 {"2025-03-01T00:00:00Z", "2025-05-01T00:00:00Z", "2025-07-01T00:00:00Z"}},
		/* L-3W: 2025-05-28 is a Wednesday */
		{"0 0 0 L-3W 5 ?", NULL, "2025-01-01T00:00:00Z", {"2025-05-28T00:00:00Z"}},
		/* nL: last Friday; last Sunday (1L) of March 2025 is the 30th */
		{"0 0 0 ? * 6L", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-31T00:00:00Z", "2025-02-28T00:00:00Z", "2025-03-28T00:00:00Z"}},
		{"0 0 0 ? 3 1L", NULL, "2025-01-01T00:00:00Z", {"2025-03-30T00:00:00Z"}},
		{"0 0 0 ? * FRIL", NULL, "2025-01-01T00:00:00Z", {"2025-01-31T00:00:00Z"}},
		/* a lone L in day-of-week is Saturday */
		{"0 0 0 ? * L", NULL, "2025-01-01T00:00:00Z", {"2025-01-04T00:00:00Z"}},
		/* n#5: months without a fifth Friday are skipped */
		{"0 0 0 ? * 6#5", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-31T00:00:00Z", "2025-05-30T00:00:00Z", "2025-08-29T00:00:00Z",
		  "2025-10-31T00:00:00Z"}},
		{"0 0 0 ? * 2#1", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-06T00:00:00Z", "2025-02-03T00:00:00Z"}},
		{"0 0 0 ? * MON#2", NULL, "2025-01-01T00:00:00Z", {"2025-01-13T00:00:00Z"}},
		/* a fifth Friday in February: only a leap year whose Feb 1
		 * is a Friday (2008, then 2036) */
		{"0 0 0 ? 2 6#5", NULL, "2008-03-01T00:00:00Z", {"2036-02-29T00:00:00Z"}},
		/* never again */
		{"0 0 0 31 2 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 30 2 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 31 4,6,9,11 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 31W 2 ?", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 ? 2 1#5 2026-2027", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 29 2 ? 2097-2099", NULL, "2025-01-01T00:00:00Z", {NULL}},
	};
	RUN(cases);
}

static void test_unix(void **state)
{
	(void)state;
	static const struct fire_case cases[] = {
		{"*/15 * * * *", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-01T00:15:00Z", "2025-01-01T00:30:00Z"}},
		{"* * * * *", NULL, "2025-01-01T00:00:30Z", {"2025-01-01T00:01:00Z"}},
		/* 0 and 7 are Sunday; 2025-01-05 is a Sunday */
		{"0 0 * * 7", NULL, "2025-01-01T00:00:00Z", {"2025-01-05T00:00:00Z"}},
		{"0 0 * * 0", NULL, "2025-01-01T00:00:00Z", {"2025-01-05T00:00:00Z"}},
		{"0 0 * * 5-7", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-03T00:00:00Z", "2025-01-04T00:00:00Z", "2025-01-05T00:00:00Z",
		  "2025-01-10T00:00:00Z"}},
		{"0 12 * * mon-fri", NULL, "2025-01-03T12:00:00Z", {"2025-01-06T12:00:00Z"}},
		{"0 0 1 jan,jul *", NULL, "2025-01-01T00:00:00Z", {"2025-07-01T00:00:00Z"}},
		/* cronie: both day fields restricted -> either matches */
		{"0 0 1 * 1", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-06T00:00:00Z", "2025-01-13T00:00:00Z", "2025-01-20T00:00:00Z",
		  "2025-01-27T00:00:00Z", "2025-02-01T00:00:00Z", "2025-02-03T00:00:00Z"}},
		/* a field starting with '*' counts as unrestricted: both must
		 * match.  Odd days that are Mondays: */
		{"0 0 */2 * 1", NULL, "2025-01-01T00:00:00Z",
		 {"2025-01-13T00:00:00Z", "2025-01-27T00:00:00Z", "2025-02-03T00:00:00Z",
		  "2025-02-17T00:00:00Z"}},
		/* the 1st when it is a Sun/Tue/Thu/Sat */
		{"0 0 1 * */2", NULL, "2025-01-01T00:00:00Z",
		 {"2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z",
		  "2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"}},
		/* Feb 31 never exists, but the OR rule still fires Mondays */
		{"0 0 31 2 1", NULL, "2025-01-01T00:00:00Z",
		 {"2025-02-03T00:00:00Z", "2025-02-10T00:00:00Z"}},
		{"0 0 30 2 *", NULL, "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 29 2 *", NULL, "2097-01-01T00:00:00Z", {"2104-02-29T00:00:00Z"}},
		{"@yearly", NULL, "2025-01-01T00:00:00Z", {"2026-01-01T00:00:00Z"}},
		{"@annually", NULL, "2025-06-01T00:00:00Z", {"2026-01-01T00:00:00Z"}},
		{"@monthly", NULL, "2025-01-15T00:00:00Z", {"2025-02-01T00:00:00Z"}},
		{"@weekly", NULL, "2025-01-01T00:00:00Z", {"2025-01-05T00:00:00Z"}},
		{"@daily", NULL, "2025-01-01T10:00:00Z", {"2025-01-02T00:00:00Z"}},
		{"@midnight", NULL, "2025-01-01T10:00:00Z", {"2025-01-02T00:00:00Z"}},
		{"@hourly", NULL, "2025-01-01T10:00:00Z", {"2025-01-01T11:00:00Z"}},
		{"30 4 1-7/3 * *", NULL, "2025-01-01T04:30:00Z",
		 {"2025-01-04T04:30:00Z", "2025-01-07T04:30:00Z", "2025-02-01T04:30:00Z"}},
	};
	RUN(cases);
}

/*
 * DST, cronie's daemon rules for both dialects:
 * (a) a fixed wall time in a spring-forward gap fires once at the gap end;
 * (b) a fixed wall time in a repeated hour fires on its first pass only;
 * (c) minute or hour starting with '*': follow the clock.
 * Transitions used: Europe/Berlin 2025-03-30 01:00Z (02:00 -> 03:00) and
 * 2025-10-26 01:00Z (03:00 -> 02:00); America/New_York 2025-03-09 07:00Z
 * (02:00 -> 03:00) and 2025-11-02 06:00Z (02:00 -> 01:00);
 * Australia/Lord_Howe (30 minutes) 2025-04-05 15:00Z (02:00 +11 -> 01:30
 * +10:30) and 2025-10-04 15:30Z (02:00 +10:30 -> 02:30 +11).
 */
static void test_dst(void **state)
{
	(void)state;
	static const struct fire_case cases[] = {
		/* (a) gap */
		{"0 30 2 * * ?", "Europe/Berlin", "2025-03-29T12:00:00Z",
		 {"2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00"}},
		{"30 2 * * *", "America/New_York", "2025-03-08T12:00:00Z",
		 {"2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"}},
		{"15 2 * * *", "Australia/Lord_Howe", "2025-10-04T00:00:00Z",
		 {"2025-10-05T02:30:00+11:00", "2025-10-06T02:15:00+11:00"}},
		/* several gap times of one job collapse into one fire */
		{"0 0,15,30,45 2 * * ?", "Europe/Berlin", "2025-03-29T12:00:00Z",
		 {"2025-03-30T03:00:00+02:00", "2025-03-31T02:00:00+02:00"}},
		{"0 2-3 * * *", "America/New_York", "2025-03-08T12:00:00Z",
		 {"2025-03-09T03:00:00-04:00", "2025-03-10T02:00:00-04:00"}},
		/* ... and with the job's own fire at the gap end */
		{"0 30 2,3 * * ?", "Europe/Berlin", "2025-03-30T00:00:00Z",
		 {"2025-03-30T03:00:00+02:00", "2025-03-30T03:30:00+02:00"}},
		/* (b) repeated hour: first pass only */
		{"0 30 2 * * ?", "Europe/Berlin", "2025-10-25T12:00:00Z",
		 {"2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"}},
		{"0 30 2 * * ?", "Europe/Berlin", "2025-10-26T01:10:00Z", /* 02:10 second pass */
		 {"2025-10-27T02:30:00+01:00"}},
		{"30 1 * * *", "America/New_York", "2025-11-01T12:00:00Z",
		 {"2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"}},
		{"45 1 * * *", "Australia/Lord_Howe", "2025-04-05T00:00:00Z",
		 {"2025-04-06T01:45:00+11:00", "2025-04-07T01:45:00+10:30"}},
		/* (c) clock-following: both passes of the repeated hour ... */
		{"0 */15 * * * ?", "Europe/Berlin", "2025-10-26T00:20:00Z",
		 {"2025-10-26T02:30:00+02:00", "2025-10-26T02:45:00+02:00",
		  "2025-10-26T02:00:00+01:00", "2025-10-26T02:15:00+01:00",
		  "2025-10-26T02:30:00+01:00", "2025-10-26T02:45:00+01:00",
		  "2025-10-26T03:00:00+01:00"}},
		{"*/30 1 * * *", "America/New_York", "2025-11-01T12:00:00Z",
		 {"2025-11-02T01:00:00-04:00", "2025-11-02T01:30:00-04:00",
		  "2025-11-02T01:00:00-05:00", "2025-11-02T01:30:00-05:00",
		  "2025-11-03T01:00:00-05:00"}},
		{"0 30 * * * ?", "Australia/Lord_Howe", "2025-04-05T14:00:00Z",
		 {"2025-04-06T01:30:00+11:00", "2025-04-06T01:30:00+10:30",
		  "2025-04-06T02:30:00+10:30"}},
		/* ... and no catch-up of the skipped hour */
		{"0 */15 * * * ?", "Europe/Berlin", "2025-03-30T00:40:00Z",
		 {"2025-03-30T01:45:00+01:00", "2025-03-30T03:00:00+02:00",
		  "2025-03-30T03:15:00+02:00"}},
		{"0 30 * * * ?", "Europe/Berlin", "2025-03-30T00:30:00Z",
		 {"2025-03-30T03:30:00+02:00"}},
		{"*/30 2 * * *", "Europe/Berlin", "2025-03-29T12:00:00Z",
		 {"2025-03-31T02:00:00+02:00"}},
		{"@hourly", "America/New_York", "2025-03-09T06:30:00Z",
		 {"2025-03-09T03:00:00-04:00", "2025-03-09T04:00:00-04:00"}},
		/* zones with non-hour offsets, no DST */
		{"0 0 * * *", "Asia/Kathmandu", "2025-01-01T00:00:00Z",
		 {"2025-01-02T00:00:00+05:45", "2025-01-03T00:00:00+05:45"}},
		{"0 30 9 ? * MON-FRI", "Asia/Kolkata", "2025-01-03T04:00:00Z",
		 {"2025-01-06T09:30:00+05:30"}},
		/* southern hemisphere: Sydney leaves DST on 2025-04-06 03:00 */
		{"0 30 2 * * ?", "Australia/Sydney", "2025-04-05T00:00:00Z",
		 {"2025-04-06T02:30:00+11:00", "2025-04-07T02:30:00+10:00"}},
		/* an ordinary day in a DST zone */
		{"0 0 12 ? * MON-FRI", "Europe/Berlin", "2025-07-04T10:00:00Z",
		 {"2025-07-07T12:00:00+02:00"}},
		/* never firing in a DST zone */
		{"0 0 0 31 2 ?", "Europe/Berlin", "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 1 1 ? 2020", "America/New_York", "2025-01-01T00:00:00Z", {NULL}},
		{"0 0 0 1 1 ? 2099", "Europe/Berlin", "2025-01-01T00:00:00Z",
		 {"2099-01-01T00:00:00+01:00"}},
	};
	RUN(cases);
}

static void test_tz(void **state)
{
	(void)state;
	dbcron_tz *tz = NULL;
	dbcron_err err = {0};

	static const char *utc[] = {"UTC", "", "Etc/UTC"};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(dbcron_tz_open(utc[i], &tz, &err), DBCRON_OK);
		assert_int_equal(dbcron_tz_offset(tz, ts("2025-07-01T00:00:00Z")), 0);
		dbcron_tz_free(tz);
	}
	assert_int_equal(dbcron_tz_open(NULL, &tz, &err), DBCRON_OK);
	assert_string_equal(dbcron_tz_name(tz), "UTC");
	dbcron_tz_free(tz);

	assert_int_equal(dbcron_tz_open("Europe/Berlin", &tz, &err), DBCRON_OK);
	assert_string_equal(dbcron_tz_name(tz), "Europe/Berlin");
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-07-01T00:00:00Z")), 7200);
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-01-01T00:00:00Z")), 3600);
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-03-30T00:59:59Z")), 3600);
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-03-30T01:00:00Z")), 7200);
	/* rules continue past 2037 */
	assert_int_equal(dbcron_tz_offset(tz, ts("2090-07-01T00:00:00Z")), 7200);
	dbcron_tz_free(tz);

	assert_int_equal(dbcron_tz_open("Australia/Lord_Howe", &tz, &err), DBCRON_OK);
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-01-01T00:00:00Z")), 39600);
	assert_int_equal(dbcron_tz_offset(tz, ts("2025-07-01T00:00:00Z")), 37800);
	dbcron_tz_free(tz);

	static const char *bad[] = {"Mars/Base", "/etc/passwd", "../../etc/passwd",
				    "Europe", "Europe/Berln", "zone.tab", "UTC+3x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tz = (dbcron_tz *)1;
		dbcron_err_clear(&err);
		assert_int_equal(dbcron_tz_open(bad[i], &tz, &err), DBCRON_ETZ);
		assert_null(tz);
		if (!strstr(err.msg, bad[i]))
			fail_msg("message for '%s' does not name it: %s", bad[i], err.msg);
	}
	assert_int_equal(dbcron_tz_open("Mars/Base", &tz, &err), DBCRON_ETZ);
	if (strncmp(err.msg, "unknown time zone 'Mars/Base' (not in ", 38) != 0)
		fail_msg("unknown zone message: %s", err.msg);
}

static void test_errors(void **state)
{
	(void)state;
	static const struct {
		const char *expr, *field, *why;
	} cases[] = {
		{"0 0 0 32 * ?", "field 4 (day-of-month)", "32 is out of range 1-31"},
		{"60 * * * * ?", "field 1 (second)", "60 is out of range 0-59"},
		{"* 60 * * * ?", "field 2 (minute)", "60"},
		{"0 0 24 * * ?", "field 3 (hour)", "24 is out of range 0-23"},
		{"0 0 0 ? 13 *", "field 5 (month)", "13"},
		{"0 0 0 ? * 8", "field 6 (day-of-week)", "8 is out of range 1-7"},
		{"0 0 0 ? * 0", "field 6 (day-of-week)", "0 is out of range 1-7"},
		{"0 0 0 1 1 ? 1969", "field 7 (year)", "1969"},
		{"0 0 0 1 1 ? 2100", "field 7 (year)", "2100"},
		{"0 0 32 * *", "field 3 (day-of-month)", "32 is out of range 1-31"},
		{"0 0 * * 8", "field 5 (day-of-week)", "8 is out of range 0-7"},
		{"*/0 * * * * ?", "field 1 (second)", "step 0"},
		{"0 */60 * * * ?", "field 2 (minute)", "step 60"},
		{"0 0 */24 * * ?", "field 3 (hour)", "step 24"},
		{"*/0 * * * *", "field 1 (minute)", "step 0"},
		{"0 1,,2 * * * ?", "field 2 (minute)", "empty list element"},
		{"0 1, * * * ?", "field 2 (minute)", "empty list element"},
		{"0 ,1 * * * ?", "field 2 (minute)", "empty list element"},
		{"0 0 0 ? * MONDAY", "field 6 (day-of-week)", "'MONDAY' is not a day name"},
		{"0 0 0 ? JANUARY *", "field 5 (month)", "'JANUARY' is not a month name"},
		{"0 0 0 ? * MO", "field 6 (day-of-week)", "'MO'"},
		{"0 0 0 ? * XYZ", "field 6 (day-of-week)", "'XYZ'"},
		{"0 0 MON * * ?", "field 3 (hour)", "'MON'"},
		{"*5 * * * * ?", "field 1 (second)", "unexpected '5' in '*5'"},
		{"5x * * * * ?", "field 1 (second)", "unexpected 'x'"},
		{"0 0 0 * * ? 2025x", "field 7 (year)", "unexpected"},
		{"0 0 0 * * ? 2025 extra", "", "found 8"},
		{"0 0 0 * * ? 2025 extra more", "", "too many fields"},
		{"* * * *", "", "found 4"},
		{"", "", "empty"},
		{"   ", "", "empty"},
		{"0 0 0 * * *", "field 4 (day-of-month) and field 6 (day-of-week)", "exactly one"},
		{"0 0 0 ? * ?", "field 4 (day-of-month) and field 6 (day-of-week)", "both"},
		{"0 0 ? * * ?", "field 3 (hour)", "'?' is only allowed"},
		{"0 0 5/20 * *", "field 3 (day-of-month)", "step needs '*' or a range"},
		{"0 0 L * *", "field 3 (day-of-month)", "Quartz syntax"},
		{"0 0 15W * *", "field 3 (day-of-month)", "Quartz syntax"},
		{"0 0 * * 5#2", "field 5 (day-of-week)", "Quartz syntax"},
		{"0 0 ? * 1", "field 3 (day-of-month)", "Quartz syntax"},
		{"0 22-2 * * *", "field 2 (hour)", "runs backwards"},
		{"0 0 0 1 1 ? 2030-2025", "field 7 (year)", "runs backwards"},
		{"0 0 0 L,5 * ?", "field 4 (day-of-month)", "cannot be combined"},
		{"0 0 0 15W,20 * ?", "field 4 (day-of-month)", "cannot be combined"},
		{"0 0 0 ? * 6#1,2#3", "field 6 (day-of-week)", "cannot be combined"},
		{"0 0 0 ? * 6L,2", "field 6 (day-of-week)", "cannot be combined"},
		{"0 0 0 ? * 6#6", "field 6 (day-of-week)", "week 6 in '6#6' is out of range 1-5"},
		{"0 0 0 ? * 6#0", "field 6 (day-of-week)", "week 0"},
		{"0 0 0 ? * 8L", "field 6 (day-of-week)", "8 is out of range"},
		{"0 0 0 32W * ?", "field 4 (day-of-month)", "32 is out of range 1-31"},
		{"0 0 0 0W * ?", "field 4 (day-of-month)", "0 is out of range 1-31"},
		{"0 0 0 W * ?", "field 4 (day-of-month)", "'W' needs a day"},
		{"0 0 0 1-5W * ?", "field 4 (day-of-month)", "'W' needs a single day"},
		{"0 0 0 L-31 * ?", "field 4 (day-of-month)", "offset 31"},
		{"0 0 0 L-x * ?", "field 4 (day-of-month)", "L-x"},
		{"0 0 0 L/2 * ?", "field 4 (day-of-month)", "unexpected '/2'"},
		{"0 0 0 ? * MON/", "field 6 (day-of-week)", "missing a step"},
		{"0 /5 * * * ?", "field 2 (minute)", "no start value"},
		{"0 0-/5 * * * ?", "field 2 (minute)", "0-/5"},
		{"0 5-10-15 * * * ?", "field 2 (minute)", "unexpected '-15'"},
		{"0 */5/2 * * * ?", "field 2 (minute)", "unexpected '/2'"},
		{"0 99999999 * * * ?", "field 2 (minute)", "too large"},
		{"0 -5 * * * ?", "field 2 (minute)", "-5"},
		{"@reboot", "", "@reboot"},
		{"@fortnightly", "", "unknown macro '@fortnightly'"},
		{"@daily 5", "", "unknown macro"},
		{"0 0 0 1 1 ? 20\x01" "25", "", "byte 0x01"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dbcron_cron *c = (dbcron_cron *)1;
		dbcron_err err = {0};
		int rc = dbcron_cron_parse(cases[i].expr, &c, &err);
		if (rc != DBCRON_EPARSE)
			fail_msg("'%s': expected a parse error, got %d", cases[i].expr, rc);
		assert_null(c);
		if (!strstr(err.msg, cases[i].field) || !strstr(err.msg, cases[i].why))
			fail_msg("'%s': message '%s' lacks '%s' / '%s'", cases[i].expr, err.msg,
				 cases[i].field, cases[i].why);
	}
}

static void test_valid_forms(void **state)
{
	(void)state;
	static const struct {
		const char *expr;
		dbcron_cron_dialect d;
	} ok[] = {
		{"0 0 12 * * ?", DBCRON_CRON_QUARTZ},
		{"0 0 12 * * ? 2030", DBCRON_CRON_QUARTZ},
		{"  0\t0  12 * *   ?  ", DBCRON_CRON_QUARTZ},
		{"0 0 12 * * *", (dbcron_cron_dialect)0}, /* both day fields set */
		{"0 0 0 l * ?", DBCRON_CRON_QUARTZ},
		{"0 0 0 lw * ?", DBCRON_CRON_QUARTZ},
		{"0 0 0 15w * ?", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? * fri#3", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? * 5l", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? * SUN,MON,TUE,WED,THU,FRI,SAT", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? 1-12/3 *", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? JAN-DEC/2 *", DBCRON_CRON_QUARTZ},
		{"0 0 0 ? * 1-7", DBCRON_CRON_QUARTZ},
		{"0 0 0 1 1 ? 1970-2099/10", DBCRON_CRON_QUARTZ},
		{"* * * * *", DBCRON_CRON_UNIX},
		{"0 0 * * SUN-SAT", DBCRON_CRON_UNIX},
		{"0 0 * * 0-7", DBCRON_CRON_UNIX},
		{"@HOURLY", DBCRON_CRON_UNIX},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		dbcron_cron *c = NULL;
		dbcron_err err = {0};
		int rc = dbcron_cron_parse(ok[i].expr, &c, &err);
		if (ok[i].d == 0) {
			assert_int_equal(rc, DBCRON_EPARSE);
			continue;
		}
		if (rc != DBCRON_OK)
			fail_msg("'%s' should parse: %s", ok[i].expr, err.msg);
		assert_int_equal(dbcron_cron_get_dialect(c), ok[i].d);
		dbcron_cron_free(c);
	}
}

static void test_describe(void **state)
{
	(void)state;
	static const struct {
		const char *expr, *want;
	} cases[] = {
		{"0 */5 * ? * MON-FRI", "at second 0 of every 5th minute, Monday to Friday"},
		{"0 0 12 ? * MON-FRI", "at 12:00:00, Monday to Friday"},
		{"0 15 10 L * ?", "at 10:15:00, on the last day of the month"},
		{"0 15 10 ? * 6L", "at 10:15:00, on the last Friday of the month"},
		{"0 0 0 ? * 6#3", "at 00:00:00, on the 3rd Friday of the month"},
		{"0 0 0 LW * ?", "at 00:00:00, on the last weekday of the month"},
		{"0 0 0 15W * ?", "at 00:00:00, on the weekday nearest day 15 of the month"},
		{"0 0 0 1,15 * ? 2030", "at 00:00:00, on days 1 and 15 of the month, in 2030"},
		{"*/15 * * * *", "every 15th minute, every day"},
		{"30 4 * * 1,3,5", "at 04:30, on Monday, Wednesday and Friday"},
		{"0 0 1 * 1", "at 00:00, on day 1 of the month or on Monday"},
		{"0 9 * jan-mar *", "at 09:00, every day, in January to March"},
		{"@hourly", "at minute 0 of every hour, every day (@hourly)"},
		{"* * * * * ?", "every second, every day"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dbcron_cron *c = NULL;
		char buf[256];
		assert_int_equal(dbcron_cron_parse(cases[i].expr, &c, NULL), DBCRON_OK);
		size_t need = dbcron_cron_describe(c, buf, sizeof(buf));
		assert_int_equal(need, strlen(buf));
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("'%s': described as '%s', expected '%s'", cases[i].expr, buf,
				 cases[i].want);
		/* truncation is safe and reports the full length */
		char small[8];
		assert_int_equal(dbcron_cron_describe(c, small, sizeof(small)), need);
		assert_int_equal(strlen(small), 7);
		dbcron_cron_free(c);
	}
}

/* Fires are strictly increasing and every one is found again when
 * searching from just before it, in several zones. */
static void test_monotone(void **state)
{
	(void)state;
	static const char *exprs[] = {"0 */5 * * * ?", "0 30 2 * * ?", "0 0,30 1-3 * * ?",
				      "*/30 1-2 * * *", "0 15 10 L * ?", "0 0 0 ? * 6#5",
				      "*/20 * * * * ?", "0 0 12 ? * MON-FRI", "17 */3 * * 1-5"};
	static const char *zones[] = {"UTC", "Europe/Berlin", "America/New_York",
				      "Australia/Lord_Howe", "Asia/Kathmandu"};
	for (size_t z = 0; z < 5; z++) {
		dbcron_tz *tz;
		assert_int_equal(dbcron_tz_open(zones[z], &tz, NULL), DBCRON_OK);
		for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
			dbcron_cron *c;
			assert_int_equal(dbcron_cron_parse(exprs[e], &c, NULL), DBCRON_OK);
			int64_t t = ts("2025-03-01T00:00:00Z"), n;
			for (int i = 0; i < 3000; i++) {
				assert_int_equal(dbcron_cron_next(c, tz, t, &n), 1);
				if (n <= t)
					fail_msg("%s in %s: %lld not after %lld", exprs[e], zones[z],
						 (long long)n, (long long)t);
				int64_t again;
				assert_int_equal(dbcron_cron_next(c, tz, n - 1, &again), 1);
				assert_int_equal(again, n);
				t = n;
			}
			dbcron_cron_free(c);
		}
		dbcron_tz_free(tz);
	}
}

/* Every allocation failure is reported, never a crash or a leak. */
static void test_oom(void **state)
{
	(void)state;
	for (long k = 1; k < 20; k++) {
		dbcron_cron *c = NULL;
		dbcron_tz *tz = NULL;
		dbcron_err err = {0};
		dbcron__alloc_fail_at(k);
		int rc = dbcron_cron_parse("0 0 12 ? * MON-FRI", &c, &err);
		dbcron__alloc_fail_at(0);
		assert_true(rc == DBCRON_OK || rc == DBCRON_ENOMEM);
		dbcron_cron_free(c);
		dbcron__alloc_fail_at(k);
		rc = dbcron_tz_open("Europe/Berlin", &tz, &err);
		dbcron__alloc_fail_at(0);
		assert_true(rc == DBCRON_OK || rc == DBCRON_ENOMEM);
		if (rc)
			assert_null(tz);
		dbcron_tz_free(tz);
	}
}

static void test_bounds(void **state)
{
	(void)state;
	dbcron_cron *c;
	int64_t n;
	assert_int_equal(dbcron_cron_parse("* * * * * ?", &c, NULL), DBCRON_OK);
	assert_int_equal(dbcron_cron_next(c, NULL, INT64_MAX, &n), 0);
	assert_int_equal(dbcron_cron_next(c, NULL, ts("9999-12-31T23:59:59Z"), &n), 0);
	assert_int_equal(dbcron_cron_next(c, NULL, INT64_MIN, &n), 1);
	assert_int_equal(dbcron_cron_next(c, NULL, -1, &n), 1);
	assert_int_equal(n, 0);
	dbcron_cron_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quartz_basics), cmocka_unit_test(test_quartz_specials),
		cmocka_unit_test(test_unix),          cmocka_unit_test(test_dst),
		cmocka_unit_test(test_tz),            cmocka_unit_test(test_errors),
		cmocka_unit_test(test_valid_forms),   cmocka_unit_test(test_describe),
		cmocka_unit_test(test_monotone),      cmocka_unit_test(test_oom),
		cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
