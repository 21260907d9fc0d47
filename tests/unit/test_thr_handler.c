/*
 * The handler executor: built-ins noop and sleep, timeouts and cancel,
 * unknown names, registration, the context a handler sees, dispatch by
 * exec_run(), and lookups racing with registration (for ThreadSanitizer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/timeutil.h"
#include "dbcron/handler.h"
#include "exec/exec.h"

#define HANG_GUARD_MS 30000

static void run_handler(const char *name, const char *arg, int64_t timeout_ms,
			exec_cancel *cancel, exec_result *res)
{
	dbcron_job job;
	dbcron_job_init(&job);
	job.name = "htest";
	job.executor = DBCRON_EXEC_HANDLER;
	job.handler = (char *)name;
	job.arg = (char *)arg;
	job.timeout_ms = timeout_ms;
	static const char *const params[] = {"XY=", "X=a=b"};
	exec_req req = {
		.job = &job,
		.run_id = 42,
		.fire_at_ms = 1700000000000LL,
		.attempt = 3,
		.node_id = "node-h",
		.cancel = cancel,
		.params = params,
		.nparams = 2,
	};
	exec_run(&req, res);
	assert_true(res->mono_end_ms >= res->mono_start_ms);
}

static void test_noop(void **state)
{
	(void)state;
	exec_result r;

	run_handler("noop", NULL, 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_null(r.error);
	assert_null(r.output);
	exec_result_clear(&r);
	assert_true(dbcron_handler_exists("noop"));
	assert_true(dbcron_handler_exists("sleep"));
	assert_false(dbcron_handler_exists("nope"));
	assert_false(dbcron_handler_exists(NULL));

	/* A figure for the log, not an assert: noop executions per second on
	 * one thread, executor cost only. */
	int64_t t0 = dbcron__mono_us();
	for (int i = 0; i < 200000; i++) {
		run_handler("noop", NULL, 0, NULL, &r);
		exec_result_clear(&r);
	}
	int64_t us = dbcron__mono_us() - t0;
	print_message("noop: 200000 runs in %lld us (%.0f per second, one thread)\n",
		      (long long)us, us > 0 ? 200000.0 * 1e6 / (double)us : 0.0);
}

static void test_sleep(void **state)
{
	(void)state;
	exec_result r;

	run_handler("sleep", "120ms", 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_true(r.mono_end_ms - r.mono_start_ms >= 120);
	exec_result_clear(&r);

	run_handler("sleep", "0s", 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	exec_result_clear(&r);

	run_handler("sleep", "forever", 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.error, "sleep: duration 'forever'"));
	exec_result_clear(&r);

	run_handler("sleep", NULL, 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(r.error, "needs a duration"));
	exec_result_clear(&r);
}

static void test_sleep_timeout(void **state)
{
	(void)state;
	exec_result r;

	run_handler("sleep", "1h", 150, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_TIMED_OUT);
	assert_string_equal(r.error, "timed out after 150ms");
	assert_false(r.has_exit_code);
	assert_true(r.mono_end_ms - r.mono_start_ms >= 150);
	assert_true(r.mono_end_ms - r.mono_start_ms < HANG_GUARD_MS);
	exec_result_clear(&r);
}

static void *cancel_later(void *arg)
{
	exec_cancel *c = arg;
	struct timespec ts = {0, 150 * 1000000L};
	nanosleep(&ts, NULL);
	atomic_store(&c->requested, 1);
	return NULL;
}

static void test_sleep_cancel(void **state)
{
	(void)state;
	exec_cancel c = {0};
	pthread_t th;
	exec_result r;

	assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
	run_handler("sleep", "1h", HANG_GUARD_MS * 2, &c, &r);
	pthread_join(th, NULL);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_string_equal(r.error, "cancelled");
	assert_false(r.has_exit_code);
	assert_true(r.mono_end_ms - r.mono_start_ms < HANG_GUARD_MS);
	exec_result_clear(&r);
}

static void test_unknown(void **state)
{
	(void)state;
	exec_result r;

	run_handler("nope", NULL, 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	assert_string_equal(r.error, "unknown handler 'nope'");
	exec_result_clear(&r);

	run_handler(NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(r.error);
	exec_result_clear(&r);
}

/* A user handler that checks its context and fails on request. */
static int user_handler(const dbcron_handler_ctx *ctx, void *user, char *errbuf,
			size_t errlen)
{
	int *calls = user;
	(*calls)++;
	if (strcmp(ctx->job, "htest") || ctx->attempt != 3 || ctx->run_id != 42 ||
	    ctx->fire_at_ms != 1700000000000LL || strcmp(ctx->node, "node-h") ||
	    ctx->deadline_mono_ms != -1 || dbcron_handler_should_stop(ctx)) {
		snprintf(errbuf, errlen, "bad context");
		return 99;
	}
	if (ctx->arg && !strcmp(ctx->arg, "fail")) {
		snprintf(errbuf, errlen, "boom");
		return 7;
	}
	if (ctx->arg && !strcmp(ctx->arg, "silent"))
		return 5;
	if (ctx->arg && !strcmp(ctx->arg, "params")) {
		/* the run's parameters through the getter: a key that is a
		 * prefix of another is not that other */
		const char *x = dbcron_handler_param(ctx, "X"), *xy = dbcron_handler_param(ctx, "XY");
		if (!x || strcmp(x, "a=b") || !xy || strcmp(xy, "") ||
		    dbcron_handler_param(ctx, "Z") || dbcron_handler_param(ctx, "") ||
		    dbcron_handler_param(ctx, NULL)) {
			snprintf(errbuf, errlen, "bad params");
			return 98;
		}
	}
	return 0;
}

static int user_handler2(const dbcron_handler_ctx *ctx, void *user, char *errbuf,
			 size_t errlen)
{
	return 0;
}

static void test_register(void **state)
{
	(void)state;
	static int calls;
	exec_result r;

	assert_int_equal(dbcron_handler_register("user", user_handler, &calls), DBCRON_OK);
	assert_int_equal(dbcron_handler_register("user", user_handler2, NULL), DBCRON_EEXISTS);
	assert_int_equal(dbcron_handler_register("noop", user_handler2, NULL), DBCRON_EEXISTS);
	assert_int_equal(dbcron_handler_register("sleep", user_handler2, NULL), DBCRON_EEXISTS);
	assert_int_equal(dbcron_handler_register("", user_handler2, NULL), DBCRON_EINVAL);
	assert_int_equal(dbcron_handler_register("x", NULL, NULL), DBCRON_EINVAL);
	assert_true(dbcron_handler_exists("user"));

	run_handler("user", "params", 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	exec_result_clear(&r);
	run_handler("user", NULL, 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_null(r.error);
	exec_result_clear(&r);
	/* The first registration is the one that stays. */
	assert_int_equal(calls, 2);

	run_handler("user", "fail", 0, NULL, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 7);
	assert_string_equal(r.error, "boom");
	exec_result_clear(&r);

	run_handler("user", "silent", 0, NULL, &r);
	assert_int_equal(r.exit_code, 5);
	assert_string_equal(r.error, "handler 'user' returned 5");
	exec_result_clear(&r);
}

static void test_dispatch_shell(void **state)
{
	(void)state;
	dbcron_job job;
	exec_result r;
	char *argv[] = {"echo", "via exec_run", NULL};

	dbcron_job_init(&job);
	job.name = "dispatch";
	job.argv = argv;
	job.argc = 2;
	exec_req req = {.job = &job};
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "via exec_run\n");
	exec_result_clear(&r);

	job.executor = (dbcron_executor)99;
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(r.error, "unknown executor"));
	exec_result_clear(&r);
}

/* Lookups on workers while names are registered: must be race-free. */
static atomic_int stop_lookups;

static void *lookup_worker(void *arg)
{
	(void)arg;
	long n = 0;
	while (!atomic_load(&stop_lookups)) {
		exec_result r;
		run_handler((n & 1) ? "noop" : "race-0", NULL, 0, NULL, &r);
		exec_result_clear(&r);
		dbcron_handler_exists("race-5");
		n++;
	}
	return NULL;
}

static void test_concurrent_lookup(void **state)
{
	(void)state;
	pthread_t th[3];

	atomic_store(&stop_lookups, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lookup_worker, NULL), 0);
	for (int i = 0; i < 64; i++) {
		char name[32];
		snprintf(name, sizeof(name), "race-%d", i);
		assert_int_equal(dbcron_handler_register(name, user_handler2, NULL), DBCRON_OK);
	}
	atomic_store(&stop_lookups, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_true(dbcron_handler_exists("race-63"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noop),
		cmocka_unit_test(test_sleep),
		cmocka_unit_test(test_sleep_timeout),
		cmocka_unit_test(test_sleep_cancel),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_dispatch_shell),
		cmocka_unit_test(test_concurrent_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
