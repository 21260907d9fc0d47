/* Worker pools: FIFO order, bounded queue, load, destroy hand-back, many
 * producers.  Waits are hang guards only, never speed asserts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"

#define HANG_GUARD_MS 60000

/* A work item that blocks until the test opens the gate. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started;
	bool open;
};

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->started = 0;
	g->open = false;
}

static void gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

static void gate_item(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->mu);
	g->started++;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void gate_wait_started(struct gate *g, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HANG_GUARD_MS / 1000;
	pthread_mutex_lock(&g->mu);
	while (g->started < n)
		assert_int_equal(pthread_cond_timedwait(&g->cv, &g->mu, &until), 0);
	pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void wait_idle(pool *p)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	while (pool_load(p) != 0) {
		assert_true(dbcron__mono_ms() < until);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Items that record the order they ran in. */
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static intptr_t order[64];
static int order_len;

static void record_item(void *arg)
{
	pthread_mutex_lock(&order_mu);
	order[order_len++] = (intptr_t)arg;
	pthread_mutex_unlock(&order_mu);
}

static void test_fifo_one_thread(void **state)
{
	(void)state;
	pool *p;
	struct gate g;
	dbcron_err err = {0};

	gate_init(&g);
	order_len = 0;
	assert_int_equal(pool_create("fifo", 1, 40, &p, &err), DBCRON_OK);
	assert_int_equal(pool_threads(p), 1);
	assert_int_equal(pool_capacity(p), 41);
	/* Hold the only worker so every item below is queued first. */
	assert_int_equal(pool_submit(p, gate_item, &g), DBCRON_OK);
	gate_wait_started(&g, 1);
	for (intptr_t i = 1; i <= 32; i++)
		assert_int_equal(pool_submit(p, record_item, (void *)i), DBCRON_OK);
	assert_int_equal(pool_load(p), 33);
	gate_open(&g);
	wait_idle(p);
	pthread_mutex_lock(&order_mu);
	assert_int_equal(order_len, 32);
	for (int i = 0; i < 32; i++)
		assert_int_equal(order[i], i + 1);
	pthread_mutex_unlock(&order_mu);
	pool_destroy(p, NULL);
	gate_destroy(&g);
}

static void test_busy_when_full(void **state)
{
	(void)state;
	pool *p;
	struct gate g;

	gate_init(&g);
	order_len = 0;
	assert_int_equal(pool_create("busy", 2, 3, &p, NULL), DBCRON_OK);
	assert_int_equal(pool_capacity(p), 5);
	assert_int_equal(pool_load(p), 0);
	assert_int_equal(pool_submit(p, gate_item, &g), DBCRON_OK);
	assert_int_equal(pool_submit(p, gate_item, &g), DBCRON_OK);
	gate_wait_started(&g, 2);
	assert_int_equal(pool_load(p), 2); /* running counts */
	for (intptr_t i = 1; i <= 3; i++)
		assert_int_equal(pool_submit(p, record_item, (void *)i), DBCRON_OK);
	assert_int_equal(pool_load(p), 5);
	/* Full: refused at once, item untouched, load unchanged. */
	assert_int_equal(pool_submit(p, record_item, (void *)99), DBCRON_EBUSY);
	assert_int_equal(pool_submit(p, record_item, (void *)99), DBCRON_EBUSY);
	assert_int_equal(pool_load(p), 5);
	gate_open(&g);
	wait_idle(p);
	pthread_mutex_lock(&order_mu);
	assert_int_equal(order_len, 3);
	pthread_mutex_unlock(&order_mu);
	/* Room again once drained. */
	assert_int_equal(pool_submit(p, record_item, (void *)4), DBCRON_OK);
	wait_idle(p);
	pool_destroy(p, NULL);
	gate_destroy(&g);
}

/* pool_submit_many: what fits, in order, under one lock; and every item of
 * the lot gets a worker (a lone wake-up would leave the rest queued behind
 * a blocked one: the three gates below would never all start). */
static void test_submit_many(void **state)
{
	(void)state;
	pool *p;
	struct gate g;
	void *items[8];

	gate_init(&g);
	order_len = 0;
	assert_int_equal(pool_create("many", 1, 5, &p, NULL), DBCRON_OK);
	assert_int_equal(pool_submit(p, gate_item, &g), DBCRON_OK);
	gate_wait_started(&g, 1);
	for (intptr_t i = 0; i < 8; i++)
		items[i] = (void *)(i + 1);
	assert_int_equal(pool_submit_many(p, record_item, items, 8), 5);
	assert_int_equal(pool_submit_many(p, record_item, items, 8), 0); /* full */
	assert_int_equal(pool_load(p), 6);
	gate_open(&g);
	wait_idle(p);
	pthread_mutex_lock(&order_mu);
	assert_int_equal(order_len, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(order[i], i + 1);
	pthread_mutex_unlock(&order_mu);
	pool_destroy(p, NULL);
	gate_destroy(&g);

	/* three items on three threads (one broadcast) and on four (a
	 * wake-up each) */
	for (int threads = 3; threads <= 4; threads++) {
		gate_init(&g);
		assert_int_equal(pool_create("many3", threads, 8, &p, NULL), DBCRON_OK);
		void *gates[3] = {&g, &g, &g};
		assert_int_equal(pool_submit_many(p, gate_item, gates, 3), 3);
		gate_wait_started(&g, 3);
		gate_open(&g);
		wait_idle(p);
		pool_destroy(p, NULL);
		gate_destroy(&g);
	}
}

static void test_bad_args(void **state)
{
	(void)state;
	pool *p = (pool *)&p;
	dbcron_err err = {0};
	assert_int_equal(pool_create("x", 0, 1, &p, &err), DBCRON_EINVAL);
	assert_null(p);
	assert_non_null(strstr(err.msg, "threads"));
	assert_int_equal(pool_create("x", 1, 0, &p, &err), DBCRON_EINVAL);
	/* A long name is cut for the thread name only. */
	assert_int_equal(pool_create("a-very-long-pool-name", 1, 1, &p, &err), DBCRON_OK);
	assert_int_equal(pool_submit(p, NULL, NULL), DBCRON_EINVAL);
	pool_destroy(p, NULL);
	pool_destroy(NULL, NULL);

	/* Each of create's allocations failing: ENOMEM, nothing leaked. */
	for (long n = 1; n <= 3; n++) {
		dbcron__alloc_fail_at(n);
		assert_int_equal(pool_create("oom", 2, 4, &p, &err), DBCRON_ENOMEM);
		dbcron__alloc_fail_at(0);
		assert_null(p);
	}
}

/* destroy: the running item finishes, queued ones go to drop(). */
static struct gate drop_gate;
static atomic_int dropped, ran;
static intptr_t dropped_ids[8];

static void count_item(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
}

static void drop_item(void *arg)
{
	int n = atomic_fetch_add(&dropped, 1);
	dropped_ids[n] = (intptr_t)arg;
	/* Only now let the running item end: proves drop() comes before the
	 * join and is called without the pool lock (the worker needs it to
	 * finish). */
	if (n + 1 == 3)
		gate_open(&drop_gate);
}

static void test_destroy_hands_back(void **state)
{
	(void)state;
	pool *p;

	gate_init(&drop_gate);
	atomic_store(&dropped, 0);
	atomic_store(&ran, 0);
	assert_int_equal(pool_create("drop", 1, 4, &p, NULL), DBCRON_OK);
	assert_int_equal(pool_submit(p, gate_item, &drop_gate), DBCRON_OK);
	gate_wait_started(&drop_gate, 1);
	for (intptr_t i = 1; i <= 3; i++)
		assert_int_equal(pool_submit(p, count_item, (void *)i), DBCRON_OK);
	pool_destroy(p, drop_item);
	assert_int_equal(atomic_load(&dropped), 3);
	assert_int_equal(atomic_load(&ran), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(dropped_ids[i], i + 1);
	gate_destroy(&drop_gate);
}

/* Many producers, many workers: every item runs exactly once. */
#define PRODUCERS 4
#define PER_PRODUCER 20000
static atomic_long sum, count;
static atomic_long busy_seen;

static void add_item(void *arg)
{
	atomic_fetch_add(&sum, (long)(intptr_t)arg);
	atomic_fetch_add(&count, 1);
}

static void *producer(void *arg)
{
	pool *p = arg;
	for (intptr_t i = 1; i <= PER_PRODUCER; i++) {
		int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
		int rc;
		while ((rc = pool_submit(p, add_item, (void *)i)) == DBCRON_EBUSY) {
			atomic_fetch_add(&busy_seen, 1);
			if (dbcron__mono_ms() > until)
				return (void *)1;
			sched_yield();
		}
		if (rc != DBCRON_OK)
			return (void *)1;
	}
	return NULL;
}

static void test_many_producers(void **state)
{
	(void)state;
	pool *p;
	pthread_t th[PRODUCERS];

	atomic_store(&sum, 0);
	atomic_store(&count, 0);
	assert_int_equal(pool_create("many", 3, 64, &p, NULL), DBCRON_OK);
	for (int i = 0; i < PRODUCERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, producer, p), 0);
	for (int i = 0; i < PRODUCERS; i++) {
		void *r;
		pthread_join(th[i], &r);
		assert_null(r);
	}
	wait_idle(p);
	assert_int_equal(atomic_load(&count), (long)PRODUCERS * PER_PRODUCER);
	assert_int_equal(atomic_load(&sum),
			 (long)PRODUCERS * PER_PRODUCER * (PER_PRODUCER + 1) / 2);
	pool_destroy(p, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_one_thread),
		cmocka_unit_test(test_busy_when_full),
		cmocka_unit_test(test_submit_many),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_destroy_hands_back),
		cmocka_unit_test(test_many_producers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
