/*
 * Inside the HTTP server: what server.c (connections, limits, auth) hands
 * the router in routes.c, and what the router hands back.  The arrows go
 * one way: server.c -> routes.c -> metrics.c, each of them -> reply.c (the
 * error reply) and server.c -> hosts.c.  A call and its
 * reply belong to the one request thread answering it; call->st is that
 * thread's store handle for the length of the call (server.c's pool).
 */
#ifndef DBCRON_HTTP_INT_H
#define DBCRON_HTTP_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/dynlib.h"
#include "http/http.h"
#include "store/store.h"

/* libmicrohttpd, loaded when the first server starts (core/dynlib.h):
 * every libmicrohttpd function of this folder goes through http__mhd. */
#define HTTP_MHD_FUNCS(X)                                                              \
	X(MHD_add_response_header) X(MHD_create_response_from_buffer)                  \
	X(MHD_destroy_response) X(MHD_get_connection_info) X(MHD_get_daemon_info)      \
	X(MHD_lookup_connection_value) X(MHD_lookup_connection_value_n)                \
	X(MHD_queue_response) X(MHD_start_daemon) X(MHD_stop_daemon)
typedef struct http_mhd {
	HTTP_MHD_FUNCS(DBCRON_DYNLIB_MEMBER)
} http_mhd;
extern http_mhd http__mhd;

typedef enum http_role {
	HTTP_ROLE_NONE = 0, /* no or a wrong token, while tokens are configured */
	HTTP_ROLE_READ = 1,
	HTTP_ROLE_ADMIN = 2,
} http_role;

/* One request, as the router sees it. */
typedef struct http_call {
	struct MHD_Connection *conn; /* for query arguments */
	const char *method;
	const char *path;            /* decoded, without the query */
	const char *body;            /* NUL-terminated; "" when none */
	size_t body_len;
	http_role role;
	bool tokens;                 /* a token file is configured */
	bool bad_token;              /* a bearer token was given and is unknown */
	store *st;                   /* a handle of the server's, this call's alone */
	struct node_stats *stats;    /* the node's counters, NULL under serve */
	size_t metrics_max_jobs;
} http_call;

/* What to answer: a JSON document (owned, decref'd after sending) or a
 * static text.  allow: the methods a 405 names. */
typedef struct http_reply {
	unsigned status;
	json_t *json;
	const char *text;
	char *owned_text; /* instead of text: malloc'd, freed once sent */
	size_t text_len;
	const char *ctype;
	const char *allow;
	bool www_auth; /* add WWW-Authenticate: Bearer (401) */
	bool csp;      /* a dashboard file: Content-Security-Policy, nothing from elsewhere */
	bool etag;     /* a GET's JSON: ETag, and 304 on a matching If-None-Match */
} http_reply;

/* The --http-host names (hosts.c): lower case, no trailing dot; read at
 * start, read-only after. */
typedef struct http_hosts {
	char **names;
	size_t n;
} http_hosts;

/* Read a --http-host list into *h (zeroed before; http__hosts_free frees
 * it, also after an error).  EINVAL naming the bad name, or ENOMEM. */
int http__hosts_read(http_hosts *h, const char *list, dbcron_err *err);
/* May a request with this Host header (NULL: none) be answered?  An
 * address (v4, or v6 in brackets), localhost and *.localhost, and h's
 * names. */
bool http__host_allowed(const http_hosts *h, const char *host);
void http__hosts_free(http_hosts *h);

/* Does the call have the admin role?  When not, answers 401 or 403 as a
 * write route would (routes.c); server.c uses it to refuse a body unread. */
bool http__may_write(const http_call *c, http_reply *rep);

/* GET /metrics (metrics.c). */
void http__metrics(const http_call *call, http_reply *rep);

/* Route and answer one call (routes.c). */
void http__route(const http_call *call, http_reply *rep);

/* {"error": {"code": code, "message": msg}} with the status (reply.c);
 * replaces a JSON document already in rep. */
void http__error(http_reply *rep, unsigned status, const char *code, const char *fmt, ...)
	DBCRON_PRINTF(4, 5);

#endif
