/* The schedule rules of model/rules.h: same schedule, resume's next fire,
 * a definition's series and first fire, retry due times and the node-loss
 * decision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/text.h"
#include "core/alloc.h"
#include "model/rules.h"

/* 2026-01-02T03:04:05Z */
#define NOW 1767323045000LL

/* Strings are the test's (literals): never dbcron_job_clear these. */
static dbcron_job job_of(dbcron_sched_kind kind, const char *spec,
			 int64_t interval)
{
	dbcron_job j;
	dbcron_job_init(&j);
	j.name = "r";
	j.kind = kind;
	j.spec = (char *)spec;
	j.interval_ms = interval;
	return j;
}

static void test_same_schedule(void **state)
{
	(void)state;
	dbcron_job a = job_of(DBCRON_SCHED_CRON, "0 0 * * *", 0);
	dbcron_job b = a;
	b.tz = "UTC";
	assert_true(model_same_schedule(&a, &b));
	b.tz = "";
	assert_true(model_same_schedule(&a, &b));
	b.tz = "Europe/Berlin";
	assert_false(model_same_schedule(&a, &b));
	b = job_of(DBCRON_SCHED_EVERY, "0 0 * * *", 0);
	assert_false(model_same_schedule(&a, &b));
}

static void test_resume_next_fire(void **state)
{
	(void)state;
	dbcron_err err = {0};
	int64_t next = 0;

	/* AFTER: one interval from now */
	dbcron_job j = job_of(DBCRON_SCHED_AFTER, "5m", 300000);
	j.next_fire_at = NOW - 3600000;
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, NOW + 300000);

	/* EVERY: the first point of the anchored series after now; the fires
	 * that fell in the pause are dropped, not misfired */
	j = job_of(DBCRON_SCHED_EVERY, "10s", 10000);
	j.anchor_ms = NOW - 95000;
	j.next_fire_at = NOW - 85000;
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, NOW + 5000);

	/* CRON: the next fire after now in the job's zone */
	j = job_of(DBCRON_SCHED_CRON, "0 0 12 * * ?", 0);
	j.next_fire_at = NOW - 86400000;
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, 1767355200000LL); /* 2026-01-02T12:00:00Z */
	j.tz = "Asia/Tokyo";                     /* 03:04Z is 12:04 in Tokyo */
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, 1767409200000LL); /* 2026-01-03T03:00:00Z */

	/* a cron series that has ended: no next fire */
	j = job_of(DBCRON_SCHED_CRON, "0 0 0 1 1 ? 2020", 0);
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, -1);

	/* AT: what is stored; a past one-shot that has not fired fires now */
	j = job_of(DBCRON_SCHED_AT, "2025-01-01T00:00:00Z", 0);
	j.at_ms = j.next_fire_at = 1735689600000LL;
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, 1735689600000LL);
	j.next_fire_at = -1; /* it fired before the pause */
	assert_int_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_int_equal(next, -1);

	/* a broken definition is an error, not a silent -1 */
	j = job_of(DBCRON_SCHED_CRON, "not cron", 0);
	assert_int_not_equal(model_resume_next_fire(&j, NOW, &next, &err), DBCRON_OK);
	assert_true(err.msg[0] != '\0');
}

static void test_series_and_first_fire(void **state)
{
	(void)state;
	dbcron_err err = {0};

	/* a new AT job: its text against now; the instant even when past */
	dbcron_job j = job_of(DBCRON_SCHED_AT, "now+90s", 0);
	assert_int_equal(model_job_series(&j, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(j.at_ms, NOW + 90000);
	assert_int_equal(model_job_first_fire(&j, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, NOW + 90000);
	dbcron_job past = job_of(DBCRON_SCHED_AT, "2025-01-01T00:00:00Z", 0);
	assert_int_equal(model_job_series(&past, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(model_job_first_fire(&past, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(past.next_fire_at, 1735689600000LL);

	/* the same AT text later keeps the instant; a bad text is an error */
	dbcron_job again = job_of(DBCRON_SCHED_AT, "now+90s", 0);
	assert_int_equal(model_job_series(&again, NOW + 60000, &j, &err), DBCRON_OK);
	assert_int_equal(again.at_ms, NOW + 90000);
	again = job_of(DBCRON_SCHED_AT, "soon", 0);
	assert_int_equal(model_job_series(&again, NOW, NULL, &err), DBCRON_EPARSE);

	/* AFTER: one interval from now; CRON: next after now */
	j = job_of(DBCRON_SCHED_AFTER, "1m", 60000);
	assert_int_equal(model_job_series(&j, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(model_job_first_fire(&j, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, NOW + 60000);
	j = job_of(DBCRON_SCHED_CRON, "0 0 12 * * ?", 0);
	assert_int_equal(model_job_first_fire(&j, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, 1767355200000LL);

	/* resumed by a definition with the same schedule: the resume rule */
	dbcron_job prev = job_of(DBCRON_SCHED_AFTER, "1m", 60000);
	prev.paused = true;
	prev.next_fire_at = NOW - 1000;
	j = job_of(DBCRON_SCHED_AFTER, "1m", 60000);
	assert_int_equal(model_job_first_fire(&j, NOW, &prev, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, NOW + 60000);
	/* still paused: the stored next fire stays */
	j.paused = true;
	assert_int_equal(model_job_first_fire(&j, NOW, &prev, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, NOW - 1000);
}

/* An AT text naming the stored instant (a `job export` file's RFC 3339 for
 * a stored "now+90s") is the same schedule: the stored text stays, so the
 * store keeps the next fire and a one-shot that fired is not re-armed. */
static void test_at_same_instant(void **state)
{
	(void)state;
	dbcron_err err = {0};
	dbcron_job prev = job_of(DBCRON_SCHED_AT, "now+90s", 0);
	prev.at_ms = NOW + 90000;
	prev.next_fire_at = -1; /* it fired */

	dbcron_job j = job_of(DBCRON_SCHED_AT, NULL, 0);
	j.spec = dbcron__strdup("2026-01-02T03:05:35Z");
	assert_non_null(j.spec);
	assert_int_equal(model_job_series(&j, NOW + 5000, &prev, &err), DBCRON_OK);
	assert_string_equal(j.spec, "now+90s");
	assert_true(model_same_schedule(&j, &prev));
	assert_int_equal(model_job_first_fire(&j, NOW + 5000, &prev, &err), DBCRON_OK);
	assert_int_equal(j.next_fire_at, -1);
	dbcron__free(j.spec);

	/* another instant is another schedule */
	j = job_of(DBCRON_SCHED_AT, NULL, 0);
	j.spec = dbcron__strdup("2026-01-02T03:05:36Z");
	assert_non_null(j.spec);
	assert_int_equal(model_job_series(&j, NOW, &prev, &err), DBCRON_OK);
	assert_string_equal(j.spec, "2026-01-02T03:05:36Z");
	assert_false(model_same_schedule(&j, &prev));
	dbcron__free(j.spec);
}

static void test_followup(void **state)
{
	(void)state;
	dbcron_job j = job_of(DBCRON_SCHED_EVERY, "1m", 60000);
	j.max_retries = 2;
	j.retry_base_ms = 1000;
	j.retry_cap_ms = 3000;
	assert_int_equal(model_backoff_ms(&j, 1), 1000);
	assert_int_equal(model_backoff_ms(&j, 2), 2000);
	assert_int_equal(model_backoff_ms(&j, 3), 3000);
	model_followup f = model_run_followup(&j, 1, DBCRON_RUN_FAILED, false, NOW);
	assert_int_equal(f.retry_due_at, NOW + 1000);
	assert_int_equal(f.job_next_fire_at, -1);
	f = model_run_followup(&j, 3, DBCRON_RUN_TIMED_OUT, false, NOW);
	assert_int_equal(f.retry_due_at, -1);
	f = model_run_followup(&j, 1, DBCRON_RUN_FAILED, true, NOW);
	assert_int_equal(f.retry_due_at, -1);
	/* node lost: retry at once while attempts remain, unless abandon */
	assert_true(model_retry_on_node_loss(&j, 2));
	assert_false(model_retry_on_node_loss(&j, 3));
	f = model_run_followup(&j, 1, DBCRON_RUN_ABANDONED, false, NOW);
	assert_int_equal(f.retry_due_at, NOW);
	/* a fire that never started, of a paused or deleted job: no retry */
	f = model_run_followup(&j, 1, DBCRON_RUN_ABANDONED, true, NOW);
	assert_int_equal(f.retry_due_at, -1);
	j.node_loss = DBCRON_NODE_LOSS_ABANDON;
	assert_false(model_retry_on_node_loss(&j, 1));
	/* AFTER: the next fire follows the end of the run, not a retry */
	j = job_of(DBCRON_SCHED_AFTER, "1m", 60000);
	j.max_retries = 0;
	f = model_run_followup(&j, 1, DBCRON_RUN_FAILED, false, NOW);
	assert_int_equal(f.retry_due_at, -1);
	assert_int_equal(f.job_next_fire_at, NOW + 60000);
}

/* A lost node's run: a written start follows the retry budget; an
 * unwritten one (maybe never ran) is always owed a new attempt under
 * retry, and never under abandon (maybe it ran). */
static void test_lost_followup(void **state)
{
	(void)state;
	dbcron_job j = job_of(DBCRON_SCHED_AFTER, "1m", 60000);
	j.max_retries = 0;
	model_followup f = model_lost_followup(&j, 1, true, NOW);
	assert_int_equal(f.retry_due_at, -1);
	assert_int_equal(f.job_next_fire_at, NOW + 60000);
	/* the budget holds for a start never written too (issue 23: a
	 * handler crashing its node was retried forever) */
	f = model_lost_followup(&j, 1, false, NOW);
	assert_int_equal(f.retry_due_at, -1);
	assert_int_equal(f.job_next_fire_at, NOW + 60000);
	j.max_retries = 2;
	f = model_lost_followup(&j, 1, true, NOW);
	assert_int_equal(f.retry_due_at, NOW);
	f = model_lost_followup(&j, 2, false, NOW);
	assert_int_equal(f.retry_due_at, NOW);
	assert_int_equal(f.job_next_fire_at, -1);
	f = model_lost_followup(&j, 3, false, NOW);
	assert_int_equal(f.retry_due_at, -1);
	j.node_loss = DBCRON_NODE_LOSS_ABANDON;
	f = model_lost_followup(&j, 1, false, NOW);
	assert_int_equal(f.retry_due_at, -1);
	assert_int_equal(f.job_next_fire_at, NOW + 60000);
}

/* Issue 23 item 1: a reason quoting a long multi-byte handler name is
 * cut between characters, never inside one; the name rule bounds it. */
static void test_unrunnable_why_cut(void **state)
{
	(void)state;
	char handler[130 * 3 + 1];
	for (int i = 0; i < 130; i++)
		memcpy(handler + 3 * i, "\xe2\x82\xac", 3);
	handler[390] = '\0';
	char why[400];
	const char *w = model_unrunnable_why(handler, why, sizeof(why));
	assert_true(dbcron__utf8_valid(w));
	assert_true(strlen(w) >= 396 && strlen(w) <= 399);
	char small[5];
	dbcron__textf(small, sizeof(small), "a%s", "\xe2\x82\xac\xe2\x82\xac");
	assert_string_equal(small, "a\xe2\x82\xac");
	dbcron__textf(small, sizeof(small), "ab%s", "\xe2\x82\xac");
	assert_string_equal(small, "ab");
	dbcron_err e = {0};
	assert_int_equal(dbcron__name_check("handler name", handler, true, &e), DBCRON_EINVAL);
	assert_int_equal(dbcron__name_check("handler name", "\xff", true, &e), DBCRON_EINVAL);
	assert_int_equal(dbcron__name_check("handler name", "my handler", true, &e), DBCRON_OK);
	handler[198] = '\0';
	assert_int_equal(dbcron__name_check("handler name", handler, true, &e), DBCRON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_schedule),
		cmocka_unit_test(test_resume_next_fire),
		cmocka_unit_test(test_series_and_first_fire),
		cmocka_unit_test(test_at_same_instant),
		cmocka_unit_test(test_followup),
		cmocka_unit_test(test_lost_followup),
		cmocka_unit_test(test_unrunnable_why_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
