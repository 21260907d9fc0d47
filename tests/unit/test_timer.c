/* The fire timer: order, the owner's tie, FIFO ties, removal, every node
 * popped once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sched/timer.h"

static void test_order_and_fifo(void **state)
{
	(void)state;
	timer_heap h;
	timer_init(&h);
	enum { N = 5000 };
	static timer_node nodes[N];
	static int64_t dues[N];
	srandom(7);
	for (int i = 0; i < N; i++) {
		dues[i] = random() % 50; /* many ties */
		assert_int_equal(timer_push(&h, &nodes[i], dues[i]), 0);
	}
	/* remove every 7th */
	int removed = 0;
	for (int i = 0; i < N; i += 7) {
		timer_remove(&h, &nodes[i]);
		removed++;
	}
	int64_t last_due = -1;
	uint64_t last_seq = 0;
	int popped = 0;
	timer_node *t;
	while ((t = timer_pop(&h))) {
		size_t i = (size_t)(t - nodes);
		assert_true(i % 7 != 0);
		assert_int_equal(t->due, dues[i]);
		assert_true(t->due >= last_due);
		if (t->due == last_due)
			assert_true(t->seq > last_seq); /* FIFO among ties */
		last_due = t->due;
		last_seq = t->seq;
		popped++;
	}
	assert_int_equal(popped, N - removed);
	timer_free(&h);
}

/* Same due time: the owner's tie (a fire's instant) decides, then FIFO. */
static void test_tie_before_fifo(void **state)
{
	(void)state;
	timer_heap h;
	timer_init(&h);
	enum { N = 1000 };
	static timer_node nodes[N];
	srandom(11);
	for (int i = 0; i < N; i++) {
		nodes[i].tie = random() % 20;
		assert_int_equal(timer_push(&h, &nodes[i], 100 + random() % 3), 0);
	}
	timer_node *t, *last = NULL;
	while ((t = timer_pop(&h))) {
		if (last && last->due == t->due) {
			assert_true(t->tie >= last->tie);
			if (t->tie == last->tie)
				assert_true(t->seq > last->seq);
		}
		last = t;
	}
	timer_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_fifo),
		cmocka_unit_test(test_tie_before_fifo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
