/*
 * libdbcron umbrella header.
 */
#ifndef DBCRON_DBCRON_H
#define DBCRON_DBCRON_H

#define DBCRON_VERSION "0.1.0"

#include "dbcron/error.h"
#include "dbcron/cron.h"
#include "dbcron/job.h"

#endif
