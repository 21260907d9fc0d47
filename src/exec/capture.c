/*
 * The bounded output of a run (capture.h): a head buffer, then a ring of
 * the same size for the tail, so a run that prints gigabytes costs two
 * buffers.  Owns nothing beyond one capture's buffers.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/capture.h"

int exec_capture_init(exec_capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
	c->head = dbcron__malloc(cap);
	c->tail = dbcron__malloc(cap);
	if (!c->head || !c->tail) {
		dbcron__free(c->head);
		dbcron__free(c->tail);
		c->head = c->tail = NULL;
		return -1;
	}
	return 0;
}

void exec_capture_free(exec_capture *c)
{
	dbcron__free(c->head);
	dbcron__free(c->tail);
	c->head = c->tail = NULL;
}

void exec_capture_feed(exec_capture *c, const char *buf, size_t n)
{
	c->total += n;
	if (c->head_len < c->cap) {
		size_t k = c->cap - c->head_len;
		if (k > n)
			k = n;
		memcpy(c->head + c->head_len, buf, k);
		c->head_len += k;
		buf += k;
		n -= k;
	}
	if (n >= c->cap) {
		memcpy(c->tail, buf + n - c->cap, c->cap);
		c->tail_next = 0;
		c->tail_len = c->cap;
		return;
	}
	while (n > 0) {
		size_t k = c->cap - c->tail_next;
		if (k > n)
			k = n;
		memcpy(c->tail + c->tail_next, buf, k);
		c->tail_next = (c->tail_next + k) % c->cap;
		c->tail_len = c->tail_len + k > c->cap ? c->cap : c->tail_len + k;
		buf += k;
		n -= k;
	}
}

/* Replace NUL bytes and bytes that are not valid UTF-8 by '?': output is
 * stored as text (PostgreSQL refuses invalid UTF-8), and the head/tail
 * cut may split a character anyway. */
static void make_text(char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char b = (unsigned char)s[i];
		size_t len;
		if (b == 0) {
			s[i++] = '?';
			continue;
		}
		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf)
			len = 2;
		else if (b >= 0xe0 && b <= 0xef)
			len = 3;
		else if (b >= 0xf0 && b <= 0xf4)
			len = 4;
		else
			len = 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		/* Overlong 3/4-byte forms, surrogates and > U+10FFFF. */
		if (ok && len == 3) {
			unsigned char b1 = (unsigned char)s[i + 1];
			ok = !(b == 0xe0 && b1 < 0xa0) && !(b == 0xed && b1 >= 0xa0);
		} else if (ok && len == 4) {
			unsigned char b1 = (unsigned char)s[i + 1];
			ok = !(b == 0xf0 && b1 < 0x90) && !(b == 0xf4 && b1 >= 0x90);
		}
		if (!ok) {
			s[i++] = '?';
			continue;
		}
		i += len;
	}
}

/* The kept output as one string, or NULL when the child printed nothing
 * (or on OOM: the output is a courtesy, the run's state is not). */
char *exec_capture_finish(const exec_capture *c)
{
	char marker[64];
	size_t mlen = 0;

	if (c->total == 0)
		return NULL;
	uint64_t omitted = c->total - c->head_len - c->tail_len;
	if (omitted > 0)
		mlen = (size_t)snprintf(marker, sizeof(marker),
					"\n[... %llu bytes omitted ...]\n",
					(unsigned long long)omitted);
	char *out = dbcron__malloc(c->head_len + mlen + c->tail_len + 1);
	if (!out)
		return NULL;
	char *p = out;
	memcpy(p, c->head, c->head_len);
	make_text(p, c->head_len);
	p += c->head_len;
	memcpy(p, marker, mlen);
	p += mlen;
	size_t start = (c->tail_next + c->cap - c->tail_len) % c->cap;
	size_t first = c->cap - start < c->tail_len ? c->cap - start : c->tail_len;
	memcpy(p, c->tail + start, first);
	memcpy(p + first, c->tail, c->tail_len - first);
	make_text(p, c->tail_len);
	p[c->tail_len] = '\0';
	return out;
}
