/*
 * Worker pools: a fixed set of threads fed from one bounded FIFO queue.
 *
 * Owns the ring of queued (fn, item) pairs and the threads.  Items are
 * opaque: the pool never looks inside them or frees them.
 *
 * Invariants:
 *  - the queue never holds more than queue_cap items; pool_submit() fails
 *    with DBCRON_EBUSY instead of waiting (the claim loop must never block
 *    on a worker, docs/design.md invariants 5 and 6);
 *  - work runs with no pool lock held, and the pool has exactly one lock,
 *    so no thread ever holds two;
 *  - queued + running is what pool_load() reports, read under the lock;
 *  - once stopping is set no worker starts a queued item: pool_destroy()
 *    hands every one of them to drop() so none is lost silently.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/exec.h"

struct pool_slot {
	pool_fn fn;
	void *item;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* signalled on submit and on stop */
	struct pool_slot *ring;
	size_t cap;     /* ring capacity, fixed at create */
	size_t head;    /* index of the oldest queued slot */
	size_t queued;  /* slots in use */
	size_t running; /* items a worker has taken and not finished */
	bool stopping;
	int nthreads;   /* threads actually started */
	pthread_t *threads;
	char name[32];
};

/* Takes the oldest slot; caller holds p->mu and knows queued > 0. */
static struct pool_slot ring_pop(pool *p)
{
	struct pool_slot s = p->ring[p->head];
	p->ring[p->head].fn = NULL;
	p->ring[p->head].item = NULL;
	p->head = (p->head + 1) % p->cap;
	p->queued--;
	return s;
}

static void *worker_main(void *arg)
{
	pool *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stopping && p->queued == 0)
			pthread_cond_wait(&p->work_cv, &p->mu);
		if (p->stopping)
			break;
		struct pool_slot s = ring_pop(p);
		p->running++;
		pthread_mutex_unlock(&p->mu);

		s.fn(s.item);

		pthread_mutex_lock(&p->mu);
		p->running--;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Stop and join the threads started so far (create's error path).
 * Caller holds no lock. */
static void stop_and_join(pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
}

int pool_create(const char *name, int threads, size_t queue_cap, pool **out,
		dbcron_err *err)
{
	int rc = DBCRON_ENOMEM;
	pool *p;

	*out = NULL;
	if (threads < 1 || queue_cap < 1 || queue_cap > SIZE_MAX / sizeof(struct pool_slot))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "pool '%s': need threads >= 1 and queue_cap >= 1 (got %d, %zu)",
				      name ? name : "", threads, queue_cap);
	p = dbcron__calloc(1, sizeof(*p));
	if (!p)
		goto out_nomem;
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "pool");
	p->cap = queue_cap;
	p->ring = dbcron__calloc(queue_cap, sizeof(*p->ring));
	if (!p->ring)
		goto out_free_pool;
	p->threads = dbcron__calloc((size_t)threads, sizeof(*p->threads));
	if (!p->threads)
		goto out_free_ring;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		rc = dbcron_err_set(err, DBCRON_EINTERNAL, "pool '%s': mutex init failed", p->name);
		goto out_free_threads;
	}
	if (pthread_cond_init(&p->work_cv, NULL) != 0) {
		rc = dbcron_err_set(err, DBCRON_EINTERNAL, "pool '%s': condvar init failed", p->name);
		goto out_destroy_mutex;
	}

	/* Linux limits thread names to 15 bytes; the tail of a long pool name
	 * is cut, which only affects what top and gdb show. */
	char tname[16];
	memcpy(tname, "dbcron-", 7);
	size_t nl = strnlen(p->name, sizeof(tname) - 8);
	memcpy(tname + 7, p->name, nl);
	tname[7 + nl] = '\0';
	for (int i = 0; i < threads; i++) {
		int e = pthread_create(&p->threads[i], NULL, worker_main, p);
		if (e != 0) {
			char eb[128];
			rc = dbcron_err_set(err, DBCRON_EINTERNAL,
					    "pool '%s': cannot start thread %d of %d: %s",
					    p->name, i + 1, threads,
					    strerror_r(e, eb, sizeof(eb)));
			goto out_join_threads;
		}
		p->nthreads++;
		pthread_setname_np(p->threads[i], tname);
	}
	*out = p;
	return DBCRON_OK;

out_join_threads:
	stop_and_join(p);
	pthread_cond_destroy(&p->work_cv);
out_destroy_mutex:
	pthread_mutex_destroy(&p->mu);
out_free_threads:
	dbcron__free(p->threads);
out_free_ring:
	dbcron__free(p->ring);
out_free_pool:
	dbcron__free(p);
	if (rc == DBCRON_ENOMEM)
		goto out_nomem;
	return rc;
out_nomem:
	return dbcron_err_set(err, DBCRON_ENOMEM, "pool '%s': out of memory",
			      name ? name : "");
}

int pool_submit(pool *p, pool_fn fn, void *item)
{
	if (!p || !fn)
		return DBCRON_EINVAL;
	return pool_submit_many(p, fn, &item, 1) == 1 ? DBCRON_OK : DBCRON_EBUSY;
}

/* One lock for the lot: a burst of fires due at one instant (thousands a
 * second on a busy node) was a lock, an unlock and a wake-up each.
 *
 * The wake-ups come after the unlock.  A worker woken while the submitter
 * still held the lock could only block on it, and on a loaded machine the
 * woken worker takes the submitter's core: the submitter then waited
 * several milliseconds to run again and unlock, and no queued item could
 * start meanwhile (W1, 5,000 jobs on 3 nodes and 2 cores: 4-6 ms from the
 * timer's wake to the first start, with an involuntary switch inside this
 * function; docs/benchmarks.md "The wake").  Waking after the unlock is
 * safe: the items are queued under the lock, and a waiter checks queued
 * under it, so none can miss them. */
size_t pool_submit_many(pool *p, pool_fn fn, void *const *items, size_t k)
{
	size_t done = 0;
	if (k == 0)
		return 0;
	pthread_mutex_lock(&p->mu);
	if (!p->stopping) {
		for (; done < k && p->queued < p->cap; done++) {
			size_t tail = (p->head + p->queued) % p->cap;
			p->ring[tail].fn = fn;
			p->ring[tail].item = items[done];
			p->queued++;
		}
	}
	pthread_mutex_unlock(&p->mu);
	/* each item needs one worker: a waiter woken per item, all of them
	 * once there are as many items as threads */
	if (done >= (size_t)p->nthreads)
		pthread_cond_broadcast(&p->work_cv);
	else
		for (size_t i = 0; i < done; i++)
			pthread_cond_signal(&p->work_cv);
	return done;
}

size_t pool_load(pool *p)
{
	pthread_mutex_lock(&p->mu);
	size_t n = p->queued + p->running;
	pthread_mutex_unlock(&p->mu);
	return n;
}

size_t pool_capacity(pool *p)
{
	/* cap and nthreads are fixed once pool_create() returned. */
	return (size_t)p->nthreads + p->cap;
}

int pool_threads(pool *p)
{
	return p->nthreads;
}

void pool_destroy(pool *p, pool_fn drop)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->work_cv);
	/* Hand back one item at a time and call drop() unlocked: drop() may
	 * take locks of its own (the scheduler's), and we never hold two. */
	while (p->queued > 0) {
		struct pool_slot s = ring_pop(p);
		pthread_mutex_unlock(&p->mu);
		if (drop)
			drop(s.item);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);

	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work_cv);
	pthread_mutex_destroy(&p->mu);
	dbcron__free(p->threads);
	dbcron__free(p->ring);
	dbcron__free(p);
}
