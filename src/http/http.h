/*
 * The HTTP server of `dbcron node --http` and `dbcron serve --http`: the
 * JSON API under /api/v1 (docs/http.md), /healthz and /readyz.  It runs on
 * a small pool of threads of its own (libmicrohttpd's), each request with
 * a store handle of the server's, so it never shares a connection, a lock
 * or a thread with a node's claim loop: a slow request holds one of its
 * threads, never a fire, nor the other requests.
 */
#ifndef DBCRON_HTTP_H
#define DBCRON_HTTP_H

#include <stddef.h>

#include "dbcron/error.h"

typedef struct http_config {
	const char *listen;     /* "ADDR:PORT", "[V6]:PORT"; port 0 picks one */
	const char *db_url;     /* the server opens its own store on it */
	const char *token_file; /* NULL: read-only, and loopback only */
	size_t max_body;        /* bytes; a larger request body is 413 */
	unsigned max_conns;     /* connections at once; at most half of them wait
				   for a request (server.c) */
	unsigned timeout_s;     /* an idle connection is closed after this */
	struct node_stats *stats; /* a node's counters for /metrics (borrowed;
				     outlives the server), NULL under serve */
	size_t metrics_max_jobs;  /* per-job series in /metrics (default 1000) */
	const char *hosts;        /* --http-host: names Host may be besides an
				     address and localhost, comma-separated;
				     NULL: none */
	const char *cert_file;    /* --http-cert and --http-key: HTTPS with this */
	const char *key_file;     /* PEM certificate (chain) and key; NULL: HTTP */
} http_config;

/* Defaults for the limits: 8 MiB, 256, 15 s, 1000 jobs. */
void http_config_init(http_config *c);

/* Is list ("a.example, b.example") a valid --http-host value?  EINVAL
 * naming the bad name. */
int http_hosts_check(const char *list, dbcron_err *err);

typedef struct http_server http_server;

/*
 * Check the config, read the token file, open the store, bind and start
 * serving.  Refuses a non-loopback address without a token file, and a
 * token file that is unreadable or has a bad line (naming the line).
 * *out is the caller's (http_server_stop).  Logs "http.listen" with the
 * bound address and port.
 */
int http_server_start(const http_config *c, http_server **out, dbcron_err *err);
/* The port bound (useful with port 0). */
unsigned http_server_port(const http_server *h);
/* Stop serving (in-flight requests finish), close the store, free h. */
void http_server_stop(http_server *h);
/* Read the token file again (SIGHUP): the new tokens replace the old at
 * once; a file that does not read leaves the old ones in use and says
 * why.  Nothing to do without a token file. */
int http_server_reload(http_server *h, dbcron_err *err);

#endif
