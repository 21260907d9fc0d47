/*
 * Internal side of the library API (include/dbcron/db.h): the store behind
 * a dbcron_db, for the other modules that take a handle (lease locks).
 */
#ifndef DBCRON_API_API_H
#define DBCRON_API_API_H

#include "dbcron/db.h"
#include "store/store.h"

store *api__store(dbcron_db *db);

/*
 * The database URL kept in the file at path: one line, at most 64 KiB,
 * blanks around it dropped.  *url is a new string the caller frees (and
 * should wipe: it may hold a password).  Errors say why without the path
 * or any of the content ("more than one line ..."), for the caller to
 * prefix: DBCRON_EIO (with strerror), DBCRON_EINVAL, DBCRON_ENOMEM.
 */
int api__url_file_read(const char *path, char **url, dbcron_err *err);

#endif
