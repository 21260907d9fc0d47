/*
 * The fire timer: a binary min-heap of intrusive nodes keyed by (due,
 * -prio, tie, seq).  The owner sets prio (the job's priority, issue 28
 * item 4: of fires due at one millisecond the higher starts first) and
 * tie before the push (the fire's instant): fires of one priority due at
 * the same millisecond start oldest instant first, whatever order a
 * claim returned them in (catch-up fires and runs taken over share their
 * due time; an UPDATE ... RETURNING has no order).  Equal ties break
 * first-in-first-out through seq.  Not thread-safe: the node guards it.
 */
#ifndef DBCRON_SCHED_TIMER_H
#define DBCRON_SCHED_TIMER_H

#include <stddef.h>
#include <stdint.h>

typedef struct timer_node {
	int64_t due; /* database-clock ms */
	int64_t tie; /* third key, set by the owner; 0 if unused */
	int prio;    /* second key, higher first; 0 if unused */
	uint64_t seq;
	size_t idx; /* position in the heap; SIZE_MAX when not queued */
} timer_node;

typedef struct timer_heap {
	timer_node **a;
	size_t n, cap;
	uint64_t next_seq;
} timer_heap;

void timer_init(timer_heap *h);
void timer_free(timer_heap *h); /* frees the array, not the nodes */
/* -1 on allocation failure (node not queued). */
int timer_push(timer_heap *h, timer_node *t, int64_t due);
/* Room for `more` pushes that then cannot fail; -1 when out of memory. */
int timer_reserve(timer_heap *h, size_t more);
timer_node *timer_peek(const timer_heap *h);
timer_node *timer_pop(timer_heap *h);
/* How many nodes are due at or before `due`, counting up to `cap`. */
size_t timer_count_due(const timer_heap *h, int64_t due, size_t cap);
void timer_remove(timer_heap *h, timer_node *t);
static inline size_t timer_count(const timer_heap *h) { return h->n; }

#endif
