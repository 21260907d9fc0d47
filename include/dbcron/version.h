/*
 * The library's version, at build time (the macros) and at run time
 * (dbcron_version(), the library actually loaded).  The SONAME policy is in
 * docs/library.md: libdbcron.so.0 while the version is 0.x; any removal or
 * change of an exported symbol's meaning or of a public struct's layout
 * bumps it; additions do not.
 */
#ifndef DBCRON_VERSION_H
#define DBCRON_VERSION_H

#include "dbcron/error.h"

#define DBCRON_VERSION_MAJOR 0
#define DBCRON_VERSION_MINOR 1
#define DBCRON_VERSION_PATCH 0
#define DBCRON_VERSION "0.1.0"
/* major * 10000 + minor * 100 + patch, for #if */
#define DBCRON_VERSION_NUMBER                                                 \
	(DBCRON_VERSION_MAJOR * 10000 + DBCRON_VERSION_MINOR * 100 + DBCRON_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0": static text, never NULL.  Compare with DBCRON_VERSION to see
 * whether a program runs against the library it was built with. */
DBCRON_API const char *dbcron_version(void);
/* DBCRON_VERSION_NUMBER of the loaded library. */
DBCRON_API int dbcron_version_number(void);

#ifdef __cplusplus
}
#endif
#endif
