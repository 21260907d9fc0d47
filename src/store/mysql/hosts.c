/*
 * The MySQL / MariaDB URL, read into a connection's hosts, user, password,
 * database and options:
 *
 *   mysql://[user[:password]@][host[:port][,host[:port]...]][/database][?k=v&...]
 *
 * (mariadb:// alike).  Several hosts are the members of one Galera
 * cluster, listed in the order every node should prefer them: mysql.c
 * connects to the first that answers and moves to the next when the
 * connection is lost (docs/cluster.md "MariaDB Galera").  Keeps: at least
 * one host entry (an empty one: the driver's default), every port in
 * 1..65535, a database named; the password lives in the handle only and is
 * wiped when it is freed; messages name the URL by its masked form.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "store/mysql/mysql_int.h"

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* A percent-decoded copy of s[0, n); NULL on out of memory. */
static char *decoded(const char *s, size_t n)
{
	char *o = dbcron__calloc(n + 1, 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n + 1 && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			o[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	return o;
}

/* One "host[:port]" entry at [hp, hend): the port after the last ':'. */
static int parse_host(store_conn *q, const char *hp, const char *hend, dbcron_err *err)
{
	if (q->nhosts == MY_HOSTS_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': more than %d hosts", q->masked,
				      MY_HOSTS_MAX);
	my_host *h = &q->hosts[q->nhosts++];
	const char *pc = NULL;
	for (const char *c = hp; c < hend; c++)
		if (*c == ':')
			pc = c;
	size_t hl = (size_t)((pc ? pc : hend) - hp);
	if (hl && !(h->name = decoded(hp, hl)))
		return DBCRON_ENOMEM;
	if (pc) {
		char *e;
		long port = strtol(pc + 1, &e, 10);
		if (e != hend || port <= 0 || port > 65535)
			return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': bad port", q->masked);
		h->port = (unsigned)port;
	}
	return DBCRON_OK;
}

/* The host list at [hp, hend): entries separated by ','; none empty when
 * there are several. */
static int parse_hosts(store_conn *q, const char *hp, const char *hend, dbcron_err *err)
{
	for (const char *e = hp;; hp = e + 1) {
		e = memchr(hp, ',', (size_t)(hend - hp));
		if (!e)
			e = hend;
		if (e == hp && (e != hend || q->nhosts))
			return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': an empty host in the list",
					      q->masked);
		int rc = parse_host(q, hp, e, err);
		if (rc || e == hend)
			return rc;
	}
}

static int parse_params(store_conn *q, const char *kv, dbcron_err *err)
{
	while (kv && *kv) {
		const char *amp = strchr(kv, '&');
		size_t n = amp ? (size_t)(amp - kv) : strlen(kv);
		if (n > 7 && strncmp(kv, "socket=", 7) == 0) {
			dbcron__free(q->socket);
			if (!(q->socket = decoded(kv + 7, n - 7)))
				return DBCRON_ENOMEM;
		} else if (n == 18 && strncmp(kv, "insert_returning=0", 18) == 0) {
			q->no_returning_asked = true;
		} else if (n == 18 && strncmp(kv, "insert_returning=1", 18) == 0) {
			q->no_returning_asked = false;
		} else {
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "MySQL URL '%s': unknown parameter '%.*s' (known: socket, "
					      "insert_returning=0|1)",
					      q->masked, (int)n, kv);
		}
		kv = amp ? amp + 1 : NULL;
	}
	return DBCRON_OK;
}

/*
 * The user-info ends at the last '@' before the path, so an '@' in a
 * password needs no encoding; a host of "localhost" or a socket= parameter
 * means the unix socket.  Without a password in the URL, MYSQL_PWD from the
 * environment is used, as the mysql client does.
 */
int my__parse_url(store_conn *q, const char *url, dbcron_err *err)
{
	const char *p = strstr(url, "://") + 3;
	const char *path = strchr(p, '/');
	const char *qm = strchr(p, '?');
	const char *auth_end = path ? path : (qm ? qm : p + strlen(p));
	const char *at = NULL;
	for (const char *c = p; c < auth_end; c++)
		if (*c == '@')
			at = c;
	const char *hp = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);
		if (!(q->user = decoded(p, ul)))
			return DBCRON_ENOMEM;
		if (colon && !(q->pass = decoded(colon + 1, (size_t)(at - colon - 1))))
			return DBCRON_ENOMEM;
		hp = at + 1;
	}
	int rc = parse_hosts(q, hp, auth_end, err);
	if (rc)
		return rc;
	if (path) {
		const char *dend = qm && qm > path ? qm : path + strlen(path);
		if (dend > path + 1 && !(q->dbname = decoded(path + 1, (size_t)(dend - path - 1))))
			return DBCRON_ENOMEM;
	}
	if ((rc = parse_params(q, qm ? qm + 1 : NULL, err)))
		return rc;
	if (!q->dbname)
		return dbcron_err_set(err, DBCRON_EINVAL, "MySQL URL '%s': no database (mysql://user@host/DB)",
				      q->masked);
	if (!q->pass) {
		const char *env = getenv("MYSQL_PWD");
		if (env && *env && !(q->pass = dbcron__strdup(env)))
			return DBCRON_ENOMEM;
	}
	return DBCRON_OK;
}

void my__free_url(store_conn *q)
{
	if (q->pass)
		memset(q->pass, 0, strlen(q->pass));
	for (int i = 0; i < q->nhosts; i++)
		dbcron__free(q->hosts[i].name);
	q->nhosts = 0;
	dbcron__free(q->user);
	dbcron__free(q->pass);
	dbcron__free(q->dbname);
	dbcron__free(q->socket);
	q->user = q->pass = q->dbname = q->socket = NULL;
}
