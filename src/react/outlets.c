/*
 * The three ways an event goes out (react_int.h), and the event JSON the
 * webhook and exec targets receive (docs/reactions.md documents each
 * key).  Owns the libcurl table: libcurl is loaded on the first webhook
 * (core/dynlib.h), so a node without one never loads it.  Each outlet
 * says whether a failure may pass (REACT_RETRY) or not (REACT_FAILED);
 * none prints, none blocks for more than its timeout.
 */
/* calls go through a table of pointers: curl's type-checking macros
 * would expand the members' names */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/dynlib.h"
#include "exec/runas.h"
#include "model/jobdef.h"
#include "model/target.h"
#include "react/react_int.h"

extern char **environ;

#define REACT_HTTP_TIMEOUT_MS 10000L
#define REACT_EXEC_TIMEOUT_MS 30000L
#define REACT_OUTPUT_TAIL 2048

/* ---- job:NAME ---- */

react_outcome react_trigger(store *s, const store_event *ev, char *buf, size_t len)
{
	int64_t run_id = 0, fire_at = 0;
	dbcron_err e = {0};
	int rc = store_job_trigger(s, ev->target + 4, &run_id, &fire_at, &e);
	if (rc == DBCRON_OK) {
		snprintf(buf, len, "run %lld", (long long)run_id);
		return REACT_DELIVERED;
	}
	snprintf(buf, len, "%s", e.msg);
	return rc == DBCRON_ENOTFOUND ? REACT_FAILED : REACT_RETRY;
}

/* ---- the event JSON ---- */

/* The last REACT_OUTPUT_TAIL bytes of out, from a line start when one is
 * in reach. */
static const char *output_tail(const char *out)
{
	size_t n = strlen(out);
	if (n <= REACT_OUTPUT_TAIL)
		return out;
	const char *t = out + n - REACT_OUTPUT_TAIL, *nl = strchr(t, '\n');
	return nl && nl[1] ? nl + 1 : t;
}

static void put(json_t *o, const char *k, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(o, k, v))
		*bad = true;
}

char *react_event_body(store *s, const store_event *ev, const char *node_id)
{
	dbcron_run r;
	dbcron_err e = {0};
	char t[64];
	bool bad = false, have_run;
	memset(&r, 0, sizeof(r));
	have_run = store_run_get(s, ev->run_id, &r, &e) == DBCRON_OK;
	json_t *o = json_object();
	if (!o)
		goto out_clear;
	put(o, "event_id", json_integer(ev->id), &bad);
	put(o, "kind", json_string(model_react_kind_name(ev->kind)), &bad);
	put(o, "job", json_string(ev->job_name), &bad);
	put(o, "run_id", json_integer(ev->run_id), &bad);
	put(o, "target", json_string(ev->target), &bad);
	put(o, "delivery_attempt", json_integer(ev->attempts), &bad);
	put(o, "event_time", json_string(model_time_text(ev->created_ms, t, sizeof(t))), &bad);
	put(o, "delivered_by", json_string(node_id), &bad);
	if (have_run) {
		put(o, "fire_time", json_string(model_time_text(r.fire_at, t, sizeof(t))), &bad);
		put(o, "attempt", json_integer(r.attempt), &bad);
		put(o, "state", json_string(dbcron_run_state_name(r.state)), &bad);
		put(o, "exit_code", r.has_exit_code ? json_integer(r.exit_code) : json_null(), &bad);
		put(o, "error", r.error ? json_string(r.error) : json_null(), &bad);
		put(o, "output_tail", json_string(r.output ? output_tail(r.output) : ""), &bad);
		put(o, "node", r.node ? json_string(r.node) : json_null(), &bad);
	}
	char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	dbcron_run_clear(&r);
	/* json_dumps allocates with malloc: hand back one of ours */
	char *body = text ? dbcron__strdup(text) : NULL;
	free(text);
	return body;
out_clear:
	dbcron_run_clear(&r);
	return NULL;
}

/* ---- http(s):// ---- */

#define CURL_FUNCS(X)                                                                    \
	X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo)  \
	X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_slist_append)                  \
	X(curl_slist_free_all)

typedef struct curl_api {
	CURL_FUNCS(DBCRON_DYNLIB_MEMBER)
} curl_api;

#define CURL_SYM(f) DBCRON_DYNLIB_SYM(curl_api, f)
static const dbcron_dynsym curl_syms[] = {CURL_FUNCS(CURL_SYM)};
static curl_api curl;
static dbcron_dynlib curl_lib = {
	.soname = "libcurl.so.4",
	.package = "libcurl4",
	.what = "webhook reactions",
	.syms = curl_syms,
	.nsyms = sizeof(curl_syms) / sizeof(curl_syms[0]),
	.api = &curl,
};

/* The receiver's reply is not kept. */
static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

react_outcome react_post(const store_event *ev, const char *body, const char *secret,
			 size_t secret_len, char *buf, size_t len)
{
	dbcron_err e = {0};
	if (dbcron__dynlib_load(&curl_lib, &e)) {
		snprintf(buf, len, "%s", e.msg);
		return REACT_RETRY;
	}
	CURL *h = curl.curl_easy_init();
	if (!h) {
		snprintf(buf, len, "libcurl: cannot start a transfer");
		return REACT_RETRY;
	}
	char hdr[128], sig[64 + 32], hex[65];
	struct curl_slist *hs = curl.curl_slist_append(NULL, "Content-Type: application/json");
	snprintf(hdr, sizeof(hdr), "X-Dbcron-Event-Id: %lld", (long long)ev->id);
	hs = hs ? curl.curl_slist_append(hs, hdr) : NULL;
	if (hs && secret) {
		react_sign(secret, secret_len, body, strlen(body), hex);
		snprintf(sig, sizeof(sig), "X-Dbcron-Signature: sha256=%s", hex);
		hs = curl.curl_slist_append(hs, sig);
	}
	react_outcome out = REACT_RETRY;
	if (!hs) {
		snprintf(buf, len, "out of memory");
		goto out_cleanup;
	}
	curl.curl_easy_setopt(h, CURLOPT_URL, ev->target);
	curl.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	curl.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REACT_HTTP_TIMEOUT_MS);
	curl.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl.curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	CURLcode cc = curl.curl_easy_perform(h);
	long status = 0;
	if (cc != CURLE_OK) {
		snprintf(buf, len, "%s", curl.curl_easy_strerror(cc));
		goto out_cleanup;
	}
	curl.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	snprintf(buf, len, "HTTP %ld", status);
	out = status >= 200 && status < 300 ? REACT_DELIVERED
	      : status >= 500 || status == 429 ? REACT_RETRY
					       : REACT_FAILED;
out_cleanup:
	curl.curl_slist_free_all(hs);
	curl.curl_easy_cleanup(h);
	return out;
}

/* ---- exec:PATH [ARGS] ---- */

/* The words of "exec:PATH ARG..." (split at spaces) into argv (at most
 * n - 1 and a NULL), pointing into copy. */
static void split_words(char *copy, char **argv, size_t n)
{
	size_t k = 0;
	for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && k + 1 < n;
	     w = strtok_r(NULL, " ", &save))
		argv[k++] = w;
	argv[k] = NULL;
}

/* Waits for pid at most REACT_EXEC_TIMEOUT_MS, then kills it. */
static int wait_bounded(pid_t pid, int *status)
{
	struct timespec nap = {0, 20 * 1000000L};
	for (long waited = 0; waited < REACT_EXEC_TIMEOUT_MS; waited += 20) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return 1;
}

/* The clean environment of a command job of the node's user, with the
 * event's facts. */
static int exec_env(const store_event *ev, runas_env *env, runas_ident *id, char *buf,
		    size_t len)
{
	dbcron_job blank;
	dbcron_err e = {0};
	char f0[64], f1[64], *facts[4];
	dbcron_job_init(&blank);
	int rc = runas_ident_resolve(&blank, "this node", id, &e);
	snprintf(f0, sizeof(f0), "DBCRON_EVENT_ID=%lld", (long long)ev->id);
	snprintf(f1, sizeof(f1), "DBCRON_EVENT_KIND=%s", model_react_kind_name(ev->kind));
	facts[0] = f0;
	facts[1] = f1;
	facts[2] = NULL;
	runas_env_src src = {.job = &blank, .id = id, .facts = facts};
	if (!rc)
		rc = runas_env_build(&src, env, &e);
	if (rc)
		snprintf(buf, len, "%s", e.msg);
	return rc;
}

react_outcome react_exec(const store_event *ev, const char *body, char *buf, size_t len)
{
	char *copy = dbcron__strdup(ev->target + 5), *argv[64];
	runas_env env = {0};
	runas_ident id;
	memset(&id, 0, sizeof(id));
	int fds[2] = {-1, -1}, status = 0;
	react_outcome out = REACT_RETRY;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (!copy) {
		snprintf(buf, len, "out of memory");
		goto out_free;
	}
	split_words(copy, argv, sizeof(argv) / sizeof(argv[0]));
	if (exec_env(ev, &env, &id, buf, len))
		goto out_free;
	if (pipe(fds) || fcntl(fds[0], F_SETFD, FD_CLOEXEC) ||
	    fcntl(fds[1], F_SETFD, FD_CLOEXEC)) {
		snprintf(buf, len, "pipe: %s", strerror(errno));
		goto out_free;
	}
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env.v);
	close(fds[0]);
	fds[0] = -1;
	if (rc) {
		snprintf(buf, len, "%s: %s", argv[0], strerror(rc));
		out = rc == ENOENT || rc == EACCES ? REACT_FAILED : REACT_RETRY;
		goto out_free;
	}
	/* a reader that stops early is its business: SIGPIPE is blocked on
	 * this thread (deliver_main), so the write says EPIPE */
	for (size_t off = 0, n = strlen(body); off < n;) {
		ssize_t w = write(fds[1], body + off, n - off);
		if (w <= 0 && errno != EINTR)
			break;
		off += w > 0 ? (size_t)w : 0;
	}
	close(fds[1]);
	fds[1] = -1;
	int wr = wait_bounded(pid, &status);
	if (wr == 1)
		snprintf(buf, len, "%s: killed after 30s", argv[0]);
	else if (wr < 0)
		snprintf(buf, len, "%s: waitpid: %s", argv[0], strerror(errno));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		out = REACT_DELIVERED;
	else if (WIFEXITED(status))
		snprintf(buf, len, "%s: exit status %d", argv[0], WEXITSTATUS(status));
	else
		snprintf(buf, len, "%s: killed by signal %d", argv[0], WTERMSIG(status));
out_free:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	posix_spawn_file_actions_destroy(&fa);
	runas_env_free(&env);
	runas_ident_clear(&id);
	dbcron__free(copy);
	return out;
}
