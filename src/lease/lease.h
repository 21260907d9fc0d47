/* Internal side of the lease locks: the CLI and the node's maintenance use
 * the store behind a dbcron_db and share the name check. */
#ifndef DBCRON_LEASE_H
#define DBCRON_LEASE_H

#include "dbcron/lock.h"
#include "store/store.h"

store *lease__store(dbcron_db *db);
int lease__check_name(const char *name, dbcron_err *err);

#endif
