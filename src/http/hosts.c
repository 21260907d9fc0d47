/*
 * Which names the HTTP server answers to: the Host check against DNS
 * rebinding, and the --http-host list it reads.
 *
 * A page of another site whose name the attacker points at 127.0.0.1
 * would be same-origin with this server in the browser, and could read a
 * token-less server's jobs.  So every request's Host must be an IP
 * address (an address is not a name a rebinding DNS can answer for),
 * localhost or a name under .localhost (browsers resolve those to
 * loopback themselves), or a name given with --http-host; anything else
 * is 403, on the headers, before the request is looked at (server.c).
 *
 * Invariants kept: the list is read and checked once, at start, and is
 * read-only after that, so the request threads share it without a lock;
 * names are kept lower case without a trailing dot, the form a Host is
 * brought to before it is compared; a --http-host value that is not a
 * list of host names is refused at start, never half taken.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "core/alloc.h"
#include "http/http_int.h"

/* A name in Host, at most (DNS: 253, and a port). */
#define HOST_NAME_MAX_LEN 253

/* A host name as --http-host takes it: letters, digits, '-', '_' and
 * non-empty dot-separated labels (one trailing dot allowed). */
static bool is_host_name(const char *s, size_t len)
{
	if (len && s[len - 1] == '.')
		len--;
	if (len == 0 || len > HOST_NAME_MAX_LEN)
		return false;
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (isalnum(ch) || ch == '-' || ch == '_') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return label > 0;
}

/* The next item of a comma list at *p, blanks trimmed, as [*b, *e); *p
 * moves past it.  False after the last item. */
static bool next_host(const char **p, const char **b, const char **e)
{
	size_t n = strcspn(*p, ",");
	bool more = (*p)[n] != '\0';
	*b = *p;
	*e = *p + n;
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
	*p += n + more;
	return more;
}

int http_hosts_check(const char *list, dbcron_err *err)
{
	const char *p = list, *b, *e;
	bool more;
	do {
		more = next_host(&p, &b, &e);
		if (!is_host_name(b, (size_t)(e - b)))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "'%.*s' is not a host name (letters, digits, '-' and '.'; "
					      "a comma between names)",
					      (int)((size_t)(e - b) > 80 ? 80 : (size_t)(e - b)), b);
	} while (more);
	return DBCRON_OK;
}

int http__hosts_read(http_hosts *h, const char *list, dbcron_err *err)
{
	size_t cap = 0;
	dbcron_err bad = {0};
	int rc = http_hosts_check(list, &bad);
	if (rc)
		return dbcron_err_set(err, rc, "--http-host: %s", bad.msg);
	const char *p = list, *b, *e;
	bool more;
	do {
		more = next_host(&p, &b, &e);
		if (e > b && e[-1] == '.')
			e--;
		char *name = dbcron__malloc((size_t)(e - b) + 1);
		if (!name || dbcron__grow((void **)&h->names, &cap, h->n + 1,
					  sizeof(*h->names))) {
			dbcron__free(name);
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < (size_t)(e - b); i++)
			name[i] = (char)tolower((unsigned char)b[i]);
		name[e - b] = '\0';
		h->names[h->n++] = name;
	} while (more);
	return DBCRON_OK;
}

/* ":PORT" after a Host name: empty or up to five digits. */
static bool host_port_ok(const char *s)
{
	if (!*s)
		return true;
	if (*s++ != ':')
		return false;
	size_t n = strspn(s, "0123456789");
	return n >= 1 && n <= 5 && !s[n];
}

/* The port is not looked at: a rebinding page's port is ours anyway.  No
 * Host at all is an HTTP/1.0 client, never a browser. */
bool http__host_allowed(const http_hosts *h, const char *host)
{
	char name[HOST_NAME_MAX_LEN + 2];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n;

	if (!host)
		return true;
	if (host[0] == '[') {
		const char *e = strchr(host, ']');
		n = e ? (size_t)(e - host - 1) : 0;
		if (!e || n == 0 || n >= sizeof(name) || !host_port_ok(e + 1))
			return false;
		memcpy(name, host + 1, n);
		name[n] = '\0';
		return inet_pton(AF_INET6, name, &a6) == 1;
	}
	n = strcspn(host, ":");
	if (n == 0 || n >= sizeof(name) || !host_port_ok(host + n))
		return false;
	for (size_t i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)host[i]);
	name[n] = '\0';
	if (name[n - 1] == '.')
		name[--n] = '\0';
	if (n == 0)
		return false;
	if (inet_pton(AF_INET, name, &a4) == 1)
		return true;
	if (!strcmp(name, "localhost") ||
	    (n > 10 && !strcmp(name + n - 10, ".localhost")))
		return true;
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(name, h->names[i]))
			return true;
	return false;
}

void http__hosts_free(http_hosts *h)
{
	for (size_t i = 0; i < h->n; i++)
		dbcron__free(h->names[i]);
	dbcron__free(h->names);
	h->names = NULL;
	h->n = 0;
}
