/*
 * The one allocation wrapper.  Every heap allocation in dbcron goes through
 * these so that tests can make the Nth allocation fail (STYLE.md habit 7).
 * None of them aborts: they return NULL and the caller returns DBCRON_ENOMEM.
 */
#ifndef DBCRON_CORE_ALLOC_H
#define DBCRON_CORE_ALLOC_H

#include <stddef.h>

void *dbcron__malloc(size_t n);
void *dbcron__calloc(size_t count, size_t n);
void *dbcron__realloc(void *p, size_t n);
/* Grows an array to at least `need` elements of `elem` bytes (doubling). */
int dbcron__grow(void **arr, size_t *cap, size_t need, size_t elem);
char *dbcron__strdup(const char *s);
char *dbcron__strndup(const char *s, size_t n);
void dbcron__free(void *p);

/* Test hook: the nth allocation from now (1-based) fails; 0 disables. */
void dbcron__alloc_fail_at(long nth);
/* Test hook: allocations left before the armed failure; 0 once it has
 * happened (or when none is armed). */
long dbcron__alloc_fail_at_pending(void);

#endif
