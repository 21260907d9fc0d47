/*
 * The database URL, which may hold a password: the one masker for every
 * URL a user may give (a message or a listing shows a URL only through
 * it), and the URL kept in a file (--db-file, DBCRON_DB_FILE,
 * dbcron_db_open_file, a node's db_file): one rule for every reader, so
 * that a URL with a password can stay out of argv and the environment.
 * Owns nothing past a call; a refused file's bytes are wiped, and no
 * message ever quotes the file's content.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/alloc.h"
#include "store/dialect.h"
#include "store/store.h"

/* ---- the one URL masker ----
 *
 * Rule: when in doubt, hide more.  Hand-written URIs often hold a password
 * with an unencoded '@', '/' or '?', and readers end the user-info in
 * different places (libpq at the first '@' before any '/', a person means
 * the last '@' before the query), so the password of every reading is
 * hidden; so is the value of every "password=" wherever it stands, and of
 * every query or key=value value that holds an '@' or "password" (a nested
 * URL or conninfo), and a nested URI is masked by the same rules.  What is
 * hidden is a list of byte ranges (store_url_secrets), which pg.c also
 * scrubs from server text.
 */

#define NONE ((size_t)-1)

typedef struct spans {
	store_span *v;
	size_t n, max;
} spans;

static void span_add(spans *sp, size_t lo, size_t hi)
{
	if (lo >= hi || !sp->max)
		return;
	if (sp->n < sp->max)
		sp->v[sp->n++] = (store_span){lo, hi};
	else if (hi > sp->v[sp->max - 1].hi)
		sp->v[sp->max - 1].hi = hi; /* out of room: the last one grows */
}

static bool ci_has(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; i + w <= n; i++)
		if (strncasecmp(s + i, word, w) == 0)
			return true;
	return false;
}

/* "key=" at q, key of [A-Za-z0-9_.-]: where a query parameter may start. */
static bool param_start(const char *q)
{
	size_t k = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");
	return k && q[k] == '=';
}

/* End of the parameter value starting at v: the next '&' that starts a
 * parameter, or n. */
static size_t param_end(const char *s, size_t v, size_t n)
{
	for (size_t i = v; i < n; i++)
		if (s[i] == '&' && param_start(s + i + 1))
			return i;
	return n;
}

/* scheme://[user[:password]@]host[:port][/db][?k=v&...] at s[0, n); spans
 * are offsets from base. */
static void uri_spans(const char *s, size_t n, size_t a, size_t base, spans *sp, bool *ambiguous)
{
	size_t slash = n, q = n, l1 = NONE, l2 = NONE;
	for (size_t i = a; i < n; i++)
		if (s[i] == '/') {
			slash = i;
			break;
		}
	for (size_t i = a; i < slash; i++)
		if (s[i] == '@') {
			l1 = i;
			break;
		}
	for (size_t i = a; i < n; i++)
		if (s[i] == '?' && param_start(s + i + 1)) {
			q = i;
			break;
		}
	for (size_t i = a; i < q; i++)
		if (s[i] == '@')
			l2 = i;
	if (l2 != NONE && l2 != l1)
		*ambiguous = true;
	size_t ends[2] = {l1, l2};
	for (int k = 0; k < 2; k++) {
		if (ends[k] == NONE)
			continue;
		const char *c = memchr(s + a, ':', ends[k] - a);
		if (c)
			span_add(sp, base + (size_t)(c - s) + 1, base + ends[k]);
	}
	/* password= anywhere, and query values that may hold one */
	for (size_t i = a; i + 9 <= n; i++)
		if (strncasecmp(s + i, "password=", 9) == 0)
			span_add(sp, base + i + 9, base + param_end(s, i + 9, n));
	for (size_t i = a; i < n; i++) {
		if ((s[i] != '?' && s[i] != '&') || !param_start(s + i + 1))
			continue;
		size_t v = i + 1 + strcspn(s + i + 1, "=") + 1;
		if (v > n)
			continue; /* the key runs past this (nested) text */
		size_t e = param_end(s, v, n);
		if (memchr(s + v, '@', e - v) || ci_has(s + v, e - v, "password"))
			span_add(sp, base + v, base + e);
	}
}

/* libpq key=value pairs; values may be 'quoted' with \-escapes. */
static void keyvalue_spans(const char *s, size_t n, spans *sp, bool *ambiguous)
{
	size_t p = 0;
	while (p < n) {
		while (p < n && isspace((unsigned char)s[p]))
			p++;
		size_t k = p;
		while (p < n && s[p] != '=' && !isspace((unsigned char)s[p]))
			p++;
		bool is_pw = p - k == 8 && strncasecmp(s + k, "password", 8) == 0;
		while (p < n && (isspace((unsigned char)s[p]) || s[p] == '='))
			p++;
		size_t v = p, in = p, in_end;
		if (p < n && s[p] == '\'') {
			in = ++p;
			for (; p < n && s[p] != '\''; p++)
				if (s[p] == '\\' && p + 1 < n)
					p++;
			in_end = p;
			if (p < n)
				p++;
		} else {
			while (p < n && !isspace((unsigned char)s[p]))
				p++;
			in_end = p;
		}
		const char *sep = in_end - in >= 3 ? strstr(s + in, "://") : NULL;
		if (is_pw || ci_has(s + in, in_end - in, "password"))
			span_add(sp, v, p);
		else if (sep && (size_t)(sep - s) < in_end)
			uri_spans(s + in, in_end - in, (size_t)(sep - (s + in)) + 3, in, sp, ambiguous);
		else if (memchr(s + in, '@', in_end - in) && ci_has(s + k, v - k, "dbname"))
			span_add(sp, v, p); /* a nested URI without a scheme we know */
	}
}

static int span_cmp(const void *a, const void *b)
{
	const store_span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t store_url_secrets(const char *url, store_span *out, size_t max, bool *ambiguous)
{
	spans sp = {out, 0, max};
	bool amb = false;
	const char *p = url ? url : "";
	size_t n = strlen(p);
	const char *sep = strstr(p, "://");

	if (sep)
		uri_spans(p, n, (size_t)(sep - p) + 3, 0, &sp, &amb);
	else if (strchr(p, '='))
		keyvalue_spans(p, n, &sp, &amb);
	if (ambiguous)
		*ambiguous = amb;
	/* sorted and merged, so callers see disjoint ranges in order */
	qsort(out, sp.n, sizeof(*out), span_cmp);
	size_t m = 0;
	for (size_t i = 0; i < sp.n; i++) {
		if (m && out[i].lo <= out[m - 1].hi) {
			if (out[i].hi > out[m - 1].hi)
				out[m - 1].hi = out[i].hi;
			continue;
		}
		out[m++] = out[i];
	}
	return m;
}

size_t store_mask_url(const char *url, char *buf, size_t len)
{
	store_span sp[STORE_URL_SPANS_MAX];
	const char *p = url ? url : "";
	size_t n = store_url_secrets(p, sp, STORE_URL_SPANS_MAX, NULL), at = 0, pos = 0;

	for (size_t i = 0; i <= n; i++) {
		size_t lo = i < n ? sp[i].lo : strlen(p);
		for (; at < lo; at++, pos++)
			if (len && pos < len - 1)
				buf[pos] = p[at];
		if (i == n)
			break;
		for (const char *m = "***"; *m; m++, pos++)
			if (len && pos < len - 1)
				buf[pos] = *m;
		at = sp[i].hi;
	}
	if (len)
		buf[pos < len ? pos : len - 1] = '\0';
	return pos;
}

/* ---- the URL file ---- */

/* A URL file larger than this is not a URL. */
#define URL_FILE_MAX (64 * 1024)

int store_url_file_read(const char *path, char **url, dbcron_err *err)
{
	char *buf = NULL;
	size_t n = 0;
	ssize_t got = 0;
	int rc = DBCRON_EINVAL, fd;

	*url = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return dbcron_err_set(err, DBCRON_EIO, "%s", strerror(errno));
	if (!(buf = dbcron__malloc(URL_FILE_MAX + 1))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out_close;
	}
	while (n <= URL_FILE_MAX) {
		got = read(fd, buf + n, URL_FILE_MAX + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (got < 0) {
		rc = dbcron_err_set(err, DBCRON_EIO, "%s", strerror(errno));
		goto out_free;
	}
	if (n > URL_FILE_MAX) {
		dbcron_err_set(err, rc, "larger than 64 KiB, not a database URL");
		goto out_free;
	}
	size_t lo = 0, hi = n;
	while (lo < hi && isspace((unsigned char)buf[lo]))
		lo++;
	while (hi > lo && isspace((unsigned char)buf[hi - 1]))
		hi--;
	if (lo == hi) {
		dbcron_err_set(err, rc, "empty (it should hold the database URL)");
		goto out_free;
	}
	if (memchr(buf + lo, '\0', hi - lo) || memchr(buf + lo, '\n', hi - lo)) {
		dbcron_err_set(err, rc, "more than one line (it should hold the database URL only)");
		goto out_free;
	}
	memmove(buf, buf + lo, hi - lo);
	buf[hi - lo] = '\0';
	*url = buf;
	buf = NULL;
	rc = DBCRON_OK;
out_free:
	if (buf)
		explicit_bzero(buf, n < URL_FILE_MAX ? n : URL_FILE_MAX);
	dbcron__free(buf);
out_close:
	close(fd);
	return rc;
}
