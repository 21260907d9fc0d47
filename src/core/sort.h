/* qsort that accepts an empty array: qsort(NULL, 0, ...) is undefined
 * behaviour (its first argument is declared non-null). */
#ifndef DBCRON_CORE_SORT_H
#define DBCRON_CORE_SORT_H

#include <stdlib.h>

static inline void dbcron__sort(void *base, size_t n, size_t size,
				int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
