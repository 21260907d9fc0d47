/*
 * Error codes and their detail record.  Owns nothing but static text.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/text.h"
#include "dbcron/error.h"

const char *dbcron_strerror(int code)
{
	switch (code) {
#define DBCRON_X_CASE(name, num, text) \
	case num:                      \
		return text;
		DBCRON_ERRORS(DBCRON_X_CASE)
#undef DBCRON_X_CASE
	}
	return "unknown error";
}

int dbcron_err_set(dbcron_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		dbcron__vtextf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

void dbcron_err_clear(dbcron_err *err)
{
	if (err) {
		err->code = DBCRON_OK;
		err->msg[0] = '\0';
	}
}
