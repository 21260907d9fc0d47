/*
 * Structured logging.  Owns the level; every line is formatted into one
 * buffer and written with a single write(2).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"

static atomic_int min_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void dbcron__log_set_level(int level)
{
	atomic_store(&min_level, level);
}

void dbcron__log(int level, const char *event, const char *fmt, ...)
{
	if (level < atomic_load(&min_level))
		return;
	char line[2048];
	size_t n = 3;
	line[0] = 't', line[1] = 's', line[2] = '=';
	n += dbcron__format_rfc3339(dbcron__wall_ms(), 0, 1, line + 3, 40);
	int k = snprintf(line + n, sizeof(line) - n, " level=%s event=%s ",
			 level_names[level], event);
	if (k > 0)
		n += (size_t)k;
	if (n < sizeof(line)) {
		va_list ap;
		va_start(ap, fmt);
		k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		if (k > 0)
			n += (size_t)k;
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}
