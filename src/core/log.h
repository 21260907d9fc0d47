/*
 * Structured log lines on stderr: "ts=... level=... event=... k=v ...".
 * One write per line so lines of several threads never interleave.
 */
#ifndef DBCRON_CORE_LOG_H
#define DBCRON_CORE_LOG_H

#include "dbcron/error.h"

enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* fmt holds the "k=v k=v" part after the event name. */
void dbcron__log(int level, const char *event, const char *fmt, ...)
	DBCRON_PRINTF(3, 4);
void dbcron__log_set_level(int level);

#endif
