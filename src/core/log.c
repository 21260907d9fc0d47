/*
 * Structured logging.  Owns the line format, the process level, and the
 * per-thread binding to a sink (a node's level and callback); every line is
 * formatted into one buffer and handed over whole: one write(2) to stderr,
 * or one call of the sink's callback.
 *
 * Invariant: whatever the values hold, one call writes exactly one line of
 * "key=value" fields in which every value is one token (bare or quoted,
 * escapes in log.h), so a log reader can never be shown a field or a line
 * that the code did not write.  The formatter is pure
 * (dbcron__log_format) so tests can check it byte for byte.
 *
 * When stderr is the journal (systemd sets JOURNAL_STREAM to its device and
 * inode), each line written there starts with the syslog priority "<N>",
 * which journald strips and keeps as the entry's priority, so that
 * `journalctl -p warning` shows warnings and errors only.  Sinks never get
 * the prefix: it belongs to the stream, not to the line.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"

static atomic_int min_level = LOG_INFO;
/* The sink of the calling thread's node, if any (dbcron__log_bind). */
static _Thread_local const dbcron__log_sink *bound;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* Room kept at the end of every line for the truncation mark. */
static const char trunc_mark[] = " truncated=true";
#define RESERVE (sizeof(trunc_mark) - 1 + 1) /* the mark and the newline */

void dbcron__log_set_level(int level)
{
	atomic_store(&min_level, level);
}

const dbcron__log_sink *dbcron__log_bind(const dbcron__log_sink *sink)
{
	const dbcron__log_sink *prev = bound;
	bound = sink;
	return prev;
}

typedef struct lbuf {
	char *p;
	size_t n, limit; /* limit: where field text must stop (RESERVE kept) */
	bool truncated;
} lbuf;

static bool fits(const lbuf *b, size_t k)
{
	return b->n + k <= b->limit;
}

static void put(lbuf *b, const char *s, size_t k)
{
	memcpy(b->p + b->n, s, k);
	b->n += k;
}

/* Length of the valid UTF-8 sequence at s (of at most left bytes), 0 if
 * there is none; *cp gets the code point.  Overlong forms, surrogates and
 * code points above U+10FFFF are not valid. */
static size_t utf8_seq(const unsigned char *s, size_t left, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, c = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, c = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* True for code points shown as \xNN even when valid: C1 controls and the
 * line and paragraph separators, which some viewers take as line breaks. */
static bool escaped_cp(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029;
}

static bool bare_byte(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '=' && c != '"' && c != '\\';
}

/* The escaped form of the unit at s: writes it to out (>= 16 bytes) and
 * returns how many input bytes it used; *outn is its length. */
static size_t escape_unit(const unsigned char *s, size_t left, char *out, size_t *outn)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp;
	size_t k = utf8_seq(s, left, &cp);

	if (k == 1 && cp >= 0x20 && cp != 0x7f) {
		if (cp == '"' || cp == '\\') {
			out[0] = '\\', out[1] = (char)cp, *outn = 2;
		} else {
			out[0] = (char)cp, *outn = 1;
		}
		return 1;
	}
	if (k == 1 && (cp == '\n' || cp == '\r' || cp == '\t')) {
		out[0] = '\\', out[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't', *outn = 2;
		return 1;
	}
	if (k > 1 && !escaped_cp(cp)) {
		memcpy(out, s, k);
		*outn = k;
		return k;
	}
	/* a control byte, an invalid byte, or a sequence shown byte by byte */
	size_t used = k ? k : 1;
	for (size_t i = 0; i < used; i++) {
		out[4 * i] = '\\', out[4 * i + 1] = 'x';
		out[4 * i + 2] = hex[s[i] >> 4], out[4 * i + 3] = hex[s[i] & 15];
	}
	*outn = 4 * used;
	return used;
}

static void put_value(lbuf *b, const char *v)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t len = strlen(v);
	bool quote = len == 0;
	for (size_t i = 0; i < len && !quote; i++)
		quote = !bare_byte(s[i]);
	if (!quote && fits(b, len)) {
		put(b, v, len);
		return;
	}
	/* quoted: the closing quote always has room, units go in while they
	 * fit whole */
	if (!fits(b, 2)) {
		b->truncated = true;
		return;
	}
	put(b, "\"", 1);
	for (size_t i = 0; i < len;) {
		char u[16];
		size_t un, used = escape_unit(s + i, len - i, u, &un);
		if (!fits(b, un + 1)) {
			b->truncated = true;
			break;
		}
		put(b, u, un);
		i += used;
	}
	put(b, "\"", 1);
}

/* A key or the event: code, not data, but kept to one token all the same. */
static void put_name(lbuf *b, const char *k)
{
	if (!*k)
		k = "_";
	for (; *k; k++) {
		char c = *k;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '.' || c == '-';
		put(b, ok ? &c : "_", 1);
	}
}

size_t dbcron__log_format(char *buf, size_t cap, int64_t ts_ms, int level, const char *event,
			  const dbcron__log_field *f, size_t n)
{
	char ts[48];
	if (cap > DBCRON_LOG_LINE_MAX)
		cap = DBCRON_LOG_LINE_MAX;
	lbuf b = {buf, 0, cap - RESERVE, false};
	size_t tn = dbcron__format_rfc3339(ts_ms, 0, 1, ts, sizeof(ts));
	const char *lv = level >= LOG_DEBUG && level <= LOG_ERROR ? level_names[level] : "error";
	const char *ev = event ? event : "";

	/* the fixed part: ts, level, event (names, so never longer than ~100
	 * bytes unless the event is absurd; it is cut like a value then) */
	if (fits(&b, 3 + tn + 7 + strlen(lv) + 7 + (strlen(ev) ? strlen(ev) : 1))) {
		put(&b, "ts=", 3);
		put(&b, ts, tn);
		put(&b, " level=", 7);
		put(&b, lv, strlen(lv));
		put(&b, " event=", 7);
		put_name(&b, ev);
	} else {
		b.truncated = true;
	}
	for (size_t i = 0; i < n && !b.truncated; i++) {
		char num[24];
		const char *key = f[i].key ? f[i].key : "";
		size_t kl = strlen(key) ? strlen(key) : 1;
		if (f[i].kind == DBCRON__LOG_STR && !f[i].s)
			continue; /* absent */
		if (!fits(&b, 1 + kl + 1 + 2)) {
			b.truncated = true;
			break;
		}
		put(&b, " ", 1);
		put_name(&b, key);
		put(&b, "=", 1);
		if (f[i].kind == DBCRON__LOG_STR) {
			put_value(&b, f[i].s);
			continue;
		}
		int k = f[i].kind == DBCRON__LOG_INT ? snprintf(num, sizeof(num), "%" PRId64, f[i].i)
						    : snprintf(num, sizeof(num), "%" PRIu64, f[i].u);
		if (k <= 0 || !fits(&b, (size_t)k)) {
			put(&b, "\"\"", 2);
			b.truncated = true;
			break;
		}
		put(&b, num, (size_t)k);
	}
	/* RESERVE was kept for exactly this */
	if (b.truncated)
		memcpy(buf + b.n, trunc_mark, sizeof(trunc_mark) - 1), b.n += sizeof(trunc_mark) - 1;
	buf[b.n++] = '\n';
	return b.n;
}

bool dbcron__log_is_journal(const char *journal_stream, int fd)
{
	unsigned long long dev, ino;
	char tail;
	struct stat st;
	if (!journal_stream ||
	    sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2 || fstat(fd, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

const char *dbcron__log_priority(int level)
{
	/* syslog's: 3 err, 4 warning, 6 info, 7 debug */
	static const char *const prio[] = {"<7>", "<6>", "<4>", "<3>"};
	return level >= LOG_DEBUG && level <= LOG_ERROR ? prio[level] : "<6>";
}

/* 0 unknown, 1 stderr is the journal, 2 it is not: decided at the first
 * line (the stream does not change under a running process). */
static atomic_int journal;

static bool to_journal(void)
{
	int j = atomic_load(&journal);
	if (!j) {
		j = dbcron__log_is_journal(getenv("JOURNAL_STREAM"), STDERR_FILENO) ? 1 : 2;
		atomic_store(&journal, j);
	}
	return j == 1;
}

void dbcron__log_fields(int level, const char *event, const dbcron__log_field *f, size_t n)
{
	const dbcron__log_sink *k = bound;
	if (level < (k && k->level >= 0 ? k->level : atomic_load(&min_level)))
		return;
	char line[DBCRON_LOG_LINE_MAX];
	size_t len = dbcron__log_format(line, sizeof(line), dbcron__wall_ms(), level, event, f, n);
	if (k && k->fn) {
		k->fn(k->ctx, level, line, len);
		return;
	}
	/* still one write: a line is never split from its priority */
	struct iovec v[2] = {{0}, {line, len}};
	int nv = 1;
	if (to_journal()) {
		const char *p = dbcron__log_priority(level);
		v[0] = (struct iovec){(void *)p, strlen(p)};
		nv = 2;
	}
	ssize_t w = writev(STDERR_FILENO, nv == 2 ? v : v + 1, nv);
	(void)w;
}
