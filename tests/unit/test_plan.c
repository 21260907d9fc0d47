/* The fire planner: on-time fires, the three misfire policies, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/alloc.h"
#include "model/rules.h"
#include "sched/plan.h"

static dbcron_job every_job(int64_t interval, int64_t anchor, int64_t next)
{
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 1;
	j.kind = DBCRON_SCHED_EVERY;
	j.interval_ms = interval;
	j.anchor_ms = anchor;
	j.next_fire_at = next;
	return j;
}

static void test_on_time(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j = every_job(1000, 0, 10000);
	store_plan out;
	/* now = 9500, horizon 11000: fires 10000 and 11000 */
	assert_int_equal(planner_plan(p, &j, 9500, 11000, &out), 0);
	assert_int_equal(out.nfires, 2);
	assert_int_equal(out.fires[0].fire_at, 10000);
	assert_int_equal(out.fires[0].due_at, 10000);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.fires[1].fire_at, 11000);
	assert_int_equal(out.next_fire_at, 12000);
	/* late but within the threshold (5 s): still an ordinary fire */
	j.next_fire_at = 10000;
	assert_int_equal(planner_plan(p, &j, 14000, 14000, &out), 0);
	assert_int_equal(out.nfires, 5);
	assert_int_equal(out.fires[0].missed, 0);
	planner_free(p);
}

static int64_t accounted(const store_plan *out)
{
	int64_t n = 0;
	for (size_t i = 0; i < out->nfires; i++)
		n += 1 + out->fires[i].missed;
	return n;
}

static void test_misfire_policies(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	/* every second, next was 0, now is 100 s: instants 0..94 are late
	 * (threshold 5 s), 95..100 are due, horizon 100. */
	dbcron_job j = every_job(1000, 0, 0);
	store_plan out;

	j.misfire = DBCRON_MISFIRE_FIRE_ONCE;
	assert_int_equal(planner_plan(p, &j, 100000, 100000, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.fires[0].fire_at, 0);
	assert_int_equal(out.fires[0].due_at, 100000);
	assert_int_equal(out.fires[0].missed, 94);
	assert_int_equal(accounted(&out), 101); /* nothing silently lost */
	assert_int_equal(out.next_fire_at, 101000);

	j.misfire = DBCRON_MISFIRE_SKIP;
	assert_int_equal(planner_plan(p, &j, 100000, 100000, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_MISFIRED);
	assert_int_equal(out.fires[0].missed, 94);
	assert_int_equal(out.fires[1].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.fires[1].fire_at, 95000);
	assert_int_equal(accounted(&out), 101);

	j.misfire = DBCRON_MISFIRE_CATCH_UP;
	j.max_catchup = 10;
	assert_int_equal(planner_plan(p, &j, 100000, 100000, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_MISFIRED);
	assert_int_equal(out.fires[0].fire_at, 0);
	assert_int_equal(out.fires[0].missed, 84);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(out.fires[1 + i].state, DBCRON_RUN_SCHEDULED);
		assert_int_equal(out.fires[1 + i].fire_at, (85 + i) * 1000); /* oldest first */
		assert_int_equal(out.fires[1 + i].due_at, 100000);
	}
	assert_int_equal(out.fires[11].fire_at, 95000);
	assert_int_equal(accounted(&out), 101);
	planner_free(p);
}

/* An AFTER job found late with misfire skip: the MISFIRED record is the
 * end its next fire counts from (issue 23 item 3: the series stopped). */
static void test_after_misfire_rearms(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 2;
	j.kind = DBCRON_SCHED_AFTER;
	j.interval_ms = 3000;
	j.next_fire_at = 10000;
	j.misfire = DBCRON_MISFIRE_SKIP;
	store_plan out;
	/* now 60 s, horizon 1 s ahead: the late fire is recorded, the next
	 * one is 3 s from now (beyond the horizon, so only armed) */
	assert_int_equal(planner_plan(p, &j, 60000, 61000, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_MISFIRED);
	assert_int_equal(out.fires[0].fire_at, 10000);
	assert_int_equal(out.next_fire_at, 63000);
	/* a horizon that reaches it: planned as an ordinary fire */
	assert_int_equal(planner_plan(p, &j, 60000, 64000, &out), 0);
	assert_int_equal(out.nfires, 2);
	assert_int_equal(out.fires[1].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.fires[1].fire_at, 63000);
	assert_int_equal(out.next_fire_at, -1); /* from that run's end */
	/* fire_once runs it late: the run's end re-arms, not the planner */
	j.misfire = DBCRON_MISFIRE_FIRE_ONCE;
	assert_int_equal(planner_plan(p, &j, 60000, 61000, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.next_fire_at, -1);
	planner_free(p);
}

static void test_cron_misfire_and_bounds(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 7;
	j.kind = DBCRON_SCHED_CRON;
	j.spec = "* * * * * ?";
	j.next_fire_at = 0;
	store_plan out;
	/* a year of every-second fires missed: bounded work, all accounted */
	int64_t now = 366LL * 86400 * 1000;
	j.misfire = DBCRON_MISFIRE_SKIP;
	assert_int_equal(planner_plan(p, &j, now, now, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_MISFIRED);
	assert_true(out.fires[0].missed + 1 >= PLAN_MAX_MISSED_COUNT);
	assert_true(out.nfires <= PLAN_MAX_FIRES_PER_JOB + 1);
	assert_int_equal(out.next_fire_at, now + 1000);
	assert_non_null(strstr(out.fires[0].error, "at least"));
	/* fire_once past the bound: the one run says its count is a lower
	 * bound; below the bound it carries no note */
	j.next_fire_at = 0;
	j.misfire = DBCRON_MISFIRE_FIRE_ONCE;
	assert_int_equal(planner_plan(p, &j, now, now, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_SCHEDULED);
	assert_true(out.fires[0].missed + 1 >= PLAN_MAX_MISSED_COUNT);
	assert_non_null(out.fires[0].error);
	assert_non_null(strstr(out.fires[0].error, "at least"));
	j.next_fire_at = now - 600000;
	assert_int_equal(planner_plan(p, &j, now, now, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(out.fires[0].missed, 599 - j.misfire_threshold_ms / 1000);
	assert_null(out.fires[0].error);
	/* catch-up past the counting bound runs the newest instants before
	 * the misfire threshold, not the first ones counted */
	j.id = 9;
	j.next_fire_at = 0;
	j.misfire = DBCRON_MISFIRE_CATCH_UP;
	j.max_catchup = 5;
	now = 3LL * 86400 * 1000;
	int64_t late_limit = now - j.misfire_threshold_ms;
	assert_int_equal(planner_plan(p, &j, now, now, &out), 0);
	assert_int_equal(out.fires[0].state, DBCRON_RUN_MISFIRED);
	assert_non_null(strstr(out.fires[0].error, "at least"));
	for (int i = 1; i <= 5; i++) {
		assert_int_equal(out.fires[i].state, DBCRON_RUN_SCHEDULED);
		assert_int_equal(out.fires[i].fire_at, late_limit - (6 - i) * 1000);
	}
	assert_int_equal(out.fires[6].fire_at, late_limit);
	/* a cron job that never fires again plans nothing more */
	j.spec = "0 0 0 30 2 ?";
	j.id = 8;
	j.next_fire_at = 1000;
	j.misfire = DBCRON_MISFIRE_FIRE_ONCE;
	assert_int_equal(planner_plan(p, &j, 2000, 3000, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.next_fire_at, -1);
	planner_free(p);
}

static void test_at_and_backoff(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 9;
	j.kind = DBCRON_SCHED_AT;
	j.at_ms = j.next_fire_at = 5000;
	store_plan out;
	assert_int_equal(planner_plan(p, &j, 4000, 6000, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.next_fire_at, -1);
	j.retry_base_ms = 60000;
	j.retry_cap_ms = 3600000;
	assert_int_equal(model_backoff_ms(&j, 1), 60000);
	assert_int_equal(model_backoff_ms(&j, 2), 120000);
	assert_int_equal(model_backoff_ms(&j, 3), 240000);
	assert_int_equal(model_backoff_ms(&j, 7), 3600000); /* capped */
	assert_int_equal(model_backoff_ms(&j, 60), 3600000);
	planner_free(p);
}

/*
 * A cron job whose only change is its zone (`job apply` with a new "tz"):
 * the store writes the next fire in the new zone, and the planner's cache
 * of parsed expressions and zones must follow for the fires after it, or a
 * running node goes on firing on the old zone.
 */
static void test_cron_zone_change(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 11;
	j.kind = DBCRON_SCHED_CRON;
	j.spec = (char *)"0 0 9 * * ?"; /* 09:00 every day */
	j.tz = (char *)"UTC";
	const int64_t day = 86400000, nine_utc = 1767344400000LL; /* 2026-01-02T09:00Z */
	j.next_fire_at = nine_utc;
	store_plan out;
	assert_int_equal(planner_plan(p, &j, nine_utc, nine_utc, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.next_fire_at, nine_utc + day);
	/* Tokyo is UTC+9: 09:00 there is 00:00 UTC, 2026-01-03T00:00Z next. */
	j.tz = (char *)"Asia/Tokyo";
	j.next_fire_at = nine_utc + 15 * 3600000LL;
	assert_int_equal(planner_plan(p, &j, j.next_fire_at, j.next_fire_at, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.fires[0].fire_at, j.next_fire_at);
	assert_int_equal(out.next_fire_at, j.next_fire_at + day);
	/* and back */
	j.tz = NULL;
	j.next_fire_at = nine_utc + day;
	assert_int_equal(planner_plan(p, &j, j.next_fire_at, j.next_fire_at, &out), 0);
	assert_int_equal(out.next_fire_at, nine_utc + 2 * day);
	planner_free(p);
}

/* --exclude-calendar: the planner and dbcron_job_next_fire skip the
 * calendar's days, each read in the job's zone (a Tokyo day starts at
 * 15:00 UTC the day before), cron and every alike; a run of excluded days
 * is skipped whole, and the window still holds. */
static void test_exclusion_calendar(void **state)
{
	(void)state;
	planner *p;
	assert_int_equal(planner_create(&p, NULL), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 12;
	j.kind = DBCRON_SCHED_CRON;
	j.spec = (char *)"0 0 9 * * ?";
	j.tz = (char *)"UTC";
	j.exclude_days = (char *)"2026-01-03\n2026-01-04\n2026-01-06";
	const int64_t day = 86400000, nine = 1767344400000LL; /* 2026-01-02T09:00Z */
	int64_t next = -1;
	/* the 2nd fires; the 3rd and 4th are excluded: the 5th, then the 7th */
	j.next_fire_at = nine;
	store_plan out;
	assert_int_equal(planner_plan(p, &j, nine, nine, &out), 0);
	assert_int_equal(out.nfires, 1);
	assert_int_equal(out.next_fire_at, nine + 3 * day);
	assert_int_equal(planner_next(p, &j, nine + 3 * day, &next), 1);
	assert_int_equal(next, nine + 5 * day);
	assert_int_equal(dbcron_job_next_fire(&j, nine, &next, NULL), 1);
	assert_int_equal(next, nine + 3 * day);
	/* in Tokyo 09:00 on the 3rd is 00:00 UTC on the 3rd: excluded, as are
	 * the 4th; the 5th's is 2026-01-05T00:00Z */
	j.tz = (char *)"Asia/Tokyo";
	assert_int_equal(dbcron_job_next_fire(&j, nine, &next, NULL), 1);
	assert_int_equal(next, nine - 9 * 3600000LL + 3 * day);
	assert_int_equal(planner_next(p, &j, nine, &next), 1);
	assert_int_equal(next, nine - 9 * 3600000LL + 3 * day);
	/* every 6 h: nothing on the excluded days, the window's end holds */
	dbcron_job e = every_job(6 * 3600000LL, nine, nine);
	e.exclude_days = j.exclude_days;
	assert_int_equal(dbcron_job_next_fire(&e, nine + 12 * 3600000LL, &next, NULL), 1);
	assert_int_equal(next, nine + 3 * day - 6 * 3600000LL); /* 2026-01-05T03:00Z */
	e.end_at = nine + 2 * day;
	assert_int_equal(dbcron_job_next_fire(&e, nine + 12 * 3600000LL, &next, NULL), 0);
	/* a calendar without the job's days changes nothing */
	j.tz = (char *)"UTC";
	j.exclude_days = (char *)"2025-12-25";
	assert_int_equal(dbcron_job_next_fire(&j, nine, &next, NULL), 1);
	assert_int_equal(next, nine + day);
	planner_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on_time),
		cmocka_unit_test(test_misfire_policies),
		cmocka_unit_test(test_after_misfire_rearms),
		cmocka_unit_test(test_cron_misfire_and_bounds),
		cmocka_unit_test(test_at_and_backoff),
		cmocka_unit_test(test_cron_zone_change),
		cmocka_unit_test(test_exclusion_calendar),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
