/*
 * PostgreSQL backend internals shared with its tests: the schema version
 * this binary writes and the password masking used in every message that
 * names the database.
 */
#ifndef DBCRON_STORE_PG_H
#define DBCRON_STORE_PG_H

#include <stddef.h>

/* Highest migration pg.c knows. */
#define DBCRON_PG_SCHEMA_VERSION 1

/*
 * Copy a libpq connection string (URI "postgresql://u:pw@h/db?password=pw"
 * or key=value "password='pw' host=h") into buf with every password
 * replaced by "***".  Always NUL-terminates (truncates when buf is short).
 * Returns the length the full masked text needs, like snprintf.
 */
size_t dbcron__pg_mask_url(const char *url, char *buf, size_t len);

#endif
