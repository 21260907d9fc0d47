/*
 * The HTTP server's connections: the libmicrohttpd daemon with a pool of
 * HTTP_THREADS polling threads, so one slow request (a big answer, a
 * statement waiting on a lock) holds one thread and the others go on
 * serving /healthz, /metrics and the rest.  The limits (body size,
 * connections, idle timeout, header memory) and who is asking (bearer
 * tokens) are here too; which names it answers to (Host) is hosts.c's.
 *
 * Slow clients (slowloris).  A connection costs a slot (max_conns of them,
 * default 256) from its accept until it closes, and a client that sends
 * its request one header line every few seconds is never idle, so the
 * idle timeout never frees its slot: with every slot held that way,
 * libmicrohttpd stops accepting and nobody is served, /healthz included.
 * A per-address limit does not help when the slow clients and the
 * monitor share an address (a proxy, the same host), and a deadline on
 * the headers only frees slots for slow clients that reconnect at once.
 * So the server keeps the connections that are waiting for a request
 * (accepted, or kept alive after an answer, and no complete header block
 * yet) in one queue, oldest first, and lets at most max_conns / 2 of them
 * wait: a connection accepted past that closes the one that has waited
 * longest (shutdown() of its socket; libmicrohttpd then sees the end of
 * the stream and frees it on its own thread).  What this guarantees:
 *  - any number of slow clients hold at most max_conns / 2 slots, so the
 *    daemon never reaches its limit through them and keeps accepting;
 *  - a client that sends its request headers promptly (in one packet, as
 *    every HTTP client does) is past the queue before the waiting ones
 *    it joined can push it out: only max_conns / 2 newer connections
 *    arriving in between could, which is a flood (a volume attack for a
 *    firewall or a proxy), not a slow client;
 *  - past the queue, a request without an admin token carries no body
 *    (refused on its headers, below), so it holds its slot only while it
 *    is answered.
 * A kept-alive connection whose last request showed a token of the file
 * is not queued again: an authenticated client keeps its connection
 * among slow clients (only the idle timeout closes it), and holding slots
 * that way needs a token.  The cost: another kept-alive connection that
 * sits idle while slow clients arrive may be closed early; clients
 * reconnect.  Waiting in a queue
 * takes no thread: libmicrohttpd reads header bytes as they come on its
 * polling threads, and only a complete request reaches a request thread
 * (a thread per connection would make each slow client cost a thread and
 * still leave the slots to run out).  Each connection's memory is bounded
 * by MHD_OPTION_CONNECTION_MEMORY_LIMIT (64 KiB of headers and buffers),
 * so the 256 connections cost at most 16 MiB however slow they are.
 *
 * The queue's entries (http_conn) are made and freed by libmicrohttpd's
 * connection notices on the polling threads, and the queue is guarded by
 * conn_mu.  An entry's socket is closed by libmicrohttpd only after the
 * CLOSED notice has taken the entry out under conn_mu, so a shutdown()
 * under conn_mu never hits a socket number that was reused.
 *
 * Names (DNS rebinding): every request's Host is checked on its headers,
 * before anything else; hosts.c says which names pass and why.
 *
 * Bodies.  Only admin requests use a body, so the role is decided on the
 * headers and a request with a body (Content-Length above 0, or chunked)
 * from anyone else is refused (401 or 403) before a byte of it is read:
 * no body is buffered for a client that has not shown an admin token.
 *
 * Store handles: one per pool thread, all opened at start (so a database
 * that cannot be reached is said at start, and a client library's
 * one-time set-up runs on one thread).  A request takes a free handle
 * from the pool under pool_mu and gives it back when answered; a thread
 * runs one request at a time, so with as many handles as threads one is
 * always free and the wait is only a guard.  No handle is ever used by
 * two threads at once, and none is the claim loop's.  The tokens, the
 * limits, the names and the node's counters (atomics) are read-only here
 * after start, so the threads share nothing else but the waiting queue.
 *
 * Auth: a token file holds lines "TOKEN ROLE" (ROLE read or admin; TOKEN
 * may be "sha256:HEX", so the file need hold no secret).  Only the
 * SHA-256 of each token is kept, and a presented token is hashed and
 * compared with every entry in constant time, so neither the match nor
 * its position leaks through timing.  Only "Authorization: Bearer" counts:
 * no cookies, so a browser cannot be made to send a credential (no CSRF).
 * Without a token file the server is read-only and must listen on a
 * loopback address.  The token file is a secret of this process, as the
 * database URL file is: no job's env-file may be it (exec/runas.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/text.h"
#include "exec/runas.h"
#include "http/http_int.h"
#include "sched/stats.h"

#define SHA256_HEX 64
/* Request threads (and store handles).  Four keeps a slow request or two
 * from stalling the rest without many database connections per node. */
#define HTTP_THREADS 4

/* One connection, from its accept to its close (libmicrohttpd's socket
 * context).  While waiting is set it is in the server's queue of
 * connections waiting for a request, oldest at the head. */
typedef struct http_conn {
	struct http_conn *prev, *next;
	bool waiting;
	int fd; /* libmicrohttpd's socket, open until after the CLOSED notice */
} http_conn;

/* A token's name in the audit trail: the file's third field, or
 * "token#LINE" for a line without one. */
#define TOKEN_NAME_MAX 64

typedef struct http_token {
	char hex[SHA256_HEX + 1]; /* lower-case SHA-256 of the token */
	http_role role;
	char name[TOKEN_NAME_MAX];
} http_token;

struct http_server {
	struct MHD_Daemon *d;
	pthread_mutex_t pool_mu; /* guards nfree and the free half of pool */
	pthread_cond_t pool_cv;  /* a handle was given back */
	bool pool_init;          /* pool_mu and pool_cv exist */
	store *pool[HTTP_THREADS]; /* pool[0..nfree) are free */
	size_t npool, nfree;
	/* the token file's entries; replaced whole by a reload (SIGHUP) under
	 * tok_mu, which token_role reads under */
	pthread_rwlock_t tok_mu;
	bool tok_init;
	http_token *tokens;
	size_t ntokens, tokcap;
	bool has_tokens;        /* a token file was given: never changes */
	const char *token_file; /* borrowed from the config, for reloads */
	size_t max_body;
	unsigned port;
	struct node_stats *stats;
	size_t metrics_max_jobs;
	http_hosts hosts; /* --http-host names (hosts.c) */
	char *tls_cert, *tls_key; /* PEM, kept while the daemon runs */
	pthread_mutex_t conn_mu;  /* guards the waiting queue */
	bool conn_init;           /* conn_mu exists */
	http_conn *wait_head, *wait_tail;
	size_t nwaiting, max_waiting;
};

/* One request's upload, owned by the connection (freed in on_done). */
typedef struct http_upload {
	char *buf;
	size_t len, cap;
	bool too_big;
	http_role role; /* decided on the headers */
	bool bad_token; /* a bearer token was given and is unknown */
	char actor[TOKEN_NAME_MAX + 8]; /* "http:NAME": who its changes are by */
} http_upload;

void http_config_init(http_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_body = (size_t)8 << 20;
	c->max_conns = 256;
	c->timeout_s = 15;
	c->metrics_max_jobs = 1000;
}

/* ------------------------------------------------------------- tokens */

static bool is_hex64(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!isxdigit((unsigned char)s[n]))
			return false;
	return n == SHA256_HEX;
}

/* A token's name goes into the audit trail as it is: plain characters. */
static bool token_name_ok(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len >= TOKEN_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)n[i]) && !strchr("._@-", n[i]))
			return false;
	return true;
}

typedef struct token_set {
	http_token *v;
	size_t n, cap;
} token_set;

static int read_tokens(token_set *h, const char *path, dbcron_err *err)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0, rc = DBCRON_EINVAL;

	if (!f)
		return dbcron_err_set(err, DBCRON_EIO, "--api-token-file %s: %s", path,
				      strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char tok[512], role[32], name[TOKEN_NAME_MAX + 1], extra[2];
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			dbcron_err_set(err, rc, "--api-token-file %s:%d: line too long", path, lineno);
			goto out_close;
		}
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		int k = sscanf(p, "%511s %31s %64s %1s", tok, role, name, extra);
		if (k != 2 && k != 3) {
			dbcron_err_set(err, rc, "--api-token-file %s:%d: expected 'TOKEN ROLE [NAME]' (ROLE read or admin)",
				       path, lineno);
			goto out_close;
		}
		http_token t = {.role = HTTP_ROLE_NONE};
		if (k == 3 && !token_name_ok(name)) {
			dbcron_err_set(err, rc, "--api-token-file %s:%d: a name is 1-63 of A-Z a-z 0-9 . _ @ -",
				       path, lineno);
			goto out_close;
		}
		if (k == 3)
			memcpy(t.name, name, strlen(name) + 1);
		else
			dbcron__textf(t.name, sizeof(t.name), "token#%d", lineno);
		if (!strcmp(role, "read"))
			t.role = HTTP_ROLE_READ;
		else if (!strcmp(role, "admin"))
			t.role = HTTP_ROLE_ADMIN;
		else {
			dbcron_err_set(err, rc, "--api-token-file %s:%d: role '%s' is not read or admin",
				       path, lineno, role);
			goto out_close;
		}
		if (!strncmp(tok, "sha256:", 7)) {
			if (!is_hex64(tok + 7)) {
				dbcron_err_set(err, rc, "--api-token-file %s:%d: sha256: wants 64 hex digits",
					       path, lineno);
				goto out_close;
			}
			for (int i = 0; i < SHA256_HEX; i++)
				t.hex[i] = (char)tolower((unsigned char)tok[7 + i]);
		} else {
			if (strlen(tok) < 16) {
				dbcron_err_set(err, rc, "--api-token-file %s:%d: a token needs at least 16 characters",
					       path, lineno);
				goto out_close;
			}
			gchar *hx = g_compute_checksum_for_string(G_CHECKSUM_SHA256, tok, -1);
			if (!hx) {
				rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
				goto out_close;
			}
			memcpy(t.hex, hx, SHA256_HEX);
			g_free(hx);
		}
		if (dbcron__grow((void **)&h->v, &h->cap, h->n + 1, sizeof(*h->v))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
			goto out_close;
		}
		h->v[h->n++] = t;
	}
	if (h->n == 0) {
		dbcron_err_set(err, rc, "--api-token-file %s: no tokens in it", path);
		goto out_close;
	}
	rc = DBCRON_OK;
out_close:
	fclose(f);
	return rc;
}

/* The role of a bearer token, and its name into name[TOKEN_NAME_MAX]
 * ("" when none matched): every entry compared, no early exit. */
static http_role token_role(http_server *h, const char *token, char *name)
{
	gchar *hx = g_compute_checksum_for_string(G_CHECKSUM_SHA256, token, -1);
	http_role role = HTTP_ROLE_NONE;
	size_t at = 0;
	unsigned any = 0;
	name[0] = '\0';
	if (!hx)
		return role;
	pthread_rwlock_rdlock(&h->tok_mu);
	for (size_t i = 0; i < h->ntokens; i++) {
		unsigned char diff = 0;
		for (int k = 0; k < SHA256_HEX; k++)
			diff |= (unsigned char)(hx[k] ^ h->tokens[i].hex[k]);
		/* branch-free select of the matching entry's role and index */
		unsigned m = (unsigned)((diff - 1) >> 8) & 1u; /* 1 when diff == 0 */
		role = (http_role)((unsigned)role | (m * (unsigned)h->tokens[i].role));
		/* the first matching entry's name (a token may be listed twice) */
		size_t take = (size_t)(m & ~any & 1u);
		at = at * (1 - take) + i * take;
		any |= m;
	}
	if (any)
		memcpy(name, h->tokens[at].name, TOKEN_NAME_MAX);
	pthread_rwlock_unlock(&h->tok_mu);
	g_free(hx);
	return role;
}

int http_server_reload(http_server *h, dbcron_err *err)
{
	if (!h || !h->token_file)
		return DBCRON_OK;
	token_set t = {0};
	int rc = read_tokens(&t, h->token_file, err);
	if (rc) {
		dbcron__free(t.v);
		return rc; /* the tokens in use stay */
	}
	pthread_rwlock_wrlock(&h->tok_mu);
	http_token *old = h->tokens;
	h->tokens = t.v;
	h->ntokens = t.n;
	h->tokcap = t.cap;
	pthread_rwlock_unlock(&h->tok_mu);
	dbcron__free(old);
	dbcron__log(LOG_INFO, "http.reload", LOG_STR("api_token_file", h->token_file),
		    LOG_UINT("tokens", t.n));
	return DBCRON_OK;
}

/* ------------------------------------------------- connections waiting */

/* conn_mu held. */
static void wait_unlink(http_server *h, http_conn *hc)
{
	if (!hc->waiting)
		return;
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		h->wait_head = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	else
		h->wait_tail = hc->prev;
	hc->prev = hc->next = NULL;
	hc->waiting = false;
	h->nwaiting--;
}

/* conn_mu held: hc to the tail (the newest), then close the oldest while
 * too many wait.  shutdown() leaves the socket open (libmicrohttpd closes
 * it after the CLOSED notice) and wakes its polling thread with the end
 * of the stream. */
static void wait_push(http_server *h, http_conn *hc)
{
	if (hc->waiting)
		return;
	hc->prev = h->wait_tail;
	hc->next = NULL;
	if (h->wait_tail)
		h->wait_tail->next = hc;
	else
		h->wait_head = hc;
	h->wait_tail = hc;
	hc->waiting = true;
	h->nwaiting++;
	while (h->nwaiting > h->max_waiting && h->wait_head != hc) {
		http_conn *old = h->wait_head;
		wait_unlink(h, old);
		if (old->fd >= 0)
			shutdown(old->fd, SHUT_RDWR);
	}
}

static http_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		http__mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* A complete request arrived (busy) or was answered (waiting again). */
static void conn_set_waiting(http_server *h, struct MHD_Connection *c, bool waiting)
{
	http_conn *hc = conn_of(c);
	if (!hc)
		return;
	pthread_mutex_lock(&h->conn_mu);
	if (waiting)
		wait_push(h, hc);
	else
		wait_unlink(h, hc);
	pthread_mutex_unlock(&h->conn_mu);
}

/* libmicrohttpd's connection notices, on the connection's polling thread. */
static void on_conn(void *cls, struct MHD_Connection *c, void **socket_context,
		    enum MHD_ConnectionNotificationCode code)
{
	http_server *h = cls;
	http_conn *hc = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		/* out of memory: the connection is served, only never queued */
		if (!(hc = dbcron__calloc(1, sizeof(*hc))))
			return;
		const union MHD_ConnectionInfo *ci =
			http__mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		hc->fd = ci ? ci->connect_fd : -1;
		*socket_context = hc;
		pthread_mutex_lock(&h->conn_mu);
		wait_push(h, hc);
		pthread_mutex_unlock(&h->conn_mu);
		return;
	}
	if (!hc)
		return;
	pthread_mutex_lock(&h->conn_mu);
	wait_unlink(h, hc);
	pthread_mutex_unlock(&h->conn_mu);
	dbcron__free(hc);
	*socket_context = NULL;
}

/* ------------------------------------------------------------ replies */

/* A strong validator of a body: FNV-1a 64 of its bytes, quoted. */
static void etag_of(const char *text, size_t n, char *buf, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
	snprintf(buf, len, "\"%016" PRIx64 "\"", h);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, http_reply *rep)
{
	char etag[24] = "";
	struct MHD_Response *r;
	char *text = NULL;
	if (rep->json && rep->etag) {
		/* the validator leaves out the clock ("now_ms"), which every answer
		 * moves: a listing whose rows did not change is not sent again */
		json_t *now = json_incref(json_object_get(rep->json, "now_ms"));
		json_object_del(rep->json, "now_ms");
		char *bare = json_dumps(rep->json, JSON_COMPACT | JSON_ENSURE_ASCII);
		if (bare)
			etag_of(bare, strlen(bare), etag, sizeof(etag));
		free(bare);
		if (now)
			json_object_set_new(rep->json, "now_ms", now);
	}
	if (rep->json) {
		text = json_dumps(rep->json, JSON_COMPACT | JSON_ENSURE_ASCII);
		json_decref(rep->json);
		rep->json = NULL;
		if (!text) {
			rep->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
			rep->text = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
			rep->text_len = strlen(rep->text);
		}
		rep->ctype = "application/json";
	}
	if (text && etag[0]) {
		const char *inm = http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND,
									 "If-None-Match");
		if (inm && !strcmp(inm, etag)) {
			free(text);
			text = NULL;
			rep->status = MHD_HTTP_NOT_MODIFIED;
			rep->text = "";
			rep->text_len = 0;
		}
	}
	if (text) {
		/* jansson's buffer (malloc), handed to libmicrohttpd, which frees it */
		size_t n = strlen(text);
		r = http__mhd.MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
		if (!r)
			free(text);
	} else if (rep->owned_text) {
		r = http__mhd.MHD_create_response_from_buffer(rep->text_len, rep->owned_text,
						    MHD_RESPMEM_MUST_FREE);
		if (!r)
			free(rep->owned_text);
		rep->owned_text = NULL;
	} else {
		r = http__mhd.MHD_create_response_from_buffer(rep->text_len, (void *)rep->text,
						    MHD_RESPMEM_PERSISTENT);
	}
	if (!r)
		return MHD_NO;
	http__mhd.MHD_add_response_header(r, "Content-Type", rep->ctype ? rep->ctype : "text/plain; charset=utf-8");
	http__mhd.MHD_add_response_header(r, "Cache-Control", "no-store");
	http__mhd.MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	http__mhd.MHD_add_response_header(r, "X-Frame-Options", "DENY");
	if (etag[0])
		http__mhd.MHD_add_response_header(r, "ETag", etag);
	if (rep->allow)
		http__mhd.MHD_add_response_header(r, "Allow", rep->allow);
	if (rep->csp)
		http__mhd.MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
	if (rep->www_auth)
		http__mhd.MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	enum MHD_Result ok = http__mhd.MHD_queue_response(c, rep->status, r);
	http__mhd.MHD_destroy_response(r);
	return ok;
}

/* ------------------------------------------------------ store handles */

static store *handle_take(http_server *h)
{
	pthread_mutex_lock(&h->pool_mu);
	while (h->nfree == 0)
		pthread_cond_wait(&h->pool_cv, &h->pool_mu);
	store *st = h->pool[--h->nfree];
	pthread_mutex_unlock(&h->pool_mu);
	return st;
}

static void handle_give(http_server *h, store *st)
{
	pthread_mutex_lock(&h->pool_mu);
	h->pool[h->nfree++] = st;
	pthread_cond_signal(&h->pool_cv);
	pthread_mutex_unlock(&h->pool_mu);
}

/* ---------------------------------------------------------- requests */

/* The caller's role from the Authorization header, and who it is for the
 * audit trail into up->actor ("http:NAME", or "http:anonymous"). */
static http_role caller_role(http_server *h, struct MHD_Connection *c, http_upload *up)
{
	const char *auth = http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	char name[TOKEN_NAME_MAX];
	up->bad_token = false;
	dbcron__textf(up->actor, sizeof(up->actor), "http:anonymous");
	if (!h->has_tokens)
		return HTTP_ROLE_READ;
	if (auth && !strncasecmp(auth, "Bearer ", 7)) {
		const char *t = auth + 7;
		while (*t == ' ')
			t++;
		http_role role = token_role(h, t, name);
		up->bad_token = role == HTTP_ROLE_NONE;
		if (name[0])
			dbcron__textf(up->actor, sizeof(up->actor), "http:%s", name);
		return role;
	}
	up->bad_token = auth != NULL;
	return HTTP_ROLE_NONE;
}

/* Does the request announce a body?  (A chunked one has no length.) */
static bool has_body(struct MHD_Connection *c)
{
	const char *cl = http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	return (cl && strtoull(cl, NULL, 10) > 0) ||
	       http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/*
 * The first call of a request, with its headers only: everything that can
 * refuse it without its body does so here, before a byte of the body is
 * read (libmicrohttpd then answers without "100 Continue" and closes).
 */
static enum MHD_Result on_headers(http_server *h, struct MHD_Connection *c,
				  const char *method, http_upload *up)
{
	http_reply rep = {0};
	const char *host = http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);

	if (!http__host_allowed(&h->hosts, host)) {
		http__error(&rep, MHD_HTTP_FORBIDDEN, "forbidden",
			    "Host '%.100s' is not a name of this server (an address, localhost, or a "
			    "name given with --http-host)", host);
		return send_reply(c, &rep);
	}
	up->role = caller_role(h, c, up);
	if (has_body(c) && up->role < HTTP_ROLE_ADMIN) {
		/* only writes take a body, and they need admin: say why as the
		 * route would, without reading the body first */
		http_call call = {.conn = c, .method = method, .role = up->role,
				  .tokens = h->has_tokens, .bad_token = up->bad_token};
		http__may_write(&call, &rep);
		return send_reply(c, &rep);
	}
	/* a declared length over the limit is refused before any of it */
	const char *cl = http__mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > h->max_body) {
		http__error(&rep, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
			    "request body larger than the limit of %zu bytes", h->max_body);
		return send_reply(c, &rep);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *data, size_t *data_size, void **con_cls)
{
	http_server *h = cls;
	http_upload *up = *con_cls;
	http_reply rep = {0};

	if (!up) {
		/* a complete header block: no longer waiting for a request */
		conn_set_waiting(h, c, false);
		up = dbcron__calloc(1, sizeof(*up));
		if (!up)
			return MHD_NO;
		*con_cls = up;
		return on_headers(h, c, method, up);
	}
	if (*data_size) {
		size_t n = *data_size;
		*data_size = 0;
		if (up->too_big || up->len + n > h->max_body) {
			/* read and drop the rest, then answer 413 */
			up->too_big = true;
			return MHD_YES;
		}
		if (dbcron__grow((void **)&up->buf, &up->cap, up->len + n + 1, 1))
			return MHD_NO;
		memcpy(up->buf + up->len, data, n);
		up->len += n;
		up->buf[up->len] = '\0';
		return MHD_YES;
	}
	if (up->too_big) {
		http__error(&rep, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
			    "request body larger than the limit of %zu bytes", h->max_body);
		return send_reply(c, &rep);
	}

	http_call call = {.conn = c, .method = method, .path = url,
			  .body = up->buf ? up->buf : "", .body_len = up->len,
			  .st = NULL, .tokens = h->has_tokens, .stats = h->stats,
			  .metrics_max_jobs = h->metrics_max_jobs,
			  .role = up->role, .bad_token = up->bad_token};
	call.st = handle_take(h);
	/* the handle is this request's alone until given back */
	store_set_actor(call.st, up->actor);
	http__route(&call, &rep);
	handle_give(h, call.st);
	if (!rep.json && !rep.text && !rep.owned_text)
		http__error(&rep, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
	return send_reply(c, &rep);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode why)
{
	http_server *h = cls;
	http_upload *up = *con_cls;
	/* a connection that has shown a token of the file is an authenticated
	 * client's: it never goes back to the queue, so slow clients cannot
	 * push it out (the idle timeout still closes it) */
	bool authenticated = up && h->has_tokens && up->role >= HTTP_ROLE_READ;
	if (up) {
		dbcron__free(up->buf);
		dbcron__free(up);
		*con_cls = NULL;
	}
	/* answered: a kept-alive connection waits for its next request (one
	 * that closes now leaves the queue again with its CLOSED notice) */
	if (!authenticated)
		conn_set_waiting(h, c, true);
}

/* ------------------------------------------------------------ daemon */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/*
 * Percent-decoding of paths and query values, in place.  "%00" stays as
 * it is: decoded, it would end the C string early and "/jobs/tick%00x"
 * would address the job "tick".  Returns the new length.
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		int hi, lo;
		if (*r == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 &&
		    (hi | lo)) {
			*w++ = (char)(hi * 16 + lo);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
	return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
}

/* "127.0.0.1:8080", "[::1]:8080", "localhost:8080", "0.0.0.0:8080". */
static int parse_listen(const char *s, struct sockaddr_storage *ss, dbcron_err *err)
{
	char host[128];
	const char *colon;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, (size_t)(e - s - 1));
		host[e - s - 1] = '\0';
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			goto bad;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port < 0 || port > 65535)
		goto bad;
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
	} else {
		goto bad;
	}
	return DBCRON_OK;
bad:
	return dbcron_err_set(err, DBCRON_EINVAL,
			      "--http '%s': expected ADDR:PORT (127.0.0.1:8080, [::1]:8080)", s);
}

/* After the daemon is stopped (no request thread left): the handles. */
/* A PEM file for TLS into *out (owned, NUL-ended), its errors naming it. */
static int read_pem(const char *flag, const char *path, char **out, dbcron_err *err)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	*out = NULL;
	FILE *f = fopen(path, "re");
	if (!f)
		return dbcron_err_set(err, DBCRON_EINVAL, "%s %s: %s", flag, path, strerror(errno));
	for (;;) {
		if (len + 4097 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *nb = cap > (1u << 20) ? NULL : dbcron__realloc(buf, cap);
			if (!nb) {
				fclose(f);
				if (buf)
					explicit_bzero(buf, len);
				dbcron__free(buf);
				return dbcron_err_set(err, DBCRON_EINVAL, "%s %s: larger than 1 MiB",
						      flag, path);
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, 4096, f);
		len += got;
		if (got < 4096)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	if (!strstr(buf, "-----BEGIN ")) {
		explicit_bzero(buf, len);
		dbcron__free(buf);
		return dbcron_err_set(err, DBCRON_EINVAL, "%s %s: not a PEM file", flag, path);
	}
	*out = buf;
	return DBCRON_OK;
}

/* The token file's tokens, and the lock a reload takes. */
static int tokens_start(http_server *h, const http_config *c, dbcron_err *err)
{
	if (pthread_rwlock_init(&h->tok_mu, NULL))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	h->tok_init = true;
	if (!c->token_file)
		return DBCRON_OK;
	token_set t = {0};
	int rc = read_tokens(&t, c->token_file, err);
	h->tokens = t.v;
	h->ntokens = t.n;
	h->tokcap = t.cap;
	if (rc)
		return rc;
	h->has_tokens = true;
	h->token_file = c->token_file;
	/* a secret of this process from now on: no job's env-file may be it */
	runas_secret_file_add_as(c->token_file, "API tokens");
	return DBCRON_OK;
}

/* HTTPS: the certificate and key into the daemon's options (tls[0..1]),
 * or tls[0] the end of them for plain HTTP. */
static int tls_start(http_server *h, const http_config *c, struct MHD_OptionItem *tls,
		     unsigned *flags, dbcron_err *err)
{
	int rc;
	if (!c->cert_file) {
		tls[0].option = MHD_OPTION_END;
		return DBCRON_OK;
	}
	if ((rc = read_pem("--http-cert", c->cert_file, &h->tls_cert, err)) ||
	    (rc = read_pem("--http-key", c->key_file, &h->tls_key, err)))
		return rc;
	runas_secret_file_add_as(c->key_file, "the HTTPS key");
	tls[0].ptr_value = h->tls_cert;
	tls[1].ptr_value = h->tls_key;
	*flags |= MHD_USE_TLS;
	return DBCRON_OK;
}

static void free_server(http_server *h)
{
	for (size_t i = 0; i < h->npool; i++)
		store_close(h->pool[i]);
	if (h->pool_init) {
		pthread_cond_destroy(&h->pool_cv);
		pthread_mutex_destroy(&h->pool_mu);
	}
	if (h->conn_init)
		pthread_mutex_destroy(&h->conn_mu);
	http__hosts_free(&h->hosts);
	dbcron__free(h->tokens);
	if (h->tok_init)
		pthread_rwlock_destroy(&h->tok_mu);
	dbcron__free(h->tls_cert);
	if (h->tls_key)
		explicit_bzero(h->tls_key, strlen(h->tls_key));
	dbcron__free(h->tls_key);
	dbcron__free(h);
}

http_mhd http__mhd;
#define HTTP_MHD_SYM(f) DBCRON_DYNLIB_SYM(http_mhd, f)
static const dbcron_dynsym mhd_syms[] = {HTTP_MHD_FUNCS(HTTP_MHD_SYM)};
static dbcron_dynlib mhd_lib = {.soname = "libmicrohttpd.so.12", .package = "libmicrohttpd12",
				.what = "The HTTP API", .syms = mhd_syms,
				.nsyms = sizeof(mhd_syms) / sizeof(mhd_syms[0]), .api = &http__mhd};

int http_server_start(const http_config *c, http_server **out, dbcron_err *err)
{
	struct sockaddr_storage ss;
	http_server *h;
	int rc;

	*out = NULL;
	if ((rc = dbcron__dynlib_load(&mhd_lib, err)))
		return rc;
	if ((rc = parse_listen(c->listen, &ss, err)))
		return rc;
	if (!c->token_file && !is_loopback(&ss))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "--http %s is not a loopback address: give --api-token-file so that the API is not open to the network",
				      c->listen);
	if (!(h = dbcron__calloc(1, sizeof(*h))))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	h->max_body = c->max_body;
	h->stats = c->stats;
	/* the node keeps per-job run counters for as many jobs as /metrics
	 * shows, and none without a server */
	if (h->stats)
		atomic_store(&h->stats->jobs_max, c->metrics_max_jobs);
	h->metrics_max_jobs = c->metrics_max_jobs;
	if ((rc = tokens_start(h, c, err)))
		goto out_free;
	if (c->hosts && (rc = http__hosts_read(&h->hosts, c->hosts, err)))
		goto out_free;
	/* half the slots at most wait for a request (see the top) */
	h->max_waiting = c->max_conns / 2 ? c->max_conns / 2 : 1;
	if (pthread_mutex_init(&h->conn_mu, NULL)) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out_free;
	}
	h->conn_init = true;
	if (pthread_mutex_init(&h->pool_mu, NULL)) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out_free;
	}
	if (pthread_cond_init(&h->pool_cv, NULL)) {
		pthread_mutex_destroy(&h->pool_mu);
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out_free;
	}
	h->pool_init = true;
	for (; h->npool < HTTP_THREADS; h->npool++)
		if ((rc = store_open(c->db_url, &h->pool[h->npool], err)))
			goto out_free;
	h->nfree = h->npool;
	if ((rc = store_check_schema(h->pool[0], err)))
		goto out_free;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* HTTPS: libmicrohttpd's GnuTLS, the certificate and key from memory
	 * (read here, so that a bad file is named before anything listens) */
	struct MHD_OptionItem tls[] = {
		{MHD_OPTION_HTTPS_MEM_CERT, 0, NULL},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, NULL},
		{MHD_OPTION_END, 0, NULL},
	};
	if ((rc = tls_start(h, c, tls, &flags, err)))
		goto out_free;
	errno = 0;
	h->d = http__mhd.MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS,
				MHD_OPTION_CONNECTION_LIMIT, c->max_conns,
				MHD_OPTION_CONNECTION_TIMEOUT, c->timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
				MHD_OPTION_NOTIFY_COMPLETED, on_done, h,
				MHD_OPTION_NOTIFY_CONNECTION, on_conn, h,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape, h,
				MHD_OPTION_ARRAY, tls,
				MHD_OPTION_END);
	if (!h->d && c->cert_file) {
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "--http %s: cannot serve HTTPS with --http-cert %s and --http-key %s "
				    "(not a certificate and its key, or the port is taken)",
				    c->listen, c->cert_file, c->key_file);
		goto out_free;
	}
	if (!h->d) {
		rc = dbcron_err_set(err, DBCRON_EIO, "--http %s: cannot listen there (%s)", c->listen,
				    errno ? strerror(errno) : "in use or not an address of this host");
		goto out_free;
	}
	const union MHD_DaemonInfo *di = http__mhd.MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : 0;
	dbcron__log(LOG_INFO, "http.listen", LOG_STR("listen", c->listen),
		    LOG_INT("port", (int64_t)h->port), LOG_STR("tls", c->cert_file ? "yes" : "no"),
		    LOG_STR("auth", h->has_tokens ? "tokens" : "none (read-only)"));
	*out = h;
	return DBCRON_OK;
out_free:
	free_server(h);
	return rc;
}

unsigned http_server_port(const http_server *h)
{
	return h->port;
}

void http_server_stop(http_server *h)
{
	if (!h)
		return;
	if (h->d)
		http__mhd.MHD_stop_daemon(h->d);
	free_server(h);
}
