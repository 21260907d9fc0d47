/*
 * The HTTP executor: a job that calls a URL (issue 27 item 1).
 *
 * Owns one engine per process: a libcurl multi handle and the one thread
 * that drives it, started at the first HTTP run.  Every HTTP run of every
 * node of the process is a transfer on it, never a thread or a process of
 * its own: the start hook (exec.h) prepares the transfer on the worker
 * that took the fire, hands it over and returns, so the worker is free
 * again while the request is out.  The engine is apart from the webhook
 * reactions' delivery thread (react/deliver.c), with its own multi handle,
 * so neither kind of transfer waits behind the other; both call libcurl
 * through core/curl.h.
 *
 * Invariants:
 *  - the done callback of a run is called once, on the engine thread (or
 *    on the starting worker when the transfer cannot start), after its
 *    exec_result is filled, and nothing of the run is touched afterwards
 *    (the caller may free the result at once);
 *  - a cancel (req->cancel: runs cancel, overlap replace, the node's stop
 *    or lost lease) is seen within CANCEL_POLL_MS and ends the transfer at
 *    once: there is no process to give a grace to;
 *  - the job's timeout bounds the whole request (CURLOPT_TIMEOUT_MS);
 *  - placeholders are resolved per run into the transfer's own copies:
 *    ${NAME} from the job's env-file (a secret stays on the node's host:
 *    not in the job's row, not in the run's output), ${param.KEY} from
 *    the run's parameters; a value with a line break is refused (it would
 *    inject a header);
 *  - the output is bounded: the status line, a few response headers, and
 *    the body's first and last capture_bytes (capture.h).
 *
 * Costs admitted: the engine thread is never stopped (a process that ran
 * an HTTP job keeps one idle thread); a due cancel is looked for by
 * walking every transfer in flight every CANCEL_POLL_MS, a few µs per
 * thousand.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/curl.h"
#include "core/text.h"
#include "core/timeutil.h"
#include "exec/capture.h"
#include "exec/exec.h"
#include "exec/http.h"
#include "exec/runas.h"

#define DEFAULT_CAPTURE 1024
/* How often the engine looks at the cancel flags of its transfers. */
#define CANCEL_POLL_MS 20
/* Response headers worth keeping in the run's output. */
static const char *const kept_headers[] = {
	"content-type", "content-length", "location", "retry-after",
};

/* ---- the job's own fields ---- */

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};

static bool method_ok(const char *m, size_t len)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i]) == len && strncmp(methods[i], m, len) == 0)
			return true;
	return false;
}

/* The URL part of "METHOD URL" (placeholders allowed where a host or a
 * path would be). */
static int check_url(const char *u, dbcron_err *err)
{
	size_t skip = strncasecmp(u, "http://", 7) == 0 ? 7 : strncasecmp(u, "https://", 8) == 0 ? 8 : 0;
	if (!skip)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "'%.200s': expected an http:// or https:// URL", u);
	for (const unsigned char *p = (const unsigned char *)u; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "'%.200s': a URL has no spaces or control characters", u);
	size_t host = strcspn(u + skip, "/?#");
	if (host == 0 || u[skip] == ':' || u[skip] == '@')
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s': the URL has no host", u);
	return DBCRON_OK;
}

int exec_http_check_target(const char *v, dbcron_err *err)
{
	const char *sp = strchr(v, ' ');
	if (!sp)
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s': expected METHOD URL", v);
	if (!method_ok(v, (size_t)(sp - v)))
		return dbcron_err_set(err, DBCRON_EINVAL, "unknown method '%.*s' (expected %s)",
				      (int)(sp - v > 40 ? 40 : sp - v), v, EXEC_HTTP_METHODS);
	return check_url(sp + 1, err);
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

int exec_http_check_header(const char *v, dbcron_err *err)
{
	size_t n = 0;
	while (token_char(v[n]))
		n++;
	if (!n || v[n] != ':')
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s': expected 'Name: value'", v);
	if (strpbrk(v, "\r\n"))
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s': a header is one line", v);
	return DBCRON_OK;
}

/* Does one item of an expect list ("2xx" or "204") accept status? -1 when
 * the item is not one. */
static int expect_item(const char *p, size_t len, long status)
{
	if (len != 3 || p[0] < '1' || p[0] > '5')
		return -1;
	if (p[1] == 'x' && p[2] == 'x')
		return status / 100 == p[0] - '0';
	if (p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9')
		return -1;
	return status == (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
}

/* 1 when status is expected, 0 when not, -1 when the list is malformed. */
static int expect_match(const char *list, long status)
{
	int hit = 0;
	const char *p = list && *list ? list : "2xx";
	for (;;) {
		size_t len = strcspn(p, ",");
		int r = expect_item(p, len, status);
		if (r < 0)
			return -1;
		hit |= r;
		if (!p[len])
			return hit;
		p += len + 1;
	}
}

int exec_http_check_expect(const char *v, dbcron_err *err)
{
	if (!*v || expect_match(v, 0) < 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "'%.200s': expected 2xx or status codes such as 200,204", v);
	return DBCRON_OK;
}

static bool name_ok(const char *s, size_t len)
{
	if (!len || len > 64 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

int exec_http_placeholders(const char *text, exec_http_ph_fn cb, void *ctx, dbcron_err *err)
{
	for (const char *p = text ? strstr(text, "${") : NULL; p; p = strstr(p, "${")) {
		const char *end = strchr(p + 2, '}');
		if (!end)
			return dbcron_err_set(err, DBCRON_EINVAL, "'%.40s': a placeholder without its '}'",
					      p);
		const char *name = p + 2;
		size_t len = (size_t)(end - name);
		bool param = len > 6 && strncmp(name, "param.", 6) == 0;
		if (!(param ? name_ok(name + 6, len - 6) : name_ok(name, len)))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "'${%.*s}': expected ${NAME} (from the env-file) or "
					      "${param.KEY}", (int)(len > 64 ? 64 : len), name);
		int rc = cb ? cb(ctx, name, len) : 0;
		if (rc)
			return rc;
		p = end + 1;
	}
	return DBCRON_OK;
}

/* validate: a ${NAME} needs an env-file to come from. */
typedef struct ph_check {
	const dbcron_job *job;
	const char *where;
	dbcron_err *err;
} ph_check;

static int ph_needs_file(void *ctx, const char *name, size_t len)
{
	ph_check *c = ctx;
	if (strncmp(name, "param.", 6) == 0 || c->job->env_file)
		return 0;
	return dbcron_err_set(c->err, DBCRON_EINVAL,
			      "job '%s': %s: ${%.*s} comes from an env-file: give --env-file",
			      c->job->name ? c->job->name : "", c->where, (int)len, name);
}

static int check_text(const dbcron_job *job, const char *where, const char *text,
		      dbcron_err *err)
{
	ph_check c = {job, where, err};
	dbcron_err why = {0};
	int rc = exec_http_placeholders(text, ph_needs_file, &c, &why);
	if (rc && why.code)
		return dbcron_err_set(err, rc, "job '%s': %s: %s", job->name ? job->name : "",
				      where, why.msg);
	return rc;
}

/* Each line of a header list: cb(ctx, line, len). */
static int each_line(const char *list, int (*cb)(void *, const char *, size_t), void *ctx)
{
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, "\n");
		int rc = len ? cb(ctx, p, len) : 0;
		if (rc)
			return rc;
		p += len + (p[len] ? 1 : 0);
	}
	return 0;
}

typedef struct hdr_check {
	const dbcron_job *job;
	dbcron_err *err;
} hdr_check;

static int check_header_line(void *ctx, const char *line, size_t len)
{
	hdr_check *c = ctx;
	char buf[8192];
	dbcron_err why = {0};
	snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1), line);
	int rc = exec_http_check_header(buf, &why);
	if (rc)
		return dbcron_err_set(c->err, rc, "job '%s': --header %s",
				      c->job->name ? c->job->name : "", why.msg);
	return check_text(c->job, "--header", buf, c->err);
}

static int http_validate(const dbcron_job *job, dbcron_err *err)
{
	const char *n = job->name ? job->name : "";
	dbcron_err why = {0};
	int rc;
	if (!job->http)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': no --http METHOD URL", n);
	if ((rc = exec_http_check_target(job->http, &why)))
		return dbcron_err_set(err, rc, "job '%s': --http %s", n, why.msg);
	if (job->http_expect && (rc = exec_http_check_expect(job->http_expect, &why)))
		return dbcron_err_set(err, rc, "job '%s': --expect %s", n, why.msg);
	if ((rc = check_text(job, "--http", job->http, err)) ||
	    (rc = check_text(job, "--body", job->http_body, err)))
		return rc;
	hdr_check hc = {job, err};
	return each_line(job->http_headers, check_header_line, &hc);
}

/* ---- one transfer ---- */

typedef struct xfer {
	struct xfer *prev, *next; /* the engine's list (todo, then running) */
	CURL *easy;
	struct curl_slist *hdrs;
	char *method, *url, *body, *ca_file, *expect;
	int64_t timeout_ms;
	exec_result *res;
	exec_done_fn done;
	void *ctx;
	exec_cancel *cancel;
	exec_capture cap;
	char status[160];  /* the last status line seen */
	char kept[640];    /* kept_headers as received */
	size_t kept_len;
	char errbuf[CURL_ERROR_SIZE];
} xfer;

static void xfer_free(xfer *x)
{
	if (!x)
		return;
	if (x->easy)
		dbcron__curl.curl_easy_cleanup(x->easy);
	if (x->hdrs)
		dbcron__curl.curl_slist_free_all(x->hdrs);
	dbcron__free(x->method);
	dbcron__free(x->url);
	dbcron__free(x->body);
	dbcron__free(x->ca_file);
	dbcron__free(x->expect);
	exec_capture_free(&x->cap);
	dbcron__free(x);
}

/* What a placeholder is replaced with, for one run. */
typedef struct subst {
	const exec_req *req;
	runas_env file;   /* the env-file's variables, read when needed */
	bool file_read;
	char *out;        /* the text being built */
	size_t len, cap;
	dbcron_err *err;
} subst;

static int put(subst *s, const char *p, size_t n)
{
	if (dbcron__grow((void **)&s->out, &s->cap, s->len + n + 1, 1))
		return dbcron_err_set(s->err, DBCRON_ENOMEM, "out of memory");
	memcpy(s->out + s->len, p, n);
	s->len += n;
	s->out[s->len] = '\0';
	return DBCRON_OK;
}

static int read_file(subst *s)
{
	const dbcron_job *job = s->req->job;
	runas_ident id;
	char *text = NULL;
	int rc = runas_ident_resolve(job, s->req->node_id, &id, s->err);
	if (rc)
		return rc;
	rc = runas_env_file_read(job->env_file, &id, &text, s->err);
	if (!rc)
		rc = runas_env_file_vars(job->env_file, text, &s->file, s->err);
	if (text)
		memset(text, 0, strlen(text));
	dbcron__free(text);
	runas_ident_clear(&id);
	s->file_read = rc == DBCRON_OK;
	return rc;
}

static const char *param_value(const exec_req *req, const char *key, size_t len)
{
	for (size_t i = 0; i < req->nparams; i++)
		if (strncmp(req->params[i], key, len) == 0 && req->params[i][len] == '=')
			return req->params[i] + len + 1;
	return NULL;
}

static int ph_value(void *ctx, const char *name, size_t len)
{
	subst *s = ctx;
	const char *v;
	bool param = strncmp(name, "param.", 6) == 0;
	int rc;
	if (param) {
		v = param_value(s->req, name + 6, len - 6);
		if (!v)
			return dbcron_err_set(s->err, DBCRON_EINVAL,
					      "the run has no parameter '%.*s' (${%.*s})", (int)len - 6,
					      name + 6, (int)len, name);
	} else {
		if (!s->file_read && (rc = read_file(s)))
			return rc;
		char key[72];
		snprintf(key, sizeof(key), "%.*s", (int)len, name);
		v = runas_env_get(&s->file, key);
		if (!v)
			return dbcron_err_set(s->err, DBCRON_EINVAL, "env-file '%s' has no %s",
					      s->req->job->env_file, key);
	}
	if (strpbrk(v, "\r\n"))
		return dbcron_err_set(s->err, DBCRON_EINVAL,
				      "${%.*s} holds a line break (not allowed in a request)",
				      (int)len, name);
	return put(s, v, strlen(v));
}

/* text with its placeholders replaced: a new string in *out. */
static int expand(subst *s, const char *text, char **out)
{
	const char *p = text;
	int rc = DBCRON_OK;
	s->out = NULL;
	s->len = s->cap = 0;
	if ((rc = put(s, "", 0)))
		return rc;
	for (const char *ph; (ph = strstr(p, "${"));) {
		const char *end = strchr(ph, '}');
		if ((rc = put(s, p, (size_t)(ph - p))))
			break;
		if (!end || (rc = ph_value(s, ph + 2, (size_t)(end - ph - 2))))
			break;
		p = end + 1;
	}
	if (!rc)
		rc = put(s, p, strlen(p));
	if (rc) {
		dbcron__free(s->out);
		s->out = NULL;
		return rc;
	}
	*out = s->out;
	s->out = NULL;
	return DBCRON_OK;
}

static int add_header(void *ctx, const char *line, size_t len)
{
	void **a = ctx; /* {subst *, xfer *} */
	subst *s = a[0];
	xfer *x = a[1];
	char *raw = dbcron__strndup(line, len), *h = NULL;
	int rc = raw ? expand(s, raw, &h) : dbcron_err_set(s->err, DBCRON_ENOMEM, "out of memory");
	dbcron__free(raw);
	if (rc)
		return rc;
	struct curl_slist *l = dbcron__curl.curl_slist_append(x->hdrs, h);
	memset(h, 0, strlen(h)); /* it may hold a secret */
	dbcron__free(h);
	if (!l)
		return dbcron_err_set(s->err, DBCRON_ENOMEM, "out of memory");
	x->hdrs = l;
	return DBCRON_OK;
}

/* The run's transfer: its own copies of everything, placeholders
 * resolved.  err says why not. */
static int xfer_prepare(const exec_req *req, xfer *x, dbcron_err *err)
{
	const dbcron_job *job = req->job;
	subst s = {.req = req, .err = err};
	char *target = NULL;
	int rc = expand(&s, job->http, &target);
	if (rc)
		goto out;
	char *sp = strchr(target, ' ');
	if (!sp) {
		rc = dbcron_err_set(err, DBCRON_EINVAL, "--http: expected METHOD URL");
		goto out;
	}
	*sp = '\0';
	if (!(x->method = dbcron__strdup(target)) || !(x->url = dbcron__strdup(sp + 1)) ||
	    (job->http_ca_file && !(x->ca_file = dbcron__strdup(job->http_ca_file))) ||
	    (job->http_expect && !(x->expect = dbcron__strdup(job->http_expect)))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out;
	}
	if (job->http_body && (rc = expand(&s, job->http_body, &x->body)))
		goto out;
	void *ctx[2] = {&s, x};
	if ((rc = each_line(job->http_headers, add_header, ctx)))
		goto out;
	/* no "Expect: 100-continue" for a larger body: a server that does
	 * not answer it would hold the request a second */
	struct curl_slist *l = dbcron__curl.curl_slist_append(x->hdrs, "Expect:");
	if (!l)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	else
		x->hdrs = l;
out:
	dbcron__free(target);
	runas_env_free(&s.file);
	return rc;
}

/* ---- the engine ---- */

static struct {
	pthread_mutex_t mu;
	bool started;
	CURLM *multi;
	xfer *todo; /* handed over, not yet on the multi handle (next only) */
} eng = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The engine thread's own: the transfers on the multi handle. */
static xfer *running;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	exec_capture_feed(ctx, p, size * n);
	return size * n;
}

/* The status line (the last one: after a "100 Continue") and the kept
 * headers of that response. */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	xfer *x = ctx;
	size_t len = size * n, line = len;
	while (line && (p[line - 1] == '\n' || p[line - 1] == '\r'))
		line--;
	if (line >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		snprintf(x->status, sizeof(x->status), "%.*s", (int)line, p);
		x->kept_len = 0;
		x->kept[0] = '\0';
		return len;
	}
	for (size_t i = 0; i < sizeof(kept_headers) / sizeof(kept_headers[0]); i++) {
		size_t k = strlen(kept_headers[i]);
		if (line > k && p[k] == ':' && strncasecmp(p, kept_headers[i], k) == 0 &&
		    x->kept_len + line + 2 < sizeof(x->kept)) {
			x->kept_len += (size_t)snprintf(x->kept + x->kept_len,
							sizeof(x->kept) - x->kept_len, "%.*s\n",
							(int)line, p);
			break;
		}
	}
	return len;
}

static int xfer_easy(xfer *x)
{
	CURL *h = x->easy = dbcron__curl.curl_easy_init();
	if (!h)
		return -1;
	dbcron__curl_defaults(h);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_URL, x->url);
	if (strcmp(x->method, "HEAD") == 0)
		dbcron__curl.curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(x->method, "GET") != 0 || x->body)
		dbcron__curl.curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->method);
	if (x->body) {
		dbcron__curl.curl_easy_setopt(h, CURLOPT_POSTFIELDS, x->body);
		dbcron__curl.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(x->body));
	}
	dbcron__curl.curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
	if (x->timeout_ms > 0)
		dbcron__curl.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)x->timeout_ms);
	if (x->ca_file)
		dbcron__curl.curl_easy_setopt(h, CURLOPT_CAINFO, x->ca_file);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_WRITEDATA, &x->cap);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)x);
	return dbcron__curl.curl_multi_add_handle(eng.multi, h) == CURLM_OK ? 0 : -1;
}

/* The output: status line, kept headers, a blank line, the body. */
static void xfer_output(xfer *x)
{
	char *body = exec_capture_finish(&x->cap);
	size_t n = strlen(x->status) + x->kept_len + (body ? strlen(body) : 0) + 3;
	char *out = x->status[0] || body ? dbcron__malloc(n) : NULL;
	if (out)
		snprintf(out, n, "%s\n%s%s%s", x->status, x->kept, body ? "\n" : "",
			 body ? body : "");
	dbcron__free(body);
	x->res->output = out;
}

/* The transfer is over (cc) or stopped (cancelled): fill its result, hand
 * it back, free it. */
static void xfer_end(xfer *x, CURLcode cc, bool cancelled)
{
	exec_result *res = x->res;
	long status = 0;
	char d[32];
	if (cancelled) {
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "cancelled");
	} else if (cc == CURLE_OPERATION_TIMEDOUT && x->timeout_ms > 0) {
		dbcron__format_duration(x->timeout_ms, d, sizeof(d));
		res->state = DBCRON_RUN_TIMED_OUT;
		exec__set_error(res, "timed out after %s; request cancelled", d);
	} else if (cc != CURLE_OK) {
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "%s %s: %s", x->method, x->url,
				x->errbuf[0] ? x->errbuf : dbcron__curl.curl_easy_strerror(cc));
	} else {
		dbcron__curl.curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (expect_match(x->expect, status) == 1) {
			res->state = DBCRON_RUN_SUCCEEDED;
		} else {
			res->state = DBCRON_RUN_FAILED;
			exec__set_error(res, "HTTP %ld (expected %s)", status,
					x->expect ? x->expect : "2xx");
		}
	}
	xfer_output(x);
	dbcron__curl.curl_multi_remove_handle(eng.multi, x->easy);
	exec_done_fn done = x->done;
	void *ctx = x->ctx;
	res->mono_end_ms = dbcron__mono_ms();
	xfer_free(x);
	done(ctx);
}

static void running_unlink(xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		running = x->next;
	if (x->next)
		x->next->prev = x->prev;
}

/* What was handed over goes onto the multi handle. */
static void take_todo(void)
{
	pthread_mutex_lock(&eng.mu);
	xfer *got = eng.todo;
	eng.todo = NULL;
	pthread_mutex_unlock(&eng.mu);
	while (got) {
		xfer *x = got;
		got = x->next;
		if (xfer_easy(x)) {
			snprintf(x->errbuf, sizeof(x->errbuf), "libcurl: cannot start the transfer");
			xfer_end(x, CURLE_FAILED_INIT, false);
			continue;
		}
		x->prev = NULL;
		x->next = running;
		if (running)
			running->prev = x;
		running = x;
	}
}

static void finish_done(void)
{
	CURLMsg *msg;
	int left = 0;
	while ((msg = dbcron__curl.curl_multi_info_read(eng.multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		char *p = NULL;
		CURLcode cc = msg->data.result;
		dbcron__curl.curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
		xfer *x = (xfer *)p;
		running_unlink(x);
		xfer_end(x, cc, false);
	}
}

static void stop_cancelled(void)
{
	for (xfer *x = running, *next; x; x = next) {
		next = x->next;
		if (x->cancel && atomic_load(&x->cancel->requested)) {
			running_unlink(x);
			xfer_end(x, CURLE_OK, true);
		}
	}
}

static void *engine_main(void *arg)
{
	(void)arg;
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	int64_t next_look = 0;
	for (;;) {
		int left = 0;
		take_todo();
		dbcron__curl.curl_multi_perform(eng.multi, &left);
		finish_done();
		int64_t now = dbcron__mono_ms();
		if (now >= next_look) {
			stop_cancelled();
			next_look = now + CANCEL_POLL_MS;
		}
		int wait = running ? (int)(next_look - now) : 1000;
		dbcron__curl.curl_multi_poll(eng.multi, NULL, 0, wait > 0 ? wait : 0, NULL);
	}
	return NULL;
}

/* The engine, started once.  err says why not. */
static int engine_up(dbcron_err *err)
{
	int rc = DBCRON_OK;
	pthread_mutex_lock(&eng.mu);
	if (eng.started)
		goto out_unlock;
	if (!eng.multi && !(eng.multi = dbcron__curl.curl_multi_init())) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "libcurl: cannot make a multi handle");
		goto out_unlock;
	}
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, engine_main, NULL))
		rc = dbcron_err_set(err, DBCRON_EIO, "cannot start the HTTP executor's thread");
	else
		eng.started = true;
	pthread_attr_destroy(&a);
out_unlock:
	pthread_mutex_unlock(&eng.mu);
	return rc;
}

static void http_start(const exec_req *req, exec_result *res, exec_done_fn done, void *ctx)
{
	dbcron_err err = {0};
	xfer *x = NULL;
	memset(res, 0, sizeof(*res));
	res->mono_start_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	int rc = dbcron__curl_load(&err);
	if (!rc && !(x = dbcron__calloc(1, sizeof(*x))))
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory");
	if (!rc && exec_capture_init(&x->cap, req->capture_bytes ? req->capture_bytes
								  : DEFAULT_CAPTURE))
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory");
	if (!rc)
		rc = xfer_prepare(req, x, &err);
	if (!rc)
		rc = engine_up(&err);
	if (rc) {
		exec__set_error(res, "job '%s': %s", req->job->name ? req->job->name : "", err.msg);
		xfer_free(x);
		res->mono_end_ms = dbcron__mono_ms();
		done(ctx);
		return;
	}
	x->timeout_ms = req->job->timeout_ms;
	x->res = res;
	x->done = done;
	x->ctx = ctx;
	x->cancel = req->cancel;
	pthread_mutex_lock(&eng.mu);
	x->next = eng.todo;
	eng.todo = x;
	pthread_mutex_unlock(&eng.mu);
	dbcron__curl.curl_multi_wakeup(eng.multi);
}

/* The synchronous shape (exec_run, a caller without a done callback):
 * start, then wait for the end on this thread. */
typedef struct sync_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
} sync_wait;

static void sync_done(void *ctx)
{
	sync_wait *w = ctx;
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void http_run(const exec_req *req, exec_result *res)
{
	sync_wait w = {.done = false};
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	http_start(req, res, sync_done, &w);
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
}

const exec_ops exec_http_ops = {
	.version = EXEC_OPS_VERSION,
	.kind = DBCRON_EXEC_HTTP,
	.name = "http",
	.caps = EXEC_CAP_OUTPUT | EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT | EXEC_CAP_PREEMPT |
		EXEC_CAP_ENV_FILE,
	.validate = http_validate,
	.run = http_run,
	.start = http_start,
};
