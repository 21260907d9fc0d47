/*
 * Allocation wrapper with fault injection.  Owns the failure counter only;
 * the counter is atomic because worker threads allocate too.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static atomic_long fail_countdown;

void dbcron__alloc_fail_at(long nth)
{
	atomic_store(&fail_countdown, nth);
}

long dbcron__alloc_fail_at_pending(void)
{
	return atomic_load(&fail_countdown);
}

static int should_fail(void)
{
	long v = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
	if (v <= 0)
		return 0;
	return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

void *dbcron__malloc(size_t n)
{
	if (should_fail())
		return NULL;
	return malloc(n ? n : 1);
}

void *dbcron__calloc(size_t count, size_t n)
{
	if (should_fail())
		return NULL;
	return calloc(count ? count : 1, n ? n : 1);
}

void *dbcron__realloc(void *p, size_t n)
{
	if (should_fail())
		return NULL;
	return realloc(p, n ? n : 1);
}

int dbcron__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -1;
		ncap *= 2;
	}
	void *p = dbcron__realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

char *dbcron__strndup(const char *s, size_t n)
{
	char *p = dbcron__malloc(n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *dbcron__strdup(const char *s)
{
	return s ? dbcron__strndup(s, strlen(s)) : NULL;
}

void dbcron__free(void *p)
{
	free(p);
}
