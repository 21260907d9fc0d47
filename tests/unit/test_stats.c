/* The node's per-job run counters: kept only when an HTTP server asked for
 * them (jobs_max > 0), for at most jobs_max jobs, in name order, so that a
 * node draining a million one-shot jobs keeps neither memory nor work per
 * job beyond that bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched/stats.h"

typedef struct seen {
	char names[8][16];
	unsigned long long ok[8];
	size_t n;
} seen;

static void collect(void *ctx, const node_job_runs *j)
{
	seen *s = ctx;
	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", j->name);
		s->ok[s->n++] = j->runs[DBCRON_RUN_SUCCEEDED];
	}
}

static void test_none_without_a_server(void **state)
{
	(void)state;
	node_stats st = {0};
	node_stats_init(&st);
	for (int i = 0; i < 100; i++)
		assert_int_equal(node_stats_job_ended(&st, "a", DBCRON_RUN_SUCCEEDED), 0);
	assert_int_equal(st.njobs, 0);
	node_stats_free(&st);
}

static void test_bounded_and_sorted(void **state)
{
	(void)state;
	node_stats st = {0};
	node_stats_init(&st);
	atomic_store(&st.jobs_max, 3);
	const char *order[] = {"m", "c", "x", "a", "c", "m", "zz", "c"};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		node_stats_job_ended(&st, order[i], DBCRON_RUN_SUCCEEDED);
	seen s = {0};
	node_stats_jobs_each(&st, 10, collect, &s);
	/* the first three jobs run (m, c, x), in name order; a and zz came
	 * when the table was full and are in the node's totals only */
	assert_int_equal(s.n, 3);
	assert_string_equal(s.names[0], "c");
	assert_string_equal(s.names[1], "m");
	assert_string_equal(s.names[2], "x");
	assert_int_equal(s.ok[0], 3);
	assert_int_equal(s.ok[1], 2);
	assert_int_equal(s.ok[2], 1);
	node_stats_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_without_a_server),
		cmocka_unit_test(test_bounded_and_sorted),
	};
	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
