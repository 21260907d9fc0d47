/*
 * libdbcron umbrella header: every public header, so that
 * `#include <dbcron/dbcron.h>` gives the whole API (docs/library.md).
 */
#ifndef DBCRON_DBCRON_H
#define DBCRON_DBCRON_H

#include "dbcron/version.h"
#include "dbcron/error.h"
#include "dbcron/cron.h"
#include "dbcron/run.h"
#include "dbcron/job.h"
#include "dbcron/db.h"
#include "dbcron/lock.h"
#include "dbcron/handler.h"
#include "dbcron/node.h"

#endif
