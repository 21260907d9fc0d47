/*
 * UTF-8 text in fixed buffers.  Job names, handler names, commands and
 * server messages are the user's text and reach fixed buffers (error
 * details, run errors, routing reasons) that snprintf cuts wherever the
 * byte count runs out.  A cut inside a character leaves text that
 * PostgreSQL and MariaDB refuse and that JSON encoders reject (issue 23
 * item 1: one such reason failed every claim on every node).  Every
 * fixed buffer that may hold user text is filled through dbcron__textf(),
 * which cuts only between characters.
 */
#ifndef DBCRON_CORE_TEXT_H
#define DBCRON_CORE_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1-4), 0 when invalid or at an
 * incomplete sequence (a NUL inside it ends it). */
size_t dbcron__utf8_seq(const unsigned char *s);

/* Is the whole NUL-terminated string valid UTF-8? */
bool dbcron__utf8_valid(const char *s);

/* snprintf into buf[len] that, when the text does not fit, drops the
 * partial character the cut would leave at the end (only that: valid
 * text stays valid, invalid bytes before the cut are the caller's to
 * clean).  Always NUL-terminates when len > 0.  Returns what snprintf
 * returns: the length the whole text needs. */
int dbcron__textf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int dbcron__vtextf(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* The longest name dbcron stores (a job, a handler, a node id), in bytes:
 * every backend's column holds it, and a reason or message quoting it fits
 * the fixed buffers that carry it. */
#define DBCRON__NAME_MAX 200

/* Is s a name dbcron may store: 1..DBCRON__NAME_MAX bytes of valid UTF-8
 * without control characters (nor spaces unless spaces)?  On refusal the
 * message says what (e.g. "handler name") and why; DBCRON_EINVAL. */
struct dbcron_err;
int dbcron__name_check(const char *what, const char *s, bool spaces, struct dbcron_err *err);

#endif
