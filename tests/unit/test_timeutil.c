/* Durations, instants and civil-date arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/timeutil.h"

static void test_durations(void **state)
{
	(void)state;
	static const struct { const char *s; int64_t ms; } ok[] = {
		{"500ms", 500}, {"30s", 30000}, {"5m", 300000}, {"2h", 7200000},
		{"1d", 86400000}, {"1h30m", 5400000}, {"1s500ms", 1500},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = -1;
		assert_int_equal(dbcron__parse_duration(ok[i].s, 0, &ms, NULL), DBCRON_OK);
		assert_int_equal(ms, ok[i].ms);
	}
	static const char *bad[] = {"", "5", "5x", "-5s", "s", "0s", "1.5s", "5 s", "99999999999999999d"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms;
		dbcron_err err = {0};
		assert_int_equal(dbcron__parse_duration(bad[i], 0, &ms, &err), DBCRON_EPARSE);
		assert_true(strlen(err.msg) > 0);
	}
}

static void test_times(void **state)
{
	(void)state;
	int64_t ms;
	assert_int_equal(dbcron__parse_time("2026-01-02T03:04:05Z", 0, &ms, NULL), 0);
	assert_int_equal(ms, 1767323045000LL);
	assert_int_equal(dbcron__parse_time("2026-01-02T05:04:05.250+02:00", 0, &ms, NULL), 0);
	assert_int_equal(ms, 1767323045250LL);
	assert_int_equal(dbcron__parse_time("1767323045", 0, &ms, NULL), 0);
	assert_int_equal(ms, 1767323045000LL);
	assert_int_equal(dbcron__parse_time("now+1m", 1000, &ms, NULL), 0);
	assert_int_equal(ms, 61000);
	assert_int_equal(dbcron__parse_time("2025-02-29T00:00:00Z", 0, &ms, NULL), DBCRON_EPARSE);
	assert_int_equal(dbcron__parse_time("2024-02-29T00:00:00Z", 0, &ms, NULL), 0);
	assert_int_equal(dbcron__parse_time("tomorrow", 0, &ms, NULL), DBCRON_EPARSE);
	char buf[64];
	dbcron__format_rfc3339(1767323045250LL, 3600, 1, buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-02T04:04:05.250+01:00");
	dbcron__format_rfc3339(1767323045000LL, 0, 0, buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-02T03:04:05Z");
	dbcron__format_rfc3339(-1000, -5 * 3600 - 1800, 0, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T18:29:59-05:30");
}

static void test_civil(void **state)
{
	(void)state;
	for (int64_t z = -800000; z < 800000; z += 7) {
		int64_t y;
		unsigned m, d;
		dbcron__civil_from_days(z, &y, &m, &d);
		assert_int_equal(dbcron__days_from_civil(y, m, d), z);
	}
	assert_int_equal(dbcron__days_from_civil(2000, 3, 1), 11017);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_civil),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
