/*
 * UTF-8 text in fixed buffers (text.h).  Owns nothing.
 */
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "dbcron/error.h"

size_t dbcron__utf8_seq(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

bool dbcron__utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = dbcron__utf8_seq(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/* Drop a lead byte and its continuation bytes at the end of buf[0..n)
 * when they are fewer than the lead byte announces: what a byte cut in
 * the middle of a character leaves. */
static void drop_partial_tail(char *buf, size_t n)
{
	const unsigned char *u = (const unsigned char *)buf;
	size_t i = n, cont = 0;
	while (i > 0 && cont < 3 && (u[i - 1] & 0xc0) == 0x80) {
		i--;
		cont++;
	}
	if (i == 0 || u[i - 1] < 0xc0)
		return; /* ASCII or stray continuation bytes: not a cut we made */
	size_t want = u[i - 1] >= 0xf0 ? 4 : u[i - 1] >= 0xe0 ? 3 : 2;
	if (cont + 1 < want)
		buf[i - 1] = '\0';
}

int dbcron__vtextf(char *buf, size_t len, const char *fmt, va_list ap)
{
	int w = vsnprintf(buf, len, fmt, ap);
	if (w >= 0 && len > 0 && (size_t)w >= len)
		drop_partial_tail(buf, len - 1);
	return w;
}

int dbcron__textf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = dbcron__vtextf(buf, len, fmt, ap);
	va_end(ap);
	return w;
}

int dbcron__name_check(const char *what, const char *s, bool spaces, dbcron_err *err)
{
	if (!s || !*s)
		return dbcron_err_set(err, DBCRON_EINVAL, "%s is empty", what);
	size_t n = strlen(s);
	if (n > DBCRON__NAME_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "%s is %zu bytes long, at most %d are allowed",
				      what, n, DBCRON__NAME_MAX);
	if (!dbcron__utf8_valid(s))
		return dbcron_err_set(err, DBCRON_EINVAL, "%s is not valid UTF-8", what);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (*p == ' ' && !spaces))
			return dbcron_err_set(err, DBCRON_EINVAL, "%s '%s' contains %s", what, s,
					      *p == ' ' ? "a space" : "a control character");
	return DBCRON_OK;
}
