/*
 * dbcron cron engine: parse Quartz (6/7 fields) and Unix (5 fields)
 * expressions and compute the next fire instant in an IANA time zone.
 *
 * The dialect follows from the field count: 5 -> Unix (cronie), 6 or 7 ->
 * Quartz.  `@yearly` and friends are Unix.  Resolution is one second.
 */
#ifndef DBCRON_CRON_H
#define DBCRON_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dbcron_cron dbcron_cron;
typedef struct dbcron_tz dbcron_tz;

typedef enum dbcron_cron_dialect {
	DBCRON_CRON_QUARTZ = 1,
	DBCRON_CRON_UNIX = 2,
} dbcron_cron_dialect;

/*
 * Parse expr.  On success *out is a new expression the caller frees with
 * dbcron_cron_free().  On failure returns DBCRON_EPARSE (or DBCRON_ENOMEM)
 * and err->msg says which field, which text and why, e.g.
 * "field 4 (day-of-month): 32 is out of range 1-31".
 */
DBCRON_API int dbcron_cron_parse(const char *expr, dbcron_cron **out,
				 dbcron_err *err);
/*
 * As dbcron_cron_parse, and an item H, H(a-b), H/n or H(a-b)/n in any
 * field but the year takes its value from seed: field f's value is
 * lo + mix(seed, f) % count (a step: its start), the same for one seed on
 * every host and in every version.  Day-of-month H stays within 1-28.
 * dbcron_cron_parse refuses H ("H needs a job: ..."); a job's seed is
 * stored with it (dbcron_job.spread_seed).
 */
DBCRON_API int dbcron_cron_parse_seeded(const char *expr, uint64_t seed, dbcron_cron **out,
					dbcron_err *err);
DBCRON_API void dbcron_cron_free(dbcron_cron *c);
DBCRON_API dbcron_cron_dialect dbcron_cron_get_dialect(const dbcron_cron *c);

/*
 * Next fire strictly after `after` (UTC epoch seconds) in zone tz (NULL =
 * UTC).  Returns 1 and sets *next when there is one, 0 when the expression
 * can never fire again.  Bounded work: never loops over years or seconds.
 * Thread-safe: c and tz are read-only here.
 */
DBCRON_API int dbcron_cron_next(const dbcron_cron *c, const dbcron_tz *tz,
				int64_t after, int64_t *next);

/*
 * Explain the expression in English words ("at second 0 of every 5th
 * minute, Monday to Friday").  Writes at most len bytes, always
 * NUL-terminated; returns the length it needed.
 */
DBCRON_API size_t dbcron_cron_describe(const dbcron_cron *c, char *buf,
				       size_t len);

/*
 * Time zones, through the system tz database (GLib's GTimeZone).  name NULL
 * or "" or "UTC" is UTC.  Unknown names give DBCRON_ETZ with the name in
 * err->msg.  Zones are interned: every open of one name returns the same
 * immutable table, built on first use and kept for the life of the process,
 * so opening is cheap after the first time.  dbcron_tz_free() is accepted
 * (and does nothing).  Thread-safe to share and to open concurrently.
 */
DBCRON_API int dbcron_tz_open(const char *name, dbcron_tz **out,
			      dbcron_err *err);
DBCRON_API void dbcron_tz_free(dbcron_tz *tz);
DBCRON_API const char *dbcron_tz_name(const dbcron_tz *tz);
/* Offset east of UTC, in seconds, in force at UTC instant t. */
DBCRON_API int32_t dbcron_tz_offset(const dbcron_tz *tz, int64_t t);

#ifdef __cplusplus
}
#endif
#endif
