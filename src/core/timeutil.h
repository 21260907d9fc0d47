/*
 * Durations, instants and clocks.  Two clocks, never mixed: monotonic for
 * deadlines and timeouts, and epoch milliseconds (database time) for fires.
 */
#ifndef DBCRON_CORE_TIMEUTIL_H
#define DBCRON_CORE_TIMEUTIL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "dbcron/error.h"

/* The longest duration: twice it still fits an int64_t, so a deadline of
 * now + a duration cannot overflow. */
#define DBCRON_DURATION_MAX (INT64_MAX / 2)

/* "500ms", "30s", "5m", "2h", "1d", also compound "1h30m".  > 0 only when
 * allow_zero is false; at most DBCRON_DURATION_MAX.  Errors name the text
 * and why. */
int dbcron__parse_duration(const char *s, int allow_zero, int64_t *ms,
			   dbcron_err *err);
/* RFC 3339 ("2026-01-02T03:04:05Z", "+02:00" offsets, fractional secs),
 * integer epoch seconds, "now", "now+DUR". */
int dbcron__parse_time(const char *s, int64_t now_ms, int64_t *ms,
		       dbcron_err *err);
/* RFC 3339 with the given offset east of UTC (seconds): "Z" when 0.
 * with_ms adds ".mmm". */
size_t dbcron__format_rfc3339(int64_t ms, int32_t offset, int with_ms,
			      char *buf, size_t len);
/* Format a duration compactly ("1h30m", "500ms"). */
size_t dbcron__format_duration(int64_t ms, char *buf, size_t len);

int64_t dbcron__mono_ms(void);
int64_t dbcron__mono_us(void);
int64_t dbcron__wall_ms(void);

/* A write rolled back whole by a lock conflict (rc DBCRON_EBUSY: a
 * deadlock's loser on MariaDB or PostgreSQL, SQLite's busy timeout) is
 * safe to try again.  true after a pause of 20, 40, then 60 ms: try again;
 * false on any other rc or after the third try.  *tries starts at 0. */
bool dbcron__busy_again(int rc, int *tries);

/* Civil conversions in UTC, no libc time zone state. */
int64_t dbcron__days_from_civil(int64_t y, unsigned m, unsigned d);
void dbcron__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

#endif
