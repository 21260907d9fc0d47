/*
 * Binary min-heap timer.  O(log n) push and pop; a late tick simply pops
 * every node whose due time has passed, so no slot is ever skipped (seed 004's
 * lesson) and each node is popped exactly once.
 */
#include <stdint.h>

#include "core/alloc.h"
#include "sched/timer.h"

void timer_init(timer_heap *h)
{
	h->a = NULL;
	h->n = h->cap = 0;
	h->next_seq = 0;
}

void timer_free(timer_heap *h)
{
	dbcron__free(h->a);
	timer_init(h);
}

static int less(const timer_node *x, const timer_node *y)
{
	if (x->due != y->due)
		return x->due < y->due;
	if (x->prio != y->prio)
		return x->prio > y->prio;
	if (x->tie != y->tie)
		return x->tie < y->tie;
	return x->seq < y->seq;
}

static void place(timer_heap *h, size_t i, timer_node *t)
{
	h->a[i] = t;
	t->idx = i;
}

static void sift_up(timer_heap *h, size_t i)
{
	timer_node *t = h->a[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!less(t, h->a[parent]))
			break;
		place(h, i, h->a[parent]);
		i = parent;
	}
	place(h, i, t);
}

static void sift_down(timer_heap *h, size_t i)
{
	timer_node *t = h->a[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && less(h->a[c + 1], h->a[c]))
			c++;
		if (!less(h->a[c], t))
			break;
		place(h, i, h->a[c]);
		i = c;
	}
	place(h, i, t);
}

int timer_reserve(timer_heap *h, size_t more)
{
	return more ? dbcron__grow((void **)&h->a, &h->cap, h->n + more, sizeof(*h->a)) : 0;
}

int timer_push(timer_heap *h, timer_node *t, int64_t due)
{
	if (dbcron__grow((void **)&h->a, &h->cap, h->n + 1, sizeof(*h->a)))
		return -1;
	t->due = due;
	t->seq = h->next_seq++;
	h->a[h->n] = t;
	t->idx = h->n++;
	sift_up(h, t->idx);
	return 0;
}

timer_node *timer_peek(const timer_heap *h)
{
	return h->n ? h->a[0] : NULL;
}

/* Each node due by `due` sits in the root's subtree of such nodes: a
 * walk that stops at later ones reads O(cap) nodes, never the heap (the
 * stack holds at most cap + 1 entries: keep cap under 128). */
size_t timer_count_due(const timer_heap *h, int64_t due, size_t cap)
{
	size_t stack[128], sp = 0, k = 0;
	if (h->n && h->a[0]->due <= due)
		stack[sp++] = 0;
	while (sp && k < cap) {
		size_t i = stack[--sp];
		k++;
		for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < h->n; c++)
			if (h->a[c]->due <= due && sp < sizeof(stack) / sizeof(stack[0]))
				stack[sp++] = c;
	}
	return k;
}

void timer_remove(timer_heap *h, timer_node *t)
{
	size_t i = t->idx;
	if (i >= h->n || h->a[i] != t)
		return;
	timer_node *last = h->a[--h->n];
	t->idx = SIZE_MAX;
	if (i == h->n)
		return;
	place(h, i, last);
	if (i > 0 && less(last, h->a[(i - 1) / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
}

timer_node *timer_pop(timer_heap *h)
{
	timer_node *t = timer_peek(h);
	if (t)
		timer_remove(h, t);
	return t;
}
