/*
 * dbcron error model: one enum with stable numbers (never reused), a
 * strerror, and a detail record the caller can print.
 */
#ifndef DBCRON_ERROR_H
#define DBCRON_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define DBCRON_API __attribute__((visibility("default")))
#define DBCRON_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DBCRON_API
#define DBCRON_PRINTF(a, b)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, number, text).  Numbers are part of the ABI: append only. */
#define DBCRON_ERRORS(X)                                                 \
	X(DBCRON_OK, 0, "success")                                       \
	X(DBCRON_ENOMEM, 1, "out of memory")                             \
	X(DBCRON_EINVAL, 2, "invalid argument")                          \
	X(DBCRON_EPARSE, 3, "parse error")                               \
	X(DBCRON_ENOTFOUND, 4, "not found")                              \
	X(DBCRON_EEXISTS, 5, "already exists")                           \
	X(DBCRON_EDB, 6, "database error")                               \
	X(DBCRON_EBUSY, 7, "busy")                                       \
	X(DBCRON_EFENCED, 8, "fenced: ownership was lost")               \
	X(DBCRON_EIO, 9, "I/O error")                                    \
	X(DBCRON_ETZ, 10, "unknown time zone")                           \
	X(DBCRON_ELOCKED, 11, "lock held by another owner")              \
	X(DBCRON_EINTERNAL, 12, "internal error")                        \
	X(DBCRON_EUNSUPPORTED, 13, "not supported")                      \
	X(DBCRON_ETIMEOUT, 14, "timed out")                              \
	X(DBCRON_ECONN, 15, "database unreachable")                      \
	X(DBCRON_ESCHEMA, 16, "database schema is newer than this binary")     \
	X(DBCRON_ECONSTRAINT, 17, "database constraint violated")

typedef enum dbcron_code {
#define DBCRON_X_ENUM(name, num, text) name = num,
	DBCRON_ERRORS(DBCRON_X_ENUM)
#undef DBCRON_X_ENUM
} dbcron_code;

/* Detail of the last failure.  Owned by the caller, usually on the stack. */
typedef struct dbcron_err {
	int code;
	char msg[512];
} dbcron_err;

/* Static text for a code; never NULL. */
DBCRON_API const char *dbcron_strerror(int code);

/*
 * Record a failure in err (which may be NULL) and return code, so that
 * `return dbcron_err_set(err, DBCRON_EINVAL, "...")` reads naturally.
 */
DBCRON_API int dbcron_err_set(dbcron_err *err, int code, const char *fmt, ...)
	DBCRON_PRINTF(3, 4);

/* Clear err to DBCRON_OK / "". */
DBCRON_API void dbcron_err_clear(dbcron_err *err);

#ifdef __cplusplus
}
#endif
#endif
