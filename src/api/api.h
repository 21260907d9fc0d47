/*
 * Internal side of the library API (include/dbcron/db.h): the store behind
 * a dbcron_db, for the other modules that take a handle (lease locks).
 */
#ifndef DBCRON_API_API_H
#define DBCRON_API_API_H

#include "dbcron/db.h"
#include "store/store.h"

store *api__store(dbcron_db *db);

#endif
