/*
 * Structured log lines on stderr: "ts=... level=... event=... k=v ...".
 * One write per line so lines of several threads never interleave.
 *
 * Callers pass key/value pairs, never a format string, and the logger
 * quotes and escapes every value, so whatever a value holds (a job name
 * with '"' or '=', an error message with a newline, bytes that are not
 * UTF-8) one call is exactly one line and no value can add a key:
 *
 *   dbcron__log(LOG_WARN, "run.end", LOG_STR("job", name), LOG_INT("attempt", 2),
 *               LOG_STR("error", msg));
 *
 * Values: LOG_STR (a NULL string leaves the field out), LOG_INT (int64_t),
 * LOG_UINT (uint64_t).  A string is written bare when it is one or more
 * bytes from '!' to '~' other than '=', '"' and '\'; otherwise it is
 * quoted, with '"' and '\' escaped as \" and \\, newline, CR and tab as
 * \n, \r, \t, and other control bytes, DEL, bytes that are not UTF-8, C1
 * controls and U+2028/U+2029 as \xNN per byte.  Valid UTF-8 is kept as it
 * is inside the quotes.  Keys and the event are code, not data: a
 * character outside [A-Za-z0-9_.-] in them becomes '_'.  A line longer
 * than DBCRON_LOG_LINE_MAX is cut at a whole escape, the quote closed, and
 * " truncated=true" ends it.
 */
#ifndef DBCRON_CORE_LOG_H
#define DBCRON_CORE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"

enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

#define DBCRON_LOG_LINE_MAX 4096

enum { DBCRON__LOG_STR, DBCRON__LOG_INT, DBCRON__LOG_UINT };

typedef struct dbcron__log_field {
	const char *key;
	int kind;
	union {
		const char *s;
		int64_t i;
		uint64_t u;
	};
} dbcron__log_field;

/* Initialisers of one field; a value of the wrong type does not compile
 * (pointer/integer conversions are warnings, and warnings are errors). */
#define LOG_STR(k, v) {.key = (k), .kind = DBCRON__LOG_STR, .s = (v)}
#define LOG_INT(k, v) {.key = (k), .kind = DBCRON__LOG_INT, .i = (v)}
#define LOG_UINT(k, v) {.key = (k), .kind = DBCRON__LOG_UINT, .u = (v)}

/* dbcron__log(level, event, field, ...): at least one field.  sizeof does
 * not evaluate its operand, so each value is evaluated once. */
#define dbcron__log(level, event, ...)                                            \
	dbcron__log_fields((level), (event), (const dbcron__log_field[]){__VA_ARGS__}, \
			   sizeof((const dbcron__log_field[]){__VA_ARGS__}) /             \
				   sizeof(dbcron__log_field))

void dbcron__log_fields(int level, const char *event, const dbcron__log_field *f, size_t n);
/* The level of lines logged on threads bound to no sink (the `dbcron`
 * program's: --quiet), and of sinks whose level is < 0. */
void dbcron__log_set_level(int level);

/*
 * Where the lines of one thread go: a node binds its own sink (from its
 * dbcron_node_config) on each of its threads, so that two nodes of one
 * process, or a node and its embedding program, keep their own levels and
 * callbacks.  level < 0: the process level above.  fn NULL: stderr.
 * fn gets one whole line (ending in '\n', not NUL-terminated) per call,
 * from any thread bound to the sink.
 */
typedef struct dbcron__log_sink {
	int level;
	void (*fn)(void *ctx, int level, const char *line, size_t len);
	void *ctx;
} dbcron__log_sink;

/* Bind sink (borrowed; NULL: none) to the calling thread; returns the
 * binding it replaces, for the caller to restore. */
const dbcron__log_sink *dbcron__log_bind(const dbcron__log_sink *sink);

/*
 * The line dbcron__log would write, into buf (cap >= 64; at most
 * DBCRON_LOG_LINE_MAX is used), ending with '\n' and not NUL-terminated.
 * Returns its length.  ts_ms is the wall-clock instant shown as ts=.
 */
size_t dbcron__log_format(char *buf, size_t cap, int64_t ts_ms, int level, const char *event,
			  const dbcron__log_field *f, size_t n);

/* Whether fd is the stream JOURNAL_STREAM ("DEV:INODE", as systemd sets
 * it) names; false for NULL or anything malformed. */
bool dbcron__log_is_journal(const char *journal_stream, int fd);
/* The syslog priority prefix of a level ("<3>" for LOG_ERROR ...). */
const char *dbcron__log_priority(int level);

#endif
