/*
 * H in cron fields (docs/cron.md "H: spread by name"): the value of field
 * f under seed s is lo + mix(s, f) % count, with mix the finaliser the
 * docs state (restated here from the docs, so a change of the formula,
 * which would move every stored job's fires, fails this test).  Fields
 * are numbered as in Quartz: second 0, minute 1, hour 2, day-of-month 3,
 * month 4, day-of-week 5, in both dialects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "core/timeutil.h"
#include "dbcron/cron.h"

static uint64_t mix(uint64_t seed, int field)
{
	uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (uint64_t)(field + 1);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static int64_t ts(const char *s)
{
	int64_t ms = 0;
	dbcron_err err = {0};
	if (dbcron__parse_time(s, 0, &ms, &err) != 0)
		fail_msg("bad time literal in test: %s (%s)", s, err.msg);
	return ms / 1000;
}

static dbcron_cron *parse(const char *expr, uint64_t seed)
{
	dbcron_cron *c = NULL;
	dbcron_err err = {0};
	if (dbcron_cron_parse_seeded(expr, seed, &c, &err) != DBCRON_OK)
		fail_msg("parse '%s' seed %llu: %s", expr, (unsigned long long)seed, err.msg);
	return c;
}

/* The first fire of expr under seed strictly after from. */
static int64_t first(const char *expr, uint64_t seed, const char *from)
{
	dbcron_cron *c = parse(expr, seed);
	int64_t t = -1;
	if (dbcron_cron_next(c, NULL, ts(from), &t) != 1)
		fail_msg("'%s' seed %llu: no fire", expr, (unsigned long long)seed);
	dbcron_cron_free(c);
	return t;
}

static void refused(const char *expr, const char *want)
{
	dbcron_cron *c = NULL;
	dbcron_err err = {0};
	int rc = dbcron_cron_parse_seeded(expr, 7, &c, &err);
	if (rc != DBCRON_EPARSE || !strstr(err.msg, want))
		fail_msg("'%s': want EPARSE with '%s', got %d '%s'", expr, want, rc, err.msg);
	assert_null(c);
}

static void test_values(void **state)
{
	(void)state;
	int64_t base = ts("2026-01-01T00:00:00Z");
	for (uint64_t s = 0; s < 200; s++) {
		/* Unix minute and hour */
		int m = (int)(mix(s, 1) % 60), h = (int)(mix(s, 2) % 24);
		assert_int_equal(first("H * * * *", s, "2025-12-31T23:59:59Z"), base + 60 * m);
		assert_int_equal(first("H H * * *", s, "2025-12-31T23:59:59Z"),
				 base + 3600 * h + 60 * m);
		/* Quartz second */
		int sec = (int)(mix(s, 0) % 60);
		assert_int_equal(first("H 0 0 * * ?", s, "2025-12-31T23:59:59Z"), base + sec);
		/* a range: 10 + mix % 10 */
		int r = 10 + (int)(mix(s, 1) % 10);
		assert_int_equal(first("H(10-19) * * * *", s, "2025-12-31T23:59:59Z"),
				 base + 60 * r);
		/* day-of-month: 1-28 in both dialects (January has them all) */
		int d = 1 + (int)(mix(s, 3) % 28);
		assert_int_equal(first("0 0 H * *", s, "2025-12-31T23:59:59Z"),
				 base + 86400 * (d - 1));
		assert_int_equal(first("0 0 0 H * ?", s, "2025-12-31T23:59:59Z"),
				 base + 86400 * (d - 1));
		/* month: from 2025-12-31, month mo's first day */
		int mo = 1 + (int)(mix(s, 4) % 12);
		char want[32];
		snprintf(want, sizeof(want), "2026-%02d-01T00:00:00Z", mo);
		assert_int_equal(first("0 0 1 H *", s, "2025-12-31T23:59:59Z"), ts(want));
		/* day-of-week: Unix 0-6, Quartz 1-7; 2026-01-04 is a Sunday */
		int wu = (int)(mix(s, 5) % 7), wq = 1 + (int)(mix(s, 5) % 7);
		assert_int_equal(first("0 0 * * H", s, "2026-01-03T23:59:59Z"),
				 ts("2026-01-04T00:00:00Z") + 86400 * wu);
		assert_int_equal(first("0 0 0 ? * H", s, "2026-01-03T23:59:59Z"),
				 ts("2026-01-04T00:00:00Z") + 86400 * (wq - 1));
	}
}

static void test_steps(void **state)
{
	(void)state;
	for (uint64_t s = 0; s < 100; s++) {
		dbcron_cron *c = parse("H/15 * * * *", s);
		int start = (int)(mix(s, 1) % 15);
		int64_t t = ts("2025-12-31T23:59:59Z");
		for (int k = 0; k < 8; k++) {
			assert_int_equal(dbcron_cron_next(c, NULL, t, &t), 1);
			int want = start + 15 * (k % 4);
			assert_int_equal((t / 60) % 60, want);
		}
		dbcron_cron_free(c);
		/* a range's step: start in [0, 10), then every 10 to 29 */
		c = parse("H(0-29)/10 * * * *", s);
		start = (int)(mix(s, 1) % 10);
		t = ts("2025-12-31T23:59:59Z");
		for (int k = 0; k < 6; k++) {
			assert_int_equal(dbcron_cron_next(c, NULL, t, &t), 1);
			assert_int_equal((t / 60) % 60, start + 10 * (k % 3));
		}
		dbcron_cron_free(c);
		/* a step longer than the range: the start stays in the range */
		c = parse("H(0-4)/20 * * * *", s);
		assert_int_equal(dbcron_cron_next(c, NULL, ts("2025-12-31T23:59:59Z"), &t), 1);
		assert_int_equal((t / 60) % 60, (int)(mix(s, 1) % 5));
		dbcron_cron_free(c);
	}
}

/* Day-of-month H never leaves 1-28 and reaches all of them; H(1-31) in
 * day-of-month is refused. */
static void test_dom_range(void **state)
{
	(void)state;
	int seen[32] = {0};
	for (uint64_t s = 0; s < 2000; s++) {
		int64_t t = first("0 0 H * *", s, "2025-12-31T23:59:59Z");
		int d = (int)((t - ts("2026-01-01T00:00:00Z")) / 86400) + 1;
		if (d < 1 || d > 28)
			fail_msg("seed %llu: day %d", (unsigned long long)s, d);
		seen[d]++;
	}
	for (int d = 1; d <= 28; d++)
		assert_true(seen[d] > 0);
	refused("0 0 H(1-31) * *", "within 1-28");
}

static void test_same_seed(void **state)
{
	(void)state;
	/* the same seed: the same fires; another seed: other fires */
	int64_t a = first("H H(8-17) * * 1-5", 42, "2026-03-01T00:00:00Z");
	assert_int_equal(first("H H(8-17) * * 1-5", 42, "2026-03-01T00:00:00Z"), a);
	int differ = 0;
	for (uint64_t s = 43; s < 60; s++)
		differ += first("H H(8-17) * * 1-5", s, "2026-03-01T00:00:00Z") != a;
	assert_true(differ > 10);
	/* H in a list with values */
	int64_t t = first("H,30 * * * *", 5, "2025-12-31T23:59:59Z");
	int m = (int)(mix(5, 1) % 60);
	assert_int_equal((t / 60) % 60, m < 30 ? m : 30);
}

static void test_refused(void **state)
{
	(void)state;
	dbcron_cron *c = NULL;
	dbcron_err err = {0};
	/* without a seed: the message says where a seed comes from */
	assert_int_equal(dbcron_cron_parse("H * * * *", &c, &err), DBCRON_EPARSE);
	assert_string_equal(err.msg,
			    "H needs a job: its value comes from the job's name (cron next --job NAME)");
	assert_null(c);
	refused("0 0 0 1 1 ? H", "field 7 (year): H cannot apply to the year field");
	refused("H(50-10) * * * *", "range 'H(50-10)' runs backwards");
	refused("H/0 * * * *", "step 0 in 'H/0' is out of range 1-59");
	refused("H5 * * * *", "unexpected '5' in 'H5'");
	refused("H(0-29 * * * *", "H( needs a range and a ')'");
	refused("H(7) * * * *", "H( needs a range");
	refused("H(0-60) * * * *", "60 is out of range 0-59");
	refused("0 0 0 H * H", "exactly one of them must be '?'");
	/* a syntax error is reported as such without a seed too */
	assert_int_equal(dbcron_cron_parse("H/0 * * * *", &c, &err), DBCRON_EPARSE);
	assert_non_null(strstr(err.msg, "step 0"));
}

static void test_describe(void **state)
{
	(void)state;
	char buf[256], want[256];
	uint64_t s = 9;
	int m = (int)(mix(s, 1) % 60), h = (int)(mix(s, 2) % 24);
	dbcron_cron *c = parse("H * * * *", s);
	dbcron_cron_describe(c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "at minute %d (H) of every hour, every day", m);
	assert_string_equal(buf, want);
	dbcron_cron_free(c);
	c = parse("H H * * *", s);
	dbcron_cron_describe(c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "at %02d:%02d (H), every day", h, m);
	assert_string_equal(buf, want);
	dbcron_cron_free(c);
	c = parse("H/20 * * * *", s);
	dbcron_cron_describe(c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "every 20th minute from %d through 59 (H), every day",
		 (int)(mix(s, 1) % 20));
	assert_string_equal(buf, want);
	dbcron_cron_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),    cmocka_unit_test(test_steps),
		cmocka_unit_test(test_dom_range), cmocka_unit_test(test_same_seed),
		cmocka_unit_test(test_refused),   cmocka_unit_test(test_describe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
