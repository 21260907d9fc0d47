/*
 * The log line formatter (src/core/log.c): values with quotes, newlines,
 * "key=value" inside, control bytes and invalid UTF-8 stay one token of
 * one line; bare values stay bare; long lines are cut at a whole escape
 * and marked.  Every line is also read back with a small logfmt reader
 * written here from the rules in log.h, which must find exactly the
 * fields that were logged, with their original values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* 2025-01-02T03:04:05.678Z */
#define TS 1735787045678LL
#define PREFIX "ts=2025-01-02T03:04:05.678Z level=warn event=run.end"

static char line[DBCRON_LOG_LINE_MAX + 1];

static const char *fmt(const dbcron__log_field *f, size_t n)
{
	size_t len = dbcron__log_format(line, DBCRON_LOG_LINE_MAX, TS, LOG_WARN, "run.end", f, n);
	assert_true(len > 0 && len <= DBCRON_LOG_LINE_MAX);
	assert_int_equal(line[len - 1], '\n');
	line[len] = '\0';
	/* one line: the only newline is the last byte */
	assert_ptr_equal(strchr(line, '\n'), line + len - 1);
	return line;
}

#define FMT(...)                                                             \
	fmt((const dbcron__log_field[]){__VA_ARGS__},                        \
	    sizeof((const dbcron__log_field[]){__VA_ARGS__}) / sizeof(dbcron__log_field))

/* ---- a logfmt reader, from log.h's rules ---- */

typedef struct kv {
	char key[64];
	char val[DBCRON_LOG_LINE_MAX];
	size_t vlen;
} kv;

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Splits s (one line without its newline) into fields; -1 when it is not
 * well-formed logfmt. */
static int parse(const char *s, kv *out, int max)
{
	int n = 0;
	while (*s) {
		if (n && *s++ != ' ')
			return -1;
		if (n >= max)
			return -1;
		kv *f = &out[n++];
		size_t k = 0;
		while (*s && *s != '=' && *s != ' ' && *s != '"') {
			if (k + 1 >= sizeof(f->key))
				return -1;
			f->key[k++] = *s++;
		}
		f->key[k] = '\0';
		if (!k || *s++ != '=')
			return -1;
		f->vlen = 0;
		if (*s != '"') {
			while (*s && *s != ' ') {
				if (*s == '=' || *s == '\\' || (unsigned char)*s < 0x21 ||
				    (unsigned char)*s >= 0x7f)
					return -1; /* a bare value is plain ASCII */
				f->val[f->vlen++] = *s++;
			}
			if (!f->vlen)
				return -1;
			continue;
		}
		for (s++; *s != '"'; s++) {
			if (!*s || (unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
				return -1; /* raw control byte inside quotes */
			if (*s != '\\') {
				f->val[f->vlen++] = *s;
				continue;
			}
			s++;
			if (*s == '"' || *s == '\\')
				f->val[f->vlen++] = *s;
			else if (*s == 'n')
				f->val[f->vlen++] = '\n';
			else if (*s == 'r')
				f->val[f->vlen++] = '\r';
			else if (*s == 't')
				f->val[f->vlen++] = '\t';
			else if (*s == 'x' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
				f->val[f->vlen++] = (char)(hexval(s[1]) * 16 + hexval(s[2]));
				s += 2;
			} else
				return -1;
		}
		s++;
	}
	return n;
}

static kv fields[64];

/* Parses line; the first three fields are ts, level, event. */
static int read_back(void)
{
	char copy[sizeof(line)];
	memcpy(copy, line, sizeof(copy));
	copy[strlen(copy) - 1] = '\0';
	int n = parse(copy, fields, 64);
	if (n < 3)
		fail_msg("not logfmt: %s", line);
	assert_string_equal(fields[0].key, "ts");
	assert_string_equal(fields[1].key, "level");
	assert_string_equal(fields[2].key, "event");
	return n - 3;
}

static void assert_field(int i, const char *key, const char *val)
{
	kv *f = &fields[3 + i];
	if (strcmp(f->key, key) != 0)
		fail_msg("field %d: key '%s', want '%s' in %s", i, f->key, key, line);
	if (f->vlen != strlen(val) || memcmp(f->val, val, f->vlen) != 0)
		fail_msg("field %d (%s): value '%.*s', want '%s' in %s", i, key, (int)f->vlen, f->val,
			 val, line);
}

/* ---- tests ---- */

static void test_bare_and_numbers(void **state)
{
	(void)state;
	assert_string_equal(FMT(LOG_STR("job", "backup-1"), LOG_INT("fire_at", -5),
				LOG_UINT("n", UINT64_MAX), LOG_STR("state", "failed")),
			    PREFIX " job=backup-1 fire_at=-5 n=18446744073709551615 state=failed\n");
	/* the line format is the old one: values that need no quotes get none */
	assert_string_equal(FMT(LOG_STR("node", "host-12"), LOG_STR("msg", "lease lost; left")),
			    PREFIX " node=host-12 msg=\"lease lost; left\"\n");
	/* NULL: the field is left out; "" is an empty quoted value */
	assert_string_equal(FMT(LOG_STR("a", NULL), LOG_STR("b", ""), LOG_STR("c", NULL)),
			    PREFIX " b=\"\"\n");
}

static void test_escapes(void **state)
{
	(void)state;
	assert_string_equal(FMT(LOG_STR("job", "a\"b")), PREFIX " job=\"a\\\"b\"\n");
	assert_string_equal(FMT(LOG_STR("error", "line1\nline2\r\tx")),
			    PREFIX " error=\"line1\\nline2\\r\\tx\"\n");
	assert_string_equal(FMT(LOG_STR("p", "C:\\dir")), PREFIX " p=\"C:\\\\dir\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\x01\x1b[31m\x7f")), PREFIX " v=\"\\x01\\x1b[31m\\x7f\"\n");
	/* a value that tries to add a key, or end the line and start a new one */
	assert_string_equal(FMT(LOG_STR("job", "x state=succeeded"), LOG_STR("state", "failed")),
			    PREFIX " job=\"x state=succeeded\" state=failed\n");
	assert_string_equal(FMT(LOG_STR("job", "j=1")), PREFIX " job=\"j=1\"\n");
	FMT(LOG_STR("error", "boom\nts=2025-01-01T00:00:00Z level=info event=run.end job=ok"));
	assert_int_equal(read_back(), 1);
	assert_field(0, "error", "boom\nts=2025-01-01T00:00:00Z level=info event=run.end job=ok");
}

static void test_utf8(void **state)
{
	(void)state;
	/* valid UTF-8 stays as it is, quoted */
	assert_string_equal(FMT(LOG_STR("job", "caf\xc3\xa9")), PREFIX " job=\"caf\xc3\xa9\"\n");
	assert_string_equal(FMT(LOG_STR("job", "\xe2\x82\xac\xf0\x9f\x98\x80")),
			    PREFIX " job=\"\xe2\x82\xac\xf0\x9f\x98\x80\"\n");
	/* invalid: lone continuation, truncated sequence, overlong, surrogate,
	 * above U+10FFFF, 0xff */
	assert_string_equal(FMT(LOG_STR("v", "a\x80z")), PREFIX " v=\"a\\x80z\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\xc3")), PREFIX " v=\"\\xc3\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\xc0\xaf")), PREFIX " v=\"\\xc0\\xaf\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\xed\xa0\x80")), PREFIX " v=\"\\xed\\xa0\\x80\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\xf4\x90\x80\x80")),
			    PREFIX " v=\"\\xf4\\x90\\x80\\x80\"\n");
	assert_string_equal(FMT(LOG_STR("v", "\xff")), PREFIX " v=\"\\xff\"\n");
	/* C1 control (NEL) and U+2028, which viewers may break lines at */
	assert_string_equal(FMT(LOG_STR("v", "a\xc2\x85" "b\xe2\x80\xa8")),
			    PREFIX " v=\"a\\xc2\\x85b\\xe2\\x80\\xa8\"\n");
}

static void test_keys_and_event(void **state)
{
	(void)state;
	assert_string_equal(FMT(LOG_STR("bad key=", "v"), LOG_STR("", "w")),
			    PREFIX " bad_key_=v _=w\n");
	dbcron__log_field f[] = {LOG_INT("n", 1)};
	size_t len = dbcron__log_format(line, sizeof(line), TS, LOG_INFO, "ev ent\n", f, 1);
	line[len] = '\0';
	assert_string_equal(line, "ts=2025-01-02T03:04:05.678Z level=info event=ev_ent_ n=1\n");
}

/* Every byte value in every position reads back as itself. */
static void test_round_trip_all_bytes(void **state)
{
	(void)state;
	char v[256 * 3 + 1];
	size_t k = 0;
	for (int c = 1; c < 256; c++) {
		v[k++] = (char)c;
		v[k++] = 'a';
		v[k++] = (char)(256 - c);
	}
	v[k] = '\0';
	FMT(LOG_STR("x", v), LOG_STR("y", "=\"="), LOG_INT("z", 7));
	assert_int_equal(read_back(), 3);
	assert_field(0, "x", v);
	assert_field(1, "y", "=\"=");
	assert_field(2, "z", "7");
}

static void test_truncation(void **state)
{
	(void)state;
	static char big[3 * DBCRON_LOG_LINE_MAX];
	/* each '"' escapes to two bytes, each newline too: cut at a whole one */
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = i % 2 ? '"' : '\n';
	big[sizeof(big) - 1] = '\0';
	const char *l = FMT(LOG_STR("a", "x"), LOG_STR("big", big), LOG_STR("after", "y"));
	size_t len = strlen(l);
	assert_true(len <= DBCRON_LOG_LINE_MAX);
	const char *tail = " truncated=true\n";
	assert_string_equal(l + len - strlen(tail), tail);
	assert_null(strstr(l, "after="));
	int n = read_back();
	assert_int_equal(n, 3); /* a, big (cut), truncated */
	assert_field(0, "a", "x");
	assert_string_equal(fields[4].key, "big");
	assert_true(fields[4].vlen > 1000);
	assert_field(2, "truncated", "true");
	/* a bare value too long for the line is quoted and cut the same way */
	memset(big, 'b', sizeof(big) - 1);
	FMT(LOG_STR("big", big));
	assert_int_equal(read_back(), 2);
	assert_field(1, "truncated", "true");
	/* a line that fits exactly is not marked */
	FMT(LOG_STR("a", "x"));
	assert_null(strstr(line, "truncated"));
}

/* JOURNAL_STREAM names stderr: every line written there carries its
 * syslog priority (journalctl -p reads it); any other value, none. */
static void test_journal_priority(void **state)
{
	(void)state;
	char path[] = "/tmp/dbcron-test-log.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char js[64], other[64];
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	snprintf(other, sizeof(other), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	assert_true(dbcron__log_is_journal(js, fd));
	assert_false(dbcron__log_is_journal(other, fd));
	assert_false(dbcron__log_is_journal(NULL, fd));
	assert_false(dbcron__log_is_journal("", fd));
	assert_false(dbcron__log_is_journal("12:", fd));
	char junk[80];
	snprintf(junk, sizeof(junk), "%sx", js);
	assert_false(dbcron__log_is_journal(junk, fd));
	assert_string_equal(dbcron__log_priority(LOG_ERROR), "<3>");
	assert_string_equal(dbcron__log_priority(LOG_WARN), "<4>");
	assert_string_equal(dbcron__log_priority(LOG_INFO), "<6>");
	assert_string_equal(dbcron__log_priority(LOG_DEBUG), "<7>");

	/* the process's first line decides; stderr is the file now */
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(setenv("JOURNAL_STREAM", js, 1), 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	dbcron__log_set_level(LOG_DEBUG);
	dbcron__log(LOG_ERROR, "t.err");
	dbcron__log(LOG_WARN, "t.warn");
	dbcron__log(LOG_INFO, "t.info");
	dbcron__log(LOG_DEBUG, "t.debug");
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	char buf[1024] = "";
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(got > 0);
	close(fd);
	unlink(path);
	const char *want[] = {"<3>ts=", "<4>ts=", "<6>ts=", "<7>ts="};
	const char *ev[] = {"event=t.err", "event=t.warn", "event=t.info", "event=t.debug"};
	char *l = buf;
	for (int i = 0; i < 4; i++) {
		assert_non_null(l);
		assert_memory_equal(l, want[i], strlen(want[i]));
		char *nl = strchr(l, '\n');
		assert_non_null(nl);
		*nl = '\0';
		assert_non_null(strstr(l, ev[i]));
		l = nl + 1;
	}
	assert_string_equal(l, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bare_and_numbers), cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_utf8),             cmocka_unit_test(test_keys_and_event),
		cmocka_unit_test(test_round_trip_all_bytes),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_journal_priority),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
